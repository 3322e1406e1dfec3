//! Tesauro's **pubeval**: the public-domain linear move-selection evaluator for
//! backgammon, used as the fixed Portes baseline.
//!
//! Source: Gerald Tesauro, `pubeval.c` (IBM Research, 1993, "provided as a public
//! service to the backgammon programming community", public domain), as distributed
//! e.g. in OpenBSD `games/backgammon/common_source/pubeval.c` (rev. 1.3) and in GNU
//! Backgammon's `pub_eval.c`. The weights below are Tesauro's `wr` (race) and `wc`
//! (contact) vectors; the code is a Rust rewrite of `setx()` and `pubeval()`.
//!
//! Inputs (122): for each point seen from the side that has just moved, from its own
//! 24 down to its own 1, five inputs: one opposing blot; own blot; own 2+; own exactly
//! 3; `(own - 3) / 2` for 4+. Then the opponent's bar checkers / 2 (input 120) and the
//! own borne-off checkers / 15 (input 121). The side's own bar checkers are not an
//! input (as in the original). Score = `w · x`, higher is better for the side that
//! moved; the race weights apply when no contact remains.
//!
//! Race or contact weights: the original chooses them from the position **before**
//! the move, so that every candidate play of a roll is scored with the same weights.
//! [`best_play`] does exactly that (it is how the `pubeval` player of the strength
//! tool moves, like GNU Backgammon's `pub_best_move`). An [`Evaluator`] sees only the
//! position after a play, so [`PubEval`] chooses the weights there; that differs on
//! the plays that break contact, where it compares a race score with contact scores
//! and runs its back checkers too early or too late (issue #9: it was marsed in
//! 27.0% of games against the v1 net, gnubg-nn's pubeval in 21.6%).
//!
//! Output: `win = 1/2 + atan(score / 4) / π` for the side that moved, a monotone
//! pseudo-probability good only for ranking plays (unlike a logistic it does not
//! round to exactly 0 or 1 in `f32` for large scores, which would tie plays); no mars
//! estimates. pubeval is a move selector: its scores favour the side that has just
//! moved and are not comparable across positions, so use it at 0 plies (at 1 ply it
//! plays much worse, see `docs/strength.md`).

use crate::eval::{Evaluator, Probabilities};
use crate::rules::board::{Board, BAR, OFF};
use crate::rules::movegen::PlayResult;
use crate::rules::Variant;

/// Number of pubeval inputs.
pub const INPUTS: usize = 122;

/// Tesauro's contact weights (`wc`).
#[rustfmt::skip]
pub const WC: [f32; INPUTS] = [
    0.25696, -0.66937, -1.66135, -2.02487, -2.53398, -0.16092, -1.11725, -1.06654,
    -0.92830, -1.99558, -1.10388, -0.80802, 0.09856, -0.62086, -1.27999, -0.59220,
    -0.73667, 0.89032, -0.38933, -1.59847, -1.50197, -0.60966, 1.56166, -0.47389,
    -1.80390, -0.83425, -0.97741, -1.41371, 0.24500, 0.10970, -1.36476, -1.05572,
    1.15420, 0.11069, -0.38319, -0.74816, -0.59244, 0.81116, -0.39511, 0.11424,
    -0.73169, -0.56074, 1.09792, 0.15977, 0.13786, -1.18435, -0.43363, 1.06169,
    -0.21329, 0.04798, -0.94373, -0.22982, 1.22737, -0.13099, -0.06295, -0.75882,
    -0.13658, 1.78389, 0.30416, 0.36797, -0.69851, 0.13003, 1.23070, 0.40868,
    -0.21081, -0.64073, 0.31061, 1.59554, 0.65718, 0.25429, -0.80789, 0.08240,
    1.78964, 0.54304, 0.41174, -1.06161, 0.07851, 2.01451, 0.49786, 0.91936,
    -0.90750, 0.05941, 1.83120, 0.58722, 1.28777, -0.83711, -0.33248, 2.64983,
    0.52698, 0.82132, -0.58897, -1.18223, 3.35809, 0.62017, 0.57353, -0.07276,
    -0.36214, 4.37655, 0.45481, 0.21746, 0.10504, -0.61977, 3.54001, 0.04612,
    -0.18108, 0.63211, -0.87046, 2.47673, -0.48016, -1.27157, 0.86505, -1.11342,
    1.24612, -0.82385, -2.77082, 1.23606, -1.59529, 0.10438, -1.30206, -4.11520,
    5.62596, -2.75800,
];

/// Tesauro's race weights (`wr`).
#[rustfmt::skip]
pub const WR: [f32; INPUTS] = [
    0.00000, -0.17160, 0.27010, 0.29906, -0.08471, 0.00000, -1.40375, -1.05121,
    0.07217, -0.01351, 0.00000, -1.29506, -2.16183, 0.13246, -1.03508, 0.00000,
    -2.29847, -2.34631, 0.17253, 0.08302, 0.00000, -1.27266, -2.87401, -0.07456,
    -0.34240, 0.00000, -1.34640, -2.46556, -0.13022, -0.01591, 0.00000, 0.27448,
    0.60015, 0.48302, 0.25236, 0.00000, 0.39521, 0.68178, 0.05281, 0.09266,
    0.00000, 0.24855, -0.06844, -0.37646, 0.05685, 0.00000, 0.17405, 0.00430,
    0.74427, 0.00576, 0.00000, 0.12392, 0.31202, -0.91035, -0.16270, 0.00000,
    0.01418, -0.10839, -0.02781, -0.88035, 0.00000, 1.07274, 2.00366, 1.16242,
    0.22520, 0.00000, 0.85631, 1.06349, 1.49549, 0.18966, 0.00000, 0.37183,
    -0.50352, -0.14818, 0.12039, 0.00000, 0.13681, 0.13978, 1.11245, -0.12707,
    0.00000, -0.22082, 0.20178, -0.06285, -0.52728, 0.00000, -0.13597, -0.19412,
    -0.09308, -1.26062, 0.00000, 3.05454, 5.16874, 1.50680, 5.35000, 0.00000,
    2.19605, 3.85390, 0.88296, 2.30052, 0.00000, 0.92321, 1.08744, -0.11696,
    -0.78560, 0.00000, -0.09795, -0.83050, -1.09167, -4.94251, 0.00000, -1.00316,
    -3.66465, -2.56906, -9.67677, 0.00000, -2.77982, -7.26713, -3.40177, -12.32252,
    0.00000, 3.42040,
];

/// True when some checker of the mover still has an opposing checker ahead of it
/// (Portes numbering: the opponent's checkers at own indices run from 1 up to 24, its
/// bar counting as index 0 of the mover's path).
#[inline]
pub fn portes_contact(b: &Board) -> bool {
    if b.own[BAR] > 0 || b.opp[BAR] > 0 {
        return true;
    }
    // The mover's rearmost checker is at its highest occupied index; the opponent's
    // rearmost at its lowest. Contact when they have not passed each other.
    let own_back = (1..=24).rev().find(|&i| b.own[i] > 0).unwrap_or(0);
    let opp_back = (1..=24).find(|&i| b.opp[i] > 0).unwrap_or(25);
    opp_back < own_back
}

/// Tesauro's score of `b` for **its mover** seen as the side that has just moved
/// (pubeval's "computer"): the board after a play, before mirroring, with the race
/// or contact weights chosen on `b` itself. Higher is better.
#[inline]
pub fn score_after_move(b: &Board) -> f32 {
    score_with(b, !portes_contact(b))
}

/// Tesauro's score of the board `b` after a play (its mover has just moved) with the
/// race weights when `race`, else the contact weights.
///
/// The sum of `w · x` is taken point by point from the mover's 24 down to its 1,
/// then the bar and borne-off terms, in `pubeval.c`'s input order; each point's term
/// comes from a table ([`point_terms`]) holding exactly the `f32` that the five
/// inputs of that point add (`w[2] + w[3]` for 3 checkers, ...), so the score is bit
/// for bit that of summing the inputs one by one (the test's reference), without a
/// branch per point. It ranks every play of every roll in a Portes rollout's luck
/// function ([`super::rollout::PREFILTER_KEEP`]; docs/rollout.md has the timings).
#[inline]
pub fn score_with(b: &Board, race: bool) -> f32 {
    let (t, w) = if race {
        (&RACE_TERMS, &WR)
    } else {
        (&CONTACT_TERMS, &WC)
    };
    let mut s = 0f32;
    // Block k describes own point 24 - k.
    for (k, row) in t.iter().enumerate() {
        let i = 24 - k;
        // At most 15 checkers on a point (R1); `min` keeps the index in range anyway.
        let own = (b.own[i] as usize).min(15);
        s += row[own][(b.opp[i] == 1) as usize];
    }
    s += w[120] * b.opp[BAR] as f32 * 0.5;
    s += w[121] * b.own[OFF] as f32 / 15.0;
    s
}

/// Per point block, per count of own checkers (0..=15), per "one opposing checker"
/// (0/1): the point's contribution to [`score_with`].
type PointTerms = [[[f32; 2]; 16]; 24];

/// The contact weights' point terms.
static CONTACT_TERMS: PointTerms = point_terms(&WC);
/// The race weights' point terms.
static RACE_TERMS: PointTerms = point_terms(&WR);

/// What the five inputs of block `k` (own point `24 - k`) add to the score for each
/// own count and opposing blot: an opposing blot (`w[0]`) counts only on a point
/// without own checkers; 1: `w[1]`; 2: `w[2]`; 3: `w[2] + w[3]`; `n` ≥ 4:
/// `w[2] + w[4] · (n − 3) / 2` (module documentation, "Inputs").
const fn point_terms(w: &[f32; INPUTS]) -> PointTerms {
    let mut t = [[[0f32; 2]; 16]; 24];
    let mut k = 0;
    while k < 24 {
        let base = 5 * k;
        t[k][0][1] = w[base];
        let mut n = 1;
        while n < 16 {
            let v = match n {
                1 => w[base + 1],
                2 => w[base + 2],
                3 => w[base + 2] + w[base + 3],
                _ => w[base + 2] + w[base + 4] * (n as f32 - 3.0) * 0.5,
            };
            t[k][n] = [v, v];
            n += 1;
        }
        k += 1;
    }
    t
}

/// Tesauro's move choice among `plays` (the legal plays of `before` for one roll,
/// Portes): the play with the highest score, every play scored with the race weights
/// when `before` is a race and the contact weights otherwise; a play that ends the
/// game is best (`pubeval.c` returns 99999999 for all checkers off). Ties keep the
/// first play. `plays` must not be empty.
pub fn best_play<P: PlayResult>(before: &Board, plays: &[P]) -> usize {
    let race = !portes_contact(before);
    let mut best = (f32::NEG_INFINITY, 0);
    for (i, p) in plays.iter().enumerate() {
        let s = match p.outcome(Variant::Portes) {
            Some(_) => f32::INFINITY,
            None => score_with(p.board(), race),
        };
        if s > best.0 {
            best = (s, i);
        }
    }
    best.1
}

/// Tesauro's pubeval as an [`Evaluator`] (name `pubeval`; Portes only).
///
/// `eval_board` is given the position with the opponent of the side that just moved
/// to roll; it mirrors it, scores it for the side that moved, and returns the
/// flipped pseudo-probability `win = 1/2 - atan(score / 4) / π` (no mars, no draw).
/// Values for Plakoto or Fevga boards are meaningless (it is a Portes evaluator).
#[derive(Clone, Copy, Debug, Default)]
pub struct PubEval;

impl Evaluator for PubEval {
    fn eval_board(&self, variant: Variant, board: &Board) -> Probabilities {
        let moved = board.mirror(variant);
        let s = score_after_move(&moved);
        Probabilities {
            win: 0.5 - (s * 0.25).atan() * std::f32::consts::FRAC_1_PI,
            ..Probabilities::default()
        }
    }

    fn name(&self, _variant: Variant) -> String {
        "pubeval".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{Position, Side};

    /// `pubeval.c`'s sum input by input: the reference for the table of [`score_with`]
    /// (an evaluator, not a rule: no RULES.md section; the plays are R3's).
    fn score_input_by_input(b: &Board, race: bool) -> f32 {
        let w = if race { &WR } else { &WC };
        let mut s = 0f32;
        for k in 0..24 {
            let (i, base) = (24 - k, 5 * k);
            match b.own[i] {
                0 if b.opp[i] == 1 => s += w[base],
                0 => {}
                1 => s += w[base + 1],
                2 => s += w[base + 2],
                3 => s += w[base + 2] + w[base + 3],
                n => s += w[base + 2] + w[base + 4] * (n as f32 - 3.0) * 0.5,
            }
        }
        s += w[120] * b.opp[BAR] as f32 * 0.5;
        s += w[121] * b.own[OFF] as f32 / 15.0;
        s
    }

    #[test]
    fn table_score_is_the_input_by_input_sum_bit_for_bit() {
        use crate::rules::movegen::generate_positions;
        use crate::rules::Dice;
        let mut plays = Vec::new();
        let mut n = 0;
        for pos in crate::corpus::random_positions(Variant::Portes, 5, 400) {
            let b = Board::from_position(&pos, pos.turn);
            for roll in Dice::all_rolls() {
                plays.clear();
                generate_positions(Variant::Portes, &b, roll, &mut plays);
                for p in &plays {
                    for race in [false, true] {
                        let (got, want) = (score_with(p, race), score_input_by_input(p, race));
                        assert_eq!(got.to_bits(), want.to_bits(), "{p:?} race {race}");
                    }
                    n += 1;
                }
            }
        }
        assert!(n > 10_000, "{n} plays");
    }

    #[test]
    fn start_position_inputs() {
        // Portes start (R1) from White's view as the side that moved: own 24: 2, 13: 5,
        // 8: 3, 6: 5; opponent on own 1 (2), 12 (5), 17 (3), 19 (5). No blots.
        let pos = Position::start(Variant::Portes, Side::White);
        let b = Board::from_position(&pos, Side::White);
        assert!(portes_contact(&b));
        let blk = |i: usize| 5 * (24 - i);
        let want = WC[blk(24) + 2]
            + (WC[blk(13) + 2] + WC[blk(13) + 4])
            + (WC[blk(8) + 2] + WC[blk(8) + 3])
            + (WC[blk(6) + 2] + WC[blk(6) + 4]);
        assert!((score_after_move(&b) - want).abs() < 1e-5);
    }

    #[test]
    fn race_detection_and_probability_range() {
        let mut pos = Position::empty(Variant::Portes, Side::White);
        pos.add(Side::White, 3, 15).add(Side::Black, 20, 15);
        let b = Board::from_position(&pos, Side::White);
        assert!(!portes_contact(&b));
        let p = PubEval.eval_board(Variant::Portes, &b);
        assert!(p.win > 0.0 && p.win < 1.0 && p.win_mars == 0.0 && p.draw == 0.0);
        // An opposing checker on the bar is input 120 = bar / 2.
        let mut pos = Position::start(Variant::Portes, Side::White);
        pos.point_mut(1).black = 1;
        pos.bar[Side::Black.index()] = 1;
        let b2 = Board::from_position(&pos, Side::White);
        assert!(portes_contact(&b2));
        let mut b3 = b2;
        b3.opp[BAR] = 0;
        let d = score_after_move(&b2) - score_after_move(&b3);
        assert!((d - WC[120] * 0.5).abs() < 1e-5);
    }

    #[test]
    fn best_play_scores_every_play_with_the_weights_before_the_move() {
        use crate::rules::movegen::generate;
        use crate::rules::position_id::from_gnubg_id;
        use crate::rules::Dice;
        // From GNU Backgammon Position ID 7wcAALgPAIkOAg with 6-3 (found by comparing
        // with gnubg-nn's pub_best_move): White has one checker on the bar against a
        // Black army in its home; entering with the 6 and running past it breaks
        // contact. Before the move it is contact, so every play is scored with the
        // contact weights and pubeval picks what gnubg-nn's pubeval picks.
        let pos = from_gnubg_id("7wcAALgPAIkOAg", Side::White).unwrap();
        let before = Board::from_position(&pos, Side::White);
        assert!(portes_contact(&before));
        let mut plays = Vec::new();
        generate(
            Variant::Portes,
            &before,
            Dice::new(6, 3).unwrap(),
            &mut plays,
        );
        let i = best_play(&before, &plays);
        assert_eq!(
            crate::rules::position_id::gnubg_id_of_board(&plays[i].board),
            "7wcAALgPABkdAA"
        );
        let want = plays
            .iter()
            .map(|p| score_with(&p.board, false))
            .fold(f32::NEG_INFINITY, f32::max);
        assert_eq!(score_with(&plays[i].board, false), want);
        // Choosing the weights after each play instead picks another play here.
        let after = (0..plays.len())
            .max_by(|&a, &b| {
                score_after_move(&plays[a].board).total_cmp(&score_after_move(&plays[b].board))
            })
            .unwrap();
        assert_ne!(after, i);
    }
}
