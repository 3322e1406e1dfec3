//! Backgammon move notation in the mover's **own numbering**, as players write it:
//! `24/18 13/11*`, `bar/22`, `6/off`, `8/5(2)`, `13/10*/5`, `pass`.
//!
//! Grammar (whitespace separates items; case-insensitive):
//! ```text
//! play    = "pass" | "" | item *( " " item )
//! item    = chain [ "(" count ")" ]          ; count 1..4: the chain played count times
//!                                            ; (a "*" in it: the first time hits)
//! chain   = place 1*( "/" place )            ; one checker's path
//! place   = ( "bar" | "off" | point ) [ "*" ]  ; point 1..24, own numbering; "*" = hit or pin there
//! ```
//! A step of a chain between two points may use one die or several: `13/7` with 4-2
//! is accepted when one of the two ways is legal without hitting on the unwritten
//! intermediate point. A step to `off` uses exactly one die: with 5-2, `4/off` is the
//! one-die bear-off and `4/2/off` the two-dice play (R3, R6).

use super::movegen::RawMove;
use super::position::Clip;
use super::types::RulesError;

/// One written step of a chain: a checker goes from `from` to `to` (own numbering,
/// 25 = bar, 0 = off), possibly with several dice; `hit` when `*` was written at `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub from: u8,
    pub to: u8,
    pub hit: bool,
    /// The die, when known (moves given one die at a time); `None` for notation.
    pub die: Option<u8>,
    /// The step is one move of one die (a [`Move`](crate::rules::Move)), even when its
    /// die is not given; notation steps between points may take several dice.
    pub one_die: bool,
}

fn parse_place(s: &str, item: &str) -> Result<(u8, bool), RulesError> {
    let item = Clip(item);
    let (body, hit) = match s.strip_suffix('*') {
        Some(b) => (b, true),
        None => (s, false),
    };
    let place = match body.to_ascii_lowercase().as_str() {
        "bar" | "b" => 25,
        "off" | "o" => 0,
        n => match n.parse::<u8>() {
            Ok(v) if (1..=24).contains(&v) => v,
            _ => {
                return Err(RulesError::invalid(
                    "play",
                    format!(
                        "{item:?}: {:?} is not a point 1..24, bar or off",
                        Clip(body)
                    ),
                ))
            }
        },
    };
    Ok((place, hit))
}

/// Parses move notation into segments in written order (see the module grammar).
/// Errors name the field `play` and the offending item.
pub fn parse(text: &str) -> Result<Vec<Segment>, RulesError> {
    let mut out = Vec::new();
    let t = text.trim();
    if t.is_empty() || t.eq_ignore_ascii_case("pass") {
        return Ok(out);
    }
    for item in t.split_whitespace() {
        let shown = Clip(item);
        let (chain, count) = match item.strip_suffix(')') {
            Some(rest) => {
                let open = rest.rfind('(').ok_or_else(|| {
                    RulesError::invalid("play", format!("{shown:?}: unbalanced parenthesis"))
                })?;
                let n: usize = rest[open + 1..].parse().map_err(|_| {
                    RulesError::invalid("play", format!("{shown:?}: bad repeat count"))
                })?;
                if !(1..=4).contains(&n) {
                    return Err(RulesError::invalid(
                        "play",
                        format!("{shown:?}: repeat count must be 1..4"),
                    ));
                }
                (&rest[..open], n)
            }
            None => (item, 1),
        };
        let places: Vec<&str> = chain.split('/').collect();
        if places.len() < 2 {
            return Err(RulesError::invalid(
                "play",
                format!("{shown:?}: expected from/to such as 24/18"),
            ));
        }
        let mut parsed = Vec::with_capacity(places.len());
        for p in &places {
            parsed.push(parse_place(p, item)?);
        }
        for k in 0..count {
            for w in parsed.windows(2) {
                let ((from, _), (to, hit)) = (w[0], w[1]);
                // `7/2*(2)` (GNU Backgammon's and XG's notation): two checkers to 2, the
                // first of them hitting; a point is hit or pinned once.
                let hit = hit && k == 0;
                if from == 0 || to == 25 || (from != 25 && to != 0 && to >= from) {
                    return Err(RulesError::invalid(
                        "play",
                        format!("{shown:?}: a checker moves from a higher point to a lower one, bar first, off last"),
                    ));
                }
                out.push(Segment {
                    from,
                    to,
                    hit,
                    die: None,
                    one_die: false,
                });
            }
        }
        if out.len() > 4 {
            return Err(RulesError::invalid(
                "play",
                format!("{:?}: more than four moves", Clip(text)),
            ));
        }
    }
    Ok(out)
}

/// Formats moves (own numbering) as notation: one chain per checker with every landing
/// point written (`13/7/1`), `*` where it hit or pinned, identical chains grouped
/// (`24/18(2)`), chains in the order they were first played, `pass` for no move.
/// Made for one turn's moves (at most four); longer lists are written four at a time.
pub fn format(moves: &[RawMove]) -> String {
    // Written as bytes (one copy per piece of text, no per-character encoding), then
    // taken as the `String` it is: the text is ASCII.
    let mut out = Vec::with_capacity(24);
    push(moves, &mut out);
    String::from_utf8(out).expect("notation is ASCII")
}

/// Appends [`format`]'s text (ASCII) to `out`, without a `String` of its own.
pub fn push(moves: &[RawMove], out: &mut Vec<u8>) {
    if moves.len() > 4 {
        // Not one turn's moves: write each move on its own, four at a time.
        for (i, chunk) in moves.chunks(4).enumerate() {
            if i > 0 {
                out.extend_from_slice(b" ");
            }
            push(chunk, out);
        }
        return;
    }
    let text = line(moves);
    // The whole buffer (a copy of known size, without a call), then cut to the text.
    let at = out.len();
    out.extend_from_slice(&text.buf[..LINE]);
    out.truncate(at + text.bytes().len());
}

/// One turn's notation (at most four moves) in a stack buffer (inlined: the service
/// calls it once per play).
#[inline(always)]
fn line(moves: &[RawMove]) -> Line {
    let mut text = Line {
        buf: [0; LINE + 8],
        n: 0,
    };
    if moves.is_empty() {
        text.word(*b"pass", 4);
        return text;
    }
    // At most four moves: the service formats every legal play. A chain is one
    // checker's path: its places packed one byte each (the place 0..=25, bit 7 when
    // the checker hit or pinned there), its length in the top byte, so that chains
    // compare as integers.
    let mut chains = [0u64; 4];
    let mut n_chains = 0;
    for m in moves {
        let landing = (m.to | (m.hit as u8) << 7) as u64;
        // The latest chain that ends where this move starts, if any.
        let ext = chains[..n_chains].iter_mut().rev().find(|c| {
            let len = (**c >> 56) as u32;
            (**c >> (8 * (len - 1))) as u8 & 0x7f == m.from
        });
        match ext {
            Some(c) => {
                let len = *c >> 56;
                *c = (*c | landing << (8 * len)) + (1 << 56);
            }
            None => {
                chains[n_chains] = m.from as u64 | landing << 8 | 2 << 56;
                n_chains += 1;
            }
        }
    }
    // Identical chains grouped, in the order they were first played.
    let mut groups = [(0u64, 0u8); 4];
    let mut n_groups = 0;
    for &c in &chains[..n_chains] {
        match groups[..n_groups].iter_mut().find(|g| g.0 == c) {
            Some(g) => g.1 += 1,
            None => {
                groups[n_groups] = (c, 1);
                n_groups += 1;
            }
        }
    }
    // The text is built in the stack buffer.
    for (i, &(c, n)) in groups[..n_groups].iter().enumerate() {
        if i > 0 {
            text.byte(b' ');
        }
        // The first place (its `STEP` without the `/`), then `/` and each next place.
        let (word, len) = STEP[(c & 0xff) as usize];
        text.step(word >> 8, len as usize - 1);
        for k in 1..(c >> 56) as usize {
            let (word, len) = STEP[(c >> (8 * k)) as u8 as usize];
            text.step(word, len as usize);
        }
        if n > 1 {
            text.word([b'(', b'0' + n, b')', 0], 3);
        }
    }
    text
}

/// The text of a place (own numbering: 0 off, 1..=24 a point, 25 bar; the rest, which
/// no move has, as a number) and its length.
const PLACE: [([u8; 4], u8); 128] = {
    let mut t = [([0u8; 4], 0u8); 128];
    let mut p = 0;
    while p < 128 {
        let d = [
            b'0' + p as u8 / 100,
            b'0' + p as u8 / 10 % 10,
            b'0' + p as u8 % 10,
        ];
        t[p] = match p {
            0 => (*b"off\0", 3),
            25 => (*b"bar\0", 3),
            1..=9 => ([d[2], 0, 0, 0], 1),
            10..=99 => ([d[1], d[2], 0, 0], 2),
            _ => ([d[0], d[1], d[2], 0], 3),
        };
        p += 1;
    }
    t
};

/// `/`, the text of a place as in [`PLACE`] and `*` when bit 7 of the index is set
/// (the checker hit or pinned there), in the low bytes of the word, and its length.
const STEP: [(u64, u8); 256] = {
    let mut t = [(0u64, 0u8); 256];
    let mut p = 0;
    while p < 256 {
        let (word, len) = PLACE[p & 0x7f];
        let mut b = [0u8; 8];
        b[0] = b'/';
        let mut i = 0;
        while i < len as usize {
            b[1 + i] = word[i];
            i += 1;
        }
        let mut n = 1 + len as usize;
        if p & 0x80 != 0 {
            b[n] = b'*';
            n += 1;
        }
        t[p] = (u64::from_le_bytes(b), n as u8);
        p += 1;
    }
    t
};

/// Bytes of [`Line`]: more than the longest notation of four moves (at most eight
/// places of at most three bytes such as `bar` or `24*`, seven separators and four
/// `(n)`: 43 bytes).
const LINE: usize = 64;

/// One turn's notation built in a stack buffer. Indices are taken modulo [`LINE`],
/// which the text never reaches, so no write is checked.
struct Line {
    buf: [u8; LINE + 8],
    n: usize,
}

impl Line {
    #[inline(always)]
    fn byte(&mut self, c: u8) {
        self.buf[self.n & (LINE - 1)] = c;
        self.n += 1;
    }

    /// The first `len` bytes of `word` (the rest is written and then overwritten).
    #[inline(always)]
    fn word(&mut self, word: [u8; 4], len: usize) {
        let at = self.n & (LINE - 1);
        self.buf[at..at + 4].copy_from_slice(&word);
        self.n += len;
    }

    /// The first `len` bytes of the little-endian `word` ([`STEP`]), as [`Line::word`].
    #[inline(always)]
    fn step(&mut self, word: u64, len: usize) {
        let at = self.n & (LINE - 1);
        self.buf[at..at + 8].copy_from_slice(&word.to_le_bytes());
        self.n += len;
    }

    /// The text written.
    fn bytes(&self) -> &[u8] {
        &self.buf[..self.n.min(LINE)]
    }
}

/// One play's notation (see [`format`]), held inline so that a
/// [`crate::rules::Play`] needs no allocation: at most [`Notation::CAPACITY`] ASCII
/// bytes. Reads as a `&str` (it dereferences to one), prints and compares as that text.
#[derive(Clone, Copy)]
pub struct Notation {
    len: u8,
    text: [u8; Notation::CAPACITY],
}

impl Notation {
    /// Bytes a play's notation can take: eight places of at most three bytes (`bar`,
    /// `22*`), seven separators and four `(n)`.
    pub const CAPACITY: usize = 43;

    /// The notation of one turn's moves (own numbering, at most four; `pass` for
    /// none). More than four moves are not one play: the text stops at four.
    pub fn of(moves: &[RawMove]) -> Notation {
        let line = line(&moves[..moves.len().min(4)]);
        let mut text = [0; Notation::CAPACITY];
        text.copy_from_slice(&line.buf[..Notation::CAPACITY]);
        Notation {
            len: line.n.min(Notation::CAPACITY) as u8,
            text,
        }
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        // Every byte written is ASCII (the place table, separators, digits).
        std::str::from_utf8(&self.text[..self.len as usize]).expect("notation is ASCII")
    }
}

impl std::ops::Deref for Notation {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for Notation {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Notation {}

impl std::hash::Hash for Notation {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.as_str().hash(h)
    }
}

impl PartialEq<str> for Notation {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Notation {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Notation {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

impl std::fmt::Debug for Notation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_str().fmt(f)
    }
}

impl std::fmt::Display for Notation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<Notation> for String {
    fn from(n: Notation) -> String {
        n.as_str().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::random_positions;
    use crate::rules::play::legal_raw_plays;
    use crate::rules::{Dice, Variant};

    /// The notation of `moves` (at most four) by the rule as written in [`format`]'s
    /// documentation, with vectors and strings: the reference for the packed chains.
    fn reference(moves: &[RawMove]) -> String {
        if moves.is_empty() {
            return "pass".into();
        }
        let mut chains: Vec<Vec<(u8, bool)>> = Vec::new();
        for m in moves {
            match chains
                .iter_mut()
                .rev()
                .find(|c| c.last().unwrap().0 == m.from)
            {
                Some(c) => c.push((m.to, m.hit)),
                None => chains.push(vec![(m.from, false), (m.to, m.hit)]),
            }
        }
        let mut groups: Vec<(Vec<(u8, bool)>, usize)> = Vec::new();
        for c in chains {
            match groups.iter_mut().find(|g| g.0 == c) {
                Some(g) => g.1 += 1,
                None => groups.push((c, 1)),
            }
        }
        let items: Vec<String> = groups
            .iter()
            .map(|(c, n)| {
                let places: Vec<String> = c
                    .iter()
                    .map(|&(p, hit)| {
                        let name = match p {
                            0 => "off".to_string(),
                            25 => "bar".to_string(),
                            p => p.to_string(),
                        };
                        format!("{name}{}", if hit { "*" } else { "" })
                    })
                    .collect();
                let repeat = if *n > 1 {
                    format!("({n})")
                } else {
                    String::new()
                };
                format!("{}{repeat}", places.join("/"))
            })
            .collect();
        items.join(" ")
    }

    /// Every legal play of every roll of random positions of the three games (R3–R8:
    /// hits, pins, bar entries, bearing off, doubles): the same text as the reference.
    #[test]
    fn notation_of_every_play_matches_the_reference() {
        let mut plays = 0;
        for v in Variant::ALL {
            for pos in random_positions(v, 11, 150) {
                if pos.game_over().is_some() {
                    continue;
                }
                for d1 in 1..=6 {
                    for d2 in d1..=6 {
                        for p in legal_raw_plays(&pos, Dice::new(d1, d2).unwrap()).unwrap() {
                            assert_eq!(format(p.moves()), reference(p.moves()));
                            let mut bytes = Vec::new();
                            push(p.moves(), &mut bytes);
                            assert_eq!(bytes, reference(p.moves()).into_bytes());
                            assert_eq!(Notation::of(p.moves()), reference(p.moves()));
                            plays += 1;
                        }
                    }
                }
            }
        }
        assert!(plays > 50_000, "{plays}");
    }

    /// The inline form holds the longest text one turn can have: four moves of
    /// different checkers each entering from the bar with a hit (Portes doubles, R4).
    #[test]
    fn inline_notation_holds_four_separate_moves() {
        let m = |from, to| RawMove {
            from,
            to,
            die: 3,
            hit: true,
        };
        let moves = [m(25, 22), m(13, 10), m(24, 21), m(16, 13)];
        let n = Notation::of(&moves);
        assert_eq!(n, "bar/22* 13/10* 24/21* 16/13*");
        assert_eq!(n.to_string(), format(&moves));
        assert_eq!(Notation::of(&[]), "pass");
        // Longer lists are not one play: the inline form stops at four moves.
        assert_eq!(Notation::of(&[moves[0]; 5]), "bar/22*(4)");
    }

    /// Chains that meet: a checker's path continued by the latest chain ending there,
    /// repeats counted, a hit on the way (R4).
    #[test]
    fn chains_and_repeats() {
        let m = |from, to, hit| RawMove {
            from,
            to,
            die: 0,
            hit,
        };
        for moves in [
            vec![
                m(24, 20, false),
                m(20, 16, true),
                m(24, 20, false),
                m(20, 16, false),
            ],
            vec![
                m(13, 9, false),
                m(13, 9, false),
                m(9, 5, false),
                m(9, 5, false),
            ],
            vec![m(25, 22, true), m(22, 19, false), m(6, 0, false)],
            vec![
                m(3, 0, false),
                m(3, 0, false),
                m(2, 0, false),
                m(1, 0, false),
            ],
        ] {
            assert_eq!(format(&moves), reference(&moves));
        }
        for (moves, expected) in [
            (
                [
                    m(24, 20, false),
                    m(20, 16, true),
                    m(24, 20, false),
                    m(20, 16, false),
                ],
                "24/20/16* 24/20/16",
            ),
            (
                [
                    m(13, 9, false),
                    m(13, 9, false),
                    m(9, 5, false),
                    m(9, 5, false),
                ],
                "13/9/5(2)",
            ),
        ] {
            assert_eq!(format(&moves), expected);
        }
    }

    /// `7/2*(2)` as GNU Backgammon and XG write it: two checkers to 2, the first one
    /// hitting (R4: the point then holds the mover's checker, a second hit is not
    /// possible).
    #[test]
    fn a_repeated_hit_hits_once() {
        let hits = |text: &str| -> Vec<(u8, u8, bool)> {
            parse(text)
                .unwrap()
                .iter()
                .map(|s| (s.from, s.to, s.hit))
                .collect()
        };
        assert_eq!(hits("7/2*(2)"), [(7, 2, true), (7, 2, false)]);
        assert_eq!(
            hits("14/9/4*(2)"),
            [(14, 9, false), (9, 4, true), (14, 9, false), (9, 4, false)]
        );
    }
}
