//! The tonic trait of `tavli.v1.TavliEngine` implemented over [`TavliEngineService`]:
//! the cheap RPCs answered on the async worker, the deep searches, batches, analyses
//! and rollouts handed to the blocking pool under the deep-search limit, each
//! cancelled when its future or stream is dropped.

use super::analyze::spawn_analysis;
use super::api::TavliEngineService;
use super::error::ServiceError;
use super::limits::{name_deadline, CancelOnDrop, ConnSlot, Deadline, WorkPermit};
use super::pb;
use crate::eval::CancelToken;
use std::sync::Arc;
use tonic::{Request, Response, Status};

/// What admission put in an `Evaluate` or `EvaluateBatch` request
/// ([`super::limits`]): its deadline, its engine permit and its connection slot.
fn evaluation_extensions(
    ext: &http::Extensions,
) -> (Option<Deadline>, Option<WorkPermit>, Option<ConnSlot>) {
    (
        ext.get::<Deadline>().copied(),
        ext.get::<WorkPermit>().cloned(),
        ext.get::<ConnSlot>().cloned(),
    )
}

/// Runs a synchronous RPC body, mapping its error to a `Status`.
fn respond<T>(r: Result<T, ServiceError>) -> Result<Response<T>, Status> {
    r.map(Response::new).map_err(Status::from)
}

impl TavliEngineService {
    /// Runs `job`, a search of `plies >= 1`, on the blocking pool once the deep-search
    /// limit admits it: the connection's slot is given back first (the limit bounds
    /// the search from then on, and the client's other calls need not wait), the
    /// engine permit `work` is held until the search returns, and dropping this
    /// future (client cancel, connection closed, deadline, drain) cancels the
    /// search, as the server's token does at the end of the drain. `what` names the
    /// work in errors (`evaluation`, `choice`); a deadline that fires names its limit
    /// ([`name_deadline`]).
    async fn deep_search<T: Send + 'static>(
        &self,
        plies: u8,
        deadline: Option<Deadline>,
        work: Option<WorkPermit>,
        conn_slot: Option<ConnSlot>,
        what: &'static str,
        job: impl FnOnce(&TavliEngineService, CancelToken) -> Result<T, ServiceError> + Send + 'static,
    ) -> Result<T, ServiceError> {
        if let Some(slot) = &conn_slot {
            slot.release();
        }
        let slot = self.admit_search(plies, deadline.map(|d| d.at)).await?;
        let token = self.cancel.child();
        let guard = CancelOnDrop::new(token.clone());
        let svc = self.clone();
        let span = tracing::Span::current();
        let request_token = token.clone();
        let r = tokio::task::spawn_blocking(move || {
            let r = span.in_scope(|| job(&svc, token));
            if let Some(slot) = slot {
                slot.finish(!matches!(r, Err(ServiceError::Cancelled)));
            }
            drop(work);
            r
        })
        .await
        .map_err(|e| ServiceError::Internal(format!("{what} task failed: {e}")))
        .and_then(|r| r)
        .map_err(|e| name_deadline(e.shutdown_if(&request_token, what), deadline.as_ref()));
        guard.disarm();
        r
    }
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
        // The engine permit of this request: the search keeps a clone until it
        // returns, even when this future is dropped first.
        let (named, work, conn_slot) = evaluation_extensions(request.extensions());
        let deadline = named.map(|d| d.at);
        let req = request.into_inner();
        // A 0-ply evaluation is one net evaluation per play (tens of microseconds, like
        // ListLegalPlays): answered on the async worker, where a hand-off to the
        // blocking pool would cost more than the work and add threads that compete
        // for the cores. Deeper searches (milliseconds and more) go to the blocking
        // pool so that they do not hold up the workers.
        if req.plies == 0 {
            let r = TavliEngineService::evaluate(self, &req, deadline);
            return respond(r.map_err(|e| name_deadline(e, named.as_ref())));
        }
        // Bad input is INVALID_ARGUMENT however busy the server is.
        if let Err(e) = self.evaluate_checked(&req, false) {
            return respond::<pb::EvaluateResponse>(Err(e));
        }
        let plies = req.plies as u8;
        let r = self
            .deep_search(
                plies,
                named,
                work,
                conn_slot,
                "evaluation",
                move |svc, token| svc.evaluate_with(&req, deadline, Some(token)),
            )
            .await;
        respond(r)
    }

    async fn choose_play(
        &self,
        request: Request<pb::ChoosePlayRequest>,
    ) -> Result<Response<pb::ChoosePlayResponse>, Status> {
        // As Evaluate's: the engine permit stays with the work until it stops.
        let (named, work, conn_slot) = evaluation_extensions(request.extensions());
        let deadline = named.map(|d| d.at);
        // Bad input is INVALID_ARGUMENT however busy the server is.
        let job = self.choose_play_checked(request.get_ref())?;
        drop(request);
        // At 0 ply one ranking of the roll's plays (tens of microseconds): answered on
        // the async worker, as Evaluate's; deeper levels on the blocking pool.
        if job.settings.plies == 0 {
            let r = self.run_choose(&job, deadline, None);
            return respond(r.map_err(|e| name_deadline(e, named.as_ref())));
        }
        let r = self
            .deep_search(
                job.settings.plies,
                named,
                work,
                conn_slot,
                "choice",
                move |svc, token| svc.run_choose(&job, deadline, Some(token)),
            )
            .await;
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
        let named = request.extensions().get::<Deadline>().copied();
        let deadline = named.map(|d| d.at);
        // Reading and replaying the record (an error is the RPC's status) takes about
        // a second for one at the 4 MiB message limit: on the blocking pool, so that
        // a few such requests do not hold up the async workers and every other call.
        // The engine permit is kept until it returns, even when this future is
        // dropped first.
        let work = request.extensions().get::<WorkPermit>().cloned();
        let svc = self.clone();
        let span = tracing::Span::current();
        let req = request.into_inner();
        let prepared = tokio::task::spawn_blocking(move || {
            let r = span.in_scope(|| svc.prepare_analysis(&req));
            drop(work);
            r
        })
        .await
        .map_err(|e| ServiceError::Internal(format!("record task failed: {e}")))
        .and_then(|r| r)?;
        let slot = self.admit_stream(deadline).await?;
        Ok(Response::new(spawn_analysis(
            prepared,
            named,
            self.cancel.child(),
            slot,
        )))
    }

    type RolloutStream = super::rollout::RolloutStream;

    async fn rollout(
        &self,
        request: Request<pb::RolloutRequest>,
    ) -> Result<Response<Self::RolloutStream>, Status> {
        let named = request.extensions().get::<Deadline>().copied();
        // Bad input is INVALID_ARGUMENT however busy the server is.
        let job = self.rollout_job(request.get_ref())?;
        let slot = self.admit_stream(named.map(|d| d.at)).await?;
        Ok(self.spawn_rollout(job, named, self.cancel.child(), slot))
    }

    async fn evaluate_batch(
        &self,
        request: Request<pb::EvaluateBatchRequest>,
    ) -> Result<Response<pb::EvaluateBatchResponse>, Status> {
        // As Evaluate's: the engine permit stays with the work until it stops.
        let (named, work, conn_slot) = evaluation_extensions(request.extensions());
        let deadline = named.map(|d| d.at);
        // Every item is checked before any work, however busy the server is.
        let jobs = Arc::new(self.evaluate_batch_checked(request.get_ref())?);
        drop(request);
        if jobs.iter().any(|j| j.plies > 0) {
            // Deep items are bounded by the deep-search limit, as Evaluate's are.
            if let Some(slot) = &conn_slot {
                slot.release();
            }
        }
        // Dropping this future (client cancel, connection closed, deadline, drain)
        // cancels the work; so does the server's token at the end of the drain.
        let token = self.cancel.child();
        let guard = CancelOnDrop::new(token.clone());
        let mut responses = Vec::with_capacity(jobs.len());
        let mut i = 0;
        while i < jobs.len() {
            // Each deep item alone, admitted like one Evaluate; a run of 0-ply items
            // together (tens of microseconds each) in one hand-off to the blocking
            // pool, so that a batch holds up no async worker.
            let plies = jobs[i].plies;
            let end = match plies {
                0 => jobs[i..]
                    .iter()
                    .position(|j| j.plies > 0)
                    .map_or(jobs.len(), |k| i + k),
                _ => i + 1,
            };
            let slot = match plies {
                0 => None,
                _ => self
                    .admit_search(plies, deadline)
                    .await
                    .map_err(|e| e.at(&format!("requests[{i}]")))?,
            };
            let (svc, batch, stop, held) =
                (self.clone(), jobs.clone(), token.clone(), work.clone());
            let span = tracing::Span::current();
            let part = tokio::task::spawn_blocking(move || {
                let mut out = Vec::with_capacity(end - i);
                let r = span.in_scope(|| {
                    svc.run_batch_items(&batch[i..end], i, deadline, Some(&stop), &mut out)
                });
                if let Some(slot) = slot {
                    slot.finish(!matches!(r, Err(ServiceError::Cancelled)));
                }
                drop(held);
                r.map(|()| out)
            })
            .await
            .map_err(|e| ServiceError::Internal(format!("evaluation task failed: {e}")))
            .and_then(|r| r)
            .map_err(|e| name_deadline(e.shutdown_if(&token, "evaluation"), named.as_ref()))?;
            responses.extend(part);
            i = end;
        }
        guard.disarm();
        Ok(Response::new(pb::EvaluateBatchResponse { responses }))
    }
}
