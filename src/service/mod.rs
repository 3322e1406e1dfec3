//! The gRPC service `tavli.v1.TavliEngine` (`proto/tavli/v1/engine.proto`).
//!
//! Thin adapters around the rules core ([`crate::rules`]) and the evaluation contract
//! ([`crate::eval`]):
//!
//! - [`pb`]: the generated messages, server and client, and the descriptor set.
//! - [`convert`]: proto ↔ rules conversions and input validation (RULES.md R9).
//! - [`error`]: [`ServiceError`] and the one mapping of rules and evaluation errors to
//!   `tonic::Status` (with `google.rpc.BadRequest` / `google.rpc.ErrorInfo` details).
//! - [`api`]: [`TavliEngineService`], one method per RPC, also used by the CLI;
//!   [`grpc`]: the tonic trait over those methods (blocking pool, cancellation);
//!   [`rollout`]: the streaming `Rollout` RPC.
//! - [`analyze`]: `AnalyzeGame`, the server-streaming analysis of a game record.
//! - [`limits`]: admission (request body, permits: `RESOURCE_EXHAUSTED`), the deadline
//!   layer, deep-search admission, cancellation of abandoned work.
//! - [`conn`]: the accept loop and the limits of a connection; [`buffers`]: the
//!   bounded request and response bytes; [`inflate`]: compressed requests inflated
//!   within those bounds; [`readiness`]: the engine's health status; [`coalesce`]:
//!   a connection's writes sent together, once per poll of its task.
//! - [`wire`]: the ListLegalPlays response written as protobuf bytes straight from the
//!   rules core, and [`route`]: the engine service with that method answered from them.
//! - [`protocol`]: gRPC conformance of requests (HTTP 415 for a content type that is
//!   not gRPC, one request message per unary or server-streaming call); [`health`]:
//!   `grpc.health.v1.Health` with `Watch` as `health.proto` describes it.
//! - [`server`]: [`serve`]: gRPC + health + reflection + `/metrics`, graceful shutdown.
//! - [`tls`]: TLS and mutual TLS on the gRPC port (flags, PEM files).
//! - [`json`]: proto3 JSON output (the shape grpcurl prints), for the CLI.

pub mod analyze;
pub mod api;
pub mod buffers;
pub mod coalesce;
pub mod conn;
pub mod convert;
pub mod error;
pub mod grpc;
pub mod health;
pub mod inflate;
pub mod json;
pub mod limits;
pub mod protocol;
pub mod readiness;
pub mod rollout;
pub mod route;
pub mod server;
pub mod tls;
pub mod wire;

pub use api::TavliEngineService;
pub use error::ServiceError;
pub use server::{serve, serve_with_web, ServerConfig};

/// The generated protobuf messages, the tonic server and client of `tavli.v1`, and the
/// encoded file descriptor set served by reflection.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    tonic::include_proto!("tavli.v1");

    /// The encoded `google.protobuf.FileDescriptorSet` of `tavli/v1/engine.proto`
    /// (written by `build.rs`), for gRPC reflection and JSON output.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/tavli_v1_descriptor.bin"));
}

/// The fully qualified gRPC service name: `tavli.v1.TavliEngine`.
pub const SERVICE_NAME: &str = "tavli.v1.TavliEngine";
