//! The move-generation harness of `scripts/movegen-vs-wildbg.sh`: this project's
//! positions-only generator ([`generate_positions`]) behind the small protocol that
//! the peer harness implements too (docs/performance.md, "Side by side with
//! wildbg").
//!
//! Usage: `movegen_harness MODE FILE [ROUNDS]`
//!
//! - `FILE`: GNU Backgammon Position IDs, one a line, the side on roll first
//!   (`tests/data/portes-gnubg/contact-positions.txt`, `race-positions.txt`).
//! - Calls: every position × the 21 rolls in the order 1-1, 2-1, 2-2, 3-1, 3-2, 3-3,
//!   …, 6-6, position by position.
//! - `setup`: decode the file and stop (prints `positions N`); callgrind's count of
//!   this run is subtracted from `once`.
//! - `once`: every call once (prints `calls C results R`).
//! - `counts`: every call once, printing each call's number of resulting positions
//!   on its own line (compared line by line with the peer's).
//! - `time`: `ROUNDS` passes over the calls (prints `calls C ns T`, wall time of the
//!   passes only).
//!
//! Build: `cargo build --release --example movegen_harness`.

use std::hint::black_box;
use std::time::Instant;
use tavli_engine::rules::board::Board;
use tavli_engine::rules::movegen::generate_positions;
use tavli_engine::rules::position_id::from_gnubg_id;
use tavli_engine::rules::{Dice, Side, Variant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("");
    let file = args
        .get(2)
        .expect("usage: movegen_harness MODE FILE [ROUNDS]");
    let text = std::fs::read_to_string(file).expect("positions file");
    let boards: Vec<Board> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|id| {
            let pos = from_gnubg_id(id.trim(), Side::White).expect("GNU Backgammon Position ID");
            Board::from_position(&pos, Side::White)
        })
        .collect();
    let rolls = Dice::all_rolls();
    let mut out: Vec<Board> = Vec::with_capacity(1024);
    match mode {
        "setup" => println!("positions {}", boards.len()),
        "once" => {
            let mut total = 0usize;
            for b in &boards {
                for &dice in &rolls {
                    out.clear();
                    generate_positions(Variant::Portes, b, dice, &mut out);
                    total += out.len();
                }
            }
            println!("calls {} results {total}", boards.len() * rolls.len());
        }
        "counts" => {
            let mut text = String::new();
            for b in &boards {
                for &dice in &rolls {
                    out.clear();
                    generate_positions(Variant::Portes, b, dice, &mut out);
                    text.push_str(&out.len().to_string());
                    text.push('\n');
                }
            }
            print!("{text}");
        }
        "time" => {
            let rounds: usize = args.get(3).map(|s| s.parse().expect("ROUNDS")).unwrap_or(1);
            let mut total = 0usize;
            let t = Instant::now();
            for _ in 0..rounds {
                for b in &boards {
                    for &dice in &rolls {
                        out.clear();
                        generate_positions(Variant::Portes, black_box(b), dice, &mut out);
                        total += out.len();
                    }
                }
            }
            let ns = t.elapsed().as_nanos();
            black_box(total);
            println!("calls {} ns {ns}", rounds * boards.len() * rolls.len());
        }
        _ => panic!("MODE must be setup, once, counts or time"),
    }
}
