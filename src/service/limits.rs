//! Tower layers and limits that protect the server (issue #11):
//!
//! - [`AdmissionLayer`]: answers a request that is not gRPC HTTP 415 (its
//!   `content-type`, [`super::protocol`]); reads a request's body (every method's but reflection's
//!   bidirectional stream: one message, within the request-body timeout, charged to
//!   the buffers of [`super::buffers`]; a body with a second message is refused
//!   `INTERNAL` by [`super::protocol::one_message`]; a compressed one is inflated
//!   under the same limits, [`super::inflate`]) and only then takes a permit: one of
//!   the engine's `--concurrency-limit` for `tavli.v1.TavliEngine` (and unknown
//!   paths), one of `--streaming-limit` for reflection's streams, one of its
//!   connection's `--connection-watch-limit` for a health `Watch`
//!   ([`ConnState::watch_slot`]: the idle stream a health-checking client keeps per
//!   connection takes no permit of any other limit); health `Check` needs none and
//!   is not charged to the buffers, so probes answer under any load. Engine RPCs first take one of
//!   their connection's slots ([`ConnState::rpc_slot`], waiting for it holds no
//!   permit). A permit that is not free is `RESOURCE_EXHAUSTED` at once (not queued).
//!   `Evaluate` (and `EvaluateBatch`) also finds its engine permit in the request as a [`WorkPermit`], which
//!   a search handed to another thread keeps until it has stopped, and its connection
//!   slot as a [`ConnSlot`], which a deep search gives back. The response's data is
//!   charged to the buffers until written.
//! - [`DeadlineLayer`]: honours the client's `grpc-timeout` and the server's limit
//!   for the RPC (`--request-timeout-seconds`, `--long-request-timeout-seconds` for
//!   [`LONG_RPCS`]), whichever is shorter: the RPC is answered `DEADLINE_EXCEEDED`
//!   naming that limit when it passes, and the deadline is put in the request
//!   extensions as [`Deadline`] for handlers (evaluation, analysis, rollouts).
//! - [`DeepSearchLimit`]: admission of deep searches (`Evaluate` at 1 ply and more), a
//!   few at a time, each admitted only when it can be expected to finish before its
//!   deadline.
//! - [`CancelOnDrop`]: cancels a [`CancelToken`] when a handler's future is dropped
//!   (client cancel, connection drop, deadline, shutdown).

use super::buffers::{self, Budget, Charge, ChargedBody};
use super::conn::{ConnState, StreamGuard};
use super::error::ServiceError;
use super::inflate::{inflate_request, Encoding};
use super::protocol::{is_grpc_content_type, one_message, unsupported_media_type};
use crate::eval::{CancelToken, MAX_PLIES};
use crate::telemetry::{rpc_labels, Metrics};
use bytes::{Bytes, BytesMut};
use http::{Request, Response};
use http_body::{Body as _, Frame};
use std::convert::Infallible;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::body::Body;
use tonic::Status;
use tower::{Layer, Service};

type BoxFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

/// How admission treats an RPC path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    /// Engine RPCs (and unknown paths): the body is read, then an engine permit.
    Engine,
    /// Health `Check`/`List`: the body is read; no permit.
    Probe,
    /// Health `Watch`: the body is read; a watch place of its connection.
    Watch,
    /// Reflection: a long-lived bidirectional stream, a streaming permit.
    Streaming,
}

/// The path of health `Watch`: a stream whose request body (one message) is read
/// before it takes its permit.
const HEALTH_WATCH: &str = "/grpc.health.v1.Health/Watch";

fn classify(path: &str) -> Class {
    match path {
        "/grpc.health.v1.Health/Check" | "/grpc.health.v1.Health/List" => Class::Probe,
        HEALTH_WATCH => Class::Watch,
        p if p.starts_with("/grpc.reflection.") => Class::Streaming,
        _ => Class::Engine,
    }
}

/// The engine permit of an `Evaluate` request, in its extensions: clone it into work
/// that may outlive the handler (a search on the blocking pool), so that the permit
/// returns only when the work has stopped. (Other RPCs finish within their handler,
/// whose future holds their permit.)
#[derive(Clone, Debug)]
pub struct WorkPermit(#[allow(dead_code)] Arc<OwnedSemaphorePermit>);

/// The connection slot of an `Evaluate` request ([`ConnState::rpc_slot`]), in its
/// extensions: a deep search gives it back before it queues for the deep-search limit
/// (which bounds it instead), so that a client's other calls on the same connection
/// do not wait behind its deep searches. Otherwise it returns with the answer.
#[derive(Clone, Debug)]
pub struct ConnSlot(Arc<std::sync::Mutex<Option<OwnedSemaphorePermit>>>);

impl ConnSlot {
    /// Gives the slot back now.
    pub fn release(&self) {
        drop(self.take());
    }

    fn take(&self) -> Option<OwnedSemaphorePermit> {
        self.0.lock().map(|mut s| s.take()).unwrap_or(None)
    }
}

/// The largest request message of health and reflection (16 KiB; their requests
/// name a service, a file or a symbol): a health check's body is read up to this
/// (not charged to the buffers), and tonic refuses a larger message, compressed or
/// not (`OUT_OF_RANGE`, or `RESOURCE_EXHAUSTED` when it inflates past it).
pub const SMALL_MESSAGE_BYTES: usize = 16 * 1024;

/// The paths of `Evaluate`, `EvaluateBatch` and `ChoosePlay`, whose connection slot
/// is a [`ConnSlot`] and whose engine permit is a [`WorkPermit`] (their deep searches
/// run on the blocking pool).
const EVALUATE: [&str; 3] = [
    "/tavli.v1.TavliEngine/Evaluate",
    "/tavli.v1.TavliEngine/EvaluateBatch",
    "/tavli.v1.TavliEngine/ChoosePlay",
];

/// The server-streaming engine RPCs: their work goes on after the handler returns
/// (while the stream is read), so they hold their engine permit until the response
/// body ends or is dropped (the stream's own drop guard then cancels the work).
const ENGINE_STREAMS: [&str; 2] = [
    "/tavli.v1.TavliEngine/Rollout",
    "/tavli.v1.TavliEngine/AnalyzeGame",
];

/// What the readiness check reads: refusals for lack of engine permits or buffers.
#[derive(Debug, Default)]
pub struct Pressure {
    /// Requests refused because every engine permit was taken or the buffers were full.
    pub refusals: AtomicU64,
}

/// The limits of [`AdmissionLayer`].
#[derive(Clone, Debug)]
pub struct AdmissionConfig {
    /// Engine RPCs running at once (`--concurrency-limit`).
    pub concurrency_limit: usize,
    /// Reflection streams open at once (`--streaming-limit`); also the health
    /// `Watch` streams of requests that come without a connection.
    pub streaming_limit: usize,
    /// Time to receive a unary request's whole body (`--request-body-timeout-seconds`).
    pub body_timeout: Duration,
    /// The largest request message (`--max-message-bytes`); a body is read up to this
    /// plus the 5-byte gRPC prefix, the rest is tonic's `OUT_OF_RANGE`.
    pub max_message_bytes: usize,
    /// How long an engine RPC may wait for one of its connection's slots
    /// ([`ConnState::rpc_slot`]; the send timeout).
    pub connection_wait: Duration,
}

/// Admission: see the module docs. Cheap to clone (one shared state, and the
/// connection it serves once made [`for_conn`](AdmissionLayer::for_conn)).
#[derive(Clone, Debug)]
pub struct AdmissionLayer(Arc<Shared>, Option<Arc<ConnState>>);

#[derive(Debug)]
struct Shared {
    config: AdmissionConfig,
    engine: Arc<Semaphore>,
    streaming: Arc<Semaphore>,
    budget: Arc<Budget>,
    pressure: Arc<Pressure>,
    metrics: Option<Arc<Metrics>>,
}

impl AdmissionLayer {
    /// Admission with `config`, charging message bytes to `budget`.
    pub fn new(
        config: AdmissionConfig,
        budget: Arc<Budget>,
        metrics: Option<Arc<Metrics>>,
    ) -> AdmissionLayer {
        AdmissionLayer(
            Arc::new(Shared {
                engine: Arc::new(Semaphore::new(config.concurrency_limit.max(1))),
                streaming: Arc::new(Semaphore::new(config.streaming_limit.max(1))),
                config,
                budget,
                pressure: Arc::default(),
                metrics,
            }),
            None,
        )
    }

    /// The same admission for the requests of one connection: they are counted on
    /// it and charged to its share of the buffers.
    pub fn for_conn(&self, conn: Arc<ConnState>) -> AdmissionLayer {
        AdmissionLayer(self.0.clone(), Some(conn))
    }

    /// Engine permits free now.
    pub fn engine_permits_free(&self) -> usize {
        self.0.engine.available_permits()
    }

    /// The refusal counters (for readiness).
    pub fn pressure(&self) -> Arc<Pressure> {
        self.0.pressure.clone()
    }
}

impl Shared {
    fn refused(&self, reason: &'static str) {
        if let Some(m) = &self.metrics {
            m.refused.with_label_values(&[reason]).inc();
        }
        if matches!(reason, "concurrency" | "buffers") {
            self.pressure.refusals.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl<S> Layer<S> for AdmissionLayer {
    type Service = Admission<S>;
    fn layer(&self, inner: S) -> Self::Service {
        Admission {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service of [`AdmissionLayer`].
#[derive(Clone, Debug)]
pub struct Admission<S> {
    inner: S,
    layer: AdmissionLayer,
}

/// The body of an admitted request: a unary request's body read into memory, or a
/// stream's body as it comes.
#[derive(Debug)]
pub enum AdmittedBody<B> {
    /// The whole body, read.
    Read(Option<Bytes>),
    /// A streaming body (health `Watch`, reflection).
    Stream(B),
}

impl<B> http_body::Body for AdmittedBody<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        match &mut *self {
            AdmittedBody::Read(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            AdmittedBody::Stream(s) => Pin::new(s).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            AdmittedBody::Read(b) => b.is_none(),
            AdmittedBody::Stream(s) => s.is_end_stream(),
        }
    }

    fn size_hint(&self) -> http_body::SizeHint {
        match self {
            AdmittedBody::Read(b) => {
                http_body::SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64))
            }
            AdmittedBody::Stream(s) => s.size_hint(),
        }
    }
}

/// Reads a unary request body: until its end, or until it holds more than the limit
/// (or declares a message over the limit in its gRPC prefix: tonic then answers
/// `OUT_OF_RANGE` from what was read). Every chunk is charged to `budget` (none: a
/// health check, never refused for lack of room).
async fn read_body<B>(
    mut body: B,
    max_message: usize,
    budget: Option<&Arc<Budget>>,
    conn: Option<&Arc<ConnState>>,
) -> Result<(Bytes, Option<Charge>), Status>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    let cap = max_message.saturating_add(5);
    let mut charge: Option<Charge> = None;
    let mut single: Option<Bytes> = None;
    let mut joined = BytesMut::new();
    let mut total = 0usize;
    loop {
        if body.is_end_stream() {
            break;
        }
        let frame = match poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            None => break,
            Some(Err(e)) => {
                return Err(Status::cancelled(format!("request body not received: {e}")))
            }
            Some(Ok(f)) => f,
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if data.is_empty() {
            continue;
        }
        let fits = match (&mut charge, budget) {
            (_, None) => true,
            (Some(c), _) => c.try_grow(data.len()),
            (None, Some(budget)) => match Charge::try_new(budget, conn, data.len(), false) {
                Some(c) => {
                    charge = Some(c);
                    true
                }
                None => false,
            },
        };
        if !fits {
            return Err(buffers::buffers_full());
        }
        total += data.len();
        match single.take() {
            None if joined.is_empty() => single = Some(data),
            first => {
                if let Some(first) = first {
                    joined.extend_from_slice(&first);
                }
                joined.extend_from_slice(&data);
            }
        }
        let declared = match (&single, joined.is_empty()) {
            (Some(b), _) if b.len() >= 5 => Some(u32::from_be_bytes([b[1], b[2], b[3], b[4]])),
            (_, false) if joined.len() >= 5 => Some(u32::from_be_bytes([
                joined[1], joined[2], joined[3], joined[4],
            ])),
            _ => None,
        };
        if total > cap || declared.is_some_and(|n| n as usize > max_message) {
            break;
        }
    }
    let bytes = single.unwrap_or_else(|| joined.freeze());
    Ok((bytes, charge))
}

impl<S, B> Service<Request<B>> for Admission<S>
where
    S: Service<Request<AdmittedBody<B>>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: http_body::Body<Data = Bytes> + Unpin + Send + 'static,
    B::Error: Into<tonic::codegen::StdError> + std::fmt::Display,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Response<Body>, Infallible>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        // Not gRPC: HTTP 415 before anything is read ([`super::protocol`]).
        let content_type = req.headers().get(http::header::CONTENT_TYPE);
        if !is_grpc_content_type(content_type) {
            tracing::debug!(
                path = req.uri().path(),
                ?content_type,
                "not a gRPC request: 415"
            );
            let refusal = unsupported_media_type(content_type);
            return Box::pin(std::future::ready(Ok(refusal)));
        }
        let class = classify(req.uri().path());
        let evaluate = EVALUATE.contains(&req.uri().path());
        let engine_stream = ENGINE_STREAMS.contains(&req.uri().path());
        let conn = self.layer.1.clone();
        let guard = conn.as_ref().map(StreamGuard::new);
        // The service that was made ready answers this request; a clone waits for the
        // next one (tower's contract).
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let layer = self.layer.0.clone();
        Box::pin(async move {
            let (mut parts, body) = req.into_parts();
            let config = &layer.config;
            // Every body is read in full but a bidirectional stream's (reflection):
            // one request message, checked before any work.
            let (body, request_charge) = if class == Class::Streaming {
                (AdmittedBody::Stream(body), None)
            } else {
                // Health checks and watches are never refused for lack of buffer room;
                // their messages are small (tonic refuses larger ones from what is
                // read).
                let (budget, max) = match class {
                    Class::Probe | Class::Watch | Class::Streaming => {
                        (None, SMALL_MESSAGE_BYTES.min(config.max_message_bytes))
                    }
                    Class::Engine => (Some(&layer.budget), config.max_message_bytes),
                };
                let encoding = Encoding::of(&parts.headers);
                let read = read_body(body, max, budget, conn.as_ref());
                let read = tokio::time::timeout(config.body_timeout, read).await;
                // A second message: a cardinality violation, answered before the
                // handler runs (unknown methods are tonic's UNIMPLEMENTED). The
                // method is looked up only then: a body of one message costs a
                // look at its prefix.
                if let Ok(Ok((bytes, _))) = &read {
                    let path = parts.uri.path();
                    if let Err(status) = one_message(bytes, max, path) {
                        if rpc_labels(path).1 != "unknown" {
                            return Ok(status.into_http());
                        }
                    }
                }
                let read = match (read, encoding) {
                    // A compressed engine request is inflated now, charged to the
                    // buffers, and goes on uncompressed.
                    (Ok(Ok((bytes, _compressed))), Some(encoding)) if class == Class::Engine => {
                        let inflated =
                            inflate_request(&bytes, encoding, max, &layer.budget, conn.as_ref());
                        if inflated.is_ok() {
                            parts.headers.remove("grpc-encoding");
                        }
                        Ok(inflated.map(|(body, charge)| (body, Some(charge))))
                    }
                    (read, _) => read,
                };
                match read {
                    Ok(Ok((bytes, charge))) => (AdmittedBody::Read(Some(bytes)), charge),
                    Ok(Err(status)) => {
                        if status.code() == tonic::Code::ResourceExhausted {
                            layer.refused("buffers");
                        }
                        return Ok(status.into_http());
                    }
                    Err(_) => {
                        layer.refused("body_timeout");
                        return Ok(Status::deadline_exceeded(format!(
                            "the request body did not arrive within the server's \
                             --request-body-timeout-seconds ({})",
                            seconds_text(config.body_timeout)
                        ))
                        .into_http());
                    }
                }
            };
            // A slot of the connection first (waiting holds no engine permit): a
            // client that does not read its answers gets no more computed.
            let slot = match (class, &conn) {
                (Class::Engine, Some(c)) => match c.rpc_slot(config.connection_wait).await {
                    Some(slot) => Some(slot),
                    None => {
                        layer.refused("connection");
                        return Ok(Status::resource_exhausted(
                            "too many RPCs in flight on this connection with their answers \
                             not yet read; retry later",
                        )
                        .into_http());
                    }
                },
                _ => None,
            };
            let mut req = Request::from_parts(parts, body);
            let (slot, shared_slot) = match slot {
                Some(s) if evaluate => {
                    let shared = ConnSlot(Arc::new(std::sync::Mutex::new(Some(s))));
                    req.extensions_mut().insert(shared.clone());
                    (None, Some(shared))
                }
                s => (s, None),
            };
            let (work, streaming) = match class {
                Class::Probe => ((None, None), None),
                Class::Engine => match layer.engine.clone().try_acquire_owned() {
                    // Evaluate may hand its work to another thread: the permit is
                    // shared with it. Other RPCs finish in their handler.
                    Ok(p) if evaluate => {
                        let work = WorkPermit(Arc::new(p));
                        req.extensions_mut().insert(work.clone());
                        ((Some(work), None), None)
                    }
                    Ok(p) => ((None, Some(p)), None),
                    Err(_) => {
                        layer.refused("concurrency");
                        return Ok(Status::resource_exhausted(format!(
                            "server overloaded: {} requests already in flight; retry later",
                            config.concurrency_limit
                        ))
                        .into_http());
                    }
                },
                Class::Watch => {
                    let place = match &conn {
                        Some(c) => c.watch_slot(),
                        None => layer.streaming.clone().try_acquire_owned().ok(),
                    };
                    match place {
                        Some(p) => ((None, None), Some(p)),
                        None => {
                            layer.refused("watches");
                            return Ok(Status::resource_exhausted(format!(
                                "too many health watches on this connection: {} already open; \
                                 cancel one, or watch on another connection",
                                conn.as_ref()
                                    .map_or(config.streaming_limit, |c| c.max_watches())
                            ))
                            .into_http());
                        }
                    }
                }
                Class::Streaming => match layer.streaming.clone().try_acquire_owned() {
                    Ok(p) => ((None, None), Some(p)),
                    Err(_) => {
                        layer.refused("streaming");
                        return Ok(Status::resource_exhausted(format!(
                            "server overloaded: {} reflection streams already open; retry later",
                            config.streaming_limit
                        ))
                        .into_http());
                    }
                },
            };
            let Ok(resp) = inner.call(req).await;
            // The handler is done with its request (a search it handed to another
            // thread holds its own clone of the permit); a streaming RPC's permit
            // stays with its response body.
            let (work, engine) = work;
            drop((work, request_charge));
            let streaming = match engine {
                Some(p) if engine_stream => Some(p),
                _ => streaming,
            };
            let slot = slot.or_else(|| shared_slot.and_then(|s| s.take()));
            let (parts, mut body) = resp.into_parts();
            // Read the first frame now (a unary answer is ready at once), so that
            // its bytes are charged even if the client never lets hyper send them.
            let first = match poll_fn(|cx| Poll::Ready(Pin::new(&mut body).poll_frame(cx))).await {
                Poll::Ready(Some(Ok(frame))) if class == Class::Probe => Some(frame),
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => {
                        match buffers::charge_response(data, &layer.budget, conn.as_ref(), slot) {
                            Ok(data) => Some(Frame::data(data)),
                            Err(_) => {
                                layer.refused("buffers");
                                return Ok(buffers::buffers_full().into_http());
                            }
                        }
                    }
                    Err(frame) => Some(frame),
                },
                Poll::Ready(Some(Err(status))) => return Ok(status.into_http()),
                Poll::Ready(None) | Poll::Pending => None,
            };
            let body =
                ChargedBody::new(body, first, layer.budget.clone(), conn, (guard, streaming));
            Ok(Response::from_parts(parts, Body::new(body)))
        })
    }
}

/// The deadline of an RPC and the limit that set it, in the request extensions (set
/// by [`DeadlineLayer`]): the handlers pass `at` to the work and name the limit when
/// it passes ([`Deadline::passed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deadline {
    /// When the RPC's time is up.
    pub at: Instant,
    /// Which limit set it.
    pub limit: DeadlineLimit,
}

/// The limit behind a [`Deadline`]: the client's `grpc-timeout`, or one of the
/// server's per-RPC limits, whichever is shorter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeadlineLimit {
    /// The client's `grpc-timeout` header.
    Client(Duration),
    /// A server limit: its command-line flag (`request-timeout-seconds`,
    /// `long-request-timeout-seconds`) and its value.
    Server {
        /// The flag, without `--`.
        flag: &'static str,
        /// Its value.
        after: Duration,
    },
}

/// A duration as the messages write it: seconds, at most three decimals (`30 s`,
/// `0.4 s`).
fn seconds_text(d: Duration) -> String {
    let s = format!("{:.3}", d.as_secs_f64());
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s} s")
}

impl Deadline {
    /// What passed, for the `DEADLINE_EXCEEDED` message: `the client's deadline
    /// (grpc-timeout 0.4 s) passed`, `the server's --request-timeout-seconds (30 s)
    /// passed`.
    pub fn passed(&self) -> String {
        match self.limit {
            DeadlineLimit::Client(d) => {
                format!(
                    "the client's deadline (grpc-timeout {}) passed",
                    seconds_text(d)
                )
            }
            DeadlineLimit::Server { flag, after } => format!(
                "the server's --{flag} ({}) passed{}",
                seconds_text(after),
                if flag == REQUEST_TIMEOUT_FLAG {
                    "; AnalyzeGame, Rollout and EvaluateBatch have --long-request-timeout-seconds"
                } else {
                    ""
                }
            ),
        }
    }

    /// `e` with its `DEADLINE_EXCEEDED` message naming this deadline's limit (other
    /// errors unchanged): the work only knows that its deadline passed.
    pub fn name(&self, e: ServiceError) -> ServiceError {
        match e {
            ServiceError::DeadlineExceeded(_) => ServiceError::DeadlineExceeded(self.passed()),
            e => e,
        }
    }
}

/// [`Deadline::name`] for an RPC that may have no deadline.
pub fn name_deadline(e: ServiceError, deadline: Option<&Deadline>) -> ServiceError {
    match deadline {
        Some(d) => d.name(e),
        None => e,
    }
}

/// The flag of the server's limit on short RPCs.
pub const REQUEST_TIMEOUT_FLAG: &str = "request-timeout-seconds";

/// The flag of the server's limit on long RPCs ([`LONG_RPCS`]).
pub const LONG_REQUEST_TIMEOUT_FLAG: &str = "long-request-timeout-seconds";

/// The RPCs whose work may take minutes (a match analysed at 2 plies, a rollout of
/// many trials, a batch of deep searches): the server limits them by
/// `--long-request-timeout-seconds` instead of `--request-timeout-seconds`.
pub const LONG_RPCS: [&str; 3] = [
    "/tavli.v1.TavliEngine/AnalyzeGame",
    "/tavli.v1.TavliEngine/Rollout",
    "/tavli.v1.TavliEngine/EvaluateBatch",
];

/// Parses a `grpc-timeout` header value: up to 8 digits and a unit `H`, `M`, `S`,
/// `m` (ms), `u` (µs) or `n` (ns). `None` when malformed.
pub fn parse_grpc_timeout(v: &str) -> Option<Duration> {
    if v.len() < 2 || v.len() > 9 {
        return None;
    }
    let (digits, unit) = v.split_at(v.len() - 1);
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

/// Answers `DEADLINE_EXCEEDED` when the RPC's deadline passes: the client's
/// `grpc-timeout` or the server's limit for its path, whichever is shorter
/// (`--request-timeout-seconds`, or `--long-request-timeout-seconds` for
/// [`LONG_RPCS`]); the message names which ([`Deadline::passed`]). The deadline goes
/// into the request extensions as [`Deadline`], for the work to stop at it (a
/// streaming RPC's work goes on after its handler returns, and ends itself there).
#[derive(Clone, Copy, Debug, Default)]
pub struct DeadlineLayer {
    request: Option<Duration>,
    long: Option<Duration>,
}

impl DeadlineLayer {
    /// A deadline layer with the server's optional limits: `request` for most RPCs,
    /// `long` for [`LONG_RPCS`].
    pub fn new(request: Option<Duration>, long: Option<Duration>) -> DeadlineLayer {
        DeadlineLayer { request, long }
    }

    /// The deadline of a request to `path` with the client's `grpc-timeout`
    /// (`client`), from now; `None` without either limit.
    fn deadline(&self, path: &str, client: Option<Duration>) -> Option<(Duration, DeadlineLimit)> {
        let server = if LONG_RPCS.contains(&path) {
            self.long.map(|after| (LONG_REQUEST_TIMEOUT_FLAG, after))
        } else {
            self.request.map(|after| (REQUEST_TIMEOUT_FLAG, after))
        };
        match (client, server) {
            (Some(c), Some((_, s))) if c <= s => Some((c, DeadlineLimit::Client(c))),
            (Some(c), None) => Some((c, DeadlineLimit::Client(c))),
            (_, Some((flag, after))) => Some((after, DeadlineLimit::Server { flag, after })),
            (None, None) => None,
        }
    }
}

impl<S> Layer<S> for DeadlineLayer {
    type Service = DeadlineService<S>;
    fn layer(&self, inner: S) -> Self::Service {
        DeadlineService {
            inner,
            limits: *self,
        }
    }
}

/// The service of [`DeadlineLayer`].
#[derive(Clone, Debug)]
pub struct DeadlineService<S> {
    inner: S,
    limits: DeadlineLayer,
}

impl<S, B> Service<Request<B>> for DeadlineService<S>
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

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        let client = req
            .headers()
            .get("grpc-timeout")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_grpc_timeout);
        let Some((timeout, limit)) = self.limits.deadline(req.uri().path(), client) else {
            return Box::pin(self.inner.call(req));
        };
        // A deadline too far to represent is no deadline.
        let Some(at) = Instant::now().checked_add(timeout) else {
            return Box::pin(self.inner.call(req));
        };
        let deadline = Deadline { at, limit };
        req.extensions_mut().insert(deadline);
        let fut = self.inner.call(req);
        Box::pin(async move {
            match tokio::time::timeout(timeout, fut).await {
                Ok(r) => r,
                Err(_) => Ok(Status::deadline_exceeded(deadline.passed()).into_http()),
            }
        })
    }
}

/// Cancels its token when dropped, unless [disarmed](CancelOnDrop::disarm): put in a
/// handler's future, it tells the work that the answer is no longer wanted when
/// hyper drops the future (client `RST_STREAM`, connection closed, deadline, drain).
#[derive(Debug)]
pub struct CancelOnDrop(Option<CancelToken>);

impl CancelOnDrop {
    /// Guards `token`.
    pub fn new(token: CancelToken) -> CancelOnDrop {
        CancelOnDrop(Some(token))
    }

    /// The work finished: nothing to cancel.
    pub fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(t) = &self.0 {
            t.cancel();
        }
    }
}

/// Admission of deep searches (`Evaluate` at 1 ply or more): at most `limit` run at
/// once (`--deep-search-limit`, default the number of CPUs), at most `queue` wait
/// (`--deep-search-queue`), and a request waits only if it can still be expected to
/// finish before its deadline, from the running mean time of past searches of its
/// depth. Otherwise it is `RESOURCE_EXHAUSTED` at once, so that accepted searches
/// finish in time instead of all sharing the CPUs until every one times out.
#[derive(Debug)]
pub struct DeepSearchLimit {
    permits: Arc<Semaphore>,
    limit: usize,
    queue: usize,
    waiting: AtomicUsize,
    /// Exponentially weighted mean duration per depth, in microseconds (0: unknown).
    mean_us: [AtomicU64; MAX_PLIES as usize + 1],
}

/// A running deep search's slot; returns it when dropped.
#[derive(Debug)]
pub struct DeepPermit {
    _permit: OwnedSemaphorePermit,
    limit: Arc<DeepSearchLimit>,
    plies: u8,
    start: Instant,
}

impl DeepPermit {
    /// Records how long the search took: `finished` when it ran to its end or to its
    /// deadline (a cancelled search says nothing about the cost).
    pub fn finish(self, finished: bool) {
        if finished {
            self.limit.record(self.plies, self.start.elapsed());
        }
    }
}

struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl DeepSearchLimit {
    /// A limit of `limit` searches at once (at least 1) and `queue` waiting.
    pub fn new(limit: usize, queue: usize) -> Arc<DeepSearchLimit> {
        Arc::new(DeepSearchLimit {
            permits: Arc::new(Semaphore::new(limit.max(1))),
            limit: limit.max(1),
            queue,
            waiting: AtomicUsize::new(0),
            mean_us: Default::default(),
        })
    }

    /// The mean duration of a search of `plies` so far; before the first, a guess
    /// ([`DeepSearchLimit::FIRST_GUESS`]).
    pub fn mean(&self, plies: u8) -> Duration {
        let i = (plies as usize).min(MAX_PLIES as usize);
        match self.mean_us[i].load(Ordering::Relaxed) {
            0 => Self::FIRST_GUESS[i],
            us => Duration::from_micros(us),
        }
    }

    /// The mean duration assumed before the first search of each depth has been
    /// timed (0, 1, 2 plies), so that a first burst is not admitted blindly. At
    /// 2 plies searches range from 7 ms (a middle game without dice,
    /// docs/performance.md) through 0.4 s (the Portes start, ranking the plays of
    /// 6-6) to 5 s (ranking 1896 plays of a 3-3); 1 s is a middle guess, and the
    /// measurements replace it after the first search.
    pub const FIRST_GUESS: [Duration; MAX_PLIES as usize + 1] = [
        Duration::ZERO,
        Duration::from_millis(50),
        Duration::from_secs(1),
    ];

    fn record(&self, plies: u8, took: Duration) {
        let i = (plies as usize).min(MAX_PLIES as usize);
        let x = took.as_micros().min(u64::MAX as u128) as u64;
        let old = self.mean_us[i].load(Ordering::Relaxed);
        // Weight 1/4 for the newest: follows a change of load within a few searches.
        let new = if old == 0 { x } else { old - old / 4 + x / 4 };
        self.mean_us[i].store(new.max(1), Ordering::Relaxed);
    }

    /// Waits for a slot for long streaming work that ends by itself at its deadline
    /// (a `Rollout`, an `AnalyzeGame`): refused (`RESOURCE_EXHAUSTED`) at once when
    /// the queue is full, or when no slot comes free before the deadline (at most
    /// [`DeepSearchLimit::STREAM_WAIT`]). Its duration is not recorded.
    pub async fn admit_stream(
        self: &Arc<Self>,
        deadline: Option<Instant>,
    ) -> Result<DeepPermit, ServiceError> {
        let permit = |p| DeepPermit {
            _permit: p,
            limit: self.clone(),
            plies: 0,
            start: Instant::now(),
        };
        if let Ok(p) = self.permits.clone().try_acquire_owned() {
            return Ok(permit(p));
        }
        let waiting = self.waiting.fetch_add(1, Ordering::Relaxed);
        let _waiting = Waiting(&self.waiting);
        if waiting >= self.queue {
            return Err(ServiceError::ResourceExhausted(format!(
                "server busy: {} deep searches running and {waiting} waiting; retry later",
                self.limit
            )));
        }
        let latest = Instant::now() + Self::STREAM_WAIT;
        let until = deadline.map_or(latest, |d| d.min(latest));
        match tokio::time::timeout_at(until.into(), self.permits.clone().acquire_owned()).await {
            Ok(Ok(p)) => Ok(permit(p)),
            _ => Err(ServiceError::ResourceExhausted(
                "server busy: no deep-search slot came free in time; retry later".to_string(),
            )),
        }
    }

    /// The longest a streaming RPC waits for a deep-search slot.
    pub const STREAM_WAIT: Duration = Duration::from_secs(10);

    /// Waits for a slot for a search of `plies` that must end by `deadline`, or
    /// refuses (`RESOURCE_EXHAUSTED`) at once when the queue is full or the expected
    /// wait plus the search would not fit before the deadline, or later when no slot
    /// came in time.
    pub async fn admit(
        self: &Arc<Self>,
        plies: u8,
        deadline: Option<Instant>,
    ) -> Result<DeepPermit, ServiceError> {
        let permit = |p| DeepPermit {
            _permit: p,
            limit: self.clone(),
            plies,
            start: Instant::now(),
        };
        if let Ok(p) = self.permits.clone().try_acquire_owned() {
            return Ok(permit(p));
        }
        let waiting = self.waiting.fetch_add(1, Ordering::Relaxed);
        let _waiting = Waiting(&self.waiting);
        if waiting >= self.queue {
            return Err(ServiceError::ResourceExhausted(format!(
                "server busy: {} deep searches running and {waiting} waiting; retry later",
                self.limit
            )));
        }
        let mean = self.mean(plies);
        // Before this one starts: the running searches, then those waiting, `limit` at
        // a time.
        let rounds = (waiting / self.limit + 1) as u32;
        let expected = mean * (rounds + 1);
        if let Some(d) = deadline {
            let left = d.saturating_duration_since(Instant::now());
            if expected > left {
                return Err(ServiceError::ResourceExhausted(format!(
                    "server busy: {waiting} deep searches waiting for {} slots, about {:.1} s \
                     of work ahead and {:.1} s left before the deadline; retry later",
                    self.limit,
                    expected.as_secs_f64(),
                    left.as_secs_f64()
                )));
            }
        }
        let too_late = || {
            ServiceError::ResourceExhausted(
                "server busy: no deep-search slot came free in time to finish before the \
                 deadline; retry later"
                    .to_string(),
            )
        };
        let mut acquire = std::pin::pin!(self.permits.clone().acquire_owned());
        loop {
            // The latest start that can still be expected to end by the deadline, from
            // the mean as it is now (it may grow while this one waits).
            let start_by = deadline.map(|d| d.checked_sub(self.mean(plies)).unwrap_or(d));
            if start_by.is_some_and(|t| Instant::now() >= t) {
                return Err(too_late());
            }
            // Look again at least every quarter second.
            let look = Instant::now() + Duration::from_millis(250);
            let until = start_by.map_or(look, |t| t.min(look));
            match tokio::time::timeout_at(until.into(), acquire.as_mut()).await {
                Ok(Ok(p)) => {
                    if deadline.is_some_and(|d| Instant::now() + self.mean(plies) > d) {
                        return Err(too_late());
                    }
                    return Ok(permit(p));
                }
                Ok(Err(_)) => return Err(too_late()),
                Err(_) => continue,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeouts() {
        assert_eq!(parse_grpc_timeout("5S"), Some(Duration::from_secs(5)));
        assert_eq!(parse_grpc_timeout("250m"), Some(Duration::from_millis(250)));
        assert_eq!(parse_grpc_timeout("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(
            parse_grpc_timeout("99999999n"),
            Some(Duration::from_nanos(99999999))
        );
        assert_eq!(parse_grpc_timeout("S"), None);
        assert_eq!(parse_grpc_timeout("5s"), None);
        assert_eq!(parse_grpc_timeout("123456789S"), None);
        assert_eq!(parse_grpc_timeout("-5S"), None);
    }

    #[test]
    fn paths_are_classified() {
        assert_eq!(classify("/tavli.v1.TavliEngine/Evaluate"), Class::Engine);
        assert_eq!(classify("/x.Y/Z"), Class::Engine);
        assert_eq!(classify("/grpc.health.v1.Health/Check"), Class::Probe);
        assert_eq!(classify("/grpc.health.v1.Health/Watch"), Class::Watch);
        assert_eq!(
            classify("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"),
            Class::Streaming
        );
    }

    /// The deadline is the client's or the server's limit for the path, whichever is
    /// shorter (the client's on a tie), and its message names it.
    #[test]
    fn the_deadline_names_its_limit() {
        let layer = DeadlineLayer::new(
            Some(Duration::from_secs(30)),
            Some(Duration::from_secs(600)),
        );
        let analyze = "/tavli.v1.TavliEngine/AnalyzeGame";
        let evaluate = "/tavli.v1.TavliEngine/Evaluate";
        let at = Instant::now();
        let passed = |path, client| {
            let (timeout, limit) = layer.deadline(path, client).unwrap();
            (timeout, Deadline { at, limit }.passed())
        };
        let s = Duration::from_secs;
        // The reported case: a 600 s client deadline for AnalyzeGame.
        assert_eq!(
            passed(analyze, Some(s(600))),
            (
                s(600),
                "the client's deadline (grpc-timeout 600 s) passed".into()
            )
        );
        assert_eq!(
            passed(analyze, None),
            (
                s(600),
                "the server's --long-request-timeout-seconds (600 s) passed".into()
            )
        );
        assert_eq!(
            passed(evaluate, Some(s(600))),
            (
                s(30),
                "the server's --request-timeout-seconds (30 s) passed; AnalyzeGame, Rollout \
                 and EvaluateBatch have --long-request-timeout-seconds"
                    .into()
            )
        );
        assert_eq!(
            passed(evaluate, Some(Duration::from_millis(400))),
            (
                Duration::from_millis(400),
                "the client's deadline (grpc-timeout 0.4 s) passed".into()
            )
        );
        assert_eq!(
            passed("/tavli.v1.TavliEngine/EvaluateBatch", Some(s(1200))).1,
            "the server's --long-request-timeout-seconds (600 s) passed"
        );
        assert_eq!(
            passed(
                "/tavli.v1.TavliEngine/Rollout",
                Some(Duration::from_micros(1_234_567))
            )
            .1,
            "the client's deadline (grpc-timeout 1.235 s) passed"
        );
        // Without server limits, only the client's; without either, none.
        let none = DeadlineLayer::new(None, None);
        assert_eq!(none.deadline(evaluate, None), None);
        assert_eq!(
            none.deadline(analyze, Some(s(5))),
            Some((s(5), DeadlineLimit::Client(s(5))))
        );
        // The work's error gets the name; other errors stay as they are.
        let d = Deadline {
            at,
            limit: DeadlineLimit::Client(s(2)),
        };
        assert_eq!(
            name_deadline(
                ServiceError::DeadlineExceeded("deadline exceeded".into()),
                Some(&d)
            ),
            ServiceError::DeadlineExceeded(
                "the client's deadline (grpc-timeout 2 s) passed".into()
            )
        );
        assert_eq!(
            name_deadline(ServiceError::Cancelled, Some(&d)),
            ServiceError::Cancelled
        );
    }

    /// The layer answers DEADLINE_EXCEEDED with that message when the handler is not
    /// done in time, and hands the deadline to it.
    #[tokio::test]
    async fn the_layer_answers_with_the_name() {
        use tower::ServiceExt;
        let seen = Arc::new(std::sync::Mutex::new(None));
        let saw = seen.clone();
        let slow = tower::service_fn(move |req: Request<Body>| {
            *saw.lock().unwrap() = req.extensions().get::<Deadline>().copied();
            async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                Ok::<_, Infallible>(Response::new(Body::empty()))
            }
        });
        let svc = DeadlineLayer::new(Some(Duration::from_millis(50)), None).layer(slow);
        let call = |timeout: Option<&str>| {
            let mut req = Request::builder().uri("http://x/tavli.v1.TavliEngine/Evaluate");
            if let Some(t) = timeout {
                req = req.header("grpc-timeout", t);
            }
            svc.clone().oneshot(req.body(Body::empty()).unwrap())
        };
        let status = |r: Response<Body>| {
            let s = Status::from_header_map(r.headers()).unwrap();
            (s.code(), s.message().to_string())
        };
        let r = call(None).await.unwrap();
        assert_eq!(
            status(r),
            (
                tonic::Code::DeadlineExceeded,
                "the server's --request-timeout-seconds (0.05 s) passed; AnalyzeGame, \
                 Rollout and EvaluateBatch have --long-request-timeout-seconds"
                    .to_string()
            )
        );
        let r = call(Some("20m")).await.unwrap();
        assert_eq!(
            status(r),
            (
                tonic::Code::DeadlineExceeded,
                "the client's deadline (grpc-timeout 0.02 s) passed".to_string()
            )
        );
        let d = seen.lock().unwrap().unwrap();
        assert_eq!(d.limit, DeadlineLimit::Client(Duration::from_millis(20)));
    }

    /// A deep search is admitted at once while a slot is free; with every slot taken
    /// and a mean of 1 s per search, a request with 1.5 s left is refused at once
    /// (one running search to wait for, then its own) and one with 10 s left waits.
    #[tokio::test]
    async fn deep_searches_are_admitted_only_when_they_fit() {
        let limit = DeepSearchLimit::new(1, 4);
        let running = limit.admit(2, None).await.unwrap();
        limit.record(2, Duration::from_secs(1));
        let t = Instant::now();
        let e = limit
            .admit(2, Some(Instant::now() + Duration::from_millis(1500)))
            .await
            .unwrap_err();
        assert!(
            t.elapsed() < Duration::from_millis(100),
            "{:?}",
            t.elapsed()
        );
        assert!(matches!(e, ServiceError::ResourceExhausted(_)), "{e:?}");
        let l2 = limit.clone();
        let waiter = tokio::spawn(async move {
            l2.admit(2, Some(Instant::now() + Duration::from_secs(10)))
                .await
                .map(|_| ())
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(limit.waiting.load(Ordering::Relaxed), 1);
        running.finish(false);
        waiter.await.unwrap().unwrap();
        assert_eq!(limit.mean(2), Duration::from_secs(1));
    }
}
