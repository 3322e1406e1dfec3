//! Position evaluation (cubeless, for the side to move, before rolling).
//!
//! The contract used by the service and the tools. Implementations live in the
//! sub-modules (bear-off database, neural nets, n-ply search). This module is what the
//! server runs; training, baselines and strength matches live in [`crate::train`],
//! which depends on this module and never the other way round.

pub mod cpu;
pub mod features;
pub mod first_layer;
pub mod inputs;
pub mod kernels;
pub mod net;

pub mod bearoff;
pub mod engine;
pub mod pubeval;
pub mod rollout;
pub mod sanity;
pub mod search;
pub mod wide;

mod types;

use crate::rules::{Dice, Position};
pub use types::{
    CancelToken, EndValues, EvalError, EvalOptions, Evaluation, Evaluator, Probabilities,
    RankedPlay, StopWhen, MAX_PLIES,
};

/// The engine's evaluation entry points: what the service and CLI call.
pub trait PositionEvaluator: Send + Sync {
    /// Evaluates `pos` for its side to move. A finished game (R9) is returned as a
    /// certain outcome, not an error.
    fn evaluate(&self, pos: &Position, opts: EvalOptions) -> Result<Evaluation, EvalError>;
    /// Every legal play of `pos` with `dice`, ranked by Tavli equity (or, with
    /// [`EvalOptions::measure`], by that measure at the root): the plays valued at
    /// the full depth first, best first, then those valued at a lower depth (left
    /// out by the move filter), best first; each with its [`RankedPlay::plies`].
    fn rank_plays(
        &self,
        pos: &Position,
        dice: Dice,
        opts: EvalOptions,
    ) -> Result<Vec<RankedPlay>, EvalError>;
    /// A Monte Carlo rollout of `pos` (with the mover's `dice` if given), reporting
    /// through `on_report` ([`rollout::rollout`]). The default answers
    /// [`EvalError::Unavailable`].
    fn rollout(
        &self,
        pos: &Position,
        dice: Option<Dice>,
        cfg: &rollout::RolloutConfig,
        stop: StopWhen<'_>,
        on_report: &mut dyn FnMut(&rollout::RolloutReport) -> std::ops::ControlFlow<()>,
    ) -> Result<rollout::RolloutReport, EvalError> {
        let _ = (pos, dice, cfg, stop, on_report);
        Err(EvalError::Unavailable(
            "this evaluator does not run rollouts".to_string(),
        ))
    }
    /// The report of a whole rollout from the exact sums of its slices
    /// ([`rollout::merge`]). The default answers [`EvalError::Unavailable`].
    fn rollout_merge(
        &self,
        pos: &Position,
        dice: Option<Dice>,
        cfg: &rollout::RolloutConfig,
        parts: &[rollout::RolloutSums],
    ) -> Result<rollout::RolloutReport, EvalError> {
        let _ = (pos, dice, cfg, parts);
        Err(EvalError::Unavailable(
            "this evaluator does not run rollouts".to_string(),
        ))
    }
}
