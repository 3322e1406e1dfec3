//! `tavli-engine ubgi`: scripted UBGI sessions against the real binary, with the
//! exact replies expected (UBGI v0.1 as the bgci duel runner speaks it; docs/interop.md).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

fn engine() -> Child {
    engine_with(&[])
}

fn engine_with(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_tavli-engine"))
        .arg("ubgi")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("tavli-engine ubgi starts")
}

/// Feeds `script` (one command a line), closes stdin and returns every line written.
fn session(script: &str) -> Vec<String> {
    let mut child = engine();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn handshake_options_positions_moves_and_errors() {
    let script = "\
ubgi
isready
newgame
position gnubgid 4HPwATDgc/ABMA
dice 3 1
go role chequer
dice 6 5
go
position xgid XGID=-aa--CCBCa--ca---a-c-bb-CA:0:0:1:52:0:1:0:5:10
go
position gnubgid Np7BQSCYZ/AAWA
dice 5 3
go
position gnubgid /z0AADDeaxsAAA
dice 5 5
go
position tavli portes/w/bar:1,off:14/19:2,20:2,21:2,22:2,23:2,24:2,off:3
dice 6 6
go
position tavli portes/w/6:1,off:14/19:1,off:14
eval
go
setoption name Variant value plakoto
newgame
dice 6 5
go
position tavli plakoto/b/24:14,3:1/1:14,3:1p
dice 2 1
go
position gnubgid 4HPwATDgc/ABMA
setoption name Variant value fevga
newgame
dice 6 6
go
go role cube
foo bar
setoption name Plies value 3
setoption name Threads value 4
setoption name Hash value 3
setoption Variant portes
dice 7 1
position tavli portes/w/24:2/1:2
position tavli plakoto/w/24:15/1:15
setoption name Variant value Backgammon
position xgid XGID=-b----E-C---eE---c-e----B-:0:0:2:00:0:0:0:0:0
position gnubgid 4HPwATDgc/AB
position fibs board:x:o
setcube value 2 owner p0
setturn p1
stop
go depth 3
go
quit
isready
";
    let expected = [
        "id name tavli-engine",
        "id author the tavli-engine authors",
        &format!("id version {}", env!("CARGO_PKG_VERSION")),
        "option name Variant type combo default portes var portes var plakoto var fevga var backgammon",
        "option name Plies type spin default 0 min 0 max 2",
        "option name Threads type spin default 1 min 1 max 1",
        "ubgiok",
        "readyok",
        // The opening 3-1 and 6-5 (R1: backgammon's start).
        "bestmove 8/5 6/5",
        "bestmove 24/18 18/13",
        // An XGID's rolled dice (5-2) are the dice: XG's own best play of it
        // (tests/data/xgid).
        "bestmove bar/20 8/6",
        // bgci's bar and bear-off probes: `bar` and `off` by name, each die written.
        "bestmove bar/20 13/10",
        "bestmove 7/2 7/2 5/off 5/off",
        // R4: every entry point closed.
        "bestmove pass",
        // R6, the exact bear-off database: 13/16 (9 of 36 rolls miss).
        "eval eq 0.625000 pwin 0.812500 pgammon 0.000000 pbg 0 plose 0.187500 plgammon 0.000000 pdraw 0.000000",
        // One answer per roll: the dice were used.
        "error missing_context dice: send dice <d1> <d2> first",
        // Plakoto from the start, and Black (own numbering) next to its pinned checker.
        "bestmove 24/18 24/19",
        "bestmove 24/23 23/21",
        "error unsupported_feature position gnubgid: Portes (backgammon) only, the Variant is plakoto; use position tavli <Position ID>",
        // R8.2: the first checker runs alone.
        "bestmove 24/18",
        "error unsupported_feature go role cube: Tavli has no cube (only role chequer)",
        "error unknown_command foo",
        "error bad_argument Plies: 0..2, not \"3\"",
        "error bad_argument Threads: 1 (a search runs on one thread), not \"4\"",
        "error unsupported_feature option Hash",
        "error bad_argument setoption: expected setoption name <Name> value <Value>",
        "error bad_argument dice: two dice 1..6, e.g. dice 6 5",
        "error bad_argument position tavli: white: white has 2 checkers (on points, bar and off), expected 15",
        "error bad_argument position tavli: a plakoto position, the Variant is fevga (setoption name Variant value plakoto)",
        "error bad_argument position xgid: field 4 (turn) must be 1 or -1, got \"2\"",
        "error bad_argument position gnubgid: \"4HPwATDgc/AB\" decodes to 9 bytes, expected 10",
        "error bad_argument position fibs: use gnubgid, xgid or tavli",
        "error unsupported_feature setcube: Tavli is played cubeless and the match context is not supported yet; every position is played for money without a cube",
        "error bad_argument depth: 0..2, not \"3\"",
        // `newgame` under Fevga was the last position; the Variant is now Portes.
        "error missing_context position: send position gnubgid|xgid|tavli ... or newgame first",
    ];
    assert_eq!(session(script), expected);
}

#[test]
fn a_line_too_long_is_refused_and_the_session_goes_on() {
    let long = format!("position tavli {}\n", "x".repeat(10_000));
    let lines = session(&format!("{long}isready\nquit\n"));
    assert_eq!(
        lines,
        ["error bad_argument line longer than 4096 bytes", "readyok"]
    );
    // The end of the input ends the session as `quit` does.
    assert_eq!(session("isready\n"), ["readyok"]);
}

struct Live {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Live {
    fn start() -> Live {
        let mut child = engine();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Live {
            child,
            stdin,
            stdout,
        }
    }

    fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn reply(&mut self) -> String {
        let mut l = String::new();
        self.stdout.read_line(&mut l).unwrap();
        l.trim_end().to_string()
    }
}

/// A 2-ply search of 2-1 in a spread position takes seconds: `stop` ends it at once,
/// and so does `movetime`, each with the 0-ply choice.
#[test]
fn stop_and_movetime_end_a_deep_search() {
    const SPREAD: &str = "portes/w/24:1,23:1,22:1,21:1,20:1,19:1,18:1,17:1,16:1,15:1,14:1,13:1,12:1,11:1,10:1/1:3,2:3,3:3,4:3,5:3";
    let mut e = Live::start();
    e.send("isready");
    assert_eq!(e.reply(), "readyok");
    e.send(&format!("position tavli {SPREAD}"));
    e.send("dice 2 1");
    e.send("go depth 0");
    let shallow = e.reply();
    assert!(shallow.starts_with("bestmove "), "{shallow}");
    e.send("dice 2 1");
    e.send("go depth 2");
    std::thread::sleep(Duration::from_millis(200));
    let t = Instant::now();
    e.send("stop");
    assert_eq!(e.reply(), shallow);
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    e.send("dice 2 1");
    let t = Instant::now();
    e.send("go depth 2 movetime 300");
    assert_eq!(e.reply(), shallow);
    assert!(
        t.elapsed() < Duration::from_millis(1300),
        "{:?}",
        t.elapsed()
    );
    // `quit` during a search stops it too, and the process ends.
    e.send("dice 2 1");
    e.send("go depth 2");
    std::thread::sleep(Duration::from_millis(100));
    let t = Instant::now();
    e.send("quit");
    assert_eq!(e.reply(), shallow);
    assert!(e.child.wait().unwrap().success());
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
}

/// `--plies` sets the `Plies` option at the start, for drivers that set none.
#[test]
fn the_plies_flag_is_the_starting_option() {
    let mut child = engine_with(&["--plies", "1"]);
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"ubgi\nquit\n")
        .unwrap();
    let out = String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap();
    assert!(
        out.contains("\noption name Plies type spin default 1 min 0 max 2\n"),
        "{out}"
    );
    let bad = Command::new(env!("CARGO_BIN_EXE_tavli-engine"))
        .args(["ubgi", "--plies", "3"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--plies"));
}
