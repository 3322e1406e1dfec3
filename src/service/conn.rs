//! Connections: the accept loop and what bounds a connection (issue #11).
//!
//! Every port (gRPC over HTTP/2, metrics and the analysis page over HTTP/1.1) is
//! served by [`run_listener`] with hyper's connection builders, so that every
//! per-connection resource has a bound:
//!
//! - **Connection count**: at most [`ConnLimits::max_connections`] open. At the limit a
//!   new connection still gets in by closing an idle one (first one that never sent
//!   its HTTP/2 preface, else the one idle longest, with a GOAWAY); when every
//!   connection is busy the new one is closed at once. Either way it is logged (at most
//!   once per 5 s) and counted in `tavli_connections_closed_total`.
//! - **Accept errors**: out of file descriptors (`EMFILE`, `ENFILE`) or memory, the
//!   loop logs, closes an idle connection to free a descriptor, marks the server as out
//!   of descriptors for readiness ([`Registry::fd_exhausted_recently`]) and backs off
//!   50 ms: no busy loop.
//! - **Handshake**: a connection that has not sent its HTTP/2 preface (any request
//!   bytes on HTTP/1.1) within [`ConnLimits::handshake_timeout`] is closed. With TLS
//!   ([`super::tls`]) the TLS handshake runs first, in the connection's task, and the
//!   preface is read through it: one timeout for both, from the accept; a failed
//!   handshake closes the connection (counted as `tls_handshake`).
//! - **Idle**: a connection with no request in flight for
//!   [`ConnLimits::idle_timeout`] gets a GOAWAY and is closed.
//! - **Send stall**: a connection holding a response that has not been written within
//!   [`ConnLimits::send_timeout`] (a client that stopped reading, or a zero flow-control
//!   window) is closed; that frees the response's bytes. See [`super::buffers`].
//! - **Age**: a connection open for [`ConnLimits::max_age`] (each connection's own
//!   value, jittered by ±10 %) gets a GOAWAY; its calls in flight may finish within
//!   [`ConnLimits::max_age_grace`], then it is closed and the calls still running are
//!   cancelled. These are grpc-go's `MaxConnectionAge` and `MaxConnectionAgeGrace`
//!   (gRFC A9, "Server-side Connection Management"): clients reconnect, so that the
//!   connections of long-lived clients spread over new servers.
//! - **Lingering close**: a connection that has ended by itself (after its GOAWAY and
//!   last stream: age, idle, drain; or closed by the client) is not closed at once.
//!   Its write side is shut down (TLS: `close_notify` first), then what the peer still
//!   sends is read and discarded until the peer closes, for at most [`LINGER_TIME`]
//!   and [`LINGER_BYTES`]; then it is closed. Closed at once, the kernel would answer
//!   the peer's frames still on their way (a proxy that has not yet seen the GOAWAY)
//!   with a TCP reset, and the peer could lose the end of an answer it had received
//!   but not yet read (haproxy does: docs/deploy.md, "Scaling out"); RFC 9112 §9.6
//!   describes the same for HTTP/1.1. A lingering connection still counts against
//!   the connection limit, and is the first one closed to make room for a new one.
//!
//! Each connection carries a [`ConnState`], given to the admission layer built for the
//! connection: streams in flight and bytes buffered for it.

use super::coalesce::{coalesce, Coalesced, Flushing};
use crate::telemetry::Metrics;
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify, OwnedSemaphorePermit, Semaphore};

/// The limits of one listener's connections.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConnLimits {
    /// Connections open at once (at least 1).
    pub max_connections: usize,
    /// Time from accept to the HTTP/2 preface (HTTP/1.1: the first request bytes).
    pub handshake_timeout: Duration,
    /// Time a connection may stay open with no request in flight.
    pub idle_timeout: Duration,
    /// Time a response may wait to be written before its connection is closed.
    pub send_timeout: Duration,
    /// Request and response message bytes buffered for one connection at once.
    pub max_buffered_bytes: usize,
    /// Engine RPCs of one connection between admission and the end of writing their
    /// response (see [`ConnState::rpc_slot`]).
    pub max_rpcs: usize,
    /// Health `Watch` streams of one connection open at once (see
    /// [`ConnState::watch_slot`]); with `max_connections`, it bounds them all.
    pub max_watches: usize,
    /// Time from the accept after which a connection gets a GOAWAY, before a jitter
    /// of ±10 % ([`jittered`]); `None`: no limit.
    pub max_age: Option<Duration>,
    /// Time after that GOAWAY after which the connection is closed, its calls still
    /// in flight cancelled; `None`: no limit (the connection stays until its calls
    /// have ended).
    pub max_age_grace: Option<Duration>,
}

/// `d` times a factor drawn uniformly from [0.9, 1.1): the age limit of one
/// connection, so that connections opened together (after a restart) do not all
/// reconnect at once (grpc-go adds the same ±10 %).
pub fn jittered(d: Duration) -> Duration {
    d.mul_f64(rand::random_range(0.9..1.1))
}

/// Phases of the server, sent to accept loops and connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Accepting and serving.
    Serving,
    /// Shutting down: no new connection; GOAWAY to every connection, in-flight
    /// requests finish.
    Draining,
    /// Drain time over: every connection is closed now.
    Stopped,
}

/// Slots of unwritten responses per connection, by send epoch (a quarter of the send
/// timeout each): a response still unwritten 5 epochs after its own (more than the
/// send timeout) closes its connection; 8 slots keep those epochs apart.
pub const SEND_EPOCHS: usize = 8;

/// One connection's shared state: what the request path records and what the
/// connection's watchdog reads.
#[derive(Debug)]
pub struct ConnState {
    id: u64,
    opened: Instant,
    /// The HTTP/2 preface (HTTP/1.1: a first byte) has been read.
    preface: AtomicBool,
    /// Requests in flight (from the request's arrival to the end of its response).
    active: AtomicUsize,
    /// Milliseconds since the registry's epoch of the last request start or end.
    last_active_ms: AtomicU64,
    /// Request and response bytes buffered for this connection ([`super::buffers`]).
    pub(crate) buffered: AtomicUsize,
    /// The per-connection limit of `buffered`.
    pub(crate) max_buffered: usize,
    /// Responses not yet written, by the send epoch they were produced in.
    pub(crate) sending: [AtomicU32; SEND_EPOCHS],
    /// Length of a send epoch in milliseconds (a quarter of the send timeout).
    pub(crate) epoch_ms: u64,
    /// The registry's epoch (shared by every connection of the listener).
    pub(crate) epoch: Instant,
    /// Engine RPCs in flight on this connection, each until its response is written.
    rpcs: Arc<Semaphore>,
    /// Health `Watch` streams open on this connection.
    watches: Arc<Semaphore>,
    max_watches: usize,
    /// Being closed (by a limit, or evicted).
    closing: AtomicBool,
    /// Evicted: out of the registry's map, counted in its `evicting`.
    evicted: AtomicBool,
    /// Ended; in its lingering close (the first one evicted).
    lingering: AtomicBool,
    close: Notify,
}

impl ConnState {
    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// The current send epoch (see [`super::buffers`]).
    pub(crate) fn send_epoch(&self) -> u64 {
        self.now_ms() / self.epoch_ms
    }

    /// Requests in flight on this connection.
    pub fn active(&self) -> usize {
        self.active.load(Ordering::Relaxed)
    }

    /// Waits up to `wait` for one of the connection's engine-RPC slots
    /// ([`ConnLimits::max_rpcs`]). A slot is given back when the RPC's response has
    /// been written (it travels with the response data, see [`super::buffers`]), so
    /// a client that does not read gets no more than this many answers computed;
    /// one that reads is not slowed down. `None`: none came free in time.
    pub async fn rpc_slot(&self, wait: Duration) -> Option<OwnedSemaphorePermit> {
        if let Ok(p) = self.rpcs.clone().try_acquire_owned() {
            return Some(p);
        }
        tokio::time::timeout(wait, self.rpcs.clone().acquire_owned())
            .await
            .ok()?
            .ok()
    }

    /// One of the connection's health `Watch` places ([`ConnLimits::max_watches`]),
    /// if one is free, held for the stream's life. A client that follows the service
    /// config (`healthCheckConfig`) keeps one watch per connection open for as long
    /// as the connection: they are idle, and bounded per connection rather than by
    /// `--streaming-limit`, so that every connection within the connection limit can
    /// have its watch.
    pub fn watch_slot(&self) -> Option<OwnedSemaphorePermit> {
        self.watches.clone().try_acquire_owned().ok()
    }

    /// The connection's limit of health `Watch` streams.
    pub fn max_watches(&self) -> usize {
        self.max_watches
    }
}

/// Counts a request in flight on its connection until dropped (kept with the
/// response body, so that a stream is idle only once its response has been sent).
#[derive(Debug)]
pub struct StreamGuard(Arc<ConnState>);

impl StreamGuard {
    /// Starts counting a request on `conn`.
    pub fn new(conn: &Arc<ConnState>) -> StreamGuard {
        conn.active.fetch_add(1, Ordering::Relaxed);
        conn.last_active_ms.store(conn.now_ms(), Ordering::Relaxed);
        StreamGuard(conn.clone())
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.0
            .last_active_ms
            .store(self.0.now_ms(), Ordering::Relaxed);
        self.0.active.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Why a connection was closed by a limit (label `reason` of
/// `tavli_connections_closed_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CloseReason {
    HandshakeTimeout,
    IdleTimeout,
    SendTimeout,
    Evicted,
    Refused,
    TlsHandshake,
    MaxAge,
    MaxAgeGrace,
}

impl CloseReason {
    fn label(self) -> &'static str {
        match self {
            CloseReason::HandshakeTimeout => "handshake_timeout",
            CloseReason::IdleTimeout => "idle_timeout",
            CloseReason::SendTimeout => "send_timeout",
            CloseReason::Evicted => "evicted",
            CloseReason::Refused => "refused",
            CloseReason::TlsHandshake => "tls_handshake",
            CloseReason::MaxAge => "max_age",
            CloseReason::MaxAgeGrace => "max_age_grace",
        }
    }
}

/// The open connections of one listener.
#[derive(Debug)]
pub struct Registry {
    /// `grpc` or `metrics`: label of the metrics, name in the logs.
    name: &'static str,
    limits: ConnLimits,
    conns: Mutex<HashMap<u64, Arc<ConnState>>>,
    next_id: AtomicU64,
    epoch: Instant,
    /// Milliseconds since `epoch` of the last accept error for lack of descriptors or
    /// memory, plus 1 (0: never).
    fd_exhausted_ms: AtomicU64,
    last_limit_log_ms: AtomicU64,
    suppressed_logs: AtomicU64,
    empty: Notify,
    closed_one: Notify,
    /// Evicted connections not yet closed (out of `conns`).
    evicting: AtomicUsize,
    metrics: Option<Arc<Metrics>>,
}

impl Registry {
    /// An empty registry for the listener `name` (`grpc`, `metrics`).
    pub fn new(name: &'static str, limits: ConnLimits, metrics: Option<Arc<Metrics>>) -> Arc<Self> {
        Arc::new(Registry {
            name,
            limits,
            conns: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            epoch: Instant::now(),
            fd_exhausted_ms: AtomicU64::new(0),
            last_limit_log_ms: AtomicU64::new(0),
            suppressed_logs: AtomicU64::new(0),
            empty: Notify::new(),
            closed_one: Notify::new(),
            evicting: AtomicUsize::new(0),
            metrics,
        })
    }

    /// The limits of this listener.
    pub fn limits(&self) -> &ConnLimits {
        &self.limits
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Connections open now.
    pub fn len(&self) -> usize {
        self.conns.lock().expect("registry lock").len()
    }

    /// Whether no connection is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Request and response bytes buffered for all connections of this listener.
    pub fn buffered_bytes(&self) -> usize {
        let conns = self.conns.lock().expect("registry lock");
        conns
            .values()
            .map(|c| c.buffered.load(Ordering::Relaxed))
            .sum()
    }

    /// Whether an accept failed for lack of descriptors (or memory) in the last
    /// `within`.
    pub fn fd_exhausted_recently(&self, within: Duration) -> bool {
        match self.fd_exhausted_ms.load(Ordering::Relaxed) {
            0 => false,
            t => self.now_ms().saturating_sub(t - 1) <= within.as_millis() as u64,
        }
    }

    /// Waits until no connection is open.
    pub async fn wait_empty(&self) {
        loop {
            let notified = self.empty.notified();
            if self.is_empty() {
                return;
            }
            notified.await;
        }
    }

    fn count_close(&self, reason: CloseReason) {
        if let Some(m) = &self.metrics {
            m.connections_closed
                .with_label_values(&[self.name, reason.label()])
                .inc();
        }
    }

    /// Logs a limit event at most once per 5 s, with the number of events not logged.
    fn log_limited(&self, what: &str) {
        let now = self.now_ms() + 1;
        let last = self.last_limit_log_ms.load(Ordering::Relaxed);
        if last != 0 && now - last < 5000 {
            self.suppressed_logs.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.last_limit_log_ms.store(now, Ordering::Relaxed);
        let suppressed = self.suppressed_logs.swap(0, Ordering::Relaxed);
        tracing::warn!(
            listener = self.name,
            open = self.len(),
            max_connections = self.limits.max_connections,
            suppressed,
            "{what}"
        );
    }

    /// Chooses a connection to close: one in its lingering close, else an idle one:
    /// one that never sent its preface (oldest first), else the one idle longest;
    /// takes it out of `conns` at once (it no longer counts against the limit, but in
    /// `evicting` until it is gone) and tells it to close. `None` when every connection
    /// is busy; `Some(true)` when a lingering one was chosen (it had ended already:
    /// nothing to count or log).
    fn evict_one(&self, conns: &mut HashMap<u64, Arc<ConnState>>) -> Option<bool> {
        let lingering = conns
            .values()
            .find(|c| c.lingering.load(Ordering::Relaxed))
            .cloned();
        let victim = match lingering {
            Some(c) => c,
            None => conns
                .values()
                .filter(|c| !c.closing.load(Ordering::Relaxed))
                .filter(|c| !c.preface.load(Ordering::Relaxed) || c.active() == 0)
                .min_by_key(|c| {
                    (
                        c.preface.load(Ordering::Relaxed),
                        if c.preface.load(Ordering::Relaxed) {
                            c.last_active_ms.load(Ordering::Relaxed)
                        } else {
                            c.opened.duration_since(self.epoch).as_millis() as u64
                        },
                    )
                })?
                .clone(),
        };
        victim.closing.store(true, Ordering::Relaxed);
        victim.evicted.store(true, Ordering::Relaxed);
        self.evicting.fetch_add(1, Ordering::Relaxed);
        conns.remove(&victim.id);
        victim.close.notify_one();
        Some(victim.lingering.load(Ordering::Relaxed))
    }

    /// Registers a new connection, closing an idle one at the limit. `Err(true)`: wait
    /// for connections being closed to go, then try again; `Err(false)`: the limit is
    /// reached and no connection is idle (the new one must be closed).
    fn register(&self) -> Result<Arc<ConnState>, bool> {
        let mut conns = self.conns.lock().expect("registry lock");
        if conns.len() >= self.limits.max_connections {
            // Evicted connections still hold a descriptor until they are gone: at most
            // an eighth of the limit of them at once, so that a burst cannot open
            // many more connections than the limit.
            if self.evicting.load(Ordering::Relaxed) >= (self.limits.max_connections / 8).max(1) {
                return Err(true);
            }
            let Some(lingering) = self.evict_one(&mut conns) else {
                return Err(false);
            };
            if !lingering {
                drop(conns);
                self.count_close(CloseReason::Evicted);
                self.log_limited("connection limit reached: closing the connection idle longest");
                conns = self.conns.lock().expect("registry lock");
            }
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let send_timeout_ms = self.limits.send_timeout.as_millis().max(4) as u64;
        let state = Arc::new(ConnState {
            id,
            opened: Instant::now(),
            preface: AtomicBool::new(false),
            active: AtomicUsize::new(0),
            last_active_ms: AtomicU64::new(self.now_ms()),
            buffered: AtomicUsize::new(0),
            max_buffered: self.limits.max_buffered_bytes,
            sending: Default::default(),
            epoch_ms: send_timeout_ms / 4,
            rpcs: Arc::new(Semaphore::new(self.limits.max_rpcs.max(1))),
            watches: Arc::new(Semaphore::new(self.limits.max_watches.max(1))),
            max_watches: self.limits.max_watches.max(1),
            epoch: self.epoch,
            closing: AtomicBool::new(false),
            evicted: AtomicBool::new(false),
            lingering: AtomicBool::new(false),
            close: Notify::new(),
        });
        conns.insert(id, state.clone());
        if let Some(m) = &self.metrics {
            m.connections
                .with_label_values(&[self.name])
                .set(conns.len() as i64);
        }
        Ok(state)
    }

    /// Registers a new connection ([`Registry::register`]), waiting up to 200 ms for
    /// evicted connections to finish closing; `None`: the new one must be closed.
    async fn register_or_wait(&self) -> Option<Arc<ConnState>> {
        let give_up = Instant::now() + Duration::from_millis(200);
        loop {
            let gone = self.closed_one.notified();
            match self.register() {
                Ok(state) => return Some(state),
                Err(true) if Instant::now() < give_up => {
                    let _ = tokio::time::timeout_at(give_up.into(), gone).await;
                }
                Err(_) => {
                    self.count_close(CloseReason::Refused);
                    self.log_limited(
                        "connection limit reached and no connection is idle: new connection closed",
                    );
                    return None;
                }
            }
        }
    }

    fn unregister(&self, state: &ConnState) {
        let mut conns = self.conns.lock().expect("registry lock");
        if state.evicted.load(Ordering::Relaxed) {
            self.evicting.fetch_sub(1, Ordering::Relaxed);
        } else {
            conns.remove(&state.id);
        }
        self.closed_one.notify_waiters();
        if let Some(m) = &self.metrics {
            m.connections
                .with_label_values(&[self.name])
                .set(conns.len() as i64);
        }
        if conns.is_empty() {
            self.empty.notify_waiters();
        }
    }

    /// What the watchdog does with a connection now.
    fn verdict(&self, c: &ConnState) -> Option<(CloseReason, bool)> {
        let now = self.now_ms();
        if !c.preface.load(Ordering::Relaxed) {
            if c.opened.elapsed() >= self.limits.handshake_timeout {
                return Some((CloseReason::HandshakeTimeout, false));
            }
            return None;
        }
        // A response produced SEND_EPOCHS/2 + 1 epochs ago or earlier (more than the
        // send timeout) and not yet written.
        let e = c.send_epoch();
        let stalled = (5..SEND_EPOCHS as u64).filter(|d| *d <= e).any(|d| {
            c.sending[((e - d) % SEND_EPOCHS as u64) as usize].load(Ordering::Relaxed) > 0
        });
        if stalled {
            return Some((CloseReason::SendTimeout, false));
        }
        if c.active() == 0
            && now.saturating_sub(c.last_active_ms.load(Ordering::Relaxed))
                >= self.limits.idle_timeout.as_millis() as u64
        {
            return Some((CloseReason::IdleTimeout, true));
        }
        None
    }

    /// How often connection watchdogs look.
    fn tick(&self) -> Duration {
        let l = &self.limits;
        (l.handshake_timeout.min(l.idle_timeout).min(l.send_timeout) / 4)
            .clamp(Duration::from_millis(20), Duration::from_secs(1))
    }

    /// Records an accept error; `true` if it was for lack of descriptors or memory.
    fn accept_failed(&self, e: &io::Error) -> bool {
        let exhausted = matches!(
            e.raw_os_error(),
            Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
        );
        if exhausted {
            self.fd_exhausted_ms
                .store(self.now_ms() + 1, Ordering::Relaxed);
            let mut conns = self.conns.lock().expect("registry lock");
            let freed = self.evict_one(&mut conns);
            drop(conns);
            if freed == Some(false) {
                self.count_close(CloseReason::Evicted);
            }
            self.log_limited(&format!(
                "cannot accept a connection: {e}; closing an idle connection and backing off"
            ));
        } else {
            tracing::debug!(listener = self.name, error = %e, "accept failed");
        }
        exhausted
    }
}

/// The byte stream of a connection: TCP, or TLS over TCP ([`super::tls`]).
#[derive(Debug)]
pub enum Transport {
    /// Plaintext.
    Plain(TcpStream),
    /// TLS, after its handshake.
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

macro_rules! delegate {
    ($self:ident, $io:ident => $e:expr) => {
        match $self.get_mut() {
            Transport::Plain($io) => {
                let $io = Pin::new($io);
                $e
            }
            Transport::Tls($io) => {
                let $io = Pin::new(&mut **$io);
                $e
            }
        }
    };
}

impl AsyncRead for Transport {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        delegate!(self, io => io.poll_read(cx, buf))
    }
}

impl AsyncWrite for Transport {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        delegate!(self, io => io.poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        delegate!(self, io => io.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Transport::Plain(io) => io.is_write_vectored(),
            Transport::Tls(io) => io.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        delegate!(self, io => io.poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        delegate!(self, io => io.poll_shutdown(cx))
    }
}

impl Transport {
    /// The end of a lingering close: writes `unsent`, shuts the write side down
    /// (TLS: `close_notify` first, then the TCP FIN), then reads the TCP stream and
    /// discards what comes, until the peer closes (`(bytes, true)`) or more than
    /// [`LINGER_BYTES`] came (`(bytes, false)`). The caller bounds it in time and
    /// closes the stream by dropping it.
    pub async fn shut_and_drain(self, unsent: &[u8]) -> io::Result<(usize, bool)> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        // A shutdown fails when the peer has reset the connection (then the read
        // below says so) or when the write side is shut already (h2 shuts it when
        // it ends): neither stops the reading.
        let mut tcp = match self {
            Transport::Plain(mut tcp) => {
                tcp.write_all(unsent).await?;
                let _ = tcp.shutdown().await;
                tcp
            }
            Transport::Tls(mut tls) => {
                tls.write_all(unsent).await?;
                let _ = tls.shutdown().await;
                tls.into_inner().0
            }
        };
        // On the heap, and not zeroed: no room for it in every connection's future.
        let mut buf = Vec::with_capacity(4096);
        let mut read = 0;
        loop {
            buf.clear();
            match tcp.read_buf(&mut buf).await? {
                0 => return Ok((read, true)),
                n => {
                    read += n;
                    if read > LINGER_BYTES {
                        return Ok((read, false));
                    }
                }
            }
        }
    }
}

/// A connection's stream (after TLS, if any) that records on its [`ConnState`]
/// when the preface has arrived.
#[derive(Debug)]
pub struct TrackedStream {
    io: Transport,
    state: Arc<ConnState>,
    /// Bytes still to read before the preface is complete.
    preface_left: usize,
}

impl AsyncRead for TrackedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.io).poll_read(cx, buf);
        if self.preface_left > 0 {
            if let Poll::Ready(Ok(())) = r {
                let n = buf.filled().len() - before;
                self.preface_left = self.preface_left.saturating_sub(n);
                if self.preface_left == 0 {
                    self.state.preface.store(true, Ordering::Relaxed);
                    self.state
                        .last_active_ms
                        .store(self.state.now_ms(), Ordering::Relaxed);
                }
            }
        }
        r
    }
}

impl AsyncWrite for TrackedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// The length of the HTTP/2 client connection preface (RFC 9113 §3.4).
pub const HTTP2_PREFACE_LEN: usize = 24;

/// Accepts connections on `listener` until `phase` leaves [`Phase::Serving`], and
/// serves each with `serve(io, state)` (a hyper connection future) under the
/// registry's limits. With `tls`, the TLS handshake comes first, in the connection's
/// task, under the same limits (counted, evictable, within the handshake timeout).
/// `preface_len`: bytes that make the preface ([`HTTP2_PREFACE_LEN`], or 1 for
/// HTTP/1.1), read after TLS. `graceful` starts a connection's graceful shutdown
/// (hyper's `graceful_shutdown`).
pub async fn run_listener<C, F, G>(
    listener: TcpListener,
    registry: Arc<Registry>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    preface_len: usize,
    serve: F,
    graceful: G,
    mut phase: watch::Receiver<Phase>,
) where
    C: Future + Send + 'static,
    F: Fn(Coalesced<TrackedStream>, Arc<ConnState>) -> C + Send + Sync + 'static,
    G: Fn(Pin<&mut C>) + Copy + Send + 'static,
{
    let serve = Arc::new(serve);
    loop {
        if *phase.borrow() != Phase::Serving {
            break;
        }
        let accepted = tokio::select! {
            changed = phase.changed() => {
                if changed.is_err() { break }
                continue;
            }
            r = listener.accept() => r,
        };
        let tcp = match accepted {
            Ok((tcp, _peer)) => tcp,
            Err(e) => {
                // Out of descriptors: back off (the listener stays readable, so
                // retrying at once would spin). Other errors (a connection reset
                // before it was accepted) are the client's: go on, after a breath.
                let pause = if registry.accept_failed(&e) { 50 } else { 1 };
                tokio::time::sleep(Duration::from_millis(pause)).await;
                continue;
            }
        };
        let Some(state) = registry.register_or_wait().await else {
            drop(tcp);
            continue;
        };
        let _ = tcp.set_nodelay(true);
        tokio::spawn(drive(
            tcp,
            tls.clone(),
            preface_len,
            serve.clone(),
            state,
            registry.clone(),
            graceful,
            phase.clone(),
        ));
    }
}

/// Runs the TLS handshake of a connection under its watchdog: `None` when it failed,
/// the connection was evicted, its handshake timeout passed, or the server stops.
async fn tls_handshake(
    accept: tokio_rustls::Accept<TcpStream>,
    state: &ConnState,
    registry: &Registry,
    phase: &mut watch::Receiver<Phase>,
) -> Option<tokio_rustls::server::TlsStream<TcpStream>> {
    let mut accept = std::pin::pin!(accept);
    let mut tick = tokio::time::interval(registry.tick());
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            r = accept.as_mut() => match r {
                Ok(tls) => return Some(tls),
                Err(e) => {
                    // A TLS error (rustls' errors are `InvalidData`): a bad client or
                    // a refused certificate. A peer that went away (a TCP probe) is not
                    // counted.
                    if e.kind() == io::ErrorKind::InvalidData {
                        registry.count_close(CloseReason::TlsHandshake);
                    }
                    tracing::debug!(listener = registry.name, conn = state.id, error = %e, "TLS handshake failed");
                    return None;
                }
            },
            () = state.close.notified() => return None,
            changed = phase.changed() => {
                if changed.is_err() || *phase.borrow_and_update() != Phase::Serving {
                    return None;
                }
            }
            _ = tick.tick() => {
                if let Some((reason, _)) = registry.verdict(state) {
                    registry.count_close(reason);
                    tracing::debug!(listener = registry.name, conn = state.id, reason = reason.label(), "closing connection");
                    return None;
                }
            }
        }
    }
}

/// Runs one connection (its TLS handshake first, with `tls`) under its watchdog
/// until it ends, is closed by a limit, or the server stops.
#[allow(clippy::too_many_arguments)]
async fn drive<C, F, G>(
    tcp: TcpStream,
    tls: Option<tokio_rustls::TlsAcceptor>,
    preface_len: usize,
    serve: Arc<F>,
    state: Arc<ConnState>,
    registry: Arc<Registry>,
    graceful: G,
    mut phase: watch::Receiver<Phase>,
) where
    C: Future,
    F: Fn(Coalesced<TrackedStream>, Arc<ConnState>) -> C,
    G: Fn(Pin<&mut C>),
{
    let io = match tls {
        None => Transport::Plain(tcp),
        Some(acceptor) => {
            match tls_handshake(acceptor.accept(tcp), &state, &registry, &mut phase).await {
                Some(tls) => Transport::Tls(Box::new(tls)),
                None => {
                    registry.unregister(&state);
                    return;
                }
            }
        }
    };
    let io = TrackedStream {
        io,
        state: state.clone(),
        preface_left: preface_len,
    };
    // Its writes sent together after each poll of the connection ([`super::coalesce`]).
    let (io, flusher) = coalesce(io);
    let mut conn = flusher.around(serve(io, state.clone()));
    let mut tick = tokio::time::interval(registry.tick());
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // When a GOAWAY was sent because of a limit: the time by which the connection
    // must be gone (1 s for an idle one, 250 ms for one evicted to make room).
    let mut closing_by: Option<Instant> = None;
    let mut draining = false;
    // The connection's age limit: the GOAWAY at `age_at`, then (`aged`) the end of
    // the grace, when the calls still in flight are cut.
    let limits = registry.limits;
    let mut age_at = limits
        .max_age
        .map(|a| tokio::time::Instant::from_std(state.opened + jittered(a)));
    let mut aged = false;
    let mut cut = false;
    let age_timer = tokio::time::sleep_until(age_at.unwrap_or_else(tokio::time::Instant::now));
    tokio::pin!(age_timer);
    // Whether the connection ended by itself (then its close lingers).
    let ended = loop {
        tokio::select! {
            _ = &mut conn => break true,
            () = state.close.notified() => {
                // Evicted: without a preface there is nothing to say goodbye to.
                if !state.preface.load(Ordering::Relaxed) {
                    break false;
                }
                graceful(conn.conn());
                closing_by.get_or_insert_with(|| Instant::now() + Duration::from_millis(250));
            }
            changed = phase.changed() => {
                let now = if changed.is_err() { Phase::Stopped } else { *phase.borrow_and_update() };
                match now {
                    Phase::Serving => {}
                    Phase::Draining => {
                        if !draining {
                            draining = true;
                            graceful(conn.conn());
                            // The drain bounds the calls now; a grace already
                            // running still ends when it ends.
                            if !aged {
                                age_at = None;
                            }
                        }
                    }
                    Phase::Stopped => break false,
                }
            }
            () = &mut age_timer, if age_at.is_some() => {
                if aged {
                    // The grace is over: close, cancelling the calls in flight.
                    cut = true;
                    break false;
                }
                aged = true;
                state.closing.store(true, Ordering::Relaxed);
                if !state.preface.load(Ordering::Relaxed) {
                    break false;
                }
                tracing::debug!(listener = registry.name, conn = state.id, "connection age reached: GOAWAY");
                graceful(conn.conn());
                age_at = limits
                    .max_age_grace
                    .map(|g| tokio::time::Instant::now() + g);
                if let Some(t) = age_at {
                    age_timer.as_mut().reset(t);
                }
            }
            _ = tick.tick() => {
                if closing_by.is_some_and(|t| Instant::now() >= t) {
                    break false;
                }
                if closing_by.is_some() || draining {
                    continue;
                }
                match registry.verdict(&state) {
                    None => {}
                    // After the age's GOAWAY the connection closes by itself once
                    // idle; a stalled send still closes it at once.
                    Some((_, true)) if aged => {}
                    Some((reason, polite)) => {
                        registry.count_close(reason);
                        tracing::debug!(listener = registry.name, conn = state.id, reason = reason.label(), "closing connection");
                        state.closing.store(true, Ordering::Relaxed);
                        if !polite {
                            // Counted for this reason, not for its age.
                            aged = false;
                            break false;
                        }
                        graceful(conn.conn());
                        closing_by = Some(Instant::now() + Duration::from_secs(1));
                    }
                }
            }
        }
    };
    if aged {
        registry.count_close(if cut {
            CloseReason::MaxAgeGrace
        } else {
            CloseReason::MaxAge
        });
        if cut {
            tracing::debug!(
                listener = registry.name,
                conn = state.id,
                "connection age grace over: closing with calls in flight"
            );
        }
    }
    // An evicted connection makes room for another: closed at once.
    if ended && !state.evicted.load(Ordering::Relaxed) {
        linger(conn, &state, &registry, &mut phase).await;
    }
    registry.unregister(&state);
}

/// Longest time a connection is kept in its lingering close (see the module
/// documentation): enough for the frames a peer sent before it saw the connection's
/// end to arrive over any path of less than a second's round trip; a peer that
/// closes (as clients and proxies do when they read the end) ends it sooner.
pub const LINGER_TIME: Duration = Duration::from_secs(1);

/// Most bytes read and discarded in a lingering close; a peer that sends more is
/// closed on at once.
pub const LINGER_BYTES: usize = 256 * 1024;

/// The lingering close of a connection that has ended by itself: the connection
/// future is dropped, the stream taken back from it, then
/// [`Transport::shut_and_drain`] for at most [`LINGER_TIME`], ended at once when the
/// connection is evicted or the server stops.
async fn linger<C: Future>(
    conn: Flushing<C, TrackedStream>,
    state: &ConnState,
    registry: &Registry,
    phase: &mut watch::Receiver<Phase>,
) {
    let Some((io, unsent)) = conn.into_io() else {
        return;
    };
    state.lingering.store(true, Ordering::Relaxed);
    let told_to_close = async {
        loop {
            tokio::select! {
                () = state.close.notified() => return,
                changed = phase.changed() => {
                    if changed.is_err() || *phase.borrow_and_update() == Phase::Stopped {
                        return;
                    }
                }
            }
        }
    };
    let how = tokio::select! {
        r = tokio::time::timeout(LINGER_TIME, io.io.shut_and_drain(&unsent)) => match r {
            Ok(Ok((n, true))) => format!("peer closed after {n} more bytes"),
            Ok(Ok((n, false))) => format!("peer sent {n} bytes: more than the limit"),
            Ok(Err(e)) => format!("{e}"),
            Err(_) => "time over".to_string(),
        },
        () = told_to_close => "evicted or stopped".to_string(),
    };
    tracing::debug!(
        listener = registry.name,
        conn = state.id,
        how,
        "lingering close over"
    );
}

/// The process's limit of open file descriptors (soft), if known.
#[allow(clippy::unnecessary_cast)] // rlim_t is u64 on Linux, not everywhere
pub fn fd_limit() -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass and has no other effect.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0;
    (ok && r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur as u64)
}

/// Raises the soft limit of open file descriptors to the hard limit (as Go's runtime
/// does at start-up); returns the limit in force afterwards.
#[allow(clippy::unnecessary_cast)] // rlim_t is u64 on Linux, not everywhere
pub fn raise_fd_limit() -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write only the struct we pass.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return None;
        }
        if r.rlim_cur < r.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: r.rlim_max,
                rlim_max: r.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                r = raised;
            }
        }
    }
    (r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every connection's age limit is within ±10 % of the setting, and they differ
    /// (gRFC A9: spread the reconnections).
    #[test]
    fn age_limits_are_jittered_by_ten_percent() {
        let d = Duration::from_secs(100);
        let ages: Vec<Duration> = (0..1000).map(|_| jittered(d)).collect();
        assert!(ages
            .iter()
            .all(|a| *a >= Duration::from_secs(90) && *a < Duration::from_secs(110)));
        let lo = ages.iter().min().unwrap();
        let hi = ages.iter().max().unwrap();
        // 1000 uniform draws over 20 s: the extremes are within 0.5 s of the ends
        // but for a chance of about 2 × 0.975^1000 (1e-11).
        assert!(*lo < Duration::from_millis(90_500), "{lo:?}");
        assert!(*hi > Duration::from_millis(109_500), "{hi:?}");
    }

    /// At the limit, a connection in its lingering close makes room first (before
    /// one that never sent its preface), and is neither counted nor logged as
    /// evicted; then the one without a preface, then none while all are busy.
    #[test]
    fn a_lingering_connection_is_evicted_first() {
        let limits = ConnLimits {
            max_connections: 3,
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            send_timeout: Duration::from_secs(10),
            max_buffered_bytes: 1 << 20,
            max_rpcs: 8,
            max_watches: 4,
            max_age: None,
            max_age_grace: None,
        };
        let registry = Registry::new("grpc", limits, None);
        let states: Vec<_> = (0..3).map(|_| registry.register().unwrap()).collect();
        let (bare, busy, ended) = (&states[0], &states[1], &states[2]);
        busy.preface.store(true, Ordering::Relaxed);
        let _call = StreamGuard::new(busy);
        ended.preface.store(true, Ordering::Relaxed);
        ended.lingering.store(true, Ordering::Relaxed);
        let mut conns = registry.conns.lock().unwrap();
        assert_eq!(registry.evict_one(&mut conns), Some(true));
        assert!(ended.evicted.load(Ordering::Relaxed));
        assert!(!conns.contains_key(&ended.id));
        assert_eq!(registry.evict_one(&mut conns), Some(false));
        assert!(bare.evicted.load(Ordering::Relaxed));
        assert_eq!(registry.evict_one(&mut conns), None);
        assert!(!busy.evicted.load(Ordering::Relaxed));
    }
}
