//! The streaming `Rollout` RPC on the real server (as `tests/service.rs`: ephemeral
//! loopback ports, the generated tonic client): updates arrive, the last one is
//! `done`, the same seed gives the same stream, bad fields are `INVALID_ARGUMENT`
//! naming the field, and a rollout counts against the concurrency limit until its
//! stream ends or the client cancels it.

use std::sync::Arc;
use std::time::Duration;
use tavli_engine::eval::engine::Engine;
use tavli_engine::service::pb::tavli_engine_client::TavliEngineClient;
use tavli_engine::service::pb::{self, rollout_request};
use tavli_engine::service::ServerConfig;
use tonic::transport::Channel;
use tonic::{Code, Status};

mod common;
use common::{assert_invalid, TestServer, PORTES_START};

/// Starts the server with the committed nets.
async fn start(config: ServerConfig) -> TestServer {
    TestServer::start(ServerConfig {
        evaluator: Some(Arc::new(Engine::load_default())),
        ..config
    })
    .await
}

fn req(id: &str, trials: u32, report_every: u32) -> pb::RolloutRequest {
    pb::RolloutRequest {
        position: Some(rollout_request::Position::PositionId(id.into())),
        trials,
        report_every,
        seed: 7,
        ..Default::default()
    }
}

/// Every update of a rollout, or the status that ended it (after the updates).
async fn collect(
    c: &mut TavliEngineClient<Channel>,
    r: pb::RolloutRequest,
) -> Result<(Vec<pb::RolloutResponse>, Option<Status>), Status> {
    let mut stream = c.rollout(r).await?.into_inner();
    let mut out = Vec::new();
    loop {
        match stream.message().await {
            Ok(Some(m)) => out.push(m),
            Ok(None) => return Ok((out, None)),
            Err(s) => return Ok((out, Some(s))),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollout_streams_updates_and_ends_done() {
    let server = start(ServerConfig::default()).await;
    let mut c = server.client().await;
    let (updates, end) = collect(&mut c, req(PORTES_START, 72, 36)).await.unwrap();
    assert!(end.is_none(), "{end:?}");
    assert_eq!(
        updates
            .iter()
            .map(|u| (u.trials, u.done))
            .collect::<Vec<_>>(),
        [(36, false), (72, true)]
    );
    let last = updates.last().unwrap();
    assert_eq!((last.evaluator.as_str(), last.plies), ("net-portes-v2", 0));
    let p = last.probabilities.unwrap();
    assert!((p.win + p.lose + p.draw - 1.0).abs() < 1e-6, "{p:?}");
    assert!(p.win_mars <= p.win && p.lose_mars <= p.lose, "{p:?}");
    assert!((last.equity - (p.win + p.win_mars - p.lose - p.lose_mars)).abs() < 1e-6);
    assert!(last.equity_standard_error > 0.0);
    assert!(last.standard_errors.unwrap().win > 0.0);
    assert!(last.play.is_none());
    // The same request gives the same stream.
    let (again, _) = collect(&mut c, req(PORTES_START, 72, 36)).await.unwrap();
    assert_eq!(updates, again);
    // With dice: the play made first is in every update.
    let mut r = req(PORTES_START, 36, 0);
    r.dice = Some(pb::Dice { die1: 3, die2: 1 });
    let (updates, _) = collect(&mut c, r).await.unwrap();
    assert_eq!(updates.last().map(|u| (u.trials, u.done)), Some((36, true)));
    assert!(updates
        .iter()
        .all(|u| u.play.as_ref().is_some_and(|p| !p.notation.is_empty())));
    // A finished game: one update with its outcome (R9).
    let (updates, end) = collect(&mut c, req("portes/b/off:15/1:15", 0, 0))
        .await
        .unwrap();
    assert!(end.is_none());
    assert_eq!(updates.len(), 1);
    let u = &updates[0];
    assert_eq!(
        (u.trials, u.done, u.equity, u.evaluator.as_str()),
        (0, true, -2.0, "game-over")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_rollout_requests_are_invalid_argument_naming_the_field() {
    let server = start(ServerConfig {
        max_rollout_trials: 100,
        max_plies: 2,
        ..ServerConfig::default()
    })
    .await;
    let mut c = server.client().await;
    let e = collect(&mut c, req(PORTES_START, 101, 0))
        .await
        .unwrap_err();
    assert_invalid(&e, "trials");
    assert!(e.message().contains("at most 100 trials"), "{e:?}");
    let mut r = req(PORTES_START, 10, 0);
    r.plies = 2;
    assert_invalid(&collect(&mut c, r).await.unwrap_err(), "plies");
    let mut r = req(PORTES_START, 10, 0);
    r.dice = Some(pb::Dice { die1: 7, die2: 1 });
    assert_invalid(&collect(&mut c, r).await.unwrap_err(), "dice.die1");
    let mut r = req(PORTES_START, 10, 0);
    r.position = None;
    assert_invalid(&collect(&mut c, r).await.unwrap_err(), "position");
    let e = collect(&mut c, req("portes/w/24:15/1:14", 10, 0))
        .await
        .unwrap_err();
    assert_invalid(&e, "position.position_id");
    // 0 trials is the default (1,296), above this server's cap of 100: capped.
    let (updates, _) = collect(&mut c, req("portes/w/6:1,off:14/19:1,off:14", 0, 0))
        .await
        .unwrap();
    assert_eq!(
        updates.last().map(|u| (u.trials, u.done)),
        Some((100, true))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_holds_its_permit_until_cancelled_or_deadline() {
    // One RPC at a time: while a rollout streams, other calls are refused; once the
    // client drops the stream, the rollout stops and the permit comes back.
    let server = start(ServerConfig {
        concurrency_limit: 1,
        ..ServerConfig::default()
    })
    .await;
    let mut c = server.client().await;
    let mut stream = c
        .rollout(req(PORTES_START, 40_000, 1))
        .await
        .unwrap()
        .into_inner();
    assert!(stream.message().await.unwrap().is_some());
    let start = pb::GetStartingPositionRequest {
        variant: pb::Variant::Portes as i32,
        side_to_move: 0,
    };
    let e = c.get_starting_position(start).await.unwrap_err();
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
    drop(stream);
    let mut ok = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if c.get_starting_position(start).await.is_ok() {
            ok = true;
            break;
        }
    }
    assert!(ok, "the permit never came back after the client cancelled");
    // A client deadline ends the stream with DEADLINE_EXCEEDED, and frees the permit.
    let mut r = tonic::Request::new(req(PORTES_START, 40_000, 36));
    r.set_timeout(Duration::from_millis(300));
    let mut stream = c.rollout(r).await.unwrap().into_inner();
    let end = loop {
        match stream.message().await {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("a 40,000-trial rollout finished within 300 ms"),
            Err(s) => break s,
        }
    };
    assert_eq!(end.code(), Code::DeadlineExceeded, "{end:?}");
    assert_eq!(
        end.message(),
        "the client's deadline (grpc-timeout 0.3 s) passed"
    );
    drop(stream);
    let mut ok = false;
    for _ in 0..100 {
        if c.get_starting_position(start).await.is_ok() {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ok, "the permit never came back after the deadline");
}
