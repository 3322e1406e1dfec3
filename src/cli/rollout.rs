//! `tavli-engine rollout`: the `Rollout` RPC from the command line, with a progress
//! bar on stderr when it is a terminal; run here, or with `--replicas` split over
//! several servers ([`tavli_engine::replicas`]).

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::ops::ControlFlow;
use std::time::Instant;
use tavli_engine::replicas;
use tavli_engine::rules::Dice;
use tavli_engine::service::{convert, json, pb, TavliEngineService};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Arguments of `tavli-engine rollout`.
#[derive(Args, Debug)]
pub struct RolloutArgs {
    /// The position: a Position ID (docs/formats.md).
    #[arg(long, short)]
    position: String,
    /// Optional roll of the side to move: its best play is made first, and the trials
    /// start after it.
    #[arg(long, short)]
    dice: Option<String>,
    /// Depth of the search that chooses every play: 0 or 1.
    #[arg(long, default_value_t = 0)]
    plies: u32,
    /// Number of trials (games).
    #[arg(long, default_value_t = 1296)]
    trials: u32,
    /// Seed of the dice (the same seed gives the same answer).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Cut each trial after this many plies and take the search's value (0: none).
    #[arg(long, default_value_t = 0)]
    truncation: u32,
    /// Print the last update as proto3 JSON (the shape grpcurl prints).
    #[arg(long)]
    json: bool,
    /// Run the trials on these servers instead of here: `HOST:PORT` items, comma
    /// separated, each an address or a DNS name standing for all its addresses (a
    /// Kubernetes headless Service). The trials are split evenly, the slices run at
    /// the same time over gRPC (plaintext) and the first replica merges them: the
    /// same answer as one rollout of all the trials (docs/rollout.md).
    #[arg(long, value_name = "ADDR,ADDR,...")]
    replicas: Option<String>,
    /// With --replicas: slices of this many trials (each replica runs one at a time),
    /// so that each stays within the servers' long request timeout and a replica
    /// that frees up takes the next; 0: one slice per
    /// replica.
    #[arg(long, default_value_t = 0, requires = "replicas")]
    slice_trials: u32,
}

/// Runs the rollout, locally with the evaluator of `service()` or, with
/// `--replicas`, split over those servers ([`tavli_engine::replicas`]), and returns
/// the text to print.
pub fn run(
    a: RolloutArgs,
    service: impl FnOnce() -> TavliEngineService,
) -> Result<String, BoxError> {
    let req = pb::RolloutRequest {
        position: Some(pb::rollout_request::Position::PositionId(
            a.position.clone(),
        )),
        dice: a
            .dice
            .as_deref()
            .map(|d| Dice::parse(d).map(convert::dice_to_pb))
            .transpose()?,
        plies: a.plies,
        trials: a.trials,
        seed: a.seed,
        // Often enough for the bar; reports are cheap.
        report_every: (a.trials / 100).max(1),
        truncation: a.truncation,
        ..Default::default()
    };
    let start = Instant::now();
    let last = match &a.replicas {
        Some(spec) => split(spec, a.slice_trials, &req)?,
        None => local(req, service())?,
    };
    if a.json {
        let mut text =
            serde_json::to_string_pretty(&json::to_json(&last, "tavli.v1.RolloutResponse"))?;
        text.push('\n');
        return Ok(text);
    }
    if std::io::stderr().is_terminal() {
        eprintln!(
            "{} trials in {:.1} s",
            last.trials,
            start.elapsed().as_secs_f64()
        );
    }
    text(&last)
}

/// A progress bar of `len` trials on stderr when it is a terminal (hidden otherwise).
fn progress_bar(len: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} trials {per_sec} eta {eta}  {msg}",
        )
        .expect("template")
        .progress_chars("=> "),
    );
    bar
}

/// The rollout on this machine: its last update.
fn local(
    req: pb::RolloutRequest,
    service: TavliEngineService,
) -> Result<pb::RolloutResponse, BoxError> {
    let service = service.with_max_rollout_trials(u32::MAX);
    let job = service.rollout_job(&req)?;
    let bar = progress_bar(job.config.trials as u64);
    let mut last = None;
    service.run_rollout(&job, None, None, &mut |u| {
        bar.set_position(u.trials as u64);
        bar.set_message(format!(
            "equity {:+.3} ± {:.3}",
            u.equity, u.equity_standard_error
        ));
        last = Some(u);
        ControlFlow::Continue(())
    })?;
    bar.finish_and_clear();
    last.ok_or_else(|| "the rollout gave no answer".into())
}

/// The rollout split over the replicas of `spec` (addresses or DNS names, comma
/// separated), in slices of `slice_trials` (0: one per replica): the merged last
/// update, without its partial sums (as the local rollout prints it). A line on
/// stderr says which replicas ran which trials, and how long each took.
fn split(
    spec: &str,
    slice_trials: u32,
    req: &pb::RolloutRequest,
) -> Result<pb::RolloutResponse, BoxError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let req = pb::RolloutRequest {
        report_every: 0,
        ..req.clone()
    };
    let bar = progress_bar(req.trials as u64);
    let start = Instant::now();
    let s = rt.block_on(async {
        let replicas = replicas::resolve(spec).await?;
        replicas::split_rollout(&replicas, &req, slice_trials, &mut |done, _| {
            bar.set_position(done as u64)
        })
        .await
    })?;
    bar.finish_and_clear();
    let mut by: Vec<(std::net::SocketAddr, u32, f64)> = Vec::new();
    for r in &s.slices {
        match by.iter_mut().find(|b| b.0 == r.replica) {
            Some(b) => (b.1, b.2) = (b.1 + r.range.count, b.2 + r.seconds),
            None => by.push((r.replica, r.range.count, r.seconds)),
        }
    }
    let parts: Vec<String> = by
        .iter()
        .map(|(a, n, t)| format!("{a} {n} trials in {t:.1} s"))
        .collect();
    eprintln!(
        "split over {} replicas, {} slices ({}), merged by {}: {:.1} s",
        by.len(),
        s.slices.len(),
        parts.join(", "),
        s.merged_by,
        start.elapsed().as_secs_f64()
    );
    Ok(pb::RolloutResponse {
        partial: None,
        ..s.response
    })
}

/// The text form of a rollout's last update.
fn text(last: &pb::RolloutResponse) -> Result<String, BoxError> {
    let p = last.probabilities.unwrap_or_default();
    let se = last.standard_errors.unwrap_or_default();
    let mut out = String::new();
    if let Some(play) = &last.play {
        writeln!(out, "play: {}", play.notation)?;
    }
    writeln!(
        out,
        "equity {:+.3} ± {:.3}  win {:.3} ± {:.3}  win-mars {:.3} ± {:.3}  lose {:.3} ± {:.3}  \
         lose-mars {:.3} ± {:.3}  draw {:.3} ± {:.3}  ({} trials, {}, {} plies)",
        last.equity,
        last.equity_standard_error,
        p.win,
        se.win,
        p.win_mars,
        se.win_mars,
        p.lose,
        se.lose,
        p.lose_mars,
        se.lose_mars,
        p.draw,
        se.draw,
        last.trials,
        last.evaluator,
        last.plies
    )?;
    Ok(out)
}
