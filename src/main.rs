//! `tavli-engine`: the gRPC server (the default, `serve`) and the same engine as a
//! command-line tool (`plays`, `apply`, `eval`, `start`, `show`) for scripting.
//!
//! ```text
//! tavli-engine                                   # serve gRPC :50051, metrics :9090
//! tavli-engine plays --position <ID> --dice 6-5  # legal plays (text, or --json)
//! tavli-engine apply --position <ID> --dice 6-5 --play "24/18 13/11"
//! tavli-engine eval  --position <ID> [--dice 6-5] [--plies 1]
//! tavli-engine choose --position <ID> --dice 6-5 --level expert [--seed 7]
//! tavli-engine rollout --position <ID> [--dice 6-5] [--plies 0] [--trials 1296]
//! tavli-engine rollout --position <ID> --trials 46656 --replicas HOST:PORT,HOST:PORT
//! tavli-engine start --variant plakoto
//! tavli-engine show  --position <ID>             # the board as text
//! tavli-engine analyze match.mat [--plies 1] [--json] [--svg game.svg]
//! tavli-engine ubgi                              # UBGI engine on stdin/stdout
//! tavli-engine met [--length 7] [--json]         # match equity table (--generate, --check)
//! ```
//!
//! `--position` takes a Position ID, a GNU Backgammon ID with `--side`, or an XGID
//! (`XGID=...`, docs/interop.md).

mod cli {
    pub mod analyze;
    pub mod met;
    pub mod rollout;
}

use clap::{Args, Parser, Subcommand};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tavli_engine::eval::{PositionEvaluator, MAX_PLIES};
use tavli_engine::rules::{Dice, Side, Variant};
use tavli_engine::service::server::{cpus, listen, MAX_SECONDS};
use tavli_engine::service::tls::TlsArgs;
use tavli_engine::service::{convert, json, pb, ServerConfig, ServiceError, TavliEngineService};
use tavli_engine::telemetry::{init_tracing, LogFormat};

/// mimalloc instead of the system allocator: with glibc's malloc a ListLegalPlays
/// call costs 14 % more server CPU under load. The price is memory: mimalloc keeps
/// what it freed for reuse (the bear-off database's temporary tables among it), so
/// the server's RSS is about 30–40 MiB instead of 8–9 MiB. Feature `no_thp`: no
/// transparent huge pages, which took it to 45 MiB (docs/performance.md, "Service
/// load").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The evaluator behind `Evaluate` and `tavli-engine eval`: the exact bear-off
/// database and the committed nets of `weights/` (embedded in the binary).
fn evaluator() -> Option<Arc<dyn PositionEvaluator>> {
    Some(Arc::new(tavli_engine::eval::engine::Engine::load_default()))
}

/// Tavli (Portes, Plakoto, Fevga) game engine: gRPC server and command-line tool.
#[derive(Parser, Debug)]
#[command(
    name = "tavli-engine",
    version,
    about,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Server options when no subcommand is given (same as `serve`).
    #[command(flatten)]
    serve: ServeArgs,
}

// `Serve` is much the largest (every flag of the server), built once per process.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
enum Command {
    /// Serve gRPC and Prometheus metrics (the default).
    Serve(ServeArgs),
    /// Print every legal play of a position and roll.
    Plays(PlaysArgs),
    /// Apply a play and print the new position (turn passed) and the outcome.
    Apply(ApplyArgs),
    /// Evaluate a position (and rank the plays of a roll).
    Eval(EvalArgs),
    /// The play a bot of a skill level makes with a roll (ChoosePlay).
    Choose(ChooseArgs),
    /// Monte Carlo rollout of a position (progress bar on stderr).
    Rollout(cli::rollout::RolloutArgs),
    /// Print the starting position of a variant.
    Start(StartArgs),
    /// Draw a position as a text board (printed numbering, as GNU Backgammon does).
    Show(ShowArgs),
    /// Analyse a game or match record: every play's error, every roll's luck.
    Analyze(cli::analyze::AnalyzeArgs),
    /// Speak UBGI (Universal Backgammon Interface) on stdin/stdout, for duel tools
    /// and GUIs (docs/interop.md): `ubgi`, `setoption`, `position`, `dice`, `go`,
    /// `eval`, `quit`.
    Ubgi(UbgiArgs),
    /// The match equity table: each side's chance to win a Tavli match from every
    /// score (docs/match-equity.md); --generate measures it again, --check simulates.
    Met(cli::met::MetArgs),
}

#[derive(Args, Debug)]
struct UbgiArgs {
    /// The search depth of `go` and `eval` at the start (the UBGI option `Plies`), for
    /// drivers that set no options.
    #[arg(long, default_value_t = 0,
          value_parser = clap::value_parser!(u8).range(0..=MAX_PLIES as i64))]
    plies: u8,
}

#[derive(Args, Debug, Clone)]
struct ServeArgs {
    /// gRPC listen address.
    #[arg(long, env = "TAVLI_GRPC_ADDR", default_value = "0.0.0.0:50051")]
    grpc_addr: SocketAddr,
    /// Prometheus metrics listen address (HTTP, path /metrics).
    #[arg(long, env = "TAVLI_METRICS_ADDR", default_value = "0.0.0.0:9090")]
    metrics_addr: SocketAddr,
    /// Log format; the filter is RUST_LOG (default "info").
    #[arg(long, env = "TAVLI_LOG_FORMAT", value_enum, default_value = "text")]
    log_format: LogFormat,
    /// Calls that take this many milliseconds or more are logged at INFO whatever
    /// their status (other calls: errors of the server at INFO or WARN, the rest at
    /// DEBUG; docs/operations.md "Logs and traces").
    #[arg(long, env = "TAVLI_LOG_SLOW_CALLS_MS",
          default_value_t = tavli_engine::telemetry::DEFAULT_SLOW_CALL.as_millis() as u64,
          value_parser = clap::value_parser!(u64).range(0..=86_400_000))]
    log_slow_calls_ms: u64,
    /// Seconds in-flight RPCs may run after SIGTERM/SIGINT; then the remaining work is
    /// cancelled and the server exits.
    #[arg(long, env = "TAVLI_DRAIN_SECONDS", default_value_t = 10)]
    drain_seconds: u64,
    /// Largest request or response message in bytes (1024..=67108864).
    #[arg(long, env = "TAVLI_MAX_MESSAGE_BYTES", default_value_t = defaults().max_message_bytes)]
    max_message_bytes: usize,
    /// Engine RPCs served at once; more are answered RESOURCE_EXHAUSTED (health and
    /// reflection excluded). A permit is taken once the request body has arrived.
    #[arg(long, env = "TAVLI_CONCURRENCY_LIMIT", default_value_t = defaults().concurrency_limit)]
    concurrency_limit: usize,
    /// Deepest Evaluate search accepted (0..=2); ChoosePlay's levels search at most
    /// this deep.
    #[arg(long, env = "TAVLI_MAX_PLIES", default_value_t = MAX_PLIES,
          value_parser = clap::value_parser!(u8).range(0..=MAX_PLIES as i64))]
    max_plies: u8,
    /// Server-side limit per RPC in seconds, on top of the client's deadline (0: none);
    /// AnalyzeGame, Rollout and EvaluateBatch have --long-request-timeout-seconds.
    #[arg(long, env = "TAVLI_REQUEST_TIMEOUT_SECONDS", default_value_t = 30.0,
          value_parser = seconds)]
    request_timeout_seconds: f64,
    /// Server-side limit of AnalyzeGame, Rollout and EvaluateBatch in seconds, on top
    /// of the client's deadline (0: none).
    #[arg(long, env = "TAVLI_LONG_REQUEST_TIMEOUT_SECONDS", value_parser = seconds,
          default_value_t = tavli_engine::service::server::DEFAULT_LONG_REQUEST_TIMEOUT.as_secs_f64())]
    long_request_timeout_seconds: f64,
    /// Most trials of one Rollout request; more is INVALID_ARGUMENT.
    #[arg(long, env = "TAVLI_MAX_ROLLOUT_TRIALS",
          default_value_t = tavli_engine::service::api::DEFAULT_MAX_ROLLOUT_TRIALS,
          value_parser = clap::value_parser!(u32).range(1..))]
    max_rollout_trials: u32,
    /// Connections open at once on the gRPC port; at the limit an idle connection is
    /// closed to make room (at most the descriptor limit less a reserve).
    #[arg(long, env = "TAVLI_MAX_CONNECTIONS", default_value_t = defaults().max_connections)]
    max_connections: usize,
    /// HTTP/2 streams per connection (SETTINGS_MAX_CONCURRENT_STREAMS).
    #[arg(long, env = "TAVLI_MAX_CONCURRENT_STREAMS",
          default_value_t = defaults().max_concurrent_streams)]
    max_concurrent_streams: u32,
    /// Seconds from accept to the HTTP/2 preface, the TLS handshake included (metrics
    /// and page ports: to the request headers).
    #[arg(long, env = "TAVLI_HANDSHAKE_TIMEOUT_SECONDS", value_parser = seconds,
          default_value_t = defaults().handshake_timeout.as_secs_f64())]
    handshake_timeout_seconds: f64,
    /// Seconds a connection may stay open with no RPC in flight (then GOAWAY).
    #[arg(long, env = "TAVLI_IDLE_TIMEOUT_SECONDS", value_parser = seconds,
          default_value_t = defaults().idle_timeout.as_secs_f64())]
    idle_timeout_seconds: f64,
    /// Seconds a gRPC connection may stay open (each connection ±10 %): then GOAWAY,
    /// and the client reconnects, to a new server too (0: no limit).
    #[arg(long, env = "TAVLI_MAX_CONNECTION_AGE_SECONDS", value_parser = seconds,
          default_value_t = off_or_secs(defaults().max_connection_age))]
    max_connection_age_seconds: f64,
    /// Seconds the calls in flight may go on after that GOAWAY; then the connection
    /// is closed and they are cancelled (0: no limit).
    #[arg(long, env = "TAVLI_MAX_CONNECTION_AGE_GRACE_SECONDS", value_parser = seconds,
          default_value_t = off_or_secs(defaults().max_connection_age_grace))]
    max_connection_age_grace_seconds: f64,
    /// Seconds between HTTP/2 PINGs the server sends.
    #[arg(long, env = "TAVLI_KEEPALIVE_INTERVAL_SECONDS", value_parser = seconds,
          default_value_t = defaults().keepalive_interval.as_secs_f64())]
    keepalive_interval_seconds: f64,
    /// Seconds to wait for a PING's acknowledgement before closing the connection.
    #[arg(long, env = "TAVLI_KEEPALIVE_TIMEOUT_SECONDS", value_parser = seconds,
          default_value_t = defaults().keepalive_timeout.as_secs_f64())]
    keepalive_timeout_seconds: f64,
    /// Seconds to receive a request's whole body (then DEADLINE_EXCEEDED).
    #[arg(long, env = "TAVLI_REQUEST_BODY_TIMEOUT_SECONDS", value_parser = seconds,
          default_value_t = defaults().request_body_timeout.as_secs_f64())]
    request_body_timeout_seconds: f64,
    /// Seconds a response may wait to be written (the client not reading) before its
    /// connection is closed.
    #[arg(long, env = "TAVLI_SEND_TIMEOUT_SECONDS", value_parser = seconds,
          default_value_t = defaults().send_timeout.as_secs_f64())]
    send_timeout_seconds: f64,
    /// Request and response message bytes held by the server at once; beyond it
    /// RESOURCE_EXHAUSTED.
    #[arg(long, env = "TAVLI_MAX_BUFFERED_BYTES", default_value_t = defaults().max_buffered_bytes)]
    max_buffered_bytes: usize,
    /// The same for one connection (at least --max-message-bytes + 5).
    #[arg(long, env = "TAVLI_MAX_CONNECTION_BUFFERED_BYTES",
          default_value_t = defaults().max_connection_buffered_bytes)]
    max_connection_buffered_bytes: usize,
    /// Engine RPCs of one connection from admission until their answer is written;
    /// more wait (up to the send timeout).
    #[arg(long, env = "TAVLI_CONNECTION_CONCURRENCY_LIMIT",
          default_value_t = defaults().connection_concurrency_limit)]
    connection_concurrency_limit: usize,
    /// Reflection streams open at once.
    #[arg(long, env = "TAVLI_STREAMING_LIMIT", default_value_t = defaults().streaming_limit)]
    streaming_limit: usize,
    /// Health Watch streams of one connection open at once (a client that follows
    /// the service config keeps one per connection).
    #[arg(long, env = "TAVLI_CONNECTION_WATCH_LIMIT",
          default_value_t = defaults().connection_watch_limit)]
    connection_watch_limit: usize,
    /// Deep searches (Evaluate at 1 ply or more, ChoosePlay's best level) running at
    /// once [default: the number of CPUs].
    #[arg(long, env = "TAVLI_DEEP_SEARCH_LIMIT")]
    deep_search_limit: Option<usize>,
    /// Deep searches waiting for a slot; a search that cannot be expected to finish
    /// before its deadline is refused at once.
    #[arg(long, env = "TAVLI_DEEP_SEARCH_QUEUE", default_value_t = defaults().deep_search_queue)]
    deep_search_queue: usize,
    /// Connections open at once on the metrics port.
    #[arg(long, env = "TAVLI_METRICS_MAX_CONNECTIONS",
          default_value_t = defaults().metrics_max_connections)]
    metrics_max_connections: usize,
    /// Compress responses (gzip or zstd) for clients that accept it (true or
    /// false; costs server CPU); compressed requests are accepted either way.
    #[arg(long, env = "TAVLI_COMPRESS_RESPONSES", default_value_t = false,
          action = clap::ArgAction::Set, value_name = "BOOL")]
    compress_responses: bool,
    /// Serve the analysis page (board, plays ranked by equity, over gRPC-Web) on
    /// this address, e.g. 127.0.0.1:8080. Default: off.
    #[arg(long, env = "TAVLI_WEB_ADDR")]
    web_addr: Option<SocketAddr>,
    #[command(flatten)]
    tls: TlsArgs,
    /// Connections open at once on the analysis page's port (--web-addr); same
    /// handshake and send timeouts as the gRPC port.
    #[arg(long, env = "TAVLI_WEB_MAX_CONNECTIONS",
          default_value_t = defaults().web_max_connections)]
    web_max_connections: usize,
    /// Seconds a connection of the analysis page may stay open with no request in
    /// flight.
    #[arg(long, env = "TAVLI_WEB_IDLE_TIMEOUT_SECONDS", value_parser = seconds,
          default_value_t = defaults().web_idle_timeout.as_secs_f64())]
    web_idle_timeout_seconds: f64,
}

/// The server's defaults (one source for the flags and the library).
fn defaults() -> ServerConfig {
    ServerConfig::default()
}

/// An optional duration as a flag's default: its seconds, 0 for none.
fn off_or_secs(d: Option<Duration>) -> f64 {
    d.map_or(0.0, |d| d.as_secs_f64())
}

/// A number of seconds: finite, 0 to one day.
fn seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=MAX_SECONDS).contains(&v) => Ok(v),
        _ => Err(format!(
            "must be a number of seconds from 0 to {MAX_SECONDS}"
        )),
    }
}

#[derive(Args, Debug)]
struct PositionArg {
    /// The position: a Position ID such as
    /// portes/w/24:2,13:5,8:3,6:5/1:2,12:5,17:3,19:5 (docs/formats.md), a GNU
    /// Backgammon ID such as 4HPwATDgc/ABMA with --side, or an XGID such as
    /// XGID=-b----E-C---eE---c-e----B-:0:0:1:00:0:0:0:0:0 (Portes, docs/interop.md).
    #[arg(long, short)]
    position: String,
    /// With a GNU Backgammon ID: the side on roll, white or black.
    #[arg(long)]
    side: Option<String>,
    /// Print proto3 JSON (the shape grpcurl prints) instead of text.
    #[arg(long)]
    json: bool,
}

/// `--position` as the request's position `oneof`.
enum PositionText {
    Id(String),
    Gnubg(pb::GnubgPosition),
    Xgid(String),
}

impl PositionArg {
    /// An XGID starts with `XGID=`; a Position ID always has `:` (each side lists its
    /// checkers); a GNU Backgammon ID never does.
    fn input(&self) -> Result<PositionText, BoxError> {
        if self
            .position
            .get(..5)
            .is_some_and(|p| p.eq_ignore_ascii_case("XGID="))
        {
            return match self.side {
                Some(_) => Err("side: only with a GNU Backgammon ID (an XGID carries the \
                                side to move in its field 4)"
                    .into()),
                None => Ok(PositionText::Xgid(self.position.clone())),
            };
        }
        let gnubg = !self.position.contains(':');
        match (&self.side, gnubg) {
            (None, false) => Ok(PositionText::Id(self.position.clone())),
            (Some(_), false) => Err("side: only with a GNU Backgammon ID (a Position ID \
                                     carries the side to move)"
                .into()),
            (None, true) => Err("side: a GNU Backgammon ID needs --side white or \
                                 --side black (the side on roll)"
                .into()),
            (Some(side), true) => Ok(PositionText::Gnubg(pb::GnubgPosition {
                id: self.position.clone(),
                side_to_move: convert::side_to_pb(Some(parse_side(side)?)) as i32,
            })),
        }
    }
}

/// The position `oneof` of the request message module `$m` from a [`PositionArg`].
macro_rules! position_oneof {
    ($m:ident, $arg:expr) => {
        match $arg.input()? {
            PositionText::Id(id) => pb::$m::Position::PositionId(id),
            PositionText::Gnubg(g) => pb::$m::Position::Gnubg(g),
            PositionText::Xgid(x) => pb::$m::Position::Xgid(x),
        }
    };
}

#[derive(Args, Debug)]
struct PlaysArgs {
    #[command(flatten)]
    pos: PositionArg,
    /// The roll: 6-5, 65 or 6,5.
    #[arg(long, short)]
    dice: String,
    /// Each play with its resulting Position ID only (PLAY_DETAIL_COMPACT; shows in
    /// --json output).
    #[arg(long)]
    compact: bool,
}

#[derive(Args, Debug)]
struct ApplyArgs {
    #[command(flatten)]
    pos: PositionArg,
    /// The roll: 6-5, 65 or 6,5.
    #[arg(long, short)]
    dice: String,
    /// The play in move notation (the mover's own numbering), e.g. "24/18 13/11",
    /// or the Position ID of the resulting position.
    #[arg(long)]
    play: String,
}

#[derive(Args, Debug)]
struct EvalArgs {
    #[command(flatten)]
    pos: PositionArg,
    /// Optional roll: rank the legal plays.
    #[arg(long, short)]
    dice: Option<String>,
    /// Search depth, 0..=2.
    #[arg(long, default_value_t = 0)]
    plies: u32,
    /// With --dice: a play to grade against the best play, in move notation (as
    /// AnalyzeGame grades a turn: its equity at --plies, the error and its mark).
    #[arg(long)]
    grade: Option<String>,
    #[command(flatten)]
    game_match: MatchArgs,
}

/// The match a position is played in (`match_state` of Evaluate and ChoosePlay).
#[derive(Args, Debug)]
struct MatchArgs {
    /// The match being played: its length in points (with --score); the plays are
    /// then ranked by match winning chance (docs/match-equity.md).
    #[arg(long)]
    match_length: Option<u32>,
    /// The match score before this game, White's points then Black's, e.g. 2-1 (with
    /// --match-length; without it, 0-0).
    #[arg(long, requires = "match_length")]
    score: Option<String>,
}

impl MatchArgs {
    /// The request's `match_state`, if a match is given.
    fn state(&self) -> Result<Option<pb::MatchState>, BoxError> {
        let Some(length) = self.match_length else {
            return Ok(None);
        };
        let (white, black) = match self.score.as_deref() {
            None => (0, 0),
            Some(s) => s
                .split_once('-')
                .and_then(|(w, b)| Some((w.trim().parse().ok()?, b.trim().parse().ok()?)))
                .ok_or_else(|| format!("score: {s:?} is not WHITE-BLACK, e.g. 2-1"))?,
        };
        Ok(Some(pb::MatchState {
            length,
            score_white: white,
            score_black: black,
            ..pb::MatchState::default()
        }))
    }
}

#[derive(Args, Debug)]
struct ChooseArgs {
    #[command(flatten)]
    pos: PositionArg,
    /// The roll: 6-5, 65 or 6,5.
    #[arg(long, short)]
    dice: String,
    /// The skill level: beginner, casual, intermediate, advanced, expert, world-class
    /// or best (docs/strength.md, "Skill levels").
    #[arg(long, short, default_value = "best")]
    level: String,
    /// Seed of the noise; the same seed gives the same play [default: a fresh one,
    /// printed].
    #[arg(long)]
    seed: Option<u64>,
    #[command(flatten)]
    game_match: MatchArgs,
    /// The deepest search of any level, as the server's --max-plies (0..=2).
    #[arg(long, default_value_t = MAX_PLIES,
          value_parser = clap::value_parser!(u8).range(0..=MAX_PLIES as i64))]
    max_plies: u8,
}

#[derive(Args, Debug)]
struct ShowArgs {
    #[command(flatten)]
    pos: PositionArg,
}

#[derive(Args, Debug)]
struct StartArgs {
    /// portes, plakoto or fevga.
    #[arg(long, short)]
    variant: String,
    /// The side to move: white or black.
    #[arg(long, default_value = "white")]
    side: String,
    /// Print proto3 JSON instead of text.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        None => serve(cli.serve),
        Some(Command::Serve(args)) => serve(args),
        Some(Command::Plays(a)) => plays(a).and_then(emit),
        Some(Command::Apply(a)) => apply(a).and_then(emit),
        Some(Command::Eval(a)) => eval(a).and_then(emit),
        Some(Command::Choose(a)) => choose(a).and_then(emit),
        Some(Command::Rollout(a)) => cli::rollout::run(a, || service(true)).and_then(emit),
        Some(Command::Start(a)) => start(a).and_then(emit),
        Some(Command::Show(a)) => show(a).and_then(emit),
        Some(Command::Analyze(a)) => cli::analyze::run(a, || service(true)).and_then(emit),
        Some(Command::Met(a)) => cli::met::run(a).and_then(emit),
        Some(Command::Ubgi(a)) => {
            tavli_engine::ubgi::run(std::io::stdin(), std::io::stdout(), a.plies, || {
                Arc::new(tavli_engine::eval::engine::Engine::load_default())
            })
            .map_err(Into::into)
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tavli-engine: {e}");
            ExitCode::from(2)
        }
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Writes a command's whole answer to stdout; a closed pipe (`... | head`) is not an
/// error.
fn emit(text: String) -> Result<(), BoxError> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

fn serve(args: ServeArgs) -> Result<(), BoxError> {
    let secs = Duration::from_secs_f64;
    // 0: no limit.
    let limit = |s: f64| (s > 0.0).then(|| secs(s));
    let config = ServerConfig {
        drain: Duration::from_secs(args.drain_seconds),
        max_message_bytes: args.max_message_bytes,
        concurrency_limit: args.concurrency_limit,
        max_plies: args.max_plies,
        request_timeout: limit(args.request_timeout_seconds),
        long_request_timeout: limit(args.long_request_timeout_seconds),
        evaluator: None,
        max_connections: args.max_connections,
        max_concurrent_streams: args.max_concurrent_streams,
        handshake_timeout: secs(args.handshake_timeout_seconds),
        idle_timeout: secs(args.idle_timeout_seconds),
        max_connection_age: limit(args.max_connection_age_seconds),
        max_connection_age_grace: limit(args.max_connection_age_grace_seconds),
        keepalive_interval: secs(args.keepalive_interval_seconds),
        keepalive_timeout: secs(args.keepalive_timeout_seconds),
        request_body_timeout: secs(args.request_body_timeout_seconds),
        send_timeout: secs(args.send_timeout_seconds),
        max_buffered_bytes: args.max_buffered_bytes,
        max_connection_buffered_bytes: args.max_connection_buffered_bytes,
        connection_concurrency_limit: args.connection_concurrency_limit,
        streaming_limit: args.streaming_limit,
        connection_watch_limit: args.connection_watch_limit,
        deep_search_limit: args.deep_search_limit.unwrap_or_else(cpus),
        deep_search_queue: args.deep_search_queue,
        metrics_max_connections: args.metrics_max_connections,
        max_rollout_trials: args.max_rollout_trials,
        tls: args.tls.load()?,
        compress_responses: args.compress_responses,
        web_max_connections: args.web_max_connections,
        web_idle_timeout: secs(args.web_idle_timeout_seconds),
        log_slow_calls: Some(Duration::from_millis(args.log_slow_calls_ms)),
    };
    // A bad setting is an error at start-up (exit status 2), before anything runs.
    config.validate()?;
    init_tracing(args.log_format);
    // As many descriptors as allowed: the connection limit is checked against them.
    let fd_limit = tavli_engine::service::conn::raise_fd_limit();
    tracing::debug!(?fd_limit, "descriptor limit");
    let config = ServerConfig {
        evaluator: evaluator(),
        ..config
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let result = rt.block_on(async {
        // Signal handlers first: SIGTERM during start-up is a shutdown, not a kill.
        let shutdown = tavli_engine::service::server::shutdown_signal();
        let grpc = listen(args.grpc_addr)
            .map_err(|e| format!("cannot listen on {} (gRPC): {e}", args.grpc_addr))?;
        let metrics = listen(args.metrics_addr)
            .map_err(|e| format!("cannot listen on {} (metrics): {e}", args.metrics_addr))?;
        let web = match args.web_addr {
            Some(addr) => {
                Some(listen(addr).map_err(|e| format!("cannot listen on {addr} (web): {e}"))?)
            }
            None => None,
        };
        tavli_engine::service::serve_with_web(config, grpc, metrics, web, shutdown).await
    });
    // serve has drained and cancelled the remaining work: do not wait on a search
    // that has yet to notice (the runtime would wait for its blocking threads).
    rt.shutdown_timeout(Duration::from_millis(500));
    result
}

/// The service for one CLI command; the evaluator (nets and the bear-off database,
/// built in about 70 ms) only for `eval`.
fn service(with_evaluator: bool) -> TavliEngineService {
    let evaluator = if with_evaluator { evaluator() } else { None };
    TavliEngineService::new(evaluator, MAX_PLIES, None)
}

fn dice_pb(s: &str) -> Result<pb::Dice, ServiceError> {
    Ok(convert::dice_to_pb(Dice::parse(s)?))
}

fn print_json<M: prost::Message>(msg: &M, name: &str) -> String {
    let mut text = serde_json::to_string_pretty(&json::to_json(msg, name)).expect("JSON");
    text.push('\n');
    text
}

fn outcome_text(o: &pb::GameOutcome) -> String {
    let reason = pb::OutcomeReason::try_from(o.reason)
        .map(|r| {
            r.as_str_name()
                .trim_start_matches("OUTCOME_REASON_")
                .to_lowercase()
        })
        .unwrap_or_default();
    match pb::Side::try_from(o.winner) {
        Ok(pb::Side::White) => format!("white wins {} ({reason})", o.points),
        Ok(pb::Side::Black) => format!("black wins {} ({reason})", o.points),
        _ => format!("draw ({reason})"),
    }
}

fn position_id(p: &Option<pb::Position>) -> &str {
    p.as_ref().map_or("", |p| p.position_id.as_str())
}

fn plays(a: PlaysArgs) -> Result<String, BoxError> {
    let req = pb::ListLegalPlaysRequest {
        position: Some(position_oneof!(list_legal_plays_request, a.pos)),
        dice: Some(dice_pb(&a.dice)?),
        detail: if a.compact {
            pb::PlayDetail::Compact
        } else {
            pb::PlayDetail::Full
        } as i32,
    };
    let resp = service(false).list_legal_plays(&req)?;
    if a.pos.json {
        return Ok(print_json(&resp, "tavli.v1.ListLegalPlaysResponse"));
    }
    let n = resp.plays.len();
    let mut out = format!("{n} play{}\n", if n == 1 { "" } else { "s" });
    for p in &resp.plays {
        let id = match &p.position {
            Some(_) => position_id(&p.position),
            None => &p.position_id,
        };
        match p.outcome.as_ref().map(outcome_text) {
            Some(o) => writeln!(out, "{}\t{id}\t{o}", p.notation)?,
            None => writeln!(out, "{}\t{id}", p.notation)?,
        }
    }
    Ok(out)
}

fn apply(a: ApplyArgs) -> Result<String, BoxError> {
    use pb::apply_play_request::Play;
    // A Position ID has slashes and a variant name; notation never starts with a letter
    // other than "bar"/"pass".
    let play = if a.play.contains(':') {
        Play::ResultingPositionId(a.play)
    } else {
        Play::Notation(a.play)
    };
    let req = pb::ApplyPlayRequest {
        position: Some(position_oneof!(apply_play_request, a.pos)),
        dice: Some(dice_pb(&a.dice)?),
        play: Some(play),
    };
    let resp = service(false).apply_play(&req)?;
    if a.pos.json {
        return Ok(print_json(&resp, "tavli.v1.ApplyPlayResponse"));
    }
    let mut out = format!("play: {}\n", resp.notation);
    writeln!(out, "position: {}", position_id(&resp.position))?;
    if let Some(o) = &resp.outcome {
        writeln!(out, "outcome: {}", outcome_text(o))?;
    }
    Ok(out)
}

fn eval(a: EvalArgs) -> Result<String, BoxError> {
    let req = pb::EvaluateRequest {
        position: Some(position_oneof!(evaluate_request, a.pos)),
        dice: a.dice.as_deref().map(dice_pb).transpose()?,
        plies: a.plies,
        grade: a.grade.map(|notation| pb::PlayToGrade {
            play: Some(pb::play_to_grade::Play::Notation(notation)),
            thresholds: None,
        }),
        match_state: a.game_match.state()?,
    };
    let resp = service(true).evaluate(&req, None)?;
    if a.pos.json {
        return Ok(print_json(&resp, "tavli.v1.EvaluateResponse"));
    }
    let p = resp.probabilities.unwrap_or_default();
    let mut out = String::new();
    writeln!(
        out,
        "equity {:+.3}  win {:.3}  win-mars {:.3}  lose {:.3}  lose-mars {:.3}  draw {:.3}  ({}, {} plies)",
        resp.equity, p.win, p.win_mars, p.lose, p.lose_mars, p.draw, resp.evaluator, resp.plies
    )?;
    if let Some(mwc) = resp.match_winning_chance {
        writeln!(
            out,
            "match winning chance {:.2}%  (normalised equity {:+.3}; plays ranked by {})",
            100.0 * mwc,
            resp.normalized_equity.unwrap_or_default(),
            resp.ranking
        )?;
    }
    for (i, r) in resp.ranked_plays.iter().enumerate() {
        let notation = r.play.as_ref().map_or("", |p| p.notation.as_str());
        write!(out, "{:>3}. {notation:<24} {:+.3}", i + 1, r.equity)?;
        if let Some(mwc) = r.match_winning_chance {
            write!(out, "  mwc {:.2}%", 100.0 * mwc)?;
        }
        // A play the move filter left at a lower depth (docs/evaluation.md).
        if r.plies < a.plies {
            write!(out, "  ({}-ply)", r.plies)?;
        }
        out.push('\n');
    }
    if let Some(g) = &resp.grade {
        let name = |p: &Option<pb::Play>| p.as_ref().map_or(String::new(), |p| p.notation.clone());
        let mark = match pb::PlayMark::try_from(g.mark) {
            Ok(pb::PlayMark::Doubtful) => " ?! doubtful",
            Ok(pb::PlayMark::Bad) => " ? bad",
            Ok(pb::PlayMark::VeryBad) => " ?? very bad",
            _ => "",
        };
        writeln!(
            out,
            "grade: {} {:+.3} at {} plies; best {} {:+.3}; error {:.3}{mark}",
            name(&g.play),
            g.equity,
            g.plies,
            name(&g.best_play),
            g.best_equity,
            g.error
        )?;
    }
    Ok(out)
}

fn choose(a: ChooseArgs) -> Result<String, BoxError> {
    use tavli_engine::bot::Level;
    let level = Level::from_name(&a.level).ok_or_else(|| {
        let names: Vec<_> = Level::ALL.iter().map(|l| l.name()).collect();
        format!("level: unknown {:?}: use {}", a.level, names.join(", "))
    })?;
    let proto_name = format!(
        "SKILL_LEVEL_{}",
        level.name().replace('-', "_").to_uppercase()
    );
    let match_state = a.game_match.state()?;
    let req = pb::ChoosePlayRequest {
        position: Some(position_oneof!(choose_play_request, a.pos)),
        dice: Some(dice_pb(&a.dice)?),
        level: pb::SkillLevel::from_str_name(&proto_name).map_or(0, |l| l as i32),
        match_state,
        seed: a.seed,
    };
    let svc = TavliEngineService::new(evaluator(), a.max_plies, None);
    let resp = svc.choose_play(&req, None)?;
    if a.pos.json {
        return Ok(print_json(&resp, "tavli.v1.ChoosePlayResponse"));
    }
    let play = resp.play.unwrap_or_default();
    let mut out = format!("play: {}\n", play.notation);
    writeln!(out, "position: {}", position_id(&play.position))?;
    if let Some(o) = &resp.outcome {
        writeln!(out, "outcome: {}", outcome_text(o))?;
    }
    writeln!(
        out,
        "equity {:+.3}  best {:+.3}  loss {:.3}  ({} level, noise {:.3}, {}, {} plies, ranked by {}, seed {})",
        resp.equity,
        resp.best_equity,
        resp.equity_loss,
        level.name(),
        resp.noise,
        resp.evaluator,
        resp.plies,
        resp.ranking,
        resp.seed
    )?;
    if let (Some(m), Some(b)) = (resp.match_winning_chance, resp.best_match_winning_chance) {
        writeln!(
            out,
            "match winning chance {:.2}%  best {:.2}%  (equity above: normalised)",
            100.0 * m,
            100.0 * b
        )?;
    }
    Ok(out)
}

fn start(a: StartArgs) -> Result<String, BoxError> {
    let variant = Variant::from_name(&a.variant).ok_or_else(|| {
        format!(
            "variant: unknown {:?}: use portes, plakoto or fevga",
            a.variant
        )
    })?;
    let side = parse_side(&a.side)?;
    let req = pb::GetStartingPositionRequest {
        variant: convert::variant_to_pb(variant) as i32,
        side_to_move: convert::side_to_pb(Some(side)) as i32,
    };
    let resp = service(false).get_starting_position(&req)?;
    if a.json {
        Ok(print_json(&resp, "tavli.v1.GetStartingPositionResponse"))
    } else {
        Ok(format!("{}\n", position_id(&resp.position)))
    }
}

fn parse_side(text: &str) -> Result<Side, BoxError> {
    match text.to_ascii_lowercase().as_str() {
        "white" | "w" => Ok(Side::White),
        "black" | "b" => Ok(Side::Black),
        other => Err(format!("side: use white or black, not {other:?}").into()),
    }
}

fn show(a: ShowArgs) -> Result<String, BoxError> {
    use convert::PositionInput;
    let input = a.pos.input()?;
    let pos = convert::position_input(Some(match &input {
        PositionText::Id(id) => PositionInput::Id(id),
        PositionText::Gnubg(g) => PositionInput::Gnubg(g),
        PositionText::Xgid(x) => PositionInput::Xgid(x),
    }))?;
    if a.pos.json {
        return Ok(print_json(
            &convert::position_to_pb(&pos),
            "tavli.v1.Position",
        ));
    }
    Ok(tavli_engine::board_text::render(&pos))
}
