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

use crate::rules::movegen::RawPlay;
use crate::rules::{Dice, Position};
pub use types::{
    CancelToken, EndValues, EvalError, EvalOptions, Evaluation, Evaluator, Probabilities,
    RankedPlay, StopWhen, MAX_PLIES,
};

/// A roll's legal plays as the generator gives them, ranked
/// ([`PositionEvaluator::rank_raw_plays`]).
#[derive(Clone, Debug)]
pub struct RawRanking {
    /// Every legal play in generation order (the order of
    /// [`crate::rules::legal_plays`]), each its board after the play (the mover's
    /// view), moves and outcome.
    pub plays: Vec<RawPlay>,
    /// `(index into plays, the mover's probabilities after it, plies searched)`, best
    /// first, the order of [`PositionEvaluator::rank_plays`]: at 1 ply or more the
    /// move filter's candidates first, then the others with their 0-ply values.
    pub ranked: Vec<(usize, Probabilities, u8)>,
    /// Which evaluator answered, as [`Evaluation::evaluator`] (e.g. `net-portes-v2`,
    /// `bearoff-exact`).
    pub evaluator: String,
    /// Plies searched: the depth asked (capped at [`MAX_PLIES`]), 0 for a no-contact
    /// bear-off (exact at any depth, as [`PositionEvaluator::evaluate`] reports it).
    pub plies: u8,
}

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
    /// The same ranking over the plays as the generator gives them
    /// ([`crate::rules::play::legal_raw_plays`]), for callers that convert only the
    /// plays they need (a bot's one play, [`crate::bot`]). Errors: as
    /// [`PositionEvaluator::rank_plays`]. The default ranks with `rank_plays` and
    /// matches each play to its raw play by resulting position; the engine
    /// overrides it without converting any play.
    fn rank_raw_plays(
        &self,
        pos: &Position,
        dice: Dice,
        opts: EvalOptions,
    ) -> Result<RawRanking, EvalError> {
        let plays = crate::rules::play::legal_raw_plays(pos, dice)?;
        let name = self.evaluate(
            pos,
            EvalOptions {
                plies: 0,
                ..opts.clone()
            },
        )?;
        let plies = opts.plies;
        let after: Vec<Position> = plays
            .iter()
            .map(|r| {
                r.board
                    .to_position(pos.variant, pos.turn, pos.turn.opponent())
            })
            .collect();
        let ranked = self
            .rank_plays(pos, dice, opts)?
            .into_iter()
            .map(|r| {
                let i = after
                    .iter()
                    .position(|p| *p == r.play.position)
                    .ok_or_else(|| {
                        EvalError::Unavailable("a ranked play that is not legal".to_string())
                    })?;
                Ok((i, r.probabilities, plies))
            })
            .collect::<Result<_, EvalError>>()?;
        Ok(RawRanking {
            plays,
            ranked,
            evaluator: name.evaluator,
            plies,
        })
    }
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
