//! [`TavliEngineService`]: the RPCs of `tavli.v1.TavliEngine`.
//!
//! Each RPC has a plain synchronous method (`list_legal_plays`, `apply_play`, ...)
//! taking the request message and returning the response or a [`ServiceError`]; the
//! tonic trait implementation only wraps them (and the CLI calls them directly).

use super::convert::{self, PositionInput};
use super::error::{AtField, ServiceError};
use super::limits::{DeepPermit, DeepSearchLimit};
use super::pb;
use super::wire;
use crate::analysis::{self, Thresholds};
use crate::bot::{self, Level, MatchScore, Settings};
use crate::eval::{
    CancelToken, EndValues, EvalOptions, PositionEvaluator, Probabilities, MAX_PLIES,
};
use crate::rules::movegen::RawPlay;
use crate::rules::play::to_play;
use crate::rules::{self, Dice, PlayInput, Position, Side, Variant};
use crate::telemetry::Metrics;
use std::sync::Arc;
use std::time::Instant;

/// The engine service: stateless, cheap to clone.
///
/// `evaluator` is `None` until an evaluator is plugged in; `Evaluate` then answers
/// `UNIMPLEMENTED`.
#[derive(Clone)]
pub struct TavliEngineService {
    pub(super) evaluator: Option<Arc<dyn PositionEvaluator>>,
    pub(super) max_plies: u8,
    metrics: Option<Arc<Metrics>>,
    /// `tavli_plays_per_request` of each variant (in [`Variant::ALL`]'s order),
    /// resolved once: ListLegalPlays observes it without a label lookup per call.
    plays_per_request: Option<[prometheus::Histogram; 3]>,
    /// Most trials of one `Rollout` ([`super::rollout`]).
    pub(super) max_rollout_trials: u32,
    /// Admission of deep searches (none: every search runs at once).
    pub(super) deep: Option<Arc<DeepSearchLimit>>,
    /// The server's token: cancelled when the drain time is over.
    pub(super) cancel: CancelToken,
}

impl std::fmt::Debug for TavliEngineService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TavliEngineService")
            .field("evaluator", &self.evaluator.is_some())
            .field("max_plies", &self.max_plies)
            .finish()
    }
}

/// The default server cap on `RolloutRequest.trials` (36³; flag
/// `--max-rollout-trials`).
pub const DEFAULT_MAX_ROLLOUT_TRIALS: u32 = 46_656;

/// Most items of one `EvaluateBatch` (proto: "At most 1000 items").
pub const MAX_BATCH_REQUESTS: usize = 1000;

/// An `Evaluate` request (or `EvaluateBatch` item) after its checks.
#[derive(Clone, Debug)]
pub(super) struct EvaluateJob {
    pos: Position,
    dice: Option<Dice>,
    pub(super) plies: u8,
    /// The play to grade (`grade`), resolved, and the marks' thresholds.
    grade: Option<(rules::Play, Thresholds)>,
    /// The match score (`match_state`): ranking by match winning chance.
    score: Option<MatchScore>,
}

/// A `ChoosePlay` request after its checks.
#[derive(Clone, Copy, Debug)]
pub(super) struct ChooseJob {
    pos: Position,
    dice: Dice,
    level: Level,
    /// The level's noise and depth, the depth capped by the server's.
    pub(super) settings: Settings,
    score: Option<MatchScore>,
    seed: u64,
}

/// The skill level of a `ChoosePlay` request (field `level`).
fn level_from_pb(v: i32) -> Result<Level, ServiceError> {
    use pb::SkillLevel as L;
    Ok(match L::try_from(v) {
        Ok(L::Beginner) => Level::Beginner,
        Ok(L::Casual) => Level::Casual,
        Ok(L::Intermediate) => Level::Intermediate,
        Ok(L::Advanced) => Level::Advanced,
        Ok(L::Expert) => Level::Expert,
        Ok(L::WorldClass) => Level::WorldClass,
        Ok(L::Best) => Level::Best,
        Ok(L::Unspecified) => {
            return Err(ServiceError::invalid(
                "level",
                "a skill level is required: SKILL_LEVEL_BEGINNER .. SKILL_LEVEL_BEST",
            ))
        }
        Err(_) => {
            return Err(ServiceError::invalid(
                "level",
                format!(
                    "unknown skill level {v}: SKILL_LEVEL_BEGINNER (1) .. SKILL_LEVEL_BEST (7)"
                ),
            ))
        }
    })
}

/// The protobuf form of a skill level.
fn level_to_pb(l: Level) -> pb::SkillLevel {
    use pb::SkillLevel as L;
    match l {
        Level::Beginner => L::Beginner,
        Level::Casual => L::Casual,
        Level::Intermediate => L::Intermediate,
        Level::Advanced => L::Advanced,
        Level::Expert => L::Expert,
        Level::WorldClass => L::WorldClass,
        Level::Best => L::Best,
    }
}

/// The match score of a request's `match_state` (`Evaluate`, `ChoosePlay`,
/// `Rollout`; fields `match_state.*`): a length of at least 1 within the match equity
/// table's range, both scores below it, no winner, and the position's variant if one
/// is named.
pub(super) fn match_score_from_pb(
    m: &pb::MatchState,
    variant: Variant,
) -> Result<MatchScore, ServiceError> {
    let score = MatchScore::new(m.length, [m.score_white, m.score_black]).at("match_state")?;
    if m.winner != pb::Side::Unspecified as i32 || m.match_over {
        let field = if m.match_over {
            "match_state.match_over"
        } else {
            "match_state.winner"
        };
        return Err(ServiceError::invalid(
            field,
            "the match is over: a score-aware answer needs a match going on",
        ));
    }
    if m.variant != pb::Variant::Unspecified as i32 {
        let v = convert::variant_from_pb(m.variant, "match_state.variant")?;
        if v != variant {
            return Err(ServiceError::invalid(
                "match_state.variant",
                format!("the match's game is {v}, the position is {variant}"),
            ));
        }
    }
    Ok(score)
}

/// The mover's match winning chance of probabilities `p` by `m` (a match's end
/// values), in `[0, 1]`, for the answer's `match_winning_chance` fields; `None`
/// without a match.
pub(super) fn mwc(m: Option<&EndValues>, p: &Probabilities) -> Option<f32> {
    m.map(|m| m.value(p).clamp(0.0, 1.0) as f32)
}

/// Records the variant on the current RPC span (see [`crate::telemetry`]).
fn record_variant(v: Variant) {
    tracing::Span::current().record("variant", v.name());
}

impl TavliEngineService {
    /// A service with an optional evaluator and a cap on the evaluation depth
    /// (clamped to [`MAX_PLIES`]), recording domain metrics into `metrics` if given.
    pub fn new(
        evaluator: Option<Arc<dyn PositionEvaluator>>,
        max_plies: u8,
        metrics: Option<Arc<Metrics>>,
    ) -> TavliEngineService {
        let plays_per_request = metrics
            .as_ref()
            .map(|m| Variant::ALL.map(|v| m.plays_per_request.with_label_values(&[v.name()])));
        TavliEngineService {
            evaluator,
            max_plies: max_plies.min(MAX_PLIES),
            metrics,
            plays_per_request,
            max_rollout_trials: DEFAULT_MAX_ROLLOUT_TRIALS,
            deep: None,
            cancel: CancelToken::new(),
        }
    }

    /// The evaluator behind `Evaluate` and `AnalyzeGame`, if any.
    pub(crate) fn evaluator(&self) -> Option<&Arc<dyn PositionEvaluator>> {
        self.evaluator.as_ref()
    }

    /// The deepest search this service accepts.
    pub(crate) fn max_plies(&self) -> u8 {
        self.max_plies
    }

    /// The same service with another cap on `Rollout` trials (at least 1).
    pub fn with_max_rollout_trials(mut self, max: u32) -> TavliEngineService {
        self.max_rollout_trials = max.max(1);
        self
    }

    /// A deep-search slot for a streaming RPC (`Rollout`, `AnalyzeGame`), held by its
    /// work until it stops; none without a deep-search limit.
    pub(super) async fn admit_stream(
        &self,
        deadline: Option<Instant>,
    ) -> Result<Option<DeepPermit>, ServiceError> {
        let Some(deep) = &self.deep else {
            return Ok(None);
        };
        match deep.admit_stream(deadline).await {
            Ok(slot) => Ok(Some(slot)),
            Err(e) => {
                if let Some(m) = &self.metrics {
                    m.refused.with_label_values(&["deep_search"]).inc();
                }
                Err(e)
            }
        }
    }

    /// The same service with deep searches admitted by `deep` and every search
    /// cancelled when `cancel` is (the server's shutdown token).
    pub fn with_limits(mut self, deep: Arc<DeepSearchLimit>, cancel: CancelToken) -> Self {
        self.deep = Some(deep);
        self.cancel = cancel;
        self
    }

    /// `ListLegalPlays`: every legal play (R3–R8), each with its whole resulting
    /// position, or with its Position ID only when `detail` is `PLAY_DETAIL_COMPACT`.
    /// Errors: invalid position or dice (R9), unknown `detail`, game over.
    pub fn list_legal_plays(
        &self,
        req: &pb::ListLegalPlaysRequest,
    ) -> Result<pb::ListLegalPlaysResponse, ServiceError> {
        let (pos, dice, compact, plays) = self.legal_plays_of(req)?;
        Ok(pb::ListLegalPlaysResponse {
            position: Some(convert::position_to_pb(&pos)),
            dice: Some(convert::dice_to_pb(dice)),
            plays: plays
                .iter()
                .map(|p| convert::play_to_pb(to_play(pos.variant, pos.turn, p), compact))
                .collect(),
        })
    }

    /// `ListLegalPlays` as the server answers it: the protobuf bytes of the response
    /// that [`list_legal_plays`](Self::list_legal_plays) returns, written without
    /// building the message ([`wire`]). Errors: the same.
    pub fn list_legal_plays_encoded(
        &self,
        req: &pb::ListLegalPlaysRequest,
    ) -> Result<Vec<u8>, ServiceError> {
        let answer = self.list_legal_plays_answer(req)?;
        let mut out = Vec::with_capacity(answer.size_hint());
        answer.encode(&mut out);
        Ok(out)
    }

    /// `ListLegalPlays` as the server answers it, before its bytes are written: the
    /// server's encoder writes them straight into the response buffer
    /// ([`wire::LegalPlaysAnswer::encode`]). Errors: the same.
    pub fn list_legal_plays_answer(
        &self,
        req: &pb::ListLegalPlaysRequest,
    ) -> Result<wire::LegalPlaysAnswer, ServiceError> {
        let (position, dice, compact, plays) = self.legal_plays_of(req)?;
        Ok(wire::LegalPlaysAnswer {
            position,
            dice,
            plays,
            compact,
        })
    }

    /// The checked request of `ListLegalPlays` (position, dice, compact) and its plays
    /// as the generator gives them (converted by `list_legal_plays`, written by `wire`).
    fn legal_plays_of(
        &self,
        req: &pb::ListLegalPlaysRequest,
    ) -> Result<(Position, Dice, bool, Vec<RawPlay>), ServiceError> {
        let pos = convert::position_input(req.position.as_ref().map(PositionInput::from))?;
        record_variant(pos.variant);
        let dice = convert::dice_from_pb(req.dice.as_ref(), "dice")?;
        let compact = convert::compact_from_pb(req.detail, "detail")?;
        let plays = rules::play::legal_raw_plays(&pos, dice).at("position")?;
        if let Some(h) = &self.plays_per_request {
            let i = match pos.variant {
                Variant::Portes => 0,
                Variant::Plakoto => 1,
                Variant::Fevga => 2,
            };
            h[i].observe(plays.len() as f64);
        }
        Ok((pos, dice, compact, plays))
    }

    /// `ApplyPlay`: the new position (turn passed) and the outcome. Errors: as
    /// `ListLegalPlays`, plus field `play` (or a sub-field) for a malformed or illegal play.
    pub fn apply_play(
        &self,
        req: &pb::ApplyPlayRequest,
    ) -> Result<pb::ApplyPlayResponse, ServiceError> {
        let pos = convert::position_input(req.position.as_ref().map(PositionInput::from))?;
        record_variant(pos.variant);
        let dice = convert::dice_from_pb(req.dice.as_ref(), "dice")?;
        let play = resolve_play(&pos, dice, req.play.as_ref(), "play")?;
        Ok(pb::ApplyPlayResponse {
            position: Some(convert::position_to_pb(&play.position)),
            outcome: play.outcome.as_ref().map(convert::outcome_to_pb),
            moves: play.moves.iter().map(convert::move_to_pb).collect(),
            notation: play.notation.into(),
        })
    }

    /// `Evaluate`: the position's evaluation and, with dice, the ranked plays.
    /// `UNIMPLEMENTED` without an evaluator; `plies` above the server's cap is
    /// `INVALID_ARGUMENT` on `plies`; `deadline` is passed to the evaluator.
    pub fn evaluate(
        &self,
        req: &pb::EvaluateRequest,
        deadline: Option<Instant>,
    ) -> Result<pb::EvaluateResponse, ServiceError> {
        self.evaluate_with(req, deadline, None)
    }

    /// The evaluator, or `UNIMPLEMENTED` when none is loaded.
    fn loaded_evaluator(&self) -> Result<&Arc<dyn PositionEvaluator>, ServiceError> {
        self.evaluator.as_ref().ok_or_else(|| {
            ServiceError::Unimplemented(
                "Evaluate is not available yet: no evaluator is loaded on this server \
                 (ListLegalPlays and ApplyPlay work)"
                    .to_string(),
            )
        })
    }

    /// The checks of one `Evaluate` request (the variant recorded on the RPC span if
    /// `record`): its position, dice and plies, ready for [`Self::run_evaluate`].
    /// Errors: as [`evaluate`](Self::evaluate), before any search. `EvaluateBatch`
    /// checks each of its items with it.
    pub(super) fn evaluate_checked(
        &self,
        req: &pb::EvaluateRequest,
        record: bool,
    ) -> Result<EvaluateJob, ServiceError> {
        let pos = convert::position_input(req.position.as_ref().map(PositionInput::from))?;
        if record {
            record_variant(pos.variant);
        }
        let dice = req
            .dice
            .as_ref()
            .map(|d| convert::dice_from_pb(Some(d), "dice"))
            .transpose()?;
        if req.plies > self.max_plies as u32 {
            return Err(ServiceError::invalid(
                "plies",
                format!(
                    "plies must be 0..{} on this server, got {}",
                    self.max_plies, req.plies
                ),
            ));
        }
        let grade = match (&req.grade, dice) {
            (None, _) => None,
            (Some(_), None) => {
                return Err(ServiceError::invalid(
                    "grade",
                    "a play to grade needs its roll: set dice",
                ))
            }
            (Some(g), Some(dice)) => {
                let play = g.play.as_ref().map(as_apply_play);
                let play = resolve_play(&pos, dice, play.as_ref(), "grade.play")?;
                let thresholds =
                    convert::thresholds_from_pb(g.thresholds.as_ref(), "grade.thresholds")?;
                Some((play, thresholds))
            }
        };
        let score = req
            .match_state
            .as_ref()
            .map(|m| match_score_from_pb(m, pos.variant))
            .transpose()?;
        self.loaded_evaluator()?;
        Ok(EvaluateJob {
            pos,
            dice,
            plies: req.plies as u8,
            grade,
            score,
        })
    }

    /// [`evaluate`](Self::evaluate) that also stops with `CANCELLED` once `cancel` is
    /// cancelled.
    pub fn evaluate_with(
        &self,
        req: &pb::EvaluateRequest,
        deadline: Option<Instant>,
        cancel: Option<CancelToken>,
    ) -> Result<pb::EvaluateResponse, ServiceError> {
        let job = self.evaluate_checked(req, true)?;
        self.run_evaluate(&job, deadline, cancel)
    }

    /// The answer of one checked `Evaluate` request: the one evaluation of both
    /// `Evaluate` and every `EvaluateBatch` item.
    fn run_evaluate(
        &self,
        job: &EvaluateJob,
        deadline: Option<Instant>,
        cancel: Option<CancelToken>,
    ) -> Result<pb::EvaluateResponse, ServiceError> {
        let EvaluateJob {
            pos, dice, plies, ..
        } = *job;
        let evaluator = self.loaded_evaluator()?;
        if let Some(m) = &self.metrics {
            m.evaluation_plies
                .with_label_values(&[pos.variant.name()])
                .observe(plies as f64);
        }
        let measure = bot::Measure::for_match(job.score.as_ref(), pos.variant, pos.turn);
        let m = measure.end_values();
        let opts = EvalOptions {
            plies,
            deadline,
            cancel,
            measure: m,
        };
        let eval = evaluator.evaluate(&pos, opts.clone()).at("position")?;
        if let Some(m) = &self.metrics {
            m.evaluations
                .with_label_values(&[eval.evaluator.as_str(), &eval.plies.to_string()])
                .inc();
        }
        // A finished game (R9) is answered as its certain outcome, with no plays.
        let ranked = match dice {
            Some(d) if pos.game_over().is_none() => {
                evaluator.rank_plays(&pos, d, opts.clone()).at("position")?
            }
            _ => Vec::new(),
        };
        // Graded as AnalyzeGame grades a turn (a play to grade implies dice and a
        // game not over: checked with the request).
        let grade = match &job.grade {
            Some((play, thresholds)) if !ranked.is_empty() => {
                let g = analysis::grade_play(
                    &**evaluator,
                    play,
                    ranked.len(),
                    &ranked,
                    thresholds,
                    &opts,
                )
                .at("position")?;
                Some(pb::PlayGrade {
                    play: Some(convert::play_to_pb(play.clone(), false)),
                    equity: g.played_equity,
                    probabilities: Some(convert::probabilities_to_pb(&g.played_probabilities)),
                    plies: g.plies as u32,
                    best_play: Some(convert::play_to_pb(g.best, false)),
                    best_equity: g.best_equity,
                    error: g.error,
                    mark: convert::mark_to_pb(g.mark) as i32,
                    legal_plays: ranked.len() as u32,
                    match_winning_chance: mwc(m.as_ref(), &g.played_probabilities),
                    best_match_winning_chance: mwc(m.as_ref(), &g.best_probabilities),
                })
            }
            _ => None,
        };
        Ok(pb::EvaluateResponse {
            position: Some(convert::position_to_pb(&pos)),
            probabilities: Some(convert::probabilities_to_pb(&eval.probabilities)),
            equity: eval.equity,
            evaluator: eval.evaluator,
            plies: eval.plies as u32,
            ranked_plays: ranked
                .into_iter()
                .map(|r| pb::RankedPlay {
                    play: Some(convert::play_to_pb(r.play, false)),
                    equity: r.equity,
                    probabilities: Some(convert::probabilities_to_pb(&r.probabilities)),
                    plies: r.plies as u32,
                    match_winning_chance: mwc(m.as_ref(), &r.probabilities),
                    normalized_equity: m.map(|_| opts.points(&r.probabilities)),
                })
                .collect(),
            grade,
            ranking: measure.name().to_string(),
            match_winning_chance: mwc(m.as_ref(), &eval.probabilities),
            normalized_equity: m.map(|_| opts.points(&eval.probabilities)),
        })
    }

    /// The checked items of an `EvaluateBatch`: 1..=[`MAX_BATCH_REQUESTS`] of them,
    /// each checked as `Evaluate` checks its request, errors under `requests[i]`.
    pub(super) fn evaluate_batch_checked(
        &self,
        req: &pb::EvaluateBatchRequest,
    ) -> Result<Vec<EvaluateJob>, ServiceError> {
        let n = req.requests.len();
        if !(1..=MAX_BATCH_REQUESTS).contains(&n) {
            return Err(ServiceError::invalid(
                "requests",
                format!("a batch holds 1..{MAX_BATCH_REQUESTS} requests, got {n}"),
            ));
        }
        req.requests
            .iter()
            .enumerate()
            .map(|(i, r)| {
                self.evaluate_checked(r, false)
                    .map_err(|e| e.at(&format!("requests[{i}]")))
            })
            .collect()
    }

    /// `EvaluateBatch` run here, item after item: every item is checked first, then
    /// each is answered as [`evaluate`](Self::evaluate) answers it. Errors: the first
    /// bad item's (`requests[i]...`), or the first failure of the work
    /// (`DEADLINE_EXCEEDED` once `deadline` passes).
    pub fn evaluate_batch(
        &self,
        req: &pb::EvaluateBatchRequest,
        deadline: Option<Instant>,
    ) -> Result<pb::EvaluateBatchResponse, ServiceError> {
        let jobs = self.evaluate_batch_checked(req)?;
        let mut responses = Vec::with_capacity(jobs.len());
        self.run_batch_items(&jobs, 0, deadline, None, &mut responses)?;
        Ok(pb::EvaluateBatchResponse { responses })
    }

    /// Answers `jobs`, items `first..` of a batch, into `out`, stopping at the
    /// deadline or when `cancel` is cancelled (checked before each item, and by the
    /// search inside it).
    pub(super) fn run_batch_items(
        &self,
        jobs: &[EvaluateJob],
        first: usize,
        deadline: Option<Instant>,
        cancel: Option<&CancelToken>,
        out: &mut Vec<pb::EvaluateResponse>,
    ) -> Result<(), ServiceError> {
        let stop = crate::eval::StopWhen { deadline, cancel };
        for (k, job) in jobs.iter().enumerate() {
            stop.check()?;
            let answer = self.run_evaluate(job, deadline, cancel.cloned());
            out.push(answer.map_err(|e| e.at(&format!("requests[{}]", first + k)))?);
        }
        Ok(())
    }

    /// A deep-search slot for a search of `plies` (`Evaluate`, an `EvaluateBatch`
    /// item), as [`DeepSearchLimit::admit`] grants it; none without a limit. A
    /// refusal is counted (`tavli_refused_total{reason="deep_search"}`).
    pub(super) async fn admit_search(
        &self,
        plies: u8,
        deadline: Option<Instant>,
    ) -> Result<Option<DeepPermit>, ServiceError> {
        let Some(deep) = &self.deep else {
            return Ok(None);
        };
        match deep.admit(plies, deadline).await {
            Ok(slot) => Ok(Some(slot)),
            Err(e) => {
                if let Some(m) = &self.metrics {
                    m.refused.with_label_values(&["deep_search"]).inc();
                }
                Err(e)
            }
        }
    }

    /// The checks of a `ChoosePlay` request (the variant recorded on the RPC span):
    /// position, dice, level, match state, an evaluator loaded; the seed drawn when
    /// none is given. Errors: INVALID_ARGUMENT naming the field, UNIMPLEMENTED
    /// without an evaluator.
    pub(super) fn choose_play_checked(
        &self,
        req: &pb::ChoosePlayRequest,
    ) -> Result<ChooseJob, ServiceError> {
        let pos = convert::position_input(req.position.as_ref().map(PositionInput::from))?;
        record_variant(pos.variant);
        let dice = convert::dice_from_pb(req.dice.as_ref(), "dice")?;
        let level = level_from_pb(req.level)?;
        let score = req
            .match_state
            .as_ref()
            .map(|m| match_score_from_pb(m, pos.variant))
            .transpose()?;
        self.loaded_evaluator()?;
        Ok(ChooseJob {
            pos,
            dice,
            level,
            settings: Settings::of(level, pos.variant, self.max_plies),
            score,
            seed: req.seed.unwrap_or_else(rand::random),
        })
    }

    /// `ChoosePlay`: the play a bot of the request's level makes ([`bot::choose`]),
    /// at the level's depth capped by the server's. Errors: as
    /// [`choose_play_checked`](Self::choose_play_checked), then a finished game
    /// (FAILED_PRECONDITION), the deadline and cancellation.
    pub fn choose_play(
        &self,
        req: &pb::ChoosePlayRequest,
        deadline: Option<Instant>,
    ) -> Result<pb::ChoosePlayResponse, ServiceError> {
        let job = self.choose_play_checked(req)?;
        self.run_choose(&job, deadline, None)
    }

    /// The answer of a checked `ChoosePlay` request, stopping with `CANCELLED` once
    /// `cancel` is cancelled.
    pub(super) fn run_choose(
        &self,
        job: &ChooseJob,
        deadline: Option<Instant>,
        cancel: Option<CancelToken>,
    ) -> Result<pb::ChoosePlayResponse, ServiceError> {
        let evaluator = self.loaded_evaluator()?;
        let opts = EvalOptions {
            plies: job.settings.plies,
            deadline,
            cancel,
            measure: None,
        };
        let c = bot::choose(
            &**evaluator,
            &job.pos,
            job.dice,
            job.settings,
            job.seed,
            job.score.as_ref(),
            opts,
        )
        .at("position")?;
        let outcome = c.play.outcome.as_ref().map(convert::outcome_to_pb);
        Ok(pb::ChoosePlayResponse {
            play: Some(convert::play_to_pb(c.play, false)),
            outcome,
            equity: c.value,
            best_equity: c.best_value,
            equity_loss: (c.best_value - c.value).max(0.0),
            probabilities: Some(convert::probabilities_to_pb(&c.probabilities)),
            level: level_to_pb(job.level) as i32,
            noise: job.settings.noise,
            evaluator: c.evaluator,
            plies: c.plies as u32,
            seed: job.seed,
            ranking: c.measure.name().to_string(),
            match_winning_chance: c.match_winning_chance.map(|v| v.0 as f32),
            best_match_winning_chance: c.match_winning_chance.map(|v| v.1 as f32),
        })
    }

    /// `GetStartingPosition` (R1). The side to move defaults to White.
    pub fn get_starting_position(
        &self,
        req: &pb::GetStartingPositionRequest,
    ) -> Result<pb::GetStartingPositionResponse, ServiceError> {
        let variant = convert::variant_from_pb(req.variant, "variant")?;
        record_variant(variant);
        let turn = convert::opt_side_from_pb(req.side_to_move, "side_to_move")?;
        let pos = Position::start(variant, turn.unwrap_or(Side::White));
        Ok(pb::GetStartingPositionResponse {
            position: Some(convert::position_to_pb(&pos)),
        })
    }

    /// `ResolveOpeningRoll` (R2). Errors name `white_die` / `black_die`.
    pub fn resolve_opening_roll(
        &self,
        req: &pb::ResolveOpeningRollRequest,
    ) -> Result<pb::ResolveOpeningRollResponse, ServiceError> {
        let d = |v: u32| u8::try_from(v).unwrap_or(u8::MAX);
        for (field, v) in [("white_die", req.white_die), ("black_die", req.black_die)] {
            if !(1..=6).contains(&v) {
                return Err(ServiceError::invalid(
                    field,
                    format!("die must be 1..6, got {v}"),
                ));
            }
        }
        Ok(
            match rules::resolve_opening_roll(d(req.white_die), d(req.black_die))? {
                rules::OpeningRoll::Starts(s) => pb::ResolveOpeningRollResponse {
                    starter: convert::side_to_pb(Some(s)) as i32,
                    roll_again: false,
                },
                rules::OpeningRoll::RollAgain => pb::ResolveOpeningRollResponse {
                    starter: pb::Side::Unspecified as i32,
                    roll_again: true,
                },
            },
        )
    }

    /// `AdvanceMatch` (R2). Errors name `match_state...` or `outcome...`.
    pub fn advance_match(
        &self,
        req: &pb::AdvanceMatchRequest,
    ) -> Result<pb::AdvanceMatchResponse, ServiceError> {
        let state = convert::match_from_pb(req.match_state.as_ref(), "match_state")?;
        record_variant(state.variant);
        let outcome = convert::outcome_from_pb(req.outcome.as_ref(), "outcome")?;
        let next = state.advance(&outcome).map_err(|e| match e {
            rules::RulesError::Invalid { field, reason } => {
                ServiceError::invalid(convert::match_error_field(&field), reason)
            }
            other => other.into(),
        })?;
        Ok(pb::AdvanceMatchResponse {
            match_state: Some(convert::match_to_pb(&next)),
        })
    }
}

/// The legal play of `pos` and `dice` that a request's play `oneof` (named `field`:
/// `play` in ApplyPlay, `grade.play` in Evaluate) stands for. Errors:
/// `INVALID_ARGUMENT` on `field` (none given, not legal, bad notation) or on the
/// member that was set (`{field}.notation`, `{field}.moves.moves[i]...`); the
/// position's errors (`position`, a finished game).
pub(super) fn resolve_play(
    pos: &Position,
    dice: Dice,
    play: Option<&pb::apply_play_request::Play>,
    field: &str,
) -> Result<rules::Play, ServiceError> {
    use pb::apply_play_request::Play as P;
    let member = |m: &str| format!("{field}.{m}");
    let input = match play {
        None => {
            return Err(ServiceError::invalid(
                field,
                "a play is required: set moves, notation, resulting_position or \
                 resulting_position_id",
            ))
        }
        Some(P::Moves(list)) => PlayInput::Moves(
            list.moves
                .iter()
                .enumerate()
                .map(|(i, m)| convert::move_from_pb(m, &member(&format!("moves.moves[{i}]"))))
                .collect::<Result<_, _>>()?,
        ),
        Some(P::Notation(s)) => PlayInput::Notation(s.clone()),
        Some(P::ResultingPosition(p)) => {
            PlayInput::Position(resulting(p, pos, &member("resulting_position"))?)
        }
        Some(P::ResultingPositionId(id)) => PlayInput::Position(convert::position_from_id(
            id,
            &member("resulting_position_id"),
        )?),
    };
    let play_field = member(match play {
        Some(P::Moves(_)) | None => "moves",
        Some(P::Notation(_)) => "notation",
        Some(P::ResultingPosition(_)) => "resulting_position",
        Some(P::ResultingPositionId(_)) => "resulting_position_id",
    });
    if let PlayInput::Position(target) = &input {
        if target.variant != pos.variant {
            return Err(ServiceError::invalid(
                play_field,
                format!(
                    "the resulting position is {}, the position is {}",
                    target.variant, pos.variant
                ),
            ));
        }
    }
    rules::apply(pos, dice, &input).map_err(|e| match ServiceError::from(e) {
        // The core names the play `play` (not legal, bad notation): name the member
        // of the `oneof` that was set; its sub-fields (`play.moves[i]...`) go under
        // `field`.
        ServiceError::Invalid { field: f, reason } if f == "play" => {
            ServiceError::invalid(play_field, reason)
        }
        ServiceError::Invalid { field: f, reason } if f.starts_with("play.") => {
            ServiceError::invalid(format!("{field}{}", &f["play".len()..]), reason)
        }
        e => e.at("position"),
    })
}

/// A grade's play (`PlayToGrade.play`) as ApplyPlay's: the same four forms.
fn as_apply_play(p: &pb::play_to_grade::Play) -> pb::apply_play_request::Play {
    use pb::apply_play_request::Play as A;
    use pb::play_to_grade::Play as G;
    match p.clone() {
        G::Moves(m) => A::Moves(m),
        G::Notation(s) => A::Notation(s),
        G::ResultingPosition(p) => A::ResultingPosition(p),
        G::ResultingPositionId(s) => A::ResultingPositionId(s),
    }
}

/// A resulting position given as a structured message: its side to move may be left
/// unspecified (it is ignored), and its variant defaults to the position's.
fn resulting(p: &pb::Position, pos: &Position, field: &str) -> Result<Position, ServiceError> {
    let mut p = p.clone();
    if p.side_to_move == pb::Side::Unspecified as i32 {
        p.side_to_move = convert::side_to_pb(Some(pos.turn.opponent())) as i32;
    }
    if p.variant == pb::Variant::Unspecified as i32 {
        p.variant = convert::variant_to_pb(pos.variant) as i32;
    }
    convert::position_from_pb(&p, field)
}
