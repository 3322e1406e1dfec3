//! Game and match records: the text format of `docs/records.md`, read, checked against
//! the rules and written back.
//!
//! The format is the MAT text format that GNU Backgammon, Jellyfish and backgammon
//! servers export (`" 5 point match"`, `" Game 1"`, the players and scores line,
//! numbered turns `  1) 52: 13/8 13/11        31: 8/5 6/5`), with one extension for
//! Tavli: the variant (and optionally the opening roll, RULES.md R2) after the game
//! number, `" Game 2 Plakoto"`, `" Game 1 Portes opening 5-2"`. A game line without a
//! variant is a backgammon game, read as Portes (R4), so files exported by those tools
//! are valid input unchanged.
//!
//! - [`MatchRecord::parse`] reads a record and replays every game with the rules core:
//!   each play is resolved to the one legal play it stands for
//!   ([`crate::rules::matching_plays`]); an illegal or ambiguous play, a score that
//!   does not add up or a layout it cannot read is a [`RecordError`] with its line,
//!   game and move (and the legal plays), never a guess.
//! - [`MatchRecord::from_games`] builds the same checked record from structured turns.
//! - [`MatchRecord::to_text`] writes it in GNU Backgammon's layout; the plays keep the
//!   text they were written with, so a file exported by GNU Backgammon comes back byte
//!   for byte.
//!
//! Cube actions (`Doubles => 2`, `Takes`, `Drops`) are read and kept (Tavli is cubeless:
//! analysis ignores them and says so); in a game tagged with a Tavli variant they are
//! an error. No gRPC and no I/O here: text in, text out.

mod model;
mod replay;
mod text;
mod write;

pub(crate) use model::check_size;
pub use model::{
    Action, ActionKind, EndReason, GameEnd, GameInput, GameRecord, MatchRecord, RecordError, Turn,
    TurnInput, MAX_GAMES, MAX_TURNS,
};

impl MatchRecord {
    /// Reads a record (see `docs/records.md`) and replays it against the rules.
    ///
    /// Errors: [`RecordError`] with the 1-based line, the game and the move number and,
    /// for a play that is not legal or is ambiguous, the legal plays; more than
    /// [`MAX_GAMES`] games or [`MAX_TURNS`] turns (line 0).
    pub fn parse(text: &str) -> Result<MatchRecord, RecordError> {
        let raw = text::parse(text)?;
        replay::replay_text(raw)
    }

    /// Builds a checked record from structured turns: `games` in order, each with its
    /// variant, who starts (or the opening roll that decides it, R2) and its turns.
    /// Scores follow from the outcomes; a game whose last play ends it gets its result.
    ///
    /// Errors: as [`MatchRecord::parse`], with `game_index` / `turn_index` set.
    pub fn from_games(
        length: u32,
        players: [String; 2],
        games: &[GameInput],
    ) -> Result<MatchRecord, RecordError> {
        replay::replay_structured(length, players, games)
    }

    /// The record in GNU Backgammon's MAT layout (see `docs/records.md`), lines ended
    /// by `\n`. A record read from a file exported by GNU Backgammon is written back
    /// byte for byte.
    pub fn to_text(&self) -> String {
        write::write(self)
    }
}
