//! `strength`: plays game pairs between two players with seats swapped on the same
//! dice and reports A's points per game with a 95% confidence interval, the
//! luck-adjusted result, and win / mars / draw rates (see
//! `tavli_engine::train::strength`).
//!
//! Example: `cargo run --release --bin strength -- --variant fevga --a heuristic
//! --b random --games 400 --seed 1`.

use clap::Parser;
use std::time::Instant;
use tavli_engine::rules::Variant;
use tavli_engine::train::strength::{default_reference, run_match, MatchConfig, Registry};

#[derive(Parser, Debug)]
#[command(about = "Strength of two Tavli evaluators by game pairs on the same dice")]
struct Args {
    /// portes, plakoto or fevga.
    #[arg(long)]
    variant: String,
    /// Player A (the luck reference unless --reference): random, pubeval, heuristic,
    /// net or net:PATH.
    #[arg(long)]
    a: String,
    /// Player B.
    #[arg(long, default_value = "random")]
    b: String,
    /// Games (rounded up to an even number: pairs with seats swapped).
    #[arg(long, default_value_t = 200)]
    games: u32,
    /// Search plies of both players (0..=2).
    #[arg(long, default_value_t = 0)]
    plies: u8,
    /// Plies of A (overrides --plies).
    #[arg(long)]
    plies_a: Option<u8>,
    /// Plies of B (overrides --plies).
    #[arg(long)]
    plies_b: Option<u8>,
    /// Luck reference evaluator (default: A's, else B's, else the variant baseline).
    #[arg(long)]
    reference: Option<String>,
    /// Master seed: the whole match is a function of it.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Worker threads (results do not depend on it).
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Abandon a game after this many turns (counted 0, unfinished).
    #[arg(long, default_value_t = 3000)]
    max_turns: u32,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run(&args) {
        eprintln!("strength: {e}");
        std::process::exit(2);
    }
}

fn run(args: &Args) -> Result<(), String> {
    let variant = Variant::from_name(&args.variant)
        .ok_or_else(|| format!("unknown variant {:?}", args.variant))?;
    let reg = Registry::standard();
    let a = reg.player(&args.a, variant, args.plies_a.unwrap_or(args.plies))?;
    let b = reg.player(&args.b, variant, args.plies_b.unwrap_or(args.plies))?;
    let reference = match &args.reference {
        Some(name) => reg
            .player(name, variant, 0)?
            .evaluator()
            .cloned()
            .ok_or("the reference must be an evaluator, not random")?,
        None => default_reference(variant, &a, &b),
    };
    let cfg = MatchConfig {
        variant,
        pairs: args.games.div_ceil(2),
        seed: args.seed,
        max_turns: args.max_turns,
        threads: args.threads,
    };
    let t0 = Instant::now();
    let r = run_match(&cfg, &a, &b, &reference);
    let secs = t0.elapsed().as_secs_f64();
    if args.json {
        let v = serde_json::json!({
            "variant": variant.name(), "a": a.label, "b": b.label, "games": r.games,
            "seed": args.seed, "reference": r.reference,
            "points": r.points.mean, "points_ci95": r.points.ci95,
            "adjusted": r.adjusted.mean, "adjusted_ci95": r.adjusted.ci95,
            "win": r.win_rate, "win_mars": r.win_mars_rate, "lose_mars": r.lose_mars_rate,
            "draw": r.draw_rate, "unfinished": r.unfinished, "mean_turns": r.mean_turns,
            "seconds": secs,
        });
        println!("{v}");
    } else {
        println!(
            "{variant}: {} vs {} — {} games (seed {}), {:.1} s",
            a.label, b.label, r.games, args.seed, secs
        );
        println!(
            "  points/game (A): {:+.3} ± {:.3} (95%)",
            r.points.mean, r.points.ci95
        );
        println!(
            "  luck-adjusted:   {:+.3} ± {:.3} (95%, reference {}; variance ÷{:.1})",
            r.adjusted.mean,
            r.adjusted.ci95,
            r.reference,
            if r.adjusted.sd > 0.0 {
                (r.points.sd / r.adjusted.sd).powi(2)
            } else {
                f64::NAN
            }
        );
        println!(
            "  A wins {:.1}% (mars {:.1}%), A loses mars {:.1}%, draws {:.1}%, unfinished {}, {:.0} turns/game",
            100.0 * r.win_rate,
            100.0 * r.win_mars_rate,
            100.0 * r.lose_mars_rate,
            100.0 * r.draw_rate,
            r.unfinished,
            r.mean_turns
        );
    }
    Ok(())
}
