//! Legal plays: every rule of RULES.md about moving checkers lives in this file.
//!
//! Two entry points share one generator and give the same plays in the same order:
//! - [`generate_positions`]: the **positions-only path**, every distinct resulting
//!   board (what evaluation, search, training and matches need);
//! - [`generate`]: the **full path**, each play with its moves and outcome as well
//!   ([`RawPlay`]; what `legal_plays`, `apply` and the service build on).
//!
//! Single moves ([`for_each_step`], and the generator's `Gen::sources` and
//! `Gen::child`): R3 intermediate landings, R4 bar and hitting, R5.1–R5.3 pins, R5.5
//! mother, R6 bearing off, R8.1–R8.3 Fevga. R8.4 (must open) filters complete
//! sequences (`generate_must_open`).
//!
//! # How plays are generated
//!
//! Depth first, one die per level, with a small state per node (`Node`: bit masks
//! of the mover's occupied points and of pinned opposing checkers) and, for the whole
//! turn, the mask of points the mover may land on (no move of the mover changes it).
//! A node's board is built only when it has moves; a play is written in place into
//! the output: its parent's board copied and the last move applied. Sources are
//! visited from the highest down, so the plays come in the order of the
//! breadth-first generator of commit 1e8b9d6, which this one replaced (answers, moves
//! and order pinned by `tests/movegen_paths.rs`):
//!
//! - **Doubles**: four inlined levels; the plays are the deepest leaves (maximum
//!   dice, R3: a leaf deeper than those kept so far discards them). Where the order of
//!   the moves cannot matter (`moves_commute`: always in Portes) each multiset of
//!   moves is generated once, in non-increasing source order, so no duplicate arises.
//! - **Non-doubles**: the larger die first ("A"), then the smaller die first ("B"),
//!   then, if no play uses both dice, every single move of the larger die, else of the
//!   smaller, else a pass (R3). Where moves commute, B only tries what A cannot give
//!   (bear-offs with the larger die, the same checker moving on from a point that was
//!   empty), and the duplicates that remain are known in advance and skipped by rule
//!   (`Gen::a_skip`, `Gen::b_bearoff_is_duplicate`, `Gen::b_continuation_is_duplicate`).
//! - **Where the order might matter** (Plakoto's mother rule, Fevga's R8.2 and R8.3):
//!   the one-order generation runs first and is kept unless one of those rules acted
//!   during it (`Gen::order_mattered`; the search stops there, `Gen::abandoned`);
//!   otherwise every order is searched, with duplicates (the same board at the same
//!   depth) removed by an additive key of the board, confirmed by comparing boards.
//!   A Fevga turn where the moves commute runs without the R8.2 and R8.3 checks
//!   (`FEVGA_COMMUTE`): neither can act then.
//!
//! A play reached by several paths keeps the moves of the first. Boards are
//! mover-relative ([`Board`]); the caller mirrors them to pass the turn.

use super::board::{bear_off_win, below_mask, Board, RelOutcome, BAR, OFF};
use super::position::CHECKERS;
use super::types::{Dice, OutcomeReason, Variant};
use std::cell::RefCell;

/// One checker moved by one die, in the mover's own numbering: `from` 25 = bar,
/// `to` 0 = off.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RawMove {
    pub from: u8,
    pub to: u8,
    pub die: u8,
    /// Hit (Portes) or pin (Plakoto).
    pub hit: bool,
}

/// A legal play: the board after it (not mirrored: still the mover's view), its moves
/// in a legal order, and the outcome if it ended the game.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawPlay {
    pub board: Board,
    pub moves: [RawMove; 4],
    pub len: u8,
    pub outcome: Option<RelOutcome>,
}

impl RawPlay {
    /// The moves actually played.
    pub fn moves(&self) -> &[RawMove] {
        &self.moves[..self.len as usize]
    }
}

/// Moves one checker on `b` as `m` says, with its effects by the rules of `variant`:
/// a hit sends the blot to the bar (R4), a pin keeps it under the mover (R5.1), and in
/// Plakoto a pinned checker is freed when the last checker on top of it leaves (R5.2).
/// Legality is the caller's business (the generator checks it before).
#[inline(always)]
pub fn apply_move(variant: Variant, b: &mut Board, m: RawMove) {
    let (from, to) = (m.from as usize, m.to as usize);
    b.own[from] -= 1;
    b.own[to] += 1;
    if m.hit {
        match variant {
            Variant::Portes => {
                b.opp[to] = 0;
                b.opp[BAR] += 1;
            }
            Variant::Plakoto => {
                b.opp[to] = 0;
                b.opp_pinned |= 1 << to;
            }
            Variant::Fevga => {}
        }
    }
    if variant == Variant::Plakoto && b.opp_pinned >> from & 1 == 1 && b.own[from] == 0 {
        b.opp_pinned &= !(1 << from);
        b.opp[from] += 1;
    }
}

/// The outcome of a play from its resulting board `b` (the mover's view, not
/// mirrored): the mover bore off its 15th checker (R7: 2 points if the opponent has
/// none off), or, in Plakoto, the mother rule ended the game (R5.5). `None` while the
/// game goes on. For a play from [`generate`] this equals its
/// [`RawPlay::outcome`]; with [`generate_positions`] this is how a caller learns it.
#[inline]
pub fn play_outcome(variant: Variant, b: &Board) -> Option<RelOutcome> {
    if b.own[OFF] >= CHECKERS {
        Some(bear_off_win(b.opp[OFF]))
    } else if variant == Variant::Plakoto {
        b.mother_result()
    } else {
        None
    }
}

/// What evaluation reads of a generated play, whichever path made it: the resulting
/// board (the mover's view, not mirrored) and whether the play ended the game.
/// [`Board`] (an item of [`generate_positions`]) and [`RawPlay`] (of [`generate`])
/// both provide it, so the search and the strength tools take either.
pub trait PlayResult {
    /// The board after the play, the mover's view.
    fn board(&self) -> &Board;
    /// The end of the game the play made, if any (R7, R5.5; see [`play_outcome`]).
    fn outcome(&self, variant: Variant) -> Option<RelOutcome>;
}

impl PlayResult for Board {
    #[inline]
    fn board(&self) -> &Board {
        self
    }
    #[inline]
    fn outcome(&self, variant: Variant) -> Option<RelOutcome> {
        play_outcome(variant, self)
    }
}

impl PlayResult for RawPlay {
    #[inline]
    fn board(&self) -> &Board {
        &self.board
    }
    #[inline]
    fn outcome(&self, _: Variant) -> Option<RelOutcome> {
        self.outcome
    }
}

/// Calls `f(board, move, outcome)` for every legal single move of one checker by `die`
/// on `b` (the mover's view), sources from the highest down.
///
/// Rules applied here, per single die: bar first (R4), closed points (R4, R5.3,
/// R8.1), hitting (R4) and pinning (R5.1) with release when the last pinner leaves
/// (R5.2), bearing off only with all checkers home, exact die or larger die from the
/// highest occupied point, pinned checkers counting (R6, R5.4), the Fevga first
/// checker (R8.2) and start-quarter prime (R8.3), and the end of the game: 15 off
/// (R7) or the mother rule checked after every checker move (R5.5).
pub fn for_each_step(
    variant: Variant,
    b: &Board,
    die: u8,
    f: impl FnMut(Board, RawMove, Option<RelOutcome>),
) {
    for_each_step_from(variant, b, die, u32::MAX, f)
}

/// [`for_each_step`] for the moves whose source is in `from` only (bit `i`: own index
/// `i`, 1..=24, 25 the bar): the same moves, boards and outcomes, without building the
/// others.
pub fn for_each_step_from(
    variant: Variant,
    b: &Board,
    die: u8,
    from: u32,
    mut f: impl FnMut(Board, RawMove, Option<RelOutcome>),
) {
    let unused: Vec<Board> = Vec::new();
    match variant {
        Variant::Portes => Gen::<_, PORTES, false>::new(b, unused, None).steps(die, from, &mut f),
        Variant::Plakoto => Gen::<_, PLAKOTO, false>::new(b, unused, None).steps(die, from, &mut f),
        Variant::Fevga => Gen::<_, FEVGA, false>::new(b, unused, None).steps(die, from, &mut f),
    }
}

/// Plays `moves` one after another on `b` (the mover's view), each checked as
/// [`for_each_step`] checks a single move of its die at that point of the turn (its
/// `from` and `die` are read; `to` and `hit` follow from them): the board after the
/// last move and the outcome that move made (R7, R5.5), or `None` when a move is not
/// legal at its turn or the game ended before the last one. Builds no other move: a
/// cheap way to follow one known sequence. Whether the sequence is a legal *play* is
/// the caller's question (R3: it must play the most dice possible).
pub fn play_sequence(
    variant: Variant,
    b: &Board,
    moves: &[RawMove],
) -> Option<(Board, Option<RelOutcome>)> {
    let unused: Vec<Board> = Vec::new();
    match variant {
        Variant::Portes => Gen::<_, PORTES, false>::new(b, unused, None).sequence(moves),
        Variant::Plakoto => Gen::<_, PLAKOTO, false>::new(b, unused, None).sequence(moves),
        Variant::Fevga => Gen::<_, FEVGA, false>::new(b, unused, None).sequence(moves),
    }
}

/// Every legal play of `board` (the mover's view) with `dice`, appended to `out`: the
/// **full path**.
///
/// One play per distinct resulting board (R3), in a fixed order (see the module
/// documentation). No legal move gives exactly one play with no moves (a pass).
/// Boards in `out` are not mirrored. The caller must not pass a board whose game is
/// already over (R9).
pub fn generate(variant: Variant, board: &Board, dice: Dice, out: &mut Vec<RawPlay>) {
    run(variant, board, dice, out)
}

/// The **positions-only path**: appends to `out` the resulting board of every legal
/// play of `board` (the mover's view) with `dice`, without moves or notation.
///
/// Shape: the same boards as [`generate`]'s `RawPlay::board`, in the same order, one
/// per distinct resulting position (R3); a position with no legal move gives one
/// board, `*board` itself (a pass). Boards are the mover's view, not mirrored (mirror
/// with [`Board::mirror`] to evaluate from the other side); [`play_outcome`] tells
/// whether a play ended the game. The caller must not pass a board whose game is
/// already over (R9).
pub fn generate_positions(variant: Variant, board: &Board, dice: Dice, out: &mut Vec<Board>) {
    run(variant, board, dice, out)
}

const PORTES: u8 = 0;
const PLAKOTO: u8 = 1;
const FEVGA: u8 = 2;
/// Fevga on a turn where no order-dependent rule can act ([`moves_commute`] holds:
/// R8.2 does not apply and R8.3 cannot close the start quarter): the Fevga moves
/// without the R8.2 and R8.3 checks, which cost on every node.
const FEVGA_COMMUTE: u8 = 3;

/// Own points 19..=24: the Fevga start quarter (R8.3).
const QUARTER: u32 = 0x3f << 19;
/// Own points 12..=23: where the Fevga first checker may stand while R8.2 holds.
const RUNNER_ZONE: u32 = 0xfff << 12;

#[inline(always)]
const fn variant_of(v: u8) -> Variant {
    match v {
        PORTES => Variant::Portes,
        PLAKOTO => Variant::Plakoto,
        _ => Variant::Fevga,
    }
}

#[inline(always)]
fn high_bit(x: u32) -> usize {
    31 - x.leading_zeros() as usize
}

/// Where generated plays go: boards only, or whole plays.
trait Sink {
    /// Whether the sink records moves (else the search keeps no path).
    const MOVES: bool;
    fn count(&self) -> usize;
    fn cut(&mut self, n: usize);
    fn board_at(&self, i: usize) -> &Board;
    /// Appends the play `board` (after the moves `prefix`) followed by `last`.
    fn put(
        &mut self,
        v: Variant,
        board: &Board,
        prefix: &[RawMove],
        last: Option<RawMove>,
        o: Option<RelOutcome>,
    );
    fn drop_last(&mut self);
    fn put_raw(&mut self, p: &RawPlay);
}

/// Writes `value` just past the end of `v` (reserving capacity) and returns it, to
/// be finished in place and then counted by [`grown`]: no copy on the stack.
#[inline(always)]
fn slot<T>(v: &mut Vec<T>, value: T) -> &mut T {
    if v.len() == v.capacity() {
        v.reserve(64);
    }
    v.spare_capacity_mut()[0].write(value)
}

/// Counts the element written by [`slot`].
#[inline(always)]
fn grown<T>(v: &mut Vec<T>) {
    // SAFETY: `slot` reserved the element at `len` and initialised it.
    unsafe { v.set_len(v.len() + 1) }
}

impl Sink for Vec<Board> {
    const MOVES: bool = false;
    #[inline(always)]
    fn count(&self) -> usize {
        self.len()
    }
    #[inline(always)]
    fn cut(&mut self, n: usize) {
        self.truncate(n)
    }
    #[inline(always)]
    fn board_at(&self, i: usize) -> &Board {
        &self[i]
    }
    #[inline(always)]
    fn put(
        &mut self,
        v: Variant,
        board: &Board,
        _: &[RawMove],
        last: Option<RawMove>,
        _: Option<RelOutcome>,
    ) {
        let slot = slot(self, *board);
        if let Some(m) = last {
            apply_move(v, slot, m);
        }
        grown(self);
    }
    #[inline(always)]
    fn drop_last(&mut self) {
        self.pop();
    }
    fn put_raw(&mut self, p: &RawPlay) {
        self.push(p.board)
    }
}

impl Sink for Vec<RawPlay> {
    const MOVES: bool = true;
    #[inline(always)]
    fn count(&self) -> usize {
        self.len()
    }
    #[inline(always)]
    fn cut(&mut self, n: usize) {
        self.truncate(n)
    }
    #[inline(always)]
    fn board_at(&self, i: usize) -> &Board {
        &self[i].board
    }
    #[inline(always)]
    fn put(
        &mut self,
        v: Variant,
        board: &Board,
        prefix: &[RawMove],
        last: Option<RawMove>,
        o: Option<RelOutcome>,
    ) {
        let mut moves = [RawMove::default(); 4];
        moves[..prefix.len()].copy_from_slice(prefix);
        let mut len = prefix.len();
        if let Some(m) = last {
            moves[len] = m;
            len += 1;
        }
        let slot = slot(
            self,
            RawPlay {
                board: *board,
                moves,
                len: len as u8,
                outcome: o,
            },
        );
        if let Some(m) = last {
            apply_move(v, &mut slot.board, m);
        }
        grown(self);
    }
    #[inline(always)]
    fn drop_last(&mut self) {
        self.pop();
    }
    fn put_raw(&mut self, p: &RawPlay) {
        self.push(*p)
    }
}

/// splitmix64, for the key tables.
const fn mix(state: u64) -> u64 {
    let mut z = state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Random words for the additive board key: `[0]` a mover checker at own index `i`,
/// `[1]` an opponent checker, `[2]` an opponent checker pinned (Plakoto), `[3]` salt
/// for the depth of an intermediate node.
const fn key_tables() -> [[u64; 26]; 4] {
    let mut t = [[0u64; 26]; 4];
    let mut state: u64 = 0x7a76_6c69_2d65_6e67;
    let mut k = 0;
    while k < 4 {
        let mut i = 0;
        while i < 26 {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            t[k][i] = mix(state);
            i += 1;
        }
        k += 1;
    }
    t
}

/// The key of a board is `Σ count × word` over the tables of [`key_tables`] (mod
/// 2^64): equal boards have equal keys, and a move changes the key by a sum of a few
/// words, whatever the order of the moves. Keys are relative to the starting board.
static KEYS: [[u64; 26]; 4] = key_tables();

/// An open-addressing set of keys with an index each, cleared in O(1) by a generation
/// counter. The caller confirms equal keys by comparing boards, so the result is exact.
#[derive(Default)]
struct KeySet {
    slots: Vec<(u64, u32, u32)>, // (key, generation, index)
    generation: u32,
    len: usize,
}

impl KeySet {
    fn clear(&mut self) {
        if self.slots.is_empty() {
            self.slots = vec![(0, 0, 0); 1024];
        }
        self.len = 0;
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.slots.iter_mut().for_each(|s| s.1 = 0);
            self.generation = 1;
        }
    }

    /// Inserts `(key, index)` unless an entry with the same key for which
    /// `same(its index)` holds exists; returns true in that case (a duplicate).
    #[inline(always)]
    fn insert(&mut self, key: u64, index: u32, same: impl Fn(u32) -> bool) -> bool {
        if self.len * 2 >= self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = (key >> 40) as usize & mask;
        loop {
            let slot = &mut self.slots[i];
            if slot.1 != self.generation {
                *slot = (key, self.generation, index);
                self.len += 1;
                return false;
            }
            if slot.0 == key && same(slot.2) {
                return true;
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let live: Vec<(u64, u32)> = self
            .slots
            .iter()
            .filter(|s| s.1 == self.generation)
            .map(|s| (s.0, s.2))
            .collect();
        let n = self.slots.len() * 2;
        self.slots = vec![(0, 0, 0); n];
        self.generation = 1;
        let mask = n - 1;
        for (key, index) in live {
            let mut i = (key >> 40) as usize & mask;
            while self.slots[i].1 == 1 {
                i = (i + 1) & mask;
            }
            self.slots[i] = (key, 1, index);
        }
    }
}

/// Buffers of the generator where duplicates are removed by key (Plakoto, Fevga);
/// thread-local and reused, so generation allocates nothing once warmed up.
#[derive(Default)]
struct Scratch {
    /// Keys of the plays written so far (index into the sink).
    plays: KeySet,
    /// Keys of intermediate nodes already searched (index into `nodes`).
    seen: KeySet,
    nodes: Vec<Board>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// The mover's state at a node of the search: bit masks and the one count the rules
/// read, so that a node's moves are known without building its board.
#[derive(Clone, Copy)]
struct Node {
    /// Bit `i` (1..=25): the mover has a free checker at own index `i` (25 = bar).
    occ: u32,
    /// Bit `i`: an opposing checker pinned at `i` (Plakoto).
    opp_pinned: u32,
    /// The mover's checkers on its own 24 (Fevga, R8.2 first checker).
    own24: u8,
    /// Additive key of the board relative to the start (only where duplicates are
    /// removed by key).
    key: u64,
}

/// One generation: the starting board, the output, and what does not change within
/// the turn. `V` is the variant, `D` whether duplicates are removed by key. The
/// search passes each node's board down by reference (built only for nodes that
/// have moves) and its [`Node`] by value.
struct Gen<'a, S: Sink, const V: u8, const D: bool> {
    base: &'a Board,
    /// The output, moved in for the generation so that its length stays in a
    /// register.
    out: S,
    /// Length of `out` before this generation.
    start: usize,
    /// The moves from the start to the current node (only when the sink records
    /// moves).
    path: [RawMove; 4],
    /// Bit `i` (1..=24): the mover may land on own point `i` (R4, R5.3, R8.1); no
    /// move of the mover changes this within a turn.
    open: u32,
    /// `reach[d]`: sources from which a die `d` lands on an open point (not bearing
    /// off): `open << d` on own 1+d..=24.
    reach: [u32; 7],
    /// Bit `i`: a mover checker pinned at `i` (Plakoto); constant within a turn.
    own_pinned: u32,
    /// Depth of the plays kept so far (doubles: the deepest leaves win, R3).
    best: usize,
    /// Set when a rule whose effect depends on the order of the moves acted: R8.2
    /// held back a checker that could have moved, R8.3 rejected a move (Fevga), or the
    /// mother rule ended the game with dice left to play (Plakoto, R5.5). A generation
    /// in one order (non-increasing, or the restricted smaller-die-first plays) is
    /// complete when it stays false.
    order_mattered: std::cell::Cell<bool>,
    scratch: Option<&'a mut Scratch>,
}

/// Bits `lo..=hi` (empty when `lo > hi`).
#[inline(always)]
const fn bits(lo: usize, hi: usize) -> u32 {
    if lo > hi {
        return 0;
    }
    (u32::MAX >> (31 - hi)) & !((1u32 << lo) - 1)
}

/// A level of a double's search (`$depth` moves played, board `b`): for each legal
/// source in `s`, the child is a play if the game ended or it has no move (R3: kept
/// if deepest), else its board is built and the next level searches it. With `NI`,
/// a child's sources are at most its parent's source (non-increasing order);
/// otherwise every order is searched and a child equal to one searched before at
/// the same depth is skipped.
macro_rules! double_level {
    ($name:ident, $depth:expr, $next:ident) => {
        #[inline(always)]
        fn $name<const NI: bool>(&mut self, b: &Board, n: Node, mut s: u32, die: u8) {
            const DEPTH: usize = $depth;
            let mut any = false;
            while s != 0 {
                if self.abandoned() {
                    return;
                }
                let from = high_bit(s);
                s &= !(1 << from);
                let (c, mv) = self.child(b, &n, from, die);
                if self.breaks_rules(&c) {
                    continue;
                }
                any = true;
                let o = self.outcome(&c);
                self.note_early_end(o);
                let mut s2 = if o.is_none() {
                    self.sources(&c, die)
                } else {
                    0
                };
                if NI {
                    s2 &= (2u32 << from) - 1;
                }
                if s2 == 0 {
                    self.leaf(b, DEPTH, Some(mv), c.key, o);
                    continue;
                }
                let mut nb = *b;
                self.build(&mut nb, DEPTH, mv);
                if NI || !self.seen_before(&nb, DEPTH + 1, c.key) {
                    self.$next::<NI>(&nb, c, s2, die);
                }
            }
            if !any {
                self.leaf(b, DEPTH, None, n.key, None);
            }
        }
    };
}

impl<'a, S: Sink, const V: u8, const D: bool> Gen<'a, S, V, D> {
    fn new(base: &'a Board, out: S, scratch: Option<&'a mut Scratch>) -> Self {
        let open = bits(1, 24)
            & match V {
                // Portes and Plakoto: fewer than two opposing checkers (R4, R5.3) ...
                PORTES | PLAKOTO => below_mask::<2>(&base.opp),
                // ... Fevga: none (R8.1).
                _ => below_mask::<1>(&base.opp),
            }
            & !(if V == PLAKOTO { base.own_pinned } else { 0 }); // R5.3: a pinner
        let start = out.count();
        Gen {
            base,
            out,
            start,
            path: [RawMove::default(); 4],
            open,
            reach: [0; 7],
            own_pinned: if V == PLAKOTO { base.own_pinned } else { 0 },
            best: 0,
            order_mattered: std::cell::Cell::new(false),
            scratch,
        }
    }

    /// Prepares the moves of `die` ([`Self::reach`]).
    #[inline(always)]
    fn prepare(&mut self, die: u8) {
        let d = die as usize;
        self.reach[d] = (self.open << d) & bits(d + 1, 24);
    }

    /// The state of the starting board.
    fn root(&self) -> Node {
        let b = self.base;
        Node {
            occ: !below_mask::<1>(&b.own) & bits(1, 25),
            opp_pinned: if V == PLAKOTO { b.opp_pinned } else { 0 },
            own24: b.own[24],
            key: 0,
        }
    }

    /// Legal sources for `die` at node `n`, bit `i` for own index `i`: the bar first
    /// (R4), the Fevga first checker (R8.2), moves landing on open points, and bearing
    /// off when every checker (pinned ones and the bar included) is home: the exact
    /// die, or a larger die from the highest point (R6, R5.4). R8.3 is checked after
    /// the move ([`Self::breaks_rules`]).
    #[inline(always)]
    fn sources(&self, n: &Node, die: u8) -> u32 {
        let d = die as usize;
        let occ = n.occ;
        if V == PORTES && occ >> BAR & 1 != 0 {
            return (self.open >> (BAR - d) & 1) << BAR;
        }
        let mut s = occ & self.reach[d];
        let high = high_bit(occ | self.own_pinned);
        if high <= 6 {
            s |= occ & (1 << d);
            if high < d {
                s |= occ & (1 << high);
            }
        }
        if V == FEVGA && n.own24 == CHECKERS - 1 {
            let r = occ & RUNNER_ZONE;
            if r != 0 {
                let runner = s & 1 << high_bit(r);
                if runner != s {
                    self.order_mattered.set(true);
                }
                s = runner;
            }
        }
        s
    }

    /// The state after moving a checker from `from` by `die` at node `n` (board
    /// `b`), and the move. Builds no board.
    #[inline(always)]
    fn child(&self, b: &Board, n: &Node, from: usize, die: u8) -> (Node, RawMove) {
        let to = from.saturating_sub(die as usize);
        let mut c = *n;
        let emptied = b.own[from] == 1;
        c.occ &= !((emptied as u32) << from);
        c.occ |= (1 << to) & !1;
        if V == FEVGA {
            c.own24 -= (from == 24) as u8;
        }
        // A lone opposing checker on an open point is hit or pinned (Fevga: such a
        // point is closed).
        let hit = V != FEVGA && V != FEVGA_COMMUTE && to != OFF && b.opp[to] == 1;
        if hit {
            if V == PLAKOTO {
                c.opp_pinned |= 1 << to;
            }
            if D {
                let k = if V == PLAKOTO {
                    KEYS[2][to]
                } else {
                    KEYS[1][BAR]
                };
                c.key = c.key.wrapping_add(k).wrapping_sub(KEYS[1][to]);
            }
        }
        if V == PLAKOTO && emptied && c.opp_pinned >> from & 1 != 0 {
            c.opp_pinned &= !(1 << from);
            if D {
                c.key = c
                    .key
                    .wrapping_add(KEYS[1][from])
                    .wrapping_sub(KEYS[2][from]);
            }
        }
        if D {
            c.key = c.key.wrapping_add(KEYS[0][to]).wrapping_sub(KEYS[0][from]);
        }
        let mv = RawMove {
            from: from as u8,
            to: to as u8,
            die,
            hit,
        };
        (c, mv)
    }

    /// Makes `mv` on `b` (a copy of a node `depth` moves deep), recording the move as
    /// `path[depth]`.
    #[inline(always)]
    fn build(&mut self, b: &mut Board, depth: usize, mv: RawMove) {
        if S::MOVES {
            self.path[depth] = mv;
        }
        apply_move(variant_of(V), b, mv);
    }

    /// R8.3: the move just made closed the mover's whole start quarter (Fevga).
    #[inline(always)]
    fn breaks_rules(&self, c: &Node) -> bool {
        let closed = V == FEVGA && c.occ & QUARTER == QUARTER;
        if closed {
            self.order_mattered.set(true);
        }
        closed
    }

    /// Plakoto: a move with dice still to play ended the game by the mother rule
    /// (R5.5), which another order of the same moves might not have done.
    #[inline(always)]
    fn note_early_end(&self, o: Option<RelOutcome>) {
        if V == PLAKOTO
            && matches!(
                o,
                Some(RelOutcome::Draw)
                    | Some(RelOutcome::Win {
                        reason: OutcomeReason::MotherPinned,
                        ..
                    })
            )
        {
            self.order_mattered.set(true);
        }
    }

    /// A one-order generation (no key) of Plakoto or Fevga in which an order-dependent
    /// rule acted: its plays will be thrown away and every order searched instead
    /// ([`keyed`]), so the search stops.
    #[inline(always)]
    fn abandoned(&self) -> bool {
        (V == PLAKOTO || V == FEVGA) && !D && self.order_mattered.get()
    }

    /// The end of the game after the move just made (R7, R5.5), if any.
    #[inline(always)]
    fn outcome(&self, c: &Node) -> Option<RelOutcome> {
        // No checker left on the board (pinned ones included): all 15 are off.
        if c.occ | self.own_pinned == 0 {
            return Some(bear_off_win(self.base.opp[OFF]));
        }
        if V == PLAKOTO && c.opp_pinned & (1 << 1) != 0 {
            if self.own_pinned & (1 << 24) != 0 {
                return Some(RelOutcome::Draw);
            }
            if c.occ & (1 << 24) == 0 {
                return Some(RelOutcome::Win {
                    points: 2,
                    reason: OutcomeReason::MotherPinned,
                });
            }
        }
        None
    }

    /// Writes a play: `b` (a node `depth` moves deep, after `path[..depth]`) and then
    /// `last`; where duplicates are removed by key, takes it back if an equal board
    /// was written before.
    #[inline(always)]
    fn emit(
        &mut self,
        b: &Board,
        depth: usize,
        last: Option<RawMove>,
        key: u64,
        o: Option<RelOutcome>,
    ) {
        self.out.put(variant_of(V), b, &self.path[..depth], last, o);
        if D {
            let i = self.out.count() - 1;
            let out = &self.out;
            let dup = self
                .scratch
                .as_deref_mut()
                .expect("scratch where D")
                .plays
                .insert(key, i as u32, |k| {
                    out.board_at(k as usize) == out.board_at(i)
                });
            if dup {
                self.out.drop_last();
            }
        }
    }

    /// A leaf of a double's search: `b` (a node `depth` moves deep) then `last`, or
    /// `b` itself when `last` is `None`. Kept if as deep as the deepest so far (R3).
    #[inline(always)]
    fn leaf(
        &mut self,
        b: &Board,
        depth: usize,
        last: Option<RawMove>,
        key: u64,
        o: Option<RelOutcome>,
    ) {
        let len = depth + last.is_some() as usize;
        if len < self.best {
            return;
        }
        if len > self.best {
            self.out.cut(self.start);
            self.best = len;
            if D {
                self.scratch.as_deref_mut().expect("scratch").plays.clear();
            }
        }
        self.emit(b, depth, last, key, o);
    }

    /// Whether an intermediate node equal to `b` (same board, same depth) was searched
    /// already; records it otherwise.
    #[inline(always)]
    fn seen_before(&mut self, b: &Board, depth: usize, key: u64) -> bool {
        let s = self.scratch.as_deref_mut().expect("scratch");
        let key = key.wrapping_add(KEYS[3][depth]);
        let index = s.nodes.len() as u32;
        let nodes = &s.nodes;
        if s.seen.insert(key, index, |i| nodes[i as usize] == *b) {
            return true;
        }
        s.nodes.push(*b);
        false
    }

    double_level!(d0, 0, d1);
    double_level!(d1, 1, d2);
    double_level!(d2, 2, d3);

    /// The last level of a double: node `n` (board `b`, three moves played) with
    /// legal sources `s`; every move gives a play of four moves.
    #[inline(always)]
    fn d3<const NI: bool>(&mut self, b: &Board, n: Node, mut s: u32, die: u8) {
        if V != FEVGA && !D {
            // Every source gives a play of four moves, the deepest possible (R3).
            if self.best < 4 {
                self.out.cut(self.start);
                self.best = 4;
            }
            while s != 0 {
                let from = high_bit(s);
                s &= !(1 << from);
                let (c, mv) = self.child(b, &n, from, die);
                let o = self.outcome(&c);
                self.emit(b, 3, Some(mv), c.key, o);
            }
            return;
        }
        let mut any = false;
        while s != 0 {
            let from = high_bit(s);
            s &= !(1 << from);
            let (c, mv) = self.child(b, &n, from, die);
            if self.breaks_rules(&c) {
                continue;
            }
            any = true;
            let o = self.outcome(&c);
            self.leaf(b, 3, Some(mv), c.key, o);
        }
        if !any {
            self.leaf(b, 3, None, n.key, None);
        }
    }

    /// Every play of a double: four levels of the search, one function each, so that
    /// the compiler inlines them into nested loops.
    fn doubles<const NI: bool>(&mut self, die: u8) {
        self.prepare(die);
        let root = self.root();
        let s = self.sources(&root, die);
        let base = self.base;
        self.d0::<NI>(base, root, s, die);
    }

    /// Every play of a non-double: both dice if possible, else the larger die, else
    /// the smaller, else a pass (R3); `second` says how the smaller-die-first plays
    /// are found.
    fn non_double(&mut self, high: u8, low: u8, second: Second) {
        let restricted = second != Second::Full;
        self.prepare(high);
        self.prepare(low);
        let root = self.root();
        let base = self.base;
        // A: the larger die first.
        let mut s = self.sources(&root, high);
        while s != 0 {
            if self.abandoned() {
                return;
            }
            let i = high_bit(s);
            s &= !(1 << i);
            let (c, mv) = self.child(base, &root, i, high);
            let o = self.outcome(&c);
            self.note_early_end(o);
            if !self.breaks_rules(&c) && o.is_none() {
                let mut s2 = self.sources(&c, low);
                if !D {
                    s2 &= !self.a_skip(&root, i, high, low);
                }
                if s2 != 0 {
                    let mut b1 = *base;
                    self.build(&mut b1, 0, mv);
                    self.second(&b1, &c, s2, low);
                }
            }
        }
        // B: the smaller die first.
        let bar = if V == PORTES { base.own[BAR] } else { 0 };
        if bar < 2 {
            let mut s = self.sources(&root, low);
            while s != 0 {
                if self.abandoned() {
                    return;
                }
                let i = high_bit(s);
                s &= !(1 << i);
                let (c, mv) = self.child(base, &root, i, low);
                let o = self.outcome(&c);
                self.note_early_end(o);
                if self.breaks_rules(&c) || o.is_some() {
                    continue;
                }
                let landed = i.saturating_sub(low as usize);
                let all = self.sources(&c, high);
                let s2 = if bar == 1 {
                    // Entered from the bar: only the same checker moving on can repeat
                    // a play of A (R4 bar first).
                    let dup = V == PORTES && self.b_continuation_is_duplicate(i, high, low);
                    all & !((dup as u32) << landed)
                } else if restricted {
                    // Bear-offs with the larger die, then the same checker moving on
                    // from a point that was empty (elsewhere both orders give the
                    // same plays, already found by A).
                    let mut s2 = all & bits(1, high as usize);
                    if !D {
                        let mut t = s2;
                        while t != 0 {
                            let j = high_bit(t);
                            t &= !(1 << j);
                            if self.b_bearoff_is_duplicate(&root, i, j, high, low) {
                                s2 &= !(1 << j);
                            }
                        }
                    }
                    s2
                } else {
                    all
                };
                // The same checker moving on from a point that was empty, when A
                // cannot give that play.
                let cont = restricted
                    && bar == 0
                    && landed > high as usize
                    && base.own[landed] == 0
                    && all >> landed & 1 != 0
                    && (D || !self.b_continuation_is_duplicate(i, high, low));
                let cont = (cont as u32) << landed;
                if s2 | cont == 0 {
                    continue;
                }
                let mut b1 = *base;
                self.build(&mut b1, 0, mv);
                if second == Second::ContinuationFirst {
                    self.second(&b1, &c, cont, high);
                    self.second(&b1, &c, s2, high);
                } else {
                    self.second(&b1, &c, s2, high);
                    self.second(&b1, &c, cont, high);
                }
            }
        }
        if self.out.count() > self.start || self.abandoned() {
            return;
        }
        // No play uses both dice: every single move of the larger die, else of the
        // smaller one, else a pass (R3).
        for die in [high, low] {
            let mut s = self.sources(&root, die);
            while s != 0 {
                let i = high_bit(s);
                s &= !(1 << i);
                let (c, mv) = self.child(base, &root, i, die);
                if !self.breaks_rules(&c) {
                    let o = self.outcome(&c);
                    self.emit(base, 0, Some(mv), c.key, o);
                }
            }
            if self.out.count() > self.start {
                return;
            }
        }
        self.emit(base, 0, None, 0, None);
    }

    /// The second move of a non-double from node `c` (board `b1`, one move played),
    /// from the sources `s`, each written as a play.
    #[inline(always)]
    fn second(&mut self, b1: &Board, c: &Node, mut s: u32, die: u8) {
        while s != 0 {
            let j = high_bit(s);
            s &= !(1 << j);
            let (c2, mv) = self.child(b1, c, j, die);
            if !self.breaks_rules(&c2) {
                let o = self.outcome(&c2);
                self.emit(b1, 1, Some(mv), c2.key, o);
            }
        }
    }

    /// Where moves commute: larger die first from `i`, then the smaller from
    /// `p = i + low`, gives the same board as the checker on `p` playing both dice
    /// (`p/p-high/i-high`), which comes earlier (a higher first source), when that path
    /// is legal and its middle landing changes nothing: in Portes a blot there would be
    /// hit; in Plakoto a blot there is pinned and freed again as the checker moves on
    /// (R5.2). Returns the source bit to skip (0 if none).
    #[inline(always)]
    fn a_skip(&self, root: &Node, i: usize, high: u8, low: u8) -> u32 {
        let p = i + low as usize;
        let h = high as usize;
        if p > 24 || p <= h || root.occ >> BAR & 1 != 0 {
            return 0;
        }
        let mid = p - h;
        let same = self.open >> mid & 1 != 0 && !self.hits(mid);
        (same as u32) << p
    }

    /// Whether a checker passing through `i` (landing and moving on) changes the
    /// opponent's checkers there: a Portes hit.
    #[inline(always)]
    fn hits(&self, i: usize) -> bool {
        V == PORTES && self.base.opp[i] == 1
    }

    /// Where moves commute: smaller die first from `i` and the same checker on with
    /// the larger die (`i/i-low/i-low-high`) gives the same board as
    /// `i/i-high/i-high-low`, found by A, when that path is legal and neither path
    /// hits on its middle point (see [`Self::a_skip`]).
    #[inline(always)]
    fn b_continuation_is_duplicate(&self, i: usize, high: u8, low: u8) -> bool {
        let (h, l) = (high as usize, low as usize);
        if i <= h {
            return false;
        }
        let mid = i - h;
        self.open >> mid & 1 != 0 && !self.hits(mid) && !self.hits(i - l)
    }

    /// Where moves commute, no checker on the bar: whether the play "smaller die from
    /// `i`, then bear off from `j` with the larger die" is also a play with the larger
    /// die first (found by A). The other orders that give the same board: `j` off first, then
    /// `i` (the same two moves); with both checkers borne off, `i` off with the larger
    /// die and `j` with the smaller; and for the same checker (`j = i - low`), the
    /// larger die first from `i` and the smaller from `i - high`, hitting nothing.
    fn b_bearoff_is_duplicate(&self, root: &Node, i: usize, j: usize, high: u8, low: u8) -> bool {
        let (h, l) = (high as usize, low as usize);
        let own = &self.base.own;
        let occ0 = root.occ;
        let without = |occ: u32, p: usize| {
            if own[p] == 1 {
                occ & !(1 << p)
            } else {
                occ
            }
        };
        let pinned = self.own_pinned;
        let bear_off = |occ: u32, from: usize, die: usize| {
            let high_pt = high_bit(occ | pinned);
            occ >> from & 1 != 0 && high_pt <= 6 && (from == die || (from < die && from == high_pt))
        };
        if bear_off(occ0, j, h) {
            // A checker left on `i` (`without` keeps the bit when two stood on `j`);
            // the landing `i - low` was open for B's first move.
            let occ = without(occ0, j);
            let ok = if i > l {
                occ >> i & 1 != 0
            } else {
                bear_off(occ, i, l)
            };
            if ok {
                return true;
            }
        }
        if i <= l && j <= l && i != j && bear_off(occ0, i, h) && bear_off(without(occ0, i), j, l) {
            return true;
        }
        if j + l == i && i > h {
            let mid = i - h;
            if self.open >> mid & 1 != 0
                && !self.hits(mid)
                && !self.hits(j)
                && bear_off(without(occ0, i) | 1 << mid, mid, l)
            {
                return true;
            }
        }
        false
    }

    /// Every legal single move by `die` from the starting board, to `f`.
    /// [`play_sequence`]: `moves` followed node by node as the search follows them.
    fn sequence(&mut self, moves: &[RawMove]) -> Option<(Board, Option<RelOutcome>)> {
        let mut node = self.root();
        let mut board = *self.base;
        let mut o = None;
        for m in moves {
            let from = m.from as usize;
            if o.is_some() || !(1..=6).contains(&m.die) || !(1..=BAR).contains(&from) {
                return None;
            }
            self.prepare(m.die);
            if self.sources(&node, m.die) >> from & 1 == 0 {
                return None;
            }
            let (c, mv) = self.child(&board, &node, from, m.die);
            if self.breaks_rules(&c) {
                return None;
            }
            o = self.outcome(&c);
            apply_move(variant_of(V), &mut board, mv);
            node = c;
        }
        Some((board, o))
    }

    fn steps(
        &mut self,
        die: u8,
        from: u32,
        f: &mut impl FnMut(Board, RawMove, Option<RelOutcome>),
    ) {
        self.prepare(die);
        let root = self.root();
        let base = self.base;
        let mut s = self.sources(&root, die) & from;
        while s != 0 {
            let from = high_bit(s);
            s &= !(1 << from);
            let (c, mv) = self.child(base, &root, from, die);
            if !self.breaks_rules(&c) {
                let o = self.outcome(&c);
                let mut b = *base;
                apply_move(variant_of(V), &mut b, mv);
                f(b, mv, o);
            }
        }
    }
}

/// How a non-double's plays with the smaller die first are found (after those with
/// the larger die first).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Second {
    /// Moves commute ([`moves_commute`]): only bear-offs with the larger die, then the
    /// same checker moving on from a point that was empty; elsewhere both orders give
    /// the same plays. The order of the generator this one replaced, where
    /// [`non_increasing_is_complete`] held for the smaller die.
    Restricted,
    /// The same plays in the order that generator gave where it searched every second
    /// move: the checker moving on first, then the bear-offs.
    ContinuationFirst,
    /// Every second move, duplicates removed by key.
    Full,
}

/// Whether the order of this turn's moves cannot change which plays exist: then a
/// double's moves may be generated in non-increasing source order, and a
/// non-double's plays with the smaller die first only add what [`Second::Restricted`]
/// tries. Always in Portes. In Plakoto unless the mother rule could end the game
/// mid-turn (R5.5): a lone opposing checker on own 1 that some checker can reach
/// while the mover's own 24 can be emptied this turn (or its own mother is pinned),
/// or the opposing mother already pinned while own 24 can be emptied. In Fevga unless
/// the first-checker rule applies (R8.2: 15 on own 24, or 14 with the other on own
/// 12..=23), or the start quarter could be closed (R8.3: its occupied points plus
/// the empty ones a checker can reach, at most one per move, make six).
fn moves_commute(variant: Variant, b: &Board, dice: Dice) -> bool {
    if dice.is_double() {
        double_commutes(variant, b, dice.die1(), 4)
    } else {
        let (h, l) = (dice.high() as usize, dice.low() as usize);
        commute_with(variant, b, 2, &[l, h, h + l])
    }
}

/// [`moves_commute`] for `moves` moves of a double `die` from `b`.
#[inline]
fn double_commutes(variant: Variant, b: &Board, die: u8, moves: usize) -> bool {
    let d = die as usize;
    let sums = [d, 2 * d, 3 * d, 4 * d];
    commute_with(variant, b, moves, &sums[..moves])
}

/// [`moves_commute`] for `moves` moves whose distances one checker may cover are
/// `sums`.
fn commute_with(variant: Variant, b: &Board, moves: usize, sums: &[usize]) -> bool {
    match variant {
        Variant::Portes => true,
        Variant::Plakoto => {
            let reached = |q: usize| sums.iter().any(|&s| q + s <= 24 && b.own[q + s] > 0);
            let own24_may_empty = b.own[24] as usize <= moves;
            let own_mother_pinned = b.own_pinned >> 24 & 1 == 1;
            let may_pin_mother = b.opp[1] == 1 && reached(1);
            let mother_pinned = b.opp_pinned >> 1 & 1 == 1;
            !(may_pin_mother && (own24_may_empty || own_mother_pinned))
                && !(mother_pinned && own24_may_empty)
        }
        Variant::Fevga => {
            // Bit masks: `occ` bit q for own[q] > 0 (1..=24); a checker reaches the
            // empty point q when `occ` has bit q + s for some distance s.
            let occ = occupied_points(b);
            let first_checker =
                b.own[24] == CHECKERS || (b.own[24] == CHECKERS - 1 && occ & RUNNER_ZONE != 0);
            if first_checker {
                return false;
            }
            let reached = sums.iter().fold(0, |r, &s| r | occ >> s);
            let occupied = (occ & QUARTER).count_ones() as usize;
            let fillable = (QUARTER & !occ & reached).count_ones() as usize;
            occupied + fillable.min(moves) < 6
        }
    }
}

/// The condition under which the generator this one replaced restricted the smaller-die-
/// first plays of a non-double (kept to give the same order, [`Second::Restricted`]);
/// it implies [`moves_commute`]. True in Portes: no move's legality depends on a move from a
/// lower point (closed points do not change within a turn, the bar is the highest
/// source, and a lower move never brings a higher checker home nor changes the highest
/// point). True in Plakoto unless the mother rule could end the game mid-turn, which
/// makes the order matter (R5.5). In Fevga only when neither order-dependent rule can
/// apply this turn: the first-checker rule (R8.2) needs 14 or 15 checkers on own 24,
/// and the start-quarter prime (R8.3) needs all six points of own 19..24 occupied,
/// which cannot happen when the occupied ones plus the empty ones that a move of `die`
/// can reach (own 19..=24-die) are fewer than six.
#[inline]
fn non_increasing_is_complete(variant: Variant, b: &Board, die: u8) -> bool {
    match variant {
        Variant::Portes => true,
        Variant::Plakoto => b.opp[1] != 1 && b.opp_pinned & (1 << 1) == 0,
        Variant::Fevga => {
            let occ = occupied_points(b);
            let occupied = (occ & QUARTER).count_ones();
            let reachable = (!occ & bits(19, 24 - die as usize)).count_ones();
            b.own[24] < CHECKERS - 1 && occupied + reachable < 6
        }
    }
}

/// Generation into either sink: the sink is moved into the generator and back.
fn run<S: Sink + Default>(variant: Variant, board: &Board, dice: Dice, out: &mut S) {
    let sink = std::mem::take(out);
    *out = match variant {
        Variant::Portes => {
            let mut g = Gen::<S, PORTES, false>::new(board, sink, None);
            if dice.is_double() {
                g.doubles::<true>(dice.die1());
            } else {
                g.non_double(dice.high(), dice.low(), Second::Restricted);
            }
            g.out
        }
        Variant::Plakoto => keyed::<S, PLAKOTO>(board, dice, sink),
        Variant::Fevga => fevga(board, dice, sink),
    }
}

/// Fevga: the must-open search where R8.4 applies, else [`keyed`]. A function of its
/// own, so that its code does not change how the other variants' code is compiled.
#[inline(never)]
fn fevga<S: Sink>(board: &Board, dice: Dice, mut sink: S) -> S {
    match fevga_trapped_prime(board) {
        Some(prime) => {
            let mut plays = Vec::new();
            generate_must_open(Variant::Fevga, board, dice, &prime, &mut plays);
            for p in &plays {
                sink.put_raw(p);
            }
            sink
        }
        None => keyed::<S, FEVGA>(board, dice, sink),
    }
}

/// Plakoto and Fevga: in one order (doubles non-increasing, non-doubles with the
/// restricted smaller-die-first plays) where the moves commute, or where they might
/// not but no order-dependent rule acted during that generation (its plays are then
/// every play, in the same order: a play's first path in every order is its path in
/// that one); otherwise every order, with duplicates removed by key.
fn keyed<S: Sink, const V: u8>(board: &Board, dice: Dice, sink: S) -> S {
    let variant = variant_of(V);
    let commute = moves_commute(variant, board, dice);
    if V == FEVGA && commute {
        // Neither R8.2 nor R8.3 can act this turn: the same generation without them.
        return one_order::<S, FEVGA_COMMUTE>(board, dice, sink).0;
    }
    let start = sink.count();
    let (mut sink, order_mattered) = one_order::<S, V>(board, dice, sink);
    if commute || !order_mattered {
        // (Where the moves commute, no order-dependent rule can act: `order_mattered`
        // stays false and the one-order generation is never abandoned.)
        return sink;
    }
    sink.cut(start);
    every_order::<S, V>(board, dice, sink)
}

/// The generation in one order (doubles non-increasing; non-doubles with the
/// restricted smaller-die-first plays, in the order of [`non_increasing_is_complete`]),
/// and whether an order-dependent rule acted during it (`Gen::order_mattered`).
#[inline(always)]
fn one_order<S: Sink, const V: u8>(board: &Board, dice: Dice, sink: S) -> (S, bool) {
    let variant = variant_of(V);
    let mut g = Gen::<S, V, false>::new(board, sink, None);
    if dice.is_double() {
        g.doubles::<true>(dice.die1());
    } else if non_increasing_is_complete(variant, board, dice.low()) {
        g.non_double(dice.high(), dice.low(), Second::Restricted);
    } else {
        g.non_double(dice.high(), dice.low(), Second::ContinuationFirst);
    }
    let order_mattered = g.order_mattered.get();
    (g.out, order_mattered)
}

/// Every order of the moves, duplicates removed by key.
fn every_order<S: Sink, const V: u8>(board: &Board, dice: Dice, sink: S) -> S {
    SCRATCH.with(|s| {
        let s = &mut *s.borrow_mut();
        s.plays.clear();
        s.seen.clear();
        s.nodes.clear();
        let mut g = Gen::<S, V, true>::new(board, sink, Some(s));
        if dice.is_double() {
            g.doubles::<false>(dice.die1());
        } else {
            g.non_double(dice.high(), dice.low(), Second::Full);
        }
        g.out
    })
}

/// Bit `q` (1..=24): the mover has a checker on own point `q`.
#[inline(always)]
fn occupied_points(b: &Board) -> u32 {
    !below_mask::<1>(&b.own) & bits(1, 24)
}

/// R8.4: if all 15 opposing checkers stand on one point and the six points in front
/// of them (in their direction) are all the mover's, returns those six own points.
#[inline(always)]
fn fevga_trapped_prime(b: &Board) -> Option<[usize; 6]> {
    // All 15 on one point: the opponent occupies exactly one point (a mask test,
    // since this runs on every Fevga call).
    let opp = !below_mask::<1>(&b.opp) & bits(1, 24);
    if opp == 0 || opp & (opp - 1) != 0 {
        return None;
    }
    let x = opp.trailing_zeros() as usize;
    if b.opp[x] != CHECKERS {
        return None;
    }
    // The opponent moves to lower own indices with wrap-around (both sides run the
    // same way in Fevga); it needs six points before its home ends.
    let opp_own = super::board::flip_index(Variant::Fevga, x);
    if opp_own < 7 {
        return None;
    }
    let mut pts = [0; 6];
    for (k, p) in pts.iter_mut().enumerate() {
        *p = (x + 24 - k - 2) % 24 + 1;
    }
    pts.iter().all(|&p| b.own[p] > 0).then_some(pts)
}

/// R8.4: complete sequences that break the trapping prime are preferred; among them
/// (or among all, when none breaks it) maximum dice and larger die apply (R3).
#[cold]
#[inline(never)]
fn generate_must_open(
    variant: Variant,
    board: &Board,
    dice: Dice,
    prime: &[usize; 6],
    out: &mut Vec<RawPlay>,
) {
    let dice_seq: Vec<u8> = if dice.is_double() {
        vec![dice.die1(); 4]
    } else {
        vec![dice.high(), dice.low()]
    };
    // Depth-first over every order; each terminal (complete sequence) is recorded with
    // whether it used the larger die first-or-only.
    let mut terminals: Vec<(RawPlay, bool)> = Vec::new();
    fn rec(
        variant: Variant,
        node: RawPlay,
        remaining: &[u8],
        used_high: bool,
        high: u8,
        terminals: &mut Vec<(RawPlay, bool)>,
    ) {
        let mut any = false;
        if node.outcome.is_none() {
            let mut tried = [false; 7];
            for (k, &die) in remaining.iter().enumerate() {
                if tried[die as usize] {
                    continue;
                }
                tried[die as usize] = true;
                let mut rest: Vec<u8> = remaining.to_vec();
                rest.remove(k);
                for_each_step(variant, &node.board, die, |nb, mv, outcome| {
                    any = true;
                    let mut child = node;
                    child.board = nb;
                    child.moves[node.len as usize] = mv;
                    child.len += 1;
                    child.outcome = outcome;
                    rec(
                        variant,
                        child,
                        &rest,
                        used_high || die == high,
                        high,
                        terminals,
                    );
                });
            }
        }
        if !any {
            terminals.push((node, used_high));
        }
    }
    let root = RawPlay {
        board: *board,
        moves: [RawMove::default(); 4],
        len: 0,
        outcome: None,
    };
    rec(variant, root, &dice_seq, false, dice.high(), &mut terminals);
    let breaks = |p: &RawPlay| prime.iter().any(|&i| p.board.own[i] == 0);
    if terminals.iter().any(|(p, _)| breaks(p)) {
        terminals.retain(|(p, _)| breaks(p));
    }
    let max_len = terminals.iter().map(|(p, _)| p.len).max().unwrap_or(0);
    terminals.retain(|(p, _)| p.len == max_len);
    if !dice.is_double() && max_len == 1 && terminals.iter().any(|(_, h)| *h) {
        terminals.retain(|(_, h)| *h);
    }
    let start = out.len();
    for (p, _) in terminals {
        if !out[start..].iter().any(|q| q.board == p.board) {
            out.push(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::random_positions;

    /// `play_sequence` and `for_each_step_from` against `for_each_step` (R3's single
    /// moves, R5.5's end inside a turn): on boards of seeded random games of each
    /// variant, every first move of one die and every second move of the other gives
    /// the same board and outcome through `play_sequence`, a source mask keeps exactly
    /// its moves, and a move from an empty point or after the game ended is refused.
    #[test]
    fn single_moves_followed_as_sequences() {
        let mut pairs = 0;
        for variant in Variant::ALL {
            for (i, p) in random_positions(variant, 34, 300).iter().enumerate() {
                let b = Board::from_position(p, p.turn);
                let (d1, d2) = (1 + (i % 6) as u8, 1 + (i / 6 % 6) as u8);
                let mut all = Vec::new();
                for_each_step(variant, &b, d1, |nb, m, o| all.push((nb, m, o)));
                let odd = (1..=BAR)
                    .filter(|f| f % 2 == 1)
                    .fold(0u32, |m, f| m | 1 << f);
                let mut some = Vec::new();
                for_each_step_from(variant, &b, d1, odd, |nb, m, o| some.push((nb, m, o)));
                let want: Vec<_> = all.iter().filter(|s| s.1.from % 2 == 1).copied().collect();
                assert_eq!(some, want, "{variant} {b:?} {d1}");
                for &(nb, m1, o1) in &all {
                    assert_eq!(play_sequence(variant, &b, &[m1]), Some((nb, o1)));
                    for_each_step(variant, &nb, d2, |nb2, m2, o2| {
                        let got = play_sequence(variant, &b, &[m1, m2]);
                        assert_eq!(
                            got,
                            o1.is_none().then_some((nb2, o2)),
                            "{b:?} {m1:?} {m2:?}"
                        );
                        pairs += 1;
                    });
                }
                let empty = (1..=BAR).find(|&f| b.own[f] == 0).unwrap();
                let m = RawMove {
                    from: empty as u8,
                    to: empty.saturating_sub(d1 as usize) as u8,
                    die: d1,
                    hit: false,
                };
                assert_eq!(play_sequence(variant, &b, &[m]), None, "{b:?} {m:?}");
            }
        }
        assert!(pairs > 10_000, "{pairs}");
    }

    fn fevga_boards(seed: u64, n: usize) -> Vec<Board> {
        random_positions(Variant::Fevga, seed, n)
            .iter()
            .map(|p| Board::from_position(p, p.turn))
            .collect()
    }

    /// The Fevga fast path (`FEVGA_COMMUTE`: R8.2 and R8.3 checks compiled out where
    /// `moves_commute` holds) against the general Fevga generator with those checks,
    /// and against the every-order search: the same plays (boards, moves, outcome) in
    /// the same order, and the same set of boards as every order gives; the general
    /// generator's R8.2/R8.3 checks never act there.
    #[test]
    fn fevga_fast_path_matches_the_general_path() {
        let mut commuting = 0;
        let mut plays = 0;
        for seed in [5, 77, 2026] {
            for b in fevga_boards(seed, 500) {
                if fevga_trapped_prime(&b).is_some() {
                    continue;
                }
                for dice in Dice::all_rolls() {
                    if !moves_commute(Variant::Fevga, &b, dice) {
                        continue;
                    }
                    commuting += 1;
                    let (fast, _) = one_order::<Vec<RawPlay>, FEVGA_COMMUTE>(&b, dice, Vec::new());
                    let (general, mattered) =
                        one_order::<Vec<RawPlay>, FEVGA>(&b, dice, Vec::new());
                    assert!(
                        !mattered,
                        "R8.2/R8.3 acted where moves commute: {b:?} {dice}"
                    );
                    assert_eq!(fast, general, "{b:?} {dice}");
                    let all = every_order::<Vec<RawPlay>, FEVGA>(&b, dice, Vec::new());
                    let set = |v: &[RawPlay]| {
                        let mut boards: Vec<Board> = v.iter().map(|p| p.board).collect();
                        boards.sort_by_key(|q| (q.own, q.opp));
                        boards
                    };
                    assert_eq!(set(&fast), set(&all), "{b:?} {dice}");
                    let (boards, _) = one_order::<Vec<Board>, FEVGA_COMMUTE>(&b, dice, Vec::new());
                    let want: Vec<Board> = fast.iter().map(|p| p.board).collect();
                    assert_eq!(boards, want, "{b:?} {dice}");
                    plays += fast.len();
                }
            }
        }
        // Most Fevga turns take the fast path (about 92 % of random-play calls).
        assert!(commuting > 25_000, "{commuting}");
        assert!(plays > 300_000, "{plays}");
    }

    /// Where the moves might not commute (Plakoto: the mother rule, R5.5; Fevga: R8.2,
    /// R8.3), the public entry (one order, abandoned and replaced by every order as
    /// soon as such a rule acted) gives the boards of the every-order search, each
    /// once, with each play's moves legal in their order.
    #[test]
    fn order_dependent_turns_give_every_orders_plays() {
        for variant in [Variant::Plakoto, Variant::Fevga] {
            let mut checked = 0;
            let boards: Vec<Board> = random_positions(variant, 9, 600)
                .iter()
                .map(|p| Board::from_position(p, p.turn))
                .collect();
            for b in boards {
                if variant == Variant::Fevga && fevga_trapped_prime(&b).is_some() {
                    continue;
                }
                for dice in Dice::all_rolls() {
                    if moves_commute(variant, &b, dice) {
                        continue;
                    }
                    checked += 1;
                    let mut got = Vec::new();
                    generate(variant, &b, dice, &mut got);
                    let all = match variant {
                        Variant::Plakoto => {
                            every_order::<Vec<RawPlay>, PLAKOTO>(&b, dice, Vec::new())
                        }
                        _ => every_order::<Vec<RawPlay>, FEVGA>(&b, dice, Vec::new()),
                    };
                    let sorted = |v: &[RawPlay]| {
                        let mut x: Vec<Board> = v.iter().map(|p| p.board).collect();
                        x.sort_by_key(|q| (q.own, q.opp, q.own_pinned, q.opp_pinned));
                        x
                    };
                    assert_eq!(sorted(&got), sorted(&all), "{variant} {b:?} {dice}");
                    for p in &got {
                        let mut q = b;
                        for m in p.moves() {
                            let mut next = None;
                            for_each_step(variant, &q, m.die, |nb, mv, _| {
                                if mv == *m {
                                    next = Some(nb);
                                }
                            });
                            q = next.unwrap_or_else(|| panic!("{b:?} {dice} {:?}", p.moves()));
                        }
                        assert_eq!(q, p.board, "{variant} {b:?} {dice}");
                    }
                }
            }
            assert!(checked > 300, "{variant}: {checked}");
        }
    }
}
