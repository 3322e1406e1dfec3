//! The starter's outcome distribution of a variant by self-play of whole games
//! (docs/match-equity.md, "The check by simulation"): the alternative to the rollouts
//! of `tavli-engine met --generate`, with the game loop of `met --check`
//! ([`play_game`]: 0-ply play on both sides, played to the end with no bear-off
//! database cut). White starts every game; game `i`'s dice come from ChaCha8 seeded by
//! `seed * 1000003 ^ i`. Prints each end's percentage with its standard error
//! (√(p (1 − p) / n)). Usage:
//! `cargo run --release --example met_selfplay -- <variant> <games> <seed>`.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tavli_engine::eval::engine::Engine;
use tavli_engine::eval::StopWhen;
use tavli_engine::matchequity::simulate::play_game;
use tavli_engine::rules::{Side, Variant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: met_selfplay <portes|plakoto|fevga> <games> <seed>";
    let variant = args
        .get(1)
        .and_then(|v| Variant::from_name(v))
        .expect(usage);
    let n: u64 = args.get(2).and_then(|s| s.parse().ok()).expect(usage);
    let seed: u64 = args.get(3).and_then(|s| s.parse().ok()).expect(usage);
    let engine = Engine::load_default();
    let search = engine.search(variant, StopWhen::default());
    // win single, win mars, lose single, lose mars, draw; games cut.
    let mut counts = [0u64; 5];
    let mut cut = 0u64;
    for i in 0..n {
        let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_mul(1_000_003) ^ i);
        let (o, was_cut) = play_game(&search, Side::White, &mut rng).expect("evaluator");
        cut += was_cut as u64;
        let k = match (o.winner, o.points) {
            (Some(Side::White), 1) => 0,
            (Some(Side::White), _) => 1,
            (Some(Side::Black), 1) => 2,
            (Some(Side::Black), _) => 3,
            (None, _) => 4,
        };
        counts[k] += 1;
    }
    println!("{variant}: {n} games from the start, White starting, seed {seed}, {cut} cut");
    let names = ["win single", "win mars", "lose single", "lose mars", "draw"];
    for (name, k) in names.iter().zip(counts) {
        let p = k as f64 / n as f64;
        let se = (p * (1.0 - p) / n as f64).sqrt();
        println!("{name:<12} {:7.3} ± {:.3}", 100.0 * p, 100.0 * se);
    }
}
