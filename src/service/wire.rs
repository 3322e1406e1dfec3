//! The protobuf bytes of a `ListLegalPlaysResponse`, written straight from the rules
//! core's plays instead of building the `pb` message first.
//!
//! A ListLegalPlays response holds one whole `Position` per play (24 `PointState`
//! messages, two IDs) and is the server's largest and most frequent answer. Built as
//! a message and then encoded by prost, it cost about 20 µs per call on a Portes
//! corpus: an allocation per string and list, and prost computing the length of
//! every nested message once per level of nesting (four times for a `PointState`).
//! [`LegalPlaysAnswer::encode`] writes the same bytes in one pass, straight into the
//! response buffer (tonic's, in the server), each play through one scratch buffer
//! with its nested fields written in place (`cargo bench --bench service`,
//! docs/performance.md).
//!
//! The output is byte for byte what prost writes for the message that
//! [`TavliEngineService::list_legal_plays`](super::TavliEngineService::list_legal_plays)
//! builds (fields in tag order, proto3 defaults left out, minimal varints); the tests
//! below compare both on every roll of hundreds of positions of each variant. A change
//! to `Position`, `Play`, `Move`, `Location`, `GameOutcome` or `Dice` in
//! `proto/tavli/v1/engine.proto` must be made here too, and those tests fail until it is.

use super::convert::{reason_to_pb, side_to_pb, variant_to_pb};
use crate::rules::board::Board;
use crate::rules::movegen::{RawMove, RawPlay};
use crate::rules::notation;
use crate::rules::play::to_location;
use crate::rules::position_id::{push_gnubg_id, push_id, PlayIds};
use crate::rules::xgid::push_xgid;
use crate::rules::{Dice, Location, Outcome, Position, Side, Variant};
use bytes::BufMut;

/// Wire type of varint fields.
const VARINT: u8 = 0;
/// Wire type of length-delimited fields (strings, messages).
const LEN: u8 = 2;

fn put_varint(out: &mut impl BufMut, mut v: u64) {
    while v >= 0x80 {
        out.put_u8(v as u8 | 0x80);
        v >>= 7;
    }
    out.put_u8(v as u8);
}

/// Bytes of the varint of `v`.
fn varint_len(v: u64) -> usize {
    // 1 + floor(log2(v) / 7), and 1 for 0.
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// A field key; every field number here is below 16, so one byte.
fn put_key(out: &mut impl BufMut, field: u8, wire: u8) {
    debug_assert!(field < 16);
    out.put_u8(field << 3 | wire);
}

/// A `uint32`/enum field, left out when 0 (proto3).
fn put_uint(out: &mut Vec<u8>, field: u8, v: u32) {
    if v != 0 {
        put_key(out, field, VARINT);
        put_varint(out, v as u64);
    }
}

/// A length-delimited field (message or string) from its bytes.
fn put_bytes(out: &mut impl BufMut, field: u8, bytes: &[u8]) {
    put_key(out, field, LEN);
    put_varint(out, bytes.len() as u64);
    out.put_slice(bytes);
}

/// A length-delimited field written in place: its key, a length placeholder of
/// `guess` bytes, the bytes `write` appends, then the length as the minimal varint
/// (the bytes moved when it is not `guess` bytes long). A string left empty is left
/// out (proto3) when `omit_empty`.
fn put_nested(
    out: &mut Vec<u8>,
    field: u8,
    guess: usize,
    omit_empty: bool,
    write: impl FnOnce(&mut Vec<u8>),
) {
    let key_at = out.len();
    put_key(out, field, LEN);
    let at = out.len();
    out.resize(at + guess, 0);
    write(out);
    let len = out.len() - at - guess;
    if len == 0 && omit_empty {
        out.truncate(key_at);
        return;
    }
    if guess == 1 && len < 1 << 7 {
        // The usual case: the guessed one byte.
        out[at] = len as u8;
        return;
    }
    let need = varint_len(len as u64);
    if need != guess {
        if need > guess {
            out.resize(out.len() + need - guess, 0);
        }
        out.copy_within(at + guess..at + guess + len, at + need);
        out.truncate(at + need + len);
    }
    let mut v = len;
    for b in &mut out[at..at + need - 1] {
        *b = v as u8 | 0x80;
        v >>= 7;
    }
    out[at + need - 1] = v as u8;
}

/// `Position`: every field, as [`super::convert::position_to_pb`] fills it;
/// `id` appends `p`'s Position ID; `board()` is `p` seen by its side to move (for the
/// GNU Backgammon ID of a Portes position; not called for the other variants); the
/// XGID of a Portes position is written from `p`.
fn put_position(
    out: &mut Vec<u8>,
    p: &Position,
    id: impl FnOnce(&mut Vec<u8>),
    board: impl FnOnce() -> Board,
) {
    put_uint(out, 1, variant_to_pb(p.variant) as u32);
    put_uint(out, 2, side_to_pb(Some(p.turn)) as u32);
    // The 24 PointState fields, each its key and at most eight more bytes from
    // [`POINT_STATES`], written into one buffer and copied once.
    let mut points = [0u8; 24 * 9 + 8];
    let mut k = 0;
    for pt in &p.points {
        let at = k.min(24 * 9);
        let (white, black, pinned) = (pt.white, pt.black, side_to_pb(pt.pinned) as u8);
        if white < 16 && black < 16 {
            let e = POINT_STATES[(white as usize * 16 + black as usize) * 3 + pinned as usize % 3];
            points[at] = 3 << 3 | LEN;
            points[at + 1..at + 9].copy_from_slice(&e.to_le_bytes());
            k = at + (e >> 56) as usize;
        } else {
            // Counts above 15 (no valid position): the fields one by one.
            k = at + point_state_slow(&mut points[at..at + 9], white, black, pinned);
        }
    }
    out.extend_from_slice(&points[..k.min(24 * 9)]);
    put_uint(out, 4, p.bar[0] as u32);
    put_uint(out, 5, p.bar[1] as u32);
    put_uint(out, 6, p.off[0] as u32);
    put_uint(out, 7, p.off[1] as u32);
    // IDs are under 128 bytes but for the longest ones: a one-byte length first.
    put_nested(out, 8, 1, true, id);
    if p.variant == Variant::Portes {
        put_nested(out, 9, 1, true, |t| push_gnubg_id(&board(), t));
        put_nested(out, 10, 1, true, |t| push_xgid(p, t));
    }
}

/// A `PointState` message after its key (its length, then `white`, `black` and
/// `pinned` when not 0, proto3), in the low bytes of a little-endian word, with the
/// bytes of the whole field (key included, at most 8) in the top byte: by
/// `(white * 16 + black) * 3 + pinned` for counts 0..=15 and sides 0..=2.
const POINT_STATES: [u64; 16 * 16 * 3] = {
    let mut t = [0u64; 16 * 16 * 3];
    let mut i = 0;
    while i < 16 * 16 * 3 {
        let mut b = [0u8; 8];
        let n = point_state_fields(&mut b, (i / 48) as u8, (i / 3 % 16) as u8, (i % 3) as u8);
        // The whole field: key, length, fields.
        b[7] = n as u8 + 1;
        t[i] = u64::from_le_bytes(b);
        i += 1;
    }
    t
};

/// Writes a `PointState`'s length and its fields not 0 (each a one-byte key and a
/// one-byte value) into `b` and returns the bytes written (at most 7).
const fn point_state_fields(b: &mut [u8; 8], white: u8, black: u8, pinned: u8) -> usize {
    let fields = [(1u8, white), (2, black), (3, pinned)];
    let mut n = 1;
    let mut f = 0;
    while f < 3 {
        let (field, v) = fields[f];
        if v != 0 {
            b[n] = field << 3 | VARINT;
            b[n + 1] = v;
            n += 2;
        }
        f += 1;
    }
    b[0] = (n - 1) as u8;
    n
}

/// A `PointState` field (key included) with counts above 15 (no valid position) into
/// `out` (at least 8 bytes), each value as one byte as for smaller counts: returns
/// its length.
#[cold]
fn point_state_slow(out: &mut [u8], white: u8, black: u8, pinned: u8) -> usize {
    out[0] = 3 << 3 | LEN;
    let mut k = 2;
    for (field, v) in [(1u8, white), (2, black), (3, pinned)] {
        out[k] = field << 3 | VARINT;
        out[k + 1] = v;
        k += 2 * (v != 0) as usize;
    }
    out[1] = (k - 2) as u8;
    k
}

/// `Location`: a oneof, so written even when its value is the default.
fn location(l: Location) -> ([u8; 2], usize) {
    match l {
        Location::Point(n) => ([1 << 3 | VARINT, n], 2), // points are 1..=24
        Location::Bar => ([2 << 3 | VARINT, 1], 2),
        Location::Off => ([3 << 3 | VARINT, 1], 2),
    }
}

/// The `Location` bytes (key and value; every one is two bytes) of a move's `from`
/// and `to` by the generator's own index 0..=25, for each variant (in
/// [`Variant::ALL`]'s order) and mover (by [`Side::index`]), as
/// [`to_location`] converts them: built once from it.
type MoveLocations = [[[[[u8; 2]; 26]; 2]; 2]; 3];

static MOVE_LOCATIONS: std::sync::LazyLock<MoveLocations> = std::sync::LazyLock::new(|| {
    let mut t = [[[[[0u8; 2]; 26]; 2]; 2]; 3];
    for (v, variant) in Variant::ALL.into_iter().enumerate() {
        for mover in [Side::White, Side::Black] {
            for own in 0..26u8 {
                for (k, is_from) in [(0, true), (1, false)] {
                    let (loc, len) = location(to_location(variant, mover, own, is_from));
                    debug_assert_eq!(len, 2);
                    t[v][mover.index()][k][own as usize] = loc;
                }
            }
        }
    }
    t
});

/// `Move` (every part of it is a few bytes, so its length is one byte), from the
/// generator's move as [`crate::rules::legal_plays`] converts it; `locations` are
/// the mover's ([`MOVE_LOCATIONS`]). Written at `n` in `buf` (16 bytes, cut to the
/// move's after); returns the new length.
#[inline(always)]
fn put_move(
    buf: &mut [u8; MOVES_BUF],
    n: usize,
    locations: &[[[u8; 2]; 26]; 2],
    m: &RawMove,
) -> usize {
    let [f0, f1] = locations[0][(m.from as usize).min(25)];
    let [t0, t1] = locations[1][(m.to as usize).min(25)];
    // Written whole, die and hit included, then cut to the fields that are not 0.
    let mut b = [
        1 << 3 | LEN,
        0,
        1 << 3 | LEN,
        2,
        f0,
        f1,
        2 << 3 | LEN,
        2,
        t0,
        t1,
        3 << 3 | VARINT,
        m.die,
        0,
        0,
        0,
        0,
    ];
    let mut len = 10 + 2 * (m.die != 0) as usize;
    b[len] = 4 << 3 | VARINT;
    b[len + 1] = 1;
    len += 2 * m.hit as usize;
    b[1] = (len - 2) as u8;
    let at = n.min(MOVES_BUF - 16);
    buf[at..at + 16].copy_from_slice(&b);
    n + len
}

/// Bytes of the buffer the moves of a play are written into by [`put_move`]: four
/// moves of at most 14 bytes, the last one's 16 bytes written, and the 64 bytes
/// copied whole.
const MOVES_BUF: usize = 80;

/// `GameOutcome` as field `field` (present even when all its fields are defaults).
fn put_outcome(out: &mut Vec<u8>, field: u8, o: &Outcome) {
    let mut m = [0u8; 8];
    m[0] = field << 3 | LEN;
    let mut n = 2;
    for (f, v) in [
        (1u8, side_to_pb(o.winner) as u8),
        (2, o.points),
        (3, reason_to_pb(o.reason) as u8),
    ] {
        if v != 0 {
            m[n] = f << 3 | VARINT;
            m[n + 1] = v; // winner 0..=2, points 0..=2, reason 0..=4: one-byte varints
            n += 2;
        }
    }
    m[1] = (n - 2) as u8;
    out.extend_from_slice(&m[..n]);
}

/// `Play` of `mover` (as [`crate::rules::legal_plays`] converts the generator's play),
/// with the whole resulting position, or its Position ID only when `ids` is given
/// (compact; the writer of the IDs of the plays of the position played from).
fn put_play(
    out: &mut Vec<u8>,
    variant: Variant,
    mover: Side,
    p: &RawPlay,
    ids: Option<&mut PlayIds>,
) {
    let locations = &MOVE_LOCATIONS[variant as usize][mover.index()];
    let (mut moves, mut n) = ([0u8; MOVES_BUF], 0);
    for m in p.moves() {
        n = put_move(&mut moves, n, locations, m);
    }
    // A copy of known size (without a call), then cut to the moves (at most 56 bytes).
    let at = out.len();
    out.extend_from_slice(&moves[..64]);
    out.truncate(at + n.min(64));
    // Notation is never empty (`pass` for no move).
    put_nested(out, 2, 1, true, |t| notation::push(p.moves(), t));
    if ids.is_none() {
        let position = p.board.to_position(variant, mover, mover.opponent());
        // A whole position is 100 to 400 bytes: a two-byte length first.
        put_nested(out, 3, 2, false, |t| {
            // The position seen by its side to move.
            let id = |t: &mut Vec<u8>| push_id(&position, t);
            put_position(t, &position, id, || p.board.mirror(variant))
        });
    }
    if let Some(o) = p.outcome {
        put_outcome(out, 4, &o.to_outcome(mover));
    }
    if let Some(ids) = ids {
        // The resulting position's ID straight from the board (no `Position`).
        put_nested(out, 5, 1, true, |t| ids.push(&p.board, t));
    }
}

/// Bytes before a play in [`LegalPlaysAnswer::encode`]'s scratch buffer: its key and a
/// length of up to two bytes.
const PLAY_HEAD: usize = 3;

/// A `ListLegalPlaysResponse` to be written: the checked position, the dice, the
/// legal plays as the generator gives them
/// ([`crate::rules::play::legal_raw_plays`]) and whether the plays are compact.
#[derive(Debug)]
pub struct LegalPlaysAnswer {
    /// The position of the request (its side to move moves).
    pub position: Position,
    /// The roll.
    pub dice: Dice,
    /// Every legal play.
    pub plays: Vec<RawPlay>,
    /// `PLAY_DETAIL_COMPACT`: each play with its Position ID instead of its position.
    pub compact: bool,
}

impl LegalPlaysAnswer {
    /// About the encoded length in bytes (at least it for most answers: a buffer
    /// this large rarely grows).
    pub fn size_hint(&self) -> usize {
        let per_play = if self.compact { 160 } else { 320 };
        384 + per_play * self.plays.len()
    }

    /// Appends the encoded message (without gRPC's 5-byte frame header) to `dst`:
    /// identical to the prost encoding of what
    /// [`super::TavliEngineService::list_legal_plays`] returns. Each play is written
    /// into one scratch buffer, then copied to `dst` after its length.
    pub fn encode(&self, dst: &mut impl BufMut) {
        let pos = &self.position;
        let board = Board::from_position(pos, pos.turn);
        // Compact: the plays' IDs patched from the ID of the board played from.
        let mut ids = self
            .compact
            .then(|| PlayIds::new(&board, pos.variant, pos.turn, pos.turn.opponent()));
        let mut scratch = Vec::with_capacity(if self.compact { 256 } else { 512 });
        // Compact: the position's ID from the lists of the plays' IDs.
        let id = |t: &mut Vec<u8>| match &ids {
            Some(ids) => ids.push_parent(t),
            None => push_id(pos, t),
        };
        put_position(&mut scratch, pos, id, || board);
        put_bytes(dst, 1, &scratch);
        put_bytes(
            dst,
            2,
            &[
                1 << 3 | VARINT,
                self.dice.die1(),
                2 << 3 | VARINT,
                self.dice.die2(),
            ],
        );
        for p in &self.plays {
            // The play after room for its key and length, which are then written just
            // before it: one copy into `dst` per play.
            scratch.clear();
            scratch.extend_from_slice(&[0; PLAY_HEAD]);
            put_play(&mut scratch, pos.variant, pos.turn, p, ids.as_mut());
            let len = scratch.len() - PLAY_HEAD;
            let start = if len < 1 << 7 {
                scratch[PLAY_HEAD - 1] = len as u8;
                PLAY_HEAD - 1
            } else if len < 1 << 14 {
                scratch[PLAY_HEAD - 2] = len as u8 | 0x80;
                scratch[PLAY_HEAD - 1] = (len >> 7) as u8;
                PLAY_HEAD - 2
            } else {
                // Never for one play (under 2 KB); written the long way all the same.
                put_bytes(dst, 3, &scratch[PLAY_HEAD..]);
                continue;
            };
            scratch[start - 1] = 3 << 3 | LEN;
            dst.put_slice(&scratch[start - 1..]);
        }
    }
}

/// The encoded `ListLegalPlaysResponse` for `position`, `dice` and its legal `plays`
/// as the generator gives them ([`crate::rules::play::legal_raw_plays`]; the message
/// itself, without gRPC's 5-byte frame header): identical to the prost encoding of
/// what [`super::TavliEngineService::list_legal_plays`] returns.
pub fn encode_list_legal_plays(
    position: &Position,
    dice: Dice,
    plays: &[RawPlay],
    compact: bool,
) -> Vec<u8> {
    let answer = LegalPlaysAnswer {
        position: *position,
        dice,
        plays: plays.to_vec(),
        compact,
    };
    let mut out = Vec::with_capacity(answer.size_hint());
    answer.encode(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::random_positions;
    use crate::rules::play::legal_raw_plays;
    use crate::service::{pb, TavliEngineService};
    use prost::Message;

    /// Every roll of `positions`: the hand-written bytes equal prost's, both details.
    fn check(positions: &[Position]) -> usize {
        let svc = TavliEngineService::new(None, 0, None);
        let mut calls = 0;
        for pos in positions.iter().filter(|p| p.game_over().is_none()) {
            for d1 in 1..=6 {
                for d2 in d1..=6 {
                    let dice = Dice::new(d1, d2).unwrap();
                    let plays = legal_raw_plays(pos, dice).unwrap();
                    for detail in [pb::PlayDetail::Full, pb::PlayDetail::Compact] {
                        let req = pb::ListLegalPlaysRequest {
                            position: Some(pb::list_legal_plays_request::Position::PositionId(
                                crate::rules::position_id::to_id(pos),
                            )),
                            dice: Some(pb::Dice {
                                die1: d1 as u32,
                                die2: d2 as u32,
                            }),
                            detail: detail as i32,
                        };
                        let want = svc.list_legal_plays(&req).unwrap().encode_to_vec();
                        let got = encode_list_legal_plays(
                            pos,
                            dice,
                            &plays,
                            detail == pb::PlayDetail::Compact,
                        );
                        assert_eq!(got, want, "{} {d1}-{d2} {detail:?}", pos_id(pos));
                        calls += 1;
                    }
                }
            }
        }
        calls
    }

    fn pos_id(p: &Position) -> String {
        crate::rules::position_id::to_id(p)
    }

    /// Every entry of the `PointState` table is what the field-by-field writer writes,
    /// and both are prost's encoding of the message.
    #[test]
    fn point_state_table_matches_the_fields() {
        for white in 0..16u8 {
            for black in 0..16u8 {
                for pinned in 0..3u8 {
                    let e =
                        POINT_STATES[(white as usize * 16 + black as usize) * 3 + pinned as usize];
                    let len = (e >> 56) as usize;
                    let mut table = vec![3 << 3 | LEN];
                    table.extend_from_slice(&e.to_le_bytes()[..len - 1]);
                    let mut slow = [0u8; 9];
                    let n = point_state_slow(&mut slow, white, black, pinned);
                    assert_eq!(table, &slow[..n], "{white} {black} {pinned}");
                    let state = pb::PointState {
                        white: white as u32,
                        black: black as u32,
                        pinned: pinned as i32,
                    };
                    let mut want = vec![3 << 3 | LEN];
                    want.extend_from_slice(&state.encode_length_delimited_to_vec());
                    assert_eq!(table, want, "{white} {black} {pinned}");
                }
            }
        }
    }

    #[test]
    fn same_bytes_as_prost_on_random_games() {
        for v in Variant::ALL {
            let n = check(&random_positions(v, 41, 150));
            assert!(n > 150 * 21, "{v:?}: {n}");
        }
    }

    #[test]
    fn same_bytes_as_prost_on_special_positions() {
        let ids = [
            // R4: entering from the bar, with blots to hit (Portes).
            "portes/w/bar:2,13:5,8:3,6:5/1:1,3:1,12:5,17:3,19:5",
            "portes/b/24:2,13:5,8:3,6:5/1:2,12:5,17:3,19:5",
            // R5.1: a pin in place; R5.5: a mother pin that ends the game (Plakoto).
            "plakoto/w/24:14,3:1/1:14,3:1p",
            "plakoto/w/3:1,6:14/1:1,19:14",
            // Fifteen singletons: the longest Position IDs (over 127 bytes with both).
            "plakoto/w/15:1,14:1,13:1,12:1,11:1,10:1,9:1,8:1,7:1,6:1,5:1,4:1,3:1,2:1,1:1/16:1,17:1,18:1,19:1,20:1,21:1,22:1,23:1,24:7",
            // R6, R7: bearing off (Fevga).
            "fevga/w/2:1,1:2,off:12/12:15",
        ];
        let positions: Vec<Position> = ids
            .iter()
            .map(|id| crate::rules::position_id::from_id(id).expect(id))
            .collect();
        assert!(check(&positions) > 0);
    }
}
