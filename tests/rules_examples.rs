//! Worked examples of RULES.md, of the seeds (000 Plakoto, 001 Fevga) and of the
//! rules-core issue, each with its exact set of legal plays. Positions read like
//! diagrams (printed numbering, White to move unless said; checkers not listed are
//! borne off).

use std::collections::BTreeSet;
use tavli_engine::pos;
use tavli_engine::rules::{
    apply, legal_plays, Dice, Location, Outcome, OutcomeReason, Play, PlayInput, Position,
    RulesError, Side,
};

fn dice(a: u8, b: u8) -> Dice {
    Dice::new(a, b).unwrap()
}

/// The resulting position of a play written in notation (must be legal).
fn after(pos: &Position, d: Dice, notation: &str) -> Play {
    apply(pos, d, &PlayInput::Notation(notation.into()))
        .unwrap_or_else(|e| panic!("{notation}: {e}"))
}

/// Asserts the exact set of legal plays, named by notation, compared by resulting
/// position (R3: plays are distinct by resulting position).
fn assert_plays(pos: &Position, d: Dice, expected: &[&str]) -> Vec<Play> {
    let plays = legal_plays(pos, d).unwrap();
    let got: BTreeSet<String> = plays
        .iter()
        .map(|p| tavli_engine::rules::position_id::to_id(&p.position))
        .collect();
    let want: BTreeSet<String> = expected
        .iter()
        .map(|n| tavli_engine::rules::position_id::to_id(&after(pos, d, n).position))
        .collect();
    let names: Vec<&str> = plays.iter().map(|p| p.notation.as_str()).collect();
    assert_eq!(got, want, "legal plays were {names:?}");
    assert_eq!(plays.len(), expected.len(), "legal plays were {names:?}");
    plays
}

fn notations(plays: &[Play]) -> BTreeSet<String> {
    plays.iter().map(|p| p.notation.to_string()).collect()
}

fn rejected(pos: &Position, d: Dice, notation: &str) -> String {
    match apply(pos, d, &PlayInput::Notation(notation.into())) {
        Err(RulesError::Invalid { field, reason }) => {
            assert_eq!(field, "play");
            reason
        }
        other => panic!("{notation} should be rejected, got {other:?}"),
    }
}

// ---- The cases -------------------------------------------------------------

#[test]
fn portes_both_dice_must_be_played() {
    // R3 maximum dice: 24/22 8/2 is the only way to play both dice.
    let p = pos!(portes; white 24:1, 8:1, 6:5; black 20:4, 19:3, 18:4, 16:2, 4:2);
    let plays = assert_plays(&p, dice(6, 2), &["24/22 8/2"]);
    assert_eq!(plays[0].moves.len(), 2);
}

#[test]
fn portes_only_one_die_playable_larger_one() {
    // R3 larger die: only one die can be played, so the larger: 13/9*.
    let p = pos!(portes; white 13:1; black 4:2, 5:2, 6:2, 7:2, 8:2, 9:1, 10:2, 12:2);
    let plays = assert_plays(&p, dice(4, 2), &["13/9*"]);
    assert_eq!(plays[0].notation, "13/9*");
    assert!(plays[0].moves[0].hit);
    assert_eq!(plays[0].position.bar, [0, 1]);
}

#[test]
fn portes_both_larger_die_plays_are_kept() {
    // R3: either checker may play the 6 when the 1 cannot follow.
    let p = pos!(portes; white 20:1, 14:1; black 19:2, 13:2, 7:2);
    let plays = assert_plays(&p, dice(6, 1), &["20/14", "14/8"]);
    assert_eq!(
        notations(&plays),
        ["14/8", "20/14"].map(String::from).into()
    );
}

#[test]
fn portes_bar_checker_blocks_everything() {
    // R4: the bar checker must enter first; 1-1 cannot enter on 24, so pass.
    let p = pos!(portes; white bar:1, 13:5, 8:3, 6:5; black 24:2, 23:2, 22:2, 21:2, 20:2, 1:5);
    let plays = assert_plays(&p, dice(1, 1), &["pass"]);
    assert!(plays[0].moves.is_empty());
    assert_eq!(plays[0].notation, "pass");
    assert_eq!(plays[0].position.turn, Side::Black);
    rejected(&p, dice(1, 1), "13/12");
}

#[test]
fn portes_hit_on_the_way_is_a_different_play() {
    // R3/R4: 13/10*/5 leaves Black on the bar, 13/8/5 does not.
    let p = pos!(portes; white 13:1, 6:5; black 10:1, 1:14);
    let plays = assert_plays(&p, dice(5, 3), &["13/10*/5", "13/8/5", "13/8 6/3"]);
    let hit = after(&p, dice(5, 3), "13/10*/5");
    let quiet = after(&p, dice(5, 3), "13/8/5");
    assert_eq!(hit.position.bar, [0, 1]);
    assert_eq!(quiet.position.bar, [0, 0]);
    assert_ne!(hit.position, quiet.position);
    assert!(notations(&plays).contains("13/10*/5"));
    assert!(notations(&plays).contains("13/8/5"));
}

#[test]
fn portes_bear_off_needs_both_dice() {
    // R3 game end inside a turn + R6: 4/off with the 5 alone plays one die; 4/2 2/off
    // plays two, so it is the only play.
    let p = pos!(portes; white 4:1; black 24:3, 23:4);
    let plays = assert_plays(&p, dice(5, 2), &["4/2 2/off"]);
    assert_eq!(plays[0].moves.len(), 2);
    assert_eq!(plays[0].notation, "4/2/off");
    assert_eq!(
        plays[0].outcome,
        Some(Outcome {
            winner: Some(Side::White),
            points: 1,
            reason: OutcomeReason::BoreOff
        })
    );
    rejected(&p, dice(5, 2), "4/off");
}

#[test]
fn fevga_first_checker_with_six_six() {
    // R8.2: the runner on 13 must pass 12 before another checker moves.
    let p = pos!(fevga; white 24:14, 13:1; black 12:15);
    let plays = assert_plays(&p, dice(6, 6), &["13/7 24/18(3)", "13/7/1 24/18(2)"]);
    assert_eq!(
        notations(&plays),
        ["13/7 24/18(3)", "13/7/1 24/18(2)"]
            .map(String::from)
            .into()
    );
}

#[test]
fn plakoto_bearing_off_frees_the_pinned_checker() {
    // R5.2 + R6: every play moves the pinner off point 3, freeing Black's checker.
    let p = pos!(plakoto; white 3:1, 2:14; black 3:1 pinned, 24:14);
    let plays = assert_plays(&p, dice(3, 1), &["3/off 2/1", "3/2 2/off"]);
    for play in &plays {
        let pt = play.position.point(3);
        assert_eq!(
            (pt.white, pt.black, pt.pinned),
            (0, 1, None),
            "{}",
            play.notation
        );
    }
}

// ---- RULES.md examples -------------------------------------------------------------

#[test]
fn r5_5_pin_that_wins_must_still_use_both_dice() {
    // R5.5 + R3: 7/1 alone pins the mother with one die; 10/9 7/1 plays both and wins.
    let p = pos!(plakoto; white 10:1, 7:1, 6:13; black 1:1, 20:14);
    let plays = legal_plays(&p, dice(6, 1)).unwrap();
    assert!(plays.iter().all(|p| p.moves.len() == 2));
    let win = after(&p, dice(6, 1), "10/9 7/1*");
    assert_eq!(
        win.outcome,
        Some(Outcome {
            winner: Some(Side::White),
            points: 2,
            reason: OutcomeReason::MotherPinned
        })
    );
    assert!(plays.iter().any(|q| q.position == win.position));
    rejected(&p, dice(6, 1), "7/1*");
    // Plays that end the game are exactly those that pin the mother on their last move.
    let winning: BTreeSet<String> = plays
        .iter()
        .filter(|q| q.outcome.is_some())
        .map(|q| q.notation.to_string())
        .collect();
    assert_eq!(winning, ["10/9 7/1*", "6/5 7/1*"].map(String::from).into());
}

#[test]
fn r5_5_no_two_dice_pin_so_bear_off() {
    // R5.5: with 6-5 no two-dice sequence pins, so the only play is 7/2 6/off.
    let p = pos!(plakoto; white 7:1, 6:14; black 1:1, 20:14);
    let plays = assert_plays(&p, dice(6, 5), &["7/2 6/off"]);
    assert_eq!(plays[0].outcome, None);
}

#[test]
fn r6_maximum_dice_before_bearing_off() {
    // R6: 14 off, one checker on own 3, roll 3-1: 3/2 with the 1, then 2/off with the 3.
    for p in [
        pos!(portes; white 3:1; black 24:15),
        pos!(plakoto; white 3:1; black 24:15),
        pos!(fevga; white 3:1; black 18:15),
    ] {
        let plays = assert_plays(&p, dice(3, 1), &["3/2/off"]);
        assert_eq!(plays[0].moves[0].die, 1);
        assert_eq!(plays[0].moves[1].die, 3);
        assert_eq!(
            plays[0].outcome.unwrap().points,
            2,
            "mars: Black has none off (R7)"
        );
        rejected(&p, dice(3, 1), "3/off");
    }
}

#[test]
fn r8_2_fevga_start_six_six_and_five_five() {
    // R8.2: from the start, 6-6 plays 24/18 only; 5-5 has exactly two plays.
    let start = Position::start(tavli_engine::rules::Variant::Fevga, Side::White);
    let plays = assert_plays(&start, dice(6, 6), &["24/18"]);
    assert_eq!(plays[0].moves.len(), 1);
    assert_plays(&start, dice(5, 5), &["24/19/14/9/4", "24/19/14/9 24/19"]);
}

#[test]
fn r8_3_fevga_start_quarter_prime_checked_after_every_die() {
    // R8.3: 24/19 would hold all of 19..24; it is legal only after 23/19 opened 23.
    let p =
        pos!(fevga; white 24:11, 23:1, 22:1, 21:1, 20:1; black 18:1, 17:1, 16:1, 15:1, 14:1, 13:10);
    let plays = assert_plays(&p, dice(5, 4), &["23/19 24/19"]);
    // The engine's order is the legal one: the 4 first.
    assert_eq!(plays[0].moves[0].die, 4);
    assert_eq!(plays[0].moves[0].from, Location::Point(23));
}

#[test]
fn r8_4_fevga_must_open_for_a_trapped_opponent() {
    // R8.4: all 15 Black checkers on 12; White holds 11..6 in front of them. With 6-5
    // every play must end with the prime broken.
    let p = pos!(fevga; white 11:2, 10:2, 9:2, 8:2, 7:2, 6:2, 5:3; black 12:15);
    let plays = legal_plays(&p, dice(6, 5)).unwrap();
    assert!(!plays.is_empty());
    for play in &plays {
        let broken = (6..=11).any(|n| play.position.point(n).white == 0);
        assert!(broken, "{} keeps the prime", play.notation);
        assert_eq!(play.moves.len(), 2);
    }
    assert_plays(
        &p,
        dice(6, 5),
        &["11/5 11/6", "10/4 10/5", "9/3 9/4", "8/2 8/3", "7/1 7/2"],
    );
    // A few trapped checkers do not trigger the duty: 14 on 12 and one on 13.
    let q = pos!(fevga; white 11:2, 10:2, 9:2, 8:2, 7:2, 6:2, 5:3; black 12:14, 13:1);
    let plays = legal_plays(&q, dice(6, 5)).unwrap();
    assert!(plays
        .iter()
        .any(|p| (6..=11).all(|n| p.position.point(n).white > 0)));
}

// ---- Seed 000 (Plakoto) ------------------------------------------------------------

#[test]
fn seed000_pin_on_the_way_is_released() {
    // R5.1/R5.2: White on 7, single Black on 5, roll 2-1: 7/5*/4 pins and releases;
    // stopping on 5 and playing the 1 elsewhere keeps the pin.
    let p = pos!(plakoto; white 7:1, 24:14; black 5:1, 1:14);
    let through = after(&p, dice(2, 1), "7/5*/4");
    assert_eq!(through.position.point(5).pinned, None);
    assert_eq!(through.position.point(5).black, 1);
    let stop = after(&p, dice(2, 1), "7/5* 24/23");
    assert_eq!(stop.position.point(5).pinned, Some(Side::Black));
    assert_eq!(stop.position.point(5).white, 1);
}

#[test]
fn seed000_pinned_checker_is_highest_for_bearing_off() {
    // R5.4: own pinned checker on 5, free one on 2: a 6 cannot bear off the 2.
    let p = pos!(plakoto; white 5:1 pinned, 2:1; black 5:1, 20:14);
    assert_plays(&p, dice(6, 6), &["pass"]);
    assert_plays(&p, dice(6, 2), &["2/off"]);
}

#[test]
fn seed000_point_held_by_a_pinner_is_closed() {
    // R5.3: a single Black checker pinning a White one closes that point to White.
    let p = pos!(plakoto; white 10:1 pinned, 12:1, 24:13; black 10:1, 1:14);
    let plays = legal_plays(&p, dice(2, 1)).unwrap();
    assert!(
        plays.iter().all(|q| !q.notation.contains("12/10")),
        "{:?}",
        notations(&plays)
    );
    rejected(&p, dice(2, 1), "12/10 24/23");
}

#[test]
fn seed000_mother_leaving_while_opponent_mother_pinned_wins() {
    // R5.5: White pins Black's mother on 1 and still has a checker on 24; the moment the
    // last one leaves, White wins 2 — but only a two-dice play is legal (R3).
    let p = pos!(plakoto; white 24:1, 1:1, 6:13; black 1:1 pinned, 19:14);
    let plays = assert_plays(&p, dice(6, 5), &["6/1 24/18"]);
    assert_eq!(
        plays[0].outcome.unwrap().reason,
        OutcomeReason::MotherPinned
    );
    assert_eq!(plays[0].outcome.unwrap().points, 2);
}

#[test]
fn r5_5_both_mothers_pinned_is_a_draw() {
    // R5.5: White's mother is pinned on 24; pinning Black's on 1 ends the game drawn.
    let p = pos!(plakoto; white 24:1 pinned, 3:1, 6:13; black 24:1, 1:1, 19:13);
    let d = dice(2, 1);
    let draw = after(&p, d, "6/5 3/1*");
    assert_eq!(
        draw.outcome,
        Some(Outcome {
            winner: None,
            points: 0,
            reason: OutcomeReason::BothMothersPinned
        })
    );
    rejected(&p, d, "3/1*");
}

#[test]
fn r9_finished_games_have_no_plays() {
    // R9: a side with 15 off; a mother pinned while the pinner left its start.
    let done = pos!(portes; white 6:1; black 19:2);
    let mut over = done;
    over.point_mut(6).white = 0;
    over.off[0] = 15;
    assert!(matches!(
        legal_plays(&over, dice(3, 1)),
        Err(RulesError::GameOver(Outcome {
            winner: Some(Side::White),
            points: 1,
            ..
        }))
    ));
    let mother = pos!(plakoto; white 1:1, 6:14; black 1:1 pinned, 19:14);
    assert_eq!(
        legal_plays(&mother, dice(3, 1)).unwrap_err(),
        RulesError::GameOver(Outcome {
            winner: Some(Side::White),
            points: 2,
            reason: OutcomeReason::MotherPinned
        })
    );
}

#[test]
fn r4_black_enters_on_its_die_point() {
    // R4: Black enters with die d on printed d.
    let p = pos!(portes, black to move; white 24:2, 13:5, 8:3, 6:4, 3:1; black bar:1, 12:5, 17:3, 19:5, 1:1);
    let plays = legal_plays(&p, dice(3, 3)).unwrap();
    for play in &plays {
        assert_eq!(play.moves[0].from, Location::Bar);
        assert_eq!(play.moves[0].to, Location::Point(3));
        assert!(play.moves[0].hit, "the White blot on 3 is hit");
    }
    let first = after(&p, dice(3, 3), "bar/22* 13/10(3)");
    assert_eq!(first.position.bar, [1, 0]);
    assert_eq!(first.position.point(3).black, 1);
    assert_eq!(first.position.point(15).black, 3);
    assert_eq!(first.notation, "bar/22* 13/10(3)");
}

// ---- Seed 001 (Fevga) --------------------------------------------------------------

#[test]
fn seed001_reaching_the_opponent_start_exactly_is_not_passing() {
    // R8.2: the runner on 18 reaches own 12 with the 6 (empty here) but has not passed
    // it, so the 5 must move it on too: 18/12 24/19 is not legal.
    let p = pos!(fevga; white 24:14, 18:1; black 13:15);
    let plays = assert_plays(&p, dice(6, 5), &["18/12/7"]);
    assert_eq!(plays[0].notation, "18/12/7");
    rejected(&p, dice(6, 5), "18/12 24/19");
}

#[test]
fn seed001_once_passed_the_other_die_may_move_another_checker() {
    // R8.2: the runner passes 12 with the 6 (18/12 is not enough, 13/7 is), after which
    // the 1 may move any checker.
    let p = pos!(fevga; white 24:14, 13:1; black 14:15);
    let plays = legal_plays(&p, dice(6, 1)).unwrap();
    let names = notations(&plays);
    assert!(names.contains("13/7 24/23"), "{names:?}");
    assert!(names.contains("13/7/6"), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("24/18")), "{names:?}");
}
