//! Rollouts (issue #9): determinism whatever the thread count, agreement with the exact
//! bear-off database, standard errors that shrink with the trials, the rule bounds,
//! and the limits (trial count, deadline, cancellation).

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tavli_engine::eval::bearoff::BearoffDb;
use tavli_engine::eval::engine::Engine;
use tavli_engine::eval::pubeval::PubEval;
use tavli_engine::eval::rollout::{rollout, Luck, RolloutConfig, RolloutReport};
use tavli_engine::eval::{CancelToken, EvalError, EvalOptions, PositionEvaluator, StopWhen};
use tavli_engine::rules::board::Board;
use tavli_engine::rules::position_id::from_id;
use tavli_engine::rules::{Dice, Position, RulesError, Side, Variant};

const PORTES_START: &str = "portes/w/24:2,13:5,8:3,6:5/1:2,12:5,17:3,19:5";

fn nets() -> Engine {
    Engine::load_default()
}

/// Pubeval for every variant: fast, for tests that need many trials.
fn pubeval() -> Engine {
    Engine::with_evaluators(Some(Arc::new(PubEval)), None, None)
}

/// Runs a rollout and collects every report.
fn run(
    engine: &Engine,
    id: &str,
    dice: Option<Dice>,
    cfg: &RolloutConfig,
) -> (Result<RolloutReport, EvalError>, Vec<RolloutReport>) {
    let pos = from_id(id).unwrap();
    let mut reports = Vec::new();
    let r = rollout(engine, &pos, dice, cfg, StopWhen::default(), &mut |r| {
        reports.push(r.clone());
        ControlFlow::Continue(())
    });
    (r, reports)
}

#[test]
fn same_seed_same_answers_whatever_the_thread_count() {
    let engine = nets();
    let cfg = |threads| RolloutConfig {
        trials: 48,
        seed: 5,
        threads,
        report_every: 24,
        ..RolloutConfig::default()
    };
    let (one, reports_one) = run(&engine, PORTES_START, None, &cfg(1));
    let (two, reports_two) = run(&engine, PORTES_START, None, &cfg(2));
    let (three, _) = run(&engine, PORTES_START, None, &cfg(3));
    let one = one.unwrap();
    assert_eq!(one, two.unwrap());
    assert_eq!(one, three.unwrap());
    // Every report, the intermediate one included, is the same.
    assert_eq!(reports_one, reports_two);
    assert_eq!(
        reports_one
            .iter()
            .map(|r| (r.trials, r.done))
            .collect::<Vec<_>>(),
        [(24, false), (48, true)]
    );
    assert_eq!(one.evaluator, "net-portes-v2");
    assert!(one.standard_errors.equity > 0.0);
    // Another seed, other dice.
    let (other, _) = run(
        &engine,
        PORTES_START,
        None,
        &RolloutConfig {
            seed: 6,
            truncation: Some(6),
            ..cfg(2)
        },
    );
    let same_but_truncated = run(
        &engine,
        PORTES_START,
        None,
        &RolloutConfig {
            truncation: Some(6),
            ..cfg(2)
        },
    );
    assert_ne!(
        same_but_truncated.0.unwrap().probabilities,
        other.unwrap().probabilities
    );
}

/// The exact database's probabilities for the side to move of `id`.
fn exact(id: &str) -> tavli_engine::eval::Probabilities {
    let pos = from_id(id).unwrap();
    let b = Board::from_position(&pos, pos.turn);
    BearoffDb::global().eval_board(pos.variant, &b).unwrap()
}

#[test]
fn a_played_out_bearoff_matches_the_exact_database() {
    // No contact, both sides bearing off (R6): the trials play it out (the database is
    // not used at the end) and must agree with the database within their standard
    // error, with and without the luck adjustment.
    let id = "portes/w/6:2,5:1,4:2,2:1,off:9/19:1,20:2,22:2,24:1,off:9";
    let want = exact(id);
    for luck in [Luck::Off, Luck::Pruned] {
        let cfg = RolloutConfig {
            trials: 1296,
            seed: 1,
            luck,
            exact_bearoff: false,
            ..RolloutConfig::default()
        };
        let (r, _) = run(&pubeval(), id, None, &cfg);
        let r = r.unwrap();
        let se = r.standard_errors;
        assert!(se.win > 0.0, "{luck:?}: {se:?}");
        let tol = |se: f32| 3.0 * se + 2e-3;
        assert!(
            (r.probabilities.win - want.win).abs() <= tol(se.win),
            "{luck:?}: {r:?} vs {want:?}"
        );
        assert!(
            (r.equity - want.equity()).abs() <= tol(se.equity),
            "{luck:?}: {r:?} vs {want:?}"
        );
        if luck == Luck::Off {
            assert!(se.win > 0.005, "{se:?}");
        }
    }
}

#[test]
fn one_checker_each_gives_the_exact_value() {
    // One checker each on the 6-point: the side to move wins 13/16 (README, R6). With
    // the database at the end it is exact at once; played out with the luck
    // adjustment every trial's adjusted result is exactly 13/16 (the luck function is
    // the exact value here), so the rollout is exact with a standard error of 0.
    let id = "portes/w/6:1,off:14/19:1,off:14";
    let (r, _) = run(&nets(), id, None, &RolloutConfig::default());
    let r = r.unwrap();
    assert_eq!((r.probabilities.win, r.equity), (0.8125, 0.625));
    assert_eq!(r.standard_errors.equity, 0.0);
    let cfg = RolloutConfig {
        exact_bearoff: false,
        trials: 324,
        ..RolloutConfig::default()
    };
    let (r, _) = run(&nets(), id, None, &cfg);
    let r = r.unwrap();
    assert!((r.probabilities.win - 0.8125).abs() < 1e-6, "{r:?}");
    assert!(r.standard_errors.win < 1e-6, "{r:?}");
    // Without the adjustment the same trials have the spread of a 13/16 coin.
    let (r, _) = run(
        &nets(),
        id,
        None,
        &RolloutConfig {
            luck: Luck::Off,
            ..cfg
        },
    );
    let r = r.unwrap();
    let sd = (0.8125f32 * 0.1875 / 324.0).sqrt();
    assert!((r.standard_errors.win - sd).abs() < 0.3 * sd, "{r:?}");
    assert!((r.probabilities.win - 0.8125).abs() < 4.0 * sd, "{r:?}");
}

#[test]
fn the_standard_error_shrinks_as_the_trials_grow() {
    let engine = pubeval();
    let cfg = |trials| RolloutConfig {
        trials,
        seed: 3,
        truncation: Some(8),
        ..RolloutConfig::default()
    };
    let (small, _) = run(&engine, PORTES_START, None, &cfg(324));
    let (large, _) = run(&engine, PORTES_START, None, &cfg(1296));
    let (small, large) = (small.unwrap(), large.unwrap());
    let (a, b) = (small.standard_errors.equity, large.standard_errors.equity);
    // 4 times the trials: about half the standard error.
    assert!(b < 0.7 * a && b > 0.3 * a, "{a} -> {b}");
    assert!(large.standard_errors.win < small.standard_errors.win);
}

#[test]
fn rollouts_obey_the_rule_bounds() {
    let engine = nets();
    let cfg = RolloutConfig {
        trials: 36,
        ..RolloutConfig::default()
    };
    // R7: Black has borne off one: White (to move) cannot win a mars.
    let id = "portes/w/6:3,5:3,4:3,3:2,2:2,1:2/bar:3,19:5,20:3,21:3,off:1";
    let r = run(&engine, id, None, &cfg).0.unwrap();
    assert_eq!(r.probabilities.win_mars, 0.0);
    assert!(r.equity <= 1.0);
    // R5.5: Black's mother pinned, White still on its start: every White win is a
    // 2-point win and White cannot lose.
    let id = "plakoto/w/24:14,1:1/1:1p,19:14";
    let r = run(&engine, id, None, &cfg).0.unwrap();
    let p = r.probabilities;
    assert_eq!(
        (p.win_mars, p.lose(), p.lose_mars),
        (p.win, 0.0, 0.0),
        "{p:?}"
    );
    assert!(p.win > 0.5, "{p:?}");
    // Fevga and Plakoto from the start (cut after 20 plies): consistent.
    for id in ["fevga/w/24:15/12:15", "plakoto/w/24:15/1:15"] {
        let cfg = RolloutConfig {
            truncation: Some(20),
            ..cfg.clone()
        };
        let p = run(&engine, id, None, &cfg).0.unwrap().probabilities;
        assert!(
            p.win_mars <= p.win && p.lose_mars <= p.lose(),
            "{id}: {p:?}"
        );
        assert!(
            (p.win + p.lose() + p.draw - 1.0).abs() < 1e-6,
            "{id}: {p:?}"
        );
    }
}

#[test]
fn the_mean_before_the_sanity_step_is_reported_too() {
    use tavli_engine::eval::sanity::{possible_outcomes, project};
    let engine = nets();
    let pos = from_id(PORTES_START).unwrap();
    let ok = possible_outcomes(Variant::Portes, &Board::from_position(&pos, pos.turn));
    // Without the luck adjustment the mean is one of game results: consistent
    // already, and nothing is ruled out at the start (R7: no side has borne off, so
    // either can still win a mars), so the sanity step keeps it.
    let off = RolloutConfig {
        trials: 36,
        luck: Luck::Off,
        ..RolloutConfig::default()
    };
    let r = run(&engine, PORTES_START, None, &off).0.unwrap();
    assert_eq!(r.mean, r.probabilities);
    // With it, the reported probabilities are the projection of the mean.
    for trials in [2, 36] {
        let cfg = RolloutConfig {
            trials,
            ..RolloutConfig::default()
        };
        let r = run(&engine, PORTES_START, None, &cfg).0.unwrap();
        assert_eq!(project(r.mean, &ok), r.probabilities, "{trials} trials");
    }
}

#[test]
fn with_dice_the_best_play_is_made_first() {
    let engine = nets();
    let pos = from_id(PORTES_START).unwrap();
    let dice = Dice::new(3, 1).unwrap();
    let best = engine
        .rank_plays(&pos, dice, EvalOptions::default())
        .unwrap()
        .swap_remove(0);
    let cfg = RolloutConfig {
        trials: 36,
        ..RolloutConfig::default()
    };
    let r = run(&engine, PORTES_START, Some(dice), &cfg).0.unwrap();
    assert_eq!(r.play.as_ref(), Some(&best.play));
    assert_eq!(r.trials, 36);
    // A roll whose best play ends the game: exact, every trial the same (R7 mars).
    let id = "portes/w/1:1,off:14/bar:1,6:14";
    let r = run(&engine, id, Some(Dice::new(2, 1).unwrap()), &cfg)
        .0
        .unwrap();
    assert_eq!(r.play.unwrap().notation, "1/off");
    assert_eq!(
        (r.equity, r.standard_errors.equity, r.done),
        (2.0, 0.0, true)
    );
}

#[test]
fn a_finished_game_is_its_outcome() {
    let (r, reports) = run(
        &nets(),
        "portes/b/off:15/1:15",
        None,
        &RolloutConfig::default(),
    );
    let r = r.unwrap();
    assert_eq!((r.trials, r.equity, r.done), (0, -2.0, true));
    assert_eq!(r.evaluator, "game-over");
    assert_eq!(reports, [r]);
}

#[test]
fn bad_settings_are_invalid_naming_the_field() {
    let engine = nets();
    let pos = Position::start(Variant::Portes, Side::White);
    let go = |cfg: RolloutConfig| {
        rollout(&engine, &pos, None, &cfg, StopWhen::default(), &mut |_| {
            ControlFlow::Continue(())
        })
    };
    let field = |e: EvalError| match e {
        EvalError::Rules(RulesError::Invalid { field, .. }) => field,
        other => panic!("{other:?}"),
    };
    let e = go(RolloutConfig {
        plies: 2,
        ..RolloutConfig::default()
    });
    assert_eq!(field(e.unwrap_err()), "plies");
    let e = go(RolloutConfig {
        trials: 0,
        ..RolloutConfig::default()
    });
    assert_eq!(field(e.unwrap_err()), "trials");
}

#[test]
fn cancellation_and_deadline_stop_it() {
    let engine = nets();
    let pos = Position::start(Variant::Portes, Side::White);
    let big = RolloutConfig {
        trials: 1_000_000,
        report_every: 36,
        ..RolloutConfig::default()
    };
    // A token cancelled before the start.
    let token = CancelToken::new();
    token.cancel();
    let stop = StopWhen {
        deadline: None,
        cancel: Some(&token),
    };
    let r = rollout(&engine, &pos, None, &big, stop, &mut |_| {
        ControlFlow::Continue(())
    });
    assert_eq!(r.unwrap_err(), EvalError::Cancelled);
    // A deadline in the past.
    let stop = StopWhen {
        deadline: Some(Instant::now()),
        cancel: None,
    };
    let r = rollout(&engine, &pos, None, &big, stop, &mut |_| {
        ControlFlow::Continue(())
    });
    assert_eq!(r.unwrap_err(), EvalError::DeadlineExceeded);
    // A deadline during the run: a last report of the trials finished, then the error.
    let t = Instant::now();
    let stop = StopWhen {
        deadline: Some(t + Duration::from_millis(300)),
        cancel: None,
    };
    let mut last = None;
    let r = rollout(&engine, &pos, None, &big, stop, &mut |r| {
        last = Some(r.clone());
        ControlFlow::Continue(())
    });
    assert_eq!(r.unwrap_err(), EvalError::DeadlineExceeded);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let last = last.expect("a report before the deadline");
    assert!(
        !last.done && last.trials > 0 && last.trials < 1_000_000,
        "{last:?}"
    );
    // Cancelled from another thread while running.
    let token = CancelToken::new();
    let t = Instant::now();
    let r = std::thread::scope(|s| {
        let canceller = token.clone();
        s.spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            canceller.cancel();
        });
        let stop = StopWhen {
            deadline: None,
            cancel: Some(&token),
        };
        rollout(&engine, &pos, None, &big, stop, &mut |_| {
            ControlFlow::Continue(())
        })
    });
    assert_eq!(r.unwrap_err(), EvalError::Cancelled);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    // Stopped by the report callback after the first report.
    let mut seen = 0;
    let r = rollout(&engine, &pos, None, &big, StopWhen::default(), &mut |_| {
        seen += 1;
        ControlFlow::Break(())
    });
    assert_eq!(r.unwrap_err(), EvalError::Cancelled);
    assert!(seen >= 1);
}
