//! Hand-made board features of one side, the extra inputs of the v2 nets
//! ([`super::inputs::InputSet::V2`]).
//!
//! The idea is GNU Backgammon's contact inputs (Berliner's features as used in its
//! `eval.c`: pip counts, escapes of the back checker, containment, shots, home board
//! points, pips to break contact), written anew for the three Tavli variants with one
//! rule for "closed point" per variant (R4, R5.3, R8.1) and Plakoto's pins and mothers
//! (R5). Every feature is computed for the **own** side of a mover-relative [`Board`]
//! (the side that moves from own 24 towards own 1); the v2 encoding takes them for the
//! mover on the board and for the opponent on the mirrored board.
//!
//! Shots and escapes are counted over the 36 rolls bit-parallel: a `u32` holds one
//! bit per own point (bit `i` = own point `i`, bit 25 = the bar), a die `d` moves every
//! checker of a mask at once by `mask >> d`, and a landing is kept when its point is
//! open. Like GNU Backgammon's, these counts are estimates of the next roll, not exact
//! move generation: they ignore the maximum-dice and larger-die rules (R3), the
//! Fevga first-checker rule (R8.2) and who else must move first.

use crate::rules::board::{below_mask, Board, BAR};
use crate::rules::Variant;

/// Number of features per side ([`side_features`]).
pub const SIDE_FEATURES: usize = 20;

/// Bits of own points 1..=24.
const POINTS_MASK: u32 = 0x01ff_fffe;

/// The 21 rolls as `(high, low, weight in 36ths)`.
const ROLLS: [(u32, u32, u32); 21] = {
    let mut t = [(0u32, 0u32, 0u32); 21];
    let mut k = 0;
    let mut h = 1;
    while h <= 6 {
        let mut l = 1;
        while l <= h {
            t[k] = (h, l, if h == l { 1 } else { 2 });
            k += 1;
            l += 1;
        }
        h += 1;
    }
    t
};

/// The point masks of a board that the features read, all in own numbering (bits
/// 1..=24).
#[derive(Clone, Copy, Debug)]
struct Masks {
    /// Points where the own side may not land: R4 Portes 2+ opposing checkers; R5.3
    /// Plakoto 2+ opposing checkers or one that pins an own checker; R8.1 Fevga any
    /// opposing checker.
    closed_to_own: u32,
    /// Points where the opponent may not land (the same rules from its side).
    closed_to_opp: u32,
    /// Points with a free own checker (they can move).
    own_free: u32,
    /// Opposing checkers the own side could hit (Portes, R4) or pin (Plakoto, R5.1):
    /// a single free checker that pins nothing. None in Fevga.
    targets: u32,
    /// Own blots: a single free checker that pins nothing (none in Fevga).
    blots: u32,
    /// Points with any opposing checker, pinned ones included.
    opp_any: u32,
}

#[inline(always)]
fn masks(variant: Variant, b: &Board) -> Masks {
    // One compare of 16 counts at a time (counts of a valid board: at most 15).
    let (own1, own2) = (
        !below_mask::<1>(&b.own) & POINTS_MASK,
        !below_mask::<2>(&b.own) & POINTS_MASK,
    );
    let (opp1, opp2) = (
        !below_mask::<1>(&b.opp) & POINTS_MASK,
        !below_mask::<2>(&b.opp) & POINTS_MASK,
    );
    let (own_eq1, opp_eq1) = (own1 & !own2, opp1 & !opp2);
    let (own_pin, opp_pin) = (b.own_pinned & POINTS_MASK, b.opp_pinned & POINTS_MASK);
    let (closed_to_own, closed_to_opp, targets, blots) = match variant {
        Variant::Portes => (opp2, own2, opp_eq1, own_eq1),
        Variant::Plakoto => (
            opp2 | own_pin,
            own2 | opp_pin,
            opp_eq1 & !own_pin,
            own_eq1 & !opp_pin,
        ),
        Variant::Fevga => (opp1, own1, 0, 0),
    };
    Masks {
        closed_to_own,
        closed_to_opp,
        own_free: own1,
        targets,
        blots,
        opp_any: opp1 | opp_pin,
    }
}

/// Own points (bits 1..=24) where the own side may not land (see [`side_features`]).
#[inline]
pub fn closed_to_own(variant: Variant, b: &Board) -> u32 {
    masks(variant, b).closed_to_own
}

/// Own points (bits 1..=24) where the opponent may not land, in own numbering.
#[inline]
pub fn closed_to_opp(variant: Variant, b: &Board) -> u32 {
    masks(variant, b).closed_to_opp
}

/// Whether bit `12 - d` of the escape window `w` is clear (the point `d` pips ahead
/// is open).
const fn window_open(w: u32, d: u32) -> bool {
    w >> (12 - d) & 1 == 0
}

/// `ESCAPES[w]`: rolls (in 36ths) on which a checker plays both dice (a double: two
/// of its steps) when bit `12 - d` of `w` says whether the point `d` pips ahead
/// (1..=12) is closed: at least one single-die landing open and the two-dice landing
/// open.
const ESCAPES: [u8; 4096] = {
    let mut t = [0u8; 4096];
    let mut w = 0;
    while w < 4096 {
        let mut n = 0u8;
        let mut k = 0;
        while k < 21 {
            let (h, l, wt) = ROLLS[k];
            let ok = if h == l {
                window_open(w, h) && window_open(w, 2 * h)
            } else {
                (window_open(w, h) || window_open(w, l)) && window_open(w, h + l)
            };
            if ok {
                n += wt as u8;
            }
            k += 1;
        }
        t[w as usize] = n;
        w += 1;
    }
    t
};

/// `[f::<h, l>(args), …]` over the 21 rolls in the order of [`ROLLS`]: with constant
/// dice every roll is straight-line code (an `array::map` over `ROLLS` was not
/// inlined). The identity tests against the reference check the order.
macro_rules! per_roll {
    ($f:ident, $($arg:expr),*) => {
        [
            $f::<1, 1>($($arg),*),
            $f::<2, 1>($($arg),*),
            $f::<2, 2>($($arg),*),
            $f::<3, 1>($($arg),*),
            $f::<3, 2>($($arg),*),
            $f::<3, 3>($($arg),*),
            $f::<4, 1>($($arg),*),
            $f::<4, 2>($($arg),*),
            $f::<4, 3>($($arg),*),
            $f::<4, 4>($($arg),*),
            $f::<5, 1>($($arg),*),
            $f::<5, 2>($($arg),*),
            $f::<5, 3>($($arg),*),
            $f::<5, 4>($($arg),*),
            $f::<5, 5>($($arg),*),
            $f::<6, 1>($($arg),*),
            $f::<6, 2>($($arg),*),
            $f::<6, 3>($($arg),*),
            $f::<6, 4>($($arg),*),
            $f::<6, 5>($($arg),*),
            $f::<6, 6>($($arg),*),
        ]
    };
}

/// Targets hit on each of the 21 rolls (in [`ROLLS`]' order) with no own checker on
/// the bar: `free` the points of the movable own checkers, `open` the points where
/// they may land, `targets` the opposing blots (a subset of `open`). From the six
/// one-die landings computed once: a non-double reaches the landings of either die
/// and, through one of those, of both; a double chains up to four steps (from one
/// checker or several).
#[inline(always)]
fn hits_from_points(free: u32, open: u32, targets: u32) -> [u32; 21] {
    // one[d - 1]: open points one checker reaches with a die of d.
    let one: [u32; 6] = std::array::from_fn(|k| (free >> (k + 1)) & open);
    per_roll!(hit_from_points, &one, open, targets)
}

/// One roll `(H, L)` of [`hits_from_points`] (constant dice: straight-line code).
#[inline(always)]
fn hit_from_points<const H: u32, const L: u32>(one: &[u32; 6], open: u32, targets: u32) -> u32 {
    let (sh, sl) = (one[H as usize - 1], one[L as usize - 1]);
    // The last landing needs no `& open`: `targets` are open points.
    let all = if H != L {
        // Either die, or one die then the other.
        sh | sl | sh >> L | sl >> H
    } else {
        let two = (sh >> H) & open;
        let three = (two >> H) & open;
        sh | two | three | three >> H
    };
    all & targets
}

/// [`hits_from_points`] with `bar` (≥ 1) own checkers on the bar, which must enter
/// first (Portes, R4): with one there, a non-double enters with either die and plays
/// the other with any checker; with more, both dice enter. A double enters (if its
/// entry point is open) as many checkers as it can and chains the steps left from
/// any checker.
#[inline(always)]
fn hits_from_bar(free: u32, open: u32, bar: u8, targets: u32) -> [u32; 21] {
    // one[d - 1], entry[d - 1]: open points reached with a die of d from a point, or
    // from the bar (bit 25).
    let one: [u32; 6] = std::array::from_fn(|k| (free >> (k + 1)) & open);
    let entry: [u32; 6] = std::array::from_fn(|k| (1u32 << 25 >> (k + 1)) & open);
    per_roll!(hit_from_bar, &one, &entry, free, open, bar, targets)
}

/// One roll `(H, L)` of [`hits_from_bar`] (constant dice).
#[inline(always)]
fn hit_from_bar<const H: u32, const L: u32>(
    one: &[u32; 6],
    entry: &[u32; 6],
    free: u32,
    open: u32,
    bar: u8,
    targets: u32,
) -> u32 {
    let (eh, el) = (entry[H as usize - 1], entry[L as usize - 1]);
    // The last landing needs no `& open`: `targets` are open points.
    let all = if H != L {
        if bar == 1 {
            // Enter with one die, then the other die for any checker (the entered
            // one included).
            let via_h = if eh != 0 {
                eh | one[L as usize - 1] | eh >> L
            } else {
                0
            };
            let via_l = if el != 0 {
                el | one[H as usize - 1] | el >> H
            } else {
                0
            };
            via_h | via_l
        } else {
            eh | el
        }
    } else if eh == 0 {
        0
    } else {
        // The steps left after entering as many checkers as possible, from any one.
        let (mut reach, mut all) = (free | eh, eh);
        for _ in 0..4 - bar.min(4) {
            reach = (reach >> H) & open;
            all |= reach;
        }
        all
    };
    all & targets
}

/// The shot counts of features 4, 5, 14 and 16, in 36ths of rolls (see
/// [`side_features`]).
#[derive(Clone, Copy, Debug, Default)]
struct Shots {
    /// Rolls that hit at least one target.
    any: u32,
    /// Rolls that hit at least two different targets.
    two: u32,
    /// Rolls that hit the target `mother`.
    mother: u32,
    /// Σ over rolls of the highest target point hit (0 when none).
    loss: u32,
}

impl Shots {
    /// Counts of the targets hit per roll (`hits[k]` on `ROLLS[k]`).
    #[inline(always)]
    fn tally(hits: &[u32; 21], mother: u32) -> Shots {
        let mut s = Shots::default();
        for (&hit, &(_, _, w)) in hits.iter().zip(&ROLLS) {
            s.any += w * (hit != 0) as u32;
            // At least two bits: clearing the lowest leaves one.
            s.two += w * (hit & hit.wrapping_sub(1) != 0) as u32;
            // A target on own point t has come t pips from its start (R1); targets
            // are on bits 1..=24, so `| 1` only makes "no hit" count 0.
            s.loss += w * highest(hit | 1) as u32;
        }
        if mother != 0 {
            for (&hit, &(_, _, w)) in hits.iter().zip(&ROLLS) {
                s.mother += w * (hit & mother != 0) as u32;
            }
        }
        s
    }
}

/// The 21 rolls of [`ROLLS`] as three vectors of eight lanes for
/// [`shots_from_points_avx2`]: for each vector, `[high, low, weight, double]` per
/// lane (the last three lanes have weight 0; `double` is all ones for a double).
#[cfg(target_arch = "x86_64")]
const ROLL_LANES: [[[u32; 8]; 4]; 3] = {
    let mut t = [[[0u32; 8]; 4]; 3];
    let mut k = 0;
    while k < 24 {
        let (h, l, w) = if k < 21 { ROLLS[k] } else { (1, 1, 0) };
        t[k / 8][0][k % 8] = h;
        t[k / 8][1][k % 8] = l;
        t[k / 8][2][k % 8] = w;
        t[k / 8][3][k % 8] = if h == l { u32::MAX } else { 0 };
        k += 1;
    }
    t
};

/// [`Shots::tally`] of [`hits_from_points`] with AVX2, eight rolls at a time: each
/// lane shifts by its own dice, the doubles' chains and the other rolls' two orders
/// are both computed and the lane's kind is kept, and the highest target hit is the
/// exponent of the hits (shifted down one, so below 2^24 and exact in `f32`). The
/// same counts (integers, so any order of the sums).
///
/// # Safety
/// The CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn shots_from_points_avx2(free: u32, open: u32, targets: u32, mother: u32) -> Shots {
    use std::arch::x86_64::*;
    let v = |x: u32| _mm256_set1_epi32(x as i32);
    let (free, open, targets, mother) = (v(free), v(open), v(targets), v(mother));
    let zero = _mm256_setzero_si256();
    let (mut any, mut two, mut loss, mut moth) = (zero, zero, zero, zero);
    for lanes in &ROLL_LANES {
        // SAFETY: constant tables of eight lanes.
        let lane = |t: usize| unsafe { _mm256_loadu_si256(lanes[t].as_ptr() as *const __m256i) };
        let (h, l, w, dbl) = (lane(0), lane(1), lane(2), lane(3));
        let sh = _mm256_and_si256(_mm256_srlv_epi32(free, h), open);
        let sl = _mm256_and_si256(_mm256_srlv_epi32(free, l), open);
        // Either die, or one die then the other (the last landing needs no `& open`:
        // targets are open points).
        let mixed = _mm256_or_si256(
            _mm256_or_si256(sh, sl),
            _mm256_or_si256(_mm256_srlv_epi32(sh, l), _mm256_srlv_epi32(sl, h)),
        );
        let second = _mm256_and_si256(_mm256_srlv_epi32(sh, h), open);
        let third = _mm256_and_si256(_mm256_srlv_epi32(second, h), open);
        let double = _mm256_or_si256(
            _mm256_or_si256(sh, second),
            _mm256_or_si256(third, _mm256_srlv_epi32(third, h)),
        );
        let hit = _mm256_and_si256(_mm256_blendv_epi8(mixed, double, dbl), targets);
        // Weight where the hit mask is not zero / has two bits / hits the mother.
        let none = _mm256_cmpeq_epi32(hit, zero);
        let lowest_cleared = _mm256_and_si256(hit, _mm256_add_epi32(hit, v(u32::MAX)));
        let single = _mm256_cmpeq_epi32(lowest_cleared, zero);
        let no_mother = _mm256_cmpeq_epi32(_mm256_and_si256(hit, mother), zero);
        any = _mm256_add_epi32(any, _mm256_andnot_si256(none, w));
        two = _mm256_add_epi32(two, _mm256_andnot_si256(single, w));
        moth = _mm256_add_epi32(moth, _mm256_andnot_si256(no_mother, w));
        // highest(hit) = 1 + floor(log2(hit >> 1)) for a hit on bits 1..=24.
        let exp = _mm256_srli_epi32::<23>(_mm256_castps_si256(_mm256_cvtepi32_ps(
            _mm256_srli_epi32::<1>(hit),
        )));
        let top = _mm256_andnot_si256(none, _mm256_sub_epi32(exp, v(126)));
        loss = _mm256_add_epi32(loss, _mm256_mullo_epi32(top, w));
    }
    let sum = |x: __m256i| {
        let mut lanes = [0u32; 8];
        // SAFETY: eight lanes into eight u32.
        unsafe { _mm256_storeu_si256(lanes.as_mut_ptr() as *mut __m256i, x) };
        lanes.iter().sum::<u32>()
    };
    Shots {
        any: sum(any),
        two: sum(two),
        mother: sum(moth),
        loss: sum(loss),
    }
}

/// Rolls (in 36ths) on which a checker on own point `p` (25 = bar) can play both
/// dice (a double: two of its steps) without landing on a closed point; landings past
/// own 1 count as open (escaped).
#[inline(always)]
fn escapes(p: usize, closed: u32) -> u32 {
    // Bit j of the window is the point p - 12 + j (points below 1 are open).
    let w = (((closed & POINTS_MASK) as u64) << 12 >> p) & 0xfff;
    ESCAPES[w as usize] as u32
}

/// Features 17 and 18 before scaling: the most rolls that fail to escape from one of
/// own 13..=24, and Σ over the own checkers outside home (the bar, then own 7..=24;
/// pinned ones included, R5.4: a pinned checker counts where it stands) of escapes ×
/// (point − 6). `closed` the points closed to us, `occupied` our points (free or
/// pinned checkers).
#[inline(always)]
fn outer_escapes(b: &Board, closed: u32, occupied: u32) -> (u32, u32) {
    let mut worst = 0u32;
    for i in 13..=24 {
        worst = worst.max(36 - escapes(i, closed));
    }
    let mut mobility = 19 * b.own[BAR] as u32 * escapes(25, closed);
    let mut outer = occupied & !0x7f;
    while outer != 0 {
        let i = outer.trailing_zeros() as usize;
        outer &= outer - 1;
        let c = b.own[i] as u32 + (b.own_pinned >> i & 1);
        mobility += c * (i as u32 - 6) * escapes(i, closed);
    }
    (worst, mobility)
}

/// [`ESCAPES`] and three bytes of padding: a 32-bit load at any index stays inside.
#[cfg(target_arch = "x86_64")]
static ESCAPES_PADDED: [u8; 4096 + 3] = {
    let mut t = [0u8; 4096 + 3];
    let mut w = 0;
    while w < 4096 {
        t[w] = ESCAPES[w];
        w += 1;
    }
    t
};

/// [`outer_escapes`] with AVX2: the escapes of own 7..=25 as three vectors of eight
/// points (windows by variable shifts, table entries by gathers), then the minimum
/// over 13..=24 and the weighted sum over all. Integer arithmetic: the same values.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn outer_escapes_avx2(b: &Board, closed: u32) -> (u32, u32) {
    use std::arch::x86_64::*;
    // Lane `k` of vector `v` is own point 7 + 8 v + k (points above 25 weigh 0).
    const fn table(kind: u8) -> [[i32; 8]; 3] {
        let mut t = [[0i32; 8]; 3];
        let mut v = 0;
        while v < 3 {
            let mut k = 0;
            while k < 8 {
                let p = 7 + 8 * v as i32 + k as i32;
                t[v][k] = match kind {
                    // The window of point p is bits p - 12 .. p - 1 of `closed` (see
                    // `escapes`): `(closed << 7) >> (p - 5)`, p >= 7.
                    0 => p - 5,
                    1 => p,
                    // Weight p - 6 (outside home; nothing above the bar, 25).
                    2 if p <= 25 => p - 6,
                    2 => 0,
                    // 0 on own 13..=24, else 36 (not counted in the minimum).
                    _ if 13 <= p && p <= 24 => 0,
                    _ => 36,
                };
                k += 1;
            }
            v += 1;
        }
        t
    }
    const SHIFT: [[i32; 8]; 3] = table(0);
    const POINT: [[i32; 8]; 3] = table(1);
    const WEIGHT: [[i32; 8]; 3] = table(2);
    const OUTSIDE: [[i32; 8]; 3] = table(3);
    let mut counts = [0u8; 32];
    counts[..26].copy_from_slice(&b.own);
    // SAFETY (all below): AVX2 by the caller's contract; every load reads inside its
    // array (`counts` is 32 bytes, the tables 3 × 8 lanes); a gather reads 4 bytes at
    // `ESCAPES_PADDED + w` with `w <= 0xfff`, inside its 4096 + 3 bytes.
    unsafe {
        let load = |t: &[i32; 8]| _mm256_loadu_si256(t.as_ptr() as *const __m256i);
        let window = _mm256_set1_epi32(((closed & POINTS_MASK) << 7) as i32);
        let pinned = _mm256_set1_epi32((b.own_pinned & POINTS_MASK) as i32);
        let (twelve_bits, one, low_byte) = (
            _mm256_set1_epi32(0xfff),
            _mm256_set1_epi32(1),
            _mm256_set1_epi32(0xff),
        );
        let mut least = _mm256_set1_epi32(36);
        let mut sum = _mm256_setzero_si256();
        for v in 0..3 {
            let w = _mm256_and_si256(_mm256_srlv_epi32(window, load(&SHIFT[v])), twelve_bits);
            let esc = _mm256_and_si256(
                _mm256_i32gather_epi32::<1>(ESCAPES_PADDED.as_ptr() as *const i32, w),
                low_byte,
            );
            least = _mm256_min_epu32(least, _mm256_max_epu32(esc, load(&OUTSIDE[v])));
            let free = _mm256_cvtepu8_epi32(_mm_loadl_epi64(
                counts.as_ptr().add(7 + 8 * v) as *const __m128i
            ));
            let pin = _mm256_and_si256(_mm256_srlv_epi32(pinned, load(&POINT[v])), one);
            let c = _mm256_add_epi32(free, pin);
            let term = _mm256_mullo_epi32(_mm256_mullo_epi32(c, load(&WEIGHT[v])), esc);
            sum = _mm256_add_epi32(sum, term);
        }
        let fold = |x: __m256i, min: bool| {
            let f = |a, b| {
                if min {
                    _mm_min_epu32(a, b)
                } else {
                    _mm_add_epi32(a, b)
                }
            };
            let h = f(_mm256_castsi256_si128(x), _mm256_extracti128_si256::<1>(x));
            let h = f(h, _mm_shuffle_epi32::<0b01_00_11_10>(h));
            let h = f(h, _mm_shuffle_epi32::<0b10_11_00_01>(h));
            _mm_cvtsi128_si32(h) as u32
        };
        (36 - fold(least, true), fold(sum, false))
    }
}

/// Length of the longest run of consecutive set bits of `m`.
#[inline(always)]
fn longest_run(mut m: u32) -> u32 {
    let mut n = 0;
    while m != 0 {
        m &= m >> 1;
        n += 1;
    }
    n
}

/// Pip count of the start position: Portes 167, Plakoto and Fevga 360.
#[inline]
fn start_pips(variant: Variant) -> f32 {
    match variant {
        Variant::Portes => 167.0,
        _ => 360.0,
    }
}

/// The [`SIDE_FEATURES`] features of the **own** side of `b` (a valid board: at most
/// 15 checkers a point; game not over), in this order (scales in brackets; R-sections
/// give the rule each one reads):
///
/// | k | feature |
/// |---|---|
/// | 0 | pip count ÷ the start's (Portes 167, others 360) |
/// | 1 | rearmost own checker's point ÷ 25 (bar = 25; pinned ones count) |
/// | 2 | rolls (÷ 36) on which the rearmost free checker can play both dice (escapes) |
/// | 3 | longest run of points closed to us in front of that checker ÷ 6 (capped at 1) |
/// | 4 | rolls (÷ 36) that hit (R4) or pin (R5.1) at least one opposing checker (shots) |
/// | 5 | rolls (÷ 36) that reach at least two different such targets |
/// | 6 | own checkers outside home (own 7..=24 and bar) ÷ 15 |
/// | 7 | pips to bring them all home (Σ (point − 6)) ÷ 100: the way to save a mars (R7) |
/// | 8 | own blots (a single free checker that pins nothing; none in Fevga) ÷ 5 |
/// | 9 | home points (own 1..=6) closed to the opponent ÷ 6 |
/// | 10 | pips to break contact ÷ 152 (Portes, Plakoto: Σ over own checkers behind the opponent's rearmost of the distance to it) |
/// | 11 | points of our entry quarter (own 19..=24) closed to us ÷ 6 |
/// | 12 | own checkers pinned ÷ 3 (Plakoto, R5.1) |
/// | 13 | Plakoto: our mother stands alone and free on own 24 (one pin away from losing 2 points, R5.5) |
/// | 14 | Plakoto: rolls (÷ 36) on which we can pin the opponent's lone mother on own 1 |
/// | 15 | own checkers still on own 24 (the start) ÷ 15 |
/// | 16 | pips the opponent loses to our hits: Σ over rolls of the farthest target hit (its distance from its start) ÷ (36 · 24) |
/// | 17 | containment of our outer checkers: over own 13..=24, the most rolls (÷ 36) that fail to escape (see 2) from one point |
/// | 18 | mobility: Σ over own checkers outside home of (escapes ÷ 36) × (point − 6), ÷ 100 |
/// | 19 | our most advanced anchor in the opponent's home (own 19..=24, a point closed to it): (point − 18) ÷ 6, else 0 |
pub fn side_features(variant: Variant, b: &Board, out: &mut [f32; SIDE_FEATURES]) {
    side_features_inline::<false>(variant, b, out)
}

/// [`side_features`], always inlined (into the encoder compiled for AVX2).
///
/// With `AVX2` some counts use AVX2 instructions (the same values): set it only in
/// code that runs on CPUs with AVX2 (the encoder's `target_feature` copy).
#[inline(always)]
pub(crate) fn side_features_inline<const AVX2: bool>(
    variant: Variant,
    b: &Board,
    out: &mut [f32; SIDE_FEATURES],
) {
    let counts = side_counts_inline::<AVX2>(variant, b);
    // Each feature is a count over its scale; as one loop of conversions and
    // divisions (vectorised, the same bits as one at a time: the counts are exact in
    // f32 and each division is rounded once).
    let scale = feature_scales(variant);
    for ((o, &c), &s) in out.iter_mut().zip(&counts).zip(&scale) {
        *o = c as f32 / s;
    }
}

/// The scale of each feature of [`side_features`]: feature `k` is
/// `side_counts_inline(..)[k] as f32 / feature_scales(variant)[k]`.
#[inline(always)]
pub(crate) fn feature_scales(variant: Variant) -> [f32; SIDE_FEATURES] {
    let mut scale = SCALES;
    scale[0] = start_pips(variant);
    scale
}

/// The largest count of each feature on a valid board (at most 15 checkers a side),
/// by the table of [`side_features`]: 15 × 25 pips; 25 for the rear point; 36 rolls;
/// runs and quarters of 6; 15 checkers outside home, 15 × 19 pips to bring them home;
/// 24 points; 15 × 25 pips behind; 36 × 24 pips of hits; 15 × 36 × 19 for the
/// mobility. The integer first layer ([`super::first_layer`]) sizes its fixed point
/// from them.
pub(crate) const FEATURE_MAX: [u32; SIDE_FEATURES] = [
    375, 25, 36, 6, 36, 36, 15, 285, 24, 6, 375, 6, 24, 1, 36, 16, 864, 36, 10_260, 6,
];

/// The integer counts of [`side_features`] (the features before their scales).
#[inline(always)]
pub(crate) fn side_counts_inline<const AVX2: bool>(
    variant: Variant,
    b: &Board,
) -> [i32; SIDE_FEATURES] {
    let m = masks(variant, b);
    let open = !m.closed_to_own & POINTS_MASK;
    // Break contact: own checkers behind the opponent's rearmost checker, which is at
    // the lowest own index holding one (its bar counts as 0; none: 25).
    let opp_rear = if b.opp[BAR] > 0 {
        0
    } else if m.opp_any == 0 {
        25
    } else {
        m.opp_any.trailing_zeros()
    };
    let sums = CheckerSums::of(b, opp_rear);
    let occupied = m.own_free | (b.own_pinned & POINTS_MASK);
    let bar = b.own[BAR];
    let (rear, rear_free) = if bar > 0 {
        (25, 25)
    } else {
        (highest(occupied), highest(m.own_free))
    };
    // Escapes and the blockade in front of the rearmost free checker.
    let (esc, run) = if rear_free > 0 {
        let front = m.closed_to_own & ((1u32 << rear_free) - 1);
        (
            escapes(rear_free, m.closed_to_own),
            longest_run(front).min(6),
        )
    } else {
        (36, 0)
    };
    // Shots, and shots at the opponent's lone mother: the opponent's start is own 1
    // (R1), its lone free checker there is its mother (R5.5).
    let mother = if variant == Variant::Plakoto {
        m.targets & 2
    } else {
        0
    };
    let shots = if m.targets == 0 {
        Shots::default()
    } else if bar == 0 {
        #[cfg(target_arch = "x86_64")]
        if AVX2 {
            // SAFETY: `AVX2` is set only by callers compiled for AVX2 CPUs.
            unsafe { shots_from_points_avx2(m.own_free, open, m.targets, mother) }
        } else {
            Shots::tally(&hits_from_points(m.own_free, open, m.targets), mother)
        }
        #[cfg(not(target_arch = "x86_64"))]
        Shots::tally(&hits_from_points(m.own_free, open, m.targets), mother)
    } else {
        Shots::tally(&hits_from_bar(m.own_free, open, bar, m.targets), mother)
    };
    // Containment and mobility.
    #[cfg(target_arch = "x86_64")]
    let (worst, mobility) = if AVX2 {
        // SAFETY: `AVX2` is set only by callers compiled for AVX2 CPUs.
        unsafe { outer_escapes_avx2(b, m.closed_to_own) }
    } else {
        outer_escapes(b, m.closed_to_own, occupied)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let (worst, mobility) = outer_escapes(b, m.closed_to_own, occupied);
    let anchor = highest(m.closed_to_opp >> 18 & 0x7e);
    let brk = if variant == Variant::Fevga {
        0
    } else {
        sums.behind
    };
    let home_closed = (m.closed_to_opp & 0x7e).count_ones();
    let entry_closed = (m.closed_to_own >> 19 & 0x3f).count_ones();
    let pinned = (b.own_pinned & POINTS_MASK).count_ones();
    let mother_alone = variant == Variant::Plakoto && b.own[24] == 1 && b.own_pinned >> 24 & 1 == 0;
    [
        sums.pips as i32,
        rear as i32,
        esc as i32,
        run as i32,
        shots.any as i32,
        shots.two as i32,
        sums.outside as i32,
        sums.to_home as i32,
        m.blots.count_ones() as i32,
        home_closed as i32,
        brk as i32,
        entry_closed as i32,
        pinned as i32,
        mother_alone as i32,
        shots.mother as i32,
        (b.own[24] as u32 + (b.own_pinned >> 24 & 1)) as i32,
        shots.loss as i32,
        worst as i32,
        mobility as i32,
        anchor as i32,
    ]
}

/// The scale of each feature of [`side_features`] (feature 0's is the variant's
/// [`start_pips`]).
const SCALES: [f32; SIDE_FEATURES] = [
    167.0,
    25.0,
    36.0,
    6.0,
    36.0,
    36.0,
    15.0,
    100.0,
    5.0,
    6.0,
    152.0,
    6.0,
    3.0,
    1.0,
    36.0,
    15.0,
    36.0 * 24.0,
    36.0,
    3600.0,
    6.0,
];

/// Linear sums over the own checkers of a board (pinned ones count where they stand,
/// R5.4; checkers on the bar count as on point 25).
#[derive(Clone, Copy, Debug)]
struct CheckerSums {
    /// Σ point (the pip count).
    pips: u32,
    /// Checkers outside home (points 7..=25).
    outside: u32,
    /// Σ (point − 6) over those: pips to bring them home.
    to_home: u32,
    /// Σ (point − `rear`) over the checkers above point `rear`.
    behind: u32,
}

impl CheckerSums {
    /// The sums of `b`'s own checkers, with `rear` (0..=25) the point for
    /// [`CheckerSums::behind`]: the free checkers' counts (the bar as 25) by
    /// [`weighted_sums`], then the pinned ones.
    #[inline(always)]
    fn of(b: &Board, rear: u32) -> CheckerSums {
        let [pips, outside, to_home, behind] = weighted_sums(&b.own, rear);
        let mut s = CheckerSums {
            pips,
            outside,
            to_home,
            behind,
        };
        let mut pinned = b.own_pinned & POINTS_MASK;
        while pinned != 0 {
            let i = pinned.trailing_zeros();
            pinned &= pinned - 1;
            s.pips += i;
            s.outside += (i >= 7) as u32;
            s.to_home += i.saturating_sub(6);
            s.behind += i.saturating_sub(rear);
        }
        s
    }
}

/// `[Σ i·c, Σ_{i ≥ 7} c, Σ max(i − 6, 0)·c, Σ max(i − rear, 0)·c]` over the indices
/// `i` 0..=25 of `counts` (`c = counts[i]`, `rear` ≤ 25), plain loops (the reference
/// of the SSE2 version, used where there is no SSE2).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline(always)]
fn weighted_sums_portable(counts: &[u8; 26], rear: u32) -> [u32; 4] {
    let mut s = [0u32; 4];
    for (i, &c) in counts.iter().enumerate() {
        let (i, c) = (i as u32, c as u32);
        s[0] += i * c;
        s[1] += (i >= 7) as u32 * c;
        s[2] += i.saturating_sub(6) * c;
        s[3] += i.saturating_sub(rear) * c;
    }
    s
}

/// [`weighted_sums_portable`] with SSE2 (part of every x86_64 target): the 26 counts
/// as four vectors of eight 16-bit lanes, each sum by one multiply-add per vector.
/// Exact for every count (products ≤ 255 × 25).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn weighted_sums(counts: &[u8; 26], rear: u32) -> [u32; 4] {
    // SAFETY: SSE2 is part of every x86_64 target.
    unsafe { weighted_sums_sse2(counts, rear) }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn weighted_sums(counts: &[u8; 26], rear: u32) -> [u32; 4] {
    weighted_sums_portable(counts, rear)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
#[inline]
fn weighted_sums_sse2(counts: &[u8; 26], rear: u32) -> [u32; 4] {
    use std::arch::x86_64::*;
    /// Weights `max(i − base, 0)` (`base` 0 or 6), or with `step` `[i > base]`, of
    /// the indices `i` 0..=25; lane `k` of vector `v` is index `8 v + k`.
    const fn lanes(base: i16, step: bool) -> [[i16; 8]; 4] {
        let mut t = [[0i16; 8]; 4];
        let mut i = 0;
        while i < 26 {
            let x = i as i16 - base;
            t[i / 8][i % 8] = if x <= 0 {
                0
            } else if step {
                1
            } else {
                x
            };
            i += 1;
        }
        t
    }
    const INDEX: [[i16; 8]; 4] = lanes(0, false);
    const OUTSIDE: [[i16; 8]; 4] = lanes(6, true);
    const TO_HOME: [[i16; 8]; 4] = lanes(6, false);
    let word = |k: usize| i64::from_le_bytes(counts[k..k + 8].try_into().expect("8 counts"));
    let zero = _mm_setzero_si128();
    // Counts 0..16 and 16..26 (the latter from bytes 10..26 shifted down by 6).
    let lo = _mm_set_epi64x(word(8), word(0));
    let hi = _mm_srli_si128::<6>(_mm_set_epi64x(word(18), word(10)));
    let c = [
        _mm_unpacklo_epi8(lo, zero),
        _mm_unpackhi_epi8(lo, zero),
        _mm_unpacklo_epi8(hi, zero),
        _mm_unpackhi_epi8(hi, zero),
    ];
    let load = |t: &[i16; 8]| _mm_set_epi16(t[7], t[6], t[5], t[4], t[3], t[2], t[1], t[0]);
    let rear = _mm_set1_epi16(rear as i16);
    let (mut pips, mut outside, mut to_home, mut behind) = (zero, zero, zero, zero);
    for k in 0..4 {
        let index = load(&INDEX[k]);
        pips = _mm_add_epi32(pips, _mm_madd_epi16(c[k], index));
        outside = _mm_add_epi32(outside, _mm_madd_epi16(c[k], load(&OUTSIDE[k])));
        to_home = _mm_add_epi32(to_home, _mm_madd_epi16(c[k], load(&TO_HOME[k])));
        let above = _mm_max_epi16(_mm_sub_epi16(index, rear), zero);
        behind = _mm_add_epi32(behind, _mm_madd_epi16(c[k], above));
    }
    // Transpose the four vectors of four partial sums and add the columns.
    let a = _mm_unpacklo_epi32(pips, outside);
    let b = _mm_unpackhi_epi32(pips, outside);
    let c2 = _mm_unpacklo_epi32(to_home, behind);
    let d = _mm_unpackhi_epi32(to_home, behind);
    let sum = _mm_add_epi32(
        _mm_add_epi32(_mm_unpacklo_epi64(a, c2), _mm_unpackhi_epi64(a, c2)),
        _mm_add_epi32(_mm_unpacklo_epi64(b, d), _mm_unpackhi_epi64(b, d)),
    );
    let mut out = [0u32; 4];
    // SAFETY: `out` is 16 bytes; an unaligned store.
    unsafe { _mm_storeu_si128(out.as_mut_ptr() as *mut __m128i, sum) };
    out
}

/// The highest set bit of `m` (0 when empty).
#[inline(always)]
fn highest(m: u32) -> usize {
    if m == 0 {
        0
    } else {
        31 - m.leading_zeros() as usize
    }
}

/// True while the two sides can still meet: some checker of one side has an opposing
/// checker ahead of it on its path (bar and pinned checkers included). Without contact
/// the game is a race.
#[inline]
pub fn has_contact(variant: Variant, b: &Board) -> bool {
    fn behind(b: &Board) -> bool {
        if b.own[BAR] > 0 || b.opp[BAR] > 0 || (b.own_pinned | b.opp_pinned) != 0 {
            return true;
        }
        let own_back = (1..=24).rev().find(|&i| b.own[i] > 0).unwrap_or(0);
        let opp_front = (1..=24).find(|&i| b.opp[i] > 0).unwrap_or(25);
        opp_front < own_back
    }
    match variant {
        Variant::Fevga => behind(b) || behind(&b.mirror(variant)),
        _ => behind(b),
    }
}

#[cfg(test)]
#[path = "features_reference.rs"]
mod reference;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::rules::movegen::generate;
    use crate::rules::position_id::from_id;
    use crate::rules::{Dice, Position, Side};

    fn board(id: &str) -> Board {
        let pos = from_id(id).unwrap();
        Board::from_position(&pos, pos.turn)
    }

    fn feats(v: Variant, b: &Board) -> [f32; SIDE_FEATURES] {
        let mut f = [0.0; SIDE_FEATURES];
        side_features(v, b, &mut f);
        f
    }

    /// Rolls (in 36ths) on which some legal play hits or pins, by the move generator;
    /// with `only` the hit must land on that own point.
    fn exact_shots(v: Variant, b: &Board, only: Option<u8>) -> u32 {
        let mut plays = Vec::new();
        let mut n = 0;
        for &(h, l, w) in &ROLLS {
            plays.clear();
            generate(v, b, Dice::new(h as u8, l as u8).unwrap(), &mut plays);
            let hits = plays.iter().any(|p| {
                p.moves()
                    .iter()
                    .any(|m| m.hit && only.is_none_or(|o| m.to == o))
            });
            n += w * hits as u32;
        }
        n
    }

    #[test]
    fn roll_table_weights_sum_to_36() {
        assert_eq!(ROLLS.iter().map(|r| r.2).sum::<u32>(), 36);
        assert_eq!(ESCAPES[0], 36, "nothing closed");
        assert_eq!(ESCAPES[0xfff], 0, "twelve closed points");
    }

    #[test]
    fn portes_start_features() {
        let b = Board::from_position(&Position::start(Variant::Portes, Side::White), Side::White);
        let f = feats(Variant::Portes, &b);
        assert_eq!(f[0], 1.0, "167 pips");
        assert_eq!(f[1], 24.0 / 25.0);
        // The back checkers on 24 face closed points 19, 17 and 12 (and 1). Failing
        // rolls: 5-5 (19), 6-6 (18 then 12), 4-1 (19), 6-1 (17), 3-2 (19), 5-2 (17),
        // 4-3 (17): 2 + 10 = 12 of 36.
        assert_eq!(f[2], 24.0 / 36.0);
        assert_eq!(f[3], 1.0 / 6.0, "no two closed points in a row before 24");
        assert_eq!(f[4], 0.0, "no blots to hit");
        assert_eq!(f[6], 10.0 / 15.0);
        // Pips to home: 2 × 18 + 5 × 7 + 3 × 2.
        assert_eq!(f[7], (36.0 + 35.0 + 6.0) / 100.0);
        assert_eq!(f[8], 0.0);
        assert_eq!(f[9], 1.0 / 6.0, "the 6-point");
        // Break contact: the opponent's rearmost are on own 1: Σ (i − 1) per checker
        // = 2 × 23 + 5 × 12 + 3 × 7 + 5 × 5 = 152 (GNU Backgammon's normaliser).
        assert_eq!(f[10], 1.0);
        assert_eq!(f[11], 1.0 / 6.0, "the opponent's 6-point is own 19");
        assert!(has_contact(Variant::Portes, &b));
    }

    #[test]
    fn shots_agree_with_the_move_generator() {
        // R4 hits: a Black blot 1, 3 and 8 pips from White's checkers.
        let b = board("portes/w/13:2,8:2,6:11/5:1,19:14");
        let f = feats(Variant::Portes, &b);
        let exact = exact_shots(Variant::Portes, &b, None);
        assert!(exact > 20, "{exact}");
        assert_eq!(f[4], exact as f32 / 36.0);
        assert_eq!(f[5], 0.0, "one target");
        // R4 from the bar: one White checker on the bar, a Black blot on printed 20
        // (enter with a 5) and on printed 10.
        let b = board("portes/w/bar:1,13:2,6:12/20:1,10:1,1:13");
        assert_eq!(
            feats(Variant::Portes, &b)[4],
            exact_shots(Variant::Portes, &b, None) as f32 / 36.0
        );
        // R5.1 pins: a Black blot on printed 4, White checkers 2, 5 and 9 pips away.
        let b = board("plakoto/w/13:3,9:2,6:10/4:1,1:2,19:12");
        assert_eq!(
            feats(Variant::Plakoto, &b)[4],
            exact_shots(Variant::Plakoto, &b, None) as f32 / 36.0
        );
    }

    #[test]
    fn pip_loss_containment_mobility_anchor() {
        // One target on own 5: every hitting roll costs the opponent 5 pips.
        let b = board("portes/w/13:2,8:2,6:11/5:1,19:14");
        let f = feats(Variant::Portes, &b);
        assert!((f[16] - f[4] * 36.0 * 5.0 / (36.0 * 24.0)).abs() < 1e-6);
        // Black holds printed (= White's own) 13..18: a full prime before own 19, so
        // from there no roll escapes; White's two on 20 are an anchor in Black's home.
        let b = board("portes/w/20:2,8:1,6:12/18:2,17:2,16:2,15:2,14:2,13:2,1:3");
        let f = feats(Variant::Portes, &b);
        assert_eq!(f[17], 1.0);
        assert_eq!(f[19], 2.0 / 6.0);
        // Nothing ahead of a lone checker on own 8: 36 escapes, 2 pips from home.
        let b = board("portes/w/8:1,6:14/19:15");
        let f = feats(Variant::Portes, &b);
        assert_eq!(f[18], 36.0 * 2.0 / 3600.0);
        assert_eq!(f[19], 0.0);
    }

    #[test]
    fn plakoto_mother_features() {
        // White's mother alone on 24; Black's mother alone on 1, White checkers on 3
        // and 6 (2 and 5 pips away).
        let b = board("plakoto/w/24:1,6:10,3:4/1:1,19:14");
        let f = feats(Variant::Plakoto, &b);
        assert_eq!(f[13], 1.0, "our mother alone");
        // A 2 or a 5 (20 rolls), 1-1 from 3, 4-1 from 6 (6/2/1 or 6/5/1): 23.
        assert_eq!(f[14], 23.0 / 36.0);
        assert_eq!(exact_shots(Variant::Plakoto, &b, Some(1)), 23);
        assert_eq!(f[15], 1.0 / 15.0);
        assert_eq!(
            feats(Variant::Plakoto, &b.mirror(Variant::Plakoto))[13],
            1.0
        );
    }

    #[test]
    fn fevga_blockade_and_contact() {
        let b = Board::from_position(&Position::start(Variant::Fevga, Side::White), Side::White);
        let f = feats(Variant::Fevga, &b);
        assert_eq!(f[4], 0.0, "no hitting in Fevga");
        assert_eq!(f[15], 1.0);
        assert_eq!(f[0], 1.0, "360 pips");
        // The opponent's stack on own 12 is the one closed point ahead of own 24.
        assert_eq!(f[3], 1.0 / 6.0);
        assert!(has_contact(Variant::Fevga, &b));
    }

    #[test]
    fn race_has_no_contact() {
        let b = board("portes/w/6:5,5:5,4:5/19:5,20:5,21:5");
        assert!(!has_contact(Variant::Portes, &b));
        let b = board("portes/w/20:1,6:4,5:5,4:5/19:5,21:5,22:5");
        assert!(has_contact(Variant::Portes, &b));
    }

    /// Boards of seeded random play of `variant` from the start: every board that a
    /// play of the visited positions leads to, from the opponent's view (what the
    /// evaluator sees when it ranks plays), until `n` boards.
    /// At least `n` boards from random play of `variant` (from `seed`): every play of
    /// each roll that does not end the game, as the next mover sees it, in generation
    /// order (so the plays of one roll follow each other).
    pub(crate) fn random_play_boards(variant: Variant, seed: u64, n: usize) -> Vec<Board> {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut out = Vec::with_capacity(n + 64);
        let mut plays = Vec::new();
        let mut b = Board::from_position(&Position::start(variant, Side::White), Side::White);
        while out.len() < n {
            let dice = Dice::new(rng.random_range(1..=6), rng.random_range(1..=6)).unwrap();
            plays.clear();
            generate(variant, &b, dice, &mut plays);
            out.extend(
                plays
                    .iter()
                    .filter(|p| p.outcome.is_none())
                    .map(|p| p.board.mirror(variant)),
            );
            let p = plays[rng.random_range(0..plays.len())];
            b = if p.outcome.is_some() {
                Board::from_position(&Position::start(variant, Side::White), Side::White)
            } else {
                p.board.mirror(variant)
            };
        }
        out
    }

    /// Hand-built boards that random play rarely reaches: random counts 0..=15 on
    /// every point and the bar, random pins (Plakoto), both sides on one point.
    fn random_boards(variant: Variant, seed: u64, n: usize) -> Vec<Board> {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        // A count 1..=15, small ones more often.
        let count = |rng: &mut rand_chacha::ChaCha8Rng| {
            let top = rng.random_range(1..=15u8);
            rng.random_range(1..=top)
        };
        (0..n)
            .map(|_| {
                let mut b = Board::EMPTY;
                let density = rng.random_range(0.05..0.6);
                for i in 1..=24 {
                    if rng.random_bool(density) {
                        b.own[i] = count(&mut rng);
                    }
                    if rng.random_bool(density) {
                        b.opp[i] = count(&mut rng);
                    }
                }
                if variant == Variant::Portes && rng.random_bool(0.3) {
                    b.own[BAR] = count(&mut rng);
                }
                if variant == Variant::Portes && rng.random_bool(0.3) {
                    b.opp[BAR] = count(&mut rng);
                }
                if variant == Variant::Plakoto {
                    b.own_pinned = rng.random::<u32>() & rng.random::<u32>() & POINTS_MASK;
                    b.opp_pinned = rng.random::<u32>() & rng.random::<u32>() & POINTS_MASK;
                }
                b.own[0] = rng.random_range(0..=3);
                b.opp[0] = rng.random_range(0..=3);
                b
            })
            .collect()
    }

    fn assert_same_features(v: Variant, b: &Board) {
        let (mut fast, mut slow) = ([0.0; SIDE_FEATURES], [0.0; SIDE_FEATURES]);
        side_features(v, b, &mut fast);
        reference::side_features(v, b, &mut slow);
        assert_eq!(
            fast.map(f32::to_bits),
            slow.map(f32::to_bits),
            "{v} {b:?}: {fast:?} != {slow:?}"
        );
    }

    /// The features equal, bit for bit, those of the reference implementation (the
    /// code the committed v2 nets were trained with, `features_reference.rs`), on
    /// ≥ 20,000 boards of seeded random play per variant, on their mirrors, and on
    /// 20,000 hand-built boards per variant.
    #[test]
    fn side_features_match_the_reference() {
        for (k, v) in Variant::ALL.into_iter().enumerate() {
            let boards = random_play_boards(v, 11 + k as u64, 20_000);
            assert!(boards.len() >= 20_000);
            for b in boards
                .iter()
                .chain(&random_boards(v, 21 + k as u64, 20_000))
            {
                assert_same_features(v, b);
                assert_same_features(v, &b.mirror(v));
            }
        }
    }

    /// The whole V2 input vector (the encoder's inlined, AVX2-compiled copy of the
    /// features) equals the V1 inputs followed by the reference features of both
    /// sides, bit for bit, on boards of random play and on hand-built boards.
    #[test]
    fn v2_inputs_match_the_reference() {
        use crate::eval::inputs::{encode_dense_set, InputSet, MAX_INPUTS};
        for (k, v) in Variant::ALL.into_iter().enumerate() {
            let base = InputSet::V1.count(v);
            let (mut x, mut want) = ([0.0; MAX_INPUTS], [0.0; MAX_INPUTS]);
            let (mut own, mut opp) = ([0.0; SIDE_FEATURES], [0.0; SIDE_FEATURES]);
            let boards = random_play_boards(v, 31 + k as u64, 20_000);
            for b in boards
                .into_iter()
                .chain(random_boards(v, 41 + k as u64, 20_000))
            {
                encode_dense_set(InputSet::V2, v, &b, &mut x);
                encode_dense_set(InputSet::V1, v, &b, &mut want);
                reference::side_features(v, &b, &mut own);
                reference::side_features(v, &b.mirror(v), &mut opp);
                want[base..base + SIDE_FEATURES].copy_from_slice(&own);
                want[base + SIDE_FEATURES..base + 2 * SIDE_FEATURES].copy_from_slice(&opp);
                assert_eq!(x.map(f32::to_bits), want.map(f32::to_bits), "{v} {b:?}");
            }
        }
    }

    /// The SSE2 sums equal the plain loops for any counts (up to 255) and any `rear`.
    #[test]
    fn weighted_sums_match_the_plain_loops() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for k in 0..20_000 {
            let top = if k % 2 == 0 { 15 } else { 255 };
            let counts: [u8; 26] = std::array::from_fn(|_| rng.random_range(0..=top));
            let rear = rng.random_range(0..=25);
            assert_eq!(
                weighted_sums(&counts, rear),
                weighted_sums_portable(&counts, rear),
                "{counts:?} {rear}"
            );
        }
        let mut counts = [0u8; 26];
        counts[25] = 2;
        counts[7] = 1;
        // 2 × 25 + 7; two on the bar and one on 7 are outside; 2 × 19 + 1; above 20.
        assert_eq!(weighted_sums(&counts, 20), [57, 3, 39, 10]);
    }
}
