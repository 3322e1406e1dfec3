//! The maximum connection age (`--max-connection-age-seconds`,
//! `--max-connection-age-grace-seconds`; grpc-go's `MaxConnectionAge` and
//! `MaxConnectionAgeGrace`, gRFC A9) on the real server
//! (`tavli_engine::service::serve_with_web` on ephemeral loopback ports): the GOAWAY
//! seen with the `h2` crate, calls that finish within the grace, calls cut at its end
//! (their work stopped), clients that reconnect, and the age with the SIGTERM drain.
//! The TLS case is in `tests/transport.rs`.

mod attack;
mod common;

use bytes::Bytes;
use prost::Message as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tavli_engine::eval::engine::Engine;
use tavli_engine::eval::{EvalError, EvalOptions, Evaluation, PositionEvaluator};
use tavli_engine::rules::{position_id, Dice, Position};
use tavli_engine::service::pb;
use tavli_engine::service::ServerConfig;

use attack::{grpc_frame, grpc_request, h2_call, h2_connect};
use common::{
    call_across_ages, idle_h2_client, sample, server_still_reads, Ranked, TestServer, PORTES_START,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// At 1 ply: waits `slow`, then answers as the committed engine (the call in flight
/// that finishes within the grace); at 2 plies: runs until cancelled and records
/// when (the call cut at the grace's end).
struct AgeEvaluator {
    engine: Engine,
    slow: Duration,
    stopped: Mutex<Option<Instant>>,
}

impl PositionEvaluator for AgeEvaluator {
    fn evaluate(&self, pos: &Position, opts: EvalOptions) -> Result<Evaluation, EvalError> {
        let start = Instant::now();
        while opts.plies >= 2 || start.elapsed() < self.slow {
            if let Err(e) = opts.check() {
                *self.stopped.lock().unwrap() = Some(Instant::now());
                return Err(e);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        self.engine.evaluate(pos, opts)
    }

    fn rank_plays(&self, pos: &Position, _dice: Dice, opts: EvalOptions) -> Ranked {
        self.evaluate(pos, opts).map(|_| Vec::new())
    }
}

/// A server whose connections get their GOAWAY after `age` (±10 %) and are closed
/// `grace` later, with an [`AgeEvaluator`] whose 1-ply calls take `slow`.
async fn server(age: f64, grace: f64, slow: Duration) -> (TestServer, Arc<AgeEvaluator>) {
    let eval = Arc::new(AgeEvaluator {
        engine: Engine::load_default(),
        slow,
        stopped: Mutex::new(None),
    });
    let config = ServerConfig {
        max_connection_age: Some(Duration::from_secs_f64(age)),
        max_connection_age_grace: Some(Duration::from_secs_f64(grace)),
        evaluator: Some(eval.clone()),
        deep_search_limit: 4,
        ..ServerConfig::default()
    };
    (TestServer::start(config).await, eval)
}

/// `Evaluate` of the Portes start (no dice) at `plies`, as a gRPC request body.
fn evaluate(plies: u32) -> Bytes {
    grpc_frame(&pb::EvaluateRequest {
        match_state: None,
        position: Some(pb::evaluate_request::Position::PositionId(
            PORTES_START.into(),
        )),
        dice: None,
        plies,
        grade: None,
    })
}

/// Waits until `send`'s connection has received a GOAWAY (a new stream is then
/// refused by h2 with the GOAWAY as its error); at most `within`.
async fn wait_goaway(send: &h2::client::SendRequest<Bytes>, within: Duration) -> Option<Instant> {
    let give_up = Instant::now() + within;
    while Instant::now() < give_up {
        if let Err(e) = send.clone().ready().await {
            assert!(e.is_go_away() && e.is_remote(), "{e:?}");
            assert_eq!(e.reason(), Some(h2::Reason::NO_ERROR), "{e:?}");
            return Some(Instant::now());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    None
}

/// `tavli_connections_closed_total{listener="grpc",reason}` once it reaches `want`
/// (at most 2 s), else its last value.
async fn closed(server: &TestServer, reason: &str, want: f64) -> f64 {
    let key = format!("tavli_connections_closed_total{{listener=\"grpc\",reason=\"{reason}\"}}");
    let mut n = 0.0;
    for _ in 0..40 {
        n = sample(&server.metrics_text().await, &key).unwrap_or(0.0);
        if n >= want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    n
}

/// Age 1 s, grace 2 s: the connection gets its GOAWAY after 0.9..1.1 s; a call in
/// flight then (1.5 s long) finishes OK within the grace; a call still running at
/// the grace's end is cut (the client sees the connection end) and its search stops
/// at once; the connection is counted as `max_age_grace`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goaway_at_the_age_then_calls_cut_after_the_grace() {
    let (server, eval) = server(1.0, 2.0, Duration::from_millis(1500)).await;
    let _ = server.channel().await; // the server is up
    let t0 = Instant::now();
    let send = h2_connect(server.grpc, None).await.unwrap();
    let path = "/tavli.v1.TavliEngine/Evaluate";
    let (s1, s2) = (send.clone(), send.clone());
    let addr = server.grpc;
    let finishing = tokio::spawn(async move {
        let r = h2_call(&s1, grpc_request(addr, path), evaluate(1)).await;
        (r, Instant::now())
    });
    let endless = tokio::spawn(async move {
        let r = h2_call(&s2, grpc_request(addr, path), evaluate(2)).await;
        (r, Instant::now())
    });

    let goaway = wait_goaway(&send, Duration::from_secs(3))
        .await
        .expect("a GOAWAY within 3 s");
    let age = goaway - t0;
    assert!(
        age >= Duration::from_millis(880) && age <= Duration::from_millis(1250),
        "GOAWAY after {age:?} (age 1 s ± 10 %)"
    );

    // Started before the GOAWAY, finished after it, within the grace: OK.
    let (r, done) = finishing.await.unwrap();
    let r = r.expect("the call within the grace is answered");
    assert_eq!(r.grpc_status(), Some("0"), "{r:?}");
    let answer = pb::EvaluateResponse::decode(r.messages()[0].clone()).unwrap();
    let start = position_id::from_id(PORTES_START).unwrap();
    let opts = EvalOptions {
        plies: 1,
        ..EvalOptions::default()
    };
    let want = Engine::load_default().evaluate(&start, opts).unwrap();
    assert_eq!(
        (answer.evaluator.as_str(), answer.plies, answer.equity),
        (want.evaluator.as_str(), 1, want.equity as f32)
    );
    assert!(
        done > goaway,
        "answered {:?} after the GOAWAY",
        done - goaway
    );

    // Still running when the grace ends: the connection is closed under it.
    let (r, cut) = endless.await.unwrap();
    assert!(r.is_err(), "the endless call ended with {r:?}");
    let after = cut - goaway;
    assert!(
        after >= Duration::from_millis(1900) && after <= Duration::from_millis(2500),
        "cut {after:?} after the GOAWAY (grace 2 s)"
    );
    // Its search stopped with the connection.
    let mut stopped = None;
    for _ in 0..100 {
        stopped = *eval.stopped.lock().unwrap();
        if stopped.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let stopped = stopped.expect("the cut call's search stopped");
    assert!(
        stopped >= goaway + Duration::from_millis(1900)
            && stopped <= cut + Duration::from_millis(500),
        "search stopped {:?} after the GOAWAY",
        stopped - goaway
    );
    assert_eq!(closed(&server, "max_age_grace", 1.0).await, 1.0);
    assert_eq!(closed(&server, "max_age", 0.0).await, 0.0);
    server.shutdown().await.unwrap();
}

/// A connection with no call in flight at its age closes right after the GOAWAY
/// (counted `max_age`); a tonic client calling all along reconnects by itself, and
/// every call that reached the server was answered ([`call_across_ages`]: a call
/// refused on the client as the GOAWAY arrives is retried once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_reconnect_across_ages() {
    let (server, _) = server(0.4, 1.0, Duration::ZERO).await;
    let c = server.client().await;
    let (answered, retried) = call_across_ages(Duration::from_millis(2200), || {
        let mut c = c.clone();
        async move {
            let r = c
                .get_starting_position(pb::GetStartingPositionRequest {
                    variant: pb::Variant::Portes as i32,
                    side_to_move: 0,
                })
                .await?
                .into_inner();
            assert_eq!(r.position.unwrap().position_id, PORTES_START);
            Ok(())
        }
    })
    .await;
    assert!(answered >= 50, "{answered} calls");
    eprintln!("{answered} calls answered, {retried} retried");
    // Every call the server started, it answered OK: none was lost to an age.
    let text = server.metrics_text().await;
    let key = |k: &str| {
        format!("{k}{{grpc_method=\"GetStartingPosition\",grpc_service=\"tavli.v1.TavliEngine\"}}")
    };
    assert_eq!(
        sample(&text, &key("grpc_server_started_total")),
        Some(answered as f64)
    );
    let ok = "grpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"GetStartingPosition\",grpc_service=\"tavli.v1.TavliEngine\"}";
    assert_eq!(sample(&text, ok), Some(answered as f64));
    // 2.2 s at 0.36..0.44 s per connection: at least 4 connections aged out.
    let aged = closed(&server, "max_age", 4.0).await;
    assert!(aged >= 4.0, "{aged} connections closed by age");
    assert_eq!(closed(&server, "max_age_grace", 0.0).await, 0.0);
    server.shutdown().await.unwrap();
}

/// SIGTERM while an aged connection is in its grace: the drain bounds the call (it
/// is cancelled when the drain ends, before the grace would) and serve returns in
/// time; with no age limit (`None`) a connection gets no GOAWAY.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_drain_bounds_a_connection_in_its_grace() {
    let eval = Arc::new(AgeEvaluator {
        engine: Engine::load_default(),
        slow: Duration::ZERO,
        stopped: Mutex::new(None),
    });
    let server = TestServer::start(ServerConfig {
        max_connection_age: Some(Duration::from_millis(500)),
        max_connection_age_grace: Some(Duration::from_secs(20)),
        drain: Duration::from_secs(1),
        evaluator: Some(eval.clone()),
        ..ServerConfig::default()
    })
    .await;
    let _ = server.channel().await;
    let send = h2_connect(server.grpc, None).await.unwrap();
    let s = send.clone();
    let addr = server.grpc;
    let endless = tokio::spawn(async move {
        h2_call(
            &s,
            grpc_request(addr, "/tavli.v1.TavliEngine/Evaluate"),
            evaluate(2),
        )
        .await
    });
    wait_goaway(&send, Duration::from_secs(2))
        .await
        .expect("a GOAWAY within 2 s");
    let t = Instant::now();
    server.shutdown().await.unwrap();
    let took = t.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_millis(2000),
        "serve returned {took:?} after the shutdown (drain 1 s, grace 20 s)"
    );
    // The drain's end cancels the search, which answers UNAVAILABLE.
    let r = endless
        .await
        .unwrap()
        .expect("an answer before the connection closes");
    assert_eq!(r.grpc_status(), Some("14"), "{r:?}");
    assert_eq!(
        r.grpc_message(),
        "the server is shutting down: evaluation stopped; retry"
    );
    assert!(eval.stopped.lock().unwrap().is_some());

    // No age limit: no GOAWAY.
    let server = TestServer::start(ServerConfig {
        max_connection_age: None,
        ..ServerConfig::default()
    })
    .await;
    let _ = server.channel().await;
    let send = h2_connect(server.grpc, None).await.unwrap();
    assert_eq!(wait_goaway(&send, Duration::from_millis(1500)).await, None);
    server.shutdown().await.unwrap();
}

/// `tavli_connections{listener="grpc"}` once it is `want` (within `within`), else
/// its last value.
async fn open_connections(server: &TestServer, want: f64, within: Duration) -> f64 {
    let give_up = Instant::now() + within;
    loop {
        let key = "tavli_connections{listener=\"grpc\"}";
        let n = sample(&server.metrics_text().await, key).unwrap_or(-1.0);
        if n == want || Instant::now() >= give_up {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A server of [`server`] with connections aged `age` (grace 5 s), once the
/// connection that saw it start is gone.
async fn server_with_no_connection(age: f64) -> TestServer {
    let (server, _) = server(age, 5.0, Duration::ZERO).await;
    drop(server.channel().await);
    let open = open_connections(&server, 0.0, Duration::from_secs(2)).await;
    assert_eq!(open, 0.0);
    server
}

/// The lingering close (docs/deploy.md, "Connection age"): a connection that ends
/// after its age's GOAWAY (no call in flight) has its write side shut, and the
/// server goes on reading what the client sends after that (a proxy that has not
/// yet seen the end), instead of answering it with a TCP reset that loses the end
/// of what the client had not yet read. A client that closes ends it at once; one
/// that does not is closed on after `LINGER_TIME` (1 s): its writes then fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aged_connection_lingers_until_the_client_closes_or_a_second() {
    let server = server_with_no_connection(0.3).await;

    // A client that closes once it has read the end.
    let mut tcp = TcpStream::connect(server.grpc).await.unwrap();
    let t = Instant::now();
    let kinds = tokio::time::timeout(Duration::from_secs(3), idle_h2_client(&mut tcp))
        .await
        .expect("the connection ends at its age")
        .unwrap();
    let ended = t.elapsed().as_millis();
    assert!(
        (260..1500).contains(&ended),
        "ended after {ended} ms (age 0.3 s ± 10 %)"
    );
    assert!(kinds.contains(&7), "a GOAWAY among the frames {kinds:?}");
    server_still_reads(&mut tcp)
        .await
        .expect("the server still reads after the end");
    assert_eq!(open_connections(&server, 1.0, Duration::ZERO).await, 1.0);
    tcp.shutdown().await.unwrap();
    let closed_at = Instant::now();
    assert_eq!(
        open_connections(&server, 0.0, Duration::from_secs(2)).await,
        0.0
    );
    let gone = closed_at.elapsed();
    assert!(
        gone < Duration::from_millis(600),
        "gone {gone:?} after the client closed: the lingering did not end with it"
    );
    let mut rest = Vec::new();
    assert_eq!(tcp.read_to_end(&mut rest).await.unwrap(), 0);

    // A client that never closes.
    let mut tcp = TcpStream::connect(server.grpc).await.unwrap();
    idle_h2_client(&mut tcp).await.unwrap();
    let end = Instant::now();
    server_still_reads(&mut tcp)
        .await
        .expect("the server still reads after the end");
    tokio::time::sleep_until((end + Duration::from_millis(1400)).into()).await;
    let e = server_still_reads(&mut tcp)
        .await
        .expect_err("closed on 1 s after the end");
    assert!(
        matches!(
            e.kind(),
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
        ),
        "{e:?}"
    );
    assert_eq!(
        open_connections(&server, 0.0, Duration::from_secs(1)).await,
        0.0
    );
    assert_eq!(closed(&server, "max_age", 2.0).await, 2.0);
    server.shutdown().await.unwrap();
}

/// The drain closes connections with the same lingering close: the server still
/// reads after the end, and returns as soon as the client has closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_drain_lingers_too() {
    let server = server_with_no_connection(60.0).await;
    let mut tcp = TcpStream::connect(server.grpc).await.unwrap();
    let client = tokio::spawn(async move {
        let kinds = idle_h2_client(&mut tcp).await;
        (tcp, kinds)
    });
    assert_eq!(
        open_connections(&server, 1.0, Duration::from_secs(2)).await,
        1.0
    );
    // Past its preface and SETTINGS.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let stopped = tokio::spawn(async move {
        server.shutdown().await.unwrap();
        Instant::now()
    });
    let (mut tcp, kinds) = tokio::time::timeout(Duration::from_secs(3), client)
        .await
        .expect("the drain ends the connection")
        .unwrap();
    let kinds = kinds.unwrap();
    assert!(kinds.contains(&7), "a GOAWAY among the frames {kinds:?}");
    server_still_reads(&mut tcp)
        .await
        .expect("the server still reads after the end");
    tcp.shutdown().await.unwrap();
    let closed_at = Instant::now();
    let stopped = stopped.await.unwrap();
    let after = stopped.saturating_duration_since(closed_at);
    assert!(
        after < Duration::from_millis(600),
        "serve returned {after:?} after the client closed"
    );
}
