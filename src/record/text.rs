//! The reading of the record text into its layout: the preamble, the match line, and
//! per game the game line, the players line and the cells of the numbered lines. No
//! rules here: [`super::replay`] checks the plays.

use super::model::RecordError;
use crate::rules::{Dice, Side, Variant};

/// A record as laid out, before the plays are checked.
#[derive(Debug)]
pub(crate) struct RawRecord {
    pub preamble: Vec<String>,
    pub length: u32,
    pub games: Vec<RawGame>,
}

/// The Tavli extension of a game line: the variant and the opening roll.
pub(crate) type Tag = (Variant, Option<[u8; 2]>);

/// One game as laid out.
#[derive(Debug)]
pub(crate) struct RawGame {
    pub number: u32,
    pub line: usize,
    /// The Tavli tag: the variant and the opening roll (left die, right die).
    pub tag: Option<Tag>,
    pub players: [String; 2],
    pub score: [u32; 2],
    pub cells: Vec<RawCell>,
    pub end: Option<RawEnd>,
}

/// One cell of a numbered line.
#[derive(Debug)]
pub(crate) struct RawCell {
    pub side: Side,
    pub number: u32,
    pub line: usize,
    pub content: Cell,
}

/// What a cell says.
#[derive(Debug)]
pub(crate) enum Cell {
    /// A roll and the play as written after `dd: ` (possibly empty).
    Play {
        dice: Dice,
        text: String,
    },
    Double(u32),
    Take,
    Drop,
}

/// The result line of a game (`Wins 2 points`, `Draw`) and the column it stands in.
#[derive(Debug)]
pub(crate) struct RawEnd {
    pub column: Side,
    /// `None` for `Draw`.
    pub points: Option<u32>,
    pub line: usize,
    /// The result is marked as a time-out: `Wins 1 point (time-out)`.
    pub time_out: bool,
}

/// The mark after a result's points that says the loser's time ran out (an
/// extension: `Wins 2 points (time-out)`).
pub(crate) const TIME_OUT_MARK: &str = "(time-out)";

/// The column where a right-column cell starts in GNU Backgammon's layout; text
/// starting at or after column 20 of a line without a move number is taken as right.
const RIGHT_FROM: usize = 20;

fn is_blank(s: &str) -> bool {
    s.trim().is_empty()
}

/// `" 5 point match"` → 5 (case-insensitive, any spacing).
fn match_length(line: &str) -> Option<u32> {
    let mut w = line.split_whitespace();
    let n = w.next()?.parse().ok()?;
    let point = w.next()?;
    let m = w.next()?;
    (point.eq_ignore_ascii_case("point") && m.eq_ignore_ascii_case("match")).then_some(n)
}

/// `" Game 12 ..."` → (12, the rest).
fn game_line(line: &str) -> Option<(u32, &str)> {
    let t = line.trim_start();
    let rest = t.strip_prefix("Game ")?;
    let rest = rest.trim_start();
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let n = rest[..end].parse().ok()?;
    Some((n, &rest[end..]))
}

/// The Tavli extension after the game number: `Plakoto`, `Portes opening 5-2`.
fn game_tag(rest: &str, line: usize) -> Result<Option<Tag>, RecordError> {
    let words: Vec<&str> = rest.split_whitespace().collect();
    if words.is_empty() {
        return Ok(None);
    }
    let bad = || {
        RecordError::at_line(
            line,
            format!(
                "after the game number expected a variant (Portes, Plakoto, Fevga) and \
                 optionally \"opening 5-2\", got {:?}",
                crate::rules::position::Clip(rest.trim())
            ),
        )
    };
    let variant = Variant::from_name(words[0]).ok_or_else(bad)?;
    let opening = match words[1..] {
        [] => None,
        [kw, dice] if kw.eq_ignore_ascii_case("opening") => {
            let d: Vec<u8> = dice
                .split('-')
                .map(|x| x.parse::<u8>().ok().filter(|v| (1..=6).contains(v)))
                .collect::<Option<_>>()
                .ok_or_else(bad)?;
            match d[..] {
                [a, b] => Some([a, b]),
                _ => return Err(bad()),
            }
        }
        _ => return Err(bad()),
    };
    Ok(Some((variant, opening)))
}

/// `" alice : 0                     bob : 2"` → names and scores.
fn players_line(s: &str, line: usize) -> Result<([String; 2], [u32; 2]), RecordError> {
    let bad = || {
        RecordError::at_line(
            line,
            format!(
                "expected the players and scores, such as \" alice : 0      bob : 0\", got {:?}",
                crate::rules::position::Clip(s.trim())
            ),
        )
    };
    // "name : digits", twice; the rest of the line must be empty.
    let name_score = |t: &str| -> Option<(String, u32, usize)> {
        let c = t.find(':')?;
        let after = t[c + 1..].trim_start();
        let start = t.len() - after.len();
        let d = after
            .find(|ch: char| !ch.is_ascii_digit())
            .unwrap_or(after.len());
        let name = t[..c].trim().to_string();
        (!name.is_empty()).then_some(())?;
        Some((name, after[..d].parse().ok()?, start + d))
    };
    let (name1, score1, end1) = name_score(s).ok_or_else(bad)?;
    let (name2, score2, end2) = name_score(&s[end1..]).ok_or_else(bad)?;
    if !s[end1 + end2..].trim().is_empty() {
        return Err(bad());
    }
    Ok(([name1, name2], [score1, score2]))
}

/// `"52:"` → the dice.
fn dice_token(t: &str) -> Option<Dice> {
    let b = t.as_bytes();
    if b.len() == 3
        && b[2] == b':'
        && (b'1'..=b'6').contains(&b[0])
        && (b'1'..=b'6').contains(&b[1])
    {
        Dice::new(b[0] - b'0', b[1] - b'0').ok()
    } else {
        None
    }
}

/// Words that begin a cell other than a roll (the words of a play never do).
fn keyword(t: &str) -> Option<&'static str> {
    Some(match t.to_ascii_lowercase().as_str() {
        "double" | "doubles" => "doubles",
        "take" | "takes" => "takes",
        "drop" | "drops" => "drops",
        "win" | "wins" => "wins",
        "draw" => "draw",
        "beaver" | "beavers" => "beavers",
        "raccoon" | "raccoons" => "raccoons",
        _ => return None,
    })
}

/// A cell's text with its byte range in the line.
struct Piece<'a> {
    start: usize,
    text: &'a str,
}

/// Splits the text after `NN)` into cells: a new cell begins at every roll (`52:`) and
/// at every keyword (`Doubles`, `Takes`, `Drops`, `Wins`, `Draw`).
fn split_cells(s: &str, offset: usize) -> Vec<Piece<'_>> {
    let mut starts = Vec::new();
    let mut i = 0;
    let bytes = s.as_bytes();
    while i < bytes.len() {
        if bytes[i] == b' ' || bytes[i] == b'\t' {
            i += 1;
            continue;
        }
        let end = s[i..].find([' ', '\t']).map_or(s.len(), |e| i + e);
        let tok = &s[i..end];
        if dice_token(tok).is_some() || keyword(tok).is_some() {
            starts.push(i);
        }
        i = end;
    }
    let mut out = Vec::new();
    for (k, &st) in starts.iter().enumerate() {
        let en = starts.get(k + 1).copied().unwrap_or(s.len());
        out.push(Piece {
            start: offset + st,
            text: &s[st..en],
        });
    }
    out
}

enum Parsed {
    Cell(Cell),
    /// A result: the points (`None` for `Draw`) and whether it is marked as a
    /// time-out.
    End(Option<u32>, bool),
}

/// What a cell may be, for errors.
const EXPECTED_CELL: &str = "expected a roll and a play (\"52: 13/8 13/11\", dice 1..6), \
     \"Doubles => 2\", \"Takes\", \"Drops\" or \"Wins 1 point\"";

/// Reads one cell's text (`52: 13/8 13/11 `, `Doubles => 2`, `Takes`, `Wins 1 point`).
fn cell(text: &str, line: usize) -> Result<Parsed, RecordError> {
    let trimmed = text.trim_start();
    let first = trimmed.split_whitespace().next().unwrap_or("");
    if let Some(dice) = dice_token(first) {
        // The text after "dd:" and one blank, as written.
        let after = &trimmed[3..];
        let after = after.strip_prefix(' ').unwrap_or(after);
        return Ok(Parsed::Cell(Cell::Play {
            dice,
            text: after.to_string(),
        }));
    }
    let words: Vec<&str> = trimmed.split_whitespace().collect();
    let bad = |what: &str| {
        RecordError::at_line(
            line,
            format!(
                "{what}: {:?}",
                crate::rules::position::Clip(trimmed.trim_end())
            ),
        )
    };
    match keyword(first) {
        Some("doubles") => match words[..] {
            [_, "=>", n] => n
                .parse()
                .map(|c| Parsed::Cell(Cell::Double(c)))
                .map_err(|_| bad("a double is written \"Doubles => 2\"")),
            _ => Err(bad("a double is written \"Doubles => 2\"")),
        },
        Some("takes") if words.len() == 1 => Ok(Parsed::Cell(Cell::Take)),
        Some("drops") if words.len() == 1 => Ok(Parsed::Cell(Cell::Drop)),
        Some("wins") => match words[..] {
            [_, n, p, ref rest @ ..] if p.to_ascii_lowercase().starts_with("point") => {
                let time_out = rest.len() == 1 && rest[0].eq_ignore_ascii_case(TIME_OUT_MARK);
                n.parse()
                    .map(|v| Parsed::End(Some(v), time_out))
                    .map_err(|_| bad("a result is written \"Wins 1 point\""))
            }
            _ => Err(bad("a result is written \"Wins 1 point\"")),
        },
        Some("draw") if words.len() == 1 => Ok(Parsed::End(None, false)),
        Some("beavers" | "raccoons") => Err(bad(
            "beavers and raccoons are not supported (Tavli is cubeless; cube actions are only \
             read as doubles, takes and drops)",
        )),
        _ => Err(bad(EXPECTED_CELL)),
    }
}

/// Reads the layout of a whole record (see `docs/records.md`).
pub(crate) fn parse(text: &str) -> Result<RawRecord, RecordError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    // A final "\n" gives one empty piece, which is not a line.
    let n_lines = if text.ends_with('\n') {
        lines.len() - 1
    } else {
        lines.len()
    };
    let lines = &lines[..n_lines];
    let mut i = 0;
    let mut preamble = Vec::new();
    let length = loop {
        let Some(l) = lines.get(i) else {
            return Err(RecordError::at_line(
                0,
                "no \" N point match\" line: not a match record (docs/records.md)",
            ));
        };
        if let Some(n) = match_length(l) {
            break n;
        }
        if game_line(l).is_some() {
            return Err(RecordError::at_line(
                i + 1,
                "a game before the \" N point match\" line",
            ));
        }
        preamble.push(l.to_string());
        i += 1;
    };
    i += 1;
    let mut games: Vec<RawGame> = Vec::new();
    while i < lines.len() {
        let l = lines[i];
        if is_blank(l) {
            i += 1;
            continue;
        }
        let Some((number, rest)) = game_line(l) else {
            return Err(RecordError::at_line(
                i + 1,
                format!(
                    "expected \" Game N\", got {:?}",
                    crate::rules::position::Clip(l.trim())
                ),
            ));
        };
        let game_line_no = i + 1;
        let tag = game_tag(rest, game_line_no)?;
        i += 1;
        while i < lines.len() && is_blank(lines[i]) {
            i += 1;
        }
        let Some(pl) = lines.get(i) else {
            return Err(RecordError::at_line(
                game_line_no,
                "the game has no players line",
            ));
        };
        let (players, score) = players_line(pl, i + 1)?;
        i += 1;
        let mut game = RawGame {
            number,
            line: game_line_no,
            tag,
            players,
            score,
            cells: Vec::new(),
            end: None,
        };
        while i < lines.len() && game_line(lines[i]).is_none() {
            read_body_line(lines[i], i + 1, &mut game)?;
            i += 1;
        }
        games.push(game);
    }
    Ok(RawRecord {
        preamble,
        length,
        games,
    })
}

/// Reads one line of a game's body into its cells or its result.
fn read_body_line(l: &str, line: usize, game: &mut RawGame) -> Result<(), RecordError> {
    if is_blank(l) {
        return Ok(());
    }
    let lead = l.len() - l.trim_start().len();
    let t = l.trim_start();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, body, body_start) = if digits > 0 && t[digits..].starts_with(')') {
        let n: u32 = t[..digits]
            .parse()
            .map_err(|_| RecordError::at_line(line, "bad move number"))?;
        (Some(n), &t[digits + 1..], lead + digits + 1)
    } else {
        (None, t, lead)
    };
    let pieces = split_cells(body, body_start);
    // Text before the first cell is no cell at all (a roll such as "71:" or "31"
    // without its colon): an error, not a line read as empty.
    let first = pieces.first().map_or(body.len(), |p| p.start - body_start);
    if !is_blank(&body[..first]) {
        return Err(RecordError::at_line(
            line,
            format!(
                "{EXPECTED_CELL}: {:?}",
                crate::rules::position::Clip(body.trim())
            ),
        ));
    }
    if pieces.is_empty() {
        return if number.is_some() {
            Ok(())
        } else {
            Err(RecordError::at_line(
                line,
                format!("cannot read {:?}", crate::rules::position::Clip(t)),
            ))
        };
    }
    if pieces.len() > 2 {
        return Err(RecordError::at_line(
            line,
            "more than two cells on one line (left and right player)",
        ));
    }
    for (k, p) in pieces.iter().enumerate() {
        // Column: on a numbered line the first cell is left unless it starts far from
        // the ")" (an empty left cell); on other lines by indentation.
        let side = match number {
            Some(_) if k == 1 => Side::Black,
            Some(_) if p.start - body_start >= 6 => Side::Black,
            Some(_) => Side::White,
            None if p.start >= RIGHT_FROM => Side::Black,
            None => Side::White,
        };
        if game.end.is_some() {
            return Err(RecordError::at_line(
                line,
                "text after the game's result line",
            ));
        }
        match cell(p.text, line)? {
            Parsed::End(points, time_out) => {
                game.end = Some(RawEnd {
                    column: side,
                    points,
                    line,
                    time_out,
                });
            }
            Parsed::Cell(mut c) => {
                if side == Side::White {
                    // A left cell's trailing blanks are the column's padding.
                    if let Cell::Play { text, .. } = &mut c {
                        text.truncate(text.trim_end().len());
                    }
                }
                let Some(n) = number else {
                    return Err(RecordError::at_line(
                        line,
                        format!(
                            "a turn without a move number: {:?}",
                            crate::rules::position::Clip(p.text.trim())
                        ),
                    ));
                };
                game.cells.push(RawCell {
                    side,
                    number: n,
                    line,
                    content: c,
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_split_at_rolls_and_keywords() {
        let s = " 33: 24/21 24/21 13/10 13/10 62: 24/22 22/16 ";
        let p = split_cells(s, 4);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].text, "33: 24/21 24/21 13/10 13/10 ");
        assert_eq!(p[1].text, "62: 24/22 22/16 ");
        let p = split_cells("  Drops                       Wins 1 point ", 4);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].text.trim(), "Drops");
        assert_eq!(p[1].text, "Wins 1 point ");
        let p = split_cells(" 66:                          Doubles => 2", 4);
        assert_eq!((p[0].text.trim(), p[1].text), ("66:", "Doubles => 2"));
    }

    /// A numbered line whose text is no cell (dice outside 1..6, a roll without its
    /// colon) is an error at that line, not a line read as empty; an empty numbered
    /// line is still nothing.
    #[test]
    fn a_line_that_is_no_cell_is_an_error() {
        let record =
            |turn: &str| format!(" 1 point match\n\n Game 1 Portes\n a : 0   b : 0\n{turn}\n");
        for (turn, shown) in [
            ("  1) 71: 8/5 6/5", "71: 8/5 6/5"),
            ("  1) 07: 8/5 6/5", "07: 8/5 6/5"),
            ("  1) 3-1: 8/5 6/5", "3-1: 8/5 6/5"),
            ("  1) 31 8/5 6/5", "31 8/5 6/5"),
            ("  1) 8/5 6/5 52: 13/8 13/11", "8/5 6/5 52: 13/8 13/11"),
        ] {
            let e = match parse(&record(turn)) {
                Ok(_) => panic!("{turn:?} was read"),
                Err(e) => e,
            };
            assert_eq!(e.line, 5, "{turn:?}");
            assert_eq!(
                e.to_string(),
                format!("line 5: {EXPECTED_CELL}: {shown:?}"),
                "{turn:?}"
            );
        }
        let game = &parse(&record("  1)")).unwrap().games[0];
        assert!(game.cells.is_empty());
        let game = &parse(&record("  1) 31: 8/5 6/5")).unwrap().games[0];
        assert_eq!(game.cells.len(), 1);
    }

    #[test]
    fn players_and_tags() {
        let (names, score) = players_line(" gnubg : 2                      root : 0", 1).unwrap();
        assert_eq!(names, ["gnubg".to_string(), "root".to_string()]);
        assert_eq!(score, [2, 0]);
        let (names, _) = players_line(" Ann Lee, 1650 : 3   bob : 1", 1).unwrap();
        assert_eq!(names[0], "Ann Lee, 1650");
        assert_eq!(
            players_line(" alice 0   bob : 0", 9).unwrap_err().to_string(),
            "line 9: expected the players and scores, such as \" alice : 0      bob : 0\", got \"alice 0   bob : 0\""
        );
        assert!(players_line(" alice : 0   bob : 0  extra", 9).is_err());
        assert_eq!(
            game_tag(" Plakoto opening 3-5", 1).unwrap(),
            Some((Variant::Plakoto, Some([3, 5])))
        );
        assert_eq!(game_tag("", 1).unwrap(), None);
        assert_eq!(
            game_tag(" Tavla", 7).unwrap_err().to_string(),
            "line 7: after the game number expected a variant (Portes, Plakoto, Fevga) and \
             optionally \"opening 5-2\", got \"Tavla\""
        );
        assert_eq!(match_length(" 7 point match"), Some(7));
        assert_eq!(match_length("0 Point Match"), Some(0));
    }
}
