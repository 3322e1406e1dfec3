//! Game records (docs/records.md): real GNU Backgammon exports read, replayed against
//! the rules and written back byte for byte; Tavli records; errors with game, move
//! and the legal plays.

use tavli_engine::record::MatchRecord;

fn data(name: &str) -> String {
    let path = format!("{}/tests/data/mat/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

const GNUBG_FILES: [&str; 5] = [
    "gnubg-5p-drop-left.mat",
    "gnubg-7p-cube.mat",
    "gnubg-3p-roll-resign-left.mat",
    "gnubg-3p-roll-resign-right.mat",
    "gnubg-3p-resign-after-double.mat",
];

#[test]
fn gnubg_exports_round_trip_byte_for_byte() {
    for name in GNUBG_FILES {
        let text = data(name);
        let r = MatchRecord::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(r.to_text(), text, "{name}");
    }
}

use tavli_engine::record::{ActionKind, EndReason, GameInput, TurnInput};
use tavli_engine::rules::{self, Dice, OutcomeReason, Side, Variant};

fn end(r: &MatchRecord, g: usize) -> (Option<Side>, u32, EndReason) {
    let e = r.games[g].end.as_ref().expect("a result");
    (e.winner, e.points, e.how)
}

fn passes(r: &MatchRecord, g: usize) -> usize {
    r.games[g]
        .actions
        .iter()
        .filter(|a| matches!(&a.kind, ActionKind::Play(t) if t.play.moves.is_empty()))
        .count()
}

#[test]
fn gnubg_cube_match_is_read_as_played() {
    let r = MatchRecord::parse(&data("gnubg-7p-cube.mat")).unwrap();
    assert_eq!(r.length, 7);
    assert_eq!(r.preamble, ["; [EventDate \"2026.11.30\"]", ""]);
    assert_eq!(r.games.len(), 3);
    assert!(r
        .games
        .iter()
        .all(|g| g.variant == Variant::Portes && !g.tagged));
    assert_eq!(
        r.games[0].players,
        ["gnubg".to_string(), "root".to_string()]
    );
    assert_eq!(
        r.games.iter().map(|g| g.score).collect::<Vec<_>>(),
        [[0, 0], [2, 0], [4, 0]]
    );
    // Game 1: the right player resigns at a cube of 2 with the left player one
    // checker from home (GNU Backgammon's players resign hopeless games).
    assert_eq!(end(&r, 0), (Some(Side::White), 2, EndReason::Resign));
    let last = |g: usize| match &r.games[g].actions.last().unwrap().kind {
        ActionKind::Play(t) => t.play.position,
        other => panic!("{other:?}"),
    };
    assert_eq!(last(0).off, [14, 8]);
    let bore_off = |winner| rules::Outcome {
        winner: Some(winner),
        points: 1,
        reason: OutcomeReason::BoreOff,
    };
    // Game 2: "Doubles => 4", "Drops": the doubler wins the cube before, 2.
    assert_eq!(end(&r, 1), (Some(Side::White), 2, EndReason::Drop));
    assert_eq!(passes(&r, 1), 4, "the right player dances four times (R4)");
    // Game 3: redoubles to 8, the right player bears off.
    assert_eq!(
        end(&r, 2),
        (
            Some(Side::Black),
            8,
            EndReason::Board(bore_off(Side::Black))
        )
    );
    assert_eq!(
        r.games.iter().map(|g| g.cube_actions()).collect::<Vec<_>>(),
        [2, 4, 6]
    );
    assert_eq!(r.turn_count(), 45 + 26 + 51);
}

#[test]
fn gnubg_resignations_are_read() {
    // The left player rolls 5-1 and resigns: a roll without a play (R3 does not
    // apply), the right player wins 1.
    let r = MatchRecord::parse(&data("gnubg-3p-roll-resign-left.mat")).unwrap();
    let g = &r.games[0];
    assert_eq!(
        g.actions.last().unwrap().kind,
        ActionKind::Roll(Dice::new(5, 1).unwrap())
    );
    assert_eq!(end(&r, 0), (Some(Side::Black), 1, EndReason::Resign));
    // A double answered by a resignation: no drop, the doubler wins 2.
    let r = MatchRecord::parse(&data("gnubg-3p-resign-after-double.mat")).unwrap();
    assert_eq!(
        r.games[0].actions.last().unwrap().kind,
        ActionKind::Double(2)
    );
    assert_eq!(end(&r, 0), (Some(Side::Black), 2, EndReason::Resign));
}

#[test]
fn an_illegal_play_is_reported_with_game_move_and_legal_plays() {
    let text =
        data("gnubg-5p-drop-left.mat").replace("  2) 65: 24/18 18/13 ", "  2) 65: 24/18 18/12 ");
    let e = MatchRecord::parse(&text).unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 8, game 1, move 2 (left, white): \"24/18 18/12\" is not a legal play for 6-5"
    );
    assert_eq!(
        (e.game, e.number, e.side),
        (Some(1), Some(2), Some(Side::White))
    );
    // The position after the right player's 53: 8/3 6/3 (R1 numbering, White to move).
    let mut pos = rules::Position::start(Variant::Portes, Side::Black);
    pos = rules::apply(
        &pos,
        Dice::new(5, 3).unwrap(),
        &rules::PlayInput::Notation("8/3 6/3".into()),
    )
    .unwrap()
    .position;
    let legal: Vec<String> = rules::legal_plays(&pos, Dice::new(6, 5).unwrap())
        .unwrap()
        .into_iter()
        .map(|p| p.notation.into())
        .collect();
    assert_eq!(e.legal, legal);
    assert!(e.legal.contains(&"24/18/13".to_string()), "{:?}", e.legal);
}

#[test]
fn a_missing_play_with_legal_plays_is_an_error() {
    let text = data("gnubg-5p-drop-left.mat").replace(
        "  3) 64: 24/20 20/14             43: 13/10 24/20 ",
        "  3) 64:                         43: 13/10 24/20 ",
    );
    let e = MatchRecord::parse(&text).unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 9, game 1, move 3 (left, white): no play is written, but 6-4 has 10 legal plays"
    );
    assert_eq!(e.legal.len(), 10);
}

#[test]
fn tavli_match_reads_and_writes_back() {
    let text = std::fs::read_to_string(format!(
        "{}/tests/data/tavli/tavli-3p-match.mat",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let r = MatchRecord::parse(&text).unwrap();
    assert_eq!(r.to_text(), text);
    assert_eq!(
        r.games.iter().map(|g| g.variant).collect::<Vec<_>>(),
        Variant::ALL
    );
    assert!(r.games.iter().all(|g| g.tagged && g.cube_actions() == 0));
    // R2: the opening roll 6-2 lets the left player start game 1; the winner of each
    // game starts the next.
    assert_eq!(r.games[0].opening, Some([6, 2]));
    assert_eq!(r.games[0].actions[0].side, Side::White);
    assert_eq!(r.games[1].actions[0].side, Side::White);
    assert_eq!(r.games[2].actions[0].side, Side::Black);
    let how = |g: usize| match end(&r, g) {
        (w, p, EndReason::Board(o)) => (w, p, o.reason),
        other => panic!("{other:?}"),
    };
    assert_eq!(how(0), (Some(Side::White), 2, OutcomeReason::Mars));
    // R5.5: Black pins White's mother while it has no checker left on its own start.
    assert_eq!(how(1), (Some(Side::Black), 2, OutcomeReason::MotherPinned));
    assert_eq!(how(2), (Some(Side::Black), 2, OutcomeReason::Mars));
    assert_eq!(
        r.games.iter().map(|g| g.score).collect::<Vec<_>>(),
        [[0, 0], [2, 0], [2, 2]]
    );

    // The same match from structured turns (the engine's notation) is the same text.
    let games: Vec<GameInput> = r
        .games
        .iter()
        .map(|g| GameInput {
            variant: g.variant,
            starter: None,
            opening: g.opening,
            turns: structured_turns(g),
            result: None,
        })
        .collect();
    let built = MatchRecord::from_games(3, ["eleni".into(), "nikos".into()], &games).unwrap();
    assert_eq!(built.to_text(), text);
}

#[test]
fn tavli_records_are_checked() {
    let head = " 3 point match\n\n";
    let err = |body: &str| {
        MatchRecord::parse(&format!("{head}{body}"))
            .unwrap_err()
            .to_string()
    };
    // Tavli is cubeless (R4).
    assert_eq!(
        err(" Game 1 Plakoto\n a : 0     b : 0\n  1)  Doubles => 2\n"),
        "line 5, game 1, move 1 (left, white): a cube action in plakoto game: Tavli is \
         cubeless (no doubling cube, R4)"
            .replace("in plakoto", "in a plakoto")
    );
    // R2: the higher opening die starts.
    assert_eq!(
        err(" Game 1 Fevga opening 2-5\n a : 0     b : 0\n  1) 31: 24/21/20\n"),
        "line 3, game 1: opening roll 2-5: the right (black) player starts (R2), but the \
         first turn is the left (white) player's"
    );
    assert_eq!(
        err(" Game 1 Portes opening 4-4\n a : 0     b : 0\n"),
        "line 3, game 1: opening roll 4-4: equal dice are rolled again (R2), record the \
         roll that decided"
    );
    // R8.2: Fevga's first checker must pass the opponent's start first.
    let e = MatchRecord::parse(&format!(
        "{head} Game 1 Fevga\n a : 0     b : 0\n  1) 31: 24/21 24/23\n"
    ))
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 5, game 1, move 1 (left, white): \"24/21 24/23\" is not a legal play for 3-1"
    );
    assert_eq!(
        e.legal,
        ["24/21/20"],
        "one play: 24/23/20 gives the same position (R3)"
    );
    // A score line that does not follow from the results.
    assert_eq!(
        err(" Game 1 Portes\n a : 0     b : 0\n  1) 31: 8/5 6/5\n      Wins 1 point\n\n Game 2 Plakoto\n a : 0     b : 0\n"),
        "line 9, game 2: the score line says 0-0, but the games before end at 1-0"
    );
    assert_eq!(
        err(" Game 1 Tavla\n"),
        "line 3: after the game number expected a variant (Portes, Plakoto, Fevga) and \
         optionally \"opening 5-2\", got \"Tavla\""
    );
    assert_eq!(
        MatchRecord::parse("hello\n").unwrap_err().to_string(),
        "no \" N point match\" line: not a match record (docs/records.md)"
    );
}

#[test]
fn records_are_bounded_in_games_and_turns() {
    use tavli_engine::record::{MAX_GAMES, MAX_TURNS};
    // A service limit, not a rule of RULES.md. 5,001 lines of two cells: two turns
    // more than MAX_TURNS, refused before the replay (the plays are never checked).
    let mut text = String::from(" 1 point match\n\n Game 1\n a : 0                      b : 0\n");
    for n in 1..=MAX_TURNS / 2 + 1 {
        text.push_str(&format!(
            "{n:>3}) 31: 8/5 6/5                  31: 8/5 6/5\n"
        ));
    }
    let e = MatchRecord::parse(&text).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "the record has {} turns; at most 10000 per record",
            MAX_TURNS + 2
        )
    );
    // Structured: MAX_GAMES + 1 games without turns.
    let game = GameInput {
        variant: Variant::Portes,
        starter: Some(Side::White),
        opening: None,
        turns: Vec::new(),
        result: None,
    };
    let games = vec![game; MAX_GAMES + 1];
    let e = MatchRecord::from_games(0, ["a".into(), "b".into()], &games).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the record has 1001 games; at most 1000 per record"
    );
    // At the limit, the same games are read.
    let r = MatchRecord::from_games(0, ["a".into(), "b".into()], &games[..MAX_GAMES]).unwrap();
    assert_eq!(r.games.len(), MAX_GAMES);
}

fn tavli_data(name: &str) -> String {
    let path = format!("{}/tests/data/tavli/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The turns of a game of plays only, as structured turns (the engine's notation).
fn structured_turns(g: &tavli_engine::record::GameRecord) -> Vec<TurnInput> {
    g.actions
        .iter()
        .map(|a| match &a.kind {
            ActionKind::Play(t) => TurnInput {
                dice: t.dice,
                play: t.play.notation.to_string(),
            },
            other => panic!("{other:?}"),
        })
        .collect()
}

/// The turns of game `g` of the committed Tavli match, as structured turns.
fn match_turns(g: usize) -> Vec<TurnInput> {
    let r = MatchRecord::parse(&tavli_data("tavli-3p-match.mat")).unwrap();
    structured_turns(&r.games[g])
}

fn off_board(winner: Side, points: u8, reason: OutcomeReason) -> Option<rules::Outcome> {
    Some(rules::Outcome {
        winner: Some(winner),
        points,
        reason,
    })
}

/// A structured match whose games end by resignation and time-out before their
/// last play (the project's rules, docs/api.md "Resignation and time-out"): each
/// result is recorded, its points count for the next game's score, its winner
/// starts the next game (R2), and the text form says the same and reads back.
#[test]
fn resigned_and_timed_out_games_are_recorded() {
    let game = |variant, starter, turns, result| GameInput {
        variant,
        starter,
        opening: None,
        turns,
        result,
    };
    let games = vec![
        // Portes: four turns, then White resigns a mars (2 points).
        game(
            Variant::Portes,
            Some(Side::White),
            match_turns(0)[..4].to_vec(),
            off_board(Side::Black, 2, OutcomeReason::Resignation),
        ),
        // Plakoto, started by Black (the winner, R2): two turns, then Black's time
        // runs out with no checker off: 2 points.
        game(
            Variant::Plakoto,
            None,
            vec![
                TurnInput {
                    dice: Dice::new(6, 1).unwrap(),
                    play: "24/18 24/23".into(),
                },
                TurnInput {
                    dice: Dice::new(2, 6).unwrap(),
                    play: "24/18 24/22".into(),
                },
            ],
            off_board(Side::White, 2, OutcomeReason::TimeOut),
        ),
        // Fevga, started by White (R2); unfinished.
        game(
            Variant::Fevga,
            None,
            vec![TurnInput {
                dice: Dice::new(6, 6).unwrap(),
                play: "24/18".into(),
            }],
            None,
        ),
    ];
    let players = || ["eleni".to_string(), "nikos".to_string()];
    let r = MatchRecord::from_games(5, players(), &games).unwrap();
    assert_eq!(end(&r, 0), (Some(Side::Black), 2, EndReason::Resign));
    assert_eq!(end(&r, 1), (Some(Side::White), 2, EndReason::TimeOut));
    assert!(r.games[2].end.is_none());
    assert_eq!(
        r.games.iter().map(|g| g.score).collect::<Vec<_>>(),
        [[0, 0], [0, 2], [2, 2]]
    );
    let first = |g: usize| r.games[g].actions[0].side;
    assert_eq!((first(1), first(2)), (Side::Black, Side::White));

    // The text form: a resignation is GNU Backgammon's result line, a time-out the
    // same marked "(time-out)"; read back, the same results and scores.
    let text = r.to_text();
    assert_eq!(
        text,
        " 5 point match\n\n Game 1 Portes\n eleni : 0                      nikos : 0\n  \
         1) 25: 13/8 24/22              51: 13/8 24/23\n  \
         2) 36: 22/16/13                52: 13/8 23/21\n                                  \
         Wins 2 points\n\n Game 2 Plakoto\n eleni : 0                      nikos : 2\n  \
         1)                             61: 24/18 24/23\n  \
         2) 26: 24/18 24/22             \n      Wins 2 points (time-out)\n\n \
         Game 3 Fevga\n eleni : 2                      nikos : 2\n  \
         1) 66: 24/18                   "
    );
    let back = MatchRecord::parse(&text).unwrap();
    for g in 0..2 {
        assert_eq!(end(&back, g), end(&r, g), "game {}", g + 1);
    }
    assert_eq!(back.to_text(), text);

    // Errors, each naming the game and its result.
    let err = |games: &[GameInput]| {
        let e = MatchRecord::from_games(5, players(), games).unwrap_err();
        assert_eq!((e.in_result, e.turn_index), (true, None), "{e}");
        (e.game_index, e.to_string())
    };
    let mut bad = games.clone();
    bad[1].result = off_board(Side::White, 1, OutcomeReason::TimeOut);
    assert_eq!(
        err(&bad),
        (
            Some(1),
            "game 2: a time-out scores 2, not 1: black had borne off 0 checkers (2 points \
             when none, as a mars, R7; otherwise 1)"
                .to_string()
        )
    );
    bad[1].result = off_board(Side::White, 3, OutcomeReason::Resignation);
    assert_eq!(
        err(&bad).1,
        "game 2: a resignation scores 1 or 2 points (R7: no 3-point games), not 3"
    );
    bad[1].result = off_board(Side::White, 2, OutcomeReason::Mars);
    assert_eq!(
        err(&bad).1,
        "game 2: the game is not over on the board, so it cannot end by mars: a game \
         ended before its last play would is a resignation or a time-out"
    );
    bad[1].result = Some(rules::Outcome {
        winner: None,
        points: 1,
        reason: OutcomeReason::Resignation,
    });
    assert_eq!(err(&bad).1, "game 2: a resignation needs a winner");
    // A game the board ended keeps the board's result: the same may be given, no other.
    let whole = match_turns(0);
    let mut done = vec![game(
        Variant::Portes,
        Some(Side::White),
        whole.clone(),
        off_board(Side::White, 2, OutcomeReason::Mars),
    )];
    let r = MatchRecord::from_games(3, players(), &done).unwrap();
    assert_eq!(end(&r, 0).0, Some(Side::White));
    done[0].result = off_board(Side::Black, 1, OutcomeReason::Resignation);
    assert_eq!(
        err(&done).1,
        "game 1: the last play ended the game (white wins 2 (mars)): the result is that, \
         not black wins 1 (resignation)"
    );
    // White's time runs out before its last play, with checkers off: Black wins 1.
    let timed_out = [game(
        Variant::Portes,
        Some(Side::White),
        whole[..whole.len() - 1].to_vec(),
        off_board(Side::Black, 1, OutcomeReason::TimeOut),
    )];
    let r = MatchRecord::from_games(3, players(), &timed_out).unwrap();
    assert_eq!(end(&r, 0), (Some(Side::Black), 1, EndReason::TimeOut));
    assert!(r.games[0].final_position().off[Side::White.index()] > 0);
}

/// The text form's results off the board: in a Tavli game a resignation scores 1 or
/// 2 (R7) and a time-out's points follow its rule; a backgammon game may resign 3.
#[test]
fn text_resignations_and_time_outs_are_checked() {
    let head = " 3 point match\n\n Game 1 Portes\n a : 0     b : 0\n  1) 31: 8/5 6/5\n";
    let read = |result: &str| MatchRecord::parse(&format!("{head}{result}\n"));
    let r = read("      Wins 2 points (time-out)").unwrap();
    assert_eq!(end(&r, 0), (Some(Side::White), 2, EndReason::TimeOut));
    let r = read("                                  Wins 1 point").unwrap();
    assert_eq!(end(&r, 0), (Some(Side::Black), 1, EndReason::Resign));
    assert_eq!(
        read("      Wins 3 points").unwrap_err().to_string(),
        "line 6, game 1: a resignation scores 1 or 2 points (R7: no 3-point games), not 3"
    );
    assert_eq!(
        read("      Wins 1 point (time-out)")
            .unwrap_err()
            .to_string(),
        "line 6, game 1: a time-out scores 2, not 1: black had borne off 0 checkers \
         (2 points when none, as a mars, R7; otherwise 1)"
    );
    // GNU Backgammon's backgammon games (no variant): a 3-point resignation is read.
    let gnubg =
        " 3 point match\n\n Game 1\n a : 0     b : 0\n  1) 31: 8/5 6/5\n      Wins 3 points\n";
    let r = MatchRecord::parse(gnubg).unwrap();
    assert_eq!(end(&r, 0), (Some(Side::White), 3, EndReason::Resign));
}
