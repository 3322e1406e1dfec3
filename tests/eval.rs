//! Evaluation contract tests (issue #4): probability consistency on positions reached
//! by random play in each variant, exact bear-off answers, forced plays, deadlines.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tavli_engine::eval::bearoff::{is_no_contact_bearoff, BearoffDb, POSITIONS};
use tavli_engine::eval::engine::Engine;
use tavli_engine::eval::pubeval::PubEval;
use tavli_engine::eval::{EvalError, EvalOptions, PositionEvaluator, Probabilities};
use tavli_engine::rules::board::Board;
use tavli_engine::rules::{legal_plays, Dice, Position, Side, Variant};
use tavli_engine::train::heuristic::Heuristic;

fn baselines() -> Engine {
    Engine::with_evaluators(
        Some(Arc::new(PubEval)),
        Some(Arc::new(Heuristic)),
        Some(Arc::new(Heuristic)),
    )
}

fn consistent(p: &Probabilities, what: &str) {
    for x in [p.win, p.win_mars, p.lose_mars, p.draw, p.lose()] {
        assert!((0.0..=1.0).contains(&x), "{what}: {p:?}");
    }
    assert!(p.win_mars <= p.win + 1e-6, "{what}: {p:?}");
    assert!(p.lose_mars <= p.lose() + 1e-6, "{what}: {p:?}");
    assert!(
        (p.win + p.lose() + p.draw - 1.0).abs() < 1e-5,
        "{what}: {p:?}"
    );
    assert!((-2.0..=2.0).contains(&p.equity()), "{what}: {p:?}");
}

/// Positions from random games of `variant` (every 3rd position, the end included).
fn random_positions(variant: Variant, seed: u64, games: usize) -> Vec<Position> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::new();
    for _ in 0..games {
        let turn = if rng.random_bool(0.5) {
            Side::White
        } else {
            Side::Black
        };
        let mut pos = Position::start(variant, turn);
        for k in 0..2000 {
            if k % 3 == 0 {
                out.push(pos);
            }
            let dice = Dice::new(rng.random_range(1..=6), rng.random_range(1..=6)).unwrap();
            let plays = legal_plays(&pos, dice).unwrap();
            let play = &plays[rng.random_range(0..plays.len())];
            pos = play.position;
            if play.outcome.is_some() {
                out.push(pos);
                break;
            }
        }
    }
    out
}

#[test]
fn probabilities_are_consistent_on_random_positions() {
    let engine = baselines();
    for variant in Variant::ALL {
        let positions = random_positions(variant, 11, 6);
        assert!(positions.len() > 50);
        for (i, pos) in positions.iter().enumerate() {
            let plies = if i % 25 == 0 { 1 } else { 0 };
            let e = engine
                .evaluate(
                    pos,
                    EvalOptions {
                        plies,
                        deadline: None,
                        cancel: None,
                    },
                )
                .unwrap();
            consistent(&e.probabilities, &format!("{variant} #{i} {}", e.evaluator));
            assert!((e.equity - e.probabilities.equity()).abs() < 1e-6);
            if pos.game_over().is_none() && i % 10 == 0 {
                let dice = Dice::new(6, 3).unwrap();
                let ranked = engine
                    .rank_plays(pos, dice, EvalOptions::default())
                    .unwrap();
                assert_eq!(ranked.len(), legal_plays(pos, dice).unwrap().len());
                for w in ranked.windows(2) {
                    assert!(w[0].equity >= w[1].equity);
                }
                for r in &ranked {
                    consistent(&r.probabilities, "ranked play");
                }
            }
        }
    }
}

#[test]
fn bearoff_database_size_and_exact_values() {
    assert_eq!(POSITIONS, 54_264);
    let db = BearoffDb::global();
    assert_eq!(db.mean_turns_all(&[1, 0, 0, 0, 0, 0]), 1.0);
    // One checker each on the 1-point: the side to move wins with probability 1.
    for variant in Variant::ALL {
        let mut pos = Position::empty(variant, Side::Black);
        pos.add(Side::White, 1, 1);
        pos.add(
            Side::Black,
            Position::printed_point(variant, Side::Black, 1),
            1,
        );
        pos.off = [14, 14];
        let b = Board::from_position(&pos, Side::Black);
        assert!(is_no_contact_bearoff(variant, &b));
        let e = baselines().evaluate(&pos, EvalOptions::default()).unwrap();
        assert_eq!(e.evaluator, "bearoff-exact");
        assert_eq!(e.probabilities.win, 1.0);
        assert_eq!(e.equity, 1.0);
    }
}

#[test]
fn forced_play_is_the_best_play() {
    // Plakoto (R5.3): White 15 on its start, Black holding White's 18 with 2
    // checkers: 6-6 has no legal move, so the only play is a pass (R3).
    let mut pos = Position::empty(Variant::Plakoto, Side::White);
    pos.add(Side::White, 24, 15)
        .add(Side::Black, 18, 2)
        .add(Side::Black, 1, 13);
    pos.validate().unwrap();
    let dice = Dice::new(6, 6).unwrap();
    let legal = legal_plays(&pos, dice).unwrap();
    assert_eq!(legal.len(), 1);
    assert!(legal[0].moves.is_empty());
    for plies in 0..=2 {
        let r = baselines()
            .rank_plays(
                &pos,
                dice,
                EvalOptions {
                    plies,
                    deadline: None,
                    cancel: None,
                },
            )
            .unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].play, legal[0]);
    }
}

#[test]
fn deadline_is_respected() {
    let engine = baselines();
    let pos = Position::start(Variant::Portes, Side::White);
    let past = Some(Instant::now() - Duration::from_millis(1));
    assert_eq!(
        engine.evaluate(
            &pos,
            EvalOptions {
                plies: 2,
                deadline: past,
                cancel: None,
            }
        ),
        Err(EvalError::DeadlineExceeded)
    );
    assert_eq!(
        engine
            .rank_plays(
                &pos,
                Dice::new(5, 2).unwrap(),
                EvalOptions {
                    plies: 1,
                    deadline: past,
                    cancel: None,
                }
            )
            .map(|r| r.len()),
        Err(EvalError::DeadlineExceeded)
    );
    // A generous deadline is met.
    let later = Some(Instant::now() + Duration::from_secs(600));
    assert!(engine
        .evaluate(
            &pos,
            EvalOptions {
                plies: 1,
                deadline: later,
                cancel: None,
            }
        )
        .is_ok());
}
