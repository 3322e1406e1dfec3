//! The ListLegalPlays handler without the transport: request bytes → rules →
//! response bytes, for `PLAY_DETAIL_FULL` (the default) and `PLAY_DETAIL_COMPACT`,
//! two ways: `wire`, what the server does (`list_legal_plays_encoded`, the bytes
//! written straight from the plays), and `prost` (`list_legal_plays`, the message
//! built and then encoded by prost: what the CLI does). Positions: 200 per variant from seeded random-play games,
//! each with a seeded roll, sent as Position IDs. Compare with the server CPU per
//! call of `scripts/load.sh` to see the share of HTTP/2, TCP and scheduling
//! (docs/performance.md, "Service load"). Run: `cargo bench --bench service`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use prost::Message;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::hint::black_box;
use tavli_engine::corpus::{random_positions, roll};
use tavli_engine::rules::{position_id, Variant};
use tavli_engine::service::{pb, TavliEngineService};

/// Encoded requests: positions of seeded random-play games as Position IDs, seeded rolls.
fn requests(variant: Variant, detail: pb::PlayDetail) -> Vec<Vec<u8>> {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    random_positions(variant, 3, 200)
        .iter()
        .filter(|p| p.game_over().is_none())
        .map(|p| {
            let d = roll(&mut rng);
            pb::ListLegalPlaysRequest {
                position: Some(pb::list_legal_plays_request::Position::PositionId(
                    position_id::to_id(p),
                )),
                dice: Some(pb::Dice {
                    die1: d.die1() as u32,
                    die2: d.die2() as u32,
                }),
                detail: detail as i32,
            }
            .encode_to_vec()
        })
        .collect()
}

fn list_legal_plays(c: &mut Criterion) {
    let svc = TavliEngineService::new(None, 0, None);
    let mut g = c.benchmark_group("list_legal_plays_handler");
    for v in Variant::ALL {
        for (name, detail) in [
            ("full", pb::PlayDetail::Full),
            ("compact", pb::PlayDetail::Compact),
        ] {
            let reqs = requests(v, detail);
            let bytes: usize = reqs
                .iter()
                .map(|r| {
                    let req = pb::ListLegalPlaysRequest::decode(&r[..]).unwrap();
                    svc.list_legal_plays(&req).unwrap().encoded_len()
                })
                .sum();
            println!(
                "{} {name}: {} requests, {:.0} response bytes per call",
                v.name(),
                reqs.len(),
                bytes as f64 / reqs.len() as f64
            );
            g.throughput(Throughput::Elements(reqs.len() as u64));
            let mut out = Vec::with_capacity(1 << 16);
            g.bench_function(format!("{}/{name}/prost", v.name()), |b| {
                b.iter(|| {
                    for r in &reqs {
                        let req = pb::ListLegalPlaysRequest::decode(black_box(&r[..])).unwrap();
                        let resp = svc.list_legal_plays(&req).unwrap();
                        out.clear();
                        resp.encode(&mut out).unwrap();
                        black_box(&out);
                    }
                })
            });
            g.bench_function(format!("{}/{name}/wire", v.name()), |b| {
                b.iter(|| {
                    for r in &reqs {
                        let req = pb::ListLegalPlaysRequest::decode(black_box(&r[..])).unwrap();
                        black_box(svc.list_legal_plays_encoded(&req).unwrap());
                    }
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, list_legal_plays);
criterion_main!(benches);
