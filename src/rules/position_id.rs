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

use super::board::{differing_mask, flip_index, Board, BAR, OFF};
use super::position::{Clip, Position, CHECKERS};
use super::types::RulesError;
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
    let mut sides = [SideList::EMPTY; 2];
    for side in [Side::White, Side::Black] {
        let list = &mut sides[side.index()];
        let path = &PATHS[path_index(pos.variant, side)];
        for (k, &printed) in path.iter().enumerate() {
            let pt = &pos.points[printed as usize - 1];
            list.counts[k] = pt.count(side);
            list.pinned |= ((pt.pinned == Some(side)) as u32) << k;
        }
        list.bar = pos.bar[side.index()];
        list.off = pos.off[side.index()];
    }
    write_id(pos.variant, pos.turn, &sides, out);
}

/// Appends the Position ID of `b.to_position(variant, mover, turn)` (`b` is `mover`'s
/// board, [`Board`]) to `out`, without building the [`Position`]: the same bytes as
/// [`push_id`] of that position. The service writes one per legal play of a
/// `PLAY_DETAIL_COMPACT` answer, straight from the generator's board.
pub fn push_id_of_board(b: &Board, variant: Variant, mover: Side, turn: Side, out: &mut Vec<u8>) {
    let mut sides = [SideList::EMPTY; 2];
    // Each side's path runs from its own point 24 to its own point 1 (R1), so the
    // mover's list is its own indices from 24 down; the opponent's own point j is the
    // mover's index `flip_index(variant, j)`.
    let (mine, theirs) = match mover {
        Side::White => sides.split_at_mut(1),
        Side::Black => {
            let (w, bl) = sides.split_at_mut(1);
            (bl, w)
        }
    };
    let (mine, theirs) = (&mut mine[0], &mut theirs[0]);
    mine.counts.copy_from_slice(&b.own[1..=24]);
    mine.counts.reverse();
    match variant {
        Variant::Fevga => {
            // Opponent's own 24..=13 is the mover's 12..=1, own 12..=1 the mover's 24..=13.
            theirs.counts[..12].copy_from_slice(&b.opp[1..=12]);
            theirs.counts[..12].reverse();
            theirs.counts[12..].copy_from_slice(&b.opp[13..=24]);
            theirs.counts[12..].reverse();
        }
        // Opponent's own point j is the mover's 25 - j: its path is the mover's 1..=24.
        _ => theirs.counts.copy_from_slice(&b.opp[1..=24]),
    }
    // A pinned checker (Plakoto) is counted on its point and marked there; on a board
    // built by hand with both colours pinned on one point, the opponent's mark is the
    // one kept, as in `to_position`.
    let mover_marks = b.own_pinned & !b.opp_pinned;
    for (pins, marks, list, of_mover) in [
        (b.own_pinned, mover_marks, &mut *mine, true),
        (b.opp_pinned, b.opp_pinned, &mut *theirs, false),
    ] {
        let mut m = pins & 0x01ff_fffe;
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            let own = if of_mover { i } else { flip_index(variant, i) };
            let k = 24 - own;
            list.counts[k] = list.counts[k].saturating_add(1);
            list.pinned |= (marks >> i & 1) << k;
        }
    }
    mine.bar = b.own[BAR];
    mine.off = b.own[OFF];
    theirs.bar = b.opp[BAR];
    theirs.off = b.opp[OFF];
    write_id(variant, turn, &sides, out);
}

/// Position IDs of boards that differ from one parent board in a few places (the
/// legal plays of one position), written by patching the parent's text: the text of
/// each side's list is kept entry by entry, and a board's ID is the parent's text
/// with only the entries of the places where the board differs written anew (a play
/// changes at most eight of the mover's places and a few of the opponent's).
///
/// For every board, [`PlayIds::push`] writes the same bytes as [`push_id_of_board`]
/// with the variant, mover and side to move given to [`PlayIds::new`]; only the
/// cost depends on how near the board is to the parent. The service writes one per
/// play of a `PLAY_DETAIL_COMPACT` answer.
pub struct PlayIds {
    /// The board the entries of [`PlayIds::lists`] are written from.
    parent: Board,
    /// White's list, then Black's.
    lists: [ListText; 2],
    /// Where each ID is written: `variant/side` (from [`PREFIX`]) in its first
    /// `prefix` bytes, kept from one ID to the next.
    buf: IdBuf,
    prefix: usize,
    /// `variant/side` with the mover to move, for [`PlayIds::push_parent`].
    parent_prefix: ([u8; 16], u8),
}

/// Bytes of [`ListText::text`]: above the longest list (26 entries of at most 8
/// bytes), a power of two, and 16 more for a copied run's last word.
const LIST_TEXT: usize = 256;

/// One side's list of the parent board in a Position ID, by slot: the list's places
/// in its order, 0 the bar, 1..=24 the points along the side's path ([`PATHS`]), 25
/// `off`.
#[derive(Clone, Copy)]
struct ListText {
    /// The parent's entries (`,label:count`, each with its comma) in slot order.
    text: [u8; LIST_TEXT + 16],
    /// Slot `s`'s entry is `text[start[s]..start[s + 1]]`, empty when the side has
    /// no checker there; `start[26]` is the length of the list.
    start: [u8; 27],
    /// The side's places on the board: [`SLOT_INDEX`] and [`SLOT_OF`] row.
    places: usize,
    /// The side's labels: [`SLOT_LABEL`] row ([`path_index`]).
    path: usize,
    /// The side is the board's mover (its `own` checkers), not the opponent.
    mover: bool,
}

impl PlayIds {
    /// The writer for boards of `mover` (its own view, [`Board`]) that are near
    /// `parent`, with `turn` to move in the IDs.
    pub fn new(parent: &Board, variant: Variant, mover: Side, turn: Side) -> PlayIds {
        let (prefix, len) = PREFIX[variant as usize][turn.index()];
        let mut ids = PlayIds {
            parent: *parent,
            lists: [ListText {
                text: [0; LIST_TEXT + 16],
                start: [0; 27],
                places: 0,
                path: 0,
                mover: false,
            }; 2],
            buf: [0; ID_BUF + 16],
            prefix: len as usize,
            parent_prefix: PREFIX[variant as usize][mover.index()],
        };
        for side in [Side::White, Side::Black] {
            let list = &mut ids.lists[side.index()];
            list.mover = side == mover;
            list.places = match (list.mover, variant) {
                (true, _) => 0,
                (false, Variant::Fevga) => 2,
                (false, _) => 1,
            };
            list.path = path_index(variant, side);
            // Written at the start of the ID buffer, whose `entry` writes every count,
            // then kept (the buffer gets its `variant/side` after).
            let mut n = 0;
            let (counts, pins, marks) = side_of(parent, list.mover);
            let (index_of, labels) = (&SLOT_INDEX[list.places], &SLOT_LABEL[list.path]);
            // The board indices where the side has a checker.
            let occupied = differing_mask(counts, &[0; 26]) | pins;
            let mut start = [0u8; 27];
            for s in 0..26 {
                start[s] = n as u8;
                let i = index_of[s] as usize;
                if occupied >> i & 1 == 1 {
                    let (count, pinned) = listed(counts, pins, marks, i);
                    n = entry(&mut ids.buf, n, labels[s] as usize, count, pinned);
                }
            }
            start[26] = n as u8;
            list.start = start;
            list.text[..n].copy_from_slice(&ids.buf[..n]);
        }
        ids.buf[..16].copy_from_slice(&prefix);
        ids
    }

    /// Appends the Position ID of the parent board with its mover to move (the
    /// position the plays are played from): the bytes of [`push_id_of_board`] of the
    /// parent with the mover as the side to move.
    pub fn push_parent(&self, out: &mut Vec<u8>) {
        let (prefix, len) = &self.parent_prefix;
        out.extend_from_slice(&prefix[..*len as usize]);
        for list in &self.lists {
            // The list's first comma becomes the `/` (no entry: a `/` alone).
            out.push(b'/');
            let text = &list.text[..list.start[26] as usize];
            out.extend_from_slice(text.get(1..).unwrap_or_default());
        }
    }

    /// Appends the Position ID of `b` to `out`: the bytes of [`push_id_of_board`].
    pub fn push(&mut self, b: &Board, out: &mut Vec<u8>) {
        let p = &self.parent;
        // The board indices whose entry may differ from the parent's, by side (a pin
        // changes the count and mark of the pinned side and the mover's mark there).
        let pins = ((b.own_pinned ^ p.own_pinned) | (b.opp_pinned ^ p.opp_pinned)) & PIN_BITS;
        let changed = [
            differing_mask(&b.opp, &p.opp) | pins,
            differing_mask(&b.own, &p.own) | pins,
        ];
        let buf = &mut self.buf;
        let mut n = self.prefix;
        for list in &self.lists {
            let start = n;
            let (slot_of, index_of) = (&SLOT_OF[list.places], &SLOT_INDEX[list.places]);
            let labels = &SLOT_LABEL[list.path];
            let mut indices = changed[list.mover as usize];
            let mut slots = 0u32;
            while indices != 0 {
                let i = indices.trailing_zeros() as usize;
                indices &= indices - 1;
                slots |= 1 << slot_of[i.min(25)];
            }
            // The parent's text up to each changed slot, the slot's new entry, and
            // on after the parent's entry there.
            let (counts, pins, marks) = side_of(b, list.mover);
            let mut from = 0;
            while slots != 0 {
                let s = (slots.trailing_zeros() as usize).min(25);
                slots &= slots - 1;
                n = copy_run(buf, n, &list.text, from, list.start[s] as usize);
                let (count, pinned) = listed(counts, pins, marks, index_of[s] as usize);
                if count > 0 {
                    n = entry(buf, n, labels[s] as usize, count, pinned);
                }
                from = list.start[s + 1] as usize;
            }
            n = copy_run(buf, n, &list.text, from, list.start[26] as usize);
            // Every entry is written after a comma; the side's first comma becomes the
            // `/` (no entry: a `/` alone, never a valid position).
            if n == start {
                buf[n & (ID_BUF - 1)] = b'/';
                n += 1;
            } else {
                buf[start & (ID_BUF - 1)] = b'/';
            }
        }
        if n <= SHORT_ID {
            // Most IDs: a copy of known size (without a call), then cut to the ID.
            let at = out.len();
            out.extend_from_slice(&buf[..SHORT_ID]);
            out.truncate(at + n);
        } else {
            out.extend_from_slice(&buf[..n.min(ID_BUF)]);
        }
    }
}

/// Bytes that [`PlayIds::push`] copies whole for an ID at most this long (most are).
const SHORT_ID: usize = 128;

/// The bits of a [`Board`]'s pin masks that can be set: points 1..=24.
const PIN_BITS: u32 = 0x01ff_fffe;

/// One side of `b` as a Position ID lists it: its free checkers by board index, its
/// pinned checkers (counted on their point) and its pin marks, for the mover's side
/// (`mover`) or the opponent's, as [`push_id_of_board`] counts them.
#[inline(always)]
fn side_of(b: &Board, mover: bool) -> (&[u8; 26], u32, u32) {
    if mover {
        // With both colours pinned on one point (a board built by hand) the mark is
        // the opponent's.
        (
            &b.own,
            b.own_pinned & PIN_BITS,
            b.own_pinned & !b.opp_pinned & PIN_BITS,
        )
    } else {
        (&b.opp, b.opp_pinned & PIN_BITS, b.opp_pinned & PIN_BITS)
    }
}

/// The count and the pin mark (1: the side's bottom checker there is pinned) listed
/// at board index `i` (0..=25) for a side given by [`side_of`].
#[inline(always)]
fn listed(counts: &[u8; 26], pins: u32, marks: u32, i: usize) -> (u8, usize) {
    let i = i.min(25);
    let count = counts[i].saturating_add((pins >> i) as u8 & 1);
    (count, (marks >> i & 1) as usize)
}

/// The board index of each slot of a list (0 bar, 1..=24 along the side's path, 25
/// off): the mover's list (own index 25 - slot, every variant), the opponent's in
/// Portes and Plakoto, the opponent's in Fevga (its own point j is the mover's
/// [`flip_index`]).
const SLOT_INDEX: [[u8; 26]; 3] = {
    let mut t = [[0u8; 26]; 3];
    let mut s = 0;
    while s < 26 {
        let own = 25 - s;
        t[0][s] = own as u8;
        let (pp, fevga) = if own == 0 || own == BAR {
            (own, own)
        } else {
            (25 - own, (own + 11) % 24 + 1)
        };
        t[1][s] = pp as u8;
        t[2][s] = fevga as u8;
        s += 1;
    }
    t
};

/// The slot of each board index: the inverse of [`SLOT_INDEX`], row by row.
const SLOT_OF: [[u8; 26]; 3] = {
    let mut t = [[0u8; 26]; 3];
    let mut r = 0;
    while r < 3 {
        let mut s = 0;
        while s < 26 {
            t[r][SLOT_INDEX[r][s] as usize] = s as u8;
            s += 1;
        }
        r += 1;
    }
    t
};

/// The [`ENTRY`] label of each slot of a list, by [`path_index`]: the bar, the
/// side's path ([`PATHS`]), off.
const SLOT_LABEL: [[u8; 26]; 3] = {
    let mut t = [[0u8; 26]; 3];
    let mut r = 0;
    while r < 3 {
        t[r][0] = BAR_LABEL as u8;
        let mut k = 0;
        while k < 24 {
            t[r][k + 1] = PATHS[r][k];
            k += 1;
        }
        t[r][25] = OFF_LABEL as u8;
        r += 1;
    }
    t
};

/// Copies `text[from..to]` to `buf` at `n` and returns the new length, 16 bytes at a
/// time (the bytes written past the run are overwritten or cut after).
#[inline(always)]
fn copy_run(
    buf: &mut IdBuf,
    n: usize,
    text: &[u8; LIST_TEXT + 16],
    from: usize,
    to: usize,
) -> usize {
    let mut k = 0;
    while from + k < to {
        let (at, src) = ((n + k) & (ID_BUF - 1), (from + k) & (LIST_TEXT - 1));
        buf[at..at + 16].copy_from_slice(&text[src..src + 16]);
        k += 16;
    }
    n + (to - from)
}

/// One side's checkers as its list in a Position ID: `counts[k]` on the `k`-th point of
/// its path ([`PATHS`]), bit `k` of `pinned` when its bottom checker there is pinned.
#[derive(Clone, Copy)]
struct SideList {
    bar: u8,
    counts: [u8; 24],
    pinned: u32,
    off: u8,
}

impl SideList {
    const EMPTY: SideList = SideList {
        bar: 0,
        counts: [0; 24],
        pinned: 0,
        off: 0,
    };
}

/// The Position ID from its parts (White's list, then Black's, by [`Side::index`]).
fn write_id(variant: Variant, turn: Side, sides: &[SideList; 2], out: &mut Vec<u8>) {
    // Written into a stack buffer, then copied once; `n` is the length so far.
    let mut buf: IdBuf = [0; ID_BUF + 16];
    let (prefix, len) = PREFIX[variant as usize][turn.index()];
    buf[..16].copy_from_slice(&prefix);
    let mut n = len as usize;
    for side in [Side::White, Side::Black] {
        let list = &sides[side.index()];
        let labels = &PATHS[path_index(variant, side)];
        // Every entry is written after a comma; the side's first comma becomes the `/`.
        let start = n;
        if list.bar > 0 {
            n = entry(&mut buf, n, BAR_LABEL, list.bar, 0);
        }
        // The occupied points as bits in path order, gathered without a branch per
        // point (which point is occupied is as good as random: a branch on it
        // mispredicted about half the time), then visited in that order.
        let mut occupied = nonzero_bytes(&list.counts);
        while occupied != 0 {
            let k = occupied.trailing_zeros() as usize;
            occupied &= occupied - 1;
            let pinned = (list.pinned >> k & 1) as usize;
            n = entry(&mut buf, n, labels[k] as usize, list.counts[k], pinned);
        }
        if list.off > 0 {
            n = entry(&mut buf, n, OFF_LABEL, list.off, 0);
        }
        if n == start {
            // No checker listed (never a valid position).
            buf[n] = b'/';
            n += 1;
        } else {
            buf[start] = b'/';
        }
    }
    out.extend_from_slice(&buf[..n.min(ID_BUF)]);
}

/// Bit `k` set when `counts[k]` is not 0, eight bytes at a time.
#[inline(always)]
fn nonzero_bytes(counts: &[u8; 24]) -> u32 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let mut mask = 0u32;
    for (w, chunk) in counts.chunks_exact(8).enumerate() {
        let x = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        // The top bit of each byte: set when the byte is not 0.
        let top = ((x & LOW7).wrapping_add(LOW7) | x) & !LOW7;
        // Those eight bits gathered into one byte, byte i's into bit i.
        let bits = (top >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56;
        mask |= (bits as u32) << (8 * w);
    }
    mask
}

/// Writes `,label:count` (and `p` when `pinned` is 1) at `n` in `buf` and returns the
/// new length: one word from [`ENTRY`] for counts up to 15 (every valid position),
/// digit by digit above. Indices are taken modulo [`ID_BUF`], which a Position ID
/// never reaches, so no write is checked.
#[inline(always)]
fn entry(buf: &mut IdBuf, n: usize, label: usize, count: u8, pinned: usize) -> usize {
    if count > 15 {
        return entry_slow(buf, n, label, count, pinned == 1);
    }
    // Shifts and masks only: labels below 32, `pinned` 0 or 1, counts below 16.
    let e = ENTRY[label & 31][pinned & 1][count as usize & 15];
    let at = n & (ID_BUF - 1);
    buf[at..at + 8].copy_from_slice(&e.to_le_bytes());
    n + (e >> 56) as usize
}

/// [`entry`] for counts above 15 (a board built by hand).
#[cold]
fn entry_slow(buf: &mut IdBuf, mut n: usize, label: usize, count: u8, pinned: bool) -> usize {
    let mut byte = |b: u8| {
        buf[n & (ID_BUF - 1)] = b;
        n += 1;
    };
    byte(b',');
    match label {
        BAR_LABEL => b"bar".iter().for_each(|&b| byte(b)),
        OFF_LABEL => b"off".iter().for_each(|&b| byte(b)),
        p => {
            if p >= 10 {
                byte(b'0' + p as u8 / 10);
            }
            byte(b'0' + p as u8 % 10);
        }
    }
    byte(b':');
    if count >= 100 {
        byte(b'0' + count / 100);
    }
    if count >= 10 {
        byte(b'0' + count / 10 % 10);
    }
    byte(b'0' + count % 10);
    if pinned {
        byte(b'p');
    }
    n
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

/// `variant/side` of a Position ID (`portes/w`), by variant (in [`Variant::ALL`]'s
/// order) and side to move, with its length.
const PREFIX: [[([u8; 16], u8); 2]; 3] = {
    let mut t = [[([0u8; 16], 0u8); 2]; 3];
    let names: [&[u8]; 3] = [b"portes", b"plakoto", b"fevga"];
    let mut v = 0;
    while v < 3 {
        let name = names[v];
        let mut s = 0;
        while s < 2 {
            let mut i = 0;
            while i < name.len() {
                t[v][s].0[i] = name[i];
                i += 1;
            }
            t[v][s].0[i] = b'/';
            t[v][s].0[i + 1] = if s == 0 { b'w' } else { b'b' };
            t[v][s].1 = i as u8 + 2;
            s += 1;
        }
        v += 1;
    }
    t
};

/// The labels of [`ENTRY`] besides the printed points 1..=24.
const BAR_LABEL: usize = 0;
const OFF_LABEL: usize = 25;

/// `,label:count` by label (0 `bar`, 1..=24 the printed point, 25 `off`; 26..=31
/// unused, empty), pinned and count 0..=15, followed by `p` in `ENTRY[label][1]`
/// (pinned; bar and off have no pin): its bytes in the low bytes of a little-endian
/// `u64`, its length (at most 7, `,bar:15` or `,24:15p`) in the top byte.
const ENTRY: [[[u64; 16]; 2]; 32] = {
    let mut t = [[[0u64; 16]; 2]; 32];
    let mut pinned = 0;
    while pinned < 2 {
        let mut label = 0;
        while label < 26 {
            let mut count = 0;
            while count < 16 {
                let mut b = [0u8; 8];
                b[0] = b',';
                let mut n = 1;
                let bar_or_off = label == BAR_LABEL || label == OFF_LABEL;
                if bar_or_off {
                    let word = if label == BAR_LABEL { b"bar" } else { b"off" };
                    b[1] = word[0];
                    b[2] = word[1];
                    b[3] = word[2];
                    n = 4;
                } else {
                    if label >= 10 {
                        b[n] = b'0' + label as u8 / 10;
                        n += 1;
                    }
                    b[n] = b'0' + label as u8 % 10;
                    n += 1;
                }
                b[n] = b':';
                n += 1;
                if count >= 10 {
                    b[n] = b'0' + count as u8 / 10;
                    n += 1;
                }
                b[n] = b'0' + count as u8 % 10;
                n += 1;
                if pinned == 1 && !bar_or_off {
                    b[n] = b'p';
                    n += 1;
                }
                b[7] = n as u8;
                t[label][pinned][count] = u64::from_le_bytes(b);
                count += 1;
            }
            label += 1;
        }
        pinned += 1;
    }
    t
};

/// Bytes of [`write_id`]'s buffer ([`IdBuf`]), a power of two above the longest
/// Position ID: the variant and side (9 bytes), then per side `/` and at most 26
/// entries (bar, 24 points, off) of at most 8 bytes (`,24:255p`), 425 bytes in all.
const ID_BUF: usize = 512;

/// The buffer a Position ID is written into: [`ID_BUF`] bytes and 16 more for the
/// last word written past the end of the text (an entry's 8, a copied run's 16).
type IdBuf = [u8; ID_BUF + 16];

/// Parses a Position ID and validates the position (R9). Errors name the field
/// `position_id` (syntax) or the position field (R9).
pub fn from_id(id_text: &str) -> Result<Position, RulesError> {
    // The canonical text (what `to_id` writes, what clients mostly send) read in one
    // pass; anything else by the general parser, which also explains errors.
    if let Some(pos) = parse_canonical(id_text.as_bytes()) {
        pos.validate()?;
        return Ok(pos);
    }
    from_id_general(id_text)
}

/// [`from_id`] by the general parser: spaces, capitals, leading zeros and any order
/// of items accepted, errors explained.
fn from_id_general(id_text: &str) -> Result<Position, RulesError> {
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

/// The position of a Position ID in the strict form: lower-case variant, `w` or `b`,
/// items `place:count` (`p` after a pinned point's count) without spaces, leading
/// zeros, repeated places or empty items. Not validated. `None` for any other text,
/// valid or not, and for a pin on a point already pinned for the other side: the
/// general parser reads those (and gives the same position for every text this
/// accepts, tested).
fn parse_canonical(id: &[u8]) -> Option<Position> {
    let (variant, rest) = if let Some(r) = id.strip_prefix(b"portes/") {
        (Variant::Portes, r)
    } else if let Some(r) = id.strip_prefix(b"plakoto/") {
        (Variant::Plakoto, r)
    } else {
        (Variant::Fevga, id.strip_prefix(b"fevga/")?)
    };
    let turn = match rest.first()? {
        b'w' => Side::White,
        b'b' => Side::Black,
        _ => return None,
    };
    // A number 1..=99 without a leading zero at `i`: its value and the index after it.
    let number = |i: usize| -> Option<(u8, usize)> {
        let d0 = rest.get(i).filter(|d| (b'1'..=b'9').contains(d))?;
        match rest.get(i + 1) {
            Some(d1) if d1.is_ascii_digit() => {
                if rest.get(i + 2).is_some_and(u8::is_ascii_digit) {
                    return None;
                }
                Some(((d0 - b'0') * 10 + (d1 - b'0'), i + 2))
            }
            _ => Some((d0 - b'0', i + 1)),
        }
    };
    let mut pos = Position::empty(variant, turn);
    let mut i = 1;
    for side in [Side::White, Side::Black] {
        if rest.get(i) != Some(&b'/') {
            return None;
        }
        i += 1;
        let mut seen = 0u32;
        loop {
            let slot = if rest[i..].starts_with(b"bar:") {
                i += 4;
                BAR
            } else if rest[i..].starts_with(b"off:") {
                i += 4;
                OFF
            } else {
                let (p, next) = number(i).filter(|&(p, _)| p <= 24)?;
                if rest.get(next) != Some(&b':') {
                    return None;
                }
                i = next + 1;
                p as usize
            };
            let (n, next) = number(i).filter(|&(n, _)| n <= CHECKERS)?;
            i = next;
            let pinned = rest.get(i) == Some(&b'p');
            i += pinned as usize;
            if seen >> slot & 1 == 1 {
                return None;
            }
            seen |= 1 << slot;
            match slot {
                BAR if !pinned => pos.bar[side.index()] = n,
                OFF if !pinned => pos.off[side.index()] = n,
                BAR | OFF => return None,
                p => {
                    let pt = pos.point_mut(p as u8);
                    *pt.count_mut(side) = n;
                    if pinned {
                        if pt.pinned.is_some_and(|o| o != side) {
                            return None;
                        }
                        pt.pinned = Some(side);
                    }
                }
            }
            if rest.get(i) != Some(&b',') {
                break;
            }
            i += 1;
        }
    }
    (i == rest.len()).then_some(pos)
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
    // checkers, then a 0. Written a run of 1s at a time into the bytes where it
    // starts (a run and its offset in its first byte fit in 32 bits); the bits
    // written past the 80th are dropped.
    let mut bytes = [0u8; 16];
    let mut at = 0usize;
    let mut put = |count: u8| {
        // A valid board has at most 15 per point and 80 bits in all; anything else
        // (a `Board` built by hand) gives a meaningless key, never a panic.
        if at < 80 {
            let count = count.min(15) as usize;
            let i = (at / 8).min(12);
            let word = u32::from_le_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
            let word = word | ((1u32 << count) - 1) << (at % 8);
            bytes[i..i + 4].copy_from_slice(&word.to_le_bytes());
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
    key.copy_from_slice(&bytes[..10]);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::random_positions;
    use crate::rules::play::legal_raw_plays;
    use crate::rules::Dice;

    /// The canonical Position ID spelled out from the module grammar, item by item: the
    /// reference for the table-driven writer.
    fn reference_id(pos: &Position) -> String {
        let mut lists = Vec::new();
        for side in [Side::White, Side::Black] {
            let mut items = Vec::new();
            if pos.bar[side.index()] > 0 {
                items.push(format!("bar:{}", pos.bar[side.index()]));
            }
            for own in (1..=24).rev() {
                let printed = Position::printed_point(pos.variant, side, own);
                let pt = pos.point(printed);
                if pt.count(side) > 0 {
                    let pin = if pt.pinned == Some(side) { "p" } else { "" };
                    items.push(format!("{printed}:{}{pin}", pt.count(side)));
                }
            }
            if pos.off[side.index()] > 0 {
                items.push(format!("off:{}", pos.off[side.index()]));
            }
            lists.push(items.join(","));
        }
        let turn = if pos.turn == Side::White { "w" } else { "b" };
        format!("{}/{turn}/{}/{}", pos.variant.name(), lists[0], lists[1])
    }

    fn board_id(b: &Board, variant: Variant, mover: Side, turn: Side) -> String {
        let mut v = Vec::new();
        push_id_of_board(b, variant, mover, turn, &mut v);
        String::from_utf8(v).unwrap()
    }

    /// Every roll of random positions of each variant: the ID of every position and of
    /// every play's board (both sides to move) is the grammar's, and the board's is
    /// the position's.
    #[test]
    fn ids_of_positions_and_boards_follow_the_grammar() {
        let mut boards = 0;
        for v in Variant::ALL {
            for pos in random_positions(v, 7, 120) {
                assert_eq!(to_id(&pos), reference_id(&pos));
                if pos.game_over().is_some() {
                    continue;
                }
                for d1 in 1..=6 {
                    for d2 in d1..=6 {
                        let dice = Dice::new(d1, d2).unwrap();
                        for p in legal_raw_plays(&pos, dice).unwrap() {
                            let mover = pos.turn;
                            for turn in [mover.opponent(), mover] {
                                let after = p.board.to_position(v, mover, turn);
                                let want = reference_id(&after);
                                assert_eq!(to_id(&after), want);
                                assert_eq!(board_id(&p.board, v, mover, turn), want);
                                boards += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(boards > 20_000, "{boards}");
    }

    fn patched_id(ids: &mut PlayIds, b: &Board) -> String {
        let mut v = Vec::new();
        ids.push(b, &mut v);
        String::from_utf8(v).unwrap()
    }

    /// The patched ID of every play of every roll of random positions of each variant,
    /// with either side to move in the ID, is the general writer's: patched from the
    /// board played from and from another position's board (every place may differ).
    /// The boards include R4 checkers on the bar, R6 borne-off checkers, R5.1 pins and
    /// R5.5 pinned mothers.
    #[test]
    fn patched_play_ids_are_the_general_writers() {
        // Boards checked: all, with a checker on the bar, borne off, pinned, a pinned
        // mother; by side to move in the ID.
        let (mut all, mut bar, mut off, mut pinned, mut mother) = (0, 0, 0, 0, 0);
        let mut by_turn = [0; 2];
        for v in Variant::ALL {
            let positions = random_positions(v, 11, 160);
            for (k, pos) in positions.iter().enumerate() {
                if pos.game_over().is_some() {
                    continue;
                }
                let mover = pos.turn;
                let parent = Board::from_position(pos, mover);
                let other = Board::from_position(&positions[(k * 7 + 3) % positions.len()], mover);
                for turn in [mover.opponent(), mover] {
                    let mut near = PlayIds::new(&parent, v, mover, turn);
                    let mut far = PlayIds::new(&other, v, mover, turn);
                    assert_eq!(
                        patched_id(&mut near, &parent),
                        board_id(&parent, v, mover, turn)
                    );
                    let mut played_from = Vec::new();
                    near.push_parent(&mut played_from);
                    assert_eq!(played_from, to_id(pos).into_bytes());
                    assert_eq!(to_id(pos), board_id(&parent, v, mover, mover));
                    assert_eq!(
                        patched_id(&mut far, &parent),
                        board_id(&parent, v, mover, turn)
                    );
                    for d1 in 1..=6 {
                        for d2 in d1..=6 {
                            for p in legal_raw_plays(pos, Dice::new(d1, d2).unwrap()).unwrap() {
                                let b = &p.board;
                                let want = board_id(b, v, mover, turn);
                                assert_eq!(patched_id(&mut near, b), want, "{}", to_id(pos));
                                assert_eq!(patched_id(&mut far, b), want, "{}", to_id(pos));
                                all += 1;
                                by_turn[turn.index()] += 1;
                                bar += (b.own[BAR] + b.opp[BAR] > 0) as usize;
                                off += (b.own[OFF] + b.opp[OFF] > 0) as usize;
                                pinned += (b.own_pinned | b.opp_pinned != 0) as usize;
                                // The mover's mother on its own 24, the opponent's on
                                // the mover's 1 (Plakoto).
                                mother += (b.own_pinned >> 24 & 1 | b.opp_pinned >> 1 & 1) as usize;
                            }
                        }
                    }
                }
            }
        }
        assert!(all > 400_000, "{all}");
        assert!(by_turn.iter().all(|&n| n == all / 2), "{by_turn:?}");
        assert!(
            bar > 1_000 && off > 1_000 && pinned > 1_000,
            "{bar} {off} {pinned}"
        );
        assert!(mother > 20_000, "{mother}");
    }

    /// A board no position has (R9 rules it out): 200 checkers on own 24, 16 on the
    /// bar, 99 borne off.
    fn big_board() -> Board {
        let mut b = Board::EMPTY;
        b.own[24] = 200;
        b.own[BAR] = 16;
        b.opp[3] = 15;
        b.opp[OFF] = 99;
        b
    }

    /// Both colours pinned on own point 7 (R5.1 rules it out), and the mover's checker
    /// on 20 marked pinned with no checker under it.
    fn both_pinned_board() -> Board {
        let mut b = Board::EMPTY;
        b.own[7] = 1;
        b.opp[7] = 1;
        b.own_pinned = 1 << 7 | 1 << 20;
        b.opp_pinned = 1 << 7;
        b
    }

    /// Boards built by hand that are no valid position (counts above 15, both colours
    /// pinned on one point, no checker at all), patched from each other: the general
    /// writer's text.
    #[test]
    fn patched_ids_of_boards_built_by_hand() {
        let start =
            Board::from_position(&Position::start(Variant::Plakoto, Side::White), Side::White);
        let boards = [Board::EMPTY, big_board(), both_pinned_board(), start];
        for v in Variant::ALL {
            for mover in [Side::White, Side::Black] {
                for parent in &boards {
                    let mut ids = PlayIds::new(parent, v, mover, mover.opponent());
                    for b in &boards {
                        assert_eq!(
                            patched_id(&mut ids, b),
                            board_id(b, v, mover, mover.opponent())
                        );
                    }
                    let mut played_from = Vec::new();
                    ids.push_parent(&mut played_from);
                    assert_eq!(played_from, board_id(parent, v, mover, mover).into_bytes());
                }
            }
        }
    }

    /// The GNU Backgammon key built in one 128-bit integer, a run of 1s at a time:
    /// the reference for the byte-wise writer.
    fn reference_gnubg_key(b: &Board) -> [u8; 10] {
        let mut bits = 0u128;
        let mut at = 0u32;
        let counts = (1..=24)
            .map(|j| b.opp_at(25 - j))
            .chain([b.opp[BAR]])
            .chain((1..=24).map(|i| b.own_at(i)))
            .chain([b.own[BAR]]);
        for count in counts {
            if at < 80 {
                let count = count.min(15) as u32;
                bits |= ((1u128 << count) - 1) << at;
                at += count + 1;
            }
        }
        bits.to_le_bytes()[..10].try_into().unwrap()
    }

    /// Every Portes board of random play (either side's view), and boards built by
    /// hand with more than 15 on a point or more than 80 bits: the reference key.
    #[test]
    fn gnubg_keys_match_the_reference() {
        let mut boards = Vec::new();
        for pos in random_positions(Variant::Portes, 13, 300) {
            for mover in [Side::White, Side::Black] {
                boards.push(Board::from_position(&pos, mover));
            }
        }
        let mut full = Board::EMPTY;
        full.own = [15; 26];
        full.opp = [9; 26];
        boards.push(full);
        let mut big = Board::EMPTY;
        big.own[3] = 200;
        big.opp[BAR] = 40;
        boards.push(big);
        for b in &boards {
            assert_eq!(gnubg_key(b), reference_gnubg_key(b), "{b:?}");
        }
    }

    /// The one-pass reading of canonical IDs gives what the general parser gives, on
    /// every position of random games and on texts a byte away from them (deleted,
    /// doubled, replaced by a separator, a digit, a capital, a space): the same
    /// position or the same error.
    #[test]
    fn canonical_reading_agrees_with_the_general_parser() {
        let mut texts = Vec::new();
        for v in Variant::ALL {
            for pos in random_positions(v, 5, 150) {
                let id = to_id(&pos);
                assert!(parse_canonical(id.as_bytes()).is_some(), "{id}");
                texts.push(id);
            }
        }
        texts.extend(
            [
                "plakoto/w/24:14,3:1/1:14,3:1p",
                "plakoto/b/20:1p,5:1,3:13/1:10,5:1p,20:1,24:3",
                "portes/b/bar:1,6:11,off:3/1:15",
                "fevga/w/2:1,1:2,off:12/12:15",
            ]
            .map(String::from),
        );
        let mut checked = 0;
        for id in &texts {
            let b = id.as_bytes();
            let mut variants = vec![id.clone()];
            for i in 0..b.len() {
                let mut del = b.to_vec();
                del.remove(i);
                let mut dup = b.to_vec();
                dup.insert(i, b[i]);
                variants.push(String::from_utf8(del).unwrap());
                variants.push(String::from_utf8(dup).unwrap());
                for c in [b',', b':', b'/', b'p', b'0', b'1', b'9', b' ', b'W', b'x'] {
                    let mut r = b.to_vec();
                    r[i] = c;
                    variants.push(String::from_utf8(r).unwrap());
                }
            }
            for t in variants {
                assert_eq!(from_id(&t), from_id_general(&t), "{t:?}");
                checked += 1;
            }
        }
        assert!(checked > 100_000, "{checked}");
    }

    /// Every single byte value at every place, and all-zero and all-set lists.
    #[test]
    fn nonzero_bytes_marks_exactly_the_nonzero_counts() {
        for k in 0..24 {
            for v in 0..=255u8 {
                let mut c = [0u8; 24];
                c[k] = v;
                assert_eq!(nonzero_bytes(&c), ((v != 0) as u32) << k, "{k} {v}");
                let mut d = [255u8; 24];
                d[k] = v;
                let want = 0x00ff_ffff & !(((v == 0) as u32) << k);
                assert_eq!(nonzero_bytes(&d), want, "{k} {v}");
            }
        }
    }

    /// R5.1 pins on both sides, and the longest IDs (fifteen singletons each).
    #[test]
    fn ids_with_pins_and_many_points() {
        for id in [
            "plakoto/w/24:14,3:1/1:14,3:1p",
            "plakoto/b/20:1p,5:1,3:13/1:10,5:1p,20:1,24:3",
            "plakoto/w/15:1,14:1,13:1,12:1,11:1,10:1,9:1,8:1,7:1,6:1,5:1,4:1,3:1,2:1,1:1/16:1,17:1,18:1,19:1,20:1,21:1,22:1,23:1,24:7",
            "fevga/b/24:14,13:1/12:10,2:1,23:1,14:3",
            "portes/b/bar:1,6:11,off:3/1:15",
        ] {
            let pos = from_id(id).unwrap();
            assert_eq!(to_id(&pos), id);
            for mover in [Side::White, Side::Black] {
                let b = Board::from_position(&pos, mover);
                assert_eq!(board_id(&b, pos.variant, mover, pos.turn), id, "{mover:?}");
            }
        }
    }

    /// Boards built by hand that are no valid position still give the grammar's text:
    /// counts above 15 (written digit by digit) and a side with no checker at all.
    #[test]
    fn ids_of_boards_built_by_hand() {
        let b = big_board();
        for v in Variant::ALL {
            for mover in [Side::White, Side::Black] {
                let pos = b.to_position(v, mover, mover);
                assert_eq!(board_id(&b, v, mover, mover), reference_id(&pos));
                assert_eq!(to_id(&pos), reference_id(&pos));
            }
        }
        // Both colours pinned on own point 7 (R5.1 rules it out).
        let p = both_pinned_board();
        for v in Variant::ALL {
            for mover in [Side::White, Side::Black] {
                let pos = p.to_position(v, mover, mover);
                assert_eq!(board_id(&p, v, mover, mover), reference_id(&pos));
            }
        }
        let empty = Position::empty(Variant::Portes, Side::White);
        assert_eq!(to_id(&empty), "portes/w//");
        assert_eq!(
            board_id(&Board::EMPTY, Variant::Fevga, Side::Black, Side::White),
            "fevga/w//"
        );
    }
}
