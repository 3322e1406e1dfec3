//! eXtreme Gammon's position ID, the **XGID** (Portes only: it is backgammon's).
//!
//! ```text
//! XGID=-b----E-C---eE---c-e----B-:0:0:1:00:0:0:0:0:0
//!      |                         | | | |  | | | | `- 10 maximum cube, log2 (0: no cube)
//!      |                         | | | |  | | | `--- 9 match length (0: money)
//!      |                         | | | |  | | `----- 8 match: Crawford game 0/1;
//!      |                         | | | |  | |          money: Jacoby 1 + beaver 2
//!      |                         | | | |  | `------- 7 score of the top player (Black)
//!      |                         | | | |  `--------- 6 score of the bottom player (White)
//!      |                         | | | `------------ 5 dice: 00 to roll, D doubled, 52 rolled
//!      |                         | | `-------------- 4 turn: 1 bottom (White), -1 top (Black)
//!      |                         | `---------------- 3 cube owner: 1 bottom, 0 centred, -1 top
//!      |                         `------------------ 2 cube value, log2 (0: a 1-cube)
//!      `-------------------------------------------- 1 the board, 26 characters
//! ```
//!
//! Field 1 is always drawn from the **bottom player's** side, whoever is on roll:
//! character 1 is the top player's bar, characters 2..=25 are points 1..=24 in the
//! bottom player's numbering, character 26 is the bottom player's bar; `-` is empty,
//! `A`..`O` are 1..15 checkers of the bottom player, `a`..`o` of the top player;
//! checkers not on the board are borne off. Sources: GNU Backgammon's reader
//! (`PositionFromXG` in `positionid.c`, `SetXGID` in `set.c`, which reads the fields
//! from the end and takes a maximum cube of 0 as a game without a cube) and the
//! XGIDs eXtreme Gammon writes (tests below).
//!
//! This project's mapping (RULES.md R1): the **bottom player is White** and the
//! top player Black, so XGID point `n` is printed point `n` (White's start, 24:2, is
//! `B` at character 25 in the start position). Tavli has no cube and no triple game
//! (R4, R7): [`push_xgid`] writes every position as a cubeless money game
//! (`:0:0:T:00:0:0:0:0:0`); [`Xgid::parse`] reads every field XG writes, checks it,
//! and keeps it, but the rules and the evaluation use the board and the turn only.

use super::position::{Clip, Position, CHECKERS};
use super::types::RulesError;
use super::types::{Dice, Side, Variant};

/// The field name of XGID errors (the service maps it to the request's field).
pub const FIELD: &str = "xgid";

/// The dice of an XGID (field 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XgidDice {
    /// `00`: the side on roll has not rolled yet.
    ToRoll,
    /// `D`: the side on roll has doubled; the other side is to take or pass.
    Doubled,
    /// Two dice rolled, e.g. `52`.
    Rolled(Dice),
}

/// A whole XGID: the Portes position (board and side on roll) and the other fields,
/// each as XG writes it. See the module docs for the fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Xgid {
    /// The position, Portes, with the side on roll of field 4.
    pub position: Position,
    /// Field 2: log2 of the cube value, 0..=12 (a 1-cube .. a 4096-cube).
    pub cube_log2: u8,
    /// Field 3: who owns the cube; `None` when it is centred.
    pub cube_owner: Option<Side>,
    /// Field 5: the dice.
    pub dice: XgidDice,
    /// Fields 6 and 7: the scores of White (bottom) and Black (top).
    pub score: [u32; 2],
    /// Field 8: in a match, 1 for the Crawford game; in money play, 1 for the Jacoby
    /// rule plus 2 for beavers.
    pub rules: u8,
    /// Field 9: the match length; 0 for money play.
    pub match_length: u32,
    /// Field 10: log2 of the largest cube allowed, 0..=15; 0 is a game without a cube.
    pub max_cube_log2: u8,
}

/// The longest match length accepted (GNU Backgammon's `MAXSCORE`).
pub const MAX_MATCH_LENGTH: u32 = 64;
/// The largest cube value accepted, as log2 (GNU Backgammon's `MAX_CUBE`, 4096).
pub const MAX_CUBE_LOG2: u8 = 12;

impl Xgid {
    /// `position` (Portes) as a cubeless money game with its side on roll to roll:
    /// the fields [`push_xgid`] writes.
    pub fn money(position: Position) -> Xgid {
        Xgid {
            position,
            cube_log2: 0,
            cube_owner: None,
            dice: XgidDice::ToRoll,
            score: [0, 0],
            rules: 0,
            match_length: 0,
            max_cube_log2: 0,
        }
    }

    /// Parses an XGID, with or without its `XGID=` prefix (any case), and checks every field
    /// and the position (R9). Errors name field [`FIELD`] and, in the reason, the
    /// XGID field that is wrong: `field 4 (turn) must be 1 or -1, got 2`.
    pub fn parse(text: &str) -> Result<Xgid, RulesError> {
        let bad = |reason: String| RulesError::invalid(FIELD, reason);
        let t = text.trim();
        let body = match t.get(..5) {
            Some(prefix) if prefix.eq_ignore_ascii_case("XGID=") => &t[5..],
            _ => t,
        };
        let parts: Vec<&str> = body.split(':').collect();
        if parts.len() != 10 {
            return Err(bad(format!(
                "expected 10 fields separated by ':' such as \
                 XGID=-b----E-C---eE---c-e----B-:0:0:1:00:0:0:0:0:0, got {} in {:?}",
                parts.len(),
                Clip(t)
            )));
        }
        let position = parse_board(parts[0])?;
        let int = |n: usize, name: &str, max: u32| -> Result<u32, RulesError> {
            let s = parts[n - 1];
            s.parse::<u32>()
                .ok()
                .filter(|v| s.bytes().all(|b| b.is_ascii_digit()) && *v <= max)
                .ok_or_else(|| {
                    bad(format!(
                        "field {n} ({name}) must be a whole number 0..={max}, got {:?}",
                        Clip(s)
                    ))
                })
        };
        let sign = |n: usize, name: &str, zero: bool| -> Result<i8, RulesError> {
            match parts[n - 1] {
                "1" => Ok(1),
                "-1" => Ok(-1),
                "0" if zero => Ok(0),
                s => Err(bad(format!(
                    "field {n} ({name}) must be 1{} or -1, got {:?}",
                    if zero { ", 0" } else { "" },
                    Clip(s)
                ))),
            }
        };
        let cube_log2 = int(2, "cube value", MAX_CUBE_LOG2 as u32)? as u8;
        let cube_owner = match sign(3, "cube position", true)? {
            1 => Some(Side::White),
            -1 => Some(Side::Black),
            _ => None,
        };
        let turn = if sign(4, "turn", false)? == 1 {
            Side::White
        } else {
            Side::Black
        };
        let dice = match parts[4].as_bytes() {
            b"00" => XgidDice::ToRoll,
            b"D" => XgidDice::Doubled,
            &[a @ b'1'..=b'6', b @ b'1'..=b'6'] => {
                XgidDice::Rolled(Dice::new(a - b'0', b - b'0').expect("two dice 1..=6 are a roll"))
            }
            _ => {
                return Err(bad(format!(
                    "field 5 (dice) must be 00 (to roll), D (doubled) or two dice 1..6 \
                     such as 52, got {:?}",
                    Clip(parts[4])
                )))
            }
        };
        let match_length = int(9, "match length", MAX_MATCH_LENGTH)?;
        let score_max = match match_length {
            0 => u32::MAX,
            n => n - 1,
        };
        let mut score = [0; 2];
        for (side, n, name) in [
            (Side::White, 6, "score of the bottom player, White"),
            (Side::Black, 7, "score of the top player, Black"),
        ] {
            score[side.index()] = int(n, name, score_max).map_err(|e| match match_length {
                0 => e,
                // A whole number too high: say why.
                len => match e {
                    RulesError::Invalid { field, reason } => RulesError::Invalid {
                        field,
                        reason: format!("{reason} (below the match length {len})"),
                    },
                    other => other,
                },
            })?;
        }
        let rules = match match_length {
            0 => int(8, "money rules: Jacoby 1 + beaver 2", 3)?,
            _ => int(8, "Crawford game", 1)?,
        } as u8;
        let max_cube_log2 = int(10, "maximum cube value", 15)? as u8;
        Ok(Xgid {
            position: Position { turn, ..position },
            cube_log2,
            cube_owner,
            dice,
            score,
            rules,
            match_length,
            max_cube_log2,
        })
    }
}

impl std::fmt::Display for Xgid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut board = Vec::with_capacity(26);
        push_board(&self.position, &mut board);
        let owner = match self.cube_owner {
            None => 0,
            Some(Side::White) => 1,
            Some(Side::Black) => -1,
        };
        let dice = match self.dice {
            XgidDice::ToRoll => "00".to_string(),
            XgidDice::Doubled => "D".to_string(),
            XgidDice::Rolled(d) => format!("{}{}", d.die1(), d.die2()),
        };
        write!(
            f,
            "XGID={}:{}:{owner}:{}:{dice}:{}:{}:{}:{}:{}",
            std::str::from_utf8(&board).expect("ASCII"),
            self.cube_log2,
            turn_field(self.position.turn),
            self.score[0],
            self.score[1],
            self.rules,
            self.match_length,
            self.max_cube_log2
        )
    }
}

fn turn_field(turn: Side) -> &'static str {
    match turn {
        Side::White => "1",
        Side::Black => "-1",
    }
}

/// Reads field 1 into a Portes position (White to move; the caller sets the turn)
/// and validates it (R9).
fn parse_board(s: &str) -> Result<Position, RulesError> {
    let bad = |reason: String| RulesError::invalid(FIELD, format!("field 1 (position): {reason}"));
    let b = s.as_bytes();
    if b.len() != 26 {
        return Err(bad(format!(
            "must be 26 characters (the top player's bar, points 1..24, the bottom \
             player's bar), got {} in {:?}",
            s.chars().count(),
            Clip(s)
        )));
    }
    let mut pos = Position::empty(Variant::Portes, Side::White);
    for (i, &c) in b.iter().enumerate() {
        let (side, n) = match c {
            b'-' => continue,
            b'A'..=b'O' => (Side::White, c - b'A' + 1),
            b'a'..=b'o' => (Side::Black, c - b'a' + 1),
            _ => {
                return Err(bad(format!(
                    "character {} must be '-', A..O (1..15 of the bottom player, White) \
                     or a..o (1..15 of the top player, Black), got {:?}",
                    i + 1,
                    Clip(&s[i..].chars().next().map(String::from).unwrap_or_default())
                )))
            }
        };
        match (i, side) {
            (0, Side::Black) => pos.bar[1] = n,
            (25, Side::White) => pos.bar[0] = n,
            (0, Side::White) | (25, Side::Black) => {
                return Err(bad(format!(
                    "character {} is the {} bar: '-' or {}",
                    i + 1,
                    if i == 0 {
                        "top player's (Black's)"
                    } else {
                        "bottom player's (White's)"
                    },
                    if i == 0 { "a..o" } else { "A..O" }
                )))
            }
            (point, side) => *pos.point_mut(point as u8).count_mut(side) = n,
        }
    }
    for side in [Side::White, Side::Black] {
        let on = pos.total(side);
        if on > CHECKERS as u32 {
            return Err(bad(format!("{side} has {on} checkers, at most 15")));
        }
        pos.off[side.index()] = CHECKERS - on as u8;
    }
    pos.validate().map_err(|e| bad(e.to_string()))?;
    Ok(pos)
}

/// The board of field 1 (26 ASCII bytes) of a Portes position, appended to `out`.
fn push_board(pos: &Position, out: &mut Vec<u8>) {
    let letter = |n: u8, base: u8| if n == 0 { b'-' } else { base + n.min(26) - 1 };
    out.push(letter(pos.bar[1], b'a'));
    for pt in &pos.points {
        out.push(match (pt.white, pt.black) {
            (0, b) => letter(b, b'a'),
            (w, _) => letter(w, b'A'),
        });
    }
    out.push(letter(pos.bar[0], b'A'));
}

/// Appends the XGID of Portes position `pos` as a cubeless money game to `out`
/// (`XGID=` and 48 more ASCII bytes): the board, the side on roll, every other
/// field as [`Xgid::money`]. `pos` is not checked (a position of the rules core, or
/// one that passed [`Position::validate`]); [`to_xgid`] checks.
pub fn push_xgid(pos: &Position, out: &mut Vec<u8>) {
    out.extend_from_slice(b"XGID=");
    push_board(pos, out);
    out.extend_from_slice(b":0:0:");
    out.extend_from_slice(turn_field(pos.turn).as_bytes());
    out.extend_from_slice(b":00:0:0:0:0:0");
}

/// The XGID of a Portes position as a cubeless money game ([`push_xgid`]). Errors
/// for other variants (field `variant`) and for positions that fail
/// [`Position::validate`].
pub fn to_xgid(pos: &Position) -> Result<String, RulesError> {
    if pos.variant != Variant::Portes {
        return Err(RulesError::invalid(
            "variant",
            "XGIDs exist only for Portes (backgammon)",
        ));
    }
    pos.validate()?;
    let mut v = Vec::with_capacity(53);
    push_xgid(pos, &mut v);
    Ok(String::from_utf8(v).expect("an XGID is ASCII"))
}

/// The position of an XGID ([`Xgid::parse`]): Portes, the side on roll of field 4.
pub fn from_xgid(text: &str) -> Result<Position, RulesError> {
    Xgid::parse(text).map(|x| x.position)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::position_id::from_id;

    fn reason(text: &str) -> String {
        match Xgid::parse(text) {
            Err(RulesError::Invalid { field, reason }) => {
                assert_eq!(field, FIELD);
                reason
            }
            other => panic!("{text}: expected an error, got {other:?}"),
        }
    }

    #[test]
    fn the_start_is_xgs_start() {
        // R1: the Portes start is backgammon's; XG's start board (every XG export of a
        // first move begins with it).
        let start = Position::start(Variant::Portes, Side::White);
        assert_eq!(
            to_xgid(&start).unwrap(),
            "XGID=-b----E-C---eE---c-e----B-:0:0:1:00:0:0:0:0:0"
        );
        let black = Position::start(Variant::Portes, Side::Black);
        assert_eq!(
            to_xgid(&black).unwrap(),
            "XGID=-b----E-C---eE---c-e----B-:0:0:-1:00:0:0:0:0:0"
        );
        assert_eq!(
            from_xgid("XGID=-b----E-C---eE---c-e----B-:0:0:1:00:0:0:0:0:10").unwrap(),
            start
        );
        assert_eq!(
            to_xgid(&Position::start(Variant::Plakoto, Side::White)),
            Err(RulesError::invalid(
                "variant",
                "XGIDs exist only for Portes (backgammon)"
            ))
        );
    }

    #[test]
    fn bars_and_borne_off() {
        // White 2 on the bar and 13 off is `B` at character 26; Black 1 on the bar,
        // 1 on printed 24 (its own 1) and 13 off.
        let p = from_id("portes/b/bar:2,off:13/bar:1,24:1,off:13").unwrap();
        let x = to_xgid(&p).unwrap();
        assert_eq!(x, "XGID=a-----------------------aB:0:0:-1:00:0:0:0:0:0");
        assert_eq!(from_xgid(&x).unwrap(), p);
    }

    #[test]
    fn every_field_is_kept() {
        let text = "XGID=-b----E-C---eE---c-e----B-:1:-1:-1:D:3:2:1:7:10";
        let x = Xgid::parse(text).unwrap();
        assert_eq!(x.cube_log2, 1);
        assert_eq!(x.cube_owner, Some(Side::Black));
        assert_eq!(x.position.turn, Side::Black);
        assert_eq!(x.dice, XgidDice::Doubled);
        assert_eq!(x.score, [3, 2]);
        assert_eq!((x.rules, x.match_length, x.max_cube_log2), (1, 7, 10));
        assert_eq!(x.to_string(), text);
        // Without the prefix, and with spaces around it.
        assert_eq!(Xgid::parse(&format!("  {}\n", &text[5..])).unwrap(), x);
        let rolled = Xgid::parse("-b----E-C---eE---c-e----B-:0:0:1:52:0:0:0:0:10").unwrap();
        assert_eq!(rolled.dice, XgidDice::Rolled(Dice::new(5, 2).unwrap()));
        assert_eq!(
            Xgid::money(rolled.position).to_string(),
            to_xgid(&rolled.position).unwrap()
        );
    }

    #[test]
    fn bad_fields_are_named() {
        let ok = "-b----E-C---eE---c-e----B-";
        let with = |fields: &str| format!("XGID={ok}:{fields}");
        assert_eq!(
            reason(&with("0:0:2:00:0:0:0:0:10")),
            "field 4 (turn) must be 1 or -1, got \"2\""
        );
        assert_eq!(
            reason(&with("0:0:0:00:0:0:0:0:10")),
            "field 4 (turn) must be 1 or -1, got \"0\""
        );
        assert_eq!(
            reason(&with("13:0:1:00:0:0:0:0:10")),
            "field 2 (cube value) must be a whole number 0..=12, got \"13\""
        );
        assert_eq!(
            reason(&with("0:2:1:00:0:0:0:0:10")),
            "field 3 (cube position) must be 1, 0 or -1, got \"2\""
        );
        assert_eq!(
            reason(&with("0:0:1:72:0:0:0:0:10")),
            "field 5 (dice) must be 00 (to roll), D (doubled) or two dice 1..6 such as \
             52, got \"72\""
        );
        assert_eq!(
            reason(&with("0:0:1:00:5:0:0:5:10")),
            "field 6 (score of the bottom player, White) must be a whole number 0..=4, \
             got \"5\" (below the match length 5)"
        );
        assert_eq!(
            reason(&with("0:0:1:00:0:-1:0:5:10")),
            "field 7 (score of the top player, Black) must be a whole number 0..=4, got \
             \"-1\" (below the match length 5)"
        );
        assert_eq!(
            reason(&with("0:0:1:00:0:0:2:5:10")),
            "field 8 (Crawford game) must be a whole number 0..=1, got \"2\""
        );
        assert_eq!(
            reason(&with("0:0:1:00:0:0:4:0:10")),
            "field 8 (money rules: Jacoby 1 + beaver 2) must be a whole number 0..=3, \
             got \"4\""
        );
        assert_eq!(
            reason(&with("0:0:1:00:0:0:0:65:10")),
            "field 9 (match length) must be a whole number 0..=64, got \"65\""
        );
        assert_eq!(
            reason(&with("0:0:1:00:0:0:0:0:+1")),
            "field 10 (maximum cube value) must be a whole number 0..=15, got \"+1\""
        );
        assert!(reason(&with("0:0:1:00:0:0:0:0")).starts_with("expected 10 fields"));
        assert!(reason("").starts_with("expected 10 fields"));
    }

    #[test]
    fn bad_boards_are_explained() {
        let with = |board: &str| format!("XGID={board}:0:0:1:00:0:0:0:0:0");
        assert!(reason(&with("-b----E-C---eE---c-e----B")).starts_with(
            "field 1 (position): must be 26 characters (the top player's bar, points \
             1..24, the bottom player's bar), got 25"
        ));
        assert_eq!(
            reason(&with("-b----E-C---eE---c-e----Bb")),
            "field 1 (position): character 26 is the bottom player's (White's) bar: '-' \
             or A..O"
        );
        assert_eq!(
            reason(&with("Ab----E-C---eE---c-e----B-")),
            "field 1 (position): character 1 is the top player's (Black's) bar: '-' or a..o"
        );
        assert_eq!(
            reason(&with("-b----E-C---eE---c-e----P-")),
            "field 1 (position): character 25 must be '-', A..O (1..15 of the bottom \
             player, White) or a..o (1..15 of the top player, Black), got \"P\""
        );
        assert_eq!(
            reason(&with("-b----E-C---eE---c-e---CB-")),
            "field 1 (position): white has 18 checkers, at most 15"
        );
        // A multi-byte character is named whole, never split.
        assert!(reason(&with("-b----E-C---eE---c-e---éB")).contains("character 24"));
    }
}
