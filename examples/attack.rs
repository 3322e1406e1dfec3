//! The attack suite of issue #11 at the issue's scale, against a server binary:
//! every case of the hostile-client review, with the figures it measured.
//!
//! ```text
//! cargo build --release --bin tavli-engine --example attack
//! target/release/examples/attack --bin target/release/tavli-engine        # all cases
//! target/release/examples/attack --bin target/release/tavli-engine --case 3
//! target/release/examples/attack --bin OLD_BINARY --old                    # no new flags
//! ```
//!
//! Each case starts its own server (default settings unless said), runs the attack
//! while a [`Monitor`] calls `GetStartingPosition` on a new connection every 50 ms and
//! samples the server's RSS, then sends SIGTERM. A case passes when every probe
//! answered within 100 ms, RSS stayed under 256 MiB, the server exited 0 within its
//! drain time + 1 s, and the case's own check holds. Exit status 1 if any case failed.
//! `scripts/attack.sh` builds and runs this; `tests/attacks.rs` has the quick versions.

#[path = "../tests/attack/mod.rs"]
mod attack;

use attack::*;
use clap::Parser;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tavli_engine::service::pb;

#[derive(Parser)]
struct Args {
    /// The server binary.
    #[arg(long)]
    bin: PathBuf,
    /// Cases to run (1..8); all by default.
    #[arg(long)]
    case: Vec<u32>,
    /// The binary predates the limit flags of issue #11: start it without them.
    #[arg(long)]
    old: bool,
}

/// The result of one case.
struct Report {
    case: u32,
    title: &'static str,
    figures: Vec<String>,
    failures: Vec<String>,
}

impl Report {
    fn new(case: u32, title: &'static str) -> Report {
        Report {
            case,
            title,
            figures: Vec::new(),
            failures: Vec::new(),
        }
    }

    fn fig(&mut self, s: String) {
        println!("    {s}");
        self.figures.push(s);
    }

    fn check(&mut self, ok: bool, what: String) {
        if !ok {
            println!("    FAIL: {what}");
            self.failures.push(what);
        }
    }

    fn watched(&mut self, phase: &str, w: &Watched) {
        self.fig(format!("{phase}: {}", w.summary()));
        self.check(
            w.bad.is_empty(),
            format!(
                "{phase}: {} of {} probes failed or took over 100 ms: {:?}",
                w.bad.len(),
                w.probes,
                &w.bad[..w.bad.len().min(3)]
            ),
        );
        self.check(
            w.max_rss_mib < RSS_LIMIT_MIB,
            format!("{phase}: RSS reached {:.0} MiB", w.max_rss_mib),
        );
    }

    fn exit(&mut self, server: Server, drain: Duration) {
        let (took, code) = server.terminate();
        self.fig(format!(
            "SIGTERM: exit {code:?} after {:.2} s (drain {} s)",
            took.as_secs_f64(),
            drain.as_secs()
        ));
        self.check(
            code == Some(0) && took <= drain + Duration::from_secs(1),
            format!("exit {code:?} after {took:?}, drain {drain:?}"),
        );
    }
}

struct Ctx {
    args: Args,
}

impl Ctx {
    /// Starts a server with `new_flags` (dropped with `--old`) and `flags`.
    fn server(&self, new_flags: &[&str], flags: &[&str], fd_limit: Option<u64>) -> Server {
        let mut a: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
        if !self.args.old {
            a.extend(new_flags.iter().map(|s| s.to_string()));
        }
        Server::start(&self.args.bin, &a, fd_limit)
    }
}

const DRAIN: Duration = Duration::from_secs(10);

/// Case 1: header-only streams.
async fn case1(ctx: &Ctx) -> Report {
    let mut r = Report::new(1, "streams with HEADERS and no DATA");
    let server = ctx.server(&[], &[], None);
    let m = Monitor::start(&server);
    let held = open_streams(
        server.grpc,
        "/tavli.v1.TavliEngine/GetStartingPosition",
        3,
        100,
        None,
        None,
    )
    .await;
    match held {
        Ok(mut held) => {
            r.fig(format!(
                "{} header-only streams open on 3 connections (SETTINGS_MAX_CONCURRENT_STREAMS {:?})",
                held.opened(),
                held.advertised
            ));
            // Held past the request-body timeout (10 s).
            tokio::time::sleep(Duration::from_secs(11)).await;
            let statuses = held.statuses(Duration::from_secs(1)).await;
            let answered = statuses.iter().filter(|s| *s == "4").count();
            r.fig(format!(
                "{answered} of them answered DEADLINE_EXCEEDED by the request-body timeout"
            ));
            drop(held);
        }
        Err(e) => r.check(false, format!("attack failed: {e}")),
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let w = m.stop().await;
    r.watched("during and after", &w);
    r.exit(server, DRAIN);
    r
}

/// Case 2: Evaluate sent and cancelled.
async fn case2(ctx: &Ctx) -> Report {
    let mut r = Report::new(2, "Evaluate cancelled by the client");
    for n in [256usize, 640] {
        let server = ctx.server(&[], &[], None);
        let m = Monitor::start(&server);
        let cpu0 = server.cpu_seconds();
        let t = Instant::now();
        let cancelled = evaluate_and_cancel(
            server.grpc,
            n,
            Duration::from_millis(2500),
            evaluate_request(SPREAD, 3, 3, 2),
        )
        .await;
        let sending = t.elapsed();
        let cpu1 = server.cpu_seconds();
        let threads = server.threads();
        tokio::time::sleep(Duration::from_secs(5)).await;
        let cpu2 = server.cpu_seconds();
        let w = m.stop().await;
        r.fig(format!(
            "{n} calls sent and cancelled after 0.1-0.3 s ({:?} cancelled) in {:.1} s: \
             server CPU {:.2} s during, {:.2} s in the 5 s after; {threads} threads at the end",
            cancelled.as_ref().ok(),
            sending.as_secs_f64(),
            cpu1 - cpu0,
            cpu2 - cpu1
        ));
        r.check(
            cpu2 - cpu1 < 0.5,
            format!("{:.2} s of CPU after the last cancel", cpu2 - cpu1),
        );
        r.watched(&format!("{n} calls"), &w);
        r.exit(server, DRAIN);
    }
    r
}

/// Case 3: clients with a zero receive window.
async fn case3(ctx: &Ctx) -> Report {
    let mut r = Report::new(3, "clients that never read (zero receive window)");
    for conns in [1usize, 3] {
        let server = ctx.server(&[], &[], None);
        let m = Monitor::start(&server);
        let rss0 = server.rss_mib();
        let held = open_streams(
            server.grpc,
            "/tavli.v1.TavliEngine/ListLegalPlays",
            conns,
            500,
            Some(list_request(SPREAD, 3, 3)),
            Some(0),
        )
        .await;
        match held {
            Ok(mut held) => {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let rss1 = server.rss_mib();
                let statuses = held.statuses(Duration::from_millis(200)).await;
                let answered = statuses.iter().filter(|s| *s == "200").count();
                r.fig(format!(
                    "{conns} connection(s) x 500 ListLegalPlays (1896 plays, 472 KB each): \
                     {answered} answers computed and held, RSS {rss0:.0} -> {rss1:.0} MiB after 1 s"
                ));
                // Past the send timeout (10 s): the connections are closed.
                tokio::time::sleep(Duration::from_secs(11)).await;
                r.fig(format!(
                    "RSS {:.0} MiB 12 s later (send timeout 10 s)",
                    server.rss_mib()
                ));
                drop(held);
            }
            Err(e) => r.check(false, format!("attack failed: {e}")),
        }
        let w = m.stop().await;
        r.watched(&format!("{conns} connection(s)"), &w);
        r.exit(server, DRAIN);
    }
    r
}

/// Case 4: streams per connection, exempt streams.
async fn case4(ctx: &Ctx) -> Report {
    let mut r = Report::new(4, "streams per connection, health-watch streams");
    let server = ctx.server(&[], &[], None);
    let m = Monitor::start(&server);
    let watch = grpc_frame(&tonic_health::pb::HealthCheckRequest {
        service: String::new(),
    });
    match open_streams(
        server.grpc,
        "/grpc.health.v1.Health/Watch",
        3,
        100,
        Some(watch),
        None,
    )
    .await
    {
        Ok(mut held) => {
            let statuses = held.statuses(Duration::from_secs(2)).await;
            let open = statuses.iter().filter(|s| *s == "200").count();
            let refused = statuses.iter().filter(|s| *s == "8").count();
            r.fig(format!(
                "SETTINGS_MAX_CONCURRENT_STREAMS {:?}; {} Watch streams asked on 3 connections: \
                 {open} open, {refused} RESOURCE_EXHAUSTED",
                held.advertised,
                held.opened()
            ));
            if !ctx.args.old {
                r.check(
                    held.advertised.iter().all(|&a| a == 100),
                    "streams per connection not advertised as 100".into(),
                );
                r.check(open <= 32, format!("{open} Watch streams open"));
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
            drop(held);
        }
        Err(e) => r.check(false, format!("attack failed: {e}")),
    }
    let w = m.stop().await;
    r.watched("during", &w);
    r.exit(server, DRAIN);
    r
}

/// Case 5: bare TCP connections, with and without a low descriptor limit.
async fn case5(ctx: &Ctx) -> Report {
    let mut r = Report::new(5, "idle connections, descriptors");
    for fd_limit in [None, Some(1024u64)] {
        let server = ctx.server(&[], &[], fd_limit);
        let fds0 = server.fds();
        let m = Monitor::start(&server);
        let (mut grpc, slowest) = bare_connections(server.grpc, 2000).await;
        let (mut metrics, _) = bare_connections(server.metrics, 200).await;
        r.fig(format!("slowest TCP connect of the attacker: {slowest:?}"));
        let cpu0 = server.cpu_seconds();
        let t = Instant::now();
        tokio::time::sleep(Duration::from_secs(3)).await;
        let fds_during = server.fds();
        tokio::time::sleep(Duration::from_secs(9)).await;
        let cpu = (server.cpu_seconds() - cpu0) / t.elapsed().as_secs_f64();
        let closed = closed_by_server(&mut grpc).await;
        let closed_m = closed_by_server(&mut metrics).await;
        let w = m.stop().await;
        let label = fd_limit.map_or(
            "descriptor limit raised to the hard limit".to_string(),
            |n| format!("descriptor limit {n}"),
        );
        r.fig(format!(
            "{label}: {} bare connections to gRPC, {} to metrics (of 2000 and 200 tried); \
             server fds {fds0} -> {fds_during} after 3 s -> {} after 12 s; {closed} and \
             {closed_m} closed by the server; CPU {:.0} % of a core meanwhile",
            grpc.len(),
            metrics.len(),
            server.fds(),
            cpu * 100.0
        ));
        r.check(cpu < 0.5, format!("{:.0} % CPU: a busy loop?", cpu * 100.0));
        if !ctx.args.old {
            r.check(
                closed == grpc.len() && closed_m == metrics.len(),
                format!(
                    "{closed} of {} and {closed_m} of {} closed",
                    grpc.len(),
                    metrics.len()
                ),
            );
        }
        let log = server.log();
        for what in ["connection limit", "cannot accept"] {
            let lines: Vec<&str> = log.lines().filter(|l| l.contains(what)).collect();
            if let Some(line) = lines.first() {
                r.fig(format!(
                    "logged {} time(s), first: {}",
                    lines.len(),
                    line.trim()
                ));
            }
        }
        r.watched(&label, &w);
        drop((grpc, metrics));
        r.exit(server, DRAIN);
    }
    r
}

/// Case 6: shutdown with searches running.
async fn case6(ctx: &Ctx) -> Report {
    let mut r = Report::new(6, "shutdown with searches running");
    let drain = Duration::from_secs(2);
    let server = ctx.server(&[], &["--drain-seconds", "2"], None);
    match client(server.grpc).await {
        Ok(c) => {
            let calls: Vec<_> = (0..4)
                .map(|_| {
                    let mut c = c.clone();
                    tokio::spawn(async move { c.evaluate(evaluate_request(SPREAD, 3, 3, 2)).await })
                })
                .collect();
            tokio::time::sleep(Duration::from_millis(500)).await;
            r.exit(server, drain);
            let mut codes = Vec::new();
            for c in calls {
                codes.push(match c.await {
                    Ok(Ok(_)) => "OK".to_string(),
                    Ok(Err(s)) => format!("{:?}: {}", s.code(), s.message()),
                    Err(e) => e.to_string(),
                });
            }
            r.fig(format!("the 4 running 2-ply searches ended with {codes:?}"));
        }
        Err(e) => r.check(false, e),
    }
    r
}

/// Case 7: deep searches under load.
async fn case7(ctx: &Ctx) -> Report {
    let mut r = Report::new(7, "256 deep searches at once");
    let server = ctx.server(&[], &[], None);
    let m = Monitor::start(&server);
    let t = Instant::now();
    let o = concurrent_evaluate(
        server.grpc,
        256,
        4,
        Duration::from_secs(20),
        evaluate_request(PORTES_START, 6, 6, 2),
    )
    .await;
    let w = m.stop().await;
    match o {
        Ok(o) => {
            r.fig(format!(
                "256 x Evaluate 2 plies (Portes start, 6-6), deadline 20 s, in {:.1} s: {} OK \
                 (longest {:.1} s), {} deadline exceeded, {} RESOURCE_EXHAUSTED (longest wait \
                 {:.2} s), other {:?}",
                t.elapsed().as_secs_f64(),
                o.ok,
                o.max_ok.as_secs_f64(),
                o.deadline_exceeded,
                o.resource_exhausted,
                o.max_refusal.as_secs_f64(),
                o.other
            ));
            if !ctx.args.old {
                r.check(
                    o.deadline_exceeded <= 2,
                    format!("{} accepted searches timed out", o.deadline_exceeded),
                );
            }
        }
        Err(e) => r.check(false, e),
    }
    r.watched("during", &w);
    r.exit(server, DRAIN);
    r
}

/// Case 8: configuration and input edges.
async fn case8(ctx: &Ctx) -> Report {
    let mut r = Report::new(8, "configuration and input edges");
    for args in [
        &["--request-timeout-seconds", "inf"][..],
        &["--request-timeout-seconds=-1"],
        &["--request-timeout-seconds", "NaN"],
        &["--max-message-bytes", "0"],
        &["--concurrency-limit", "0"],
    ] {
        let t = Instant::now();
        let mut child = std::process::Command::new(&ctx.args.bin)
            .args([
                "--grpc-addr",
                "127.0.0.1:0",
                "--metrics-addr",
                "127.0.0.1:0",
            ])
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start");
        // A server that starts (a bad setting taken) is stopped after 3 s.
        let status = loop {
            if let Ok(Some(s)) = child.try_wait() {
                break Some(s);
            }
            if t.elapsed() > Duration::from_secs(3) {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            use std::io::Read;
            let _ = e.read_to_string(&mut err);
        }
        let first = err
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .to_string();
        let code = status.and_then(|s| s.code());
        let first: String = first.chars().take(160).collect();
        r.fig(format!("{}: exit {code:?}: {first}", args.join(" ")));
        r.check(
            code == Some(2) && !err.contains("panicked"),
            format!("{}: exit {code:?}", args.join(" ")),
        );
    }
    let server = ctx.server(&[], &[], None);
    if let Ok(mut c) = client(server.grpc).await {
        let zeros = "0".repeat(5000);
        for id in [
            "plakoto/w/3:1p,24:14/1:14,3:1p".to_string(),
            format!("portes/w/13:1,{zeros}13:1/1:15"),
        ] {
            let res = c
                .list_legal_plays(pb::ListLegalPlaysRequest {
                    position: Some(pb::list_legal_plays_request::Position::PositionId(
                        id.clone(),
                    )),
                    dice: Some(pb::Dice { die1: 3, die2: 1 }),
                    ..Default::default()
                })
                .await;
            let shown: String = id.chars().take(40).collect();
            match res {
                Err(s) => {
                    r.fig(format!(
                        "{shown}…: {:?}, message of {} bytes",
                        s.code(),
                        s.message().len()
                    ));
                    r.check(
                        s.code() == tonic::Code::InvalidArgument && s.message().len() < 300,
                        format!("{shown}: {:?} {}", s.code(), s.message().len()),
                    );
                }
                Ok(_) => r.check(false, format!("{shown}: accepted")),
            }
        }
    }
    r.exit(server, DRAIN);
    r
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args = Args::parse();
    let cases = if args.case.is_empty() {
        (1..=8).collect()
    } else {
        args.case.clone()
    };
    let ctx = Ctx { args };
    let start = Instant::now();
    let mut reports = Vec::new();
    for c in cases {
        let t = Instant::now();
        println!("case {c}:");
        let rep = match c {
            1 => case1(&ctx).await,
            2 => case2(&ctx).await,
            3 => case3(&ctx).await,
            4 => case4(&ctx).await,
            5 => case5(&ctx).await,
            6 => case6(&ctx).await,
            7 => case7(&ctx).await,
            8 => case8(&ctx).await,
            _ => panic!("no case {c}"),
        };
        println!(
            "  case {}: {} ({:.0} s): {}",
            rep.case,
            rep.title,
            t.elapsed().as_secs_f64(),
            if rep.failures.is_empty() {
                "PASS"
            } else {
                "FAIL"
            }
        );
        reports.push(rep);
    }
    let failed: Vec<u32> = reports
        .iter()
        .filter(|r| !r.failures.is_empty())
        .map(|r| r.case)
        .collect();
    println!(
        "attack suite: {} cases in {:.0} s, failed: {failed:?}",
        reports.len(),
        start.elapsed().as_secs_f64()
    );
    std::process::exit(if failed.is_empty() { 0 } else { 1 });
}
