//! The server's log lines under the default filter (`info`, docs/operations.md "Logs
//! and traces"): a burst of ordinary calls writes no line per call; a call the
//! server refused or stopped, and a slow call, write one each. One test in its own
//! binary: it installs the process's global subscriber.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tavli_engine::eval::engine::Engine;
use tavli_engine::service::pb;
use tavli_engine::service::ServerConfig;
use tavli_engine::telemetry::DEFAULT_LOG_FILTER;
use tonic::Code;

mod common;
use common::{TestServer, PORTES_START};

/// The log output, shared with the subscriber's writer.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Capture {
    /// The `rpc finished` lines written so far, emptying the capture.
    fn take_calls(&self) -> Vec<String> {
        let bytes = std::mem::take(&mut *self.0.lock().unwrap());
        String::from_utf8(bytes)
            .unwrap()
            .lines()
            .filter(|l| l.contains("rpc finished"))
            .map(str::to_string)
            .collect()
    }

    /// Exactly one `rpc finished` line since the last look, at `INFO`, with each of
    /// `fields`.
    fn one_info_line(&self, fields: &[&str]) {
        let lines = self.take_calls();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains(" INFO "), "{}", lines[0]);
        for f in fields {
            assert!(lines[0].contains(f), "{f}: {}", lines[0]);
        }
    }
}

fn evaluate(plies: u32) -> pb::EvaluateRequest {
    pb::EvaluateRequest {
        match_state: None,
        position: Some(pb::evaluate_request::Position::PositionId(
            PORTES_START.into(),
        )),
        dice: Some(pb::Dice { die1: 3, die2: 3 }),
        plies,
        grade: None,
    }
}

#[tokio::test]
async fn only_errors_of_the_server_and_slow_calls_are_logged_by_default() {
    let capture = Capture::default();
    let writer = capture.clone();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(DEFAULT_LOG_FILTER))
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .init();
    let server = TestServer::start(ServerConfig {
        evaluator: Some(Arc::new(Engine::load_default())),
        // Evaluate (and every short RPC) has 1 ms; EvaluateBatch the default 600 s.
        request_timeout: Some(Duration::from_millis(1)),
        log_slow_calls: Some(Duration::from_millis(300)),
        ..ServerConfig::default()
    })
    .await;
    let mut c = server.client().await;

    // A burst of ordinary calls, an expected client error among them.
    let legal = |die1| pb::ListLegalPlaysRequest {
        position: Some(pb::list_legal_plays_request::Position::PositionId(
            PORTES_START.into(),
        )),
        dice: Some(pb::Dice { die1, die2: 5 }),
        detail: 0,
    };
    for _ in 0..40 {
        c.get_starting_position(pb::GetStartingPositionRequest {
            variant: pb::Variant::Fevga as i32,
            side_to_move: 0,
        })
        .await
        .unwrap();
        c.list_legal_plays(legal(6)).await.unwrap();
    }
    let bad = c.list_legal_plays(legal(7)).await.unwrap_err();
    assert_eq!(bad.code(), Code::InvalidArgument);
    assert_eq!(capture.take_calls(), Vec::<String>::new());

    // The server's limit stops a 2-ply search: one INFO line.
    let e = c.evaluate(evaluate(2)).await.unwrap_err();
    assert_eq!(e.code(), Code::DeadlineExceeded, "{e:?}");
    capture.one_info_line(&["grpc.method=\"Evaluate\"", "grpc.code=\"DeadlineExceeded\""]);

    // A slow call that succeeds: 2-ply rankings of 3-3 from the Portes start (about
    // 0.4 s each) in a batch: one INFO line, marked slow.
    let batch = c
        .evaluate_batch(pb::EvaluateBatchRequest {
            requests: vec![evaluate(2); 2],
        })
        .await
        .unwrap();
    assert_eq!(batch.into_inner().responses.len(), 2);
    capture.one_info_line(&[
        "grpc.method=\"EvaluateBatch\"",
        "grpc.code=\"OK\"",
        "slow=true",
    ]);
    server.shutdown().await.unwrap();
}
