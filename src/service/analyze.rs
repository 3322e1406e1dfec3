//! `AnalyzeGame`: the request checked and turned into a record and options
//! ([`TavliEngineService::prepare_analysis`]), the analysis run
//! ([`crate::analysis::analyze`]) with every result converted to a stream message
//! ([`run_analysis`]), and the tonic stream that cancels the work when it is dropped
//! ([`CancelOnDrop`]). The CLI (`tavli-engine analyze`) calls the same two functions.

use super::api::TavliEngineService;
use super::convert;
use super::error::ServiceError;
use super::limits::{name_deadline, Deadline};
use super::pb;
use crate::analysis::{self, AnalysisOptions, Event, LuckMark, PlayerStats, RolloutCheck};
use crate::eval::{CancelToken, PositionEvaluator};
use crate::record::{check_size, GameInput, MatchRecord, RecordError, TurnInput};
use crate::rules::Side;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;
use tonic::Status;

/// A checked `AnalyzeGame` request: the replayed record, the options and the
/// evaluator.
pub struct PreparedAnalysis {
    /// The record, every play resolved.
    pub record: MatchRecord,
    /// Depths and thresholds (deadline and cancellation are set by [`run_analysis`]).
    pub options: AnalysisOptions,
    evaluator: Arc<dyn PositionEvaluator>,
}

/// At most this many legal plays are listed in an error about a play.
const LEGAL_LISTED: usize = 12;

/// The reason text of a record error: its place and message, then the legal plays.
fn record_reason(e: &RecordError) -> String {
    let mut s = e.to_string();
    if !e.legal.is_empty() {
        let more = e.legal.len().saturating_sub(LEGAL_LISTED);
        s.push_str("; legal plays (notation, mover's own numbering): ");
        s.push_str(&e.legal[..e.legal.len().min(LEGAL_LISTED)].join(", "));
        if more > 0 {
            s.push_str(&format!(" and {more} more"));
        }
    }
    s
}

/// The longest player name of a structured record, in characters (every game of the
/// record repeats the names).
pub const MAX_PLAYER_NAME: usize = 64;

/// A player's name of a structured record: trimmed, `default` when empty; at most
/// [`MAX_PLAYER_NAME`] characters and no control characters (it is written on the
/// players line of every game of the text form).
fn player_name(s: &str, default: &str, field: &str) -> Result<String, ServiceError> {
    let s = s.trim();
    if s.chars().count() > MAX_PLAYER_NAME {
        return Err(ServiceError::invalid(
            field,
            format!("a player's name has at most {MAX_PLAYER_NAME} characters"),
        ));
    }
    if s.chars().any(char::is_control) {
        return Err(ServiceError::invalid(
            field,
            "a player's name has no control characters (line breaks, tabs, ...)",
        ));
    }
    Ok(if s.is_empty() { default } else { s }.to_string())
}

fn structured_record(m: &pb::MatchRecord) -> Result<MatchRecord, ServiceError> {
    let players = [
        player_name(&m.white_player, "white", "structured.white_player")?,
        player_name(&m.black_player, "black", "structured.black_player")?,
    ];
    // The games' count before any work; the turns' count once they are read.
    check_size(m.games.len(), 0)
        .map_err(|e| ServiceError::invalid("structured.games", e.message))?;
    let mut games = Vec::with_capacity(m.games.len());
    for (gi, g) in m.games.iter().enumerate() {
        let f = |s: &str| format!("structured.games[{gi}].{s}");
        let variant = convert::variant_from_pb(g.variant, &f("variant"))?;
        let starter = convert::opt_side_from_pb(g.starter, &f("starter"))?;
        let opening = match (g.opening_die_white, g.opening_die_black) {
            (0, 0) => None,
            (w, b) => {
                for (field, v) in [("opening_die_white", w), ("opening_die_black", b)] {
                    if !(1..=6).contains(&v) {
                        return Err(ServiceError::invalid(
                            f(field),
                            format!("an opening die is 1..6 (both 0: not recorded), got {v}"),
                        ));
                    }
                }
                if w == b {
                    return Err(ServiceError::invalid(
                        f("opening_die_black"),
                        format!("opening roll {w}-{b}: equal dice are rolled again (R2), record the roll that decided"),
                    ));
                }
                Some([w as u8, b as u8])
            }
        };
        let turns = g
            .turns
            .iter()
            .enumerate()
            .map(|(ti, t)| {
                Ok(TurnInput {
                    dice: convert::dice_from_pb(t.dice.as_ref(), &f(&format!("turns[{ti}].dice")))?,
                    play: t.play.clone(),
                })
            })
            .collect::<Result<Vec<_>, ServiceError>>()?;
        let result = g
            .result
            .as_ref()
            .map(|o| convert::outcome_from_pb(Some(o), &f("result")))
            .transpose()?;
        games.push(GameInput {
            variant,
            starter,
            opening,
            turns,
            result,
        });
    }
    MatchRecord::from_games(m.match_length, players, &games).map_err(|e| {
        let field = match (e.game_index, e.turn_index) {
            (Some(g), Some(t)) => format!("structured.games[{g}].turns[{t}].play"),
            (Some(g), None) if e.in_result => format!("structured.games[{g}].result"),
            (Some(g), None) => format!("structured.games[{g}]"),
            _ => "structured".to_string(),
        };
        ServiceError::invalid(field, record_reason(&e))
    })
}

impl TavliEngineService {
    /// Checks an `AnalyzeGame` request: the record (read and replayed against the
    /// rules), the depths against the server's limit, the thresholds.
    ///
    /// Errors: `INVALID_ARGUMENT` on `record` (none given), `text` (unreadable or
    /// illegal record: the reason names the line, game and move and lists the legal
    /// plays), `structured...`, `plies`, `luck_plies`, `thresholds.*`;
    /// `UNIMPLEMENTED` without an evaluator.
    pub fn prepare_analysis(
        &self,
        req: &pb::AnalyzeGameRequest,
    ) -> Result<PreparedAnalysis, ServiceError> {
        use pb::analyze_game_request::Record;
        let max = self.max_plies() as u32;
        for (field, v) in [("plies", req.plies), ("luck_plies", req.luck_plies)] {
            if v > max {
                return Err(ServiceError::invalid(
                    field,
                    format!("{field} must be 0..{max} on this server, got {v}"),
                ));
            }
        }
        let thresholds = convert::thresholds_from_pb(req.thresholds.as_ref(), "thresholds")?;
        let rollout = req
            .rollout
            .as_ref()
            .map(|r| self.rollout_check(r))
            .transpose()?;
        let record = match &req.record {
            None => {
                return Err(ServiceError::invalid(
                    "record",
                    "a record is required: set text or structured",
                ))
            }
            Some(Record::Text(text)) => MatchRecord::parse(text)
                .map_err(|e| ServiceError::invalid("text", record_reason(&e)))?,
            Some(Record::Structured(m)) => structured_record(m)?,
        };
        let Some(evaluator) = self.evaluator().cloned() else {
            return Err(ServiceError::Unimplemented(
                "AnalyzeGame is not available: no evaluator is loaded on this server".into(),
            ));
        };
        if let Some(g) = record.games.first() {
            tracing::Span::current().record("variant", g.variant.name());
        }
        Ok(PreparedAnalysis {
            record,
            options: AnalysisOptions {
                plies: req.plies as u8,
                luck_plies: req.luck_plies as u8,
                thresholds,
                deadline: None,
                cancel: None,
                rollout,
            },
            evaluator,
        })
    }
}

/// The most plays of a turn that `AnalyzeGameRequest.rollout.candidates` may ask to
/// roll out (besides the play made).
pub const MAX_ROLLOUT_CANDIDATES: u32 = 8;

impl TavliEngineService {
    /// Checks `AnalyzeGameRequest.rollout`: `plies` 0..=1 (and within `--max-plies`),
    /// `trials` 0 (1,296) up to `--max-rollout-trials`, `candidates` 0 (3) up to
    /// [`MAX_ROLLOUT_CANDIDATES`]. Errors: `INVALID_ARGUMENT` naming the field.
    fn rollout_check(&self, r: &pb::AnalysisRollout) -> Result<RolloutCheck, ServiceError> {
        let (plies, trials) = self.rollout_depth_and_trials(r.plies, r.trials, "rollout.")?;
        let candidates = match r.candidates {
            0 => RolloutCheck::default().candidates,
            n if n > MAX_ROLLOUT_CANDIDATES => {
                return Err(ServiceError::invalid(
                    "rollout.candidates",
                    format!("at most {MAX_ROLLOUT_CANDIDATES} candidate plays, got {n}"),
                ))
            }
            n => n as usize,
        };
        Ok(RolloutCheck {
            plies,
            trials,
            seed: r.seed,
            candidates,
        })
    }
}

fn luck_mark_to_pb(m: LuckMark) -> pb::LuckMark {
    match m {
        LuckMark::None => pb::LuckMark::Unspecified,
        LuckMark::VeryUnlucky => pb::LuckMark::VeryUnlucky,
        LuckMark::Unlucky => pb::LuckMark::Unlucky,
        LuckMark::Lucky => pb::LuckMark::Lucky,
        LuckMark::VeryLucky => pb::LuckMark::VeryLucky,
    }
}

fn players_to_pb(names: &[String; 2], stats: &[PlayerStats; 2]) -> Vec<pb::PlayerSummary> {
    [Side::White, Side::Black]
        .iter()
        .map(|&s| {
            let st = &stats[s.index()];
            pb::PlayerSummary {
                side: convert::side_to_pb(Some(s)) as i32,
                player: names[s.index()].clone(),
                moves: st.moves,
                unforced_moves: st.unforced,
                unmarked: st.marks[0],
                doubtful: st.marks[1],
                bad: st.marks[2],
                very_bad: st.marks[3],
                total_error: st.total_error as f32,
                error_rate_milli: st.error_rate_milli() as f32,
                rating: st.rating().to_string(),
                total_luck: st.total_luck as f32,
                luck_rate_milli: st.luck_rate_milli() as f32,
                luck_rating: st.luck_rating().to_string(),
            }
        })
        .collect()
}

fn item(i: pb::analyze_game_response::Item) -> pb::AnalyzeGameResponse {
    pb::AnalyzeGameResponse { item: Some(i) }
}

/// Runs a prepared analysis until the deadline or cancellation, handing every stream
/// message to `sink` in order: the record, each turn, each game, the summary.
/// `sink` returning `false` (the client went away) stops the work.
///
/// Errors: `DEADLINE_EXCEEDED`, `CANCELLED`, `UNIMPLEMENTED` (no net for a variant).
pub fn run_analysis(
    prepared: PreparedAnalysis,
    deadline: Option<Instant>,
    cancel: Option<CancelToken>,
    sink: &mut dyn FnMut(pb::AnalyzeGameResponse) -> bool,
) -> Result<(), ServiceError> {
    use pb::analyze_game_response::Item;
    let PreparedAnalysis {
        record,
        mut options,
        evaluator,
    } = prepared;
    options.deadline = deadline;
    options.cancel = cancel;
    let first = item(Item::Record(pb::RecordSummary {
        match_length: record.length,
        games: record.games.len() as u32,
        turns: record.turn_count() as u32,
        text: record.to_text(),
        error_measure: record_measure(&record).to_string(),
    }));
    if !sink(first) {
        return Err(ServiceError::Cancelled);
    }
    let summary = analysis::analyze(&record, &*evaluator, &options, &mut |ev| {
        let msg = match ev {
            Event::Turn(t) => Item::Turn(pb::TurnAnalysis {
                game: t.game_index as u32 + 1,
                turn: t.turn,
                move_number: t.move_number,
                side: convert::side_to_pb(Some(t.side)) as i32,
                player: record.games[t.game_index].players[t.side.index()].clone(),
                position: Some(convert::position_to_pb(&t.position)),
                dice: Some(convert::dice_to_pb(t.dice)),
                play_written: t.written.clone(),
                play: t.play.notation.to_string(),
                best_play: t.best.notation.to_string(),
                best_equity: t.best_equity,
                played_equity: t.played_equity,
                error: t.error,
                mark: convert::mark_to_pb(t.mark) as i32,
                legal_plays: t.legal_plays as u32,
                probabilities: Some(convert::probabilities_to_pb(&t.played_probabilities)),
                equity_before: t.equity_before,
                equity_after_roll: t.equity_after_roll,
                luck: t.luck,
                luck_mark: luck_mark_to_pb(t.luck_mark) as i32,
                evaluation: t.evaluation.clone(),
                outcome: t.play.outcome.as_ref().map(convert::outcome_to_pb),
                rollout: t.rollout.as_ref().map(|r| pb::TurnRollout {
                    trials: r.trials,
                    plies: r.plies as u32,
                    candidates: r.candidates as u32,
                    best_equity_standard_error: r.best_standard_error,
                    played_equity_standard_error: r.played_standard_error,
                    search_error: r.search_error,
                    search_mark: convert::mark_to_pb(r.search_mark) as i32,
                    search_best_play: r.search_best.notation.to_string(),
                }),
                match_winning_chance: t.match_winning_chance.map(|m| m.0 as f32),
                best_match_winning_chance: t.match_winning_chance.map(|m| m.1 as f32),
            }),
            Event::Game(g) => Item::Game(pb::GameSummary {
                game: g.game_index as u32 + 1,
                variant: convert::variant_to_pb(g.variant) as i32,
                result: g.result.clone(),
                players: players_to_pb(&g.players, &g.stats),
                cube_actions: g.cube_actions,
                notes: g.notes.clone(),
                error_measure: g.error_measure.to_string(),
            }),
        };
        sink(item(msg))
    })?;
    let last = item(Item::Summary(pb::MatchSummary {
        games: summary.games,
        players: players_to_pb(&summary.players, &summary.stats),
    }));
    if !sink(last) {
        return Err(ServiceError::Cancelled);
    }
    Ok(())
}

/// What a record's errors are measured in (`RecordSummary.error_measure`): the
/// measure of all its games ([`analysis::error_measure`]), or `mixed`.
fn record_measure(record: &MatchRecord) -> &'static str {
    let scored = |g| analysis::game_score(record, g).is_some();
    if record.length == 0 || !record.games.iter().any(scored) && !record.games.is_empty() {
        analysis::error_measure(false)
    } else if record.games.iter().all(scored) {
        analysis::error_measure(true)
    } else {
        "mixed"
    }
}

/// The `AnalyzeGame` response stream: the messages of the analysis task, then its
/// final error if it could not be queued (a client that stopped reading: the stream
/// still ends with it once read, never looking complete); dropping it (the client
/// cancelled or went away, the server shut down) cancels the task's work.
pub struct CancelOnDrop {
    rx: tokio::sync::mpsc::Receiver<Result<pb::AnalyzeGameResponse, Status>>,
    last: Arc<std::sync::Mutex<Option<Status>>>,
    token: CancelToken,
}

impl tokio_stream::Stream for CancelOnDrop {
    type Item = Result<pb::AnalyzeGameResponse, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.rx.poll_recv(cx) {
            // The task has ended (its sender is dropped after `last` is set).
            Poll::Ready(None) => {
                let last = self.last.lock().ok().and_then(|mut l| l.take());
                Poll::Ready(last.map(Err))
            }
            other => other,
        }
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.token.cancel();
    }
}

/// Messages buffered between the analysis task and the client.
const STREAM_BUFFER: usize = 16;

/// The longest the analysis waits for a client that does not read its stream (when
/// the request's deadline is not sooner): then the work stops as if cancelled.
pub const STALL_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Starts a prepared analysis on the blocking pool and returns its stream. A message
/// waits for room in the stream at most until the deadline (at most [`STALL_LIMIT`]),
/// so a client that stops reading cannot hold the task for ever. The deadline ends
/// the stream with `DEADLINE_EXCEEDED` naming its limit ([`Deadline::passed`]), also
/// for a client that was not reading then.
/// `token` (a child of the server's token) stops it, as does dropping the stream;
/// `hold` (the deep-search slot) is kept until the analysis has stopped.
pub fn spawn_analysis<H: Send + 'static>(
    prepared: PreparedAnalysis,
    named: Option<Deadline>,
    token: CancelToken,
    hold: H,
) -> CancelOnDrop {
    let deadline = named.map(|d| d.at);
    let (tx, rx) = tokio::sync::mpsc::channel(STREAM_BUFFER);
    let last = Arc::new(std::sync::Mutex::new(None));
    let (work_token, request_token) = (token.clone(), token.clone());
    let span = tracing::Span::current();
    let handle = tokio::runtime::Handle::current();
    let task_last = last.clone();
    tokio::task::spawn_blocking(move || {
        let _hold = hold;
        span.in_scope(|| {
            let mut late = false;
            let r = run_analysis(prepared, deadline, Some(work_token), &mut |m| {
                let wait = deadline
                    .map_or(STALL_LIMIT, |d| d.saturating_duration_since(Instant::now()))
                    .min(STALL_LIMIT);
                match handle.block_on(tokio::time::timeout(wait, tx.send(Ok(m)))) {
                    Ok(Ok(())) => true,
                    // The stream was dropped: the client went away.
                    Ok(Err(_)) => false,
                    Err(_) => {
                        late = true;
                        false
                    }
                }
            });
            let passed = || deadline.is_some_and(|d| Instant::now() >= d);
            let status = match r {
                Ok(()) => return,
                Err(_) if late && passed() => Status::from(name_deadline(
                    ServiceError::DeadlineExceeded(String::new()),
                    named.as_ref(),
                )),
                Err(_) if late => Status::cancelled(format!(
                    "the client read nothing for {} s",
                    STALL_LIMIT.as_secs()
                )),
                Err(e) => Status::from(name_deadline(
                    e.shutdown_if(&request_token, "analysis"),
                    named.as_ref(),
                )),
            };
            let sent = if late {
                // A stalled client: no waiting for room again.
                tx.try_send(Err(status.clone())).is_ok()
            } else {
                // The stream must end with the error, not look complete: a reading
                // client gets a little time to take it (nobody listens after a
                // cancellation).
                let grace = std::time::Duration::from_secs(5);
                matches!(
                    handle.block_on(tokio::time::timeout(grace, tx.send(Err(status.clone())))),
                    Ok(Ok(()))
                )
            };
            if !sent {
                // No room: the stream gives it after the messages queued.
                if let Ok(mut l) = task_last.lock() {
                    *l = Some(status);
                }
            }
        })
    });
    CancelOnDrop { rx, last, token }
}
