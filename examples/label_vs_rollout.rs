//! How far a labelled training set, and the committed net's 0-ply and 1-ply values,
//! are from rollouts of the same positions (docs/training.md, "Round 13").
//!
//! It takes `positions` of the contact positions of a labelled file (`train label`'s
//! output): numbering the file's contact positions in file order, those numbered
//! `offset + k·stride` (modulo their count; `stride` 0: their count over
//! `positions`). It rolls each out once per spec `plies:trials` (plays chosen at
//! `plies`; luck-adjusted, [`Luck::Pruned`]; the exact bear-off database; every
//! core; seed 1000 + the position's index in the file) and prints one line per
//! position: its index in the file, the equities of the label and of the committed
//! net at 0 and 1 ply, each rollout's equity and standard error, and the Position ID.
//! At the end, against the first spec's rollout (the reference): the mean difference
//! of equity and the root mean square difference, also with the rollouts' noise taken
//! out (the mean squared difference minus the mean squared standard error of the
//! reference, and of the other rollout for a second spec). Each `net:PATH` argument
//! adds that net file's 0-ply equity as one more value compared (after the rollouts'
//! columns, before the Position ID); the rollouts are still played by the committed
//! net. Equities are points for the side to move (cubeless, a mars counts 2). Usage:
//!
//! `cargo run --release --example label_vs_rollout -- LABELS [positions] [offset] [stride] [plies:trials | net:PATH ...]`
//!
//! (defaults: 100 positions, offset 0, stride 0, one rollout `1:288`). Portes only.

use std::ops::ControlFlow;
use std::sync::Arc;
use tavli_engine::eval::engine::Engine;
use tavli_engine::eval::features::has_contact;
use tavli_engine::eval::net::{to_probabilities, NetEvaluator, Nets};
use tavli_engine::eval::rollout::{rollout, Luck, RolloutConfig};
use tavli_engine::eval::{EvalOptions, Evaluator, StopWhen};
use tavli_engine::rules::position_id::to_id;
use tavli_engine::rules::{Side, Variant};
use tavli_engine::train::data::DataSet;

/// Sums of differences against the reference rollout.
#[derive(Default)]
struct Diff {
    sum: f64,
    sq: f64,
    noise: f64,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .expect("usage: LABELS [positions] [offset] [stride] [plies:trials | net:PATH ...]");
    let n: usize = args.get(2).map_or(100, |s| s.parse().expect("positions"));
    let offset: usize = args.get(3).map_or(0, |s| s.parse().expect("offset"));
    let stride: usize = args.get(4).map_or(0, |s| s.parse().expect("stride"));
    let nets: Vec<(String, Engine)> = args
        .iter()
        .skip(5)
        .filter_map(|s| s.strip_prefix("net:"))
        .map(|path| {
            let file = Nets::load(path).unwrap_or_else(|e| panic!("{path}: {e}"));
            assert_eq!(file.variant, Variant::Portes, "{path}: a Portes net file");
            let e: Arc<dyn Evaluator> = Arc::new(NetEvaluator::new(file));
            (
                path.to_string(),
                Engine::with_evaluators(Some(e), None, None),
            )
        })
        .collect();
    let mut specs: Vec<(u8, u32)> = args
        .iter()
        .skip(5)
        .filter(|s| !s.starts_with("net:"))
        .map(|s| {
            let (p, t) = s.split_once(':').expect("spec plies:trials");
            (p.parse().expect("plies"), t.parse().expect("trials"))
        })
        .collect();
    if specs.is_empty() {
        specs.push((1, 288));
    }
    let v = Variant::Portes;
    let data = DataSet::load(path).expect("labelled positions file");
    assert!(
        data.variant == Some(v) && data.labelled(),
        "a labelled Portes file"
    );
    let engine = Engine::load_default();
    let contact: Vec<usize> = (0..data.boards.len())
        .filter(|&i| has_contact(v, &data.boards[i]))
        .collect();
    let stride = match stride {
        0 => (contact.len() / n.max(1)).max(1),
        s => s,
    };
    let names: Vec<String> = ["label".to_string(), "0-ply".into(), "1-ply".into()]
        .into_iter()
        .chain(
            specs
                .iter()
                .skip(1)
                .map(|(p, t)| format!("rollout {p}:{t}")),
        )
        .chain(nets.iter().map(|(path, _)| format!("{path} 0-ply")))
        .collect();
    let mut diffs: Vec<Diff> = names.iter().map(|_| Diff::default()).collect();
    let mut count = 0usize;
    println!(
        "# {} contact positions, stride {stride}; index label 0-ply 1-ply {}{} id",
        contact.len(),
        specs
            .iter()
            .map(|(p, t)| format!("r{p}:{t} se"))
            .collect::<Vec<_>>()
            .join(" "),
        nets.iter()
            .map(|(path, _)| format!(" {path}"))
            .collect::<String>()
    );
    for j in 0..n.min(contact.len()) {
        let i = contact[(j * stride + offset) % contact.len()];
        let board = &data.boards[i];
        let t = data.targets[i];
        let label = to_probabilities(v, t).equity();
        let value = |engine: &Engine, plies| {
            engine
                .evaluate_board(
                    v,
                    board,
                    EvalOptions {
                        plies,
                        ..Default::default()
                    },
                )
                .expect("a contact position with a net")
                .equity
        };
        let pos = board.to_position(v, Side::White, Side::White);
        let rolled: Vec<(f32, f32)> = specs
            .iter()
            .map(|&(plies, trials)| {
                let cfg = RolloutConfig {
                    plies,
                    trials,
                    seed: 1000 + i as u64,
                    luck: Luck::Pruned,
                    ..RolloutConfig::default()
                };
                let r = rollout(&engine, &pos, None, &cfg, StopWhen::default(), &mut |_| {
                    ControlFlow::Continue(())
                })
                .expect("rollout of a valid position");
                (r.equity, r.standard_errors.equity)
            })
            .collect();
        let (reference, ref_se) = rolled[0];
        let values: Vec<(f32, f32)> = [
            (label, 0.0),
            (value(&engine, 0), 0.0),
            (value(&engine, 1), 0.0),
        ]
        .into_iter()
        .chain(rolled.iter().skip(1).copied())
        .chain(nets.iter().map(|(_, e)| (value(e, 0), 0.0)))
        .collect();
        for (d, &(x, se)) in diffs.iter_mut().zip(&values) {
            let e = (reference - x) as f64;
            d.sum += e;
            d.sq += e * e;
            d.noise += (ref_se as f64).powi(2) + (se as f64).powi(2);
        }
        count += 1;
        println!(
            "{i} {label:.4} {:.4} {:.4} {}{} {}",
            values[1].0,
            values[2].0,
            rolled
                .iter()
                .map(|(e, se)| format!("{e:.4} {se:.4}"))
                .collect::<Vec<_>>()
                .join(" "),
            values[values.len() - nets.len()..]
                .iter()
                .map(|(e, _)| format!(" {e:.4}"))
                .collect::<String>(),
            to_id(&pos)
        );
    }
    let m = count.max(1) as f64;
    let (p, t) = specs[0];
    println!("# against the rollout {p}:{t} over {count} positions:");
    for (name, d) in names.iter().zip(&diffs) {
        let noise_free = d.sq / m - d.noise / m;
        println!(
            "# {name:>16}: mean difference {:+.4}, rms {:.4}, rms without the rollouts' noise {:.4}",
            d.sum / m,
            (d.sq / m).sqrt(),
            noise_free.max(0.0).sqrt()
        );
    }
}
