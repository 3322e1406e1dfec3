//! `AnalyzeGame` over the real server: the stream of a Tavli match and of a GNU
//! Backgammon export, errors before the stream, the deadline and cancellation.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tavli_engine::eval::engine::Engine;
use tavli_engine::eval::{EvalOptions, PositionEvaluator};
use tavli_engine::record::MatchRecord;
use tavli_engine::rules::{Dice, Position};
use tavli_engine::service::pb::analyze_game_response::Item;
use tavli_engine::service::pb::tavli_engine_client::TavliEngineClient;
use tavli_engine::service::pb::{self, analyze_game_request::Record};
use tavli_engine::service::ServerConfig;
use tonic::transport::Channel;
use tonic::Code;
use tonic_types::StatusExt;

mod common;
use common::{Counting, TestServer};

struct Server {
    server: TestServer,
    calls: Arc<AtomicUsize>,
    deadline: Arc<Mutex<Option<Instant>>>,
}

async fn start(concurrency_limit: usize) -> Server {
    start_with(ServerConfig {
        concurrency_limit,
        ..ServerConfig::default()
    })
    .await
}

/// A server of `config` with the counting evaluator.
async fn start_with(config: ServerConfig) -> Server {
    let calls = Arc::new(AtomicUsize::new(0));
    let deadline = Arc::new(Mutex::new(None));
    let config = ServerConfig {
        evaluator: Some(Arc::new(Counting {
            inner: Engine::load_default(),
            calls: calls.clone(),
            deadline: deadline.clone(),
        })),
        ..config
    };
    Server {
        server: TestServer::start(config).await,
        calls,
        deadline,
    }
}

impl Server {
    async fn client(&self) -> TavliEngineClient<Channel> {
        self.server.client().await
    }
}

fn file(path: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/data/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn text_request(text: String, plies: u32) -> pb::AnalyzeGameRequest {
    pb::AnalyzeGameRequest {
        record: Some(Record::Text(text)),
        plies,
        luck_plies: 0,
        thresholds: None,
        rollout: None,
    }
}

async fn collect(
    client: &mut TavliEngineClient<Channel>,
    req: pb::AnalyzeGameRequest,
) -> Vec<Item> {
    let mut stream = client.analyze_game(req).await.unwrap().into_inner();
    let mut out = Vec::new();
    while let Some(m) = stream.message().await.unwrap() {
        out.push(m.item.unwrap());
    }
    out
}

/// `e` is INVALID_ARGUMENT with the message `field: reason` and a BadRequest detail
/// naming `field`.
fn assert_invalid(e: &tonic::Status, field: &str, reason: &str) {
    assert_eq!(e.code(), Code::InvalidArgument);
    assert_eq!(e.message(), format!("{field}: {reason}"));
    assert_eq!(
        e.get_details_bad_request().unwrap().field_violations[0].field,
        field
    );
}

#[tokio::test]
async fn tavli_match_streams_every_turn_then_the_summaries() {
    let server = start(64).await;
    let mut client = server.client().await;
    let text = file("tavli/tavli-3p-match.mat");
    let turns = MatchRecord::parse(&text).unwrap().turn_count();
    let items = collect(&mut client, text_request(text.clone(), 0)).await;
    let Item::Record(r) = &items[0] else {
        panic!("{:?}", items[0])
    };
    assert_eq!((r.match_length, r.games, r.turns as usize), (3, 3, turns));
    assert_eq!(r.text, text);
    let turn_items = self::turns(&items);
    assert_eq!(turn_items.len(), turns);
    let first = &turn_items[0];
    assert_eq!(
        (
            first.game,
            first.turn,
            first.player.as_str(),
            first.play.as_str()
        ),
        (1, 1, "eleni", "13/8 24/22")
    );
    assert_eq!(
        first.position.as_ref().unwrap().position_id,
        "portes/w/24:2,13:5,8:3,6:5/1:2,12:5,17:3,19:5"
    );
    assert!(turn_items
        .iter()
        .all(|t| t.error >= 0.0 && t.evaluation == "0-ply"));
    assert_eq!(
        games(&items)
            .iter()
            .map(|g| (g.variant, g.result.as_str()))
            .collect::<Vec<_>>(),
        [
            (pb::Variant::Portes as i32, "white wins 2 (mars)"),
            (pb::Variant::Plakoto as i32, "black wins 2 (mother_pinned)"),
            (pb::Variant::Fevga as i32, "black wins 2 (mars)"),
        ]
    );
    let Some(Item::Summary(s)) = items.last() else {
        panic!("no summary")
    };
    assert_eq!(s.games, 3);
    assert_eq!((s.players[0].moves + s.players[1].moves) as usize, turns);
    assert_eq!(s.players[0].player, "eleni");
    let marked: u32 = s
        .players
        .iter()
        .map(|p| p.doubtful + p.bad + p.very_bad)
        .sum();
    let flagged = turn_items.iter().filter(|t| t.mark != 0).count() as u32;
    assert_eq!(marked, flagged);
}

#[tokio::test]
async fn gnubg_export_is_analysed_with_its_cube_actions_noted() {
    let server = start(64).await;
    let mut client = server.client().await;
    let items = collect(
        &mut client,
        text_request(file("mat/gnubg-5p-drop-left.mat"), 0),
    )
    .await;
    let notes: Vec<Vec<String>> = games(&items).into_iter().map(|g| g.notes).collect();
    assert_eq!(
        notes[0],
        ["2 cube actions read and not analysed: Tavli is cubeless; the plays are analysed cubeless"]
    );
    assert_eq!(notes.len(), 3);
}

#[tokio::test]
async fn bad_records_are_invalid_argument_before_the_stream() {
    let server = start(64).await;
    let mut client = server.client().await;
    let text = file("mat/gnubg-5p-drop-left.mat")
        .replace("  2) 65: 24/18 18/13 ", "  2) 65: 24/18 18/12 ");
    let e = client
        .analyze_game(text_request(text, 0))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(
        e.message().starts_with(
            "text: line 8, game 1, move 2 (left, white): \"24/18 18/12\" is not a legal play \
             for 6-5; legal plays (notation, mover's own numbering): "
        ),
        "{}",
        e.message()
    );
    assert_eq!(
        e.get_details_bad_request().unwrap().field_violations[0].field,
        "text"
    );

    // Structured turns: the field path names the turn (R8.2: Fevga's first checker).
    let req = pb::AnalyzeGameRequest {
        record: Some(Record::Structured(pb::MatchRecord {
            match_length: 1,
            white_player: String::new(),
            black_player: String::new(),
            games: vec![pb::RecordedGame {
                variant: pb::Variant::Fevga as i32,
                starter: pb::Side::White as i32,
                opening_die_white: 0,
                opening_die_black: 0,
                turns: vec![
                    pb::RecordedTurn {
                        dice: Some(pb::Dice { die1: 6, die2: 6 }),
                        play: "24/18".into(),
                    },
                    pb::RecordedTurn {
                        dice: Some(pb::Dice { die1: 3, die2: 1 }),
                        play: "24/21 24/23".into(),
                    },
                ],
                result: None,
            }],
        })),
        plies: 0,
        luck_plies: 0,
        thresholds: None,
        rollout: None,
    };
    let e = client.analyze_game(req).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert_eq!(
        e.message(),
        "structured.games[0].turns[1].play: game 1, move 1 (right, black): \"24/21 24/23\" is \
         not a legal play for 3-1; legal plays (notation, mover's own numbering): 24/21/20"
    );

    let e = client
        .analyze_game(text_request(file("tavli/tavli-3p-match.mat"), 3))
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), e.message()),
        (
            Code::InvalidArgument,
            "plies: plies must be 0..2 on this server, got 3"
        )
    );
    let mut req = text_request(file("tavli/tavli-3p-match.mat"), 0);
    req.thresholds = Some(pb::MarkThresholds {
        doubtful: 0.2,
        bad: 0.1,
        very_bad: 0.0,
    });
    let e = client.analyze_game(req).await.unwrap_err();
    assert_eq!(
        e.message(),
        "thresholds: thresholds must grow: doubtful 0.2 <= bad 0.1 <= very bad 0.16"
    );
}

#[tokio::test]
async fn the_deadline_ends_the_stream() {
    let server = start(64).await;
    let mut client = server.client().await;
    let mut req = tonic::Request::new(text_request(file("tavli/tavli-3p-match.mat"), 2));
    req.set_timeout(Duration::from_millis(400));
    let mut stream = client.analyze_game(req).await.unwrap().into_inner();
    let mut turns = 0;
    let status = loop {
        match stream.message().await {
            Ok(Some(m)) => turns += usize::from(matches!(m.item, Some(Item::Turn(_)))),
            Ok(None) => panic!("the analysis finished within 400 ms"),
            Err(s) => break s,
        }
    };
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert_eq!(
        status.message(),
        "the client's deadline (grpc-timeout 0.4 s) passed"
    );
    assert!(turns < 182, "{turns}");
}

/// The stream of `req` to its end: the messages, and the error it ended with.
async fn until_the_end(
    client: &mut TavliEngineClient<Channel>,
    req: tonic::Request<pb::AnalyzeGameRequest>,
) -> (Vec<Item>, Option<tonic::Status>) {
    let mut stream = client.analyze_game(req).await.unwrap().into_inner();
    let mut items = Vec::new();
    loop {
        match stream.message().await {
            Ok(Some(m)) => items.push(m.item.unwrap()),
            Ok(None) => return (items, None),
            Err(s) => return (items, Some(s)),
        }
    }
}

/// The server's limit of the long RPCs ends an analysis with DEADLINE_EXCEEDED (not
/// CANCELLED) naming its flag; the limit of the other RPCs does not apply to it.
#[tokio::test]
async fn the_server_limit_ends_the_stream_and_names_its_flag() {
    let server = start_with(ServerConfig {
        request_timeout: Some(Duration::from_millis(1)),
        long_request_timeout: Some(Duration::from_millis(400)),
        ..ServerConfig::default()
    })
    .await;
    let mut client = server.client().await;
    let req = tonic::Request::new(text_request(file("tavli/tavli-3p-match.mat"), 2));
    let (items, end) = until_the_end(&mut client, req).await;
    let status = end.expect("the analysis finished within 400 ms");
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert_eq!(
        status.message(),
        "the server's --long-request-timeout-seconds (0.4 s) passed"
    );
    assert!(matches!(items[0], Item::Record(_)));
    assert!(turns(&items).len() < 182);
}

/// A client that stops reading while the analysis runs into its deadline still gets
/// the stream's end as DEADLINE_EXCEEDED naming the limit once it reads again (the
/// stream never looks complete): the messages queued, then the error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_stream_still_ends_with_the_deadline() {
    use tavli_engine::service::analyze::spawn_analysis;
    use tavli_engine::service::limits::{Deadline, DeadlineLimit};
    use tavli_engine::service::TavliEngineService;
    use tokio_stream::StreamExt;
    let svc = TavliEngineService::new(Some(Arc::new(Engine::load_default())), 2, None);
    let prepared = svc
        .prepare_analysis(&text_request(file("tavli/tavli-3p-match.mat"), 0))
        .unwrap();
    let after = Duration::from_millis(500);
    let deadline = Deadline {
        at: Instant::now() + after,
        limit: DeadlineLimit::Server {
            flag: "long-request-timeout-seconds",
            after,
        },
    };
    let stream = spawn_analysis(
        prepared,
        Some(deadline),
        tavli_engine::eval::CancelToken::new(),
        (),
    );
    // Nothing read until well after the deadline.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let all: Vec<_> = stream.collect().await;
    let (last, messages) = all.split_last().unwrap();
    assert!(messages.iter().all(Result::is_ok));
    assert!(messages.len() < 182, "{}", messages.len());
    let status = last.as_ref().unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert_eq!(
        status.message(),
        "the server's --long-request-timeout-seconds (0.5 s) passed"
    );
}

/// With the server's defaults an analysis runs under
/// `--long-request-timeout-seconds` (600 s), not `--request-timeout-seconds` (30 s):
/// the reported case, a 600 s client deadline, reaches the work whole, and without
/// a client deadline the work has the server's 600 s. At 0.078 s of one core per
/// turn at 2 plies (docs/api.md, "Deadlines and the cost of the long calls"), a
/// 7-game match (about 500 turns) is about 40 s of one core:
/// `seven_games_at_two_plies_fit_the_defaults` runs one (202 s on a busy machine).
#[tokio::test]
async fn an_analysis_has_the_long_limit_by_default() {
    assert_eq!(
        ServerConfig::default().long_request_timeout,
        Some(Duration::from_secs(600))
    );
    assert_eq!(
        ServerConfig::default().request_timeout,
        Some(Duration::from_secs(30))
    );
    let server = start_with(ServerConfig::default()).await;
    let mut client = server.client().await;
    let text =
        " 1 point match\n\n Game 1 Portes opening 4-2\n alice : 0      bob : 0\n  1) 31: 8/5 6/5\n";
    for client_deadline in [Some(Duration::from_secs(600)), None] {
        let mut req = tonic::Request::new(text_request(text.to_string(), 2));
        if let Some(d) = client_deadline {
            req.set_timeout(d);
        }
        let sent = Instant::now();
        let (items, end) = until_the_end(&mut client, req).await;
        assert!(end.is_none(), "{end:?}");
        assert!(matches!(items.last(), Some(Item::Summary(_))));
        let left = server
            .deadline
            .lock()
            .unwrap()
            .expect("a deadline")
            .saturating_duration_since(sent);
        // Set when the server received the request, after `sent`.
        assert!(
            left >= Duration::from_secs(600) && left <= Duration::from_secs(600) + sent.elapsed(),
            "{client_deadline:?}: {left:?}"
        );
    }
}

/// A match of `games` games (Portes, Plakoto, Fevga, ...) played by the committed
/// nets at 0 ply with seeded dice, as a structured record: each game to its end, the
/// winner starting the next (R2).
fn self_play_match(games: usize, seed: u64) -> pb::MatchRecord {
    use rand::{Rng, SeedableRng};
    use tavli_engine::rules::{legal_plays, Side, Variant};
    let engine = Engine::load_default();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut starter = Side::White;
    let mut variant = Variant::Portes;
    let mut out = Vec::new();
    for _ in 0..games {
        let mut pos = Position::start(variant, starter);
        let mut turns = Vec::new();
        let winner = loop {
            let dice = Dice::new(rng.random_range(1..=6), rng.random_range(1..=6)).unwrap();
            let play = match legal_plays(&pos, dice).unwrap().len() {
                1 => legal_plays(&pos, dice).unwrap().remove(0),
                _ => {
                    engine
                        .rank_plays(&pos, dice, EvalOptions::default())
                        .unwrap()
                        .remove(0)
                        .play
                }
            };
            turns.push(pb::RecordedTurn {
                dice: Some(tavli_engine::service::convert::dice_to_pb(dice)),
                play: play.notation.to_string(),
            });
            pos = play.position;
            if let Some(o) = play.outcome {
                break o.winner;
            }
        };
        out.push(pb::RecordedGame {
            variant: tavli_engine::service::convert::variant_to_pb(variant) as i32,
            starter: tavli_engine::service::convert::side_to_pb(Some(starter)) as i32,
            turns,
            ..Default::default()
        });
        starter = winner.unwrap_or(Side::White);
        variant = variant.next_in_match();
    }
    pb::MatchRecord {
        games: out,
        ..Default::default()
    }
}

/// The reported case whole: a 7-game match (533 turns) analysed at 2 plies with the
/// server's defaults and a 600 s client deadline completes. About 40 s of one core,
/// 202 s on a busy 2-core machine (so ignored, over a minute): `cargo test --release
/// --test analyze_service -- --ignored seven_games`.
#[tokio::test]
#[ignore]
async fn seven_games_at_two_plies_fit_the_defaults() {
    let server = start_with(ServerConfig::default()).await;
    let mut client = server.client().await;
    let record = self_play_match(7, 33);
    let turns_in_record: usize = record.games.iter().map(|g| g.turns.len()).sum();
    let mut req = tonic::Request::new(pb::AnalyzeGameRequest {
        record: Some(Record::Structured(record)),
        plies: 2,
        ..Default::default()
    });
    req.set_timeout(Duration::from_secs(600));
    let t = Instant::now();
    let (items, end) = until_the_end(&mut client, req).await;
    assert!(end.is_none(), "{end:?} after {:?}", t.elapsed());
    assert_eq!(turns(&items).len(), turns_in_record);
    assert!(matches!(items.last(), Some(Item::Summary(s)) if s.games == 7));
    eprintln!(
        "7 games, {turns_in_record} turns at 2 plies: {:.1} s",
        t.elapsed().as_secs_f64()
    );
}

#[tokio::test]
async fn a_dropped_stream_stops_the_work_and_frees_its_place() {
    // One RPC at a time: while the analysis streams, nothing else is served.
    let server = start(1).await;
    let mut client = server.client().await;
    let mut stream = client
        .analyze_game(text_request(file("tavli/tavli-3p-match.mat"), 2))
        .await
        .unwrap()
        .into_inner();
    let first = stream.message().await.unwrap().unwrap();
    assert!(matches!(first.item, Some(Item::Record(_))));
    let busy = client
        .get_starting_position(pb::GetStartingPositionRequest {
            variant: pb::Variant::Portes as i32,
            side_to_move: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(busy.code(), Code::ResourceExhausted);
    drop(stream);
    // The evaluator stops being called, and the place is free again.
    let mut last = server.calls.load(Ordering::Relaxed);
    let mut still = 0;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = server.calls.load(Ordering::Relaxed);
        still = if now == last { still + 1 } else { 0 };
        last = now;
        if still >= 4 {
            break;
        }
    }
    assert!(still >= 4, "the evaluator is still being called");
    client
        .get_starting_position(pb::GetStartingPositionRequest {
            variant: pb::Variant::Portes as i32,
            side_to_move: 0,
        })
        .await
        .unwrap();
}

/// The opening blunder of tests/analysis.rs (R4: 3-1 played 8/5 8/7).
const BLUNDER: &str =
    " 1 point match\n\n Game 1 Portes opening 4-2\n alice : 0                      bob : 0\n  1) 31: 8/5 8/7\n";

#[tokio::test]
async fn flagged_plays_are_rolled_out_when_asked() {
    let server = start(64).await;
    let mut client = server.client().await;
    let mut req = text_request(BLUNDER.to_string(), 0);
    req.rollout = Some(pb::AnalysisRollout {
        plies: 0,
        trials: 36,
        seed: 5,
        candidates: 2,
    });
    let items = collect(&mut client, req.clone()).await;
    let Some(Item::Turn(t)) = items.get(1) else {
        panic!("{items:?}")
    };
    assert_eq!(t.evaluation, "rollout");
    let r = t.rollout.as_ref().expect("rolled out");
    // The play made and the two best of the ranking, each 36 trials at 0 ply.
    assert_eq!((r.trials, r.plies, r.candidates), (36, 0, 3));
    assert_eq!(r.search_best_play, "8/5 6/5");
    assert!(r.search_error > 0.16 && r.search_mark == pb::PlayMark::VeryBad as i32);
    assert!((t.best_equity - t.played_equity - t.error).abs() < 1e-6);
    assert!(r.played_equity_standard_error > 0.0 && r.best_equity_standard_error > 0.0);
    // The same request gives the same answers (the seed fixes the dice).
    assert_eq!(collect(&mut client, req).await, items);
}

#[tokio::test]
async fn bad_rollout_options_are_invalid_argument() {
    // Request checks (server limits), not rules of RULES.md; the record is R4's blunder.
    let server = start(64).await;
    let mut client = server.client().await;
    let cases = [
        (
            pb::AnalysisRollout {
                plies: 2,
                ..Default::default()
            },
            "rollout.plies",
            "rollouts choose plays at 0..1 plies on this server, got 2",
        ),
        (
            pb::AnalysisRollout {
                trials: 46_657,
                ..Default::default()
            },
            "rollout.trials",
            "at most 46656 trials on this server, got 46657",
        ),
        (
            pb::AnalysisRollout {
                candidates: 9,
                ..Default::default()
            },
            "rollout.candidates",
            "at most 8 candidate plays, got 9",
        ),
    ];
    for (rollout, field, reason) in cases {
        let mut req = text_request(BLUNDER.to_string(), 0);
        req.rollout = Some(rollout);
        let e = client.analyze_game(req).await.unwrap_err();
        assert_invalid(&e, field, reason);
    }
}

#[tokio::test]
async fn structured_records_are_bounded() {
    // Service limits (src/record MAX_GAMES, MAX_PLAYER_NAME), not rules of RULES.md.
    let server = start(64).await;
    let mut client = server.client().await;
    let game = pb::RecordedGame {
        variant: pb::Variant::Portes as i32,
        starter: pb::Side::White as i32,
        opening_die_white: 0,
        opening_die_black: 0,
        turns: Vec::new(),
        result: None,
    };
    let record = |white: &str, games: usize| pb::AnalyzeGameRequest {
        record: Some(Record::Structured(pb::MatchRecord {
            match_length: 0,
            white_player: white.to_string(),
            black_player: "nikos".to_string(),
            games: vec![game.clone(); games],
        })),
        ..Default::default()
    };
    let cases = [
        (
            record(&"e".repeat(65), 1),
            "structured.white_player",
            "a player's name has at most 64 characters",
        ),
        (
            record("eleni\n Game 2", 1),
            "structured.white_player",
            "a player's name has no control characters (line breaks, tabs, ...)",
        ),
        (
            record("eleni", 1001),
            "structured.games",
            "the record has 1001 games; at most 1000 per record",
        ),
    ];
    for (req, field, reason) in cases {
        let e = client.analyze_game(req).await.unwrap_err();
        assert_invalid(&e, field, reason);
    }
    // A 64-character name is read (and each empty game is a game not finished).
    let items = collect(&mut client, record(&"é".repeat(64), 2)).await;
    let Some(Item::Summary(s)) = items.last() else {
        panic!("{items:?}")
    };
    assert_eq!(
        (s.games, s.players[0].player.as_str()),
        (2, "é".repeat(64).as_str())
    );
}

/// The messages of one kind of an AnalyzeGame stream, `pick` saying which.
fn of_kind<T: Clone>(items: &[Item], pick: impl Fn(&Item) -> Option<&T>) -> Vec<T> {
    items.iter().filter_map(pick).cloned().collect()
}

/// The turns of an AnalyzeGame stream.
fn turns(items: &[Item]) -> Vec<pb::TurnAnalysis> {
    of_kind(
        items,
        |i| if let Item::Turn(t) = i { Some(t) } else { None },
    )
}

/// The game summaries of an AnalyzeGame stream.
fn games(items: &[Item]) -> Vec<pb::GameSummary> {
    of_kind(
        items,
        |i| if let Item::Game(g) = i { Some(g) } else { None },
    )
}

/// Grades each turn's play with `Evaluate` (`grade`) and checks that the loss, the
/// mark, both equities and the best play are exactly AnalyzeGame's for that turn;
/// `scores[g]` is the match state before game `g` (0-based) of a match record, with
/// which Evaluate grades by match winning chance as AnalyzeGame does (and gives the
/// same MWCs), or `None` (money play).
/// Returns how many turns had their play left at 0 plies by the ranking's move
/// filter with an error, and how many of those a hint read off the ranking (best
/// equity minus the play's ranked equity) would have got wrong.
async fn grades_match_the_analysis(
    client: &mut TavliEngineClient<Channel>,
    analysed: &[pb::TurnAnalysis],
    plies: u32,
    scores: &[Option<pb::MatchState>],
) -> (usize, usize) {
    let (mut filtered, mut naive_differs) = (0, 0);
    for t in analysed {
        let what = format!("game {} turn {} at {plies} plies", t.game, t.turn);
        let resp = client
            .evaluate(pb::EvaluateRequest {
                match_state: scores[t.game as usize - 1],
                position: Some(pb::evaluate_request::Position::Structured(
                    t.position.clone().unwrap(),
                )),
                dice: t.dice,
                plies,
                grade: Some(pb::PlayToGrade {
                    play: Some(pb::play_to_grade::Play::Notation(t.play.clone())),
                    thresholds: None,
                }),
            })
            .await
            .unwrap()
            .into_inner();
        let g = resp.grade.unwrap();
        assert_eq!(g.play.as_ref().unwrap().notation, t.play, "{what}");
        assert_eq!(g.error.to_bits(), t.error.to_bits(), "{what}");
        assert_eq!(g.mark, t.mark, "{what}");
        assert_eq!(g.equity.to_bits(), t.played_equity.to_bits(), "{what}");
        assert_eq!(g.best_equity.to_bits(), t.best_equity.to_bits(), "{what}");
        assert_eq!(g.best_play.unwrap().notation, t.best_play, "{what}");
        assert_eq!((g.legal_plays, g.plies), (t.legal_plays, plies), "{what}");
        assert_eq!(g.probabilities, t.probabilities, "{what}");
        assert_eq!(g.match_winning_chance, t.match_winning_chance, "{what}");
        let best_mwc = (g.best_match_winning_chance, t.best_match_winning_chance);
        assert_eq!(best_mwc.0, best_mwc.1, "{what}");
        assert_eq!(g.match_winning_chance.is_some(), scores[0].is_some());
        let ranked = &resp.ranked_plays;
        let mine = ranked
            .iter()
            .find(|r| r.play.as_ref().unwrap().notation == t.play)
            .unwrap();
        if mine.plies < plies && t.error > 0.0 {
            filtered += 1;
            let value = |r: &pb::RankedPlay| r.normalized_equity.unwrap_or(r.equity);
            let naive = value(&ranked[0]) - value(mine);
            naive_differs += usize::from(naive.to_bits() != t.error.to_bits());
        }
    }
    (filtered, naive_differs)
}

/// A hint from `Evaluate` grades a play exactly as AnalyzeGame does: the same loss,
/// mark and equities for every turn of the Tavli match (Portes, Plakoto, Fevga) at
/// 1 ply, and for the first turns of each game at 2 plies; among them plays the
/// ranking left at 0 plies, whose loss read off the ranking would differ. The
/// 3-point match is analysed by match winning chance, each game at its score (the
/// record's score lines), and Evaluate given that score grades the same; the
/// structured record has no length (money play).
#[tokio::test]
async fn evaluate_grades_a_play_as_analyze_game_does() {
    let server = start(64).await;
    let mut client = server.client().await;
    let text = file("tavli/tavli-3p-match.mat");
    let items = collect(&mut client, text_request(text.clone(), 1)).await;
    let Some(Item::Record(head)) = items.first() else {
        panic!("{items:?}")
    };
    assert_eq!(head.error_measure, "normalized_equity");
    assert!(games(&items)
        .iter()
        .all(|g| g.error_measure == "normalized_equity"));
    let one_ply = turns(&items);
    assert_eq!(one_ply.len(), 182);
    let record = MatchRecord::parse(&text).unwrap();
    assert_eq!(record.length, 3);
    let scores: Vec<_> = record
        .games
        .iter()
        .map(|g| {
            Some(pb::MatchState {
                length: 3,
                score_white: g.score[0],
                score_black: g.score[1],
                ..Default::default()
            })
        })
        .collect();
    let (filtered, naive) = grades_match_the_analysis(&mut client, &one_ply, 1, &scores).await;
    assert!(filtered > 0 && naive > 0, "{filtered} {naive}");

    // The first 8 turns of each game, as a structured record, at 2 plies.
    let games = record
        .games
        .iter()
        .map(|g| {
            let plays: Vec<_> = g
                .actions
                .iter()
                .filter_map(|a| match &a.kind {
                    tavli_engine::record::ActionKind::Play(t) => Some(t),
                    _ => None,
                })
                .take(8)
                .collect();
            pb::RecordedGame {
                variant: tavli_engine::service::convert::variant_to_pb(g.variant) as i32,
                starter: tavli_engine::service::convert::side_to_pb(Some(plays[0].position.turn))
                    as i32,
                turns: plays
                    .iter()
                    .map(|t| pb::RecordedTurn {
                        dice: Some(tavli_engine::service::convert::dice_to_pb(t.dice)),
                        play: t.play.notation.to_string(),
                    })
                    .collect(),
                ..Default::default()
            }
        })
        .collect();
    let req = pb::AnalyzeGameRequest {
        record: Some(Record::Structured(pb::MatchRecord {
            games,
            ..Default::default()
        })),
        plies: 2,
        ..Default::default()
    };
    let two_ply = turns(&collect(&mut client, req).await);
    assert_eq!(two_ply.len(), 24);
    grades_match_the_analysis(&mut client, &two_ply, 2, &[None, None, None]).await;
}

/// A structured match whose games end by resignation and time-out (the project's
/// rules, docs/api.md "Resignation and time-out"): recorded, analysed turn by turn,
/// the next game started by the winner, the result and its note in each game's
/// summary; a time-out with points other than its rule's is INVALID_ARGUMENT on the
/// game's `result`.
#[tokio::test]
async fn resigned_and_timed_out_games_are_analysed() {
    let server = start(64).await;
    let mut client = server.client().await;
    let turn = |d1, d2, play: &str| pb::RecordedTurn {
        dice: Some(pb::Dice { die1: d1, die2: d2 }),
        play: play.into(),
    };
    let outcome = |w: pb::Side, points, reason: pb::OutcomeReason| pb::GameOutcome {
        winner: w as i32,
        points,
        reason: reason as i32,
    };
    let record = |time_out_points| pb::MatchRecord {
        match_length: 5,
        white_player: "eleni".into(),
        black_player: "nikos".into(),
        games: vec![
            pb::RecordedGame {
                variant: pb::Variant::Portes as i32,
                starter: pb::Side::White as i32,
                turns: vec![
                    turn(2, 5, "13/8 24/22"),
                    turn(5, 1, "13/8 24/23"),
                    turn(3, 6, "22/16/13"),
                ],
                result: Some(outcome(pb::Side::White, 1, pb::OutcomeReason::Resignation)),
                ..Default::default()
            },
            pb::RecordedGame {
                variant: pb::Variant::Plakoto as i32,
                turns: vec![turn(6, 1, "24/18 24/23"), turn(2, 6, "24/18 24/22")],
                result: Some(outcome(
                    pb::Side::Black,
                    time_out_points,
                    pb::OutcomeReason::TimeOut,
                )),
                ..Default::default()
            },
        ],
    };
    let req = |r| pb::AnalyzeGameRequest {
        record: Some(Record::Structured(r)),
        ..Default::default()
    };
    let items = collect(&mut client, req(record(2))).await;
    let Item::Record(r) = &items[0] else {
        panic!("{:?}", items[0])
    };
    assert_eq!((r.games, r.turns), (2, 5));
    assert!(
        r.text
            .contains("\n      Wins 1 point\n\n Game 2 Plakoto\n eleni : 1"),
        "{}",
        r.text
    );
    assert!(
        r.text.ends_with(
            "26: 24/18 24/22\n                                  Wins 2 points (time-out)\n\n"
        ),
        "{}",
        r.text
    );
    // R2: White won game 1 by resignation, so White plays game 2's first turn.
    let analysed = turns(&items);
    assert_eq!(analysed.len(), 5);
    assert_eq!(
        (analysed[3].game, analysed[3].turn, analysed[3].side),
        (2, 1, pb::Side::White as i32)
    );
    let summaries = games(&items);
    assert_eq!(summaries[0].result, "white wins 1 (resignation)");
    assert_eq!(summaries[0].notes, ["ended by resignation"]);
    assert_eq!(summaries[1].result, "black wins 2 (time-out)");
    assert_eq!(summaries[1].notes, ["ended by time-out"]);
    assert!(matches!(items.last(), Some(Item::Summary(s)) if s.games == 2));

    // White, whose time ran out, had borne off nothing: 2 points, not 1.
    let e = client.analyze_game(req(record(1))).await.unwrap_err();
    assert_invalid(
        &e,
        "structured.games[1].result",
        "game 2: a time-out scores 2, not 1: white had borne off 0 checkers (2 points when \
         none, as a mars, R7; otherwise 1)",
    );
}
