//! `EvaluateBatch` over the real gRPC server: every answer is the single `Evaluate`
//! of the same request, field for field; bad items are refused before any work,
//! naming the item; the count is bounded; the deadline and a cancelled call stop it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tavli_engine::rules::{legal_plays, position_id, xgid, Dice, Position, Side, Variant};
use tavli_engine::service::pb::evaluate_request::Position as P;
use tavli_engine::service::pb::tavli_engine_client::TavliEngineClient;
use tavli_engine::service::pb::{self, EvaluateBatchRequest, EvaluateRequest};
use tavli_engine::service::{serve, ServerConfig};
use tokio::net::TcpListener;
use tonic::transport::Channel;
use tonic::Code;
use tonic_types::StatusExt;

/// A server with the engine's evaluator on loopback; stopped when the test's runtime
/// ends (the task is dropped with it).
async fn server(config: ServerConfig) -> TavliEngineClient<Channel> {
    let grpc = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let metrics = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = grpc.local_addr().unwrap();
    let config = ServerConfig {
        evaluator: Some(Arc::new(tavli_engine::eval::engine::Engine::load_default())),
        ..config
    };
    tokio::spawn(serve(config, grpc, metrics, std::future::pending()));
    let url = format!("http://{addr}");
    for _ in 0..100 {
        if let Ok(ch) = Channel::from_shared(url.clone()).unwrap().connect().await {
            return TavliEngineClient::new(ch);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("cannot connect to {url}");
}

fn by_id(pos: &Position, dice: Option<Dice>, plies: u32) -> EvaluateRequest {
    EvaluateRequest {
        match_state: None,
        position: Some(P::PositionId(position_id::to_id(pos))),
        dice: dice.map(|d| pb::Dice {
            die1: d.die1() as u32,
            die2: d.die2() as u32,
        }),
        plies,
        grade: None,
    }
}

/// Positions of each variant from games played at random (seeded), every sixth ply.
fn positions() -> Vec<Position> {
    let mut rng = ChaCha8Rng::seed_from_u64(36);
    let mut out = Vec::new();
    for variant in Variant::ALL {
        for game in 0..3 {
            let turn = if game % 2 == 0 {
                Side::White
            } else {
                Side::Black
            };
            let mut pos = Position::start(variant, turn);
            for ply in 0..60 {
                if pos.game_over().is_some() {
                    break;
                }
                if ply % 6 == 0 {
                    out.push(pos);
                }
                let d = Dice::new(rng.random_range(1..=6), rng.random_range(1..=6)).unwrap();
                let plays = legal_plays(&pos, d).unwrap();
                pos = plays[rng.random_range(0..plays.len())].position;
            }
        }
    }
    out
}

/// A mix: every variant, with and without dice, 0 and 1 ply, one 2-ply, a finished
/// game, and the position oneof by structured message, GNU Backgammon ID and XGID.
fn mixed_requests() -> Vec<EvaluateRequest> {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut reqs: Vec<EvaluateRequest> = positions()
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let dice = (i % 2 == 0)
                .then(|| Dice::new(rng.random_range(1..=6), rng.random_range(1..=6)).unwrap());
            by_id(p, dice, (i % 5 == 0) as u32)
        })
        .collect();
    let start = Position::start(Variant::Portes, Side::White);
    reqs.push(EvaluateRequest {
        match_state: None,
        position: Some(P::Xgid(xgid::to_xgid(&start).unwrap())),
        dice: Some(pb::Dice { die1: 3, die2: 1 }),
        plies: 0,
        grade: None,
    });
    reqs.push(EvaluateRequest {
        match_state: None,
        position: Some(P::Gnubg(pb::GnubgPosition {
            id: "4HPwATDgc/ABMA".into(),
            side_to_move: pb::Side::Black as i32,
        })),
        dice: None,
        plies: 2,
        grade: None,
    });
    reqs.push(EvaluateRequest {
        match_state: None,
        position: Some(P::Structured(
            tavli_engine::service::convert::position_to_pb(&start),
        )),
        dice: Some(pb::Dice { die1: 6, die2: 6 }),
        plies: 1,
        grade: None,
    });
    // R9: a finished game is answered as its certain outcome.
    reqs.push(by_id(
        &position_id::from_id("portes/b/off:15/1:15").unwrap(),
        Some(Dice::new(3, 1).unwrap()),
        1,
    ));
    reqs
}

#[tokio::test]
async fn every_answer_is_the_single_evaluate_of_its_request() {
    let mut c = server(ServerConfig::default()).await;
    let reqs = mixed_requests();
    assert!(reqs.len() > 40, "{}", reqs.len());
    let batch = c
        .evaluate_batch(EvaluateBatchRequest {
            requests: reqs.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(batch.responses.len(), reqs.len());
    for (i, (req, got)) in reqs.into_iter().zip(&batch.responses).enumerate() {
        let single = c.evaluate(req).await.unwrap().into_inner();
        // Every field: position (every ID), probabilities, equity, evaluator, plies,
        // each ranked play with its position, equity and probabilities.
        assert_eq!(got, &single, "item {i}");
    }
    // The service's synchronous method (what the CLI and tests call) answers the
    // same.
    let service = tavli_engine::service::TavliEngineService::new(
        Some(Arc::new(tavli_engine::eval::engine::Engine::load_default())),
        tavli_engine::eval::MAX_PLIES,
        None,
    );
    let direct = service
        .evaluate_batch(
            &EvaluateBatchRequest {
                requests: mixed_requests(),
            },
            None,
        )
        .unwrap();
    assert_eq!(direct, batch);
    let last = batch.responses.last().unwrap();
    assert_eq!((last.evaluator.as_str(), last.equity), ("game-over", -2.0));
    let xg = &batch.responses[batch.responses.len() - 4];
    assert_eq!(
        xg.position.as_ref().unwrap().xgid,
        "XGID=-b----E-C---eE---c-e----B-:0:0:1:00:0:0:0:0:0"
    );
    assert_eq!(xg.ranked_plays.len(), 16);
}

/// INVALID_ARGUMENT naming exactly `field`, before any work (no item answered).
#[track_caller]
fn assert_invalid(status: &tonic::Status, field: &str, reason_part: &str) {
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    let br = status.get_details_bad_request().expect("BadRequest");
    assert_eq!(br.field_violations.len(), 1, "{br:?}");
    assert_eq!(br.field_violations[0].field, field, "{status:?}");
    assert!(
        status.message().starts_with(&format!("{field}: "))
            && status.message().contains(reason_part),
        "{status:?}"
    );
}

#[tokio::test]
async fn bad_items_are_refused_before_any_work_naming_the_item() {
    let mut c = server(ServerConfig::default()).await;
    let start = Position::start(Variant::Portes, Side::White);
    let good = by_id(&start, None, 0);
    let batch = |bad: EvaluateRequest, at: usize| {
        let mut requests = vec![good.clone(); 20];
        // A 2-ply item with dice before the bad one: seconds of work were it run.
        requests[0] = by_id(&start, Some(Dice::new(3, 3).unwrap()), 2);
        requests[at] = bad;
        EvaluateBatchRequest { requests }
    };
    let t = Instant::now();
    let bad_id = EvaluateRequest {
        position: Some(P::PositionId("portes/w/24:2".into())),
        ..good.clone()
    };
    let e = c.evaluate_batch(batch(bad_id, 17)).await.unwrap_err();
    assert_invalid(&e, "requests[17].position.position_id", "");
    let bad_xgid = EvaluateRequest {
        position: Some(P::Xgid(
            "XGID=-b----E-C---eE---c-e----B-:0:0:0:00:0:0:0:0:0".into(),
        )),
        ..good.clone()
    };
    let e = c.evaluate_batch(batch(bad_xgid, 3)).await.unwrap_err();
    assert_invalid(
        &e,
        "requests[3].position.xgid",
        "field 4 (turn) must be 1 or -1, got \"0\"",
    );
    let e = c
        .evaluate_batch(batch(
            EvaluateRequest {
                plies: 3,
                ..good.clone()
            },
            19,
        ))
        .await
        .unwrap_err();
    assert_invalid(&e, "requests[19].plies", "plies must be 0..2");
    let e = c
        .evaluate_batch(batch(
            EvaluateRequest {
                dice: Some(pb::Dice { die1: 7, die2: 1 }),
                ..good.clone()
            },
            5,
        ))
        .await
        .unwrap_err();
    assert_invalid(&e, "requests[5].dice.die1", "die must be 1..6, got 7");
    let e = c
        .evaluate_batch(batch(
            EvaluateRequest {
                position: None,
                ..good.clone()
            },
            1,
        ))
        .await
        .unwrap_err();
    assert_invalid(
        &e,
        "requests[1].position",
        "set structured, position_id, gnubg or xgid",
    );
    // None of these ran the 2-ply item.
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
}

#[tokio::test]
async fn the_count_is_one_to_a_thousand() {
    let mut c = server(ServerConfig::default()).await;
    let e = c
        .evaluate_batch(EvaluateBatchRequest::default())
        .await
        .unwrap_err();
    assert_invalid(&e, "requests", "a batch holds 1..1000 requests, got 0");
    let start = Position::start(Variant::Fevga, Side::White);
    let e = c
        .evaluate_batch(EvaluateBatchRequest {
            requests: vec![by_id(&start, None, 0); 1001],
        })
        .await
        .unwrap_err();
    assert_invalid(&e, "requests", "a batch holds 1..1000 requests, got 1001");
    let r = c
        .evaluate_batch(EvaluateBatchRequest {
            requests: vec![by_id(&start, None, 0); 1000],
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.responses.len(), 1000);
    assert!(r.responses.iter().all(|x| x == &r.responses[0]));
}

/// 2-ply rankings of 3-3 from the Portes start take about 0.4 s each: 200 of them are
/// far more than the deadline.
fn heavy() -> EvaluateBatchRequest {
    let start = Position::start(Variant::Portes, Side::White);
    EvaluateBatchRequest {
        requests: vec![by_id(&start, Some(Dice::new(3, 3).unwrap()), 2); 200],
    }
}

/// The server's limit of the long RPCs (as a client deadline would) ends the batch
/// with DEADLINE_EXCEEDED naming it, and the work stops with it: the only engine
/// permit is back at once. The limit of the other RPCs does not apply to a batch.
#[tokio::test]
async fn the_deadline_stops_the_batch() {
    let mut c = server(ServerConfig {
        request_timeout: Some(Duration::from_millis(1)),
        long_request_timeout: Some(Duration::from_millis(600)),
        concurrency_limit: 1,
        ..ServerConfig::default()
    })
    .await;
    let t = Instant::now();
    let e = c.evaluate_batch(heavy()).await.unwrap_err();
    assert_eq!(e.code(), Code::DeadlineExceeded, "{e:?}");
    assert_eq!(
        e.message(),
        "the server's --long-request-timeout-seconds (0.6 s) passed"
    );
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    let ended = Instant::now();
    let small = EvaluateBatchRequest {
        requests: vec![by_id(
            &Position::start(Variant::Plakoto, Side::Black),
            None,
            0,
        )],
    };
    loop {
        match c.evaluate_batch(small.clone()).await {
            Ok(r) => {
                assert_eq!(r.into_inner().responses.len(), 1);
                break;
            }
            Err(e) => assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}"),
        }
        assert!(
            ended.elapsed() < Duration::from_secs(1),
            "the work went on after the deadline"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A cancelled batch stops: its engine permit (the only one) comes back in moments,
/// not after the 200 searches.
#[tokio::test]
async fn a_cancelled_batch_stops_and_returns_its_permit() {
    let mut a = server(ServerConfig {
        concurrency_limit: 1,
        ..ServerConfig::default()
    })
    .await;
    let mut b = a.clone();
    let call = tokio::spawn(async move { a.evaluate_batch(heavy()).await });
    // The batch holds the only permit.
    let start = || pb::GetStartingPositionRequest {
        variant: pb::Variant::Plakoto as i32,
        side_to_move: 0,
    };
    let mut busy = false;
    for _ in 0..200 {
        match b.get_starting_position(start()).await {
            Err(e) if e.code() == Code::ResourceExhausted => {
                busy = true;
                break;
            }
            _ => tokio::time::sleep(Duration::from_millis(5)).await,
        }
    }
    assert!(busy, "the batch never held the permit");
    let cancelled = Instant::now();
    call.abort();
    loop {
        match b.get_starting_position(start()).await {
            Ok(r) => {
                assert_eq!(
                    r.into_inner().position.unwrap().position_id,
                    "plakoto/w/24:15/1:15"
                );
                break;
            }
            Err(e) => assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}"),
        }
        assert!(
            cancelled.elapsed() < Duration::from_secs(2),
            "the permit never came back"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
