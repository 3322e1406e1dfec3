//! Replaying a record against the rules core: every play resolved to the one legal
//! play it stands for, the sides, move numbers, cube actions, results and scores
//! checked.

use super::model::{
    Action, ActionKind, EndReason, GameEnd, GameInput, GameRecord, MatchRecord, RecordError, Turn,
};
use super::text::{Cell, RawCell, RawEnd, RawGame, RawRecord};
use crate::rules::{self, Dice, OutcomeReason, PlayInput, Position, RulesError, Side, Variant};

/// MAT spellings to the engine's notation: `25` is the bar, `0` is off; `pass`,
/// `Cannot Move` (eXtremeGammon) and `???` mean no move. Per-die moves (`13/8 13/8`),
/// any order and `*` are read as they are by the notation parser.
pub(crate) fn mat_to_notation(text: &str) -> String {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    if t.is_empty() || lower == "pass" || lower == "cannot move" || t.chars().all(|c| c == '?') {
        return String::new();
    }
    let items: Vec<String> = t
        .split_whitespace()
        .map(|item| {
            let (chain, suffix) = match item.find('(') {
                Some(p) => (&item[..p], &item[p..]),
                None => (item, ""),
            };
            let places: Vec<String> = chain
                .split('/')
                .map(|p| {
                    let body = p.trim_end_matches('*');
                    let stars = &p[body.len()..];
                    let body = match body {
                        "25" => "bar",
                        "0" => "off",
                        b => b,
                    };
                    format!("{body}{stars}")
                })
                .collect();
            format!("{}{suffix}", places.join("/"))
        })
        .collect();
    items.join(" ")
}

/// Where the current game is, for error messages.
struct Ctx {
    game: u32,
    game_index: usize,
}

impl Ctx {
    fn err(
        &self,
        cell: Option<(&RawCell, usize)>,
        line: usize,
        msg: impl Into<String>,
    ) -> RecordError {
        let mut e = RecordError::at_line(line, msg);
        e.game = Some(self.game);
        e.game_index = Some(self.game_index);
        if let Some((c, k)) = cell {
            e.line = c.line;
            e.number = Some(c.number);
            e.side = Some(c.side);
            e.turn_index = Some(k);
        }
        e
    }
}

/// The notation of each legal play, for error messages.
fn notations(pos: &Position, dice: Dice) -> Vec<String> {
    rules::legal_plays(pos, dice)
        .map(|ps| ps.into_iter().map(|p| p.notation.into()).collect())
        .unwrap_or_default()
}

fn side_name(s: Side) -> &'static str {
    match s {
        Side::White => "left (white)",
        Side::Black => "right (black)",
    }
}

/// Replays one game. `prev_winner`: who won the game before in a Tavli match (R2);
/// `auto_end`: give a game whose last play ends it its result (structured input).
fn replay_game(
    raw: RawGame,
    ctx: &Ctx,
    prev_winner: Option<Side>,
    auto_end: bool,
) -> Result<GameRecord, RecordError> {
    let variant = raw.tag.map_or(Variant::Portes, |t| t.0);
    let tagged = raw.tag.is_some();
    let opening = raw.tag.and_then(|t| t.1);
    let first = raw.cells.first().map(|c| c.side);
    if let Some([a, b]) = opening {
        if a == b {
            return Err(ctx.err(None, raw.line, format!(
                "opening roll {a}-{b}: equal dice are rolled again (R2), record the roll that decided"
            )));
        }
        let starter = if a > b { Side::White } else { Side::Black };
        if first.is_some_and(|f| f != starter) {
            return Err(ctx.err(None, raw.line, format!(
                "opening roll {a}-{b}: the {} player starts (R2), but the first turn is the {} player's",
                side_name(starter),
                side_name(starter.opponent())
            )));
        }
    } else if let (true, Some(w), Some(f)) = (tagged, prev_winner, first) {
        if w != f {
            return Err(ctx.err(None, raw.line, format!(
                "the winner of the game before ({}) starts the next one (R2), but the first turn is the {} player's",
                side_name(w),
                side_name(f)
            )));
        }
    }
    let first = first.unwrap_or(Side::White);
    let offset = usize::from(first == Side::Black);
    let mut pos = Position::start(variant, first);
    let mut over: Option<rules::Outcome> = None;
    let mut cube = 1u32;
    let mut pending_double = false;
    let mut actions = Vec::with_capacity(raw.cells.len());
    let n_cells = raw.cells.len();
    for (k, c) in raw.cells.iter().enumerate() {
        let here = Some((c, k));
        let i = k + offset;
        let want_side = if i % 2 == 0 { Side::White } else { Side::Black };
        let want_number = (i / 2 + 1) as u32;
        if c.side != want_side || c.number != want_number {
            return Err(ctx.err(here, c.line, format!(
                "expected the {} player's cell of move {want_number} here: the players' cells alternate \
                 (left, right, next line...)",
                side_name(want_side)
            )));
        }
        if let Some(o) = over {
            return Err(ctx.err(here, c.line, format!("the game was already over ({o})")));
        }
        let last = k + 1 == n_cells;
        let kind = match &c.content {
            Cell::Play { dice, text } => {
                if pending_double {
                    return Err(ctx.err(
                        here,
                        c.line,
                        "a roll while a double waits for take or drop",
                    ));
                }
                if pos.turn != c.side {
                    return Err(ctx.err(
                        here,
                        c.line,
                        format!("it is the {} player's turn", side_name(pos.turn)),
                    ));
                }
                let dice = *dice;
                let legal = rules::legal_plays(&pos, dice)
                    .map_err(|e| ctx.err(here, c.line, e.to_string()))?;
                let notation = mat_to_notation(text);
                let resigned_after = last && raw.end.as_ref().is_some_and(|e| e.points.is_some());
                if notation.is_empty() && !(legal.len() == 1 && legal[0].moves.is_empty()) {
                    if resigned_after {
                        ActionKind::Roll(dice)
                    } else {
                        let mut e = ctx.err(
                            here,
                            c.line,
                            format!(
                                "no play is written, but {dice} has {} legal plays",
                                legal.len()
                            ),
                        );
                        e.legal = legal.into_iter().map(|p| p.notation.into()).collect();
                        return Err(e);
                    }
                } else {
                    let found =
                        rules::matching_plays(&pos, dice, &PlayInput::Notation(notation.clone()))
                            .map_err(|e| {
                            let msg = match e {
                                RulesError::Invalid { reason, .. } => {
                                    format!("cannot read the play {:?}: {reason}", text.trim())
                                }
                                other => other.to_string(),
                            };
                            let mut e = ctx.err(here, c.line, msg);
                            e.legal = notations(&pos, dice);
                            e
                        })?;
                    match found.len() {
                        1 => {}
                        0 => {
                            let mut e = ctx.err(
                                here,
                                c.line,
                                format!("{:?} is not a legal play for {dice}", text.trim()),
                            );
                            e.legal = legal.into_iter().map(|p| p.notation.into()).collect();
                            return Err(e);
                        }
                        _ => {
                            let mut e = ctx.err(here, c.line, format!(
                                "{:?} is ambiguous for {dice}: it fits {} legal plays with different results",
                                text.trim(),
                                found.len()
                            ));
                            e.legal = found.into_iter().map(|p| p.notation.into()).collect();
                            return Err(e);
                        }
                    }
                    let play = found.into_iter().next().expect("one play");
                    let turn = Turn {
                        position: pos,
                        dice,
                        written: text.clone(),
                        legal_plays: legal.len(),
                        play,
                    };
                    pos = turn.play.position;
                    over = turn.play.outcome;
                    ActionKind::Play(Box::new(turn))
                }
            }
            Cell::Double(v) => {
                if tagged {
                    return Err(ctx.err(here, c.line, format!(
                        "a cube action in a {variant} game: Tavli is cubeless (no doubling cube, R4)"
                    )));
                }
                if pending_double || pos.turn != c.side {
                    return Err(ctx.err(here, c.line, "a double only before one's own roll"));
                }
                if *v != cube * 2 {
                    return Err(ctx.err(
                        here,
                        c.line,
                        format!(
                            "the cube is at {cube}: a double takes it to {}, not {v}",
                            cube * 2
                        ),
                    ));
                }
                cube = *v;
                pending_double = true;
                ActionKind::Double(*v)
            }
            Cell::Take | Cell::Drop => {
                if tagged {
                    return Err(ctx.err(here, c.line, format!(
                        "a cube action in a {variant} game: Tavli is cubeless (no doubling cube, R4)"
                    )));
                }
                if !pending_double {
                    return Err(ctx.err(here, c.line, "a take or drop without a double"));
                }
                pending_double = false;
                if matches!(c.content, Cell::Take) {
                    ActionKind::Take
                } else {
                    if !last {
                        return Err(ctx.err(here, c.line, "turns after a dropped double"));
                    }
                    ActionKind::Drop
                }
            }
        };
        actions.push(Action {
            side: c.side,
            number: c.number,
            line: c.line,
            kind,
        });
    }
    let end = match raw.end {
        None if auto_end => over.map(|o| GameEnd {
            winner: o.winner,
            points: o.points as u32,
            how: EndReason::Board(o),
        }),
        None => None,
        Some(RawEnd {
            column,
            points,
            line,
            time_out,
        }) => {
            let how = End {
                column,
                points,
                line,
                time_out,
            };
            Some(end_of(ctx, &actions, over, how, tagged, cube, &pos)?)
        }
    };
    Ok(GameRecord {
        number: raw.number,
        variant,
        tagged,
        opening,
        players: raw.players,
        score: raw.score,
        actions,
        end,
        line: raw.line,
    })
}

/// A result line as read: the column it stands in, the points (`None`: `Draw`), its
/// line, and whether it is marked `(time-out)`.
struct End {
    column: Side,
    points: Option<u32>,
    line: usize,
    time_out: bool,
}

/// The result of a game from its result line and how the game went; `last` is the
/// position after the last play.
fn end_of(
    ctx: &Ctx,
    actions: &[Action],
    over: Option<rules::Outcome>,
    end: End,
    tagged: bool,
    cube: u32,
    last: &Position,
) -> Result<GameEnd, RecordError> {
    let End {
        column,
        points,
        line,
        time_out,
    } = end;
    let err = |m: String| ctx.err(None, line, m);
    if let Some(o) = over {
        if time_out {
            return Err(err(format!(
                "a time-out after the game ended on the board ({o})"
            )));
        }
        return match (o.winner, points) {
            (None, None) => Ok(GameEnd {
                winner: None,
                points: 0,
                how: EndReason::Board(o),
            }),
            (None, Some(_)) => Err(err(format!("the game ended drawn ({o}), not won"))),
            (Some(_), None) => Err(err(format!("the game was not drawn: {o}"))),
            (Some(w), Some(p)) => {
                if tagged && p != o.points as u32 {
                    return Err(err(format!(
                        "the record says {p} point{} but the {} game is worth {} ({o}; R5.5, R7)",
                        if p == 1 { "" } else { "s" },
                        last.variant,
                        o.points
                    )));
                }
                Ok(GameEnd {
                    winner: Some(w),
                    points: p,
                    how: EndReason::Board(o),
                })
            }
        };
    }
    let Some(p) = points else {
        return Err(err("\"Draw\" but the game is not over on the board".into()));
    };
    match actions.last().map(|a| (&a.kind, a.side)) {
        Some((ActionKind::Drop, _)) if time_out => {
            Err(err("a time-out after a dropped double".into()))
        }
        Some((ActionKind::Drop, dropper)) => {
            if p != cube / 2 {
                return Err(err(format!(
                    "a dropped double from {} wins {}, not {p}",
                    cube / 2,
                    cube / 2
                )));
            }
            Ok(GameEnd {
                winner: Some(dropper.opponent()),
                points: p,
                how: EndReason::Drop,
            })
        }
        _ => {
            let reason = if time_out {
                OutcomeReason::TimeOut
            } else {
                OutcomeReason::Resignation
            };
            // A backgammon game may resign a backgammon (3 points) or a cube's value.
            if tagged || time_out {
                off_board_points(reason, column, p, last).map_err(err)?;
            }
            Ok(GameEnd {
                winner: Some(column),
                points: p,
                how: end_reason(reason),
            })
        }
    }
}

/// The record's form of an off-board result.
fn end_reason(reason: OutcomeReason) -> EndReason {
    match reason {
        OutcomeReason::TimeOut => EndReason::TimeOut,
        _ => EndReason::Resign,
    }
}

/// Checks the points of a resignation or a time-out won by `winner` with `last` the
/// position after the last play (the project's rules, docs/api.md "Resignation and
/// time-out"): a resignation scores 1 or 2 (R7: no 3-point games), a time-out
/// [`OutcomeReason::time_out_points`]. The error is the message.
fn off_board_points(
    reason: OutcomeReason,
    winner: Side,
    points: u32,
    last: &Position,
) -> Result<(), String> {
    let loser = winner.opponent();
    match reason {
        OutcomeReason::TimeOut => {
            let off = last.off[loser.index()];
            let want = OutcomeReason::time_out_points(off) as u32;
            if points != want {
                return Err(format!(
                    "a time-out scores {want}, not {points}: {loser} had borne off {off} checker{} \
                     (2 points when none, as a mars, R7; otherwise 1)",
                    if off == 1 { "" } else { "s" }
                ));
            }
        }
        _ if !(1..=2).contains(&points) => {
            return Err(format!(
                "a resignation scores 1 or 2 points (R7: no 3-point games), not {points}"
            ))
        }
        _ => {}
    }
    Ok(())
}

/// A structured game's declared result ([`GameInput::result`]) checked against how
/// the game went: on a game the board ended it must be the board's outcome;
/// otherwise a resignation or a time-out (with a winner, and its points,
/// [`off_board_points`]), which becomes the game's end. Errors name the `result`.
fn declared_result(
    mut game: GameRecord,
    declared: Option<rules::Outcome>,
    ctx: &Ctx,
) -> Result<GameRecord, RecordError> {
    let Some(d) = declared else {
        return Ok(game);
    };
    let err = |m: String| {
        let mut e = ctx.err(None, 0, m);
        e.in_result = true;
        e
    };
    if let Some(GameEnd {
        how: EndReason::Board(o),
        ..
    }) = game.end
    {
        if o != d {
            return Err(err(format!(
                "the last play ended the game ({o}): the result is that, not {d}"
            )));
        }
        return Ok(game);
    }
    if !d.reason.is_off_board() {
        return Err(err(format!(
            "the game is not over on the board, so it cannot end by {}: a game ended \
             before its last play would is a resignation or a time-out",
            d.reason.name()
        )));
    }
    let Some(winner) = d.winner else {
        return Err(err(format!("a {} needs a winner", d.reason.name())));
    };
    off_board_points(d.reason, winner, d.points as u32, &game.final_position()).map_err(err)?;
    game.end = Some(GameEnd {
        winner: Some(winner),
        points: d.points as u32,
        how: end_reason(d.reason),
    });
    Ok(game)
}

/// Replays a record read from text: every game, and the scores from game to game.
pub(crate) fn replay_text(raw: RawRecord) -> Result<MatchRecord, RecordError> {
    super::check_size(
        raw.games.len(),
        raw.games.iter().map(|g| g.cells.len()).sum(),
    )?;
    let mut games: Vec<GameRecord> = Vec::with_capacity(raw.games.len());
    for (gi, g) in raw.games.into_iter().enumerate() {
        let ctx = Ctx {
            game: g.number,
            game_index: gi,
        };
        if let Some(prev) = games.last() {
            let mut want = prev.score;
            if let Some(GameEnd {
                winner: Some(w),
                points,
                ..
            }) = &prev.end
            {
                want[w.index()] += points;
                if g.score != want {
                    return Err(ctx.err(
                        None,
                        g.line + 1,
                        format!(
                            "the score line says {}-{}, but the games before end at {}-{}",
                            g.score[0], g.score[1], want[0], want[1]
                        ),
                    ));
                }
            }
        }
        if raw.length > 0 && g.score.iter().any(|&s| s >= raw.length) {
            return Err(ctx.err(
                None,
                g.line,
                format!(
                    "the {}-point match was already won ({}-{})",
                    raw.length, g.score[0], g.score[1]
                ),
            ));
        }
        let prev_winner = games
            .last()
            .and_then(|p| p.end.as_ref())
            .and_then(|e| e.winner);
        games.push(replay_game(g, &ctx, prev_winner, false)?);
    }
    Ok(MatchRecord {
        preamble: raw.preamble,
        length: raw.length,
        games,
    })
}

/// Builds and replays a record from structured games (see [`MatchRecord::from_games`]).
pub(crate) fn replay_structured(
    length: u32,
    players: [String; 2],
    inputs: &[GameInput],
) -> Result<MatchRecord, RecordError> {
    super::check_size(inputs.len(), inputs.iter().map(|g| g.turns.len()).sum())?;
    let mut games: Vec<GameRecord> = Vec::with_capacity(inputs.len());
    let mut score = [0u32; 2];
    for (gi, g) in inputs.iter().enumerate() {
        let ctx = Ctx {
            game: gi as u32 + 1,
            game_index: gi,
        };
        if length > 0 && score.iter().any(|&s| s >= length) {
            return Err(ctx.err(
                None,
                0,
                format!(
                    "the {length}-point match was already won ({}-{})",
                    score[0], score[1]
                ),
            ));
        }
        let prev_winner = games
            .last()
            .and_then(|p| p.end.as_ref())
            .and_then(|e| e.winner);
        let from_opening = g.opening.and_then(|[a, b]| match a.cmp(&b) {
            std::cmp::Ordering::Greater => Some(Side::White),
            std::cmp::Ordering::Less => Some(Side::Black),
            std::cmp::Ordering::Equal => None,
        });
        let starter =
            g.starter.or(from_opening).or(prev_winner).ok_or_else(|| {
                ctx.err(None, 0, "say who starts: a starter or an opening roll (R2)")
            })?;
        let offset = usize::from(starter == Side::Black);
        let cells = g
            .turns
            .iter()
            .enumerate()
            .map(|(k, t)| {
                let i = k + offset;
                RawCell {
                    side: if i % 2 == 0 { Side::White } else { Side::Black },
                    number: (i / 2 + 1) as u32,
                    line: 0,
                    content: Cell::Play {
                        dice: t.dice,
                        text: t.play.clone(),
                    },
                }
            })
            .collect();
        let raw = RawGame {
            number: gi as u32 + 1,
            line: 0,
            tag: Some((g.variant, g.opening)),
            players: players.clone(),
            score,
            cells,
            end: None,
        };
        let game = replay_game(raw, &ctx, prev_winner, true)?;
        let game = declared_result(game, g.result, &ctx)?;
        if let Some(GameEnd {
            winner: Some(w),
            points,
            ..
        }) = &game.end
        {
            score[w.index()] += points;
        }
        games.push(game);
    }
    Ok(MatchRecord {
        preamble: Vec::new(),
        length,
        games,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mat_spellings() {
        assert_eq!(mat_to_notation("25/22 13/8* "), "bar/22 13/8*");
        assert_eq!(mat_to_notation("6/0 5/0"), "6/off 5/off");
        assert_eq!(mat_to_notation("13/8(2)"), "13/8(2)");
        assert_eq!(mat_to_notation(" "), "");
        assert_eq!(mat_to_notation("Cannot Move"), "");
        assert_eq!(mat_to_notation("???"), "");
        assert_eq!(mat_to_notation("pass"), "");
    }
}
