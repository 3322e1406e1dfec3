//! tavli-engine: the rules of Tavli (Portes, Plakoto, Fevga) and their evaluation,
//! served over gRPC.
//!
//! - [`rules`]: the pure rules core (RULES.md R1–R9).
//! - [`eval`]: position evaluation (bear-off database, neural nets, n-ply).
//! - [`service`]: the gRPC service `tavli.v1.TavliEngine` and its server.
//! - [`train`]: training and strength tooling (TD(λ), baselines, matches); not used
//!   by the server.
//! - [`telemetry`]: Prometheus metrics layer and tracing set-up.

pub mod corpus;
pub mod eval;
pub mod rules;
pub mod service;
pub mod telemetry;
pub mod train;
