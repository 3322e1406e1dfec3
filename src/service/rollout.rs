//! The `Rollout` RPC (server streaming): request checks, the rollout on a blocking
//! thread (which runs its trials on every core, [`crate::eval::rollout`]), and the
//! stream of updates that cancels the rollout when the client goes away. A request
//! may run a slice of the trials (`range`) or merge the partial results of slices
//! (`merge`), with the conversions of [`pb::RolloutPartial`] (docs/rollout.md, "Split
//! rollouts").

pub use super::api::DEFAULT_MAX_ROLLOUT_TRIALS;
use super::api::{match_score_from_pb, mwc, TavliEngineService};
use super::convert::{self, PositionInput};
use super::error::{AtField, ServiceError};
use super::limits::{name_deadline, Deadline};
use super::pb;
use crate::eval::rollout::{
    RolloutConfig, RolloutReport, RolloutSums, DEFAULT_TRIALS, MAX_ROLLOUT_PLIES, SUM_FIGURES,
};
use crate::eval::wide::U256;
use crate::eval::{CancelToken, EndValues, StopWhen};
use crate::rules::{Dice, Position};
use std::ops::ControlFlow;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::Stream;
use tonic::{Response, Status};

/// A checked `RolloutRequest`.
#[derive(Clone, Debug)]
pub struct RolloutJob {
    /// The position.
    pub position: Position,
    /// The optional roll of the side to move.
    pub dice: Option<Dice>,
    /// Plies, trials (the range: `first_trial`, `trials`), seed, truncation, report
    /// interval (threads: every core).
    pub config: RolloutConfig,
    /// The partial results to merge (`RolloutRequest.merge`): no trials are run.
    pub merge: Vec<RolloutSums>,
    /// Whether the updates carry their exact sums (`RolloutResponse.partial`): with
    /// `range` or `merge` in the request.
    pub partial: bool,
    /// With `match_state`: what each end of the game is worth to the side to move,
    /// for each update's match winning chance
    /// ([`crate::matchequity::MatchScore::end_values`]).
    pub measure: Option<EndValues>,
}

/// Most partial results of one merge (`RolloutRequest.merge`).
pub const MAX_MERGE_PARTS: usize = 1000;

/// The protobuf form of a rollout's exact sums.
pub fn partial_to_pb(s: &RolloutSums) -> pb::RolloutPartial {
    pb::RolloutPartial {
        range: Some(pb::TrialRange {
            first: s.first,
            count: s.trials,
        }),
        key: s.key,
        sums: s.sum.iter().map(|x| x.to_be_bytes().to_vec()).collect(),
        squares: s.sum_squares.iter().map(|x| x.to_be_bytes_min()).collect(),
    }
}

/// A rollout's exact sums from `merge[k]` of a request: the range, the key, six sums
/// (signed, big-endian two's complement, 1..=16 bytes; empty for 0) and six sums of
/// squares (unsigned, big-endian, at most 32 bytes). Errors: `INVALID_ARGUMENT` on
/// `merge[k].range`, `merge[k].sums`, `merge[k].sums[j]`, `merge[k].squares[j]`...
/// (what trials can give is checked by [`crate::eval::rollout::add_parts`]).
pub fn partial_from_pb(p: &pb::RolloutPartial, k: usize) -> Result<RolloutSums, ServiceError> {
    let at = |f: &str| format!("merge[{k}].{f}");
    let range = p
        .range
        .as_ref()
        .ok_or_else(|| ServiceError::invalid(at("range"), "required"))?;
    for (name, n) in [("sums", p.sums.len()), ("squares", p.squares.len())] {
        if n != SUM_FIGURES.len() {
            return Err(ServiceError::invalid(
                at(name),
                format!("6 entries ({}) are needed, got {n}", SUM_FIGURES.join(", ")),
            ));
        }
    }
    let mut sums = RolloutSums::empty(p.key, range.first);
    sums.trials = range.count;
    for (j, b) in p.sums.iter().enumerate() {
        if b.len() > 16 {
            return Err(ServiceError::invalid(
                at(&format!("sums[{j}]")),
                format!("a 128-bit integer has at most 16 bytes, got {}", b.len()),
            ));
        }
        // Sign-extended to 16 bytes.
        let fill = if b.first().is_some_and(|&x| x & 0x80 != 0) {
            0xff
        } else {
            0
        };
        let mut full = [fill; 16];
        full[16 - b.len()..].copy_from_slice(b);
        sums.sum[j] = i128::from_be_bytes(full);
    }
    for (j, b) in p.squares.iter().enumerate() {
        sums.sum_squares[j] = U256::from_be_bytes(b).ok_or_else(|| {
            ServiceError::invalid(
                at(&format!("squares[{j}]")),
                format!("a 256-bit integer has at most 32 bytes, got {}", b.len()),
            )
        })?;
    }
    Ok(sums)
}

/// The protobuf form of a rollout report; with `partial`, its exact sums too; with
/// `measure` (a match's end values for the side to move), the match winning chance
/// of its probabilities and a bound of its standard error
/// ([`EndValues::standard_error_bound`]).
pub fn report_to_pb(
    r: &RolloutReport,
    partial: bool,
    measure: Option<&EndValues>,
) -> pb::RolloutResponse {
    let se = &r.standard_errors;
    let bound = |m: &EndValues| {
        let f = |x: f32| x as f64;
        m.standard_error_bound(f(se.win), f(se.win_mars), f(se.lose_mars), f(se.draw)) as f32
    };
    pb::RolloutResponse {
        match_winning_chance: mwc(measure, &r.probabilities),
        match_winning_chance_error_bound: measure.map(bound),
        trials: r.trials,
        probabilities: Some(convert::probabilities_to_pb(&r.probabilities)),
        equity: r.equity,
        equity_standard_error: se.equity,
        standard_errors: Some(pb::RolloutStandardErrors {
            win: se.win,
            win_mars: se.win_mars,
            lose: se.lose,
            lose_mars: se.lose_mars,
            draw: se.draw,
        }),
        done: r.done,
        evaluator: r.evaluator.clone(),
        plies: r.plies as u32,
        play: r.play.clone().map(|p| convert::play_to_pb(p, false)),
        partial: partial.then(|| partial_to_pb(&r.sums)),
    }
}

impl TavliEngineService {
    /// Checks a `RolloutRequest`: the position (as every RPC), optional dice, `plies`
    /// 0..=1 (and within the server's `--max-plies`), `trials` 0 (the default, 1,296)
    /// up to the server's cap, or a `range` within it (`trials` 0), or up to
    /// [`MAX_MERGE_PARTS`] partial results to `merge` (neither `trials` nor `range`),
    /// `report_every` (0: every tenth of the trials), `truncation` (0: none), a
    /// `match_state` as `Evaluate`'s (for the updates' match winning chance). Errors:
    /// `INVALID_ARGUMENT` naming the field; `UNIMPLEMENTED` without an evaluator.
    pub fn rollout_job(&self, req: &pb::RolloutRequest) -> Result<RolloutJob, ServiceError> {
        let pos = convert::position_input(req.position.as_ref().map(PositionInput::from))?;
        tracing::Span::current().record("variant", pos.variant.name());
        let dice = req
            .dice
            .as_ref()
            .map(|d| convert::dice_from_pb(Some(d), "dice"))
            .transpose()?;
        let (plies, trials) = self.rollout_depth_and_trials(req.plies, req.trials, "")?;
        let merging = !req.merge.is_empty();
        if (req.range.is_some() || merging) && req.trials != 0 {
            return Err(ServiceError::invalid(
                "trials",
                format!(
                    "must be 0 with `{}`, got {}",
                    if merging { "merge" } else { "range" },
                    req.trials
                ),
            ));
        }
        if merging && req.range.is_some() {
            return Err(ServiceError::invalid(
                "range",
                "a request either runs a range of trials or merges partial results",
            ));
        }
        if req.merge.len() > MAX_MERGE_PARTS {
            return Err(ServiceError::invalid(
                "merge",
                format!(
                    "at most {MAX_MERGE_PARTS} partial results, got {}",
                    req.merge.len()
                ),
            ));
        }
        let merge = req
            .merge
            .iter()
            .enumerate()
            .map(|(k, p)| partial_from_pb(p, k))
            .collect::<Result<Vec<_>, _>>()?;
        let (first_trial, trials) = match &req.range {
            None => (0, trials),
            Some(r) => self.rollout_range(r)?,
        };
        let measure = req
            .match_state
            .as_ref()
            .map(|m| match_score_from_pb(m, pos.variant))
            .transpose()?
            .map(|s| s.end_values(pos.variant, pos.turn));
        if self.evaluator.is_none() {
            return Err(ServiceError::Unimplemented(
                "Rollout is not available: no evaluator is loaded on this server".to_string(),
            ));
        }
        Ok(RolloutJob {
            position: pos,
            dice,
            config: RolloutConfig {
                plies,
                trials,
                first_trial,
                seed: req.seed,
                truncation: (req.truncation > 0).then_some(req.truncation),
                report_every: match req.report_every {
                    0 => trials.div_ceil(10),
                    n => n,
                },
                ..RolloutConfig::default()
            },
            merge,
            partial: req.range.is_some() || merging,
            measure,
        })
    }

    /// The first trial and the count of a `RolloutRequest.range`: at least 1 trial,
    /// all below the server's `--max-rollout-trials`. Errors: `INVALID_ARGUMENT` on
    /// `range.count` (0, or reaching past the cap) or `range.first` (at or past it).
    fn rollout_range(&self, r: &pb::TrialRange) -> Result<(u32, u32), ServiceError> {
        let cap = self.max_rollout_trials;
        if r.count == 0 {
            return Err(ServiceError::invalid("range.count", "at least 1 trial"));
        }
        if r.first >= cap {
            return Err(ServiceError::invalid(
                "range.first",
                format!(
                    "trials are numbered 0..{cap} on this server (--max-rollout-trials), got {}",
                    r.first
                ),
            ));
        }
        if r.count > cap - r.first {
            return Err(ServiceError::invalid(
                "range.count",
                format!(
                    "trials {}..{} reach past this server's {cap} (--max-rollout-trials)",
                    r.first,
                    r.first as u64 + r.count as u64
                ),
            ));
        }
        Ok((r.first, r.count))
    }

    /// The depth and trial count of a rollout request (`Rollout`, and
    /// `AnalyzeGame`'s `rollout` with `prefix` `rollout.`): `plies` 0..=1 and within
    /// `--max-plies`; `trials` 0 (the default, 1,296) up to `--max-rollout-trials`.
    /// Errors: `INVALID_ARGUMENT` on `{prefix}plies` or `{prefix}trials`.
    pub(super) fn rollout_depth_and_trials(
        &self,
        plies: u32,
        trials: u32,
        prefix: &str,
    ) -> Result<(u8, u32), ServiceError> {
        let max_plies = self.max_plies.min(MAX_ROLLOUT_PLIES);
        if plies > max_plies as u32 {
            return Err(ServiceError::invalid(
                format!("{prefix}plies"),
                format!(
                    "rollouts choose plays at 0..{max_plies} plies on this server, got {plies}"
                ),
            ));
        }
        let trials = match trials {
            0 => DEFAULT_TRIALS.min(self.max_rollout_trials),
            n if n > self.max_rollout_trials => {
                return Err(ServiceError::invalid(
                    format!("{prefix}trials"),
                    format!(
                        "at most {} trials on this server, got {n}",
                        self.max_rollout_trials
                    ),
                ))
            }
            n => n,
        };
        Ok((plies as u8, trials))
    }

    /// `Rollout` without the transport: runs `job` and gives each update to
    /// `on_update` (which may stop it with `Break`: `CANCELLED`), the last one `done`.
    /// Errors: as [`crate::eval::rollout::rollout`] (`DEADLINE_EXCEEDED`, `CANCELLED`
    /// after a last update of the trials finished).
    pub fn run_rollout(
        &self,
        job: &RolloutJob,
        deadline: Option<Instant>,
        cancel: Option<&CancelToken>,
        on_update: &mut dyn FnMut(pb::RolloutResponse) -> ControlFlow<()>,
    ) -> Result<(), ServiceError> {
        let Some(evaluator) = &self.evaluator else {
            return Err(ServiceError::Unimplemented(
                "Rollout is not available: no evaluator is loaded on this server".to_string(),
            ));
        };
        if !job.merge.is_empty() {
            let r = evaluator
                .rollout_merge(&job.position, job.dice, &job.config, &job.merge)
                .map_err(ServiceError::from)?;
            let _ = on_update(report_to_pb(&r, true, job.measure.as_ref()));
            return Ok(());
        }
        let stop = StopWhen { deadline, cancel };
        evaluator
            .rollout(&job.position, job.dice, &job.config, stop, &mut |r| {
                on_update(report_to_pb(r, job.partial, job.measure.as_ref()))
            })
            .at("position")?;
        Ok(())
    }

    /// Runs a checked rollout ([`TavliEngineService::rollout_job`]) on the blocking
    /// pool and streams its updates, until `named` (its `DEADLINE_EXCEEDED` names the
    /// limit); `cancel` (a child of the server's token) stops
    /// it, and so does dropping the stream. `hold` (the deep-search slot) is kept
    /// until the rollout has stopped.
    pub(super) fn spawn_rollout<H: Send + 'static>(
        &self,
        job: RolloutJob,
        named: Option<Deadline>,
        cancel: CancelToken,
        hold: H,
    ) -> Response<RolloutStream> {
        let deadline = named.map(|d| d.at);
        // A small buffer: a client that reads slowly holds the rollout back
        // (`blocking_send` waits) instead of making the server queue updates.
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<pb::RolloutResponse, Status>>(4);
        let (svc, token, span) = (self.clone(), cancel.clone(), tracing::Span::current());
        tokio::task::spawn_blocking(move || {
            let _hold = hold;
            span.in_scope(|| {
                let r = svc.run_rollout(&job, deadline, Some(&token), &mut |u| match tx
                    .blocking_send(Ok(u))
                {
                    Ok(()) => ControlFlow::Continue(()),
                    Err(_) => ControlFlow::Break(()),
                });
                if let Err(e) = r {
                    let e = name_deadline(e.shutdown_if(&token, "rollout"), named.as_ref());
                    let _ = tx.blocking_send(Err(Status::from(e)));
                }
            })
        });
        Response::new(RolloutStream {
            updates: ReceiverStream::new(rx),
            cancel,
        })
    }
}

/// The stream of a `Rollout` response. Dropping it (the client cancelled or went
/// away, or the server is shutting down) cancels the rollout.
pub struct RolloutStream {
    updates: ReceiverStream<Result<pb::RolloutResponse, Status>>,
    cancel: CancelToken,
}

impl Stream for RolloutStream {
    type Item = Result<pb::RolloutResponse, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.updates).poll_next(cx)
    }
}

impl Drop for RolloutStream {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}
