//! The score of a match going on, checked against the built-in table, and what each
//! end of its current game is worth to the mover ([`MatchScore::end_values`]): the
//! measure a score-aware ranking compares plays by ([`crate::eval::EvalOptions::measure`],
//! docs/match-equity.md, "Score-aware evaluation").

use super::table::MatchEquityTable;
use crate::eval::EndValues;
use crate::rules::{MatchState, RulesError, Side, Variant};

/// A match score, checked: a match still going on (R2) that the built-in table
/// ([`MatchEquityTable::builtin`]) covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatchScore {
    /// Points to win the match, at least 1.
    pub length: u32,
    /// Points so far, indexed by [`Side::index`], each below `length`.
    pub score: [u32; 2],
}

impl MatchScore {
    /// A score of a match going on. Errors (field `length`, `score_white`,
    /// `score_black`): a length of 0; a score at or past the length (the match is
    /// over); a side more points away than the built-in table covers
    /// ([`MatchEquityTable::max_away`], 25: field `length`; a longer match is
    /// covered once both sides are within 25 points of its end).
    pub fn new(length: u32, score: [u32; 2]) -> Result<MatchScore, RulesError> {
        if length == 0 {
            return Err(RulesError::invalid(
                "length",
                "match length must be at least 1",
            ));
        }
        for side in [Side::White, Side::Black] {
            let s = score[side.index()];
            if s >= length {
                return Err(RulesError::invalid(
                    format!("score_{}", side.name()),
                    format!("{s} points reach the match length {length}: the match is over"),
                ));
            }
        }
        let max = MatchEquityTable::builtin().max_away();
        let far = length - score[0].min(score[1]);
        if far > max {
            return Err(RulesError::invalid(
                "length",
                format!(
                    "{far} points away in a {length}-point match; the match equity table \
                     covers 1..={max} points away"
                ),
            ));
        }
        Ok(MatchScore { length, score })
    }

    /// The match state of this score before a game of `variant` (no starter, no
    /// game counted: neither plays a part in what a game's ends are worth).
    pub fn state(&self, variant: Variant) -> MatchState {
        MatchState {
            length: self.length,
            score: self.score,
            variant,
            starter: None,
            games_played: 0,
            winner: None,
        }
    }

    /// What each end of the game of `variant` being played at this score is worth to
    /// `mover`: its match winning chance after that end, from the built-in table
    /// ([`MatchEquityTable::end_values`]; 1 when the end wins the match, 0 when it
    /// loses it, a mars at 1-away worth a single, R7). The score is checked by
    /// [`MatchScore::new`], so this cannot fail.
    pub fn end_values(&self, variant: Variant, mover: Side) -> EndValues {
        MatchEquityTable::builtin()
            .end_values(&self.state(variant), mover)
            .expect("a MatchScore is a match going on within the table")
            .1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_are_checked_and_name_their_field() {
        let field = |r: Result<MatchScore, RulesError>| match r {
            Err(RulesError::Invalid { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(field(MatchScore::new(0, [0, 0])), "length");
        assert_eq!(field(MatchScore::new(5, [5, 0])), "score_white");
        assert_eq!(field(MatchScore::new(5, [0, 7])), "score_black");
        assert_eq!(field(MatchScore::new(26, [0, 3])), "length");
        // 40 points, both within 25 of the end: covered.
        assert!(MatchScore::new(40, [20, 16]).is_ok());
        assert!(MatchScore::new(25, [0, 0]).is_ok());
    }

    #[test]
    fn one_away_mars_is_worth_a_single_and_sides_add_to_one() {
        let s = MatchScore::new(5, [4, 2]).unwrap();
        let w = s.end_values(Variant::Portes, Side::White);
        assert_eq!((w.win_single, w.win_mars), (1.0, 1.0));
        let b = s.end_values(Variant::Portes, Side::Black);
        assert_eq!((b.lose_single, b.lose_mars), (0.0, 0.0));
        // What White's win is worth to White, Black's loss is worth to Black's
        // opponent: the two views add to 1.
        assert!((w.lose_single + b.win_single - 1.0).abs() < 1e-12);
        assert!((w.draw + b.draw - 1.0).abs() < 1e-12);
    }
}
