//! [`TavliEngineService`]: the RPCs of `tavli.v1.TavliEngine`.
//!
//! Each RPC has a plain synchronous method (`list_legal_plays`, `apply_play`, ...)
//! taking the request message and returning the response or a [`ServiceError`]; the
//! tonic trait implementation only wraps them (and the CLI calls them directly).

use super::convert::{self, PositionInput};
use super::error::{AtField, ServiceError};
use super::limits::Deadline;
use super::pb;
use super::wire;
use crate::eval::{EvalOptions, PositionEvaluator, MAX_PLIES};
use crate::rules::{self, Dice, Play, PlayInput, Position, Side, Variant};
use crate::telemetry::Metrics;
use std::sync::Arc;
use std::time::Instant;
use tonic::{Request, Response, Status};

/// The engine service: stateless, cheap to clone.
///
/// `evaluator` is `None` until an evaluator is plugged in; `Evaluate` then answers
/// `UNIMPLEMENTED`.
#[derive(Clone)]
pub struct TavliEngineService {
    evaluator: Option<Arc<dyn PositionEvaluator>>,
    max_plies: u8,
    metrics: Option<Arc<Metrics>>,
}

impl std::fmt::Debug for TavliEngineService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TavliEngineService")
            .field("evaluator", &self.evaluator.is_some())
            .field("max_plies", &self.max_plies)
            .finish()
    }
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
        TavliEngineService {
            evaluator,
            max_plies: max_plies.min(MAX_PLIES),
            metrics,
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
                .into_iter()
                .map(|p| convert::play_to_pb(p, compact))
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
        let (pos, dice, compact, plays) = self.legal_plays_of(req)?;
        Ok(wire::encode_list_legal_plays(&pos, dice, &plays, compact))
    }

    /// The checked request of `ListLegalPlays` (position, dice, compact) and its plays.
    fn legal_plays_of(
        &self,
        req: &pb::ListLegalPlaysRequest,
    ) -> Result<(Position, Dice, bool, Vec<Play>), ServiceError> {
        let pos = convert::position_input(req.position.as_ref().map(PositionInput::from))?;
        record_variant(pos.variant);
        let dice = convert::dice_from_pb(req.dice.as_ref(), "dice")?;
        let compact = convert::compact_from_pb(req.detail, "detail")?;
        let plays = rules::legal_plays(&pos, dice).at("position")?;
        if let Some(m) = &self.metrics {
            m.plays_per_request
                .with_label_values(&[pos.variant.name()])
                .observe(plays.len() as f64);
        }
        Ok((pos, dice, compact, plays))
    }

    /// `ApplyPlay`: the new position (turn passed) and the outcome. Errors: as
    /// `ListLegalPlays`, plus field `play` (or a sub-field) for a malformed or illegal play.
    pub fn apply_play(
        &self,
        req: &pb::ApplyPlayRequest,
    ) -> Result<pb::ApplyPlayResponse, ServiceError> {
        use pb::apply_play_request::Play as P;
        let pos = convert::position_input(req.position.as_ref().map(PositionInput::from))?;
        record_variant(pos.variant);
        let dice = convert::dice_from_pb(req.dice.as_ref(), "dice")?;
        let play_field = match &req.play {
            Some(P::Moves(_)) | None => "play.moves",
            Some(P::Notation(_)) => "play.notation",
            Some(P::ResultingPosition(_)) => "play.resulting_position",
            Some(P::ResultingPositionId(_)) => "play.resulting_position_id",
        };
        let input = match &req.play {
            None => {
                return Err(ServiceError::invalid(
                    "play",
                    "a play is required: set moves, notation, resulting_position or \
                     resulting_position_id",
                ))
            }
            Some(P::Moves(list)) => PlayInput::Moves(
                list.moves
                    .iter()
                    .enumerate()
                    .map(|(i, m)| convert::move_from_pb(m, &format!("play.moves.moves[{i}]")))
                    .collect::<Result<_, _>>()?,
            ),
            Some(P::Notation(s)) => PlayInput::Notation(s.clone()),
            Some(P::ResultingPosition(p)) => {
                PlayInput::Position(resulting(p, &pos, "play.resulting_position")?)
            }
            Some(P::ResultingPositionId(id)) => {
                PlayInput::Position(convert::position_from_id(id, "play.resulting_position_id")?)
            }
        };
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
        let play = rules::apply(&pos, dice, &input).map_err(|e| match ServiceError::from(e) {
            // The core names the play `play` (not legal, bad notation): name the member
            // of the `play` oneof that was set.
            ServiceError::Invalid { field, reason } if field == "play" => {
                ServiceError::invalid(play_field, reason)
            }
            e @ ServiceError::Invalid { .. } if is_play_field(&e) => e,
            e => e.at("position"),
        })?;
        Ok(pb::ApplyPlayResponse {
            position: Some(convert::position_to_pb(&play.position)),
            outcome: play.outcome.as_ref().map(convert::outcome_to_pb),
            moves: play.moves.iter().map(convert::move_to_pb).collect(),
            notation: play.notation,
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
        let pos = convert::position_input(req.position.as_ref().map(PositionInput::from))?;
        record_variant(pos.variant);
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
        let Some(evaluator) = &self.evaluator else {
            return Err(ServiceError::Unimplemented(
                "Evaluate is not available yet: no evaluator is loaded on this server \
                 (ListLegalPlays and ApplyPlay work)"
                    .to_string(),
            ));
        };
        if let Some(m) = &self.metrics {
            m.evaluation_plies
                .with_label_values(&[pos.variant.name()])
                .observe(req.plies as f64);
        }
        let opts = EvalOptions {
            plies: req.plies as u8,
            deadline,
            cancel: None,
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
                evaluator.rank_plays(&pos, d, opts).at("position")?
            }
            _ => Vec::new(),
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
                })
                .collect(),
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

fn is_play_field(e: &ServiceError) -> bool {
    matches!(e, ServiceError::Invalid { field, .. } if field == "play" || field.starts_with("play."))
}

/// Runs a synchronous RPC body, mapping its error to a `Status`.
fn respond<T>(r: Result<T, ServiceError>) -> Result<Response<T>, Status> {
    r.map(Response::new).map_err(Status::from)
}

#[tonic::async_trait]
impl pb::tavli_engine_server::TavliEngine for TavliEngineService {
    async fn list_legal_plays(
        &self,
        request: Request<pb::ListLegalPlaysRequest>,
    ) -> Result<Response<pb::ListLegalPlaysResponse>, Status> {
        respond(TavliEngineService::list_legal_plays(
            self,
            request.get_ref(),
        ))
    }

    async fn apply_play(
        &self,
        request: Request<pb::ApplyPlayRequest>,
    ) -> Result<Response<pb::ApplyPlayResponse>, Status> {
        respond(TavliEngineService::apply_play(self, request.get_ref()))
    }

    async fn evaluate(
        &self,
        request: Request<pb::EvaluateRequest>,
    ) -> Result<Response<pb::EvaluateResponse>, Status> {
        let deadline = request.extensions().get::<Deadline>().map(|d| d.0);
        let req = request.into_inner();
        // A 0-ply evaluation is one net evaluation per play (tens of microseconds, like
        // ListLegalPlays): answered on the async worker, where a hand-off to the
        // blocking pool would cost more than the work and add threads that compete
        // for the cores. Deeper searches (milliseconds and more) go to the blocking
        // pool so that they do not hold up the workers.
        if req.plies == 0 {
            return respond(TavliEngineService::evaluate(self, &req, deadline));
        }
        let svc = self.clone();
        let span = tracing::Span::current();
        let r = tokio::task::spawn_blocking(move || {
            span.in_scope(|| TavliEngineService::evaluate(&svc, &req, deadline))
        })
        .await
        .map_err(|e| ServiceError::Internal(format!("evaluation task failed: {e}")))
        .and_then(|r| r);
        respond(r)
    }

    async fn get_starting_position(
        &self,
        request: Request<pb::GetStartingPositionRequest>,
    ) -> Result<Response<pb::GetStartingPositionResponse>, Status> {
        respond(TavliEngineService::get_starting_position(
            self,
            request.get_ref(),
        ))
    }

    async fn resolve_opening_roll(
        &self,
        request: Request<pb::ResolveOpeningRollRequest>,
    ) -> Result<Response<pb::ResolveOpeningRollResponse>, Status> {
        respond(TavliEngineService::resolve_opening_roll(
            self,
            request.get_ref(),
        ))
    }

    async fn advance_match(
        &self,
        request: Request<pb::AdvanceMatchRequest>,
    ) -> Result<Response<pb::AdvanceMatchResponse>, Status> {
        respond(TavliEngineService::advance_match(self, request.get_ref()))
    }

    type AnalyzeGameStream = super::analyze::CancelOnDrop;

    async fn analyze_game(
        &self,
        request: Request<pb::AnalyzeGameRequest>,
    ) -> Result<Response<Self::AnalyzeGameStream>, Status> {
        let deadline = request.extensions().get::<Deadline>().map(|d| d.0);
        // Reading and replaying the record is quick; an error is the RPC's status.
        let prepared = self.prepare_analysis(request.get_ref())?;
        Ok(Response::new(super::analyze::spawn_analysis(
            prepared, deadline,
        )))
    }
}
