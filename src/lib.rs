//! tavli-engine: the rules of Tavli (Portes, Plakoto, Fevga) and their evaluation,
//! served over gRPC.
//!
//! - [`rules`]: the pure rules core (RULES.md R1–R9).

pub mod rules;
