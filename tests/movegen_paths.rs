//! The two generation paths (R3–R8): the positions-only path gives exactly the boards
//! of the full path, in the same order; and the full path's answers (every play's
//! board, moves, outcome, and the order of the plays) are pinned by digests taken
//! with the breadth-first generator of commit 1e8b9d6, which the depth-first one
//! replaced. A changed digest is a changed answer: explain it or fix it.

use tavli_engine::corpus::random_positions;
use tavli_engine::rules::board::{Board, RelOutcome};
use tavli_engine::rules::movegen::{generate, generate_positions, play_outcome, RawPlay};
use tavli_engine::rules::position_id::from_gnubg_id;
use tavli_engine::rules::{Dice, Side, Variant};

fn fnv(h: &mut u64, bytes: &[u8]) {
    for &b in bytes {
        *h ^= b as u64;
        *h = h.wrapping_mul(0x100_0000_01b3);
    }
}

/// FNV-1a over every call's play count and every play's board, moves, length and
/// outcome, in generation order.
fn digest(variant: Variant, boards: &[Board]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let mut out: Vec<RawPlay> = Vec::new();
    for b in boards {
        for dice in Dice::all_rolls() {
            out.clear();
            generate(variant, b, dice, &mut out);
            fnv(&mut h, &(out.len() as u32).to_le_bytes());
            for p in &out {
                fnv(&mut h, &p.board.own);
                fnv(&mut h, &p.board.opp);
                fnv(&mut h, &p.board.own_pinned.to_le_bytes());
                fnv(&mut h, &p.board.opp_pinned.to_le_bytes());
                for m in p.moves() {
                    fnv(&mut h, &[m.from, m.to, m.die, m.hit as u8]);
                }
                let o = match p.outcome {
                    None => 0,
                    Some(RelOutcome::Draw) => 1,
                    Some(RelOutcome::Win { points, .. }) => 1 + points,
                };
                fnv(&mut h, &[p.len, o]);
            }
        }
    }
    h
}

fn corpus(variant: Variant, seed: u64, n: usize) -> Vec<Board> {
    random_positions(variant, seed, n)
        .iter()
        .map(|p| Board::from_position(p, p.turn))
        .collect()
}

fn gnubg_boards(file: &str, n: usize) -> Vec<Board> {
    let path = format!(
        "{}/tests/data/portes-gnubg/{file}-positions.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .take(n)
        .map(|id| Board::from_position(&from_gnubg_id(id, Side::White).unwrap(), Side::White))
        .collect()
}

#[test]
fn full_path_answers_are_those_of_the_breadth_first_generator() {
    // Digests printed by the same function built against commit 1e8b9d6.
    let expected = [
        (Variant::Portes, 0x0757_2ba3_ab38_dcc3u64),
        (Variant::Plakoto, 0xe72b_98a6_a8de_16a4),
        (Variant::Fevga, 0x5618_2084_c5bf_f6e2),
    ];
    for (variant, want) in expected {
        let got = digest(variant, &corpus(variant, 11, 400));
        assert_eq!(got, want, "{variant}: {got:#018x}");
    }
    for (file, want) in [
        ("contact", 0xaec3_239c_d62c_9082u64),
        ("race", 0xe3b3_1f98_1ac2_f510),
    ] {
        let got = digest(Variant::Portes, &gnubg_boards(file, 200));
        assert_eq!(got, want, "{file}: {got:#018x}");
    }
}

/// Checks, for every roll of every board, that the positions-only path gives the full
/// path's boards in its order, and that `play_outcome` of each board is the play's
/// outcome (R7, R5.5).
fn check_paths_agree(variant: Variant, boards: &[Board]) -> usize {
    let mut full: Vec<RawPlay> = Vec::new();
    let mut positions: Vec<Board> = vec![Board::EMPTY; 3]; // appended to, not replaced
    let mut calls = 0;
    for b in boards {
        for dice in Dice::all_rolls() {
            full.clear();
            positions.truncate(3);
            generate(variant, b, dice, &mut full);
            generate_positions(variant, b, dice, &mut positions);
            assert_eq!(&positions[..3], &[Board::EMPTY; 3], "kept what was there");
            let got = &positions[3..];
            assert_eq!(got.len(), full.len(), "{variant} {dice}");
            for (p, q) in full.iter().zip(got) {
                assert_eq!(p.board, *q, "{variant} {dice}");
                assert_eq!(play_outcome(variant, q), p.outcome, "{variant} {dice}");
            }
            calls += 1;
        }
    }
    calls
}

#[test]
fn positions_only_path_gives_the_full_paths_boards_in_order() {
    for variant in Variant::ALL {
        for seed in [3, 2026] {
            assert_eq!(
                check_paths_agree(variant, &corpus(variant, seed, 600)),
                600 * 21
            );
        }
    }
    assert_eq!(
        check_paths_agree(Variant::Portes, &gnubg_boards("contact", 1000)),
        21_000
    );
    assert_eq!(
        check_paths_agree(Variant::Portes, &gnubg_boards("race", 1000)),
        21_000
    );
}

#[test]
fn positions_only_path_of_a_fevga_trapped_prime_follows_r8_4() {
    // R8.4: all 15 Black checkers on 12, White holding 11..6 in front of them (the
    // example of tests/rules_examples.rs): the must-open search, on both paths.
    let p = tavli_engine::pos!(fevga; white 11:2, 10:2, 9:2, 8:2, 7:2, 6:2, 5:3; black 12:15);
    let b = Board::from_position(&p, Side::White);
    assert_eq!(check_paths_agree(Variant::Fevga, &[b]), 21);
    let mut boards = Vec::new();
    generate_positions(Variant::Fevga, &b, Dice::new(6, 5).unwrap(), &mut boards);
    assert_eq!(boards.len(), 5);
    assert!(boards.iter().all(|q| (6..=11).any(|n| q.own[n] == 0)));
}
