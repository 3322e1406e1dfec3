//! Generates every legal play of one benchmark set once: a fixed amount of work for
//! instruction counting (`valgrind --tool=callgrind`), which, unlike wall time, does
//! not depend on what else the machine runs. Usage:
//! `cargo run --release --example movegen_once -- portes-contact|portes-race|portes|plakoto|fevga [setup|positions]`
//!
//! Without a second argument the full path runs (`generate`: boards, moves,
//! outcomes); `positions` runs the positions-only path (`generate_positions`);
//! `setup` only builds the boards (subtract its count).

use tavli_engine::corpus::random_positions;
use tavli_engine::rules::board::Board;
use tavli_engine::rules::movegen::{generate, generate_positions};
use tavli_engine::rules::position_id::from_gnubg_id;
use tavli_engine::rules::{Dice, Side, Variant};

fn main() {
    let set = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "portes-contact".into());
    let (variant, boards): (Variant, Vec<Board>) = match set.as_str() {
        "portes-contact" | "portes-race" => {
            let file = if set == "portes-contact" {
                "contact"
            } else {
                "race"
            };
            let path = format!(
                "{}/tests/data/portes-gnubg/{file}-positions.txt",
                env!("CARGO_MANIFEST_DIR")
            );
            let text = std::fs::read_to_string(path).expect("golden positions");
            let boards = text
                .lines()
                .map(|id| {
                    Board::from_position(&from_gnubg_id(id, Side::White).unwrap(), Side::White)
                })
                .collect();
            (Variant::Portes, boards)
        }
        name => {
            let v =
                Variant::from_name(name).expect("portes-contact, portes-race, plakoto or fevga");
            let boards = random_positions(v, 2026, 1000)
                .iter()
                .map(|p| Board::from_position(p, p.turn))
                .collect();
            (v, boards)
        }
    };
    // `setup` as a second argument stops here: subtract its count to isolate generation.
    if std::env::args().nth(2).as_deref() == Some("setup") {
        return;
    }
    let mut out = Vec::new();
    let mut boards_out = Vec::new();
    let positions = std::env::args().nth(2).as_deref() == Some("positions");
    let mut total = 0usize;
    for b in &boards {
        for dice in Dice::all_rolls() {
            if positions {
                boards_out.clear();
                generate_positions(variant, b, dice, &mut boards_out);
                total += boards_out.len();
            } else {
                out.clear();
                generate(variant, b, dice, &mut out);
                total += out.len();
            }
        }
    }
    println!(
        "{set}: {} positions x 21 rolls, {total} plays",
        boards.len()
    );
}
