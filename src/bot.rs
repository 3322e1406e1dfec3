//! Bot opponents: the play a player of a given skill level makes (`ChoosePlay`).
//!
//! A level is defined as GNU Backgammon defines its players (`eval.c`, the
//! predefined settings "beginner" … "grandmaster"): a **search depth** and **noise**
//! on the evaluations. Every legal play of the roll is valued at the level's depth
//! ([`PositionEvaluator::rank_raw_plays`], the ranking `Evaluate` answers with), a
//! normal deviate times the level's noise (standard deviation, points of equity) is
//! added to each play's value, and the play with the highest noisy value is made.
//! GNU Backgammon adds its noise to each output probability of the static
//! evaluations (its equity noise is then about twice its setting, its gammon
//! outputs get a quarter of it) and offers deterministic noise (a hash of the
//! position) or pseudo-random noise; here it is added to the equity itself, drawn
//! from ChaCha8 seeded with the request's seed (one deviate per legal play, in the
//! generator's order), so that a seed reproduces a choice exactly.
//!
//! The noise of each level is not GNU Backgammon's: it is **calibrated by
//! measurement** (docs/strength.md, "Skill levels"), per variant, so that the
//! analysis of the bot's own games ([`crate::analysis`], what `AnalyzeGame` runs)
//! rates them with the level's name, and the levels are ordered by points per game.
//! [`Level::noise`] and [`Level::plies`] are that table; a test checks that the
//! documentation gives the same numbers.
//!
//! Ranking measure: a single game's plays are compared by cubeless equity
//! ([`Measure::Equity`]); a match's ([`MatchScore`]) by the mover's match winning
//! chance from the match equity table ([`Measure::for_match`]), the level's noise
//! then added to the normalised equity (points, [`pick_by`]).

use crate::eval::{EndValues, EvalError, EvalOptions, PositionEvaluator, Probabilities};
pub use crate::matchequity::MatchScore;
use crate::rules::play::to_play;
use crate::rules::{Dice, Play, Position, Side, Variant};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A skill level of [`choose`], weakest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    /// Rated "Beginner" (26–35 thousandths of a point lost per move with a choice).
    Beginner,
    /// Rated "Casual player" (18–26).
    Casual,
    /// Rated "Intermediate" (12–18).
    Intermediate,
    /// Rated "Advanced" (8–12).
    Advanced,
    /// Rated "Expert" (5–8).
    Expert,
    /// Rated "World class" (2–5).
    WorldClass,
    /// The engine's best: no noise, the deepest search ([`crate::eval::MAX_PLIES`]).
    Best,
}

/// What defines a level: its noise per variant and its search depth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LevelSpec {
    /// Standard deviation of the normal noise added to each play's equity, in points,
    /// indexed as [`Variant::ALL`] (Portes, Plakoto, Fevga).
    pub noise: [f32; 3],
    /// Search depth of the ranking (as `Evaluate`'s `plies`).
    pub plies: u8,
}

/// A level's definition: its noise in Portes, Plakoto and Fevga, and its depth.
const fn spec(portes: f32, plakoto: f32, fevga: f32, plies: u8) -> LevelSpec {
    LevelSpec {
        noise: [portes, plakoto, fevga],
        plies,
    }
}

/// The levels' definitions, in [`Level::ALL`]'s order (docs/strength.md, "Skill
/// levels", gives them with their measurements).
const SPECS: [LevelSpec; 7] = [
    spec(0.098, 0.110, 0.093, 0),
    spec(0.074, 0.081, 0.064, 0),
    spec(0.055, 0.057, 0.044, 0),
    spec(0.041, 0.040, 0.030, 0),
    spec(0.030, 0.028, 0.022, 0),
    spec(0.019, 0.018, 0.014, 0),
    spec(0.0, 0.0, 0.0, crate::eval::MAX_PLIES),
];

impl Level {
    /// Every level, weakest first.
    pub const ALL: [Level; 7] = [
        Level::Beginner,
        Level::Casual,
        Level::Intermediate,
        Level::Advanced,
        Level::Expert,
        Level::WorldClass,
        Level::Best,
    ];

    /// Its definition.
    pub fn spec(self) -> LevelSpec {
        SPECS[self as usize]
    }

    /// The noise's standard deviation in `variant`, points of equity.
    pub fn noise(self, variant: Variant) -> f32 {
        self.spec().noise[crate::eval::engine::variant_index(variant)]
    }

    /// The search depth.
    pub fn plies(self) -> u8 {
        self.spec().plies
    }

    /// Lower-case name: `beginner`, `casual`, `intermediate`, `advanced`, `expert`,
    /// `world-class`, `best` (what [`Level::from_name`] reads).
    pub fn name(self) -> &'static str {
        match self {
            Level::Beginner => "beginner",
            Level::Casual => "casual",
            Level::Intermediate => "intermediate",
            Level::Advanced => "advanced",
            Level::Expert => "expert",
            Level::WorldClass => "world-class",
            Level::Best => "best",
        }
    }

    /// The level of a name (as [`Level::name`]; case, `_` and spaces for `-` allowed).
    pub fn from_name(s: &str) -> Option<Level> {
        let s = s.trim().to_ascii_lowercase().replace(['_', ' '], "-");
        Level::ALL.into_iter().find(|l| l.name() == s)
    }

    /// The rating of GNU Backgammon's scale that the analysis of this level's games
    /// gives ([`crate::analysis::PlayerStats::rating`]): `Beginner`, `Casual player`,
    /// `Intermediate`, `Advanced`, `Expert`, `World class` (measured with a 0-ply
    /// analysis), and `Supernatural` for the best (0 error at its own depth; a 0-ply
    /// analysis of its 2-ply games finds 2.4 to 3.4 thousandths a move in Portes,
    /// docs/strength.md, "The best level at its own depth").
    pub fn rating(self) -> &'static str {
        match self {
            Level::Beginner => "Beginner",
            Level::Casual => "Casual player",
            Level::Intermediate => "Intermediate",
            Level::Advanced => "Advanced",
            Level::Expert => "Expert",
            Level::WorldClass => "World class",
            Level::Best => "Supernatural",
        }
    }
}

/// How a play is chosen: the noise and the depth (a level's, or a level's with the
/// depth capped by the server).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    /// Standard deviation of the noise on each play's equity, points (0: none).
    pub noise: f32,
    /// Search depth.
    pub plies: u8,
}

impl Settings {
    /// A level's settings in `variant`, the depth at most `max_plies`.
    pub fn of(level: Level, variant: Variant, max_plies: u8) -> Settings {
        Settings {
            noise: level.noise(variant),
            plies: level.plies().min(max_plies),
        }
    }
}

/// What ranks the plays.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Measure {
    /// Cubeless equity, points per game (R7).
    Equity,
    /// The mover's match winning chance, from what each end of the game is worth at
    /// the match's score ([`MatchScore::end_values`]).
    MatchWinningChance(EndValues),
}

impl Measure {
    /// Its name in the answer: `equity` or `match_winning_chance`.
    pub fn name(self) -> &'static str {
        match self {
            Measure::Equity => "equity",
            Measure::MatchWinningChance(_) => "match_winning_chance",
        }
    }

    /// The measure of a game of `variant` played at `score` by `mover`: equity for a
    /// single game (no score), match winning chances in a match.
    pub fn for_match(score: Option<&MatchScore>, variant: Variant, mover: Side) -> Measure {
        match score {
            None => Measure::Equity,
            Some(s) => Measure::MatchWinningChance(s.end_values(variant, mover)),
        }
    }

    /// The end values a ranking compares plays by ([`EvalOptions::measure`]).
    pub fn end_values(self) -> Option<EndValues> {
        match self {
            Measure::Equity => None,
            Measure::MatchWinningChance(m) => Some(m),
        }
    }
}

/// The play chosen and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// The play made: moves, notation, resulting position, outcome.
    pub play: Play,
    /// The mover's probabilities after it, at the search's depth (without noise).
    pub probabilities: Probabilities,
    /// Its value (without noise), points: the mover's equity after it, or in a
    /// match its normalised equity ([`EvalOptions::points`]).
    pub value: f32,
    /// The best play's value (the first of the ranking), points, as `value`.
    pub best_value: f32,
    /// In a match: the mover's match winning chance after the play made and after
    /// the best play, in `[0, 1]` ([`EndValues::value`]).
    pub match_winning_chance: Option<(f64, f64)>,
    /// Which evaluator ranked the plays (e.g. `net-portes-v2`, `bearoff-exact`).
    pub evaluator: String,
    /// Plies searched (0 in a no-contact bear-off, which is exact).
    pub plies: u8,
    /// What ranked the plays.
    pub measure: Measure,
}

/// A standard normal deviate (Box–Muller, one of the pair).
fn normal(rng: &mut ChaCha8Rng) -> f32 {
    // 1 - u lies in (0, 1]: its logarithm is finite.
    let u1 = 1.0 - rng.random::<f64>();
    let u2 = rng.random::<f64>();
    ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
}

/// The position in `ranked` of the play made with `noise`: `ranked` is `(index into
/// the plays, the mover's probabilities, plies)` best first
/// ([`crate::eval::RawRanking::ranked`]) over `plays` legal plays. Each play `i` gets
/// the `i`-th deviate of ChaCha8 seeded with `seed`, times `noise`, added to its
/// equity; the highest noisy equity is made (the earlier in `ranked` on a tie).
/// Without noise it is the first, whatever the seed. [`pick_by`] with the equity.
pub fn pick(ranked: &[(usize, Probabilities, u8)], plays: usize, noise: f32, seed: u64) -> usize {
    pick_by(ranked, plays, noise, seed, &EvalOptions::default())
}

/// [`pick`] with each play valued in points by `by` ([`EvalOptions::points`]: the
/// equity, or with a measure its normalised equity, so that a level's noise in
/// points means the same at any match score: noise `σ` on the normalised equity is
/// `σ ·` [`EndValues::per_point`] on the match winning chance).
pub fn pick_by(
    ranked: &[(usize, Probabilities, u8)],
    plays: usize,
    noise: f32,
    seed: u64,
    by: &EvalOptions,
) -> usize {
    if noise <= 0.0 || ranked.len() < 2 {
        return 0;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let z: Vec<f32> = (0..plays).map(|_| normal(&mut rng)).collect();
    let mut best = (0, f32::NEG_INFINITY);
    for (k, &(i, p, _)) in ranked.iter().enumerate() {
        let v = by.points(&p) + noise * z[i];
        if v > best.1 {
            best = (k, v);
        }
    }
    best.0
}

/// The play of `pos` with `dice` made with `settings` and `seed`. `opts` carries the
/// deadline and the cancellation (its `plies` is replaced by the settings', its
/// `measure` by the score's); `score` is the match score, if any: the plays are then
/// ranked by the mover's match winning chance ([`Measure::for_match`]) and the noise
/// added to their normalised equity ([`pick_by`]). Errors: those of
/// [`PositionEvaluator::rank_raw_plays`] (an invalid position, a finished game, no
/// evaluator, the deadline, cancellation).
pub fn choose(
    evaluator: &dyn PositionEvaluator,
    pos: &Position,
    dice: Dice,
    settings: Settings,
    seed: u64,
    score: Option<&MatchScore>,
    opts: EvalOptions,
) -> Result<Choice, EvalError> {
    let measure = Measure::for_match(score, pos.variant, pos.turn);
    let opts = EvalOptions {
        plies: settings.plies,
        measure: measure.end_values(),
        ..opts
    };
    let r = evaluator.rank_raw_plays(pos, dice, opts.clone())?;
    let k = pick_by(&r.ranked, r.plays.len(), settings.noise, seed, &opts);
    let (i, p, _) = r.ranked[k];
    let best = r.ranked[0].1;
    let mwc = measure
        .end_values()
        .map(|m| (m.value(&p).clamp(0.0, 1.0), m.value(&best).clamp(0.0, 1.0)));
    Ok(Choice {
        play: to_play(pos.variant, pos.turn, &r.plays[i]),
        probabilities: p,
        value: opts.points(&p),
        best_value: opts.points(&best),
        match_winning_chance: mwc,
        evaluator: r.evaluator,
        plies: r.plies,
        measure,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::engine::Engine;
    use crate::rules::legal_plays;

    #[test]
    fn names_round_trip_and_levels_weaken_with_noise() {
        for l in Level::ALL {
            assert_eq!(Level::from_name(l.name()), Some(l));
        }
        assert_eq!(Level::from_name("World Class"), Some(Level::WorldClass));
        assert_eq!(Level::from_name("world_class"), Some(Level::WorldClass));
        assert_eq!(Level::from_name("grandmaster"), None);
        for v in Variant::ALL {
            for w in Level::ALL.windows(2) {
                assert!(w[0].noise(v) > w[1].noise(v), "{:?} {v}", w[0]);
            }
        }
        assert_eq!(Level::Best.spec().noise, [0.0; 3]);
        assert_eq!(Level::Best.plies(), crate::eval::MAX_PLIES);
    }

    #[test]
    fn match_scores_are_checked() {
        assert_eq!(
            MatchScore::new(5, [4, 0]).unwrap(),
            MatchScore {
                length: 5,
                score: [4, 0]
            }
        );
        let m = Measure::for_match(
            MatchScore::new(3, [1, 1]).ok().as_ref(),
            Variant::Fevga,
            Side::Black,
        );
        assert_eq!(m.name(), "match_winning_chance");
        let none = Measure::for_match(None, Variant::Fevga, Side::Black);
        assert_eq!((none.name(), none.end_values()), ("equity", None));
    }

    #[test]
    fn pick_without_noise_is_the_first_and_with_noise_follows_the_seed() {
        let p = |e: f32| Probabilities {
            win: (e + 1.0) / 2.0,
            ..Probabilities::default()
        };
        // Three plays, the third best by 0.2, the first by 0.01 over the second.
        let ranked = [(2, p(0.2), 0), (0, p(0.01), 0), (1, p(0.0), 0)];
        for seed in 0..50 {
            assert_eq!(pick(&ranked, 3, 0.0, seed), 0);
        }
        // With a large noise every play is made for some seed; a seed always makes the
        // same one.
        let made: Vec<usize> = (0..200).map(|s| pick(&ranked, 3, 1.0, s)).collect();
        for k in 0..3 {
            assert!(made.contains(&k), "{made:?}");
        }
        let again: Vec<usize> = (0..200).map(|s| pick(&ranked, 3, 1.0, s)).collect();
        assert_eq!(made, again);
        // The deviates of seed 7 (ChaCha8): the choice is that of the highest noisy
        // equity, computed here by hand.
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let z: Vec<f32> = (0..3).map(|_| normal(&mut rng)).collect();
        let noisy = [0.2 + 0.1 * z[2], 0.01 + 0.1 * z[0], 0.0 + 0.1 * z[1]];
        let expect = (0..3)
            .max_by(|&a, &b| noisy[a].total_cmp(&noisy[b]).then(b.cmp(&a)))
            .unwrap();
        assert_eq!(pick(&ranked, 3, 0.1, 7), expect);
    }

    #[test]
    fn a_seed_reproduces_a_choice_and_best_is_evaluates_top() {
        let engine = Engine::load_default();
        let pos = Position::start(Variant::Portes, Side::White);
        let dice = Dice::new(4, 2).unwrap();
        let plays = legal_plays(&pos, dice).unwrap();
        let opts = EvalOptions::default();
        let best = choose(
            &engine,
            &pos,
            dice,
            Settings::of(Level::Best, Variant::Portes, 0),
            1,
            None,
            opts.clone(),
        )
        .unwrap();
        let top = &engine.rank_plays(&pos, dice, opts.clone()).unwrap()[0];
        assert_eq!(best.play, top.play);
        assert_eq!((best.value, best.best_value), (top.equity, top.equity));
        assert_eq!(best.plies, 0);
        assert_eq!(best.evaluator, "net-portes-v2");
        let beginner = Settings::of(Level::Beginner, Variant::Portes, 2);
        let mut made = Vec::new();
        for seed in 0..40 {
            let a = choose(&engine, &pos, dice, beginner, seed, None, opts.clone()).unwrap();
            let b = choose(&engine, &pos, dice, beginner, seed, None, opts.clone()).unwrap();
            assert_eq!(a, b);
            assert!(plays.contains(&a.play));
            assert!(a.value <= a.best_value);
            if !made.contains(&a.play.notation) {
                made.push(a.play.notation);
            }
        }
        // Noise makes the beginner vary its play of 4-2 at the start.
        assert!(made.len() >= 2, "{made:?}");
    }
}
