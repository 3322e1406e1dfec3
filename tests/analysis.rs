//! Game analysis (src/analysis.rs) over the committed evaluator: a known blunder is
//! flagged with a clear margin, forced plays cost nothing, the luck of the 21 rolls
//! of a position averages to 0 and "before the roll" is the position's evaluation one
//! ply deeper (GNU Backgammon's definitions).

use tavli_engine::analysis::{self, AnalysisOptions, Event, Mark, RolloutCheck, TurnAnalysis};
use tavli_engine::eval::engine::Engine;
use tavli_engine::eval::rollout::RolloutConfig;
use tavli_engine::eval::StopWhen;
use tavli_engine::eval::{EvalOptions, PositionEvaluator};
use tavli_engine::record::{GameInput, MatchRecord, TurnInput};
use tavli_engine::rules::{self, Dice, Position, Side, Variant};

fn turns_of(r: &MatchRecord, engine: &Engine, opts: &AnalysisOptions) -> Vec<TurnAnalysis> {
    let mut out = Vec::new();
    analysis::analyze(r, engine, opts, &mut |e| {
        if let Event::Turn(t) = e {
            out.push(t.clone());
        }
        true
    })
    .unwrap();
    out
}

fn opts(plies: u8, luck_plies: u8) -> AnalysisOptions {
    AnalysisOptions {
        plies,
        luck_plies,
        ..AnalysisOptions::default()
    }
}

/// The Tavli match of tests/data/tavli/tavli-3p-match.mat (Portes, Plakoto and Fevga
/// games, with forced plays and passes).
fn tavli_match() -> MatchRecord {
    let text = std::fs::read_to_string(format!(
        "{}/tests/data/tavli/tavli-3p-match.mat",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    MatchRecord::parse(&text).unwrap()
}

#[test]
fn opening_blunder_is_flagged_very_bad() {
    // Portes (R4) opening 3-1: 8/5 8/7 leaves three blots within direct range of
    // Black's back checkers for nothing, where 8/5 6/5 makes the 5 point. Measured
    // error 0.46 at 1 ply with the v1 nets; asserted above 0.24 (1.5 x the very bad
    // threshold) so that retrained nets keep the verdict.
    let text = " 1 point match\n\n Game 1 Portes opening 4-2\n alice : 0                      bob : 0\n  1) 31: 8/5 8/7\n";
    let r = MatchRecord::parse(text).unwrap();
    let engine = Engine::load_default();
    let t = &turns_of(&r, &engine, &opts(1, 0))[0];
    assert_eq!((t.side, t.play.notation.as_str()), (Side::White, "8/5 8/7"));
    assert_eq!(t.best.notation, "8/5 6/5");
    assert!(t.error > 0.24, "error {}", t.error);
    assert_eq!(t.mark, Mark::VeryBad);
    assert!((t.best_equity - t.played_equity - t.error).abs() < 1e-6);
    assert_eq!(t.legal_plays, 16);
}

#[test]
fn forced_plays_and_passes_cost_nothing() {
    // R8.2: from Fevga's start 6-6 has one play, 24/18; the record's Fevga game also
    // has passes (no legal move).
    let r = tavli_match();
    let engine = Engine::load_default();
    let turns = turns_of(&r, &engine, &opts(0, 0));
    assert_eq!(turns.len(), r.turn_count());
    let forced: Vec<&TurnAnalysis> = turns.iter().filter(|t| t.legal_plays == 1).collect();
    assert!(forced.iter().any(|t| t.play.notation == "pass"));
    assert!(forced.len() >= 10, "{}", forced.len());
    for t in &forced {
        assert_eq!((t.error, t.mark), (0.0, Mark::None), "{t:?}");
        assert_eq!(t.best.notation, t.play.notation);
    }
    let fevga = " 1 point match\n\n Game 1 Fevga opening 3-1\n a : 0                      b : 0\n  1) 66: 24/18\n";
    let r = MatchRecord::parse(fevga).unwrap();
    let t = &turns_of(&r, &engine, &opts(1, 0))[0];
    assert_eq!((t.legal_plays, t.error, t.mark), (1, 0.0, Mark::None));
    // Forced plays are not moves with a choice.
    let mut unforced = None;
    analysis::analyze(&r, &engine, &opts(0, 0), &mut |e| {
        if let Event::Game(g) = e {
            unforced = Some((
                g.stats[0].moves,
                g.stats[0].unforced,
                g.stats[0].total_error,
            ));
        }
        true
    })
    .unwrap();
    assert_eq!(unforced, Some((1, 0, 0.0)));
}

/// The weight of a roll among the 36 (R3: a double once, the others twice).
fn weight(d: Dice) -> f64 {
    if d.is_double() {
        1.0 / 36.0
    } else {
        2.0 / 36.0
    }
}

#[test]
fn luck_of_all_rolls_averages_to_zero_at_zero_plies() {
    // One record per roll: Portes start, White plays the roll's first legal play.
    let engine = Engine::load_default();
    let start = Position::start(Variant::Portes, Side::White);
    let mut sum = 0f64;
    let mut before = Vec::new();
    for d in Dice::all_rolls() {
        let play = rules::legal_plays(&start, d).unwrap().remove(0);
        let game = GameInput {
            variant: Variant::Portes,
            starter: Some(Side::White),
            opening: None,
            turns: vec![TurnInput {
                dice: d,
                play: play.notation.into(),
            }],
            result: None,
        };
        let r = MatchRecord::from_games(0, ["w".into(), "b".into()], &[game]).unwrap();
        let t = turns_of(&r, &engine, &opts(0, 0)).remove(0);
        sum += weight(d) * t.luck as f64;
        before.push(t.equity_before);
        assert!((t.equity_after_roll - t.equity_before - t.luck).abs() < 1e-6);
    }
    assert!(sum.abs() < 1e-5, "weighted luck sum {sum}");
    assert!(before.iter().all(|&b| b == before[0]));
    // "Before the roll" is the start's 1-ply evaluation for White.
    let e1 = engine
        .evaluate(
            &start,
            EvalOptions {
                plies: 1,
                ..Default::default()
            },
        )
        .unwrap();
    assert!(
        (before[0] - e1.equity).abs() < 1e-4,
        "{} vs {}",
        before[0],
        e1.equity
    );
}

#[test]
fn luck_of_all_rolls_averages_to_zero_at_one_ply() {
    // A Plakoto middle game: White has pinned a Black checker on 20 (R5.1).
    let pos = rules::position_id::from_id("plakoto/w/24:10,20:2,13:1,8:2/1:12,5:2,20:1p")
        .unwrap_or_else(|e| panic!("{e}"));
    let engine = Engine::load_default();
    let o = opts(1, 1);
    let mut sum = 0f64;
    let mut before = None;
    for d in Dice::all_rolls() {
        let (b, after, luck) = analysis::luck(&engine, &pos, d, 1, &o, None, None).unwrap();
        assert!((after - b - luck).abs() < 1e-6);
        sum += weight(d) * luck as f64;
        before.get_or_insert(b);
    }
    assert!(sum.abs() < 1e-5, "weighted luck sum {sum}");
    let e2 = engine
        .evaluate(
            &pos,
            EvalOptions {
                plies: 2,
                ..Default::default()
            },
        )
        .unwrap();
    let b = before.unwrap();
    assert!((b - e2.equity).abs() < 1e-3, "{b} vs {}", e2.equity);
}

/// The rollout of the position after `play` (opponent to move), for the mover:
/// `(equity, standard error)`.
fn rolled_out(engine: &Engine, play: &rules::Play, check: &RolloutCheck) -> (f32, f32) {
    let cfg = RolloutConfig {
        plies: check.plies,
        trials: check.trials,
        seed: check.seed,
        ..RolloutConfig::default()
    };
    let r = engine
        .rollout(&play.position, None, &cfg, StopWhen::default(), &mut |_| {
            std::ops::ControlFlow::Continue(())
        })
        .unwrap();
    (r.probabilities.flip().equity(), r.standard_errors.equity)
}

#[test]
fn flagged_play_is_valued_by_rollouts_of_the_play_made_and_the_best_plays() {
    // The opening blunder above (R4, 3-1: 8/5 8/7), flagged at 0 ply, rolled out with
    // the two best plays of the 0-ply ranking. A session without a length (money
    // play): the figures are cubeless equities (a match's would be normalised).
    let text = " 0 point match\n\n Game 1 Portes opening 4-2\n alice : 0                      bob : 0\n  1) 31: 8/5 8/7\n";
    let r = MatchRecord::parse(text).unwrap();
    let engine = Engine::load_default();
    let search = turns_of(&r, &engine, &opts(0, 0)).remove(0);
    assert_eq!(search.mark, Mark::VeryBad);
    let check = RolloutCheck {
        plies: 0,
        trials: 72,
        seed: 11,
        candidates: 2,
    };
    let t = turns_of(
        &r,
        &engine,
        &AnalysisOptions {
            rollout: Some(check),
            ..opts(0, 0)
        },
    )
    .remove(0);
    assert_eq!(t.evaluation, "rollout");
    let v = t.rollout.clone().expect("rolled out");
    assert_eq!((v.trials, v.plies, v.candidates), (72, 0, 3));
    assert_eq!((v.search_error, v.search_mark), (search.error, search.mark));
    assert_eq!(v.search_best, search.best);
    // Each figure is the rollout of the position after the play, with the same seed.
    let ranked = engine
        .rank_plays(&t.position, t.dice, EvalOptions::default())
        .unwrap();
    let mut values = vec![(t.play.clone(), rolled_out(&engine, &t.play, &check))];
    for p in ranked.iter().take(2) {
        values.push((p.play.clone(), rolled_out(&engine, &p.play, &check)));
    }
    let best = values
        .iter()
        .max_by(|a, b| a.1 .0.total_cmp(&b.1 .0))
        .unwrap();
    assert_eq!(
        (t.played_equity, v.played_standard_error),
        values[0].1,
        "the play made"
    );
    assert_eq!(
        (&t.best, (t.best_equity, v.best_standard_error)),
        (&best.0, best.1)
    );
    assert_eq!(t.error, (t.best_equity - t.played_equity).max(0.0));
    assert_eq!(t.mark, AnalysisOptions::default().thresholds.mark(t.error));
    // Luck is not rolled out.
    assert_eq!(
        (t.luck, t.equity_before),
        (search.luck, search.equity_before)
    );
}

#[test]
fn only_flagged_turns_are_rolled_out() {
    // A whole Tavli match (Portes R4, Plakoto R5, Fevga R8; forced plays and passes
    // R3) at 0 ply with 1-trial rollouts: every turn the search marks is rolled out,
    // every other turn is as without rollouts.
    let r = tavli_match();
    let engine = Engine::load_default();
    let plain = turns_of(&r, &engine, &opts(0, 0));
    let rolled = turns_of(
        &r,
        &engine,
        &AnalysisOptions {
            rollout: Some(RolloutCheck {
                trials: 1,
                ..RolloutCheck::default()
            }),
            ..opts(0, 0)
        },
    );
    assert_eq!(plain.len(), rolled.len());
    let mut flagged = 0;
    for (p, t) in plain.iter().zip(&rolled) {
        if p.mark == Mark::None {
            assert_eq!(p, t);
        } else {
            flagged += 1;
            let v = t.rollout.as_ref().expect("flagged turns are rolled out");
            assert_eq!(t.evaluation, "rollout");
            assert_eq!((v.search_error, v.search_mark), (p.error, p.mark));
        }
    }
    assert!(flagged > 0);
}
