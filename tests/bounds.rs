//! Issue #9, fault 1: no evaluator output violates a rule-implied bound.
//!
//! The bounds are derived here a second time, independently of
//! `tavli_engine::eval::sanity`, from the public position in printed numbering
//! (RULES.md R5.5, R7, R9), and checked on every evaluator the engine can use (the
//! committed nets, pubeval, the heuristics, random), at 0 and 1 ply, for `Evaluate`
//! and for the ranked plays, over positions from seeded random and greedy games of all
//! three variants, with the issue's positions among the fixed cases. A second test
//! plays games on from such positions and checks that what the sanity step rules out
//! never happens.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;
use tavli_engine::eval::engine::Engine;
use tavli_engine::eval::pubeval::PubEval;
use tavli_engine::eval::sanity::{decided, possible_outcomes, Possible};
use tavli_engine::eval::{EvalOptions, Evaluator, PositionEvaluator, Probabilities};
use tavli_engine::rules::board::{Board, RelOutcome};
use tavli_engine::rules::movegen::generate;
use tavli_engine::rules::position_id::from_id;
use tavli_engine::rules::{legal_plays, Dice, Outcome, Position, Side, Variant};
use tavli_engine::train::heuristic::{Heuristic, RandomEvaluator};

/// The issue's positions and a few more where a bound decides the answer.
const FIXED: [&str; 14] = [
    // Issue #9: Black has borne off one: White cannot win a mars (R7).
    "portes/w/6:3,5:3,4:3,3:2,2:2,1:2/bar:3,19:5,20:3,21:3,off:1",
    "portes/w/6:3,5:3,4:3,3:2,2:2,1:2/bar:2,19:5,20:4,21:3,off:1",
    // Issue #9: Black (to move) has borne off 13: it cannot lose a mars (R7).
    "portes/b/1:2,off:13/6:3,19:11,off:1",
    // Issue #9 fault 2: Black's mother pinned, White still on its start (R5.5).
    "plakoto/w/24:14,1:1/1:1p,19:14",
    "plakoto/b/24:14,1:1/1:1p,19:14",
    // White's mother pinned by Black, Black still on its start.
    "plakoto/w/24:1p,6:14/1:13,24:2",
    // Neither mother can be pinned any more (both starts empty), both have borne off.
    "plakoto/w/3:14,off:1/22:14,off:1",
    // White's last checker on its 1-point, contact: a certain mars win this roll.
    "portes/w/1:1,off:14/bar:1,6:14",
    // Black's mother pinned, Black has no free checker: a certain White mother win.
    "plakoto/w/24:5,1:10/1:1p,off:14",
    // Fevga: Black has borne off: no White mars.
    "fevga/w/24:1,6:14/off:1,18:14",
    // Starts.
    "portes/w/24:2,13:5,8:3,6:5/1:2,12:5,17:3,19:5",
    "plakoto/w/24:15/1:15",
    // White's mother pinned; pinning Black's lone mother draws on 28 rolls of 36
    // (R5.5; found by a tester: the 0-ply value was -1.95).
    "plakoto/w/24:1p,7:1,6:13/24:1,1:1,20:13",
    // White's last two checkers home, contact: the rolls with a 6 and the doubles
    // 2-2 to 6-6 bear both off, a mars (15 of 36, R6, R7).
    "portes/w/6:1,1:1,off:13/bar:1,19:14",
];

// ------------------------------------------------------------ bounds, derived again

/// Results the rules allow for the side to move of `pos` (not over), from the
/// public position: printed numbering, White's start 24 and Black's start 1 (R1).
fn allowed(pos: &Position) -> Possible {
    let me = pos.turn;
    let them = me.opponent();
    let off = |s: Side| pos.off[s.index()];
    if pos.variant != Variant::Plakoto {
        // R7: 2 points only against a side with none off; no draws (R5.5 is Plakoto's).
        return Possible {
            win_single: true,
            win_mars: off(them) == 0,
            lose_single: true,
            lose_mars: off(me) == 0,
            draw: false,
        };
    }
    let start = |s: Side| pos.point(if s == Side::White { 24 } else { 1 });
    let mother_pinned = |s: Side| start(s).pinned == Some(s);
    let free_on_start = |s: Side| start(s).count(s) - mother_pinned(s) as u8;
    let free_anywhere = |s: Side| -> u32 {
        pos.points
            .iter()
            .map(|p| (p.count(s) - (p.pinned == Some(s)) as u8) as u32)
            .sum()
    };
    if mother_pinned(them) {
        // R5.5: the pin holds until the mover bears off, which empties its start
        // first, which wins 2 at once; the opponent can never bear off (R5.4, R6).
        return Possible {
            win_single: false,
            win_mars: true,
            lose_single: false,
            lose_mars: false,
            draw: free_anywhere(them) > 0,
        };
    }
    if mother_pinned(me) {
        return Possible {
            win_single: false,
            win_mars: false,
            lose_single: false,
            lose_mars: true,
            draw: free_anywhere(me) > 0,
        };
    }
    Possible {
        win_single: true,
        win_mars: off(them) == 0 || free_on_start(them) > 0,
        lose_single: true,
        lose_mars: off(me) == 0 || free_on_start(me) > 0,
        draw: free_on_start(me) > 0 && free_on_start(them) > 0,
    }
}

/// Weights, in 36ths, of the rolls on which the side to move of `pos` can end the
/// game at once, by its best such result: `[1-point win, 2-point win, draw]` (R7,
/// R5.5; from the public legal plays). That play is the mover's best (a win now is
/// worth the most the position allows; a draw ends a game the mover can no longer
/// win), so each share is a lower bound of its result.
fn ending_rolls(pos: &Position) -> [u32; 3] {
    let mut w = [0; 3];
    for dice in Dice::all_rolls() {
        let best = legal_plays(pos, dice)
            .unwrap()
            .iter()
            .filter_map(|p| p.outcome)
            .map(|o| match (o.winner, o.points) {
                (None, _) => 0,
                (Some(_), 1) => 1,
                (Some(_), _) => 2,
            })
            .max();
        let k = match best {
            Some(2) => 1,
            Some(1) => 0,
            Some(_) => 2,
            None => continue,
        };
        w[k] += if dice.is_double() { 1 } else { 2 };
    }
    w
}

/// Every bound on `p`, the mover's probabilities in `pos` (whose game is not over).
fn check(pos: &Position, p: &Probabilities, what: &str) {
    let [single, mars, draw] = ending_rolls(pos).map(|n| n as f32 / 36.0 - 1e-6);
    assert!(
        p.win_mars >= mars && p.win - p.win_mars >= single - 1e-6 && p.draw >= draw,
        "{what}: below the results of the rolls that end the game ({:?}): {p:?}",
        ending_rolls(pos)
    );
    let ok = allowed(pos);
    let lose = p.lose();
    for x in [p.win, p.win_mars, lose, p.lose_mars, p.draw] {
        assert!((0.0..=1.0).contains(&x), "{what}: out of [0, 1]: {p:?}");
    }
    // Up to rounding: the ranked plays' values are checked flipped (below), and
    // `lose()` of a flipped value is `1 - (1 - win - draw) - draw`.
    assert!(p.win_mars <= p.win + 1e-6, "{what}: win_mars > win: {p:?}");
    assert!(
        p.lose_mars <= lose + 1e-6,
        "{what}: lose_mars > lose: {p:?}"
    );
    assert!(
        (p.win + lose + p.draw - 1.0).abs() <= 1e-6,
        "{what}: sum {p:?}"
    );
    let e = p.equity();
    assert!((-2.0..=2.0).contains(&e), "{what}: equity {e}");
    if !ok.win_mars {
        assert_eq!(
            p.win_mars, 0.0,
            "{what}: a 2-point win is impossible: {p:?}"
        );
        assert!(
            e <= 1.0,
            "{what}: equity {e} > 1 with no 2-point win possible"
        );
    }
    if !ok.lose_mars {
        assert_eq!(
            p.lose_mars, 0.0,
            "{what}: a 2-point loss is impossible: {p:?}"
        );
        assert!(
            e >= -1.0,
            "{what}: equity {e} < -1 with no 2-point loss possible"
        );
    }
    if !ok.win_single {
        assert_eq!(p.win_mars, p.win, "{what}: every win is 2 points: {p:?}");
    }
    if !ok.lose_single {
        assert_eq!(p.lose_mars, lose, "{what}: every loss is 2 points: {p:?}");
    }
    if !ok.draw {
        assert_eq!(p.draw, 0.0, "{what}: no draw is possible: {p:?}");
    }
    if !ok.win() {
        assert_eq!(p.win, 0.0, "{what}: no win is possible: {p:?}");
    }
    if !ok.lose() {
        assert_eq!(lose, 0.0, "{what}: no loss is possible: {p:?}");
    }
}

/// The bounds of a finished game: its outcome, exactly.
fn check_outcome(p: &Probabilities, o: &Outcome, mover: Side, what: &str) {
    let want = match o.winner {
        None => (0.0, 0.0, 0.0, 1.0),
        Some(w) if w == mover => (1.0, if o.points == 2 { 1.0 } else { 0.0 }, 0.0, 0.0),
        Some(_) => (0.0, 0.0, if o.points == 2 { 1.0 } else { 0.0 }, 0.0),
    };
    assert_eq!(
        (p.win, p.win_mars, p.lose_mars, p.draw),
        want,
        "{what}: {o}"
    );
}

// ------------------------------------------------------------ positions

/// How the seeded games of [`game_positions`] choose plays.
#[derive(Clone, Copy)]
enum Policy<'a> {
    /// A random legal play.
    Random,
    /// The best play of the engine at 0 ply.
    Greedy(&'a Engine),
    /// A play that hits or pins (Plakoto: pins, mothers included) when there is one,
    /// else a random one: reaches pinned mothers often.
    Hitting,
}

/// Positions of seeded games of `variant` played by `policy`: every 2nd position and
/// the end.
fn game_positions(variant: Variant, seed: u64, games: usize, policy: Policy) -> Vec<Position> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::new();
    for _ in 0..games {
        let turn = if rng.random_bool(0.5) {
            Side::White
        } else {
            Side::Black
        };
        let mut pos = Position::start(variant, turn);
        for k in 0..1500 {
            if k % 2 == 0 {
                out.push(pos);
            }
            let dice = Dice::new(rng.random_range(1..=6), rng.random_range(1..=6)).unwrap();
            let play = match policy {
                Policy::Greedy(e) => {
                    e.rank_plays(&pos, dice, EvalOptions::default())
                        .unwrap()
                        .swap_remove(0)
                        .play
                }
                Policy::Random | Policy::Hitting => {
                    let mut plays = legal_plays(&pos, dice).unwrap();
                    let hits: Vec<usize> = (0..plays.len())
                        .filter(|&i| plays[i].moves.iter().any(|m| m.hit))
                        .collect();
                    let i = match policy {
                        Policy::Hitting if !hits.is_empty() => {
                            hits[rng.random_range(0..hits.len())]
                        }
                        _ => rng.random_range(0..plays.len()),
                    };
                    plays.swap_remove(i)
                }
            };
            pos = play.position;
            if play.outcome.is_some() {
                out.push(pos);
                break;
            }
        }
    }
    out
}

fn engines() -> Vec<(&'static str, Engine)> {
    let all = |e: Arc<dyn Evaluator>| Engine::new([Some(e.clone()), Some(e.clone()), Some(e)]);
    vec![
        ("nets", Engine::load_default()),
        ("pubeval", all(Arc::new(PubEval))),
        ("heuristic", all(Arc::new(Heuristic))),
        ("random", all(Arc::new(RandomEvaluator::new(7)))),
    ]
}

fn positions(variant: Variant, baselines: &Engine) -> Vec<Position> {
    let mut out: Vec<Position> = FIXED
        .iter()
        .map(|id| from_id(id).unwrap())
        .filter(|p| p.variant == variant)
        .collect();
    out.extend(game_positions(variant, 9, 3, Policy::Random));
    out.extend(game_positions(variant, 10, 2, Policy::Greedy(baselines)));
    if variant == Variant::Plakoto {
        out.extend(game_positions(variant, 11, 3, Policy::Hitting));
    }
    out
}

fn opts(plies: u8) -> EvalOptions {
    EvalOptions {
        plies,
        deadline: None,
        cancel: None,
        measure: None,
    }
}

/// Evaluate and rank_plays of every engine, at 0 and 1 ply, on every position.
fn every_evaluator_obeys_the_bounds(variant: Variant) {
    let engines = engines();
    let pos_list = positions(variant, &engines[1].1);
    assert!(
        pos_list.len() > 100,
        "{variant}: {} positions",
        pos_list.len()
    );
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut checked = 0usize;
    for (name, engine) in &engines {
        for (i, pos) in pos_list.iter().enumerate() {
            // 1 ply on the fixed cases and every 4th position (it costs 21 x plays).
            let fixed = i < FIXED.len() && FIXED.iter().any(|id| from_id(id).unwrap() == *pos);
            let plies: &[u8] = if fixed || i % 4 == 0 { &[0, 1] } else { &[0] };
            for &n in plies {
                let what = format!(
                    "{name} {n}-ply {}",
                    tavli_engine::rules::position_id::to_id(pos)
                );
                let e = engine.evaluate(pos, opts(n)).unwrap();
                assert_eq!(e.equity, e.probabilities.equity(), "{what}");
                match pos.game_over() {
                    Some(o) => check_outcome(&e.probabilities, &o, pos.turn, &what),
                    None => check(pos, &e.probabilities, &what),
                }
                checked += 1;
                if pos.game_over().is_some() || !(fixed || i % 3 == 0) {
                    continue;
                }
                let dice = Dice::new(rng.random_range(1..=6), rng.random_range(1..=6)).unwrap();
                for r in engine.rank_plays(pos, dice, opts(n)).unwrap() {
                    let what = format!("{what} {dice} {}", r.play.notation);
                    assert_eq!(r.equity, r.probabilities.equity(), "{what}");
                    // The mover's view after its play = the other side's view flipped.
                    let theirs = r.probabilities.flip();
                    match r.play.outcome {
                        Some(o) => check_outcome(&theirs, &o, r.play.position.turn, &what),
                        None => check(&r.play.position, &theirs, &what),
                    }
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 2000, "{variant}: {checked} checks");
}

#[test]
fn portes_evaluations_obey_the_rule_bounds() {
    every_evaluator_obeys_the_bounds(Variant::Portes);
}

#[test]
fn plakoto_evaluations_obey_the_rule_bounds() {
    every_evaluator_obeys_the_bounds(Variant::Plakoto);
}

#[test]
fn fevga_evaluations_obey_the_rule_bounds() {
    every_evaluator_obeys_the_bounds(Variant::Fevga);
}

#[test]
fn the_issue_examples_come_out_right() {
    let nets = Engine::load_default();
    for plies in [0, 1] {
        for id in &FIXED[..2] {
            let e = nets.evaluate(&from_id(id).unwrap(), opts(plies)).unwrap();
            assert_eq!(e.probabilities.win_mars, 0.0, "{id}");
            assert!(e.equity <= 1.0, "{id}: {}", e.equity);
        }
        let e = nets
            .evaluate(&from_id(FIXED[2]).unwrap(), opts(plies))
            .unwrap();
        assert_eq!(e.probabilities.lose_mars, 0.0);
        assert!(e.equity >= -1.0, "{}", e.equity);
        // Fault 2: with Black's mother pinned every White win is a 2-point win, and
        // White cannot lose (R5.5).
        let e = nets
            .evaluate(&from_id(FIXED[3]).unwrap(), opts(plies))
            .unwrap();
        let p = e.probabilities;
        assert_eq!(
            (p.win_mars, p.lose(), p.lose_mars),
            (p.win, 0.0, 0.0),
            "{p:?}"
        );
        // The tester's pending draw: 28 of 36 rolls pin Black's mother while White's
        // is pinned (R5.5); every other result is a 2-point loss.
        let pos = from_id(FIXED[12]).unwrap();
        assert_eq!(ending_rolls(&pos), [0, 0, 28]);
        let p = nets.evaluate(&pos, opts(plies)).unwrap().probabilities;
        // At 0 ply the net's draw (0.03) is below the bound: exactly the 28 rolls; at
        // 1 ply a little more (later draws after the other rolls).
        assert!(p.draw >= 28.0 / 36.0 - 1e-6 && p.draw < 0.8, "{p:?}");
        if plies == 0 {
            assert!((p.draw - 28.0 / 36.0).abs() < 1e-6, "{p:?}");
        }
        assert_eq!((p.win, p.lose_mars), (0.0, p.lose()), "{p:?}");
        // The bear-off: a mars on 15 rolls of 36 at least.
        let pos = from_id(FIXED[13]).unwrap();
        assert_eq!(ending_rolls(&pos), [0, 15, 0]);
        let p = nets.evaluate(&pos, opts(plies)).unwrap().probabilities;
        assert!(p.win_mars >= 15.0 / 36.0 - 1e-6, "{p:?}");
    }
}

// ------------------------------------------------------------ the bounds are right

/// A result from the view of the side to move at the start: 0 win 1, 1 win 2,
/// 2 lose 1, 3 lose 2, 4 draw.
type Kind = usize;

/// One continuation of a board to the end (board level, for speed): random plays,
/// except that a play that ends the game is taken when there is one, the best first
/// (a 2-point win, a 1-point win, a draw: the assumption of `decided`); `None` after
/// 3000 turns.
fn play_on(variant: Variant, mut b: Board, rng: &mut ChaCha8Rng) -> Option<Kind> {
    let mut plays = Vec::new();
    let mut first_mover = true;
    for _ in 0..3000 {
        let dice = Dice::new(rng.random_range(1..=6), rng.random_range(1..=6)).unwrap();
        plays.clear();
        generate(variant, &b, dice, &mut plays);
        let ending = plays
            .iter()
            .filter_map(|p| match p.outcome {
                Some(RelOutcome::Win { points, .. }) => Some((points, p)),
                Some(RelOutcome::Draw) => Some((0, p)),
                None => None,
            })
            .max_by_key(|w| w.0)
            .map(|w| *w.1);
        let play = ending.unwrap_or_else(|| plays[rng.random_range(0..plays.len())]);
        match play.outcome {
            Some(RelOutcome::Draw) => return Some(4),
            Some(RelOutcome::Win { points, .. }) => {
                let mars = (points == 2) as usize;
                return Some(if first_mover { mars } else { 2 + mars });
            }
            None => {}
        }
        b = play.board.mirror(variant);
        first_mover = !first_mover;
    }
    None
}

#[test]
fn what_the_sanity_step_rules_out_never_happens() {
    // Every result of many continuations from positions of random games is one the
    // sanity step allows; where it says the result is certain, every continuation
    // ends so. The library's bounds also equal the ones derived here.
    let mut rng = ChaCha8Rng::seed_from_u64(41);
    let mut seen = [0usize; 5];
    // Positions that are decided, have a pinned mother, rule out a mars, rule out a
    // Plakoto draw.
    let mut restricted = [0usize; 4];
    for variant in Variant::ALL {
        let mut pos_list: Vec<Position> = FIXED
            .iter()
            .map(|id| from_id(id).unwrap())
            .filter(|p| p.variant == variant)
            .collect();
        pos_list.extend(game_positions(variant, 77, 4, Policy::Random));
        if variant == Variant::Plakoto {
            pos_list.extend(game_positions(variant, 78, 8, Policy::Hitting));
        }
        for pos in pos_list.iter().filter(|p| p.game_over().is_none()) {
            let b = Board::from_position(pos, pos.turn);
            let ok = possible_outcomes(variant, &b);
            let id = tavli_engine::rules::position_id::to_id(pos);
            assert_eq!(ok, allowed(pos), "{id}");
            let certain = decided(variant, &b);
            restricted[0] += certain.is_some() as usize;
            restricted[1] += (!ok.win_single || !ok.lose_single) as usize;
            restricted[2] += (!ok.win_mars || !ok.lose_mars) as usize;
            restricted[3] += (variant == Variant::Plakoto && !ok.draw) as usize;
            for _ in 0..8 {
                let Some(kind) = play_on(variant, b, &mut rng) else {
                    continue;
                };
                seen[kind] += 1;
                let allowed_kind = [
                    ok.win_single,
                    ok.win_mars,
                    ok.lose_single,
                    ok.lose_mars,
                    ok.draw,
                ][kind];
                assert!(
                    allowed_kind,
                    "{id}: result {kind} happened, ruled out by {ok:?}"
                );
                if let Some(c) = certain {
                    // A certain win (loss) ends in a win (loss); of the kind it says
                    // when its 2-point share is 0 or 1.
                    let (win, lose) = (kind <= 1, kind == 2 || kind == 3);
                    let mars = kind == 1 || kind == 3;
                    if c.win == 1.0 {
                        assert!(win, "{id}: {kind} vs {c:?}");
                        if c.win_mars == 0.0 || c.win_mars == 1.0 {
                            assert_eq!(mars, c.win_mars == 1.0, "{id}: {kind} vs {c:?}");
                        }
                    }
                    if c.draw == 1.0 {
                        assert_eq!(kind, 4, "{id}: {kind} vs {c:?}");
                    }
                    if c.lose() == 1.0 {
                        assert!(lose, "{id}: {kind} vs {c:?}");
                        if c.lose_mars == 0.0 || c.lose_mars == 1.0 {
                            assert_eq!(mars, c.lose_mars == 1.0, "{id}: {kind} vs {c:?}");
                        }
                    }
                }
            }
        }
    }
    // Every kind of result occurred (the test is not empty).
    assert!(seen.iter().all(|&n| n > 0), "{seen:?}");
    assert!(restricted.iter().all(|&n| n > 0), "{restricted:?}");
}
