//! Compares the luck adjustments of rollouts side by side (`docs/rollout.md`): for
//! each round and each [`Luck`] mode, one rollout of the same position with the same
//! seed on one thread; the modes alternate within every round so that they share the
//! machine's load. Time is the process's CPU time (user + system, from
//! `/proc/self/stat`, so that other processes on a shared machine do not count;
//! wall time where that file is missing). Prints, per mode, the mean CPU time per
//! rollout, the mean standard error of the equity, and the precision per CPU second
//! (1 / (standard error² × time)) relative to no adjustment. Usage:
//! `cargo run --release --example rollout_luck -- [trials] [rounds] [position-id] [plies]`
//! (defaults: 324 trials, 4 rounds, the Portes start, 0 plies).

use std::ops::ControlFlow;
use std::time::Instant;
use tavli_engine::eval::engine::Engine;
use tavli_engine::eval::rollout::{rollout, Luck, RolloutConfig};
use tavli_engine::eval::StopWhen;
use tavli_engine::rules::position_id::from_id;

/// CPU seconds used by this process so far (Linux), or `None`.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which is in parentheses): utime is the 14th
    // field of the line, stime the 15th, in clock ticks (100 per second on Linux).
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let trials: u32 = args.get(1).map_or(324, |s| s.parse().expect("trials"));
    let rounds: u64 = args.get(2).map_or(4, |s| s.parse().expect("rounds"));
    let id = args
        .get(3)
        .map_or("portes/w/24:2,13:5,8:3,6:5/1:2,12:5,17:3,19:5", |s| {
            s.as_str()
        });
    let plies: u8 = args.get(4).map_or(0, |s| s.parse().expect("plies"));
    let pos = from_id(id).expect("position id");
    let engine = Engine::load_default();
    // Built once before any timing (it is built on first use otherwise).
    tavli_engine::eval::bearoff::BearoffDb::global();
    let modes = [Luck::Off, Luck::AllPlays, Luck::Pruned];
    // Per mode: total seconds, total standard error, total equity.
    let mut acc = [(0f64, 0f64, 0f64); 3];
    println!("{id}: {trials} trials, {plies} plies, {rounds} rounds, 1 thread");
    for round in 0..rounds {
        for (m, &luck) in modes.iter().enumerate() {
            let cfg = RolloutConfig {
                plies,
                trials,
                seed: round,
                luck,
                threads: 1,
                ..RolloutConfig::default()
            };
            let (t, c) = (Instant::now(), cpu_seconds());
            let r = rollout(&engine, &pos, None, &cfg, StopWhen::default(), &mut |_| {
                ControlFlow::Continue(())
            })
            .expect("rollout");
            let secs = match (c, cpu_seconds()) {
                (Some(a), Some(b)) => b - a,
                _ => t.elapsed().as_secs_f64(),
            };
            acc[m].0 += secs;
            acc[m].1 += r.standard_errors.equity as f64;
            acc[m].2 += r.equity as f64;
            println!(
                "round {round} {luck:?}: {secs:.2} s, equity {:+.4} ± {:.4}",
                r.equity, r.standard_errors.equity
            );
        }
    }
    let n = rounds as f64;
    let precision = |a: (f64, f64, f64)| 1.0 / ((a.1 / n).powi(2) * (a.0 / n));
    let base = precision(acc[0]);
    println!("mode      CPU/rollout  equity   std.error  precision/s vs Off");
    for (m, luck) in modes.iter().enumerate() {
        let a = acc[m];
        println!(
            "{:<9} {:>9.2} s  {:+.4}  {:.4}     {:.2}",
            format!("{luck:?}"),
            a.0 / n,
            a.2 / n,
            a.1 / n,
            precision(a) / base
        );
    }
}
