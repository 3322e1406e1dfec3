//! n-ply expectimax search over mover-relative boards (issue #4: plies 0, 1, 2).
//!
//! - 0 plies: the leaf value: exact bear-off database for a no-contact bear-off
//!   ([`super::bearoff::is_no_contact_bearoff`]), else the static evaluator, whose
//!   output passes the rule-aware sanity step ([`super::sanity`]); searched values
//!   pass it too, so no depth reports a result the rules rule out.
//! - n plies (side X to roll): the average over X's 21 rolls (weight 1/36 for a
//!   double, 2/36 otherwise) of X's best play, each play valued by its resulting
//!   position evaluated at n − 1 plies (the other side to roll, mirrored and flipped
//!   back). A play that ends the game is scored exactly (R5.5, R7).
//! - Move filter (as GNU Backgammon): when the plays of a node are to be valued at
//!   `m >= 1` plies, all are first valued at 0 plies, and only the best (at most
//!   [`MoveFilter::keep`]) of those within [`MoveFilter::threshold`] equity of the best
//!   are searched deeper; the best of them is the node's play.
//! - A no-contact bear-off is exact at any depth: the search stops there.
//!
//! Plays are compared by cubeless Tavli equity ([`Probabilities::equity`]: a mars
//! counts 2, no 3-point games, R7), at every node; only the root of a ranking may
//! compare them by another measure ([`Search::rank_by`] with an [`EndValues`]: a
//! match's winning chances), the replies below it still chosen by equity. The deadline is checked before each roll of each
//! searched node and before each root candidate ([`EvalError::DeadlineExceeded`]).
//!
//! Allocation: buffers per depth are reused from a thread-local [`Scratch`]; after the
//! first call a search allocates nothing.

use super::bearoff::{is_no_contact_bearoff, BearoffDb};
use super::sanity;
/// A play that ends the game is scored with these (exact, R5.5, R7).
pub use super::sanity::{game_over_probabilities, outcome_probabilities};
use super::{EndValues, EvalError, Evaluator, Probabilities, StopWhen, MAX_PLIES};
use crate::rules::board::Board;
use crate::rules::movegen::{generate_positions, PlayResult};
use crate::rules::{Dice, Variant};
use std::cell::RefCell;

/// Which plays of a node are searched deeper (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MoveFilter {
    /// At most this many plays (the best always included).
    pub keep: usize,
    /// Only plays within this equity (points) of the best at 0 plies.
    pub threshold: f32,
}

impl Default for MoveFilter {
    /// GNU Backgammon's usual 0-ply filter: 8 plays within 0.16.
    fn default() -> Self {
        MoveFilter {
            keep: 8,
            threshold: 0.16,
        }
    }
}

/// The weight of a roll among the 36: 1/36 for a double, 2/36 otherwise.
#[inline]
pub fn roll_weight(d: Dice) -> f32 {
    if d.is_double() {
        1.0 / 36.0
    } else {
        2.0 / 36.0
    }
}

/// Reusable buffers of one thread's searches.
#[derive(Default)]
pub struct Scratch {
    plays: Vec<Vec<Board>>,
    scores: Vec<Vec<(f32, u32)>>,
    /// [`Search::rank`]'s values in play order, before they are put in rank order.
    ranked: Vec<(usize, Probabilities, u8)>,
    /// Sort keys of [`sort_scores`].
    keys: Vec<u64>,
    /// [`Search::values0`]'s boards for the static evaluator, their plays' indices,
    /// their values, and the values of all plays.
    leaf_boards: Vec<Board>,
    leaf_plays: Vec<u32>,
    leaf_values: Vec<Probabilities>,
    values: Vec<Probabilities>,
}

impl Scratch {
    fn take(&mut self, depth: usize) -> (Vec<Board>, Vec<(f32, u32)>) {
        while self.plays.len() <= depth {
            self.plays.push(Vec::with_capacity(64));
            self.scores.push(Vec::with_capacity(64));
        }
        (
            std::mem::take(&mut self.plays[depth]),
            std::mem::take(&mut self.scores[depth]),
        )
    }

    fn give(&mut self, depth: usize, plays: Vec<Board>, scores: Vec<(f32, u32)>) {
        self.plays[depth] = plays;
        self.scores[depth] = scores;
    }
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Runs `f` with this thread's scratch buffers (not re-entrant: `f` must not call
/// `with_scratch` again).
pub fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    SCRATCH.with(|s| f(&mut s.borrow_mut()))
}

/// Sorts `(equity, index)` pairs best first, ties by index (the order of
/// `b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))`), as one sort of `u64` keys in `keys`
/// (the high half orders the equities as `f32::total_cmp` does, reversed; the low half
/// is the index). Keys are distinct, so the order is fully determined.
fn sort_scores(scores: &mut [(f32, u32)], keys: &mut Vec<u64>) {
    // `f32::total_cmp`'s key: the bits as a signed integer with the magnitude bits
    // flipped for negative numbers (an involution: the sign bit is kept); then shifted
    // to an unsigned order and reversed (best first).
    #[inline(always)]
    fn flip(bits: u32) -> u32 {
        bits ^ (((bits as i32) >> 31) as u32 >> 1)
    }
    keys.clear();
    keys.extend(scores.iter().map(|&(e, i)| {
        let high = !(flip(e.to_bits()) ^ 0x8000_0000);
        (high as u64) << 32 | i as u64
    }));
    keys.sort_unstable();
    for (s, &k) in scores.iter_mut().zip(keys.iter()) {
        let bits = flip(!((k >> 32) as u32) ^ 0x8000_0000);
        *s = (f32::from_bits(bits), k as u32);
    }
}

/// The search of one variant: leaf evaluators and filter.
#[derive(Clone, Copy)]
pub struct Search<'a> {
    /// The variant searched.
    pub variant: Variant,
    /// The exact bear-off database.
    pub bearoff: &'static BearoffDb,
    /// The static evaluator of contact positions (`None`: contact positions are
    /// [`EvalError::Unavailable`]).
    pub static_eval: Option<&'a dyn Evaluator>,
    /// The filter of every searched node.
    pub filter: MoveFilter,
    /// Give up at this deadline or on cancellation.
    pub stop: StopWhen<'a>,
}

/// What builds a [`Search`]: the engine's evaluators for a variant
/// ([`super::engine::Engine`] is one), so that the rollouts of [`super::rollout`]
/// search with them without depending on the engine.
pub trait Searcher: Send + Sync {
    /// A search of `variant` with the given stop conditions.
    fn search<'a>(&'a self, variant: Variant, stop: StopWhen<'a>) -> Search<'a>;
}

impl<'a> Search<'a> {
    /// A search of `variant` with `eval` for contact positions, the exact bear-off
    /// database, the default move filter and no deadline (the tools' search).
    pub fn plain(variant: Variant, eval: &'a dyn Evaluator) -> Search<'a> {
        Search {
            variant,
            bearoff: BearoffDb::global(),
            static_eval: Some(eval),
            filter: MoveFilter::default(),
            stop: StopWhen::default(),
        }
    }

    #[inline]
    fn check_deadline(&self) -> Result<(), EvalError> {
        self.stop.check()
    }

    /// The 0-ply value of a board (mover to roll, game not over): the exact bear-off
    /// database, or the static evaluator's output passed through the sanity step
    /// ([`sanity::sanitize`]: no result the rules rule out).
    #[inline]
    pub fn leaf(&self, board: &Board) -> Result<Probabilities, EvalError> {
        if let Some(p) = self.bearoff.eval_board(self.variant, board) {
            return Ok(p);
        }
        match self.static_eval {
            Some(e) => Ok(sanity::sane_eval(e, self.variant, board)),
            None => Err(EvalError::Unavailable(format!(
                "no static evaluator for {} contact positions",
                self.variant
            ))),
        }
    }

    /// Probabilities for the mover of `board` (to roll; its game must not be over),
    /// searched `plies` deep (capped at [`MAX_PLIES`]).
    pub fn evaluate(
        &self,
        scratch: &mut Scratch,
        board: &Board,
        plies: u8,
    ) -> Result<Probabilities, EvalError> {
        self.eval_at(scratch, board, plies.min(MAX_PLIES), 0)
    }

    fn eval_at(
        &self,
        scratch: &mut Scratch,
        board: &Board,
        plies: u8,
        depth: usize,
    ) -> Result<Probabilities, EvalError> {
        if plies == 0 || is_no_contact_bearoff(self.variant, board) {
            return self.leaf(board);
        }
        let (mut plays, mut scores) = scratch.take(depth);
        let mut acc = [0f32; 4];
        let mut result = Ok(());
        for roll in Dice::all_rolls() {
            if let Err(e) = self.check_deadline() {
                result = Err(e);
                break;
            }
            plays.clear();
            generate_positions(self.variant, board, roll, &mut plays);
            match self.best_of(scratch, &plays, &mut scores, plies - 1, depth + 1) {
                Ok((_, p)) => {
                    let w = roll_weight(roll);
                    acc[0] += w * p.win;
                    acc[1] += w * p.win_mars;
                    acc[2] += w * p.lose_mars;
                    acc[3] += w * p.draw;
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        scratch.give(depth, plays, scores);
        result?;
        // The average of values that obey the bounds obeys them too, up to rounding;
        // the sanity step removes the rounding and makes decided results exact.
        let p = Probabilities {
            win: acc[0],
            win_mars: acc[1],
            lose_mars: acc[2],
            draw: acc[3],
        };
        Ok(sanity::sanitize(self.variant, board, p))
    }

    /// The value, for the side that made it, of `play` when its resulting position is
    /// evaluated at `plies` (exact when the play ended the game).
    #[inline]
    fn play_value_at<P: PlayResult>(
        &self,
        scratch: &mut Scratch,
        play: &P,
        plies: u8,
        depth: usize,
    ) -> Result<Probabilities, EvalError> {
        if let Some(o) = play.outcome(self.variant) {
            return Ok(outcome_probabilities(o));
        }
        let child = play.board().mirror(self.variant);
        if let Some((won, o)) = child.game_over_for_mover(self.variant) {
            return Ok(game_over_probabilities(won, o).flip());
        }
        let v = self.eval_at(scratch, &child, plies, depth)?;
        Ok(sanity::flip_to_previous_mover(self.variant, &child, v))
    }

    /// The value of a play for the side that made it, its resulting position searched
    /// `plies` deep (capped at [`MAX_PLIES`]).
    pub fn play_value<P: PlayResult>(
        &self,
        scratch: &mut Scratch,
        play: &P,
        plies: u8,
    ) -> Result<Probabilities, EvalError> {
        self.play_value_at(scratch, play, plies.min(MAX_PLIES), 0)
    }

    /// The 0-ply value of every play of `plays` for the side that made it, in play
    /// order, into `scratch.values`: [`Search::play_value_at`] at 0 plies of each,
    /// with the boards that need the static evaluator evaluated as one run
    /// ([`Evaluator::eval_boards`], which may share work between them: the same
    /// values).
    fn values0<P: PlayResult>(&self, scratch: &mut Scratch, plays: &[P]) -> Result<(), EvalError> {
        let Scratch {
            leaf_boards: boards,
            leaf_plays: index,
            leaf_values: leaf,
            values: out,
            ..
        } = scratch;
        out.clear();
        boards.clear();
        index.clear();
        for (i, p) in plays.iter().enumerate() {
            if let Some(o) = p.outcome(self.variant) {
                out.push(outcome_probabilities(o));
                continue;
            }
            let child = p.board().mirror(self.variant);
            if let Some((won, o)) = child.game_over_for_mover(self.variant) {
                out.push(game_over_probabilities(won, o).flip());
            } else if let Some(v) = self.bearoff.eval_board(self.variant, &child) {
                out.push(sanity::flip_to_previous_mover(self.variant, &child, v));
            } else {
                out.push(Probabilities::default());
                boards.push(child);
                index.push(i as u32);
            }
        }
        if boards.is_empty() {
            return Ok(());
        }
        let Some(e) = self.static_eval else {
            // What `leaf` says for the first play that needs it.
            return self.leaf(&boards[0]).map(|_| ());
        };
        e.eval_boards(self.variant, boards, leaf);
        for ((b, &i), &v) in boards.iter().zip(index.iter()).zip(leaf.iter()) {
            let v = sanity::sanitize(self.variant, b, v);
            out[i as usize] = sanity::flip_to_previous_mover(self.variant, b, v);
        }
        Ok(())
    }

    /// Scores every play at 0 plies into `scores` as `(equity, index)`, best first
    /// (ties keep generation order).
    fn score_all<P: PlayResult>(
        &self,
        scratch: &mut Scratch,
        plays: &[P],
        scores: &mut Vec<(f32, u32)>,
    ) -> Result<(), EvalError> {
        self.values0(scratch, plays)?;
        scores.clear();
        scores.extend((scratch.values.iter().enumerate()).map(|(i, v)| (v.equity(), i as u32)));
        sort_scores(scores, &mut scratch.keys);
        Ok(())
    }

    /// How many of the sorted `scores` pass the filter (at least 1).
    #[inline]
    fn candidates(&self, scores: &[(f32, u32)]) -> usize {
        let best = scores[0].0;
        scores
            .iter()
            .take(self.filter.keep.max(1))
            .take_while(|s| s.0 >= best - self.filter.threshold)
            .count()
            .max(1)
    }

    /// The best play of `plays` valued at `plies`: `(index, value)`.
    fn best_of<P: PlayResult>(
        &self,
        scratch: &mut Scratch,
        plays: &[P],
        scores: &mut Vec<(f32, u32)>,
        plies: u8,
        depth: usize,
    ) -> Result<(usize, Probabilities), EvalError> {
        if plies == 0 {
            self.values0(scratch, plays)?;
            let mut best: Option<(usize, Probabilities, f32)> = None;
            for (i, &v) in scratch.values.iter().enumerate() {
                let e = v.equity();
                if best.is_none_or(|b| e > b.2) {
                    best = Some((i, v, e));
                }
            }
            let (i, v, _) = best.expect("generate gives at least one play");
            return Ok((i, v));
        }
        self.score_all(scratch, plays, scores)?;
        let n = self.candidates(scores);
        if n == 1 {
            let i = scores[0].1 as usize;
            return Ok((i, self.play_value_at(scratch, &plays[i], plies, depth)?));
        }
        let mut best: Option<(usize, Probabilities, f32)> = None;
        for &(_, i) in &scores[..n] {
            let i = i as usize;
            let v = self.play_value_at(scratch, &plays[i], plies, depth)?;
            let e = v.equity();
            if best.is_none_or(|b| e > b.2) {
                best = Some((i, v, e));
            }
        }
        let (i, v, _) = best.expect("at least one candidate");
        Ok((i, v))
    }

    /// Ranks `plays` (all legal plays of one roll, from either generation path) for
    /// their mover, best first, into `out` as `(index into plays, value for the mover,
    /// plies searched)`.
    ///
    /// At 0 plies every play is valued statically. At `plies >= 1` every play is first
    /// valued at 0 plies; the filter's candidates are then searched at `plies` and
    /// listed first (best first by their deep equity), followed by the others with
    /// their 0-ply values (best first), as GNU Backgammon lists them.
    pub fn rank<P: PlayResult>(
        &self,
        scratch: &mut Scratch,
        plays: &[P],
        plies: u8,
        out: &mut Vec<(usize, Probabilities, u8)>,
    ) -> Result<(), EvalError> {
        let plies = plies.min(MAX_PLIES);
        out.clear();
        let (p0, mut scores) = scratch.take(0);
        scratch.plays[0] = p0;
        let r = self.rank_into(scratch, plays, plies, &mut scores, out);
        scratch.scores[0] = scores;
        r
    }

    fn rank_into<P: PlayResult>(
        &self,
        scratch: &mut Scratch,
        plays: &[P],
        plies: u8,
        scores: &mut Vec<(f32, u32)>,
        out: &mut Vec<(usize, Probabilities, u8)>,
    ) -> Result<(), EvalError> {
        self.values0(scratch, plays)?;
        scores.clear();
        for (i, &v) in scratch.values.iter().enumerate() {
            scores.push((v.equity(), i as u32));
            out.push((i, v, 0));
        }
        sort_scores(scores, &mut scratch.keys);
        if plies == 0 {
            // `scores` is already in rank order: best equity first, ties by index (the
            // order the sort below gives).
            let mut values = std::mem::take(&mut scratch.ranked);
            values.clear();
            values.append(out);
            out.extend(scores.iter().map(|&(_, i)| values[i as usize]));
            scratch.ranked = values;
            return Ok(());
        }
        let n = self.candidates(scores);
        for &(_, i) in &scores[..n] {
            self.check_deadline()?;
            let i = i as usize;
            let v = self.play_value_at(scratch, &plays[i], plies, 1)?;
            out[i] = (i, v, plies);
        }
        out.sort_by(|a, b| {
            b.2.cmp(&a.2)
                .then(b.1.equity().total_cmp(&a.1.equity()))
                .then(a.0.cmp(&b.0))
        });
        Ok(())
    }

    /// [`rank`](Self::rank) with the root's plays compared by `measure` when given
    /// ([`EvalOptions::measure`](super::EvalOptions::measure)); `None` is `rank`
    /// itself, bit for bit.
    ///
    /// With a measure `m`, every play is valued at 0 plies and the plays are ordered
    /// by [`EndValues::value`] of those values; at `plies >= 1` the filter's
    /// candidates by `m` (at most [`MoveFilter::keep`], within [`MoveFilter::threshold`]
    /// points of the best converted by [`EndValues::per_point`]) are searched at
    /// `plies` and listed first, best first by `m`, then the others with their 0-ply
    /// values, best first by `m`. Ties keep generation order. Below the root the
    /// search is cubeless: the replies are chosen by equity.
    pub fn rank_by<P: PlayResult>(
        &self,
        scratch: &mut Scratch,
        plays: &[P],
        plies: u8,
        measure: Option<&EndValues>,
        out: &mut Vec<(usize, Probabilities, u8)>,
    ) -> Result<(), EvalError> {
        let Some(m) = measure else {
            return self.rank(scratch, plays, plies, out);
        };
        let plies = plies.min(MAX_PLIES);
        self.values0(scratch, plays)?;
        out.clear();
        out.extend(scratch.values.iter().enumerate().map(|(i, &v)| (i, v, 0)));
        let order = |a: &(usize, Probabilities, u8), b: &(usize, Probabilities, u8)| {
            b.2.cmp(&a.2)
                .then(m.value(&b.1).total_cmp(&m.value(&a.1)))
                .then(a.0.cmp(&b.0))
        };
        out.sort_by(order);
        if plies == 0 {
            return Ok(());
        }
        let best = m.value(&out[0].1);
        let threshold = self.filter.threshold as f64 * m.per_point();
        let n = out
            .iter()
            .take(self.filter.keep.max(1))
            .take_while(|r| m.value(&r.1) >= best - threshold)
            .count()
            .max(1);
        for r in out.iter_mut().take(n) {
            self.check_deadline()?;
            let v = self.play_value_at(scratch, &plays[r.0], plies, 1)?;
            *r = (r.0, v, plies);
        }
        out.sort_by(order);
        Ok(())
    }

    /// [`best_play`](Self::best_play) with the plays compared by `measure` when given:
    /// the first of [`rank_by`](Self::rank_by). `None` is `best_play` itself.
    pub fn best_play_by<P: PlayResult>(
        &self,
        scratch: &mut Scratch,
        plays: &[P],
        plies: u8,
        measure: Option<&EndValues>,
    ) -> Result<(usize, Probabilities), EvalError> {
        if measure.is_none() {
            return self.best_play(scratch, plays, plies);
        }
        let mut ranked = std::mem::take(&mut scratch.ranked);
        let r = self.rank_by(scratch, plays, plies, measure, &mut ranked);
        let best = ranked.first().map(|&(i, v, _)| (i, v));
        scratch.ranked = ranked;
        r?;
        Ok(best.expect("generate gives at least one play"))
    }

    /// The best play of `plays` for their mover at `plies` (the first of [`rank`](Self::rank),
    /// without sorting the rest): `(index, value)`.
    pub fn best_play<P: PlayResult>(
        &self,
        scratch: &mut Scratch,
        plays: &[P],
        plies: u8,
    ) -> Result<(usize, Probabilities), EvalError> {
        let (p0, mut scores) = scratch.take(0);
        scratch.plays[0] = p0;
        let r = self.best_of(scratch, plays, &mut scores, plies.min(MAX_PLIES), 1);
        scratch.scores[0] = scores;
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::pubeval::PubEval;
    use crate::rules::{Position, Side};
    use std::time::Instant;

    fn search(variant: Variant, e: &dyn Evaluator) -> Search<'_> {
        Search::plain(variant, e)
    }

    #[test]
    fn sort_scores_gives_the_comparators_order_and_bits() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(10);
        let special = [
            0.0f32,
            -0.0,
            1.0,
            -1.0,
            3.0,
            -3.0,
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
            1e-40,
            -1e-40,
        ];
        let mut keys = Vec::new();
        for round in 0..500 {
            let n = rng.random_range(0..200);
            let mut scores: Vec<(f32, u32)> = (0..n)
                .map(|i| {
                    let e = match rng.random_range(0..4) {
                        0 => special[rng.random_range(0..special.len())],
                        1 => f32::from_bits(rng.random()),
                        // Few distinct values: many ties, broken by the index.
                        2 => rng.random_range(-2..=2) as f32 / 2.0,
                        _ => rng.random_range(-3.0f32..3.0),
                    };
                    (e, i as u32)
                })
                .collect();
            if round % 2 == 1 {
                // Indices in any order (the ranking pushes them in order; the sort must
                // not rely on it).
                for k in (1..scores.len()).rev() {
                    let j = rng.random_range(0..=k);
                    let (a, b) = (scores[k].1, scores[j].1);
                    (scores[k].1, scores[j].1) = (b, a);
                }
            }
            let mut want = scores.clone();
            want.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            sort_scores(&mut scores, &mut keys);
            let bits =
                |v: &[(f32, u32)]| v.iter().map(|&(e, i)| (e.to_bits(), i)).collect::<Vec<_>>();
            assert_eq!(bits(&scores), bits(&want));
        }
    }

    #[test]
    fn one_ply_of_a_bearoff_equals_the_database() {
        // Exact at any depth: a no-contact bear-off is answered by the database.
        let mut pos = Position::empty(Variant::Portes, Side::White);
        pos.add(Side::White, 6, 1).add(Side::Black, 19, 1);
        pos.off = [14, 14];
        let b = Board::from_position(&pos, Side::White);
        let s = search(Variant::Portes, &PubEval);
        let mut sc = Scratch::default();
        let p1 = s.evaluate(&mut sc, &b, 1).unwrap();
        assert!((p1.win - 13.0 / 16.0).abs() < 1e-6);
    }

    #[test]
    fn one_ply_is_the_average_of_best_replies() {
        let pos = Position::start(Variant::Portes, Side::White);
        let b = Board::from_position(&pos, Side::White);
        let s = search(Variant::Portes, &PubEval);
        let mut sc = Scratch::default();
        let p1 = s.evaluate(&mut sc, &b, 1).unwrap();
        // By hand: the same average computed with best_play per roll.
        let mut want = 0f32;
        let mut plays = Vec::new();
        for roll in Dice::all_rolls() {
            plays.clear();
            generate_positions(Variant::Portes, &b, roll, &mut plays);
            let (_, v) = s.best_play(&mut sc, &plays, 0).unwrap();
            want += roll_weight(roll) * v.win;
        }
        assert!((p1.win - want).abs() < 1e-5, "{} vs {want}", p1.win);
    }

    #[test]
    fn ranking_values_are_each_plays_own_value() {
        // The 0-ply values of a ranking come from one run of the net over the plays
        // (`values0`); each must be the bits of that play valued alone, including the
        // exact ones (plays that end the game, bear-offs from the database, R7, R9).
        use rand::{Rng, SeedableRng};
        for v in [Variant::Portes, Variant::Plakoto, Variant::Fevga] {
            let nets = crate::eval::net::load_default(v).unwrap();
            let s = search(v, &*nets);
            let mut sc = Scratch::default();
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(21);
            let (mut plays, mut ranked) = (Vec::new(), Vec::new());
            let start = Board::from_position(&Position::start(v, Side::White), Side::White);
            let (mut games, mut board) = (0, start);
            let mut exact = 0;
            while games < 30 {
                let dice = Dice::new(rng.random_range(1..=6), rng.random_range(1..=6)).unwrap();
                plays.clear();
                crate::rules::movegen::generate(v, &board, dice, &mut plays);
                s.rank(&mut sc, &plays, 0, &mut ranked).unwrap();
                assert_eq!(ranked.len(), plays.len());
                for &(i, value, _) in &ranked {
                    let alone = s.play_value(&mut sc, &plays[i], 0).unwrap();
                    let bits = |p: Probabilities| {
                        [p.win, p.win_mars, p.lose_mars, p.draw].map(f32::to_bits)
                    };
                    assert_eq!(bits(value), bits(alone), "{v:?} play {i}");
                    exact += (value.win == 1.0 || value.win == 0.0) as usize;
                }
                let p = plays[rng.random_range(0..plays.len())];
                if p.outcome.is_some() {
                    games += 1;
                    board = start;
                } else {
                    board = p.board.mirror(v);
                }
            }
            assert!(exact > 0, "{v:?}: no exact value met");
        }
    }

    #[test]
    fn deadline_in_the_past_is_exceeded() {
        let pos = Position::start(Variant::Portes, Side::White);
        let b = Board::from_position(&pos, Side::White);
        let mut s = search(Variant::Portes, &PubEval);
        s.stop.deadline = Some(Instant::now());
        let mut sc = Scratch::default();
        assert_eq!(s.evaluate(&mut sc, &b, 2), Err(EvalError::DeadlineExceeded));
        // 0 plies never searches: no deadline check needed.
        assert!(s.evaluate(&mut sc, &b, 0).is_ok());
    }

    #[test]
    fn cancelled_token_stops_the_search() {
        let pos = Position::start(Variant::Portes, Side::White);
        let b = Board::from_position(&pos, Side::White);
        let token = crate::eval::CancelToken::new();
        let mut s = search(Variant::Portes, &PubEval);
        s.stop.cancel = Some(&token);
        let mut sc = Scratch::default();
        assert!(s.evaluate(&mut sc, &b, 1).is_ok());
        token.cancel();
        assert_eq!(s.evaluate(&mut sc, &b, 1), Err(EvalError::Cancelled));
        // Cancellation wins over a passed deadline.
        s.stop.deadline = Some(Instant::now());
        assert_eq!(s.evaluate(&mut sc, &b, 2), Err(EvalError::Cancelled));
    }
}
