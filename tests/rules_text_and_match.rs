//! Text forms (Position ID, GNU Backgammon ID, move notation), dice and match rules.

use tavli_engine::pos;
use tavli_engine::rules::notation::{format, parse, Segment};
use tavli_engine::rules::position_id::{from_gnubg_id, from_id, to_gnubg_id, to_id};
use tavli_engine::rules::{
    apply, legal_plays, resolve_opening_roll, Dice, MatchState, OpeningRoll, Outcome,
    OutcomeReason, PlayInput, Position, RulesError, Side, Variant,
};

#[test]
fn start_position_ids() {
    // R1 starts, canonical IDs.
    let ids = [
        (
            Variant::Portes,
            "portes/w/24:2,13:5,8:3,6:5/1:2,12:5,17:3,19:5",
        ),
        (Variant::Plakoto, "plakoto/w/24:15/1:15"),
        (Variant::Fevga, "fevga/w/24:15/12:15"),
    ];
    for (v, id) in ids {
        let start = Position::start(v, Side::White);
        assert_eq!(to_id(&start), id);
        assert_eq!(from_id(id).unwrap(), start);
        assert_eq!(start.pip_count(Side::White), start.pip_count(Side::Black));
    }
    assert_eq!(
        Position::start(Variant::Portes, Side::White).pip_count(Side::White),
        167
    );
    assert_eq!(
        Position::start(Variant::Fevga, Side::Black).pip_count(Side::Black),
        360
    );
}

#[test]
fn position_id_with_pin_bar_and_off_round_trips() {
    let p = pos!(plakoto; white 3:1, 2:14; black 3:1 pinned, 24:14);
    assert_eq!(to_id(&p), "plakoto/w/3:1,2:14/3:1p,24:14");
    assert_eq!(from_id("plakoto/w/3:1,2:14/3:1p,24:14").unwrap(), p);
    let q = pos!(portes, black to move; white bar:1, 6:11; black 1:15);
    assert_eq!(to_id(&q), "portes/b/bar:1,6:11,off:3/1:15");
    assert_eq!(from_id(&to_id(&q)).unwrap(), q);
    // Fevga Black lists along its path 12 → 1 → 24 → 13.
    let f = pos!(fevga; white 24:14, 13:1; black 12:10, 2:1, 23:1, 14:3);
    assert_eq!(to_id(&f), "fevga/w/24:14,13:1/12:10,2:1,23:1,14:3");
    // Any order parses.
    assert_eq!(
        from_id("fevga/w/13:1,24:14/14:3,23:1,2:1,12:10").unwrap(),
        f
    );
}

#[test]
fn position_id_errors_name_the_problem() {
    let err = |id: &str| match from_id(id) {
        Err(RulesError::Invalid { field, reason }) => format!("{field}: {reason}"),
        other => panic!("{id}: {other:?}"),
    };
    assert!(err("chess/w/24:15/1:15").contains("unknown variant"));
    assert!(err("portes/x/24:15/1:15").contains("side to move"));
    assert!(err("portes/w/24:15").starts_with("position_id: expected variant/side/white/black"));
    assert_eq!(
        err("plakoto/w/24:14/1:15"),
        "white: white has 14 checkers (on points, bar and off), expected 15"
    );
    assert!(err("plakoto/w/24:14,25:1/1:15").contains("point must be 1..24"));
    assert_eq!(
        err("portes/w/24:14,5:1/1:14,5:1"),
        "points[4]: point 5: both colours on a point without a pin"
    );
    assert!(err("portes/w/24:14,5:1/1:14,5:1p")
        .starts_with("points[4]: point 5: pins exist only in Plakoto"));
    assert!(err("fevga/w/bar:1,24:14/12:15")
        .starts_with("bar.white: bar checkers exist only in Portes"));
    assert_eq!(
        err("plakoto/w/24:14,5:1/1:13,5:2p"),
        "points[4]: point 5: a pinned black checker needs exactly 1 black under at least 1 white, found 2 black and 1 white"
    );
    assert!(err("plakoto/w/24:14,24:1/1:15").contains("listed twice"));
}

#[test]
fn gnubg_ids_are_portes_only() {
    let p = Position::start(Variant::Plakoto, Side::White);
    assert!(
        matches!(to_gnubg_id(&p), Err(RulesError::Invalid { field, .. }) if field == "variant")
    );
    assert!(from_gnubg_id("not base64!!", Side::White).is_err());
    assert!(from_gnubg_id("4HPwATDgc/AB", Side::White).is_err());
}

/// Errors quote at most 40 characters of the input, whichever part is wrong (R9:
/// a bad Position ID is an error naming the field, with a short quote).
#[test]
fn position_id_errors_quote_little_of_a_long_input() {
    let long = "x".repeat(20_000);
    let x40 = "x".repeat(40);
    let cases = [
        (
            format!("{long}/w/24:15/1:15"),
            format!("unknown variant \"{x40}\"…: use portes, plakoto or fevga"),
        ),
        (
            format!("plakoto/{long}/24:15/1:15"),
            format!("side to move must be w or b, got \"{x40}\"…"),
        ),
        (
            format!("plakoto/w/{long}/1:15"),
            format!("white: \"{x40}\"…: expected point:count such as 13:5"),
        ),
    ];
    for (id, want) in cases {
        match from_id(&id).unwrap_err() {
            RulesError::Invalid { field, reason } => {
                assert_eq!(
                    (field.as_str(), reason.as_str()),
                    ("position_id", want.as_str())
                )
            }
            e => panic!("{e:?}"),
        }
    }
}

/// R5.1: at most one checker is pinned on a point, so a Position ID that marks both
/// colours pinned on one point is refused (it was read as "the last one wins").
#[test]
fn position_id_with_both_colours_pinned_on_a_point_is_refused() {
    match from_id("plakoto/w/3:1p,24:14/1:14,3:1p").unwrap_err() {
        RulesError::Invalid { field, reason } => assert_eq!(
            (field.as_str(), reason.as_str()),
            (
                "position_id",
                "black: \"3:1p\": point 3 is already marked pinned for white; \
                 only one colour can be pinned on a point"
            )
        ),
        e => panic!("{e:?}"),
    }
    // One pin, either colour, is a position (R5.1).
    assert!(from_id("plakoto/w/3:1,24:14/1:14,3:1p").is_ok());
    assert!(from_id("plakoto/b/3:1p,24:14/1:14,3:1").is_ok());
}

/// "Listed twice" names the place as parsed and quotes at most 40 characters of the
/// item, however many leading zeros it has (an unclipped quote of a long item once
/// outgrew the HTTP/2 header limit).
#[test]
fn listed_twice_error_stays_short() {
    let zeros = "0".repeat(5000);
    let id = format!("portes/w/13:1,{zeros}13:14/1:15");
    let quote = format!("\"{}\"…", "0".repeat(40));
    match from_id(&id).unwrap_err() {
        RulesError::Invalid { field, reason } => assert_eq!(
            (field.as_str(), reason.as_str()),
            (
                "position_id",
                format!("white: {quote}: point 13 listed twice").as_str()
            )
        ),
        e => panic!("{e:?}"),
    }
    match from_id("portes/w/off:1,bar:1,off:13/1:15").unwrap_err() {
        RulesError::Invalid { reason, .. } => {
            assert_eq!(reason, "white: \"off:13\": off listed twice")
        }
        e => panic!("{e:?}"),
    }
}

/// A hand-built board with 255 free checkers and a pin on a point: the counts
/// saturate at 255 (no overflow panic in debug and test builds) and the GNU
/// Backgammon key clamps the point to 15 checkers as for any count above 15.
#[test]
fn board_counts_saturate_with_a_pin() {
    use tavli_engine::rules::board::Board;
    use tavli_engine::rules::position_id::gnubg_key;
    let mut b = Board::EMPTY;
    b.own[1] = 255;
    b.own_pinned = 1 << 1;
    b.opp[3] = 255;
    b.opp_pinned = 1 << 3;
    assert_eq!((b.own_at(1), b.opp_at(3)), (255, 255));
    let bits = |v: u128| -> [u8; 10] { v.to_le_bytes()[..10].try_into().unwrap() };
    let run = |n: u32, at: u32| ((1u128 << n) - 1) << at;
    // The opponent's point 3 is its 22nd entry (bit 21); the mover's point 1 follows
    // the opponent's 24 points and bar with one more checker (16 bits from bit 40).
    assert_eq!(gnubg_key(&b), bits(run(15, 21) | run(15, 40)));
    let p = b.to_position(Variant::Plakoto, Side::White, Side::White);
    assert_eq!(p.point(1).white, 255);
}

/// The GNU Backgammon key of the starting position, and of boards no valid position
/// has (too many checkers): a key all the same, no panic.
#[test]
fn gnubg_key_of_any_board() {
    use tavli_engine::rules::board::Board;
    use tavli_engine::rules::position_id::{gnubg_id_of_board, gnubg_key};
    let start = Position::start(Variant::Portes, Side::White);
    assert_eq!(
        gnubg_id_of_board(&Board::from_position(&start, Side::White)),
        "4HPwATDgc/ABMA"
    );
    assert_eq!(gnubg_key(&Board::EMPTY), [0; 10]);
    let bits = |v: u128| -> [u8; 10] { v.to_le_bytes()[..10].try_into().unwrap() };
    let run = |n: u32, at: u32| ((1u128 << n) - 1) << at;
    // More than 15 on a point counts as 15: the mover's point 1 comes after the
    // opponent's 24 points and bar (25 separators).
    let mut b = Board::EMPTY;
    b.own[1] = 20;
    assert_eq!(gnubg_key(&b), bits(run(15, 25)));
    // More than 80 bits in all: cut at 80. The opponent's checkers on the mover's
    // point 3 (its own 22, its 22nd entry) from bit 21, the mover's point 1 from bit
    // 40, the mover's point 24 from bit 78.
    b.own[1] = 200;
    b.opp[3] = 40;
    b.own[24] = 255;
    assert_eq!(gnubg_key(&b), bits(run(15, 21) | run(15, 40) | run(2, 78)));
}

#[test]
fn notation_parses_and_prints() {
    let seg = |from, to, hit| Segment {
        from,
        to,
        hit,
        die: None,
        one_die: false,
    };
    assert_eq!(
        parse("24/18 13/11*").unwrap(),
        vec![seg(24, 18, false), seg(13, 11, true)]
    );
    assert_eq!(parse("bar/22").unwrap(), vec![seg(25, 22, false)]);
    assert_eq!(parse("6/off").unwrap(), vec![seg(6, 0, false)]);
    assert_eq!(
        parse("8/5(2)").unwrap(),
        vec![seg(8, 5, false), seg(8, 5, false)]
    );
    assert_eq!(
        parse("13/10*/5").unwrap(),
        vec![seg(13, 10, true), seg(10, 5, false)]
    );
    assert_eq!(parse("pass").unwrap(), vec![]);
    assert_eq!(parse("").unwrap(), vec![]);
    for bad in [
        "24",
        "24/25",
        "5/8",
        "off/3",
        "3/bar",
        "8/5(5)",
        "8/5(2",
        "x/y",
        "24/18(3) 13/7(2)",
    ] {
        assert!(
            matches!(parse(bad), Err(RulesError::Invalid { ref field, .. }) if field == "play"),
            "{bad} should not parse"
        );
    }
    // The engine's own form for plays (R3 examples).
    let p = Position::start(Variant::Portes, Side::White);
    let d = Dice::new(6, 5).unwrap();
    let play = apply(&p, d, &PlayInput::Notation("24/13".into())).unwrap();
    assert_eq!(play.notation, "24/18/13");
    assert_eq!(format(&[]), "pass");
    // Grouping, hits and chains in one line; more than one turn's moves never panic.
    use tavli_engine::rules::movegen::RawMove;
    let m = |from, to, die, hit| RawMove { from, to, die, hit };
    let four = [
        m(24, 18, 6, false),
        m(18, 12, 6, true),
        m(8, 2, 6, false),
        m(8, 2, 6, false),
    ];
    assert_eq!(format(&four), "24/18/12* 8/2(2)");
    assert_eq!(
        format(&[m(25, 22, 3, true), m(6, 0, 6, false)]),
        "bar/22* 6/off"
    );
    let five = [m(13, 12, 1, false); 5];
    assert_eq!(format(&five), "13/12(4) 13/12");
}

#[test]
fn portes_opening_play_counts() {
    // Distinct opening plays, counted by hand (R3: distinct by resulting position).
    let p = Position::start(Variant::Portes, Side::White);
    let count = |a, b| legal_plays(&p, Dice::new(a, b).unwrap()).unwrap().len();
    assert_eq!(count(2, 1), 15);
    // 6-5: 24/13, 24/18 13/8, 24/18 8/3, 13/7 13/8, 13/7 8/3, 13/2, 8/2 8/3.
    assert_eq!(count(6, 5), 7);
}

#[test]
fn plakoto_and_fevga_start_plays() {
    // R5 from the start: both dice from 24 (one checker or two), in notation.
    let p = Position::start(Variant::Plakoto, Side::White);
    let plays = legal_plays(&p, Dice::new(6, 5).unwrap()).unwrap();
    let names: std::collections::BTreeSet<_> = plays.iter().map(|p| p.notation.as_str()).collect();
    assert_eq!(names, ["24/18 24/19", "24/18/13"].into());
    // R8.2 from the Fevga start: one checker only.
    let f = Position::start(Variant::Fevga, Side::White);
    let plays = legal_plays(&f, Dice::new(6, 5).unwrap()).unwrap();
    let names: Vec<_> = plays.iter().map(|p| p.notation.as_str()).collect();
    assert_eq!(names, ["24/18/13"]);
}

#[test]
fn dice_are_checked() {
    // R9: dice outside 1..6.
    assert_eq!(
        Dice::new(0, 3),
        Err(RulesError::invalid("dice.die1", "die must be 1..6, got 0"))
    );
    assert_eq!(
        Dice::new(3, 7),
        Err(RulesError::invalid("dice.die2", "die must be 1..6, got 7"))
    );
    assert_eq!(Dice::parse("6-5").unwrap(), Dice::new(6, 5).unwrap());
    assert!(Dice::parse("6").is_err());
    assert_eq!(Dice::all_rolls().len(), 21);
}

#[test]
fn opening_roll_r2() {
    assert_eq!(
        resolve_opening_roll(5, 3).unwrap(),
        OpeningRoll::Starts(Side::White)
    );
    assert_eq!(
        resolve_opening_roll(2, 6).unwrap(),
        OpeningRoll::Starts(Side::Black)
    );
    assert_eq!(resolve_opening_roll(4, 4).unwrap(), OpeningRoll::RollAgain);
    assert!(
        matches!(resolve_opening_roll(0, 4), Err(RulesError::Invalid { field, .. }) if field == "white_die")
    );
    assert!(
        matches!(resolve_opening_roll(4, 7), Err(RulesError::Invalid { field, .. }) if field == "black_die")
    );
}

#[test]
fn match_cycle_r2() {
    let win = |side, points, reason| Outcome {
        winner: Some(side),
        points,
        reason,
    };
    let m = MatchState::new(3).unwrap();
    assert_eq!(
        (m.variant, m.starter, m.score),
        (Variant::Portes, None, [0, 0])
    );
    // Portes won by Black with a mars: Plakoto next, Black starts.
    let m = m
        .advance(&win(Side::Black, 2, OutcomeReason::Mars))
        .unwrap();
    assert_eq!(
        (m.variant, m.starter, m.score, m.winner),
        (Variant::Plakoto, Some(Side::Black), [0, 2], None)
    );
    // A Plakoto draw: Fevga next, opening roll again.
    let draw = Outcome {
        winner: None,
        points: 0,
        reason: OutcomeReason::BothMothersPinned,
    };
    let m = m.advance(&draw).unwrap();
    assert_eq!(
        (m.variant, m.starter, m.score),
        (Variant::Fevga, None, [0, 2])
    );
    // Fevga won by White: back to Portes, White starts.
    let m = m
        .advance(&win(Side::White, 1, OutcomeReason::BoreOff))
        .unwrap();
    assert_eq!(
        (m.variant, m.starter, m.score, m.games_played),
        (Variant::Portes, Some(Side::White), [1, 2], 3)
    );
    // Black reaches 3: match over; nothing more can be added.
    let m = m
        .advance(&win(Side::Black, 1, OutcomeReason::BoreOff))
        .unwrap();
    assert_eq!((m.score, m.winner), ([1, 3], Some(Side::Black)));
    assert!(m
        .advance(&win(Side::White, 1, OutcomeReason::BoreOff))
        .is_err());
    // R2: the match is won by reaching its length; a winner short of it is no state a
    // match can be in.
    let mut wrong = MatchState::new(3).unwrap();
    wrong.winner = Some(Side::White);
    assert_eq!(
        wrong.advance(&win(Side::White, 1, OutcomeReason::BoreOff)),
        Err(RulesError::invalid(
            "match.winner",
            "white is given as the match's winner with 0 of 3 points"
        ))
    );
    assert!(MatchState::new(0).is_err());
    // A one-point match ends with the first win.
    let one = MatchState::new(1)
        .unwrap()
        .advance(&win(Side::White, 1, OutcomeReason::BoreOff))
        .unwrap();
    assert_eq!(one.winner, Some(Side::White));
}

#[test]
fn match_rejects_outcomes_that_cannot_end_the_game_played() {
    // R5.5/R7: points follow the reason; mother results end only Plakoto games.
    let m = MatchState::new(5).unwrap();
    let bad = |winner, points, reason| match m.advance(&Outcome {
        winner,
        points,
        reason,
    }) {
        Err(RulesError::Invalid { field, .. }) => field,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        bad(Some(Side::White), 2, OutcomeReason::BoreOff),
        "outcome.points"
    );
    assert_eq!(
        bad(Some(Side::White), 1, OutcomeReason::Mars),
        "outcome.points"
    );
    assert_eq!(bad(None, 0, OutcomeReason::Mars), "outcome.winner");
    assert_eq!(
        bad(Some(Side::Black), 0, OutcomeReason::BothMothersPinned),
        "outcome.winner"
    );
    // The match starts with Portes: no mother results.
    assert_eq!(
        bad(Some(Side::White), 2, OutcomeReason::MotherPinned),
        "outcome.reason"
    );
    assert_eq!(
        bad(None, 0, OutcomeReason::BothMothersPinned),
        "outcome.reason"
    );
    // Scores saturate instead of wrapping around.
    let mut huge = MatchState::new(u32::MAX).unwrap();
    huge.score = [u32::MAX - 1, 0];
    huge.games_played = u32::MAX;
    let next = huge
        .advance(&Outcome {
            winner: Some(Side::White),
            points: 2,
            reason: OutcomeReason::Mars,
        })
        .unwrap();
    assert_eq!(
        (next.score[0], next.winner, next.games_played),
        (u32::MAX, Some(Side::White), u32::MAX)
    );
}

/// Resignation and time-out (the project's rules where RULES.md is silent,
/// docs/api.md "Resignation and time-out"): a win like any other for the match.
#[test]
fn resignations_and_time_outs_advance_the_match() {
    use OutcomeReason::{Resignation, TimeOut};
    let off_board = |winner, points, reason| Outcome {
        winner,
        points,
        reason,
    };
    let seen = |m: &MatchState| (m.variant, m.starter, m.score, m.games_played, m.winner);
    let (white, black) = (Some(Side::White), Some(Side::Black));
    // R2: Portes resigned by White for 2 points: Black has 2, Plakoto next, Black
    // (the winner) starts it.
    let m = MatchState::new(3).unwrap();
    let m = m.advance(&off_board(black, 2, Resignation)).unwrap();
    assert_eq!(seen(&m), (Variant::Plakoto, black, [0, 2], 1, None));
    // Plakoto lost by Black on time, 1 point: Fevga next, White starts (R2).
    let m = m.advance(&off_board(white, 1, TimeOut)).unwrap();
    assert_eq!(seen(&m), (Variant::Fevga, white, [1, 2], 2, None));
    // A 1-point resignation takes Black to the length: match over.
    let m = m.advance(&off_board(black, 1, Resignation)).unwrap();
    assert_eq!(seen(&m), (Variant::Portes, black, [1, 3], 3, black));
    // R7: no 3-point games, no 0-point resignation, and a resignation or time-out
    // has a winner.
    let fresh = MatchState::new(5).unwrap();
    let refused = |o| match fresh.advance(&o) {
        Err(RulesError::Invalid { field, reason }) => format!("{field}: {reason}"),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        refused(off_board(white, 3, Resignation)),
        "outcome.points: a resignation result scores 1 or 2, not 3 (R5.5, R7)"
    );
    assert_eq!(
        refused(off_board(white, 0, TimeOut)),
        "outcome.points: a time_out result scores 1 or 2, not 0 (R5.5, R7)"
    );
    assert_eq!(
        refused(off_board(None, 0, Resignation)),
        "outcome.winner: a resignation result needs a winner"
    );
    // The time-out's points follow the loser's borne-off checkers (R7's mars).
    let points = [0, 1, 14].map(OutcomeReason::time_out_points);
    assert_eq!(points, [2, 1, 1]);
    assert_eq!(
        (Resignation.name(), TimeOut.name()),
        ("resignation", "time_out")
    );
}

#[test]
fn inputs_are_parsed_strictly_and_echoed_briefly() {
    // Dice text must be two digits 1..6.
    for bad in ["a-5", "６-5", "5-é", "6a5", "1-2-3"] {
        assert!(
            matches!(Dice::parse(bad), Err(RulesError::Invalid { ref field, ref reason }) if field == "dice" && reason.contains("expected two dice")),
            "{bad}"
        );
    }
    // Counts and points are plain digits.
    for bad in [
        "portes/w/24:+2,13:5,8:3,6:5/1:2,12:5,17:3,19:5",
        "portes/w/+24:2,13:5,8:3,6:5/1:2,12:5,17:3,19:5",
    ] {
        assert!(from_id(bad).is_err(), "{bad}");
    }
    // Errors quote at most 40 characters of the input.
    let long = "x".repeat(10_000);
    let p = Position::start(Variant::Portes, Side::White);
    let d = Dice::new(3, 1).unwrap();
    for e in [
        apply(&p, d, &PlayInput::Notation(long.clone())).unwrap_err(),
        from_id(&long).unwrap_err(),
        from_gnubg_id(&long, Side::White).unwrap_err(),
    ] {
        assert!(e.to_string().len() < 300, "{}", e.to_string().len());
    }
}

#[test]
fn a_move_is_one_die_even_without_its_die() {
    // A Move is one checker moved by one die: 24→13 is not one move with 6-5.
    use tavli_engine::rules::{Location, Move};
    let p = Position::start(Variant::Portes, Side::White);
    let d = Dice::new(6, 5).unwrap();
    let mv = |from, to, die| Move {
        from: Location::Point(from),
        to: Location::Point(to),
        die,
        hit: false,
    };
    assert!(apply(&p, d, &PlayInput::Moves(vec![mv(24, 13, 0)])).is_err());
    let two = apply(&p, d, &PlayInput::Moves(vec![mv(24, 18, 0), mv(18, 13, 0)])).unwrap();
    assert_eq!(two.notation, "24/18/13");
    // The same play in notation may skip the landing point (R3: it is open).
    assert_eq!(
        apply(&p, d, &PlayInput::Notation("24/13".into()))
            .unwrap()
            .position,
        two.position
    );
}

#[test]
fn both_sides_cannot_have_borne_off_everything() {
    // R9: only one side can finish a game.
    assert!(matches!(
        from_id("portes/b/off:15/off:15"),
        Err(RulesError::Invalid { ref field, .. }) if field == "off"
    ));
}
