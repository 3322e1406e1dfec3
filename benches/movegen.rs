//! Legal-play generation speed: Portes over the 2000 GNU Backgammon golden positions
//! (wildbg's move-generation benchmark set) × 21 rolls, Plakoto and Fevga over 1000
//! seeded random-play positions × 21 rolls. One iteration generates every play of
//! every (position, roll) of a set; divide by the set size for ns per call. The full
//! path (`generate`: boards, moves, outcomes) under the set's name, the positions-only
//! path (`generate_positions`) under `..._positions`.
//!
//! `cargo bench --bench movegen` (figures in docs/performance.md).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use tavli_engine::corpus::random_positions;
use tavli_engine::rules::board::Board;
use tavli_engine::rules::movegen::{generate, generate_positions, RawPlay};
use tavli_engine::rules::position_id::from_gnubg_id;
use tavli_engine::rules::{Dice, Side, Variant};

fn gnubg_boards(file: &str) -> Vec<Board> {
    let path = format!(
        "{}/tests/data/portes-gnubg/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|id| Board::from_position(&from_gnubg_id(id, Side::White).unwrap(), Side::White))
        .collect()
}

fn corpus_boards(variant: Variant) -> Vec<Board> {
    random_positions(variant, 2026, 1000)
        .iter()
        .map(|p| Board::from_position(p, p.turn))
        .collect()
}

fn bench_set(c: &mut Criterion, name: &str, variant: Variant, boards: &[Board]) {
    let rolls = Dice::all_rolls();
    let mut out: Vec<RawPlay> = Vec::with_capacity(1024);
    let mut group = c.benchmark_group("movegen");
    group.throughput(Throughput::Elements((boards.len() * rolls.len()) as u64));
    group.sample_size(20);
    group.bench_function(name, |b| {
        b.iter(|| {
            let mut total = 0usize;
            for board in boards {
                for &dice in &rolls {
                    out.clear();
                    generate(variant, black_box(board), dice, &mut out);
                    total += out.len();
                }
            }
            black_box(total)
        })
    });
    let mut boards_out: Vec<Board> = Vec::with_capacity(1024);
    group.bench_function(format!("{name}_positions"), |b| {
        b.iter(|| {
            let mut total = 0usize;
            for board in boards {
                for &dice in &rolls {
                    boards_out.clear();
                    generate_positions(variant, black_box(board), dice, &mut boards_out);
                    total += boards_out.len();
                }
            }
            black_box(total)
        })
    });
    group.finish();
}

fn movegen(c: &mut Criterion) {
    bench_set(
        c,
        "portes_contact_1000x21",
        Variant::Portes,
        &gnubg_boards("contact-positions.txt"),
    );
    bench_set(
        c,
        "portes_race_1000x21",
        Variant::Portes,
        &gnubg_boards("race-positions.txt"),
    );
    bench_set(
        c,
        "plakoto_selfplay_1000x21",
        Variant::Plakoto,
        &corpus_boards(Variant::Plakoto),
    );
    bench_set(
        c,
        "fevga_selfplay_1000x21",
        Variant::Fevga,
        &corpus_boards(Variant::Fevga),
    );
}

criterion_group!(benches, movegen);
criterion_main!(benches);
