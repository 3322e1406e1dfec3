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

/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
/// generators", 2014): independent seeds from one master seed, e.g. the dice of game
/// `g` from `mix(seed ^ g)`.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
