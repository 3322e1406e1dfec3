//! Score-aware play against cubeless play in whole Tavli matches (issue #33;
//! docs/match-equity.md, "Score-aware play against cubeless play"): player A makes
//! the 0-ply play of the best match winning chance at the score, player B the best
//! 0-ply play by cubeless equity, duplicate dice ([`tavli_engine::matchequity::gains`]).
//! Prints A's match-win rate with its 95 % interval over the pairs, games per match,
//! and A's decisions per score (aways A–B) and per variant: the share of turns where
//! A's play is not the cubeless one and the mean match winning chance it gains by
//! A's measure (percentage points). Usage:
//! `cargo run --release --example match_gains -- --length 5 --pairs 2000 --seed 1 --threads 2`.

use clap::Parser;
use std::time::Instant;
use tavli_engine::eval::engine::Engine;
use tavli_engine::matchequity::gains::{run, Decisions, GainsConfig};
use tavli_engine::matchequity::MatchEquityTable;
use tavli_engine::rules::Variant;

#[derive(Parser)]
struct Args {
    /// Match length in points.
    #[arg(long, default_value_t = 5)]
    length: u32,
    /// Pairs of matches (each dice sequence played twice, seats swapped).
    #[arg(long, default_value_t = 100)]
    pairs: u32,
    /// Master seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Worker threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    threads: usize,
}

fn row(name: &str, d: &Decisions) {
    println!(
        "| {name} | {} | {:.1} | {:.3} | {:.2} |",
        d.turns,
        100.0 * d.differ_rate(),
        100.0 * d.mean_gain(),
        100.0 * d.gain / d.differ.max(1) as f64,
    );
}

fn main() {
    let a = Args::parse();
    let cfg = GainsConfig {
        length: a.length,
        pairs: a.pairs,
        seed: a.seed,
        threads: a.threads,
    };
    let engine = Engine::load_default();
    let t0 = Instant::now();
    let r = run(&engine, MatchEquityTable::builtin(), &cfg).unwrap_or_else(|e| {
        eprintln!("match_gains: {e}");
        std::process::exit(2)
    });
    let secs = t0.elapsed().as_secs_f64();
    let w = r.win_rate;
    let t = &r.totals;
    println!(
        "{}-point matches, seed {}: {} pairs, {} matches, {:.1} s",
        cfg.length,
        cfg.seed,
        cfg.pairs,
        2 * cfg.pairs,
        secs
    );
    println!(
        "A (score-aware) won {} of {}: {:.4} ± {:.4} (95 %, over pair means; sd {:.3}); \
         above 1/2 with 95 % confidence: {}",
        r.a_wins,
        2 * cfg.pairs,
        w.mean,
        w.ci95,
        w.sd,
        if w.mean - w.ci95 > 0.5 { "yes" } else { "no" }
    );
    println!(
        "games {} ({:.2} per match), draws {}, cut {}; A's gains by its own measure: \
         {:.4} MWC per match",
        t.games,
        r.games_per_match(),
        t.draws,
        t.cut,
        r.gain_per_match()
    );
    println!();
    println!("| score (A–B away) | A's turns | differ % | mean gain per turn (MWC %) | mean gain per differing turn (MWC %) |");
    println!("|---|---:|---:|---:|---:|");
    for ((a, b), d) in &t.by_score {
        row(&format!("{a}–{b}"), d);
    }
    let mut all = Decisions::default();
    for (v, d) in Variant::ALL.iter().zip(&t.by_variant) {
        row(&v.to_string(), d);
        all.turns += d.turns;
        all.differ += d.differ;
        all.gain += d.gain;
    }
    row("all", &all);
}
