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
//!   application/grpc-web+proto`: tonic-web's translation in front of the engine
//!   service with the same tower layers as the gRPC port (metrics, deadline,
//!   admission: one concurrency limit, the buffers, the deep-search limit).
//!
//! [`Page`] is the HTTP service of one connection; [`crate::service::serve_with_web`]
//! serves it over HTTP/1.1 with the connection limits of [`crate::service::conn`]
//! (`--web-max-connections`, handshake, idle and send timeouts). The port is
//! plaintext: bind it to loopback or a private address.

use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tonic::body::Body;
use tower::{Layer, Service};

/// One embedded file of the page.
struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static str,
}

/// An embedded file of `web/`: its path on the page, content type and file name.
macro_rules! asset {
    ($path:literal, $content_type:literal, $file:literal) => {
        Asset {
            path: $path,
            content_type: $content_type,
            body: include_str!(concat!("../../web/", $file)),
        }
    };
}

/// The page's files (`web/` in the repository), embedded at build time.
const ASSETS: [Asset; 5] = [
    asset!("/", "text/html; charset=utf-8", "index.html"),
    asset!("/style.css", "text/css; charset=utf-8", "style.css"),
    asset!("/app.js", "text/javascript; charset=utf-8", "app.js"),
    asset!("/board.js", "text/javascript; charset=utf-8", "board.js"),
    asset!(
        "/grpcweb.js",
        "text/javascript; charset=utf-8",
        "grpcweb.js"
    ),
];

/// Only the page's own files and its own origin: no inline script, nothing remote.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
                   connect-src 'self'; img-src 'self' data:; base-uri 'none'; \
                   form-action 'none'; frame-ancestors 'none'";

fn asset_response(a: &'static Asset) -> Response<Body> {
    let mut r = Response::new(Body::new(http_body_util::Full::new(Bytes::from_static(
        a.body.as_bytes(),
    ))));
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(a.content_type),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

/// A plain-text answer with `status`.
fn text(status: StatusCode, body: &'static str) -> Response<Body> {
    let mut r = Response::new(Body::new(http_body_util::Full::new(Bytes::from_static(
        body.as_bytes(),
    ))));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// The page's HTTP service: the embedded files (`GET`, `HEAD`; another method is
/// 405, another path 404), and `/tavli.v1.TavliEngine/{method}` through tonic-web
/// to `grpc` (the engine service with its layers).
#[derive(Clone, Debug)]
pub struct Page<S> {
    grpc_web: tonic_web::GrpcWebService<S>,
}

impl<S> Page<S> {
    /// The page in front of `grpc`.
    pub fn new(grpc: S) -> Page<S> {
        Page {
            grpc_web: tonic_web::GrpcWebLayer::new().layer(grpc),
        }
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = Result<T, Infallible>> + Send>>;

impl<S, B> Service<Request<B>> for Page<S>
where
    tonic_web::GrpcWebService<S>:
        Service<Request<B>, Response = Response<Body>, Error = Infallible> + Clone + Send + 'static,
    <tonic_web::GrpcWebService<S> as Service<Request<B>>>::Future: Send + 'static,
    B: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Response<Body>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let path = req.uri().path();
        let engine_method = path
            .strip_prefix('/')
            .and_then(|p| p.strip_prefix(crate::service::SERVICE_NAME))
            .is_some_and(|m| m.len() > 1 && m.starts_with('/') && !m[1..].contains('/'));
        if engine_method {
            let mut grpc_web = self.grpc_web.clone();
            return Box::pin(async move {
                std::future::poll_fn(|cx| grpc_web.poll_ready(cx)).await?;
                grpc_web.call(req).await
            });
        }
        let answer = match ASSETS.iter().find(|a| a.path == path) {
            None => text(StatusCode::NOT_FOUND, "not found\n"),
            Some(a) if req.method() == Method::GET || req.method() == Method::HEAD => {
                asset_response(a)
            }
            Some(_) => {
                let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "use GET\n");
                r.headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
                r
            }
        };
        Box::pin(std::future::ready(Ok(answer)))
    }
}
