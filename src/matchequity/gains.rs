//! Score-aware play against cubeless play (issue #33; docs/match-equity.md,
//! "Score-aware play against cubeless play"): whole Tavli matches (RULES.md R2:
//! Portes → Plakoto → Fevga, the winner of a game starting the next, an opening roll
//! at the start and after a draw) between player A, who makes each turn the 0-ply
//! play of the best match winning chance at the current score
//! ([`Search::best_play_by`] with [`MatchEquityTable::end_values`]), and player B,
//! who makes the best 0-ply play by cubeless equity ([`Search::best_play`]); both
//! with the same engine, the match loop of [`super::simulate`].
//!
//! Duplicate dice: pair `i` plays two matches from the same seed `mix(seed ^ mix(i))`,
//! A as White and then A as Black. Game `k` of both matches rolls the same dice
//! (its opening roll first, when there is one: the same side wins it in both, so the
//! roles are swapped), whatever happened in the games before it. The unit of the
//! interval is the pair: its mean of A's two match results.
//!
//! Decisions: on each of A's turns with more than one legal play, A's play is
//! compared with the cubeless best play of the same roll, by A's own measure (the
//! table's match winning chance after the game's ends); counted per score, as aways
//! (A's, B's), and per variant.

use super::simulate::play_match_with;
use super::MatchEquityTable;
use crate::eval::engine::{variant_index, Engine};
use crate::eval::search::{Scratch, Search};
use crate::eval::{EvalError, Probabilities};
use crate::rules::board::Board;
use crate::rules::{MatchState, RulesError, Side};
use crate::train::mix;
use crate::train::strength::Estimate;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// Settings of a measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GainsConfig {
    /// Match length in points (at least 1, at most the table's
    /// [`MatchEquityTable::max_length`]).
    pub length: u32,
    /// Pairs of matches (two matches each).
    pub pairs: u32,
    /// Master seed.
    pub seed: u64,
    /// Worker threads (0: one per core); the answer does not depend on it.
    pub threads: usize,
}

/// A's decisions at one score (or in one variant).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Decisions {
    /// A's turns with more than one legal play.
    pub turns: u64,
    /// Those where A's play is not the cubeless best play.
    pub differ: u64,
    /// The sum over those turns of A's measure of its play minus A's measure of the
    /// cubeless best play: match winning chance (0..1), never negative.
    pub gain: f64,
}

impl Decisions {
    fn add(&mut self, o: &Decisions) {
        self.turns += o.turns;
        self.differ += o.differ;
        self.gain += o.gain;
    }

    /// The share of turns where A's play differs from the cubeless one.
    pub fn differ_rate(&self) -> f64 {
        self.differ as f64 / self.turns.max(1) as f64
    }

    /// The mean gain per turn, match winning chance.
    pub fn mean_gain(&self) -> f64 {
        self.gain / self.turns.max(1) as f64
    }
}

/// One pair of matches.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PairResult {
    /// Whether A won the match, A as White and A as Black.
    pub a_won: [bool; 2],
    /// Games played in the two matches.
    pub games: u64,
    /// Drawn games among them.
    pub draws: u64,
    /// Games ended at [`super::simulate::MAX_GAME_PLIES`].
    pub cut: u64,
    /// A's decisions by score: (A's away, B's away) before the game.
    pub by_score: BTreeMap<(u32, u32), Decisions>,
    /// A's decisions by variant, indexed Portes, Plakoto, Fevga.
    pub by_variant: [Decisions; 3],
}

impl PairResult {
    fn add(&mut self, o: &PairResult) {
        self.games += o.games;
        self.draws += o.draws;
        self.cut += o.cut;
        for (k, d) in &o.by_score {
            self.by_score.entry(*k).or_default().add(d);
        }
        for (a, b) in self.by_variant.iter_mut().zip(&o.by_variant) {
            a.add(b);
        }
    }
}

/// The measurement: the sums of its pairs, A's view.
#[derive(Clone, Debug, PartialEq)]
pub struct GainsReport {
    /// The settings.
    pub config: GainsConfig,
    /// Matches A won, of `2 · pairs`.
    pub a_wins: u32,
    /// A's match-win rate: the mean of the pair means with its 95 % half-width
    /// (`1.96 sd / √pairs`).
    pub win_rate: Estimate,
    /// Games, draws, cut games and A's decisions of all pairs (`a_won` unused).
    pub totals: PairResult,
}

impl GainsReport {
    /// Games per match.
    pub fn games_per_match(&self) -> f64 {
        self.totals.games as f64 / (2.0 * self.config.pairs.max(1) as f64)
    }

    /// The sum of A's gains per match (match winning chance): what A's choices add up
    /// to by A's own measure, to compare with the measured win rate minus 1/2.
    pub fn gain_per_match(&self) -> f64 {
        let sum: f64 = self.totals.by_variant.iter().map(|d| d.gain).sum();
        sum / (2.0 * self.config.pairs.max(1) as f64)
    }
}

/// A's play among `plays` for `mover` in the game of `m` (the score before it and its
/// variant): the best 0-ply play by the match winning chance of the table
/// ([`MatchEquityTable::end_values`] of `m` for `mover`), with its probabilities and
/// its value by that measure; and the measure itself, as `(index, probabilities,
/// value, end values)`. Errors: as [`MatchEquityTable::end_values`], and the
/// evaluator's.
pub fn score_aware_play(
    table: &MatchEquityTable,
    m: &MatchState,
    search: &Search,
    sc: &mut Scratch,
    mover: Side,
    plays: &[Board],
) -> Result<(usize, Probabilities, crate::eval::EndValues), EvalError> {
    let (_, ev) = table.end_values(m, mover)?;
    let (i, p) = search.best_play_by(sc, plays, 0, Some(&ev))?;
    Ok((i, p, ev))
}

/// Plays pair `i` of `cfg` (A score-aware, B cubeless, both with `engine` at 0 ply).
/// Errors: field `length` for a length the table does not cover; the evaluator's.
pub fn play_pair(
    engine: &Engine,
    table: &MatchEquityTable,
    cfg: &GainsConfig,
    i: u32,
) -> Result<PairResult, EvalError> {
    let pair_seed = mix(cfg.seed ^ mix(i as u64));
    let mut r = PairResult::default();
    for (k, a_side) in [Side::White, Side::Black].into_iter().enumerate() {
        let mut rng = ChaCha8Rng::seed_from_u64(pair_seed);
        let mut choose = |m: &MatchState,
                          search: &Search,
                          sc: &mut Scratch,
                          mover: Side,
                          plays: &[Board]|
         -> Result<usize, EvalError> {
            if mover != a_side {
                return Ok(search.best_play(sc, plays, 0)?.0);
            }
            let (a, pa, ev) = score_aware_play(table, m, search, sc, mover, plays)?;
            if plays.len() > 1 {
                let (c, pc) = search.best_play(sc, plays, 0)?;
                let d = Decisions {
                    turns: 1,
                    differ: (a != c) as u64,
                    gain: ev.value(&pa) - ev.value(&pc),
                };
                let away = |s: Side| m.length - m.score[s.index()];
                let key = (away(a_side), away(a_side.opponent()));
                r.by_score.entry(key).or_default().add(&d);
                r.by_variant[variant_index(m.variant)].add(&d);
            }
            Ok(a)
        };
        let start = MatchState::new(cfg.length)?;
        let (w, c) = play_match_with(engine, start, &mut rng, Some(pair_seed), &mut choose)?;
        r.a_won[k] = w == a_side;
        r.games += c.games;
        r.draws += c.draws;
        r.cut += c.cut;
    }
    Ok(r)
}

/// Plays `cfg.pairs` pairs on `cfg.threads` threads and sums them in pair order (the
/// answer does not depend on the thread count). Errors: field `pairs` for 0, field
/// `length` for 0 or a length past [`MatchEquityTable::max_length`]; the
/// evaluator's ([`EvalError::Unavailable`] without a static evaluator).
pub fn run(
    engine: &Engine,
    table: &MatchEquityTable,
    cfg: &GainsConfig,
) -> Result<GainsReport, EvalError> {
    if cfg.pairs == 0 {
        return Err(RulesError::invalid("pairs", "at least 1 pair of matches").into());
    }
    if cfg.length == 0 || cfg.length > table.max_length() {
        let why = format!("a match length in 1..={}", table.max_length());
        return Err(RulesError::invalid("length", why).into());
    }
    let threads = match cfg.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .clamp(1, cfg.pairs as usize);
    let mut pairs = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    (t as u32..cfg.pairs)
                        .step_by(threads)
                        .map(|i| Ok((i, play_pair(engine, table, cfg, i)?)))
                        .collect::<Result<Vec<_>, EvalError>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker panicked"))
            .collect::<Result<Vec<_>, _>>()
    })?
    .concat();
    pairs.sort_by_key(|p| p.0);
    let mut totals = PairResult::default();
    let mut a_wins = 0;
    let mut means = Vec::with_capacity(pairs.len());
    for (_, p) in &pairs {
        totals.add(p);
        let won = p.a_won.iter().filter(|&&w| w).count() as u32;
        a_wins += won;
        means.push(won as f64 / 2.0);
    }
    Ok(GainsReport {
        config: *cfg,
        a_wins,
        win_rate: Estimate::of(&means),
        totals,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::StopWhen;
    use crate::rules::movegen::{generate_positions, play_outcome};
    use crate::rules::{Dice, Position, Variant};
    use rand::Rng;

    #[test]
    fn pairs_are_reproducible_by_seed_and_thread_count() {
        let engine = Engine::load_default();
        let table = MatchEquityTable::builtin();
        let cfg = |seed, threads| GainsConfig {
            length: 3,
            pairs: 4,
            seed,
            threads,
        };
        let one = run(&engine, table, &cfg(5, 1)).unwrap();
        let two = run(&engine, table, &cfg(5, 2)).unwrap();
        assert_eq!(one.totals, two.totals);
        assert_eq!(one.a_wins, two.a_wins);
        assert_eq!(
            one,
            GainsReport {
                config: cfg(5, 1),
                ..two
            }
        );
        assert_eq!(
            play_pair(&engine, table, &cfg(5, 1), 2).unwrap(),
            play_pair(&engine, table, &cfg(5, 1), 2).unwrap()
        );
        // A 3-point match lasts at least two games (a game scores at most 2, R7).
        assert!(one.totals.games >= 16, "{:?}", one.totals);
        // Every game A plays has turns with a choice; gains are never negative.
        let turns: u64 = one.totals.by_variant.iter().map(|d| d.turns).sum();
        assert!(turns > 0);
        assert!(one
            .totals
            .by_score
            .values()
            .all(|d| d.gain >= 0.0 && d.differ <= d.turns));
        assert!(one
            .totals
            .by_score
            .keys()
            .all(|&(a, b)| (1..=3).contains(&a) && (1..=3).contains(&b)));
        // Another seed plays other dice.
        let other = run(&engine, table, &cfg(6, 1)).unwrap();
        assert_ne!(one.totals, other.totals);
        // Bad settings name their field.
        for (bad, field) in [
            (
                GainsConfig {
                    pairs: 0,
                    ..cfg(5, 1)
                },
                "pairs",
            ),
            (
                GainsConfig {
                    length: 0,
                    ..cfg(5, 1)
                },
                "length",
            ),
            (
                GainsConfig {
                    length: 99,
                    ..cfg(5, 1)
                },
                "length",
            ),
        ] {
            assert!(matches!(
                run(&engine, table, &bad),
                Err(EvalError::Rules(RulesError::Invalid { field: ref f, .. })) if f == field
            ));
        }
    }

    #[test]
    fn at_double_match_point_the_score_aware_play_maximises_the_win_chance() {
        // Both sides 1-away (4-4 of a 5-point match): every win wins the match and
        // every loss loses it (R7: a mars counts like a single), so the measure is
        // the win chance and A's play is the first play of the best win chance, not
        // the best equity.
        let engine = Engine::load_default();
        let table = MatchEquityTable::builtin();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut differs = 0;
        for variant in [Variant::Portes, Variant::Fevga] {
            let search = engine.search(variant, StopWhen::default());
            let m = MatchState {
                length: 5,
                score: [4, 4],
                variant,
                starter: Some(Side::White),
                games_played: 7,
                winner: None,
            };
            let start = Board::from_position(&Position::start(variant, Side::White), Side::White);
            let mut board = start;
            let mut plays = Vec::new();
            let mut values = Vec::new();
            crate::eval::search::with_scratch(|sc| {
                for _ in 0..200 {
                    let dice = Dice::new(rng.random_range(1..=6), rng.random_range(1..=6)).unwrap();
                    plays.clear();
                    generate_positions(variant, &board, dice, &mut plays);
                    let (i, _, ev) =
                        score_aware_play(table, &m, &search, sc, Side::White, &plays).unwrap();
                    assert_eq!(
                        (ev.win_single, ev.win_mars, ev.lose_single, ev.lose_mars),
                        (1.0, 1.0, 0.0, 0.0)
                    );
                    search.rank(sc, &plays, 0, &mut values).unwrap();
                    let mut by_win = values.clone();
                    by_win.sort_by(|a, b| b.1.win.total_cmp(&a.1.win).then(a.0.cmp(&b.0)));
                    assert_eq!(i, by_win[0].0, "{variant} {dice:?}");
                    differs += (i != values[0].0) as u32;
                    // The game goes on with the cubeless play; a new one when it ends.
                    let next = &plays[values[0].0];
                    board = next.mirror(variant);
                    if play_outcome(variant, next).is_some()
                        || board.game_over_for_mover(variant).is_some()
                    {
                        board = start;
                    }
                }
            });
        }
        // The measure is not the equity: some rolls' plays differ.
        assert!(differs > 0);
    }
}
