//! The [`Engine`]: what the service and the CLI call to evaluate positions and rank
//! plays ([`PositionEvaluator`]).
//!
//! Which evaluator answers (reported in [`Evaluation::evaluator`]):
//! 1. a finished game (R9): its outcome as certain, `game-over`;
//! 2. a no-contact bear-off: the exact database, `bearoff-exact` (exact at any depth,
//!    so reported with 0 plies);
//! 3. otherwise the static evaluator of the variant searched `plies` deep
//!    ([`super::search`]), named by [`Evaluator::name`]. With no static evaluator for
//!    the variant, contact positions give [`EvalError::Unavailable`].

use super::bearoff::{is_no_contact_bearoff, BearoffDb};
use super::rollout::{RolloutConfig, RolloutReport, RolloutSums};
use super::sanity::outcome_for_turn;
use super::search::{game_over_probabilities, with_scratch, MoveFilter, Search, Searcher};
use super::{
    EvalError, EvalOptions, Evaluation, Evaluator, PositionEvaluator, Probabilities, RankedPlay,
    RawRanking, StopWhen, MAX_PLIES,
};
use crate::rules::board::Board;
use crate::rules::movegen::{generate, PlayResult, RawPlay};
use crate::rules::play::to_play;
use crate::rules::{Dice, Position, Variant};
use std::sync::Arc;

/// Position evaluation with per-variant static evaluators, the exact bear-off
/// database and n-ply search.
#[derive(Clone)]
pub struct Engine {
    /// Static evaluators indexed by variant (Portes, Plakoto, Fevga).
    static_evals: [Option<Arc<dyn Evaluator>>; 3],
    bearoff: &'static BearoffDb,
    filter: MoveFilter,
}

/// Index of a variant in per-variant arrays: the order of [`Variant::ALL`].
#[inline]
pub fn variant_index(v: Variant) -> usize {
    match v {
        Variant::Portes => 0,
        Variant::Plakoto => 1,
        Variant::Fevga => 2,
    }
}

impl Engine {
    /// An engine with the given static evaluators, indexed as [`Variant::ALL`]
    /// (Portes, Plakoto, Fevga); `None` makes contact positions of that variant
    /// [`EvalError::Unavailable`]. Builds the bear-off database if not yet built.
    pub fn new(static_evals: [Option<Arc<dyn Evaluator>>; 3]) -> Engine {
        Engine {
            static_evals,
            bearoff: BearoffDb::global(),
            filter: MoveFilter::default(),
        }
    }

    /// The same as [`Engine::new`] with one argument per variant, e.g. the baselines:
    /// `Engine::with_evaluators(Some(Arc::new(PubEval)), Some(Arc::new(Heuristic)),
    /// Some(Arc::new(Heuristic)))`.
    pub fn with_evaluators(
        portes: Option<Arc<dyn Evaluator>>,
        plakoto: Option<Arc<dyn Evaluator>>,
        fevga: Option<Arc<dyn Evaluator>>,
    ) -> Engine {
        Engine::new([portes, plakoto, fevga])
    }

    /// The engine of the service: the committed trained nets
    /// ([`crate::eval::net::load_default`]); a variant without a valid committed net
    /// has no static evaluator (contact positions are [`EvalError::Unavailable`];
    /// bear-offs and finished games are still answered). No baseline is substituted.
    pub fn load_default() -> Engine {
        let net = |v: Variant| crate::eval::net::load_default(v).map(|n| n as Arc<dyn Evaluator>);
        Engine::new([
            net(Variant::Portes),
            net(Variant::Plakoto),
            net(Variant::Fevga),
        ])
    }

    /// Replaces the move filter of the search (default: 8 plays within 0.16).
    pub fn with_filter(mut self, filter: MoveFilter) -> Engine {
        self.filter = filter;
        self
    }

    /// The static evaluator of a variant, if any.
    pub fn static_evaluator(&self, variant: Variant) -> Option<&Arc<dyn Evaluator>> {
        self.static_evals[variant_index(variant)].as_ref()
    }

    /// The search of one variant that stops as `stop` says (board-level API).
    pub fn search<'a>(&'a self, variant: Variant, stop: StopWhen<'a>) -> Search<'a> {
        Search {
            variant,
            bearoff: self.bearoff,
            static_eval: self.static_evaluator(variant).map(|e| &**e),
            filter: self.filter,
            stop,
        }
    }

    /// Evaluates a mover-relative board whose game is not over (board-level
    /// [`PositionEvaluator::evaluate`]).
    pub fn evaluate_board(
        &self,
        variant: Variant,
        board: &Board,
        opts: EvalOptions,
    ) -> Result<Evaluation, EvalError> {
        if let Some((won, o)) = board.game_over_for_mover(variant) {
            let p = game_over_probabilities(won, o);
            return Ok(evaluation(p, "game-over".into(), 0));
        }
        if let Some(p) = self.bearoff.eval_board(variant, board) {
            return Ok(evaluation(p, "bearoff-exact".into(), 0));
        }
        let Some(e) = self.static_evaluator(variant) else {
            return Err(EvalError::Unavailable(format!(
                "no static evaluator for {variant} contact positions"
            )));
        };
        let plies = opts.plies.min(MAX_PLIES);
        let s = self.search(variant, opts.stop_when());
        let p = with_scratch(|sc| s.evaluate(sc, board, plies))?;
        Ok(evaluation(p, e.name(variant), plies))
    }

    /// Ranks the plays of a board (board-level [`PositionEvaluator::rank_plays`];
    /// boards from [`crate::rules::movegen::generate_positions`] or plays from
    /// [`generate`]): `out` gets `(index into plays, mover's probabilities, plies
    /// searched)`, best first (see [`Search::rank`]; by `opts.measure` at the root
    /// when set, [`Search::rank_by`]).
    pub fn rank_raw<P: PlayResult>(
        &self,
        variant: Variant,
        plays: &[P],
        opts: EvalOptions,
        out: &mut Vec<(usize, Probabilities, u8)>,
    ) -> Result<(), EvalError> {
        let s = self.search(variant, opts.stop_when());
        with_scratch(|sc| s.rank_by(sc, plays, opts.plies, opts.measure.as_ref(), out))
    }
}

/// A ranking of the engine: the mover's board, the plays as generated, and
/// `(index, probabilities, plies)` best first.
type Ranked = (Board, Vec<RawPlay>, Vec<(usize, Probabilities, u8)>);

impl Engine {
    /// Every legal play of `pos` with `dice`, generated and ranked (the work of both
    /// `rank_plays` and `rank_raw_plays`).
    fn ranked_raw(
        &self,
        pos: &Position,
        dice: Dice,
        opts: EvalOptions,
    ) -> Result<Ranked, EvalError> {
        pos.validate_playable()?;
        let board = Board::from_position(pos, pos.turn);
        let mut plays = Vec::with_capacity(64);
        generate(pos.variant, &board, dice, &mut plays);
        let mut ranked = Vec::with_capacity(plays.len());
        self.rank_raw(pos.variant, &plays, opts, &mut ranked)?;
        Ok((board, plays, ranked))
    }
}

fn evaluation(p: Probabilities, evaluator: String, plies: u8) -> Evaluation {
    Evaluation {
        probabilities: p,
        equity: p.equity(),
        evaluator,
        plies,
    }
}

impl PositionEvaluator for Engine {
    /// Errors: [`EvalError::Rules`] for an invalid position (R9);
    /// [`EvalError::Unavailable`] for a contact position of a variant without a
    /// static evaluator; [`EvalError::DeadlineExceeded`]. Plies above [`MAX_PLIES`]
    /// are capped (the answer reports the plies used).
    fn evaluate(&self, pos: &Position, opts: EvalOptions) -> Result<Evaluation, EvalError> {
        pos.validate()?;
        if let Some(o) = pos.game_over() {
            return Ok(evaluation(outcome_for_turn(pos, &o), "game-over".into(), 0));
        }
        let board = Board::from_position(pos, pos.turn);
        self.evaluate_board(pos.variant, &board, opts)
    }

    /// Every legal play, valued for the mover after it: at `plies >= 1` the move
    /// filter's candidates are searched at `plies` and come first, best first; the
    /// other plays keep their 0-ply values and follow, best first (as GNU Backgammon
    /// lists them); [`RankedPlay::plies`] says which depth valued each play. At 0
    /// plies every play is at 0 plies, best first. "Best" is by equity, or by
    /// `opts.measure` when set ([`Search::rank_by`]). Ties keep generation order.
    /// Errors: as [`PositionEvaluator::evaluate`], plus
    /// [`crate::rules::RulesError::GameOver`] for a finished game (it has no plays).
    fn rank_plays(
        &self,
        pos: &Position,
        dice: Dice,
        opts: EvalOptions,
    ) -> Result<Vec<RankedPlay>, EvalError> {
        let (_, plays, ranked) = self.ranked_raw(pos, dice, opts)?;
        Ok(ranked
            .into_iter()
            .map(|(i, p, plies)| RankedPlay {
                play: to_play(pos.variant, pos.turn, &plays[i]),
                equity: p.equity(),
                probabilities: p,
                plies,
            })
            .collect())
    }

    /// The ranking of [`PositionEvaluator::rank_plays`] without converting the plays,
    /// with the evaluator that answered (a contact position of a variant without a
    /// static evaluator is [`EvalError::Unavailable`], as for `evaluate`).
    fn rank_raw_plays(
        &self,
        pos: &Position,
        dice: Dice,
        opts: EvalOptions,
    ) -> Result<RawRanking, EvalError> {
        let plies = opts.plies.min(MAX_PLIES);
        let (board, plays, ranked) = self.ranked_raw(pos, dice, opts)?;
        let (evaluator, plies) = if is_no_contact_bearoff(pos.variant, &board) {
            ("bearoff-exact".to_string(), 0)
        } else {
            match self.static_evaluator(pos.variant) {
                Some(e) => (e.name(pos.variant), plies),
                None => {
                    return Err(EvalError::Unavailable(format!(
                        "no static evaluator for {} contact positions",
                        pos.variant
                    )))
                }
            }
        };
        Ok(RawRanking {
            plays,
            ranked,
            evaluator,
            plies,
        })
    }

    /// [`super::rollout::rollout`] with this engine's evaluators.
    fn rollout(
        &self,
        pos: &Position,
        dice: Option<Dice>,
        cfg: &RolloutConfig,
        stop: StopWhen<'_>,
        on_report: &mut dyn FnMut(&RolloutReport) -> std::ops::ControlFlow<()>,
    ) -> Result<RolloutReport, EvalError> {
        super::rollout::rollout(self, pos, dice, cfg, stop, on_report)
    }

    /// [`super::rollout::merge`] with this engine's evaluators.
    fn rollout_merge(
        &self,
        pos: &Position,
        dice: Option<Dice>,
        cfg: &RolloutConfig,
        parts: &[RolloutSums],
    ) -> Result<RolloutReport, EvalError> {
        super::rollout::merge(self, pos, dice, cfg, parts)
    }
}

impl Searcher for Engine {
    fn search<'a>(&'a self, variant: Variant, stop: StopWhen<'a>) -> Search<'a> {
        Engine::search(self, variant, stop)
    }
}

/// True when the board is a no-contact bear-off answered exactly (re-export for
/// callers that report which evaluator will answer).
pub fn is_exact_bearoff(variant: Variant, board: &Board) -> bool {
    is_no_contact_bearoff(variant, board)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::pubeval::PubEval;
    use crate::rules::{legal_plays, Side};
    use crate::train::heuristic::Heuristic;

    fn baselines() -> Engine {
        Engine::with_evaluators(
            Some(Arc::new(PubEval)),
            Some(Arc::new(Heuristic)),
            Some(Arc::new(Heuristic)),
        )
    }

    #[test]
    fn game_over_is_certain() {
        let mut pos = Position::empty(Variant::Portes, Side::Black);
        pos.add(Side::Black, 20, 15);
        pos.off = [15, 0];
        let e = baselines().evaluate(&pos, EvalOptions::default()).unwrap();
        assert_eq!(e.evaluator, "game-over");
        assert_eq!(e.probabilities.lose_mars, 1.0);
        assert_eq!(e.equity, -2.0);
    }

    #[test]
    fn no_evaluator_is_unavailable_for_contact_but_not_for_bearoff() {
        let engine = Engine::new([None, None, None]);
        let pos = Position::start(Variant::Fevga, Side::White);
        assert!(matches!(
            engine.evaluate(&pos, EvalOptions::default()),
            Err(EvalError::Unavailable(_))
        ));
        let mut pos = Position::empty(Variant::Fevga, Side::White);
        pos.add(Side::White, 1, 1).add(Side::Black, 13, 1);
        pos.off = [14, 14];
        let e = engine.evaluate(&pos, EvalOptions::default()).unwrap();
        assert_eq!(
            (e.evaluator.as_str(), e.probabilities.win),
            ("bearoff-exact", 1.0)
        );
    }

    #[test]
    fn forced_play_is_ranked_first() {
        // Two White checkers on the bar and 6-5: both dice must enter (R4), one way.
        let mut pos = Position::empty(Variant::Portes, Side::White);
        pos.bar[0] = 2;
        pos.add(Side::White, 6, 13).add(Side::Black, 24, 15);
        pos.validate().unwrap();
        let dice = Dice::new(6, 5).unwrap();
        let legal = legal_plays(&pos, dice).unwrap();
        assert_eq!(legal.len(), 1);
        for plies in 0..=2 {
            let r = baselines()
                .rank_plays(
                    &pos,
                    dice,
                    EvalOptions {
                        plies,
                        deadline: None,
                        cancel: None,
                        measure: None,
                    },
                )
                .unwrap();
            assert_eq!(r.len(), 1);
            assert_eq!(r[0].play, legal[0]);
        }
    }

    #[test]
    fn ranking_is_sorted_and_capped() {
        let pos = Position::start(Variant::Portes, Side::White);
        let dice = Dice::new(3, 1).unwrap();
        let r = baselines()
            .rank_plays(
                &pos,
                dice,
                EvalOptions {
                    plies: 9,
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(r.len(), legal_plays(&pos, dice).unwrap().len());
        // pubeval's choice for the opening 3-1 is the classic 8/5 6/5.
        assert_eq!(r[0].play.notation, "8/5 6/5");
        let e = baselines()
            .evaluate(
                &pos,
                EvalOptions {
                    plies: 9,
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(e.plies, MAX_PLIES);
    }
}
