//! The public entry points: legal plays of a position and dice (R3), and applying a
//! play given as moves, as notation or as its resulting position.

use super::board::{Board, BAR, OFF};
use super::movegen::{for_each_step, generate, RawMove, RawPlay};
use super::notation::{self, Notation, Segment};
use super::position::Position;
use super::types::RulesError;
use super::types::{Dice, Location, Move, Moves, Outcome, Side, Variant};

/// A legal play: its moves in a legal order, its notation, the position after it with
/// the turn passed to the other side, and the outcome if it ended the game.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Play {
    /// Moves in a legal order, printed numbering; empty for a pass. At most four,
    /// inline (reads as a `&[Move]`).
    pub moves: Moves,
    /// The moves in notation, the mover's own numbering (`24/18 13/11*`, `pass`);
    /// inline (reads as a `&str`).
    pub notation: Notation,
    /// The position after the play, the other side to move.
    pub position: Position,
    /// Set when the play ended the game (R5.5, R7).
    pub outcome: Option<Outcome>,
}

/// A play as a caller may name it for [`apply`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlayInput {
    /// Moves in printed numbering, in any order that is a legal sequence. A move's
    /// `die` may be 0 to mean "the die that fits".
    Moves(Vec<Move>),
    /// Notation in the mover's own numbering (see [`crate::rules::notation`]).
    Notation(String),
    /// The resulting position (its side to move is ignored).
    Position(Position),
}

/// A move's end in printed numbering: own index `own` of `mover` (25 = bar as a start,
/// 0 = off as an end).
pub(crate) fn to_location(variant: Variant, mover: Side, own: u8, is_from: bool) -> Location {
    match own {
        25 if is_from => Location::Bar,
        0 if !is_from => Location::Off,
        n => Location::Point(Position::printed_point(variant, mover, n)),
    }
}

/// Converts an internal play of `mover` into the public form.
pub(crate) fn to_play(variant: Variant, mover: Side, raw: &RawPlay) -> Play {
    let moves = raw
        .moves()
        .iter()
        .map(|m| Move {
            from: to_location(variant, mover, m.from, true),
            to: to_location(variant, mover, m.to, false),
            die: m.die,
            hit: m.hit,
        })
        .collect();
    Play {
        moves,
        notation: Notation::of(raw.moves()),
        position: raw.board.to_position(variant, mover, mover.opponent()),
        outcome: raw.outcome.map(|o| o.to_outcome(mover)),
    }
}

/// Every legal play of `pos` with `dice` as the generator gives it ([`RawPlay`]: the
/// board after it, the mover's view; its moves in own numbering; its outcome from the
/// mover's view), in the order of [`legal_plays`], which converts each one. For
/// callers that write plays themselves (the service's ListLegalPlays bytes). Errors:
/// as [`legal_plays`].
pub fn legal_raw_plays(pos: &Position, dice: Dice) -> Result<Vec<RawPlay>, RulesError> {
    raw_plays(pos, dice)
}

/// All legal plays of the internal board of a validated, playable position.
fn raw_plays(pos: &Position, dice: Dice) -> Result<Vec<RawPlay>, RulesError> {
    pos.validate_playable()?;
    let board = Board::from_position(pos, pos.turn);
    let mut out = Vec::with_capacity(64);
    generate(pos.variant, &board, dice, &mut out);
    Ok(out)
}

/// Every legal play of `pos` (side `pos.turn` to move) with `dice` (R3–R8).
///
/// One play per distinct resulting position; a position with no legal move gives one
/// play with no moves (a pass). Errors: [`RulesError::Invalid`] for a position that
/// fails R9, [`RulesError::GameOver`] when its game is already over.
pub fn legal_plays(pos: &Position, dice: Dice) -> Result<Vec<Play>, RulesError> {
    let raws = raw_plays(pos, dice)?;
    Ok(raws
        .iter()
        .map(|r| to_play(pos.variant, pos.turn, r))
        .collect())
}

/// Applies a play: returns the matching legal play, whose `position` is the new
/// position with the turn passed and whose `outcome` is set if the game ended.
///
/// Errors: as [`legal_plays`], plus [`RulesError::Invalid`] with field `play` when the
/// play is malformed or not among the legal plays (R9), with the legal plays listed.
pub fn apply(pos: &Position, dice: Dice, play: &PlayInput) -> Result<Play, RulesError> {
    let raws = raw_plays(pos, dice)?;
    let (variant, mover) = (pos.variant, pos.turn);
    let mut found = Vec::with_capacity(1);
    find_matches(pos, dice, play, &raws, false, &mut found)?;
    match found.first() {
        Some(&i) => Ok(to_play(variant, mover, &raws[i])),
        None => Err(not_legal(play, dice, &raws)),
    }
}

/// Every legal play that `play` can stand for, in generation order: none when it is
/// not legal, one normally, several when written notation fits plays with different
/// results (a record reader reports that as ambiguous rather than guess). A play
/// given as its resulting position matches at most one play.
///
/// Errors: as [`legal_plays`], plus [`RulesError::Invalid`] with field `play` (or
/// `play.moves[i]...`) when the play is malformed.
pub fn matching_plays(
    pos: &Position,
    dice: Dice,
    play: &PlayInput,
) -> Result<Vec<Play>, RulesError> {
    let raws = raw_plays(pos, dice)?;
    let mut found = Vec::new();
    find_matches(pos, dice, play, &raws, true, &mut found)?;
    found.sort_unstable();
    Ok(found
        .iter()
        .map(|&i| to_play(pos.variant, pos.turn, &raws[i]))
        .collect())
}

/// The indices into `raws` of the plays that `play` stands for: the first found, or
/// every one when `all`.
fn find_matches(
    pos: &Position,
    dice: Dice,
    play: &PlayInput,
    raws: &[RawPlay],
    all: bool,
    out: &mut Vec<usize>,
) -> Result<(), RulesError> {
    let (variant, mover) = (pos.variant, pos.turn);
    match play {
        PlayInput::Position(target) => {
            let mut t = *target;
            t.turn = mover.opponent();
            out.extend(
                raws.iter()
                    .position(|r| r.board.to_position(variant, mover, t.turn) == t),
            );
        }
        PlayInput::Moves(moves) => {
            let segs = moves
                .iter()
                .enumerate()
                .map(|(i, m)| move_to_segment(variant, mover, i, m))
                .collect::<Result<Vec<_>, _>>()?;
            find_by_segments(variant, pos, dice, &segs, raws, all, out);
        }
        PlayInput::Notation(text) => {
            let segs = notation::parse(text)?;
            find_by_segments(variant, pos, dice, &segs, raws, all, out);
        }
    }
    Ok(())
}

/// The error for a play that is not legal, with (up to 12 of) the legal plays.
fn not_legal(play: &PlayInput, dice: Dice, raws: &[RawPlay]) -> RulesError {
    let mut legal: Vec<String> = raws.iter().map(|r| notation::format(r.moves())).collect();
    let more = legal.len().saturating_sub(12);
    legal.truncate(12);
    let what = match play {
        PlayInput::Notation(t) => format!("{:?}", super::position::Clip(t)),
        PlayInput::Moves(m) => format!("{} moves", m.len()),
        PlayInput::Position(_) => "the resulting position".to_string(),
    };
    RulesError::invalid(
        "play",
        format!(
            "{what} is not a legal play for {dice}; legal plays (notation, mover's own numbering): {}{}",
            legal.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ),
    )
}

fn move_to_segment(
    variant: Variant,
    mover: Side,
    i: usize,
    m: &Move,
) -> Result<Segment, RulesError> {
    let own = |loc: Location, what: &str| -> Result<u8, RulesError> {
        Ok(match loc {
            Location::Bar => BAR as u8,
            Location::Off => OFF as u8,
            Location::Point(n) if (1..=24).contains(&n) => Position::own_point(variant, mover, n),
            Location::Point(n) => {
                return Err(RulesError::invalid(
                    format!("play.moves[{i}].{what}"),
                    format!("point must be 1..24, got {n}"),
                ))
            }
        })
    };
    if m.die > 6 {
        return Err(RulesError::invalid(
            format!("play.moves[{i}].die"),
            format!("die must be 1..6 (or 0 for any), got {}", m.die),
        ));
    }
    Ok(Segment {
        from: own(m.from, "from")?,
        to: own(m.to, "to")?,
        hit: m.hit,
        die: (m.die != 0).then_some(m.die),
        one_die: true,
    })
}

/// Finds the legal plays that the segments realise, trying the written order and then
/// every other order of the segments: pushes indices into `raws` to `out` (each
/// once), the first found only unless `all`.
fn find_by_segments(
    variant: Variant,
    pos: &Position,
    dice: Dice,
    segs: &[Segment],
    raws: &[RawPlay],
    all: bool,
    out: &mut Vec<usize>,
) {
    if segs.len() > 4 {
        return;
    }
    let board = Board::from_position(pos, pos.turn);
    let dice_list: Vec<u8> = if dice.is_double() {
        vec![dice.die1(); 4]
    } else {
        vec![dice.die1(), dice.die2()]
    };
    let mut order: Vec<usize> = (0..segs.len()).collect();
    permute(&mut order, 0, &mut |ord| {
        let seq: Vec<Segment> = ord.iter().map(|&i| segs[i]).collect();
        realize(
            variant,
            board,
            &seq,
            0,
            None,
            &dice_list,
            &mut Vec::new(),
            &mut |b, n| {
                if !all && !out.is_empty() {
                    return;
                }
                if let Some(i) = raws
                    .iter()
                    .position(|r| r.board == *b && r.len as usize == n)
                {
                    if !out.contains(&i) {
                        out.push(i);
                    }
                }
            },
        );
        !all && !out.is_empty()
    });
}

/// Heap's-style permutation walk; stops when `f` returns true.
fn permute(v: &mut [usize], k: usize, f: &mut dyn FnMut(&[usize]) -> bool) -> bool {
    if k == v.len() {
        return f(v);
    }
    for i in k..v.len() {
        v.swap(k, i);
        if permute(v, k + 1, f) {
            v.swap(k, i);
            return true;
        }
        v.swap(k, i);
    }
    false
}

/// Plays segment `idx` (starting from `cur`, or its own `from`) with the remaining
/// dice, one legal single move at a time; calls `done(board, moves played)` for each
/// complete realisation. A game end with segments left fails.
#[allow(clippy::too_many_arguments)]
fn realize(
    variant: Variant,
    board: Board,
    segs: &[Segment],
    idx: usize,
    cur: Option<u8>,
    dice: &[u8],
    played: &mut Vec<RawMove>,
    done: &mut dyn FnMut(&Board, usize),
) {
    if idx == segs.len() {
        done(&board, played.len());
        return;
    }
    let seg = segs[idx];
    let from = cur.unwrap_or(seg.from);
    let mut tried = [false; 7];
    for (k, &die) in dice.iter().enumerate() {
        if tried[die as usize] || seg.die.is_some_and(|d| d != die) {
            continue;
        }
        tried[die as usize] = true;
        let mut rest = dice.to_vec();
        rest.remove(k);
        let mut step = None;
        for_each_step(variant, &board, die, |nb, mv, outcome| {
            if mv.from == from {
                step = Some((nb, mv, outcome));
            }
        });
        let Some((nb, mv, outcome)) = step else {
            continue;
        };
        let reached = mv.to == seg.to;
        if reached {
            if seg.hit && !mv.hit {
                continue;
            }
        } else if seg.one_die || seg.to == 0 || mv.to == 0 || mv.to < seg.to || mv.hit {
            // Overshot, a hit on a point the notation did not write, or a bear-off step
            // taking several dice (`4/off` is one die; write `4/2/off` for two).
            continue;
        }
        if outcome.is_some() && !(reached && idx + 1 == segs.len()) {
            continue; // The game ended with moves still written.
        }
        played.push(mv);
        if reached {
            realize(variant, nb, segs, idx + 1, None, &rest, played, done);
        } else {
            realize(variant, nb, segs, idx, Some(mv.to), &rest, played, done);
        }
        played.pop();
    }
}
