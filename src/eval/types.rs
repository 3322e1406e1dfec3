//! The evaluation contract's values: outcome probabilities, the static
//! [`Evaluator`] trait of a board, errors, options with deadline and cancellation,
//! what a ranking compares plays by at the root ([`EndValues`]: cubeless equity by
//! default, or a match's winning chances), and what an evaluation answers. Every evaluator module below `eval` builds on
//! these; [`super::PositionEvaluator`], the engine's entry points, is in `eval`
//! itself.

use crate::rules::board::Board;
use crate::rules::{Play, RulesError, Variant};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Outcome probabilities for the side to move, each in `[0, 1]`.
///
/// Consistent: `win_mars <= win`, `lose_mars <= lose()`, `win + lose() + draw == 1`.
/// A "mars" is any 2-point result: a mars (R7) or a Plakoto mother win (R5.5).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Probabilities {
    /// Probability that the side to move wins (1 or 2 points).
    pub win: f32,
    /// Probability that the side to move wins 2 points.
    pub win_mars: f32,
    /// Probability that the side to move loses 2 points.
    pub lose_mars: f32,
    /// Probability of a draw (Plakoto only, R5.5; 0 elsewhere).
    pub draw: f32,
}

impl Probabilities {
    /// Probability that the side to move loses: `1 - win - draw`.
    pub fn lose(&self) -> f32 {
        (1.0 - self.win - self.draw).max(0.0)
    }

    /// Cubeless Tavli equity in points for the side to move, in `[-2, 2]`:
    /// `win + win_mars - lose - lose_mars` (a mars counts 2, no 3-point games, R7).
    pub fn equity(&self) -> f32 {
        self.win + self.win_mars - self.lose() - self.lose_mars
    }

    /// The same probabilities seen by the other side.
    pub fn flip(&self) -> Probabilities {
        Probabilities {
            win: self.lose(),
            win_mars: self.lose_mars,
            lose_mars: self.win_mars,
            draw: self.draw,
        }
    }
}

/// What each end of the game being played is worth to the mover, on a scale where
/// more is better: in match play, the mover's match winning chance after that end
/// (built by [`crate::matchequity::ScoreAware`] from the match equity table; 1 or 0
/// when the end finishes the match). A play is then worth the sum over the ends of
/// their probability after it times their worth ([`EndValues::value`]), a linear
/// function of its outcome probabilities.
///
/// Used by [`EvalOptions::measure`]: the plays of a ranking are compared by
/// it, and the move filter's threshold (0.16 points) is converted to its units by
/// [`EndValues::per_point`], as GNU Backgammon filters match-play moves by
/// normalised equity ("EMG").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EndValues {
    /// The mover wins 1 point.
    pub win_single: f64,
    /// The mover wins 2 points (a mars, or a Plakoto mother win).
    pub win_mars: f64,
    /// The mover loses 1 point.
    pub lose_single: f64,
    /// The mover loses 2 points.
    pub lose_mars: f64,
    /// A draw (Plakoto only, R5.5).
    pub draw: f64,
}

impl EndValues {
    /// The value of a play (or position) whose outcome probabilities for the mover
    /// are `p`, computed as `win·win_single + win_mars·(self.win_mars −
    /// self.win_single) + lose·lose_single + lose_mars·(self.lose_mars −
    /// self.lose_single) + draw·self.draw`, in `f64` from `p`'s `f32` values, with
    /// `lose = max(0, 1 − win − draw)`. The same sum as over the five ends, written so
    /// that an end worth the same as its single result adds exactly nothing: at
    /// 1-away, where a mars wins the match like a single (R7), the play's `win_mars`
    /// plays no part, bit for bit; and where both singles are worth 1 and 0, the value
    /// is `win + draw·self.draw` exactly.
    pub fn value(&self, p: &Probabilities) -> f64 {
        let (win, wm, lm, draw) = (
            p.win as f64,
            p.win_mars as f64,
            p.lose_mars as f64,
            p.draw as f64,
        );
        let lose = (1.0 - win - draw).max(0.0);
        win * self.win_single
            + wm * (self.win_mars - self.win_single)
            + lose * self.lose_single
            + lm * (self.lose_mars - self.lose_single)
            + draw * self.draw
    }

    /// Units of value per point of equity: half the difference between a single win
    /// and a single loss (GNU Backgammon's `mwc2eq` slope: a single win is +1 point,
    /// a single loss −1). Positive for a match equity table.
    pub fn per_point(&self) -> f64 {
        (self.win_single - self.lose_single) / 2.0
    }

    /// `value` as normalised equity, in points (GNU Backgammon's "EMG",
    /// equivalent-to-money-game, `mwc2eq`): `(2·value − (win_single + lose_single)) /
    /// (win_single − lose_single)`, +1 for a single win and −1 for a single loss. A
    /// difference of values divided by [`EndValues::per_point`] is the same
    /// difference in points.
    pub fn normalized(&self, value: f64) -> f64 {
        (2.0 * value - (self.win_single + self.lose_single)) / (self.win_single - self.lose_single)
    }
}

/// A static evaluator of mover-relative boards whose game is not over.
pub trait Evaluator: Send + Sync {
    /// Probabilities for the side to move of `board` (before it rolls).
    fn eval_board(&self, variant: Variant, board: &Board) -> Probabilities;
    /// [`Evaluator::eval_board`] of each of `boards` into `out` (cleared first), the
    /// same values; an evaluator may share work between the boards (the net's
    /// [`net::Nets::eval_many`]).
    fn eval_boards(&self, variant: Variant, boards: &[Board], out: &mut Vec<Probabilities>) {
        out.clear();
        out.extend(boards.iter().map(|b| self.eval_board(variant, b)));
    }
    /// A short name with version, e.g. `net-portes-v2`, `bearoff-exact`, `pubeval`.
    fn name(&self, variant: Variant) -> String;
}

/// Errors of evaluation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EvalError {
    /// Bad input or a finished game (see [`RulesError`]).
    Rules(RulesError),
    /// The deadline passed before the search finished.
    DeadlineExceeded,
    /// The caller cancelled the work ([`CancelToken::cancel`]: the client went away,
    /// the connection dropped, or the server is shutting down).
    Cancelled,
    /// No evaluator is available for this request (e.g. no trained net yet).
    Unavailable(String),
}

impl From<RulesError> for EvalError {
    fn from(e: RulesError) -> Self {
        EvalError::Rules(e)
    }
}

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EvalError::Rules(e) => e.fmt(f),
            EvalError::DeadlineExceeded => f.write_str("deadline exceeded during evaluation"),
            EvalError::Cancelled => f.write_str("evaluation cancelled"),
            EvalError::Unavailable(s) => write!(f, "evaluation unavailable: {s}"),
        }
    }
}

impl std::error::Error for EvalError {}

/// A shared flag that asks running work (a search, a rollout) to stop.
///
/// Clones share one flag: the service keeps one clone and cancels it when the client
/// cancels, the connection drops or the server shuts down; the work polls
/// [`CancelToken::is_cancelled`] (through [`EvalOptions::check`]) and ends with
/// [`EvalError::Cancelled`]. A [`child`](CancelToken::child) token is cancelled by
/// its own `cancel` or by its parent's (one request under the server's token).
#[derive(Clone, Debug, Default)]
pub struct CancelToken(Arc<TokenInner>);

#[derive(Debug, Default)]
struct TokenInner {
    flag: AtomicBool,
    parent: Option<CancelToken>,
}

impl CancelToken {
    /// A new, not yet cancelled token.
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// A new token that is cancelled when this one is (and by its own
    /// [`cancel`](CancelToken::cancel), which leaves this one alone).
    pub fn child(&self) -> CancelToken {
        CancelToken(Arc::new(TokenInner {
            flag: AtomicBool::new(false),
            parent: Some(self.clone()),
        }))
    }

    /// Asks every holder of a clone (and of a child) to stop.
    pub fn cancel(&self) {
        self.0.flag.store(true, Ordering::Relaxed);
    }

    /// Whether a parent token was cancelled (for a request's token, a child of the
    /// server's: the server is shutting down), not only this one.
    pub fn parent_cancelled(&self) -> bool {
        self.0
            .parent
            .as_ref()
            .is_some_and(CancelToken::is_cancelled)
    }

    /// Whether [`CancelToken::cancel`] was called on any clone or on a parent.
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.0.flag.load(Ordering::Relaxed)
            || self
                .0
                .parent
                .as_ref()
                .is_some_and(CancelToken::is_cancelled)
    }
}

/// When work must stop: a deadline and a cancellation token, both optional.
#[derive(Clone, Copy, Debug, Default)]
pub struct StopWhen<'a> {
    /// Stop with [`EvalError::DeadlineExceeded`] at or after this instant.
    pub deadline: Option<Instant>,
    /// Stop with [`EvalError::Cancelled`] once this is cancelled.
    pub cancel: Option<&'a CancelToken>,
}

impl StopWhen<'_> {
    /// `Err` when the work must stop now: cancellation first, then the deadline.
    #[inline]
    pub fn check(&self) -> Result<(), EvalError> {
        if self.cancel.is_some_and(CancelToken::is_cancelled) {
            return Err(EvalError::Cancelled);
        }
        match self.deadline {
            Some(d) if Instant::now() >= d => Err(EvalError::DeadlineExceeded),
            _ => Ok(()),
        }
    }
}

/// Options of one evaluation request.
#[derive(Clone, Debug, Default)]
pub struct EvalOptions {
    /// Search depth: 0 = static evaluator, n = average over the opponent's 21 rolls of
    /// its best reply at n-1 (capped by [`MAX_PLIES`]).
    pub plies: u8,
    /// Stop with [`EvalError::DeadlineExceeded`] after this instant.
    pub deadline: Option<Instant>,
    /// Stop with [`EvalError::Cancelled`] once this token is cancelled.
    pub cancel: Option<CancelToken>,
    /// What a ranking compares the plays by at the root: `None`, the cubeless equity;
    /// `Some`, this measure of the game's ends (a match's winning chances,
    /// [`crate::matchequity::ScoreAware`]), the move filter's threshold converted by
    /// [`EndValues::per_point`]. The search below the root is cubeless either way;
    /// an evaluation without a ranking ignores it.
    pub measure: Option<EndValues>,
}

impl EvalOptions {
    /// The stop conditions of these options, for the search.
    pub fn stop_when(&self) -> StopWhen<'_> {
        StopWhen {
            deadline: self.deadline,
            cancel: self.cancel.as_ref(),
        }
    }

    /// `Err` when the work must stop now (see [`StopWhen::check`]).
    #[inline]
    pub fn check(&self) -> Result<(), EvalError> {
        self.stop_when().check()
    }
}

/// The deepest search the engine accepts.
pub const MAX_PLIES: u8 = 2;

/// The evaluation of a position for its side to move.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    pub probabilities: Probabilities,
    /// Expected points for the side to move, in `[-2, 2]`.
    pub equity: f32,
    /// Which evaluator answered (e.g. `bearoff-exact`, `net-portes-v2`, `game-over`).
    pub evaluator: String,
    /// Plies searched.
    pub plies: u8,
}

/// A legal play with its evaluation after it, from the mover's view.
///
/// In a ranking ([`super::PositionEvaluator::rank_plays`]) the plays valued at the
/// full depth come first, best first, then the plays the move filter left at a lower
/// depth, best first ([`super::search::Search::rank`]); `plies` says which.
#[derive(Clone, Debug, PartialEq)]
pub struct RankedPlay {
    pub play: Play,
    /// Mover's equity after the play.
    pub equity: f32,
    /// Mover's probabilities after the play.
    pub probabilities: Probabilities,
    /// The depth at which the play was valued: the ranking's depth, or 0 for a play
    /// the move filter did not search deeper (its 0-ply value).
    pub plies: u8,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_tokens_follow_their_parent_only() {
        let server = CancelToken::new();
        let (a, b) = (server.child(), server.child());
        a.cancel();
        assert!(a.is_cancelled() && !b.is_cancelled() && !server.is_cancelled());
        server.cancel();
        assert!(b.is_cancelled());
        let opts = EvalOptions {
            cancel: Some(b),
            ..EvalOptions::default()
        };
        assert_eq!(opts.check(), Err(EvalError::Cancelled));
    }

    #[test]
    fn money_weights_give_the_equity_and_emg_is_affine() {
        // Weights 1, 2, -1, -2, 0 are the cubeless equity (R7), and per point 1.
        let money = EndValues {
            win_single: 1.0,
            win_mars: 2.0,
            lose_single: -1.0,
            lose_mars: -2.0,
            draw: 0.0,
        };
        let p = Probabilities {
            win: 0.625,
            win_mars: 0.125,
            lose_mars: 0.25,
            draw: 0.0,
        };
        assert_eq!(money.value(&p), p.equity() as f64);
        assert_eq!(money.per_point(), 1.0);
        assert_eq!(money.normalized(0.5), 0.5);
        // A match: single win 0.7, single loss 0.3; EMG of 0.7 is +1, of 0.3 is -1.
        let m = EndValues {
            win_single: 0.7,
            win_mars: 0.9,
            lose_single: 0.3,
            lose_mars: 0.1,
            draw: 0.5,
        };
        assert!((m.normalized(0.7) - 1.0).abs() < 1e-15);
        assert!((m.normalized(0.3) + 1.0).abs() < 1e-15);
        assert!((m.per_point() - 0.2).abs() < 1e-15);
    }

    #[test]
    fn an_end_worth_its_single_adds_nothing_bit_for_bit() {
        // 1-away: a mars win is worth the single's 1; the value ignores win_mars.
        let one_away = EndValues {
            win_single: 1.0,
            win_mars: 1.0,
            lose_single: 0.25,
            lose_mars: 0.125,
            draw: 0.5,
        };
        let p = Probabilities {
            win: 0.6,
            win_mars: 0.3,
            lose_mars: 0.1,
            draw: 0.0,
        };
        let q = Probabilities { win_mars: 0.0, ..p };
        assert_eq!(one_away.value(&p).to_bits(), one_away.value(&q).to_bits());
        // Both 1-away: the value is the win chance (plus the draws' share) exactly.
        let dmp = EndValues {
            win_single: 1.0,
            win_mars: 1.0,
            lose_single: 0.0,
            lose_mars: 0.0,
            draw: 0.5,
        };
        assert_eq!(dmp.value(&p), p.win as f64);
        let r = Probabilities { draw: 0.0625, ..p };
        assert_eq!(dmp.value(&r), r.win as f64 + 0.0625 * 0.5);
    }
}
