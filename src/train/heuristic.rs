//! Hand-written baselines: a heuristic evaluator for Plakoto and for Fevga (the
//! yard-stick opponents of issue #4), and a random "evaluator" for net-vs-random.
//!
//! [`Heuristic`] sums a few documented terms into a score `s` for the side to move
//! and answers `win = sigmoid(s)`; the mars estimates are crude (see
//! [`Heuristic::eval_board`]). The weights were set by hand, not fitted; the point is a
//! fixed, reproducible opponent that plays much better than random (see
//! `docs/strength.md`), not a strong one.
//!
//! Terms (mover-relative [`Board`], mover to roll):
//! - **Race** (both variants): pip lead plus half a roll for being on roll, divided by
//!   the spread of the remaining race: `1.7 (lead + 4) / (6 sqrt(N) + 1)`, `N` the
//!   expected turns left (pips / 8.17), i.e. a normal approximation of a pure race.
//! - **Plakoto** (RULES.md R5): pinned checkers (ours −, theirs +, worse the farther
//!   from home the pinned checker stands); our mother pinned (−10) or theirs pinned
//!   (+8; the pinner wins 2 points once its start point is empty, R5.5); blots
//!   exposed to free opposing checkers behind them, weighted by the chance of a shot
//!   at that distance and the cost of being pinned there; our shots at their blots
//!   (we are on roll); points we hold in front of their checkers (2+ checkers, or one
//!   that pins, R5.3), with a bonus for consecutive points (primes).
//! - **Fevga** (RULES.md R8): points we hold along the opponent's path in front of its
//!   rearmost checker (one checker closes a point, R8.1), with runs of consecutive
//!   points rewarded quadratically (primes), minus the same for the opponent; a
//!   penalty for stacks of more than 3 checkers outside the start point; a bonus for
//!   home points held.

use crate::eval::{Evaluator, Probabilities};
use crate::rules::board::{flip_index, Board, OFF};
use crate::rules::Variant;

/// Chance (in 36ths) that a given distance 1..=12 is hit by some roll when nothing
/// blocks (the classic backgammon shot table); index 0 unused.
const SHOTS_36: [u8; 13] = [0, 11, 12, 14, 15, 15, 17, 6, 6, 5, 3, 2, 3];

#[inline]
fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// Pip counts `(mover, opponent)`, each in its own numbering (R1); pinned checkers
/// included, borne-off ones count 0, bar checkers 25.
#[inline]
pub fn pips(variant: Variant, b: &Board) -> (u32, u32) {
    let (mut own, mut opp) = (25 * b.own[25] as u32, 25 * b.opp[25] as u32);
    for i in 1..=24 {
        own += i as u32 * b.own_at(i) as u32;
        opp += flip_index(variant, i) as u32 * b.opp_at(i) as u32;
    }
    (own, opp)
}

/// The race term shared by both heuristics (see the module documentation).
#[inline]
fn race_term(own_pips: u32, opp_pips: u32) -> f32 {
    let lead = opp_pips as f32 - own_pips as f32 + 4.0;
    let turns = own_pips.max(opp_pips) as f32 / 8.17;
    1.7 * lead / (6.0 * turns.sqrt() + 1.0)
}

/// The hand-written baseline for Plakoto and Fevga (name `heuristic-<variant>-v1`).
/// Portes boards are scored with the race term only (use pubeval there).
#[derive(Clone, Copy, Debug, Default)]
pub struct Heuristic;

impl Heuristic {
    /// The score `s` (log-odds of winning) for the mover of `b`.
    pub fn score(&self, variant: Variant, b: &Board) -> f32 {
        let (own_pips, opp_pips) = pips(variant, b);
        let race = race_term(own_pips, opp_pips);
        match variant {
            Variant::Plakoto => race + plakoto_terms(b),
            Variant::Fevga => race + fevga_terms(b),
            Variant::Portes => race,
        }
    }
}

/// Plakoto terms (see the module documentation). Own indices: the mover runs 24 → 1,
/// the opponent's checkers at the mover's indices run 1 → 24.
fn plakoto_terms(b: &Board) -> f32 {
    let mut s = 0f32;
    // Mothers (R5.5): own start is index 24, the opponent's is index 1.
    if b.own_pinned >> 24 & 1 == 1 {
        s -= 10.0;
    }
    if b.opp_pinned >> 1 & 1 == 1 {
        s += 8.0;
    }
    // Other pins: a pinned checker far from its home costs more.
    for i in 2..=23 {
        if b.own_pinned >> i & 1 == 1 {
            s -= 0.4 + 0.8 * i as f32 / 24.0;
        }
        if b.opp_pinned >> i & 1 == 1 {
            s += 0.4 + 0.8 * (25 - i) as f32 / 24.0;
        }
    }
    // Blots. Ours at i: opposing free checkers at j < i may pin it (distance i - j).
    // Theirs at i: our free checkers at j > i may pin it, and we are on roll.
    let mut risk = 0f32;
    let mut chance = 0f32;
    for i in 1..=24 {
        if b.own[i] == 1 && b.opp_pinned >> i & 1 == 0 && i != 24 {
            let mut miss = 1f32;
            for j in i.saturating_sub(12).max(1)..i {
                if b.opp[j] > 0 {
                    miss *= 1.0 - SHOTS_36[i - j] as f32 / 36.0;
                }
            }
            risk += (1.0 - miss) * (0.3 + 0.9 * i as f32 / 24.0);
        }
        if b.opp[i] == 1 && b.own_pinned >> i & 1 == 0 && i != 1 {
            let mut miss = 1f32;
            for j in (i + 1)..=(i + 12).min(24) {
                if b.own[j] > 0 {
                    miss *= 1.0 - SHOTS_36[j - i] as f32 / 36.0;
                }
            }
            chance += (1.0 - miss) * (0.3 + 0.9 * (25 - i) as f32 / 24.0);
        }
    }
    s -= 0.8 * risk;
    s += 0.5 * chance;
    // Points held in front of the opponent's rearmost free checker, and primes.
    let opp_back = (1..=24).find(|&j| b.opp[j] > 0).unwrap_or(25);
    let mut run = 0u32;
    for i in (opp_back + 1)..=24 {
        let held = b.own[i] >= 2 || b.opp_pinned >> i & 1 == 1;
        if held {
            run += 1;
            s += 0.08 + 0.04 * run.min(6) as f32;
        } else {
            run = 0;
        }
    }
    s
}

/// Fevga terms (see the module documentation). The mover runs 24 → 1; the opponent's
/// path in the mover's indices is 12 → 1, then 24 → 13 (its home is 13..=18).
fn fevga_terms(b: &Board) -> f32 {
    /// Prime value of `held` points along a path (`path[k]` is the k-th point the
    /// runner will pass), counted in front of the runner's rearmost checker only.
    fn blocking(
        path: &[usize; 24],
        held: impl Fn(usize) -> bool,
        runner_at: impl Fn(usize) -> bool,
    ) -> f32 {
        let Some(back) = path.iter().position(|&i| runner_at(i)) else {
            return 0.0;
        };
        let mut v = 0f32;
        let mut run = 0u32;
        for &i in &path[back + 1..] {
            if held(i) {
                run += 1;
                v += 0.03 * run.min(6) as f32 * run.min(6) as f32 / 2.0 + 0.02;
            } else {
                run = 0;
            }
        }
        v
    }
    // Paths from each runner's start: index k of the path = k-th point from the start.
    let mut opp_path = [0usize; 24];
    let mut own_path = [0usize; 24];
    for k in 0..24 {
        own_path[k] = 24 - k; // the mover's own 24 .. 1
        opp_path[k] = flip_index(Variant::Fevga, 24 - k); // the opponent's own 24 .. 1
    }
    let mut s = blocking(&opp_path, |i| b.own[i] > 0, |i| b.opp[i] > 0);
    s -= blocking(&own_path, |i| b.opp[i] > 0, |i| b.own[i] > 0);
    // Stacks outside the start point waste flexibility.
    for i in 1..=23 {
        if b.own[i] > 3 {
            s -= 0.05 * (b.own[i] - 3) as f32;
        }
        let j = flip_index(Variant::Fevga, i); // opponent's own index of mover index i
        if j != 24 && b.opp[i] > 3 {
            s += 0.05 * (b.opp[i] - 3) as f32;
        }
    }
    // Home points held.
    for p in 1..=6 {
        if b.own[p] > 0 {
            s += 0.05;
        }
        if b.opp[flip_index(Variant::Fevga, p)] > 0 {
            s -= 0.05;
        }
    }
    s
}

impl Evaluator for Heuristic {
    /// `win = sigmoid(score)`. Mars: against a side with nothing off,
    /// `win_mars = win * sigmoid((pip lead - 70) / 20)` (and symmetrically for
    /// `lose_mars`); in Plakoto a pinned opposing mother adds its 2-point threat:
    /// `win_mars >= 0.8 win`. Draw 0.
    fn eval_board(&self, variant: Variant, b: &Board) -> Probabilities {
        let win = sigmoid(self.score(variant, b)).clamp(0.0, 1.0);
        let lose = 1.0 - win;
        let (own_pips, opp_pips) = pips(variant, b);
        let lead = opp_pips as f32 - own_pips as f32;
        let mut win_mars = if b.opp[OFF] == 0 {
            win * sigmoid((lead - 70.0) / 20.0)
        } else {
            0.0
        };
        let mut lose_mars = if b.own[OFF] == 0 {
            lose * sigmoid((-lead - 70.0) / 20.0)
        } else {
            0.0
        };
        if variant == Variant::Plakoto {
            if b.opp_pinned >> 1 & 1 == 1 {
                win_mars = win_mars.max(0.8 * win);
            }
            if b.own_pinned >> 24 & 1 == 1 {
                lose_mars = lose_mars.max(0.8 * lose);
            }
        }
        Probabilities {
            win,
            win_mars: win_mars.min(win),
            lose_mars: lose_mars.min(lose),
            draw: 0.0,
        }
    }

    fn name(&self, variant: Variant) -> String {
        format!("heuristic-{variant}-v1")
    }
}

/// A "random" evaluator: each board gets a pseudo-random win probability from a hash
/// of the board and a salt, so ranking plays by it picks a uniformly random legal play
/// (distinct boards, independent hashes), deterministically for a given salt. Name
/// `random`. No mars, no draw.
#[derive(Clone, Copy, Debug, Default)]
pub struct RandomEvaluator {
    /// Mixed into the hash: different salts give independent choices.
    pub salt: u64,
}

impl RandomEvaluator {
    /// A random evaluator with the given salt.
    pub fn new(salt: u64) -> RandomEvaluator {
        RandomEvaluator { salt }
    }

    /// The 64-bit hash of a board under this salt (SplitMix64 finaliser over the
    /// board's bytes).
    pub fn hash(&self, b: &Board) -> u64 {
        let mut h = self.salt ^ 0x9e37_79b9_7f4a_7c15;
        let mut mix = |w: u64| {
            h = (h ^ w).wrapping_add(0x9e37_79b9_7f4a_7c15);
            h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            h ^= h >> 31;
        };
        for c in b.own.chunks(8).chain(b.opp.chunks(8)) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            mix(u64::from_le_bytes(w));
        }
        mix((b.own_pinned as u64) << 32 | b.opp_pinned as u64);
        h
    }
}

impl Evaluator for RandomEvaluator {
    fn eval_board(&self, _variant: Variant, b: &Board) -> Probabilities {
        let win = (self.hash(b) >> 40) as f32 / (1u64 << 24) as f32;
        Probabilities {
            win,
            ..Probabilities::default()
        }
    }

    fn name(&self, _variant: Variant) -> String {
        "random".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{Position, Side};

    fn board(pos: &Position) -> Board {
        pos.validate().unwrap();
        Board::from_position(pos, pos.turn)
    }

    #[test]
    fn start_positions_are_even_and_consistent() {
        for v in [Variant::Plakoto, Variant::Fevga] {
            let b = board(&Position::start(v, Side::White));
            assert_eq!(pips(v, &b), (360, 360));
            let p = Heuristic.eval_board(v, &b);
            // Even race, on roll: slightly better than even; nothing else differs.
            assert!(p.win > 0.5 && p.win < 0.65, "{v}: {p:?}");
            assert!(p.win_mars <= p.win && p.lose_mars <= p.lose());
        }
    }

    #[test]
    fn plakoto_pinned_mother_is_bad_for_its_owner() {
        // White's 14 on 24 with its mother... build: Black pins White's checker on 24
        // (White's start): White 1 pinned on 24 under 1 Black, 14 White on 13.
        let mut pos = Position::empty(Variant::Plakoto, Side::White);
        pos.add(Side::White, 24, 1).add(Side::White, 13, 14);
        pos.add(Side::Black, 24, 1).add(Side::Black, 1, 14);
        pos.point_mut(24).pinned = Some(Side::White);
        let p = Heuristic.eval_board(Variant::Plakoto, &board(&pos));
        assert!(p.win < 0.1, "{p:?}");
        assert!(p.lose_mars >= 0.8 * p.lose() - 1e-6);
    }

    #[test]
    fn random_evaluator_is_deterministic_and_salted() {
        let b = board(&Position::start(Variant::Portes, Side::White));
        let (r1, r2) = (RandomEvaluator::new(1), RandomEvaluator::new(2));
        let p = r1.eval_board(Variant::Portes, &b).win;
        assert_eq!(p, r1.eval_board(Variant::Portes, &b).win);
        assert_ne!(p, r2.eval_board(Variant::Portes, &b).win);
        assert!((0.0..1.0).contains(&p));
    }
}
