//! The feature code of `features.rs` as it was at commit 45bd942 (before the
//! speed-ups of issue #10), kept unchanged under `#[cfg(test)]` as the reference that
//! the faster [`super::side_features`] must match value for value (bit-identical
//! `f32`s: the committed v2 nets were trained on these values).

#![allow(dead_code)]

use crate::rules::board::{Board, BAR};
use crate::rules::Variant;

/// Number of features per side ([`side_features`]).
const SIDE_FEATURES: usize = 20;

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

/// Bits `i` (0..=25) of the indices where `counts[i] >= k`.
#[inline(always)]
fn mask_ge(counts: &[u8; 26], k: u8) -> u32 {
    let mut m = 0u32;
    for (i, &c) in counts.iter().enumerate() {
        m |= ((c >= k) as u32) << i;
    }
    m
}

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
    let (own1, own2) = (
        mask_ge(&b.own, 1) & POINTS_MASK,
        mask_ge(&b.own, 2) & POINTS_MASK,
    );
    let (opp1, opp2) = (
        mask_ge(&b.opp, 1) & POINTS_MASK,
        mask_ge(&b.opp, 2) & POINTS_MASK,
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
fn closed_to_own(variant: Variant, b: &Board) -> u32 {
    masks(variant, b).closed_to_own
}

/// Own points (bits 1..=24) where the opponent may not land, in own numbering.
#[inline]
fn closed_to_opp(variant: Variant, b: &Board) -> u32 {
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

/// Landings of one roll: the points (bits 1..=24) some own checker can reach with
/// the first die, both dice, or (doubles) up to four steps, every landing open.
/// `src` holds the movable checkers' points (bit 25 = the bar); `bar` is the number of
/// own checkers on the bar, which must enter first (Portes, R4).
#[inline(always)]
fn landings(src: u32, open: u32, bar: u8, hi: u32, lo: u32) -> u32 {
    let free = src & POINTS_MASK;
    if hi != lo {
        let mut all = 0u32;
        for (x, y) in [(hi, lo), (lo, hi)] {
            match bar {
                0 => {
                    let first = (free >> x) & open;
                    all |= first | ((first >> y) & open) | ((free >> y) & open);
                }
                1 => {
                    let entry = (1u32 << 25 >> x) & open;
                    if entry != 0 {
                        all |= entry | (((free | entry) >> y) & open);
                    }
                }
                _ => all |= ((1u32 << 25 >> x) & open) | ((1u32 << 25 >> y) & open),
            }
        }
        all
    } else {
        let d = hi;
        let entered = bar.min(4) as u32;
        let (mut reach, steps) = if bar > 0 {
            let entry = (1u32 << 25 >> d) & open;
            if entry == 0 {
                return 0;
            }
            (free | entry, 4 - entered)
        } else {
            (free, 4)
        };
        let mut all = if bar > 0 { (1u32 << 25 >> d) & open } else { 0 };
        // Chains of steps from any own checker (several checkers may share the four).
        for _ in 0..steps {
            reach = (reach >> d) & open;
            all |= reach;
            if reach == 0 {
                break;
            }
        }
        all
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

/// The [`SIDE_FEATURES`] features of the **own** side of `b` (game not over), in this
/// order (scales in brackets; R-sections give the rule each one reads):
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
pub(super) fn side_features(variant: Variant, b: &Board, out: &mut [f32; SIDE_FEATURES]) {
    side_features_inline(variant, b, out)
}

/// [`side_features`], always inlined (into the encoder compiled for AVX2).
#[inline(always)]
fn side_features_inline(variant: Variant, b: &Board, out: &mut [f32; SIDE_FEATURES]) {
    let m = masks(variant, b);
    let open = !m.closed_to_own & POINTS_MASK;
    // Counts with the pinned checkers (R5.4: a pinned checker counts where it stands).
    let mut n = [0u32; 25];
    for (i, c) in n.iter_mut().enumerate().skip(1) {
        *c = b.own[i] as u32 + (b.own_pinned >> i & 1);
    }
    let (mut pips, mut out_home, mut to_home) = (0u32, 0u32, 0u32);
    for (i, &c) in n.iter().enumerate().skip(1) {
        pips += i as u32 * c;
    }
    for (i, &c) in n.iter().enumerate().skip(7) {
        out_home += c;
        to_home += (i as u32 - 6) * c;
    }
    let occupied = m.own_free | (b.own_pinned & POINTS_MASK);
    let bar = b.own[BAR];
    let (rear, rear_free) = if bar > 0 {
        pips += 25 * bar as u32;
        out_home += bar as u32;
        to_home += 19 * bar as u32;
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
    let (mut p1, mut p2, mut pm, mut loss) = (0u32, 0u32, 0u32, 0u32);
    if m.targets != 0 {
        let src = m.own_free | if bar > 0 { 1 << 25 } else { 0 };
        for &(h, l, w) in &ROLLS {
            let hit = landings(src, open, bar, h, l) & m.targets;
            p1 += w * (hit != 0) as u32;
            p2 += w * (hit.count_ones() >= 2) as u32;
            pm += w * (hit & mother != 0) as u32;
            // A target on own point t has come t pips from its start (R1).
            loss += w * highest(hit) as u32;
        }
    }
    // Containment and mobility.
    let mut worst = 0u32;
    for i in 13..=24 {
        worst = worst.max(36 - escapes(i, m.closed_to_own));
    }
    let mut mobility = 19 * bar as u32 * escapes(25, m.closed_to_own);
    for (i, &c) in n.iter().enumerate().skip(7) {
        if c > 0 {
            mobility += c * (i as u32 - 6) * escapes(i, m.closed_to_own);
        }
    }
    let anchor = highest(m.closed_to_opp >> 18 & 0x7e);
    // Break contact: own checkers behind the opponent's rearmost checker, which is at
    // the lowest own index holding one (its bar counts as 0).
    let brk = if variant == Variant::Fevga {
        0
    } else {
        let opp_min = if b.opp[BAR] > 0 {
            0
        } else if m.opp_any == 0 {
            25
        } else {
            m.opp_any.trailing_zeros() as usize
        };
        let mut s = 25u32.saturating_sub(opp_min as u32) * bar as u32;
        for (i, &c) in n.iter().enumerate().skip(opp_min + 1) {
            s += (i - opp_min) as u32 * c;
        }
        s
    };
    let home_closed = (m.closed_to_opp & 0x7e).count_ones();
    let entry_closed = (m.closed_to_own >> 19 & 0x3f).count_ones();
    let pinned = (b.own_pinned & POINTS_MASK).count_ones();
    let mother_alone = variant == Variant::Plakoto && b.own[24] == 1 && b.own_pinned >> 24 & 1 == 0;
    *out = [
        pips as f32 / start_pips(variant),
        rear as f32 / 25.0,
        esc as f32 / 36.0,
        run as f32 / 6.0,
        p1 as f32 / 36.0,
        p2 as f32 / 36.0,
        out_home as f32 / 15.0,
        to_home as f32 / 100.0,
        m.blots.count_ones() as f32 / 5.0,
        home_closed as f32 / 6.0,
        brk as f32 / 152.0,
        entry_closed as f32 / 6.0,
        pinned as f32 / 3.0,
        mother_alone as u32 as f32,
        pm as f32 / 36.0,
        n[24] as f32 / 15.0,
        loss as f32 / (36.0 * 24.0),
        worst as f32 / 36.0,
        mobility as f32 / 3600.0,
        anchor as f32 / 6.0,
    ];
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
