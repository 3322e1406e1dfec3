//! The rule-aware sanity step: every static evaluation, and every searched value, is
//! passed through [`sanitize`] so that no evaluator reports what the rules rule out.
//!
//! Modelled on GNU Backgammon's `SanityCheck` (`eval.c`: no gammon once the loser has
//! borne off, certain outcomes where the game is decided, gammons no larger than wins),
//! extended to Tavli's scoring (R7: a mars is the only 2-point bear-off result, no
//! 3-point game) and to Plakoto's mother rule (R5.5: 2-point mother wins and draws).
//!
//! # What the rules allow ([`possible_outcomes`])
//!
//! From the side to move ("mover") of a board whose game is not over (R9), the five
//! results are: win 1, win 2, lose 1, lose 2, draw. The rules rule out:
//!
//! - **Portes, Fevga** (R7, R4, R8): no draw; no 2-point win once the opponent has
//!   borne off a checker; no 2-point loss once the mover has borne off one.
//! - **Plakoto** (R5.5, R7, R6, R5.4), neither mother pinned: a 2-point win needs a
//!   mars (the opponent has none off) or a mother win (the opponent still has a free
//!   checker on its start point, so its mother can still be pinned); the same for a
//!   2-point loss, mirrored. A draw needs both mothers pinned, so both sides must
//!   still have a checker on their start point.
//! - **Plakoto, the opponent's mother pinned** (the game goes on because the mover
//!   still has checkers on its own start point): the pinning checkers stand on the
//!   opponent's start point, the mover's own 1, and can leave it only by bearing off,
//!   which needs every mover checker home (R6), so the mover's start point is empty
//!   first, and the moment it empties with the mother still pinned the mover wins 2
//!   points (R5.5). The opponent can never bear off (its pinned mother is outside its
//!   home, R5.4), and it cannot win by pinning the mover's mother (both mothers pinned
//!   is a draw, checked first). So: **every win is a 2-point win, no loss at all**; a
//!   draw only if the opponent still has a free checker (to pin the mover's last
//!   checker on its start point). With no free opposing checker nothing can block the
//!   mover's start checkers: a certain 2-point win.
//! - **Plakoto, the mover's mother pinned**: the mirror image: no win, every loss is a
//!   2-point loss, a draw only if the mover still has a free checker; with none, a
//!   certain 2-point loss.
//!
//! # Certain outcomes ([`decided`])
//!
//! - A finished game (R9): its outcome.
//! - The cases above where a single result is left.
//! - Every one of the 21 rolls ends the game at once ([`ending_rolls`]).
//!
//! # Rolls that end the game ([`ending_rolls`])
//!
//! On some rolls the mover may have a play that ends the game at once: bearing off
//! its last checkers (R7), and in Plakoto pinning the opponent's lone mother when its
//! own start point is empty (2 points) or its own mother is pinned (a draw), or moving
//! its last checker off its start point while the opponent's mother is pinned (2
//! points, R5.5). Such a play is always the mover's best: a win now is worth the most
//! the position allows (once the opponent has borne off, or has no checker left on its
//! start point, no later win can be worth 2 either), and the draw comes only when the
//! mover's own mother is pinned, where it cannot win at all. So each such roll's
//! result is known exactly, found with the move generator (R3: the maximum-dice rule
//! may forbid the ending play). When every roll ends the game the result is certain;
//! otherwise those rolls give lower bounds (a 2-point win on rolls of weight `a` means
//! `win_mars >= a/36`), and the evaluator's estimate is moved onto them
//! ([`bound_by_ending`]): the known share of each result, plus the rest of the
//! evaluator's distribution beyond it, rescaled. An estimate within the bounds is kept
//! as it is. Only boards where such a play may exist (cheap checks on the checkers
//! left, the mothers and the points that reach the opponent's mother) pay for the move
//! generations, and then only for the rolls that could reach.
//!
//! In Plakoto a roll is first tried without the move generator: a sequence of single
//! moves that plays every die and ends the game at its last move with the best result
//! any play can have there (a 2-point win; a draw when the mover's own mother is
//! pinned, as no play can win then) is a legal play (R3: none plays more dice), so it
//! settles the roll exactly. The sequence found last for the roll is replayed first
//! (the boards after the plays of one ranking share the mover's checkers), else a
//! small search of single moves looks for one, the last die only from points whose
//! move may end the game; a roll it does not settle is generated in full. The answer
//! is the generator's, bit for bit (a test compares the two on 46,000 boards); a
//! `ChoosePlay` of the load corpus whose plays leave a lone mother that many rolls pin
//! fell from 896,780 to 322,675 instructions (docs/performance.md, "ChoosePlay").
//!
//! # The projection ([`project`])
//!
//! The evaluator's numbers are clamped to `[0, 1]` (NaN counts as 0). The mass of a
//! ruled-out result among win / draw / lose is shared out in proportion to the results
//! still possible (evenly when the evaluator gave them none); within the wins, the
//! share of 2-point wins is kept unless one kind of win is ruled out (then it is 0 or
//! 1); the same within the losses. The result is consistent: each value in `[0, 1]`,
//! `win_mars <= win`, `lose_mars <= lose`, `win + lose + draw == 1`, and the equity in
//! the bounds this implies (at most +1 when no 2-point win is possible, at least −1
//! when no 2-point loss is). Exact values stay exact: a certain result is exactly 1.
//!
//! Cost (callgrind, 20,000 positions after a play in random games, before the rolls
//! that end the game were bounded): about 650 instructions per evaluation in Portes,
//! 7 % of a net evaluation, and 1,350 in Plakoto (17 %), most of it the 21 move
//! generations of the positions where the mover may finish this turn, which random
//! play reaches often. The bounds of the rolls that end the game added 0.9 % to the
//! instructions of 20 Portes games of the committed net against itself (`strength
//! --games 20 --threads 1` under callgrind) and 9 % to 20 Plakoto games: the net's
//! 2-point wins are often below the rolls that may pin a lone mother, and then the
//! rolls are generated.

use super::{Evaluator, Probabilities};
use crate::rules::board::{Board, RelOutcome, BAR, OFF};
use crate::rules::movegen::{
    for_each_step_from, generate_positions, play_outcome, play_sequence, RawMove,
};
use crate::rules::{Dice, Variant, CHECKERS};
use crate::rules::{Outcome, Position};
use std::cell::RefCell;

/// Which results the rules still allow for the mover of a board, before it rolls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Possible {
    /// The mover can still win 1 point.
    pub win_single: bool,
    /// The mover can still win 2 points (a mars, R7, or a mother win, R5.5).
    pub win_mars: bool,
    /// The mover can still lose 1 point.
    pub lose_single: bool,
    /// The mover can still lose 2 points.
    pub lose_mars: bool,
    /// The game can still end in a draw (Plakoto, both mothers pinned, R5.5).
    pub draw: bool,
}

impl Possible {
    /// Every result allowed (no information).
    pub const ANY: Possible = Possible {
        win_single: true,
        win_mars: true,
        lose_single: true,
        lose_mars: true,
        draw: true,
    };

    /// The mover can still win (1 or 2 points).
    pub fn win(&self) -> bool {
        self.win_single || self.win_mars
    }

    /// The mover can still lose (1 or 2 points).
    pub fn lose(&self) -> bool {
        self.lose_single || self.lose_mars
    }

    /// The same results seen by the other side (wins become losses).
    pub fn flip(&self) -> Possible {
        Possible {
            win_single: self.lose_single,
            win_mars: self.lose_mars,
            lose_single: self.win_single,
            lose_mars: self.win_mars,
            draw: self.draw,
        }
    }

    /// Whether `p` (mover's view) puts no weight on a ruled-out result.
    pub fn admits(&self, p: &Probabilities) -> bool {
        let lose = p.lose();
        (self.win() || p.win == 0.0)
            && (self.win_mars || p.win_mars == 0.0)
            && (self.win_single || p.win_mars == p.win)
            && (self.lose() || lose == 0.0)
            && (self.lose_mars || p.lose_mars == 0.0)
            && (self.lose_single || p.lose_mars == lose)
            && (self.draw || p.draw == 0.0)
    }
}

/// Free (unpinned) checkers of the mover on points 1..=24 and the bar.
#[inline]
fn free_own(b: &Board) -> u32 {
    b.own[1..=BAR].iter().map(|&n| n as u32).sum()
}

/// Free (unpinned) checkers of the opponent on points 1..=24 and the bar.
#[inline]
fn free_opp(b: &Board) -> u32 {
    b.opp[1..=BAR].iter().map(|&n| n as u32).sum()
}

/// The opponent's mother (at the mover's own 1, the opponent's start, R5.5) is pinned.
#[inline]
fn opp_mother_pinned(b: &Board) -> bool {
    b.opp_pinned >> 1 & 1 == 1
}

/// The mover's mother (on its own 24, its start point, R5.5) is pinned.
#[inline]
fn own_mother_pinned(b: &Board) -> bool {
    b.own_pinned >> 24 & 1 == 1
}

/// The results the rules still allow for the mover of `board` (its game not over);
/// see the module documentation for the derivation.
pub fn possible_outcomes(variant: Variant, b: &Board) -> Possible {
    let mars_by_bear_off = b.opp[OFF] == 0;
    let marsed_by_bear_off = b.own[OFF] == 0;
    if variant != Variant::Plakoto {
        return Possible {
            win_single: true,
            win_mars: mars_by_bear_off,
            lose_single: true,
            lose_mars: marsed_by_bear_off,
            draw: false,
        };
    }
    if opp_mother_pinned(b) {
        return Possible {
            win_single: false,
            win_mars: true,
            lose_single: false,
            lose_mars: false,
            draw: free_opp(b) > 0,
        };
    }
    if own_mother_pinned(b) {
        return Possible {
            win_single: false,
            win_mars: false,
            lose_single: false,
            lose_mars: true,
            draw: free_own(b) > 0,
        };
    }
    // Neither mother pinned: a side's mother can still be pinned while it has a free
    // checker on its start point (checkers never return to it).
    let opp_on_start = b.opp[1] > 0;
    let own_on_start = b.own[24] > 0;
    Possible {
        win_single: true,
        win_mars: mars_by_bear_off || opp_on_start,
        lose_single: true,
        lose_mars: marsed_by_bear_off || own_on_start,
        draw: own_on_start && opp_on_start,
    }
}

/// The exact probabilities of a board whose result the rules decide (module
/// documentation, "Certain outcomes"), or `None`.
pub fn decided(variant: Variant, b: &Board) -> Option<Probabilities> {
    decided_or_possible(variant, b).ok()
}

/// Probabilities, for the side that made the play, of a play that ended the game.
#[inline]
pub fn outcome_probabilities(o: RelOutcome) -> Probabilities {
    match o {
        RelOutcome::Win { points, .. } => Probabilities {
            win: 1.0,
            win_mars: if points >= 2 { 1.0 } else { 0.0 },
            lose_mars: 0.0,
            draw: 0.0,
        },
        RelOutcome::Draw => Probabilities {
            draw: 1.0,
            ..Probabilities::default()
        },
    }
}

/// Probabilities for the mover of a board whose game is over (R9), from
/// [`Board::game_over_for_mover`]'s answer.
#[inline]
pub fn game_over_probabilities(mover_won: bool, o: RelOutcome) -> Probabilities {
    let p = outcome_probabilities(o);
    match o {
        RelOutcome::Draw => p,
        RelOutcome::Win { .. } if mover_won => p,
        RelOutcome::Win { .. } => p.flip(),
    }
}

/// [`decided`]'s exact probabilities as `Ok`, or else the [`possible_outcomes`] and
/// what it found of the rolls that end the game as `Err` (so that [`sanitize`] does
/// not compute them again).
#[inline]
fn decided_or_possible(variant: Variant, b: &Board) -> Result<Probabilities, (Possible, Ending)> {
    // Only a board with 15 off or a pinned mother can be over (R9): the full check
    // (which mirrors the board) only then.
    let may_be_over = b.own[OFF] >= CHECKERS
        || b.opp[OFF] >= CHECKERS
        || (variant == Variant::Plakoto && (opp_mother_pinned(b) || own_mother_pinned(b)));
    if may_be_over {
        if let Some((mover_won, o)) = b.game_over_for_mover(variant) {
            return Ok(game_over_probabilities(mover_won, o));
        }
    }
    let ok = possible_outcomes(variant, b);
    match (ok.win(), ok.draw, ok.lose()) {
        (true, false, false) if !ok.win_single || !ok.win_mars => {
            return Ok(Probabilities {
                win: 1.0,
                win_mars: if ok.win_mars { 1.0 } else { 0.0 },
                ..Probabilities::default()
            });
        }
        (false, false, true) if !ok.lose_single || !ok.lose_mars => {
            return Ok(Probabilities {
                lose_mars: if ok.lose_mars { 1.0 } else { 0.0 },
                ..Probabilities::default()
            });
        }
        _ => {}
    }
    // Every roll may end the game: the exact rolls (a certain result when they all
    // do). Otherwise [`sanitize`] finds them only when the estimate may be below them.
    let c = candidates(variant, b);
    if c.rolls == ALL_ROLLS {
        let end = ending_rolls_of(variant, b, c.rolls);
        if end.total() == 36 {
            return Ok(end.exact());
        }
        return Err((ok, Ending::Found(end)));
    }
    Err((ok, Ending::Candidates(c)))
}

/// Bits 0..21: all the rolls.
const ALL_ROLLS: u32 = (1 << 21) - 1;

/// What [`decided_or_possible`] learnt of the rolls that end the game.
#[derive(Clone, Copy, Debug)]
enum Ending {
    /// The exact rolls.
    Found(EndingRolls),
    /// The superset of cheap checks.
    Candidates(Candidates),
}

/// Weights, in 36ths, of the rolls on which the mover's best play ends the game at
/// once, by result (module documentation, "Rolls that end the game").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EndingRolls {
    /// Rolls that win 2 points (a mars, R7, or a mother win, R5.5).
    pub win_mars: u8,
    /// Rolls that win 1 point.
    pub win_single: u8,
    /// Rolls that draw (Plakoto: the mover's mother pinned, it pins the other, R5.5).
    pub draw: u8,
}

impl EndingRolls {
    /// Weight of all the ending rolls, in 36ths (at most 36).
    pub fn total(&self) -> u32 {
        self.win_mars as u32 + self.win_single as u32 + self.draw as u32
    }

    /// The probabilities when every roll ends the game (`total() == 36`).
    fn exact(&self) -> Probabilities {
        Probabilities {
            win: (self.win_mars + self.win_single) as f32 / 36.0, // at most 36: no overflow
            win_mars: self.win_mars as f32 / 36.0,
            lose_mars: 0.0,
            draw: self.draw as f32 / 36.0,
        }
    }

    /// Whether `p` gives each result at least its ending rolls' share.
    pub fn admits(&self, p: &Probabilities) -> bool {
        let at_least = |x: f32, n: u8| x >= n as f32 / 36.0 - 1e-6;
        at_least(p.win_mars, self.win_mars)
            && at_least(p.win - p.win_mars, self.win_single)
            && at_least(p.draw, self.draw)
    }
}

/// The rolls on which a play of the mover may end the game, as found by cheap checks
/// (a superset of the rolls that do), and the results it may give there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Candidates {
    /// Bit `k`: `Dice::all_rolls()[k]`.
    rolls: u32,
    /// Results the ending plays may give: a 2-point win, a 1-point win, a draw.
    win_mars: bool,
    win_single: bool,
    draw: bool,
}

impl Candidates {
    /// Whether `p` may be below a bound of the rolls (else [`bound_by_ending`] would
    /// keep it whatever the exact rolls are, and they need not be found).
    fn may_bind(&self, p: &Probabilities) -> bool {
        let w = weight36(self.rolls) as f32 / 36.0;
        (self.win_mars && p.win_mars < w)
            || (self.win_single && p.win - p.win_mars < w)
            || (self.draw && p.draw < w)
    }
}

/// The rolls on which a play of the mover may end the game (a superset, from cheap
/// checks; see the module documentation, "Rolls that end the game"):
/// - bearing off its last checkers (R6, R7): all of them home and free, at most two
///   left for a non-double and four for a double (one per die), and the dice's pips
///   at least their pip count;
/// - Plakoto, the opponent's mother pinned: moving the last checkers off the start
///   point (R5.5), at most two or four of them;
/// - Plakoto, the opponent's lone free mother on own 1: pinning it (R5.5) with one
///   checker through open points (R5.3: the landings of a double's steps, one of the
///   two ways of a non-double), a draw when the mover's own mother is pinned, else a
///   2-point win when its start point is empty by the end of the move (the other die
///   may move one checker off it first, a double three).
#[inline]
fn candidates(variant: Variant, b: &Board) -> Candidates {
    let mut c = Candidates::default();
    let for_rolls = |c: &mut Candidates, ok: &dyn Fn(u32, u32) -> bool| {
        for (k, roll) in Dice::all_rolls().into_iter().enumerate() {
            if ok(roll.high() as u32, roll.low() as u32) {
                c.rolls |= 1 << k;
            }
        }
    };
    let left = CHECKERS.saturating_sub(b.own[OFF]) as u32;
    if left <= 4 && b.own_pinned == 0 && b.own[BAR] == 0 && b.own[7..=24].iter().all(|&n| n == 0) {
        let pips: u32 = (1..=6).map(|i| i as u32 * b.own[i] as u32).sum();
        for_rolls(&mut c, &|h, l| {
            if h == l {
                4 * h >= pips
            } else {
                left <= 2 && h + l >= pips
            }
        });
        if b.opp[OFF] == 0 {
            c.win_mars = true;
        } else {
            c.win_single = true;
        }
    }
    if variant != Variant::Plakoto {
        return c;
    }
    if opp_mother_pinned(b) && (1..=4).contains(&b.own[24]) {
        let n = b.own[24] as u32;
        for_rolls(&mut c, &|h, l| n <= if h == l { 4 } else { 2 });
        c.win_mars = true;
    }
    let lone_mother = b.opp[1] == 1 && (b.opp_pinned | b.own_pinned) & 2 == 0;
    let draw = own_mother_pinned(b);
    if lone_mother && (draw || b.own[24] <= 3) {
        let free = (2..=23).fold(0u32, |m, i| m | ((b.own[i] > 0) as u32) << i);
        let open = !super::features::closed_to_own(variant, b);
        let at = |p: u32| p <= 24 && open >> p & 1 == 1;
        let has = |p: u32| p <= 24 && free >> p & 1 == 1;
        let before = c.rolls;
        for_rolls(&mut c, &|h, l| {
            if h == l {
                // n steps from 1 + n h, landing on 1 + j h (j < n) on the way.
                let mut path_open = true;
                let mut reach = false;
                for n in 1..=4 {
                    reach |= path_open && has(1 + n * h);
                    path_open &= at(1 + n * h);
                }
                reach && (draw || b.own[24] <= 3)
            } else {
                let two = has(1 + h + l) && (at(1 + h) || at(1 + l));
                (has(1 + h) || has(1 + l) || two) && (draw || b.own[24] <= 1)
            }
        });
        if c.rolls != before {
            if draw {
                c.draw = true;
            } else {
                c.win_mars = true;
            }
        }
    }
    c
}

thread_local! {
    static PLAYS: RefCell<Vec<Board>> = RefCell::new(Vec::with_capacity(64));
}

/// The rolls on which the mover's best play ends the game at once, by result (module
/// documentation, "Rolls that end the game"), found with the move generator (R3).
#[inline]
pub fn ending_rolls(variant: Variant, b: &Board) -> EndingRolls {
    match candidates(variant, b).rolls {
        0 => EndingRolls::default(),
        mask => ending_rolls_of(variant, b, mask),
    }
}

/// The doubles among the bits of `Dice::all_rolls()` (its order: `a-b` with `b <= a`,
/// `a` from 1 to 6, so `a-a` is entry `a (a + 1) / 2 - 1`).
const DOUBLES: u32 = {
    let mut m = 0;
    let mut a = 1;
    while a <= 6 {
        m |= 1 << (a * (a + 1) / 2 - 1);
        a += 1;
    }
    m
};

/// The weight, in 36ths, of the rolls of `mask` (a double 1, another roll 2).
fn weight36(mask: u32) -> u32 {
    2 * mask.count_ones() - (mask & DOUBLES).count_ones()
}

/// How a play's end ranks among the endings (module documentation, "Rolls that end
/// the game"): a 2-point win 3, a 1-point win 2, a draw 1, the game going on 0.
#[inline]
fn ending_rank(o: Option<RelOutcome>) -> u8 {
    match o {
        Some(RelOutcome::Win { points, .. }) if points >= 2 => 3,
        Some(RelOutcome::Win { .. }) => 2,
        Some(RelOutcome::Draw) => 1,
        None => 0,
    }
}

/// [`ending_rolls`] over the rolls of `mask` (bit `k`: `Dice::all_rolls()[k]`).
#[inline(never)]
fn ending_rolls_of(variant: Variant, b: &Board, mask: u32) -> EndingRolls {
    let mut end = EndingRolls::default();
    // The best ending any play can have (Plakoto; see `full_play_ends`).
    let top = if own_mother_pinned(b) { 1 } else { 3 };
    PLAYS.with(|plays| {
        let mut plays = plays.borrow_mut();
        for (k, roll) in Dice::all_rolls().into_iter().enumerate() {
            if mask >> k & 1 == 0 {
                continue;
            }
            let best = if variant == Variant::Plakoto && full_play_ends(variant, b, k, roll, top) {
                top
            } else {
                plays.clear();
                generate_positions(variant, b, roll, &mut plays);
                plays
                    .iter()
                    .map(|p| ending_rank(play_outcome(variant, p)))
                    .max()
                    .unwrap_or(0)
            };
            let w = if roll.is_double() { 1 } else { 2 };
            match best {
                3 => end.win_mars += w,
                2 => end.win_single += w,
                1 => end.draw += w,
                _ => {}
            }
        }
    });
    end
}

/// Single-die move searches [`full_play_ends`] may make for one roll before it leaves
/// the roll to the move generator.
const WITNESS_BUDGET: u32 = 12;

thread_local! {
    /// Per roll (`Dice::all_rolls()` order), the moves of the last sequence
    /// [`full_play_ends`] found: tried first on the next board, as the boards after a
    /// ranking's plays often differ only in the other side's checkers.
    static WITNESSES: RefCell<[[RawMove; 4]; 21]> = const {
        RefCell::new([[RawMove { from: 0, to: 0, die: 0, hit: false }; 4]; 21])
    };
}

/// Whether a sequence of single moves (`for_each_step`, the rules of one die) that
/// plays every die of `roll` (entry `k` of `Dice::all_rolls()`) ends the game with
/// ending rank `top` at its last move: the last such sequence for this roll replayed,
/// else one searched for within [`WITNESS_BUDGET`] searches; `false` also when none
/// was found in time.
///
/// Exact when it says yes, as a shortcut for the move generator's answer of a roll
/// (R3): a sequence that plays every die is legal (no sequence plays more, and it
/// never ended the game earlier), so some legal play ends the game with rank `top`,
/// and `top` is the best rank any play can have: 3, or 1 when the mover's mother is
/// pinned (it stays pinned through the mover's turn, so no play wins: bearing off
/// needs it home, R5.4, and pinning the other mother is a draw, R5.5).
fn full_play_ends(variant: Variant, b: &Board, k: usize, roll: Dice, top: u8) -> bool {
    WITNESSES.with(|w| {
        let path = &mut w.borrow_mut()[k];
        let n = if roll.is_double() { 4 } else { 2 };
        let path = &mut path[..n];
        if path[0].die != 0 && replays(variant, b, path, top) {
            return true;
        }
        let mut budget = WITNESS_BUDGET;
        let found = if roll.is_double() {
            ends_after(variant, b, &[roll.die1(); 4], top, &mut budget, path)
        } else {
            let (h, l) = (roll.high(), roll.low());
            ends_after(variant, b, &[l, h], top, &mut budget, path)
                || ends_after(variant, b, &[h, l], top, &mut budget, path)
        };
        if !found {
            path[0].die = 0;
        }
        found
    })
}

/// Whether the moves `path`, one by one as single moves, are legal on `b` and end the
/// game with ending rank `top` at the last one only.
#[inline]
fn replays(variant: Variant, b: &Board, path: &[RawMove], top: u8) -> bool {
    match play_sequence(variant, b, path) {
        Some((next, Some(_))) => ending_rank(play_outcome(variant, &next)) == top,
        _ => false,
    }
}

/// The sources (bit `i`: own point `i`) of the Plakoto moves of `die` on `b` that may
/// end the game (a superset, so that [`ends_after`] searches only these for the last
/// die): from `1 + die` onto the opponent's lone checker on own 1 (R5.5), any point
/// of the home board when the 15th checker may be borne off (R7), own 24 when its
/// last free checker may leave it while the opponent's mother is pinned (R5.5).
#[inline]
fn ending_sources(b: &Board, die: u8) -> u32 {
    let pin = 1 + die as usize;
    let mut s = 0;
    if b.opp[1] == 1 && pin <= 24 && b.own[pin] > 0 {
        s |= 1 << pin;
    }
    if b.own[OFF] + 1 >= CHECKERS {
        s |= 0x7e;
    }
    if opp_mother_pinned(b) && b.own[24] == 1 {
        s |= 1 << 24;
    }
    s
}

/// [`full_play_ends`] for the dice `dice` in this order; the moves of the sequence
/// found go to `path` (one per die).
fn ends_after(
    variant: Variant,
    b: &Board,
    dice: &[u8],
    top: u8,
    budget: &mut u32,
    path: &mut [RawMove],
) -> bool {
    let (Some((&die, rest)), Some((first, later))) = (dice.split_first(), path.split_first_mut())
    else {
        return false;
    };
    // The last die: only the moves that may end the game.
    let from = if rest.is_empty() {
        ending_sources(b, die)
    } else {
        u32::MAX
    };
    if *budget == 0 || from == 0 {
        return false;
    }
    *budget -= 1;
    let mut found = false;
    for_each_step_from(variant, b, die, from, |next, mv, o| {
        if found {
            return;
        }
        if rest.is_empty() {
            found = o.is_some() && ending_rank(play_outcome(variant, &next)) == top;
        } else if o.is_none() {
            found = ends_after(variant, &next, rest, top, budget, later);
        }
        if found {
            *first = mv;
        }
    });
    found
}

/// `p` (consistent, within the rules' bounds) moved onto the lower bounds of `end`
/// (module documentation, "Rolls that end the game"): unchanged when it already gives
/// each result at least its share; else the known shares plus the rest of `p`'s
/// distribution beyond them, rescaled to the weight of the other rolls.
#[inline(never)]
pub fn bound_by_ending(p: Probabilities, end: &EndingRolls, ok: &Possible) -> Probabilities {
    if end.total() == 0 || end.admits(&p) {
        return p;
    }
    let lose = p.lose();
    // The five results: win 1, win 2, draw, lose 1, lose 2.
    let m = [
        p.win - p.win_mars,
        p.win_mars,
        p.draw,
        lose - p.lose_mars,
        p.lose_mars,
    ];
    let known = [
        end.win_single as f32 / 36.0,
        end.win_mars as f32 / 36.0,
        end.draw as f32 / 36.0,
        0.0,
        0.0,
    ];
    let rest = 1.0 - end.total() as f32 / 36.0;
    let extra: [f32; 5] = std::array::from_fn(|k| (m[k] - known[k]).max(0.0));
    let s: f32 = extra.iter().sum();
    let q: [f32; 5] = std::array::from_fn(|k| {
        // Nothing beyond the known shares (then `p` put all its mass on them): the
        // other rolls as `p` says.
        let share = if s > 0.0 { extra[k] / s } else { m[k].max(0.0) };
        known[k] + rest * share
    });
    project(
        Probabilities {
            win: q[0] + q[1],
            win_mars: q[1],
            lose_mars: q[4],
            draw: q[2],
        },
        ok,
    )
}

/// A value in `[0, 1]`; NaN counts as 0.
#[inline]
fn unit(x: f32) -> f32 {
    if x >= 0.0 {
        x.min(1.0)
    } else {
        0.0 // negative or NaN
    }
}

/// `p` made consistent and limited to the results `ok` allows (module documentation,
/// "The projection").
pub fn project(p: Probabilities, ok: &Possible) -> Probabilities {
    let (mut w, mut d) = (unit(p.win), unit(p.draw));
    if w + d > 1.0 {
        let s = w + d;
        (w, d) = (w / s, d / s);
    }
    let l = (1.0 - w - d).max(0.0);
    // The share of 2-point results among wins and among losses, as the evaluator said.
    let share = |mars: f32, all: f32| if all > 0.0 { unit(mars / all) } else { 0.0 };
    let mut win_share = share(p.win_mars, w);
    let mut lose_share = share(p.lose_mars, l);
    if !ok.win_mars {
        win_share = 0.0;
    } else if !ok.win_single {
        win_share = 1.0;
    }
    if !ok.lose_mars {
        lose_share = 0.0;
    } else if !ok.lose_single {
        lose_share = 1.0;
    }
    let (cw, cd, cl) = (ok.win(), ok.draw, ok.lose());
    let mut m = [
        if cw { w } else { 0.0 },
        if cd { d } else { 0.0 },
        if cl { l } else { 0.0 },
    ];
    let s = m[0] + m[1] + m[2];
    if s > 0.0 {
        if s != 1.0 {
            for x in &mut m {
                *x /= s;
            }
        }
    } else {
        // The evaluator gave every possible result nothing: share evenly.
        let n = (cw as u8 + cd as u8 + cl as u8).max(1) as f32;
        let all = !(cw || cd || cl);
        m = [
            if cw || all { 1.0 / n } else { 0.0 },
            if cd { 1.0 / n } else { 0.0 },
            if cl { 1.0 / n } else { 0.0 },
        ];
    }
    let win = m[0];
    // Rounding: `lose()` is `1 - win - draw`; with no loss possible the draw is
    // computed as `1 - win`, so that it comes out exactly 0, and win + draw never
    // exceeds 1.
    let draw = if !cd {
        0.0
    } else if !cl || win + m[1] > 1.0 {
        (1.0 - win).max(0.0)
    } else {
        m[1]
    };
    let lose = (1.0 - win - draw).max(0.0);
    Probabilities {
        win,
        win_mars: (win_share * win).min(win),
        lose_mars: (lose_share * lose).min(lose),
        draw,
    }
}

/// The sanity step: `p` (an evaluator's output for the mover of `board`, its game not
/// over) with every rule-implied bound applied: the exact result where the rules
/// decide it ([`decided`]), else [`project`] onto [`possible_outcomes`], then
/// [`bound_by_ending`] onto the results of the rolls that end the game at once.
#[inline]
pub fn sanitize(variant: Variant, board: &Board, p: Probabilities) -> Probabilities {
    match decided_or_possible(variant, board) {
        Ok(exact) => exact,
        Err((ok, Ending::Found(end))) => bound_by_ending(project(p, &ok), &end, &ok),
        Err((ok, Ending::Candidates(c))) => {
            let q = project(p, &ok);
            // The exact rolls only when the estimate is below what the candidate rolls
            // could give (so the move generations are rare).
            if c.rolls != 0 && c.may_bind(&q) {
                bound_by_ending(q, &ending_rolls_of(variant, board, c.rolls), &ok)
            } else {
                q
            }
        }
    }
}

/// The value of `board` for the side that has just moved into it (the opponent of
/// its mover): `p`, the mover's probabilities, flipped ([`Probabilities::flip`]) and
/// projected onto the flipped bounds, so that rounding in the flip (`lose` is
/// `1 - win - draw`) does not turn an exact 0 into 1e-8.
#[inline]
pub fn flip_to_previous_mover(variant: Variant, board: &Board, p: Probabilities) -> Probabilities {
    project(p.flip(), &possible_outcomes(variant, board).flip())
}

/// A static evaluator's output for `board`, passed through [`sanitize`].
#[inline]
pub fn sane_eval(e: &dyn Evaluator, variant: Variant, board: &Board) -> Probabilities {
    sanitize(variant, board, e.eval_board(variant, board))
}

/// Probabilities, for the side to move in `pos`, of its finished game's `outcome`.
pub fn outcome_for_turn(pos: &Position, outcome: &Outcome) -> Probabilities {
    match outcome.winner {
        None => Probabilities {
            draw: 1.0,
            ..Probabilities::default()
        },
        Some(w) => {
            let p = Probabilities {
                win: 1.0,
                win_mars: if outcome.points >= 2 { 1.0 } else { 0.0 },
                ..Probabilities::default()
            };
            if w == pos.turn {
                p
            } else {
                p.flip()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::position_id;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn board(id: &str) -> (Variant, Board) {
        let pos = position_id::from_id(id).unwrap();
        pos.validate().unwrap();
        (pos.variant, Board::from_position(&pos, pos.turn))
    }

    fn p(win: f32, win_mars: f32, lose_mars: f32, draw: f32) -> Probabilities {
        Probabilities {
            win,
            win_mars,
            lose_mars,
            draw,
        }
    }

    #[test]
    fn issue_9_portes_examples() {
        // R7: Black has borne off one, so White (to move) cannot win a mars.
        let (v, b) = board("portes/w/6:3,5:3,4:3,3:2,2:2,1:2/bar:3,19:5,20:3,21:3,off:1");
        let ok = possible_outcomes(v, &b);
        assert!(!ok.win_mars && ok.lose_mars && !ok.draw);
        let s = sanitize(v, &b, p(0.965, 0.278, 0.0, 0.0));
        assert!((s.win - 0.965).abs() < 1e-6, "{s:?}");
        assert_eq!((s.win_mars, s.lose_mars, s.draw), (0.0, 0.0, 0.0));
        assert!(s.equity() <= 1.0);
        // R7: Black (to move) has borne off 13: it cannot lose a mars.
        let (v, b) = board("portes/b/1:2,off:13/6:3,19:11,off:1");
        let s = sanitize(v, &b, p(0.0, 0.0, 0.945, 0.0));
        assert_eq!(s, p(0.0, 0.0, 0.0, 0.0));
        assert_eq!(s.equity(), -1.0);
    }

    #[test]
    fn pinned_mother_every_win_is_two_points() {
        // R5.5: White pins Black's mother on printed 1 and still has 14 on its start:
        // the game goes on, White cannot lose, every White win is a mother win (2
        // points); Black's free checkers on 19 can still pin White's last checker on
        // 24 (both mothers pinned: a draw).
        let (v, b) = board("plakoto/w/24:14,1:1/1:1p,19:14");
        let ok = possible_outcomes(v, &b);
        assert_eq!(
            ok,
            Possible {
                win_single: false,
                win_mars: true,
                lose_single: false,
                lose_mars: false,
                draw: true
            }
        );
        let s = sanitize(v, &b, p(0.6, 0.03, 0.1, 0.2));
        // The loss mass (0.2) is shared out 3 : 1 between win and draw.
        assert!(
            (s.win - 0.75).abs() < 1e-6 && (s.draw - 0.25).abs() < 1e-6,
            "{s:?}"
        );
        assert_eq!((s.win_mars, s.lose_mars, s.lose()), (s.win, 0.0, 0.0));
        // The same seen by Black (to move): no win, every loss 2 points.
        let (v, b) = board("plakoto/b/24:14,1:1/1:1p,19:14");
        let s = sanitize(v, &b, p(0.3, 0.1, 0.2, 0.0));
        assert_eq!((s.win, s.win_mars, s.draw), (0.0, 0.0, 0.0));
        assert_eq!((s.lose(), s.lose_mars), (1.0, 1.0));
        assert_eq!(s.equity(), -2.0);
    }

    #[test]
    fn plakoto_draw_needs_both_mothers() {
        // R5.5: White has left its start point: its mother can never be pinned, so no
        // draw, and (Black has none off... but White has none off either) Black can
        // still win 2 by mars; White can win 2 by pinning Black's mother (15 on 1).
        let (v, b) = board("plakoto/w/13:15/1:15");
        let ok = possible_outcomes(v, &b);
        assert!(!ok.draw && ok.win_mars && ok.lose_mars);
        let s = sanitize(v, &b, p(0.5, 0.1, 0.1, 0.007));
        assert_eq!(s.draw, 0.0);
        assert!((s.win + s.lose() - 1.0).abs() < 1e-6);
        // Both sides have left their start points and have borne off: only 1-point
        // results remain (R7) and no draw.
        let (v, b) = board("plakoto/w/3:14,off:1/22:14,off:1");
        assert_eq!(
            possible_outcomes(v, &b),
            Possible {
                win_single: true,
                win_mars: false,
                lose_single: true,
                lose_mars: false,
                draw: false
            }
        );
        // At the start every result is possible.
        let (v, b) = board("plakoto/w/24:15/1:15");
        assert_eq!(possible_outcomes(v, &b), Possible::ANY);
    }

    #[test]
    fn certain_results() {
        // R9: a finished game is its outcome.
        let (v, b) = board("portes/w/1:15/off:15");
        assert_eq!(decided(v, &b), Some(p(0.0, 0.0, 1.0, 0.0)));
        // White's last checker on its 1-point: every roll bears it off; Black has none
        // off and a checker on the bar (contact): a mars (R7).
        let (v, b) = board("portes/w/1:1,off:14/bar:1,6:14");
        assert_eq!(decided(v, &b), Some(p(1.0, 1.0, 0.0, 0.0)));
        // Two on the 1-point, Black has borne off: 1 point on every roll.
        let (v, b) = board("portes/w/1:2,off:13/bar:1,6:13,off:1");
        assert_eq!(decided(v, &b), Some(p(1.0, 0.0, 0.0, 0.0)));
        // One on the 2-point and Black holding White's 1-point: 1-1 cannot bear it off.
        let (v, b) = board("portes/w/2:1,off:14/1:2,6:13");
        assert_eq!(decided(v, &b), None);
        // Plakoto: Black's mother pinned, White's last checker on its start point, and
        // nothing of Black's can stop it leaving: White wins 2 on every roll (R5.5).
        let (v, b) = board("plakoto/w/24:1,1:1,off:13/1:1p,2:14");
        assert_eq!(decided(v, &b), Some(p(1.0, 1.0, 0.0, 0.0)));
        // Black's mother pinned and Black has no free checker: a certain 2-point win.
        let (v, b) = board("plakoto/w/24:5,1:10/1:1p,off:14");
        assert_eq!(decided(v, &b), Some(p(1.0, 1.0, 0.0, 0.0)));
    }

    #[test]
    fn rolls_that_end_the_game_bound_the_estimate() {
        // White's mother pinned (R5.5): pinning Black's lone mother on White's 1 draws.
        // From 7 with a 6, from 6 with a 5, 4-2 (7/3/1), 4-1 (6/2/1), 3-2 (6/3/1), 6-6,
        // 5-5, 3-3 (7/4/1) and 2-2 (7/5/3/1): 24 + 4 = 28 of 36.
        let (v, b) = board("plakoto/w/24:1p,7:1,6:13/24:1,1:1,20:13");
        let end = ending_rolls(v, &b);
        assert_eq!(
            end,
            EndingRolls {
                win_mars: 0,
                win_single: 0,
                draw: 28
            }
        );
        // The net said a draw of 0.03: the draw is now the 28 rolls, the rest of the
        // estimate (2-point losses) shares the other 8.
        let s = sanitize(v, &b, p(0.0, 0.0, 0.97, 0.03));
        assert_eq!(s, p(0.0, 0.0, 1.0 - 28.0 / 36.0, 28.0 / 36.0));
        // An estimate already within the bounds is kept as the projection leaves it.
        let within = p(0.0, 0.0, 0.1, 0.9);
        let projected = project(within, &possible_outcomes(v, &b));
        assert_eq!(sanitize(v, &b, within), projected);
        assert_eq!(bound_by_ending(projected, &end, &Possible::ANY), projected);
        // Black's mother alone, White's start empty: the same rolls win 2 (R5.5),
        // except 6-5: with every White checker home after 7/2, 7/2 6/off plays both
        // dice where 7/1 plays one (R3, RULES.md's own example): 26 of 36.
        let (v, b) = board("plakoto/w/7:1,6:13,off:1/1:1,20:14");
        let end = ending_rolls(v, &b);
        assert_eq!((end.win_mars, end.win_single, end.draw), (26, 0, 0));
        let s = sanitize(v, &b, p(0.5, 0.1, 0.2, 0.0));
        assert!((s.win_mars - 26.0 / 36.0).abs() < 1e-6, "{s:?}");
        assert!(s.win >= s.win_mars && s.lose_mars <= s.lose(), "{s:?}");
        // Portes: the last two checkers on 6 and 1, Black none off: a 6 or a double
        // from 2-2 up bears both off (R6) for a mars (R7); nothing else ends the game.
        let (v, b) = board("portes/w/6:1,1:1,off:13/bar:1,19:14");
        let end = ending_rolls(v, &b);
        assert_eq!((end.win_mars, end.win_single, end.draw), (15, 0, 0));
        // The weights of the rolls: every double 1, every other roll 2.
        for (k, d) in Dice::all_rolls().into_iter().enumerate() {
            assert_eq!(weight36(1 << k), if d.is_double() { 1 } else { 2 }, "{d}");
        }
        assert_eq!(weight36(ALL_ROLLS), 36);
        // Far from the end: no move generation at all.
        let (v, b) = board("portes/w/24:2,13:5,8:3,6:5/1:2,12:5,17:3,19:5");
        assert_eq!(candidates(v, &b), Candidates::default());
    }

    /// `ending_rolls_of` as it was before `full_play_ends`: every roll generated.
    fn ending_rolls_generated(variant: Variant, b: &Board) -> EndingRolls {
        let mut end = EndingRolls::default();
        for roll in Dice::all_rolls() {
            let mut plays = Vec::new();
            generate_positions(variant, b, roll, &mut plays);
            let best = plays.iter().map(|p| ending_rank(play_outcome(variant, p)));
            let w = if roll.is_double() { 1 } else { 2 };
            match best.max().unwrap_or(0) {
                3 => end.win_mars += w,
                2 => end.win_single += w,
                1 => end.draw += w,
                _ => {}
            }
        }
        end
    }

    #[test]
    fn shortcut_of_the_rolls_that_end_the_game_equals_the_generator() {
        // R3, R5.5: the plays that end the game found by `full_play_ends` give the
        // same rolls as generating every play, on the boards of seeded random Plakoto
        // games and every board one play after them (each from its mover's view).
        let v = Variant::Plakoto;
        let mut rng = ChaCha8Rng::seed_from_u64(33);
        let (mut boards, mut shortcut) = (0, 0);
        for pos in crate::corpus::random_positions(v, 33, 1500) {
            let b = Board::from_position(&pos, pos.turn);
            let d = Dice::all_rolls()[rng.random_range(0..21)];
            let mut next = Vec::new();
            generate_positions(v, &b, d, &mut next);
            for c in std::iter::once(b).chain(next.iter().map(|n| n.mirror(v))) {
                if c.game_over_for_mover(v).is_some() {
                    continue;
                }
                let want = ending_rolls_generated(v, &c);
                assert_eq!(ending_rolls_of(v, &c, ALL_ROLLS), want, "{c:?}");
                let top = if own_mother_pinned(&c) { 1 } else { 3 };
                let hits = (Dice::all_rolls().into_iter().enumerate())
                    .filter(|&(k, r)| full_play_ends(v, &c, k, r, top))
                    .count();
                shortcut += hits;
                boards += 1;
            }
        }
        // The shortcut decided rolls of both kinds of ending (counted, so that the
        // comparison is not vacuous).
        assert!(boards > 20_000, "{boards}");
        assert!(shortcut > 1_000, "{shortcut}");
    }

    #[test]
    fn projection_is_consistent_whatever_the_input() {
        let raw = [
            p(f32::NAN, 0.5, 0.5, 0.5),
            p(1.5, 2.0, -1.0, 0.5),
            p(0.7, 0.9, 0.4, 0.0),
            p(0.0, 0.0, 0.0, 0.0),
            p(0.2, 0.1, 0.9, 0.9),
        ];
        let oks = [
            Possible::ANY,
            Possible {
                draw: false,
                ..Possible::ANY
            },
            Possible {
                win_single: false,
                win_mars: false,
                ..Possible::ANY
            },
            Possible {
                win_single: false,
                lose_single: false,
                lose_mars: false,
                ..Possible::ANY
            },
        ];
        for r in raw {
            for ok in &oks {
                let s = project(r, ok);
                for x in [s.win, s.win_mars, s.lose(), s.lose_mars, s.draw] {
                    assert!((0.0..=1.0).contains(&x), "{r:?} {ok:?} -> {s:?}");
                }
                assert!(s.win_mars <= s.win && s.lose_mars <= s.lose(), "{s:?}");
                assert!((s.win + s.lose() + s.draw - 1.0).abs() < 1e-6, "{s:?}");
                assert!(ok.admits(&s), "{r:?} {ok:?} -> {s:?}");
            }
        }
    }
}
