//! Split rollouts through real servers (issue #34; as `tests/service_rollout.rs`:
//! ephemeral loopback ports, the generated tonic client): slices of a rollout run on
//! three servers (`RolloutRequest.range`) and merged by one of them
//! (`RolloutRequest.merge`) give, byte for byte, the answer of one server running all
//! the trials; so does the client helper `tavli_engine::replicas::split_rollout`, with
//! its progress. Bad ranges and bad partial results are `INVALID_ARGUMENT` naming the
//! field.

use prost::Message;
use std::net::SocketAddr;
use std::sync::Arc;
use tavli_engine::eval::engine::Engine;
use tavli_engine::replicas::{resolve, split_rollout, split_trials};
use tavli_engine::service::pb::tavli_engine_client::TavliEngineClient;
use tavli_engine::service::pb::{self, rollout_request};
use tavli_engine::service::ServerConfig;
use tonic::transport::Channel;
use tonic::Status;

mod common;
use common::{assert_invalid, TestServer, PORTES_START};

async fn start(config: ServerConfig) -> TestServer {
    TestServer::start(ServerConfig {
        evaluator: Some(Arc::new(Engine::load_default())),
        ..config
    })
    .await
}

fn req(id: &str, trials: u32) -> pb::RolloutRequest {
    pb::RolloutRequest {
        position: Some(rollout_request::Position::PositionId(id.into())),
        trials,
        seed: 21,
        truncation: 10,
        ..Default::default()
    }
}

/// The last update of a rollout.
async fn last(
    c: &mut TavliEngineClient<Channel>,
    r: pb::RolloutRequest,
) -> Result<pb::RolloutResponse, Status> {
    let mut stream = c.rollout(r).await?.into_inner();
    let mut last = None;
    while let Some(u) = stream.message().await? {
        last = Some(u);
    }
    Ok(last.expect("at least one update"))
}

fn range(first: u32, count: u32) -> Option<pb::TrialRange> {
    Some(pb::TrialRange { first, count })
}

/// Runs `r`'s trials `0..n` as the slices `bounds` on the servers in turn (at the
/// same time), merges them on the last server and checks the answer is byte for byte
/// the answer of the first server for the range `0..n`, and, `partial` aside, its
/// answer to the plain request.
async fn check_split(
    servers: &[TestServer],
    r: pb::RolloutRequest,
    bounds: &[u32],
) -> pb::RolloutResponse {
    let n = *bounds.last().unwrap();
    let mut clients = Vec::new();
    for s in servers {
        clients.push(s.client().await);
    }
    let slices = bounds.windows(2).enumerate().map(|(k, w)| {
        let mut c = clients[k % clients.len()].clone();
        let r = pb::RolloutRequest {
            trials: 0,
            range: range(w[0], w[1] - w[0]),
            ..r.clone()
        };
        async move { last(&mut c, r).await.unwrap() }
    });
    let slices = futures_join_all(slices.collect()).await;
    for (s, w) in slices.iter().zip(bounds.windows(2)) {
        let p = s
            .partial
            .as_ref()
            .expect("a slice's update carries its partial sums");
        assert_eq!(
            p.range,
            range(w[0], if s.trials == 0 { 0 } else { w[1] - w[0] })
        );
        assert!(s.done);
    }
    let mut partials: Vec<pb::RolloutPartial> =
        slices.into_iter().map(|s| s.partial.unwrap()).collect();
    partials.reverse();
    let merge = pb::RolloutRequest {
        trials: 0,
        merge: partials,
        ..r.clone()
    };
    let mut merger = clients.last().unwrap().clone();
    let merged = last(&mut merger, merge).await.unwrap();
    let mut one = clients[0].clone();
    let whole = last(
        &mut one,
        pb::RolloutRequest {
            trials: 0,
            range: range(0, n),
            ..r.clone()
        },
    )
    .await
    .unwrap();
    assert_eq!(
        merged.encode_to_vec(),
        whole.encode_to_vec(),
        "{merged:?}\n{whole:?}"
    );
    let plain = last(
        &mut one,
        pb::RolloutRequest {
            trials: n,
            ..r.clone()
        },
    )
    .await
    .unwrap();
    assert!(plain.partial.is_none());
    assert_eq!(
        pb::RolloutResponse {
            partial: None,
            ..merged.clone()
        }
        .encode_to_vec(),
        plain.encode_to_vec()
    );
    merged
}

/// Awaits every future of `v` concurrently, in order.
async fn futures_join_all<F: std::future::Future + Send + 'static>(v: Vec<F>) -> Vec<F::Output>
where
    F::Output: Send + 'static,
{
    let handles: Vec<_> = v.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slices_on_three_servers_merge_into_the_answer_of_one() {
    let servers = vec![
        start(ServerConfig::default()).await,
        start(ServerConfig::default()).await,
        start(ServerConfig::default()).await,
    ];
    // Portes from the start, uneven slices.
    let m = check_split(&servers, req(PORTES_START, 0), &[0, 4, 25, 40]).await;
    assert_eq!((m.trials, m.done), (40, true));
    let p = m.partial.unwrap();
    assert_eq!(
        (p.range, p.sums.len(), p.squares.len()),
        (range(0, 40), 6, 6)
    );
    assert!(m.equity_standard_error > 0.0);
    // With dice, played to the end.
    let mut r = req(PORTES_START, 0);
    r.dice = Some(pb::Dice { die1: 3, die2: 1 });
    r.truncation = 0;
    let m = check_split(&servers, r, &[0, 11, 12, 24]).await;
    assert_eq!(m.play.unwrap().notation, "8/5 6/5");
    // Plakoto, at 1 ply.
    let mut r = req("plakoto/w/24:15/1:15", 0);
    r.plies = 1;
    r.truncation = 4;
    check_split(&servers, r, &[0, 5, 9, 12]).await;
    // Exact answers: a first play that ends the game (every trial +2), a finished game.
    let mut r = req("portes/w/1:1,off:14/bar:1,6:14", 0);
    r.dice = Some(pb::Dice { die1: 2, die2: 1 });
    let m = check_split(&servers, r, &[0, 10, 20, 36]).await;
    assert_eq!((m.equity, m.trials), (2.0, 36));
    let m = check_split(&servers, req("portes/b/off:15/1:15", 0), &[0, 3, 6]).await;
    assert_eq!(
        (m.trials, m.equity, m.evaluator.as_str()),
        (0, -2.0, "game-over")
    );
    for s in servers {
        s.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_helper_fans_out_and_merges_with_progress() {
    let servers = vec![
        start(ServerConfig::default()).await,
        start(ServerConfig::default()).await,
    ];
    let addrs: Vec<SocketAddr> = servers.iter().map(|s| s.grpc).collect();
    // A list of addresses, and a name that resolves to several (as a headless Service).
    let spec = format!("{},{},{}", addrs[0], addrs[1], addrs[0]);
    assert_eq!(resolve(&spec).await.unwrap(), addrs);
    let port = addrs[1].port();
    assert!(resolve(&format!("localhost:{port}"))
        .await
        .unwrap()
        .contains(&addrs[1]));
    assert!(resolve("no-port-here").await.is_err());
    assert_eq!(
        split_trials(10, 3)
            .iter()
            .map(|r| (r.first, r.count))
            .collect::<Vec<_>>(),
        [(0, 4), (4, 3), (7, 3)]
    );
    assert_eq!(split_trials(2, 5).len(), 2);
    let r = req(PORTES_START, 30);
    let mut one = servers[0].client().await;
    let whole = last(
        &mut one,
        pb::RolloutRequest {
            trials: 0,
            range: range(0, 30),
            ..r.clone()
        },
    )
    .await
    .unwrap();
    // One slice per replica, then slices of 7 trials (5 slices over 2 replicas).
    for slice_trials in [0, 7] {
        let mut seen = Vec::new();
        let s = split_rollout(&addrs, &r, slice_trials, &mut |done, total| {
            seen.push((done, total))
        })
        .await
        .unwrap();
        assert_eq!(s.response.encode_to_vec(), whole.encode_to_vec());
        assert_eq!(s.slices.len(), if slice_trials == 0 { 2 } else { 5 });
        assert_eq!(s.slices.iter().map(|x| x.range.count).sum::<u32>(), 30);
        assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0), "{seen:?}");
        assert_eq!(seen.last(), Some(&(30, 30)));
        assert_eq!(s.merged_by, addrs[0]);
    }
    // A replica that is not there: the error names it.
    let gone: SocketAddr = "127.0.0.1:1".parse().unwrap();
    let e = split_rollout(&[addrs[0], gone], &r, 0, &mut |_, _| {})
        .await
        .unwrap_err();
    assert!(e.to_string().contains("127.0.0.1:1"), "{e}");
    for s in servers {
        s.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_ranges_and_partials_are_invalid_argument_naming_the_field() {
    let server = start(ServerConfig {
        max_rollout_trials: 100,
        ..ServerConfig::default()
    })
    .await;
    let mut c = server.client().await;
    let with = |first, count| pb::RolloutRequest {
        range: range(first, count),
        ..req(PORTES_START, 0)
    };
    let e = last(&mut c, with(0, 0)).await.unwrap_err();
    assert_invalid(&e, "range.count");
    let e = last(&mut c, with(100, 1)).await.unwrap_err();
    assert_invalid(&e, "range.first");
    assert!(e.message().contains("0..100"), "{e:?}");
    let e = last(&mut c, with(90, 11)).await.unwrap_err();
    assert_invalid(&e, "range.count");
    assert!(e.message().contains("90..101"), "{e:?}");
    let e = last(&mut c, with(u32::MAX, u32::MAX)).await.unwrap_err();
    assert_invalid(&e, "range.first");
    let e = last(
        &mut c,
        pb::RolloutRequest {
            trials: 10,
            ..with(0, 10)
        },
    )
    .await
    .unwrap_err();
    assert_invalid(&e, "trials");
    // Good partials to spoil.
    let a = last(&mut c, with(0, 6)).await.unwrap().partial.unwrap();
    let b = last(&mut c, with(6, 4)).await.unwrap().partial.unwrap();
    let merge = |parts: Vec<pb::RolloutPartial>| pb::RolloutRequest {
        merge: parts,
        ..req(PORTES_START, 0)
    };
    let ok = last(&mut c, merge(vec![b.clone(), a.clone()]))
        .await
        .unwrap();
    assert_eq!((ok.trials, ok.done), (10, true));
    let e = last(
        &mut c,
        pb::RolloutRequest {
            range: range(0, 5),
            ..merge(vec![a.clone()])
        },
    )
    .await
    .unwrap_err();
    assert_invalid(&e, "range");
    let e = last(
        &mut c,
        pb::RolloutRequest {
            trials: 5,
            ..merge(vec![a.clone()])
        },
    )
    .await
    .unwrap_err();
    assert_invalid(&e, "trials");
    let e = last(&mut c, merge(vec![a.clone(); 1001]))
        .await
        .unwrap_err();
    assert_invalid(&e, "merge");
    let mut bad = b.clone();
    bad.range = None;
    assert_invalid(
        &last(&mut c, merge(vec![a.clone(), bad])).await.unwrap_err(),
        "merge[1].range",
    );
    let mut bad = b.clone();
    bad.sums.pop();
    assert_invalid(
        &last(&mut c, merge(vec![a.clone(), bad])).await.unwrap_err(),
        "merge[1].sums",
    );
    let mut bad = b.clone();
    bad.sums[2] = vec![0; 17];
    assert_invalid(
        &last(&mut c, merge(vec![a.clone(), bad])).await.unwrap_err(),
        "merge[1].sums[2]",
    );
    let mut bad = b.clone();
    bad.squares[5] = vec![1; 33];
    assert_invalid(
        &last(&mut c, merge(vec![a.clone(), bad])).await.unwrap_err(),
        "merge[1].squares[5]",
    );
    // A gap (6..10 moved to 7..11), another rollout (another seed), a forged square.
    let mut bad = b.clone();
    bad.range = range(7, 4);
    assert_invalid(
        &last(&mut c, merge(vec![a.clone(), bad])).await.unwrap_err(),
        "merge[1].range.first",
    );
    let e = last(
        &mut c,
        pb::RolloutRequest {
            seed: 22,
            ..merge(vec![a.clone(), b.clone()])
        },
    )
    .await
    .unwrap_err();
    assert_invalid(&e, "merge[0].key");
    let mut bad = b.clone();
    bad.squares[0] = vec![];
    assert_invalid(
        &last(&mut c, merge(vec![a, bad])).await.unwrap_err(),
        "merge[1].squares",
    );
    server.shutdown().await.unwrap();
}
