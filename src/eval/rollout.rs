//! Monte Carlo rollouts: cubeless estimates of a position's probabilities from many
//! games played to the end by the engine's own evaluator (Tesauro and Galperin, "On-line
//! policy improvement using Monte-Carlo search", NIPS 1996; GNU Backgammon manual,
//! "Rollouts" and "Variance reduction").
//!
//! # A trial
//!
//! One game from the position, the side to move ("the root mover") first. Before each
//! roll: the game stops with its result when it is over (R9, R7, R5.5), with the exact
//! value of the bear-off database when the position is a no-contact bear-off
//! ([`RolloutConfig::exact_bearoff`]), or with the search's value of the position at
//! [`RolloutConfig::plies`] after [`RolloutConfig::truncation`] plies (and at
//! [`MAX_TRIAL_PLIES`] in any case). Otherwise the dice are rolled and the mover makes
//! its best play at the rollout's plies, as [`Search::best_play`] chooses it (0 ply: the
//! best by the static evaluator; 1 ply: the move filter, then 1-ply values).
//!
//! With dice given, the first roll is fixed: the root mover's best play at the
//! rollout's plies is made once, and every trial starts from the position after it.
//!
//! # Variance reduction
//!
//! - **Luck adjustment** (GNU Backgammon's variance reduction): before each random roll
//!   the mover's 0-ply value of its best 0-ply play is computed for all 21 rolls; the
//!   roll's *luck* is its value minus their average (weights 1/36, 2/36). The trial's
//!   result minus the sum of its luck has the same expectation (each luck term has
//!   mean 0 whatever happened before, for any luck function of the position and the
//!   roll) and a much smaller variance when the evaluator is good. Valuing every play
//!   of every roll costs about one 1-ply evaluation per turn, twenty times a 0-ply
//!   turn without it; so in Portes the luck function values only the
//!   [`PREFILTER_KEEP`] plays of a roll that Tesauro's pubeval ranks best (GNU
//!   Backgammon prunes candidate plays with small nets in the same way)
//!   ([`Luck::Pruned`]). Measured on the Portes start with the committed nets
//!   (`docs/rollout.md`): at 0 ply it divides the standard error of a given number of
//!   trials by 4.6 for 2.2 times the precision per CPU second of no adjustment
//!   (valuing every play: 1.6 times); at 1 ply (older nets) 11 times the precision per
//!   CPU second. The plays actually made are always the engine's own choice among
//!   all plays.
//! - **Stratified dice**: the first random roll of trial `i` is entry `i mod 36` of a
//!   seeded permutation of the 36 ordered rolls, the second is entry `(i / 36) mod 36`
//!   of a seeded permutation chosen by the first: every 36 trials see each first roll
//!   once, every 1,296 each pair of first rolls once. Later rolls come from a ChaCha8
//!   stream of the seed numbered by the trial.
//!
//! # Determinism, threads and slices
//!
//! Trial `i`'s dice depend only on the seed and `i`, and its result only on the
//! position, the settings and `i` (the shared first turn is computed the same way by
//! every run). Each result is added to the sums in fixed point ([`RolloutSums`]):
//! rounded to a multiple of 2^-40 ([`SUM_FRACTION_BITS`]), and the integers and
//! their squares are added exactly. Integer addition does not depend on the order, so
//! the sums of trials `0..n` are the same bits whatever the thread count and however
//! the trials are split: a rollout of trials `a..b` ([`RolloutConfig::first_trial`],
//! on another machine) and one of `b..c` give sums that [`merge`] adds into exactly
//! the sums, and the report, of one rollout of `a..c`. The report is a function of
//! the sums alone (and the position). Trials run on [`RolloutConfig::threads`]
//! threads; they are still added in trial order, so that every intermediate report
//! (the first `k` trials) is the same whatever the thread count too.
//!
//! The rounding moves a mean by at most 2^-41 (about 5e-13), far below the `f32`
//! figures reported. Before the exact sums the results were summed as `f64` in trial
//! order; seven rollouts of the three variants (with dice, truncation, 1 ply, a
//! played-out bear-off) print the same JSON with both, to the last bit
//! (`docs/rollout.md`, "Split rollouts").
//!
//! # Limits
//!
//! The trial count; the deadline and the cancellation token ([`StopWhen`]), checked
//! before each turn of each trial, and the report callback, which may ask to stop;
//! while it waits, the workers stop a few trials ahead (a bounded channel).

use super::net::fnv1a64;
use super::sanity::{self, Possible};
use super::search::{outcome_probabilities, roll_weight, with_scratch, Scratch, Search, Searcher};
use super::wide::U256;
use super::{EvalError, Probabilities, StopWhen};
use crate::rules::board::Board;
use crate::rules::movegen::{generate, generate_positions, play_outcome};
use crate::rules::play::to_play;
use crate::rules::{Dice, Play, Position, RulesError, Variant};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// The deepest search used to choose plays in a rollout.
pub const MAX_ROLLOUT_PLIES: u8 = 1;

/// Trials of a rollout when the caller does not say (36 × 36: every pair of first
/// rolls once).
pub const DEFAULT_TRIALS: u32 = 1296;

/// A trial that has not ended after this many plies (half-moves) is cut and valued
/// by the search, as with [`RolloutConfig::truncation`] (a Plakoto game in which
/// neither side can move any more never ends).
pub const MAX_TRIAL_PLIES: u32 = 5000;

/// Plays valued by the net per roll in the Portes luck function, after pubeval's
/// ranking ([`Rollout::luck_value`]).
pub const PREFILTER_KEEP: usize = 4;

/// The luck adjustment of a rollout (module documentation, "Variance reduction").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Luck {
    /// None: each trial's result as it is.
    Off,
    /// The luck function values every play of every roll (GNU Backgammon's).
    AllPlays,
    /// As `AllPlays`, except that in Portes only the [`PREFILTER_KEEP`] plays that
    /// pubeval ranks best are valued. The default.
    #[default]
    Pruned,
}

/// How a rollout is run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RolloutConfig {
    /// Depth of the search that chooses every play, 0 or 1 ([`MAX_ROLLOUT_PLIES`]).
    pub plies: u8,
    /// Number of trials (games), at least 1: trials `first_trial..first_trial +
    /// trials`.
    pub trials: u32,
    /// The index of the first trial run (0 for a whole rollout): a slice of a larger
    /// rollout, whose sums [`merge`] adds to those of the other slices (module
    /// documentation, "Determinism, threads and slices"). `first_trial + trials` must
    /// fit in a `u32`.
    pub first_trial: u32,
    /// The seed of the dice: the same seed gives the same answer.
    pub seed: u64,
    /// Cut each trial after this many plies (half-moves, the first roll included) and
    /// take the search's value of the position there; `None`: play to the end.
    pub truncation: Option<u32>,
    /// Luck adjustment (see the module documentation).
    pub luck: Luck,
    /// End a trial with the exact bear-off database when it reaches a no-contact
    /// bear-off (see [`super::bearoff::is_no_contact_bearoff`]); `false` plays it out.
    pub exact_bearoff: bool,
    /// Worker threads; 0: one per available core.
    pub threads: usize,
    /// Report every this many trials (in trial order); 0: only the final report.
    pub report_every: u32,
}

impl Default for RolloutConfig {
    /// 1,296 trials from trial 0 at 0 ply, seed 0, no truncation, [`Luck::Pruned`], the exact
    /// bear-off database, every core, final report only.
    fn default() -> Self {
        RolloutConfig {
            plies: 0,
            trials: DEFAULT_TRIALS,
            first_trial: 0,
            seed: 0,
            truncation: None,
            luck: Luck::Pruned,
            exact_bearoff: true,
            threads: 0,
            report_every: 0,
        }
    }
}

/// Standard errors of a rollout's estimates (the sample standard deviation of the
/// trials' results over the square root of their number; 0 with fewer than 2 trials).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StandardErrors {
    /// Of the probability of a win.
    pub win: f32,
    /// Of the probability of a 2-point win.
    pub win_mars: f32,
    /// Of the probability of a loss.
    pub lose: f32,
    /// Of the probability of a 2-point loss.
    pub lose_mars: f32,
    /// Of the probability of a draw.
    pub draw: f32,
    /// Of the equity, in points.
    pub equity: f32,
}

/// A rollout's estimate after some trials, for the root mover: before its roll, or
/// with dice, after its play of that roll.
#[derive(Clone, Debug, PartialEq)]
pub struct RolloutReport {
    /// Trials summed so far (the first `trials` of the rollout's range, in trial
    /// order).
    pub trials: u32,
    /// The mean of the trials' results (luck-adjusted with variance reduction),
    /// passed through the sanity step ([`sanity::project`]) of the position.
    pub probabilities: Probabilities,
    /// The same mean before the sanity step: with the luck adjustment an unbiased
    /// estimate that can fall outside `[0, 1]` or be inconsistent (a luck-adjusted
    /// trial is a game result minus its luck). Training labels take this one
    /// ([`crate::train::supervised::LabelBy::Rollout`]): projecting a noisy estimate
    /// onto what is possible biases it (a mars chance near 0 is raised by every
    /// negative estimate set to 0), and a fit averages the noise out only where
    /// there is no bias. Without the adjustment it is a mean of game results,
    /// already consistent, and `probabilities` equals it when no rule bound applies.
    pub mean: Probabilities,
    /// `probabilities.equity()`: points for the root mover, in `[-2, 2]`.
    pub equity: f32,
    /// Standard errors of the estimates.
    pub standard_errors: StandardErrors,
    /// True on the final report of a rollout that ran all its trials.
    pub done: bool,
    /// The static evaluator that chose the plays (`net-portes-v2`, ...), or
    /// `game-over` / `bearoff-exact` when no play was needed.
    pub evaluator: String,
    /// The search depth that chose the plays.
    pub plies: u8,
    /// With dice: the root mover's play, after which the trials start.
    pub play: Option<Play>,
    /// The exact sums behind the figures, what [`merge`] adds up: the trials
    /// `sums.first..sums.first + trials`.
    pub sums: RolloutSums,
}

/// Bits after the binary point of the fixed-point sums ([`RolloutSums`]): each
/// trial's result is rounded to a multiple of 2^-40 (about 9e-13).
pub const SUM_FRACTION_BITS: u32 = 40;

/// The largest magnitude of a trial's result in the sums (2^15); larger ones are
/// clamped to it and NaN counts as 0. Never reached: a result is a probability or
/// the equity (in `[-2, 2]`) minus the luck of at most [`MAX_TRIAL_PLIES`] rolls,
/// each in `[-4, 4]`, so at most 20,002.
pub const SUM_LIMIT: f64 = 32_768.0;

/// The six figures of a trial, in the order of [`RolloutSums::sum`]: win, win_mars,
/// lose, lose_mars, draw, equity.
pub const SUM_FIGURES: [&str; 6] = ["win", "win_mars", "lose", "lose_mars", "draw", "equity"];

/// Exact sums of the (luck-adjusted) results of the trials `first..first + trials` of
/// one rollout, in fixed point: what a slice of a rollout run elsewhere reports, and
/// what [`add_parts`] and [`merge`] add up (module documentation, "Determinism,
/// threads and slices").
///
/// For each trial with result `x` (for the root mover; `lose = 1 − win − draw`, the
/// equity `win + win_mars − lose − lose_mars`), clamped to ±[`SUM_LIMIT`], and
/// `q = round(x · 2^40)` (halves away from 0): `sum[k] += q[k]` (in `i128`: at most
/// 2^87 for 2^32 trials) and `sum_squares[k] += q[k]²` (exactly, in units of 2^-80;
/// at most 2^142). The standard errors come from `n · Σq² − (Σq)²`, computed exactly
/// (0 when every trial gave the same result).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RolloutSums {
    /// What rollout the sums belong to ([`rollout_key`]): the position, the roll, the
    /// settings that change a trial and the evaluator's name. Sums of different
    /// keys do not merge.
    pub key: u64,
    /// The index of the first trial summed.
    pub first: u32,
    /// How many trials are summed (`first..first + trials`).
    pub trials: u32,
    /// Sums of win, win_mars, lose, lose_mars, draw, equity ([`SUM_FIGURES`]), in
    /// units of 2^-40.
    pub sum: [i128; 6],
    /// Sums of the squares of the same integers (units of 2^-80).
    pub sum_squares: [U256; 6],
}

/// `x` (within ±[`SUM_LIMIT`]) in units of 2^-40, rounded to the nearest (halves away
/// from 0); NaN is 0.
#[inline]
fn fixed(x: f64) -> i128 {
    const SCALE: f64 = (1u64 << SUM_FRACTION_BITS) as f64;
    // `as` maps NaN to 0.
    (x.clamp(-SUM_LIMIT, SUM_LIMIT) * SCALE).round() as i128
}

/// `q²` for `|q|` up to 2^55 (and beyond: any `i128`).
#[inline]
fn square(q: i128) -> U256 {
    U256::mul_u128(q.unsigned_abs(), q.unsigned_abs())
}

impl RolloutSums {
    /// No trials yet, the first one `first`.
    pub fn empty(key: u64, first: u32) -> RolloutSums {
        RolloutSums {
            key,
            first,
            ..RolloutSums::default()
        }
    }

    /// Adds the next trial's result `[win, win_mars, lose_mars, draw]`.
    fn add(&mut self, v: [f64; 4]) {
        let [win, wm, lm, draw] = v;
        let lose = 1.0 - win - draw;
        let x = [win, wm, lose, lm, draw, win + wm - lose - lm];
        for (k, x) in x.into_iter().enumerate() {
            let q = fixed(x);
            self.sum[k] += q;
            self.sum_squares[k] = self.sum_squares[k]
                .checked_add(square(q))
                .expect("below 2^142 for 2^32 trials");
        }
        self.trials += 1;
    }

    /// The sums of `trials` trials from `first` whose results are all `p` (an exact
    /// answer reported as a rollout).
    fn repeat(key: u64, first: u32, trials: u32, p: &Probabilities) -> RolloutSums {
        let mut one = RolloutSums::empty(key, first);
        one.add(to_root(p, true));
        RolloutSums {
            trials,
            sum: one.sum.map(|s| s * trials as i128),
            sum_squares: one
                .sum_squares
                .map(|s| s.checked_mul_u64(trials as u64).expect("below 2^142")),
            ..one
        }
    }

    fn mean(&self, k: usize) -> f64 {
        if self.trials == 0 {
            0.0
        } else {
            self.sum[k] as f64 / (1u64 << SUM_FRACTION_BITS) as f64 / self.trials as f64
        }
    }

    /// `n · Σq² − (Σq)²` of figure `k` (`n²` times the variance of the trials, in
    /// units of 2^-80), or `None` when negative (sums that no trials can give).
    fn spread(&self, k: usize) -> Option<U256> {
        self.sum_squares[k]
            .checked_mul_u64(self.trials as u64)?
            .checked_sub(square(self.sum[k]))
    }

    fn std_error(&self, k: usize) -> f32 {
        if self.trials < 2 {
            return 0.0;
        }
        let n = self.trials as f64;
        let spread = self.spread(k).map_or(0.0, U256::to_f64) / 2f64.powi(80);
        let var = spread / (n * (n - 1.0));
        (var / n).sqrt() as f32
    }
}

/// Checks that `parts` are slices of one rollout that [`merge`] can add up and
/// returns their sum: the same key, ranges that follow each other without gap or
/// overlap once sorted by first trial (empty ones, from a finished game, anywhere),
/// the whole within `u32`, and sums that trials can give (`|Σq| ≤ n · 2^55`,
/// `(Σq)² ≤ n · Σq² ≤ n² · 2^110`). Errors ([`RulesError::Invalid`]) name the part as
/// `merge[k]` and the field (`key`, `range.first`, `range.count`, `sums`,
/// `squares`), as in `RolloutRequest.merge`; no parts is an error on `merge`.
pub fn add_parts(parts: &[RolloutSums]) -> Result<RolloutSums, RulesError> {
    let Some(p0) = parts.first() else {
        return Err(RulesError::invalid("merge", "no partial results to merge"));
    };
    let bound = fixed(SUM_LIMIT);
    for (k, p) in parts.iter().enumerate() {
        if p.key != p0.key {
            return Err(RulesError::invalid(
                format!("merge[{k}].key"),
                format!(
                    "{:#018x} is another rollout than merge[0]'s {:#018x} (position, dice, \
                     plies, seed, truncation or evaluator differ)",
                    p.key, p0.key
                ),
            ));
        }
        if p.first.checked_add(p.trials).is_none() {
            return Err(RulesError::invalid(
                format!("merge[{k}].range.count"),
                format!("first {} + count {} is beyond 2^32 - 1", p.first, p.trials),
            ));
        }
        let n = p.trials as i128;
        for (j, name) in SUM_FIGURES.iter().enumerate() {
            if p.sum[j].unsigned_abs() > (n * bound) as u128 {
                return Err(RulesError::invalid(
                    format!("merge[{k}].sums"),
                    format!(
                        "{name}: {} is out of range for {} trials",
                        p.sum[j], p.trials
                    ),
                ));
            }
            let most = square(bound).checked_mul_u64(p.trials as u64);
            if most.is_none_or(|m| p.sum_squares[j] > m) || p.spread(j).is_none() {
                return Err(RulesError::invalid(
                    format!("merge[{k}].squares"),
                    format!("{name}: no {} trials give these sums and squares", p.trials),
                ));
            }
        }
    }
    let mut order: Vec<usize> = (0..parts.len()).filter(|&k| parts[k].trials > 0).collect();
    order.sort_by_key(|&k| parts[k].first);
    // The first trial of the whole (of the lowest part when none has trials: a
    // finished game's slices).
    let first = match order.first() {
        Some(&k) => parts[k].first,
        None => parts.iter().map(|p| p.first).min().unwrap_or(0),
    };
    let mut total = RolloutSums::empty(p0.key, first);
    let mut previous: Option<usize> = None;
    for &k in &order {
        let p = &parts[k];
        let end = total.first + total.trials;
        if p.first != end {
            let prev = previous.map_or(String::new(), |o| format!(" merge[{o}] ends at {end},"));
            return Err(RulesError::invalid(
                format!("merge[{k}].range.first"),
                format!(
                    "the ranges must follow each other without gap or overlap:{prev} this \
                     one starts at {}",
                    p.first
                ),
            ));
        }
        // `p.first + p.trials` fits in a u32 (checked above), and it is the new end.
        total.trials += p.trials;
        for j in 0..6 {
            total.sum[j] += p.sum[j];
            total.sum_squares[j] = total.sum_squares[j]
                .checked_add(p.sum_squares[j])
                .expect("below 2^142 for 2^32 trials");
        }
        previous = Some(k);
    }
    Ok(total)
}

/// The key of a rollout ([`RolloutSums::key`]): FNV-1a (64 bit) of a text naming the
/// position (its Position ID), the roll, the settings that change a trial's result
/// (plies, seed, truncation, luck adjustment, exact bear-off) and the name of the
/// evaluator of the position's variant. The range and the thread count are not in
/// it. Replicas whose evaluators differ under the same name (other weights) are not
/// told apart: run one version of the engine everywhere.
pub fn rollout_key(
    pos: &Position,
    dice: Option<Dice>,
    cfg: &RolloutConfig,
    evaluator: &str,
) -> u64 {
    let text = format!(
        "tavli-rollout-1 {} dice={} plies={} seed={} truncation={} luck={:?} exact_bearoff={} \
         evaluator={evaluator}",
        crate::rules::position_id::to_id(pos),
        dice.map_or("none".to_string(), |d| format!("{}-{}", d.high(), d.low())),
        cfg.plies,
        cfg.seed,
        cfg.truncation.map_or("none".to_string(), |t| t.to_string()),
        cfg.luck,
        cfg.exact_bearoff,
    );
    fnv1a64(text.as_bytes())
}

/// The index of a roll in [`Dice::all_rolls`] (1-1, 2-1, 2-2, 3-1, ...).
#[inline]
fn roll_index(d: Dice) -> usize {
    let (h, l) = (d.high() as usize, d.low() as usize);
    h * (h - 1) / 2 + l - 1
}

/// The dice of every trial, from the seed (module documentation, "Stratified dice").
struct DiceSource {
    seed: u64,
    first: [u8; 36],
    second: [[u8; 36]; 36],
}

impl DiceSource {
    fn new(seed: u64) -> DiceSource {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(u64::MAX);
        let mut first: [u8; 36] = std::array::from_fn(|k| k as u8);
        first.shuffle(&mut rng);
        let second = std::array::from_fn(|_| {
            let mut p: [u8; 36] = std::array::from_fn(|k| k as u8);
            p.shuffle(&mut rng);
            p
        });
        DiceSource {
            seed,
            first,
            second,
        }
    }

    /// The random stream of trial `i` (for its third and later rolls).
    fn stream(&self, i: u32) -> ChaCha8Rng {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        rng.set_stream(i as u64);
        rng
    }

    /// The `turn`-th random roll (0-based) of trial `i`.
    fn roll(&self, i: u32, turn: u32, rng: &mut ChaCha8Rng) -> Dice {
        let k = match turn {
            0 => self.first[i as usize % 36],
            1 => self.second[i as usize % 36][(i as usize / 36) % 36],
            _ => rng.random_range(0..36u8),
        };
        Dice::new(k / 6 + 1, k % 6 + 1).expect("1..6")
    }
}

/// Probabilities as `[win, win_mars, lose_mars, draw]` for the root mover, from the
/// view of the side to move (`mover_is_root` or not).
#[inline]
fn to_root(p: &Probabilities, mover_is_root: bool) -> [f64; 4] {
    let p = if mover_is_root { *p } else { p.flip() };
    [
        p.win as f64,
        p.win_mars as f64,
        p.lose_mars as f64,
        p.draw as f64,
    ]
}

/// What every trial does on its first roll from the start board: the play for each
/// of the 21 rolls and (with variance reduction) the luck of each roll, for the root.
struct FirstTurn {
    /// The board after the play of each roll (positions-only path).
    plays: Vec<Board>,
    luck: Vec<[f64; 4]>,
}

/// One rollout: its settings and what the trials share.
struct Rollout<'a> {
    search: Search<'a>,
    cfg: &'a RolloutConfig,
    dice: DiceSource,
    /// The board the trials start from and whether its mover is the root mover.
    start: Board,
    start_is_root: bool,
    first: FirstTurn,
    abort: &'a AtomicBool,
    /// Rank plays by pubeval before valuing them for the luck ([`Luck::Pruned`] in
    /// Portes).
    prefilter: bool,
}

impl Rollout<'_> {
    fn variant(&self) -> Variant {
        self.search.variant
    }

    fn check(&self) -> Result<(), EvalError> {
        if self.abort.load(Ordering::Relaxed) {
            return Err(EvalError::Cancelled);
        }
        self.search.stop.check()
    }

    /// For each of the 21 rolls of `board`'s mover: the luck function `f` (the
    /// mover's 0-ply value of its best play, see [`Rollout::luck_value`]) into
    /// `values`; with `keep`, also the mover's best 0-ply play of that roll.
    /// `plays` and `order` are scratch buffers.
    fn all_rolls(
        &self,
        sc: &mut Scratch,
        board: &Board,
        plays: &mut Vec<Board>,
        order: &mut Vec<(f32, u32)>,
        values: &mut [Probabilities; 21],
        keep: Option<usize>,
    ) -> Result<Option<Board>, EvalError> {
        let mut kept = None;
        for (k, roll) in Dice::all_rolls().into_iter().enumerate() {
            plays.clear();
            generate_positions(self.variant(), board, roll, plays);
            values[k] = self.luck_value(sc, plays, order)?;
            if keep == Some(k) {
                let (i, _) = self.search.best_play(sc, plays, 0)?;
                kept = Some(plays[i]);
            }
        }
        Ok(kept)
    }

    /// The luck function of one roll: the 0-ply value, for the mover, of its best
    /// play among `plays`. In Portes with more than [`PREFILTER_KEEP`] plays, only the
    /// best [`PREFILTER_KEEP`] by Tesauro's pubeval (about a quarter of the cost of a
    /// net evaluation) are valued: the function stays a function of the position and
    /// the roll, so the luck terms keep their zero mean, and it is almost always the
    /// same play (module documentation, "Variance reduction").
    fn luck_value(
        &self,
        sc: &mut Scratch,
        plays: &[Board],
        order: &mut Vec<(f32, u32)>,
    ) -> Result<Probabilities, EvalError> {
        if !self.prefilter || plays.len() <= PREFILTER_KEEP {
            return Ok(self.search.best_play(sc, plays, 0)?.1);
        }
        order.clear();
        order.extend(plays.iter().enumerate().map(|(i, p)| {
            let s = match play_outcome(self.variant(), p) {
                Some(_) => f32::INFINITY,
                None => super::pubeval::score_after_move(p),
            };
            (s, i as u32)
        }));
        order.select_nth_unstable_by(PREFILTER_KEEP - 1, |a, b| {
            b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
        });
        let mut best: Option<(Probabilities, f32)> = None;
        for &(_, i) in &order[..PREFILTER_KEEP] {
            let v = self.search.play_value(sc, &plays[i as usize], 0)?;
            let e = v.equity();
            if best.is_none_or(|b| e > b.1) {
                best = Some((v, e));
            }
        }
        Ok(best.expect("PREFILTER_KEEP >= 1").0)
    }

    /// The luck of roll `k` for the root, given the mover's values of all 21 rolls.
    fn luck(values: &[Probabilities; 21], k: usize, mover_is_root: bool) -> [f64; 4] {
        let mut mean = [0f64; 4];
        for (roll, v) in Dice::all_rolls().iter().zip(values) {
            let w = roll_weight(*roll) as f64;
            let r = to_root(v, mover_is_root);
            for j in 0..4 {
                mean[j] += w * r[j];
            }
        }
        let got = to_root(&values[k], mover_is_root);
        std::array::from_fn(|j| got[j] - mean[j])
    }

    /// The shared first turn of every trial (see [`FirstTurn`]).
    fn first_turn(&mut self) -> Result<(), EvalError> {
        let plies = self.cfg.plies;
        let (start, is_root) = (self.start, self.start_is_root);
        let r = with_scratch(|sc| -> Result<FirstTurn, EvalError> {
            let mut plays = Vec::with_capacity(64);
            let mut order = Vec::with_capacity(64);
            let mut values = [Probabilities::default(); 21];
            let mut first = FirstTurn {
                plays: Vec::with_capacity(21),
                luck: Vec::new(),
            };
            for roll in Dice::all_rolls() {
                self.check()?;
                plays.clear();
                generate_positions(self.variant(), &start, roll, &mut plays);
                let (i, _) = self.search.best_play(sc, &plays, plies)?;
                first.plays.push(plays[i]);
            }
            if self.cfg.luck != Luck::Off {
                self.all_rolls(sc, &start, &mut plays, &mut order, &mut values, None)?;
                first.luck = (0..21).map(|k| Self::luck(&values, k, is_root)).collect();
            }
            Ok(first)
        })?;
        self.first = r;
        Ok(())
    }

    /// Trial `i`: its result for the root mover minus its luck, as `[win, win_mars,
    /// lose_mars, draw]`.
    fn trial(&self, i: u32) -> Result<[f64; 4], EvalError> {
        let mut rng = self.dice.stream(i);
        let mut luck = [0f64; 4];
        let mut board = self.start;
        let mut is_root = self.start_is_root;
        let plies = self.cfg.plies;
        let variant = self.variant();
        let result = with_scratch(|sc| -> Result<[f64; 4], EvalError> {
            let mut plays = Vec::with_capacity(64);
            let mut order = Vec::with_capacity(64);
            let mut values = [Probabilities::default(); 21];
            let mut turn = 0u32;
            loop {
                self.check()?;
                if self.cfg.exact_bearoff {
                    if let Some(p) = self.search.bearoff.eval_board(variant, &board) {
                        return Ok(to_root(&p, is_root));
                    }
                }
                let cut = self
                    .cfg
                    .truncation
                    .map_or(MAX_TRIAL_PLIES, |t| t.min(MAX_TRIAL_PLIES));
                if turn >= cut {
                    let p = self.search.evaluate(sc, &board, plies)?;
                    return Ok(to_root(&p, is_root));
                }
                let roll = self.dice.roll(i, turn, &mut rng);
                let k = roll_index(roll);
                let play = if turn == 0 {
                    if let Some(l) = self.first.luck.get(k) {
                        add(&mut luck, l);
                    }
                    self.first.plays[k]
                } else if self.cfg.luck != Luck::Off {
                    let keep = (plies == 0).then_some(k);
                    let kept =
                        self.all_rolls(sc, &board, &mut plays, &mut order, &mut values, keep)?;
                    add(&mut luck, &Self::luck(&values, k, is_root));
                    match kept {
                        Some(p) => p,
                        None => self.best(sc, &board, roll, &mut plays)?,
                    }
                } else {
                    self.best(sc, &board, roll, &mut plays)?
                };
                if let Some(o) = play_outcome(variant, &play) {
                    return Ok(to_root(&outcome_probabilities(o), is_root));
                }
                board = play.mirror(variant);
                is_root = !is_root;
                turn += 1;
            }
        })?;
        Ok(std::array::from_fn(|j| result[j] - luck[j]))
    }

    /// The mover's best play of `roll` at the rollout's plies.
    fn best(
        &self,
        sc: &mut Scratch,
        board: &Board,
        roll: Dice,
        plays: &mut Vec<Board>,
    ) -> Result<Board, EvalError> {
        plays.clear();
        generate_positions(self.variant(), board, roll, plays);
        let (i, _) = self.search.best_play(sc, plays, self.cfg.plies)?;
        Ok(plays[i])
    }
}

#[inline]
fn add(acc: &mut [f64; 4], x: &[f64; 4]) {
    for j in 0..4 {
        acc[j] += x[j];
    }
}

/// What a report says besides its sums: the rule bounds of the start, the evaluator,
/// the plies and the root play.
struct Header {
    /// What the rules allow the root mover from where the trials start.
    ok: Possible,
    evaluator: String,
    plies: u8,
    play: Option<Play>,
}

/// A report of `sums`, its probabilities projected onto what the rules allow in the
/// root position (`h.ok`).
fn report(sums: &RolloutSums, h: &Header, done: bool) -> RolloutReport {
    let raw = Probabilities {
        win: sums.mean(0) as f32,
        win_mars: sums.mean(1) as f32,
        lose_mars: sums.mean(3) as f32,
        draw: sums.mean(4) as f32,
    };
    let p = if sums.trials == 0 {
        raw
    } else {
        sanity::project(raw, &h.ok)
    };
    RolloutReport {
        trials: sums.trials,
        probabilities: p,
        mean: raw,
        equity: p.equity(),
        standard_errors: StandardErrors {
            win: sums.std_error(0),
            win_mars: sums.std_error(1),
            lose: sums.std_error(2),
            lose_mars: sums.std_error(3),
            draw: sums.std_error(4),
            equity: sums.std_error(5),
        },
        done,
        evaluator: h.evaluator.clone(),
        plies: h.plies,
        play: h.play.clone(),
        sums: *sums,
    }
}

/// An exact answer reported as a finished rollout (a finished game, or a first play
/// that ends it): `sums.trials` results all equal to `p`, standard errors 0.
fn exact(
    p: Probabilities,
    sums: RolloutSums,
    evaluator: &str,
    plies: u8,
    play: Option<Play>,
) -> RolloutReport {
    RolloutReport {
        trials: sums.trials,
        probabilities: p,
        mean: p,
        equity: p.equity(),
        standard_errors: StandardErrors::default(),
        done: true,
        evaluator: evaluator.to_string(),
        plies,
        play,
        sums,
    }
}

/// Rolls out `pos` (optionally with the root mover's `dice`) with the engine's
/// evaluator, as the module documentation describes: the trials
/// `cfg.first_trial..cfg.first_trial + cfg.trials`.
///
/// `on_report` gets a report every [`RolloutConfig::report_every`] trials and the
/// final one (`done`); returning `ControlFlow::Break` stops the rollout
/// ([`EvalError::Cancelled`]). A finished game (R9) gives its outcome at once (no
/// trials, evaluator `game-over`), as does a first play that ends the game (all
/// trials equal). Every report carries its exact sums ([`RolloutReport::sums`]),
/// which [`merge`] adds to those of other slices of the same rollout.
///
/// Errors: [`EvalError::Rules`] for an invalid position (R9), `plies` above
/// [`MAX_ROLLOUT_PLIES`] (field `plies`), 0 trials (field `trials`) or a range past
/// `u32::MAX` (field `first_trial`); [`EvalError::Unavailable`] when a contact
/// position of the variant has no static evaluator; [`EvalError::DeadlineExceeded`] /
/// [`EvalError::Cancelled`] when `stop` says so, after a last report of the trials
/// finished (`done` false).
pub fn rollout(
    engine: &dyn Searcher,
    pos: &Position,
    dice: Option<Dice>,
    cfg: &RolloutConfig,
    stop: StopWhen<'_>,
    on_report: &mut dyn FnMut(&RolloutReport) -> ControlFlow<()>,
) -> Result<RolloutReport, EvalError> {
    if cfg.trials == 0 {
        return Err(RulesError::invalid("trials", "at least 1 trial").into());
    }
    let Some(end) = cfg.first_trial.checked_add(cfg.trials) else {
        return Err(RulesError::invalid(
            "first_trial",
            format!(
                "first_trial {} + trials {} is beyond the last trial index {}",
                cfg.first_trial,
                cfg.trials,
                u32::MAX
            ),
        )
        .into());
    };
    let (key, setup) = setup(engine, pos, dice, cfg, stop)?;
    let (search, start, start_is_root, header) = match setup {
        Setup::Exact(e) => {
            let r = e.report(key, cfg.first_trial, cfg.trials);
            let _ = on_report(&r);
            return Ok(r);
        }
        Setup::Trials {
            search,
            start,
            start_is_root,
            header,
        } => (search, start, start_is_root, header),
    };
    let variant = pos.variant;
    let abort = AtomicBool::new(false);
    let mut ro = Rollout {
        search,
        cfg,
        dice: DiceSource::new(cfg.seed),
        start,
        start_is_root,
        first: FirstTurn {
            plays: Vec::new(),
            luck: Vec::new(),
        },
        abort: &abort,
        prefilter: variant == Variant::Portes && cfg.luck == Luck::Pruned,
    };
    // A start that is already a bear-off needs no first turn.
    let bearoff_start = cfg.exact_bearoff && search.bearoff.eval_board(variant, &start).is_some();
    if !bearoff_start && cfg.truncation != Some(0) {
        ro.first_turn()?;
    }
    let threads = match cfg.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .clamp(1, cfg.trials as usize);
    let next = AtomicU32::new(cfg.first_trial);
    let mut sums = RolloutSums::empty(key, cfg.first_trial);
    let mut error: Option<EvalError> = None;
    let mut reported = 0u32;
    std::thread::scope(|s| {
        // Bounded: while `on_report` waits (a client that reads slowly), the workers
        // stop after a few trials ahead instead of running on.
        let (tx, rx) = mpsc::sync_channel::<(u32, Result<[f64; 4], EvalError>)>(2 * threads);
        for _ in 0..threads {
            let (tx, ro, next) = (tx.clone(), &ro, &next);
            s.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= end || ro.abort.load(Ordering::Relaxed) {
                    break;
                }
                let r = ro.trial(i);
                let failed = r.is_err();
                if tx.send((i, r)).is_err() || failed {
                    break;
                }
            });
        }
        drop(tx);
        // Results arrive out of order; they are added in trial order, so that every
        // intermediate report is the first trials of the range.
        let mut waiting: BTreeMap<u32, [f64; 4]> = BTreeMap::new();
        loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok((i, Ok(v))) => {
                    waiting.insert(i, v);
                    while let Some(v) = waiting.remove(&(cfg.first_trial + sums.trials)) {
                        sums.add(v);
                        let n = sums.trials;
                        if error.is_none()
                            && cfg.report_every > 0
                            && n.is_multiple_of(cfg.report_every)
                            && n < cfg.trials
                        {
                            reported = n;
                            if on_report(&report(&sums, &header, false)).is_break() {
                                error = Some(EvalError::Cancelled);
                                abort.store(true, Ordering::Relaxed);
                            }
                        }
                    }
                }
                Ok((_, Err(e))) => {
                    error.get_or_insert(e);
                    abort.store(true, Ordering::Relaxed);
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(e) = ro.search.stop.check() {
                        error.get_or_insert(e);
                        abort.store(true, Ordering::Relaxed);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
    });
    if let Some(e) = error {
        if sums.trials > reported {
            let _ = on_report(&report(&sums, &header, false));
        }
        return Err(e);
    }
    let r = report(&sums, &header, true);
    let _ = on_report(&r);
    Ok(r)
}

/// An answer known without trials: a finished game (`trials` 0, evaluator
/// `game-over`) or a first play that ends the game (every trial the same).
struct ExactAnswer {
    p: Probabilities,
    game_over: bool,
    evaluator: String,
    plies: u8,
    play: Option<Play>,
}

impl ExactAnswer {
    /// The report of trials `first..first + trials` (none for a finished game).
    fn report(self, key: u64, first: u32, trials: u32) -> RolloutReport {
        let trials = if self.game_over { 0 } else { trials };
        let sums = RolloutSums::repeat(key, first, trials, &self.p);
        exact(self.p, sums, &self.evaluator, self.plies, self.play)
    }
}

/// A rollout before its trials: an exact answer, or what the trials need.
enum Setup<'a> {
    /// No trials needed.
    Exact(ExactAnswer),
    /// The trials start from `start` (whose mover is the root mover or not).
    Trials {
        search: Search<'a>,
        start: Board,
        start_is_root: bool,
        header: Header,
    },
}

/// What [`rollout`] and [`merge`] share: the checks of the position and the plies,
/// the key, the root play with dice, and the exact answers (module documentation).
fn setup<'a>(
    engine: &'a dyn Searcher,
    pos: &Position,
    dice: Option<Dice>,
    cfg: &RolloutConfig,
    stop: StopWhen<'a>,
) -> Result<(u64, Setup<'a>), EvalError> {
    pos.validate()?;
    if cfg.plies > MAX_ROLLOUT_PLIES {
        return Err(RulesError::invalid(
            "plies",
            format!(
                "rollouts choose plays at 0..{MAX_ROLLOUT_PLIES} plies, got {}",
                cfg.plies
            ),
        )
        .into());
    }
    let variant = pos.variant;
    let search = engine.search(variant, stop);
    let evaluator = search
        .static_eval
        .map_or_else(|| "bearoff-exact".to_string(), |e| e.name(variant));
    let key = rollout_key(pos, dice, cfg, &evaluator);
    if let Some(o) = pos.game_over() {
        let setup = Setup::Exact(ExactAnswer {
            p: sanity::outcome_for_turn(pos, &o),
            game_over: true,
            evaluator: "game-over".to_string(),
            plies: 0,
            play: None,
        });
        return Ok((key, setup));
    }
    let root = Board::from_position(pos, pos.turn);
    let (start, start_is_root, play) = match dice {
        None => (root, true, None),
        Some(d) => {
            let mut plays = Vec::new();
            generate(variant, &root, d, &mut plays);
            let (i, v) = with_scratch(|sc| search.best_play(sc, &plays, cfg.plies))?;
            let play = to_play(variant, pos.turn, &plays[i]);
            if plays[i].outcome.is_some() {
                let setup = Setup::Exact(ExactAnswer {
                    p: v,
                    game_over: false,
                    evaluator,
                    plies: cfg.plies,
                    play: Some(play),
                });
                return Ok((key, setup));
            }
            (plays[i].board.mirror(variant), false, Some(play))
        }
    };
    let start_ok = sanity::possible_outcomes(variant, &start);
    let header = Header {
        ok: if start_is_root {
            start_ok
        } else {
            start_ok.flip()
        },
        evaluator,
        plies: cfg.plies,
        play,
    };
    let setup = Setup::Trials {
        search,
        start,
        start_is_root,
        header,
    };
    Ok((key, setup))
}

/// Merges the sums of slices of one rollout of `pos` (with `dice`, and `cfg`'s plies,
/// seed, truncation, luck and bear-off settings; its range, threads and report
/// interval are not used) into the final report of the whole: bit for bit the report
/// that [`rollout`] gives for the trials `first..first + n` the slices cover (each
/// slice's [`RolloutReport::sums`], from this machine or another running the same
/// engine). No trial is run; with dice the root play is searched again (as
/// [`rollout`] does before its trials).
///
/// Errors: those of [`add_parts`] (fields `merge[k]...`); a part whose key is not
/// this rollout's ([`rollout_key`]) on `merge[k].key`; and those of [`rollout`] for
/// the position and `plies`.
pub fn merge(
    engine: &dyn Searcher,
    pos: &Position,
    dice: Option<Dice>,
    cfg: &RolloutConfig,
    parts: &[RolloutSums],
) -> Result<RolloutReport, EvalError> {
    let total = add_parts(parts)?;
    let (key, setup) = setup(engine, pos, dice, cfg, StopWhen::default())?;
    if let Some(k) = parts.iter().position(|p| p.key != key) {
        return Err(RulesError::invalid(
            format!("merge[{k}].key"),
            format!(
                "{:#018x} is not the key of this rollout ({key:#018x}): the position, dice, \
                 plies, seed, truncation or evaluator differ",
                parts[k].key
            ),
        )
        .into());
    }
    Ok(match setup {
        Setup::Exact(e) => e.report(key, total.first, total.trials),
        Setup::Trials { header, .. } => report(&total, &header, true),
    })
}
