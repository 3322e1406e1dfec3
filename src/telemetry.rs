//! Telemetry: Prometheus metrics as a tower layer, and the tracing set-up.
//!
//! Metrics ([`Metrics`], served on their own port at `/metrics`):
//!
//! | name | type | labels | meaning |
//! |---|---|---|---|
//! | `grpc_server_started_total` | counter | `grpc_service`, `grpc_method` | RPCs started |
//! | `grpc_server_handled_total` | counter | `grpc_service`, `grpc_method`, `grpc_code` | RPCs finished, by status code (`OK`, `InvalidArgument`, ...) |
//! | `grpc_server_handling_seconds` | histogram | `grpc_service`, `grpc_method` | time to the end of the response, 10 µs .. 10 s |
//! | `grpc_server_in_flight` | gauge | `grpc_service`, `grpc_method` | RPCs started and not finished |
//! | `tavli_plays_per_request` | histogram | `variant` | legal plays returned by ListLegalPlays |
//! | `tavli_evaluation_plies` | histogram | `variant` | plies asked by Evaluate and by each EvaluateBatch item |
//! | `tavli_evaluations_total` | counter | `evaluator`, `plies` | Evaluate answers (and EvaluateBatch items) by the evaluator that answered and the plies searched |
//! | `tavli_build_info` | gauge | `version` | always 1 |
//! | `tavli_connections` | gauge | `listener` (`grpc`, `metrics`, `web`) | connections open |
//! | `tavli_connections_closed_total` | counter | `listener`, `reason` (`handshake_timeout`, `idle_timeout`, `send_timeout`, `evicted`, `refused`, `tls_handshake`, `max_age`, `max_age_grace`) | connections closed by a limit (or a failed TLS handshake); `max_age`: closed after the age GOAWAY once its calls had ended, `max_age_grace`: closed at the end of the grace with calls still in flight |
//! | `tavli_refused_total` | counter | `reason` (`concurrency`, `connection`, `streaming`, `watches`, `deep_search`, `buffers`, `body_timeout`) | requests refused by a limit |
//! | `tavli_buffered_bytes` | gauge | | request and response bytes held by the server |
//! | `tavli_ready` | gauge | | 1 while `tavli.v1.TavliEngine` is `SERVING` (readiness) |
//! | `process_*` | | | RSS, CPU seconds, open fds, start time (Linux) |
//!
//! `grpc_code` comes from the response's `grpc-status` (header of a trailers-only
//! response, or trailer), `OK` when a successful response ends without one, and
//! `Canceled` when the client goes away first. Codes are spelled as grpc-go prints
//! them (`OK`, `Canceled`, `InvalidArgument`, `ResourceExhausted`, ...). Unknown
//! service or method names are counted as `unknown` to bound the label set.
//!
//! Tracing: one span `rpc` per call with `grpc.service`, `grpc.method`, `variant`
//! (recorded by the handlers), `grpc.code` and `latency_ms`, closed by an event
//! `rpc finished` (with `slow`) at the level [`call_level`] gives it: `DEBUG` for a
//! call that went as expected (OK, or the client's own error), `INFO` for a slow call
//! and for the server's refusals and limits, `WARN` for a server fault; so the default
//! filter (`info`) writes no line per ordinary call. Output is human text or JSON
//! lines; `RUST_LOG` filters.

use bytes::Bytes;
use http::{Request, Response};
use http_body::Frame;
use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
    TextEncoder,
};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tonic::body::Body;
use tonic::Status;
use tower::{Layer, Service};
use tracing::Instrument;
use tracing::Level;

/// Buckets of `grpc_server_handling_seconds`: 10 µs .. 10 s.
pub const LATENCY_BUCKETS: [f64; 19] = [
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The RPCs this server knows, for the `grpc_service` / `grpc_method` labels.
const KNOWN: &[(&str, &[&str])] = &[
    (
        "tavli.v1.TavliEngine",
        &[
            "ListLegalPlays",
            "ApplyPlay",
            "Evaluate",
            "GetStartingPosition",
            "ResolveOpeningRoll",
            "AdvanceMatch",
            "AnalyzeGame",
            "Rollout",
            "EvaluateBatch",
            "ChoosePlay",
        ],
    ),
    ("grpc.health.v1.Health", &["Check", "Watch", "List"]),
    (
        "grpc.reflection.v1.ServerReflection",
        &["ServerReflectionInfo"],
    ),
    (
        "grpc.reflection.v1alpha.ServerReflection",
        &["ServerReflectionInfo"],
    ),
];

/// The `(grpc_service, grpc_method)` labels of a request path `/pkg.Service/Method`.
pub fn rpc_labels(path: &str) -> (&'static str, &'static str) {
    let mut parts = path.trim_start_matches('/').splitn(2, '/');
    let (service, method) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    for (s, methods) in KNOWN {
        if *s == service {
            let m = methods.iter().find(|m| **m == method).copied();
            return (s, m.unwrap_or("unknown"));
        }
    }
    ("unknown", "unknown")
}

/// The grpc-go name of a numeric gRPC status code (`0` → `OK`, `3` → `InvalidArgument`).
pub fn code_name(code: &str) -> &'static str {
    match code.trim() {
        "0" => "OK",
        "1" => "Canceled",
        "2" => "Unknown",
        "3" => "InvalidArgument",
        "4" => "DeadlineExceeded",
        "5" => "NotFound",
        "6" => "AlreadyExists",
        "7" => "PermissionDenied",
        "8" => "ResourceExhausted",
        "9" => "FailedPrecondition",
        "10" => "Aborted",
        "11" => "OutOfRange",
        "12" => "Unimplemented",
        "13" => "Internal",
        "14" => "Unavailable",
        "15" => "DataLoss",
        "16" => "Unauthenticated",
        _ => "Unknown",
    }
}

/// The server's Prometheus metrics, in their own registry (one per server, so that
/// several servers in one process, as in tests, count separately).
pub struct Metrics {
    registry: Registry,
    started: IntCounterVec,
    handled: IntCounterVec,
    handling_seconds: HistogramVec,
    in_flight: IntGaugeVec,
    /// `tavli_plays_per_request{variant}`: legal plays per ListLegalPlays answer.
    pub plays_per_request: HistogramVec,
    /// `tavli_evaluation_plies{variant}`: plies asked per Evaluate request.
    pub evaluation_plies: HistogramVec,
    /// `tavli_evaluations_total{evaluator, plies}`: Evaluate answers by the evaluator
    /// that answered (`game-over`, `bearoff-exact`, `net-<variant>-v2`) and plies.
    pub evaluations: IntCounterVec,
    /// `tavli_connections{listener}`: connections open.
    pub connections: IntGaugeVec,
    /// `tavli_connections_closed_total{listener, reason}`: connections closed by a limit.
    pub connections_closed: IntCounterVec,
    /// `tavli_refused_total{reason}`: requests refused by a limit.
    pub refused: IntCounterVec,
    /// `tavli_buffered_bytes`: request and response bytes held by the server.
    pub buffered_bytes: IntGauge,
    /// `tavli_ready`: 1 while the engine's health (readiness) is `SERVING`.
    pub ready: IntGauge,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Metrics {
    /// Creates and registers every metric, the process collector included.
    pub fn new() -> Arc<Metrics> {
        let registry = Registry::new();
        let rpc = ["grpc_service", "grpc_method"];
        let started = IntCounterVec::new(
            Opts::new(
                "grpc_server_started_total",
                "Total number of RPCs started on the server.",
            ),
            &rpc,
        )
        .expect("metric");
        let handled = IntCounterVec::new(
            Opts::new(
                "grpc_server_handled_total",
                "Total number of RPCs completed on the server, regardless of success or failure.",
            ),
            &["grpc_service", "grpc_method", "grpc_code"],
        )
        .expect("metric");
        let handling_seconds = HistogramVec::new(
            HistogramOpts::new(
                "grpc_server_handling_seconds",
                "Histogram of response latency (seconds) of gRPC that had been application-level handled by the server.",
            )
            .buckets(LATENCY_BUCKETS.to_vec()),
            &rpc,
        )
        .expect("metric");
        let in_flight = IntGaugeVec::new(
            Opts::new(
                "grpc_server_in_flight",
                "Number of RPCs started on the server and not yet finished.",
            ),
            &rpc,
        )
        .expect("metric");
        let plays_per_request = HistogramVec::new(
            HistogramOpts::new(
                "tavli_plays_per_request",
                "Number of legal plays returned by one ListLegalPlays call.",
            )
            .buckets(vec![
                1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0,
            ]),
            &["variant"],
        )
        .expect("metric");
        let evaluation_plies = HistogramVec::new(
            HistogramOpts::new(
                "tavli_evaluation_plies",
                "Search depth (plies) asked by Evaluate calls.",
            )
            .buckets(vec![0.0, 1.0, 2.0, 3.0, 4.0]),
            &["variant"],
        )
        .expect("metric");
        let evaluations = IntCounterVec::new(
            Opts::new(
                "tavli_evaluations_total",
                "Evaluate answers by the evaluator that answered and the plies searched.",
            ),
            &["evaluator", "plies"],
        )
        .expect("metric");
        let connections = IntGaugeVec::new(
            Opts::new("tavli_connections", "Connections open, by listener."),
            &["listener"],
        )
        .expect("metric");
        let connections_closed = IntCounterVec::new(
            Opts::new(
                "tavli_connections_closed_total",
                "Connections closed by a limit (handshake, idle or send timeout, eviction at the connection limit, refusal) or a failed TLS handshake.",
            ),
            &["listener", "reason"],
        )
        .expect("metric");
        let refused = IntCounterVec::new(
            Opts::new(
                "tavli_refused_total",
                "Requests refused by a limit of the server (RESOURCE_EXHAUSTED, or DEADLINE_EXCEEDED for a request body not received in time).",
            ),
            &["reason"],
        )
        .expect("metric");
        let buffered_bytes = IntGauge::new(
            "tavli_buffered_bytes",
            "Request and response message bytes held by the server (not yet handled or not yet written).",
        )
        .expect("metric");
        let ready = IntGauge::new(
            "tavli_ready",
            "1 while the readiness health status (tavli.v1.TavliEngine) is SERVING.",
        )
        .expect("metric");
        let build_info = IntGaugeVec::new(
            Opts::new("tavli_build_info", "Build information; always 1."),
            &["version"],
        )
        .expect("metric");
        build_info
            .with_label_values(&[env!("CARGO_PKG_VERSION")])
            .set(1);
        for c in [
            Box::new(started.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(handled.clone()),
            Box::new(handling_seconds.clone()),
            Box::new(in_flight.clone()),
            Box::new(plays_per_request.clone()),
            Box::new(evaluation_plies.clone()),
            Box::new(evaluations.clone()),
            Box::new(connections.clone()),
            Box::new(connections_closed.clone()),
            Box::new(refused.clone()),
            Box::new(buffered_bytes.clone()),
            Box::new(ready.clone()),
            Box::new(build_info),
        ] {
            registry.register(c).expect("register metric");
        }
        #[cfg(target_os = "linux")]
        registry
            .register(Box::new(
                prometheus::process_collector::ProcessCollector::for_self(),
            ))
            .expect("register process collector");
        Arc::new(Metrics {
            registry,
            started,
            handled,
            handling_seconds,
            in_flight,
            plays_per_request,
            evaluation_plies,
            evaluations,
            connections,
            connections_closed,
            refused,
            buffered_bytes,
            ready,
        })
    }

    /// The metrics in the Prometheus text format (version 0.0.4).
    pub fn render(&self) -> String {
        let mut buf = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut buf)
            .expect("text encoding");
        String::from_utf8(buf).unwrap_or_default()
    }
}

/// The default of `--log-slow-calls-ms`: a call that takes longer is logged at
/// `INFO` whatever its status (500 ms: a 2-ply `Evaluate` of a middle game takes
/// tens of milliseconds, of the opening's 6-6 about 0.4 s; analyses and rollouts
/// take seconds, one line each).
pub const DEFAULT_SLOW_CALL: Duration = Duration::from_millis(500);

/// The log filter when `RUST_LOG` is not set.
pub const DEFAULT_LOG_FILTER: &str = "info";

/// The level of a call's `rpc finished` line (docs/operations.md, "Logs and traces"):
/// - `WARN`: a server fault (`Unknown`, `Internal`, `DataLoss`);
/// - `INFO`: a call that took `slow` or longer (`None`: no such rule), and the
///   statuses by which the server refused or stopped work (`ResourceExhausted`,
///   `DeadlineExceeded`, `Unavailable`, `Unimplemented`);
/// - `DEBUG`: the rest: `OK`, and the client's own errors (`InvalidArgument`,
///   `FailedPrecondition` for a finished game, `OutOfRange` for a message over the
///   limit, `Canceled` when the client went away, `NotFound`, `AlreadyExists`,
///   `PermissionDenied`, `Unauthenticated`, `Aborted`): the client hears of them.
///
/// Health (`grpc.health.v1.Health`, whose `Watch` streams last) is `DEBUG` unless a
/// server fault.
pub fn call_level(service: &str, code: &str, took: Duration, slow: Option<Duration>) -> Level {
    if matches!(code, "Unknown" | "Internal" | "DataLoss") {
        return Level::WARN;
    }
    if service == "grpc.health.v1.Health" {
        return Level::DEBUG;
    }
    let refused = matches!(
        code,
        "ResourceExhausted" | "DeadlineExceeded" | "Unavailable" | "Unimplemented"
    );
    if refused || slow.is_some_and(|s| took >= s) {
        Level::INFO
    } else {
        Level::DEBUG
    }
}

/// The tower layer that counts and times every gRPC call and opens its `rpc` span.
#[derive(Clone, Debug)]
pub struct MetricsLayer {
    metrics: Arc<Metrics>,
    slow: Option<Duration>,
}

impl MetricsLayer {
    /// A layer recording into `metrics`, logging calls of [`DEFAULT_SLOW_CALL`] or
    /// longer at `INFO`.
    pub fn new(metrics: Arc<Metrics>) -> MetricsLayer {
        MetricsLayer {
            metrics,
            slow: Some(DEFAULT_SLOW_CALL),
        }
    }

    /// The same layer logging calls of `slow` or longer at `INFO` (`None`: only by
    /// their status, [`call_level`]).
    pub fn slow_calls(mut self, slow: Option<Duration>) -> MetricsLayer {
        self.slow = slow;
        self
    }
}

impl<S> Layer<S> for MetricsLayer {
    type Service = MetricsService<S>;
    fn layer(&self, inner: S) -> Self::Service {
        MetricsService {
            inner,
            metrics: self.metrics.clone(),
            slow: self.slow,
        }
    }
}

/// The service of [`MetricsLayer`].
#[derive(Clone, Debug)]
pub struct MetricsService<S> {
    inner: S,
    metrics: Arc<Metrics>,
    slow: Option<Duration>,
}

/// One call being measured; records `handled` exactly once (on finish or drop).
struct CallRecord {
    metrics: Arc<Metrics>,
    service: &'static str,
    method: &'static str,
    start: Instant,
    span: tracing::Span,
    slow: Option<Duration>,
    done: bool,
}

impl CallRecord {
    fn finish(&mut self, code: &'static str) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        let elapsed = self.start.elapsed();
        let m = &self.metrics;
        let rpc = [self.service, self.method];
        m.handled
            .with_label_values(&[self.service, self.method, code])
            .inc();
        m.handling_seconds
            .with_label_values(&rpc)
            .observe(elapsed.as_secs_f64());
        m.in_flight.with_label_values(&rpc).dec();
        let latency_ms = elapsed.as_secs_f64() * 1e3;
        self.span.record("grpc.code", code);
        self.span.record("latency_ms", latency_ms);
        let slow = self.slow.is_some_and(|s| elapsed >= s);
        match call_level(self.service, code, elapsed, self.slow) {
            Level::WARN => tracing::warn!(parent: &self.span, slow, "rpc finished"),
            Level::INFO => tracing::info!(parent: &self.span, slow, "rpc finished"),
            _ => tracing::debug!(parent: &self.span, slow, "rpc finished"),
        }
    }
}

impl Drop for CallRecord {
    fn drop(&mut self) {
        // Dropped before the response ended: the client went away.
        self.finish("Canceled");
    }
}

type BoxFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

impl<S, B> Service<Request<B>> for MetricsService<S>
where
    S: Service<Request<B>, Response = Response<Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<Response<Body>, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let (service, method) = rpc_labels(req.uri().path());
        let span = tracing::info_span!(
            "rpc",
            grpc.service = service,
            grpc.method = method,
            variant = tracing::field::Empty,
            grpc.code = tracing::field::Empty,
            latency_ms = tracing::field::Empty,
        );
        let rpc = [service, method];
        self.metrics.started.with_label_values(&rpc).inc();
        self.metrics.in_flight.with_label_values(&rpc).inc();
        let mut record = CallRecord {
            metrics: self.metrics.clone(),
            service,
            method,
            start: Instant::now(),
            span: span.clone(),
            slow: self.slow,
            done: false,
        };
        let fut = self.inner.call(req).instrument(span);
        Box::pin(async move {
            let resp = fut.await?;
            let header = resp
                .headers()
                .get("grpc-status")
                .and_then(|v| v.to_str().ok())
                .map(code_name);
            if let Some(code) = header {
                record.finish(code);
                return Ok(resp);
            }
            if !resp.status().is_success() {
                record.finish("Unknown");
                return Ok(resp);
            }
            Ok(resp.map(|body| {
                Body::new(MetricsBody {
                    inner: body,
                    record: Some(record),
                })
            }))
        })
    }
}

/// A response body that finishes its [`CallRecord`] at the trailers or at the end.
struct MetricsBody {
    inner: Body,
    record: Option<CallRecord>,
}

impl MetricsBody {
    fn finish(&mut self, code: &'static str) {
        if let Some(mut r) = self.record.take() {
            r.finish(code);
        }
    }
}

impl http_body::Body for MetricsBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(trailers) = frame.trailers_ref() {
                    let code = trailers
                        .get("grpc-status")
                        .and_then(|v| v.to_str().ok())
                        .map_or("OK", code_name);
                    this.finish(code);
                }
            }
            Poll::Ready(Some(Err(status))) => {
                this.finish(code_name(&(status.code() as i32).to_string()));
            }
            Poll::Ready(None) => this.finish("OK"),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.record.is_none() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Log output format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line (for log collectors).
    Json,
}

/// Installs the global tracing subscriber: `RUST_LOG` filter (default
/// [`DEFAULT_LOG_FILTER`]), text or JSON lines on stderr. Does nothing if a
/// subscriber is already installed.
pub fn init_tracing(format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_LOG_FILTER));
    // Colours only for a person at a terminal, not in files or log collectors.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every RPC of `tavli.v1.TavliEngine` in the served descriptor has its own
    /// label (a method missing from `KNOWN` would be counted as `unknown`).
    #[test]
    fn every_engine_rpc_has_its_label() {
        use prost::Message;
        let set = prost_types::FileDescriptorSet::decode(crate::service::pb::FILE_DESCRIPTOR_SET)
            .expect("descriptor set");
        let mut methods = Vec::new();
        for file in &set.file {
            for service in &file.service {
                let full = format!("{}.{}", file.package(), service.name());
                for m in &service.method {
                    methods.push((full.clone(), m.name().to_string()));
                }
            }
        }
        assert!(methods.len() >= 8, "{methods:?}");
        for (service, method) in methods {
            let path = format!("/{service}/{method}");
            assert_eq!(rpc_labels(&path), (service.as_str(), method.as_str()));
        }
    }

    #[test]
    fn labels_are_bounded() {
        assert_eq!(
            rpc_labels("/tavli.v1.TavliEngine/ListLegalPlays"),
            ("tavli.v1.TavliEngine", "ListLegalPlays")
        );
        assert_eq!(
            rpc_labels("/tavli.v1.TavliEngine/Nope"),
            ("tavli.v1.TavliEngine", "unknown")
        );
        assert_eq!(rpc_labels("/x.Y/Z"), ("unknown", "unknown"));
        assert_eq!(code_name("0"), "OK");
        assert_eq!(code_name("8"), "ResourceExhausted");
    }

    /// The levels of docs/operations.md, "Logs and traces".
    #[test]
    fn call_levels() {
        let engine = "tavli.v1.TavliEngine";
        let ms = Duration::from_millis;
        let slow = Some(ms(500));
        let level = |service, code, took| call_level(service, code, ms(took), slow);
        assert_eq!(level(engine, "OK", 3), Level::DEBUG);
        assert_eq!(level(engine, "OK", 500), Level::INFO);
        assert_eq!(level(engine, "InvalidArgument", 1), Level::DEBUG);
        assert_eq!(level(engine, "FailedPrecondition", 1), Level::DEBUG);
        assert_eq!(level(engine, "Canceled", 2), Level::DEBUG);
        assert_eq!(level(engine, "InvalidArgument", 900), Level::INFO);
        for code in [
            "ResourceExhausted",
            "DeadlineExceeded",
            "Unavailable",
            "Unimplemented",
        ] {
            assert_eq!(level(engine, code, 1), Level::INFO, "{code}");
        }
        for code in ["Unknown", "Internal", "DataLoss"] {
            assert_eq!(level(engine, code, 1), Level::WARN, "{code}");
        }
        // Health watches last: never slow.
        assert_eq!(level("grpc.health.v1.Health", "OK", 60_000), Level::DEBUG);
        assert_eq!(level("grpc.health.v1.Health", "Internal", 1), Level::WARN);
        // Without a slow-call rule, a long call is DEBUG.
        assert_eq!(call_level(engine, "OK", ms(9000), None), Level::DEBUG);
    }

    #[test]
    fn metrics_render() {
        let m = Metrics::new();
        let text = m.render();
        assert!(text.contains("tavli_build_info"), "{text}");
    }
}
