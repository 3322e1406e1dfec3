//! The internal, mover-relative board used by move generation and evaluation.
//!
//! As in GNU Backgammon and wildbg, the side to move ("mover") always sees the board
//! in its **own numbering** (RULES.md R1): own 24 is its start, own 1..6 its home,
//! index 0 its borne-off checkers and index 25 its bar. The opponent's checkers are
//! stored at the same indices (the mover's numbering). After a play the board is
//! [mirrored](Board::mirror) so that the other side becomes the mover, which keeps
//! every rule written once for both colours.

use super::position::{Point, Position, CHECKERS};
use super::types::{OutcomeReason, Side, Variant};

/// Index of borne-off checkers in [`Board::own`] and [`Board::opp`].
pub const OFF: usize = 0;
/// Index of the bar in [`Board::own`] and [`Board::opp`] (Portes only).
pub const BAR: usize = 25;

/// A position seen by the side to move, without the variant (passed separately).
///
/// Shapes: `own[i]`, `opp[i]` are free (unpinned) checker counts at own index `i`
/// of the mover (0 = off, 1..=24 = points, 25 = bar). Pinned checkers (Plakoto) are
/// not counted in `own`/`opp`: bit `i` of `own_pinned` says a mover checker is pinned
/// under the opponent at own point `i`, bit `i` of `opp_pinned` says an opponent
/// checker is pinned under the mover's checkers at own point `i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Board {
    /// The mover's free checkers by own index.
    pub own: [u8; 26],
    /// The opponent's free checkers at the mover's own indices (0 = opponent's off,
    /// 25 = opponent's bar).
    pub opp: [u8; 26],
    /// Bit `i`: a mover checker pinned at own point `i` (Plakoto).
    pub own_pinned: u32,
    /// Bit `i`: an opponent checker pinned at own point `i` (Plakoto).
    pub opp_pinned: u32,
}

/// How the mover's play ended the game, from the mover's view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RelOutcome {
    /// The mover wins `points` (1 or 2).
    Win { points: u8, reason: OutcomeReason },
    /// Both mothers pinned: draw (R5.5).
    Draw,
}

impl RelOutcome {
    /// The absolute outcome when `mover` made the play.
    pub fn to_outcome(self, mover: Side) -> super::Outcome {
        match self {
            RelOutcome::Win { points, reason } => super::Outcome {
                winner: Some(mover),
                points,
                reason,
            },
            RelOutcome::Draw => super::Outcome {
                winner: None,
                points: 0,
                reason: OutcomeReason::BothMothersPinned,
            },
        }
    }
}

/// Maps a point index 1..=24 of one side's numbering to the other side's numbering:
/// `25 - i` in Portes and Plakoto, a shift by 12 in Fevga (R1).
#[inline]
pub fn flip_index(variant: Variant, i: usize) -> usize {
    match variant {
        Variant::Fevga => (i + 11) % 24 + 1,
        _ => 25 - i,
    }
}

impl Board {
    /// No checkers anywhere: the start of a board built by hand.
    pub const EMPTY: Board = Board {
        own: [0; 26],
        opp: [0; 26],
        own_pinned: 0,
        opp_pinned: 0,
    };

    /// The board of `pos` seen by `mover`.
    pub fn from_position(pos: &Position, mover: Side) -> Board {
        let opponent = mover.opponent();
        let mut b = Board::EMPTY;
        for printed in 1..=24u8 {
            let pt = pos.point(printed);
            let i = Position::own_point(pos.variant, mover, printed) as usize;
            let (mut own, mut opp) = (pt.count(mover), pt.count(opponent));
            if pt.pinned == Some(mover) {
                own -= 1;
                b.own_pinned |= 1 << i;
            } else if pt.pinned == Some(opponent) {
                opp -= 1;
                b.opp_pinned |= 1 << i;
            }
            b.own[i] = own;
            b.opp[i] = opp;
        }
        b.own[BAR] = pos.bar[mover.index()];
        b.own[OFF] = pos.off[mover.index()];
        b.opp[BAR] = pos.bar[opponent.index()];
        b.opp[OFF] = pos.off[opponent.index()];
        b
    }

    /// The public position for this board when `mover` is the side it belongs to,
    /// with `turn` to move next.
    pub fn to_position(&self, variant: Variant, mover: Side, turn: Side) -> Position {
        let opponent = mover.opponent();
        let mut pos = Position::empty(variant, turn);
        for i in 1..=24usize {
            let printed = Position::printed_point(variant, mover, i as u8);
            let mut pt = Point::default();
            let own_pin = self.own_pinned >> i & 1 == 1;
            let opp_pin = self.opp_pinned >> i & 1 == 1;
            let (own, opp) = (self.own_at(i), self.opp_at(i));
            match mover {
                Side::White => (pt.white, pt.black) = (own, opp),
                Side::Black => (pt.white, pt.black) = (opp, own),
            }
            if own_pin {
                pt.pinned = Some(mover);
            } else if opp_pin {
                pt.pinned = Some(opponent);
            }
            *pos.point_mut(printed) = pt;
        }
        pos.bar[mover.index()] = self.own[BAR];
        pos.off[mover.index()] = self.own[OFF];
        pos.bar[opponent.index()] = self.opp[BAR];
        pos.off[opponent.index()] = self.opp[OFF];
        pos
    }

    /// The same board seen by the opponent ("sides switched").
    pub fn mirror(&self, variant: Variant) -> Board {
        let mut m = Board::EMPTY;
        for i in 1..=24usize {
            let j = flip_index(variant, i);
            m.own[i] = self.opp[j];
            m.opp[i] = self.own[j];
            m.own_pinned |= (self.opp_pinned >> j & 1) << i;
            m.opp_pinned |= (self.own_pinned >> j & 1) << i;
        }
        m.own[BAR] = self.opp[BAR];
        m.own[OFF] = self.opp[OFF];
        m.opp[BAR] = self.own[BAR];
        m.opp[OFF] = self.own[OFF];
        m
    }

    /// Mover's checkers at own point `i` (1..=24), a pinned one included. Saturates
    /// at 255 on a board built by hand with 255 free checkers and a pin (never a
    /// valid position, but never a panic either).
    #[inline]
    pub fn own_at(&self, i: usize) -> u8 {
        self.own[i].saturating_add((self.own_pinned >> i & 1) as u8)
    }

    /// Opponent's checkers at the mover's own point `i` (1..=24), a pinned one
    /// included. Saturates at 255 like [`Board::own_at`].
    #[inline]
    pub fn opp_at(&self, i: usize) -> u8 {
        self.opp[i].saturating_add((self.opp_pinned >> i & 1) as u8)
    }

    /// The game result if the game is over with the **mover** to play (R9): the
    /// opponent has borne off 15, or (Plakoto) a mother is pinned as in R5.5.
    /// From the mover's view: a win here is a win of the opponent.
    pub fn game_over_for_mover(&self, variant: Variant) -> Option<(bool, RelOutcome)> {
        if self.own[OFF] >= CHECKERS {
            return Some((true, bear_off_win(self.opp[OFF])));
        }
        if self.opp[OFF] >= CHECKERS {
            return Some((false, bear_off_win(self.own[OFF])));
        }
        if variant == Variant::Plakoto {
            if let Some(r) = self.mother_result() {
                return Some((true, r));
            }
            if let Some(r) = self.mirror(variant).mother_result() {
                return Some((false, r));
            }
        }
        None
    }

    /// R5.5 from the mover's side: `Draw` when both mothers are pinned; a 2-point win
    /// when the opponent's mother (own index 1) is pinned and the mover has no checker
    /// on its own start (own 24).
    #[inline]
    pub fn mother_result(&self) -> Option<RelOutcome> {
        if self.opp_pinned & (1 << 1) == 0 {
            return None;
        }
        if self.own_pinned & (1 << 24) != 0 {
            Some(RelOutcome::Draw)
        } else if self.own[24] == 0 {
            Some(RelOutcome::Win {
                points: 2,
                reason: OutcomeReason::MotherPinned,
            })
        } else {
            None
        }
    }
}

/// The mover has borne off 15: 2 points (mars) if the loser has none off, else 1 (R7).
#[inline]
pub fn bear_off_win(loser_off: u8) -> RelOutcome {
    if loser_off == 0 {
        RelOutcome::Win {
            points: 2,
            reason: OutcomeReason::Mars,
        }
    } else {
        RelOutcome::Win {
            points: 1,
            reason: OutcomeReason::BoreOff,
        }
    }
}
