//! A fixed amount of `ChoosePlay` work beside the other handlers on the same
//! positions, for instruction counting (`valgrind --tool=callgrind`) and timing.
//!
//! Usage: `choose_once MODE N [FILE]`: N passes over the positions, each position once per
//! pass, through the service's synchronous methods (no transport), the server's
//! engine (`Engine::load_default`) and `--max-plies 0`. MODE:
//! - `choose`: `ChoosePlay` at the best level (0 ply: the best play of the ranking,
//!   converted once);
//! - `rank`: the engine's ranking alone (`PositionEvaluator::rank_raw_plays`);
//! - `evaluate`: `Evaluate` at 0 ply with the roll (the position's evaluation and
//!   every play ranked and converted);
//! - `plays`: `ListLegalPlays` as the server writes it (`list_legal_plays_encoded`).
//!
//! The positions: random play from the start of each variant (seed 5, at most 40
//! turns a game), every position whose roll has more than one legal play; or those
//! of FILE, a Position ID and a roll per line (`portes/w/... 6-5`). It
//! prints the time per call and a sum of the answers. Instructions per call: the
//! count of `N = 4` minus that of `N = 2`, over twice the number of positions
//! (docs/performance.md, "ChoosePlay").

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;
use std::time::Instant;
use tavli_engine::eval::engine::Engine;
use tavli_engine::eval::{EvalOptions, PositionEvaluator};
use tavli_engine::rules::{legal_plays, position_id, Dice, Position, Side, Variant};
use tavli_engine::service::{pb, TavliEngineService};

/// The positions with a roll (see the module documentation).
fn positions() -> Vec<(Position, Dice)> {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut out = Vec::new();
    for v in Variant::ALL {
        let mut pos = Position::start(v, Side::White);
        for _ in 0..40 {
            let d = Dice::new(rng.random_range(1..=6), rng.random_range(1..=6)).unwrap();
            let plays = legal_plays(&pos, d).unwrap();
            if plays.len() > 1 {
                out.push((pos, d));
            }
            let p = &plays[rng.random_range(0..plays.len())];
            if p.outcome.is_some() {
                break;
            }
            pos = p.position;
        }
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mode, n, file) = match args.as_slice() {
        [mode, n] => (mode, n, None),
        [mode, n, file] => (mode, n, Some(file)),
        _ => {
            eprintln!("usage: choose_once choose|rank|evaluate|plays N [FILE]");
            std::process::exit(2);
        }
    };
    let n: usize = n.parse().expect("N: a number of passes");
    let cases = match file {
        None => positions(),
        Some(f) => std::fs::read_to_string(f)
            .expect("FILE: readable")
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(p, d)| {
                let pos = position_id::from_id(p.trim()).expect("a Position ID");
                (pos, Dice::parse(d.trim()).expect("a roll such as 6-5"))
            })
            .collect(),
    };
    let engine = Arc::new(Engine::load_default());
    let svc = TavliEngineService::new(Some(engine.clone()), 0, None);
    let id = |p: &Position| position_id::to_id(p);
    let dice = |d: &Dice| {
        Some(pb::Dice {
            die1: d.die1() as u32,
            die2: d.die2() as u32,
        })
    };
    let choose: Vec<_> = cases
        .iter()
        .map(|(p, d)| pb::ChoosePlayRequest {
            position: Some(pb::choose_play_request::Position::PositionId(id(p))),
            dice: dice(d),
            level: pb::SkillLevel::Best as i32,
            match_state: None,
            seed: Some(1),
        })
        .collect();
    let evaluate: Vec<_> = cases
        .iter()
        .map(|(p, d)| pb::EvaluateRequest {
            match_state: None,
            position: Some(pb::evaluate_request::Position::PositionId(id(p))),
            dice: dice(d),
            plies: 0,
            grade: None,
        })
        .collect();
    let plays: Vec<_> = cases
        .iter()
        .map(|(p, d)| pb::ListLegalPlaysRequest {
            position: Some(pb::list_legal_plays_request::Position::PositionId(id(p))),
            dice: dice(d),
            detail: 0,
        })
        .collect();
    let mut sum = 0f64;
    let t0 = Instant::now();
    for _ in 0..n {
        match mode.as_str() {
            "choose" => {
                for r in &choose {
                    sum += svc.choose_play(r, None).unwrap().equity as f64;
                }
            }
            "rank" => {
                for (p, d) in &cases {
                    let r = engine
                        .rank_raw_plays(p, *d, EvalOptions::default())
                        .unwrap();
                    sum += r.ranked[0].1.equity() as f64;
                }
            }
            "evaluate" => {
                for r in &evaluate {
                    sum += svc.evaluate(r, None).unwrap().equity as f64;
                }
            }
            "plays" => {
                for r in &plays {
                    sum += svc.list_legal_plays_encoded(r).unwrap().len() as f64;
                }
            }
            other => panic!("MODE: choose, rank, evaluate or plays, not {other:?}"),
        }
    }
    let calls = (n * cases.len()).max(1);
    println!(
        "{mode} x {n} passes of {} positions: {:.2} us per call ({sum})",
        cases.len(),
        t0.elapsed().as_secs_f64() * 1e6 / calls as f64
    );
}
