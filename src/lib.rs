//! tavli-engine: the rules of Tavli (Portes, Plakoto, Fevga) and their evaluation,
//! served over gRPC.
//!
//! - [`rules`]: the pure rules core (RULES.md R1–R9).
//! - [`eval`]: position evaluation (bear-off database, neural nets, n-ply).

pub mod corpus;
pub mod eval;
pub mod rules;
