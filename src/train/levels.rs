//! The skill levels of [`crate::bot`] measured (issue #33; the binary is
//! `src/bin/levels.rs`, the table docs/strength.md, "Skill levels").
//!
//! For one level of one variant, [`measure`] plays game pairs of the level's bot
//! against an opponent (the best level, at a depth the caller gives) on duplicate
//! dice ([`strength::play_pair`]: pair `i` has the same dice for every level, so two
//! levels' results can be compared pair by pair), and:
//! - **points per game** for the bot with a 95% interval over the pair means;
//! - **its error rate and rating by the project's analysis**: the first
//!   `analysed_pairs` pairs are written as game records ([`MatchRecord::from_games`],
//!   which replays them against the rules) and analysed by [`crate::analysis::analyze`]
//!   (what `AnalyzeGame` runs) at `analysis_plies`; the bot's side of each game gives
//!   its figures ([`PlayerStats`]: moves with a choice, total error, GNU Backgammon's
//!   rating);
//! - the error of its choices against its own ranking, counted while it plays (at 0
//!   ply with a 0-ply analysis this is the analysis's error, exactly; [`calibrate`]
//!   searches the noise with it, since it costs no analysis).

use super::strength::{play_pair, Estimate, GameLog, GameResult, MatchConfig, Player};
use crate::analysis::{analyze, AnalysisOptions, PlayerStats};
use crate::eval::search::Search;
use crate::eval::PositionEvaluator;
use crate::record::{GameInput, MatchRecord, TurnInput};
use crate::rules::movegen::generate;
use crate::rules::notation::Notation;
use crate::rules::{Side, Variant};

/// What a measurement plays and analyses.
#[derive(Clone, Debug)]
pub struct LevelConfig {
    /// The variant.
    pub variant: Variant,
    /// Game pairs played (two games each, seats swapped on the same dice).
    pub pairs: u32,
    /// The first this many pairs are analysed (both games, the bot's side).
    pub analysed_pairs: u32,
    /// Master seed: the dice of pair `i` and the noise are functions of it.
    pub seed: u64,
    /// Worker threads (results do not depend on it).
    pub threads: usize,
    /// Depth of the analysis (0: `AnalyzeGame`'s default).
    pub analysis_plies: u8,
    /// Turns after which a game is abandoned (counted 0).
    pub max_turns: u32,
    /// Also the luck-adjusted points ([`crate::train::strength`]: the luck of every
    /// roll by the bot's evaluator at 0 ply; 21 rankings a turn).
    pub luck: bool,
}

/// One level's figures against the opponent.
#[derive(Clone, Debug, Default)]
pub struct LevelReport {
    /// Games played.
    pub games: u32,
    /// Points per game for the bot, 95% interval over the pair means.
    pub points: Estimate,
    /// Each pair's mean points for the bot, in pair order (for paired differences).
    pub pair_points: Vec<f64>,
    /// Luck-adjusted points per game ([`LevelConfig::luck`]; else the points).
    pub adjusted: Estimate,
    /// Each pair's mean luck-adjusted points, in pair order.
    pub pair_adjusted: Vec<f64>,
    /// The analysis of the bot's side of the analysed games.
    pub analysed: PlayerStats,
    /// Games analysed.
    pub analysed_games: u32,
    /// The bot's moves with a choice and the equity its choices lost against its own
    /// ranking, points, over all games.
    pub choice_errors: (u32, f64),
    /// The analysed games in which the bot is White, as structured input (for a
    /// record file of them: [`record_of`]).
    pub white_games: Vec<GameInput>,
}

impl LevelReport {
    /// Thousandths of a point lost per move with a choice, against its own ranking.
    pub fn choice_error_milli(&self) -> f64 {
        match self.choice_errors.0 {
            0 => 0.0,
            n => 1000.0 * self.choice_errors.1 / n as f64,
        }
    }
}

/// The turns of a logged game as a record's structured input: each play written in
/// the engine's notation (the legal play of the roll whose board is the one made).
pub fn game_input(variant: Variant, log: &GameLog) -> GameInput {
    let mut plays = Vec::with_capacity(64);
    let turns = log
        .turns
        .iter()
        .map(|(dice, before, after)| {
            plays.clear();
            generate(variant, before, *dice, &mut plays);
            let raw = plays
                .iter()
                .find(|p| p.board == *after)
                .expect("the play made is a legal play of the roll");
            TurnInput {
                dice: *dice,
                play: Notation::of(raw.moves()).to_string(),
            }
        })
        .collect();
    // The opening roll decides who starts (R2), also in a record of several games.
    GameInput {
        variant,
        starter: None,
        opening: Some(log.opening),
        turns,
        result: None,
    }
}

/// A record of `games` with the names `[White, Black]` (the bot White in each): as
/// many of them, in order, as the record's limits hold ([`crate::record::MAX_GAMES`],
/// [`crate::record::MAX_TURNS`]). Errors: a game the rules refuse (not expected).
pub fn record_of(games: &[GameInput], names: [&str; 2]) -> Result<MatchRecord, String> {
    let mut turns = 0;
    let fit = games
        .iter()
        .take(crate::record::MAX_GAMES)
        .take_while(|g| {
            turns += g.turns.len();
            turns <= crate::record::MAX_TURNS
        })
        .count();
    MatchRecord::from_games(0, names.map(String::from), &games[..fit]).map_err(|e| e.to_string())
}

/// The analysis of one game's record: the figures of `side`.
fn analyse_game(
    game: &GameInput,
    side: Side,
    evaluator: &dyn PositionEvaluator,
    plies: u8,
) -> Result<PlayerStats, String> {
    let record = record_of(std::slice::from_ref(game), ["white", "black"])?;
    let opts = AnalysisOptions {
        plies,
        ..AnalysisOptions::default()
    };
    let summary = analyze(&record, evaluator, &opts, &mut |_| true).map_err(|e| e.to_string())?;
    Ok(summary.stats[side.index()].clone())
}

/// What one pair gives.
struct PairOutcome {
    index: u32,
    results: [GameResult; 2],
    choice_errors: (u32, f64),
    analysed: Option<(PlayerStats, GameInput)>,
}

fn play_one(
    cfg: &LevelConfig,
    bot: &Player,
    opponent: &Player,
    evaluator: &dyn PositionEvaluator,
    i: u32,
) -> Result<PairOutcome, String> {
    let mc = MatchConfig {
        variant: cfg.variant,
        pairs: cfg.pairs,
        seed: cfg.seed,
        max_turns: cfg.max_turns,
        threads: 1,
    };
    let mut logs = [GameLog::default(), GameLog::default()];
    let reference = match (cfg.luck, bot.evaluator()) {
        (true, Some(e)) => Some(Search::plain(cfg.variant, &**e)),
        _ => None,
    };
    let results = play_pair(&mc, bot, opponent, reference.as_ref(), i, Some(&mut logs));
    // The bot is White in the first game, Black in the second.
    let [(n1, e1), _] = logs[0].choice_errors;
    let [_, (n2, e2)] = logs[1].choice_errors;
    let analysed = if i < cfg.analysed_pairs {
        let white = game_input(cfg.variant, &logs[0]);
        let black = game_input(cfg.variant, &logs[1]);
        let mut stats = analyse_game(&white, Side::White, evaluator, cfg.analysis_plies)?;
        stats.add(&analyse_game(
            &black,
            Side::Black,
            evaluator,
            cfg.analysis_plies,
        )?);
        Some((stats, white))
    } else {
        None
    };
    Ok(PairOutcome {
        index: i,
        results,
        choice_errors: (n1 + n2, e1 + e2),
        analysed,
    })
}

/// Plays and analyses one level's bot against `opponent` (see the module
/// documentation); `evaluator` analyses (the engine the service runs). Errors: a
/// record the rules refuse or an analysis that fails (neither is expected).
pub fn measure(
    cfg: &LevelConfig,
    bot: &Player,
    opponent: &Player,
    evaluator: &dyn PositionEvaluator,
) -> Result<LevelReport, String> {
    let threads = cfg.threads.max(1).min(cfg.pairs.max(1) as usize);
    let mut out: Vec<PairOutcome> = Vec::with_capacity(cfg.pairs as usize);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    (t as u32..cfg.pairs)
                        .step_by(threads)
                        .map(|i| play_one(cfg, bot, opponent, evaluator, i))
                        .collect::<Result<Vec<_>, String>>()
                })
            })
            .collect();
        for h in handles {
            out.extend(h.join().expect("worker panicked")?);
        }
        Ok::<(), String>(())
    })?;
    out.sort_by_key(|p| p.index);
    let mut report = LevelReport {
        games: 2 * out.len() as u32,
        ..LevelReport::default()
    };
    report.pair_adjusted = out
        .iter()
        .map(|p| (p.results[0].adjusted + p.results[1].adjusted) / 2.0)
        .collect();
    report.adjusted = Estimate::of(&report.pair_adjusted);
    for p in out {
        report
            .pair_points
            .push((p.results[0].points as f64 + p.results[1].points as f64) / 2.0);
        report.choice_errors.0 += p.choice_errors.0;
        report.choice_errors.1 += p.choice_errors.1;
        if let Some((stats, white)) = p.analysed {
            report.analysed.add(&stats);
            report.analysed_games += 2;
            report.white_games.push(white);
        }
    }
    report.points = Estimate::of(&report.pair_points);
    Ok(report)
}

/// The paired difference `b - a` of two levels' pair means over the pairs both
/// played (the same dice, pair by pair), with its 95% interval: of the points, and
/// of the luck-adjusted points.
pub fn paired_difference(a: &LevelReport, b: &LevelReport) -> (Estimate, Estimate) {
    let diff = |x: &[f64], y: &[f64]| {
        let d: Vec<f64> = x.iter().zip(y).map(|(x, y)| y - x).collect();
        Estimate::of(&d)
    };
    (
        diff(&a.pair_points, &b.pair_points),
        diff(&a.pair_adjusted, &b.pair_adjusted),
    )
}

/// The noise (standard deviation, points) at which a bot of depth `plies` loses
/// `target_milli` thousandths of a point per move with a choice against its own
/// ranking, by bisection on a logarithmic scale between 0.001 and 1 (`steps`
/// halvings), each step `cfg.pairs` pairs on the same dice and noise seeds (so that
/// the error rises smoothly with the noise), no analysis. `make` builds the bot of a
/// noise. Returns the noise and the error rate measured there.
pub fn calibrate(
    cfg: &LevelConfig,
    target_milli: f64,
    steps: u32,
    opponent: &Player,
    evaluator: &dyn PositionEvaluator,
    make: &dyn Fn(f32) -> Player,
) -> Result<(f32, f64), String> {
    let cfg = LevelConfig {
        analysed_pairs: 0,
        ..cfg.clone()
    };
    let (mut lo, mut hi) = (0.001f64.ln(), 1f64.ln());
    let mut last = (0.0, 0.0);
    for _ in 0..steps {
        let mid = (lo + hi) / 2.0;
        let noise = mid.exp() as f32;
        let r = measure(&cfg, &make(noise), opponent, evaluator)?;
        let e = r.choice_error_milli();
        last = (noise, e);
        if e < target_milli {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(last)
}

/// The error-rate band of GNU Backgammon's rating `name` in thousandths of a point
/// (the thresholds of [`PlayerStats::rating`]): `[low, high)`.
pub fn rating_band(name: &str) -> Option<(f64, f64)> {
    Some(match name {
        "Supernatural" => (0.0, 2.0),
        "World class" => (2.0, 5.0),
        "Expert" => (5.0, 8.0),
        "Advanced" => (8.0, 12.0),
        "Intermediate" => (12.0, 18.0),
        "Casual player" => (18.0, 26.0),
        "Beginner" => (26.0, 35.0),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bot::{Level, Settings};
    use crate::eval::engine::Engine;
    use crate::train::strength::{MatchConfig, Strategy};
    use std::sync::Arc;

    fn player(variant: Variant, level: Level, max_plies: u8) -> Player {
        Player {
            label: level.name().to_string(),
            strategy: Strategy::Bot {
                eval: crate::eval::net::load_default(variant).unwrap(),
                settings: Settings::of(level, variant, max_plies),
            },
        }
    }

    #[test]
    fn records_of_several_games_replay() {
        // Two logged games of one pair in one record: each starts by its opening roll.
        let v = Variant::Fevga;
        let cfg = MatchConfig {
            variant: v,
            pairs: 1,
            seed: 11,
            max_turns: 3000,
            threads: 1,
        };
        let p = player(v, Level::Expert, 0);
        let mut logs = [GameLog::default(), GameLog::default()];
        crate::train::strength::play_pair(&cfg, &p, &p, None, 0, Some(&mut logs));
        let games: Vec<GameInput> = logs.iter().map(|l| game_input(v, l)).collect();
        let record = record_of(&games, ["a", "b"]).unwrap();
        assert_eq!(record.games.len(), 2);
        for (g, l) in record.games.iter().zip(&logs) {
            assert_eq!(g.opening, Some(l.opening));
            assert_eq!(g.actions.len(), l.turns.len());
        }
    }

    #[test]
    fn bands_are_the_analysis_thresholds() {
        for l in Level::ALL {
            let (lo, hi) = rating_band(l.rating()).unwrap();
            for e in [lo, (lo + hi) / 2.0, hi - 1e-6] {
                let s = PlayerStats {
                    unforced: 1000,
                    total_error: e, // 1000 moves: e thousandths each
                    ..PlayerStats::default()
                };
                assert_eq!(s.rating(), l.rating(), "{e}");
            }
        }
    }

    #[test]
    fn the_analysis_of_the_bots_games_finds_its_own_errors_at_0_ply() {
        // At 0 ply the analysis ranks the plays as the bot did: the error it finds is
        // the error of the bot's choices, turn for turn; the best level makes none.
        let engine: Arc<dyn PositionEvaluator> = Arc::new(Engine::load_default());
        for v in Variant::ALL {
            let cfg = LevelConfig {
                variant: v,
                pairs: 2,
                analysed_pairs: 2,
                seed: 3,
                threads: 2,
                analysis_plies: 0,
                max_turns: 3000,
                luck: false,
            };
            let best = player(v, Level::Best, 0);
            let casual = measure(&cfg, &player(v, Level::Casual, 0), &best, &*engine).unwrap();
            assert_eq!(casual.games, 4);
            assert_eq!(casual.analysed_games, 4);
            assert_eq!(casual.analysed.unforced, casual.choice_errors.0);
            assert!(casual.choice_errors.1 > 0.0, "{v}");
            assert!(
                (casual.analysed.total_error - casual.choice_errors.1).abs() < 1e-3,
                "{v}: {} {}",
                casual.analysed.total_error,
                casual.choice_errors.1
            );
            let selfplay = measure(&cfg, &best, &best, &*engine).unwrap();
            assert_eq!(selfplay.points.mean, 0.0);
            assert_eq!(selfplay.analysed.total_error, 0.0);
            assert_eq!(selfplay.analysed.rating(), "Supernatural");
        }
    }
}
