//! A position drawn as a text board (`tavli-engine show`), laid out as GNU
//! Backgammon's text board (`drawboard.c`): points in printed numbering (RULES.md
//! R1), 13..24 along the top from left to right and 12..1 along the bottom, the bar
//! in the middle, borne-off checkers in a tray on the right, and notes beside.
//!
//! ```text
//!  Position ID: portes/w/24:2,13:5,8:3,6:5/1:2,12:5,17:3,19:5
//!  GNU Backgammon ID: 4HPwATDgc/ABMA
//!  +13-14-15-16-17-18------19-20-21-22-23-24-+     O: Black
//!  | X           O    |   | O              X |     pips 167
//!  | X           O    |   | O              X |     off 0
//!  | X           O    |   | O                |     bar 0
//!  | X                |   | O                |
//!  | X                |   | O                |
//! v|                  |BAR|                  |     Portes, White (X) to move
//!  | O                |   | X                |
//!  | O                |   | X                |
//!  | O           X    |   | X                |     bar 0
//!  | O           X    |   | X              O |     off 0
//!  | O           X    |   | X              O |     pips 167
//!  +12-11-10--9--8--7-------6--5--4--3--2--1-+     X: White
//! ```
//!
//! White is `X` (home 1..6, bottom right) and Black `O`. Each point shows its
//! checkers from the edge of the board: four rows, then in the fifth row the fifth
//! checker or, for a taller stack, the number of checkers of the colour on top. A
//! Plakoto pin (R5.1) is the pinned checker in lower case (`x` White, `o` Black) at
//! the edge, under the pinner's checkers. The bar column holds Black's bar checkers
//! in the top half and White's in the bottom half (Portes, R4); the tray right of the
//! board holds the borne-off checkers (R6), Black's at the top, White's at the
//! bottom, five to a column. `v` (White) or `^` (Black) on the bar line points at
//! the side to move. Lines carry no trailing spaces.

use crate::rules::position_id;
use crate::rules::{Point, Position, Side, Variant};
use std::fmt::Write as _;

const TOP_LABELS: &str = " +13-14-15-16-17-18------19-20-21-22-23-24-+";
const BOTTOM_LABELS: &str = " +12-11-10--9--8--7-------6--5--4--3--2--1-+";
/// The printed points of the top half (left to right) and of the bottom half.
const TOP_POINTS: [[u8; 6]; 2] = [[13, 14, 15, 16, 17, 18], [19, 20, 21, 22, 23, 24]];
const BOTTOM_POINTS: [[u8; 6]; 2] = [[12, 11, 10, 9, 8, 7], [6, 5, 4, 3, 2, 1]];
const BAR_LINE: &str = "|                  |BAR|                  |";

/// The checker letter of a side: White `X`, Black `O`; pinned ones in lower case.
fn letter(side: Side, pinned: bool) -> char {
    match (side, pinned) {
        (Side::White, false) => 'X',
        (Side::Black, false) => 'O',
        (Side::White, true) => 'x',
        (Side::Black, true) => 'o',
    }
}

/// A stack as drawn from the edge: the pinned checker (if any) first, then the
/// checkers on top of it; and how many of the top colour there are.
fn stack(pt: &Point) -> (Vec<char>, u8) {
    let mut items = Vec::new();
    if let Some(pinned) = pt.pinned {
        items.push(letter(pinned, true));
        let top = pinned.opponent();
        let n = pt.count(top);
        items.extend(std::iter::repeat_n(letter(top, false), n as usize));
        return (items, n);
    }
    for side in [Side::White, Side::Black] {
        let n = pt.count(side);
        items.extend(std::iter::repeat_n(letter(side, false), n as usize));
    }
    let n = pt.white.max(pt.black);
    (items, n)
}

/// The 3-character cell of a stack at row `row` (0 = the edge, 4 = the fifth row).
fn cell(out: &mut String, stack: &(Vec<char>, u8), row: usize) {
    let (items, top_count) = stack;
    if row == 4 && items.len() > 5 {
        let _ = write!(out, "{top_count:>2} ");
    } else {
        out.push(' ');
        out.push(items.get(row).copied().unwrap_or(' '));
        out.push(' ');
    }
}

/// A stack of `n` checkers of `side` (the bar).
fn plain(side: Side, n: u8) -> (Vec<char>, u8) {
    (vec![letter(side, false); n as usize], n)
}

/// One row of one half: six points, the bar, six points, the tray and a note.
fn row(
    out: &mut String,
    pos: &Position,
    points: &[[u8; 6]; 2],
    bar: &(Vec<char>, u8),
    tray: (Side, u8),
    y: usize,
    note: &str,
) {
    let start = out.len();
    out.push_str(" |");
    let [left, right] = points;
    for &p in left {
        cell(out, &stack(pos.point(p)), y);
    }
    out.push('|');
    cell(out, bar, y);
    out.push('|');
    for &p in right {
        cell(out, &stack(pos.point(p)), y);
    }
    out.push_str("| ");
    let (side, off) = tray;
    for column in 0..3u8 {
        let filled = off > 5 * column + y as u8;
        out.push(if filled { letter(side, false) } else { ' ' });
    }
    out.push(' ');
    out.push_str(note);
    let trimmed = out[start..].trim_end().len();
    out.truncate(start + trimmed);
    out.push('\n');
}

/// The notes beside the rows of a side, from the edge: pips, off, bar (Portes).
fn notes(pos: &Position, side: Side) -> [String; 5] {
    let mut n: [String; 5] = Default::default();
    n[0] = format!("pips {}", pos.pip_count(side));
    n[1] = format!("off {}", pos.off[side.index()]);
    if pos.variant == Variant::Portes {
        n[2] = format!("bar {}", pos.bar[side.index()]);
    }
    n
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// The board of `pos` as text (see the module documentation for the layout). The
/// position is drawn as given; validate it first ([`Position::validate`]) if it
/// was built by hand.
pub fn render(pos: &Position) -> String {
    let mut out = String::new();
    let _ = writeln!(out, " Position ID: {}", position_id::to_id(pos));
    if pos.variant == Variant::Portes {
        if let Ok(id) = position_id::to_gnubg_id(pos) {
            let _ = writeln!(out, " GNU Backgammon ID: {id}");
        }
    }
    let _ = writeln!(out, "{TOP_LABELS}     O: Black");
    let black_bar = plain(Side::Black, pos.bar[Side::Black.index()]);
    for (y, note) in notes(pos, Side::Black).iter().enumerate() {
        row(
            &mut out,
            pos,
            &TOP_POINTS,
            &black_bar,
            (Side::Black, pos.off[Side::Black.index()]),
            y,
            note,
        );
    }
    let (arrow, mover) = match pos.turn {
        Side::White => ('v', "White (X)"),
        Side::Black => ('^', "Black (O)"),
    };
    let _ = writeln!(
        out,
        "{arrow}{BAR_LINE}     {}, {mover} to move",
        capitalized(pos.variant.name())
    );
    let white_bar = plain(Side::White, pos.bar[Side::White.index()]);
    for (y, note) in notes(pos, Side::White).iter().enumerate().rev() {
        row(
            &mut out,
            pos,
            &BOTTOM_POINTS,
            &white_bar,
            (Side::White, pos.off[Side::White.index()]),
            y,
            note,
        );
    }
    let _ = writeln!(out, "{BOTTOM_LABELS}     X: White");
    if pos.points.iter().any(|p| p.pinned.is_some()) {
        out.push_str(" x: a pinned White checker, o: a pinned Black checker\n");
    }
    if let Some(outcome) = pos.game_over() {
        let _ = writeln!(out, " The game is over: {outcome}");
    }
    out
}
