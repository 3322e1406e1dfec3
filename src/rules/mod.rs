//! The pure rules core: no gRPC, no I/O. Everything here follows `RULES.md` (R1–R9).
//!
//! - [`types`]: variant, side, dice, moves, outcomes.
//! - [`position`]: the public position in printed numbering, validation (R9), starts.
//! - [`board`]: the internal mover-relative board.
//! - [`movegen`]: every movement rule, and legal-play generation (R3–R8).
//! - [`play`]: [`legal_plays`] and [`apply`].
//! - [`notation`]: move notation `24/18 13/11*`.
//! - [`position_id`]: the Position ID text form and GNU Backgammon Position IDs.
//! - [`xgid`]: eXtreme Gammon's XGID (Portes).
//! - [`matchplay`]: opening roll and the Tavli match cycle (R2).

pub mod board;
pub mod matchplay;
pub mod movegen;
pub mod notation;
pub mod play;
pub mod position;
pub mod position_id;
pub mod types;
pub mod xgid;

pub use matchplay::{resolve_opening_roll, MatchState, OpeningRoll};
pub use notation::Notation;
pub use play::{apply, legal_plays, matching_plays, Play, PlayInput};
pub use position::{Point, Position, CHECKERS};
pub use types::{Dice, Location, Move, Moves, Outcome, OutcomeReason, RulesError, Side, Variant};
