//! Small value types shared by the whole rules core: variant, side, dice, moves and
//! game outcomes. Points are always in **printed numbering** (RULES.md R1: 1..24 from
//! White's side) unless a name says "own".

use std::fmt;

/// Errors of the rules core. Each names the field and the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RulesError {
    /// Malformed input: bad position (R9), dice outside 1..6, unparsable text, or a play
    /// that is not among the legal plays. `field` is a path such as `points[4]`,
    /// `dice.die1` or `play`.
    Invalid { field: String, reason: String },
    /// The position's game is already over (R9): it has no plays.
    GameOver(Outcome),
}

impl RulesError {
    /// Shorthand for [`RulesError::Invalid`].
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> RulesError {
        RulesError::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for RulesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RulesError::Invalid { field, reason } => write!(f, "{field}: {reason}"),
            RulesError::GameOver(o) => write!(f, "the game is already over: {o}"),
        }
    }
}

impl std::error::Error for RulesError {}

/// The three Tavli games (RULES.md R1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Variant {
    /// Backgammon without the cube and without triple games (R4).
    Portes,
    /// Pinning instead of hitting, the mother rule (R5).
    Plakoto,
    /// Both sides run the same way; one checker closes a point (R8).
    Fevga,
}

impl Variant {
    /// All variants in the Tavli match order (R2): Portes → Plakoto → Fevga.
    pub const ALL: [Variant; 3] = [Variant::Portes, Variant::Plakoto, Variant::Fevga];

    /// Lower-case name used in Position IDs and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Portes => "portes",
            Variant::Plakoto => "plakoto",
            Variant::Fevga => "fevga",
        }
    }

    /// Parses a lower-case or capitalised variant name (`portes`, `Plakoto`, ...).
    pub fn from_name(s: &str) -> Option<Variant> {
        match s.to_ascii_lowercase().as_str() {
            "portes" => Some(Variant::Portes),
            "plakoto" => Some(Variant::Plakoto),
            "fevga" => Some(Variant::Fevga),
            _ => None,
        }
    }

    /// The next game of a Tavli match (R2): Portes → Plakoto → Fevga → Portes.
    pub fn next_in_match(self) -> Variant {
        match self {
            Variant::Portes => Variant::Plakoto,
            Variant::Plakoto => Variant::Fevga,
            Variant::Fevga => Variant::Portes,
        }
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A player. White moves from printed 24 towards printed 1 in every variant (R1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Side {
    White,
    Black,
}

impl Side {
    /// The other side.
    pub fn opponent(self) -> Side {
        match self {
            Side::White => Side::Black,
            Side::Black => Side::White,
        }
    }

    /// 0 for White, 1 for Black: the index into per-side arrays such as
    /// [`Position::bar`](crate::rules::Position::bar).
    pub fn index(self) -> usize {
        self as usize
    }

    /// Lower-case name: `white` or `black`.
    pub fn name(self) -> &'static str {
        match self {
            Side::White => "white",
            Side::Black => "black",
        }
    }
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A roll of two dice, each 1..=6. A double gives four moves of its number (R3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dice {
    die1: u8,
    die2: u8,
}

/// Checks that each die is 1..6 (R9); the error names the first bad die's field.
pub(crate) fn check_dice<const N: usize>(dice: [(&str, u8); N]) -> Result<(), RulesError> {
    for (field, v) in dice {
        if !(1..=6).contains(&v) {
            return Err(RulesError::invalid(
                field,
                format!("die must be 1..6, got {v}"),
            ));
        }
    }
    Ok(())
}

impl Dice {
    /// Builds a roll; errors name the die (`dice.die1`/`dice.die2`) and the reason (R9).
    pub fn new(die1: u8, die2: u8) -> Result<Dice, RulesError> {
        check_dice([("dice.die1", die1), ("dice.die2", die2)])?;
        Ok(Dice { die1, die2 })
    }

    /// The first die as given.
    pub fn die1(self) -> u8 {
        self.die1
    }

    /// The second die as given.
    pub fn die2(self) -> u8 {
        self.die2
    }

    /// The larger die.
    pub fn high(self) -> u8 {
        self.die1.max(self.die2)
    }

    /// The smaller die.
    pub fn low(self) -> u8 {
        self.die1.min(self.die2)
    }

    /// True for a double (four moves).
    pub fn is_double(self) -> bool {
        self.die1 == self.die2
    }

    /// All 21 distinct rolls, `high >= low`, doubles included, in the order
    /// 1-1, 2-1, 2-2, 3-1, ... 6-6 (the order of the GNU Backgammon golden data).
    pub fn all_rolls() -> [Dice; 21] {
        let mut out = [Dice { die1: 1, die2: 1 }; 21];
        let mut i = 0;
        for a in 1..=6u8 {
            for b in 1..=a {
                out[i] = Dice { die1: a, die2: b };
                i += 1;
            }
        }
        out
    }

    /// Parses `6-5`, `65` or `6,5`.
    pub fn parse(s: &str) -> Result<Dice, RulesError> {
        let digits: Option<Vec<u8>> = s
            .trim()
            .chars()
            .filter(|c| !matches!(c, '-' | ',' | ' ' | 'x'))
            .map(|c| c.is_ascii_digit().then(|| c as u8 - b'0'))
            .collect();
        match digits.as_deref() {
            Some(&[a, b]) => Dice::new(a, b),
            _ => {
                let shown: String = s.chars().take(16).collect();
                Err(RulesError::invalid(
                    "dice",
                    format!("expected two dice 1..6 such as 6-5, got {shown:?}"),
                ))
            }
        }
    }
}

impl fmt::Display for Dice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.die1, self.die2)
    }
}

/// Where a move starts or ends, in printed numbering.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Location {
    /// The mover's bar (Portes only, R4).
    Bar,
    /// A point 1..=24 in printed numbering (R1).
    Point(u8),
    /// Borne off (R6).
    Off,
}

/// One checker moved by one die.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Move {
    /// Start, printed numbering ([`Location::Bar`] when entering).
    pub from: Location,
    /// End, printed numbering ([`Location::Off`] when bearing off).
    pub to: Location,
    /// The die played, 1..=6.
    pub die: u8,
    /// True when the move hit a blot (Portes, R4) or pinned a checker (Plakoto, R5.1).
    pub hit: bool,
}

/// The moves of one play, in a legal order: none (a pass) to four (doubles, R3),
/// held inline so that a [`crate::rules::Play`] needs no allocation. Reads as a
/// `&[Move]` (it dereferences to the slice); compares, hashes and prints as that slice.
#[derive(Clone, Copy)]
pub struct Moves {
    len: u8,
    moves: [Move; 4],
}

impl Moves {
    /// The most moves one play has (doubles, R3).
    pub const MAX: usize = 4;

    /// No moves (a pass).
    pub const fn new() -> Self {
        const BLANK: Move = Move {
            from: Location::Off,
            to: Location::Off,
            die: 0,
            hit: false,
        };
        Moves {
            len: 0,
            moves: [BLANK; 4],
        }
    }

    /// Appends a move. Panics past [`Moves::MAX`] moves (no turn has more).
    pub fn push(&mut self, m: Move) {
        self.moves[self.len as usize] = m;
        self.len += 1;
    }

    /// The moves as a slice.
    pub fn as_slice(&self) -> &[Move] {
        &self.moves[..self.len as usize]
    }
}

impl Default for Moves {
    fn default() -> Self {
        Moves::new()
    }
}

impl std::ops::Deref for Moves {
    type Target = [Move];
    fn deref(&self) -> &[Move] {
        self.as_slice()
    }
}

impl PartialEq for Moves {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Moves {}

impl std::hash::Hash for Moves {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.as_slice().hash(h)
    }
}

impl fmt::Debug for Moves {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_slice().fmt(f)
    }
}

impl<'a> IntoIterator for &'a Moves {
    type Item = &'a Move;
    type IntoIter = std::slice::Iter<'a, Move>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

/// Collects at most [`Moves::MAX`] moves; panics on more.
impl FromIterator<Move> for Moves {
    fn from_iter<I: IntoIterator<Item = Move>>(iter: I) -> Self {
        let mut out = Moves::new();
        for m in iter {
            out.push(m);
        }
        out
    }
}

impl PartialEq<[Move]> for Moves {
    fn eq(&self, other: &[Move]) -> bool {
        self.as_slice() == other
    }
}

impl PartialEq<Vec<Move>> for Moves {
    fn eq(&self, other: &Vec<Move>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

/// Why a game ended (RULES.md R5.5, R7; resignation and time-out are the project's
/// rules where RULES.md is silent, docs/api.md "Resignation and time-out").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutcomeReason {
    /// The winner bore off all 15 and the loser had borne off at least one: 1 point (R7).
    BoreOff,
    /// The winner bore off all 15 before the loser bore off any: 2 points (R7).
    Mars,
    /// Plakoto: the loser's mother was pinned while the winner had no checker on its
    /// own start point: 2 points (R5.5).
    MotherPinned,
    /// Plakoto: both mothers pinned: a draw, 0 points (R5.5).
    BothMothersPinned,
    /// The loser resigned, before the board ended the game: the winner scores the
    /// points offered and accepted, 1 or 2 (R7 has no 3-point games).
    Resignation,
    /// The loser's time ran out, before the board ended the game: the winner scores
    /// 2 points when the loser has borne off no checker (as a mars, R7), otherwise 1
    /// ([`OutcomeReason::time_out_points`]).
    TimeOut,
}

impl OutcomeReason {
    /// Short stable name: `bore_off`, `mars`, `mother_pinned`, `both_mothers_pinned`,
    /// `resignation`, `time_out`.
    pub fn name(self) -> &'static str {
        match self {
            OutcomeReason::BoreOff => "bore_off",
            OutcomeReason::Mars => "mars",
            OutcomeReason::MotherPinned => "mother_pinned",
            OutcomeReason::BothMothersPinned => "both_mothers_pinned",
            OutcomeReason::Resignation => "resignation",
            OutcomeReason::TimeOut => "time_out",
        }
    }

    /// True for the reasons that end a game off the board, before its last play
    /// would: a resignation and a time-out.
    pub fn is_off_board(self) -> bool {
        matches!(self, OutcomeReason::Resignation | OutcomeReason::TimeOut)
    }

    /// The points a time-out is worth, the project's rule (RULES.md is silent):
    /// the game is lost as if the opponent had just borne off its last checker, so
    /// 2 when the side whose time ran out has borne off none (`loser_off` 0, a mars
    /// by R7), otherwise 1.
    pub fn time_out_points(loser_off: u8) -> u8 {
        if loser_off == 0 {
            2
        } else {
            1
        }
    }
}

/// The result of a finished game.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Outcome {
    /// The winner, or `None` for a draw (R5.5).
    pub winner: Option<Side>,
    /// Points won: 1, 2 (mars or mother win), or 0 for a draw (R7).
    pub points: u8,
    /// Why the game ended.
    pub reason: OutcomeReason,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.winner {
            Some(w) => write!(f, "{w} wins {} ({})", self.points, self.reason.name()),
            None => write!(f, "draw ({})", self.reason.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inline moves read, compare and print as the slice of the moves pushed; the
    /// unused slots never take part. Four slots: a play has at most four moves (R3,
    /// doubles).
    #[test]
    fn moves_behave_as_their_slice() {
        let m = |from, to, die| Move {
            from: Location::Point(from),
            to: Location::Point(to),
            die,
            hit: false,
        };
        let list = vec![m(13, 7, 6), m(8, 7, 1)];
        let moves: Moves = list.iter().copied().collect();
        assert_eq!(moves.len(), 2);
        assert_eq!(moves, list);
        assert_eq!(moves[1], m(8, 7, 1));
        assert_eq!(format!("{moves:?}"), format!("{list:?}"));
        let mut other = Moves::new();
        assert!(other.is_empty());
        other.push(m(13, 7, 6));
        assert_ne!(other, moves);
        other.push(m(8, 7, 1));
        assert_eq!(other, moves);
        let mut four = moves;
        four.push(m(6, 5, 1));
        four.push(m(6, 5, 1));
        assert_eq!(four.iter().filter(|x| x.die == 1).count(), 3);
    }
}
