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
                        measure: None,
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
                    measure: None,
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
                measure: None,
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
                    measure: None,
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
                measure: None,
            }
        )
        .is_ok());
}

/// The turns of the committed Tavli match (a Portes, a Plakoto and a Fevga game) with
/// more legal plays than the move filter keeps: `(position, dice)`, every `step`-th.
fn record_turns_with_choice(step: usize) -> Vec<(Position, Dice)> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/tavli/tavli-3p-match.mat"
    ))
    .unwrap();
    let record = tavli_engine::record::MatchRecord::parse(&text).unwrap();
    let mut out = Vec::new();
    for g in &record.games {
        let turns = g.actions.iter().filter_map(|a| match &a.kind {
            tavli_engine::record::ActionKind::Play(t) if t.legal_plays > 8 => Some(t),
            _ => None,
        });
        out.extend(turns.step_by(step).map(|t| (t.position, t.dice)));
    }
    out
}

/// `RankedPlay::plies` and the order of a ranking, exactly, on real positions of
/// each variant: at 1 and 2 plies the move filter's candidates (the best 8 of the
/// 0-ply ranking within 0.16 of its best) come first at the full depth, best first;
/// every other play follows with its 0-ply value, bit for bit, in the 0-ply order.
#[test]
fn ranked_plays_carry_their_depth_in_the_documented_order() {
    use tavli_engine::eval::search::MoveFilter;
    let engine = Engine::load_default();
    let filter = MoveFilter::default();
    let opts = |plies| EvalOptions {
        plies,
        ..EvalOptions::default()
    };
    let mut variants = std::collections::BTreeMap::new();
    let mut out_of_order = 0;
    for (pos, dice) in record_turns_with_choice(6) {
        let r0 = engine.rank_plays(&pos, dice, opts(0)).unwrap();
        assert!(r0.iter().all(|r| r.plies == 0));
        assert!(r0.windows(2).all(|w| w[0].equity >= w[1].equity));
        let best = r0[0].equity;
        let kept = r0
            .iter()
            .take(filter.keep)
            .take_while(|r| r.equity >= best - filter.threshold)
            .count()
            .max(1);
        for plies in [1, 2] {
            let what = format!(
                "{} {dice} at {plies} plies",
                tavli_engine::rules::position_id::to_id(&pos)
            );
            let rn = engine.rank_plays(&pos, dice, opts(plies)).unwrap();
            assert_eq!(rn.len(), r0.len(), "{what}");
            let (deep, shallow) = rn.split_at(kept);
            assert!(deep.iter().all(|r| r.plies == plies), "{what}");
            assert!(shallow.iter().all(|r| r.plies == 0), "{what}");
            let mut searched: Vec<_> = deep.iter().map(|r| r.play.position).collect();
            let mut candidates: Vec<_> = r0[..kept].iter().map(|r| r.play.position).collect();
            searched.sort_by_key(tavli_engine::rules::position_id::to_id);
            candidates.sort_by_key(tavli_engine::rules::position_id::to_id);
            assert_eq!(searched, candidates, "{what}");
            assert!(
                deep.windows(2).all(|w| w[0].equity >= w[1].equity),
                "{what}"
            );
            // The others: their 0-ply values and order, exactly.
            for (a, b) in shallow.iter().zip(&r0[kept..]) {
                assert_eq!(a.play, b.play, "{what}");
                assert_eq!(a.equity.to_bits(), b.equity.to_bits(), "{what}");
            }
            out_of_order += usize::from(
                shallow
                    .first()
                    .is_some_and(|s| s.equity > deep.last().unwrap().equity),
            );
            *variants.entry(pos.variant).or_insert(0) += 1;
        }
    }
    // Every variant was checked, with plays left out by the filter.
    assert_eq!(variants.len(), 3, "{variants:?}");
    assert!(variants.values().all(|&n| n >= 4), "{variants:?}");
    // The case the field is for: a 0-ply value above a searched one.
    assert!(out_of_order > 0);
}
