//! The analysis page: a small web page served by the same binary (off by default;
//! `serve --web-addr 127.0.0.1:8080`).
//!
//! Paste a Position ID or a GNU Backgammon ID, see the board drawn as SVG, pick the
//! dice, see the legal plays ranked by equity (`Evaluate` with dice), click one to
//! apply it (`ApplyPlay`) and see the new board. The page talks to the engine over
//! gRPC-Web (tonic-web) on its own origin, so there is no other server and no CORS:
//!
//! - `GET /` and its assets: the committed files of `web/` (HTML, CSS and plain
//!   JavaScript modules with a hand-written protobuf encoder/decoder), embedded in
//!   the binary with `include_str!`; nothing is built or fetched at run time.
//! - `POST /tavli.v1.TavliEngine/{method}` with `content-type:
//!   application/grpc-web+proto`: the engine service behind the same tower layers as
//!   the gRPC port (metrics, concurrency limit shared with it, deadline).
//!
//! The port is plaintext HTTP/1.1: bind it to loopback or a private address. It
//! holds at most [`MAX_CONNECTIONS`] connections at once (more wait in the listen
//! queue), and closes a connection that reads and writes nothing for
//! [`IDLE_TIMEOUT`] (a stalled or idle client, kept-alive ones included).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Connections served at once by default (a browser opens up to six per origin).
pub const MAX_CONNECTIONS: usize = 64;

/// By default a connection with no byte read or written for this long is closed
/// (above the server's default request timeout of 30 s, so that a long `Evaluate`
/// is not cut).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// The bounds on the page's connections.
#[derive(Clone, Copy, Debug)]
pub struct WebLimits {
    /// Connections served at once; more wait in the listen queue.
    pub max_connections: usize,
    /// A connection that reads and writes nothing for this long is closed.
    pub idle_timeout: Duration,
}

impl Default for WebLimits {
    /// [`MAX_CONNECTIONS`] and [`IDLE_TIMEOUT`].
    fn default() -> Self {
        WebLimits {
            max_connections: MAX_CONNECTIONS,
            idle_timeout: IDLE_TIMEOUT,
        }
    }
}

/// A gRPC service as tonic's server runs it (e.g. the layered
/// [`crate::service::route::EngineRoutes`]): the bound of [`router`] and [`serve`].
pub trait GrpcService:
    tower::Service<
        http::Request<tonic::body::Body>,
        Response = http::Response<tonic::body::Body>,
        Error = Infallible,
        Future: Send + 'static,
    > + Clone
    + Send
    + Sync
    + 'static
{
}

impl<S> GrpcService for S where
    S: tower::Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<tonic::body::Body>,
            Error = Infallible,
            Future: Send + 'static,
        > + Clone
        + Send
        + Sync
        + 'static
{
}

/// One embedded file of the page.
struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static str,
}

/// The page's files (`web/` in the repository), embedded at build time.
const ASSETS: [Asset; 5] = [
    Asset {
        path: "/",
        content_type: "text/html; charset=utf-8",
        body: include_str!("../../web/index.html"),
    },
    Asset {
        path: "/style.css",
        content_type: "text/css; charset=utf-8",
        body: include_str!("../../web/style.css"),
    },
    Asset {
        path: "/app.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("../../web/app.js"),
    },
    Asset {
        path: "/board.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("../../web/board.js"),
    },
    Asset {
        path: "/grpcweb.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("../../web/grpcweb.js"),
    },
];

/// Only the page's own files and its own origin: no inline script, nothing remote.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
                   connect-src 'self'; img-src 'self' data:; base-uri 'none'; \
                   form-action 'none'; frame-ancestors 'none'";

fn asset_response(a: &'static Asset) -> Response {
    (
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static(a.content_type),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CSP),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
        ],
        a.body,
    )
        .into_response()
}

/// The page's router: the embedded files, and the engine service `grpc` behind
/// tonic-web's gRPC-Web translation at `/tavli.v1.TavliEngine/{method}`.
pub fn router<S>(grpc: S) -> axum::Router
where
    S: GrpcService,
{
    let grpc_web = tower::ServiceBuilder::new()
        .layer(tonic_web::GrpcWebLayer::new())
        .service(grpc);
    let mut app = axum::Router::new().route_service(
        &format!("/{}/{{method}}", crate::service::SERVICE_NAME),
        grpc_web,
    );
    for a in &ASSETS {
        app = app.route(a.path, get(move || async move { asset_response(a) }));
    }
    app
}

/// Serves [`router`]`(grpc)` on `listener` until `shutdown` completes, then lets
/// open requests finish; connections bounded by [`WebLimits::default`].
pub async fn serve<S>(
    listener: TcpListener,
    grpc: S,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()>
where
    S: GrpcService,
{
    serve_with_limits(listener, grpc, WebLimits::default(), shutdown).await
}

/// [`serve`] with the given connection bounds.
pub async fn serve_with_limits<S>(
    listener: TcpListener,
    grpc: S,
    limits: WebLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()>
where
    S: GrpcService,
{
    let listener = BoundedListener {
        inner: listener,
        permits: Arc::new(Semaphore::new(limits.max_connections.max(1))),
        idle_timeout: limits.idle_timeout,
    };
    axum::serve(listener, router(grpc))
        .with_graceful_shutdown(shutdown)
        .await
}

/// A TCP listener that hands out at most `permits` connections at once.
struct BoundedListener {
    inner: TcpListener,
    permits: Arc<Semaphore>,
    idle_timeout: Duration,
}

impl axum::serve::Listener for BoundedListener {
    type Io = BoundedIo;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (BoundedIo, std::net::SocketAddr) {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        // Retries (and logs) accept errors itself.
        let (stream, addr) = axum::serve::Listener::accept(&mut self.inner).await;
        let _ = stream.set_nodelay(true);
        let io = BoundedIo {
            stream,
            _permit: permit,
            idle: Box::pin(tokio::time::sleep(self.idle_timeout)),
            idle_timeout: self.idle_timeout,
        };
        (io, addr)
    }

    fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        self.inner.local_addr()
    }
}

/// A connection holding its permit, closed after `idle_timeout` without progress.
struct BoundedIo {
    stream: TcpStream,
    _permit: OwnedSemaphorePermit,
    idle: Pin<Box<tokio::time::Sleep>>,
    idle_timeout: Duration,
}

impl BoundedIo {
    /// After an I/O poll: progress restarts the idle clock; a pending poll fails
    /// with `TimedOut` once the clock has run out.
    fn watch<T>(
        &mut self,
        cx: &mut Context<'_>,
        poll: Poll<std::io::Result<T>>,
    ) -> Poll<std::io::Result<T>> {
        match poll {
            Poll::Pending => match self.idle.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "web connection idle",
                ))),
                Poll::Pending => Poll::Pending,
            },
            ready => {
                let deadline = tokio::time::Instant::now() + self.idle_timeout;
                self.idle.as_mut().reset(deadline);
                ready
            }
        }
    }
}

impl AsyncRead for BoundedIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let poll = Pin::new(&mut self.stream).poll_read(cx, buf);
        self.watch(cx, poll)
    }
}

impl AsyncWrite for BoundedIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.watch(cx, poll)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
