//! The engine as a **UBGI** engine (Universal Backgammon Interface): line commands
//! on stdin, answers on stdout, so that outside duel tools and GUIs drive it with no
//! code of ours in the loop (`tavli-engine ubgi`; docs/interop.md, "UBGI").
//!
//! The protocol is UBGI v0.1 as the public duel runner `bgci` speaks it
//! (github.com/bungogood/bgci, `docs/ubgi-v0.1-spec.md`, from Øystein
//! Schønning-Johansen's draft, github.com/oysteijo/Universal-Backgammon-Interface):
//!
//! | command | answer |
//! |---|---|
//! | `ubgi` | `id name`, `id author`, `id version`, one `option` line per option, `ubgiok` |
//! | `isready` | `readyok` |
//! | `setoption name <N> value <V>` | nothing; `error ...` for a bad one |
//! | `newgame` | nothing: the start of the `Variant` option's game, White on roll |
//! | `position gnubgid <ID>` / `position xgid <XGID>` | nothing (Portes); an XGID's rolled dice become the dice |
//! | `position tavli <Position ID>` | nothing: any variant (this engine's extension) |
//! | `dice <d1> <d2>` | nothing |
//! | `go [role chequer] [depth <n>] [movetime <ms>]` | `bestmove <move>` or `bestmove pass` |
//! | `eval [depth <n>]` | `eval eq <f> pwin <f> pgammon <f> pbg 0 plose <f> plgammon <f> pdraw <f>` |
//! | `stop` | ends a running `go`/`eval` at once (the deepest finished search answers) |
//! | `quit` | ends the process |
//!
//! Options: `Variant` (`portes`, the default, or `backgammon` for it; `plakoto`,
//! `fevga`), `Plies` (0..=2, default 0 or `tavli-engine ubgi --plies N`: the depth of
//! `go` and `eval`), `Threads`
//! (1: a search runs on one thread). Moves are written as UBGI asks: one `from/to`
//! pair per checker moved by one die, in the mover's own numbering (R1), `bar` and
//! `off` by name, no `*`, no `(2)`: `24/18 18/13`, `bar/22 6/off`. Errors are one line
//! `error <code> <message>` with UBGI's codes (`unknown_command`, `bad_argument`,
//! `missing_context`, `unsupported_feature`); the session goes on. Tavli has no cube
//! (R4): `go role cube` and `go role turn` are `unsupported_feature`.
//!
//! Bounded: an input line is read up to [`MAX_LINE`] bytes (a longer one is refused
//! whole), and a search by `Plies` or `depth`, `movetime`, and `stop`.

use crate::eval::{CancelToken, EvalError, EvalOptions, PositionEvaluator, MAX_PLIES};
use crate::rules::position_id::{from_gnubg_id, from_id};
use crate::rules::xgid::{Xgid, XgidDice};
use crate::rules::{Dice, Location, Play, Position, RulesError, Side, Variant};
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The longest input line read, in bytes (the longest command, a Position ID with
/// every point listed, is under 500).
pub const MAX_LINE: usize = 4096;

/// One session's state: the options and the context of the next `go`.
struct Session {
    variant: Variant,
    plies: u8,
    position: Option<Position>,
    dice: Option<Dice>,
}

/// What a command asks of the loop.
enum Next {
    /// Write these lines (maybe none) and go on.
    Reply(Vec<String>),
    /// Stop reading.
    Quit,
}

/// An `error <code> <message>` line.
fn error(code: &str, message: impl std::fmt::Display) -> Next {
    Next::Reply(vec![format!("error {code} {message}")])
}

fn nothing() -> Next {
    Next::Reply(Vec::new())
}

/// Runs a UBGI session: reads commands from `input` (on a thread of its own, so that
/// `stop` and `quit` reach a running search) and writes the answers to `output`,
/// flushed after every answer, until `quit` or the end of `input`. `plies` is the
/// `Plies` option at the start (0..=[`MAX_PLIES`], more is taken as the most), for
/// drivers that cannot set options. `load` builds the evaluator, at the first command
/// that needs it (`ubgi`, `isready`, `go`, `eval`), not before (UBGI: nothing is
/// initialised before `ubgi`).
pub fn run<R, W>(
    input: R,
    mut output: W,
    plies: u8,
    load: impl FnOnce() -> Arc<dyn PositionEvaluator>,
) -> std::io::Result<()>
where
    R: Read + Send + 'static,
    W: Write,
{
    let (tx, rx) = mpsc::channel::<Result<String, String>>();
    // The search running now, if any: `stop` and `quit` cancel it from the reader.
    let running: Arc<Mutex<Option<CancelToken>>> = Arc::default();
    let reader_running = running.clone();
    std::thread::spawn(move || {
        let mut input = BufReader::new(input);
        loop {
            let line = read_line(&mut input);
            let (end, stop) = match &line {
                None => (true, true),
                Some(Ok(l)) => (false, matches!(l.trim(), "stop" | "quit")),
                Some(Err(_)) => (false, false),
            };
            if stop {
                if let Some(t) = reader_running.lock().ok().and_then(|r| r.clone()) {
                    t.cancel();
                }
            }
            if end || tx.send(line.expect("a line")).is_err() {
                return;
            }
        }
    });
    let mut load = Some(load);
    let mut evaluator: Option<Arc<dyn PositionEvaluator>> = None;
    let mut session = Session {
        variant: Variant::Portes,
        plies: plies.min(MAX_PLIES),
        position: None,
        dice: None,
    };
    for line in rx {
        let next = match line {
            Err(reason) => error("bad_argument", reason),
            Ok(line) => {
                let mut engine = || -> Arc<dyn PositionEvaluator> {
                    evaluator
                        .get_or_insert_with(|| (load.take().expect("loaded once"))())
                        .clone()
                };
                session.command(line.trim(), &mut engine, &running)
            }
        };
        match next {
            Next::Quit => break,
            Next::Reply(lines) => {
                for l in lines {
                    writeln!(output, "{l}")?;
                }
                output.flush()?;
            }
        }
    }
    Ok(())
}

/// One line of at most [`MAX_LINE`] bytes, without its end of line; `Err` for a
/// longer line (read to its end and dropped) or one that is not UTF-8; `None` at the
/// end of the input.
fn read_line(input: &mut impl BufRead) -> Option<Result<String, String>> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let buf = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        };
        if buf.is_empty() {
            if line.is_empty() && !too_long {
                return None;
            }
            break;
        }
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if line.len() + chunk.len() > MAX_LINE {
            too_long = true;
            line.clear();
        } else if !too_long {
            line.extend_from_slice(chunk);
        }
        let used = done.unwrap_or(buf.len());
        input.consume(used);
        if done.is_some() {
            break;
        }
    }
    if too_long {
        return Some(Err(format!("line longer than {MAX_LINE} bytes")));
    }
    Some(String::from_utf8(line).map_err(|_| "line is not UTF-8".to_string()))
}

impl Session {
    fn command(
        &mut self,
        line: &str,
        engine: &mut dyn FnMut() -> Arc<dyn PositionEvaluator>,
        running: &Arc<Mutex<Option<CancelToken>>>,
    ) -> Next {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(&head) = words.first() else {
            return nothing();
        };
        match head {
            "ubgi" => {
                engine();
                Next::Reply(vec![
                    "id name tavli-engine".into(),
                    "id author the tavli-engine authors".into(),
                    format!("id version {}", env!("CARGO_PKG_VERSION")),
                    "option name Variant type combo default portes var portes var plakoto \
                     var fevga var backgammon"
                        .into(),
                    format!(
                        "option name Plies type spin default {} min 0 max {MAX_PLIES}",
                        self.plies
                    ),
                    "option name Threads type spin default 1 min 1 max 1".into(),
                    "ubgiok".into(),
                ])
            }
            "isready" => {
                engine();
                Next::Reply(vec!["readyok".into()])
            }
            "quit" => Next::Quit,
            // Nothing runs between commands: a search is stopped from the reader.
            "stop" => nothing(),
            "setoption" => self.set_option(&words),
            "newgame" => {
                self.position = Some(Position::start(self.variant, Side::White));
                self.dice = None;
                nothing()
            }
            // The player on roll is given by the position itself.
            "setturn" if matches!(words.get(1), Some(&"p0" | &"p1")) && words.len() == 2 => {
                nothing()
            }
            "newsession" | "setscore" | "setcube" | "setturn" => error(
                "unsupported_feature",
                format!(
                    "{head}: Tavli is played cubeless and the match context is not \
                     supported yet; every position is played for money without a cube"
                ),
            ),
            "position" => self.set_position(line, &words),
            "dice" => match words[1..] {
                [a, b] => match (a.parse::<u8>(), b.parse::<u8>()) {
                    (Ok(a), Ok(b)) if (1..=6).contains(&a) && (1..=6).contains(&b) => {
                        self.dice = Some(Dice::new(a, b).expect("dice 1..=6"));
                        nothing()
                    }
                    _ => error("bad_argument", "dice: two dice 1..6, e.g. dice 6 5"),
                },
                _ => error("bad_argument", "dice: two dice 1..6, e.g. dice 6 5"),
            },
            "go" => self.go(&words, engine, running).unwrap_or_else(|e| e),
            "eval" => self.eval(&words, engine, running).unwrap_or_else(|e| e),
            other => error("unknown_command", other),
        }
    }

    fn set_option(&mut self, words: &[&str]) -> Next {
        let (name, value) = match words {
            [_, n, name, v, value]
                if n.eq_ignore_ascii_case("name") && v.eq_ignore_ascii_case("value") =>
            {
                (*name, *value)
            }
            _ => {
                return error(
                    "bad_argument",
                    "setoption: expected setoption name <Name> value <Value>",
                )
            }
        };
        match name.to_ascii_lowercase().as_str() {
            "variant" => match value.to_ascii_lowercase().as_str() {
                // Portes is backgammon without the cube and without triple games (R4).
                "backgammon" => self.variant = Variant::Portes,
                v => match Variant::from_name(v) {
                    Some(variant) => self.variant = variant,
                    None => {
                        return error(
                            "bad_argument",
                            format!("Variant: portes, plakoto, fevga or backgammon, not {value:?}"),
                        )
                    }
                },
            },
            "plies" | "ply" => match value.parse::<u8>() {
                Ok(p) if p <= MAX_PLIES => self.plies = p,
                _ => {
                    return error(
                        "bad_argument",
                        format!("Plies: 0..{MAX_PLIES}, not {value:?}"),
                    )
                }
            },
            "threads" if value == "1" => {}
            "threads" => {
                return error(
                    "bad_argument",
                    format!("Threads: 1 (a search runs on one thread), not {value:?}"),
                )
            }
            _ => return error("unsupported_feature", format!("option {name}")),
        }
        // A new variant is a new game.
        if self.position.is_some_and(|p| p.variant != self.variant) {
            self.position = None;
            self.dice = None;
        }
        nothing()
    }

    fn set_position(&mut self, line: &str, words: &[&str]) -> Next {
        let (Some(kind), Some(text)) = (words.get(1), line.splitn(3, char::is_whitespace).nth(2))
        else {
            return error(
                "bad_argument",
                "position: expected position gnubgid <ID>, position xgid <XGID> or \
                 position tavli <Position ID>",
            );
        };
        let text = text.trim();
        let portes_only = |what: &str| {
            error(
                "unsupported_feature",
                format!(
                    "position {what}: Portes (backgammon) only, the Variant is {}; use \
                     position tavli <Position ID>",
                    self.variant
                ),
            )
        };
        let read: Result<(Position, Option<Dice>), RulesError> = match *kind {
            "gnubgid" if self.variant != Variant::Portes => return portes_only("gnubgid"),
            "xgid" if self.variant != Variant::Portes => return portes_only("xgid"),
            // The ID is seen from the side on roll; which colour that is does not
            // change the play, written in its own numbering.
            "gnubgid" => from_gnubg_id(text, Side::White).map(|p| (p, None)),
            "xgid" => Xgid::parse(text).map(|x| {
                let dice = match x.dice {
                    XgidDice::Rolled(d) => Some(d),
                    XgidDice::ToRoll | XgidDice::Doubled => None,
                };
                (x.position, dice)
            }),
            "tavli" => match from_id(text) {
                Ok(p) if p.variant != self.variant => {
                    return error(
                        "bad_argument",
                        format!(
                            "position tavli: a {} position, the Variant is {} \
                             (setoption name Variant value {})",
                            p.variant, self.variant, p.variant
                        ),
                    )
                }
                r => r.map(|p| (p, None)),
            },
            other => {
                return error(
                    "bad_argument",
                    format!("position {other}: use gnubgid, xgid or tavli"),
                )
            }
        };
        match read {
            Ok((position, dice)) => {
                self.position = Some(position);
                self.dice = dice;
                nothing()
            }
            // The text's own field is the command's; a field inside the position
            // (R9, `points[4]`) is named.
            Err(RulesError::Invalid { field, reason })
                if matches!(field.as_str(), "position_id" | "gnubg_id" | "xgid") =>
            {
                error("bad_argument", format!("position {kind}: {reason}"))
            }
            Err(e) => error("bad_argument", format!("position {kind}: {e}")),
        }
    }

    /// The search depth of `go`/`eval`: `depth <n>` or the `Plies` option; the
    /// deadline of `movetime <ms>`. Other limits of UBGI (`nodes`, `trials`) are
    /// accepted and not used.
    fn limits(&self, words: &[&str]) -> Result<(u8, Option<Instant>), Next> {
        let (mut plies, mut deadline) = (self.plies, None);
        let mut it = words.iter().skip(1);
        while let Some(&w) = it.next() {
            let value = it.next().copied().unwrap_or("");
            match w {
                "role" => {
                    if value != "chequer" && value != "checker" {
                        return Err(error(
                            "unsupported_feature",
                            format!("go role {value}: Tavli has no cube (only role chequer)"),
                        ));
                    }
                }
                "depth" => match value.parse::<u8>() {
                    Ok(p) if p <= MAX_PLIES => plies = p,
                    _ => {
                        return Err(error(
                            "bad_argument",
                            format!("depth: 0..{MAX_PLIES}, not {value:?}"),
                        ))
                    }
                },
                "movetime" => match value.parse::<u64>() {
                    Ok(ms) => deadline = Instant::now().checked_add(Duration::from_millis(ms)),
                    Err(_) => {
                        return Err(error(
                            "bad_argument",
                            format!("movetime: milliseconds, not {value:?}"),
                        ))
                    }
                },
                "nodes" | "trials" => {}
                other => return Err(error("bad_argument", format!("{}: {other}", words[0]))),
            }
        }
        Ok((plies, deadline))
    }

    fn position(&self) -> Result<Position, Next> {
        self.position.ok_or_else(|| {
            error(
                "missing_context",
                "position: send position gnubgid|xgid|tavli ... or newgame first",
            )
        })
    }

    /// The depth, deadline and position of a `go` or `eval`.
    fn search_context(&self, words: &[&str]) -> Result<(u8, Option<Instant>, Position), Next> {
        let (plies, deadline) = self.limits(words)?;
        Ok((plies, deadline, self.position()?))
    }

    /// `go`: the best play of the position with the dice, at the depth asked; when
    /// the deadline or `stop` ends a deeper search, the 0-ply choice. `Err`: the
    /// error reply.
    fn go(
        &mut self,
        words: &[&str],
        engine: &mut dyn FnMut() -> Arc<dyn PositionEvaluator>,
        running: &Arc<Mutex<Option<CancelToken>>>,
    ) -> Result<Next, Next> {
        let (plies, deadline, pos) = self.search_context(words)?;
        let Some(dice) = self.dice else {
            return Err(error("missing_context", "dice: send dice <d1> <d2> first"));
        };
        let engine = engine();
        // A forced play needs no deeper search.
        let ranked = deepened(
            plies,
            deadline,
            running,
            |r: &Vec<_>| r.len() > 1,
            |opts| engine.rank_plays(&pos, dice, opts),
        );
        let best = ranked.map_err(|e| error("bad_argument", e))?;
        // One answer per roll, as a GUI plays it.
        self.dice = None;
        Ok(Next::Reply(vec![format!(
            "bestmove {}",
            ubgi_move(&best[0].play, &pos)
        )]))
    }

    /// `eval`: the position's probabilities and cubeless equity for its side on
    /// roll, before it rolls. `Err`: the error reply.
    fn eval(
        &self,
        words: &[&str],
        engine: &mut dyn FnMut() -> Arc<dyn PositionEvaluator>,
        running: &Arc<Mutex<Option<CancelToken>>>,
    ) -> Result<Next, Next> {
        let (plies, deadline, pos) = self.search_context(words)?;
        let engine = engine();
        let e = deepened(
            plies,
            deadline,
            running,
            |_| true,
            |opts| engine.evaluate(&pos, opts),
        )
        .map_err(|err| error("bad_argument", err))?;
        let p = e.probabilities;
        Ok(Next::Reply(vec![format!(
            "eval eq {:.6} pwin {:.6} pgammon {:.6} pbg 0 plose {:.6} plgammon {:.6} pdraw {:.6}",
            e.equity,
            p.win,
            p.win_mars,
            p.lose(),
            p.lose_mars,
            p.draw
        )]))
    }
}

/// `search` at 0 ply, then, if `plies` > 0 and `deeper` says it is worth it, at
/// `plies` until `deadline` or `stop`: the deepest result that finished.
fn deepened<T>(
    plies: u8,
    deadline: Option<Instant>,
    running: &Arc<Mutex<Option<CancelToken>>>,
    deeper: impl Fn(&T) -> bool,
    search: impl Fn(EvalOptions) -> Result<T, EvalError>,
) -> Result<T, EvalError> {
    let shallow = search(EvalOptions::default())?;
    if plies == 0 || !deeper(&shallow) {
        return Ok(shallow);
    }
    match searched(running, |cancel| {
        search(EvalOptions {
            plies,
            deadline,
            cancel: Some(cancel),
            measure: None,
        })
    }) {
        Err(EvalError::DeadlineExceeded | EvalError::Cancelled) => Ok(shallow),
        other => other,
    }
}

/// Runs `search` with a token that `stop` and `quit` cancel.
fn searched<T>(
    running: &Arc<Mutex<Option<CancelToken>>>,
    search: impl FnOnce(CancelToken) -> Result<T, EvalError>,
) -> Result<T, EvalError> {
    let token = CancelToken::new();
    if let Ok(mut r) = running.lock() {
        *r = Some(token.clone());
    }
    let out = search(token);
    if let Ok(mut r) = running.lock() {
        *r = None;
    }
    out
}

/// A play as UBGI writes it: one `from/to` per move, the mover's own numbering,
/// `bar` and `off` by name; `pass` for no move.
fn ubgi_move(play: &Play, before: &Position) -> String {
    if play.moves.as_slice().is_empty() {
        return "pass".to_string();
    }
    let place = |l: Location| match l {
        Location::Bar => "bar".to_string(),
        Location::Off => "off".to_string(),
        Location::Point(n) => Position::own_point(before.variant, before.turn, n).to_string(),
    };
    play.moves
        .as_slice()
        .iter()
        .map(|m| format!("{}/{}", place(m.from), place(m.to)))
        .collect::<Vec<_>>()
        .join(" ")
}
