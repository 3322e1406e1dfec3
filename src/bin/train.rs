//! TD(λ) self-play training of the Tavli nets (see `src/train/td.rs`, docs/training.md).
//!
//! ```text
//! cargo run --release --bin train -- --variant portes --games 100000 --seed 1 \
//!     --hidden 64 --alpha 0.01 --lambda 0.7 --checkpoint-every 5000 \
//!     --out weights/portes-v1.tnet
//! ```
//!
//! Every `--checkpoint-every` games the net is saved to `--out` and plays a quick
//! match of `--eval-games` games (0-ply greedy) against each `--baseline`; a log line
//! with games/s and points per game is printed (stderr), besides the progress bar.

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use std::sync::Arc;
use std::time::Instant;
use tavli_engine::eval::inputs::{encode, SparseInputs};
use tavli_engine::eval::net::{Net, NetEvaluator};
use tavli_engine::eval::Evaluator;
use tavli_engine::rules::movegen::generate;
use tavli_engine::rules::Variant;
use tavli_engine::train::heuristic::Heuristic;
use tavli_engine::train::pubeval::PubEval;
use tavli_engine::train::td::{
    play_match, start_board, start_probabilities, GreedyPolicy, Policy, RandomPolicy, TdConfig,
    Trainer,
};

#[derive(Parser, Debug)]
#[command(about = "TD(lambda) self-play training of a Tavli net")]
struct Args {
    /// portes, plakoto or fevga.
    #[arg(long)]
    variant: String,
    /// Self-play games to play in this run.
    #[arg(long, default_value_t = 10_000)]
    games: u64,
    /// Seed of the random streams (weights init and dice).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Hidden units of a new net (ignored with --resume).
    #[arg(long, default_value_t = 64)]
    hidden: usize,
    /// Step size at the start of the run.
    #[arg(long, default_value_t = 0.01)]
    alpha: f32,
    /// Step size at the end of the run (linear decay; default: --alpha).
    #[arg(long)]
    alpha_end: Option<f32>,
    /// Lambda of TD(lambda).
    #[arg(long, default_value_t = 0.7)]
    lambda: f32,
    /// Probability of a random play during self-play.
    #[arg(long, default_value_t = 0.0)]
    epsilon: f32,
    /// Save and measure every this many games.
    #[arg(long, default_value_t = 5_000)]
    checkpoint_every: u64,
    /// Games of each progress match.
    #[arg(long, default_value_t = 400)]
    eval_games: u32,
    /// Baselines for progress matches (comma separated): random, pubeval, heuristic, file:<path.tnet>.
    #[arg(long, default_value = "random")]
    baseline: String,
    /// Output file (.tnet), written at every checkpoint and at the end.
    #[arg(long)]
    out: String,
    /// Continue from this .tnet file.
    #[arg(long)]
    resume: Option<String>,
    /// Only measure evaluations per second and exit.
    #[arg(long)]
    measure: bool,
    /// Only play the progress match(es) of the (resumed) net and exit.
    #[arg(long)]
    match_only: bool,
}

/// `random`, `pubeval` (Tesauro's, for Portes), `heuristic` (helper baselines for
/// Plakoto and Fevga), or `file:<path>` (another .tnet net of the same variant, greedy 0-ply).
fn baseline(name: &str, variant: Variant) -> Option<Box<dyn Policy>> {
    if let Some(path) = name.strip_prefix("file:") {
        let n = Net::load(path).ok().filter(|n| n.variant == variant)?;
        return Some(Box::new(GreedyPolicy(Arc::new(NetEvaluator::new(n)))));
    }
    match name {
        "random" => Some(Box::new(RandomPolicy)),
        "pubeval" => Some(Box::new(GreedyPolicy(Arc::new(PubEval)))),
        "heuristic" => Some(Box::new(GreedyPolicy(Arc::new(Heuristic)))),
        _ => None,
    }
}

/// Static evaluations per second on the boards reached from the start by one roll.
fn measure(net: &Net) {
    let v = net.variant;
    let mut plays = Vec::new();
    for d in tavli_engine::rules::Dice::all_rolls() {
        generate(v, &start_board(v), d, &mut plays);
    }
    let boards: Vec<_> = plays.iter().map(|p| p.board.mirror(v)).collect();
    let n = 400_000usize;
    let mut x = SparseInputs::default();
    let t = Instant::now();
    let mut acc = 0.0f32;
    for i in 0..n {
        let b = &boards[i % boards.len()];
        encode(v, b, &mut x);
        acc += net.forward(&x)[0];
    }
    let s = t.elapsed().as_secs_f64();
    eprintln!(
        "{v}: hidden {}: {:.0} evaluations/s (encode + forward, {} boards, checksum {acc:.1})",
        net.hidden,
        n as f64 / s,
        boards.len()
    );
}

fn main() {
    let a = Args::parse();
    let variant = Variant::from_name(&a.variant).unwrap_or_else(|| {
        eprintln!("unknown variant {}", a.variant);
        std::process::exit(2)
    });
    let net = match &a.resume {
        Some(p) => {
            let n = Net::load(p).unwrap_or_else(|e| {
                eprintln!("cannot resume from {p}: {e}");
                std::process::exit(2)
            });
            if n.variant != variant {
                eprintln!("{p} is a {} net", n.variant);
                std::process::exit(2)
            }
            n
        }
        None => Net::new_random(variant, a.hidden, a.seed),
    };
    if a.measure {
        measure(&net);
        return;
    }
    let baselines: Vec<(String, Box<dyn Policy>)> = a
        .baseline
        .split(',')
        .map(|s| {
            let b = baseline(s.trim(), variant).unwrap_or_else(|| {
                eprintln!("unknown baseline {s}");
                std::process::exit(2)
            });
            (s.trim().to_string(), b)
        })
        .collect();
    if a.match_only {
        let me = GreedyPolicy(Arc::new(NetEvaluator::new(net.clone())));
        for (name, b) in &baselines {
            let t = Instant::now();
            let r = play_match(variant, &me, b.as_ref(), a.eval_games, a.seed);
            eprintln!(
                "{} ({} games) vs {name}: {:+.3} ± {:.3} points/game over {} games (W{} L{} D{}) in {:.0}s",
                me.label(variant),
                net.games,
                r.ppg(),
                r.stderr(),
                r.games,
                r.wins,
                r.losses,
                r.draws,
                t.elapsed().as_secs_f64()
            );
        }
        return;
    }
    let cfg = TdConfig {
        alpha: a.alpha,
        lambda: a.lambda,
        epsilon: a.epsilon,
    };
    let alpha_end = a.alpha_end.unwrap_or(a.alpha);
    let start_games = net.games;
    eprintln!(
        "train {variant}: hidden {} games {}+{} seed {} alpha {}→{} lambda {} epsilon {}",
        net.hidden, start_games, a.games, a.seed, a.alpha, alpha_end, a.lambda, a.epsilon
    );
    let mut tr = Trainer::new(net, cfg, a.seed);
    let pb = ProgressBar::new(a.games);
    pb.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} {per_sec} eta {eta} {msg}",
        )
        .unwrap()
        .progress_chars("=> "),
    );
    let log = |pb: &ProgressBar, s: String| {
        if pb.is_hidden() {
            eprintln!("{s}");
        } else {
            pb.println(s);
        }
    };
    let t0 = Instant::now();
    let (mut plies, mut first_pts) = (0u64, 0i64);
    let mut window = (Instant::now(), 0u64);
    for g in 1..=a.games {
        let frac = (g - 1) as f32 / a.games.max(1) as f32;
        tr.cfg.alpha = a.alpha + (alpha_end - a.alpha) * frac;
        let s = tr.train_game();
        plies += s.plies as u64;
        first_pts += s.points_first as i64;
        pb.inc(1);
        if g % a.checkpoint_every == 0 || g == a.games {
            tr.net.save(&a.out).unwrap_or_else(|e| {
                eprintln!("cannot save {}: {e}", a.out);
                std::process::exit(1)
            });
            let rate = (g - window.1) as f64 / window.0.elapsed().as_secs_f64();
            let me = GreedyPolicy(Arc::new(NetEvaluator::new(tr.net.clone())));
            let mut parts = Vec::new();
            for (name, b) in &baselines {
                let r = play_match(variant, &me, b.as_ref(), a.eval_games, 1000 + g);
                parts.push(format!(
                    "vs {name} {:+.3}±{:.3} (W{} L{} D{})",
                    r.ppg(),
                    r.stderr(),
                    r.wins,
                    r.losses,
                    r.draws
                ));
            }
            let p = start_probabilities(&tr.net);
            let msg = parts.join(" ");
            pb.set_message(msg.clone());
            log(
                &pb,
                format!(
                    "games {} ({:.0}s) {:.1} games/s alpha {:.4} plies/game {:.1} first-mover ppg {:+.3} start win {:.3} wm {:.3} lm {:.3} d {:.3} | {}",
                    start_games + g,
                    t0.elapsed().as_secs_f64(),
                    rate,
                    tr.cfg.alpha,
                    plies as f64 / g as f64,
                    first_pts as f64 / g as f64,
                    p.win,
                    p.win_mars,
                    p.lose_mars,
                    p.draw,
                    msg
                ),
            );
            window = (Instant::now(), g);
        }
    }
    pb.finish();
    eprintln!(
        "done: {} games in {:.0}s, net saved to {} ({})",
        a.games,
        t0.elapsed().as_secs_f64(),
        a.out,
        NetEvaluator::new(tr.net.clone()).name(variant)
    );
}
