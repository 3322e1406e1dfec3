//! A fixed amount of evaluation work for instruction counting (`valgrind
//! --tool=callgrind`): the Portes contact position of `benches/eval.rs` (48 plays with
//! 4-2), with the service's engine (nets and exact bear-off), `N` times.
//!
//! Usage: `rank_once MODE N` with MODE
//! - `service`: `PositionEvaluator::rank_plays` at 0 plies (every play with its moves,
//!   notation and position);
//! - `board`: `generate` then `Engine::rank_raw` at 0 plies;
//! - `eval1`, `eval2`: `PositionEvaluator::evaluate` at 1 and 2 plies.
//!
//! Instructions per call: the count of a run with `N = 300` minus one with `N = 100`,
//! divided by 200 (the set-up, building the bear-off database among it, cancels). The
//! file uses only what commit 1e8b9d6 already had, so the same file can be built in a
//! checkout of that commit to compare (docs/performance.md).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::hint::black_box;
use tavli_engine::eval::engine::Engine;
use tavli_engine::eval::{EvalOptions, PositionEvaluator};
use tavli_engine::rules::board::Board;
use tavli_engine::rules::movegen::generate;
use tavli_engine::rules::{legal_plays, Dice, Position, Side, Variant};

/// The positions of `benches/eval.rs`: random play from the start, seed 5.
fn positions(variant: Variant, n: usize) -> Vec<Position> {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut out = Vec::new();
    while out.len() < n {
        let mut pos = Position::start(variant, Side::White);
        for _ in 0..40 {
            let dice = Dice::new(rng.random_range(1..=6), rng.random_range(1..=6)).unwrap();
            let plays = legal_plays(&pos, dice).unwrap();
            let p = &plays[rng.random_range(0..plays.len())];
            if p.outcome.is_some() {
                break;
            }
            pos = p.position;
            out.push(pos);
        }
    }
    out.truncate(n);
    out
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "service".into());
    let n: usize = std::env::args()
        .nth(2)
        .map(|s| s.parse().expect("N"))
        .unwrap_or(1000);
    let engine = Engine::load_default();
    let pos = positions(Variant::Portes, 30)[20];
    let dice = Dice::new(4, 2).unwrap();
    let board = Board::from_position(&pos, pos.turn);
    let (mut plays, mut out) = (Vec::new(), Vec::new());
    let plies = |plies| EvalOptions {
        plies,
        ..Default::default()
    };
    let mut acc = 0f32;
    let t = std::time::Instant::now();
    for _ in 0..n {
        match mode.as_str() {
            "service" => {
                let r = engine.rank_plays(black_box(&pos), dice, plies(0)).unwrap();
                acc += r[0].equity;
            }
            "board" => {
                plays.clear();
                generate(Variant::Portes, black_box(&board), dice, &mut plays);
                engine
                    .rank_raw(Variant::Portes, &plays, plies(0), &mut out)
                    .unwrap();
                acc += out[0].1.win;
            }
            "eval1" | "eval2" => {
                let p = if mode == "eval1" { 1 } else { 2 };
                acc += engine.evaluate(black_box(&pos), plies(p)).unwrap().equity;
            }
            _ => panic!("MODE must be service, board, eval1 or eval2"),
        }
    }
    println!(
        "{mode} x {n}: {:?} per call ({acc})",
        t.elapsed() / n as u32
    );
}
