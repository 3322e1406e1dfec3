//! Score-aware evaluation (issue #33; docs/match-equity.md, "Score-aware evaluation"):
//! with a match state, Evaluate, ChoosePlay and Rollout give match winning chances
//! (MWC) from the match equity table and rank the plays by them.
//!
//! - Where marses cannot change the match the ranking follows exactly: a mover
//!   1-away ranks as if its own marses were singles (R7: a mars wins the match like a
//!   single); at double match point (both 1-away) the plays are ordered by the win
//!   probability plus the draws' worth (Plakoto, R5.5), and that order differs from
//!   the cubeless one on real positions.
//! - Each play's MWC is `match_winning_chance` of its probabilities, bit for bit as
//!   `f32`; its normalised equity is GNU Backgammon's EMG.
//! - Bad match states are INVALID_ARGUMENT naming the field; ChoosePlay in a match is
//!   reproducible by its seed; a rollout's updates carry the MWC of their estimates,
//!   and a split rollout merged with a match state is the whole one's.

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tavli_engine::analysis::{self, AnalysisOptions, Event, TurnAnalysis};
use tavli_engine::eval::engine::Engine;
use tavli_engine::eval::{EndValues, EvalOptions, PositionEvaluator, Probabilities, RankedPlay};
use tavli_engine::matchequity::{match_winning_chance, MatchEquityTable, MatchScore};
use tavli_engine::record::MatchRecord;
use tavli_engine::rules::{legal_plays, position_id, Dice, Position, Side, Variant};
use tavli_engine::service::pb::tavli_engine_client::TavliEngineClient;
use tavli_engine::service::pb::{self, choose_play_request as cp, evaluate_request as ev};
use tavli_engine::service::ServerConfig;
use tonic::transport::Channel;

mod common;
use common::{assert_invalid, TestServer};

/// Positions with a roll from seeded random games of `variant`: every fourth position
/// of the first 40 plies of three games, while the game goes on.
fn sample_positions(variant: Variant) -> Vec<(Position, Dice)> {
    let mut rng = ChaCha8Rng::seed_from_u64(0x33);
    let mut die = move || rng.random_range(1..=6u8);
    let mut out = Vec::new();
    for game in 0..3 {
        let mut pos = Position::start(variant, [Side::White, Side::Black][game % 2]);
        for ply in 0..40 {
            let dice = Dice::new(die(), die()).unwrap();
            if ply % 4 == 3 {
                out.push((pos, dice));
            }
            let plays = legal_plays(&pos, dice).unwrap();
            let k = (die() as usize * 7 + ply) % plays.len();
            if plays[k].outcome.is_some() {
                break;
            }
            pos = plays[k].position;
        }
    }
    out
}

/// The engine's ranking of `pos` with `dice` at `plies`, by `measure`.
fn ranking(
    engine: &Engine,
    pos: &Position,
    dice: Dice,
    plies: u8,
    measure: Option<EndValues>,
) -> Vec<RankedPlay> {
    let opts = EvalOptions {
        plies,
        measure,
        ..EvalOptions::default()
    };
    engine.rank_plays(pos, dice, opts).unwrap()
}

/// Asserts that `ranked` is best first by `key` within each depth group (the plays
/// at the full depth first, then the move filter's others: docs/evaluation.md).
#[track_caller]
fn assert_ordered_by(ranked: &[RankedPlay], key: impl Fn(&Probabilities) -> f64) {
    for w in ranked.windows(2) {
        if w[0].plies == w[1].plies {
            let (a, b) = (key(&w[0].probabilities), key(&w[1].probabilities));
            assert!(
                a >= b,
                "{} ({a}) before {} ({b})",
                w[0].play.notation,
                w[1].play.notation
            );
        } else {
            assert!(w[0].plies > w[1].plies);
        }
    }
}

/// R7: a mars wins the match like a single when the winner is 1-away. White 1-away at
/// 4-2 of 5: White's end values give a mars win exactly the single's 1, and its plays
/// are ranked by a sum in which its own mars chances take no part (the ranking of the
/// same probabilities with `win_mars` zeroed is the same, bit for bit).
#[test]
fn a_mover_one_away_ranks_as_if_its_marses_were_singles() {
    let engine = Engine::load_default();
    let score = MatchScore::new(5, [4, 2]).unwrap();
    let table = MatchEquityTable::builtin();
    for variant in Variant::ALL {
        for (pos, dice) in sample_positions(variant).into_iter().take(4) {
            let m = score.end_values(variant, pos.turn);
            if pos.turn == Side::White {
                assert_eq!((m.win_single, m.win_mars), (1.0, 1.0));
            } else {
                // Black loses the match on any loss: both its losses are worth 0.
                assert_eq!((m.lose_single, m.lose_mars), (0.0, 0.0));
            }
            let ranked = ranking(&engine, &pos, dice, 0, Some(m));
            let state = score.state(variant);
            for r in &ranked {
                let mwc = match_winning_chance(table, &state, pos.turn, &r.probabilities).unwrap();
                assert_eq!(mwc, m.value(&r.probabilities).clamp(0.0, 1.0));
                if pos.turn == Side::White {
                    let singles = Probabilities {
                        win_mars: 0.0,
                        ..r.probabilities
                    };
                    assert_eq!(
                        m.value(&singles).to_bits(),
                        m.value(&r.probabilities).to_bits()
                    );
                }
            }
            assert_ordered_by(&ranked, |p| m.value(p));
        }
    }
}

/// Double match point (5-point match at 4-4): every end of the game decides the match
/// but a Plakoto draw (R5.5), after which Fevga is played at 1-away each with an
/// opening roll. The plays are ordered by `win + draw · d` with `d` the draw's worth,
/// exactly; in Portes and Fevga by the win probability alone. On real positions that
/// order differs from the cubeless one (marses count there), at 0 and 1 ply.
#[test]
fn double_match_point_ranks_by_win_probability_exactly() {
    let engine = Engine::load_default();
    let score = MatchScore::new(5, [4, 4]).unwrap();
    let mut differ = 0;
    let mut compared = 0;
    for variant in Variant::ALL {
        let m = score.end_values(variant, Side::White);
        assert_eq!(
            (m.win_single, m.win_mars, m.lose_single, m.lose_mars),
            (1.0, 1.0, 0.0, 0.0)
        );
        // After a draw, a Fevga game at 1-away each with an opening roll: a coin flip
        // (within the rounding of the table's sums).
        assert!((m.draw - 0.5).abs() < 1e-12, "{}", m.draw);
        for (i, (pos, dice)) in sample_positions(variant).into_iter().enumerate() {
            let plies = if i < 2 { 1 } else { 0 };
            let dmp = ranking(&engine, &pos, dice, plies, Some(m));
            let win = |p: &Probabilities| p.win as f64 + p.draw as f64 * m.draw;
            assert_ordered_by(&dmp, win);
            if variant != Variant::Plakoto {
                assert_ordered_by(&dmp, |p| p.win as f64);
            }
            for r in &dmp {
                assert_eq!(m.value(&r.probabilities), win(&r.probabilities));
            }
            let money = ranking(&engine, &pos, dice, plies, None);
            compared += 1;
            let names = |r: &[RankedPlay]| -> Vec<String> {
                r.iter().map(|r| r.play.notation.to_string()).collect()
            };
            if names(&dmp) != names(&money) {
                differ += 1;
            }
        }
    }
    assert!(
        differ >= 1,
        "no position of {compared} ranks differently at DMP"
    );
}

async fn server() -> TestServer {
    TestServer::start(ServerConfig {
        evaluator: Some(Arc::new(Engine::load_default())),
        ..ServerConfig::default()
    })
    .await
}

fn dice_pb(d: Dice) -> Option<pb::Dice> {
    Some(tavli_engine::service::convert::dice_to_pb(d))
}

fn ms(length: u32, white: u32, black: u32) -> pb::MatchState {
    pb::MatchState {
        length,
        score_white: white,
        score_black: black,
        ..Default::default()
    }
}

fn evaluate_req(
    pos: &Position,
    dice: Option<Dice>,
    m: Option<pb::MatchState>,
) -> pb::EvaluateRequest {
    pb::EvaluateRequest {
        position: Some(ev::Position::PositionId(position_id::to_id(pos))),
        dice: dice.and_then(dice_pb),
        plies: 0,
        grade: None,
        match_state: m,
    }
}

fn probs(p: &Option<pb::Probabilities>) -> Probabilities {
    let p = p.as_ref().unwrap();
    Probabilities {
        win: p.win,
        win_mars: p.win_mars,
        lose_mars: p.lose_mars,
        draw: p.draw,
    }
}

/// Over gRPC: the position's and each play's MWC are `match_winning_chance` of their
/// probabilities (as `f32`), their normalised equity the EMG, the plays best first by
/// MWC, `ranking` says so; a play graded in a match is graded in normalised equity;
/// without a match state nothing of it is set and the ranking is by equity.
#[tokio::test]
async fn evaluate_in_a_match_gives_and_ranks_by_match_winning_chances() {
    let server = server().await;
    let mut c = server.client().await;
    let table = MatchEquityTable::builtin();
    let score = MatchScore::new(7, [3, 5]).unwrap();
    for variant in Variant::ALL {
        let (pos, dice) = sample_positions(variant)[1];
        let state = score.state(variant);
        let m = score.end_values(variant, pos.turn);
        let mwc = |p: &Probabilities| match_winning_chance(table, &state, pos.turn, p).unwrap();
        let r = c
            .evaluate(evaluate_req(&pos, Some(dice), Some(ms(7, 3, 5))))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.ranking, "match_winning_chance");
        let p = probs(&r.probabilities);
        assert_eq!(r.match_winning_chance, Some(mwc(&p) as f32));
        assert_eq!(r.normalized_equity, Some(m.normalized(m.value(&p)) as f32));
        assert!(r.ranked_plays.len() >= 2);
        for w in r.ranked_plays.windows(2) {
            assert!(w[0].match_winning_chance >= w[1].match_winning_chance);
        }
        for rp in &r.ranked_plays {
            let q = probs(&rp.probabilities);
            assert_eq!(rp.match_winning_chance, Some(mwc(&q) as f32));
            assert_eq!(rp.normalized_equity, Some(m.normalized(m.value(&q)) as f32));
            assert_eq!(rp.equity, q.equity());
        }
        // The last play graded: its error in normalised equity against the first.
        let last = r.ranked_plays.last().unwrap();
        let graded = c
            .evaluate(pb::EvaluateRequest {
                grade: Some(pb::PlayToGrade {
                    play: Some(pb::play_to_grade::Play::Notation(
                        last.play.as_ref().unwrap().notation.clone(),
                    )),
                    thresholds: None,
                }),
                ..evaluate_req(&pos, Some(dice), Some(ms(7, 3, 5)))
            })
            .await
            .unwrap()
            .into_inner()
            .grade
            .unwrap();
        let first = &r.ranked_plays[0];
        assert_eq!(Some(graded.equity), last.normalized_equity);
        assert_eq!(Some(graded.best_equity), first.normalized_equity);
        assert_eq!(graded.error, (graded.best_equity - graded.equity).max(0.0));
        assert_eq!(graded.match_winning_chance, last.match_winning_chance);
        assert_eq!(graded.best_match_winning_chance, first.match_winning_chance);
        assert_eq!(graded.best_play, first.play);
        // Without a match state: equity, no MWC.
        let money = c
            .evaluate(evaluate_req(&pos, Some(dice), None))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(money.ranking, "equity");
        assert_eq!(money.match_winning_chance, None);
        assert!(money
            .ranked_plays
            .iter()
            .all(|r| r.match_winning_chance.is_none()));
        for w in money.ranked_plays.windows(2) {
            assert!(w[0].equity >= w[1].equity);
        }
    }
    server.shutdown().await.unwrap();
}

/// A finished game in a match (R9: answered as its certain outcome): its MWC is what
/// its end is worth. White has borne off all 15 and Black, to move, some: Black lost
/// a single game, at 3-4 of 5 White reaches 4 and the match goes on at 1-away each.
#[tokio::test]
async fn a_finished_game_is_worth_its_end_and_finished_matches_are_rejected() {
    let server = server().await;
    let mut c = server.client().await;
    // White has borne off all 15, Black (to move) has borne off some: a single.
    let over = position_id::from_id("portes/b/off:15/24:2,off:13").unwrap();
    let r = c
        .evaluate(evaluate_req(&over, None, Some(ms(5, 3, 4))))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.evaluator, "game-over");
    // Black (4 points) loses a single: White reaches 4 (Plakoto next, White starts).
    let after = MatchEquityTable::builtin()
        .end_values(
            &MatchScore::new(5, [3, 4]).unwrap().state(Variant::Portes),
            Side::Black,
        )
        .unwrap()
        .1
        .lose_single;
    assert_eq!(r.match_winning_chance, Some(after as f32));
    assert!(after > 0.0 && after < 0.5, "{after}");
    // ChoosePlay in a finished game: FAILED_PRECONDITION (R9), match or not.
    let e = c
        .choose_play(pb::ChoosePlayRequest {
            position: Some(cp::Position::PositionId(position_id::to_id(&over))),
            dice: dice_pb(Dice::new(3, 1).unwrap()),
            level: pb::SkillLevel::Best as i32,
            match_state: Some(ms(5, 3, 4)),
            seed: Some(1),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::FailedPrecondition, "{e:?}");
    server.shutdown().await.unwrap();
}

/// Bad match states name their field, in Evaluate, EvaluateBatch, ChoosePlay and
/// Rollout.
#[tokio::test]
async fn bad_match_states_name_their_field() {
    let server = server().await;
    let mut c = server.client().await;
    let start = Position::start(Variant::Portes, Side::White);
    let plakoto = pb::MatchState {
        variant: pb::Variant::Plakoto as i32,
        ..ms(5, 0, 0)
    };
    let over = pb::MatchState {
        winner: pb::Side::Black as i32,
        ..ms(5, 0, 4)
    };
    let cases = [
        ("match_state.length", ms(0, 0, 0)),
        ("match_state.length", ms(26, 0, 0)),
        ("match_state.length", ms(40, 20, 14)),
        ("match_state.score_white", ms(5, 5, 0)),
        ("match_state.score_black", ms(5, 0, 9)),
        ("match_state.variant", plakoto),
        ("match_state.winner", over),
    ];
    for (field, m) in &cases {
        let e = c
            .evaluate(evaluate_req(&start, None, Some(*m)))
            .await
            .unwrap_err();
        assert_invalid(&e, field);
        let e = c
            .choose_play(pb::ChoosePlayRequest {
                position: Some(cp::Position::PositionId(position_id::to_id(&start))),
                dice: dice_pb(Dice::new(3, 1).unwrap()),
                level: pb::SkillLevel::Best as i32,
                match_state: Some(*m),
                seed: Some(1),
            })
            .await
            .unwrap_err();
        assert_invalid(&e, field);
        let e = c
            .rollout(pb::RolloutRequest {
                position: Some(pb::rollout_request::Position::PositionId(
                    position_id::to_id(&start),
                )),
                trials: 36,
                match_state: Some(*m),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_invalid(&e, field);
    }
    let e = c
        .evaluate_batch(pb::EvaluateBatchRequest {
            requests: vec![
                evaluate_req(&start, None, None),
                evaluate_req(&start, None, Some(ms(3, 0, 3))),
            ],
        })
        .await
        .unwrap_err();
    assert_invalid(&e, "requests[1].match_state.score_black");
    // A long match once both sides are within the table's 25 points: accepted.
    let ok = c
        .evaluate(evaluate_req(&start, None, Some(ms(40, 20, 16))))
        .await
        .unwrap()
        .into_inner();
    assert!(ok.match_winning_chance.is_some());
    server.shutdown().await.unwrap();
}

/// ChoosePlay in a match: ranked by MWC, its values Evaluate's normalised equities and
/// MWCs for the same match, the same seed the same answer; the best level plays
/// Evaluate's first play.
#[tokio::test]
async fn choose_play_in_a_match_is_ranked_by_mwc_and_reproducible() {
    let server = server().await;
    let mut c = server.client().await;
    for variant in Variant::ALL {
        let (pos, dice) = sample_positions(variant)[2];
        let m = pb::MatchState {
            variant: pb::Variant::try_from(variant as i32 + 1).unwrap() as i32,
            ..ms(5, 2, 3)
        };
        for (level, seed, plies) in [
            (pb::SkillLevel::Beginner, 5, 0),
            (pb::SkillLevel::Best, 9, 2),
        ] {
            let ranked = c
                .evaluate(pb::EvaluateRequest {
                    plies,
                    ..evaluate_req(&pos, Some(dice), Some(m))
                })
                .await
                .unwrap()
                .into_inner()
                .ranked_plays;
            let req = pb::ChoosePlayRequest {
                position: Some(cp::Position::PositionId(position_id::to_id(&pos))),
                dice: dice_pb(dice),
                level: level as i32,
                match_state: Some(m),
                seed: Some(seed),
            };
            let a = c.choose_play(req.clone()).await.unwrap().into_inner();
            let b = c.choose_play(req).await.unwrap().into_inner();
            assert_eq!(a, b);
            assert_eq!(a.ranking, "match_winning_chance");
            assert_eq!(a.best_match_winning_chance, ranked[0].match_winning_chance);
            assert_eq!(Some(a.best_equity), ranked[0].normalized_equity);
            let made = ranked
                .iter()
                .find(|r| r.play == a.play)
                .expect("a ranked play");
            assert_eq!(a.match_winning_chance, made.match_winning_chance);
            assert_eq!(Some(a.equity), made.normalized_equity);
            assert_eq!(a.equity_loss, (a.best_equity - a.equity).max(0.0));
            if level == pb::SkillLevel::Best {
                assert_eq!(a.play, ranked[0].play);
            }
        }
    }
    server.shutdown().await.unwrap();
}

/// The last update of a rollout request.
async fn last_update(
    c: &mut TavliEngineClient<Channel>,
    r: pb::RolloutRequest,
) -> pb::RolloutResponse {
    let mut s = c.rollout(r).await.unwrap().into_inner();
    let mut last = None;
    while let Some(u) = s.message().await.unwrap() {
        assert!(u.match_winning_chance.is_some());
        last = Some(u);
    }
    last.unwrap()
}

/// A rollout in a match: every update's MWC is the end values' sum over its
/// probabilities and its error bound the weighted sum of their standard errors; the
/// same trials in two slices merged (with the match state) give the whole rollout's
/// last update, MWC included.
#[tokio::test]
async fn rollout_updates_carry_the_mwc_and_split_rollouts_still_merge() {
    let server = server().await;
    let mut c = server.client().await;
    let (pos, _) = sample_positions(Variant::Fevga)[1];
    let id = position_id::to_id(&pos);
    let score = MatchScore::new(5, [1, 3]).unwrap();
    let m = score.end_values(Variant::Fevga, pos.turn);
    let req = |range: Option<pb::TrialRange>, merge: Vec<pb::RolloutPartial>, trials| {
        pb::RolloutRequest {
            position: Some(pb::rollout_request::Position::PositionId(id.clone())),
            trials,
            seed: 33,
            truncation: 12,
            range,
            merge,
            match_state: Some(ms(5, 1, 3)),
            ..Default::default()
        }
    };
    let whole = last_update(
        &mut c,
        req(
            Some(pb::TrialRange {
                first: 0,
                count: 72,
            }),
            vec![],
            0,
        ),
    )
    .await;
    let p = probs(&whole.probabilities);
    assert_eq!(
        whole.match_winning_chance,
        Some(m.value(&p).clamp(0.0, 1.0) as f32)
    );
    let se = whole.standard_errors.unwrap();
    let f = |x: f32| x as f64;
    let bound = m.standard_error_bound(f(se.win), f(se.win_mars), f(se.lose_mars), f(se.draw));
    assert_eq!(whole.match_winning_chance_error_bound, Some(bound as f32));
    assert!(bound > 0.0);
    let mut parts = Vec::new();
    for (first, count) in [(40, 32), (0, 40)] {
        let slice = req(Some(pb::TrialRange { first, count }), vec![], 0);
        parts.push(last_update(&mut c, slice).await.partial.unwrap());
    }
    let merged = last_update(&mut c, req(None, parts, 0)).await;
    assert_eq!(merged, whole);
    // Without a match state the same rollout has no MWC, and the same estimates.
    let mut s = c
        .rollout(pb::RolloutRequest {
            match_state: None,
            ..req(
                Some(pb::TrialRange {
                    first: 0,
                    count: 72,
                }),
                vec![],
                0,
            )
        })
        .await
        .unwrap()
        .into_inner();
    let mut plain = None;
    while let Some(u) = s.message().await.unwrap() {
        plain = Some(u);
    }
    let plain = plain.unwrap();
    assert_eq!(plain.match_winning_chance, None);
    assert_eq!(plain.probabilities, whole.probabilities);
    assert_eq!(plain.partial, whole.partial);
    server.shutdown().await.unwrap();
}

/// The analysis of `text` at 0 ply: its first turn and the first game's summary.
fn first_turn(text: &str) -> (TurnAnalysis, &'static str) {
    let record = MatchRecord::parse(text).unwrap();
    let engine = Engine::load_default();
    let mut first = None;
    let mut measure = "";
    let opts = AnalysisOptions::default();
    analysis::analyze(&record, &engine, &opts, &mut |e| {
        match e {
            Event::Turn(t) if first.is_none() => first = Some(t.clone()),
            Event::Game(g) if measure.is_empty() => measure = g.error_measure,
            _ => {}
        }
        true
    })
    .unwrap();
    (first.unwrap(), measure)
}

/// AnalyzeGame of a match record measures in normalised equity at each game's score:
/// in a 1-point match (double match point, Portes: no draws) a play's normalised
/// equity is `2·win − 1` exactly, its MWC its win probability; the same game as a
/// session without a length is measured in cubeless equity, as before.
#[test]
fn a_match_record_is_analysed_in_normalised_equity() {
    let game =
        "\n Game 1 Portes opening 4-2\n alice : 0                      bob : 0\n  1) 31: 8/5 8/7\n";
    let (t, measure) = first_turn(&format!(" 1 point match\n{game}"));
    assert_eq!(measure, "normalized_equity");
    let m = t.measure.expect("a match game");
    assert_eq!(
        (m.win_single, m.win_mars, m.lose_single, m.lose_mars),
        (1.0, 1.0, 0.0, 0.0)
    );
    let p = t.played_probabilities;
    assert_eq!(t.played_equity, (2.0 * p.win as f64 - 1.0) as f32);
    assert_eq!(t.match_winning_chance.unwrap().0, p.win as f64);
    assert_eq!(t.error, (t.best_equity - t.played_equity).max(0.0));
    assert!(t.error > 0.0);
    let (money, measure) = first_turn(&format!(" 0 point match\n{game}"));
    assert_eq!(measure, "equity");
    assert_eq!((money.measure, money.match_winning_chance), (None, None));
    assert_eq!(money.played_equity, money.played_probabilities.equity());
    // The same play, the same probabilities: only the measure differs.
    assert_eq!(money.played_probabilities, p);
    assert_ne!(money.played_equity, t.played_equity);
}
