//! `grpc.health.v1.Health` as `health.proto` describes it: tonic-health's `Check`,
//! statuses and reporter, and a `Watch` that keeps the stream of an unknown service
//! open.
//!
//! tonic-health ends the `Watch` of a service it does not know at once with
//! `NOT_FOUND`; `health.proto` says: "If the requested service is unknown when the
//! call is received, the server will send a message setting the serving status to
//! SERVICE_UNKNOWN but will *not* terminate the call. If at some future point, the
//! serving status of the service becomes known, the server will send a new message
//! with the service's serving status." [`HealthWatch`] does that, and leaves `Check`
//! to tonic-health (`NOT_FOUND` for an unknown service, as `health.proto` says of
//! `Check`). Every `Watch` stream ends when the client cancels it (it is dropped) or
//! when the server shuts down ([`Health::end_watches`]: `UNAVAILABLE`, after the last
//! status, `NOT_SERVING`, has been sent), so that watchers do not hold the drain.
//! Streams are counted by admission, per connection (`--connection-watch-limit`,
//! [`super::limits`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::watch;
use tokio_stream::Stream;
use tonic::{Request, Response, Status};
use tonic_health::pb::health_check_response::ServingStatus as WireStatus;
use tonic_health::pb::health_server::Health as HealthApi;
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};
use tonic_health::server::{HealthReporter, HealthService};
use tonic_health::ServingStatus;

/// What `Watch` streams follow: a change of some status, and the end of watches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Events {
    /// Bumped at every status set.
    generation: u64,
    /// The server is shutting down: every stream ends.
    ended: bool,
}

/// The health statuses of the server: tonic-health's [`HealthReporter`], and the
/// events its `Watch` streams follow. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Health {
    reporter: HealthReporter,
    events: Arc<watch::Sender<Events>>,
}

impl Health {
    /// The statuses (`""` is `SERVING`, as in tonic-health) and the service serving
    /// them (for a server: `HealthServer::new`).
    pub fn new() -> (Health, HealthWatch) {
        let reporter = HealthReporter::new();
        let (events, _) = watch::channel(Events::default());
        let health = Health {
            reporter: reporter.clone(),
            events: Arc::new(events),
        };
        let service = HealthWatch {
            inner: Arc::new(HealthService::from_health_reporter(reporter)),
            events: health.events.clone(),
        };
        (health, service)
    }

    /// Sets the status of `service` (which becomes known if it was not): `Check`
    /// answers it, and `Watch` streams of it send it.
    pub async fn set(&self, service: &str, status: ServingStatus) {
        self.reporter.set_service_status(service, status).await;
        self.events.send_modify(|e| e.generation += 1);
    }

    /// Ends every `Watch` stream, now and from now on (`UNAVAILABLE`, after the
    /// statuses set before this call have been sent): the server shuts down.
    pub fn end_watches(&self) {
        self.events.send_modify(|e| e.ended = true);
    }
}

/// The `grpc.health.v1.Health` service (the generated trait, served by
/// `tonic_health::pb::health_server::HealthServer`): tonic-health's `Check`, and
/// [`WatchStream`].
pub struct HealthWatch {
    inner: Arc<HealthService>,
    events: Arc<watch::Sender<Events>>,
}

#[tonic::async_trait]
impl HealthApi for HealthWatch {
    async fn check(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        self.inner.check(request).await
    }

    type WatchStream = WatchStream;

    async fn watch(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<WatchStream>, Status> {
        let service = request.into_inner().service;
        // Subscribed before the first look-up, so that a status set after it is
        // seen; its first item is the events as they are now (an end already
        // there).
        let events = tokio_stream::wrappers::WatchStream::new(self.events.subscribe());
        let mut stream = WatchStream {
            state: State::Unknown,
            service,
            inner: self.inner.clone(),
            events,
            sent_unknown: false,
        };
        stream.look_up();
        Ok(Response::new(stream))
    }
}

type LookUp =
    Pin<Box<dyn Future<Output = Result<tonic_health::server::WatchStream, Status>> + Send>>;

enum State {
    /// The service is being looked up (at the start, and after a status was set
    /// while it was unknown).
    LookingUp(LookUp),
    /// Known: tonic-health's stream of its statuses.
    Known(tonic_health::server::WatchStream),
    /// Unknown: `SERVICE_UNKNOWN` sent; waiting for a status to be set.
    Unknown,
    Done,
}

/// The statuses of one service for `Watch`: its status now and every change, or
/// `SERVICE_UNKNOWN` and then its status once it becomes known; ends with
/// `UNAVAILABLE` when the server shuts down.
pub struct WatchStream {
    state: State,
    service: String,
    inner: Arc<HealthService>,
    events: tokio_stream::wrappers::WatchStream<Events>,
    sent_unknown: bool,
}

impl WatchStream {
    fn look_up(&mut self) {
        let inner = self.inner.clone();
        let service = self.service.clone();
        self.state = State::LookingUp(Box::pin(async move {
            let request = Request::new(HealthCheckRequest { service });
            inner.watch(request).await.map(Response::into_inner)
        }));
    }

    fn ended() -> Status {
        Status::unavailable("the server is shutting down")
    }
}

impl Stream for WatchStream {
    type Item = Result<HealthCheckResponse, Status>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            // The statuses first: one set before the end is still sent.
            match &mut this.state {
                State::Done => return Poll::Ready(None),
                State::LookingUp(f) => match f.as_mut().poll(cx) {
                    Poll::Pending => {}
                    Poll::Ready(Ok(known)) => {
                        this.state = State::Known(known);
                        continue;
                    }
                    Poll::Ready(Err(s)) if s.code() == tonic::Code::NotFound => {
                        this.state = State::Unknown;
                        if !this.sent_unknown {
                            this.sent_unknown = true;
                            return Poll::Ready(Some(Ok(HealthCheckResponse {
                                status: WireStatus::ServiceUnknown as i32,
                            })));
                        }
                    }
                    Poll::Ready(Err(s)) => {
                        this.state = State::Done;
                        return Poll::Ready(Some(Err(s)));
                    }
                },
                State::Known(s) => match Pin::new(s).poll_next(cx) {
                    Poll::Pending => {}
                    Poll::Ready(Some(item)) => return Poll::Ready(Some(item)),
                    // The service's status was cleared (never done here).
                    Poll::Ready(None) => {
                        this.state = State::Done;
                        return Poll::Ready(None);
                    }
                },
                State::Unknown => {}
            }
            // Then the events: the end, or a status set (an unknown service may
            // have become known).
            match Pin::new(&mut this.events).poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(e)) if !e.ended => {
                    if matches!(this.state, State::Unknown) {
                        this.look_up();
                    }
                }
                Poll::Ready(_) => {
                    this.state = State::Done;
                    return Poll::Ready(Some(Err(Self::ended())));
                }
            }
        }
    }
}

impl std::fmt::Debug for WatchStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchStream")
            .field("service", &self.service)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio_stream::StreamExt;

    fn req(service: &str) -> Request<HealthCheckRequest> {
        Request::new(HealthCheckRequest {
            service: service.into(),
        })
    }

    async fn next(s: &mut WatchStream) -> Option<Result<i32, tonic::Code>> {
        tokio::time::timeout(Duration::from_secs(2), s.next())
            .await
            .expect("an item within 2 s")
            .map(|r| r.map(|m| m.status).map_err(|e| e.code()))
    }

    async fn quiet(s: &mut WatchStream) -> bool {
        tokio::time::timeout(Duration::from_millis(100), s.next())
            .await
            .is_err()
    }

    const SERVING: i32 = WireStatus::Serving as i32;
    const NOT_SERVING: i32 = WireStatus::NotServing as i32;
    const UNKNOWN: i32 = WireStatus::ServiceUnknown as i32;

    /// An unknown service: `Check` is NOT_FOUND; `Watch` sends SERVICE_UNKNOWN, stays
    /// open, and sends the status once the service is known, then its changes.
    #[tokio::test]
    async fn watch_of_an_unknown_service_waits_for_it() {
        let (health, svc) = Health::new();
        let e = svc.check(req("x.Later")).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::NotFound);
        let mut w = svc.watch(req("x.Later")).await.unwrap().into_inner();
        assert_eq!(next(&mut w).await, Some(Ok(UNKNOWN)));
        assert!(quiet(&mut w).await);
        // Another service's status: nothing for this one.
        health.set("x.Other", ServingStatus::Serving).await;
        assert!(quiet(&mut w).await);
        health.set("x.Later", ServingStatus::NotServing).await;
        assert_eq!(next(&mut w).await, Some(Ok(NOT_SERVING)));
        health.set("x.Later", ServingStatus::Serving).await;
        assert_eq!(next(&mut w).await, Some(Ok(SERVING)));
        assert!(quiet(&mut w).await);
        let r = svc.check(req("x.Later")).await.unwrap().into_inner();
        assert_eq!(r.status, SERVING);
    }

    /// At shutdown every watch ends with UNAVAILABLE, a known service's after the
    /// status set before the end; a watch begun afterwards ends at once.
    #[tokio::test]
    async fn watches_end_at_shutdown() {
        let (health, svc) = Health::new();
        health.set("x.Known", ServingStatus::Serving).await;
        let mut known = svc.watch(req("x.Known")).await.unwrap().into_inner();
        let mut unknown = svc.watch(req("x.Unknown")).await.unwrap().into_inner();
        let mut whole = svc.watch(req("")).await.unwrap().into_inner();
        assert_eq!(next(&mut known).await, Some(Ok(SERVING)));
        assert_eq!(next(&mut unknown).await, Some(Ok(UNKNOWN)));
        assert_eq!(next(&mut whole).await, Some(Ok(SERVING)));
        health.set("x.Known", ServingStatus::NotServing).await;
        health.end_watches();
        assert_eq!(next(&mut known).await, Some(Ok(NOT_SERVING)));
        assert_eq!(next(&mut known).await, Some(Err(tonic::Code::Unavailable)));
        assert_eq!(next(&mut known).await, None);
        assert_eq!(
            next(&mut unknown).await,
            Some(Err(tonic::Code::Unavailable))
        );
        assert_eq!(next(&mut unknown).await, None);
        assert_eq!(next(&mut whole).await, Some(Err(tonic::Code::Unavailable)));
        let mut late = svc.watch(req("x.Known")).await.unwrap().into_inner();
        assert_eq!(next(&mut late).await, Some(Ok(NOT_SERVING)));
        assert_eq!(next(&mut late).await, Some(Err(tonic::Code::Unavailable)));
        assert_eq!(next(&mut late).await, None);
    }
}
