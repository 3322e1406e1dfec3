//! tavli-engine: the rules of Tavli (Portes, Plakoto, Fevga) and their evaluation,
//! served over gRPC.
//!
//! - [`rules`]: the pure rules core (RULES.md R1–R9).
//! - [`eval`]: position evaluation (bear-off database, neural nets, n-ply).
//! - [`bot`]: the play of a bot opponent at a skill level (`ChoosePlay`).
//! - [`service`]: the gRPC service `tavli.v1.TavliEngine` and its server.
//! - [`train`]: training and strength tooling (TD(λ), baselines, matches); not used
//!   by the server.
//! - [`telemetry`]: Prometheus metrics layer and tracing set-up.
//! - [`board_text`]: a position drawn as a text board (`tavli-engine show`).
//! - [`web`]: the analysis page (gRPC-Web), served with `--web-addr`.
//! - [`ubgi`]: the engine over UBGI on stdin/stdout (`tavli-engine ubgi`).
//! - [`matchequity`]: the match equity table of Tavli matches (`tavli-engine met`).
//! - [`replicas`]: rollouts split over several servers (the client side).

pub mod analysis;
pub mod board_text;
pub mod bot;
pub mod corpus;
pub mod eval;
pub mod matchequity;
pub mod record;
pub mod replicas;
pub mod rules;
pub mod service;
pub mod telemetry;
pub mod train;
pub mod ubgi;
pub mod web;
