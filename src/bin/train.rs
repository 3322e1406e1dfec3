//! `train`: the tools that make the Tavli nets (docs/training.md; code in
//! `src/train/`).
//!
//! - `train td`: TD(λ) self-play of one net (`src/train/td.rs`).
//! - `train gen`: positions of self-play games of a net (0 ply, ε-random plays).
//! - `train label`: labels positions with a net's n-ply search values or rollouts.
//! - `train fit`: fits a net (new or resumed) to labelled positions, as the net of
//!   every position, of contact positions or of race positions of a `.tnet` file.
//! - `train measure`: static evaluations per second of a net file.
//! - `train match`: quick 0-ply matches of a net against baselines.
//!
//! ```text
//! cargo build --release --bin train
//! train td --variant portes --games 100000 --input-set v2 --hidden 128 --out /tmp/p.tnet
//! train gen --variant portes --net /tmp/p.tnet --games 20000 --out /tmp/pos.bin
//! train label --variant portes --net /tmp/p.tnet --plies 1 --in /tmp/pos.bin --out /tmp/lab.bin
//! train fit --variant portes --data /tmp/lab.bin --init /tmp/p.tnet --out /tmp/p2.tnet
//! ```
//!
//! Long steps log a line to stderr every 30 s (besides the progress bar on a
//! terminal), so they can run under `nohup` with their output in a log file.

use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tavli_engine::eval::inputs::{InputSet, SparseInputs};
use tavli_engine::eval::net::{load_default, Net, NetEvaluator, Nets};
use tavli_engine::eval::Evaluator;
use tavli_engine::rules::movegen::generate_positions;
use tavli_engine::rules::Variant;
use tavli_engine::train::data::DataSet;
use tavli_engine::train::heuristic::Heuristic;
use tavli_engine::train::supervised::{
    fit, label, self_play_positions, FitConfig, GenConfig, LabelBy, Subset,
};
use tavli_engine::train::td::{
    play_match, start_board, start_probabilities, GreedyPolicy, Policy, PubEvalPolicy,
    RandomPolicy, TdConfig, Trainer,
};

#[derive(Parser, Debug)]
#[command(
    about = "Training tools of the Tavli nets (TD(lambda), self-play positions, labels, fits)"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// TD(lambda) self-play training of one net.
    Td(TdArgs),
    /// Positions from self-play games of a net.
    Gen(GenArgs),
    /// Labels positions with a net's n-ply values.
    Label(LabelArgs),
    /// Fits a net to labelled positions.
    Fit(FitArgs),
    /// Static evaluations per second of a net file.
    Measure(MeasureArgs),
    /// 0-ply matches of a net against baselines (pairs with the same dice).
    Match(MatchArgs),
}

#[derive(Args, Debug)]
struct TdArgs {
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
    /// Inputs of a new net: v1 or v2 (ignored with --resume).
    #[arg(long, default_value = "v2")]
    input_set: String,
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
    /// Continue from the main net of this .tnet file.
    #[arg(long)]
    resume: Option<String>,
    /// Generation written to the file (the N of net-<variant>-vN).
    #[arg(long, default_value_t = 2)]
    generation: u32,
}

#[derive(Args, Debug)]
struct GenArgs {
    /// portes, plakoto or fevga.
    #[arg(long)]
    variant: String,
    /// The playing net: a .tnet file, or "default" for the committed one.
    #[arg(long)]
    net: String,
    /// Games to play.
    #[arg(long)]
    games: u64,
    /// Master seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Probability of a uniformly random play at each turn.
    #[arg(long, default_value_t = 0.05)]
    epsilon: f32,
    /// Also keep the positions after this many next best plays of every turn.
    #[arg(long, default_value_t = 0)]
    alternatives: usize,
    /// Worker threads (the result does not depend on it).
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Output positions file.
    #[arg(long)]
    out: String,
}

#[derive(Args, Debug)]
struct LabelArgs {
    /// portes, plakoto or fevga.
    #[arg(long)]
    variant: String,
    /// The labelling net: a .tnet file, or "default" for the committed one.
    #[arg(long)]
    net: String,
    /// Search depth of the labels (0..=2); not with --rollouts.
    #[arg(long, default_value_t = 1, conflicts_with = "rollouts")]
    plies: u8,
    /// Label with the mean of a 0-ply rollout of this many games instead of a search.
    #[arg(long)]
    rollouts: Option<u32>,
    /// With --rollouts: no luck adjustment (the raw mean of the games).
    #[arg(long, requires = "rollouts")]
    no_luck: bool,
    /// With --rollouts: cut each game after this many plies and take the net's 0-ply
    /// value there (default: play to the end).
    #[arg(long, requires = "rollouts")]
    truncate: Option<u32>,
    /// With --rollouts: master seed of the dice (default 1).
    #[arg(long, requires = "rollouts")]
    seed: Option<u64>,
    /// Worker threads (the result does not depend on it).
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Input positions file (from `train gen`).
    #[arg(long = "in")]
    input: String,
    /// Label only the first N positions.
    #[arg(long)]
    limit: Option<usize>,
    /// Output labelled positions file.
    #[arg(long)]
    out: String,
}

#[derive(Args, Debug)]
struct FitArgs {
    /// portes, plakoto or fevga.
    #[arg(long)]
    variant: String,
    /// Labelled positions files, comma separated.
    #[arg(long)]
    data: String,
    /// Which net of the file to fit: all (one net for every position), contact or race.
    #[arg(long, default_value = "all")]
    role: String,
    /// Start from the net of this role in this .tnet file (else a new net); a race
    /// net starts from the main net when the file has no race net.
    #[arg(long)]
    init: Option<String>,
    /// Keep the other net (race for --role contact, contact for --role race) from this file.
    #[arg(long)]
    base: Option<String>,
    /// Hidden units of a new net; a smaller --init net is widened to this many.
    #[arg(long, default_value_t = 128)]
    hidden: usize,
    /// Inputs of the net: v1 or v2; an --init net with other inputs is widened.
    #[arg(long, default_value = "v2")]
    input_set: String,
    /// Passes over the data (0: only report the hold-out figures of --init).
    #[arg(long, default_value_t = 10)]
    epochs: u32,
    /// Step size at the start (linear decay to --alpha-end).
    #[arg(long, default_value_t = 0.01)]
    alpha: f32,
    /// Step size at the end.
    #[arg(long, default_value_t = 0.001)]
    alpha_end: f32,
    /// Seed of the shuffles, the hold-out and a new net's weights.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Share of positions held out to measure the fit.
    #[arg(long, default_value_t = 0.05)]
    holdout: f32,
    /// Adam on batches of this many positions (--alpha is then Adam's step size,
    /// e.g. 0.001); 0: plain SGD, one step per position.
    #[arg(long, default_value_t = 0)]
    adam_batch: usize,
    /// Generation written to the file (the N of net-<variant>-vN).
    #[arg(long, default_value_t = 2)]
    generation: u32,
    /// Output .tnet file.
    #[arg(long)]
    out: String,
}

#[derive(Args, Debug)]
struct MeasureArgs {
    /// A .tnet file, or "default".
    #[arg(long)]
    net: String,
    /// portes, plakoto or fevga (for "default").
    #[arg(long, default_value = "portes")]
    variant: String,
}

#[derive(Args, Debug)]
struct MatchArgs {
    /// portes, plakoto or fevga.
    #[arg(long)]
    variant: String,
    /// A .tnet file, or "default".
    #[arg(long)]
    net: String,
    /// Baselines (comma separated): random, pubeval, heuristic, file:<path.tnet>.
    #[arg(long, default_value = "random")]
    baseline: String,
    /// Games per baseline.
    #[arg(long, default_value_t = 1000)]
    games: u32,
    /// Seed.
    #[arg(long, default_value_t = 7)]
    seed: u64,
}

fn die(msg: impl std::fmt::Display) -> ! {
    eprintln!("train: {msg}");
    std::process::exit(2)
}

fn variant_of(name: &str) -> Variant {
    Variant::from_name(name).unwrap_or_else(|| die(format!("unknown variant {name}")))
}

fn input_set_of(name: &str) -> InputSet {
    match name {
        "v1" => InputSet::V1,
        "v2" => InputSet::V2,
        _ => die(format!("unknown input set {name} (v1 or v2)")),
    }
}

/// The nets of a file, or the committed ones for "default".
fn load_nets(spec: &str, variant: Variant) -> Nets {
    let nets = if spec == "default" {
        load_default(variant)
            .unwrap_or_else(|| die(format!("no committed net for {variant}")))
            .nets
            .clone()
    } else {
        Nets::load(spec).unwrap_or_else(|e| die(format!("{spec}: {e}")))
    };
    if nets.variant != variant {
        die(format!("{spec} is a {} net, not {variant}", nets.variant));
    }
    nets
}

/// `random`, `pubeval` (Tesauro's, for Portes), `heuristic` (Plakoto and Fevga), or
/// `file:<path>` (another .tnet of the same variant, greedy 0-ply).
fn baseline(name: &str, variant: Variant) -> Option<Box<dyn Policy>> {
    if let Some(path) = name.strip_prefix("file:") {
        let n = Nets::load(path).ok().filter(|n| n.variant == variant)?;
        return Some(Box::new(GreedyPolicy(Arc::new(NetEvaluator::new(n)))));
    }
    match name {
        "random" => Some(Box::new(RandomPolicy)),
        "pubeval" => Some(Box::new(PubEvalPolicy)),
        "heuristic" => Some(Box::new(GreedyPolicy(Arc::new(Heuristic)))),
        _ => None,
    }
}

fn baselines(spec: &str, variant: Variant) -> Vec<(String, Box<dyn Policy>)> {
    spec.split(',')
        .map(|s| {
            let b =
                baseline(s.trim(), variant).unwrap_or_else(|| die(format!("unknown baseline {s}")));
            (s.trim().to_string(), b)
        })
        .collect()
}

/// A progress bar over `total` items counted by `done`, plus a log line every 30 s
/// (for runs under nohup). Runs `work` and returns its result.
fn with_progress<R: Send>(
    what: &str,
    total: usize,
    done: &AtomicUsize,
    work: impl FnOnce() -> R + Send,
) -> R {
    let pb = ProgressBar::new(total as u64);
    pb.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} {per_sec} eta {eta} {msg}",
        )
        .expect("template")
        .progress_chars("=> "),
    );
    pb.set_message(what.to_string());
    let t0 = Instant::now();
    let finished = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            let mut last_log = Instant::now();
            while !finished.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                let n = done.load(Ordering::Relaxed);
                pb.set_position(n as u64);
                if last_log.elapsed() >= Duration::from_secs(30) {
                    last_log = Instant::now();
                    let secs = t0.elapsed().as_secs_f64();
                    eprintln!(
                        "{what}: {n}/{total} in {secs:.0}s ({:.1}/s)",
                        n as f64 / secs.max(1e-9)
                    );
                }
            }
        });
        let r = work();
        finished.store(true, Ordering::Relaxed);
        watcher.join().expect("progress thread");
        pb.finish_and_clear();
        eprintln!(
            "{what}: {}/{total} in {:.0}s",
            done.load(Ordering::Relaxed),
            t0.elapsed().as_secs_f64()
        );
        r
    })
}

fn main() {
    match Cli::parse().cmd {
        Cmd::Td(a) => td(a),
        Cmd::Gen(a) => gen(a),
        Cmd::Label(a) => label_cmd(a),
        Cmd::Fit(a) => fit_cmd(a),
        Cmd::Measure(a) => {
            let nets = if a.net == "default" {
                load_nets("default", variant_of(&a.variant))
            } else {
                Nets::load(&a.net).unwrap_or_else(|e| die(format!("{}: {e}", a.net)))
            };
            measure(&nets)
        }
        Cmd::Match(a) => match_cmd(a),
    }
}

fn gen(a: GenArgs) {
    let variant = variant_of(&a.variant);
    let eval: Arc<dyn Evaluator> = Arc::new(NetEvaluator::new(load_nets(&a.net, variant)));
    let cfg = GenConfig {
        games: a.games,
        seed: a.seed,
        epsilon: a.epsilon,
        threads: a.threads,
        max_turns: 5000,
        alternatives: a.alternatives,
    };
    let done = AtomicUsize::new(0);
    let set = with_progress("games", a.games as usize, &done, || {
        self_play_positions(variant, &eval, &cfg, &done)
    });
    set.save(&a.out)
        .unwrap_or_else(|e| die(format!("{}: {e}", a.out)));
    eprintln!("{} positions written to {}", set.len(), a.out);
}

fn label_cmd(a: LabelArgs) {
    let variant = variant_of(&a.variant);
    let eval: Arc<dyn Evaluator> = Arc::new(NetEvaluator::new(load_nets(&a.net, variant)));
    let mut set = DataSet::load(&a.input).unwrap_or_else(|e| die(format!("{}: {e}", a.input)));
    if set.variant != Some(variant) {
        die(format!("{} holds {:?} positions", a.input, set.variant));
    }
    if let Some(n) = a.limit {
        set.boards.truncate(n);
    }
    let done = AtomicUsize::new(0);
    let n = set.len();
    let (by, how) = match a.rollouts {
        Some(0) => die("--rollouts: at least 1 game".to_string()),
        Some(trials) => (
            LabelBy::Rollout {
                trials,
                seed: a.seed.unwrap_or(1),
                luck: !a.no_luck,
                truncation: a.truncate,
            },
            format!(
                "{trials}-game rollouts{}{}",
                if a.no_luck { "" } else { ", luck-adjusted" },
                a.truncate
                    .map(|t| format!(", truncated after {t} plies"))
                    .unwrap_or_default()
            ),
        ),
        None => (
            LabelBy::Search { plies: a.plies },
            format!("{}-ply", a.plies),
        ),
    };
    set.targets = with_progress("labels", n, &done, || {
        label(variant, &set.boards, &eval, by, a.threads, &done)
    });
    set.save(&a.out)
        .unwrap_or_else(|e| die(format!("{}: {e}", a.out)));
    eprintln!(
        "{n} labelled positions ({how}, {}) written to {}",
        eval.name(variant),
        a.out
    );
}

fn fit_cmd(a: FitArgs) {
    let variant = variant_of(&a.variant);
    let mut data = DataSet::new(variant);
    for path in a.data.split(',') {
        let d = DataSet::load(path.trim()).unwrap_or_else(|e| die(format!("{path}: {e}")));
        if !d.labelled() {
            die(format!("{path} has no labels"));
        }
        data.extend(d).unwrap_or_else(|e| die(e));
    }
    let subset = match a.role.as_str() {
        "all" => Subset::All,
        "contact" => Subset::Contact,
        "race" => Subset::Race,
        r => die(format!("unknown role {r} (all, contact, race)")),
    };
    let pick = |nets: Nets| -> Net {
        match subset {
            // A race net starts from the main net when the file has none.
            Subset::Race => nets.race.unwrap_or(nets.main),
            _ => nets.main,
        }
    };
    let set = input_set_of(&a.input_set);
    let mut net = match &a.init {
        Some(p) => {
            let n = pick(load_nets(p, variant));
            if n.input_set != set || n.hidden < a.hidden {
                // Warm start of a wider net (more features or hidden units).
                n.widen(set, a.hidden.max(n.hidden), a.seed)
            } else {
                n
            }
        }
        None => Net::new_random(variant, set, a.hidden, a.seed),
    };
    let cfg = FitConfig {
        epochs: a.epochs,
        alpha: a.alpha,
        alpha_end: a.alpha_end,
        seed: a.seed,
        holdout: a.holdout,
        adam_batch: a.adam_batch,
    };
    eprintln!(
        "fit {variant} {:?}: {} positions, net {:?} hidden {}, {} epochs, alpha {}→{}, {}",
        subset,
        data.len(),
        net.input_set,
        net.hidden,
        a.epochs,
        a.alpha,
        a.alpha_end,
        match a.adam_batch {
            0 => "SGD".to_string(),
            n => format!("Adam, batches of {n}"),
        }
    );
    let t0 = Instant::now();
    fit(&mut net, &data, subset, &cfg, |r| {
        eprintln!(
            "epoch {} ({:.0}s) alpha {:.5}: train loss {:.5}, hold-out loss {:.5}, hold-out |equity error| {:.4} ({} trained, {} held out)",
            r.epoch,
            t0.elapsed().as_secs_f64(),
            r.alpha,
            r.train_loss,
            r.holdout_loss,
            r.holdout_equity_error,
            r.trained,
            r.held_out
        );
    });
    let base = a.base.as_deref().map(|p| load_nets(p, variant));
    let nets = match subset {
        Subset::All => Nets::single(a.generation, net),
        Subset::Contact => Nets {
            variant,
            generation: a.generation,
            main: net,
            race: base.and_then(|b| b.race),
        },
        Subset::Race => Nets {
            variant,
            generation: a.generation,
            main: base
                .unwrap_or_else(|| die("--role race needs --base (the contact net)"))
                .main,
            race: Some(net),
        },
    };
    nets.save(&a.out)
        .unwrap_or_else(|e| die(format!("{}: {e}", a.out)));
    eprintln!(
        "saved {} ({})",
        a.out,
        NetEvaluator::new(nets).name(variant)
    );
}

fn match_cmd(a: MatchArgs) {
    let variant = variant_of(&a.variant);
    let nets = load_nets(&a.net, variant);
    let me = GreedyPolicy(Arc::new(NetEvaluator::new(nets)));
    for (name, b) in &baselines(&a.baseline, variant) {
        let t = Instant::now();
        let r = play_match(variant, &me, b.as_ref(), a.games, a.seed);
        eprintln!(
            "{} vs {name}: {:+.3} ± {:.3} points/game over {} games (W{} L{} D{}) in {:.0}s",
            me.label(variant),
            r.ppg(),
            r.stderr(),
            r.games,
            r.wins,
            r.losses,
            r.draws,
            t.elapsed().as_secs_f64()
        );
    }
}

/// Static evaluations per second (encode + forward, one thread) on the boards
/// reached from the start by one roll and by random play.
fn measure(nets: &Nets) {
    let v = nets.variant;
    let mut plays = Vec::new();
    for d in tavli_engine::rules::Dice::all_rolls() {
        generate_positions(v, &start_board(v), d, &mut plays);
    }
    let mut boards: Vec<_> = plays.iter().map(|p| p.mirror(v)).collect();
    boards.extend(
        tavli_engine::corpus::random_positions(v, 5, 2000)
            .iter()
            .filter(|p| p.game_over().is_none())
            .map(|p| tavli_engine::rules::board::Board::from_position(p, p.turn)),
    );
    let n = 400_000usize;
    let mut x = SparseInputs::default();
    let t = Instant::now();
    let mut acc = 0.0f32;
    for i in 0..n {
        let b = &boards[i % boards.len()];
        let net = nets.net_for(b);
        net.encode(b, &mut x);
        acc += net.forward(&x)[0];
    }
    let s = t.elapsed().as_secs_f64();
    eprintln!(
        "{v}: {} hidden {}: {:.0} evaluations/s (encode + forward, {} boards, checksum {acc:.1})",
        NetEvaluator::new(nets.clone()).name(v),
        nets.main.hidden,
        n as f64 / s,
        boards.len()
    );
}

fn td(a: TdArgs) {
    let variant = variant_of(&a.variant);
    let net = match &a.resume {
        Some(p) => load_nets(p, variant).main,
        None => Net::new_random(variant, input_set_of(&a.input_set), a.hidden, a.seed),
    };
    let baselines = baselines(&a.baseline, variant);
    let cfg = TdConfig {
        alpha: a.alpha,
        lambda: a.lambda,
        epsilon: a.epsilon,
    };
    let alpha_end = a.alpha_end.unwrap_or(a.alpha);
    let start_games = net.games;
    eprintln!(
        "train {variant}: {:?} hidden {} games {}+{} seed {} alpha {}→{} lambda {} epsilon {}",
        net.input_set,
        net.hidden,
        start_games,
        a.games,
        a.seed,
        a.alpha,
        alpha_end,
        a.lambda,
        a.epsilon
    );
    let mut tr = Trainer::new(net, cfg, a.seed);
    let pb = ProgressBar::new(a.games);
    pb.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} {per_sec} eta {eta} {msg}",
        )
        .expect("template")
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
            Nets::single(a.generation, tr.net.clone())
                .save(&a.out)
                .unwrap_or_else(|e| die(format!("cannot save {}: {e}", a.out)));
            let rate = (g - window.1) as f64 / window.0.elapsed().as_secs_f64();
            let me = GreedyPolicy(Arc::new(NetEvaluator::single(a.generation, tr.net.clone())));
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
        "done: {} games in {:.0}s, net saved to {}",
        a.games,
        t0.elapsed().as_secs_f64(),
        a.out
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(extra: &[&str]) -> Result<Cli, clap::Error> {
        let base = [
            "train",
            "label",
            "--variant",
            "portes",
            "--net",
            "default",
            "--in",
            "p.bin",
            "--out",
            "l.bin",
        ];
        Cli::try_parse_from(base.iter().chain(extra))
    }

    /// The rollout options of `train label` are refused without --rollouts (they
    /// would be ignored), and --plies is refused with it.
    #[test]
    fn label_options_that_need_rollouts() {
        for extra in [&["--seed", "3"][..], &["--no-luck"], &["--truncate", "10"]] {
            let e = label(extra).expect_err("needs --rollouts");
            assert_eq!(e.kind(), clap::error::ErrorKind::MissingRequiredArgument);
        }
        let e = label(&["--rollouts", "36", "--plies", "2"]).expect_err("conflict");
        assert_eq!(e.kind(), clap::error::ErrorKind::ArgumentConflict);
        let Cmd::Label(a) = label(&["--rollouts", "36", "--seed", "3", "--no-luck"])
            .expect("valid")
            .cmd
        else {
            panic!("not label")
        };
        assert_eq!((a.rollouts, a.seed, a.no_luck), (Some(36), Some(3), true));
        let Cmd::Label(a) = label(&["--plies", "2"]).expect("valid").cmd else {
            panic!("not label")
        };
        assert_eq!((a.plies, a.rollouts, a.seed), (2, None, None));
    }
}
