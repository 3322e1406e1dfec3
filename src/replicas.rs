//! Heavy work over many replicas, the client side (issue #34; docs/rollout.md, "Split
//! rollouts"): a rollout's trials split into ranges, the ranges run concurrently on
//! several servers over gRPC (`RolloutRequest.range`), and their partial results
//! merged by one of them (`RolloutRequest.merge`) into exactly the answer of one
//! rollout of all the trials. `tavli-engine rollout --replicas` runs it; the Python
//! client has the same helper (clients/python, `tavli_client.split`).
//!
//! Replicas are addresses, or DNS names that resolve to several (a Kubernetes headless
//! Service: one A record per ready pod), each used once. Each replica runs one slice
//! at a time and takes the next one from a common queue when it is done, so replicas
//! of unequal speed stay busy; by default there is one slice per replica. Kubernetes
//! places the pods; nothing here schedules beyond that queue. A failed slice fails the
//! whole (no retry): the error names the replica and the range.

use crate::service::pb;
use crate::service::pb::tavli_engine_client::TavliEngineClient;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tonic::transport::{Channel, Endpoint};

/// Errors of this module: a message naming the replica, or the transport's or the
/// server's status.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The trials of a rollout when the request says 0 (as the server: 36 × 36).
const DEFAULT_TRIALS: u32 = crate::eval::rollout::DEFAULT_TRIALS;

/// `trials` trials `0..trials` as `slices` consecutive ranges whose sizes differ by at
/// most 1 (the larger first); no empty range (fewer ranges when `slices > trials`).
pub fn split_trials(trials: u32, slices: usize) -> Vec<pb::TrialRange> {
    let slices = (slices.max(1) as u64).min(trials.max(1) as u64);
    let (base, extra) = (trials as u64 / slices, trials as u64 % slices);
    let mut first = 0u64;
    let mut out = Vec::with_capacity(slices as usize);
    for k in 0..slices {
        let count = base + u64::from(k < extra);
        if count > 0 {
            out.push(pb::TrialRange {
                first: first as u32,
                count: count as u32,
            });
        }
        first += count;
    }
    out
}

/// The replicas of `spec`: comma-separated `HOST:PORT` items, each an address or a
/// DNS name; a name stands for every address it resolves to (sorted), as a
/// Kubernetes headless Service resolves to its ready pods. Duplicates are kept once,
/// in the order of first appearance. Errors: an empty list, an item without a port,
/// a name that does not resolve.
pub async fn resolve(spec: &str) -> Result<Vec<SocketAddr>, BoxError> {
    let mut out: Vec<SocketAddr> = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let item = item.strip_prefix("http://").unwrap_or(item);
        let mut addrs: Vec<SocketAddr> = tokio::net::lookup_host(item)
            .await
            .map_err(|e| format!("replica {item:?}: {e} (give HOST:PORT)"))?
            .collect();
        addrs.sort();
        for a in addrs {
            if !out.contains(&a) {
                out.push(a);
            }
        }
    }
    if out.is_empty() {
        return Err(format!("no replica in {spec:?}").into());
    }
    Ok(out)
}

/// One slice of a split rollout, as it ran.
#[derive(Clone, Debug)]
pub struct SliceRun {
    /// The replica that ran it.
    pub replica: SocketAddr,
    /// Its trials.
    pub range: pb::TrialRange,
    /// Wall time of its stream, in seconds.
    pub seconds: f64,
}

/// A split rollout's answer.
#[derive(Clone, Debug)]
pub struct SplitRollout {
    /// The merged last update: bit for bit the last update of one rollout of all the
    /// trials with `range` `0..trials` (`partial` included).
    pub response: pb::RolloutResponse,
    /// The slices, in trial order.
    pub slices: Vec<SliceRun>,
    /// The replica that merged them.
    pub merged_by: SocketAddr,
}

/// A plaintext channel to `addr`.
async fn connect(addr: SocketAddr) -> Result<TavliEngineClient<Channel>, BoxError> {
    let ch = Endpoint::from_shared(format!("http://{addr}"))?
        .connect()
        .await
        .map_err(|e| format!("replica {addr}: cannot connect: {e}"))?;
    Ok(TavliEngineClient::new(ch))
}

/// What the slice tasks tell the caller: a slice's trials so far, or its end.
enum Event {
    Progress(usize, u32),
    Done(usize, SliceRun, pb::RolloutPartial),
}

/// Runs slices from `queue` on `replica` one after another until the queue is empty.
async fn worker(
    replica: SocketAddr,
    request: pb::RolloutRequest,
    queue: Arc<Mutex<VecDeque<(usize, pb::TrialRange)>>>,
    events: tokio::sync::mpsc::UnboundedSender<Event>,
) -> Result<(), BoxError> {
    let mut client = connect(replica).await?;
    loop {
        let Some((k, range)) = queue.lock().expect("queue").pop_front() else {
            return Ok(());
        };
        let what = |e: &dyn std::fmt::Display| {
            format!(
                "replica {replica}, trials {}..{}: {e}",
                range.first,
                range.first as u64 + range.count as u64
            )
        };
        let req = pb::RolloutRequest {
            trials: 0,
            range: Some(range),
            // About 50 updates per slice, for the progress.
            report_every: range.count.div_ceil(50),
            ..request.clone()
        };
        let start = Instant::now();
        let mut stream = client
            .rollout(req)
            .await
            .map_err(|e| what(&e))?
            .into_inner();
        let mut last = None;
        while let Some(u) = stream.message().await.map_err(|e| what(&e))? {
            let _ = events.send(Event::Progress(k, u.trials));
            last = Some(u);
        }
        let last = last.ok_or_else(|| what(&"the stream ended without an update"))?;
        let partial = match (last.done, last.partial) {
            (true, Some(p)) => p,
            _ => return Err(what(&"the last update is not done or has no partial").into()),
        };
        let run = SliceRun {
            replica,
            range,
            seconds: start.elapsed().as_secs_f64(),
        };
        let _ = events.send(Event::Done(k, run, partial));
    }
}

/// Rolls out `request` (position, dice, plies, trials (0: 1,296), seed, truncation;
/// no `range` or `merge`) over `replicas`: the trials split into one range per
/// replica, or into ranges of `slice_trials` when it is not 0 (so that each stays
/// within the servers' long request timeout), each replica running one at a time; then
/// the first replica merges their partial results. `on_progress(done, total)` is
/// called as trials finish. The answer is bit for bit the last update of one
/// rollout of all the trials on one server (with `range` `0..trials`).
///
/// Errors: a request with `range` or `merge`; no replica; a replica that cannot be
/// reached or whose slice fails (the message names it and the range, with the
/// server's status); the merge's status.
pub async fn split_rollout(
    replicas: &[SocketAddr],
    request: &pb::RolloutRequest,
    slice_trials: u32,
    on_progress: &mut dyn FnMut(u32, u32),
) -> Result<SplitRollout, BoxError> {
    if request.range.is_some() || !request.merge.is_empty() {
        return Err("a split rollout sets `range` and `merge` itself".into());
    }
    let Some(&merger) = replicas.first() else {
        return Err("no replica".into());
    };
    let total = match request.trials {
        0 => DEFAULT_TRIALS,
        n => n,
    };
    let slices = match slice_trials {
        0 => replicas.len(),
        n => total.div_ceil(n) as usize,
    };
    let ranges = split_trials(total, slices.max(replicas.len().min(total as usize)));
    let queue = Arc::new(Mutex::new(
        ranges.iter().copied().enumerate().collect::<VecDeque<_>>(),
    ));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut tasks = tokio::task::JoinSet::new();
    for &r in replicas.iter().take(ranges.len()) {
        tasks.spawn(worker(r, request.clone(), queue.clone(), tx.clone()));
    }
    drop(tx);
    let mut done = vec![0u32; ranges.len()];
    let mut runs: Vec<Option<(SliceRun, pb::RolloutPartial)>> = vec![None; ranges.len()];
    // Until every worker has ended (and dropped its sender), or one fails.
    loop {
        tokio::select! {
            event = rx.recv() => match event {
                Some(Event::Progress(k, n)) => {
                    done[k] = n;
                    on_progress(done.iter().sum(), total);
                }
                Some(Event::Done(k, run, partial)) => {
                    done[k] = ranges[k].count;
                    runs[k] = Some((run, partial));
                    on_progress(done.iter().sum(), total);
                }
                None => break,
            },
            Some(end) = tasks.join_next() => {
                // A failed worker stops everything (dropping the set cancels the
                // other slices' streams).
                end??;
            }
        }
    }
    while let Some(end) = tasks.join_next().await {
        end??;
    }
    let mut slices = Vec::with_capacity(runs.len());
    let mut partials = Vec::with_capacity(runs.len());
    for (k, r) in runs.into_iter().enumerate() {
        let (run, partial) = r.ok_or_else(|| format!("slice {k} did not finish"))?;
        slices.push(run);
        partials.push(partial);
    }
    let merge = pb::RolloutRequest {
        trials: 0,
        report_every: 0,
        range: None,
        merge: partials,
        ..request.clone()
    };
    let mut client = connect(merger).await?;
    let mut stream = client
        .rollout(merge)
        .await
        .map_err(|e| format!("replica {merger}, merge: {e}"))?
        .into_inner();
    let response = stream
        .message()
        .await
        .map_err(|e| format!("replica {merger}, merge: {e}"))?
        .ok_or_else(|| format!("replica {merger}, merge: no answer"))?;
    Ok(SplitRollout {
        response,
        slices,
        merged_by: merger,
    })
}
