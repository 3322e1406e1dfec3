//! Text forms of a position.
//!
//! **Position ID** (this project's): a compact string that carries the whole position
//! and that a person can read and type in a shell without quotes.
//! ```text
//! position-id = variant "/" side "/" checkers "/" checkers   ; White's list, then Black's
//! variant     = "portes" | "plakoto" | "fevga"
//! side        = "w" | "b"                                    ; the side to move
//! checkers    = item *( "," item )
//! item        = "bar:" count                                 ; on the bar (Portes)
//!             | point ":" count [ "p" ]                      ; printed point 1..24; "p": this
//!                                                            ; side's bottom checker is pinned
//!             | "off:" count                                 ; borne off
//! ```
//! Each side lists all 15 checkers. The canonical form (what [`to_id`] prints) lists
//! the bar first, then the points along the side's own path (White 24 → 1, Black
//! 1 → 24 in Portes and Plakoto, 12 → 1 → 24 → 13 in Fevga), then `off` if any.
//! Start of Portes: `portes/w/24:2,13:5,8:3,6:5/1:2,12:5,17:3,19:5`.
//!
//! **GNU Backgammon Position ID** (Portes only): 80 bits, for the side **not** on
//! roll first, then the side on roll, each of its own points 1..24 then its bar, one
//! `1` bit per checker then a `0`; packed little-endian; base64 without padding.

use super::board::{Board, BAR, OFF};
use super::position::{Clip, Position, RulesError, CHECKERS};
use super::types::{Side, Variant};
use base64::engine::general_purpose::STANDARD_NO_PAD;
use base64::Engine;

/// The canonical Position ID of `pos` (see the module grammar).
pub fn to_id(pos: &Position) -> String {
    let mut v = Vec::with_capacity(96);
    push_id(pos, &mut v);
    String::from_utf8(v).expect("a Position ID is ASCII")
}

/// Appends the canonical Position ID of `pos` to `out` (ASCII), as [`to_id`] without
/// a `String` of its own: the service writes one ID per legal play into its response.
pub fn push_id(pos: &Position, out: &mut Vec<u8>) {
    // Written byte by byte into a stack buffer, then copied once.
    let mut w = IdWriter {
        buf: [0u8; ID_BUF],
        n: 0,
    };
    for &b in pos.variant.name().as_bytes() {
        w.byte(b);
    }
    w.byte(b'/');
    w.byte(if pos.turn == Side::White { b'w' } else { b'b' });
    for side in [Side::White, Side::Black] {
        w.byte(b'/');
        let start = w.n;
        if pos.bar[side.index()] > 0 {
            w.entry(start, *b"bar", pos.bar[side.index()], false);
        }
        for &printed in &PATHS[path_index(pos.variant, side)] {
            let pt = &pos.points[printed as usize - 1];
            let count = match side {
                Side::White => pt.white,
                Side::Black => pt.black,
            };
            if count > 0 {
                let place = if printed >= 10 {
                    [b'0' + printed / 10, b'0' + printed % 10, 0]
                } else {
                    [b'0' + printed, 0, 0]
                };
                w.entry(start, place, count, pt.pinned == Some(side));
            }
        }
        if pos.off[side.index()] > 0 {
            w.entry(start, *b"off", pos.off[side.index()], false);
        }
    }
    out.extend_from_slice(&w.buf[..w.n]);
}

/// Each side's printed points in the order of its path (own 24 down to own 1, R1),
/// by [`path_index`].
const PATHS: [[u8; 24]; 3] = {
    let mut t = [[0u8; 24]; 3];
    let mut k = 0;
    while k < 24 {
        let own = 24 - k as u8;
        t[0][k] = own; // White, every variant
        t[1][k] = 25 - own; // Black, Portes and Plakoto
        t[2][k] = (own + 11) % 24 + 1; // Black, Fevga
        k += 1;
    }
    t
};

#[inline]
fn path_index(variant: Variant, side: Side) -> usize {
    match (variant, side) {
        (_, Side::White) => 0,
        (Variant::Fevga, Side::Black) => 2,
        (_, Side::Black) => 1,
    }
}

/// Bytes of [`IdWriter`]'s buffer, a power of two above the longest Position ID:
/// the variant and side (9 bytes), then per side `/` and at most 26 entries (bar, 24
/// points, off) of at most 8 bytes (`,24:255p`), 425 bytes in all.
const ID_BUF: usize = 512;

/// [`push_id`]'s text, built in a stack buffer and copied out once. Indices are taken
/// modulo the buffer's size, which the text never reaches, so no write is checked.
struct IdWriter {
    buf: [u8; ID_BUF],
    n: usize,
}

impl IdWriter {
    #[inline(always)]
    fn byte(&mut self, b: u8) {
        self.buf[self.n & (ID_BUF - 1)] = b;
        self.n += 1;
    }

    /// `place:count` (and `p` when pinned), after a comma unless first since `start`;
    /// `place` ends at its first zero byte.
    #[inline(always)]
    fn entry(&mut self, start: usize, place: [u8; 3], count: u8, pinned: bool) {
        if self.n > start {
            self.byte(b',');
        }
        for b in place {
            if b != 0 {
                self.byte(b);
            }
        }
        self.byte(b':');
        if count >= 100 {
            self.byte(b'0' + count / 100);
        }
        if count >= 10 {
            self.byte(b'0' + count / 10 % 10);
        }
        self.byte(b'0' + count % 10);
        if pinned {
            self.byte(b'p');
        }
    }
}

/// Parses a Position ID and validates the position (R9). Errors name the field
/// `position_id` (syntax) or the position field (R9).
pub fn from_id(id_text: &str) -> Result<Position, RulesError> {
    let (id, shown) = (id_text, Clip(id_text));
    let bad = |reason: String| RulesError::invalid("position_id", reason);
    let parts: Vec<&str> = id.trim().split('/').collect();
    if parts.len() != 4 {
        return Err(bad(format!(
            "expected variant/side/white/black such as portes/w/24:2,13:5,8:3,6:5/1:2,12:5,17:3,19:5, got {shown:?}"
        )));
    }
    let variant = Variant::from_name(parts[0]).ok_or_else(|| {
        bad(format!(
            "unknown variant {:?}: use portes, plakoto or fevga",
            Clip(parts[0])
        ))
    })?;
    let turn = match parts[1] {
        "w" | "W" => Side::White,
        "b" | "B" => Side::Black,
        other => {
            return Err(bad(format!(
                "side to move must be w or b, got {:?}",
                Clip(other)
            )))
        }
    };
    let mut pos = Position::empty(variant, turn);
    for (side, list) in [(Side::White, parts[2]), (Side::Black, parts[3])] {
        parse_side(&mut pos, side, list).map_err(|r| bad(format!("{side}: {r}")))?;
    }
    pos.validate()?;
    Ok(pos)
}

/// Parses one side's list into `pos`; on error returns the reason.
pub(crate) fn parse_side(pos: &mut Position, side: Side, list: &str) -> Result<(), String> {
    let mut seen = [false; 26];
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let shown = Clip(item);
        let (place, count) = item
            .split_once(':')
            .ok_or_else(|| format!("{shown:?}: expected point:count such as 13:5"))?;
        let (count, pinned) = match count.strip_suffix('p') {
            Some(c) => (c, true),
            None => (count, false),
        };
        let n: u8 = Some(count)
            .filter(|c| c.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|c| c.parse().ok())
            .filter(|&n| (1..=CHECKERS).contains(&n))
            .ok_or_else(|| format!("{shown:?}: count must be 1..15"))?;
        let slot = match place {
            "bar" => {
                pos.bar[side.index()] = n;
                BAR
            }
            "off" => {
                pos.off[side.index()] = n;
                OFF
            }
            p => {
                let printed: u8 = Some(p)
                    .filter(|c| c.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|c| c.parse().ok())
                    .filter(|v| (1..=24).contains(v))
                    .ok_or_else(|| format!("{shown:?}: point must be 1..24, bar or off"))?;
                let pt = pos.point_mut(printed);
                match side {
                    Side::White => pt.white = n,
                    Side::Black => pt.black = n,
                }
                if pinned {
                    // One checker at most is pinned on a point (R5.1): both colours
                    // marked pinned there is a contradiction, not "the last one wins".
                    if let Some(other) = pt.pinned.filter(|&o| o != side) {
                        return Err(format!(
                            "{shown:?}: point {printed} is already marked pinned for {other}; \
                             only one colour can be pinned on a point"
                        ));
                    }
                    pt.pinned = Some(side);
                }
                printed as usize
            }
        };
        if pinned && (slot == BAR || slot == OFF) {
            return Err(format!(
                "{shown:?}: only a checker on a point can be pinned"
            ));
        }
        if std::mem::replace(&mut seen[slot], true) {
            // The place as parsed, not as written: "000…013" is point 13.
            let place = match slot {
                BAR => "bar".to_string(),
                OFF => "off".to_string(),
                p => format!("point {p}"),
            };
            return Err(format!("{shown:?}: {place} listed twice"));
        }
    }
    Ok(())
}

/// The 10-byte GNU Backgammon key of a mover-relative Portes board: the opponent's
/// half first (its own numbering), then the mover's.
pub fn gnubg_key(b: &Board) -> [u8; 10] {
    // 80 bits, least significant first: per point (and then the bar) as many 1s as
    // checkers, then a 0. Built in one integer, a run of 1s at a time.
    let mut bits = 0u128;
    let mut at = 0u32;
    let mut put = |count: u8| {
        // A valid board has at most 15 per point and 80 bits in all; anything else
        // (a `Board` built by hand) gives a meaningless key, never a panic.
        if at < 80 {
            let count = count.min(15) as u32;
            bits |= ((1u128 << count) - 1) << at;
            at += count + 1;
        }
    };
    for j in 1..=24 {
        put(b.opp_at(25 - j));
    }
    put(b.opp[BAR]);
    for i in 1..=24 {
        put(b.own_at(i));
    }
    put(b.own[BAR]);
    let mut key = [0u8; 10];
    key.copy_from_slice(&bits.to_le_bytes()[..10]);
    key
}

/// The GNU Backgammon Position ID (14 characters) of a mover-relative Portes board.
pub fn gnubg_id_of_board(b: &Board) -> String {
    let mut v = Vec::with_capacity(14);
    push_gnubg_id(b, &mut v);
    String::from_utf8(v).expect("base64 is ASCII")
}

/// Appends the 14 ASCII characters of [`gnubg_id_of_board`] to `out`.
pub fn push_gnubg_id(b: &Board, out: &mut Vec<u8>) {
    let mut text = [0u8; 14];
    let n = STANDARD_NO_PAD
        .encode_slice(gnubg_key(b), &mut text)
        .expect("10 bytes are 14 base64 characters");
    out.extend_from_slice(&text[..n]);
}

/// The GNU Backgammon Position ID of a Portes position, the side to move encoded as
/// the side on roll. Errors for other variants (field `variant`) and for positions
/// that fail [`Position::validate`].
pub fn to_gnubg_id(pos: &Position) -> Result<String, RulesError> {
    if pos.variant != Variant::Portes {
        return Err(RulesError::invalid(
            "variant",
            "GNU Backgammon Position IDs exist only for Portes",
        ));
    }
    pos.validate()?;
    Ok(gnubg_id_of_board(&Board::from_position(pos, pos.turn)))
}

/// Decodes a GNU Backgammon Position ID into a Portes position with `turn` as the side
/// on roll (the ID does not say which colour that is). Checkers not on the board or
/// bar are borne off. Errors (field `gnubg_id`): bad base64, bad length, more than 15
/// checkers on a side, or both colours on one point.
pub fn from_gnubg_id(id_text: &str, turn: Side) -> Result<Position, RulesError> {
    let (id, shown) = (id_text, Clip(id_text));
    let bad = |reason: String| RulesError::invalid("gnubg_id", reason);
    let bytes = STANDARD_NO_PAD
        .decode(id.trim().trim_end_matches('='))
        .map_err(|e| bad(format!("{shown:?} is not base64: {e}")))?;
    if bytes.len() != 10 {
        return Err(bad(format!(
            "{shown:?} decodes to {} bytes, expected 10",
            bytes.len()
        )));
    }
    let mut counts = [[0u8; 25]; 2]; // [not on roll, on roll][own point - 1 or 24 = bar]
    let mut half = 0;
    let mut slot = 0;
    for bit in 0..80 {
        if half == 2 {
            break;
        }
        if bytes[bit / 8] >> (bit % 8) & 1 == 1 {
            counts[half][slot] += 1;
            if counts[half][slot] > CHECKERS {
                return Err(bad(format!(
                    "{shown:?}: more than 15 checkers on one point"
                )));
            }
        } else {
            slot += 1;
            if slot == 25 {
                slot = 0;
                half += 1;
            }
        }
    }
    let mut b = Board::EMPTY;
    for i in 1..=24 {
        b.own[i] = counts[1][i - 1];
        b.opp[25 - i] = counts[0][i - 1];
    }
    b.own[BAR] = counts[1][24];
    b.opp[BAR] = counts[0][24];
    for (arr, c) in [(&mut b.own, counts[1]), (&mut b.opp, counts[0])] {
        let on: u32 = c.iter().map(|&n| n as u32).sum();
        if on > CHECKERS as u32 {
            return Err(bad(format!(
                "{shown:?}: a side has {on} checkers, at most 15"
            )));
        }
        arr[OFF] = CHECKERS - on as u8;
    }
    let pos = b.to_position(Variant::Portes, turn, turn);
    pos.validate().map_err(|e| bad(format!("{shown:?}: {e}")))?;
    Ok(pos)
}

/// Builds a position from diagram-like lists; the engine of the [`pos!`](crate::pos)
/// macro. Each entry is `(place, count, pinned)` with place `"1"`..`"24"` (printed) or
/// `"bar"`; checkers not listed are borne off. Panics with the reason on a bad
/// position: meant for tests and examples.
pub fn diagram(
    variant: &str,
    turn: &str,
    white: &[(&str, u8, bool)],
    black: &[(&str, u8, bool)],
) -> Position {
    let variant = Variant::from_name(variant).expect("variant: portes, plakoto or fevga");
    let turn = match turn {
        "white" => Side::White,
        "black" => Side::Black,
        other => panic!("side to move must be white or black, got {other}"),
    };
    let mut pos = Position::empty(variant, turn);
    for (side, list) in [(Side::White, white), (Side::Black, black)] {
        let text: Vec<String> = list
            .iter()
            .map(|(p, n, pin)| format!("{p}:{n}{}", if *pin { "p" } else { "" }))
            .collect();
        parse_side(&mut pos, side, &text.join(",")).unwrap_or_else(|e| panic!("{side}: {e}"));
        let listed = pos.total(side) as u8;
        assert!(
            listed <= CHECKERS,
            "{side}: {listed} checkers listed, at most 15"
        );
        pos.off[side.index()] = CHECKERS - listed;
    }
    pos.validate().unwrap_or_else(|e| panic!("{e}"));
    pos
}

/// A test position that reads like a diagram (printed numbering; checkers not listed
/// are borne off; `pinned` marks that side's bottom checker on the point as pinned):
///
/// ```
/// use tavli_engine::pos;
/// let p = pos!(plakoto; white 3:1, 2:14; black 3:1 pinned, 24:14);
/// assert_eq!(p.off, [0, 0]);
/// let q = pos!(portes, black to move; white 24:1; black bar:1, 1:1);
/// assert_eq!(q.bar[1], 1);
/// ```
#[macro_export]
macro_rules! pos {
    ($variant:ident $(, $turn:ident to move)?;
     white $($wp:tt : $wn:literal $($wpin:ident)?),* ;
     black $($bp:tt : $bn:literal $($bpin:ident)?),* $(;)?) => {
        $crate::rules::position_id::diagram(
            stringify!($variant),
            <[&str]>::first(&[$(stringify!($turn))?]).copied().unwrap_or("white"),
            &[$((stringify!($wp), $wn, !<[&str]>::is_empty(&[$(stringify!($wpin))?]))),*],
            &[$((stringify!($bp), $bn, !<[&str]>::is_empty(&[$(stringify!($bpin))?]))),*],
        )
    };
}
