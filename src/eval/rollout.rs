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
//! # Determinism and threads
//!
//! Trial `i`'s dice depend only on the seed and `i`; trials run on
//! [`RolloutConfig::threads`] threads and their results are summed in trial order, so
//! the answer (and every intermediate report) is the same whatever the thread count.
//!
//! # Limits
//!
//! The trial count; the deadline and the cancellation token ([`StopWhen`]), checked
//! before each turn of each trial, and the report callback, which may ask to stop;
//! while it waits, the workers stop a few trials ahead (a bounded channel).

use super::sanity;
use super::search::{outcome_probabilities, roll_weight, with_scratch, Scratch, Search, Searcher};
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
    /// Number of trials (games), at least 1.
    pub trials: u32,
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
    /// 1,296 trials at 0 ply, seed 0, no truncation, [`Luck::Pruned`], the exact
    /// bear-off database, every core, final report only.
    fn default() -> Self {
        RolloutConfig {
            plies: 0,
            trials: DEFAULT_TRIALS,
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
    /// Trials summed so far (the first `trials` in trial order).
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
}

/// Running sums of the trials' results, in trial order.
#[derive(Clone, Copy, Debug, Default)]
struct Sums {
    n: u32,
    /// Sums of win, win_mars, lose, lose_mars, draw, equity.
    sum: [f64; 6],
    /// Sums of their squares.
    sq: [f64; 6],
}

impl Sums {
    fn add(&mut self, v: [f64; 4]) {
        let [win, wm, lm, draw] = v;
        let lose = 1.0 - win - draw;
        let x = [win, wm, lose, lm, draw, win + wm - lose - lm];
        for (k, x) in x.into_iter().enumerate() {
            self.sum[k] += x;
            self.sq[k] += x * x;
        }
        self.n += 1;
    }

    fn mean(&self, k: usize) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum[k] / self.n as f64
        }
    }

    fn std_error(&self, k: usize) -> f32 {
        if self.n < 2 {
            return 0.0;
        }
        let n = self.n as f64;
        let var = ((self.sq[k] - self.sum[k] * self.sum[k] / n) / (n - 1.0)).max(0.0);
        (var / n).sqrt() as f32
    }
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

/// A report of `sums`, its probabilities projected onto what the rules allow in the
/// root position (`ok`).
fn report(
    sums: &Sums,
    ok: &sanity::Possible,
    done: bool,
    evaluator: &str,
    plies: u8,
    play: &Option<Play>,
) -> RolloutReport {
    let raw = Probabilities {
        win: sums.mean(0) as f32,
        win_mars: sums.mean(1) as f32,
        lose_mars: sums.mean(3) as f32,
        draw: sums.mean(4) as f32,
    };
    let p = if sums.n == 0 {
        raw
    } else {
        sanity::project(raw, ok)
    };
    RolloutReport {
        trials: sums.n,
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
        evaluator: evaluator.to_string(),
        plies,
        play: play.clone(),
    }
}

/// An exact answer reported as a finished rollout (a finished game, or a first play
/// that ends it): `trials` results all equal to `p`, standard errors 0.
fn exact(
    p: Probabilities,
    trials: u32,
    evaluator: &str,
    plies: u8,
    play: Option<Play>,
) -> RolloutReport {
    RolloutReport {
        trials,
        probabilities: p,
        mean: p,
        equity: p.equity(),
        standard_errors: StandardErrors::default(),
        done: true,
        evaluator: evaluator.to_string(),
        plies,
        play,
    }
}

/// Rolls out `pos` (optionally with the root mover's `dice`) with the engine's
/// evaluator, as the module documentation describes.
///
/// `on_report` gets a report every [`RolloutConfig::report_every`] trials and the
/// final one (`done`); returning `ControlFlow::Break` stops the rollout
/// ([`EvalError::Cancelled`]). A finished game (R9) gives its outcome at once (no
/// trials, evaluator `game-over`), as does a first play that ends the game (all
/// trials equal).
///
/// Errors: [`EvalError::Rules`] for an invalid position (R9), `plies` above
/// [`MAX_ROLLOUT_PLIES`] (field `plies`) or 0 trials (field `trials`);
/// [`EvalError::Unavailable`] when a contact position of the variant has no static
/// evaluator; [`EvalError::DeadlineExceeded`] / [`EvalError::Cancelled`] when `stop`
/// says so, after a last report of the trials finished (`done` false).
pub fn rollout(
    engine: &dyn Searcher,
    pos: &Position,
    dice: Option<Dice>,
    cfg: &RolloutConfig,
    stop: StopWhen<'_>,
    on_report: &mut dyn FnMut(&RolloutReport) -> ControlFlow<()>,
) -> Result<RolloutReport, EvalError> {
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
    if cfg.trials == 0 {
        return Err(RulesError::invalid("trials", "at least 1 trial").into());
    }
    let variant = pos.variant;
    let search = engine.search(variant, stop);
    let evaluator = search
        .static_eval
        .map_or_else(|| "bearoff-exact".to_string(), |e| e.name(variant));
    if let Some(o) = pos.game_over() {
        let r = exact(sanity::outcome_for_turn(pos, &o), 0, "game-over", 0, None);
        let _ = on_report(&r);
        return Ok(r);
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
                let r = exact(v, cfg.trials, &evaluator, cfg.plies, Some(play));
                let _ = on_report(&r);
                return Ok(r);
            }
            (plays[i].board.mirror(variant), false, Some(play))
        }
    };
    // What the rules allow the root mover from where the trials start.
    let start_ok = sanity::possible_outcomes(variant, &start);
    let ok = if start_is_root {
        start_ok
    } else {
        start_ok.flip()
    };
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
    let next = AtomicU32::new(0);
    let mut sums = Sums::default();
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
                if i >= cfg.trials || ro.abort.load(Ordering::Relaxed) {
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
        // Results arrive out of order; they are summed in trial order.
        let mut waiting: BTreeMap<u32, [f64; 4]> = BTreeMap::new();
        loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok((i, Ok(v))) => {
                    waiting.insert(i, v);
                    while let Some(v) = waiting.remove(&sums.n) {
                        sums.add(v);
                        let n = sums.n;
                        if error.is_none()
                            && cfg.report_every > 0
                            && n % cfg.report_every == 0
                            && n < cfg.trials
                        {
                            reported = n;
                            let r = report(&sums, &ok, false, &evaluator, cfg.plies, &play);
                            if on_report(&r).is_break() {
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
        if sums.n > reported {
            let _ = on_report(&report(&sums, &ok, false, &evaluator, cfg.plies, &play));
        }
        return Err(e);
    }
    let r = report(&sums, &ok, true, &evaluator, cfg.plies, &play);
    let _ = on_report(&r);
    Ok(r)
}
