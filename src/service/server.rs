//! [`serve`]: the gRPC server (engine, health, reflection v1 and v1alpha) with its
//! tower layers, the Prometheus `/metrics` HTTP server, and the graceful shutdown;
//! [`serve_with_web`]: the same and the analysis page ([`crate::web`]).

use super::api::TavliEngineService;
use super::limits::{ConcurrencyLimitLayer, DeadlineLayer};
use super::pb::tavli_engine_server::TavliEngineServer;
use super::route::EngineRoutes;
use super::{pb, SERVICE_NAME};
use crate::eval::{PositionEvaluator, MAX_PLIES};
use crate::telemetry::{Metrics, MetricsLayer};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tonic::codec::CompressionEncoding;
use tonic::transport::server::TcpIncoming;
use tonic::transport::ServerTlsConfig;
use tonic_health::ServingStatus;

/// A boxed error of [`serve`] (bind, reflection set-up, transport).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Everything [`serve`] needs besides its listeners.
#[derive(Clone)]
pub struct ServerConfig {
    /// How long in-flight RPCs may run after the shutdown signal (default 10 s).
    pub drain: Duration,
    /// Largest request and response message, in bytes (default 4 MiB). Larger
    /// requests are answered `OUT_OF_RANGE` by tonic.
    pub max_message_bytes: usize,
    /// RPCs served at once; beyond it `RESOURCE_EXHAUSTED` (default 256). Health and
    /// reflection are not counted.
    pub concurrency_limit: usize,
    /// Deepest `Evaluate` search accepted (default and maximum [`MAX_PLIES`]).
    pub max_plies: u8,
    /// Server-side limit per RPC, on top of the client's deadline (default 30 s).
    pub request_timeout: Option<Duration>,
    /// The evaluator behind `Evaluate`; `None` → `UNIMPLEMENTED`.
    pub evaluator: Option<Arc<dyn PositionEvaluator>>,
    /// TLS, or mutual TLS with a client CA, on the gRPC port ([`super::tls`]);
    /// `None` (the default): plaintext.
    pub tls: Option<ServerTlsConfig>,
    /// Compress responses (with the first of gzip and zstd that the client's
    /// `grpc-accept-encoding` lists) (default false: it costs 2.4 times the
    /// server CPU of a 16 KB ListLegalPlays answer, docs/performance.md, and
    /// grpcio and grpc-js list gzip by default). Compressed requests are accepted
    /// either way.
    pub compress_responses: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            drain: Duration::from_secs(10),
            max_message_bytes: 4 * 1024 * 1024,
            concurrency_limit: 256,
            max_plies: MAX_PLIES,
            request_timeout: Some(Duration::from_secs(30)),
            evaluator: None,
            tls: None,
            compress_responses: false,
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
            .field("evaluator", &self.evaluator.is_some())
            .field("tls", &self.tls.is_some())
            .field("compress_responses", &self.compress_responses)
            .finish()
    }
}

/// Serves gRPC on `grpc` and Prometheus metrics (`GET /metrics`) on `metrics` until
/// `shutdown` completes; then health turns `NOT_SERVING` (for `""` and
/// `tavli.v1.TavliEngine`), no new connection is accepted, in-flight RPCs get up to
/// `config.drain` to finish, and the function returns `Ok(())`.
///
/// gRPC services: `tavli.v1.TavliEngine`, `grpc.health.v1.Health`,
/// `grpc.reflection.v1.ServerReflection` and `grpc.reflection.v1alpha.ServerReflection`.
/// Layers, outermost first: metrics and tracing ([`MetricsLayer`]), the concurrency
/// limit ([`ConcurrencyLimitLayer`]), the deadline ([`DeadlineLayer`]).
pub async fn serve(
    config: ServerConfig,
    grpc: TcpListener,
    metrics: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> Result<(), BoxError> {
    serve_with_web(config, grpc, metrics, None, shutdown).await
}

/// [`serve`], and with `web` the analysis page and its gRPC-Web endpoint
/// ([`crate::web`]) on that listener, behind the same layers as the gRPC port (one
/// concurrency limit for both); it stops with the gRPC server.
pub async fn serve_with_web(
    config: ServerConfig,
    grpc: TcpListener,
    metrics: TcpListener,
    web: Option<TcpListener>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), BoxError> {
    let m = Metrics::new();
    let engine =
        TavliEngineService::new(config.evaluator.clone(), config.max_plies, Some(m.clone()));
    let engine = EngineRoutes::new(engine, config.max_message_bytes)
        .send_compressed(config.compress_responses);
    let layers = tower::ServiceBuilder::new()
        .layer(MetricsLayer::new(m.clone()))
        .layer(ConcurrencyLimitLayer::new(config.concurrency_limit))
        .layer(DeadlineLayer::new(config.request_timeout));

    let (health, health_service) = tonic_health::server::health_reporter();
    let health_service = health_service
        .accept_compressed(CompressionEncoding::Gzip)
        .accept_compressed(CompressionEncoding::Zstd);
    health
        .set_serving::<TavliEngineServer<TavliEngineService>>()
        .await;
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
        .accept_compressed(CompressionEncoding::Gzip)
        .accept_compressed(CompressionEncoding::Zstd);
    let reflection_v1alpha = reflection()
        .build_v1alpha()?
        .accept_compressed(CompressionEncoding::Gzip)
        .accept_compressed(CompressionEncoding::Zstd);

    let grpc_addr = grpc.local_addr()?;
    let metrics_addr = metrics.local_addr()?;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let mut builder = tonic::transport::Server::builder();
    if let Some(tls) = config.tls.clone() {
        builder = builder.tls_config(tls)?;
    }
    let (web_stop_tx, web_stop_rx) = tokio::sync::oneshot::channel::<()>();
    let web_task = match web {
        Some(listener) => {
            tracing::info!(web_addr = %listener.local_addr()?, "serving the analysis page");
            let grpc_web = layers.clone().service(engine.clone());
            Some(tokio::spawn(crate::web::serve(listener, grpc_web, async {
                let _ = web_stop_rx.await;
            })))
        }
        None => None,
    };
    let server = builder
        .layer(layers)
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(engine)
        .serve_with_incoming_shutdown(TcpIncoming::from(grpc).with_nodelay(Some(true)), async {
            let _ = stop_rx.await;
        });
    let mut grpc_task = tokio::spawn(server);

    let (metrics_stop_tx, metrics_stop_rx) = tokio::sync::oneshot::channel::<()>();
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let m = m.clone();
            async move {
                (
                    [(
                        http::header::CONTENT_TYPE,
                        "text/plain; version=0.0.4; charset=utf-8",
                    )],
                    m.render(),
                )
            }
        }),
    );
    let metrics_task = tokio::spawn(async move {
        axum::serve(metrics, app)
            .with_graceful_shutdown(async {
                let _ = metrics_stop_rx.await;
            })
            .await
    });
    tracing::info!(%grpc_addr, %metrics_addr, service = SERVICE_NAME, ?config, "serving");

    tokio::select! {
        () = shutdown => {}
        r = &mut grpc_task => {
            let _ = metrics_stop_tx.send(());
            let _ = web_stop_tx.send(());
            return match r {
                Ok(Ok(())) => Err("the gRPC server stopped unexpectedly".into()),
                Ok(Err(e)) => Err(e.into()),
                Err(e) => Err(e.into()),
            };
        }
    }

    tracing::info!(drain = ?config.drain, "shutting down: health NOT_SERVING, draining in-flight RPCs");
    health
        .set_not_serving::<TavliEngineServer<TavliEngineService>>()
        .await;
    health
        .set_service_status("", ServingStatus::NotServing)
        .await;
    let _ = stop_tx.send(());
    let result = match tokio::time::timeout(config.drain, &mut grpc_task).await {
        Ok(Ok(Ok(()))) => {
            tracing::info!("drained; stopped");
            Ok(())
        }
        Ok(Ok(Err(e))) => Err(e.into()),
        Ok(Err(e)) => Err(e.into()),
        Err(_) => {
            tracing::warn!(drain = ?config.drain, "drain time over; cancelling the remaining RPCs");
            grpc_task.abort();
            Ok(())
        }
    };
    let _ = metrics_stop_tx.send(());
    let _ = web_stop_tx.send(());
    let _ = tokio::time::timeout(Duration::from_secs(1), metrics_task).await;
    if let Some(task) = web_task {
        let _ = tokio::time::timeout(Duration::from_secs(1), task).await;
    }
    result
}

/// Completes on SIGTERM or SIGINT (Ctrl-C), logging which one arrived.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
        "SIGINT"
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
        "SIGTERM"
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<&str>();
    let which = tokio::select! {
        s = ctrl_c => s,
        s = term => s,
    };
    tracing::info!(signal = which, "shutdown signal received");
}
