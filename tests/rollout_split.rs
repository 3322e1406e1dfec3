//! Rollouts split by trial range (issue #34): slices of a rollout run apart (other
//! thread counts, other order) merge into exactly, bit for bit, the report of one
//! rollout of all the trials; for the three variants, with and without the luck
//! adjustment, with truncation, with dice, and for the exact answers (a finished game,
//! a first play that ends it). Bad merges are invalid naming the part and the field.

use std::ops::ControlFlow;
use std::sync::Arc;
use tavli_engine::eval::engine::Engine;
use tavli_engine::eval::pubeval::PubEval;
use tavli_engine::eval::rollout::{
    merge, rollout, Luck, RolloutConfig, RolloutReport, RolloutSums,
};
use tavli_engine::eval::{EvalError, StopWhen};
use tavli_engine::rules::position_id::from_id;
use tavli_engine::rules::{Dice, RulesError};

const PORTES_START: &str = "portes/w/24:2,13:5,8:3,6:5/1:2,12:5,17:3,19:5";
const PLAKOTO_START: &str = "plakoto/w/24:15/1:15";
const FEVGA_START: &str = "fevga/w/24:15/12:15";
/// No contact, both sides bearing off (R6).
const BEAROFF: &str = "portes/w/6:2,5:1,4:2,2:1,off:9/19:1,20:2,22:2,24:1,off:9";

/// A rollout of `cfg`'s range (`first_trial`, `trials`), its final report.
fn run(engine: &Engine, id: &str, dice: Option<Dice>, cfg: &RolloutConfig) -> RolloutReport {
    let pos = from_id(id).unwrap();
    rollout(engine, &pos, dice, cfg, StopWhen::default(), &mut |_| {
        ControlFlow::Continue(())
    })
    .unwrap()
}

/// The trials `0..bounds.last()` as slices `bounds[k]..bounds[k + 1]`, each on its own
/// thread count (1, 2, 3, ...), and their sums in reverse order.
fn slices(
    engine: &Engine,
    id: &str,
    dice: Option<Dice>,
    cfg: &RolloutConfig,
    bounds: &[u32],
) -> Vec<RolloutSums> {
    let mut parts: Vec<RolloutSums> = bounds
        .windows(2)
        .enumerate()
        .map(|(k, w)| {
            let c = RolloutConfig {
                first_trial: w[0],
                trials: w[1] - w[0],
                threads: k % 3 + 1,
                ..cfg.clone()
            };
            let r = run(engine, id, dice, &c);
            assert_eq!((r.sums.first, r.done), (w[0], true), "{id}");
            r.sums
        })
        .collect();
    parts.reverse();
    parts
}

/// Runs the whole rollout on 2 threads and the slices, merges them and checks the two
/// reports are the same bits (`Debug` prints every `f32` exactly, -0 included).
fn merged_equals_single(
    engine: &Engine,
    id: &str,
    dice: Option<Dice>,
    cfg: RolloutConfig,
    bounds: &[u32],
) -> RolloutReport {
    let n = *bounds.last().unwrap();
    let whole = RolloutConfig {
        trials: n,
        threads: 2,
        ..cfg.clone()
    };
    let single = run(engine, id, dice, &whole);
    let parts = slices(engine, id, dice, &cfg, bounds);
    let pos = from_id(id).unwrap();
    let merged = merge(engine, &pos, dice, &cfg, &parts).unwrap();
    assert_eq!(
        format!("{merged:?}"),
        format!("{single:?}"),
        "{id} {dice:?} {cfg:?}"
    );
    assert_eq!(merged, single);
    single
}

fn nets() -> Engine {
    Engine::load_default()
}

#[test]
fn portes_slices_merge_into_the_single_rollout_bit_for_bit() {
    let engine = nets();
    for luck in [Luck::Pruned, Luck::Off, Luck::AllPlays] {
        let cfg = RolloutConfig {
            seed: 11,
            luck,
            truncation: Some(12),
            ..RolloutConfig::default()
        };
        let r = merged_equals_single(&engine, PORTES_START, None, cfg, &[0, 1, 9, 30, 40]);
        assert_eq!((r.trials, r.sums.first, r.sums.trials), (40, 0, 40));
        assert!(r.standard_errors.equity > 0.0, "{r:?}");
    }
    // Played to the end, with dice (the trials start after the best 6-5).
    let cfg = RolloutConfig {
        seed: 3,
        ..RolloutConfig::default()
    };
    let dice = Dice::new(6, 5).ok();
    let r = merged_equals_single(&engine, PORTES_START, dice, cfg, &[0, 17, 20, 37]);
    assert_eq!(r.play.unwrap().notation, "24/18/13");
}

#[test]
fn plakoto_and_fevga_slices_merge_bit_for_bit() {
    let engine = nets();
    for (id, luck) in [
        (PLAKOTO_START, Luck::Pruned),
        (PLAKOTO_START, Luck::Off),
        (FEVGA_START, Luck::Pruned),
        (FEVGA_START, Luck::Off),
    ] {
        let cfg = RolloutConfig {
            seed: 5,
            luck,
            truncation: Some(8),
            ..RolloutConfig::default()
        };
        merged_equals_single(&engine, id, None, cfg, &[0, 13, 14, 29]);
    }
}

#[test]
fn played_out_bearoffs_merge_bit_for_bit() {
    // Pubeval plays the bear-off to the end (no database at the end): many trials,
    // uneven slices, with and without the luck adjustment, at 0 and 1 ply.
    let engine = Engine::with_evaluators(Some(Arc::new(PubEval)), None, None);
    for (luck, plies) in [(Luck::Off, 0), (Luck::Pruned, 0), (Luck::Pruned, 1)] {
        let cfg = RolloutConfig {
            seed: 2,
            luck,
            plies,
            exact_bearoff: false,
            ..RolloutConfig::default()
        };
        let bounds: &[u32] = if plies == 0 {
            &[0, 100, 101, 250, 400]
        } else {
            &[0, 30, 72]
        };
        let r = merged_equals_single(&engine, BEAROFF, None, cfg, bounds);
        assert!(r.standard_errors.win > 0.0, "{r:?}");
    }
}

#[test]
fn exact_answers_merge_bit_for_bit() {
    let engine = nets();
    // Every trial the exact bear-off value: standard errors exactly 0.
    let r = merged_equals_single(
        &engine,
        BEAROFF,
        None,
        RolloutConfig::default(),
        &[0, 5, 36],
    );
    assert_eq!(r.standard_errors.equity, 0.0);
    assert_eq!(r.trials, 36);
    // A roll whose best play ends the game (R7: a mars): every trial +2.
    let id = "portes/w/1:1,off:14/bar:1,6:14";
    let r = merged_equals_single(
        &engine,
        id,
        Dice::new(2, 1).ok(),
        RolloutConfig::default(),
        &[0, 10, 36],
    );
    assert_eq!(
        (r.equity, r.trials, r.standard_errors.equity),
        (2.0, 36, 0.0)
    );
    // A finished game (R9): its outcome, no trials, however it is split.
    let r = merged_equals_single(
        &engine,
        "portes/b/off:15/1:15",
        None,
        RolloutConfig::default(),
        &[0, 3, 9],
    );
    assert_eq!(
        (r.trials, r.equity, r.evaluator.as_str()),
        (0, -2.0, "game-over")
    );
}

#[test]
fn a_slice_from_zero_is_the_whole_rollout_after_as_many_trials() {
    // The intermediate report after k trials and a rollout of trials 0..k: the same
    // sums and figures (only `done` differs).
    let engine = nets();
    let cfg = RolloutConfig {
        trials: 30,
        seed: 9,
        truncation: Some(10),
        report_every: 12,
        threads: 3,
        ..RolloutConfig::default()
    };
    let pos = from_id(PORTES_START).unwrap();
    let mut reports = Vec::new();
    rollout(&engine, &pos, None, &cfg, StopWhen::default(), &mut |r| {
        reports.push(r.clone());
        ControlFlow::Continue(())
    })
    .unwrap();
    let at12 = reports.iter().find(|r| r.trials == 12).unwrap();
    let slice = run(
        &engine,
        PORTES_START,
        None,
        &RolloutConfig {
            trials: 12,
            threads: 1,
            ..cfg.clone()
        },
    );
    assert!(!at12.done && slice.done);
    assert_eq!(
        RolloutReport {
            done: true,
            ..at12.clone()
        },
        slice
    );
    // A slice that does not start at 0 reports its own trials and first index.
    let later = run(
        &engine,
        PORTES_START,
        None,
        &RolloutConfig {
            first_trial: 12,
            trials: 18,
            ..cfg.clone()
        },
    );
    assert_eq!(
        (later.trials, later.sums.first, later.sums.trials),
        (18, 12, 18)
    );
    assert_ne!(later.sums.sum, slice.sums.sum);
}

fn field(e: EvalError) -> String {
    match e {
        EvalError::Rules(RulesError::Invalid { field, .. }) => field,
        other => panic!("{other:?}"),
    }
}

#[test]
fn bad_merges_are_invalid_naming_the_part_and_the_field() {
    let engine = nets();
    let cfg = RolloutConfig {
        seed: 4,
        truncation: Some(4),
        ..RolloutConfig::default()
    };
    let pos = from_id(PORTES_START).unwrap();
    let part = |first, trials, seed| {
        run(
            &engine,
            PORTES_START,
            None,
            &RolloutConfig {
                first_trial: first,
                trials,
                seed,
                ..cfg.clone()
            },
        )
        .sums
    };
    let (a, b, gap, overlap) = (
        part(0, 10, 4),
        part(10, 6, 4),
        part(12, 4, 4),
        part(5, 11, 4),
    );
    let go = |parts: &[RolloutSums]| merge(&engine, &pos, None, &cfg, parts).map_err(field);
    assert_eq!(go(&[a, b]).unwrap().trials, 16);
    assert_eq!(go(&[]).unwrap_err(), "merge");
    assert_eq!(go(&[a, gap]).unwrap_err(), "merge[1].range.first");
    assert_eq!(go(&[overlap, a]).unwrap_err(), "merge[0].range.first");
    // Another seed: another rollout.
    assert_eq!(go(&[a, part(10, 6, 5)]).unwrap_err(), "merge[1].key");
    let other = RolloutConfig {
        seed: 5,
        ..cfg.clone()
    };
    let e = merge(&engine, &pos, None, &other, &[a, b]).map_err(field);
    assert_eq!(e.unwrap_err(), "merge[0].key");
    // Sums no trials can give.
    let mut forged = b;
    forged.sum_squares[5] = Default::default();
    assert_eq!(go(&[a, forged]).unwrap_err(), "merge[1].squares");
    let mut forged = b;
    forged.sum[0] = i128::MAX;
    assert_eq!(go(&[a, forged]).unwrap_err(), "merge[1].sums");
    let mut forged = b;
    forged.first = u32::MAX;
    assert_eq!(go(&[a, forged]).unwrap_err(), "merge[1].range.count");
    // A range beyond the last trial index.
    let e = rollout(
        &engine,
        &pos,
        None,
        &RolloutConfig {
            first_trial: u32::MAX,
            trials: 2,
            ..cfg.clone()
        },
        StopWhen::default(),
        &mut |_| ControlFlow::Continue(()),
    );
    assert_eq!(field(e.unwrap_err()), "first_trial");
}
