//! Hostile clients for the attack suite of issue #11, shared by `tests/attacks.rs`
//! (the quick cases, in `cargo test --release`) and `examples/attack.rs` (every case
//! at the scale, driven by `scripts/attack.sh`).
//!
//! The server runs as its own process (the release binary), so that its resident
//! memory, CPU time, threads and descriptors can be read from `/proc`, and its exit
//! after SIGTERM timed. A [`Monitor`] calls `GetStartingPosition` on a fresh
//! connection every 50 ms during an attack (the "cheap call from another client")
//! and samples the server's RSS; the attacks themselves build HTTP/2 misbehaviour
//! with the `h2` crate (streams with HEADERS and no DATA, a zero receive window,
//! cancelled streams) or plain TCP.

#![allow(dead_code)]

use bytes::Bytes;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tavli_engine::service::pb;
use tavli_engine::service::pb::tavli_engine_client::TavliEngineClient;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tonic::transport::{Channel, Endpoint};

/// The position of the cases 2 and 3: White's 15 checkers spread one per
/// point, Black's all on its start; with 3-3 it has many plays (a large
/// `ListLegalPlays` answer, a long 2-ply search).
pub const SPREAD: &str =
    "portes/w/24:1,23:1,22:1,21:1,20:1,19:1,18:1,17:1,16:1,15:1,14:1,13:1,11:1,10:1,9:1/1:15";
/// Fifteen singletons a side in Plakoto: a 2-ply `Evaluate` with a roll takes about 3 s
/// of CPU on this machine kind (issue #10 made the Portes `SPREAD` one take under 1 s).
pub const PLAKOTO_SPREAD: &str = "plakoto/w/15:1,14:1,13:1,12:1,11:1,10:1,9:1,8:1,7:1,6:1,5:1,4:1,3:1,2:1,1:1/16:1,17:1,18:1,19:1,20:1,21:1,22:1,23:1,24:7";
/// A Portes position with both sides' checkers spread out: 2-1 at 2 plies takes
/// about 4 s on the development machine (the longest search a test needs).
pub const PORTES_SPREAD: &str = "portes/w/24:1,23:1,22:1,21:1,20:1,19:1,18:1,17:1,16:1,15:1,14:1,13:1,12:1,11:1,10:1/1:3,2:3,3:3,4:3,5:3";
/// The Portes starting position.
pub const PORTES_START: &str = "portes/w/24:2,13:5,8:3,6:5/1:2,12:5,17:3,19:5";
/// What the probe must answer within.
pub const PROBE_LIMIT: Duration = Duration::from_millis(100);
/// The manifest's memory limit (deploy/k8s/deployment.yaml).
pub const RSS_LIMIT_MIB: f64 = 256.0;

// ------------------------------------------------------------------ the server process

/// A server process started for an attack.
pub struct Server {
    child: Option<Child>,
    pub pid: u32,
    pub grpc: SocketAddr,
    pub metrics: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
}

/// Reads `key=ADDR` from a log line.
fn field_addr(line: &str, key: &str) -> Option<SocketAddr> {
    let at = line.find(&format!("{key}="))? + key.len() + 1;
    let rest = &line[at..];
    let end = rest.find(|c: char| c.is_whitespace()).unwrap_or(rest.len());
    rest[..end].parse().ok()
}

impl Server {
    /// Starts `bin` on ephemeral loopback ports with `args` (and, when given, a soft
    /// and hard descriptor limit), and waits until it serves.
    pub fn start(bin: &Path, args: &[String], fd_limit: Option<u64>) -> Server {
        Server::start_with_env(bin, args, fd_limit, &[])
    }

    /// [`Server::start`] with these environment variables set for the server (e.g.
    /// `TOKIO_WORKER_THREADS`: its async workers, as many as cores by default).
    pub fn start_with_env(
        bin: &Path,
        args: &[String],
        fd_limit: Option<u64>,
        env: &[(&str, &str)],
    ) -> Server {
        let mut cmd = Command::new(bin);
        cmd.args([
            "--grpc-addr",
            "127.0.0.1:0",
            "--metrics-addr",
            "127.0.0.1:0",
        ])
        .args(args)
        .env("RUST_LOG", "info")
        .env("TAVLI_LOG_FORMAT", "text")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
        if let Some(n) = fd_limit {
            use std::os::unix::process::CommandExt;
            // SAFETY: setrlimit is async-signal-safe and touches only the child.
            unsafe {
                cmd.pre_exec(move || {
                    let r = libc::rlimit {
                        rlim_cur: n as libc::rlim_t,
                        rlim_max: n as libc::rlim_t,
                    };
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &r) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let mut child = cmd.spawn().expect("start the server binary");
        let pid = child.id();
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let lines = log.clone();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if line.contains("serving") {
                    if let (Some(g), Some(m)) = (
                        field_addr(&line, "grpc_addr"),
                        field_addr(&line, "metrics_addr"),
                    ) {
                        if let Some(tx) = tx.take() {
                            let _ = tx.send((g, m));
                        }
                    }
                }
                lines.lock().unwrap().push(line);
            }
        });
        let (grpc, metrics) = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(a) => a,
            Err(_) => {
                let _ = child.kill();
                let status = child.wait();
                panic!(
                    "the server did not start ({status:?}): {}",
                    log.lock().unwrap().join("\n")
                );
            }
        };
        Server {
            child: Some(child),
            pid,
            grpc,
            metrics,
            log,
        }
    }

    fn proc_status(&self, key: &str) -> Option<f64> {
        let text = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).ok()?;
        let line = text.lines().find(|l| l.starts_with(key))?;
        line[key.len()..].split_whitespace().next()?.parse().ok()
    }

    /// Resident memory in MiB.
    pub fn rss_mib(&self) -> f64 {
        self.proc_status("VmRSS:").unwrap_or(0.0) / 1024.0
    }

    /// Threads of the process.
    pub fn threads(&self) -> usize {
        self.proc_status("Threads:").unwrap_or(0.0) as usize
    }

    /// CPU time used so far (user + system), in seconds.
    pub fn cpu_seconds(&self) -> f64 {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)) else {
            return 0.0;
        };
        // Fields after the command name (which ends with the last ')').
        let rest = &text[text.rfind(')').map_or(0, |i| i + 2)..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        // SAFETY: sysconf has no side effects.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        (ticks(11) + ticks(12)) / hz
    }

    /// Open file descriptors.
    pub fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid)).map_or(0, |d| d.count())
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// Sends SIGTERM and waits (up to 30 s) for the exit: the time it took and the
    /// exit code.
    pub fn terminate(mut self) -> (Duration, Option<i32>) {
        let mut child = self.child.take().expect("running");
        let t = Instant::now();
        // SAFETY: kill sends a signal to our own child.
        unsafe {
            libc::kill(self.pid as libc::pid_t, libc::SIGTERM);
        }
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                use std::os::unix::process::ExitStatusExt;
                if let Some(sig) = status.signal() {
                    eprintln!(
                        "server {} killed by signal {sig} after SIGTERM; its log:\n{}",
                        self.pid,
                        self.log()
                    );
                }
                return (t.elapsed(), status.code());
            }
            if t.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                let _ = child.wait();
                return (t.elapsed(), None);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

// ------------------------------------------------------------------ the probe

/// A tonic client on a new connection.
pub async fn client(addr: SocketAddr) -> Result<TavliEngineClient<Channel>, String> {
    let ch = Endpoint::from_shared(format!("http://{addr}"))
        .map_err(|e| e.to_string())?
        .connect_timeout(Duration::from_secs(1))
        .connect()
        .await
        .map_err(|e| format!("connect: {e}"))?;
    Ok(TavliEngineClient::new(ch))
}

/// One cheap call from another client: a new connection and `GetStartingPosition`.
pub async fn probe(addr: SocketAddr) -> Result<(), String> {
    let mut c = client(addr).await?;
    let r = c
        .get_starting_position(pb::GetStartingPositionRequest {
            variant: pb::Variant::Portes as i32,
            side_to_move: 0,
        })
        .await
        .map_err(|s| format!("{:?}: {}", s.code(), s.message()))?;
    match r.into_inner().position {
        Some(p) if p.position_id == PORTES_START => Ok(()),
        other => Err(format!("wrong answer {other:?}")),
    }
}

/// What a [`Monitor`] saw.
#[derive(Clone, Debug, Default)]
pub struct Watched {
    pub probes: usize,
    /// Probes that failed or took longer than [`PROBE_LIMIT`], with what happened.
    pub bad: Vec<String>,
    pub max_probe: Duration,
    pub max_rss_mib: f64,
    pub max_threads: usize,
    pub max_fds: usize,
}

impl Watched {
    /// Panics unless every probe answered within [`PROBE_LIMIT`] and RSS stayed
    /// under [`RSS_LIMIT_MIB`].
    #[track_caller]
    pub fn assert_ok(&self, what: &str) {
        assert!(self.probes > 0, "{what}: no probe ran");
        assert!(
            self.bad.is_empty(),
            "{what}: {} of {} probes failed or were slow (max {:?}): {:?}",
            self.bad.len(),
            self.probes,
            self.max_probe,
            &self.bad[..self.bad.len().min(5)]
        );
        assert!(
            self.max_rss_mib < RSS_LIMIT_MIB,
            "{what}: RSS reached {:.0} MiB",
            self.max_rss_mib
        );
    }

    pub fn summary(&self) -> String {
        format!(
            "probes {} (bad {}, max {:.1} ms), max RSS {:.0} MiB, max threads {}, max fds {}",
            self.probes,
            self.bad.len(),
            self.max_probe.as_secs_f64() * 1e3,
            self.max_rss_mib,
            self.max_threads,
            self.max_fds
        )
    }
}

/// Probes the server and samples its resources every 50 ms until stopped.
pub struct Monitor {
    stop: Arc<AtomicBool>,
    task: JoinHandle<Watched>,
}

impl Monitor {
    pub fn start(server: &Server) -> Monitor {
        let stop = Arc::new(AtomicBool::new(false));
        let (addr, pid) = (server.grpc, server.pid);
        let flag = stop.clone();
        let task = tokio::spawn(async move {
            let sample = Server {
                child: None,
                pid,
                grpc: addr,
                metrics: addr,
                log: Arc::default(),
            };
            let mut w = Watched::default();
            while !flag.load(Ordering::Relaxed) {
                w.max_rss_mib = w.max_rss_mib.max(sample.rss_mib());
                w.max_threads = w.max_threads.max(sample.threads());
                w.max_fds = w.max_fds.max(sample.fds());
                let t = Instant::now();
                let r = tokio::time::timeout(Duration::from_secs(2), probe(addr)).await;
                let took = t.elapsed();
                w.probes += 1;
                w.max_probe = w.max_probe.max(took);
                match r {
                    Ok(Ok(())) if took <= PROBE_LIMIT => {}
                    Ok(Ok(())) => w.bad.push(format!("slow: {took:?}")),
                    Ok(Err(e)) => w.bad.push(format!("after {took:?}: {e}")),
                    Err(_) => w.bad.push(format!("no answer in {took:?}")),
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            w
        });
        Monitor { stop, task }
    }

    pub async fn stop(self) -> Watched {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.expect("monitor")
    }
}

// ------------------------------------------------------------------ gRPC over raw h2

/// A protobuf message as a gRPC request body (5-byte prefix, no compression).
pub fn grpc_frame<M: prost::Message>(m: &M) -> Bytes {
    let body = m.encode_to_vec();
    let mut out = Vec::with_capacity(body.len() + 5);
    out.push(0);
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(&body);
    out.into()
}

/// The request of `ListLegalPlays` for `id` and a roll.
pub fn list_request(id: &str, d1: u32, d2: u32) -> Bytes {
    grpc_frame(&pb::ListLegalPlaysRequest {
        position: Some(pb::list_legal_plays_request::Position::PositionId(
            id.into(),
        )),
        dice: Some(pb::Dice { die1: d1, die2: d2 }),
        ..Default::default()
    })
}

/// A gRPC POST to `path` on `addr`.
pub fn grpc_request(addr: SocketAddr, path: &str) -> http::Request<()> {
    http::Request::builder()
        .method("POST")
        .uri(format!("http://{addr}{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .unwrap()
}

/// The answer of one stream: the HTTP status, the response headers, the DATA
/// received and the trailers (none for a trailers-only answer).
#[derive(Debug)]
pub struct H2Answer {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub data: Bytes,
    pub trailers: Option<http::HeaderMap>,
}

impl H2Answer {
    /// `grpc-status` (of the trailers, else of a trailers-only answer's headers).
    pub fn grpc_status(&self) -> Option<&str> {
        self.trailers
            .as_ref()
            .and_then(|t| t.get("grpc-status"))
            .or_else(|| self.headers.get("grpc-status"))
            .and_then(|v| v.to_str().ok())
    }

    /// `grpc-message`, percent-decoded as far as these tests need (`%20`, `%3A`...).
    pub fn grpc_message(&self) -> String {
        let raw = self
            .trailers
            .as_ref()
            .and_then(|t| t.get("grpc-message"))
            .or_else(|| self.headers.get("grpc-message"))
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let mut out = Vec::new();
        let b = raw.as_bytes();
        let mut i = 0;
        while i < b.len() {
            match (b[i], b.get(i + 1..i + 3)) {
                (b'%', Some(h)) => {
                    let hex = std::str::from_utf8(h).unwrap();
                    out.push(u8::from_str_radix(hex, 16).unwrap());
                    i += 3;
                }
                (c, _) => {
                    out.push(c);
                    i += 1;
                }
            }
        }
        String::from_utf8(out).unwrap()
    }

    /// The messages of a gRPC response body (each without its 5-byte prefix).
    pub fn messages(&self) -> Vec<Bytes> {
        let mut out = Vec::new();
        let mut rest = self.data.clone();
        while rest.len() >= 5 {
            let n = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
            out.push(rest.slice(5..5 + n));
            rest = rest.slice(5 + n..);
        }
        out
    }
}

/// Sends `req` with `body` (END_STREAM after it) on `send` and reads the whole
/// answer.
pub async fn h2_call(
    send: &h2::client::SendRequest<Bytes>,
    req: http::Request<()>,
    body: Bytes,
) -> Result<H2Answer, h2::Error> {
    let mut send = send.clone().ready().await?;
    let (resp, mut stream) = send.send_request(req, false)?;
    // The server may answer (and close the stream) before the DATA goes out.
    let _ = stream.send_data(body, true);
    let resp = resp.await?;
    let status = resp.status().as_u16();
    let (parts, mut recv) = resp.into_parts();
    let mut data = Vec::new();
    while let Some(chunk) = recv.data().await {
        let chunk = chunk?;
        let _ = recv.flow_control().release_capacity(chunk.len());
        data.extend_from_slice(&chunk);
    }
    let trailers = recv.trailers().await?;
    Ok(H2Answer {
        status,
        headers: parts.headers,
        data: data.into(),
        trailers,
    })
}

/// An h2 client connection; `window` sets the initial stream window
/// (`SETTINGS_INITIAL_WINDOW_SIZE`; 0: the server may send no DATA).
pub async fn h2_connect(
    addr: SocketAddr,
    window: Option<u32>,
) -> Result<h2::client::SendRequest<Bytes>, String> {
    let tcp = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let mut b = h2::client::Builder::new();
    if let Some(w) = window {
        b.initial_window_size(w);
    }
    let (send, mut conn) = b
        .handshake::<_, Bytes>(tcp)
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    let mut ping = conn.ping_pong().expect("ping_pong");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    // The server's SETTINGS come before its answer to a PING: after it, the client
    // knows the server's stream limit.
    tokio::time::timeout(Duration::from_secs(2), ping.ping(h2::Ping::opaque()))
        .await
        .map_err(|_| "no PING answer".to_string())?
        .map_err(|e| format!("ping: {e}"))?;
    Ok(send)
}

/// Streams opened by an attack and held open.
pub struct Held {
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS as the client saw it, per
    /// connection.
    pub advertised: Vec<usize>,
    pub responses: Vec<h2::client::ResponseFuture>,
    pub senders: Vec<h2::SendStream<Bytes>>,
    pub clients: Vec<h2::client::SendRequest<Bytes>>,
}

impl Held {
    pub fn opened(&self) -> usize {
        self.responses.len()
    }

    /// The gRPC status of each held stream as the client can see it within
    /// `within`: the `grpc-status` of a trailers-only answer, "200" for an answer
    /// whose data has yet to come, "reset" or "none".
    pub async fn statuses(&mut self, within: Duration) -> Vec<String> {
        let deadline = tokio::time::Instant::now() + within;
        let mut out = Vec::new();
        for r in self.responses.iter_mut() {
            let s = match tokio::time::timeout_at(deadline, r).await {
                Ok(Ok(resp)) => match resp.headers().get("grpc-status") {
                    Some(v) => v.to_str().unwrap_or("?").to_string(),
                    None => resp.status().as_u16().to_string(),
                },
                Ok(Err(e)) => format!("reset: {e}"),
                Err(_) => "none".to_string(),
            };
            out.push(s);
        }
        out
    }
}

/// Opens up to `per_connection` streams on each of `connections` connections to
/// `path`, each sending `body` (None: HEADERS only, no DATA; Some: the whole body
/// and END_STREAM), with the initial stream window `window`. A connection stops
/// opening when the server's stream limit holds it back for 300 ms.
pub async fn open_streams(
    addr: SocketAddr,
    path: &str,
    connections: usize,
    per_connection: usize,
    body: Option<Bytes>,
    window: Option<u32>,
) -> Result<Held, String> {
    let mut held = Held {
        advertised: Vec::new(),
        responses: Vec::new(),
        senders: Vec::new(),
        clients: Vec::new(),
    };
    for _ in 0..connections {
        let mut send = h2_connect(addr, window).await?;
        for _ in 0..per_connection {
            let ready =
                tokio::time::timeout(Duration::from_millis(300), send.clone().ready()).await;
            let Ok(Ok(mut s)) = ready else { break };
            let (resp, mut stream) = s
                .send_request(grpc_request(addr, path), false)
                .map_err(|e| format!("send_request: {e}"))?;
            if let Some(b) = &body {
                // The server may answer on the HEADERS alone (a stream over a limit is
                // refused at once) and close the stream before its DATA goes out: h2 then
                // says "inactive stream", and the response carries the status.
                if let Err(e) = stream.send_data(b.clone(), true) {
                    if !e.to_string().contains("inactive stream") {
                        return Err(format!("send_data: {e}"));
                    }
                }
            }
            held.responses.push(resp);
            held.senders.push(stream);
            send = s;
        }
        held.advertised.push(send.current_max_send_streams());
        held.clients.push(send);
    }
    Ok(held)
}

/// Opens up to `n` TCP connections that send nothing (stops at the first that takes
/// more than 3 s), and says how long the slowest connect took.
pub async fn bare_connections(addr: SocketAddr, n: usize) -> (Vec<TcpStream>, Duration) {
    let mut out = Vec::with_capacity(n);
    let mut slowest = Duration::ZERO;
    for _ in 0..n {
        let t = Instant::now();
        match tokio::time::timeout(Duration::from_secs(3), TcpStream::connect(addr)).await {
            Ok(Ok(s)) => out.push(s),
            _ => break,
        }
        slowest = slowest.max(t.elapsed());
    }
    (out, slowest)
}

/// How many of `conns` the server has closed (EOF or reset when read).
pub async fn closed_by_server(conns: &mut [TcpStream]) -> usize {
    use tokio::io::AsyncReadExt;
    let mut closed = 0;
    let mut buf = [0u8; 256];
    for c in conns.iter_mut() {
        loop {
            match tokio::time::timeout(Duration::from_millis(1), c.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => {
                    closed += 1;
                    break;
                }
                Ok(Ok(_)) => continue,
                Err(_) => break,
            }
        }
    }
    closed
}

// ------------------------------------------------------------------ Evaluate

/// An `Evaluate` request at `plies` with a roll.
pub fn evaluate_request(id: &str, d1: u32, d2: u32, plies: u32) -> pb::EvaluateRequest {
    pb::EvaluateRequest {
        match_state: None,
        position: Some(pb::evaluate_request::Position::PositionId(id.into())),
        dice: Some(pb::Dice { die1: d1, die2: d2 }),
        plies,
        grade: None,
    }
}

/// Sends `n` `Evaluate` calls spread over `spread`, each cancelled by the client
/// (its future dropped: RST_STREAM) after 100-300 ms. Returns when the last is
/// cancelled.
pub async fn evaluate_and_cancel(
    addr: SocketAddr,
    n: usize,
    spread: Duration,
    req: pb::EvaluateRequest,
) -> Result<usize, String> {
    let c = client(addr).await?;
    let mut tasks = Vec::new();
    for i in 0..n {
        let mut c = c.clone();
        let req = req.clone();
        let start = spread.mul_f64(i as f64 / n.max(1) as f64);
        let cancel_after = Duration::from_millis(100 + (i as u64 * 37) % 200);
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(start).await;
            tokio::time::timeout(cancel_after, c.evaluate(req))
                .await
                .is_err()
        }));
    }
    let mut cancelled = 0;
    for t in tasks {
        if t.await.unwrap_or(false) {
            cancelled += 1;
        }
    }
    Ok(cancelled)
}

/// Outcome counts of concurrent calls.
#[derive(Debug, Default, Clone)]
pub struct Outcomes {
    pub ok: usize,
    pub deadline_exceeded: usize,
    pub resource_exhausted: usize,
    pub other: Vec<String>,
    /// The longest successful call.
    pub max_ok: Duration,
    /// The longest refusal (RESOURCE_EXHAUSTED).
    pub max_refusal: Duration,
}

/// `n` concurrent `Evaluate` calls (on `connections` connections) with `deadline`.
pub async fn concurrent_evaluate(
    addr: SocketAddr,
    n: usize,
    connections: usize,
    deadline: Duration,
    req: pb::EvaluateRequest,
) -> Result<Outcomes, String> {
    let mut clients = Vec::new();
    for _ in 0..connections.max(1) {
        clients.push(client(addr).await?);
    }
    let mut tasks = Vec::new();
    for i in 0..n {
        let mut c = clients[i % clients.len()].clone();
        let mut r = tonic::Request::new(req.clone());
        r.set_timeout(deadline);
        tasks.push(tokio::spawn(async move {
            let t = Instant::now();
            let out = c.evaluate(r).await;
            (out.map(|_| ()).map_err(|s| s.code()), t.elapsed())
        }));
    }
    let mut o = Outcomes::default();
    for t in tasks {
        let (r, took) = t.await.map_err(|e| e.to_string())?;
        match r {
            Ok(()) => {
                o.ok += 1;
                o.max_ok = o.max_ok.max(took);
            }
            // tonic's client ends a call whose own timer ran out first with
            // CANCELLED ("Timeout expired"): the same deadline, seen by the client.
            Err(tonic::Code::DeadlineExceeded | tonic::Code::Cancelled) => o.deadline_exceeded += 1,
            Err(tonic::Code::ResourceExhausted) => {
                o.resource_exhausted += 1;
                o.max_refusal = o.max_refusal.max(took);
            }
            Err(c) => o.other.push(format!("{c:?}")),
        }
    }
    Ok(o)
}
