//! Strength measurement: games between two players with seats swapped on the same
//! dice, points per game with a 95% confidence interval, win/mars/draw rates, and the
//! luck-adjusted result (issue #4; the binary is `src/bin/strength.rs`).
//!
//! - **Pairs**: game pair `i` uses one dice stream (ChaCha8 seeded from `seed` and
//!   `i`). Player A is White in the first game and Black in the second; the dice are
//!   drawn in the same order, so the same side starts (R2 opening roll: one die each,
//!   equal dice re-rolled, the higher die starts and then rolls two fresh dice) and
//!   each turn of the same number gets the same roll.
//! - **Luck adjustment** (variance reduction, unbiased): before each roll the
//!   reference evaluator values every one of the 21 rolls by its best play (0 plies,
//!   the bear-off database in no-contact bear-offs, exact values for game-ending
//!   plays); the luck of the roll is the value of the rolled dice minus the weighted
//!   mean over the 21 rolls, from the roller's view. A game's luck-adjusted result for
//!   A is its points minus A's luck plus B's luck. The expected luck of a roll is 0
//!   whatever the players do, so the mean is unchanged while the variance drops.
//! - **Statistics**: the 95% interval is `mean ± 1.96 sd / sqrt(pairs)` over pair
//!   means (the two games of a pair are correlated, pairs are independent).
//! - A game not finished after `max_turns` turns counts 0 points and is reported as
//!   unfinished.
//!
//! Players are built by name from a [`Registry`]; add an entry to [`Registry::standard`]
//! to make a new evaluator available to the tool.

use super::heuristic::{Heuristic, RandomEvaluator};
use super::mix;
use crate::eval::pubeval::PubEval;
use crate::eval::search::{outcome_probabilities, roll_weight, with_scratch, Search};
use crate::eval::{Evaluator, MAX_PLIES};
use crate::rules::board::{Board, RelOutcome};
use crate::rules::movegen::{generate_positions, play_outcome};
use crate::rules::{Dice, Position, Side, Variant};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;

/// How a player picks its plays.
#[derive(Clone)]
pub enum Strategy {
    /// A uniformly random legal play (its own random stream).
    Random,
    /// Tesauro's pubeval move choice ([`crate::eval::pubeval::best_play`]: weights by
    /// the position before the move, no bear-off database), the `pubeval` player at 0
    /// plies; `eval` is [`PubEval`] (for the luck reference).
    PubEval {
        /// [`PubEval`] as an evaluator.
        eval: Arc<dyn Evaluator>,
    },
    /// The best play by the search (bear-off database, then `eval`, `plies` deep).
    Search {
        /// The static evaluator.
        eval: Arc<dyn Evaluator>,
        /// Search depth, 0..=[`MAX_PLIES`].
        plies: u8,
    },
    /// A bot of `ChoosePlay` ([`crate::bot`]): the search's ranking at the settings'
    /// depth, the play with the highest equity plus noise made; each turn's noise is
    /// seeded from the game's choice seed and the turn.
    Bot {
        /// The static evaluator.
        eval: Arc<dyn Evaluator>,
        /// Noise and depth.
        settings: crate::bot::Settings,
    },
}

/// A named player.
#[derive(Clone)]
pub struct Player {
    /// As given on the command line, with plies, e.g. `pubeval@1`.
    pub label: String,
    /// How it plays.
    pub strategy: Strategy,
}

impl Player {
    /// The static evaluator, if the player has one.
    pub fn evaluator(&self) -> Option<&Arc<dyn Evaluator>> {
        match &self.strategy {
            Strategy::Random => None,
            Strategy::PubEval { eval }
            | Strategy::Search { eval, .. }
            | Strategy::Bot { eval, .. } => Some(eval),
        }
    }
}

/// A constructor of a static evaluator for a variant (`Err` with a reason when the
/// evaluator does not exist for it); `arg` is the text after `:` in `name:arg`.
pub type Constructor =
    fn(variant: Variant, arg: Option<&str>) -> Result<Arc<dyn Evaluator>, String>;

/// Player names known to the tool.
pub struct Registry {
    entries: Vec<(&'static str, &'static str, Option<Constructor>)>,
}

fn make_pubeval(v: Variant, _: Option<&str>) -> Result<Arc<dyn Evaluator>, String> {
    if v != Variant::Portes {
        return Err(format!("pubeval is a Portes evaluator, not for {v}"));
    }
    Ok(Arc::new(PubEval))
}

fn make_heuristic(v: Variant, _: Option<&str>) -> Result<Arc<dyn Evaluator>, String> {
    if v == Variant::Portes {
        return Err(
            "the heuristic baseline is for Plakoto and Fevga; use pubeval for Portes".into(),
        );
    }
    Ok(Arc::new(Heuristic))
}

fn make_net(v: Variant, arg: Option<&str>) -> Result<Arc<dyn Evaluator>, String> {
    use crate::eval::net::{load_default, NetEvaluator, Nets};
    match arg {
        None => load_default(v)
            .map(|n| n as Arc<dyn Evaluator>)
            .ok_or_else(|| format!("no committed net for {v}")),
        Some(path) => {
            let net = Nets::load(path).map_err(|e| format!("{path}: {e}"))?;
            if net.variant != v {
                return Err(format!("{path}: a {} net, not {v}", net.variant));
            }
            Ok(Arc::new(NetEvaluator::new(net)))
        }
    }
}

impl Registry {
    /// The standard players: `random`, `pubeval` (Portes), `heuristic` (Plakoto,
    /// Fevga), `net` (the committed net of the variant) and `net:PATH` (a net file).
    pub fn standard() -> Registry {
        Registry {
            entries: vec![
                ("random", "a uniformly random legal play", None),
                (
                    "pubeval",
                    "Tesauro's pubeval (Portes; at 0 plies its own move choice)",
                    Some(make_pubeval),
                ),
                (
                    "heuristic",
                    "hand-written baseline (Plakoto, Fevga)",
                    Some(make_heuristic),
                ),
                (
                    "net",
                    "the committed net; net:PATH for a net file",
                    Some(make_net),
                ),
            ],
        }
    }

    /// Adds or replaces an entry.
    pub fn register(&mut self, name: &'static str, help: &'static str, make: Constructor) {
        self.entries.retain(|e| e.0 != name);
        self.entries.push((name, help, Some(make)));
    }

    /// `(name, help)` of every entry.
    pub fn names(&self) -> Vec<(&'static str, &'static str)> {
        self.entries.iter().map(|e| (e.0, e.1)).collect()
    }

    /// Builds the player `spec` (`name` or `name:arg`) searching `plies` deep.
    /// Errors: unknown name, evaluator unavailable for the variant, plies above
    /// [`MAX_PLIES`].
    pub fn player(&self, spec: &str, variant: Variant, plies: u8) -> Result<Player, String> {
        if plies > MAX_PLIES {
            return Err(format!("plies must be 0..={MAX_PLIES}, got {plies}"));
        }
        let (name, arg) = match spec.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (spec, None),
        };
        let Some(entry) = self.entries.iter().find(|e| e.0 == name) else {
            let known: Vec<_> = self.entries.iter().map(|e| e.0).collect();
            return Err(format!(
                "unknown player {name:?}; known: {}",
                known.join(", ")
            ));
        };
        let strategy = match entry.2 {
            None => Strategy::Random,
            Some(make) if name == "pubeval" && plies == 0 => Strategy::PubEval {
                eval: make(variant, arg)?,
            },
            Some(make) => Strategy::Search {
                eval: make(variant, arg)?,
                plies,
            },
        };
        let label = match strategy {
            Strategy::Random => spec.to_string(),
            _ => format!("{spec}@{plies}"),
        };
        Ok(Player { label, strategy })
    }
}

/// Settings of a match.
#[derive(Clone)]
pub struct MatchConfig {
    /// The variant played.
    pub variant: Variant,
    /// Number of game pairs (2 games each).
    pub pairs: u32,
    /// Master seed: everything is a function of it.
    pub seed: u64,
    /// Turns after which a game is abandoned (counted 0, unfinished).
    pub max_turns: u32,
    /// Worker threads (results do not depend on it).
    pub threads: usize,
}

/// One game from A's view.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GameResult {
    /// Points for A: +1/+2 won, -1/-2 lost, 0 draw or unfinished.
    pub points: i8,
    /// The game ended in a draw (Plakoto, R5.5).
    pub draw: bool,
    /// The game hit the turn limit.
    pub unfinished: bool,
    /// Luck-adjusted points for A.
    pub adjusted: f64,
    /// Turns played.
    pub turns: u32,
}

/// The turns of one game, for a record of it ([`play_pair`] with logs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GameLog {
    /// Who played the first turn.
    pub starter: Option<Side>,
    /// The opening roll that decided it, `[White's die, Black's die]` (R2).
    pub opening: [u8; 2],
    /// Per turn: the roll, the board before it and the board after the play made,
    /// both in the mover's view (the generator's boards).
    pub turns: Vec<(Dice, Board, Board)>,
    /// Per side ([`Side::index`]): turns with more than one legal play, and the sum of
    /// the equity the bot's choices lost against the best play of its own ranking
    /// (0 for players other than [`Strategy::Bot`]), points.
    pub choice_errors: [(u32, f64); 2],
}

/// A mean with its 95% confidence half-width.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Estimate {
    /// Mean points per game.
    pub mean: f64,
    /// 95% half-width: `1.96 sd / sqrt(n)` over pair means.
    pub ci95: f64,
    /// Standard deviation of one pair mean.
    pub sd: f64,
}

impl Estimate {
    /// The mean of `xs` with `1.96 sd / sqrt(n)` (the sample standard deviation).
    pub fn of(xs: &[f64]) -> Estimate {
        let n = xs.len() as f64;
        if n == 0.0 {
            return Estimate::default();
        }
        let mean = xs.iter().sum::<f64>() / n;
        let var = if n > 1.0 {
            xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        let sd = var.sqrt();
        Estimate {
            mean,
            ci95: 1.96 * sd / n.sqrt(),
            sd,
        }
    }
}

/// The summary of a match, from A's view.
#[derive(Clone, Debug, Default)]
pub struct MatchReport {
    /// Games played.
    pub games: u32,
    /// Points per game.
    pub points: Estimate,
    /// Luck-adjusted points per game.
    pub adjusted: Estimate,
    /// Fraction of games won by A (any number of points).
    pub win_rate: f64,
    /// Fraction of games A won with 2 points.
    pub win_mars_rate: f64,
    /// Fraction of games A lost with 2 points.
    pub lose_mars_rate: f64,
    /// Fraction of drawn games.
    pub draw_rate: f64,
    /// Games abandoned at the turn limit.
    pub unfinished: u32,
    /// Mean turns per game.
    pub mean_turns: f64,
    /// Name of the luck reference evaluator.
    pub reference: String,
}

/// The luck of every roll from `board` (mover to roll) by the reference: returns the
/// reference's 21 best-play equities, indexed as [`Dice::all_rolls`], and their mean.
fn roll_values(reference: &Search, board: &Board, plays: &mut Vec<Board>) -> ([f32; 21], f32) {
    let mut v = [0f32; 21];
    let mut mean = 0f32;
    for (k, roll) in Dice::all_rolls().into_iter().enumerate() {
        plays.clear();
        generate_positions(reference.variant, board, roll, plays);
        let (_, p) = with_scratch(|sc| reference.best_play(sc, plays, 0))
            .expect("the reference evaluates every board");
        v[k] = p.equity();
        mean += roll_weight(roll) * v[k];
    }
    (v, mean)
}

fn roll_index(d: Dice) -> usize {
    let (h, l) = (d.high() as usize, d.low() as usize);
    h * (h - 1) / 2 + l - 1
}

/// Plays one game: `players[0]` is White. Returns the result from White's view.
/// Without a luck reference the adjusted result is the result; with `log` the turns
/// are written there.
fn play_game(
    variant: Variant,
    players: [&Player; 2],
    reference: Option<&Search>,
    dice_seed: u64,
    choice_seed: u64,
    max_turns: u32,
    mut log: Option<&mut GameLog>,
) -> GameResult {
    let mut dice_rng = ChaCha8Rng::seed_from_u64(dice_seed);
    let mut choice_rng = ChaCha8Rng::seed_from_u64(choice_seed);
    // R2: one die each, equal dice rolled again; the higher die starts.
    let (starter, opening) = loop {
        let (w, b): (u8, u8) = (dice_rng.random_range(1..=6), dice_rng.random_range(1..=6));
        if w != b {
            break (if w > b { Side::White } else { Side::Black }, [w, b]);
        }
    };
    let mut mover = starter;
    if let Some(log) = log.as_deref_mut() {
        *log = GameLog {
            starter: Some(starter),
            opening,
            ..GameLog::default()
        };
    }
    let mut board = Board::from_position(&Position::start(variant, Side::White), starter);
    let mut plays = Vec::with_capacity(64);
    let mut ranked = Vec::with_capacity(64);
    let mut ref_plays = Vec::with_capacity(64);
    let mut luck = [0f64; 2];
    let mut choice_errors = [(0u32, 0f64); 2];
    let mut result = GameResult::default();
    for turn in 0..max_turns {
        result.turns = turn + 1;
        let dice = Dice::new(dice_rng.random_range(1..=6), dice_rng.random_range(1..=6))
            .expect("dice in 1..=6");
        if let Some(reference) = reference {
            let (values, mean) = roll_values(reference, &board, &mut ref_plays);
            luck[mover.index()] += (values[roll_index(dice)] - mean) as f64;
        }
        plays.clear();
        generate_positions(variant, &board, dice, &mut plays);
        let player = players[mover.index()];
        let chosen = match &player.strategy {
            Strategy::Random => choice_rng.random_range(0..plays.len()),
            Strategy::PubEval { .. } => crate::eval::pubeval::best_play(&board, &plays),
            Strategy::Search { eval, plies } => {
                let s = Search::plain(variant, &**eval);
                with_scratch(|sc| s.best_play(sc, &plays, *plies))
                    .expect("a player evaluates every board")
                    .0
            }
            Strategy::Bot { eval, settings } => {
                let s = Search::plain(variant, &**eval);
                with_scratch(|sc| s.rank(sc, &plays, settings.plies, &mut ranked))
                    .expect("a player evaluates every board");
                let seed = mix(choice_seed ^ mix(turn as u64));
                let k = crate::bot::pick(&ranked, plays.len(), settings.noise, seed);
                if plays.len() > 1 {
                    let e = &mut choice_errors[mover.index()];
                    e.0 += 1;
                    e.1 += (ranked[0].1.equity() - ranked[k].1.equity()) as f64;
                }
                ranked[k].0
            }
        };
        let play = plays[chosen];
        if let Some(log) = log.as_deref_mut() {
            log.turns.push((dice, board, play));
            log.choice_errors = choice_errors;
        }
        // The game's end, if any: its certain probabilities for `mover`, drawn or not.
        let end = match play_outcome(variant, &play) {
            Some(o) => Some((outcome_probabilities(o), o)),
            None => {
                board = play.mirror(variant);
                mover = mover.opponent();
                board
                    .game_over_for_mover(variant)
                    .map(|(won, o)| (crate::eval::search::game_over_probabilities(won, o), o))
            }
        };
        if let Some((p, o)) = end {
            let sign = if mover == Side::White { 1.0 } else { -1.0 };
            let pts = sign * p.equity();
            result.points = pts as i8;
            result.draw = matches!(o, RelOutcome::Draw);
            result.adjusted = pts as f64 - luck[0] + luck[1];
            return result;
        }
    }
    result.unfinished = true;
    result.adjusted = -luck[0] + luck[1];
    result
}

/// The result of pair `i`: A as White, then A as Black, on the same dice. Both
/// results are from A's view. Without a luck `reference` the adjusted results are
/// the results; with `logs` the two games' turns are written there.
pub fn play_pair(
    cfg: &MatchConfig,
    a: &Player,
    b: &Player,
    reference: Option<&Search>,
    i: u32,
    logs: Option<&mut [GameLog; 2]>,
) -> [GameResult; 2] {
    let dice_seed = mix(cfg.seed ^ mix(i as u64));
    let (log1, log2) = match logs {
        Some([l1, l2]) => (Some(l1), Some(l2)),
        None => (None, None),
    };
    let g1 = play_game(
        cfg.variant,
        [a, b],
        reference,
        dice_seed,
        mix(dice_seed ^ 1),
        cfg.max_turns,
        log1,
    );
    let mut g2 = play_game(
        cfg.variant,
        [b, a],
        reference,
        dice_seed,
        mix(dice_seed ^ 2),
        cfg.max_turns,
        log2,
    );
    g2.points = -g2.points;
    g2.adjusted = -g2.adjusted;
    [g1, g2]
}

/// Plays the match and summarises it from A's view. The reference evaluator for the
/// luck adjustment is `reference` (callers pass the stronger player's evaluator).
pub fn run_match(
    cfg: &MatchConfig,
    a: &Player,
    b: &Player,
    reference: &Arc<dyn Evaluator>,
) -> MatchReport {
    let threads = cfg.threads.max(1).min(cfg.pairs.max(1) as usize);
    let mut results: Vec<(u32, [GameResult; 2])> = Vec::with_capacity(cfg.pairs as usize);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let reference = Search::plain(cfg.variant, &**reference);
                scope.spawn(move || {
                    (t as u32..cfg.pairs)
                        .step_by(threads)
                        .map(|i| (i, play_pair(cfg, a, b, Some(&reference), i, None)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            results.extend(h.join().expect("worker panicked"));
        }
    });
    results.sort_by_key(|r| r.0);
    summarise(&results, reference.name(cfg.variant))
}

/// The report of a list of pairs.
pub fn summarise(results: &[(u32, [GameResult; 2])], reference: String) -> MatchReport {
    let games: Vec<&GameResult> = results.iter().flat_map(|r| r.1.iter()).collect();
    let n = games.len().max(1) as f64;
    let pair_points: Vec<f64> = results
        .iter()
        .map(|r| (r.1[0].points as f64 + r.1[1].points as f64) / 2.0)
        .collect();
    let pair_adjusted: Vec<f64> = results
        .iter()
        .map(|r| (r.1[0].adjusted + r.1[1].adjusted) / 2.0)
        .collect();
    MatchReport {
        games: games.len() as u32,
        points: Estimate::of(&pair_points),
        adjusted: Estimate::of(&pair_adjusted),
        win_rate: games.iter().filter(|g| g.points > 0).count() as f64 / n,
        win_mars_rate: games.iter().filter(|g| g.points == 2).count() as f64 / n,
        lose_mars_rate: games.iter().filter(|g| g.points == -2).count() as f64 / n,
        draw_rate: games.iter().filter(|g| g.draw).count() as f64 / n,
        unfinished: games.iter().filter(|g| g.unfinished).count() as u32,
        mean_turns: games.iter().map(|g| g.turns as f64).sum::<f64>() / n,
        reference,
    }
}

/// The default luck reference of a match: the first player's evaluator, else the
/// second's, else the variant's baseline (pubeval for Portes, the heuristic
/// otherwise).
pub fn default_reference(variant: Variant, a: &Player, b: &Player) -> Arc<dyn Evaluator> {
    a.evaluator()
        .or(b.evaluator())
        .cloned()
        .unwrap_or_else(|| match variant {
            Variant::Portes => Arc::new(PubEval) as Arc<dyn Evaluator>,
            _ => Arc::new(Heuristic),
        })
}

/// A random evaluator, for a reference that must not know anything.
pub fn random_reference(seed: u64) -> Arc<dyn Evaluator> {
    Arc::new(RandomEvaluator::new(seed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(variant: Variant, pairs: u32, threads: usize) -> MatchConfig {
        MatchConfig {
            variant,
            pairs,
            seed: 7,
            max_turns: 3000,
            threads,
        }
    }

    #[test]
    fn roll_index_matches_all_rolls() {
        for (k, d) in Dice::all_rolls().into_iter().enumerate() {
            assert_eq!(roll_index(d), k);
        }
    }

    #[test]
    fn self_play_is_antisymmetric_and_deterministic() {
        // The same player in both seats: each pair's two games are the same game with
        // colours swapped, so A's points cancel exactly.
        let reg = Registry::standard();
        for v in Variant::ALL {
            let name = if v == Variant::Portes {
                "pubeval"
            } else {
                "heuristic"
            };
            let a = reg.player(name, v, 0).unwrap();
            let r = default_reference(v, &a, &a);
            let c = cfg(v, 2, 1);
            let rep = run_match(&c, &a, &a, &r);
            assert_eq!(rep.games, 4);
            assert_eq!(rep.points.mean, 0.0);
            assert!(rep.adjusted.mean.abs() < 1e-9);
            assert_eq!(rep.unfinished, 0);
        }
    }

    #[test]
    fn threads_do_not_change_results() {
        let reg = Registry::standard();
        let v = Variant::Fevga;
        let a = reg.player("heuristic", v, 0).unwrap();
        let b = reg.player("random", v, 0).unwrap();
        let r = default_reference(v, &a, &b);
        let one = run_match(&cfg(v, 3, 1), &a, &b, &r);
        let two = run_match(&cfg(v, 3, 2), &a, &b, &r);
        assert_eq!(one.points, two.points);
        assert_eq!(one.adjusted, two.adjusted);
        assert!(one.win_rate > 0.5, "heuristic should beat random: {one:?}");
    }

    #[test]
    fn registry_errors() {
        let reg = Registry::standard();
        assert!(reg.player("pubeval", Variant::Fevga, 0).is_err());
        assert!(reg.player("nope", Variant::Fevga, 0).is_err());
        assert!(reg.player("heuristic", Variant::Fevga, 3).is_err());
        assert_eq!(
            reg.player("heuristic", Variant::Fevga, 1).unwrap().label,
            "heuristic@1"
        );
    }
}
