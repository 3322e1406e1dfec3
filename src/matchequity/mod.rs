//! Tavli match equity: the chance of winning a match from every score (docs/match-equity.md).
//!
//! Online Tavli is played as matches (RULES.md R2): Portes, Plakoto, Fevga in turn to
//! a number of points, the winner of a game starting the next, an opening roll at the
//! start and after a draw; a game scores 1 or 2 points (R7, R5.5), no cube. With no
//! cube, the chance that a side wins from a score depends only on how each game of
//! the rest of the match ends, and each game's ends only on its variant and on who
//! starts it (if both sides play the same score-blind way). So the table is exact
//! once the starter's outcome distribution of each variant is known:
//!
//! - [`measure`]: the distributions, measured by rollouts of the engine's cubeless
//!   0-ply play (`tavli-engine met --generate`, committed as
//!   `data/met-distributions.json`);
//! - [`table`]: the exact dynamic programming over the match cycle
//!   ([`MatchEquityTable`], the transitions of [`crate::rules::MatchState::advance`])
//!   and the match winning chance of a position ([`match_winning_chance`]), which
//!   depend only on the rules and the evaluation types;
//! - [`score`]: a match score checked against the table, and what each end of its
//!   game is worth to the mover ([`MatchScore::end_values`]): the measure of a
//!   score-aware ranking ([`crate::eval::EvalOptions::measure`]);
//! - [`simulate`]: the table checked against whole matches of the engine against
//!   itself (`tavli-engine met --check`);
//! - [`gains`]: score-aware play against cubeless play in whole matches, duplicate
//!   dice (`examples/match_gains.rs`).

pub mod gains;
pub mod measure;
pub mod score;
pub mod simulate;
pub mod table;

pub use score::MatchScore;
pub use table::{
    match_winning_chance, After, Distributions, GameDistribution, GameEnd, MatchEquityTable,
    MetState, Starter, MAX_AWAY,
};
