//! The match equity table (docs/match-equity.md): its transitions are those of
//! `MatchState::advance` (R2), its entries solve the match's equations exactly, and
//! hand-derived closed forms hold.

use proptest::prelude::*;
use tavli_engine::eval::Probabilities;
use tavli_engine::matchequity::{
    match_winning_chance, After, Distributions, GameDistribution, GameEnd, MatchEquityTable,
    MetState, Starter, MAX_AWAY,
};
use tavli_engine::rules::{MatchState, Outcome, OutcomeReason, RulesError, Side, Variant};

const EPS: f64 = 1e-12;

fn builtin() -> &'static MatchEquityTable {
    MatchEquityTable::builtin()
}

/// The committed distribution of `v`, for its starter.
fn dist(v: Variant) -> GameDistribution {
    builtin().distributions()[Variant::ALL.iter().position(|&x| x == v).unwrap()]
}

fn state(away: u32, other_away: u32, variant: Variant, starter: Starter) -> MetState {
    MetState {
        away,
        other_away,
        variant,
        starter,
    }
}

fn mwc(away: u32, other_away: u32, variant: Variant, starter: Starter) -> f64 {
    builtin()
        .mwc_state(&state(away, other_away, variant, starter))
        .unwrap()
}

fn every_state(max: u32) -> impl Iterator<Item = MetState> {
    (1..=max).flat_map(move |a| {
        (1..=max).flat_map(move |b| {
            Variant::ALL
                .into_iter()
                .flat_map(move |v| Starter::ALL.into_iter().map(move |s| state(a, b, v, s)))
        })
    })
}

fn field_of<T: std::fmt::Debug>(r: Result<T, RulesError>) -> String {
    match r {
        Err(RulesError::Invalid { field, .. }) => field,
        other => panic!("expected an Invalid error, got {other:?}"),
    }
}

/// Every outcome that can end a game of `v`, with its end seen by `side` (R7, R5.5).
fn outcomes(v: Variant, side: Side) -> Vec<(Outcome, GameEnd)> {
    let mut out = Vec::new();
    for w in [Side::White, Side::Black] {
        let mut reasons = vec![(OutcomeReason::BoreOff, 1), (OutcomeReason::Mars, 2)];
        if v == Variant::Plakoto {
            reasons.push((OutcomeReason::MotherPinned, 2));
        }
        for (reason, points) in reasons {
            let end = match (w == side, points) {
                (true, 1) => GameEnd::WinSingle,
                (true, _) => GameEnd::WinMars,
                (false, 1) => GameEnd::LoseSingle,
                (false, _) => GameEnd::LoseMars,
            };
            let o = Outcome {
                winner: Some(w),
                points,
                reason,
            };
            out.push((o, end));
        }
    }
    if v == Variant::Plakoto {
        let draw = Outcome {
            winner: None,
            points: 0,
            reason: OutcomeReason::BothMothersPinned,
        };
        out.push((draw, GameEnd::Draw));
    }
    out
}

fn variant_strategy() -> impl Strategy<Value = Variant> {
    prop_oneof![
        Just(Variant::Portes),
        Just(Variant::Plakoto),
        Just(Variant::Fevga)
    ]
}

fn side_strategy() -> impl Strategy<Value = Side> {
    prop_oneof![Just(Side::White), Just(Side::Black)]
}

/// A match between games that is not over: length 1..=max, scores below it.
fn match_strategy(max: u32) -> impl Strategy<Value = MatchState> {
    (1..=max)
        .prop_flat_map(|length| {
            (
                Just(length),
                0..length,
                0..length,
                variant_strategy(),
                prop_oneof![Just(None), Just(Some(Side::White)), Just(Some(Side::Black))],
                0u32..50,
            )
        })
        .prop_map(
            |(length, sw, sb, variant, starter, games_played)| MatchState {
                length,
                score: [sw, sb],
                variant,
                starter,
                games_played,
                winner: None,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// R2: for every outcome of the game played, the table's successor state is the
    /// one `MatchState::advance` makes (points added and capped at the length, the
    /// next variant, the winner starts, an opening roll after a draw), seen by either
    /// side, lengths beyond the table included.
    #[test]
    fn successors_are_those_of_advance(m in match_strategy(40), side in side_strategy()) {
        let s = MetState::of(&m, side).unwrap();
        for (outcome, end) in outcomes(m.variant, side) {
            let next = m.advance(&outcome).unwrap();
            let expected = match next.winner {
                Some(w) if w == side => After::MatchWon,
                Some(_) => After::MatchLost,
                None => After::Next(MetState::of(&next, side).unwrap()),
            };
            prop_assert_eq!(s.after(end), expected, "{:?} after {:?}", m, outcome);
        }
    }

    /// The table's entry of a match equals the sum over the game's outcomes of their
    /// probability (the starter's distribution; half each way after an opening roll)
    /// times the entry after `MatchState::advance` (1 or 0 once the match is over).
    #[test]
    fn entries_solve_the_match_equations_through_advance(
        m in match_strategy(MAX_AWAY), side in side_strategy()
    ) {
        let t = builtin();
        let d = dist(m.variant);
        // The probability of each outcome seen by `side`.
        let p_side = |starter: Side| if starter == side { d } else { d.flip() };
        let value = |starter: Side| -> f64 {
            outcomes(m.variant, side)
                .into_iter()
                .filter(|(o, _)| o.reason != OutcomeReason::MotherPinned)
                .map(|(o, end)| {
                    let next = m.advance(&o).unwrap();
                    let v = match next.winner {
                        Some(w) => (w == side) as u8 as f64,
                        None => t.mwc_match(&next, side).unwrap(),
                    };
                    p_side(starter).probability(end) * v
                })
                .sum()
        };
        let expected = match m.starter {
            Some(s) => value(s),
            None => (value(Side::White) + value(Side::Black)) / 2.0,
        };
        let got = t.mwc_match(&m, side).unwrap();
        prop_assert!((got - expected).abs() < EPS, "{:?}: {} vs {}", m, got, expected);
    }
}

#[test]
fn the_committed_distributions_are_valid_and_round_trip() {
    let text = tavli_engine::matchequity::table::BUILTIN_DISTRIBUTIONS;
    let d = Distributions::from_json(text).unwrap();
    assert_eq!(Distributions::from_json(&d.to_json()).unwrap(), d);
    assert_eq!(d.variants.len(), 3);
    for (i, v) in d.variants.iter().enumerate() {
        assert_eq!(v.variant, Variant::ALL[i].name());
        assert_eq!(v.plies, 0);
        assert!(v.trials >= 100_000, "{}: {} trials", v.variant, v.trials);
        let se = v.standard_errors.as_array();
        for (k, p) in v.probabilities.as_array().into_iter().enumerate() {
            // Every standard error is small and a real one (0 only for a draw that
            // the variant cannot have).
            assert!(se[k] < 0.002, "{} {k}: {}", v.variant, se[k]);
            assert!(se[k] > 0.0 || (k == 4 && p == 0.0), "{} {k}", v.variant);
        }
    }
    assert_eq!(builtin().max_away(), MAX_AWAY);
    assert_eq!(builtin().max_length(), MAX_AWAY);
    assert_eq!(
        builtin().distributions(),
        &d.by_variant().unwrap(),
        "builtin() is made of the committed file"
    );
}

#[test]
fn bad_distributions_name_their_field() {
    let text = tavli_engine::matchequity::table::BUILTIN_DISTRIBUTIONS;
    let good = Distributions::from_json(text).unwrap();
    let mut d = good.clone();
    d.format = "other/1".into();
    assert_eq!(field_of(d.by_variant()), "distributions.format");
    let mut d = good.clone();
    d.variants.swap(0, 1);
    assert_eq!(field_of(d.by_variant()), "distributions.variants");
    let mut d = good.clone();
    d.variants[2].probabilities.win_single += 0.01;
    assert_eq!(
        field_of(d.by_variant()),
        "distributions.variants[2].probabilities"
    );
    let mut d = good.clone();
    d.variants[0].probabilities.draw = 0.01;
    d.variants[0].probabilities.lose_single -= 0.01;
    assert_eq!(
        field_of(d.by_variant()),
        "distributions.variants[0].probabilities.draw"
    );
    let mut d = good.clone();
    d.variants[1].probabilities.lose_mars = -0.1;
    assert_eq!(
        field_of(d.by_variant()),
        "distributions.variants[1].probabilities.lose_mars"
    );
    assert_eq!(
        field_of(Distributions::from_json("{\"format\": 1}")),
        "distributions"
    );
    let dist = good.by_variant().unwrap();
    assert_eq!(field_of(MatchEquityTable::new(dist, 0)), "max_away");
    assert_eq!(field_of(MatchEquityTable::new(dist, 1001)), "max_away");
}

/// Exact identities: a side's chance and the other side's chance of the same state
/// sum to 1; with an opening roll, MWC(a, b) + MWC(b, a) = 1, so equal aways are 1/2;
/// an opening roll is the mean of the two starters.
#[test]
fn symmetric_identities_hold_everywhere() {
    let t = builtin();
    for s in every_state(MAX_AWAY) {
        let (p, q) = (t.mwc_state(&s).unwrap(), t.mwc_state(&s.flip()).unwrap());
        assert!((p + q - 1.0).abs() < EPS, "{s:?}: {p} + {q}");
        assert!((0.0..=1.0).contains(&p), "{s:?}: {p}");
        if s.starter == Starter::OpeningRoll {
            let this = mwc(s.away, s.other_away, s.variant, Starter::ThisSide);
            let other = mwc(s.away, s.other_away, s.variant, Starter::OtherSide);
            assert!((p - (this + other) / 2.0).abs() < EPS, "{s:?}");
            if s.away == s.other_away {
                assert!((p - 0.5).abs() < EPS, "{s:?}: {p}");
            }
        }
    }
}

/// Closed forms derived by hand from the distributions (w: the starter wins, l: it
/// loses, ws/wm/ls/lm: single and mars, d: a draw).
#[test]
fn closed_forms_from_the_distributions() {
    use Starter::*;
    use Variant::*;
    let (po, pl, fe) = (dist(Portes), dist(Plakoto), dist(Fevga));
    let lose = |d: GameDistribution| d.lose_single + d.lose_mars;
    let close = |got: f64, want: f64| assert!((got - want).abs() < EPS, "{got} vs {want}");

    // 1-away each: the next game decides, a mars counting as a single; in Plakoto a
    // draw leads to a Fevga game with an opening roll, 1/2.
    close(mwc(1, 1, Portes, ThisSide), po.win());
    close(mwc(1, 1, Fevga, ThisSide), fe.win());
    close(mwc(1, 1, Fevga, OtherSide), lose(fe));
    close(
        mwc(1, 1, Fevga, OpeningRoll),
        0.5 * fe.win() + 0.5 * (1.0 - fe.win()),
    );
    close(mwc(1, 1, Plakoto, ThisSide), pl.win() + pl.draw / 2.0);
    close(mwc(1, 1, Plakoto, OtherSide), lose(pl) + pl.draw / 2.0);

    // 1-away against 2-away, Portes next, this side starts: any win ends the match; a
    // single loss leads to 1-away each at Plakoto, the other side starting.
    let x = po.win() + po.lose_single * (lose(pl) + pl.draw / 2.0);
    close(mwc(1, 2, Portes, ThisSide), x);
    // The same seen by the other side (2-away against 1-away, the other starts).
    close(mwc(2, 1, Portes, OtherSide), 1.0 - x);

    // 1-away against 2-away at Plakoto, this side starts: a draw leads to Fevga with
    // an opening roll at the same score.
    let fe_this = fe.win() + fe.lose_single * lose(po); // 1 vs 2 at Fevga, this starts
    let fe_other = lose(fe) + fe.win_single * lose(po); // 1 vs 2 at Fevga, other starts
    close(mwc(1, 2, Fevga, ThisSide), fe_this);
    close(mwc(1, 2, Fevga, OtherSide), fe_other);
    close(
        mwc(1, 2, Plakoto, ThisSide),
        pl.win() + pl.lose_single * lose(fe) + pl.draw * (fe_this + fe_other) / 2.0,
    );

    // 2-away each at Fevga, this side starts: a mars wins, a mars lost loses; a single
    // either way leads to 1 against 2 at Portes, the winner starting.
    close(
        mwc(2, 2, Fevga, ThisSide),
        fe.win_mars + fe.win_single * x + fe.lose_single * (1.0 - x),
    );
}

/// A draw-heavy Plakoto (synthetic): the entries still solve the equations (the
/// draw's successor is the same score, at Fevga, with an opening roll).
#[test]
fn draws_are_solved_exactly() {
    let g = |ws, wm, ls, lm, draw| GameDistribution {
        win_single: ws,
        win_mars: wm,
        lose_single: ls,
        lose_mars: lm,
        draw,
    };
    let d = [
        g(0.375, 0.125, 0.25, 0.25, 0.0),
        g(0.25, 0.125, 0.125, 0.0, 0.5),
        g(0.5, 0.0625, 0.3125, 0.125, 0.0),
    ];
    let t = MatchEquityTable::new(d, 6).unwrap();
    let value = |a: After| match a {
        After::MatchWon => 1.0,
        After::MatchLost => 0.0,
        After::Next(s) => t.mwc_state(&s).unwrap(),
    };
    for s in every_state(6) {
        let p = t.end_probabilities(&s);
        let want: f64 = GameEnd::ALL
            .iter()
            .map(|&e| p[e as usize] * value(s.after(e)))
            .sum();
        let got = t.mwc_state(&s).unwrap();
        assert!((got - want).abs() < EPS, "{s:?}: {got} vs {want}");
    }
    // By hand: 1-away each at Plakoto, this side starts: 0.375 + 0.5 * 1/2.
    let got = t
        .mwc_state(&state(1, 1, Variant::Plakoto, Starter::ThisSide))
        .unwrap();
    assert!((got - 0.625).abs() < EPS, "{got}");
}

/// Being closer to the end is better: one point less away never lowers the chance.
#[test]
fn fewer_points_away_is_better() {
    for s in every_state(MAX_AWAY).filter(|s| s.away > 1) {
        let closer = MetState {
            away: s.away - 1,
            ..s
        };
        let (p, q) = (
            builtin().mwc_state(&s).unwrap(),
            builtin().mwc_state(&closer).unwrap(),
        );
        assert!(q > p, "{s:?}: {p} vs {q} one point closer");
    }
}

#[test]
fn lookups_by_score_and_their_errors() {
    let t = builtin();
    // A 5-point match at 3-1, Fevga next, the other side starts: 2 away against 4.
    let by_score = t
        .mwc(5, [3, 1], Variant::Fevga, Starter::OtherSide)
        .unwrap();
    assert_eq!(by_score, mwc(2, 4, Variant::Fevga, Starter::OtherSide));
    // A 40-point match at 30-20 is 10 against 20 away: inside the table.
    let long = t
        .mwc(40, [30, 20], Variant::Portes, Starter::OpeningRoll)
        .unwrap();
    assert_eq!(long, mwc(10, 20, Variant::Portes, Starter::OpeningRoll));
    let open = Starter::OpeningRoll;
    assert_eq!(field_of(t.mwc(0, [0, 0], Variant::Portes, open)), "length");
    assert_eq!(field_of(t.mwc(26, [0, 5], Variant::Portes, open)), "length");
    assert_eq!(
        field_of(t.mwc(5, [5, 0], Variant::Portes, open)),
        "score[0]"
    );
    assert_eq!(
        field_of(t.mwc(5, [0, 7], Variant::Portes, open)),
        "score[1]"
    );
    let s = state(0, 3, Variant::Portes, open);
    assert_eq!(field_of(t.mwc_state(&s)), "away");
    let s = state(3, 26, Variant::Portes, open);
    assert_eq!(field_of(t.mwc_state(&s)), "other_away");

    // Between games of a match: Black won the first game of a 3-point match.
    let m = MatchState::new(3)
        .unwrap()
        .advance(&Outcome {
            winner: Some(Side::Black),
            points: 1,
            reason: OutcomeReason::BoreOff,
        })
        .unwrap();
    assert_eq!(
        t.mwc_match(&m, Side::White).unwrap(),
        mwc(3, 2, Variant::Plakoto, Starter::OtherSide)
    );
    assert_eq!(
        t.mwc_match(&m, Side::Black).unwrap(),
        mwc(2, 3, Variant::Plakoto, Starter::ThisSide)
    );
}

fn probabilities(d: GameDistribution) -> Probabilities {
    Probabilities {
        win: d.win() as f32,
        win_mars: d.win_mars as f32,
        lose_mars: d.lose_mars as f32,
        draw: d.draw as f32,
    }
}

#[test]
fn match_winning_chance_of_a_position() {
    let t = builtin();
    // With the starter's own distribution at the start of the game, the chance is the
    // table's entry for "this side starts" (up to the f32 rounding of `p`).
    for v in Variant::ALL {
        for (length, score) in [(1, [0, 0]), (5, [2, 4]), (7, [6, 0]), (25, [0, 0])] {
            let m = MatchState {
                length,
                score,
                variant: v,
                starter: Some(Side::Black),
                games_played: 3,
                winner: None,
            };
            let got = match_winning_chance(t, &m, Side::Black, &probabilities(dist(v))).unwrap();
            let want = t.mwc_match(&m, Side::Black).unwrap();
            assert!(
                (got - want).abs() < 1e-6,
                "{v} {length} {score:?}: {got} vs {want}"
            );
        }
    }
    // By hand: 1-away each in Plakoto: win, plus half the draws (the Fevga game after
    // it starts with an opening roll). The mars counts as a single.
    let m = MatchState {
        length: 3,
        score: [2, 2],
        variant: Variant::Plakoto,
        starter: None,
        games_played: 4,
        winner: None,
    };
    let p = Probabilities {
        win: 0.625,
        win_mars: 0.25,
        lose_mars: 0.125,
        draw: 0.125,
    };
    let got = match_winning_chance(t, &m, Side::White, &p).unwrap();
    assert!((got - 0.6875).abs() < EPS, "{got}");
    // Certain results: a sure win of 2 at 2-away against 1-away wins the match, a sure
    // single win leaves 1-away each at Fevga with this side starting.
    let m = MatchState {
        score: [1, 2],
        variant: Variant::Portes,
        ..m
    };
    let sure = |win_mars| Probabilities {
        win: 1.0,
        win_mars,
        lose_mars: 0.0,
        draw: 0.0,
    };
    assert_eq!(
        match_winning_chance(t, &m, Side::White, &sure(1.0)).unwrap(),
        1.0
    );
    assert_eq!(
        match_winning_chance(t, &m, Side::White, &sure(0.0)).unwrap(),
        mwc(1, 1, Variant::Plakoto, Starter::ThisSide)
    );
}

#[test]
fn match_winning_chance_errors_name_the_field() {
    let t = builtin();
    let m = MatchState::new(5).unwrap();
    let p = probabilities(dist(Variant::Portes));
    let f =
        |m: &MatchState, p: &Probabilities| field_of(match_winning_chance(t, m, Side::White, p));
    let with = |edit: fn(&mut MatchState)| {
        let mut x = m;
        edit(&mut x);
        x
    };
    assert_eq!(f(&with(|m| m.length = 0), &p), "match.length");
    assert_eq!(f(&with(|m| m.length = 26), &p), "match.length");
    assert_eq!(f(&with(|m| m.score = [1, 5]), &p), "match.score_black");
    assert_eq!(f(&with(|m| m.score = [9, 0]), &p), "match.score_white");
    assert_eq!(
        f(
            &with(|m| {
                m.score = [5, 0];
                m.winner = Some(Side::White)
            }),
            &p
        ),
        "match.winner"
    );
    let bad = |edit: fn(&mut Probabilities)| {
        let mut q = p;
        edit(&mut q);
        q
    };
    assert_eq!(f(&m, &bad(|p| p.win = 1.5)), "probabilities.win");
    assert_eq!(f(&m, &bad(|p| p.win = f32::NAN)), "probabilities.win");
    assert_eq!(
        f(&m, &bad(|p| p.win_mars = p.win + 0.01)),
        "probabilities.win_mars"
    );
    assert_eq!(
        f(&m, &bad(|p| p.lose_mars = 0.9)),
        "probabilities.lose_mars"
    );
    assert_eq!(f(&m, &bad(|p| p.draw = 0.1)), "probabilities.draw");
    // A draw is allowed in Plakoto, not beyond 1 with the win.
    let pl = with(|m| m.variant = Variant::Plakoto);
    assert!(match_winning_chance(t, &pl, Side::White, &bad(|p| p.draw = 0.01)).is_ok());
    assert_eq!(f(&pl, &bad(|p| p.draw = 0.9)), "probabilities.draw");
}
