//! The internal, mover-relative board used by move generation and evaluation.
//!
//! As in GNU Backgammon and wildbg, the side to move ("mover") always sees the board
//! in its **own numbering** (RULES.md R1): own 24 is its start, own 1..6 its home,
//! index 0 its borne-off checkers and index 25 its bar. The opponent's checkers are
//! stored at the same indices (the mover's numbering). After a play the board is
//! [mirrored](Board::mirror) so that the other side becomes the mover, which keeps
//! every rule written once for both colours.

use super::position::{Position, CHECKERS};
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

/// Bits 1..=24 of a pin mask moved as [`flip_index`] moves the points (bit `i` to
/// bit `flip_index(variant, i)`); the other bits are dropped. Portes and Plakoto
/// reverse the points: `reverse_bits` takes bit `i` to `31 - i`, and 6 to the right
/// makes it `25 - i`. Fevga swaps the halves 1..=12 and 13..=24.
#[inline]
fn flip_bits(variant: Variant, pins: u32) -> u32 {
    const POINTS: u32 = 0x01ff_fffe; // bits 1..=24
    const LOW: u32 = 0x1ffe; // bits 1..=12
    match variant {
        Variant::Fevga => (pins & LOW) << 12 | (pins >> 12) & LOW,
        _ => (pins.reverse_bits() >> 6) & POINTS,
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
        // Printed point `k + 1` is the mover's own index `own(k)`
        // (`Position::own_point`): one loop per case, with the colours chosen once.
        fn fill(b: &mut Board, pos: &Position, white_moves: bool, own: impl Fn(usize) -> usize) {
            for (k, pt) in pos.points.iter().enumerate() {
                let i = own(k);
                let (mine, theirs) = if white_moves {
                    (pt.white, pt.black)
                } else {
                    (pt.black, pt.white)
                };
                b.own[i] = mine;
                b.opp[i] = theirs;
            }
        }
        let white_moves = mover == Side::White;
        match (pos.variant, mover) {
            (_, Side::White) => fill(&mut b, pos, white_moves, |k| k + 1),
            (Variant::Fevga, Side::Black) => fill(&mut b, pos, white_moves, |k| (k + 12) % 24 + 1),
            (_, Side::Black) => fill(&mut b, pos, white_moves, |k| 24 - k),
        }
        // A pinned checker (Plakoto) is not counted free; its point is marked.
        for (k, pt) in pos.points.iter().enumerate() {
            if let Some(side) = pt.pinned {
                let i = Position::own_point(pos.variant, mover, k as u8 + 1) as usize;
                if side == mover {
                    b.own[i] -= 1;
                    b.own_pinned |= 1 << i;
                } else if side == opponent {
                    b.opp[i] -= 1;
                    b.opp_pinned |= 1 << i;
                }
            }
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
        // White's and Black's counts, by own index of the mover.
        let (white, black) = match mover {
            Side::White => (&self.own, &self.opp),
            Side::Black => (&self.opp, &self.own),
        };
        // Printed point `k + 1` holds the mover's own index `own(k)`
        // (`Position::own_point`); a loop over the 24 points in printed order (an
        // exclusive range: no bounds checks, no inclusive-range bookkeeping).
        fn fill(
            pos: &mut Position,
            white: &[u8; 26],
            black: &[u8; 26],
            own: impl Fn(usize) -> usize,
        ) {
            for (k, pt) in pos.points.iter_mut().enumerate() {
                let i = own(k);
                pt.white = white[i];
                pt.black = black[i];
            }
        }
        match (variant, mover) {
            (_, Side::White) => fill(&mut pos, white, black, |k| k + 1),
            (Variant::Fevga, Side::Black) => fill(&mut pos, white, black, |k| (k + 12) % 24 + 1),
            (_, Side::Black) => fill(&mut pos, white, black, |k| 24 - k),
        }
        // Pinned checkers (Plakoto) are counted on their point and marked.
        for (pins, side) in [(self.own_pinned, mover), (self.opp_pinned, opponent)] {
            let mut m = pins & 0x01ff_fffe;
            while m != 0 {
                let i = m.trailing_zeros() as u8;
                m &= m - 1;
                let pt = pos.point_mut(Position::printed_point(variant, mover, i));
                let n = pt.count_mut(side);
                *n = n.saturating_add(1); // as `own_at`/`opp_at`
                pt.pinned = Some(side);
            }
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
        match variant {
            // Own point i is the other side's point i ± 12 (R1).
            Variant::Fevga => {
                m.own[1..=12].copy_from_slice(&self.opp[13..=24]);
                m.own[13..=24].copy_from_slice(&self.opp[1..=12]);
                m.opp[1..=12].copy_from_slice(&self.own[13..=24]);
                m.opp[13..=24].copy_from_slice(&self.own[1..=12]);
            }
            // Own point i is the other side's point 25 - i: points 1..=24 reversed, as
            // three words of eight counts, each byte-swapped, in reverse order.
            _ => {
                reverse_points(&mut m.own, &self.opp);
                reverse_points(&mut m.opp, &self.own);
            }
        }
        m.own_pinned = flip_bits(variant, self.opp_pinned);
        m.opp_pinned = flip_bits(variant, self.own_pinned);
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

/// `to[i] = from[25 - i]` for the points `i` in 1..=24 (the rest of `to` unchanged).
#[inline(always)]
fn reverse_points(to: &mut [u8; 26], from: &[u8; 26]) {
    let word = |k: usize| u64::from_le_bytes(from[k..k + 8].try_into().expect("8 counts"));
    let (a, b, c) = (word(1), word(9), word(17));
    to[1..9].copy_from_slice(&c.swap_bytes().to_le_bytes());
    to[9..17].copy_from_slice(&b.swap_bytes().to_le_bytes());
    to[17..25].copy_from_slice(&a.swap_bytes().to_le_bytes());
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

/// Bit `i` (0..=25) set when `counts[i] < LIMIT`, `LIMIT` being 1 (no checker) or 2
/// (at most one), for the counts of one side (at most 15): one compare of 16 counts
/// at a time.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn below_mask<const LIMIT: i8>(counts: &[u8; 26]) -> u32 {
    const { assert!(LIMIT == 1 || LIMIT == 2) };
    // SAFETY: SSE2 is part of every x86_64 target, so the function's target feature
    // is always available.
    unsafe { sse2_below_mask::<LIMIT>(counts) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
#[inline]
fn sse2_below_mask<const LIMIT: i8>(counts: &[u8; 26]) -> u32 {
    use std::arch::x86_64::*;
    let word = |k: usize| i64::from_le_bytes(counts[k..k + 8].try_into().expect("8 counts"));
    let lo = _mm_set_epi64x(word(8), word(0));
    let hi = _mm_set_epi64x(word(18), word(10));
    let limit = _mm_set1_epi8(LIMIT);
    // Counts are at most 15: a signed compare is exact.
    let a = _mm_movemask_epi8(_mm_cmplt_epi8(lo, limit)) as u32;
    let b = _mm_movemask_epi8(_mm_cmplt_epi8(hi, limit)) as u32;
    a | b << 10
}

/// Portable [`below_mask`]: eight counts at a time in a word (SWAR).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub fn below_mask<const LIMIT: i8>(counts: &[u8; 26]) -> u32 {
    const { assert!(LIMIT == 1 || LIMIT == 2) };
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const GATHER: u64 = 0x0102_0408_1020_4080;
    let mut mask = 0u32;
    for w in 0..4 {
        let mut b = [0u8; 8];
        let n = (26 - 8 * w).min(8);
        b[..n].copy_from_slice(&counts[8 * w..8 * w + n]);
        let mut x = u64::from_le_bytes(b);
        if LIMIT == 2 {
            x &= !0x0101_0101_0101_0101;
        }
        // High bit of each byte set when the byte is non-zero (count >= LIMIT).
        let hi = ((x & LOW7).wrapping_add(LOW7) | x) & !LOW7;
        // Gather the eight high bits into one byte (bit k = byte k).
        mask |= (((hi >> 7).wrapping_mul(GATHER) >> 56) as u32) << (8 * w);
    }
    !mask & 0x03ff_ffff
}

/// Bit `i` (0..=25) set when `a[i] != b[i]`: where two boards' counts of one side
/// differ, one compare of 16 counts at a time.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn differing_mask(a: &[u8; 26], b: &[u8; 26]) -> u32 {
    // SAFETY: SSE2 is part of every x86_64 target, so the function's target feature
    // is always available.
    unsafe { sse2_differing_mask(a, b) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
#[inline]
fn sse2_differing_mask(a: &[u8; 26], b: &[u8; 26]) -> u32 {
    use std::arch::x86_64::*;
    // Counts 0..=15 and 10..=25 of each, one unaligned load each.
    let halves = |c: &[u8; 26]| {
        let sixteen = |k: usize| {
            let bytes: &[u8; 16] = c[k..k + 16].try_into().expect("16 counts");
            // SAFETY: an unaligned load of the 16 bytes of `bytes`.
            unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) }
        };
        (sixteen(0), sixteen(10))
    };
    let ((a_lo, a_hi), (b_lo, b_hi)) = (halves(a), halves(b));
    let lo = _mm_movemask_epi8(_mm_cmpeq_epi8(a_lo, b_lo)) as u32;
    let hi = _mm_movemask_epi8(_mm_cmpeq_epi8(a_hi, b_hi)) as u32;
    // Equal counts: 0..=9 from `lo`, 16..=25 from `hi`, 10..=15 from both alike.
    !(lo | hi << 10) & 0x03ff_ffff
}

/// Bit `i` (0..=25) set when `a[i] != b[i]` (see the x86_64 [`differing_mask`]).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub fn differing_mask(a: &[u8; 26], b: &[u8; 26]) -> u32 {
    differing_mask_swar(a, b)
}

/// Portable [`differing_mask`]: eight counts at a time in a word (SWAR); the form
/// targets without SSE2 use (tested everywhere).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline(always)]
fn differing_mask_swar(a: &[u8; 26], b: &[u8; 26]) -> u32 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const GATHER: u64 = 0x0102_0408_1020_4080;
    let word = |c: &[u8; 26], w: usize| {
        let mut b = [0u8; 8];
        let n = (26 - 8 * w).min(8);
        b[..n].copy_from_slice(&c[8 * w..8 * w + n]);
        u64::from_le_bytes(b)
    };
    let mut mask = 0u32;
    for w in 0..4 {
        let x = word(a, w) ^ word(b, w);
        // High bit of each byte set when the byte is non-zero (the counts differ).
        let hi = ((x & LOW7).wrapping_add(LOW7) | x) & !LOW7;
        mask |= (((hi >> 7).wrapping_mul(GATHER) >> 56) as u32) << (8 * w);
    }
    mask
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pin_masks_flip_as_the_points_do() {
        // The point-by-point rule the bit operations replace, on every single bit and
        // on mixed masks (bits 0 and 25..31 are no points: dropped).
        let by_points = |v: Variant, pins: u32| {
            (1..=24usize).fold(0u32, |m, i| m | (pins >> flip_index(v, i) & 1) << i)
        };
        let mut masks: Vec<u32> = (0..32).map(|b| 1u32 << b).collect();
        masks.extend([
            0,
            u32::MAX,
            0x0123_4567,
            0x89ab_cdef,
            0x0100_0002,
            0x0000_1000,
        ]);
        for v in Variant::ALL {
            for &m in &masks {
                assert_eq!(flip_bits(v, m), by_points(v, m), "{v} {m:#x}");
            }
        }
    }
    use crate::corpus::random_positions;

    /// The definition of [`Board::mirror`]: own point `i` is the other side's
    /// `flip_index(variant, i)` (R1), pins included.
    fn mirror_by_definition(b: &Board, variant: Variant) -> Board {
        let mut m = Board::EMPTY;
        for i in 1..=24usize {
            let j = flip_index(variant, i);
            m.own[i] = b.opp[j];
            m.opp[i] = b.own[j];
            m.own_pinned |= (b.opp_pinned >> j & 1) << i;
            m.opp_pinned |= (b.own_pinned >> j & 1) << i;
        }
        m.own[BAR] = b.opp[BAR];
        m.own[OFF] = b.opp[OFF];
        m.opp[BAR] = b.own[BAR];
        m.opp[OFF] = b.own[OFF];
        m
    }

    #[test]
    fn mirror_and_to_position_over_random_play() {
        let mut pinned = 0;
        for variant in Variant::ALL {
            for pos in random_positions(variant, 9, 400) {
                for mover in [Side::White, Side::Black] {
                    let b = Board::from_position(&pos, mover);
                    let m = b.mirror(variant);
                    assert_eq!(m, mirror_by_definition(&b, variant), "{variant}");
                    assert_eq!(m.mirror(variant), b);
                    // The other side's view of the same position (R1).
                    assert_eq!(m, Board::from_position(&pos, mover.opponent()));
                    assert_eq!(b.to_position(variant, mover, pos.turn), pos);
                    pinned += (b.own_pinned | b.opp_pinned != 0) as usize;
                }
            }
        }
        assert!(pinned > 100, "Plakoto pins covered: {pinned}");
    }

    #[test]
    fn below_mask_marks_small_counts() {
        let mut c = [0u8; 26];
        c[0] = 1;
        c[5] = 2;
        c[13] = 15;
        c[24] = 1;
        c[25] = 3;
        let empty = below_mask::<1>(&c);
        let at_most_one = below_mask::<2>(&c);
        for (i, &n) in c.iter().enumerate() {
            assert_eq!(empty >> i & 1 == 1, n == 0, "{i}");
            assert_eq!(at_most_one >> i & 1 == 1, n < 2, "{i}");
        }
        assert_eq!(empty >> 26, 0);
    }

    /// Every place and every pair of small counts, with the other places equal or all
    /// different.
    #[test]
    fn differing_mask_marks_exactly_the_differing_counts() {
        for i in 0..26 {
            for (x, y) in [(0, 0), (0, 1), (1, 0), (3, 3), (15, 14), (2, 255)] {
                let (mut a, mut b) = ([5u8; 26], [5u8; 26]);
                a[i] = x;
                b[i] = y;
                // Every other place different too.
                let mut c: [u8; 26] = std::array::from_fn(|k| k as u8 + 100);
                c[i] = y;
                let want = 0x03ff_ffff & !(((x == y) as u32) << i);
                for f in [differing_mask, differing_mask_swar] {
                    assert_eq!(f(&a, &b), ((x != y) as u32) << i, "{i} {x} {y}");
                    assert_eq!(f(&a, &c), want, "{i} {x} {y}");
                }
            }
        }
    }
}
