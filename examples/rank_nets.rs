//! The evaluation work of `examples/rank_once.rs` with a net file chosen on the
//! command line, to count the instructions of two generations of nets side by side
//! (`valgrind --tool=callgrind`, docs/performance.md "v1 and v2 nets").
//!
//! Usage: `rank_nets VARIANT NET MODE N`: `NET` a `.tnet` file of `VARIANT` (e.g.
//! `weights/portes-v1.tnet`, `weights/portes-v2.tnet`); MODE
//! - `static`: the net's static evaluation of the position's 4-2 plays (encode and
//!   forward, no search), each play once;
//! - `rank`: `Engine::rank_raw` of those plays at 0 plies (what a 0-ply `Evaluate` or
//!   bot move costs);
//! - `board`: `generate` then `Engine::rank_raw` at 0 plies, each call (`rank_once
//!   board`'s work with this net);
//! - `service`: `PositionEvaluator::rank_plays` at 0 plies (`rank_once service`'s
//!   work with this net: every play with its moves, notation and position);
//! - `eval1`, `eval2`: `PositionEvaluator::evaluate` at 1 and 2 plies.
//!
//! The position is `rank_once`'s: random play from the start with seed 5, the 21st
//! position (for Portes a contact position with 48 plays of 4-2). Instructions per
//! call: (count with `N = 300` − count with `N = 100`) / 200, as for `rank_once`.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::hint::black_box;
use std::sync::Arc;
use tavli_engine::eval::engine::Engine;
use tavli_engine::eval::net::{NetEvaluator, Nets};
use tavli_engine::eval::{EvalOptions, Evaluator, PositionEvaluator};
use tavli_engine::rules::board::Board;
use tavli_engine::rules::movegen::generate;
use tavli_engine::rules::{legal_plays, Dice, Position, Side, Variant};

/// Random play from the start, seed 5 (`rank_once`'s positions).
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
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        eprintln!("usage: rank_nets VARIANT NET MODE N");
        std::process::exit(2);
    }
    let variant = Variant::from_name(&args[1]).expect("VARIANT: portes, plakoto or fevga");
    let nets = Nets::load(&args[2]).expect("NET: a .tnet file");
    assert_eq!(nets.variant, variant, "NET is a net of VARIANT");
    let (mode, n): (&str, usize) = (&args[3], args[4].parse().expect("N"));
    let net = Arc::new(NetEvaluator::new(nets));
    let mut evals: [Option<Arc<dyn Evaluator>>; 3] = [None, None, None];
    evals[Variant::ALL.iter().position(|&v| v == variant).unwrap()] =
        Some(net.clone() as Arc<dyn Evaluator>);
    let engine = Engine::new(evals);
    let pos = positions(variant, 30)[20];
    let dice = Dice::new(4, 2).unwrap();
    let board = Board::from_position(&pos, pos.turn);
    let (mut plays, mut out) = (Vec::new(), Vec::new());
    generate(variant, &board, dice, &mut plays);
    let boards: Vec<Board> = plays.iter().map(|p| p.board.mirror(variant)).collect();
    let opts = |plies| EvalOptions {
        plies,
        ..Default::default()
    };
    let mut acc = 0f32;
    let t = std::time::Instant::now();
    for _ in 0..n {
        match mode {
            "static" => {
                for b in &boards {
                    acc += net.eval_board(variant, black_box(b)).win;
                }
            }
            "rank" => {
                engine
                    .rank_raw(variant, black_box(&plays), opts(0), &mut out)
                    .unwrap();
                acc += out[0].1.win;
            }
            "board" => {
                plays.clear();
                generate(variant, black_box(&board), dice, &mut plays);
                engine.rank_raw(variant, &plays, opts(0), &mut out).unwrap();
                acc += out[0].1.win;
            }
            "service" => {
                let r = engine.rank_plays(black_box(&pos), dice, opts(0)).unwrap();
                acc += r[0].equity;
            }
            "eval1" => acc += engine.evaluate(black_box(&pos), opts(1)).unwrap().equity,
            "eval2" => acc += engine.evaluate(black_box(&pos), opts(2)).unwrap().equity,
            _ => panic!("MODE must be static, rank, board, service, eval1 or eval2"),
        }
    }
    println!(
        "{variant} {} {mode} x {n} ({} plays): {:?} per call ({acc})",
        net.name(variant),
        plays.len(),
        t.elapsed() / n as u32
    );
}
