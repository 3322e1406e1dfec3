//! `levels`: the bot's skill levels measured (docs/strength.md, "Skill levels"). For
//! each variant and level it plays game pairs of the level against the best level on
//! duplicate dice and prints the points per game with a 95% interval, the analysis
//! of the bot's own games by the project's analysis (what `AnalyzeGame` runs): moves
//! with a choice, mean error per move, GNU Backgammon's rating, and the paired
//! difference to the level below (the same dice, pair by pair). `--calibrate`
//! searches each level's noise instead (see `tavli_engine::train::levels`).
//!
//! Example: `cargo run --release --bin levels -- --variant portes --pairs 2000
//! --analysed-pairs 100 --seed 1`.

use clap::Parser;
use std::time::Instant;
use tavli_engine::bot::{Level, Settings};
use tavli_engine::eval::engine::Engine;
use tavli_engine::eval::MAX_PLIES;
use tavli_engine::rules::Variant;
use tavli_engine::train::levels::{
    calibrate, measure, paired_difference, rating_band, record_of, LevelConfig, LevelReport,
};
use tavli_engine::train::strength::{Player, Strategy};

#[derive(Parser, Debug)]
#[command(
    about = "The bot's skill levels: points per game against the best level and the \
                   analysis of its own games"
)]
struct Args {
    /// portes, plakoto, fevga, or all.
    #[arg(long, default_value = "all")]
    variant: String,
    /// The levels, comma-separated (beginner, casual, intermediate, advanced, expert,
    /// world-class, best), or all.
    #[arg(long, default_value = "all")]
    levels: String,
    /// Game pairs per level (two games each, seats swapped on the same dice).
    #[arg(long, default_value_t = 1000)]
    pairs: u32,
    /// The first this many pairs of each level are analysed.
    #[arg(long, default_value_t = 50)]
    analysed_pairs: u32,
    /// Master seed (the same dice for every level).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Worker threads (results do not depend on it).
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// The depth of the opponent, the best level (0..=2).
    #[arg(long, default_value_t = 0,
          value_parser = clap::value_parser!(u8).range(0..=MAX_PLIES as i64))]
    opponent_plies: u8,
    /// The deepest search of any level, as the server's --max-plies (0..=2).
    #[arg(long, default_value_t = MAX_PLIES,
          value_parser = clap::value_parser!(u8).range(0..=MAX_PLIES as i64))]
    max_plies: u8,
    /// Depth of the analysis (0: AnalyzeGame's default).
    #[arg(long, default_value_t = 0,
          value_parser = clap::value_parser!(u8).range(0..=MAX_PLIES as i64))]
    analysis_plies: u8,
    /// A level's noise instead of the table's, e.g. expert=0.03 (repeatable; every
    /// variant).
    #[arg(long)]
    noise: Vec<String>,
    /// Search each level's noise for the middle of its rating's band instead of
    /// measuring (bisection, no analysis: the error against its own ranking).
    #[arg(long)]
    calibrate: bool,
    /// Halvings of the noise's interval in --calibrate.
    #[arg(long, default_value_t = 12)]
    steps: u32,
    /// Write the analysed games in which the bot is White as DIR/VARIANT-LEVEL.txt
    /// (a record `tavli-engine analyze` and AnalyzeGame read).
    #[arg(long)]
    records: Option<String>,
    /// Abandon a game after this many turns (counted 0).
    #[arg(long, default_value_t = 3000)]
    max_turns: u32,
    /// Also print the luck-adjusted points per game (the luck of every roll by the
    /// committed net at 0 ply: 21 rankings a turn).
    #[arg(long)]
    luck: bool,
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run(&args) {
        eprintln!("levels: {e}");
        std::process::exit(2);
    }
}

fn parse_list<T>(
    text: &str,
    all: &[T],
    parse: impl Fn(&str) -> Option<T>,
    what: &str,
) -> Result<Vec<T>, String>
where
    T: Copy,
{
    if text == "all" {
        return Ok(all.to_vec());
    }
    text.split(',')
        .map(|s| parse(s).ok_or_else(|| format!("unknown {what} {s:?}")))
        .collect()
}

fn bot(variant: Variant, label: String, settings: Settings) -> Result<Player, String> {
    let eval = tavli_engine::eval::net::load_default(variant)
        .ok_or_else(|| format!("no committed net for {variant}"))?;
    Ok(Player {
        label,
        strategy: Strategy::Bot { eval, settings },
    })
}

fn run(args: &Args) -> Result<(), String> {
    let variants = parse_list(&args.variant, &Variant::ALL, Variant::from_name, "variant")?;
    let levels = parse_list(&args.levels, &Level::ALL, Level::from_name, "level")?;
    let mut noise_override = Vec::new();
    for n in &args.noise {
        let (l, v) = n
            .split_once('=')
            .ok_or_else(|| format!("--noise {n:?}: LEVEL=NOISE"))?;
        let level = Level::from_name(l).ok_or_else(|| format!("unknown level {l:?}"))?;
        let v: f32 = v
            .parse()
            .map_err(|_| format!("--noise {n:?}: not a number"))?;
        noise_override.push((level, v));
    }
    let engine = Engine::load_default();
    for variant in variants {
        let cfg = LevelConfig {
            variant,
            pairs: args.pairs,
            analysed_pairs: args.analysed_pairs.min(args.pairs),
            seed: args.seed,
            threads: args.threads,
            analysis_plies: args.analysis_plies,
            max_turns: args.max_turns,
            luck: args.luck,
        };
        let opponent = bot(
            variant,
            format!("best@{}", args.opponent_plies),
            Settings {
                noise: 0.0,
                plies: args.opponent_plies,
            },
        )?;
        let settings_of = |level: Level| {
            let mut s = Settings::of(level, variant, args.max_plies);
            if let Some(&(_, n)) = noise_override.iter().find(|o| o.0 == level) {
                s.noise = n;
            }
            s
        };
        if args.calibrate {
            println!(
                "{variant}: noise for the middle of each band, {} pairs a step against {}",
                args.pairs, opponent.label
            );
            for &level in levels.iter().filter(|&&l| l != Level::Best) {
                let (lo, hi) = rating_band(level.rating()).expect("a band per level");
                let plies = settings_of(level).plies;
                let make = |noise: f32| {
                    let s = Settings { noise, plies };
                    bot(variant, level.name().to_string(), s).expect("the net loaded above")
                };
                let t0 = Instant::now();
                let (noise, e) =
                    calibrate(&cfg, (lo + hi) / 2.0, args.steps, &opponent, &engine, &make)?;
                println!(
                    "  {:<13} noise {noise:.4}  error {e:.2} (band {lo}..{hi})  {:.0} s",
                    level.name(),
                    t0.elapsed().as_secs_f64()
                );
            }
            continue;
        }
        println!(
            "{variant}: {} pairs per level against {} on the same dice (seed {}), the first {} \
             pairs analysed at {} ply",
            args.pairs, opponent.label, args.seed, cfg.analysed_pairs, args.analysis_plies
        );
        println!(
            "  {:<13} {:>6} {:>5} {:>6} {:>7} {:<14} {:>7} {:>16} {:>6} {:>18}",
            "level",
            "noise",
            "plies",
            "moves",
            "error",
            "rating",
            "own",
            "points/game",
            "games",
            "minus level below"
        );
        let mut previous: Option<LevelReport> = None;
        for &level in &levels {
            let settings = settings_of(level);
            let player = bot(
                variant,
                format!("{}@{}", level.name(), settings.plies),
                settings,
            )?;
            // The same dice for every level, pair by pair (and the same noise deviates
            // until the games part).
            let t0 = Instant::now();
            let r = measure(&cfg, &player, &opponent, &engine)?;
            let a = &r.analysed;
            let rating = a.rating();
            let diffs = previous.as_ref().map(|p| paired_difference(p, &r));
            let diff = diffs.map(|d| d.0);
            let ok_rating = if rating == level.rating() {
                ""
            } else {
                " MISS"
            };
            let ordered = match &diff {
                Some(d) if d.mean - d.ci95 <= 0.0 => " MISS",
                _ => "",
            };
            println!(
                "  {:<13} {:>6.4} {:>5} {:>6} {:>7.2} {:<14} {:>7.2} {:>+8.3} ± {:.3} {:>6} {:>18}{ok_rating}{ordered}  ({:.0} s)",
                level.name(),
                settings.noise,
                settings.plies,
                a.unforced,
                a.error_rate_milli(),
                rating,
                r.choice_error_milli(),
                r.points.mean,
                r.points.ci95,
                r.games,
                diff.map_or(String::new(), |d| format!("{:+.3} ± {:.3}", d.mean, d.ci95)),
                t0.elapsed().as_secs_f64()
            );
            if args.luck {
                println!(
                    "  {:<13} luck-adjusted points/game {:+.3} ± {:.3}{}",
                    "",
                    r.adjusted.mean,
                    r.adjusted.ci95,
                    diffs.map_or(String::new(), |d| format!(
                        ", minus level below {:+.3} ± {:.3}",
                        d.1.mean, d.1.ci95
                    ))
                );
            }
            if let Some(dir) = &args.records {
                std::fs::create_dir_all(dir).map_err(|e| format!("{dir}: {e}"))?;
                let path = format!("{dir}/{}-{}.txt", variant.name(), level.name());
                let record = record_of(&r.white_games, [player.label.as_str(), "best"])?;
                std::fs::write(&path, record.to_text()).map_err(|e| format!("{path}: {e}"))?;
            }
            previous = Some(r);
        }
    }
    Ok(())
}
