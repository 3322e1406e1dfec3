//! Property tests over positions reached by seeded random play in each variant
//! (R1, R3, R9), and the move-count regression constants.

use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::HashSet;
use tavli_engine::corpus::{random_game, random_positions, roll};
use tavli_engine::rules::position_id::{from_id, to_id};
use tavli_engine::rules::{
    apply, legal_plays, Dice, OutcomeReason, PlayInput, Position, RulesError, Side, Variant,
};

fn variant_strategy() -> impl Strategy<Value = Variant> {
    prop_oneof![
        Just(Variant::Portes),
        Just(Variant::Plakoto),
        Just(Variant::Fevga)
    ]
}

/// Checks every invariant of one position and roll; returns the number of plays.
fn check_position(pos: &Position, dice: Dice) -> usize {
    // R1/R9: 15 checkers per side, no illegal sharing (validate), ID round trip.
    pos.validate().unwrap();
    assert_eq!(from_id(&to_id(pos)).unwrap(), *pos);
    let plays = legal_plays(pos, dice).unwrap();
    assert!(!plays.is_empty(), "a pass is one play");
    let mut seen = HashSet::new();
    let mut results = HashSet::new();
    for p in &plays {
        results.insert(p.position);
    }
    for p in &plays {
        // Every result is valid; the turn passed; no two plays share a result (R3).
        p.position.validate().unwrap();
        assert_eq!(p.position.turn, pos.turn.opponent());
        assert!(
            seen.insert(p.position),
            "two plays give {}",
            to_id(&p.position)
        );
        assert!(p.moves.len() <= if dice.is_double() { 4 } else { 2 });
        // Every listed play applies, as moves, as notation and as its position.
        let by_moves = apply(pos, dice, &PlayInput::Moves(p.moves.to_vec())).unwrap();
        assert_eq!(&by_moves, p);
        let by_text = apply(pos, dice, &PlayInput::Notation(p.notation.to_string()))
            .unwrap_or_else(|e| panic!("{} {dice} {}: {e}", to_id(pos), p.notation));
        assert_eq!(by_text.position, p.position);
        let by_pos = apply(pos, dice, &PlayInput::Position(p.position)).unwrap();
        assert_eq!(by_pos.position, p.position);
        // A play that is not listed is rejected: the play without its last move.
        if !p.moves.is_empty() && p.outcome.is_none() {
            let prefix = p.moves[..p.moves.len() - 1].to_vec();
            let r = apply(pos, dice, &PlayInput::Moves(prefix));
            assert!(
                matches!(r, Err(RulesError::Invalid { ref field, .. }) if field == "play"),
                "prefix of {} accepted: {r:?}",
                p.notation
            );
        }
        // All plays use the same number of dice (R3 maximum dice), except plays that
        // ended the game, which may stop early only when no play goes further.
        if p.outcome.is_none() {
            assert_eq!(p.moves.len(), plays[0].moves.len().max(p.moves.len()));
        }
    }
    plays.len()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_play_keeps_every_invariant(variant in variant_strategy(), seed in any::<u64>()) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut dice_rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
        let (last, outcome) = random_game(variant, &mut rng, 5_000, |pos| {
            check_position(pos, roll(&mut dice_rng));
        });
        // Every random game ends with a valid outcome (R5.5, R7).
        let o = outcome.expect("a random game ends within 5000 turns");
        last.validate().unwrap();
        prop_assert_eq!(last.game_over(), Some(o));
        match o.reason {
            OutcomeReason::BoreOff => prop_assert_eq!(o.points, 1),
            OutcomeReason::Mars | OutcomeReason::MotherPinned => prop_assert_eq!(o.points, 2),
            OutcomeReason::BothMothersPinned => {
                prop_assert_eq!((o.points, o.winner), (0, None));
            }
            // Only a game server ends a game so, never the board.
            OutcomeReason::Resignation | OutcomeReason::TimeOut => {
                prop_assert!(false, "the board ended a game by {}", o.reason.name());
            }
        }
        if matches!(o.reason, OutcomeReason::MotherPinned | OutcomeReason::BothMothersPinned) {
            prop_assert_eq!(variant, Variant::Plakoto);
        }
        if let Some(w) = o.winner {
            if matches!(o.reason, OutcomeReason::BoreOff | OutcomeReason::Mars) {
                prop_assert_eq!(last.off[w.index()], 15);
                prop_assert_eq!(o.reason == OutcomeReason::Mars, last.off[w.opponent().index()] == 0);
            }
        }
        // The finished position has no plays (R9).
        let finished = legal_plays(&last, Dice::new(3, 1).unwrap());
        prop_assert_eq!(finished, Err(RulesError::GameOver(o)));
    }
}

/// Total legal plays over a fixed seeded corpus × 21 rolls, per variant. A change of
/// any constant is a change of the rules engine's answers: explain it or fix it.
#[test]
fn move_count_regression() {
    let expected = [
        (Variant::Portes, 154_385u64),
        (Variant::Plakoto, 189_791u64),
        (Variant::Fevga, 82_858u64),
    ];
    let mut got = Vec::new();
    for (variant, _) in expected {
        let mut total = 0u64;
        for pos in random_positions(variant, 2026, 300) {
            for dice in Dice::all_rolls() {
                total += legal_plays(&pos, dice).unwrap().len() as u64;
            }
        }
        got.push((variant, total));
    }
    assert_eq!(got, expected);
}

#[test]
fn black_sees_the_same_rules_mirrored() {
    // R1: a position and its colour-swapped twin (Black to move) have the same number
    // of plays for every roll, in every variant.
    for variant in Variant::ALL {
        for pos in random_positions(variant, 7, 60) {
            let swapped = swap_colours(&pos);
            swapped.validate().unwrap();
            for dice in Dice::all_rolls() {
                let a = legal_plays(&pos, dice).unwrap();
                let b = legal_plays(&swapped, dice).unwrap();
                assert_eq!(a.len(), b.len(), "{} {dice}", to_id(&pos));
                let na: HashSet<_> = a.iter().map(|p| p.notation.to_string()).collect();
                let nb: HashSet<_> = b.iter().map(|p| p.notation.to_string()).collect();
                assert_eq!(na, nb, "{} {dice}", to_id(&pos));
            }
        }
    }
}

/// The same game with colours exchanged: each side's checkers move to the point with
/// the same own number for the other colour.
fn swap_colours(pos: &Position) -> Position {
    let mut s = Position::empty(pos.variant, pos.turn.opponent());
    for side in [Side::White, Side::Black] {
        let other = side.opponent();
        for printed in 1..=24u8 {
            let own = Position::own_point(pos.variant, side, printed);
            let target = Position::printed_point(pos.variant, other, own);
            let pt = pos.point(printed);
            let t = s.point_mut(target);
            match other {
                Side::White => t.white = pt.count(side),
                Side::Black => t.black = pt.count(side),
            }
            if pt.pinned == Some(side) {
                t.pinned = Some(other);
            }
        }
        s.bar[other.index()] = pos.bar[side.index()];
        s.off[other.index()] = pos.off[side.index()];
    }
    s
}
