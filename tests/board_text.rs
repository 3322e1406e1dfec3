//! `tavli-engine show`: a position drawn as a text board (src/board_text.rs), checked
//! character for character for each variant, through the library and the binary.
//! Pip counts in the notes are worked out by hand in each test's comment (R1: a
//! checker on own point n counts n, one on the bar 25).

use std::process::Command;
use tavli_engine::board_text::render;
use tavli_engine::rules::position_id;

fn show(id: &str) -> String {
    render(&position_id::from_id(id).unwrap())
}

/// Portes (R4): checkers on both bars, Black's in the top half of the bar column,
/// White's in the bottom half; pip counts with a bar checker at 25 (R1).
#[test]
fn portes_both_sides_on_the_bar() {
    // Pips: White 25 + 13*5 + 8*3 + 6*5 + 5 = 149; Black (own = 25 - printed)
    // 2*25 + 24 + 13*5 + 8*3 + 6*4 = 187.
    let want = r"
 Position ID: portes/w/bar:1,13:5,8:3,6:5,5:1/bar:2,1:1,12:5,17:3,19:4
 GNU Backgammon ID: 4Dn4AGjQ5+ADQA
 +13-14-15-16-17-18------19-20-21-22-23-24-+     O: Black
 | X           O    | O | O                |     pips 187
 | X           O    | O | O                |     off 0
 | X           O    |   | O                |     bar 2
 | X                |   | O                |
 | X                |   |                  |
v|                  |BAR|                  |     Portes, White (X) to move
 | O                |   | X                |
 | O                |   | X                |
 | O           X    |   | X                |     bar 1
 | O           X    |   | X                |     off 0
 | O           X    | X | X  X           O |     pips 149
 +12-11-10--9--8--7-------6--5--4--3--2--1-+     X: White
"[1..]
        .to_string();
    assert_eq!(
        show("portes/w/bar:1,13:5,8:3,6:5,5:1/bar:2,1:1,12:5,17:3,19:4"),
        want
    );
}

/// Plakoto (R5.1): White pins a Black checker on 20 and Black pins a White one on
/// 5; each pinned checker is drawn in lower case at the edge, under its pinner.
#[test]
fn plakoto_pins_of_both_colours() {
    // Pips: White 24*13 + 20 + 5 = 337; Black 24*13 + 20 + 5 = 337 (own points
    // 24, 20 and 5 of printed 1, 5 and 20).
    let want = r"
 Position ID: plakoto/w/24:13,20:1,5:1p/1:13,5:1,20:1p
 +13-14-15-16-17-18------19-20-21-22-23-24-+     O: Black
 |                  |   |    o           X |     pips 337
 |                  |   |    X           X |     off 0
 |                  |   |                X |
 |                  |   |                X |
 |                  |   |               13 |
v|                  |BAR|                  |     Plakoto, White (X) to move
 |                  |   |               13 |
 |                  |   |                O |
 |                  |   |                O |
 |                  |   |    O           O |     off 0
 |                  |   |    x           O |     pips 337
 +12-11-10--9--8--7-------6--5--4--3--2--1-+     X: White
 x: a pinned White checker, o: a pinned Black checker
"[1..]
        .to_string();
    assert_eq!(show("plakoto/w/24:13,20:1,5:1p/1:13,5:1,20:1p"), want);
}

/// Fevga (R8): Black's home is printed 13..18 (its own 1..6); eight borne off on
/// each side fill the trays five to a column (R6).
#[test]
fn fevga_bearing_off() {
    // Pips: White 6*2 + 4*3 + 1*2 = 26; Black (own = printed - 12 here) 6*4 + 3*2
    // + 1 = 31.
    let want = r"
 Position ID: fevga/w/6:2,4:3,1:2,off:8/18:4,15:2,13:1,off:8
 +13-14-15-16-17-18------19-20-21-22-23-24-+     O: Black
 | O     O        O |   |                  | OO  pips 31
 |       O        O |   |                  | OO  off 8
 |                O |   |                  | OO
 |                O |   |                  | O
 |                  |   |                  | O
v|                  |BAR|                  |     Fevga, White (X) to move
 |                  |   |                  | X
 |                  |   |                  | X
 |                  |   |       X          | XX
 |                  |   | X     X        X | XX  off 8
 |                  |   | X     X        X | XX  pips 26
 +12-11-10--9--8--7-------6--5--4--3--2--1-+     X: White
"[1..]
        .to_string();
    assert_eq!(show("fevga/w/6:2,4:3,1:2,off:8/18:4,15:2,13:1,off:8"), want);
}

/// The binary: `show` takes a GNU Backgammon ID with its side on roll (here the
/// Portes start, White on roll) and prints the same board as for the Position ID.
#[test]
fn show_command_with_a_gnu_backgammon_id() {
    let bin = env!("CARGO_BIN_EXE_tavli-engine");
    let run = |args: &[&str]| Command::new(bin).arg("show").args(args).output().unwrap();
    let want = r"
 Position ID: portes/w/24:2,13:5,8:3,6:5/1:2,12:5,17:3,19:5
 GNU Backgammon ID: 4HPwATDgc/ABMA
 +13-14-15-16-17-18------19-20-21-22-23-24-+     O: Black
 | X           O    |   | O              X |     pips 167
 | X           O    |   | O              X |     off 0
 | X           O    |   | O                |     bar 0
 | X                |   | O                |
 | X                |   | O                |
v|                  |BAR|                  |     Portes, White (X) to move
 | O                |   | X                |
 | O                |   | X                |
 | O           X    |   | X                |     bar 0
 | O           X    |   | X              O |     off 0
 | O           X    |   | X              O |     pips 167
 +12-11-10--9--8--7-------6--5--4--3--2--1-+     X: White
"[1..]
        .to_string();
    let by_gnubg = run(&["--position", "4HPwATDgc/ABMA", "--side", "white"]);
    assert!(by_gnubg.status.success(), "{by_gnubg:?}");
    assert_eq!(String::from_utf8(by_gnubg.stdout).unwrap(), want);
    let by_id = run(&[
        "--position",
        "portes/w/24:2,13:5,8:3,6:5/1:2,12:5,17:3,19:5",
    ]);
    assert_eq!(String::from_utf8(by_id.stdout).unwrap(), want);

    let no_side = run(&["--position", "4HPwATDgc/ABMA"]);
    assert_eq!(no_side.status.code(), Some(2));
    assert_eq!(
        String::from_utf8(no_side.stderr).unwrap(),
        "tavli-engine: side: a GNU Backgammon ID needs --side white or --side black (the side on roll)\n"
    );
    let bad = run(&["--position", "portes/w/24:16/1:15"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8(bad.stderr)
        .unwrap()
        .starts_with("tavli-engine: position.position_id: "),);
}
