//! Evaluation speed (issue #4 targets: >= 100,000 static evaluations per second per
//! core; ranking all plays of a contact position at 0-ply in under 100 µs).
//!
//! Static evaluation of the committed nets (what the service uses) and of the
//! baselines (pubeval for Portes, the heuristic for Plakoto and Fevga); ranking and
//! search with the service's engine (nets + exact bear-off). Run:
//! `cargo bench --bench eval`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::hint::black_box;
use std::sync::Arc;
use tavli_engine::eval::bearoff::BearoffDb;
use tavli_engine::eval::engine::Engine;
use tavli_engine::eval::pubeval::PubEval;
use tavli_engine::eval::{EvalOptions, Evaluator, PositionEvaluator};
use tavli_engine::rules::board::Board;
use tavli_engine::rules::movegen::generate_positions;
use tavli_engine::rules::{legal_plays, Dice, Position, Side, Variant};
use tavli_engine::train::heuristic::Heuristic;

/// Contact positions from random play (deterministic), mover-relative.
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

fn static_eval(c: &mut Criterion) {
    let mut g = c.benchmark_group("static_eval");
    let mut evals: Vec<(Variant, Arc<dyn Evaluator>)> = Variant::ALL
        .iter()
        .filter_map(|&v| {
            tavli_engine::eval::net::load_default(v).map(|n| (v, n as Arc<dyn Evaluator>))
        })
        .collect();
    evals.extend([
        (Variant::Portes, Arc::new(PubEval) as Arc<dyn Evaluator>),
        (Variant::Plakoto, Arc::new(Heuristic)),
        (Variant::Fevga, Arc::new(Heuristic)),
    ]);
    for (v, e) in evals {
        let boards: Vec<Board> = positions(v, 1000)
            .iter()
            .map(|p| Board::from_position(p, p.turn))
            .collect();
        g.throughput(Throughput::Elements(boards.len() as u64));
        g.bench_with_input(BenchmarkId::new(e.name(v), v), &boards, |b, boards| {
            b.iter(|| {
                let mut s = 0f32;
                for bd in boards {
                    s += e.eval_board(v, black_box(bd)).win;
                }
                s
            })
        });
    }
    g.finish();
}

fn bearoff(c: &mut Criterion) {
    let mut g = c.benchmark_group("bearoff");
    g.sample_size(10);
    g.bench_function("build_database", |b| b.iter(BearoffDb::build));
    let db = BearoffDb::global();
    g.bench_function("race_probabilities", |b| {
        b.iter(|| {
            db.race(
                black_box(&[2, 2, 3, 3, 2, 3]),
                0,
                black_box(&[1, 3, 2, 4, 2, 3]),
                0,
            )
        })
    });
    g.finish();
}

fn rank_plays(c: &mut Criterion) {
    let mut g = c.benchmark_group("rank_plays_0ply");
    let engine = Engine::load_default();
    // A Portes middle-game position with many plays: the start after 6-4 / 5-3 ...
    for v in Variant::ALL {
        let pos = positions(v, 30)[20];
        let dice = Dice::new(4, 2).unwrap();
        let n = legal_plays(&pos, dice).unwrap().len();
        g.bench_function(format!("{v}_service_api_{n}_plays"), |b| {
            b.iter(|| {
                engine
                    .rank_plays(black_box(&pos), dice, EvalOptions::default())
                    .unwrap()
            })
        });
        let board = Board::from_position(&pos, pos.turn);
        let mut plays = Vec::new();
        let mut out = Vec::new();
        g.bench_function(format!("{v}_board_api_{n}_plays"), |b| {
            b.iter(|| {
                plays.clear();
                generate_positions(v, black_box(&board), dice, &mut plays);
                engine
                    .rank_raw(v, &plays, EvalOptions::default(), &mut out)
                    .unwrap();
                out[0].0
            })
        });
    }
    g.finish();
}

fn search(c: &mut Criterion) {
    let mut g = c.benchmark_group("evaluate_nply");
    g.sample_size(10);
    let engine = Engine::load_default();
    let pos = positions(Variant::Portes, 30)[20];
    for plies in [1u8, 2] {
        g.bench_function(format!("portes_net_{plies}ply"), |b| {
            b.iter(|| {
                engine
                    .evaluate(
                        black_box(&pos),
                        EvalOptions {
                            plies,
                            deadline: None,
                            cancel: None,
                            measure: None,
                        },
                    )
                    .unwrap()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, static_eval, bearoff, rank_plays, search);
criterion_main!(benches);
