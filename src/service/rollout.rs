//! The `Rollout` RPC (server streaming): request checks, the rollout on a blocking
//! thread (which runs its trials on every core, [`crate::eval::rollout`]), and the
//! stream of updates that cancels the rollout when the client goes away.

use super::api::TavliEngineService;
pub use super::api::DEFAULT_MAX_ROLLOUT_TRIALS;
use super::convert::{self, PositionInput};
use super::error::{AtField, ServiceError};
use super::limits::{name_deadline, Deadline};
use super::pb;
use crate::eval::rollout::{RolloutConfig, RolloutReport, DEFAULT_TRIALS, MAX_ROLLOUT_PLIES};
use crate::eval::{CancelToken, StopWhen};
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
    /// Plies, trials, seed, truncation, report interval (threads: every core).
    pub config: RolloutConfig,
}

/// The protobuf form of a rollout report.
pub fn report_to_pb(r: &RolloutReport) -> pb::RolloutResponse {
    let se = &r.standard_errors;
    pb::RolloutResponse {
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
    }
}

impl TavliEngineService {
    /// Checks a `RolloutRequest`: the position (as every RPC), optional dice, `plies`
    /// 0..=1 (and within the server's `--max-plies`), `trials` 0 (the default, 1,296)
    /// up to the server's cap, `report_every` (0: every tenth of the trials),
    /// `truncation` (0: none). Errors: `INVALID_ARGUMENT` naming the field;
    /// `UNIMPLEMENTED` without an evaluator.
    pub fn rollout_job(&self, req: &pb::RolloutRequest) -> Result<RolloutJob, ServiceError> {
        let pos = convert::position_input(req.position.as_ref().map(PositionInput::from))?;
        tracing::Span::current().record("variant", pos.variant.name());
        let dice = req
            .dice
            .as_ref()
            .map(|d| convert::dice_from_pb(Some(d), "dice"))
            .transpose()?;
        let (plies, trials) = self.rollout_depth_and_trials(req.plies, req.trials, "")?;
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
                seed: req.seed,
                truncation: (req.truncation > 0).then_some(req.truncation),
                report_every: match req.report_every {
                    0 => trials.div_ceil(10),
                    n => n,
                },
                ..RolloutConfig::default()
            },
        })
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
        let stop = StopWhen { deadline, cancel };
        evaluator
            .rollout(&job.position, job.dice, &job.config, stop, &mut |r| {
                on_update(report_to_pb(r))
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
