//! `ChoosePlay` over the real gRPC server: at every level in every variant a legal
//! play whose resulting position is ApplyPlay's, with the values of Evaluate's
//! ranking; the same seed gives the same answer; bad input names its field; the
//! server's --max-plies caps the depth. The levels' definitions against
//! docs/strength.md are checked here too.

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tavli_engine::bot::Level;
use tavli_engine::rules::{legal_plays, position_id, Dice, Position, Side, Variant};
use tavli_engine::service::pb::tavli_engine_client::TavliEngineClient;
use tavli_engine::service::pb::{self, choose_play_request as cp};
use tavli_engine::service::ServerConfig;
use tonic::transport::Channel;
use tonic::Code;

mod common;
use common::{assert_invalid, sample, TestServer, PORTES_START};

/// A server with the engine's evaluator, searching at most `max_plies` deep.
async fn server(max_plies: u8) -> TestServer {
    TestServer::start(ServerConfig {
        evaluator: Some(Arc::new(tavli_engine::eval::engine::Engine::load_default())),
        max_plies,
        ..ServerConfig::default()
    })
    .await
}

fn dice_pb(d: Dice) -> Option<pb::Dice> {
    Some(pb::Dice {
        die1: d.die1() as u32,
        die2: d.die2() as u32,
    })
}

fn level_pb(l: Level) -> i32 {
    (match l {
        Level::Beginner => pb::SkillLevel::Beginner,
        Level::Casual => pb::SkillLevel::Casual,
        Level::Intermediate => pb::SkillLevel::Intermediate,
        Level::Advanced => pb::SkillLevel::Advanced,
        Level::Expert => pb::SkillLevel::Expert,
        Level::WorldClass => pb::SkillLevel::WorldClass,
        Level::Best => pb::SkillLevel::Best,
    }) as i32
}

fn request(pos: &Position, dice: Dice, level: Level, seed: Option<u64>) -> pb::ChoosePlayRequest {
    pb::ChoosePlayRequest {
        position: Some(cp::Position::PositionId(position_id::to_id(pos))),
        dice: dice_pb(dice),
        level: level_pb(level),
        match_state: None,
        seed,
    }
}

/// Positions of each variant with a roll, from a game played at random (seeded):
/// the start and two later positions whose games are not over.
fn positions(variant: Variant) -> Vec<(Position, Dice)> {
    let mut rng = ChaCha8Rng::seed_from_u64(33);
    let roll =
        |rng: &mut ChaCha8Rng| Dice::new(rng.random_range(1..=6), rng.random_range(1..=6)).unwrap();
    let mut pos = Position::start(variant, Side::White);
    let mut out = vec![(pos, roll(&mut rng))];
    for ply in 1..=24 {
        let plays = legal_plays(&pos, roll(&mut rng)).unwrap();
        let p = &plays[rng.random_range(0..plays.len())];
        assert!(p.outcome.is_none(), "a random game of {variant} ends early");
        pos = p.position;
        if ply % 12 == 0 {
            out.push((pos, roll(&mut rng)));
        }
    }
    out
}

async fn evaluate_top(
    c: &mut TavliEngineClient<Channel>,
    pos: &Position,
    dice: Dice,
    plies: u32,
) -> Vec<pb::RankedPlay> {
    evaluate_top_in(c, pos, dice, plies, None).await
}

/// [`evaluate_top`] of a position played in a match.
async fn evaluate_top_in(
    c: &mut TavliEngineClient<Channel>,
    pos: &Position,
    dice: Dice,
    plies: u32,
    match_state: Option<pb::MatchState>,
) -> Vec<pb::RankedPlay> {
    c.evaluate(pb::EvaluateRequest {
        position: Some(pb::evaluate_request::Position::PositionId(
            position_id::to_id(pos),
        )),
        dice: dice_pb(dice),
        plies,
        grade: None,
        match_state,
    })
    .await
    .unwrap()
    .into_inner()
    .ranked_plays
}

/// At every level in every variant: a legal play of the roll, whose resulting
/// position is ApplyPlay's for it (R3), with the value Evaluate gives that play at the
/// level's depth; the best level makes Evaluate's best play, 2 plies deep.
#[tokio::test]
async fn every_level_plays_a_legal_play_valued_as_evaluate_values_it() {
    let server = server(2).await;
    let mut c = server.client().await;
    for variant in Variant::ALL {
        for (pos, dice) in positions(variant) {
            let legal = legal_plays(&pos, dice).unwrap();
            let ranked0 = evaluate_top(&mut c, &pos, dice, 0).await;
            for level in Level::ALL {
                let a = c
                    .choose_play(request(&pos, dice, level, Some(5)))
                    .await
                    .unwrap()
                    .into_inner();
                let play = a.play.clone().unwrap();
                let after = play.position.as_ref().unwrap();
                assert!(
                    legal.iter().any(|p| p.notation.as_str() == play.notation
                        && position_id::to_id(&p.position) == after.position_id),
                    "{variant} {level:?}: {} is not a legal play of {dice}",
                    play.notation
                );
                let applied = c
                    .apply_play(pb::ApplyPlayRequest {
                        position: Some(pb::apply_play_request::Position::PositionId(
                            position_id::to_id(&pos),
                        )),
                        dice: dice_pb(dice),
                        play: Some(pb::apply_play_request::Play::Notation(
                            play.notation.clone(),
                        )),
                    })
                    .await
                    .unwrap()
                    .into_inner();
                assert_eq!(
                    applied.position.as_ref(),
                    Some(after),
                    "{variant} {level:?}"
                );
                assert_eq!(applied.outcome, a.outcome);
                assert_eq!(a.level, level_pb(level));
                assert_eq!(a.noise, level.noise(variant));
                assert_eq!(a.seed, 5);
                assert_eq!(a.ranking, "equity");
                assert_eq!(a.evaluator, format!("net-{}-v2", variant.name()));
                assert_eq!(a.equity_loss, a.best_equity - a.equity);
                let ranked = if level == Level::Best {
                    assert_eq!(a.plies, 2);
                    evaluate_top(&mut c, &pos, dice, 2).await
                } else {
                    assert_eq!(a.plies, 0);
                    ranked0.clone()
                };
                assert_eq!(a.best_equity, ranked[0].equity, "{variant} {level:?}");
                let mine = ranked
                    .iter()
                    .find(|r| r.play.as_ref().unwrap().notation == play.notation)
                    .unwrap();
                assert_eq!(a.equity, mine.equity, "{variant} {level:?}");
                assert_eq!(a.probabilities, mine.probabilities);
                if level == Level::Best {
                    assert_eq!(ranked[0].play.as_ref(), Some(&play));
                    assert_eq!(a.equity_loss, 0.0);
                }
            }
        }
    }
    server.shutdown().await.unwrap();
}

/// The same request and seed give the same answer; without a seed the answer
/// reports the one drawn, which then gives the same answer again.
#[tokio::test]
async fn a_seed_reproduces_the_answer() {
    let server = server(2).await;
    let mut c = server.client().await;
    let start = Position::start(Variant::Plakoto, Side::White);
    let dice = Dice::new(6, 3).unwrap();
    let mut plays = std::collections::BTreeSet::new();
    for seed in 0..30 {
        let req = request(&start, dice, Level::Beginner, Some(seed));
        let a = c.choose_play(req.clone()).await.unwrap().into_inner();
        let b = c.choose_play(req).await.unwrap().into_inner();
        assert_eq!(a, b);
        plays.insert(a.play.unwrap().notation);
    }
    // The beginner's noise varies its play of 6-3 from the Plakoto start.
    assert!(plays.len() >= 2, "{plays:?}");
    let fresh = c
        .choose_play(request(&start, dice, Level::Casual, None))
        .await
        .unwrap()
        .into_inner();
    let again = c
        .choose_play(request(&start, dice, Level::Casual, Some(fresh.seed)))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(fresh, again);
    // Counted under its own name: 30 pairs and these two.
    let key = "grpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"ChoosePlay\",grpc_service=\"tavli.v1.TavliEngine\"}";
    assert_eq!(sample(&server.metrics_text().await, key), Some(62.0));
    server.shutdown().await.unwrap();
}

/// Other position forms, a match score going on, a bear-off, the end of a game, and
/// the server's --max-plies capping the best level.
#[tokio::test]
async fn inputs_a_match_a_finished_game_and_the_servers_depth() {
    let server = server(0).await;
    let mut c = server.client().await;
    let five = pb::MatchState {
        length: 5,
        score_white: 4,
        score_black: 3,
        variant: pb::Variant::Portes as i32,
        ..Default::default()
    };
    let by = |p: cp::Position| pb::ChoosePlayRequest {
        position: Some(p),
        dice: dice_pb(Dice::new(6, 5).unwrap()),
        level: level_pb(Level::Best),
        match_state: Some(five),
        seed: Some(1),
    };
    let gnubg = cp::Position::Gnubg(pb::GnubgPosition {
        id: "4HPwATDgc/ABMA".into(),
        side_to_move: pb::Side::White as i32,
    });
    let xgid = cp::Position::Xgid("XGID=-b----E-C---eE---c-e----B-:0:0:1:00:0:0:0:0:0".into());
    let id = cp::Position::PositionId(PORTES_START.into());
    let mut answers = Vec::new();
    for p in [gnubg, xgid, id] {
        answers.push(c.choose_play(by(p)).await.unwrap().into_inner());
    }
    // 6-5 from the Portes start: the best play at 0 ply (the server's cap), by
    // match winning chance at 4-3 of 5, as Evaluate ranks it with the same match.
    let start = Position::start(Variant::Portes, Side::White);
    let top = evaluate_top_in(&mut c, &start, Dice::new(6, 5).unwrap(), 0, Some(five)).await;
    for a in &answers {
        assert_eq!(a, &answers[0]);
        assert_eq!(a.plies, 0);
        assert_eq!(a.play, top[0].play);
        assert_eq!(a.ranking, "match_winning_chance");
        assert_eq!(a.match_winning_chance, top[0].match_winning_chance);
        assert_eq!(Some(a.equity), top[0].normalized_equity);
    }
    // A last checker borne off with the opponent's all on its start: a mars (R7).
    let a = c
        .choose_play(request(
            &position_id::from_id("portes/w/1:1,off:14/24:15").unwrap(),
            Dice::new(2, 1).unwrap(),
            Level::Beginner,
            Some(3),
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(a.play.as_ref().unwrap().notation, "1/off");
    assert_eq!(a.evaluator, "bearoff-exact");
    assert_eq!((a.equity, a.best_equity, a.equity_loss), (2.0, 2.0, 0.0));
    let o = a.outcome.unwrap();
    assert_eq!(
        (o.winner, o.points, o.reason),
        (pb::Side::White as i32, 2, pb::OutcomeReason::Mars as i32)
    );
    assert_eq!(a.play.unwrap().outcome, Some(o));
    // A finished game has no plays (R9).
    let e = c
        .choose_play(request(
            &position_id::from_id("portes/b/off:15/24:15").unwrap(),
            Dice::new(2, 1).unwrap(),
            Level::Expert,
            None,
        ))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
    server.shutdown().await.unwrap();
}

/// Bad input is INVALID_ARGUMENT naming its field: the position, the dice, the level
/// (unset or unknown), and a match that is not going on.
#[tokio::test]
async fn bad_input_names_its_field() {
    let server = server(2).await;
    let mut c = server.client().await;
    let start = Position::start(Variant::Portes, Side::White);
    let good = request(&start, Dice::new(3, 1).unwrap(), Level::Expert, Some(1));
    let ms = |length, w, b| pb::MatchState {
        length,
        score_white: w,
        score_black: b,
        ..Default::default()
    };
    let with_match = |m: pb::MatchState| pb::ChoosePlayRequest {
        match_state: Some(m),
        ..good.clone()
    };
    let cases: Vec<(&str, pb::ChoosePlayRequest)> = vec![
        (
            "position",
            pb::ChoosePlayRequest {
                position: None,
                ..good.clone()
            },
        ),
        (
            "position.position_id",
            pb::ChoosePlayRequest {
                position: Some(cp::Position::PositionId("portes/w/24:16/1:15".into())),
                ..good.clone()
            },
        ),
        (
            "dice.die1",
            pb::ChoosePlayRequest {
                dice: Some(pb::Dice { die1: 7, die2: 1 }),
                ..good.clone()
            },
        ),
        (
            "dice",
            pb::ChoosePlayRequest {
                dice: None,
                ..good.clone()
            },
        ),
        (
            "level",
            pb::ChoosePlayRequest {
                level: 0,
                ..good.clone()
            },
        ),
        (
            "level",
            pb::ChoosePlayRequest {
                level: 99,
                ..good.clone()
            },
        ),
        ("match_state.length", with_match(ms(0, 0, 0))),
        ("match_state.score_white", with_match(ms(3, 3, 0))),
        ("match_state.score_black", with_match(ms(5, 1, 6))),
        (
            "match_state.winner",
            with_match(pb::MatchState {
                winner: pb::Side::Black as i32,
                ..ms(5, 1, 2)
            }),
        ),
        (
            "match_state.match_over",
            with_match(pb::MatchState {
                match_over: true,
                ..ms(5, 1, 2)
            }),
        ),
        (
            "match_state.variant",
            with_match(pb::MatchState {
                variant: pb::Variant::Fevga as i32,
                ..ms(5, 1, 2)
            }),
        ),
    ];
    for (field, req) in cases {
        let e = c.choose_play(req).await.unwrap_err();
        assert_invalid(&e, field);
    }
    // The good request itself is answered.
    assert_eq!(c.choose_play(good).await.unwrap().into_inner().seed, 1);
    server.shutdown().await.unwrap();
}

/// The levels' noise and depth are those of docs/strength.md's table ("Skill
/// levels"): one row per level, `| level | plies | Portes noise | Plakoto noise |
/// Fevga noise | ...`.
#[test]
fn the_levels_are_those_of_the_documentation() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/strength.md")).unwrap();
    let section = doc
        .split("\n## Skill levels")
        .nth(1)
        .expect("docs/strength.md has a section \"Skill levels\"");
    let mut seen = Vec::new();
    for line in section.lines().take_while(|l| !l.starts_with("## ")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 6 || !cells[1].starts_with('`') {
            continue;
        }
        let Some(level) = Level::from_name(cells[1].trim_matches('`')) else {
            continue;
        };
        if seen.contains(&level) {
            continue;
        }
        assert_eq!(cells[2], level.plies().to_string(), "{level:?} plies");
        for (k, v) in Variant::ALL.into_iter().enumerate() {
            assert_eq!(
                cells[3 + k],
                format!("{:.3}", level.noise(v)),
                "{level:?} noise in {v}"
            );
        }
        seen.push(level);
    }
    assert_eq!(seen, Level::ALL.to_vec(), "a row per level, weakest first");
}
