//! The record's data: a match of games, each a list of actions (plays, cube actions)
//! with its end, the structured input of [`super::MatchRecord::from_games`], the size
//! limits and [`RecordError`]. Read by `text`, `replay` and `write`; no parsing here.

use crate::rules::{Dice, Outcome, Play, Position, Side, Variant};
use std::fmt;

/// One turn given as structured input: the roll and the play in the engine's notation
/// (the mover's own numbering; `""` or `"pass"` when no move is possible).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnInput {
    /// The roll.
    pub dice: Dice,
    /// The play, e.g. `24/18 13/11`, `13/8(2)`, `bar/22*`, `pass`.
    pub play: String,
}

/// The most games a record may hold ([`MatchRecord::parse`], [`MatchRecord::from_games`]).
/// With [`MAX_TURNS`] it bounds the memory of one record: a replayed turn keeps its
/// position and play, about 13 times the text of its cell.
pub const MAX_GAMES: usize = 1_000;

/// The most turns (cells: plays, passes, cube actions) over all games of a record;
/// a long match or money session has a few thousand.
pub const MAX_TURNS: usize = 10_000;

/// Errors when a record has more than [`MAX_GAMES`] games or [`MAX_TURNS`] turns.
pub(crate) fn check_size(games: usize, turns: usize) -> Result<(), RecordError> {
    if games > MAX_GAMES {
        return Err(RecordError::at_line(
            0,
            format!("the record has {games} games; at most {MAX_GAMES} per record"),
        ));
    }
    if turns > MAX_TURNS {
        return Err(RecordError::at_line(
            0,
            format!("the record has {turns} turns; at most {MAX_TURNS} per record"),
        ));
    }
    Ok(())
}

/// A whole record: the lines before the match line, the match length and the games.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatchRecord {
    /// The lines before the `" N point match"` line, as written (comments such as
    /// `; [EventDate "2026.11.30"]`, blank lines), without line ends.
    pub preamble: Vec<String>,
    /// Points to win the match; 0 for a session without a length (money play).
    pub length: u32,
    /// The games in order.
    pub games: Vec<GameRecord>,
}

/// One game of a record, replayed: every play resolved against the rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GameRecord {
    /// The game number as written (1-based).
    pub number: u32,
    /// The variant: from the game line, Portes when none is written.
    pub variant: Variant,
    /// True when the game line names the variant (a Tavli record): cube actions are
    /// then an error and the declared points must be those of the rules (R5.5, R7).
    pub tagged: bool,
    /// The opening roll (R2), `[left player's die, right player's die]`, when written.
    pub opening: Option<[u8; 2]>,
    /// The player names, `[left (White), right (Black)]`, as written.
    pub players: [String; 2],
    /// The score before the game, `[left, right]`.
    pub score: [u32; 2],
    /// The turns and cube actions in order; sides alternate.
    pub actions: Vec<Action>,
    /// How the game ended, when the record says so.
    pub end: Option<GameEnd>,
    /// The 1-based line of the game line in the text (0 when built from structured
    /// turns).
    pub line: usize,
}

/// One cell of the record: a turn or a cube action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Action {
    /// Who acts: White is the left column, Black the right one.
    pub side: Side,
    /// The move number of its line (`" 12)"`).
    pub number: u32,
    /// The 1-based line in the text (0 when built from structured turns).
    pub line: usize,
    /// What was done.
    pub kind: ActionKind,
}

/// What a cell holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ActionKind {
    /// A roll and its play (a pass when there was no legal move).
    Play(Box<Turn>),
    /// A roll without a play: the game then ended by resignation.
    Roll(Dice),
    /// `Doubles => cube`.
    Double(u32),
    /// `Takes`.
    Take,
    /// `Drops`: the game ends, the doubler wins.
    Drop,
}

/// A turn: the position, the roll and the legal play the written text stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Turn {
    /// The position before the roll, the mover to move.
    pub position: Position,
    /// The roll as written.
    pub dice: Dice,
    /// The play as written (mover's own numbering; MAT spellings `25/22`, `6/0`,
    /// per-die moves; empty for a pass). A right-column cell keeps its trailing blanks.
    pub written: String,
    /// The legal play it stands for: canonical notation, resulting position, outcome.
    pub play: Play,
    /// How many legal plays the roll had (1: forced, a pass included).
    pub legal_plays: usize,
}

/// How a game ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GameEnd {
    /// The winner; `None` for a drawn Plakoto game (R5.5).
    pub winner: Option<Side>,
    /// Points written (`Wins 2 points`); with a cube they include its value.
    pub points: u32,
    /// Why.
    pub how: EndReason,
}

/// Why a game ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndReason {
    /// On the board: the last play ended it (R5.5, R7).
    Board(Outcome),
    /// A double was dropped.
    Drop,
    /// The loser resigned (no rule of the board ended the game): the points offered
    /// and accepted (1 or 2 in a Tavli game, R7).
    Resign,
    /// The loser's time ran out (no rule of the board ended the game): 2 points when
    /// the loser had borne off no checker, otherwise 1
    /// ([`crate::rules::OutcomeReason::time_out_points`]).
    TimeOut,
}

impl MatchRecord {
    /// The number of turns (plays and rolls) over all games.
    pub fn turn_count(&self) -> usize {
        self.games
            .iter()
            .map(|g| {
                g.actions
                    .iter()
                    .filter(|a| matches!(a.kind, ActionKind::Play(_)))
                    .count()
            })
            .sum()
    }
}

impl GameRecord {
    /// The position after the game's last play: the variant's start with the first
    /// mover to move when no play was made.
    pub fn final_position(&self) -> Position {
        let last = self.actions.iter().rev().find_map(|a| match &a.kind {
            ActionKind::Play(t) => Some(t.play.position),
            _ => None,
        });
        last.unwrap_or_else(|| {
            let first = self.actions.first().map_or(Side::White, |a| a.side);
            Position::start(self.variant, first)
        })
    }

    /// The number of cube actions (doubles, takes, drops) in the game.
    pub fn cube_actions(&self) -> usize {
        self.actions
            .iter()
            .filter(|a| {
                matches!(
                    a.kind,
                    ActionKind::Double(_) | ActionKind::Take | ActionKind::Drop
                )
            })
            .count()
    }
}

/// One game given as structured turns, for [`MatchRecord::from_games`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GameInput {
    /// The variant.
    pub variant: Variant,
    /// Who plays first; `None` to take it from `opening` (or, without one, from the
    /// previous game's winner, R2).
    pub starter: Option<Side>,
    /// The opening roll `[White's die, Black's die]` (R2), if it is to be recorded.
    pub opening: Option<[u8; 2]>,
    /// The turns in order, sides alternating.
    pub turns: Vec<TurnInput>,
    /// How the game ended when no play ended it: a resignation or a time-out
    /// ([`crate::rules::OutcomeReason::Resignation`], `TimeOut`) after the last turn.
    /// `None`: the last play's outcome, or an unfinished game. On a game the board
    /// ended it must be that outcome.
    pub result: Option<Outcome>,
}

/// A record that cannot be read or does not follow the rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordError {
    /// 1-based line of the text; 0 for structured input.
    pub line: usize,
    /// The game number (as written), when the error is inside a game.
    pub game: Option<u32>,
    /// The 0-based index of the game in the record, when inside a game.
    pub game_index: Option<usize>,
    /// The move number (`" 12)"`) of the cell, when the error is in a cell.
    pub number: Option<u32>,
    /// The side of the cell (White = left column).
    pub side: Option<Side>,
    /// The 0-based index of the turn in the game's actions, when in a cell.
    pub turn_index: Option<usize>,
    /// What is wrong.
    pub message: String,
    /// The legal plays (canonical notation) when a play is illegal or ambiguous.
    pub legal: Vec<String>,
    /// True when the error is about a structured game's result
    /// ([`GameInput::result`]) rather than a turn.
    pub in_result: bool,
}

impl RecordError {
    pub(crate) fn at_line(line: usize, message: impl Into<String>) -> RecordError {
        RecordError {
            line,
            game: None,
            game_index: None,
            number: None,
            side: None,
            turn_index: None,
            message: message.into(),
            legal: Vec::new(),
            in_result: false,
        }
    }
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if self.line > 0 {
            parts.push(format!("line {}", self.line));
        }
        if let Some(g) = self.game {
            parts.push(format!("game {g}"));
        }
        if let Some(n) = self.number {
            let col = match self.side {
                Some(Side::White) => " (left, white)",
                Some(Side::Black) => " (right, black)",
                None => "",
            };
            parts.push(format!("move {n}{col}"));
        }
        if parts.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", parts.join(", "), self.message)
        }
    }
}

impl std::error::Error for RecordError {}
