//! `tavli-engine rollout`: the `Rollout` RPC from the command line, with a progress
//! bar on stderr when it is a terminal.

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::ops::ControlFlow;
use std::time::Instant;
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
}

/// Runs the rollout with `service`'s evaluator and returns the text to print.
pub fn run(a: RolloutArgs, service: TavliEngineService) -> Result<String, BoxError> {
    let service = service.with_max_rollout_trials(u32::MAX);
    let req = pb::RolloutRequest {
        position: Some(pb::rollout_request::Position::PositionId(a.position)),
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
    let job = service.rollout_job(&req)?;
    let bar = if std::io::stderr().is_terminal() {
        let bar = ProgressBar::new(job.config.trials as u64);
        bar.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {pos}/{len} trials {per_sec} eta {eta}  {msg}",
            )
            .expect("template")
            .progress_chars("=> "),
        );
        bar
    } else {
        ProgressBar::hidden()
    };
    let start = Instant::now();
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
    let last = last.ok_or("the rollout gave no answer")?;
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
