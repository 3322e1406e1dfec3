//! A fixed amount of evaluation work for instruction counting (`valgrind
//! --tool=callgrind`) and timing: one position's plays of a roll, ranked or
//! evaluated `N` times.
//!
//! Usage:
//! - `rank_once MODE N`: the service's engine (`Engine::load_default`: the committed
//!   nets and the exact bear-off database), on the Portes contact position of
//!   `benches/eval.rs` (48 plays with 4-2);
//! - `rank_once VARIANT NET MODE N`: an engine with the net file `NET` of `VARIANT`
//!   (e.g. `weights/portes-v1.tnet`, `weights/portes-v2.tnet`), on that variant's
//!   position of the same seed, to count two generations of nets side by side.
//!
//! The position is random play from the start with seed 5, the 21st position (for
//! Portes a contact position with 48 plays of 4-2). MODE:
//! - `static`: the net's static evaluation of the position's 4-2 plays (encode and
//!   forward, no search), each play once;
//! - `rank`: `Engine::rank_raw` of those plays at 0 plies (what a 0-ply `Evaluate` or
//!   bot move costs);
//! - `board`: `generate` then `Engine::rank_raw` at 0 plies, each call;
//! - `service`: `PositionEvaluator::rank_plays` at 0 plies (every play with its moves,
//!   notation and position);
//! - `eval1`, `eval2`: `PositionEvaluator::evaluate` at 1 and 2 plies.
//!
//! It prints the time per call and the sum of the results (the same sum = the same
//! answers). Instructions per call: the count of a run with `N = 300` minus one with
//! `N = 100`, divided by 200 (the set-up, building the bear-off database among it,
//! cancels). This file merges the former `rank_once.rs` (the first form) and
//! `rank_nets.rs` (the second); `rank_once.rs` as of commit 91b3b99 has the first form
//! only and builds in a checkout of 1e8b9d6 as well (`scripts/rank-vs.sh` uses it
//! there).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::hint::black_box;
use std::sync::Arc;
use tavli_engine::eval::engine::Engine;
use tavli_engine::eval::net::{load_default, NetEvaluator, Nets};
use tavli_engine::eval::{EvalOptions, Evaluator, PositionEvaluator};
use tavli_engine::rules::board::Board;
use tavli_engine::rules::movegen::generate;
use tavli_engine::rules::{legal_plays, Dice, Position, Side, Variant};

/// Random play from the start, seed 5 (the positions of `benches/eval.rs`).
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
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (variant, net, engine, mode, n) = match args.as_slice() {
        [mode, n] => {
            let net = load_default(Variant::Portes).expect("the committed Portes net");
            (Variant::Portes, net, Engine::load_default(), mode, n)
        }
        [variant, file, mode, n] => {
            let variant = Variant::from_name(variant).expect("VARIANT: portes, plakoto or fevga");
            let nets = Nets::load(file).expect("NET: a .tnet file");
            assert_eq!(nets.variant, variant, "NET is a net of VARIANT");
            let net = Arc::new(NetEvaluator::new(nets));
            let mut evals: [Option<Arc<dyn Evaluator>>; 3] = [None, None, None];
            evals[Variant::ALL.iter().position(|&v| v == variant).unwrap()] =
                Some(net.clone() as Arc<dyn Evaluator>);
            (variant, net, Engine::new(evals), mode, n)
        }
        _ => {
            eprintln!("usage: rank_once MODE N | rank_once VARIANT NET MODE N");
            std::process::exit(2);
        }
    };
    let n: usize = n.parse().expect("N");
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
        match mode.as_str() {
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
