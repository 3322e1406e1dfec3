//! The public position type in printed numbering (RULES.md R1), its validation (R9),
//! the start positions and the detection of a game that is already over.

use super::types::{Outcome, OutcomeReason, RulesError, Side, Variant};
use std::fmt;

/// Quotes user input in an error message, cut to 40 characters so that an error never
/// echoes a huge input back.
pub(crate) struct Clip<'a>(pub &'a str);

impl fmt::Debug for Clip<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.char_indices().nth(40) {
            Some((cut, _)) => write!(f, "{:?}…", &self.0[..cut]),
            None => write!(f, "{:?}", self.0),
        }
    }
}

/// One of the 24 points: how many checkers of each colour stand on it and, in Plakoto
/// only, which colour has one checker pinned at the bottom (R5.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Point {
    /// White checkers on the point (a pinned White checker included).
    pub white: u8,
    /// Black checkers on the point (a pinned Black checker included).
    pub black: u8,
    /// The colour of the single checker pinned under the other colour (Plakoto only).
    pub pinned: Option<Side>,
}

impl Point {
    /// Checkers of `side` on this point.
    pub fn count(&self, side: Side) -> u8 {
        match side {
            Side::White => self.white,
            Side::Black => self.black,
        }
    }

    pub(crate) fn count_mut(&mut self, side: Side) -> &mut u8 {
        match side {
            Side::White => &mut self.white,
            Side::Black => &mut self.black,
        }
    }
}

/// A Tavli position in printed numbering (R1).
///
/// `points[i]` is printed point `i + 1`. `bar` and `off` are indexed by
/// [`Side::index`] (0 = White, 1 = Black). Use [`Position::validate`] (R9) before
/// trusting a position built by hand; every function of the rules core validates its
/// input and returns [`RulesError`] rather than panicking.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Position {
    /// Which game is played.
    pub variant: Variant,
    /// The side to move (on roll).
    pub turn: Side,
    /// Printed points 1..=24 at indices 0..=23.
    pub points: [Point; 24],
    /// Checkers on the bar per side (Portes only, R4).
    pub bar: [u8; 2],
    /// Checkers borne off per side (R6).
    pub off: [u8; 2],
}

/// Number of checkers per side (R1).
pub const CHECKERS: u8 = 15;

impl Position {
    /// An empty board (no checkers anywhere): a starting point for building positions.
    /// It does not validate until 15 checkers per side are placed.
    pub fn empty(variant: Variant, turn: Side) -> Position {
        Position {
            variant,
            turn,
            points: [Point::default(); 24],
            bar: [0; 2],
            off: [0; 2],
        }
    }

    /// The start position of a variant (R1), with `turn` to move.
    pub fn start(variant: Variant, turn: Side) -> Position {
        let mut p = Position::empty(variant, turn);
        match variant {
            Variant::Portes => {
                for (pt, n) in [(24, 2), (13, 5), (8, 3), (6, 5)] {
                    p.point_mut(pt).white = n;
                }
                for (pt, n) in [(1, 2), (12, 5), (17, 3), (19, 5)] {
                    p.point_mut(pt).black = n;
                }
            }
            Variant::Plakoto => {
                p.point_mut(24).white = 15;
                p.point_mut(1).black = 15;
            }
            Variant::Fevga => {
                p.point_mut(24).white = 15;
                p.point_mut(12).black = 15;
            }
        }
        p
    }

    /// The point with printed number `n` (1..=24). Panics on other numbers: use
    /// `points[n - 1]` with your own check for untrusted input.
    pub fn point(&self, n: u8) -> &Point {
        &self.points[n as usize - 1]
    }

    /// Mutable access to printed point `n` (1..=24).
    pub fn point_mut(&mut self, n: u8) -> &mut Point {
        &mut self.points[n as usize - 1]
    }

    /// Adds `count` checkers of `side` on printed point `n` (test and builder helper).
    pub fn add(&mut self, side: Side, n: u8, count: u8) -> &mut Self {
        *self.point_mut(n).count_mut(side) += count;
        self
    }

    /// Checkers of `side` on the board, the bar and off.
    pub fn total(&self, side: Side) -> u32 {
        let on_points: u32 = self.points.iter().map(|p| p.count(side) as u32).sum();
        on_points + self.bar[side.index()] as u32 + self.off[side.index()] as u32
    }

    /// Own-numbered point (1..=24) of printed point `printed` for `side` (R1).
    pub fn own_point(variant: Variant, side: Side, printed: u8) -> u8 {
        match (variant, side) {
            (_, Side::White) => printed,
            (Variant::Fevga, Side::Black) => (printed + 11) % 24 + 1,
            (_, Side::Black) => 25 - printed,
        }
    }

    /// Printed point of own point `own` (1..=24) for `side` (R1):
    /// White `printed = own`; Black in Portes/Plakoto `25 - own`; Black in Fevga
    /// `((own + 11) mod 24) + 1`.
    pub fn printed_point(variant: Variant, side: Side, own: u8) -> u8 {
        // The Fevga map is its own inverse (a shift by 12), as is 25 - x.
        Position::own_point(variant, side, own)
    }

    /// Pip count of `side`: the sum over its checkers of the own-numbered distance to
    /// bearing off (a bar checker counts 25, R1).
    pub fn pip_count(&self, side: Side) -> u32 {
        let mut pips = self.bar[side.index()] as u32 * 25;
        for printed in 1..=24u8 {
            let own = Position::own_point(self.variant, side, printed) as u32;
            pips += own * self.point(printed).count(side) as u32;
        }
        pips
    }

    /// Checks the position against R9: 15 checkers per side, no shared point except a
    /// Plakoto pin (exactly one checker of the pinned colour under 1+ of the other),
    /// no pins outside Plakoto, no bar checkers outside Portes.
    ///
    /// Errors are [`RulesError::Invalid`] whose field is `points[i]` (0-based index,
    /// printed point `i + 1`), `bar.white`, `bar.black`, `white`, `black` or `off`
    /// (both sides with 15 off).
    pub fn validate(&self) -> Result<(), RulesError> {
        for (i, pt) in self.points.iter().enumerate() {
            let field = || format!("points[{i}]");
            let n = i + 1;
            match pt.pinned {
                Some(pinned) => {
                    if self.variant != Variant::Plakoto {
                        return Err(RulesError::invalid(
                            field(),
                            format!(
                                "point {n}: pins exist only in Plakoto, not in {}",
                                self.variant
                            ),
                        ));
                    }
                    let (under, over) = (pt.count(pinned), pt.count(pinned.opponent()));
                    if under != 1 || over == 0 {
                        return Err(RulesError::invalid(
                            field(),
                            format!(
                                "point {n}: a pinned {pinned} checker needs exactly 1 {pinned} \
                                 under at least 1 {}, found {under} {pinned} and {over} {}",
                                pinned.opponent(),
                                pinned.opponent()
                            ),
                        ));
                    }
                }
                None => {
                    if pt.white > 0 && pt.black > 0 {
                        return Err(RulesError::invalid(
                            field(),
                            format!("point {n}: both colours on a point without a pin"),
                        ));
                    }
                }
            }
        }
        if self.off == [CHECKERS, CHECKERS] {
            return Err(RulesError::invalid(
                "off",
                "both sides have borne off all 15: only one side can finish a game",
            ));
        }
        for side in [Side::White, Side::Black] {
            if self.bar[side.index()] > 0 && self.variant != Variant::Portes {
                return Err(RulesError::invalid(
                    format!("bar.{side}"),
                    format!("bar checkers exist only in Portes, not in {}", self.variant),
                ));
            }
            let total = self.total(side);
            if total != CHECKERS as u32 {
                return Err(RulesError::invalid(
                    side.name(),
                    format!("{side} has {total} checkers (on points, bar and off), expected 15"),
                ));
            }
        }
        Ok(())
    }

    /// The outcome if the game is already over in this position (R9): a side has 15
    /// off; both mothers pinned (Plakoto draw); or a mother pinned while the pinner
    /// has no checker on its own start point (R5.5). `None` while the game goes on.
    /// Assumes a position that passed [`Position::validate`].
    pub fn game_over(&self) -> Option<Outcome> {
        for side in [Side::White, Side::Black] {
            if self.off[side.index()] >= CHECKERS {
                let loser_off = self.off[side.opponent().index()];
                return Some(Outcome {
                    winner: Some(side),
                    points: if loser_off == 0 { 2 } else { 1 },
                    reason: if loser_off == 0 {
                        OutcomeReason::Mars
                    } else {
                        OutcomeReason::BoreOff
                    },
                });
            }
        }
        if self.variant == Variant::Plakoto {
            let white_start = self.point(24);
            let black_start = self.point(1);
            let white_mother_pinned = white_start.pinned == Some(Side::White);
            let black_mother_pinned = black_start.pinned == Some(Side::Black);
            if white_mother_pinned && black_mother_pinned {
                return Some(Outcome {
                    winner: None,
                    points: 0,
                    reason: OutcomeReason::BothMothersPinned,
                });
            }
            if black_mother_pinned && white_start.white == 0 {
                return Some(mother_win(Side::White));
            }
            if white_mother_pinned && black_start.black == 0 {
                return Some(mother_win(Side::Black));
            }
        }
        None
    }

    /// [`Position::validate`], then [`RulesError::GameOver`] if the game is over.
    pub fn validate_playable(&self) -> Result<(), RulesError> {
        self.validate()?;
        match self.game_over() {
            Some(o) => Err(RulesError::GameOver(o)),
            None => Ok(()),
        }
    }
}

pub(crate) fn mother_win(winner: Side) -> Outcome {
    Outcome {
        winner: Some(winner),
        points: 2,
        reason: OutcomeReason::MotherPinned,
    }
}
