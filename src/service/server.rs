//! [`serve`]: the gRPC server (engine, health, reflection v1 and v1alpha) with its
//! tower layers, the Prometheus `/metrics` HTTP server, their limits, and the graceful
//! shutdown; [`serve_with_web`]: the same and the analysis page ([`crate::web`]).

use super::api::TavliEngineService;
use super::buffers::Budget;
use super::conn::{self, ConnLimits, ConnState, Phase, Registry, StreamGuard};
use super::health::Health;
use super::limits::{
    AdmissionConfig, AdmissionLayer, DeadlineLayer, DeepSearchLimit, SMALL_MESSAGE_BYTES,
};
use super::route::EngineRoutes;
use super::tls::TlsConfig;
use super::{pb, readiness, SERVICE_NAME};
use crate::eval::{CancelToken, PositionEvaluator, MAX_PLIES};
use crate::telemetry::{Metrics, MetricsLayer};
use bytes::Bytes;
use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tonic::body::Body;
use tonic::codec::CompressionEncoding;
use tonic_health::pb::health_server::HealthServer;
use tonic_health::ServingStatus;
use tower::ServiceExt;

/// A boxed error of [`serve`] (bind, reflection set-up, transport).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Everything [`serve`] needs besides its listeners. Every field is a limit of the
/// server with its command-line flag (docs/operations.md, "Ports and environment
/// variables").
#[derive(Clone)]
pub struct ServerConfig {
    /// How long in-flight RPCs may run after the shutdown signal (default 10 s); then
    /// the remaining work is cancelled and the connections closed.
    pub drain: Duration,
    /// Largest request and response message, in bytes (default 4 MiB). Larger
    /// requests are answered `OUT_OF_RANGE` by tonic.
    pub max_message_bytes: usize,
    /// Engine RPCs served at once; beyond it `RESOURCE_EXHAUSTED` (default 256). A
    /// permit is taken once the request body has arrived and kept until the work has
    /// stopped. Health and reflection are not counted.
    pub concurrency_limit: usize,
    /// Deepest `Evaluate` search accepted (default and maximum [`MAX_PLIES`]).
    pub max_plies: u8,
    /// Server-side limit per RPC, on top of the client's deadline (default 30 s),
    /// except the long RPCs ([`super::limits::LONG_RPCS`]).
    pub request_timeout: Option<Duration>,
    /// Server-side limit of the long RPCs, `AnalyzeGame`, `Rollout` and
    /// `EvaluateBatch`, on top of the client's deadline (default
    /// [`DEFAULT_LONG_REQUEST_TIMEOUT`]).
    pub long_request_timeout: Option<Duration>,
    /// The evaluator behind `Evaluate`; `None` → `UNIMPLEMENTED`.
    pub evaluator: Option<Arc<dyn PositionEvaluator>>,
    /// Most trials of one `Rollout` (default
    /// [`super::api::DEFAULT_MAX_ROLLOUT_TRIALS`]); more is `INVALID_ARGUMENT`.
    pub max_rollout_trials: u32,
    /// Connections open at once on the gRPC port (default 1024; at most the
    /// descriptor limit less a reserve). At the limit an idle connection is closed to
    /// make room.
    pub max_connections: usize,
    /// HTTP/2 `SETTINGS_MAX_CONCURRENT_STREAMS`: streams per connection (default 100,
    /// RFC 9113 §6.5.2's recommended minimum).
    pub max_concurrent_streams: u32,
    /// Time from accept to the HTTP/2 preface (default 10 s).
    pub handshake_timeout: Duration,
    /// A connection with no RPC in flight this long is closed with a GOAWAY (default
    /// 300 s).
    pub idle_timeout: Duration,
    /// A gRPC connection open this long (each connection's own value, jittered by
    /// ±10 %) gets a GOAWAY, so that clients reconnect and spread over the servers
    /// there are now (default 120 s; `None`: no limit). grpc-go's
    /// `MaxConnectionAge` (gRFC A9); see [`conn`].
    pub max_connection_age: Option<Duration>,
    /// After that GOAWAY, how long the calls in flight may go on before the
    /// connection is closed and they are cancelled (default 610 s: the long
    /// request timeout of `AnalyzeGame`, `Rollout` and `EvaluateBatch`, 600 s, plus
    /// the send timeout, 10 s; `None`: no limit). grpc-go's
    /// `MaxConnectionAgeGrace`.
    pub max_connection_age_grace: Option<Duration>,
    /// HTTP/2 PING interval (default 60 s); a PING not acknowledged within
    /// `keepalive_timeout` (default 20 s) closes the connection.
    pub keepalive_interval: Duration,
    /// See `keepalive_interval`.
    pub keepalive_timeout: Duration,
    /// Time to receive a unary request's whole body (default 10 s); then
    /// `DEADLINE_EXCEEDED`.
    pub request_body_timeout: Duration,
    /// A connection holding a response not written this long (the client does not
    /// read) is closed (default 10 s).
    pub send_timeout: Duration,
    /// Request and response message bytes the server holds at once (default 64 MiB);
    /// beyond it `RESOURCE_EXHAUSTED`.
    pub max_buffered_bytes: usize,
    /// The same for one connection (default 16 MiB).
    pub max_connection_buffered_bytes: usize,
    /// Engine RPCs of one connection from admission until their response is written
    /// (default 8): more wait (up to the send timeout), so that a client that does
    /// not read gets no more answers computed.
    pub connection_concurrency_limit: usize,
    /// Reflection streams open at once (default 32); beyond it
    /// `RESOURCE_EXHAUSTED`. Health `Watch` streams have their own limit,
    /// `connection_watch_limit`.
    pub streaming_limit: usize,
    /// Health `Watch` streams of one connection open at once (default 4; beyond it
    /// `RESOURCE_EXHAUSTED`): a client that follows the service config keeps one per
    /// connection for the connection's life, so they are bounded per connection
    /// (and in all by `max_connections` times this), not by `streaming_limit`.
    pub connection_watch_limit: usize,
    /// Deep searches (`Evaluate` at 1 ply or more) running at once (default: the
    /// number of CPUs).
    pub deep_search_limit: usize,
    /// Deep searches waiting for a slot (default 64).
    pub deep_search_queue: usize,
    /// Connections open at once on the metrics port (default 16).
    pub metrics_max_connections: usize,
    /// TLS, or mutual TLS with a client CA, on the gRPC port ([`super::tls`]);
    /// `None` (the default): plaintext. The TLS handshake is part of the handshake
    /// timeout.
    pub tls: Option<TlsConfig>,
    /// Compress responses (with the first of gzip and zstd that the client's
    /// `grpc-accept-encoding` lists) (default false: it costs 2.4 times the
    /// server CPU of a 16 KB ListLegalPlays answer, docs/performance.md, and
    /// grpcio and grpc-js list gzip by default). Compressed requests are accepted
    /// either way ([`super::inflate`]).
    pub compress_responses: bool,
    /// Connections open at once on the analysis page's port (default 64; a browser
    /// opens up to six per origin), when [`serve_with_web`] serves it.
    pub web_max_connections: usize,
    /// A connection of the analysis page with no request in flight this long is
    /// closed (default 60 s).
    pub web_idle_timeout: Duration,
    /// A call that takes this long or longer is logged at `INFO` whatever its status
    /// (default [`crate::telemetry::DEFAULT_SLOW_CALL`], 500 ms); `None`: calls are
    /// logged by their status only ([`crate::telemetry::call_level`]).
    pub log_slow_calls: Option<Duration>,
}

/// The default of `--long-request-timeout-seconds`: 600 s. A 7-game match analysed
/// at 2 plies (about 500 turns at 0.078 s of one core each, docs/api.md "Deadlines
/// and the cost of the long calls") is about 40 s of one core, and took 202 s on a
/// busy 2-core machine: the limit leaves room for a busier server, and still bounds
/// a forgotten request.
pub const DEFAULT_LONG_REQUEST_TIMEOUT: Duration = Duration::from_secs(600);

/// The number of CPUs this process may use (cgroup quotas included), at least 1.
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            drain: Duration::from_secs(10),
            max_message_bytes: 4 * 1024 * 1024,
            concurrency_limit: 256,
            max_plies: MAX_PLIES,
            request_timeout: Some(Duration::from_secs(30)),
            long_request_timeout: Some(DEFAULT_LONG_REQUEST_TIMEOUT),
            evaluator: None,
            max_rollout_trials: super::api::DEFAULT_MAX_ROLLOUT_TRIALS,
            max_connections: 1024,
            max_concurrent_streams: 100,
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            max_connection_age: Some(Duration::from_secs(120)),
            max_connection_age_grace: Some(Duration::from_secs(610)),
            keepalive_interval: Duration::from_secs(60),
            keepalive_timeout: Duration::from_secs(20),
            request_body_timeout: Duration::from_secs(10),
            send_timeout: Duration::from_secs(10),
            max_buffered_bytes: 64 * 1024 * 1024,
            max_connection_buffered_bytes: 16 * 1024 * 1024,
            connection_concurrency_limit: 8,
            streaming_limit: 32,
            connection_watch_limit: 4,
            deep_search_limit: cpus(),
            deep_search_queue: 64,
            metrics_max_connections: 16,
            tls: None,
            compress_responses: false,
            web_max_connections: 64,
            web_idle_timeout: Duration::from_secs(60),
            log_slow_calls: Some(crate::telemetry::DEFAULT_SLOW_CALL),
        }
    }
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("drain", &self.drain)
            .field("max_message_bytes", &self.max_message_bytes)
            .field("concurrency_limit", &self.concurrency_limit)
            .field("max_plies", &self.max_plies)
            .field("request_timeout", &self.request_timeout)
            .field("long_request_timeout", &self.long_request_timeout)
            .field("evaluator", &self.evaluator.is_some())
            .field("max_rollout_trials", &self.max_rollout_trials)
            .field("max_connections", &self.max_connections)
            .field("max_concurrent_streams", &self.max_concurrent_streams)
            .field("handshake_timeout", &self.handshake_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_connection_age", &self.max_connection_age)
            .field("max_connection_age_grace", &self.max_connection_age_grace)
            .field("keepalive_interval", &self.keepalive_interval)
            .field("keepalive_timeout", &self.keepalive_timeout)
            .field("request_body_timeout", &self.request_body_timeout)
            .field("send_timeout", &self.send_timeout)
            .field("max_buffered_bytes", &self.max_buffered_bytes)
            .field(
                "max_connection_buffered_bytes",
                &self.max_connection_buffered_bytes,
            )
            .field(
                "connection_concurrency_limit",
                &self.connection_concurrency_limit,
            )
            .field("streaming_limit", &self.streaming_limit)
            .field("connection_watch_limit", &self.connection_watch_limit)
            .field("deep_search_limit", &self.deep_search_limit)
            .field("deep_search_queue", &self.deep_search_queue)
            .field("metrics_max_connections", &self.metrics_max_connections)
            .field("tls", &self.tls)
            .field("compress_responses", &self.compress_responses)
            .field("web_max_connections", &self.web_max_connections)
            .field("web_idle_timeout", &self.web_idle_timeout)
            .field("log_slow_calls", &self.log_slow_calls)
            .finish()
    }
}

/// The longest time any duration setting may have: one day.
pub const MAX_SECONDS: f64 = 86_400.0;

impl ServerConfig {
    /// Checks every limit: each in its range, and the buffers large enough for one
    /// message. The error names the command-line flag and says what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        fn range<T: PartialOrd + std::fmt::Display>(
            flag: &str,
            v: T,
            lo: T,
            hi: T,
        ) -> Result<(), String> {
            if v < lo || v > hi {
                return Err(format!("--{flag} must be {lo}..={hi}, got {v}"));
            }
            Ok(())
        }
        let secs = |flag: &str, d: Duration, lo: f64| -> Result<(), String> {
            let s = d.as_secs_f64();
            if s < lo || s > MAX_SECONDS {
                return Err(format!(
                    "--{flag} must be {lo}..={MAX_SECONDS} seconds, got {s}"
                ));
            }
            Ok(())
        };
        const MIB: usize = 1024 * 1024;
        range("max-message-bytes", self.max_message_bytes, 1024, 64 * MIB)?;
        range("concurrency-limit", self.concurrency_limit, 1, 100_000)?;
        range("max-plies", self.max_plies, 0, MAX_PLIES)?;
        range("max-connections", self.max_connections, 1, 1_000_000)?;
        range(
            "max-concurrent-streams",
            self.max_concurrent_streams,
            1,
            10_000,
        )?;
        range("streaming-limit", self.streaming_limit, 1, 10_000)?;
        range(
            "connection-watch-limit",
            self.connection_watch_limit,
            1,
            100,
        )?;
        range(
            "connection-concurrency-limit",
            self.connection_concurrency_limit,
            1,
            10_000,
        )?;
        range("deep-search-limit", self.deep_search_limit, 1, 1024)?;
        range("deep-search-queue", self.deep_search_queue, 0, 100_000)?;
        range(
            "metrics-max-connections",
            self.metrics_max_connections,
            1,
            10_000,
        )?;
        range("web-max-connections", self.web_max_connections, 1, 10_000)?;
        secs("drain-seconds", self.drain, 0.0)?;
        if let Some(t) = self.request_timeout {
            secs("request-timeout-seconds", t, 0.0)?;
        }
        if let Some(t) = self.long_request_timeout {
            secs("long-request-timeout-seconds", t, 0.0)?;
        }
        secs("handshake-timeout-seconds", self.handshake_timeout, 0.01)?;
        secs("idle-timeout-seconds", self.idle_timeout, 0.01)?;
        if let Some(t) = self.max_connection_age {
            secs("max-connection-age-seconds", t, 0.001)?;
        }
        if let Some(t) = self.max_connection_age_grace {
            secs("max-connection-age-grace-seconds", t, 0.001)?;
        }
        secs("keepalive-interval-seconds", self.keepalive_interval, 0.01)?;
        secs("keepalive-timeout-seconds", self.keepalive_timeout, 0.01)?;
        secs(
            "request-body-timeout-seconds",
            self.request_body_timeout,
            0.01,
        )?;
        secs("send-timeout-seconds", self.send_timeout, 0.01)?;
        secs("web-idle-timeout-seconds", self.web_idle_timeout, 0.01)?;
        if let Some(t) = self.log_slow_calls {
            range(
                "log-slow-calls-ms",
                t.as_millis(),
                0,
                (MAX_SECONDS * 1000.0) as u128,
            )?;
        }
        let one_message = self.max_message_bytes + 5;
        if self.max_connection_buffered_bytes < one_message {
            return Err(format!(
                "--max-connection-buffered-bytes must hold one message: at least \
                 --max-message-bytes + 5 = {one_message}, got {}",
                self.max_connection_buffered_bytes
            ));
        }
        if self.max_buffered_bytes < self.max_connection_buffered_bytes {
            return Err(format!(
                "--max-buffered-bytes must be at least --max-connection-buffered-bytes ({}), got {}",
                self.max_connection_buffered_bytes, self.max_buffered_bytes
            ));
        }
        range("max-buffered-bytes", self.max_buffered_bytes, 1024, 1 << 40)?;
        Ok(())
    }
}

/// The listen backlog of [`listen`]: connections the kernel completes and queues
/// before the server accepts them (capped by `net.core.somaxconn`, 4096 on Linux
/// since 5.4).
pub const LISTEN_BACKLOG: u32 = 4096;

/// A TCP listener on `addr` with a backlog of [`LISTEN_BACKLOG`] (tokio's `bind`
/// uses 1024): a burst of connections faster than the accept loop (a flood of idle
/// connections) then does not overflow the queue, which would drop new clients' SYNs
/// for a second.
pub fn listen(addr: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Descriptors kept out of the connection limit for everything else (listeners, the
/// runtime, logs).
const FD_RESERVE: u64 = 64;

/// The hyper service of one connection: the tower stack built for it.
#[derive(Clone)]
struct ConnService<S>(S);

impl<S> hyper::service::Service<Request<Incoming>> for ConnService<S>
where
    S: tower::Service<Request<Incoming>, Response = Response<Body>, Error = Infallible> + Clone,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = tower::util::Oneshot<S, Request<Incoming>>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        self.0.clone().oneshot(req)
    }
}

/// Serves gRPC on `grpc` and Prometheus metrics (`GET /metrics`) on `metrics` until
/// `shutdown` completes: [`serve_with_web`] without the analysis page.
pub async fn serve(
    config: ServerConfig,
    grpc: TcpListener,
    metrics: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> Result<(), BoxError> {
    serve_with_web(config, grpc, metrics, None, shutdown).await
}

/// Serves gRPC on `grpc`, Prometheus metrics (`GET /metrics`) on `metrics` and, with
/// `web`, the analysis page and its gRPC-Web endpoint ([`crate::web`]) until
/// `shutdown` completes; then health turns `NOT_SERVING` (for `""` and
/// `tavli.v1.TavliEngine`), no new connection is accepted, every connection gets a
/// GOAWAY (HTTP/1.1: is closed once idle), in-flight RPCs get up to `config.drain` to
/// finish; then the remaining work is cancelled, the connections are closed and the
/// function returns `Ok(())`. Errors: an invalid `config`
/// ([`ServerConfig::validate`]), reflection set-up.
///
/// gRPC services: `tavli.v1.TavliEngine`, `grpc.health.v1.Health`,
/// `grpc.reflection.v1.ServerReflection` and `grpc.reflection.v1alpha.ServerReflection`,
/// over HTTP/2 (over TLS with `config.tls`) served by hyper with the connection
/// limits of [`conn`] (the age limit included). Layers, outermost first: metrics
/// and tracing ([`MetricsLayer`]), the deadline ([`DeadlineLayer`]), admission
/// ([`AdmissionLayer`]: HTTP 415 for a request that is not gRPC, body, one request
/// message, compressed requests inflated, permits, buffers). Health is [`Health`] (`Watch` of an unknown service kept open;
/// watches end at shutdown). The
/// page's gRPC-Web calls go through tonic-web to the same layers (one concurrency
/// limit, one budget), over HTTP/1.1 connections with their own limits
/// (`web_max_connections`, `web_idle_timeout`, the handshake and send timeouts).
/// Readiness: see [`readiness`].
pub async fn serve_with_web(
    config: ServerConfig,
    grpc: TcpListener,
    metrics: TcpListener,
    web: Option<TcpListener>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), BoxError> {
    config.validate()?;
    let m = Metrics::new();
    let cancel = CancelToken::new();
    let deep = DeepSearchLimit::new(config.deep_search_limit, config.deep_search_queue);
    let engine =
        TavliEngineService::new(config.evaluator.clone(), config.max_plies, Some(m.clone()))
            .with_max_rollout_trials(config.max_rollout_trials)
            .with_limits(deep, cancel.clone());
    let engine = EngineRoutes::new(engine, config.max_message_bytes)
        .send_compressed(config.compress_responses);

    // Health and reflection: small requests (also when compressed: tonic inflates
    // them up to this limit), compressed ones accepted as everywhere.
    let small = SMALL_MESSAGE_BYTES.min(config.max_message_bytes);
    let (health, health_service) = Health::new();
    let health_service = HealthServer::new(health_service)
        .max_decoding_message_size(small)
        .accept_compressed(CompressionEncoding::Gzip)
        .accept_compressed(CompressionEncoding::Zstd);
    health.set(SERVICE_NAME, ServingStatus::Serving).await;
    // Both reflection services describe every service, each other included, so that
    // `list` shows the same set whichever version a client speaks.
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .include_reflection_service(false)
            .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
            // google.rpc.BadRequest / ErrorInfo, so that clients can decode error details.
            .register_encoded_file_descriptor_set(tonic_types::pb::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(
                tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET,
            )
    };
    let reflection_v1 = reflection()
        .build_v1()?
        .max_decoding_message_size(small)
        .accept_compressed(CompressionEncoding::Gzip)
        .accept_compressed(CompressionEncoding::Zstd);
    let reflection_v1alpha = reflection()
        .build_v1alpha()?
        .max_decoding_message_size(small)
        .accept_compressed(CompressionEncoding::Gzip)
        .accept_compressed(CompressionEncoding::Zstd);
    let routes = tonic::service::Routes::new(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(engine)
        .prepare();

    let budget = Budget::new(config.max_buffered_bytes);
    let admission = AdmissionLayer::new(
        AdmissionConfig {
            concurrency_limit: config.concurrency_limit,
            streaming_limit: config.streaming_limit,
            body_timeout: config.request_body_timeout,
            max_message_bytes: config.max_message_bytes,
            connection_wait: config.send_timeout,
        },
        budget.clone(),
        Some(m.clone()),
    );
    // The stack of one connection (its admission counts on the connection), the same
    // for the gRPC port and the page's gRPC-Web calls.
    let metrics_layer = MetricsLayer::new(m.clone()).slow_calls(config.log_slow_calls);
    let deadline_layer = DeadlineLayer::new(config.request_timeout, config.long_request_timeout);
    let admit = admission.clone();
    let stack = move |conn: Arc<ConnState>| {
        tower::ServiceBuilder::new()
            .layer(metrics_layer.clone())
            .layer(deadline_layer)
            .layer(admit.for_conn(conn))
            .service(routes.clone())
    };

    // Connections: as many as configured, within the descriptors the process has
    // (each listener's connections plus up to an eighth more being evicted).
    let mut max_connections = config.max_connections;
    if let Some(fds) = conn::fd_limit() {
        let others = config.metrics_max_connections as u64
            + if web.is_some() {
                config.web_max_connections as u64
            } else {
                0
            };
        let others_fds = others * 9 / 8 + 2;
        let room = fds.saturating_sub(FD_RESERVE + others_fds) * 8 / 9;
        let room = room.max(1) as usize;
        if room < max_connections {
            tracing::warn!(
                max_connections,
                fd_limit = fds,
                "the descriptor limit leaves room for {room} gRPC connections: using that"
            );
            max_connections = room;
        }
    }
    let limits = |max_connections| ConnLimits {
        max_connections,
        handshake_timeout: config.handshake_timeout,
        idle_timeout: config.idle_timeout,
        send_timeout: config.send_timeout,
        max_buffered_bytes: config.max_connection_buffered_bytes,
        max_rpcs: config.connection_concurrency_limit,
        max_watches: config.connection_watch_limit,
        max_age: None,
        max_age_grace: None,
    };
    // The age limit is for gRPC clients (long-lived, multiplexed connections).
    let grpc_registry = Registry::new(
        "grpc",
        ConnLimits {
            max_age: config.max_connection_age,
            max_age_grace: config.max_connection_age_grace,
            ..limits(max_connections)
        },
        Some(m.clone()),
    );
    let metrics_registry = Registry::new(
        "metrics",
        limits(config.metrics_max_connections),
        Some(m.clone()),
    );
    let web_registry = Registry::new(
        "web",
        ConnLimits {
            idle_timeout: config.web_idle_timeout,
            ..limits(config.web_max_connections)
        },
        Some(m.clone()),
    );

    let mut h2 = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    h2.timer(TokioTimer::new())
        .max_concurrent_streams(config.max_concurrent_streams)
        .keep_alive_interval(config.keepalive_interval)
        .keep_alive_timeout(config.keepalive_timeout)
        .max_header_list_size(16 * 1024);
    let mut h1 = hyper::server::conn::http1::Builder::new();
    h1.timer(TokioTimer::new())
        .header_read_timeout(config.handshake_timeout)
        .max_buf_size(16 * 1024);

    let grpc_addr = grpc.local_addr()?;
    let metrics_addr = metrics.local_addr()?;
    let web_addr = web.as_ref().map(|l| l.local_addr()).transpose()?;
    let (phase_tx, phase_rx) = watch::channel(Phase::Serving);
    let (metrics_phase_tx, metrics_phase_rx) = watch::channel(Phase::Serving);
    let grpc_stack = stack.clone();
    let grpc_task = tokio::spawn(conn::run_listener(
        grpc,
        grpc_registry.clone(),
        config.tls.as_ref().map(TlsConfig::acceptor),
        conn::HTTP2_PREFACE_LEN,
        move |io, state| h2.serve_connection(TokioIo::new(io), ConnService(grpc_stack(state))),
        |c| c.graceful_shutdown(),
        phase_rx.clone(),
    ));

    // The page: HTTP/1.1, its gRPC-Web calls through the same stack; it drains and
    // stops with the gRPC port.
    let web_task = web.map(|listener| {
        // hyper's header timer starts as soon as a connection waits for a request
        // (kept-alive ones too): no shorter than the idle timeout, which is the
        // registry's to enforce (after the handshake timeout for the first byte).
        let mut h1 = h1.clone();
        h1.header_read_timeout(config.handshake_timeout.max(config.web_idle_timeout));
        tokio::spawn(conn::run_listener(
            listener,
            web_registry.clone(),
            None,
            1,
            move |io, state| {
                let page = crate::web::Page::new(stack(state.clone()));
                let svc = hyper::service::service_fn(move |req: Request<Incoming>| {
                    // Marks the connection active (a gRPC-Web call is counted by
                    // admission until its answer is written).
                    let _guard = StreamGuard::new(&state);
                    page.clone().oneshot(req)
                });
                h1.serve_connection(TokioIo::new(io), svc)
            },
            |c| c.graceful_shutdown(),
            phase_rx,
        ))
    });

    let render = m.clone();
    let metrics_task = tokio::spawn(conn::run_listener(
        metrics,
        metrics_registry.clone(),
        None,
        1,
        move |io, state| {
            let render = render.clone();
            let svc = hyper::service::service_fn(move |req: Request<Incoming>| {
                let _guard = StreamGuard::new(&state);
                let resp = metrics_response(&req, &render);
                async move { Ok::<_, Infallible>(resp) }
            });
            h1.serve_connection(TokioIo::new(io), svc)
        },
        |c| c.graceful_shutdown(),
        metrics_phase_rx,
    ));

    let mut registries = vec![grpc_registry.clone(), metrics_registry.clone()];
    if web_task.is_some() {
        registries.push(web_registry.clone());
    }
    let ready_task = tokio::spawn(readiness::run(
        health.clone(),
        readiness::Inputs {
            admission,
            registries,
            budget,
        },
        m.clone(),
        phase_tx.subscribe(),
    ));
    let tls = config
        .tls
        .as_ref()
        .map(|t| if t.is_mutual() { "mutual" } else { "server" });
    let web_addr = web_addr.map(tracing::field::display);
    tracing::info!(%grpc_addr, %metrics_addr, web_addr, tls, service = SERVICE_NAME, max_connections, ?config, "serving");

    shutdown.await;

    tracing::info!(drain = ?config.drain, "shutting down: health NOT_SERVING, draining in-flight RPCs");
    let _ = phase_tx.send(Phase::Draining);
    ready_task.abort();
    let _ = ready_task.await;
    m.ready.set(0);
    health.set(SERVICE_NAME, ServingStatus::NotServing).await;
    health.set("", ServingStatus::NotServing).await;
    // Health watches end (after those statuses): they do not hold the drain.
    health.end_watches();
    let _ = grpc_task.await;
    if let Some(task) = web_task {
        let _ = task.await;
    }
    // Both ports with RPCs (the page's gRPC-Web calls drain with the gRPC port's).
    let all_empty = || async {
        tokio::join!(grpc_registry.wait_empty(), web_registry.wait_empty());
    };
    if tokio::time::timeout(config.drain, all_empty())
        .await
        .is_ok()
    {
        tracing::info!("drained; stopped");
    } else {
        tracing::warn!(
            drain = ?config.drain,
            connections = grpc_registry.len() + web_registry.len(),
            "drain time over; cancelling the remaining work and closing the connections"
        );
        cancel.cancel();
        // The stopped searches answer UNAVAILABLE: a moment for those answers to go
        // out, then every connection is closed.
        let _ = tokio::time::timeout(Duration::from_millis(200), all_empty()).await;
        let _ = phase_tx.send(Phase::Stopped);
        let _ = tokio::time::timeout(Duration::from_millis(300), all_empty()).await;
    }
    let _ = phase_tx.send(Phase::Stopped);
    let _ = metrics_phase_tx.send(Phase::Stopped);
    let _ = metrics_task.await;
    let _ = tokio::time::timeout(Duration::from_millis(500), metrics_registry.wait_empty()).await;
    Ok(())
}

/// The answer of the metrics port: `GET /metrics` (Prometheus text format 0.0.4),
/// 404 for any other path, 405 for another method there.
fn metrics_response(req: &Request<Incoming>, m: &Metrics) -> Response<http_body_util::Full<Bytes>> {
    let text = |status: http::StatusCode, body: Bytes, ctype: &'static str| {
        let mut r = Response::new(http_body_util::Full::new(body));
        *r.status_mut() = status;
        r.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static(ctype),
        );
        r
    };
    if req.uri().path() != "/metrics" {
        return text(
            http::StatusCode::NOT_FOUND,
            Bytes::from_static(b"not found\n"),
            "text/plain",
        );
    }
    if req.method() != http::Method::GET && req.method() != http::Method::HEAD {
        return text(
            http::StatusCode::METHOD_NOT_ALLOWED,
            Bytes::from_static(b"use GET\n"),
            "text/plain",
        );
    }
    text(
        http::StatusCode::OK,
        Bytes::from(m.render()),
        "text/plain; version=0.0.4; charset=utf-8",
    )
}

/// A future that completes on SIGTERM or SIGINT (Ctrl-C), logging which one arrived.
/// The handlers are installed when this is called (inside the runtime), so a signal
/// that comes while the server starts is not lost (nor does it kill the process).
pub fn shutdown_signal() -> impl Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let term = signal(SignalKind::terminate());
        let int = signal(SignalKind::interrupt());
        async move {
            let which = match (term, int) {
                (Ok(mut term), Ok(mut int)) => tokio::select! {
                    _ = term.recv() => "SIGTERM",
                    _ = int.recv() => "SIGINT",
                },
                _ => {
                    let _ = tokio::signal::ctrl_c().await;
                    "SIGINT"
                }
            };
            tracing::info!(signal = which, "shutdown signal received");
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!(signal = "ctrl-c", "shutdown signal received");
    }
}
