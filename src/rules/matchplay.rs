//! Who starts and the Tavli match (RULES.md R2).

use super::types::{check_dice, RulesError};
use super::types::{Outcome, Side, Variant};

/// The result of an opening roll: one die each (R2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpeningRoll {
    /// The side with the higher die starts, rolling two fresh dice.
    Starts(Side),
    /// Equal dice: roll again.
    RollAgain,
}

/// R2: the higher die starts; equal dice roll again. Errors name `white_die` or
/// `black_die` when outside 1..6.
pub fn resolve_opening_roll(white_die: u8, black_die: u8) -> Result<OpeningRoll, RulesError> {
    check_dice([("white_die", white_die), ("black_die", black_die)])?;
    Ok(match white_die.cmp(&black_die) {
        std::cmp::Ordering::Greater => OpeningRoll::Starts(Side::White),
        std::cmp::Ordering::Less => OpeningRoll::Starts(Side::Black),
        std::cmp::Ordering::Equal => OpeningRoll::RollAgain,
    })
}

/// The state of a Tavli match between games (R2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatchState {
    /// Points needed to win the match (any positive number; 3, 5, 7 usual).
    pub length: u32,
    /// Points per side, indexed by [`Side::index`].
    pub score: [u32; 2],
    /// The variant of the next game (Portes → Plakoto → Fevga → Portes ...).
    pub variant: Variant,
    /// Who starts the next game; `None` when an opening roll is needed (new match or
    /// after a draw).
    pub starter: Option<Side>,
    /// Games finished so far.
    pub games_played: u32,
    /// Set when the match is over.
    pub winner: Option<Side>,
}

impl MatchState {
    /// A new match of `length` points starting with Portes. Errors (field `length`)
    /// when `length` is 0.
    pub fn new(length: u32) -> Result<MatchState, RulesError> {
        if length == 0 {
            return Err(RulesError::invalid(
                "length",
                "match length must be at least 1",
            ));
        }
        Ok(MatchState {
            length,
            score: [0, 0],
            variant: Variant::Portes,
            starter: None,
            games_played: 0,
            winner: None,
        })
    }

    /// The state after the current game ended with `outcome` (R2): points added, the
    /// next variant in the cycle, the winner starts the next game (an opening roll
    /// after a draw), the match over when a side reaches the length. A resignation
    /// or a time-out is a win like any other: its points count and its winner starts
    /// the next game. Errors (field `match`) when the match is already over,
    /// `match.winner` for a winner short of the length, or (fields `outcome.*`) when
    /// the outcome cannot end a game of the variant played: points other than 1 for a
    /// single win, 2 for a mars or mother win, 0 for a draw, 1 or 2 for a resignation
    /// or a time-out (R7: no 3-point games; the time-out rule's 1 or 2 depends on the
    /// board, which this state does not hold); a resignation or time-out without a
    /// winner; mother results outside Plakoto.
    pub fn advance(&self, outcome: &Outcome) -> Result<MatchState, RulesError> {
        if self.length == 0 {
            return Err(RulesError::invalid(
                "match.length",
                "match length must be at least 1",
            ));
        }
        if let Some(w) = self.winner {
            if self.score[w.index()] < self.length {
                return Err(RulesError::invalid(
                    "match.winner",
                    format!(
                        "{w} is given as the match's winner with {} of {} points",
                        self.score[w.index()],
                        self.length
                    ),
                ));
            }
        }
        if self.winner.is_some() || self.score.iter().any(|&s| s >= self.length) {
            return Err(RulesError::invalid("match", "the match is already over"));
        }

        use super::types::OutcomeReason::*;
        let allowed: &[u8] = match (outcome.reason, outcome.winner) {
            (BoreOff, Some(_)) => &[1],
            (Mars | MotherPinned, Some(_)) => &[2],
            (Resignation | TimeOut, Some(_)) => &[1, 2],
            (BothMothersPinned, None) => &[0],
            _ => {
                return Err(RulesError::invalid(
                    "outcome.winner",
                    format!(
                        "a {} result {} a winner",
                        outcome.reason.name(),
                        if outcome.winner.is_some() {
                            "has no"
                        } else {
                            "needs"
                        }
                    ),
                ))
            }
        };
        if !allowed.contains(&outcome.points) {
            let scores = match allowed {
                [p] => p.to_string(),
                _ => "1 or 2".to_string(),
            };
            return Err(RulesError::invalid(
                "outcome.points",
                format!(
                    "a {} result scores {scores}, not {} (R5.5, R7)",
                    outcome.reason.name(),
                    outcome.points
                ),
            ));
        }
        if matches!(outcome.reason, MotherPinned | BothMothersPinned)
            && self.variant != Variant::Plakoto
        {
            return Err(RulesError::invalid(
                "outcome.reason",
                format!(
                    "{} ends only Plakoto games (R5.5), and the game played was {}",
                    outcome.reason.name(),
                    self.variant
                ),
            ));
        }
        let mut next = *self;
        next.games_played = self.games_played.saturating_add(1);
        next.variant = self.variant.next_in_match();
        next.starter = outcome.winner;
        if let Some(w) = outcome.winner {
            next.score[w.index()] = next.score[w.index()].saturating_add(outcome.points as u32);
            if next.score[w.index()] >= self.length {
                next.winner = Some(w);
            }
        }
        Ok(next)
    }
}
