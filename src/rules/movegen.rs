//! Legal plays: every rule of RULES.md about moving checkers lives in this file.
//!
//! - [`for_each_step`]: one checker moved by one die (R3 intermediate landings, R4 bar
//!   and hitting, R5.1–R5.3 pins, R5.5 mother, R6 bearing off, R8.1–R8.3 Fevga).
//! - [`generate`]: whole plays by levels, one level per die, one node per distinct
//!   board (R3: plays are distinct by resulting position): duplicates are removed by
//!   Zobrist key, or never arise where doubles can be generated in non-increasing
//!   source order. Maximum dice and larger die (R3) fall out of taking the deepest
//!   level; R8.4 (must open) filters complete sequences.
//!
//! Boards are mover-relative ([`Board`]); the caller mirrors them to pass the turn.

use super::board::{bear_off_win, Board, RelOutcome, BAR, OFF};
use super::position::CHECKERS;
use super::types::{Dice, Variant};
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

    fn root(board: Board) -> RawPlay {
        RawPlay {
            board,
            moves: [RawMove::default(); 4],
            len: 0,
            outcome: None,
        }
    }

    #[inline]
    fn child(&self, board: Board, mv: RawMove, outcome: Option<RelOutcome>) -> RawPlay {
        let mut moves = self.moves;
        moves[self.len as usize] = mv;
        RawPlay {
            board,
            moves,
            len: self.len + 1,
            outcome,
        }
    }
}

/// Whether the mover may land on own point `to` (1..=24).
/// R4 Portes: closed by 2+ opposing checkers. R5.3 Plakoto: closed by 2+ opposing
/// checkers or by one opposing checker that pins one of the mover's. R8.1 Fevga:
/// closed by any opposing checker.
#[inline]
fn is_open(variant: Variant, b: &Board, to: usize) -> bool {
    match variant {
        Variant::Portes => b.opp[to] < 2,
        Variant::Plakoto => b.opp[to] < 2 && b.own_pinned >> to & 1 == 0,
        Variant::Fevga => b.opp[to] == 0,
    }
}

/// R8.2: while the mover has 14 checkers on its start (own 24) and its other checker
/// stands on own 12..=23, only that checker may move. Returns its point.
#[inline]
fn fevga_runner(b: &Board) -> Option<usize> {
    if b.own[24] != CHECKERS - 1 {
        return None;
    }
    (12..=23).rev().find(|&p| b.own[p] > 0)
}

/// R8.3: the mover holds all six points of its own start quarter (own 19..=24).
#[inline]
fn fevga_start_prime(b: &Board) -> bool {
    b.own[19..=24].iter().all(|&n| n > 0)
}

/// Calls `f(board, move, outcome)` for every legal single move of one checker by `die`.
///
/// Rules applied here, per single die: bar first (R4), closed points (R4, R5.3,
/// R8.1), hitting (R4) and pinning (R5.1) with release when the last pinner leaves
/// (R5.2), bearing off only with all checkers home, exact die or larger die from the
/// highest occupied point, pinned checkers counting (R6, R5.4), the Fevga first
/// checker (R8.2) and start-quarter prime (R8.3), and the end of the game: 15 off
/// (R7) or the mother rule checked after every checker move (R5.5).
#[inline]
pub fn for_each_step(
    variant: Variant,
    b: &Board,
    die: u8,
    f: impl FnMut(Board, RawMove, Option<RelOutcome>),
) {
    for_each_step_in(variant, b, die, 1, BAR, f)
}

/// [`for_each_step`] restricted to sources in `min_from..=max_from` (used to skip
/// move orders that can only repeat plays already generated).
#[inline]
fn for_each_step_in(
    variant: Variant,
    b: &Board,
    die: u8,
    min_from: usize,
    max_from: usize,
    mut f: impl FnMut(Board, RawMove, Option<RelOutcome>),
) {
    let die_u = die as usize;
    // Sources: the bar when it holds checkers (R4), the Fevga runner (R8.2), or all.
    let (lo, hi) = if b.own[BAR] > 0 {
        (BAR, BAR)
    } else if let Some(p) = (variant == Variant::Fevga)
        .then(|| fevga_runner(b))
        .flatten()
    {
        (p, p)
    } else {
        (1, 24)
    };
    let (lo, hi) = (lo.max(min_from), hi.min(max_from));
    // Highest occupied own point, pinned checkers and the bar included (R6, R5.4):
    // sources are visited from the highest down, so the first occupied one found is
    // the highest free checker, unless a checker stands above the visited range.
    // Bearing off is impossible from a restricted source (bar or Fevga runner), whose
    // checker is outside home.
    let pinned_high = if b.own_pinned != 0 {
        31 - b.own_pinned.leading_zeros() as usize
    } else {
        0
    };
    let mut highest = usize::MAX;
    if hi < BAR {
        if let Some(above) = (hi + 1..=BAR).rev().find(|&i| b.own[i] > 0) {
            highest = above.max(pinned_high);
        }
    }
    let mut sources = occupied_mask(&b.own) & range_mask(lo, hi);
    while sources != 0 {
        let from = 31 - sources.leading_zeros() as usize;
        sources ^= 1 << from;
        if highest == usize::MAX {
            highest = from.max(pinned_high);
        }
        // Legality of the landing first, so that blocked moves copy nothing.
        let to = if from > die_u {
            let to = from - die_u;
            if !is_open(variant, b, to) {
                continue;
            }
            to
        } else {
            // Bearing off (R6): all home; exact die, or a larger die from the highest.
            if highest > 6 || (from < die_u && from != highest) {
                continue;
            }
            OFF
        };
        let mut nb = *b;
        nb.own[from] -= 1;
        nb.own[to] += 1;
        let mut hit = false;
        if to != OFF && b.opp[to] == 1 {
            match variant {
                Variant::Portes => {
                    nb.opp[to] = 0;
                    nb.opp[BAR] += 1;
                    hit = true;
                }
                Variant::Plakoto => {
                    nb.opp[to] = 0;
                    nb.opp_pinned |= 1 << to;
                    hit = true;
                }
                Variant::Fevga => {}
            }
        }
        if variant == Variant::Plakoto && nb.own[from] == 0 && nb.opp_pinned >> from & 1 == 1 {
            // R5.2: the last pinning checker left: the pinned checker is free again.
            nb.opp_pinned &= !(1 << from);
            nb.opp[from] += 1;
        }
        if variant == Variant::Fevga && fevga_start_prime(&nb) {
            continue; // R8.3, checked after every single die.
        }
        let outcome = if nb.own[OFF] == CHECKERS {
            Some(bear_off_win(nb.opp[OFF]))
        } else if variant == Variant::Plakoto {
            nb.mother_result()
        } else {
            None
        };
        let mv = RawMove {
            from: from as u8,
            to: to as u8,
            die,
            hit,
        };
        f(nb, mv, outcome);
    }
}

/// Bit `i` set when `counts[i] != 0`, for `i` in 0..=25 (SWAR over 8-byte words).
#[inline]
fn occupied_mask(counts: &[u8; 26]) -> u32 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const GATHER: u64 = 0x0102_0408_1020_4080;
    let mut mask = 0u32;
    for (w, chunk) in counts[..24].chunks_exact(8).enumerate() {
        let x = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        // High bit of each byte set when the byte is non-zero.
        let hi = ((x & LOW7).wrapping_add(LOW7) | x) & !LOW7;
        // Gather the eight high bits into one byte (bit k = byte k).
        let bits = ((hi >> 7).wrapping_mul(GATHER) >> 56) as u32;
        mask |= bits << (8 * w);
    }
    mask |= ((counts[24] != 0) as u32) << 24 | ((counts[25] != 0) as u32) << 25;
    mask
}

/// Bits `lo..=hi` set (empty when `lo > hi`).
#[inline]
fn range_mask(lo: usize, hi: usize) -> u32 {
    if lo > hi {
        return 0;
    }
    (u32::MAX >> (31 - hi)) & !((1u32 << lo) - 1)
}

/// R8.4: if all 15 opposing checkers stand on one point and the six points in front
/// of them (in their direction) are all the mover's, returns those six own points.
fn fevga_trapped_prime(b: &Board) -> Option<[usize; 6]> {
    let x = (1..=24).find(|&i| b.opp[i] == CHECKERS)?;
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

/// Zobrist tables: a random 64-bit word per (array, index, count) and per pin bit.
const fn zobrist_tables() -> ([[[u64; 16]; 26]; 2], [[u64; 26]; 2]) {
    let mut counts = [[[0u64; 16]; 26]; 2];
    let mut pins = [[0u64; 26]; 2];
    let mut state: u64 = 0x7a76_6c69_2d65_6e67; // splitmix64
    let mut side = 0;
    while side < 2 {
        let mut i = 0;
        while i < 26 {
            let mut n = 0;
            while n < 16 {
                state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                // Count 0 hashes to 0 so that an empty board has key 0.
                counts[side][i][n] = if n == 0 { 0 } else { z ^ (z >> 31) };
                n += 1;
            }
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            pins[side][i] = z ^ (z >> 31);
            i += 1;
        }
        side += 1;
    }
    (counts, pins)
}

static ZOBRIST: ([[[u64; 16]; 26]; 2], [[u64; 26]; 2]) = zobrist_tables();

#[inline]
fn zc(side: usize, i: usize, n: u8) -> u64 {
    ZOBRIST.0[side][i][(n & 15) as usize]
}

/// The Zobrist key of a whole board.
fn board_key(b: &Board) -> u64 {
    let mut k = 0;
    for i in 0..26 {
        k ^= zc(0, i, b.own[i]) ^ zc(1, i, b.opp[i]);
        if b.own_pinned >> i & 1 == 1 {
            k ^= ZOBRIST.1[0][i];
        }
        if b.opp_pinned >> i & 1 == 1 {
            k ^= ZOBRIST.1[1][i];
        }
    }
    k
}

/// The key of `child`, one move `mv` after `parent` whose key is `key`: only the
/// entries a single move can touch are updated.
#[inline]
fn child_key(key: u64, parent: &Board, child: &Board, mv: RawMove) -> u64 {
    let (from, to) = (mv.from as usize, mv.to as usize);
    let mut k = key
        ^ zc(0, from, parent.own[from])
        ^ zc(0, from, child.own[from])
        ^ zc(0, to, parent.own[to])
        ^ zc(0, to, child.own[to]);
    if mv.hit || parent.opp[from] != child.opp[from] {
        k ^= zc(1, to, parent.opp[to])
            ^ zc(1, to, child.opp[to])
            ^ zc(1, BAR, parent.opp[BAR])
            ^ zc(1, BAR, child.opp[BAR])
            ^ zc(1, from, parent.opp[from])
            ^ zc(1, from, child.opp[from]);
        let mut changed = parent.opp_pinned ^ child.opp_pinned;
        while changed != 0 {
            k ^= ZOBRIST.1[1][changed.trailing_zeros() as usize];
            changed &= changed - 1;
        }
    }
    k
}

/// A node of the search: a play so far and its board's key.
#[derive(Clone, Copy)]
struct Node {
    play: RawPlay,
    key: u64,
    /// Source of the last move (25 for the root): the bound of the next source when
    /// a double is generated in non-increasing source order.
    last_from: u8,
}

/// An open-addressing set of node indices keyed by Zobrist key, cleared in O(1) by a
/// generation counter. Equal keys are confirmed by comparing boards, so the result is
/// exact.
#[derive(Default)]
struct KeySet {
    slots: Vec<(u64, u32, u32)>, // (key, generation, index into the level)
    generation: u32,
}

impl KeySet {
    fn reset(&mut self, expected: usize) {
        let want = (expected * 2).next_power_of_two().max(1024);
        if self.slots.len() < want {
            self.slots = vec![(0, 0, 0); want];
            self.generation = 0;
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.slots.iter_mut().for_each(|s| s.1 = 0);
            self.generation = 1;
        }
    }

    /// Pushes `make()` onto `level` unless a node with board `board` (key `key`) is
    /// already there; the node is only built when it is new.
    #[inline]
    fn insert_with(
        &mut self,
        key: u64,
        board: &Board,
        level: &mut Vec<Node>,
        make: impl FnOnce() -> Node,
    ) {
        if level.len() * 2 >= self.slots.len() {
            self.grow(level);
        }
        let mask = self.slots.len() - 1;
        let mut i = (key as usize ^ (key >> 32) as usize) & mask;
        loop {
            let slot = &mut self.slots[i];
            if slot.1 != self.generation {
                *slot = (key, self.generation, level.len() as u32);
                level.push(make());
                return;
            }
            if slot.0 == key && level[slot.2 as usize].play.board == *board {
                return;
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self, level: &[Node]) {
        let n = self.slots.len() * 2;
        self.slots = vec![(0, 0, 0); n];
        self.generation = 1;
        let mask = n - 1;
        for (idx, node) in level.iter().enumerate() {
            let mut i = (node.key as usize ^ (node.key >> 32) as usize) & mask;
            while self.slots[i].1 == 1 {
                i = (i + 1) & mask;
            }
            self.slots[i] = (node.key, 1, idx as u32);
        }
    }
}

/// Reusable buffers so that generation allocates nothing once warmed up.
#[derive(Default)]
struct Scratch {
    levels: [Vec<Node>; 5],
    seen: KeySet,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// How a level is expanded.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expand {
    /// Keep every child (no duplicates can arise); keys are kept for a later level.
    All,
    /// Remove children whose board is already in the level.
    Dedupe,
    /// Doubles in non-increasing source order: every multiset of moves is generated
    /// once, so no duplicates arise and none need removing.
    NonIncreasing,
}

/// Expands every node of `from` by `die` into `to`. Nodes whose game is over are not
/// expanded.
#[inline]
fn expand_level(
    variant: Variant,
    from: &[Node],
    die: u8,
    to: &mut Vec<Node>,
    seen: &mut KeySet,
    mode: Expand,
) {
    for node in from {
        let max_from = if mode == Expand::NonIncreasing {
            node.last_from as usize
        } else {
            BAR
        };
        expand_node(variant, node, die, 1, max_from, to, seen, mode);
    }
}

/// Expands one node by `die` from sources in `min_from..=max_from`.
#[inline]
#[allow(clippy::too_many_arguments)]
fn expand_node(
    variant: Variant,
    node: &Node,
    die: u8,
    min_from: usize,
    max_from: usize,
    to: &mut Vec<Node>,
    seen: &mut KeySet,
    mode: Expand,
) {
    if node.play.outcome.is_some() {
        return;
    }
    let parent = &node.play.board;
    for_each_step_in(
        variant,
        parent,
        die,
        min_from,
        max_from,
        |nb, mv, outcome| match mode {
            Expand::Dedupe => {
                let key = child_key(node.key, parent, &nb, mv);
                seen.insert_with(key, &nb, to, || Node {
                    key,
                    play: node.play.child(nb, mv, outcome),
                    last_from: mv.from,
                });
            }
            Expand::All | Expand::NonIncreasing => to.push(Node {
                key: if mode == Expand::All {
                    child_key(node.key, parent, &nb, mv)
                } else {
                    0
                },
                play: node.play.child(nb, mv, outcome),
                last_from: mv.from,
            }),
        },
    );
}

/// Whether the moves of a double may be generated in non-increasing source order
/// without losing a play. True in Portes: no move's legality depends on a move from a
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
            let occupied = b.own[19..=24].iter().filter(|&&n| n > 0).count();
            let reachable = (19..=24 - die as usize).filter(|&q| b.own[q] == 0).count();
            b.own[24] < CHECKERS - 1 && occupied + reachable < 6
        }
    }
}

/// All legal plays of `board` (the mover's view) with `dice`, appended to `out`.
///
/// One play per distinct resulting board (R3). No legal move gives exactly one play
/// with no moves (a pass). Boards in `out` are not mirrored. The caller must not pass
/// a board whose game is already over (R9).
pub fn generate(variant: Variant, board: &Board, dice: Dice, out: &mut Vec<RawPlay>) {
    if variant == Variant::Fevga {
        if let Some(prime) = fevga_trapped_prime(board) {
            generate_must_open(variant, board, dice, &prime, out);
            return;
        }
    }
    SCRATCH.with(|s| {
        let s = &mut *s.borrow_mut();
        let root = Node {
            play: RawPlay::root(*board),
            key: board_key(board),
            last_from: BAR as u8,
        };
        let levels = &mut s.levels;
        let plays: &[Node] = if dice.is_double() {
            let d = dice.die1();
            let mode = if non_increasing_is_complete(variant, board, d) {
                Expand::NonIncreasing
            } else {
                Expand::Dedupe
            };
            levels[0].clear();
            levels[0].push(root);
            let mut deepest = 0;
            for k in 1..=4 {
                let (prev, next) = levels.split_at_mut(k);
                let (prev, next) = (&prev[k - 1], &mut next[0]);
                next.clear();
                s.seen.reset(prev.len() * 8);
                // Level 1 cannot hold duplicates: each source gives a different board.
                let mode = if k == 1 { Expand::All } else { mode };
                expand_level(variant, prev, d, next, &mut s.seen, mode);
                if next.is_empty() {
                    break;
                }
                deepest = k;
            }
            // Maximum dice (R3): the deepest level; a game end before it played fewer.
            &levels[deepest]
        } else {
            let (high, low) = (dice.high(), dice.low());
            let [l0, l_high, l_low, l2, _] = levels;
            l0.clear();
            l0.push(root);
            l_high.clear();
            l_low.clear();
            l2.clear();
            expand_level(variant, l0, high, l_high, &mut s.seen, Expand::All);
            expand_level(variant, l0, low, l_low, &mut s.seen, Expand::All);
            s.seen.reset((l_high.len() + l_low.len()) * 8);
            expand_level(variant, l_high, low, l2, &mut s.seen, Expand::Dedupe);
            if board.own[BAR] == 0 && non_increasing_is_complete(variant, board, low) {
                // Smaller die first, then the larger: when moves commute (see
                // `non_increasing_is_complete`), a larger-die move that did not need the
                // smaller one first gives a play already found above. Only bear-offs
                // (sources 1..=high, whose legality may depend on the first move) and
                // the same checker moving on (from a point empty before the turn) can
                // give new plays.
                for node in l_low.iter() {
                    expand_node(
                        variant,
                        node,
                        high,
                        1,
                        high as usize,
                        l2,
                        &mut s.seen,
                        Expand::Dedupe,
                    );
                    let landed = node.play.moves[0].to as usize;
                    if landed > high as usize && board.own[landed] == 0 {
                        expand_node(
                            variant,
                            node,
                            high,
                            landed,
                            landed,
                            l2,
                            &mut s.seen,
                            Expand::Dedupe,
                        );
                    }
                }
            } else {
                expand_level(variant, l_low, high, l2, &mut s.seen, Expand::Dedupe);
            }
            // Both dice if possible, else the larger, else the smaller, else pass (R3).
            [&*l2, &*l_high, &*l_low, &*l0]
                .into_iter()
                .find(|l| !l.is_empty())
                .expect("level 0 holds the root")
        };
        out.extend(plays.iter().map(|n| n.play));
    });
}

/// R8.4: complete sequences that break the trapping prime are preferred; among them
/// (or among all, when none breaks it) maximum dice and larger die apply (R3).
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
                    rec(
                        variant,
                        node.child(nb, mv, outcome),
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
    rec(
        variant,
        RawPlay::root(*board),
        &dice_seq,
        false,
        dice.high(),
        &mut terminals,
    );
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
