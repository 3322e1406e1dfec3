//! Integration tests of the gRPC service: each test starts the real server
//! (`tavli_engine::service::serve`) on ephemeral loopback ports and talks to it with the
//! generated tonic client, the health and reflection clients, and plain HTTP for
//! `/metrics`. Expected values come from the rules core or from RULES.md (section
//! cited).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tavli_engine::eval::rollout::{RolloutConfig, RolloutReport};
use tavli_engine::eval::{
    EvalError, EvalOptions, Evaluation, PositionEvaluator, Probabilities, RankedPlay, StopWhen,
};
use tavli_engine::rules::{self, position_id, Dice, Position, Side, Variant};
use tavli_engine::service::pb::list_legal_plays_request as llp;
use tavli_engine::service::pb::{self, apply_play_request, evaluate_request};
use tavli_engine::service::{convert, ServerConfig};
use tonic::{Code, Status};
use tonic_types::StatusExt;

mod common;
use common::{assert_invalid, sample, TestServer, PORTES_START};

// ------------------------------------------------------------------ harness

impl TestServer {
    /// Waits until `grpc_server_in_flight` of `method` reaches `n` (at most 10 s).
    async fn wait_in_flight(&self, method: &str, n: f64) {
        let key = format!(
            "grpc_server_in_flight{{grpc_method=\"{method}\",grpc_service=\"tavli.v1.TavliEngine\"}}"
        );
        for _ in 0..1000 {
            if sample(&self.metrics_text().await, &key) == Some(n) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("{method} never had {n} RPCs in flight");
    }
}

fn handled(method: &str, code: &str) -> String {
    format!(
        "grpc_server_handled_total{{grpc_code=\"{code}\",grpc_method=\"{method}\",grpc_service=\"tavli.v1.TavliEngine\"}}"
    )
}

fn dice(a: u32, b: u32) -> Option<pb::Dice> {
    Some(pb::Dice { die1: a, die2: b })
}

fn by_id(id: &str, d: Option<pb::Dice>) -> pb::ListLegalPlaysRequest {
    pb::ListLegalPlaysRequest {
        position: Some(llp::Position::PositionId(id.to_string())),
        dice: d,
        ..Default::default()
    }
}

fn by_structured(p: pb::Position, d: Option<pb::Dice>) -> pb::ListLegalPlaysRequest {
    pb::ListLegalPlaysRequest {
        position: Some(llp::Position::Structured(p)),
        dice: d,
        ..Default::default()
    }
}

fn structured(p: &Position) -> pb::Position {
    let mut s = convert::position_to_pb(p);
    // Inputs need only the structured fields.
    s.position_id.clear();
    s.gnubg_id.clear();
    s
}

// ------------------------------------------------------------------ plays

/// Every starting position (R1) with every roll, by structured position and by ID:
/// exactly the plays of the rules core, in its order, with its notation and results.
#[tokio::test]
async fn plays_from_every_starting_position_match_the_rules_core() {
    let server = TestServer::default().await;
    let mut c = server.client().await;
    for variant in Variant::ALL {
        let start = c
            .get_starting_position(pb::GetStartingPositionRequest {
                variant: convert::variant_to_pb(variant) as i32,
                side_to_move: 0,
            })
            .await
            .unwrap()
            .into_inner()
            .position
            .unwrap();
        let core = Position::start(variant, Side::White);
        assert_eq!(start.position_id, position_id::to_id(&core));
        assert_eq!(start.points.len(), 24);
        assert_eq!(start.side_to_move, pb::Side::White as i32);
        for roll in Dice::all_rolls() {
            let expected = rules::legal_plays(&core, roll).unwrap();
            let d = Some(convert::dice_to_pb(roll));
            for req in [
                by_id(&start.position_id, d),
                by_structured(structured(&core), d),
            ] {
                let resp = c.list_legal_plays(req).await.unwrap().into_inner();
                assert_eq!(
                    resp.position.as_ref().unwrap().position_id,
                    start.position_id
                );
                let got: Vec<(&str, &str)> = resp
                    .plays
                    .iter()
                    .map(|p| {
                        (
                            p.notation.as_str(),
                            p.position.as_ref().unwrap().position_id.as_str(),
                        )
                    })
                    .collect();
                let want: Vec<(String, String)> = expected
                    .iter()
                    .map(|p| (p.notation.to_string(), position_id::to_id(&p.position)))
                    .collect();
                let want: Vec<(&str, &str)> =
                    want.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
                assert_eq!(got, want, "{variant} {roll}");
                for p in &resp.plays {
                    let after = p.position.as_ref().unwrap();
                    assert_eq!(after.side_to_move, pb::Side::Black as i32);
                    assert!(p.outcome.is_none());
                    assert!(!p.moves.is_empty());
                }
            }
        }
    }
    server.shutdown().await.unwrap();
}

/// R3: legal plays are distinct by resulting position.
#[tokio::test]
async fn plays_are_distinct_by_resulting_position() {
    let server = TestServer::default().await;
    let mut c = server.client().await;
    for variant in Variant::ALL {
        let id = position_id::to_id(&Position::start(variant, Side::White));
        for roll in Dice::all_rolls() {
            let resp = c
                .list_legal_plays(by_id(&id, Some(convert::dice_to_pb(roll))))
                .await
                .unwrap()
                .into_inner();
            let ids: Vec<&str> = resp
                .plays
                .iter()
                .map(|p| p.position.as_ref().unwrap().position_id.as_str())
                .collect();
            let distinct: BTreeSet<&str> = ids.iter().copied().collect();
            assert_eq!(
                distinct.len(),
                ids.len(),
                "{variant} {roll}: {:?}",
                resp.plays.iter().map(|p| &p.notation).collect::<Vec<_>>()
            );
        }
    }
    server.shutdown().await.unwrap();
}

/// Known answers from RULES.md: Fevga start 6-6 and 5-5 (R8.2), Plakoto start 6-5.
#[tokio::test]
async fn known_plays_of_starting_positions() {
    let server = TestServer::default().await;
    let mut c = server.client().await;
    let results = |resp: pb::ListLegalPlaysResponse| -> BTreeSet<String> {
        resp.plays
            .into_iter()
            .map(|p| p.position.unwrap().position_id)
            .collect()
    };
    // R8.2: from the start with 6-6 White plays 24/18 only.
    let resp = c
        .list_legal_plays(by_id("fevga/w/24:15/12:15", dice(6, 6)))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(resp.plays.len(), 1);
    assert_eq!(resp.plays[0].notation, "24/18");
    assert_eq!(
        resp.plays[0].position.as_ref().unwrap().position_id,
        "fevga/b/24:14,18:1/12:15"
    );
    // R8.2: with 5-5 there are two plays: 24/19/14/9/4, and 24/19/14/9 24/19.
    let resp = c
        .list_legal_plays(by_id("fevga/w/24:15/12:15", dice(5, 5)))
        .await
        .unwrap()
        .into_inner();
    let notations: BTreeSet<&str> = resp.plays.iter().map(|p| p.notation.as_str()).collect();
    assert_eq!(
        notations,
        BTreeSet::from(["24/19/14/9/4", "24/19/14/9 24/19"])
    );
    // Plakoto start 6-5: two checkers 24/18 24/19, or one 24/13.
    let resp = c
        .list_legal_plays(by_id("plakoto/w/24:15/1:15", dice(6, 5)))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        results(resp),
        BTreeSet::from([
            "plakoto/b/24:13,19:1,18:1/1:15".to_string(),
            "plakoto/b/24:14,13:1/1:15".to_string(),
        ])
    );
    // Portes start 6-5 includes the run 24/18/13 (printed as the whole path).
    let resp = c
        .list_legal_plays(by_id(PORTES_START, dice(6, 5)))
        .await
        .unwrap()
        .into_inner();
    assert!(resp.plays.iter().any(|p| p.notation == "24/18/13"));
    server.shutdown().await.unwrap();
}

/// PLAY_DETAIL_COMPACT: the same plays in the same order, each with its resulting
/// Position ID in `position_id` and no `position`; an unknown detail is invalid.
#[tokio::test]
async fn compact_plays_carry_the_resulting_position_id_only() {
    let server = TestServer::default().await;
    let mut c = server.client().await;
    let cases = [
        (PORTES_START, (6, 5)),
        ("plakoto/w/24:15/1:15", (3, 3)),
        ("fevga/w/24:15/12:15", (5, 5)),
        // R5.5: pinning the mother ends the game; the outcome is kept.
        ("plakoto/w/3:1,6:14/1:1,19:14", (2, 1)),
    ];
    for (id, (d1, d2)) in cases {
        let full = c
            .list_legal_plays(by_id(id, dice(d1, d2)))
            .await
            .unwrap()
            .into_inner();
        let mut req = by_id(id, dice(d1, d2));
        req.detail = pb::PlayDetail::Compact as i32;
        let compact = c.list_legal_plays(req).await.unwrap().into_inner();
        assert_eq!(compact.position, full.position, "{id}");
        if id.starts_with("plakoto/w/3:1") {
            let ended = compact
                .plays
                .iter()
                .find(|p| p.notation == "6/5 3/1*")
                .unwrap();
            assert_eq!(ended.position_id, "plakoto/b/6:13,5:1,1:1/1:1p,19:14");
            assert_eq!(ended.outcome.as_ref().unwrap().points, 2);
        }
        assert_eq!(compact.plays.len(), full.plays.len(), "{id}");
        assert!(!full.plays.is_empty(), "{id}");
        for (f, k) in full.plays.iter().zip(&compact.plays) {
            assert_eq!(
                f.position_id, "",
                "{id}: full plays leave position_id empty"
            );
            assert_eq!(k.position, None, "{id}: compact plays have no position");
            assert_eq!(k.position_id, f.position.as_ref().unwrap().position_id);
            assert_eq!(
                (&k.moves, &k.notation, &k.outcome),
                (&f.moves, &f.notation, &f.outcome)
            );
        }
    }
    let mut req = by_id(PORTES_START, dice(6, 5));
    req.detail = 7;
    let e = c.list_legal_plays(req).await.unwrap_err();
    assert_invalid(&e, "detail");
    assert!(e.message().contains("unknown play detail 7"), "{e:?}");
    server.shutdown().await.unwrap();
}

/// A GNU Backgammon Position ID (Portes) gives the same answer as the Position ID.
#[tokio::test]
async fn gnubg_position_input() {
    let server = TestServer::default().await;
    let mut c = server.client().await;
    let a = c
        .list_legal_plays(by_id(PORTES_START, dice(4, 2)))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(a.position.as_ref().unwrap().gnubg_id, "4HPwATDgc/ABMA");
    let b = c
        .list_legal_plays(pb::ListLegalPlaysRequest {
            position: Some(llp::Position::Gnubg(pb::GnubgPosition {
                id: "4HPwATDgc/ABMA".into(),
                side_to_move: pb::Side::White as i32,
            })),
            dice: dice(4, 2),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(a, b);
    server.shutdown().await.unwrap();
}

// ------------------------------------------------------------------ apply

fn apply_req(
    pos: apply_play_request::Position,
    d: Option<pb::Dice>,
    play: apply_play_request::Play,
) -> pb::ApplyPlayRequest {
    pb::ApplyPlayRequest {
        position: Some(pos),
        dice: d,
        play: Some(play),
    }
}

/// Every legal play of a few positions, applied by notation, by moves, by resulting
/// position and by resulting Position ID, gives the play's position and notation.
#[tokio::test]
async fn apply_round_trips() {
    use apply_play_request::{Play, Position as P};
    let server = TestServer::default().await;
    let mut c = server.client().await;
    let cases = [
        (PORTES_START, dice(3, 1)),
        (PORTES_START, dice(6, 6)),
        ("plakoto/w/24:14,3:1/1:14,3:1p", dice(2, 1)),
        ("fevga/w/24:15/12:15", dice(5, 5)),
        ("portes/b/bar:1,6:11,off:3/1:15", dice(6, 2)),
    ];
    for (id, d) in cases {
        let listed = c.list_legal_plays(by_id(id, d)).await.unwrap().into_inner();
        assert!(!listed.plays.is_empty());
        let structured_in = {
            let mut s = listed.position.clone().unwrap();
            s.position_id.clear();
            s
        };
        for play in &listed.plays {
            let want = play.position.as_ref().unwrap();
            let forms = [
                Play::Notation(play.notation.clone()),
                Play::Moves(pb::MoveList {
                    moves: play.moves.clone(),
                }),
                Play::ResultingPosition(want.clone()),
                Play::ResultingPositionId(want.position_id.clone()),
            ];
            for form in forms {
                for pos in [
                    P::PositionId(id.into()),
                    P::Structured(structured_in.clone()),
                ] {
                    let r = c
                        .apply_play(apply_req(pos, d, form.clone()))
                        .await
                        .unwrap_or_else(|e| panic!("{id} {:?} {form:?}: {e:?}", d))
                        .into_inner();
                    assert_eq!(r.position.as_ref(), Some(want), "{id} {form:?}");
                    assert_eq!(r.notation, play.notation);
                    assert_eq!(r.moves, play.moves);
                    assert_eq!(r.outcome, play.outcome);
                }
            }
        }
    }
    // A concrete one: Portes start, 3-1, making the 5 point.
    let r = c
        .apply_play(apply_req(
            P::PositionId(PORTES_START.into()),
            dice(3, 1),
            Play::Notation("8/5 6/5".into()),
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        r.position.unwrap().position_id,
        "portes/b/24:2,13:5,8:2,6:4,5:2/1:2,12:5,17:3,19:5"
    );
    server.shutdown().await.unwrap();
}

/// A play that ends the game returns its outcome (R7): the last checker off, none of
/// the loser's off, is a mars.
#[tokio::test]
async fn apply_reports_the_outcome() {
    let server = TestServer::default().await;
    let mut c = server.client().await;
    let r = c
        .apply_play(apply_req(
            apply_play_request::Position::PositionId("portes/w/1:1,off:14/1:1,24:14".into()),
            dice(2, 1),
            apply_play_request::Play::Notation("1/off".into()),
        ))
        .await;
    // "1:1" for both sides is two colours on one point: invalid, names the ID.
    assert_invalid(&r.unwrap_err(), "position.position_id");
    let r = c
        .apply_play(apply_req(
            apply_play_request::Position::PositionId("portes/w/1:1,off:14/24:15".into()),
            dice(2, 1),
            apply_play_request::Play::Notation("1/off".into()),
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        r.outcome,
        Some(pb::GameOutcome {
            winner: pb::Side::White as i32,
            points: 2,
            reason: pb::OutcomeReason::Mars as i32,
        })
    );
    assert_eq!(r.position.unwrap().off_white, 15);
    server.shutdown().await.unwrap();
}

// ------------------------------------------------------------------ opening, match

#[tokio::test]
async fn opening_roll_and_match_cycle() {
    let server = TestServer::default().await;
    let mut c = server.client().await;
    let roll = |w, b| pb::ResolveOpeningRollRequest {
        white_die: w,
        black_die: b,
    };
    let r = c
        .resolve_opening_roll(roll(6, 3))
        .await
        .unwrap()
        .into_inner();
    assert_eq!((r.starter, r.roll_again), (pb::Side::White as i32, false));
    let r = c
        .resolve_opening_roll(roll(2, 5))
        .await
        .unwrap()
        .into_inner();
    assert_eq!((r.starter, r.roll_again), (pb::Side::Black as i32, false));
    let r = c
        .resolve_opening_roll(roll(4, 4))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (r.starter, r.roll_again),
        (pb::Side::Unspecified as i32, true)
    );
    assert_invalid(
        &c.resolve_opening_roll(roll(0, 3)).await.unwrap_err(),
        "white_die",
    );
    assert_invalid(
        &c.resolve_opening_roll(roll(3, 7)).await.unwrap_err(),
        "black_die",
    );

    // R2: a 3-point match, Portes -> Plakoto -> Fevga -> Portes.
    let outcome = |w: pb::Side, points, reason: pb::OutcomeReason| pb::GameOutcome {
        winner: w as i32,
        points,
        reason: reason as i32,
    };
    let mut state = pb::MatchState {
        length: 3,
        variant: pb::Variant::Portes as i32,
        ..Default::default()
    };
    let steps = [
        // (game outcome, score, next variant, starter, opening roll, winner)
        (
            outcome(pb::Side::White, 1, pb::OutcomeReason::BoreOff),
            (1, 0),
            pb::Variant::Plakoto,
            pb::Side::White,
            false,
            pb::Side::Unspecified,
        ),
        (
            outcome(
                pb::Side::Unspecified,
                0,
                pb::OutcomeReason::BothMothersPinned,
            ),
            (1, 0),
            pb::Variant::Fevga,
            pb::Side::Unspecified,
            true,
            pb::Side::Unspecified,
        ),
        (
            outcome(pb::Side::Black, 2, pb::OutcomeReason::Mars),
            (1, 2),
            pb::Variant::Portes,
            pb::Side::Black,
            false,
            pb::Side::Unspecified,
        ),
        (
            outcome(pb::Side::White, 2, pb::OutcomeReason::Unspecified),
            (3, 2),
            pb::Variant::Plakoto,
            pb::Side::White,
            false,
            pb::Side::White,
        ),
    ];
    for (i, (o, score, variant, starter, roll_needed, winner)) in steps.into_iter().enumerate() {
        state = c
            .advance_match(pb::AdvanceMatchRequest {
                match_state: Some(state),
                outcome: Some(o),
            })
            .await
            .unwrap()
            .into_inner()
            .match_state
            .unwrap();
        assert_eq!((state.score_white, state.score_black), score, "game {i}");
        assert_eq!(state.variant, variant as i32, "game {i}");
        assert_eq!(state.starter, starter as i32, "game {i}");
        assert_eq!(state.opening_roll_needed, roll_needed, "game {i}");
        assert_eq!(state.winner, winner as i32, "game {i}");
        assert_eq!(state.match_over, winner != pb::Side::Unspecified);
        assert_eq!(state.games_played, i as u32 + 1);
    }
    let again = c
        .advance_match(pb::AdvanceMatchRequest {
            match_state: Some(state),
            outcome: Some(outcome(pb::Side::Black, 1, pb::OutcomeReason::BoreOff)),
        })
        .await
        .unwrap_err();
    assert_invalid(&again, "match_state");
    let bad = c
        .advance_match(pb::AdvanceMatchRequest {
            match_state: Some(pb::MatchState {
                length: 3,
                variant: pb::Variant::Portes as i32,
                ..Default::default()
            }),
            outcome: Some(outcome(pb::Side::White, 3, pb::OutcomeReason::Unspecified)),
        })
        .await
        .unwrap_err();
    assert_invalid(&bad, "outcome.points");
    server.shutdown().await.unwrap();
}

/// R2 with the project's off-board results (docs/api.md "Resignation and
/// time-out"): a resigned or timed-out game scores its points and its winner
/// starts the next game.
#[tokio::test]
async fn advance_match_takes_resignations_and_time_outs() {
    use pb::OutcomeReason::{Resignation, TimeOut};
    let server = TestServer::default().await;
    let mut c = server.client().await;
    let mut advance =
        async |state: pb::MatchState, w: pb::Side, points, reason: pb::OutcomeReason| {
            let req = pb::AdvanceMatchRequest {
                match_state: Some(state),
                outcome: Some(pb::GameOutcome {
                    winner: w as i32,
                    points,
                    reason: reason as i32,
                }),
            };
            c.advance_match(req)
                .await
                .map(|r| r.into_inner().match_state.unwrap())
        };
    // (score White, score Black, next variant, starter, match winner)
    let seen = |m: &pb::MatchState| (m.score_white, m.score_black, m.variant, m.starter, m.winner);
    let new_match = pb::MatchState {
        length: 3,
        variant: pb::Variant::Portes as i32,
        ..Default::default()
    };
    let (white, black) = (pb::Side::White as i32, pb::Side::Black as i32);
    let m = advance(new_match, pb::Side::Black, 2, Resignation)
        .await
        .unwrap();
    assert_eq!(seen(&m), (0, 2, pb::Variant::Plakoto as i32, black, 0));
    assert!(!m.opening_roll_needed);
    let m = advance(m, pb::Side::White, 1, TimeOut).await.unwrap();
    assert_eq!(seen(&m), (1, 2, pb::Variant::Fevga as i32, white, 0));
    let m = advance(m, pb::Side::Black, 1, Resignation).await.unwrap();
    assert_eq!(seen(&m), (1, 3, pb::Variant::Portes as i32, black, black));
    assert!(m.match_over);
    // No winner, or 3 points (R7): INVALID_ARGUMENT naming the field.
    let e = advance(new_match, pb::Side::Unspecified, 0, Resignation)
        .await
        .unwrap_err();
    assert_invalid(&e, "outcome.winner");
    assert_eq!(
        e.message(),
        "outcome.winner: a resignation result needs a winner"
    );
    let e = advance(new_match, pb::Side::White, 3, TimeOut)
        .await
        .unwrap_err();
    assert_invalid(&e, "outcome.points");
    server.shutdown().await.unwrap();
}

// ------------------------------------------------------------------ errors

#[tokio::test]
async fn bad_inputs_are_invalid_argument_naming_the_field() {
    use apply_play_request::{Play, Position as P};
    let server = TestServer::default().await;
    let mut c = server.client().await;
    let start = Position::start(Variant::Portes, Side::White);

    let mut cases: Vec<(pb::ListLegalPlaysRequest, &str)> = Vec::new();
    // Wrong checker totals (R9): White has 14.
    let mut p = structured(&start);
    p.points[5].white = 4;
    cases.push((by_structured(p, dice(3, 1)), "position.structured.white"));
    // Both colours on printed point 6 (R9).
    let mut p = structured(&start);
    p.points[5].black = 1;
    cases.push((
        by_structured(p, dice(3, 1)),
        "position.structured.points[5]",
    ));
    // A pin outside Plakoto (R9).
    let mut p = structured(&start);
    p.points[5].pinned = pb::Side::White as i32;
    cases.push((
        by_structured(p, dice(3, 1)),
        "position.structured.points[5]",
    ));
    // Bar checkers outside Portes (R9).
    let mut p = structured(&Position::start(Variant::Plakoto, Side::White));
    p.points[23].white = 14;
    p.bar_white = 1;
    cases.push((
        by_structured(p, dice(3, 1)),
        "position.structured.bar_white",
    ));
    // Side to move missing (R9).
    let mut p = structured(&start);
    p.side_to_move = pb::Side::Unspecified as i32;
    cases.push((
        by_structured(p, dice(3, 1)),
        "position.structured.side_to_move",
    ));
    // Unknown variant, structured and as an ID.
    let mut p = structured(&start);
    p.variant = 9;
    cases.push((by_structured(p, dice(3, 1)), "position.structured.variant"));
    let mut p = structured(&start);
    p.variant = 0;
    cases.push((by_structured(p, dice(3, 1)), "position.structured.variant"));
    cases.push((
        by_id("backgammon/w/24:15/1:15", dice(3, 1)),
        "position.position_id",
    ));
    // Not 24 points; a count above 15.
    let mut p = structured(&start);
    p.points.pop();
    cases.push((by_structured(p, dice(3, 1)), "position.structured.points"));
    let mut p = structured(&start);
    p.points[0].black = 300;
    cases.push((
        by_structured(p, dice(3, 1)),
        "position.structured.points[0].black",
    ));
    // An unknown side as a pin.
    let mut p = structured(&start);
    p.points[7].pinned = 7;
    cases.push((
        by_structured(p, dice(3, 1)),
        "position.structured.points[7].pinned",
    ));
    // A bad Position ID: wrong totals, syntax.
    cases.push((
        by_id("portes/w/24:2,13:5,8:3,6:4/1:2,12:5,17:3,19:5", dice(3, 1)),
        "position.position_id",
    ));
    cases.push((by_id("portes/w/24:15", dice(3, 1)), "position.position_id"));
    // Dice 0 or 7 (R9), missing dice, missing position.
    cases.push((by_id(PORTES_START, dice(0, 3)), "dice.die1"));
    cases.push((by_id(PORTES_START, dice(3, 7)), "dice.die2"));
    cases.push((by_id(PORTES_START, None), "dice"));
    cases.push((
        pb::ListLegalPlaysRequest {
            position: None,
            dice: dice(3, 1),
            ..Default::default()
        },
        "position",
    ));
    cases.push((
        pb::ListLegalPlaysRequest {
            position: Some(llp::Position::Gnubg(pb::GnubgPosition {
                id: "4HPwATDgc/ABMA".into(),
                side_to_move: 0,
            })),
            dice: dice(3, 1),
            ..Default::default()
        },
        "position.gnubg.side_to_move",
    ));
    cases.push((
        pb::ListLegalPlaysRequest {
            position: Some(llp::Position::Gnubg(pb::GnubgPosition {
                id: "not base64!".into(),
                side_to_move: 1,
            })),
            dice: dice(3, 1),
            ..Default::default()
        },
        "position.gnubg.id",
    ));
    for (req, field) in cases {
        let e = c.list_legal_plays(req.clone()).await.unwrap_err();
        assert_invalid(&e, field);
    }

    // Illegal plays (R9) and malformed moves.
    let mv = |from: u32, to: u32, die: u32| pb::Move {
        from: Some(pb::Location {
            kind: Some(pb::location::Kind::Point(from)),
        }),
        to: Some(pb::Location {
            kind: Some(pb::location::Kind::Point(to)),
        }),
        die,
        hit: false,
    };
    let apply_cases: Vec<(Play, &str)> = vec![
        (Play::Notation("24/18 24/18".into()), "play.notation"),
        (Play::Notation("24/x".into()), "play.notation"),
        (
            Play::Moves(pb::MoveList {
                moves: vec![mv(24, 21, 3), mv(24, 21, 3)],
            }),
            "play.moves",
        ),
        (
            Play::Moves(pb::MoveList {
                moves: vec![mv(25, 22, 3)],
            }),
            "play.moves.moves[0].from.point",
        ),
        (
            Play::Moves(pb::MoveList {
                moves: vec![mv(8, 5, 3), mv(6, 5, 9)],
            }),
            "play.moves.moves[1].die",
        ),
        (
            Play::Moves(pb::MoveList {
                moves: vec![pb::Move {
                    to: None,
                    ..mv(8, 5, 3)
                }],
            }),
            "play.moves.moves[0].to",
        ),
        (
            Play::ResultingPositionId(PORTES_START.replace("/w/", "/b/")),
            "play.resulting_position_id",
        ),
        (
            Play::ResultingPositionId("plakoto/w/24:15/1:15".into()),
            "play.resulting_position_id",
        ),
        (
            Play::ResultingPosition(structured(&start)),
            "play.resulting_position",
        ),
    ];
    for (play, field) in apply_cases {
        let e = c
            .apply_play(apply_req(
                P::PositionId(PORTES_START.into()),
                dice(3, 1),
                play,
            ))
            .await
            .unwrap_err();
        assert_invalid(&e, field);
    }
    let e = c
        .apply_play(pb::ApplyPlayRequest {
            position: Some(P::PositionId(PORTES_START.into())),
            dice: dice(3, 1),
            play: None,
        })
        .await
        .unwrap_err();
    assert_invalid(&e, "play");

    // Evaluate validates before answering UNIMPLEMENTED.
    let e = c
        .evaluate(pb::EvaluateRequest {
            match_state: None,
            position: Some(evaluate_request::Position::PositionId(PORTES_START.into())),
            dice: None,
            plies: 9,
            grade: None,
        })
        .await
        .unwrap_err();
    assert_invalid(&e, "plies");
    let e = c
        .get_starting_position(pb::GetStartingPositionRequest {
            variant: 0,
            side_to_move: 0,
        })
        .await
        .unwrap_err();
    assert_invalid(&e, "variant");
    server.shutdown().await.unwrap();
}

/// R9: a finished game has no plays: FAILED_PRECONDITION with the outcome.
#[tokio::test]
async fn game_over_is_failed_precondition_with_the_outcome() {
    let server = TestServer::default().await;
    let mut c = server.client().await;
    let check = |s: Status, text: &str, winner: &str, points: &str, reason: &str| {
        assert_eq!(s.code(), Code::FailedPrecondition, "{s:?}");
        assert_eq!(s.message(), format!("the game is already over: {text}"));
        let info = s.get_details_error_info().expect("ErrorInfo");
        assert_eq!(info.reason, "GAME_OVER");
        assert_eq!(info.domain, "tavli.v1");
        assert_eq!(info.metadata["winner"], winner);
        assert_eq!(info.metadata["points"], points);
        assert_eq!(info.metadata["reason"], reason);
    };
    let e = c
        .list_legal_plays(by_id("portes/b/off:15/1:15", dice(3, 1)))
        .await
        .unwrap_err();
    check(e, "white wins 2 (mars)", "white", "2", "mars");
    // Plakoto: both mothers pinned is a draw (R5.5).
    let e = c
        .apply_play(apply_req(
            apply_play_request::Position::PositionId(
                "plakoto/w/24:1p,1:2,2:12/24:2,1:1p,23:12".into(),
            ),
            dice(3, 1),
            apply_play_request::Play::Notation("pass".into()),
        ))
        .await
        .unwrap_err();
    check(
        e,
        "draw (both_mothers_pinned)",
        "none",
        "0",
        "both_mothers_pinned",
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn evaluate_is_unimplemented_without_an_evaluator() {
    let server = TestServer::default().await;
    let mut c = server.client().await;
    let e = c
        .evaluate(pb::EvaluateRequest {
            match_state: None,
            position: Some(evaluate_request::Position::PositionId(PORTES_START.into())),
            dice: dice(6, 5),
            plies: 1,
            grade: None,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unimplemented, "{e:?}");
    assert!(e.message().contains("no evaluator"), "{e:?}");
    server.shutdown().await.unwrap();
}

// ------------------------------------------------------------------ health, reflection

#[tokio::test]
async fn health_serving_for_the_server_and_the_service() {
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::health_client::HealthClient;
    use tonic_health::pb::HealthCheckRequest;
    let server = TestServer::default().await;
    let mut h = HealthClient::new(server.channel().await);
    for name in ["", "tavli.v1.TavliEngine"] {
        let r = h
            .check(HealthCheckRequest {
                service: name.into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.status, ServingStatus::Serving as i32, "{name:?}");
    }
    let e = h
        .check(HealthCheckRequest {
            service: "nope.Nope".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn reflection_v1_and_v1alpha_list_the_services() {
    let server = TestServer::default().await;
    let want = BTreeSet::from([
        "grpc.health.v1.Health".to_string(),
        "grpc.reflection.v1.ServerReflection".to_string(),
        "grpc.reflection.v1alpha.ServerReflection".to_string(),
        "tavli.v1.TavliEngine".to_string(),
    ]);
    {
        use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
        use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
        use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
        use tonic_reflection::pb::v1::ServerReflectionRequest;
        let mut r = ServerReflectionClient::new(server.channel().await);
        let req = ServerReflectionRequest {
            host: String::new(),
            message_request: Some(MessageRequest::ListServices(String::new())),
        };
        let mut stream = r
            .server_reflection_info(tokio_stream::iter(vec![req]))
            .await
            .unwrap()
            .into_inner();
        let resp = stream.message().await.unwrap().unwrap();
        let Some(MessageResponse::ListServicesResponse(list)) = resp.message_response else {
            panic!("unexpected {resp:?}");
        };
        let got: BTreeSet<String> = list.service.into_iter().map(|s| s.name).collect();
        assert_eq!(got, want);
    }
    {
        use tonic_reflection::pb::v1alpha::server_reflection_client::ServerReflectionClient;
        use tonic_reflection::pb::v1alpha::server_reflection_request::MessageRequest;
        use tonic_reflection::pb::v1alpha::server_reflection_response::MessageResponse;
        use tonic_reflection::pb::v1alpha::ServerReflectionRequest;
        let mut r = ServerReflectionClient::new(server.channel().await);
        let reqs = vec![
            ServerReflectionRequest {
                host: String::new(),
                message_request: Some(MessageRequest::ListServices(String::new())),
            },
            ServerReflectionRequest {
                host: String::new(),
                message_request: Some(MessageRequest::FileContainingSymbol(
                    "tavli.v1.TavliEngine".into(),
                )),
            },
            ServerReflectionRequest {
                host: String::new(),
                message_request: Some(MessageRequest::FileContainingSymbol(
                    "google.rpc.BadRequest".into(),
                )),
            },
        ];
        let mut stream = r
            .server_reflection_info(tokio_stream::iter(reqs))
            .await
            .unwrap()
            .into_inner();
        let resp = stream.message().await.unwrap().unwrap();
        let Some(MessageResponse::ListServicesResponse(list)) = resp.message_response else {
            panic!("unexpected {resp:?}");
        };
        let got: BTreeSet<String> = list.service.into_iter().map(|s| s.name).collect();
        assert_eq!(got, want);
        for _ in 0..2 {
            let resp = stream.message().await.unwrap().unwrap();
            assert!(
                matches!(
                    resp.message_response,
                    Some(MessageResponse::FileDescriptorResponse(_))
                ),
                "{resp:?}"
            );
        }
    }
    server.shutdown().await.unwrap();
}

// ------------------------------------------------------------------ metrics

#[tokio::test]
async fn metrics_count_the_calls_made() {
    let server = TestServer::default().await;
    let mut c = server.client().await;
    for _ in 0..3 {
        c.list_legal_plays(by_id(PORTES_START, dice(6, 5)))
            .await
            .unwrap();
    }
    for _ in 0..2 {
        c.list_legal_plays(by_id(PORTES_START, dice(0, 5)))
            .await
            .unwrap_err();
    }
    c.list_legal_plays(by_id("fevga/w/24:15/12:15", dice(6, 6)))
        .await
        .unwrap();
    c.get_starting_position(pb::GetStartingPositionRequest {
        variant: pb::Variant::Plakoto as i32,
        side_to_move: 0,
    })
    .await
    .unwrap();
    let text = server.metrics_text().await;
    let svc = "grpc_service=\"tavli.v1.TavliEngine\"";
    assert_eq!(
        sample(&text, &handled("ListLegalPlays", "OK")),
        Some(4.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, &handled("ListLegalPlays", "InvalidArgument")),
        Some(2.0)
    );
    assert_eq!(
        sample(&text, &handled("GetStartingPosition", "OK")),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            &format!("grpc_server_started_total{{grpc_method=\"ListLegalPlays\",{svc}}}")
        ),
        Some(6.0)
    );
    assert_eq!(
        sample(
            &text,
            &format!("grpc_server_handling_seconds_count{{grpc_method=\"ListLegalPlays\",{svc}}}")
        ),
        Some(6.0)
    );
    assert!(sample(
        &text,
        &format!("grpc_server_handling_seconds_bucket{{grpc_method=\"ListLegalPlays\",{svc},le=\"0.00001\"}}")
    )
    .is_some());
    assert_eq!(
        sample(
            &text,
            &format!("grpc_server_handling_seconds_bucket{{grpc_method=\"ListLegalPlays\",{svc},le=\"10\"}}")
        ),
        Some(6.0)
    );
    assert_eq!(
        sample(
            &text,
            &format!("grpc_server_in_flight{{grpc_method=\"ListLegalPlays\",{svc}}}")
        ),
        Some(0.0)
    );
    let portes = rules::legal_plays(
        &Position::start(Variant::Portes, Side::White),
        Dice::new(6, 5).unwrap(),
    )
    .unwrap()
    .len() as f64;
    assert_eq!(
        sample(&text, "tavli_plays_per_request_count{variant=\"portes\"}"),
        Some(3.0)
    );
    assert_eq!(
        sample(&text, "tavli_plays_per_request_sum{variant=\"portes\"}"),
        Some(3.0 * portes)
    );
    assert_eq!(
        sample(&text, "tavli_plays_per_request_sum{variant=\"fevga\"}"),
        Some(1.0)
    );
    for name in ["process_resident_memory_bytes", "process_cpu_seconds_total"] {
        assert!(sample(&text, name).is_some_and(|v| v >= 0.0), "no {name}");
    }
    server.shutdown().await.unwrap();
}

// ------------------------------------------------------------------ limits, shutdown

/// A fake evaluator that sleeps, records the deadline it was given, and answers a
/// fixed evaluation.
struct SlowEvaluator {
    sleep: Duration,
    /// Time left before the deadline when the last evaluation started.
    deadline_left: Mutex<Option<Duration>>,
}

impl PositionEvaluator for SlowEvaluator {
    fn evaluate(&self, pos: &Position, opts: EvalOptions) -> Result<Evaluation, EvalError> {
        pos.validate_playable()?;
        if let Some(d) = opts.deadline {
            *self.deadline_left.lock().unwrap() = Some(d.saturating_duration_since(Instant::now()));
        }
        std::thread::sleep(self.sleep);
        if opts.deadline.is_some_and(|d| Instant::now() > d) {
            return Err(EvalError::DeadlineExceeded);
        }
        let probabilities = Probabilities {
            win: 0.5,
            win_mars: 0.125,
            lose_mars: 0.25,
            draw: 0.0,
        };
        Ok(Evaluation {
            probabilities,
            equity: probabilities.equity(),
            evaluator: "test-slow".into(),
            plies: opts.plies,
        })
    }

    fn rank_plays(
        &self,
        pos: &Position,
        dice: Dice,
        opts: EvalOptions,
    ) -> Result<Vec<RankedPlay>, EvalError> {
        let e = self.evaluate(pos, opts)?;
        Ok(rules::legal_plays(pos, dice)?
            .into_iter()
            .map(|play| RankedPlay {
                play,
                equity: e.equity,
                probabilities: e.probabilities,
                plies: e.plies,
            })
            .collect())
    }
}

fn slow_config(sleep: Duration, limit: usize) -> (ServerConfig, Arc<SlowEvaluator>) {
    let eval = Arc::new(SlowEvaluator {
        sleep,
        deadline_left: Mutex::new(None),
    });
    let config = ServerConfig {
        concurrency_limit: limit,
        evaluator: Some(eval.clone()),
        ..ServerConfig::default()
    };
    (config, eval)
}

fn eval_req(d: Option<pb::Dice>) -> pb::EvaluateRequest {
    pb::EvaluateRequest {
        match_state: None,
        position: Some(evaluate_request::Position::PositionId(PORTES_START.into())),
        dice: d,
        plies: 1,
        grade: None,
    }
}

#[tokio::test]
async fn evaluate_with_an_evaluator() {
    let (config, _) = slow_config(Duration::ZERO, 8);
    let server = TestServer::start(config).await;
    let mut c = server.client().await;
    let r = c.evaluate(eval_req(dice(3, 1))).await.unwrap().into_inner();
    assert_eq!(r.evaluator, "test-slow");
    assert_eq!(r.plies, 1);
    let p = r.probabilities.unwrap();
    assert_eq!(
        (p.win, p.lose, p.win_mars, p.lose_mars),
        (0.5, 0.5, 0.125, 0.25)
    );
    assert_eq!(r.equity, 0.5 + 0.125 - 0.5 - 0.25);
    let n = rules::legal_plays(
        &position_id::from_id(PORTES_START).unwrap(),
        Dice::new(3, 1).unwrap(),
    )
    .unwrap()
    .len();
    assert_eq!(r.ranked_plays.len(), n);
    let text = server.metrics_text().await;
    assert_eq!(
        sample(&text, "tavli_evaluation_plies_count{variant=\"portes\"}"),
        Some(1.0)
    );
    assert_eq!(
        sample(&text, "tavli_evaluation_plies_sum{variant=\"portes\"}"),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            "tavli_evaluations_total{evaluator=\"test-slow\",plies=\"1\"}"
        ),
        Some(1.0)
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn overload_is_resource_exhausted_and_health_still_answers() {
    use tonic_health::pb::health_client::HealthClient;
    use tonic_health::pb::HealthCheckRequest;
    let (config, _) = slow_config(Duration::from_millis(600), 1);
    let server = TestServer::start(config).await;
    let mut a = server.client().await;
    let mut b = server.client().await;
    let first = tokio::spawn(async move { a.evaluate(eval_req(None)).await });
    server.wait_in_flight("Evaluate", 1.0).await;
    let second = b.evaluate(eval_req(None)).await.unwrap_err();
    assert_eq!(second.code(), Code::ResourceExhausted, "{second:?}");
    let mut h = HealthClient::new(server.channel().await);
    h.check(HealthCheckRequest {
        service: String::new(),
    })
    .await
    .unwrap();
    first.await.unwrap().unwrap();
    // The permit is back.
    b.evaluate(eval_req(None)).await.unwrap();
    let text = server.metrics_text().await;
    assert_eq!(
        sample(&text, &handled("Evaluate", "ResourceExhausted")),
        Some(1.0)
    );
    assert_eq!(sample(&text, &handled("Evaluate", "OK")), Some(2.0));
    server.shutdown().await.unwrap();
}

/// The client's `grpc-timeout` reaches the evaluator as `EvalOptions::deadline`.
#[tokio::test]
async fn client_deadline_is_honoured() {
    let (config, eval) = slow_config(Duration::from_millis(800), 8);
    let server = TestServer::start(config).await;
    let mut c = server.client().await;
    let mut req = tonic::Request::new(eval_req(None));
    req.set_timeout(Duration::from_millis(300));
    let t = Instant::now();
    let e = c.evaluate(req).await.unwrap_err();
    // Client and server both time the call: whichever notices first answers.
    assert!(
        matches!(e.code(), Code::DeadlineExceeded | Code::Cancelled),
        "{e:?}"
    );
    assert!(
        t.elapsed() < Duration::from_millis(700),
        "{:?}",
        t.elapsed()
    );
    let left = eval
        .deadline_left
        .lock()
        .unwrap()
        .expect("no deadline given");
    assert!(
        left > Duration::ZERO && left <= Duration::from_millis(300),
        "{left:?}"
    );
    server.shutdown().await.unwrap();
}

/// The server's own request timeout answers DEADLINE_EXCEEDED naming its flag (and
/// is counted).
#[tokio::test]
async fn server_request_timeout_is_deadline_exceeded() {
    let (mut config, eval) = slow_config(Duration::from_millis(800), 8);
    config.request_timeout = Some(Duration::from_millis(200));
    let server = TestServer::start(config).await;
    let mut c = server.client().await;
    let t = Instant::now();
    let e = c.evaluate(eval_req(None)).await.unwrap_err();
    assert_eq!(e.code(), Code::DeadlineExceeded, "{e:?}");
    assert_eq!(
        e.message(),
        "the server's --request-timeout-seconds (0.2 s) passed; AnalyzeGame, Rollout and \
         EvaluateBatch have --long-request-timeout-seconds"
    );
    assert!(
        t.elapsed() < Duration::from_millis(700),
        "{:?}",
        t.elapsed()
    );
    assert!(eval.deadline_left.lock().unwrap().is_some());
    let text = server.metrics_text().await;
    assert_eq!(
        sample(&text, &handled("Evaluate", "DeadlineExceeded")),
        Some(1.0)
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn max_message_size_is_enforced() {
    let server = TestServer::start(ServerConfig {
        max_message_bytes: 1024,
        ..ServerConfig::default()
    })
    .await;
    let mut c = server.client().await;
    let e = c
        .list_legal_plays(by_id(&"x".repeat(4096), dice(3, 1)))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::OutOfRange, "{e:?}");
    // A response over the limit too: the seven plays of the Portes start with 6-5,
    // each with its whole position, are about 1.8 KB.
    let e = c
        .list_legal_plays(by_id(PORTES_START, dice(6, 5)))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::OutOfRange, "{e:?}");
    let mut compact = by_id("fevga/w/24:15/12:15", dice(6, 6));
    compact.detail = pb::PlayDetail::Compact as i32;
    assert_eq!(
        c.list_legal_plays(compact)
            .await
            .unwrap()
            .into_inner()
            .plays
            .len(),
        1
    );
    server.shutdown().await.unwrap();
}

/// Shutdown: health turns NOT_SERVING, the in-flight RPC finishes, serve returns Ok.
#[tokio::test]
async fn graceful_shutdown_drains_in_flight_rpcs() {
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::health_client::HealthClient;
    use tonic_health::pb::HealthCheckRequest;
    let (mut config, _) = slow_config(Duration::from_millis(700), 8);
    config.drain = Duration::from_secs(5);
    let server = TestServer::start(config).await;
    let mut c = server.client().await;
    let mut h = HealthClient::new(server.channel().await);
    let mut watch = h
        .watch(HealthCheckRequest {
            service: "tavli.v1.TavliEngine".into(),
        })
        .await
        .unwrap()
        .into_inner();
    let first = watch.message().await.unwrap().unwrap();
    assert_eq!(first.status, ServingStatus::Serving as i32);
    let in_flight = tokio::spawn(async move { c.evaluate(eval_req(None)).await });
    server.wait_in_flight("Evaluate", 1.0).await;
    let t = Instant::now();
    let done = tokio::spawn(server.shutdown());
    let next = watch.message().await.unwrap().unwrap();
    assert_eq!(next.status, ServingStatus::NotServing as i32);
    drop(watch);
    let r = in_flight.await.unwrap().unwrap().into_inner();
    assert_eq!(r.evaluator, "test-slow");
    done.await.unwrap().unwrap();
    // Everything finished: no need to wait for the whole drain time.
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
}

/// The service's own engine: a finished game is its certain outcome (R9), even with
/// dice; an exact bear-off comes from the database; a contact position from the net.
#[tokio::test]
async fn evaluate_with_the_engine() {
    let config = ServerConfig {
        evaluator: Some(Arc::new(tavli_engine::eval::engine::Engine::load_default())),
        ..ServerConfig::default()
    };
    let server = TestServer::start(config).await;
    let mut c = server.client().await;
    let req = |id: &str, d: Option<pb::Dice>, plies| pb::EvaluateRequest {
        match_state: None,
        position: Some(evaluate_request::Position::PositionId(id.into())),
        dice: d,
        plies,
        grade: None,
    };
    // White has borne off all 15 and Black none: Black, to move, has lost a mars.
    let r = c
        .evaluate(req("portes/b/off:15/1:15", dice(3, 1), 1))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.evaluator, "game-over");
    assert_eq!(r.equity, -2.0);
    assert!(r.ranked_plays.is_empty());
    let p = r.probabilities.unwrap();
    assert_eq!((p.win, p.lose, p.lose_mars), (0.0, 1.0, 1.0));
    // One checker each on the 6-point: 13/16 exactly (R6: 9 of 36 rolls miss).
    let r = c
        .evaluate(req("portes/w/6:1,off:14/19:1,off:14", None, 0))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.evaluator, "bearoff-exact");
    assert_eq!(r.probabilities.unwrap().win, 13.0 / 16.0);
    assert_eq!(r.equity, 0.625);
    // A contact position: the net, every legal play ranked best first at 0 ply.
    let r = c
        .evaluate(req(PORTES_START, dice(3, 1), 0))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.evaluator, "net-portes-v2");
    assert_eq!(r.ranked_plays.len(), 16);
    assert!(r
        .ranked_plays
        .windows(2)
        .all(|w| w[0].equity >= w[1].equity));
    server.shutdown().await.unwrap();
}

/// An evaluator that searches until it is told to stop (deadline or cancellation),
/// checking every millisecond, and records why it stopped.
#[derive(Default)]
struct EndlessEvaluator {
    stopped: Mutex<Option<(EvalError, Instant)>>,
}

impl PositionEvaluator for EndlessEvaluator {
    fn evaluate(&self, pos: &Position, opts: EvalOptions) -> Result<Evaluation, EvalError> {
        pos.validate_playable()?;
        loop {
            if let Err(e) = opts.check() {
                *self.stopped.lock().unwrap() = Some((e.clone(), Instant::now()));
                return Err(e);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn rank_plays(
        &self,
        pos: &Position,
        _dice: Dice,
        opts: EvalOptions,
    ) -> Result<Vec<RankedPlay>, EvalError> {
        self.evaluate(pos, opts).map(|_| Vec::new())
    }

    fn rollout(
        &self,
        pos: &Position,
        _dice: Option<Dice>,
        _cfg: &RolloutConfig,
        stop: StopWhen<'_>,
        _on_report: &mut dyn FnMut(&RolloutReport) -> std::ops::ControlFlow<()>,
    ) -> Result<RolloutReport, EvalError> {
        let opts = EvalOptions {
            plies: 0,
            deadline: stop.deadline,
            cancel: stop.cancel.cloned(),
            measure: None,
        };
        self.evaluate(pos, opts)?;
        unreachable!("evaluate returns only when stopped")
    }
}

impl EndlessEvaluator {
    /// Waits (up to 2 s) until the search has stopped; why and when.
    async fn wait_stopped(&self) -> (EvalError, Instant) {
        for _ in 0..200 {
            if let Some(s) = self.stopped.lock().unwrap().clone() {
                return s;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the search never stopped");
    }
}

/// A client that cancels its `Evaluate` (drops the call: RST_STREAM) stops the
/// search, and the engine permit, held by the search on the blocking pool, comes back
/// only when the search has stopped.
#[tokio::test]
async fn a_cancelled_evaluate_stops_its_search_and_then_returns_its_permit() {
    let eval = Arc::new(EndlessEvaluator::default());
    let server = TestServer::start(ServerConfig {
        concurrency_limit: 1,
        evaluator: Some(eval.clone()),
        ..ServerConfig::default()
    })
    .await;
    let mut a = server.client().await;
    let mut b = server.client().await;
    let call = tokio::spawn(async move { a.evaluate(eval_req(None)).await });
    server.wait_in_flight("Evaluate", 1.0).await;
    // The search holds the only permit.
    let e = b
        .get_starting_position(pb::GetStartingPositionRequest::default())
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
    let cancelled_at = Instant::now();
    call.abort();
    let (why, when) = eval.wait_stopped().await;
    assert_eq!(why, EvalError::Cancelled);
    assert!(
        when.duration_since(cancelled_at) < Duration::from_millis(500),
        "stopped {:?} after the cancel",
        when.duration_since(cancelled_at)
    );
    // Once the search has returned, the permit is back.
    for _ in 0..100 {
        match b
            .get_starting_position(pb::GetStartingPositionRequest {
                variant: pb::Variant::Fevga as i32,
                side_to_move: 0,
            })
            .await
        {
            Ok(r) => {
                assert_eq!(
                    r.into_inner().position.unwrap().position_id,
                    "fevga/w/24:15/12:15"
                );
                server.shutdown().await.unwrap();
                return;
            }
            Err(e) => assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}"),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the permit never came back");
}

/// Reads a response stream to its end: `Err` with the status that ended it.
async fn stream_end<T>(mut s: tonic::Streaming<T>) -> Result<(), Status> {
    while s.message().await?.is_some() {}
    Ok(())
}

/// At the end of the drain time the server cancels the searches still running: they
/// answer UNAVAILABLE (the client did not cancel: it may retry elsewhere), the streams
/// of a rollout and of an analysis included, and `serve` returns soon after.
#[tokio::test]
async fn the_end_of_the_drain_stops_running_searches() {
    let eval = Arc::new(EndlessEvaluator::default());
    let server = TestServer::start(ServerConfig {
        drain: Duration::from_millis(300),
        evaluator: Some(eval.clone()),
        ..ServerConfig::default()
    })
    .await;
    let mut c = server.client().await;
    let mut streams = Vec::new();
    let rollout = pb::RolloutRequest {
        position: Some(pb::rollout_request::Position::PositionId(
            PORTES_START.into(),
        )),
        trials: 36,
        ..Default::default()
    };
    let mut rc = server.client().await;
    streams.push(tokio::spawn(async move {
        stream_end(rc.rollout(rollout).await?.into_inner()).await
    }));
    server.wait_in_flight("Rollout", 1.0).await;
    let analysis = pb::AnalyzeGameRequest {
        record: Some(pb::analyze_game_request::Record::Text(
            " 1 point match\n\n Game 1 Portes\n a : 0   b : 0\n  1) 31: 8/5 6/5\n".into(),
        )),
        ..Default::default()
    };
    let mut ac = server.client().await;
    streams.push(tokio::spawn(async move {
        stream_end(ac.analyze_game(analysis).await?.into_inner()).await
    }));
    server.wait_in_flight("AnalyzeGame", 1.0).await;
    let call = tokio::spawn(async move { c.evaluate(eval_req(None)).await });
    server.wait_in_flight("Evaluate", 1.0).await;
    let t = Instant::now();
    server.shutdown().await.unwrap();
    assert!(
        t.elapsed() < Duration::from_millis(1000),
        "{:?}",
        t.elapsed()
    );
    let (why, _) = eval.wait_stopped().await;
    assert_eq!(why, EvalError::Cancelled);
    let e = call.await.unwrap().unwrap_err();
    assert_eq!(e.code(), Code::Unavailable, "{e:?}");
    assert_eq!(
        e.message(),
        "the server is shutting down: evaluation stopped; retry"
    );
    for (s, what) in streams.into_iter().zip(["rollout", "analysis"]) {
        let e = s.await.unwrap().unwrap_err();
        assert_eq!(e.code(), Code::Unavailable, "{what}: {e:?}");
        assert_eq!(
            e.message(),
            format!("the server is shutting down: {what} stopped; retry")
        );
    }
}

/// Readiness: while every engine permit stays taken for 5 s the engine's health
/// turns NOT_SERVING (liveness, `""`, stays SERVING), and SERVING again 2 s after the
/// permit is back.
#[tokio::test]
async fn readiness_follows_sustained_saturation() {
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::health_client::HealthClient;
    use tonic_health::pb::HealthCheckRequest;
    let eval = Arc::new(EndlessEvaluator::default());
    let server = TestServer::start(ServerConfig {
        concurrency_limit: 1,
        evaluator: Some(eval.clone()),
        ..ServerConfig::default()
    })
    .await;
    let mut h = HealthClient::new(server.channel().await);
    let mut watch = h
        .watch(HealthCheckRequest {
            service: "tavli.v1.TavliEngine".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        watch.message().await.unwrap().unwrap().status,
        ServingStatus::Serving as i32
    );
    let mut c = server.client().await;
    let call = tokio::spawn(async move { c.evaluate(eval_req(None)).await });
    let t = Instant::now();
    assert_eq!(
        watch.message().await.unwrap().unwrap().status,
        ServingStatus::NotServing as i32
    );
    let took = t.elapsed();
    assert!(
        took >= Duration::from_millis(4900) && took < Duration::from_secs(7),
        "{took:?}"
    );
    let live = h
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(live.status, ServingStatus::Serving as i32);
    assert_eq!(
        sample(&server.metrics_text().await, "tavli_ready"),
        Some(0.0)
    );
    call.abort();
    let t = Instant::now();
    assert_eq!(
        watch.message().await.unwrap().unwrap().status,
        ServingStatus::Serving as i32
    );
    assert!(
        t.elapsed() >= Duration::from_millis(1900),
        "{:?}",
        t.elapsed()
    );
    drop(watch);
    server.shutdown().await.unwrap();
}
