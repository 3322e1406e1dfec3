//! External golden test for Portes (R4, R3, R6): GNU Backgammon's legal-play counts
//! and digests for the 1000 contact and 1000 race positions of wildbg's benchmark ×
//! 21 rolls (`tests/data/portes-gnubg/README.md`).

use sha2::{Digest, Sha256};
use tavli_engine::rules::board::Board;
use tavli_engine::rules::movegen::generate;
use tavli_engine::rules::position_id::{from_gnubg_id, gnubg_id_of_board, to_gnubg_id};
use tavli_engine::rules::{Dice, Side, Variant};

fn check_file(name: &str) -> (u64, u64) {
    let text = std::fs::read_to_string(format!(
        "{}/tests/data/portes-gnubg/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let (mut doubles, mut non_doubles) = (0u64, 0u64);
    let mut rows = 0;
    let mut out = Vec::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        let (id, d1, d2, plays, digest) = (f[0], f[1], f[2], f[3], f[4]);
        let pos = from_gnubg_id(id, Side::White).unwrap();
        // The ID round-trips exactly.
        assert_eq!(to_gnubg_id(&pos).unwrap(), id);
        let dice = Dice::new(d1.parse().unwrap(), d2.parse().unwrap()).unwrap();
        out.clear();
        generate(
            Variant::Portes,
            &Board::from_position(&pos, Side::White),
            dice,
            &mut out,
        );
        let mut ids: Vec<String> = out.iter().map(|p| gnubg_id_of_board(&p.board)).collect();
        ids.sort();
        let hash = Sha256::digest(ids.join(",").as_bytes());
        let hex: String = hash[..8].iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(out.len().to_string(), plays, "{id} {dice}: number of plays");
        assert_eq!(hex, digest, "{id} {dice}: digest of resulting positions");
        if dice.is_double() {
            doubles += out.len() as u64;
        } else {
            non_doubles += out.len() as u64;
        }
        rows += 1;
    }
    assert_eq!(rows, 21_000, "{name}: rows");
    (doubles, non_doubles)
}

#[test]
fn gnubg_contact_positions_all_rolls() {
    // Totals as published by wildbg and gnubg for this benchmark.
    assert_eq!(check_file("contact.tsv"), (218_356, 185_957));
}

#[test]
fn gnubg_race_positions_all_rolls() {
    assert_eq!(check_file("race.tsv"), (140_720, 122_570));
}

#[test]
fn gnubg_id_start_position_and_asymmetric_round_trip() {
    use tavli_engine::rules::Position;
    // R1 Portes start; the README gives its ID.
    let start = Position::start(Variant::Portes, Side::White);
    assert_eq!(to_gnubg_id(&start).unwrap(), "4HPwATDgc/ABMA");
    assert_eq!(from_gnubg_id("4HPwATDgc/ABMA", Side::White).unwrap(), start);
    // Checkers on one bar only: the order of the two halves matters.
    let p =
        tavli_engine::pos!(portes; white bar:1, 13:5, 8:3, 6:5, 24:1; black 1:2, 12:5, 17:3, 19:5);
    let id = to_gnubg_id(&p).unwrap();
    let back = from_gnubg_id(&id, Side::White).unwrap();
    assert_eq!(back, p);
    assert_eq!(back.bar, [1, 0]);
    // Seen from Black (Black on roll), the White bar checker is in the first half.
    let mut pb = p;
    pb.turn = Side::Black;
    let idb = to_gnubg_id(&pb).unwrap();
    assert_ne!(id, idb);
    assert_eq!(from_gnubg_id(&idb, Side::Black).unwrap(), pb);
}
