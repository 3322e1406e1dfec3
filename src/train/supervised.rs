//! The supervised step after TD(λ), as wildbg and GNU Backgammon train their nets:
//! positions from self-play ([`self_play_positions`]), labelled by the engine's own
//! search ([`label`]: the n-ply value of [`crate::eval::search`] over a static
//! evaluator, the exact bear-off database at the leaves), and a fit of a net to those
//! labels ([`fit`]). Repeating the three steps with the newly fitted net is a form of
//! approximate value iteration: a 1-ply value of net N is a better estimate than net
//! N's own 0-ply value, and net N+1 learns it.
//!
//! Every step is deterministic for its seed, whatever the number of threads.

use super::data::{DataSet, Target};
use super::sgd::Adam;
use crate::eval::bearoff::is_no_contact_bearoff;
use crate::eval::engine::{variant_index, Engine};
use crate::eval::features::has_contact;
use crate::eval::inputs::SparseInputs;
use crate::eval::net::{to_probabilities, Net, OUTPUTS};
use crate::eval::rollout::{rollout, Luck, RolloutConfig};
use crate::eval::search::{game_over_probabilities, with_scratch, Search};
use crate::eval::{Evaluator, Probabilities, StopWhen};
use crate::rules::board::{Board, OFF};
use crate::rules::movegen::generate;
use crate::rules::{Dice, Side, Variant};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashSet;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::mix;

fn search(variant: Variant, eval: &dyn Evaluator) -> Search<'_> {
    Search::plain(variant, eval)
}

/// Settings of [`self_play_positions`].
#[derive(Clone, Copy, Debug)]
pub struct GenConfig {
    /// Games to play.
    pub games: u64,
    /// Master seed (dice and exploration of game `g` come from `mix(seed ^ g)`).
    pub seed: u64,
    /// Probability of a uniformly random legal play instead of the best one at each
    /// turn (exploration: positions the greedy player would not reach).
    pub epsilon: f32,
    /// Worker threads (the result does not depend on it).
    pub threads: usize,
    /// A game is abandoned after this many turns.
    pub max_turns: u32,
    /// Also keep, at every turn, the positions after this many of the next best plays
    /// at 0 ply (the alternatives the player weighs against its choice).
    pub alternatives: usize,
}

/// Positions (mover to roll) of `cfg.games` self-play games of `eval` at 0 ply with
/// ε-random plays, and the positions after the next `cfg.alternatives` best plays of
/// every turn: every position once (first occurrence, in game order), no finished
/// game and no no-contact bear-off (the database answers those exactly).
pub fn self_play_positions(
    variant: Variant,
    eval: &Arc<dyn Evaluator>,
    cfg: &GenConfig,
    done: &AtomicUsize,
) -> DataSet {
    let threads = cfg.threads.max(1);
    let mut per_game: Vec<(u64, Vec<Board>)> = Vec::with_capacity(cfg.games as usize);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads as u64)
            .map(|t| {
                let eval = eval.clone();
                scope.spawn(move || {
                    let s = search(variant, &*eval);
                    let mut out = Vec::new();
                    let mut plays = Vec::with_capacity(64);
                    let mut ranked = Vec::with_capacity(64);
                    for g in (t..cfg.games).step_by(threads) {
                        let mut rng = ChaCha8Rng::seed_from_u64(mix(cfg.seed ^ mix(g)));
                        let mut boards = Vec::with_capacity(64);
                        let mut board = super::td::start_board(variant);
                        for _ in 0..cfg.max_turns {
                            if board.game_over_for_mover(variant).is_some() {
                                break;
                            }
                            if !is_no_contact_bearoff(variant, &board) {
                                boards.push(board);
                            }
                            let dice = Dice::new(rng.random_range(1..=6), rng.random_range(1..=6))
                                .expect("dice in 1..=6");
                            plays.clear();
                            generate(variant, &board, dice, &mut plays);
                            let best = if cfg.alternatives > 0 {
                                with_scratch(|sc| s.rank(sc, &plays, 0, &mut ranked))
                                    .expect("the evaluator answers every board");
                                // The next best plays: the positions the player
                                // compares with its choice.
                                for &(k, _, _) in ranked.iter().skip(1).take(cfg.alternatives) {
                                    let p = &plays[k];
                                    let next = p.board.mirror(variant);
                                    if p.outcome.is_none()
                                        && next.game_over_for_mover(variant).is_none()
                                        && !is_no_contact_bearoff(variant, &next)
                                    {
                                        boards.push(next);
                                    }
                                }
                                ranked[0].0
                            } else {
                                with_scratch(|sc| s.best_play(sc, &plays, 0))
                                    .expect("the evaluator answers every board")
                                    .0
                            };
                            let i = if cfg.epsilon > 0.0 && rng.random::<f32>() < cfg.epsilon {
                                rng.random_range(0..plays.len())
                            } else {
                                best
                            };
                            if plays[i].outcome.is_some() {
                                break;
                            }
                            board = plays[i].board.mirror(variant);
                        }
                        out.push((g, boards));
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    out
                })
            })
            .collect();
        for h in handles {
            per_game.extend(h.join().expect("self-play thread"));
        }
    });
    per_game.sort_by_key(|g| g.0);
    let mut seen = HashSet::new();
    let mut set = DataSet::new(variant);
    for (_, boards) in per_game {
        for b in boards {
            if seen.insert(b) {
                set.boards.push(b);
            }
        }
    }
    set
}

/// The rule-implied bounds of a target (R7): no mars for the mover once the opponent
/// has borne off a checker, none against it once it has borne off one; outside
/// Plakoto no draw.
pub fn bound_target(variant: Variant, board: &Board, mut t: Target) -> Target {
    if board.opp[OFF] > 0 {
        t[1] = 0.0;
    }
    if board.own[OFF] > 0 {
        t[2] = 0.0;
    }
    if variant != Variant::Plakoto {
        t[3] = 0.0;
    }
    t
}

/// The target vector of probabilities.
pub fn target_of(p: &Probabilities) -> Target {
    [p.win, p.win_mars, p.lose_mars, p.draw]
}

/// How [`label`] values a position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabelBy {
    /// The `plies`-deep search value (0..=2; [`Search::evaluate`]).
    Search {
        /// Search depth.
        plies: u8,
    },
    /// The mean of a cubeless rollout ([`crate::eval::rollout`]) of `trials` games
    /// played at 0 ply, with stratified dice for the first two rolls, the exact
    /// bear-off database at the end and, with `luck`, the luck adjustment (the
    /// rollout's defaults otherwise). Trial dice of board `k` come from
    /// `mix(seed ^ k)`: the labels do not depend on the thread count.
    ///
    /// The label is the mean before the rollout's sanity step
    /// ([`crate::eval::rollout::RolloutReport::mean`]), with only the rules' zeros of
    /// [`bound_target`]: an unbiased estimate, which with `luck` and few trials can
    /// fall outside `[0, 1]`. (Projected, the 4-game labels of docs/training.md's
    /// "Round 14" differed in 12% of the positions, by 0.006 rms in equity.)
    Rollout {
        /// Games per position (at least 1).
        trials: u32,
        /// Master seed.
        seed: u64,
        /// Luck adjustment ([`Luck::Pruned`]) or none ([`Luck::Off`]).
        luck: bool,
        /// Cut each game after this many plies and take the net's 0-ply value there
        /// ([`RolloutConfig::truncation`]); `None`: play to the end.
        truncation: Option<u32>,
    },
}

/// Labels every board with its value by `eval` as `by` says (the exact bear-off
/// database at the leaves and for no-contact bear-offs; a finished game by its
/// outcome), bounded by [`bound_target`]. Deterministic; `done` counts labelled boards.
pub fn label(
    variant: Variant,
    boards: &[Board],
    eval: &Arc<dyn Evaluator>,
    by: LabelBy,
    threads: usize,
    done: &AtomicUsize,
) -> Vec<Target> {
    let threads = threads.max(1);
    let chunk = 256;
    let chunks = boards.len().div_ceil(chunk);
    let next = AtomicUsize::new(0);
    let mut parts: Vec<(usize, Vec<Target>)> = Vec::with_capacity(chunks);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let eval = eval.clone();
                let next = &next;
                scope.spawn(move || {
                    let s = search(variant, &*eval);
                    let engine = rollout_engine(variant, &eval);
                    let mut out = Vec::new();
                    loop {
                        let c = next.fetch_add(1, Ordering::Relaxed);
                        if c >= chunks {
                            break;
                        }
                        let first = c * chunk;
                        let part: Vec<Target> = boards[first..(first + chunk).min(boards.len())]
                            .iter()
                            .enumerate()
                            .map(|(k, b)| {
                                let p = match (b.game_over_for_mover(variant), by) {
                                    (Some((won, o)), _) => game_over_probabilities(won, o),
                                    (None, LabelBy::Search { plies }) => {
                                        with_scratch(|sc| s.evaluate(sc, b, plies))
                                            .expect("the evaluator answers every board")
                                    }
                                    (
                                        None,
                                        LabelBy::Rollout {
                                            trials,
                                            seed,
                                            luck,
                                            truncation,
                                        },
                                    ) => rollout_label(
                                        &engine,
                                        variant,
                                        b,
                                        trials,
                                        mix(seed ^ (first + k) as u64),
                                        luck,
                                        truncation,
                                    ),
                                };
                                done.fetch_add(1, Ordering::Relaxed);
                                bound_target(variant, b, target_of(&p))
                            })
                            .collect();
                        out.push((c, part));
                    }
                    out
                })
            })
            .collect();
        for h in handles {
            parts.extend(h.join().expect("label thread"));
        }
    });
    parts.sort_by_key(|p| p.0);
    parts.into_iter().flat_map(|p| p.1).collect()
}

/// An engine whose only static evaluator is `eval` (for the rollouts of [`label`]).
fn rollout_engine(variant: Variant, eval: &Arc<dyn Evaluator>) -> Engine {
    let mut evals: [Option<Arc<dyn Evaluator>>; 3] = [None, None, None];
    evals[variant_index(variant)] = Some(eval.clone());
    Engine::new(evals)
}

/// The rollout value of `board` (its mover to roll; game not over) for [`LabelBy::Rollout`].
fn rollout_label(
    engine: &Engine,
    variant: Variant,
    board: &Board,
    trials: u32,
    seed: u64,
    luck: bool,
    truncation: Option<u32>,
) -> Probabilities {
    let pos = board.to_position(variant, Side::White, Side::White);
    let cfg = RolloutConfig {
        plies: 0,
        trials,
        seed,
        truncation,
        luck: if luck { Luck::Pruned } else { Luck::Off },
        threads: 1,
        ..RolloutConfig::default()
    };
    rollout(engine, &pos, None, &cfg, StopWhen::default(), &mut |_| {
        ControlFlow::Continue(())
    })
    .expect("a rollout of a valid board with an evaluator answers")
    .mean
}

/// Which positions a fit uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subset {
    /// Every position.
    All,
    /// Positions with contact ([`has_contact`]).
    Contact,
    /// Race positions (no contact).
    Race,
}

impl Subset {
    /// Whether `board` belongs to the subset.
    pub fn contains(self, variant: Variant, board: &Board) -> bool {
        match self {
            Subset::All => true,
            Subset::Contact => has_contact(variant, board),
            Subset::Race => !has_contact(variant, board),
        }
    }
}

/// Settings of [`fit`].
#[derive(Clone, Copy, Debug)]
pub struct FitConfig {
    /// Passes over the training positions.
    pub epochs: u32,
    /// Step size at the start; decays linearly to `alpha_end` over all epochs.
    pub alpha: f32,
    /// Step size at the end.
    pub alpha_end: f32,
    /// Seed of the shuffles and of the hold-out choice.
    pub seed: u64,
    /// Share of positions held out to measure the fit (0..1).
    pub holdout: f32,
    /// 0: plain SGD, one step per position ([`Net::train`]); `n` ≥ 1: Adam on
    /// batches of `n` positions ([`crate::train::sgd::Adam`]; the step size is Adam's).
    pub adam_batch: usize,
}

/// The fit's figures after one epoch.
#[derive(Clone, Copy, Debug, Default)]
pub struct EpochReport {
    /// Epoch number, from 1.
    pub epoch: u32,
    /// Step size at the end of the epoch.
    pub alpha: f32,
    /// Mean cross-entropy per output on the training positions (during the epoch).
    pub train_loss: f64,
    /// Mean cross-entropy per output on the held-out positions.
    pub holdout_loss: f64,
    /// Mean absolute equity error on the held-out positions (points).
    pub holdout_equity_error: f64,
    /// Positions trained and held out.
    pub trained: usize,
    /// Held-out positions.
    pub held_out: usize,
}

fn cross_entropy(variant: Variant, y: &[f32; OUTPUTS], t: &Target) -> f64 {
    let k = if variant == Variant::Plakoto { 4 } else { 3 };
    let mut s = 0.0;
    for j in 0..k {
        let (y, t) = ((y[j] as f64).clamp(1e-7, 1.0 - 1e-7), t[j] as f64);
        s -= t * y.ln() + (1.0 - t) * (1.0 - y).ln();
    }
    s / k as f64
}

/// Mean cross-entropy and mean absolute equity error of `net` on the positions
/// `hold` of `data`.
fn holdout_error(net: &Net, data: &DataSet, hold: &[usize], x: &mut SparseInputs) -> (f64, f64) {
    let variant = net.variant;
    let (mut hl, mut he) = (0.0, 0.0);
    for &i in hold {
        net.encode(&data.boards[i], x);
        let y = net.forward(x);
        let t = &data.targets[i];
        hl += cross_entropy(variant, &y, t);
        let want = to_probabilities(variant, *t).equity();
        he += (to_probabilities(variant, y).equity() - want).abs() as f64;
    }
    let n = hold.len().max(1) as f64;
    (hl / n, he / n)
}

/// Fits `net` to the labelled positions of `data` in `subset` on the cross-entropy of
/// each output, by plain SGD ([`Net::train`]) or minibatch Adam
/// ([`FitConfig::adam_batch`]), reporting each epoch. With 0 epochs
/// it only reports the held-out figures of `net` as it is.
pub fn fit(
    net: &mut Net,
    data: &DataSet,
    subset: Subset,
    cfg: &FitConfig,
    mut report: impl FnMut(&EpochReport),
) -> EpochReport {
    let variant = net.variant;
    let mut idx: Vec<usize> = (0..data.len())
        .filter(|&i| subset.contains(variant, &data.boards[i]))
        .collect();
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    idx.shuffle(&mut rng);
    let held = ((idx.len() as f64) * cfg.holdout as f64) as usize;
    let (hold, train) = idx.split_at_mut(held);
    let hold = hold.to_vec();
    let total = cfg.epochs as f64 * train.len() as f64;
    let mut step = 0f64;
    let mut x = SparseInputs::default();
    let mut last = EpochReport::default();
    let mut adam = (cfg.adam_batch > 0).then(|| Adam::new(net));
    if cfg.epochs == 0 {
        // Only measure the net as it is on the held-out positions.
        let (hl, he) = holdout_error(net, data, &hold, &mut x);
        last = EpochReport {
            holdout_loss: hl,
            holdout_equity_error: he,
            trained: train.len(),
            held_out: hold.len(),
            ..EpochReport::default()
        };
        report(&last);
        return last;
    }
    for epoch in 1..=cfg.epochs {
        train.shuffle(&mut rng);
        let mut loss = 0.0;
        let mut alpha = cfg.alpha;
        for &i in train.iter() {
            alpha = cfg.alpha + (cfg.alpha_end - cfg.alpha) * (step / total.max(1.0)) as f32;
            step += 1.0;
            let b = &data.boards[i];
            net.encode(b, &mut x);
            let t = &data.targets[i];
            let y = match adam.as_mut() {
                None => net.train(&x, t, alpha),
                Some(adam) => {
                    let y = net.accumulate(&x, t, adam);
                    if adam.count >= cfg.adam_batch {
                        net.adam_step(adam, alpha);
                    }
                    y
                }
            };
            loss += cross_entropy(variant, &y, t);
        }
        if let Some(adam) = adam.as_mut() {
            net.adam_step(adam, alpha);
        }
        let (hl, he) = holdout_error(net, data, &hold, &mut x);
        last = EpochReport {
            epoch,
            alpha,
            train_loss: loss / train.len().max(1) as f64,
            holdout_loss: hl,
            holdout_equity_error: he,
            trained: train.len(),
            held_out: hold.len(),
        };
        report(&last);
    }
    net.games += (train.len() as u64) * cfg.epochs as u64;
    last
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::inputs::InputSet;
    use crate::eval::net::NetEvaluator;

    fn random_net(v: Variant) -> Arc<dyn Evaluator> {
        Arc::new(NetEvaluator::single(
            2,
            Net::new_random(v, InputSet::V2, 8, 1),
        ))
    }

    #[test]
    fn self_play_is_deterministic_for_any_thread_count_and_unique() {
        let v = Variant::Portes;
        let e = random_net(v);
        let cfg = |threads| GenConfig {
            games: 6,
            seed: 3,
            epsilon: 0.1,
            threads,
            max_turns: 500,
            alternatives: 0,
        };
        let done = AtomicUsize::new(0);
        let one = self_play_positions(v, &e, &cfg(1), &done);
        let two = self_play_positions(v, &e, &cfg(2), &done);
        assert_eq!(one, two);
        assert_eq!(done.load(Ordering::Relaxed), 12);
        assert!(one.len() > 100, "{}", one.len());
        let unique: HashSet<_> = one.boards.iter().collect();
        assert_eq!(unique.len(), one.len());
        assert!(one.boards.iter().all(|b| !is_no_contact_bearoff(v, b)));
        assert_eq!(one.boards[0], super::super::td::start_board(v));
    }

    /// Positions of `games` greedy self-play games (no random plays).
    fn greedy_positions(
        v: Variant,
        e: &Arc<dyn Evaluator>,
        games: u64,
        seed: u64,
        alternatives: usize,
    ) -> DataSet {
        let cfg = GenConfig {
            games,
            seed,
            epsilon: 0.0,
            threads: 1,
            max_turns: 500,
            alternatives,
        };
        self_play_positions(v, e, &cfg, &AtomicUsize::new(0))
    }

    #[test]
    fn labels_are_the_search_values_within_the_rules() {
        let v = Variant::Portes;
        let e = random_net(v);
        let done = AtomicUsize::new(0);
        let set = greedy_positions(v, &e, 2, 1, 2);
        let boards = &set.boards[..40];
        let by = LabelBy::Search { plies: 1 };
        let l1 = label(v, boards, &e, by, 2, &done);
        let s = search(v, &*e);
        for (b, t) in boards.iter().zip(&l1) {
            let p = with_scratch(|sc| s.evaluate(sc, b, 1)).unwrap();
            assert_eq!(*t, bound_target(v, b, target_of(&p)));
            if b.opp[OFF] > 0 {
                assert_eq!(t[1], 0.0, "R7: no mars once the opponent has borne off");
            }
        }
        assert_eq!(label(v, boards, &e, by, 1, &done), l1);
    }

    #[test]
    fn rollout_labels_are_rollout_means_within_the_rules() {
        let v = Variant::Portes;
        let e = random_net(v);
        let done = AtomicUsize::new(0);
        let set = greedy_positions(v, &e, 1, 4, 0);
        // The mover's last checker on its 1 point, the opponent with none off: every
        // roll bears it off and wins a mars (R7), so every trial says so.
        let mut last = Board::EMPTY;
        last.own[1] = 1;
        last.own[OFF] = 14;
        last.opp[20] = 15;
        let mut boards = set.boards[..12].to_vec();
        boards.push(last);
        let by = |seed| LabelBy::Rollout {
            trials: 4,
            seed,
            luck: false,
            truncation: None,
        };
        let one = label(v, &boards, &e, by(7), 1, &done);
        assert_eq!(label(v, &boards, &e, by(7), 2, &done), one);
        assert_ne!(label(v, &boards, &e, by(8), 2, &done), one);
        assert_eq!(one[12], [1.0, 1.0, 0.0, 0.0]);
        for (b, t) in boards.iter().zip(&one) {
            assert_eq!(*t, bound_target(v, b, *t));
            assert!(t.iter().all(|x| (0.0..=1.0).contains(x)), "{t:?}");
            // Consistent probabilities: mars results within their side's results.
            assert!(t[1] <= t[0] && t[2] <= 1.0 - t[0], "{t:?}");
        }
        // Luck-adjusted labels are rollout means too (a different estimate).
        let luck = LabelBy::Rollout {
            trials: 4,
            seed: 7,
            luck: true,
            truncation: None,
        };
        let adjusted = label(v, &boards, &e, luck, 2, &done);
        assert_eq!(adjusted[12], [1.0, 1.0, 0.0, 0.0]);
        assert_ne!(adjusted, one);
        // They are the rollouts' means before the sanity step, with only R7's zeros
        // (bound_target): a luck-adjusted trial is a result minus its luck, so with
        // 4 games some of these means lie outside what is possible, and they are kept
        // as they are (unbiased).
        let engine = rollout_engine(v, &e);
        for (k, (b, t)) in boards.iter().zip(&adjusted).enumerate() {
            let p = rollout_label(&engine, v, b, 4, mix(7 ^ k as u64), true, None);
            assert_eq!(*t, bound_target(v, b, target_of(&p)), "board {k}");
        }
        let outside = |t: &Target| {
            t.iter().any(|x| !(0.0..=1.0).contains(x)) || t[1] > t[0] || t[2] > 1.0 - t[0]
        };
        assert!(adjusted.iter().any(outside), "{adjusted:?}");
        // Truncated games: cut before the first roll, every game is the 0-ply value
        // of the board itself; cut after two plies, the labels are other means.
        let truncated = |t| LabelBy::Rollout {
            trials: 4,
            seed: 7,
            luck: true,
            truncation: Some(t),
        };
        let zero_ply = label(v, &boards, &e, LabelBy::Search { plies: 0 }, 2, &done);
        assert_eq!(label(v, &boards, &e, truncated(0), 2, &done), zero_ply);
        let two = label(v, &boards, &e, truncated(2), 2, &done);
        assert_eq!(two[12], [1.0, 1.0, 0.0, 0.0]);
        assert_ne!(two, zero_ply);
        assert_ne!(two, adjusted);
    }

    #[test]
    fn bounds_follow_r7() {
        let mut b = super::super::td::start_board(Variant::Portes);
        b.opp[OFF] = 1;
        assert_eq!(
            bound_target(Variant::Portes, &b, [0.6, 0.2, 0.1, 0.05]),
            [0.6, 0.0, 0.1, 0.0]
        );
        b.own[OFF] = 2;
        assert_eq!(
            bound_target(Variant::Plakoto, &b, [0.6, 0.2, 0.1, 0.05]),
            [0.6, 0.0, 0.0, 0.05]
        );
    }

    #[test]
    fn fit_lowers_the_loss_on_labelled_positions() {
        let v = Variant::Fevga;
        let teacher = random_net(v);
        let done = AtomicUsize::new(0);
        let mut set = self_play_positions(
            v,
            &teacher,
            &GenConfig {
                games: 4,
                seed: 2,
                epsilon: 0.2,
                threads: 2,
                max_turns: 800,
                alternatives: 0,
            },
            &done,
        );
        set.targets = label(
            v,
            &set.boards,
            &teacher,
            LabelBy::Search { plies: 0 },
            2,
            &done,
        );
        // Plain SGD, then Adam on batches of 8 (its step size is smaller).
        for (adam_batch, alpha, alpha_end) in [(0, 0.02, 0.005), (8, 0.003, 0.001)] {
            let mut net = Net::new_random(v, InputSet::V2, 16, 5);
            let cfg = FitConfig {
                epochs: 8,
                alpha,
                alpha_end,
                seed: 1,
                holdout: 0.2,
                adam_batch,
            };
            let mut reports = Vec::new();
            fit(&mut net, &set, Subset::All, &cfg, |r| reports.push(*r));
            assert_eq!(reports.len(), 8);
            assert!(
                reports[7].holdout_loss < reports[0].holdout_loss,
                "{adam_batch}: {reports:?}"
            );
            assert!(
                reports[7].train_loss < reports[0].train_loss,
                "{adam_batch}: {reports:?}"
            );
        }
    }
}
