//! gRPC protocol conformance of the real server (`tavli_engine::service::serve_with_web`
//! on ephemeral loopback ports), checked at the HTTP/2 level with the `h2` crate:
//!
//! - a unary or server-streaming call whose body holds two messages is a request
//!   cardinality violation: `INTERNAL` (as grpc-go and grpc-java answer it), and the
//!   method does no work;
//! - a request whose `content-type` is not gRPC is answered HTTP 415 (the gRPC over
//!   HTTP/2 protocol), with `grpc-status` 3 as grpc-go sends;
//! - health `Watch` of an unknown service sends `SERVICE_UNKNOWN` and stays open
//!   (`health.proto`), ends when the client cancels (its place comes back) and when
//!   the server shuts down;
//! - health `Watch` streams are bounded per connection, not by the streaming or the
//!   engine limit: every health-checking client connection gets its watch.

mod attack;
mod common;

use bytes::Bytes;
use prost::Message as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tavli_engine::eval::engine::Engine;
use tavli_engine::service::pb;
use tavli_engine::service::ServerConfig;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};

use attack::{grpc_frame, grpc_request, h2_call, h2_connect, list_request};
use common::{sample, Counting, TestServer, PORTES_START};

/// A server with the committed evaluator counting its calls.
async fn counting_server() -> (TestServer, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let config = ServerConfig {
        evaluator: Some(Arc::new(Counting {
            inner: Engine::load_default(),
            calls: calls.clone(),
            deadline: Default::default(),
        })),
        ..ServerConfig::default()
    };
    (TestServer::start(config).await, calls)
}

fn game_record() -> String {
    let path = format!(
        "{}/tests/data/tavli/tavli-3p-match.mat",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path).unwrap()
}

/// `Evaluate` of the Portes start without dice at 0 plies.
fn evaluate_start() -> pb::EvaluateRequest {
    pb::EvaluateRequest {
        match_state: None,
        position: Some(pb::evaluate_request::Position::PositionId(
            PORTES_START.into(),
        )),
        dice: None,
        plies: 0,
        grade: None,
    }
}

/// Every method of `tavli.v1.TavliEngine` and the unary and server-streaming ones of
/// health: its path, one request message (framed), the `grpc-status` it is answered
/// with alone, and whether it calls the evaluator.
fn one_message_calls() -> Vec<(String, Bytes, &'static str, bool)> {
    let e = |m: &str| format!("/tavli.v1.TavliEngine/{m}");
    let at_start = || pb::apply_play_request::Position::PositionId(PORTES_START.into());
    let apply = pb::ApplyPlayRequest {
        position: Some(at_start()),
        dice: Some(pb::Dice { die1: 3, die2: 1 }),
        play: Some(pb::apply_play_request::Play::Notation("8/5 6/5".into())),
    };
    let starting = pb::GetStartingPositionRequest {
        variant: pb::Variant::Portes as i32,
        side_to_move: 0,
    };
    let opening = pb::ResolveOpeningRollRequest {
        white_die: 6,
        black_die: 3,
    };
    let analyze = pb::AnalyzeGameRequest {
        record: Some(pb::analyze_game_request::Record::Text(game_record())),
        ..Default::default()
    };
    let rollout = pb::RolloutRequest {
        position: Some(pb::rollout_request::Position::PositionId(
            PORTES_START.into(),
        )),
        trials: 36,
        ..Default::default()
    };
    let batch = pb::EvaluateBatchRequest {
        requests: vec![evaluate_start(), evaluate_start()],
    };
    let check = HealthCheckRequest {
        service: "tavli.v1.TavliEngine".into(),
    };
    // No match state: the method's own INVALID_ARGUMENT.
    let no_match = pb::AdvanceMatchRequest::default();
    vec![
        (
            e("ListLegalPlays"),
            list_request(PORTES_START, 3, 1),
            "0",
            false,
        ),
        (e("ApplyPlay"), grpc_frame(&apply), "0", false),
        (e("Evaluate"), grpc_frame(&evaluate_start()), "0", true),
        (e("GetStartingPosition"), grpc_frame(&starting), "0", false),
        (e("ResolveOpeningRoll"), grpc_frame(&opening), "0", false),
        (e("AdvanceMatch"), grpc_frame(&no_match), "3", false),
        (e("AnalyzeGame"), grpc_frame(&analyze), "0", true),
        (e("Rollout"), grpc_frame(&rollout), "0", true),
        (e("EvaluateBatch"), grpc_frame(&batch), "0", true),
        (
            "/grpc.health.v1.Health/Check".into(),
            grpc_frame(&check),
            "0",
            false,
        ),
    ]
}

/// Two request messages in the body of a unary or server-streaming call: `INTERNAL`
/// "cardinality violation", and the method does nothing (no evaluation, no plays
/// listed); the same call with one message is served (status checked, evaluator
/// called where it is used). Every engine method, health `Check` and `Watch`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_request_messages_are_a_cardinality_violation() {
    let (server, calls) = counting_server().await;
    let _ = server.channel().await;
    let send = h2_connect(server.grpc, None).await.unwrap();
    for (path, one, code, evaluates) in one_message_calls() {
        let path = path.as_str();
        let before = calls.load(Ordering::Relaxed);
        let two = Bytes::from([one.clone(), one.clone()].concat());
        let r = h2_call(&send, grpc_request(server.grpc, path), two)
            .await
            .unwrap();
        assert_eq!(
            (r.status, r.grpc_status()),
            (200, Some("13")),
            "{path}: {r:?}"
        );
        assert_eq!(
            r.grpc_message(),
            format!(
                "cardinality violation: the request holds 2 messages; {path} takes exactly \
                 one request message"
            ),
            "{path}"
        );
        assert!(r.data.is_empty(), "{path}: {r:?}");
        assert_eq!(calls.load(Ordering::Relaxed), before, "{path} evaluated");
        if path.ends_with("/ListLegalPlays") {
            let text = server.metrics_text().await;
            let listed = sample(&text, "tavli_plays_per_request_count{variant=\"portes\"}");
            assert_eq!(listed.unwrap_or(0.0), 0.0, "ListLegalPlays listed plays");
        }

        let r = h2_call(&send, grpc_request(server.grpc, path), one)
            .await
            .unwrap();
        assert_eq!(r.grpc_status(), Some(code), "{path}: {r:?}");
        assert_eq!(
            calls.load(Ordering::Relaxed) > before,
            evaluates,
            "{path} evaluated"
        );
    }
    // ListLegalPlays (its own code path) listed the 16 plays of 3-1 once.
    let text = server.metrics_text().await;
    assert_eq!(
        sample(&text, "tavli_plays_per_request_sum{variant=\"portes\"}"),
        Some(16.0)
    );
    // Counted as the methods' INTERNAL answers.
    for m in ["ListLegalPlays", "Rollout", "AnalyzeGame", "EvaluateBatch"] {
        let key = format!(
            "grpc_server_handled_total{{grpc_code=\"Internal\",grpc_method=\"{m}\",grpc_service=\"tavli.v1.TavliEngine\"}}"
        );
        assert_eq!(sample(&text, &key), Some(1.0), "{m}");
    }

    // Health Watch: the same, before its stream starts.
    let watch = grpc_frame(&HealthCheckRequest {
        service: "tavli.v1.TavliEngine".into(),
    });
    let path = "/grpc.health.v1.Health/Watch";
    let r = h2_call(
        &send,
        grpc_request(server.grpc, path),
        Bytes::from([watch.clone(), watch].concat()),
    )
    .await
    .unwrap();
    assert_eq!(r.grpc_status(), Some("13"), "{r:?}");
    assert!(
        r.grpc_message().starts_with("cardinality violation"),
        "{r:?}"
    );

    // A second message cut short (its prefix only) is one too; an unknown method
    // stays UNIMPLEMENTED.
    let one = list_request(PORTES_START, 3, 1);
    let cut = Bytes::from([&one[..], &one[..5]].concat());
    let path = "/tavli.v1.TavliEngine/ListLegalPlays";
    let r = h2_call(&send, grpc_request(server.grpc, path), cut)
        .await
        .unwrap();
    assert_eq!(r.grpc_status(), Some("13"), "{r:?}");
    let r = h2_call(
        &send,
        grpc_request(server.grpc, "/tavli.v1.TavliEngine/Nope"),
        Bytes::from([one.clone(), one].concat()),
    )
    .await
    .unwrap();
    assert_eq!(r.grpc_status(), Some("12"), "{r:?}");
    server.shutdown().await.unwrap();
}

/// `content-type` other than `application/grpc`, `application/grpc+…`,
/// `application/grpc;…` (or none): HTTP 415 with `grpc-status` 3, on the engine,
/// health and reflection alike, before any work; the gRPC ones are served.
#[tokio::test]
async fn requests_that_are_not_grpc_get_415() {
    let (server, calls) = counting_server().await;
    let _ = server.channel().await;
    let send = h2_connect(server.grpc, None).await.unwrap();
    let evaluate = "/tavli.v1.TavliEngine/Evaluate";
    let check = "/grpc.health.v1.Health/Check";
    let reflection = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
    let health_body = grpc_frame(&HealthCheckRequest {
        service: String::new(),
    });
    let bodies = [
        (evaluate, grpc_frame(&evaluate_start())),
        (check, health_body.clone()),
        (reflection, Bytes::new()),
    ];
    let types = [
        (
            Some("application/json"),
            "content-type \"application/json\"",
        ),
        (Some("text/plain"), "content-type \"text/plain\""),
        (
            Some("application/grpc-web+proto"),
            "content-type \"application/grpc-web+proto\"",
        ),
        (None, "no content-type"),
    ];
    for (path, body) in &bodies {
        for (ct, named) in types {
            let mut req = grpc_request(server.grpc, path);
            match ct {
                Some(ct) => {
                    req.headers_mut()
                        .insert("content-type", ct.parse().unwrap());
                }
                None => {
                    req.headers_mut().remove("content-type");
                }
            }
            let r = h2_call(&send, req, body.clone()).await.unwrap();
            assert_eq!(r.status, 415, "{path} {ct:?}: {r:?}");
            assert_eq!(r.grpc_status(), Some("3"), "{path} {ct:?}");
            assert_eq!(
                r.grpc_message(),
                format!(
                    "invalid gRPC request: {named}; gRPC requests have content-type \
                     application/grpc (or application/grpc+proto)"
                )
            );
            assert!(r.data.is_empty());
        }
    }
    assert_eq!(calls.load(Ordering::Relaxed), 0, "no evaluation");
    // Counted as the method's INVALID_ARGUMENT answers.
    let key = "grpc_server_handled_total{grpc_code=\"InvalidArgument\",grpc_method=\"Evaluate\",grpc_service=\"tavli.v1.TavliEngine\"}";
    assert_eq!(sample(&server.metrics_text().await, key), Some(4.0));

    // gRPC with a subtype or parameters (any case) is served.
    for ct in [
        "application/grpc",
        "application/grpc+proto",
        "application/grpc;charset=utf-8",
        "Application/GRPC",
    ] {
        let mut req = grpc_request(server.grpc, check);
        req.headers_mut()
            .insert("content-type", ct.parse().unwrap());
        let r = h2_call(&send, req, health_body.clone()).await.unwrap();
        assert_eq!((r.status, r.grpc_status()), (200, Some("0")), "{ct}: {r:?}");
        let m = HealthCheckResponse::decode(r.messages()[0].clone()).unwrap();
        assert_eq!(m.status, ServingStatus::Serving as i32);
    }
    server.shutdown().await.unwrap();
}

/// Health `Watch` of an unknown service: `SERVICE_UNKNOWN`, and the stream stays
/// open (`Check` of it stays NOT_FOUND). A client that cancels it gets its watch
/// place back (with `--connection-watch-limit 2`, a new watch is served). At shutdown the
/// open watches end, a known service's after its NOT_SERVING, and the server
/// returns at once (the watches do not hold the drain).
#[tokio::test]
async fn watch_of_an_unknown_service_stays_open_until_cancel_or_shutdown() {
    let mut config = ServerConfig::default();
    (config.connection_watch_limit, config.drain) = (2, Duration::from_secs(5));
    let server = TestServer::start(config).await;
    let mut h = HealthClient::new(server.channel().await);
    let req = |s: &str| HealthCheckRequest { service: s.into() };
    let e = h.check(req("nope.Nope")).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound);

    let mut unknown = h.watch(req("nope.Nope")).await.unwrap().into_inner();
    let first = unknown.message().await.unwrap().unwrap();
    assert_eq!(first.status, ServingStatus::ServiceUnknown as i32);
    let more = tokio::time::timeout(Duration::from_millis(300), unknown.message()).await;
    assert!(more.is_err(), "the stream stays open: {more:?}");

    // Two streams allowed: the second is served, a third refused; cancelling one
    // frees its place.
    let mut other = h.watch(req("nope.Other")).await.unwrap().into_inner();
    assert_eq!(
        other.message().await.unwrap().unwrap().status,
        ServingStatus::ServiceUnknown as i32
    );
    let refused = h.watch(req("nope.Third")).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
    drop(other);
    let mut known = None;
    for _ in 0..100 {
        match h.watch(req("tavli.v1.TavliEngine")).await {
            Ok(s) => {
                known = Some(s.into_inner());
                break;
            }
            Err(e) => assert_eq!(e.code(), tonic::Code::ResourceExhausted),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut known = known.expect("the cancelled watch's permit came back");
    assert_eq!(
        known.message().await.unwrap().unwrap().status,
        ServingStatus::Serving as i32
    );

    let t = Instant::now();
    let done = tokio::spawn(server.shutdown());
    assert_eq!(
        known.message().await.unwrap().unwrap().status,
        ServingStatus::NotServing as i32
    );
    let end = known.message().await.unwrap_err();
    assert_eq!(end.code(), tonic::Code::Unavailable, "{end:?}");
    assert_eq!(end.message(), "the server is shutting down");
    let end = unknown.message().await.unwrap_err();
    assert_eq!(end.code(), tonic::Code::Unavailable, "{end:?}");
    done.await.unwrap().unwrap();
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
}

/// Health `Watch` streams have a limit per connection (`connection_watch_limit`)
/// and take no permit of the streaming limit (reflection) nor of the engine's
/// (which bounds `Rollout` streams): with both at 2, six client connections each
/// keep a watch, as clients that follow the service config's `healthCheckConfig`
/// do, and all get SERVING; a third watch on one connection (limit 2) is refused
/// `RESOURCE_EXHAUSTED`. With those watches open, two `Rollout`s run and a third is
/// refused, and a third reflection stream is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_watches_are_limited_per_connection_not_by_the_stream_limits() {
    let config = ServerConfig {
        streaming_limit: 2,
        concurrency_limit: 2,
        connection_watch_limit: 2,
        evaluator: Some(Arc::new(Engine::load_default())),
        ..ServerConfig::default()
    };
    let server = TestServer::start(config).await;
    let req = || HealthCheckRequest {
        service: "tavli.v1.TavliEngine".into(),
    };
    // Each its own channel: its own connection.
    let mut watches = Vec::new();
    for i in 0..6 {
        let mut h = HealthClient::new(server.channel().await);
        let mut w = h
            .watch(req())
            .await
            .unwrap_or_else(|e| panic!("watch {i}: {e:?}"));
        let first = w.get_mut().message().await.unwrap().unwrap();
        assert_eq!(first.status, ServingStatus::Serving as i32, "watch {i}");
        watches.push((h, w));
    }
    let (h, _) = &mut watches[0];
    let _second = h.watch(req()).await.unwrap();
    let third = h.watch(req()).await.unwrap_err();
    assert_eq!(third.code(), tonic::Code::ResourceExhausted, "{third:?}");
    assert_eq!(
        third.message(),
        "too many health watches on this connection: 2 already open; cancel one, or watch \
         on another connection"
    );

    let mut c = server.client().await;
    let rollout = || pb::RolloutRequest {
        position: Some(pb::rollout_request::Position::PositionId(
            PORTES_START.into(),
        )),
        trials: 40_000,
        report_every: 1,
        seed: 7,
        ..Default::default()
    };
    let mut running = Vec::new();
    for i in 0..2 {
        let mut s = c.rollout(rollout()).await.unwrap().into_inner();
        let first = s
            .message()
            .await
            .unwrap_or_else(|e| panic!("rollout {i}: {e:?}"));
        assert!(first.is_some(), "rollout {i} streams");
        running.push(s);
    }
    let refused = c.rollout(rollout()).await.unwrap_err();
    assert_eq!(
        refused.code(),
        tonic::Code::ResourceExhausted,
        "{refused:?}"
    );
    assert_eq!(
        refused.message(),
        "server overloaded: 2 requests already in flight; retry later"
    );

    let reflection = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
    let mut held = attack::open_streams(server.grpc, reflection, 1, 3, None, None)
        .await
        .unwrap();
    let mut statuses = held.statuses(Duration::from_secs(1)).await;
    statuses.sort();
    assert_eq!(statuses, ["200", "200", "8"]);
    let text = server.metrics_text().await;
    for (reason, n) in [("watches", 1.0), ("concurrency", 1.0), ("streaming", 1.0)] {
        let key = format!("tavli_refused_total{{reason=\"{reason}\"}}");
        assert_eq!(sample(&text, &key), Some(n), "{reason}");
    }
    drop((running, held, watches));
    server.shutdown().await.unwrap();
}
