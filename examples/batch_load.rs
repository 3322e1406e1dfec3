//! Positions per second of `EvaluateBatch` against single `Evaluate` calls, side by
//! side in one run on one server (docs/performance.md, "EvaluateBatch against single
//! Evaluate calls").
//!
//! ```text
//! cargo run --release --example batch_load -- [--rounds 7] [--addr 127.0.0.1:21000] [--dice]
//! ```
//!
//! Starts the server (the engine's evaluator, default limits but a message limit of
//! 8 MiB, for the answers with dice, and no connection age) in this process on
//! `--addr` (loopback), builds 1,000 positions of seeded random-play games (Portes,
//! Plakoto and Fevga), then, in each round and in this order: one `EvaluateBatch` of
//! the 1,000 at 0 ply; the same 1,000 as single `Evaluate` calls one after another
//! on one connection; and as single calls with 16 in flight. `--dice` gives every
//! request a roll (each answer ranks that roll's plays). Prints each round and the
//! median of each way, in positions per second, and the ratios. The answers are
//! checked equal (batch item `i` and single call `i`) in the first round.

use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tavli_engine::rules::{legal_plays, position_id, Dice, Position, Side, Variant};
use tavli_engine::service::pb::evaluate_request::Position as P;
use tavli_engine::service::pb::tavli_engine_client::TavliEngineClient;
use tavli_engine::service::pb::{self, EvaluateBatchRequest, EvaluateRequest};
use tavli_engine::service::{serve, ServerConfig};
use tonic::transport::Channel;

const N: usize = 1000;

fn requests(with_dice: bool) -> Vec<EvaluateRequest> {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut out = Vec::with_capacity(N);
    'games: loop {
        for variant in Variant::ALL {
            let mut pos = Position::start(variant, Side::White);
            while pos.game_over().is_none() {
                let d = Dice::new(rng.random_range(1..=6), rng.random_range(1..=6)).unwrap();
                out.push(EvaluateRequest {
                    match_state: None,
                    position: Some(P::PositionId(position_id::to_id(&pos))),
                    dice: with_dice.then_some(pb::Dice {
                        die1: d.die1() as u32,
                        die2: d.die2() as u32,
                    }),
                    plies: 0,
                    grade: None,
                });
                if out.len() == N {
                    break 'games;
                }
                let plays = legal_plays(&pos, d).unwrap();
                pos = plays[rng.random_range(0..plays.len())].position;
            }
        }
    }
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let rounds: usize = value("--rounds").map_or(Ok(7), |v| v.parse())?;
    let addr = value("--addr").unwrap_or_else(|| "127.0.0.1:21000".into());
    let with_dice = args.iter().any(|a| a == "--dice");
    let ip: std::net::SocketAddr = addr.parse()?;
    if !ip.ip().is_loopback() {
        return Err("--addr must be a loopback address".into());
    }
    let grpc = tokio::net::TcpListener::bind(ip).await?;
    let metrics = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let config = ServerConfig {
        evaluator: Some(std::sync::Arc::new(
            tavli_engine::eval::engine::Engine::load_default(),
        )),
        // 1,000 answers with their ranked plays are about 4.5 MB, over the default
        // 4 MiB (the default connection buffer is 16 MiB, room for it).
        max_message_bytes: 8 << 20,
        // One connection measured for the whole run: no GOAWAY at an age, which
        // would cost a reconnection, and make tonic fail a call sent as it arrives
        // (CANCELLED; docs/deploy.md, "Connection age").
        max_connection_age: None,
        ..ServerConfig::default()
    };
    config.validate()?;
    let server = tokio::spawn(serve(config, grpc, metrics, std::future::pending()));
    let channel = loop {
        if server.is_finished() {
            return Err(format!("the server stopped: {:?}", server.await).into());
        }
        match Channel::from_shared(format!("http://{addr}"))?
            .connect()
            .await
        {
            Ok(c) => break c,
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    };
    let client = TavliEngineClient::new(channel)
        .max_decoding_message_size(64 << 20)
        .max_encoding_message_size(64 << 20);
    let reqs = requests(with_dice);
    println!(
        "{N} positions at 0 ply{}, {rounds} rounds; positions per second:",
        if with_dice { ", each with a roll" } else { "" }
    );
    println!("round  batch      single     single x16");
    let (mut batch, mut single, mut concurrent) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let mut c = client.clone();
        let t = Instant::now();
        let answer = c
            .evaluate_batch(EvaluateBatchRequest {
                requests: reqs.clone(),
            })
            .await?
            .into_inner();
        batch.push(N as f64 / t.elapsed().as_secs_f64());
        assert_eq!(answer.responses.len(), N);

        let t = Instant::now();
        let mut singles = Vec::with_capacity(N);
        for r in &reqs {
            singles.push(c.evaluate(r.clone()).await?.into_inner());
        }
        single.push(N as f64 / t.elapsed().as_secs_f64());
        if round == 0 {
            assert_eq!(answer.responses, singles, "batch answers = single answers");
        }

        let t = Instant::now();
        let mut set = tokio::task::JoinSet::new();
        for lane in 0..16 {
            let (mut c, reqs) = (client.clone(), reqs.clone());
            set.spawn(async move {
                for r in reqs.into_iter().skip(lane).step_by(16) {
                    c.evaluate(r).await?;
                }
                Ok::<(), tonic::Status>(())
            });
        }
        while let Some(r) = set.join_next().await {
            r??;
        }
        concurrent.push(N as f64 / t.elapsed().as_secs_f64());
        println!(
            "{:>5}  {:>9.0}  {:>9.0}  {:>9.0}",
            round + 1,
            batch[round],
            single[round],
            concurrent[round]
        );
    }
    let (b, s, c) = (median(batch), median(single), median(concurrent));
    println!("median {b:>9.0}  {s:>9.0}  {c:>9.0}");
    println!(
        "batch / single: {:.1}x; batch / single x16: {:.1}x",
        b / s,
        b / c
    );
    Ok(())
}
