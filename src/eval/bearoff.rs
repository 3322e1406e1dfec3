//! Exact one-sided bear-off database and the exact evaluator of no-contact bear-offs.
//!
//! The database holds every position of 0 to 15 checkers on the six home points
//! (own points 1..=6): `C(21, 6) = 54,264` positions. For each it stores two
//! probability distributions over the number of turns `t = 0..MAX_TURNS`:
//!
//! - **all off**: `P(the last checker is borne off on turn t)` when the side plays each
//!   roll so as to minimise the expected number of turns to bear off all checkers;
//! - **first off**: `P(the first checker is borne off on turn t)` when the side plays
//!   so as to minimise the expected number of turns to bear off one checker (the
//!   play that saves a mars, RULES.md R7).
//!
//! Moves follow the rules core (RULES.md R6 bearing off, R3 dice): the exact die bears
//! off from its point, a die larger than the highest occupied point bears off from
//! that point, otherwise the die moves a checker inside the home board. Without
//! contact every die is playable while a checker remains, so the maximum-dice rule
//! means "play every die until all checkers are off" (a sequence stops when the game
//! ends, R3). A test checks these successors against
//! [`crate::rules::movegen::generate`].
//!
//! The table is built deterministically on first use ([`BearoffDb::global`], once per
//! process, about 0.1 s in release; see `docs/performance.md`).
//!
//! Two one-sided distributions give the exact cubeless probabilities of a position
//! where both sides have all their remaining checkers in their own home and nothing
//! can touch (no bar, no pins): in Portes and Plakoto the homes are own 1..6 and the
//! opponent's 19..24; in Fevga own 1..6 and 13..18. See [`is_no_contact_bearoff`].

use super::{Evaluator, Probabilities};
use crate::rules::board::{flip_index, Board, BAR, OFF};
use crate::rules::{Dice, Variant, CHECKERS};
use std::sync::OnceLock;

/// Number of home points covered by the database.
pub const POINTS: usize = 6;

/// Number of positions: every way to place 0..=15 checkers on 6 points, `C(21, 6)`.
pub const POSITIONS: usize = 54_264;

/// Length of each stored distribution: turns `0..MAX_TURNS`. Fifteen checkers on the
/// 6-point need at most 30 turns (2-1 every turn); the build asserts nothing is lost.
pub const MAX_TURNS: usize = 32;

/// Binomial coefficients `C(n, k)` for `n <= 21`, `k <= 6`.
const BINOM: [[u32; POINTS + 1]; 22] = {
    let mut t = [[0u32; POINTS + 1]; 22];
    let mut n = 0;
    while n < 22 {
        t[n][0] = 1;
        let mut k = 1;
        while k <= POINTS {
            t[n][k] = if n == 0 {
                0
            } else {
                t[n - 1][k - 1] + t[n - 1][k]
            };
            k += 1;
        }
        n += 1;
    }
    t
};

/// A one-sided position packed as six 4-bit counts: bits `4 * (p - 1)..` hold the
/// checkers on own point `p` (1..=6).
type Key = u32;

#[inline]
fn count(k: Key, p: usize) -> u32 {
    (k >> (4 * (p - 1))) & 15
}

#[inline]
fn bit(p: usize) -> Key {
    1 << (4 * (p - 1))
}

/// Highest occupied point (1..=6) of a non-empty key.
#[inline]
fn highest(k: Key) -> usize {
    (31 - k.leading_zeros() as usize) / 4 + 1
}

/// Total checkers of a key.
#[inline]
fn total(k: Key) -> u32 {
    (1..=POINTS).map(|p| count(k, p)).sum()
}

/// The database index of a position given as counts on own points 1..=6.
///
/// The counts are written as a 21-bit string (for each point its checkers as ones and
/// then a zero, unused checkers as trailing ones); the index is the colex rank of the
/// positions of the six zeros. Panics in debug builds when the counts exceed 15.
#[inline]
pub fn index(counts: &[u8; POINTS]) -> usize {
    let mut r = 0u32;
    let mut z = 0usize;
    for (j, &c) in counts.iter().enumerate() {
        z += c as usize;
        debug_assert!(z <= CHECKERS as usize, "more than 15 checkers");
        r += BINOM[z + j][j + 1];
    }
    r as usize
}

#[inline]
fn index_key(k: Key) -> usize {
    let mut r = 0u32;
    let mut z = 0usize;
    for j in 0..POINTS {
        z += count(k, j + 1) as usize;
        r += BINOM[z + j][j + 1];
    }
    r as usize
}

/// Every position reached by moving one checker of `k` by `die` (RULES.md R6), pushed
/// to `out`. `k` must not be empty.
#[inline]
fn steps_of(k: Key, die: usize, out: &mut Vec<Key>) {
    let h = highest(k);
    for p in 1..=h {
        if count(k, p) == 0 {
            continue;
        }
        if p > die {
            out.push(k - bit(p) + bit(p - die));
        } else if p == die || p == h {
            out.push(k - bit(p));
        }
    }
}

/// Every position after a complete legal play of `roll` from `k` (duplicates possible
/// for non-doubles), in `finals` (cleared first). `(a, b)` are scratch buffers. The
/// build uses an equivalent step table; the tests check both against the rules core.
#[cfg(test)]
fn successors(k: Key, roll: Dice, finals: &mut Vec<Key>, (a, b): &mut (Vec<Key>, Vec<Key>)) {
    let (d1, d2) = (roll.die1() as usize, roll.die2() as usize);
    finals.clear();
    if d1 == d2 {
        a.clear();
        a.push(k);
        for _ in 0..4 {
            b.clear();
            for &x in a.iter() {
                if x == 0 {
                    b.push(0); // the game ended: the remaining dice are not played (R3)
                } else {
                    steps_of(x, d1, b);
                }
            }
            b.sort_unstable();
            b.dedup();
            std::mem::swap(a, b);
        }
        finals.extend_from_slice(a);
    } else {
        for (x, y) in [(d1, d2), (d2, d1)] {
            a.clear();
            steps_of(k, x, a);
            for &s in a.iter() {
                if s == 0 {
                    finals.push(0);
                } else {
                    steps_of(s, y, finals);
                }
            }
        }
    }
}

/// The exact one-sided bear-off database (see the module documentation).
pub struct BearoffDb {
    /// `all[i * MAX_TURNS + t]`: P(all checkers off on turn t) for position `i`.
    all: Vec<f32>,
    /// `first[i * MAX_TURNS + t]`: P(first checker off on turn t) for position `i`.
    first: Vec<f32>,
    /// Expected turns to bear off all checkers.
    mean_all: Vec<f32>,
    /// Expected turns to bear off the first checker.
    mean_first: Vec<f32>,
}

static GLOBAL: OnceLock<BearoffDb> = OnceLock::new();

impl BearoffDb {
    /// The process-wide database, built on first call (thread-safe, once).
    pub fn global() -> &'static BearoffDb {
        GLOBAL.get_or_init(BearoffDb::build)
    }

    /// Builds the database (deterministic, single thread; see `docs/performance.md`).
    ///
    /// Positions are processed by increasing pip count, so every successor is done
    /// first. A table of one-checker steps (index → index, per die) is built once;
    /// then for each position and die the best result of 1..=4 steps (by expected
    /// turns) is the best over its first steps of the best result of one step fewer,
    /// which gives each roll's best play with a few lookups: non-doubles try both
    /// orders (R3), doubles take four steps, and a sequence that bears off the last
    /// checker stops there (R3: the empty position stays empty).
    pub fn build() -> BearoffDb {
        let mut keys = vec![0 as Key; POSITIONS];
        let mut c = [0u8; POINTS];
        fn fill(p: usize, left: u8, c: &mut [u8; POINTS], keys: &mut [Key]) {
            if p == POINTS {
                let k = c
                    .iter()
                    .enumerate()
                    .fold(0, |k, (j, &n)| k | (n as Key) << (4 * j));
                keys[index(c)] = k;
                return;
            }
            for n in 0..=left {
                c[p] = n;
                fill(p + 1, left - n, c, keys);
            }
            c[p] = 0;
        }
        fill(0, CHECKERS, &mut c, &mut keys);
        let pips = |k: Key| (1..=POINTS).map(|p| p as u32 * count(k, p)).sum::<u32>();
        let mut order: Vec<u32> = (0..POSITIONS as u32).collect();
        order.sort_by_key(|&i| pips(keys[i as usize]));
        let checkers: Vec<u8> = keys.iter().map(|&k| total(k) as u8).collect();

        // steps[i * 6 + d - 1]: the positions one checker move by die d away (NONE-padded).
        const NONE: u32 = u32::MAX;
        let mut steps = vec![[NONE; POINTS]; POSITIONS * POINTS];
        let mut buf = Vec::with_capacity(POINTS);
        for (i, &k) in keys.iter().enumerate() {
            for d in 1..=POINTS {
                let row = &mut steps[i * POINTS + d - 1];
                if k == 0 {
                    row[0] = 0; // finished: stays finished
                    continue;
                }
                buf.clear();
                steps_of(k, d, &mut buf);
                for (slot, &s) in row.iter_mut().zip(&buf) {
                    *slot = index_key(s) as u32;
                }
            }
        }

        let mut db = BearoffDb {
            all: vec![0.0; POSITIONS * MAX_TURNS],
            first: vec![0.0; POSITIONS * MAX_TURNS],
            mean_all: vec![0.0; POSITIONS],
            mean_first: vec![0.0; POSITIONS],
        };
        // Nonzero ranges of each distribution, to accumulate only those.
        let mut range_all = vec![(0u8, 0u8); POSITIONS];
        let mut range_first = vec![(0u8, 0u8); POSITIONS];
        db.all[0] = 1.0;
        db.first[0] = 1.0;
        // best_all[i][(d-1)*4 + k-1]: best position after k steps of die d from i.
        // best_first[...]: the same for "first off", DONE when a step bears off.
        const DONE: u32 = u32::MAX;
        // The value of reaching `f` for "first off": -1 once a step has borne a checker
        // off (DONE), below every mean, so that it is chosen first.
        let first_value = |mean_first: &[f32], f: u32| {
            if f == DONE {
                -1.0
            } else {
                mean_first[f as usize]
            }
        };
        let mut best_all = vec![[0u32; 4 * POINTS]; POSITIONS];
        let mut best_first = vec![[0u32; 4 * POINTS]; POSITIONS];
        let rolls = Dice::all_rolls();
        let mut acc_all = [0f64; MAX_TURNS];
        let mut acc_first = [0f64; MAX_TURNS];
        for &i in order.iter().skip(1) {
            let i = i as usize;
            let n = checkers[i];
            // Best k-step results from i, k = 1..=4, for every die.
            for d in 1..=POINTS {
                let row = steps[i * POINTS + d - 1];
                for k in 1..=4 {
                    let (mut ba, mut ea) = (0u32, f32::INFINITY);
                    let (mut bf, mut ef) = (0u32, f32::INFINITY);
                    for &s in row.iter().take_while(|&&s| s != NONE) {
                        let s = s as usize;
                        let (a, f) = if k == 1 {
                            (s as u32, s as u32)
                        } else {
                            let slot = (d - 1) * 4 + k - 2;
                            (best_all[s][slot], best_first[s][slot])
                        };
                        if db.mean_all[a as usize] < ea {
                            (ba, ea) = (a, db.mean_all[a as usize]);
                        }
                        // A step that bears off, or any later one that does: done.
                        let f = if checkers[s] < n { DONE } else { f };
                        let e = first_value(&db.mean_first, f);
                        if e < ef {
                            (bf, ef) = (f, e);
                        }
                    }
                    best_all[i][(d - 1) * 4 + k - 1] = ba;
                    best_first[i][(d - 1) * 4 + k - 1] = bf;
                }
            }
            acc_all.fill(0.0);
            acc_first.fill(0.0);
            let (mut m_all, mut m_first) = (1f64, 1f64);
            for roll in rolls {
                let (d1, d2) = (roll.die1() as usize, roll.die2() as usize);
                let (ba, bf, w) = if d1 == d2 {
                    let slot = (d1 - 1) * 4 + 3;
                    (best_all[i][slot], best_first[i][slot], 1.0 / 36.0)
                } else {
                    let (mut ba, mut ea) = (0u32, f32::INFINITY);
                    let (mut bf, mut ef) = (0u32, f32::INFINITY);
                    for (x, y) in [(d1, d2), (d2, d1)] {
                        for &s in steps[i * POINTS + x - 1].iter().take_while(|&&s| s != NONE) {
                            let s = s as usize;
                            let a = best_all[s][(y - 1) * 4];
                            if db.mean_all[a as usize] < ea {
                                (ba, ea) = (a, db.mean_all[a as usize]);
                            }
                            let f = if checkers[s] < n || s == 0 {
                                DONE
                            } else {
                                best_first[s][(y - 1) * 4]
                            };
                            let e = first_value(&db.mean_first, f);
                            if e < ef {
                                (bf, ef) = (f, e);
                            }
                        }
                    }
                    (ba, bf, 2.0 / 36.0)
                };
                let ba = ba as usize;
                m_all += w * db.mean_all[ba] as f64;
                let (lo, hi) = range_all[ba];
                assert!(
                    (hi as usize) < MAX_TURNS - 1,
                    "bear-off needs more than {MAX_TURNS} turns"
                );
                let src = &db.all[ba * MAX_TURNS..][..MAX_TURNS];
                for t in lo as usize..=hi as usize {
                    acc_all[t + 1] += w * src[t] as f64;
                }
                if bf == DONE {
                    acc_first[1] += w;
                } else {
                    let bf = bf as usize;
                    m_first += w * db.mean_first[bf] as f64;
                    let (lo, hi) = range_first[bf];
                    let src = &db.first[bf * MAX_TURNS..][..MAX_TURNS];
                    for t in lo as usize..=hi as usize {
                        acc_first[t + 1] += w * src[t] as f64;
                    }
                }
            }
            db.mean_all[i] = m_all as f32;
            db.mean_first[i] = m_first as f32;
            let range = |acc: &[f64; MAX_TURNS]| {
                let lo = acc.iter().position(|&x| x != 0.0).unwrap_or(0);
                let hi = acc.iter().rposition(|&x| x != 0.0).unwrap_or(0);
                (lo as u8, hi as u8)
            };
            range_all[i] = range(&acc_all);
            range_first[i] = range(&acc_first);
            for t in 0..MAX_TURNS {
                db.all[i * MAX_TURNS + t] = acc_all[t] as f32;
                db.first[i * MAX_TURNS + t] = acc_first[t] as f32;
            }
        }
        db
    }

    /// P(all checkers of `counts` (own points 1..=6) are off on turn `t`), for
    /// `t = 0..MAX_TURNS`, with play minimising the expected number of turns.
    pub fn turns_all(&self, counts: &[u8; POINTS]) -> &[f32] {
        &self.all[index(counts) * MAX_TURNS..][..MAX_TURNS]
    }

    /// P(the first checker of `counts` is off on turn `t`), `t = 0..MAX_TURNS`, with
    /// play minimising the expected number of turns to the first checker off. The
    /// empty position gives 1 at `t = 0`.
    pub fn turns_first(&self, counts: &[u8; POINTS]) -> &[f32] {
        &self.first[index(counts) * MAX_TURNS..][..MAX_TURNS]
    }

    /// Expected turns to bear off all checkers of `counts`.
    pub fn mean_turns_all(&self, counts: &[u8; POINTS]) -> f32 {
        self.mean_all[index(counts)]
    }

    /// Expected turns to bear off the first checker of `counts`.
    pub fn mean_turns_first(&self, counts: &[u8; POINTS]) -> f32 {
        self.mean_first[index(counts)]
    }

    /// Exact cubeless probabilities of a two-sided race, the side with `own` to roll.
    ///
    /// `own`, `opp`: each side's checkers on its own points 1..=6 (at least one each);
    /// `own_off`, `opp_off`: checkers each side has borne off (a mars is possible only
    /// against a side with none off, R7). Mars figures assume the losing side plays to
    /// save the mars (the "first off" distribution) and the winner to finish fast.
    pub fn race(
        &self,
        own: &[u8; POINTS],
        own_off: u8,
        opp: &[u8; POINTS],
        opp_off: u8,
    ) -> Probabilities {
        let a = self.turns_all(own);
        let b = self.turns_all(opp);
        // We finish on our turn t after the opponent had t - 1 turns: we win when it
        // needs B >= t turns, with a mars when its first checker needs Fo >= t turns.
        // It finishes on its turn t after we had t turns: a mars when Fm >= t + 1.
        let mut win = 0f64;
        let mut win_mars = 0f64;
        let mut lose_mars = 0f64;
        let fo = (opp_off == 0).then(|| self.turns_first(opp));
        let fm = (own_off == 0).then(|| self.turns_first(own));
        let (mut tail_b, mut tail_fo, mut tail_fm) = (1f64, 1f64, 1f64);
        for t in 0..MAX_TURNS {
            // Here: tail_b = P(B >= t), tail_fo = P(Fo >= t), tail_fm = P(Fm >= t + 1).
            if t > 0 {
                tail_b -= b[t - 1] as f64;
                if let Some(fo) = fo {
                    tail_fo -= fo[t - 1] as f64;
                }
            }
            if let Some(fm) = fm {
                tail_fm -= fm[t] as f64;
            }
            if t > 0 {
                win += a[t] as f64 * tail_b;
                if fo.is_some() {
                    win_mars += a[t] as f64 * tail_fo;
                }
                // The opponent finishes on its turn t: we had t turns without finishing.
                if fm.is_some() {
                    lose_mars += b[t] as f64 * tail_fm;
                }
            }
        }
        let win = win.clamp(0.0, 1.0) as f32;
        Probabilities {
            win,
            win_mars: (win_mars.clamp(0.0, 1.0) as f32).min(win),
            lose_mars: (lose_mars.clamp(0.0, 1.0) as f32).min(1.0 - win),
            draw: 0.0,
        }
    }

    /// Exact probabilities of a board for which [`is_no_contact_bearoff`] holds, or
    /// `None` for any other board.
    pub fn eval_board(&self, variant: Variant, board: &Board) -> Option<Probabilities> {
        if !is_no_contact_bearoff(variant, board) {
            return None;
        }
        let (own, opp) = home_counts(variant, board);
        Some(self.race(&own, board.own[OFF], &opp, board.opp[OFF]))
    }
}

/// Each side's checkers on its own points 1..=6: `(mover, opponent)`.
#[inline]
pub fn home_counts(variant: Variant, board: &Board) -> ([u8; POINTS], [u8; POINTS]) {
    let mut own = [0u8; POINTS];
    let mut opp = [0u8; POINTS];
    for p in 1..=POINTS {
        own[p - 1] = board.own[p];
        opp[p - 1] = board.opp[flip_index(variant, p)];
    }
    (own, opp)
}

/// True when both sides have every checker not yet borne off in their own home
/// (own 1..=6), none on the bar, no pins (Plakoto), and neither side has borne off all
/// 15: a pure race whose exact value the database gives, in every variant.
#[inline]
pub fn is_no_contact_bearoff(variant: Variant, board: &Board) -> bool {
    if board.own_pinned != 0 || board.opp_pinned != 0 || board.own[BAR] != 0 || board.opp[BAR] != 0
    {
        return false;
    }
    if board.own[OFF] >= CHECKERS || board.opp[OFF] >= CHECKERS {
        return false;
    }
    if board.own[7..=24].iter().any(|&n| n != 0) {
        return false;
    }
    let opp_home: u8 = (1..=POINTS)
        .map(|p| board.opp[flip_index(variant, p)])
        .sum();
    opp_home + board.opp[OFF] == CHECKERS
}

/// The exact bear-off [`Evaluator`] (name `bearoff-exact`).
///
/// Only for boards where [`is_no_contact_bearoff`] holds; the engine checks this
/// before calling it. Panics on any other board.
#[derive(Clone, Copy)]
pub struct BearoffEvaluator {
    db: &'static BearoffDb,
}

impl BearoffEvaluator {
    /// The evaluator over the process-wide database (built on first use).
    pub fn new() -> BearoffEvaluator {
        BearoffEvaluator {
            db: BearoffDb::global(),
        }
    }

    /// The database it reads.
    pub fn db(&self) -> &'static BearoffDb {
        self.db
    }
}

impl Default for BearoffEvaluator {
    fn default() -> Self {
        Self::new()
    }
}

impl Evaluator for BearoffEvaluator {
    /// Panics when the board is not a no-contact bear-off ([`is_no_contact_bearoff`]).
    fn eval_board(&self, variant: Variant, board: &Board) -> Probabilities {
        self.db
            .eval_board(variant, board)
            .expect("BearoffEvaluator: not a no-contact bear-off position")
    }

    fn name(&self, _variant: Variant) -> String {
        "bearoff-exact".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::movegen::{generate, RawPlay};
    use crate::rules::{Position, Side};

    fn db() -> &'static BearoffDb {
        BearoffDb::global()
    }

    fn close(a: f32, b: f64) -> bool {
        (a as f64 - b).abs() < 1e-6
    }

    /// A race: White's checkers on its own points 1..=6, Black's on its own 1..=6.
    fn race_board(variant: Variant, white: [u8; 6], black: [u8; 6]) -> Board {
        let mut pos = Position::empty(variant, Side::White);
        for p in 1..=6u8 {
            pos.add(Side::White, p, white[p as usize - 1]);
            let printed = Position::printed_point(variant, Side::Black, p);
            pos.add(Side::Black, printed, black[p as usize - 1]);
        }
        pos.off = [
            CHECKERS - white.iter().sum::<u8>(),
            CHECKERS - black.iter().sum::<u8>(),
        ];
        pos.validate().unwrap();
        Board::from_position(&pos, Side::White)
    }

    #[test]
    fn index_is_a_bijection_onto_54264() {
        let mut seen = vec![false; POSITIONS];
        let mut n = 0;
        for k in 0..(1u32 << 24) {
            if total(k) > 15 || (1..=6).any(|p| count(k, p) > 15) {
                continue;
            }
            // Only nibble values summing to <= 15: walk quickly by skipping big ones.
            let i = index_key(k);
            assert!(!seen[i]);
            seen[i] = true;
            n += 1;
        }
        assert_eq!(n, POSITIONS);
        assert_eq!(BINOM[21][6] as usize, POSITIONS);
        assert_eq!(index(&[0; 6]), 0);
    }

    #[test]
    fn distributions_sum_to_one() {
        let db = db();
        for i in 0..POSITIONS {
            let s: f64 = db.all[i * MAX_TURNS..][..MAX_TURNS]
                .iter()
                .map(|&x| x as f64)
                .sum();
            let f: f64 = db.first[i * MAX_TURNS..][..MAX_TURNS]
                .iter()
                .map(|&x| x as f64)
                .sum();
            assert!((s - 1.0).abs() < 1e-5, "position {i}: {s}");
            assert!((f - 1.0).abs() < 1e-5, "position {i}: {f}");
            assert!(db.mean_first[i] <= db.mean_all[i] + 1e-5);
        }
    }

    #[test]
    fn single_checker_expected_turns() {
        let db = db();
        // One checker on own 1: any roll bears it off (R6, larger die from the highest).
        assert!(close(db.mean_turns_all(&[1, 0, 0, 0, 0, 0]), 1.0));
        // One checker on own 6: off in one turn unless the dice total less than 6
        // without a 6 (2-1, 3-1, 4-1, 3-2 both ways, 1-1): 9 of 36 miss. After a miss
        // it stands on own 3 or lower and any roll bears it off: E = 1 + 9/36.
        assert!(close(db.mean_turns_all(&[0, 0, 0, 0, 0, 1]), 1.25));
        let d = db.turns_all(&[0, 0, 0, 0, 0, 1]);
        assert!(close(d[1], 27.0 / 36.0) && close(d[2], 9.0 / 36.0));
        // Two checkers on own 1: off in one turn (two dice).
        assert!(close(db.mean_turns_all(&[2, 0, 0, 0, 0, 0]), 1.0));
        // Five on own 1: a double takes 4 off, so 3 turns only with no double... :
        // turn 1 takes 2 (non-double, 30/36) or 4 (double, 6/36).
        let d = db.turns_all(&[5, 0, 0, 0, 0, 0]);
        // Two turns: double then anything (1/6), or non-double then double (5/6*1/6)...
        // exactly: after a non-double 3 remain: done next turn only with a double.
        // after a double 1 remains: done next turn. P(2) = 1/6 + 5/6*1/6, P(3) = 25/36.
        assert!(close(d[2], 1.0 / 6.0 + 5.0 / 36.0));
        assert!(close(d[3], 25.0 / 36.0));
    }

    #[test]
    fn one_checker_each_on_the_one_point_wins_for_the_mover() {
        for v in Variant::ALL {
            let b = race_board(v, [1, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0]);
            assert!(is_no_contact_bearoff(v, &b));
            let p = db().eval_board(v, &b).unwrap();
            assert_eq!(
                (p.win, p.win_mars, p.lose_mars, p.draw),
                (1.0, 0.0, 0.0, 0.0)
            );
            assert_eq!(p.equity(), 1.0);
        }
    }

    #[test]
    fn one_checker_each_on_the_six_point() {
        // R6: the mover bears off at once with probability 27/36 = 3/4 (see above);
        // otherwise the opponent does with 3/4, and if it misses too the mover's
        // checker (now on own 3 or lower) comes off: win = 3/4 + 1/4 * 1/4 = 13/16.
        for v in Variant::ALL {
            let b = race_board(v, [0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 1]);
            let p = db().eval_board(v, &b).unwrap();
            assert!(close(p.win, 13.0 / 16.0), "{v}: {p:?}");
            assert_eq!((p.win_mars, p.lose_mars), (0.0, 0.0)); // both have 14 off (R7)
        }
    }

    #[test]
    fn mars_values() {
        // Mover: one checker on own 1 (14 off); opponent: 15 on its 6-point, none
        // off: the mover wins now with a mars (R7).
        let b = race_board(Variant::Portes, [1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 15]);
        let p = db().eval_board(Variant::Portes, &b).unwrap();
        assert_eq!((p.win, p.win_mars), (1.0, 1.0));
        assert_eq!(p.equity(), 2.0);
        // Mover: 15 on own 6, opponent one checker on own 1. The mover cannot finish
        // in one turn, the opponent then finishes. The mover saves the mars only by
        // bearing a checker off now: any 6 (11/36), 5-1 and 4-2 (4/36: 6/1 1/off),
        // 3-3 and 2-2 (2/36). Lose mars = 1 - 17/36 = 19/36.
        let b = race_board(Variant::Fevga, [0, 0, 0, 0, 0, 15], [1, 0, 0, 0, 0, 0]);
        let p = db().eval_board(Variant::Fevga, &b).unwrap();
        assert_eq!(p.win, 0.0);
        assert!(close(p.lose_mars, 19.0 / 36.0), "{p:?}");
        assert!(close(
            db().turns_first(&[0, 0, 0, 0, 0, 15])[1],
            17.0 / 36.0
        ));
    }

    #[test]
    fn not_a_bearoff() {
        let pos = Position::start(Variant::Portes, Side::White);
        let b = Board::from_position(&pos, Side::White);
        assert!(!is_no_contact_bearoff(Variant::Portes, &b));
        assert!(db().eval_board(Variant::Portes, &b).is_none());
    }

    /// The stored expectations equal a brute-force one-turn look-ahead over every
    /// complete play (sampled positions).
    #[test]
    fn build_matches_brute_force_expectations() {
        let db = db();
        let (mut finals, mut scratch) = (Vec::new(), (Vec::new(), Vec::new()));
        for k in (0..(1u32 << 24)).step_by(4099) {
            if k == 0 || total(k) > 15 {
                continue;
            }
            let n = total(k);
            let (mut e_all, mut e_first) = (1f64, 1f64);
            for roll in Dice::all_rolls() {
                let w = if roll.is_double() { 1.0 } else { 2.0 } / 36.0;
                successors(k, roll, &mut finals, &mut scratch);
                let best = finals
                    .iter()
                    .map(|&s| db.mean_all[index_key(s)])
                    .fold(f32::INFINITY, f32::min);
                e_all += w * best as f64;
                if finals.iter().all(|&s| total(s) == n) {
                    let best = finals
                        .iter()
                        .map(|&s| db.mean_first[index_key(s)])
                        .fold(f32::INFINITY, f32::min);
                    e_first += w * best as f64;
                }
            }
            let i = index_key(k);
            assert!((db.mean_all[i] as f64 - e_all).abs() < 1e-4, "{k:x}");
            assert!((db.mean_first[i] as f64 - e_first).abs() < 1e-4, "{k:x}");
        }
    }

    /// The database's successors are exactly the rules core's legal plays (R3, R6),
    /// checked for every roll on a sample of positions.
    #[test]
    fn successors_match_the_rules_core() {
        let db = db();
        let _ = db;
        let mut plays: Vec<RawPlay> = Vec::new();
        let (mut finals, mut scratch) = (Vec::new(), (Vec::new(), Vec::new()));
        let mut keys = Vec::new();
        // Every 37th position, by building keys from indices via the bijection.
        let mut all = vec![0 as Key; POSITIONS];
        for k in 0..(1u32 << 24) {
            if total(k) <= 15 {
                all[index_key(k)] = k;
            }
        }
        keys.extend(all.iter().step_by(37).copied().filter(|&k| k != 0));
        for &k in &keys {
            let mut own = [0u8; 6];
            for p in 1..=6 {
                own[p - 1] = count(k, p) as u8;
            }
            // The opponent: 15 on its 6-point, so no contact in any variant.
            let board = race_board(Variant::Portes, own, [0, 0, 0, 0, 0, 15]);
            for roll in Dice::all_rolls() {
                plays.clear();
                generate(Variant::Portes, &board, roll, &mut plays);
                let mut want: Vec<Key> = plays
                    .iter()
                    .map(|p| {
                        (1..=6).fold(0, |acc, q| acc | (p.board.own[q] as Key) << (4 * (q - 1)))
                    })
                    .collect();
                want.sort_unstable();
                want.dedup();
                successors(k, roll, &mut finals, &mut scratch);
                finals.sort_unstable();
                finals.dedup();
                assert_eq!(finals, want, "key {k:x} roll {roll}");
            }
        }
    }
}
