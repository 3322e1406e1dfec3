//! Training and strength tooling, apart from the runtime evaluator ([`crate::eval`]).
//!
//! As wildbg keeps its trainer (`crates/coach`) apart from its engine and GNU
//! Backgammon its training tools apart from `eval.c`: [`crate::eval`] is what the server
//! runs; this module holds what only the tools (`src/bin/train.rs`,
//! `src/bin/strength.rs`), tests and benchmarks use. It depends on [`crate::eval`],
//! never the other way round, so the server binary (`src/main.rs`) does not step
//! through it.
//!
//! - [`sgd`]: initialisation and the gradient step of a [`crate::eval::net::Net`].
//! - [`td`]: TD(λ) self-play and quick matches between policies.
//! - [`supervised`]: positions from self-play, labels by the engine's own search, fits.
//! - [`data`]: the positions files of the supervised steps.
//! - [`strength`]: matches between evaluators on game pairs with the same dice.
//! - [`levels`]: the bot's skill levels measured: points per game and the analysis of
//!   its games.
//! - [`heuristic`]: fixed baselines (a hand-written heuristic for Plakoto and Fevga, a
//!   random evaluator). Tesauro's pubeval, the Portes baseline, is
//!   [`crate::eval::pubeval`]: the server's rollouts use it to prefilter plays.

pub mod data;
pub mod heuristic;
pub mod levels;
pub mod sgd;
pub mod strength;
pub mod supervised;
pub mod td;
