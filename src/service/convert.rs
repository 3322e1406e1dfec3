//! Conversions between the protobuf messages of `tavli.v1` and the rules core, with
//! the input checks of RULES.md R9. Every error is a [`ServiceError::Invalid`] whose
//! field is the request field path (`position.structured.points[4]`, `dice.die2`,
//! `play.moves.moves[0].from`, ...).

use super::error::{join_path, AtField, ServiceError};
use super::pb;
use crate::analysis::{Mark, Thresholds};
use crate::eval::Probabilities;
use crate::rules::board::Board;
use crate::rules::position_id;
use crate::rules::xgid;
use crate::rules::{
    Dice, Location, MatchState, Move, Outcome, OutcomeReason, Play, Point, Position, Side, Variant,
    CHECKERS,
};

// ------------------------------------------------------------------ enums

/// A required `Variant`: `VARIANT_UNSPECIFIED` and unknown numbers are errors on `field`.
pub fn variant_from_pb(v: i32, field: &str) -> Result<Variant, ServiceError> {
    match pb::Variant::try_from(v) {
        Ok(pb::Variant::Portes) => Ok(Variant::Portes),
        Ok(pb::Variant::Plakoto) => Ok(Variant::Plakoto),
        Ok(pb::Variant::Fevga) => Ok(Variant::Fevga),
        Ok(pb::Variant::Unspecified) => Err(ServiceError::invalid(
            field,
            "variant is required: VARIANT_PORTES, VARIANT_PLAKOTO or VARIANT_FEVGA",
        )),
        Err(_) => Err(ServiceError::invalid(
            field,
            format!("unknown variant {v}: use VARIANT_PORTES, VARIANT_PLAKOTO or VARIANT_FEVGA"),
        )),
    }
}

/// The protobuf value of a variant.
pub fn variant_to_pb(v: Variant) -> pb::Variant {
    match v {
        Variant::Portes => pb::Variant::Portes,
        Variant::Plakoto => pb::Variant::Plakoto,
        Variant::Fevga => pb::Variant::Fevga,
    }
}

/// An optional `Side`: `SIDE_UNSPECIFIED` is `None`; unknown numbers are errors.
pub fn opt_side_from_pb(v: i32, field: &str) -> Result<Option<Side>, ServiceError> {
    match pb::Side::try_from(v) {
        Ok(pb::Side::Unspecified) => Ok(None),
        Ok(pb::Side::White) => Ok(Some(Side::White)),
        Ok(pb::Side::Black) => Ok(Some(Side::Black)),
        Err(_) => Err(ServiceError::invalid(
            field,
            format!("unknown side {v}: use SIDE_WHITE or SIDE_BLACK"),
        )),
    }
}

/// A required `Side`: `SIDE_UNSPECIFIED` is an error on `field`.
pub fn side_from_pb(v: i32, field: &str) -> Result<Side, ServiceError> {
    opt_side_from_pb(v, field)?
        .ok_or_else(|| ServiceError::invalid(field, "side is required: SIDE_WHITE or SIDE_BLACK"))
}

/// The protobuf value of an optional side (`None` → `SIDE_UNSPECIFIED`).
pub fn side_to_pb(s: Option<Side>) -> pb::Side {
    match s {
        None => pb::Side::Unspecified,
        Some(Side::White) => pb::Side::White,
        Some(Side::Black) => pb::Side::Black,
    }
}

// ------------------------------------------------------------------ positions

/// A checker count 0..=15 from a `uint32` field.
fn count(v: u32, field: impl FnOnce() -> String) -> Result<u8, ServiceError> {
    if v > CHECKERS as u32 {
        return Err(ServiceError::invalid(
            field(),
            format!("a count must be 0..15, got {v}"),
        ));
    }
    Ok(v as u8)
}

/// Maps a field of [`Position::validate`] (`points[4]`, `bar.white`, `white`) to the
/// protobuf field (`points[4]`, `bar_white`, `white`: the side's checker total).
fn proto_position_field(core: &str) -> String {
    core.replace("bar.", "bar_")
}

/// A structured position, checked against R9. Error fields are under `prefix`.
pub fn position_from_pb(p: &pb::Position, prefix: &str) -> Result<Position, ServiceError> {
    let f = |name: &str| join_path(prefix, name);
    // Field paths are built only for an error.
    let variant = variant_from_pb(p.variant, "variant").map_err(|e| e.at(prefix))?;
    let turn = side_from_pb(p.side_to_move, "side_to_move").map_err(|e| e.at(prefix))?;
    if p.points.len() != 24 {
        return Err(ServiceError::invalid(
            f("points"),
            format!(
                "exactly 24 points are required (index 0 = printed point 1), got {}",
                p.points.len()
            ),
        ));
    }
    let mut pos = Position::empty(variant, turn);
    for (i, pt) in p.points.iter().enumerate() {
        pos.points[i] = Point {
            white: count(pt.white, || f(&format!("points[{i}].white")))?,
            black: count(pt.black, || f(&format!("points[{i}].black")))?,
            pinned: match pt.pinned {
                // No pin, the common case; the field path is built only for an error.
                0 => None,
                v => {
                    opt_side_from_pb(v, "").map_err(|e| e.at(&f(&format!("points[{i}].pinned"))))?
                }
            },
        };
    }
    pos.bar = [
        count(p.bar_white, || f("bar_white"))?,
        count(p.bar_black, || f("bar_black"))?,
    ];
    pos.off = [
        count(p.off_white, || f("off_white"))?,
        count(p.off_black, || f("off_black"))?,
    ];
    pos.validate().map_err(|e| match ServiceError::from(e) {
        ServiceError::Invalid { field, reason } => {
            ServiceError::invalid(f(&proto_position_field(&field)), reason)
        }
        other => other,
    })?;
    Ok(pos)
}

/// The protobuf form of a position, every field filled (`gnubg_id` and `xgid` for
/// Portes only).
pub fn position_to_pb(p: &Position) -> pb::Position {
    pb::Position {
        variant: variant_to_pb(p.variant) as i32,
        side_to_move: side_to_pb(Some(p.turn)) as i32,
        points: p
            .points
            .iter()
            .map(|pt| pb::PointState {
                white: pt.white as u32,
                black: pt.black as u32,
                pinned: side_to_pb(pt.pinned) as i32,
            })
            .collect(),
        bar_white: p.bar[0] as u32,
        bar_black: p.bar[1] as u32,
        off_white: p.off[0] as u32,
        off_black: p.off[1] as u32,
        position_id: position_id::to_id(p),
        // A position here has passed `validate` (input) or comes from the rules core.
        gnubg_id: if p.variant == Variant::Portes {
            position_id::gnubg_id_of_board(&Board::from_position(p, p.turn))
        } else {
            String::new()
        },
        xgid: if p.variant == Variant::Portes {
            let mut v = Vec::with_capacity(53);
            xgid::push_xgid(p, &mut v);
            String::from_utf8(v).expect("an XGID is ASCII")
        } else {
            String::new()
        },
    }
}

/// A Position ID string. Every error names `field`: syntax errors with their reason,
/// R9 errors with the rules core's field in the reason (`points[4]: ...`).
pub fn position_from_id(id: &str, field: &str) -> Result<Position, ServiceError> {
    position_id::from_id(id).map_err(|e| match ServiceError::from(e) {
        ServiceError::Invalid { field: f, reason } if f == "position_id" => {
            ServiceError::invalid(field, reason)
        }
        ServiceError::Invalid { field: f, reason } => {
            ServiceError::invalid(field, format!("{f}: {reason}"))
        }
        other => other,
    })
}

/// The position `oneof` of a request, whichever message it came from.
#[derive(Clone, Copy, Debug)]
pub enum PositionInput<'a> {
    /// `structured`.
    Structured(&'a pb::Position),
    /// `position_id`.
    Id(&'a str),
    /// `gnubg`.
    Gnubg(&'a pb::GnubgPosition),
    /// `xgid`.
    Xgid(&'a str),
}

/// Reads a position `oneof` named `position` in the request. `None` is an error
/// (`position` is required).
pub fn position_input(input: Option<PositionInput<'_>>) -> Result<Position, ServiceError> {
    match input {
        None => Err(ServiceError::invalid(
            "position",
            "a position is required: set structured, position_id, gnubg or xgid",
        )),
        Some(PositionInput::Structured(p)) => position_from_pb(p, "position.structured"),
        Some(PositionInput::Id(id)) => position_from_id(id, "position.position_id"),
        Some(PositionInput::Gnubg(g)) => {
            let turn = side_from_pb(g.side_to_move, "position.gnubg.side_to_move")?;
            position_id::from_gnubg_id(&g.id, turn).map_err(|e| match ServiceError::from(e) {
                ServiceError::Invalid { reason, .. } => {
                    ServiceError::invalid("position.gnubg.id", reason)
                }
                other => other,
            })
        }
        Some(PositionInput::Xgid(text)) => {
            xgid::from_xgid(text).map_err(|e| match ServiceError::from(e) {
                ServiceError::Invalid { reason, .. } => {
                    ServiceError::invalid("position.xgid", reason)
                }
                other => other,
            })
        }
    }
}

macro_rules! position_oneof {
    ($($module:ident),*) => {$(
        impl<'a> From<&'a pb::$module::Position> for PositionInput<'a> {
            fn from(p: &'a pb::$module::Position) -> Self {
                match p {
                    pb::$module::Position::Structured(s) => PositionInput::Structured(s),
                    pb::$module::Position::PositionId(s) => PositionInput::Id(s),
                    pb::$module::Position::Gnubg(g) => PositionInput::Gnubg(g),
                    pb::$module::Position::Xgid(x) => PositionInput::Xgid(x),
                }
            }
        }
    )*};
}
position_oneof!(
    list_legal_plays_request,
    apply_play_request,
    evaluate_request,
    rollout_request,
    choose_play_request
);

/// One threshold of a `MarkThresholds`: a number of points >= 0; 0 takes `default`.
fn threshold(v: f32, default: f32, field: &str) -> Result<f32, ServiceError> {
    if !v.is_finite() || v < 0.0 {
        return Err(ServiceError::invalid(
            field,
            format!("a threshold is a number of points >= 0, got {v}"),
        ));
    }
    Ok(if v == 0.0 { default } else { v })
}

/// The marks' thresholds of a `MarkThresholds` field named `field` (unset, or a 0
/// field: GNU Backgammon's default); they must grow from doubtful to very bad.
/// Errors: `INVALID_ARGUMENT` on `{field}.doubtful` (`.bad`, `.very_bad`) or `field`.
pub fn thresholds_from_pb(
    t: Option<&pb::MarkThresholds>,
    field: &str,
) -> Result<Thresholds, ServiceError> {
    let d = Thresholds::default();
    let t = t.copied().unwrap_or_default();
    let thresholds = Thresholds {
        doubtful: threshold(t.doubtful, d.doubtful, &join_path(field, "doubtful"))?,
        bad: threshold(t.bad, d.bad, &join_path(field, "bad"))?,
        very_bad: threshold(t.very_bad, d.very_bad, &join_path(field, "very_bad"))?,
    };
    if !(thresholds.doubtful <= thresholds.bad && thresholds.bad <= thresholds.very_bad) {
        return Err(ServiceError::invalid(
            field,
            format!(
                "thresholds must grow: doubtful {} <= bad {} <= very bad {}",
                thresholds.doubtful, thresholds.bad, thresholds.very_bad
            ),
        ));
    }
    Ok(thresholds)
}

/// The protobuf value of a play's mark.
pub fn mark_to_pb(m: Mark) -> pb::PlayMark {
    match m {
        Mark::None => pb::PlayMark::Unspecified,
        Mark::Doubtful => pb::PlayMark::Doubtful,
        Mark::Bad => pb::PlayMark::Bad,
        Mark::VeryBad => pb::PlayMark::VeryBad,
    }
}

// ------------------------------------------------------------------ dice, moves

/// A die 1..=6 from a `uint32` field.
fn die(v: u32, field: &str) -> Result<u8, ServiceError> {
    if !(1..=6).contains(&v) {
        return Err(ServiceError::invalid(
            field,
            format!("die must be 1..6, got {v}"),
        ));
    }
    Ok(v as u8)
}

/// A required `Dice` field named `field` (`dice`).
pub fn dice_from_pb(d: Option<&pb::Dice>, field: &str) -> Result<Dice, ServiceError> {
    let d = d.ok_or_else(|| {
        ServiceError::invalid(field, "dice are required: {die1: 1..6, die2: 1..6}")
    })?;
    // The field path is built only for an error.
    let (a, b) = (
        die(d.die1, "die1").map_err(|e| e.at(field))?,
        die(d.die2, "die2").map_err(|e| e.at(field))?,
    );
    Dice::new(a, b).at("")
}

/// The protobuf form of a roll.
pub fn dice_to_pb(d: Dice) -> pb::Dice {
    pb::Dice {
        die1: d.die1() as u32,
        die2: d.die2() as u32,
    }
}

/// A required `Location` field.
pub fn location_from_pb(l: Option<&pb::Location>, field: &str) -> Result<Location, ServiceError> {
    use pb::location::Kind;
    match l.and_then(|l| l.kind.as_ref()) {
        None => Err(ServiceError::invalid(
            field,
            "a location is required: {point: 1..24}, {bar: true} or {off: true}",
        )),
        Some(Kind::Point(n)) if (1..=24).contains(n) => Ok(Location::Point(*n as u8)),
        Some(Kind::Point(n)) => Err(ServiceError::invalid(
            join_path(field, "point"),
            format!("point must be 1..24 (printed numbering), got {n}"),
        )),
        Some(Kind::Bar(true)) => Ok(Location::Bar),
        Some(Kind::Off(true)) => Ok(Location::Off),
        Some(Kind::Bar(false)) => Err(ServiceError::invalid(
            join_path(field, "bar"),
            "bar must be true when set",
        )),
        Some(Kind::Off(false)) => Err(ServiceError::invalid(
            join_path(field, "off"),
            "off must be true when set",
        )),
    }
}

/// The protobuf form of a location.
pub fn location_to_pb(l: Location) -> pb::Location {
    use pb::location::Kind;
    pb::Location {
        kind: Some(match l {
            Location::Bar => Kind::Bar(true),
            Location::Off => Kind::Off(true),
            Location::Point(n) => Kind::Point(n as u32),
        }),
    }
}

/// A move; `die` 0 means "the die that fits". Error fields are under `prefix`.
pub fn move_from_pb(m: &pb::Move, prefix: &str) -> Result<Move, ServiceError> {
    if m.die > 6 {
        return Err(ServiceError::invalid(
            join_path(prefix, "die"),
            format!(
                "die must be 1..6 (or 0 for the die that fits), got {}",
                m.die
            ),
        ));
    }
    Ok(Move {
        from: location_from_pb(m.from.as_ref(), &join_path(prefix, "from"))?,
        to: location_from_pb(m.to.as_ref(), &join_path(prefix, "to"))?,
        die: m.die as u8,
        hit: m.hit,
    })
}

/// The protobuf form of a move.
pub fn move_to_pb(m: &Move) -> pb::Move {
    pb::Move {
        from: Some(location_to_pb(m.from)),
        to: Some(location_to_pb(m.to)),
        die: m.die as u32,
        hit: m.hit,
    }
}

// ------------------------------------------------------------------ outcomes, plays

/// The protobuf value of an outcome reason.
pub fn reason_to_pb(r: OutcomeReason) -> pb::OutcomeReason {
    match r {
        OutcomeReason::BoreOff => pb::OutcomeReason::BoreOff,
        OutcomeReason::Mars => pb::OutcomeReason::Mars,
        OutcomeReason::MotherPinned => pb::OutcomeReason::MotherPinned,
        OutcomeReason::BothMothersPinned => pb::OutcomeReason::BothMothersPinned,
        OutcomeReason::Resignation => pb::OutcomeReason::Resignation,
        OutcomeReason::TimeOut => pb::OutcomeReason::TimeOut,
    }
}

/// The protobuf form of an outcome.
pub fn outcome_to_pb(o: &Outcome) -> pb::GameOutcome {
    pb::GameOutcome {
        winner: side_to_pb(o.winner) as i32,
        points: o.points as u32,
        reason: reason_to_pb(o.reason) as i32,
    }
}

/// A required `GameOutcome` field: a win scores 1 or 2 points, a draw
/// (`SIDE_UNSPECIFIED`) 0; a resignation or a time-out has a winner. An unspecified
/// reason is inferred from the points (a board result).
pub fn outcome_from_pb(o: Option<&pb::GameOutcome>, field: &str) -> Result<Outcome, ServiceError> {
    let o = o.ok_or_else(|| {
        ServiceError::invalid(field, "an outcome is required: {winner, points, reason}")
    })?;
    let winner = opt_side_from_pb(o.winner, &join_path(field, "winner"))?;
    let points_field = join_path(field, "points");
    let points = match (winner, o.points) {
        (Some(_), p @ (1 | 2)) => p as u8,
        (None, 0) => 0,
        (Some(_), p) => {
            return Err(ServiceError::invalid(
                points_field,
                format!("a win scores 1 or 2 points, got {p}"),
            ))
        }
        (None, p) => {
            return Err(ServiceError::invalid(
                points_field,
                format!("a draw (winner SIDE_UNSPECIFIED) scores 0 points, got {p}"),
            ))
        }
    };
    let reason_field = join_path(field, "reason");
    let reason = match pb::OutcomeReason::try_from(o.reason) {
        Ok(pb::OutcomeReason::Unspecified) => match points {
            0 => OutcomeReason::BothMothersPinned,
            1 => OutcomeReason::BoreOff,
            _ => OutcomeReason::Mars,
        },
        Ok(pb::OutcomeReason::BoreOff) => OutcomeReason::BoreOff,
        Ok(pb::OutcomeReason::Mars) => OutcomeReason::Mars,
        Ok(pb::OutcomeReason::MotherPinned) => OutcomeReason::MotherPinned,
        Ok(pb::OutcomeReason::BothMothersPinned) => OutcomeReason::BothMothersPinned,
        Ok(pb::OutcomeReason::Resignation) => OutcomeReason::Resignation,
        Ok(pb::OutcomeReason::TimeOut) => OutcomeReason::TimeOut,
        Err(_) => {
            return Err(ServiceError::invalid(
                reason_field,
                format!("unknown outcome reason {}", o.reason),
            ))
        }
    };
    let expected = match reason {
        OutcomeReason::BoreOff => 1,
        OutcomeReason::Mars | OutcomeReason::MotherPinned => 2,
        OutcomeReason::BothMothersPinned => 0,
        // 1 or 2, checked with the winner above.
        OutcomeReason::Resignation | OutcomeReason::TimeOut if winner.is_some() => points,
        OutcomeReason::Resignation | OutcomeReason::TimeOut => {
            return Err(ServiceError::invalid(
                join_path(field, "winner"),
                format!("a {} result needs a winner", reason.name()),
            ))
        }
    };
    if expected != points {
        return Err(ServiceError::invalid(
            reason_field,
            format!(
                "reason {} scores {expected} points, not {points}",
                reason.name()
            ),
        ));
    }
    Ok(Outcome {
        winner,
        points,
        reason,
    })
}

/// How much a play carries (`ListLegalPlaysRequest.detail`): `true` for
/// `PLAY_DETAIL_COMPACT`, `false` for `PLAY_DETAIL_FULL` or unset; unknown numbers are
/// errors on `field`.
pub fn compact_from_pb(v: i32, field: &str) -> Result<bool, ServiceError> {
    match pb::PlayDetail::try_from(v) {
        Ok(pb::PlayDetail::Unspecified | pb::PlayDetail::Full) => Ok(false),
        Ok(pb::PlayDetail::Compact) => Ok(true),
        Err(_) => Err(ServiceError::invalid(
            field,
            format!("unknown play detail {v}: use PLAY_DETAIL_FULL or PLAY_DETAIL_COMPACT"),
        )),
    }
}

/// The protobuf form of a play (taken by value: its notation moves over): with the
/// whole resulting position in `position`, or, when `compact`, with its Position ID
/// only in `position_id`.
pub fn play_to_pb(p: Play, compact: bool) -> pb::Play {
    let (position, position_id) = if compact {
        (None, position_id::to_id(&p.position))
    } else {
        (Some(position_to_pb(&p.position)), String::new())
    };
    pb::Play {
        moves: p.moves.iter().map(move_to_pb).collect(),
        notation: p.notation.into(),
        position,
        outcome: p.outcome.as_ref().map(outcome_to_pb),
        position_id,
    }
}

/// The protobuf form of evaluation probabilities.
pub fn probabilities_to_pb(p: &Probabilities) -> pb::Probabilities {
    pb::Probabilities {
        win: p.win,
        win_mars: p.win_mars,
        lose: p.lose(),
        lose_mars: p.lose_mars,
        draw: p.draw,
    }
}

// ------------------------------------------------------------------ match

/// A required `MatchState` field (R2). `opening_roll_needed` and `match_over` are
/// derived, not read.
pub fn match_from_pb(m: Option<&pb::MatchState>, field: &str) -> Result<MatchState, ServiceError> {
    let m = m.ok_or_else(|| {
        ServiceError::invalid(
            field,
            "a match state is required, e.g. {length: 5, variant: VARIANT_PORTES}",
        )
    })?;
    let f = |name: &str| join_path(field, name);
    if m.length == 0 {
        return Err(ServiceError::invalid(
            f("length"),
            "match length must be at least 1",
        ));
    }
    Ok(MatchState {
        length: m.length,
        score: [m.score_white, m.score_black],
        variant: variant_from_pb(m.variant, &f("variant"))?,
        starter: opt_side_from_pb(m.starter, &f("starter"))?,
        games_played: m.games_played,
        winner: opt_side_from_pb(m.winner, &f("winner"))?,
    })
}

/// The protobuf form of a match state.
pub fn match_to_pb(m: &MatchState) -> pb::MatchState {
    pb::MatchState {
        length: m.length,
        score_white: m.score[0],
        score_black: m.score[1],
        variant: variant_to_pb(m.variant) as i32,
        starter: side_to_pb(m.starter) as i32,
        opening_roll_needed: m.starter.is_none() && m.winner.is_none(),
        games_played: m.games_played,
        winner: side_to_pb(m.winner) as i32,
        match_over: m.winner.is_some(),
    }
}

/// Maps the fields of [`MatchState::advance`] errors (`match`, `match.length`,
/// `outcome`) to the request's (`match_state`, `match_state.length`, `outcome`).
pub fn match_error_field(core: &str) -> String {
    match core.strip_prefix("match") {
        Some(rest) => format!("match_state{rest}"),
        None => core.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_round_trip() {
        for v in Variant::ALL {
            let p = Position::start(v, Side::Black);
            let q = position_from_pb(&position_to_pb(&p), "position.structured").unwrap();
            assert_eq!(p, q);
        }
    }

    #[test]
    fn structured_errors_name_proto_fields() {
        let mut p = position_to_pb(&Position::start(Variant::Portes, Side::White));
        p.bar_white = 1;
        let e = position_from_pb(&p, "position.structured").unwrap_err();
        assert!(
            matches!(&e, ServiceError::Invalid { field, .. } if field == "position.structured.white"),
            "{e}"
        );
        p.bar_white = 16;
        let e = position_from_pb(&p, "position.structured").unwrap_err();
        assert!(
            matches!(&e, ServiceError::Invalid { field, .. } if field == "position.structured.bar_white"),
            "{e}"
        );
    }

    #[test]
    fn match_fields() {
        assert_eq!(match_error_field("match.length"), "match_state.length");
        assert_eq!(match_error_field("match"), "match_state");
        assert_eq!(match_error_field("outcome"), "outcome");
    }
}
