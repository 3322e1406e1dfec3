//! The set-up the tests of the real server share (`mod common;` in each test file):
//! the server (`tavli_engine::service::serve_with_web`) on ephemeral loopback ports,
//! a client channel to it, its `/metrics` text, and the Portes start.

// Each test file uses a part of it.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use tavli_engine::service::pb::tavli_engine_client::TavliEngineClient;
use tavli_engine::service::{serve_with_web, ServerConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
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
