//! The attack suite of issue #11, quick part: each case of the hostile-client review
//! re-run against the release server binary (its own process, short timeouts so that
//! each case takes a few seconds). During and after each attack another client's
//! `GetStartingPosition` (on a new connection) must answer within 100 ms, the
//! server's RSS must stay under the manifest's 256 MiB, and the server must exit
//! within its drain time + 1 s after SIGTERM. `scripts/attack.sh` runs the same cases
//! at the scale (`examples/attack.rs`).
//!
//! The cases run one at a time (a CPU-bound attack would slow the probes of another).

mod attack;
mod common;

use attack::*;
use std::path::Path;
use std::time::{Duration, Instant};
use tavli_engine::service::pb;

static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_tavli-engine"))
}

/// Short limits for quick cases (seconds): drain 1, body 1, send 1.5, handshake 1,
/// idle 3.
fn quick_args(extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "--drain-seconds",
        "1",
        "--request-body-timeout-seconds",
        "1",
        "--send-timeout-seconds",
        "1.5",
        "--handshake-timeout-seconds",
        "1",
        "--idle-timeout-seconds",
        "3",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// SIGTERM: exit 0 within the drain time (1 s) + 1 s.
#[track_caller]
fn assert_quick_exit(server: Server) {
    let (took, code) = server.terminate();
    assert_eq!(code, Some(0), "exit code after SIGTERM");
    assert!(
        took < Duration::from_secs(2),
        "exit took {took:?} (drain 1 s)"
    );
}

/// `GET /metrics` over plain HTTP/1.1.
async fn metrics_text(server: &Server) -> String {
    common::metrics_text(server.metrics).await
}

/// A sample's value, 0 when the metrics text has none.
fn sample(text: &str, line_prefix: &str) -> f64 {
    common::sample(text, line_prefix).unwrap_or(0.0)
}

/// Case 1: streams with HEADERS and no DATA take no permit (it is taken once the body
/// has arrived), are limited to 100 per connection, and are answered
/// DEADLINE_EXCEEDED when the request-body timeout passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case1_header_only_streams_hold_no_permit() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = Server::start(bin(), &quick_args(&["--concurrency-limit", "64"]), None);
    let monitor = Monitor::start(&server);
    let mut held = open_streams(
        server.grpc,
        "/tavli.v1.TavliEngine/GetStartingPosition",
        3,
        100,
        None,
        None,
    )
    .await
    .unwrap();
    assert_eq!(
        held.advertised,
        vec![100, 100, 100],
        "SETTINGS_MAX_CONCURRENT_STREAMS"
    );
    assert_eq!(held.opened(), 300);
    tokio::time::sleep(Duration::from_millis(600)).await;
    // The body timeout (1 s) answers every one of them.
    let statuses = held.statuses(Duration::from_secs(3)).await;
    assert!(statuses.iter().all(|s| s == "4"), "{statuses:?}");
    drop(held);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let w = monitor.stop().await;
    eprintln!("case1_header_only_streams_hold_no_permit: {}", w.summary());
    w.assert_ok("header-only streams");
    let text = metrics_text(&server).await;
    assert_eq!(
        sample(&text, "tavli_refused_total{reason=\"body_timeout\"}"),
        300.0
    );
    assert_eq!(
        sample(&text, "tavli_refused_total{reason=\"concurrency\"}"),
        0.0
    );
    assert_quick_exit(server);
}

/// Case 2: a client that cancels its `Evaluate` stops the search: after the last
/// cancel the server uses next to no CPU and has few threads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case2_cancelled_searches_stop() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = Server::start(bin(), &quick_args(&[]), None);
    let monitor = Monitor::start(&server);
    let cancelled = evaluate_and_cancel(
        server.grpc,
        16,
        Duration::from_millis(500),
        evaluate_request(SPREAD, 3, 3, 2),
    )
    .await
    .unwrap();
    assert_eq!(cancelled, 16);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cpu = server.cpu_seconds();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = server.cpu_seconds() - cpu;
    let w = monitor.stop().await;
    eprintln!("case2_cancelled_searches_stop: {}", w.summary());
    w.assert_ok("cancelled searches");
    assert!(
        after < 0.25,
        "{after:.2} s of CPU in the second after the cancels"
    );
    assert!(w.max_threads < 40, "{} threads", w.max_threads);
    assert_quick_exit(server);
}

/// Case 3: clients with a zero receive window get no more than 8 answers computed
/// per connection (a connection's RPC slot returns when its answer is written), hold
/// bounded memory, and their connections are closed after the send timeout, which
/// frees it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case3_zero_window_clients_hold_bounded_memory() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = Server::start(bin(), &quick_args(&[]), None);
    let monitor = Monitor::start(&server);
    let mut held = open_streams(
        server.grpc,
        "/tavli.v1.TavliEngine/ListLegalPlays",
        3,
        100,
        Some(list_request(SPREAD, 3, 3)),
        Some(0),
    )
    .await
    .unwrap();
    assert_eq!(held.opened(), 300);
    let statuses = held.statuses(Duration::from_millis(500)).await;
    let answered = statuses.iter().filter(|s| *s == "200").count();
    let waiting = statuses.iter().filter(|s| *s == "none").count();
    assert_eq!((answered, waiting), (24, 276), "{statuses:?}");
    let during = metrics_text(&server).await;
    // 24 answers of 572,280 bytes (1896 plays, plus the 5-byte gRPC prefix) wait to
    // be written, and 276 requests wait for a slot.
    let buffered = sample(&during, "tavli_buffered_bytes");
    let request = list_request(SPREAD, 3, 3).len() as f64;
    assert_eq!(
        buffered,
        24.0 * 572_285.0 + 276.0 * request,
        "bytes buffered"
    );
    // The send timeout (1.5 s) closes the three connections.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let after = metrics_text(&server).await;
    assert_eq!(
        sample(
            &after,
            "tavli_connections_closed_total{listener=\"grpc\",reason=\"send_timeout\"}"
        ),
        3.0
    );
    assert_eq!(sample(&after, "tavli_buffered_bytes"), 0.0);
    drop(held);
    let w = monitor.stop().await;
    eprintln!(
        "case3_zero_window_clients_hold_bounded_memory: {}",
        w.summary()
    );
    w.assert_ok("zero-window clients");
    assert_quick_exit(server);
}

/// Case 4: every connection is told its stream limit (100), and the streams that the
/// engine's limit does not count have their own: health Watch streams a limit per
/// connection (`--connection-watch-limit`), reflection streams one in all
/// (`--streaming-limit`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case4_streams_are_limited() {
    let _one = ONE_AT_A_TIME.lock().await;
    let args = quick_args(&["--streaming-limit", "8", "--connection-watch-limit", "3"]);
    let server = Server::start(bin(), &args, None);
    let monitor = Monitor::start(&server);
    let watch = attack::grpc_frame(&tonic_health::pb::HealthCheckRequest {
        service: String::new(),
    });
    let mut watches = open_streams(
        server.grpc,
        "/grpc.health.v1.Health/Watch",
        2,
        20,
        Some(watch),
        None,
    )
    .await
    .unwrap();
    assert_eq!(watches.advertised, vec![100, 100]);
    let statuses = watches.statuses(Duration::from_secs(1)).await;
    let open = statuses.iter().filter(|s| *s == "200").count();
    let refused = statuses.iter().filter(|s| *s == "8").count();
    assert_eq!((open, refused), (6, 34), "{statuses:?}");
    let mut reflection = open_streams(
        server.grpc,
        "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        2,
        20,
        None,
        None,
    )
    .await
    .unwrap();
    let statuses = reflection.statuses(Duration::from_secs(1)).await;
    let open = statuses.iter().filter(|s| *s == "200").count();
    let refused = statuses.iter().filter(|s| *s == "8").count();
    assert_eq!((open, refused), (8, 32), "{statuses:?}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop((watches, reflection));
    let w = monitor.stop().await;
    eprintln!("case4_streams_are_limited: {}", w.summary());
    w.assert_ok("streams");
    assert_quick_exit(server);
}

/// Case 5: bare TCP connections are closed after the handshake timeout; at the
/// connection limit (here set by a descriptor limit of 256) new clients get in by
/// closing the oldest of them, without a busy loop; the metrics port too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case5_idle_connections_are_closed() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = Server::start(bin(), &quick_args(&[]), Some(256));
    let fds_before = server.fds();
    let monitor = Monitor::start(&server);
    let (mut bare, slowest) = bare_connections(server.grpc, 400).await;
    assert_eq!(bare.len(), 400, "slowest connect {slowest:?}");
    eprintln!("case5: slowest of 400 connects {slowest:?}");
    let (mut bare_metrics, _) = bare_connections(server.metrics, 40).await;
    let cpu = server.cpu_seconds();
    // The metrics port still answers (an idle connection made room).
    let text = metrics_text(&server).await;
    assert!(text.contains("tavli_connections"), "{text}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let busy = server.cpu_seconds() - cpu;
    assert_eq!(closed_by_server(&mut bare).await, 400);
    assert_eq!(
        closed_by_server(&mut bare_metrics).await,
        bare_metrics.len()
    );
    let w = monitor.stop().await;
    eprintln!("case5_idle_connections_are_closed: {}", w.summary());
    w.assert_ok("bare connections");
    assert!(busy < 0.5, "{busy:.2} s of CPU in 1.5 s: a busy loop?");
    assert!(
        server.fds() <= fds_before + 4,
        "{} descriptors open, {fds_before} before",
        server.fds()
    );
    assert!(w.max_fds <= 256, "{} descriptors", w.max_fds);
    assert!(
        server.log().contains("connection limit reached"),
        "{}",
        server.log()
    );
    let text = metrics_text(&server).await;
    assert!(
        sample(
            &text,
            "tavli_connections_closed_total{listener=\"grpc\",reason=\"evicted\"}"
        ) > 0.0
    );
    assert!(
        sample(
            &text,
            "tavli_connections_closed_total{listener=\"grpc\",reason=\"handshake_timeout\"}"
        ) > 0.0
    );
    assert_quick_exit(server);
}

/// Case 6: SIGTERM with searches running: they are cancelled at the end of the drain
/// and the server exits within drain + 1 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case6_shutdown_cancels_running_searches() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = Server::start(bin(), &quick_args(&[]), None);
    let mut c = client(server.grpc).await.unwrap();
    let calls: Vec<_> = (0..4)
        .map(|_| {
            let mut c = c.clone();
            // Searches that outlast the drain of 1 s, however the work is scheduled.
            tokio::spawn(async move { c.evaluate(evaluate_request(PORTES_SPREAD, 2, 1, 2)).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let t = Instant::now();
    assert_quick_exit(server);
    for call in calls {
        let e = call.await.unwrap().unwrap_err();
        assert!(
            matches!(
                e.code(),
                tonic::Code::Cancelled | tonic::Code::Unavailable | tonic::Code::Unknown
            ),
            "{e:?}"
        );
    }
    assert!(t.elapsed() < Duration::from_secs(3));
    // The client sees the server gone.
    assert!(c
        .get_starting_position(pb::GetStartingPositionRequest::default())
        .await
        .is_err());
}

/// Case 7: many deep searches at once: those admitted finish within their deadline,
/// the others are refused at once, and cheap calls stay fast.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case7_deep_searches_are_admitted_as_fast_as_served() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = Server::start(bin(), &quick_args(&[]), None);
    let monitor = Monitor::start(&server);
    let o = concurrent_evaluate(
        server.grpc,
        48,
        4,
        Duration::from_secs(3),
        evaluate_request(PORTES_START, 6, 6, 2),
    )
    .await
    .unwrap();
    let w = monitor.stop().await;
    eprintln!(
        "case7_deep_searches_are_admitted_as_fast_as_served: {}",
        w.summary()
    );
    w.assert_ok("deep searches");
    assert!(o.other.is_empty(), "{o:?}");
    assert_eq!(
        o.ok + o.resource_exhausted + o.deadline_exceeded,
        48,
        "{o:?}"
    );
    assert!(o.ok >= 2, "{o:?}");
    // The first searches have no estimate yet: at most the first round may time out.
    assert!(o.deadline_exceeded <= 2, "{o:?}");
    assert!(o.max_ok < Duration::from_secs(3), "{o:?}");
    assert_quick_exit(server);
}

/// Case 8: bad settings are refused at start-up with a short message and exit
/// status 2 (no panic).
#[test]
fn case8_bad_settings_exit_2() {
    for args in [
        &["--request-timeout-seconds", "inf"][..],
        &["--request-timeout-seconds=-1"],
        &["--request-timeout-seconds", "NaN"],
        &["--request-timeout-seconds", "1e300"],
        &["--max-message-bytes", "0"],
        &["--concurrency-limit", "0"],
        &["--max-connections", "0"],
        &["--max-concurrent-streams", "0"],
        &["--streaming-limit", "0"],
        &["--connection-watch-limit", "0"],
        &["--deep-search-limit", "0"],
        &["--metrics-max-connections", "0"],
        &["--max-buffered-bytes", "1000"],
        &["--max-connection-buffered-bytes", "1000"],
        &["--send-timeout-seconds", "0"],
        &["--idle-timeout-seconds=-3"],
        &["--max-connection-age-seconds=-1"],
        &["--max-connection-age-grace-seconds", "inf"],
        &["--handshake-timeout-seconds", "nan"],
        &["--keepalive-interval-seconds", "0"],
        &["--request-body-timeout-seconds", "inf"],
        &["--drain-seconds", "100000"],
    ] {
        let out = std::process::Command::new(bin())
            .args([
                "--grpc-addr",
                "127.0.0.1:0",
                "--metrics-addr",
                "127.0.0.1:0",
            ])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(err.len() < 600, "{args:?}: {err}");
        let flag = args[0].split('=').next().unwrap();
        assert!(err.contains(flag), "{args:?}: {err}");
    }
    // The environment is checked the same way.
    let out = std::process::Command::new(bin())
        .env("TAVLI_REQUEST_TIMEOUT_SECONDS", "-1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    // One example word for word.
    let out = std::process::Command::new(bin())
        .args(["--concurrency-limit", "0"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "tavli-engine: --concurrency-limit must be 1..=100000, got 0\n"
    );
}

/// Case 8: input edges over the wire: contradictory pins and a point with thousands
/// of leading zeros are short INVALID_ARGUMENTs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case8_bad_positions_are_short_invalid_arguments() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = Server::start(bin(), &quick_args(&[]), None);
    let mut c = client(server.grpc).await.unwrap();
    let zeros = "0".repeat(5000);
    for (id, want) in [
        (
            "plakoto/w/3:1p,24:14/1:14,3:1p".to_string(),
            "position.position_id: black: \"3:1p\": point 3 is already marked pinned for white; \
             only one colour can be pinned on a point"
                .to_string(),
        ),
        (
            format!("portes/w/13:1,{zeros}13:1/1:15"),
            format!(
                "position.position_id: white: \"{}\"…: point 13 listed twice",
                "0".repeat(40)
            ),
        ),
    ] {
        let e = c
            .list_legal_plays(pb::ListLegalPlaysRequest {
                position: Some(pb::list_legal_plays_request::Position::PositionId(id)),
                dice: Some(pb::Dice { die1: 3, die2: 1 }),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
        assert_eq!(e.message(), want);
    }
    assert_quick_exit(server);
}

/// A match record of `games` games (a multiple of 3; about 1.5 kB a game): the three
/// games of `tests/data/tavli/tavli-3p-match.mat` again and again (numbers and scores
/// carried on) in a money session, its last play made illegal. Returns the text and the line number of that play.
fn long_record_with_last_play_illegal(games: usize) -> (String, usize) {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/tavli/tavli-3p-match.mat"
    ))
    .unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].trim_start().starts_with("Game "))
        .collect();
    assert_eq!(starts.len(), 3);
    // Game 1: white wins 2; games 2 and 3: black wins 2.
    let wins = [(2, 0), (0, 2), (0, 2)];
    let mut out = vec![" 0 point match".to_string(), String::new()];
    let (mut white, mut black) = (0, 0);
    for g in 0..games {
        let k = g % 3;
        let end = starts.get(k + 1).copied().unwrap_or(lines.len());
        let block = &lines[starts[k]..end];
        let variant = block[0].trim_start().splitn(3, ' ').nth(2).unwrap();
        out.push(format!(" Game {} {variant}", g + 1));
        out.push(format!(
            " eleni : {white}                      nikos : {black}"
        ));
        out.extend(block[2..].iter().map(|l| l.to_string()));
        white += wins[k].0;
        black += wins[k].1;
    }
    // The last play of the last game (Fevga): black's 3-6, whose only play is 1/off.
    let last = out
        .iter()
        .rposition(|l| l.trim_start().starts_with("54) "))
        .unwrap();
    assert_eq!(out[last], " 54) 11: 17/16(2) 17/16/15       36: 1/off");
    out[last] = " 54) 11: 17/16(2) 17/16/15       36: 24/18/15".to_string();
    (out.join("\n") + "\n", last + 1)
}

/// Case 9: long `AnalyzeGame` records (159 games, about 9,650 turns, near the
/// record limit `MAX_TURNS`) are read and replayed on the blocking pool: more of them
/// at once than the server has async workers (here 2) must not hold up other
/// clients' calls. Each is answered with its INVALID_ARGUMENT; a record over the
/// limit (2,001 games, 3 MB) is refused before it is replayed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case9_long_records_do_not_hold_up_other_calls() {
    let _one = ONE_AT_A_TIME.lock().await;
    let (text, line) = long_record_with_last_play_illegal(159);
    let (too_long, _) = long_record_with_last_play_illegal(2_001);
    assert!(
        (3_000_000..4_194_304).contains(&too_long.len()),
        "{} bytes",
        too_long.len()
    );
    let server = Server::start_with_env(
        bin(),
        &quick_args(&[]),
        None,
        &[("TOKIO_WORKER_THREADS", "2")],
    );
    let monitor = Monitor::start(&server);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let (addr, text) = (server.grpc, text.clone());
            tokio::spawn(async move {
                let mut c = client(addr).await.unwrap();
                c.analyze_game(pb::AnalyzeGameRequest {
                    record: Some(pb::analyze_game_request::Record::Text(text)),
                    ..Default::default()
                })
                .await
                .map(|_| ())
                .unwrap_err()
            })
        })
        .collect();
    let want = format!(
        "text: line {line}, game 159, move 54 (right, black): \"24/18/15\" is not a legal \
         play for 3-6; legal plays (notation, mover's own numbering): 1/off"
    );
    for call in calls {
        let e = call.await.unwrap();
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
        assert_eq!(e.message(), want);
    }
    let e = client(server.grpc)
        .await
        .unwrap()
        .analyze_game(pb::AnalyzeGameRequest {
            record: Some(pb::analyze_game_request::Record::Text(too_long)),
            ..Default::default()
        })
        .await
        .map(|_| ())
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
    assert_eq!(
        e.message(),
        "text: the record has 2001 games; at most 1000 per record"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    let w = monitor.stop().await;
    eprintln!(
        "case9_long_records_do_not_hold_up_other_calls: {}",
        w.summary()
    );
    w.assert_ok("long records");
    assert_quick_exit(server);
}
