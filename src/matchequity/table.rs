//! The match equity table: exact dynamic programming over the Tavli match cycle
//! (RULES.md R2) from the engine's outcome distributions at the start of each variant,
//! and the match winning chance of a position (see the module documentation of
//! [`crate::matchequity`]).

use crate::eval::engine::variant_index;
use crate::eval::{EndValues, Probabilities};
use crate::rules::{MatchState, RulesError, Side, Variant};
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// The largest number of points away the built-in table covers, for each side: every
/// match of up to this many points, and longer matches once both sides are within it.
pub const MAX_AWAY: u32 = 25;

/// The committed outcome distributions (`tavli-engine met --generate`, the file
/// `data/met-distributions.json`), read by [`MatchEquityTable::builtin`].
pub const BUILTIN_DISTRIBUTIONS: &str = include_str!("../../data/met-distributions.json");

/// Who starts the next game (R2), seen from the side whose chance is asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Starter {
    /// This side starts: it won the previous game (it rolls two fresh dice).
    ThisSide,
    /// The other side starts: it won the previous game.
    OtherSide,
    /// An opening roll decides (R2: at the start of the match and after a draw):
    /// each side starts with probability 1/2.
    OpeningRoll,
}

impl Starter {
    /// Every starter state, in the table's order.
    pub const ALL: [Starter; 3] = [Starter::ThisSide, Starter::OtherSide, Starter::OpeningRoll];

    /// Short stable name: `this_side`, `other_side`, `opening_roll`.
    pub fn name(self) -> &'static str {
        match self {
            Starter::ThisSide => "this_side",
            Starter::OtherSide => "other_side",
            Starter::OpeningRoll => "opening_roll",
        }
    }

    /// The same state seen by the other side.
    pub fn flip(self) -> Starter {
        match self {
            Starter::ThisSide => Starter::OtherSide,
            Starter::OtherSide => Starter::ThisSide,
            Starter::OpeningRoll => Starter::OpeningRoll,
        }
    }

    /// The starter of a [`MatchState`] (`None`: an opening roll) seen by `side`.
    pub fn of(starter: Option<Side>, side: Side) -> Starter {
        match starter {
            None => Starter::OpeningRoll,
            Some(s) if s == side => Starter::ThisSide,
            Some(_) => Starter::OtherSide,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// How a game ends, from one side's view (R7, R5.5). A "mars" is any 2-point result:
/// a mars or a Plakoto mother win.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GameEnd {
    /// This side wins 1 point.
    WinSingle,
    /// This side wins 2 points.
    WinMars,
    /// The other side wins 1 point.
    LoseSingle,
    /// The other side wins 2 points.
    LoseMars,
    /// Both mothers pinned: no points (Plakoto only, R5.5).
    Draw,
}

impl GameEnd {
    /// The five ends, in the order of [`GameDistribution::as_array`].
    pub const ALL: [GameEnd; 5] = [
        GameEnd::WinSingle,
        GameEnd::WinMars,
        GameEnd::LoseSingle,
        GameEnd::LoseMars,
        GameEnd::Draw,
    ];
}

/// The probabilities of a game's five ends for one side, each in `[0, 1]`, summing
/// to 1 ([`GameDistribution::validate`] checks both, to 1e-9).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GameDistribution {
    /// Wins 1 point.
    pub win_single: f64,
    /// Wins 2 points (mars, or a Plakoto mother win).
    pub win_mars: f64,
    /// Loses 1 point.
    pub lose_single: f64,
    /// Loses 2 points.
    pub lose_mars: f64,
    /// Draw (Plakoto only, R5.5).
    pub draw: f64,
}

impl GameDistribution {
    /// `[win_single, win_mars, lose_single, lose_mars, draw]`, the order of
    /// [`GameEnd::ALL`].
    pub fn as_array(&self) -> [f64; 5] {
        [
            self.win_single,
            self.win_mars,
            self.lose_single,
            self.lose_mars,
            self.draw,
        ]
    }

    /// The probability of `end`.
    pub fn probability(&self, end: GameEnd) -> f64 {
        self.as_array()[end as usize]
    }

    /// The same distribution seen by the other side.
    pub fn flip(&self) -> GameDistribution {
        GameDistribution {
            win_single: self.lose_single,
            win_mars: self.lose_mars,
            lose_single: self.win_single,
            lose_mars: self.win_mars,
            draw: self.draw,
        }
    }

    /// Probability of a win (1 or 2 points).
    pub fn win(&self) -> f64 {
        self.win_single + self.win_mars
    }

    /// The distribution of an evaluation's [`Probabilities`] (`f32`, for the side to
    /// move): `win - win_mars`, `win_mars`, `lose() - lose_mars`, `lose_mars`,
    /// `draw`, each raised to 0 when rounding makes it slightly negative. Errors
    /// name `{field}.win`, `.win_mars`, `.lose_mars` or `.draw` for a value that is not
    /// finite or outside `[0, 1]`, a mars above its win or loss or a win plus draw
    /// above 1 (by more than 1e-5), and a draw in Portes or Fevga (R5.5).
    pub fn from_probabilities(
        p: &Probabilities,
        variant: Variant,
        field: &str,
    ) -> Result<GameDistribution, RulesError> {
        const TOL: f64 = 1e-5;
        let (win, wm, lm, draw) = (
            p.win as f64,
            p.win_mars as f64,
            p.lose_mars as f64,
            p.draw as f64,
        );
        for (name, v) in [
            ("win", win),
            ("win_mars", wm),
            ("lose_mars", lm),
            ("draw", draw),
        ] {
            if !v.is_finite() || !(0.0..=1.0).contains(&v) {
                return Err(RulesError::invalid(
                    format!("{field}.{name}"),
                    format!("a probability must be in [0, 1], got {v}"),
                ));
            }
        }
        let lose = 1.0 - win - draw;
        if lose < -TOL {
            return Err(RulesError::invalid(
                format!("{field}.draw"),
                format!("win {win} plus draw {draw} is more than 1"),
            ));
        }
        if wm > win + TOL {
            return Err(RulesError::invalid(
                format!("{field}.win_mars"),
                format!("a mars win ({wm}) is more likely than a win ({win})"),
            ));
        }
        if lm > lose + TOL {
            return Err(RulesError::invalid(
                format!("{field}.lose_mars"),
                format!("a mars loss ({lm}) is more likely than a loss ({lose})"),
            ));
        }
        if variant != Variant::Plakoto && draw > TOL {
            return Err(RulesError::invalid(
                format!("{field}.draw"),
                format!("only Plakoto games can be drawn (R5.5), and this is {variant}"),
            ));
        }
        let draw = if variant == Variant::Plakoto {
            draw
        } else {
            0.0
        };
        Ok(GameDistribution {
            win_single: (win - wm).max(0.0),
            win_mars: wm,
            lose_single: (1.0 - win - draw - lm).max(0.0),
            lose_mars: lm,
            draw,
        })
    }

    /// Errors (field `{field}.win_single` ...) for a probability that is not finite
    /// or outside `[0, 1]`, `{field}` when they do not sum to 1 within 1e-9, and
    /// `{field}.draw` for a draw outside Plakoto (R5.5).
    pub fn validate(&self, variant: Variant, field: &str) -> Result<(), RulesError> {
        let names = ["win_single", "win_mars", "lose_single", "lose_mars", "draw"];
        for (name, v) in names.iter().zip(self.as_array()) {
            if !v.is_finite() || !(0.0..=1.0).contains(&v) {
                return Err(RulesError::invalid(
                    format!("{field}.{name}"),
                    format!("a probability must be in [0, 1], got {v}"),
                ));
            }
        }
        let sum: f64 = self.as_array().iter().sum();
        if (sum - 1.0).abs() > 1e-9 {
            return Err(RulesError::invalid(
                field,
                format!("the five probabilities sum to {sum}, not 1"),
            ));
        }
        if variant != Variant::Plakoto && self.draw != 0.0 {
            return Err(RulesError::invalid(
                format!("{field}.draw"),
                format!("only Plakoto games can be drawn (R5.5), and this is {variant}"),
            ));
        }
        Ok(())
    }
}

/// A state of the match between games, from one side's view: what the table is
/// indexed by. Points are counted away (the length minus the score, at least 1): the
/// chance of winning depends on nothing else.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MetState {
    /// Points this side still needs, at least 1.
    pub away: u32,
    /// Points the other side still needs, at least 1.
    pub other_away: u32,
    /// The variant of the next game (during a game: the variant being played).
    pub variant: Variant,
    /// Who starts it.
    pub starter: Starter,
}

/// What follows a game: the match over, or the next state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    /// This side reached the length.
    MatchWon,
    /// The other side reached the length.
    MatchLost,
    /// The match goes on from this state.
    Next(MetState),
}

impl MetState {
    /// The state of `m` seen by `side`. Errors: field `match.length` for a length of
    /// 0, `match.winner` or `match.score_white` / `match.score_black` for a finished
    /// match (a winner set, or a score at or past the length).
    pub fn of(m: &MatchState, side: Side) -> Result<MetState, RulesError> {
        if m.length == 0 {
            return Err(RulesError::invalid(
                "match.length",
                "match length must be at least 1",
            ));
        }
        if let Some(w) = m.winner {
            return Err(RulesError::invalid(
                "match.winner",
                format!("the match is over: {w} won it"),
            ));
        }
        for s in [Side::White, Side::Black] {
            if m.score[s.index()] >= m.length {
                return Err(RulesError::invalid(
                    format!("match.score_{}", s.name()),
                    format!(
                        "{s} has {} points in a {}-point match: the match is over",
                        m.score[s.index()],
                        m.length
                    ),
                ));
            }
        }
        Ok(MetState {
            away: m.length - m.score[side.index()],
            other_away: m.length - m.score[side.opponent().index()],
            variant: m.variant,
            starter: Starter::of(m.starter, side),
        })
    }

    /// The same state seen by the other side.
    pub fn flip(&self) -> MetState {
        MetState {
            away: self.other_away,
            other_away: self.away,
            variant: self.variant,
            starter: self.starter.flip(),
        }
    }

    /// The state after this game ends with `end` (R2, R7), as
    /// [`MatchState::advance`] makes it: the winner's points added (a side that
    /// reaches its away wins the match: a mars at 1-away counts as a single), the
    /// next variant in the cycle, the winner starts, an opening roll after a draw.
    /// The starter of `self` plays no part.
    pub fn after(&self, end: GameEnd) -> After {
        let next = self.variant.next_in_match();
        let state = |away: u32, other_away: u32, starter| {
            After::Next(MetState {
                away,
                other_away,
                variant: next,
                starter,
            })
        };
        let win = |points: u32| match self.away.checked_sub(points) {
            Some(a) if a > 0 => state(a, self.other_away, Starter::ThisSide),
            _ => After::MatchWon,
        };
        let lose = |points: u32| match self.other_away.checked_sub(points) {
            Some(b) if b > 0 => state(self.away, b, Starter::OtherSide),
            _ => After::MatchLost,
        };
        match end {
            GameEnd::WinSingle => win(1),
            GameEnd::WinMars => win(2),
            GameEnd::LoseSingle => lose(1),
            GameEnd::LoseMars => lose(2),
            GameEnd::Draw => state(self.away, self.other_away, Starter::OpeningRoll),
        }
    }
}

/// The outcome distributions the table is made from: for each variant, the starter's
/// (the side that rolls first, R2) at the start of a game, with their standard
/// errors and where they come from. The JSON form is the file
/// `data/met-distributions.json` (docs/match-equity.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Distributions {
    /// `tavli-met-distributions/1`.
    pub format: String,
    /// How the numbers were measured, in words.
    pub source: String,
    /// The command that measured them.
    pub command: String,
    /// One entry per variant, in the order Portes, Plakoto, Fevga.
    pub variants: Vec<VariantDistribution>,
}

/// The format name of [`Distributions::format`].
pub const DISTRIBUTIONS_FORMAT: &str = "tavli-met-distributions/1";

/// The starter's outcome distribution of one variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariantDistribution {
    /// `portes`, `plakoto` or `fevga`.
    pub variant: String,
    /// The static evaluator whose play it measures (e.g. `net-portes-v2`).
    pub evaluator: String,
    /// Search depth of that play (0: the static evaluator's best play).
    pub plies: u8,
    /// Games (rollout trials) measured.
    pub trials: u64,
    /// The measured probabilities, for the starter.
    pub probabilities: GameDistribution,
    /// Their standard errors (absolute, same units).
    pub standard_errors: GameDistribution,
}

impl Distributions {
    /// Reads the JSON form. Errors: field `distributions` for text that is not the
    /// format, otherwise as [`Distributions::by_variant`].
    pub fn from_json(text: &str) -> Result<Distributions, RulesError> {
        let d: Distributions = serde_json::from_str(text)
            .map_err(|e| RulesError::invalid("distributions", e.to_string()))?;
        d.by_variant()?;
        Ok(d)
    }

    /// The JSON form (pretty, ending in a newline).
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("plain data");
        s.push('\n');
        s
    }

    /// The three probability distributions indexed as [`Variant::ALL`]. Errors: field
    /// `distributions.format` for another format, `distributions.variants` unless
    /// exactly Portes, Plakoto, Fevga in that order, and
    /// `distributions.variants[i].probabilities...` as
    /// [`GameDistribution::validate`].
    pub fn by_variant(&self) -> Result<[GameDistribution; 3], RulesError> {
        if self.format != DISTRIBUTIONS_FORMAT {
            return Err(RulesError::invalid(
                "distributions.format",
                format!("expected {DISTRIBUTIONS_FORMAT:?}, got {:?}", self.format),
            ));
        }
        let names: Vec<&str> = self.variants.iter().map(|v| v.variant.as_str()).collect();
        if names != ["portes", "plakoto", "fevga"] {
            return Err(RulesError::invalid(
                "distributions.variants",
                format!("expected portes, plakoto, fevga in that order, got {names:?}"),
            ));
        }
        let mut out = [GameDistribution::default(); 3];
        for (i, v) in Variant::ALL.into_iter().enumerate() {
            let d = &self.variants[i];
            d.probabilities
                .validate(v, &format!("distributions.variants[{i}].probabilities"))?;
            out[i] = d.probabilities;
        }
        Ok(out)
    }
}

/// The chance that one side wins the match, for every [`MetState`] up to a maximum
/// away, computed exactly from the starter's outcome distribution of each variant
/// (docs/match-equity.md).
///
/// Every entry is a probability in `[0, 1]`. `mwc(s)` and `mwc(s.flip())` sum to 1.
#[derive(Clone, Debug, PartialEq)]
pub struct MatchEquityTable {
    max_away: u32,
    /// The starter's distributions, indexed as [`Variant::ALL`].
    dist: [GameDistribution; 3],
    /// Indexed by [`MatchEquityTable::index`].
    mwc: Vec<f64>,
}

impl MatchEquityTable {
    /// The table of the committed distributions (`data/met-distributions.json`) up to
    /// [`MAX_AWAY`], built once (microseconds).
    pub fn builtin() -> &'static MatchEquityTable {
        static TABLE: OnceLock<MatchEquityTable> = OnceLock::new();
        TABLE.get_or_init(|| {
            let d = Distributions::from_json(BUILTIN_DISTRIBUTIONS)
                .and_then(|d| d.by_variant())
                .expect("the committed data/met-distributions.json is valid (tested)");
            MatchEquityTable::new(d, MAX_AWAY).expect("valid distributions")
        })
    }

    /// The table of the starter's distributions `dist` (indexed as [`Variant::ALL`]),
    /// for both sides 1..=`max_away` away.
    ///
    /// The dynamic programming: the chance `V(s)` of a state is the sum over the five
    /// game ends of their probability times the chance after them
    /// ([`MetState::after`]: 1 for a match won, 0 for one lost), with the distribution
    /// of the side that starts (its flip when the other side starts, the mean of
    /// both after an opening roll). Every decisive end lowers an away, so states are
    /// filled by increasing sum of aways; a draw leads to the same aways, the next
    /// variant and an opening roll, a cycle over the three variants that is solved
    /// exactly (a geometric series in the product of the three draw chances).
    ///
    /// Errors: field `max_away` outside 1..=1000; `dist[i]...` as
    /// [`GameDistribution::validate`]; `dist` when every variant draws for sure.
    pub fn new(dist: [GameDistribution; 3], max_away: u32) -> Result<MatchEquityTable, RulesError> {
        if !(1..=1000).contains(&max_away) {
            return Err(RulesError::invalid(
                "max_away",
                format!("must be 1..=1000, got {max_away}"),
            ));
        }
        for (i, v) in Variant::ALL.into_iter().enumerate() {
            dist[i].validate(v, &format!("dist[{i}]"))?;
        }
        let draws: f64 = dist.iter().map(|d| d.draw).product();
        if draws >= 1.0 {
            return Err(RulesError::invalid("dist", "every game would be a draw"));
        }
        let n = max_away as usize;
        let mut t = MatchEquityTable {
            max_away,
            dist,
            mwc: vec![f64::NAN; n * n * 9],
        };
        for sum in 2..=2 * max_away {
            for away in sum.saturating_sub(max_away).max(1)..=(sum - 1).min(max_away) {
                t.fill(away, sum - away);
            }
        }
        Ok(t)
    }

    /// Fills the nine entries of `(away, other_away)`, every state with a smaller sum
    /// of aways being filled.
    fn fill(&mut self, away: u32, other_away: u32) {
        let state = |variant, starter| MetState {
            away,
            other_away,
            variant,
            starter,
        };
        // The decisive part of each (variant, starter): the sum over the ends other
        // than a draw, which all lead to filled states.
        let mut decisive = [[0f64; 2]; 3];
        for v in Variant::ALL {
            for (k, starter) in [Starter::ThisSide, Starter::OtherSide]
                .into_iter()
                .enumerate()
            {
                let s = state(v, starter);
                let p = self.end_probabilities(&s);
                decisive[variant_index(v)][k] = GameEnd::ALL[..4]
                    .iter()
                    .map(|&e| p[e as usize] * self.value_after(s.after(e)))
                    .sum();
            }
        }
        // Opening-roll values: O_v = o_v + d_v O_next(v), o_v the mean of the decisive
        // parts; around the cycle Portes -> Plakoto -> Fevga -> Portes.
        let d = |v: Variant| self.dist[variant_index(v)].draw;
        let o = |v: Variant| (decisive[variant_index(v)][0] + decisive[variant_index(v)][1]) / 2.0;
        let (po, pl, fe) = (Variant::Portes, Variant::Plakoto, Variant::Fevga);
        let o_po = (o(po) + d(po) * o(pl) + d(po) * d(pl) * o(fe)) / (1.0 - d(po) * d(pl) * d(fe));
        let o_fe = o(fe) + d(fe) * o_po;
        let o_pl = o(pl) + d(pl) * o_fe;
        let opening = |v: Variant| match v {
            Variant::Portes => o_po,
            Variant::Plakoto => o_pl,
            Variant::Fevga => o_fe,
        };
        for v in Variant::ALL {
            let after_draw = opening(v.next_in_match());
            for (k, starter) in [Starter::ThisSide, Starter::OtherSide]
                .into_iter()
                .enumerate()
            {
                let i = self.index(&state(v, starter));
                self.mwc[i] = decisive[variant_index(v)][k] + d(v) * after_draw;
            }
            let i = self.index(&state(v, Starter::OpeningRoll));
            self.mwc[i] = opening(v);
        }
    }

    fn index(&self, s: &MetState) -> usize {
        let n = self.max_away as usize;
        (((s.away as usize - 1) * n + (s.other_away as usize - 1)) * 3 + variant_index(s.variant))
            * 3
            + s.starter.index()
    }

    /// The most points away the table covers, for each side.
    pub fn max_away(&self) -> u32 {
        self.max_away
    }

    /// The longest match the table covers from its start (equal to
    /// [`MatchEquityTable::max_away`]); longer matches are covered once both sides
    /// are within it.
    pub fn max_length(&self) -> u32 {
        self.max_away
    }

    /// The starter's distributions the table is made from, indexed as
    /// [`Variant::ALL`].
    pub fn distributions(&self) -> &[GameDistribution; 3] {
        &self.dist
    }

    /// The probabilities of the five ends of the next game of `s`, for this side
    /// ([`GameEnd::ALL`] order): the variant's distribution if this side starts, its
    /// flip if the other does, their mean after an opening roll.
    pub fn end_probabilities(&self, s: &MetState) -> [f64; 5] {
        let d = self.dist[variant_index(s.variant)];
        match s.starter {
            Starter::ThisSide => d.as_array(),
            Starter::OtherSide => d.flip().as_array(),
            Starter::OpeningRoll => {
                let (a, b) = (d.as_array(), d.flip().as_array());
                std::array::from_fn(|k| (a[k] + b[k]) / 2.0)
            }
        }
    }

    /// The chance of winning after a game: 1, 0, or the entry of the next state
    /// (which must be in the table).
    fn value_after(&self, a: After) -> f64 {
        match a {
            After::MatchWon => 1.0,
            After::MatchLost => 0.0,
            After::Next(s) => self.mwc[self.index(&s)],
        }
    }

    /// The match winning chance of this side in `s`, in `[0, 1]`. Errors: field
    /// `away` or `other_away` outside 1..=[`MatchEquityTable::max_away`].
    pub fn mwc_state(&self, s: &MetState) -> Result<f64, RulesError> {
        for (field, a) in [("away", s.away), ("other_away", s.other_away)] {
            if a == 0 || a > self.max_away {
                return Err(RulesError::invalid(
                    field,
                    format!(
                        "the table covers 1..={} points away, got {a}",
                        self.max_away
                    ),
                ));
            }
        }
        Ok(self.mwc[self.index(s)])
    }

    /// The match winning chance, in `[0, 1]`, of a side with `score[0]` points against
    /// the other side's `score[1]` in a `length`-point match, before a game of
    /// `next` that `starter` starts. Errors: field `length` for 0, or when a side is
    /// more than [`MatchEquityTable::max_away`] away (a match too long for the
    /// table); `score[0]` or `score[1]` at or past the length (the match is over).
    pub fn mwc(
        &self,
        length: u32,
        score: [u32; 2],
        next: Variant,
        starter: Starter,
    ) -> Result<f64, RulesError> {
        if length == 0 {
            return Err(RulesError::invalid(
                "length",
                "match length must be at least 1",
            ));
        }
        for (k, s) in score.into_iter().enumerate() {
            if s >= length {
                return Err(RulesError::invalid(
                    format!("score[{k}]"),
                    format!("{s} points in a {length}-point match: the match is over"),
                ));
            }
            if length - s > self.max_away {
                return Err(RulesError::invalid(
                    "length",
                    format!(
                        "{} points away in a {length}-point match; the table covers 1..={} away",
                        length - s,
                        self.max_away
                    ),
                ));
            }
        }
        self.mwc_state(&MetState {
            away: length - score[0],
            other_away: length - score[1],
            variant: next,
            starter,
        })
    }

    /// The match winning chance of `side` in the match `m` between games (the
    /// variant and starter of its next game), in `[0, 1]`. Errors: as
    /// [`MetState::of`], and field `match.length` when a side is more than
    /// [`MatchEquityTable::max_away`] away.
    pub fn mwc_match(&self, m: &MatchState, side: Side) -> Result<f64, RulesError> {
        let s = self.covered(m, side)?;
        Ok(self.mwc[self.index(&s)])
    }

    /// What each end of the game being played in `m` is worth to `side`: its match
    /// winning chance after that end (1 when the end wins the match, 0 when it loses
    /// it; a mars at 1-away wins like a single), with the mover's state. `m` holds
    /// the score before this game and the variant being played; its starter plays
    /// no part. Errors: as [`MatchEquityTable::mwc_match`].
    pub fn end_values(
        &self,
        m: &MatchState,
        side: Side,
    ) -> Result<(MetState, EndValues), RulesError> {
        let s = self.covered(m, side)?;
        let v = |e: GameEnd| self.value_after(s.after(e));
        let values = EndValues {
            win_single: v(GameEnd::WinSingle),
            win_mars: v(GameEnd::WinMars),
            lose_single: v(GameEnd::LoseSingle),
            lose_mars: v(GameEnd::LoseMars),
            draw: v(GameEnd::Draw),
        };
        Ok((s, values))
    }

    /// [`MetState::of`], checked against the table's range.
    fn covered(&self, m: &MatchState, side: Side) -> Result<MetState, RulesError> {
        let s = MetState::of(m, side)?;
        let far = s.away.max(s.other_away);
        if far > self.max_away {
            return Err(RulesError::invalid(
                "match.length",
                format!(
                    "{far} points away in a {}-point match; the table covers 1..={} away",
                    m.length, self.max_away
                ),
            ));
        }
        Ok(s)
    }
}

/// The chance that `mover` wins the match from a position of the game being played
/// in `m` (its `score` from before this game, its `variant` the game's; its
/// `starter` plays no part), given the mover's cubeless outcome probabilities `p`
/// for this game (an [`crate::eval::Evaluation`]'s): the sum over the five game ends
/// of their probability times the table's chance after them (a mars at 1-away wins
/// the match like a single), as [`EndValues::value`] computes it from
/// [`MatchEquityTable::end_values`]. In `[0, 1]`.
///
/// Errors: as [`MetState::of`] (fields `match.length`, `match.winner`,
/// `match.score_white`, `match.score_black`); `match.length` when a side is more
/// than the table's [`MatchEquityTable::max_away`] away; `probabilities.*` as
/// [`GameDistribution::from_probabilities`].
pub fn match_winning_chance(
    table: &MatchEquityTable,
    m: &MatchState,
    mover: Side,
    p: &Probabilities,
) -> Result<f64, RulesError> {
    let (_, values) = table.end_values(m, mover)?;
    GameDistribution::from_probabilities(p, m.variant, "probabilities")?;
    Ok(values.value(p).clamp(0.0, 1.0))
}
