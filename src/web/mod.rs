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
//! The port is plaintext HTTP/1.1: bind it to loopback or a private address.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::convert::Infallible;
use std::future::Future;
use tokio::net::TcpListener;

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

/// The page's router: the embedded files, and the engine service `grpc` (a service
/// speaking gRPC over `http::Request<tonic::body::Body>`, such as the layered
/// [`crate::service::route::EngineRoutes`]) behind tonic-web's gRPC-Web translation
/// at `/tavli.v1.TavliEngine/{method}`.
pub fn router<S>(grpc: S) -> axum::Router
where
    S: tower::Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<tonic::body::Body>,
            Error = Infallible,
        > + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
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
/// open requests finish.
pub async fn serve<S>(
    listener: TcpListener,
    grpc: S,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()>
where
    S: tower::Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<tonic::body::Body>,
            Error = Infallible,
        > + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
{
    axum::serve(listener, router(grpc))
        .with_graceful_shutdown(shutdown)
        .await
}
