//! Backgammon move notation in the mover's **own numbering**, as players write it:
//! `24/18 13/11*`, `bar/22`, `6/off`, `8/5(2)`, `13/10*/5`, `pass`.
//!
//! Grammar (whitespace separates items; case-insensitive):
//! ```text
//! play    = "pass" | "" | item *( " " item )
//! item    = chain [ "(" count ")" ]          ; count 1..4: the chain played count times
//! chain   = place 1*( "/" place )            ; one checker's path
//! place   = ( "bar" | "off" | point ) [ "*" ]  ; point 1..24, own numbering; "*" = hit or pin there
//! ```
//! A step of a chain between two points may use one die or several: `13/7` with 4-2
//! is accepted when one of the two ways is legal without hitting on the unwritten
//! intermediate point. A step to `off` uses exactly one die: with 5-2, `4/off` is the
//! one-die bear-off and `4/2/off` the two-dice play (R3, R6).

use super::movegen::RawMove;
use super::position::{Clip, RulesError};

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
        for _ in 0..count {
            for w in parsed.windows(2) {
                let ((from, _), (to, hit)) = (w[0], w[1]);
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
    let mut out = String::with_capacity(24);
    push(moves, &mut out);
    out
}

/// Where [`push`] writes: a `String` or a byte buffer (the text is ASCII).
pub trait Text {
    /// Appends the ASCII bytes `b`.
    fn ascii(&mut self, b: &[u8]);
}

impl Text for String {
    #[inline]
    fn ascii(&mut self, b: &[u8]) {
        for &c in b {
            self.push(c as char);
        }
    }
}

impl Text for Vec<u8> {
    #[inline]
    fn ascii(&mut self, b: &[u8]) {
        self.extend_from_slice(b);
    }
}

/// Appends [`format`]'s text to `out`, without a `String` of its own.
pub fn push(moves: &[RawMove], out: &mut impl Text) {
    if moves.is_empty() {
        out.ascii(b"pass");
        return;
    }
    if moves.len() > 4 {
        // Not one turn's moves: write each move on its own, four at a time.
        for (i, chunk) in moves.chunks(4).enumerate() {
            if i > 0 {
                out.ascii(b" ");
            }
            push(chunk, out);
        }
        return;
    }
    // Fixed-size buffers (at most four moves): the service formats every legal play.
    // A chain: the points it visits and whether each landing hit; its repeat count.
    #[derive(Clone, Copy, PartialEq, Eq, Default)]
    struct Chain {
        places: [(u8, bool); 5],
        len: usize,
    }
    let mut chains = [Chain::default(); 4];
    let mut n_chains = 0;
    for m in moves {
        let ext = chains[..n_chains]
            .iter_mut()
            .rev()
            .find(|c| c.places[c.len - 1].0 == m.from);
        match ext {
            Some(c) => {
                c.places[c.len] = (m.to, m.hit);
                c.len += 1;
            }
            None => {
                let c = &mut chains[n_chains];
                c.places[0] = (m.from, false);
                c.places[1] = (m.to, m.hit);
                c.len = 2;
                n_chains += 1;
            }
        }
    }
    let mut groups = [(Chain::default(), 0usize); 4];
    let mut n_groups = 0;
    for c in &chains[..n_chains] {
        match groups[..n_groups].iter_mut().find(|g| g.0 == *c) {
            Some(g) => g.1 += 1,
            None => {
                groups[n_groups] = (*c, 1);
                n_groups += 1;
            }
        }
    }
    for (i, (c, n)) in groups[..n_groups].iter().enumerate() {
        if i > 0 {
            out.ascii(b" ");
        }
        for (k, &(p, hit)) in c.places[..c.len].iter().enumerate() {
            if k > 0 {
                out.ascii(b"/");
            }
            match p {
                25 => out.ascii(b"bar"),
                0 => out.ascii(b"off"),
                p if p >= 10 => out.ascii(&[b'0' + p / 10, b'0' + p % 10]),
                p => out.ascii(&[b'0' + p]),
            }
            if hit {
                out.ascii(b"*");
            }
        }
        if *n > 1 {
            out.ascii(&[b'(', b'0' + *n as u8, b')']);
        }
    }
}
