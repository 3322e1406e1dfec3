//! Readiness: the health status of `tavli.v1.TavliEngine` says whether the server can
//! take engine work now; the status of `""` (the whole server, liveness) stays
//! `SERVING` until shutdown.
//!
//! The engine's status turns `NOT_SERVING` when
//!
//! - requests have been refused for lack of engine permits or buffers (or every
//!   engine permit was taken) at every check for [`SATURATED_FOR`] in a row,
//! - an accept failed for lack of file descriptors (or memory) in the last
//!   [`FD_EXHAUSTED_FOR`], on either port,
//! - or the server is draining (set by [`super::serve`]),
//!
//! and `SERVING` again after [`CALM_FOR`] without either. Deep-search refusals do not
//! count: cheap calls are still served then. A Kubernetes readiness probe on the
//! engine's status takes the pod out of its Services while it cannot serve; the
//! liveness probe (`""`) does not restart it for being busy.

use super::buffers::Budget;
use super::conn::{Phase, Registry};
use super::health::Health;
use super::limits::{AdmissionLayer, Pressure};
use super::SERVICE_NAME;
use crate::telemetry::Metrics;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tonic_health::ServingStatus;

/// How long saturation must last before readiness says `NOT_SERVING`.
pub const SATURATED_FOR: Duration = Duration::from_secs(5);
/// How long an accept failure for lack of descriptors keeps readiness `NOT_SERVING`.
pub const FD_EXHAUSTED_FOR: Duration = Duration::from_secs(5);
/// How long the server must be calm before readiness says `SERVING` again.
pub const CALM_FOR: Duration = Duration::from_secs(2);
/// How often readiness is checked.
pub const CHECK_EVERY: Duration = Duration::from_millis(250);

/// What readiness looks at.
pub struct Inputs {
    /// The engine's admission (permits free, refusals).
    pub admission: AdmissionLayer,
    /// The listeners (descriptor exhaustion).
    pub registries: Vec<Arc<Registry>>,
    /// The buffers (for `tavli_buffered_bytes`).
    pub budget: Arc<Budget>,
}

/// Updates the engine's health status (and `tavli_ready`, `tavli_buffered_bytes`)
/// every [`CHECK_EVERY`] until the phase leaves [`Phase::Serving`].
pub async fn run(
    health: Health,
    inputs: Inputs,
    metrics: Arc<Metrics>,
    phase: watch::Receiver<Phase>,
) {
    let pressure: Arc<Pressure> = inputs.admission.pressure();
    let mut last_refusals = pressure.refusals.load(Ordering::Relaxed);
    let mut saturated_since: Option<Instant> = None;
    let mut calm_since = Instant::now();
    let mut ready = true;
    metrics.ready.set(1);
    let mut tick = tokio::time::interval(CHECK_EVERY);
    loop {
        tick.tick().await;
        if *phase.borrow() != Phase::Serving {
            metrics.ready.set(0);
            return;
        }
        metrics.buffered_bytes.set(inputs.budget.used() as i64);
        let refusals = pressure.refusals.load(Ordering::Relaxed);
        let saturated = refusals != last_refusals || inputs.admission.engine_permits_free() == 0;
        last_refusals = refusals;
        let now = Instant::now();
        if saturated {
            saturated_since.get_or_insert(now);
        } else {
            saturated_since = None;
        }
        let fd = inputs
            .registries
            .iter()
            .any(|r| r.fd_exhausted_recently(FD_EXHAUSTED_FOR));
        if saturated || fd {
            calm_since = now;
        }
        let sustained = saturated_since.is_some_and(|t| now - t >= SATURATED_FOR);
        if ready && (sustained || fd) {
            ready = false;
            let reason = if fd {
                "out of file descriptors"
            } else {
                "saturated: requests refused for lack of permits or buffers"
            };
            tracing::warn!(reason, "readiness: {SERVICE_NAME} NOT_SERVING");
            health.set(SERVICE_NAME, ServingStatus::NotServing).await;
            metrics.ready.set(0);
        } else if !ready && now - calm_since >= CALM_FOR {
            ready = true;
            tracing::info!("readiness: {SERVICE_NAME} SERVING again");
            health.set(SERVICE_NAME, ServingStatus::Serving).await;
            metrics.ready.set(1);
        }
    }
}
