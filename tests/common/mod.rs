//! The set-up the tests of the real server share (`mod common;` in each test file):
//! the server (`tavli_engine::service::serve_with_web`) on ephemeral loopback ports,
//! a client channel to it, its `/metrics` text, and the Portes start.

// Each test file uses a part of it.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tavli_engine::eval::engine::Engine;
use tavli_engine::eval::rollout::{RolloutConfig, RolloutReport};
use tavli_engine::eval::{
    EvalError, EvalOptions, Evaluation, PositionEvaluator, RankedPlay, StopWhen,
};
use tavli_engine::rules::{Dice, Position};

use tavli_engine::service::pb::tavli_engine_client::TavliEngineClient;
use tavli_engine::service::{serve_with_web, ServerConfig};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::transport::Channel;
use tonic::{Code, Status};
use tonic_types::StatusExt;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The Portes starting position, White to move (R1).
pub const PORTES_START: &str = "portes/w/24:2,13:5,8:3,6:5/1:2,12:5,17:3,19:5";

/// A server running in this test's runtime until [`TestServer::shutdown`].
pub struct TestServer {
    pub grpc: SocketAddr,
    pub metrics: SocketAddr,
    web: Option<SocketAddr>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), BoxError>>>,
}

impl TestServer {
    /// gRPC and metrics, each on an ephemeral loopback port.
    pub async fn start(config: ServerConfig) -> TestServer {
        TestServer::spawn(config, false).await
    }

    /// The same and the analysis page ([`TestServer::web`]).
    pub async fn start_with_web(config: ServerConfig) -> TestServer {
        TestServer::spawn(config, true).await
    }

    /// [`TestServer::start`] with the default configuration.
    pub async fn default() -> TestServer {
        TestServer::start(ServerConfig::default()).await
    }

    async fn spawn(config: ServerConfig, web: bool) -> TestServer {
        let bind = || TcpListener::bind("127.0.0.1:0");
        let (grpc, metrics) = (bind().await.unwrap(), bind().await.unwrap());
        let page = if web {
            Some(bind().await.unwrap())
        } else {
            None
        };
        let (grpc_addr, metrics_addr) = (grpc.local_addr().unwrap(), metrics.local_addr().unwrap());
        let web_addr = page.as_ref().map(|l| l.local_addr().unwrap());
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(serve_with_web(config, grpc, metrics, page, async {
            let _ = rx.await;
        }));
        TestServer {
            grpc: grpc_addr,
            metrics: metrics_addr,
            web: web_addr,
            stop: Some(tx),
            task: Some(task),
        }
    }

    /// The analysis page's address (a server of [`TestServer::start_with_web`]).
    pub fn web(&self) -> SocketAddr {
        self.web.expect("a server started with the analysis page")
    }

    /// A plaintext channel (retried while the server starts).
    pub async fn channel(&self) -> Channel {
        let url = format!("http://{}", self.grpc);
        for _ in 0..100 {
            if let Ok(ch) = Channel::from_shared(url.clone()).unwrap().connect().await {
                return ch;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("cannot connect to {url}");
    }

    /// A client of the engine on [`TestServer::channel`].
    pub async fn client(&self) -> TavliEngineClient<Channel> {
        TavliEngineClient::new(self.channel().await)
    }

    /// [`metrics_text`] of this server.
    pub async fn metrics_text(&self) -> String {
        metrics_text(self.metrics).await
    }

    /// Triggers the shutdown and waits for the server to return.
    pub async fn shutdown(mut self) -> Result<(), BoxError> {
        let _ = self.stop.take().unwrap().send(());
        self.task.take().unwrap().await.unwrap()
    }
}

/// `GET /metrics` from `addr` over plain HTTP/1.1 (the whole answer, headers
/// included).
pub async fn metrics_text(addr: SocketAddr) -> String {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    out
}

/// The value of the sample `line_prefix` (metric name and labels) in a metrics text.
pub fn sample(text: &str, line_prefix: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(line_prefix) && l[line_prefix.len()..].starts_with(' '))
        .map(|l| l[line_prefix.len()..].trim().parse().unwrap())
}

/// Calls `call` every 20 ms for `span`, on a client whose connections the server
/// closes by age. A call may fail only as one that tonic handed to a connection at
/// the moment its GOAWAY arrived: h2 refuses it on the client, before it is sent
/// (`CANCELLED` "operation was canceled", or `UNAVAILABLE`); grpc-go and grpc-java
/// retry such a call by themselves (gRFC A6, transparent retry), tonic does not, so
/// it is retried here once and must then be answered. Returns (calls answered,
/// calls retried); the caller checks on the server that every call it started was
/// answered, i.e. that the retried ones never reached it.
pub async fn call_across_ages<F, Fut>(span: Duration, mut call: F) -> (usize, usize)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), tonic::Status>>,
{
    let t = std::time::Instant::now();
    let (mut answered, mut retried) = (0, 0);
    while t.elapsed() < span {
        if let Err(s) = call().await {
            assert!(
                matches!(s.code(), tonic::Code::Cancelled | tonic::Code::Unavailable),
                "call {answered} after {:?}: {s:?}",
                t.elapsed()
            );
            retried += 1;
            call()
                .await
                .unwrap_or_else(|s| panic!("retried call after {:?}: {s:?}", t.elapsed()));
        }
        answered += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (answered, retried)
}

/// An HTTP/2 frame (RFC 9113 §4.1) of `kind` on stream 0.
pub fn h2_frame(kind: u8, flags: u8, payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() as u32).to_be_bytes();
    let mut f = vec![len[1], len[2], len[3], kind, flags, 0, 0, 0, 0];
    f.extend_from_slice(payload);
    f
}

/// An HTTP/2 client that sends no request: the preface and an empty SETTINGS, then
/// an acknowledgement of each SETTINGS and PING of the server, until the server ends
/// the connection (end of stream). Returns the types of the frames it received
/// (RFC 9113 §6: 4 SETTINGS, 6 PING, 7 GOAWAY, 8 WINDOW_UPDATE).
pub async fn idle_h2_client<S: AsyncRead + AsyncWrite + Unpin>(
    io: &mut S,
) -> std::io::Result<Vec<u8>> {
    io.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").await?;
    io.write_all(&h2_frame(4, 0, &[])).await?;
    io.flush().await?;
    let mut kinds = Vec::new();
    loop {
        let mut head = [0u8; 9];
        match io.read_exact(&mut head).await {
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(kinds),
            r => r?,
        };
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let (kind, ack) = (head[3], head[4] & 1 == 1);
        let mut payload = vec![0u8; len];
        io.read_exact(&mut payload).await?;
        kinds.push(kind);
        match (kind, ack) {
            (4, false) => io.write_all(&h2_frame(4, 1, &[])).await?,
            (6, false) => io.write_all(&h2_frame(6, 1, &payload)).await?,
            _ => continue,
        }
        io.flush().await?;
    }
}

/// After the server has ended a connection (its end of stream read): whether the
/// server still reads what the client sends, as in a lingering close. Three PINGs,
/// 100 ms and 50 ms apart: a server that has closed its socket answers the first with
/// a TCP reset, and a later write fails (`ECONNRESET`, `EPIPE`).
pub async fn server_still_reads<S: AsyncWrite + Unpin>(io: &mut S) -> std::io::Result<()> {
    for (i, pause) in [100, 50, 0].into_iter().enumerate() {
        io.write_all(&h2_frame(6, 0, &[i as u8; 8])).await?;
        io.flush().await?;
        tokio::time::sleep(Duration::from_millis(pause)).await;
    }
    Ok(())
}

/// What [`PositionEvaluator::rank_plays`] answers.
pub type Ranked = Result<Vec<RankedPlay>, EvalError>;

/// The committed evaluator, counting its calls (evaluations, rankings, rollouts).
pub struct Counting {
    pub inner: Engine,
    pub calls: Arc<AtomicUsize>,
    /// The deadline the last ranking was given.
    pub deadline: Arc<Mutex<Option<Instant>>>,
}

impl PositionEvaluator for Counting {
    fn evaluate(&self, pos: &Position, opts: EvalOptions) -> Result<Evaluation, EvalError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.evaluate(pos, opts)
    }
    fn rank_plays(&self, pos: &Position, dice: Dice, opts: EvalOptions) -> Ranked {
        self.calls.fetch_add(1, Ordering::Relaxed);
        *self.deadline.lock().unwrap() = opts.deadline;
        self.inner.rank_plays(pos, dice, opts)
    }
    fn rollout(
        &self,
        pos: &Position,
        dice: Option<Dice>,
        cfg: &RolloutConfig,
        stop: StopWhen<'_>,
        on_report: &mut dyn FnMut(&RolloutReport) -> ControlFlow<()>,
    ) -> Result<RolloutReport, EvalError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.rollout(pos, dice, cfg, stop, on_report)
    }
}

/// Asserts an INVALID_ARGUMENT whose BadRequest names exactly `field` and whose
/// message starts with it.
#[track_caller]
pub fn assert_invalid(status: &Status, field: &str) {
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    let br = status
        .get_details_bad_request()
        .unwrap_or_else(|| panic!("no BadRequest in {status:?}"));
    assert_eq!(br.field_violations.len(), 1, "{br:?}");
    assert_eq!(br.field_violations[0].field, field, "{status:?}");
    assert!(!br.field_violations[0].description.is_empty());
    assert!(
        status.message().starts_with(&format!("{field}: ")),
        "message {:?} does not name {field}",
        status.message()
    );
}
