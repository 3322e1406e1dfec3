//! The table checked by simulation (`tavli-engine met --check`): whole matches of the
//! cubeless engine against itself, from a set of scores, with the play that measured
//! the distributions (0 ply: the static evaluator's best play, the exact bear-off
//! database in no-contact bear-offs), the match advanced by [`MatchState::advance`].
//!
//! A match from a state: each game starts from the variant's starting position with
//! the state's starter to roll (an opening roll by [`resolve_opening_roll`] when none,
//! R2); each turn rolls two dice and makes the mover's best 0-ply play; a game ends
//! when a play ends it (R7, R5.5). A game still going after [`MAX_GAME_PLIES`] plies
//! (none in the committed runs; a Plakoto game where no side can move never ends)
//! ends with an end drawn from the 0-ply probabilities of its position, as a rollout
//! values such a trial. Match `i` of point `k` draws its dice from ChaCha8 seeded by
//! a mix of the seed, `k` and `i`: the answer does not depend on the thread count.
//!
//! The simulated chance is the fraction of matches White (this side) wins; its 95 %
//! interval is `± 1.96 √(p (1 − p) / n)`.

use super::table::{GameEnd, MatchEquityTable};
use crate::eval::engine::Engine;
use crate::eval::rollout::MAX_TRIAL_PLIES;
use crate::eval::search::{with_scratch, Scratch, Search};
use crate::eval::{EvalError, StopWhen};
use crate::rules::board::{Board, RelOutcome};
use crate::rules::movegen::{generate_positions, play_outcome};
use crate::rules::{
    resolve_opening_roll, Dice, MatchState, OpeningRoll, Outcome, OutcomeReason, Position,
    RulesError, Side, Variant,
};
use crate::train::mix;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A game not over after this many plies (half-moves) is ended from its 0-ply
/// probabilities: the rollouts' cut ([`MAX_TRIAL_PLIES`]).
pub const MAX_GAME_PLIES: u32 = MAX_TRIAL_PLIES;

/// The states of the standard check: twelve per variant of the next game, White
/// being "this side". Lengths, scores and starters chosen to reach every kind of
/// entry: 1-away (where a mars counts as a single), unequal aways, each starter
/// state, and 5- and 7-point matches from 0-0; no state whose chance is 1/2 by
/// symmetry alone (equal aways with an opening roll).
pub fn standard_points() -> Vec<MatchState> {
    // (length, white's score, black's score, starter)
    let w = Some(Side::White);
    let b = Some(Side::Black);
    let rows: [(u32, u32, u32, Option<Side>); 12] = [
        (1, 0, 0, w),
        (2, 1, 0, w),
        (2, 0, 1, w),
        (2, 1, 1, b),
        (2, 0, 0, b),
        (3, 0, 2, b),
        (3, 2, 0, None),
        (3, 1, 1, w),
        (4, 2, 0, None),
        (5, 3, 0, b),
        (5, 0, 0, w),
        (7, 0, 0, b),
    ];
    let mut out = Vec::new();
    for variant in Variant::ALL {
        for &(length, sw, sb, starter) in &rows {
            out.push(MatchState {
                length,
                score: [sw, sb],
                variant,
                starter,
                games_played: 0,
                winner: None,
            });
        }
    }
    out
}

/// Settings of a check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckConfig {
    /// Matches simulated from each state.
    pub matches: u32,
    /// Master seed.
    pub seed: u64,
    /// Worker threads (0: one per core); the answer does not depend on it.
    pub threads: usize,
}

/// The simulation of one state against the table.
#[derive(Clone, Debug, PartialEq)]
pub struct PointResult {
    /// The state the matches started from; White is "this side".
    pub state: MatchState,
    /// The table's chance for White.
    pub table: f64,
    /// Matches simulated.
    pub matches: u32,
    /// Matches White won.
    pub wins: u32,
    /// Games played in all.
    pub games: u64,
    /// Drawn games among them.
    pub draws: u64,
    /// Games ended at [`MAX_GAME_PLIES`].
    pub cut: u64,
}

impl PointResult {
    /// The simulated chance for White.
    pub fn mwc(&self) -> f64 {
        self.wins as f64 / self.matches.max(1) as f64
    }

    /// The 95 % half-width of [`PointResult::mwc`] (normal approximation).
    pub fn ci95(&self) -> f64 {
        let p = self.mwc();
        1.96 * (p * (1.0 - p) / self.matches.max(1) as f64).sqrt()
    }

    /// Whether the table's chance is inside the simulation's 95 % interval.
    pub fn agrees(&self) -> bool {
        (self.mwc() - self.table).abs() <= self.ci95()
    }
}

/// What a simulated match or game counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Counts {
    /// Games played.
    pub(super) games: u64,
    /// Drawn games among them.
    pub(super) draws: u64,
    /// Games ended at [`MAX_GAME_PLIES`].
    pub(super) cut: u64,
}

/// Two dice from `rng`.
fn roll(rng: &mut ChaCha8Rng) -> Dice {
    Dice::new(rng.random_range(1..=6), rng.random_range(1..=6)).expect("1..=6")
}

/// R2: one die each, equal dice rolled again; the higher starts.
fn opening_roll(rng: &mut ChaCha8Rng) -> Side {
    loop {
        let (w, b) = (rng.random_range(1..=6), rng.random_range(1..=6));
        if let OpeningRoll::Starts(s) = resolve_opening_roll(w, b).expect("1..=6") {
            return s;
        }
    }
}

/// The absolute outcome of a relative one: `won` is whether `mover` won it.
fn absolute(o: RelOutcome, won: bool, mover: Side) -> Outcome {
    match o {
        RelOutcome::Draw => o.to_outcome(mover),
        _ if won => o.to_outcome(mover),
        _ => o.to_outcome(mover.opponent()),
    }
}

/// Chooses the mover's play of a turn: `(scratch, mover, plays)` → the index into
/// `plays` (the generator's boards, in the mover's view; at least one).
pub type Chooser<'c> = dyn FnMut(&mut Scratch, Side, &[Board]) -> Result<usize, EvalError> + 'c;

/// Chooses the play of a turn in a match: as [`Chooser`], with first the match state
/// of the game being played (the score before it, its variant, `starter` its
/// starter) and the game's search.
pub type MatchChooser<'c> =
    dyn FnMut(&MatchState, &Search, &mut Scratch, Side, &[Board]) -> Result<usize, EvalError> + 'c;

/// One game of `search.variant` that `starter` starts, the engine's 0-ply play on both
/// sides, dice from `rng`: its outcome and whether it was cut.
pub fn play_game(
    search: &Search,
    starter: Side,
    rng: &mut ChaCha8Rng,
) -> Result<(Outcome, bool), EvalError> {
    play_game_with(search, starter, rng, &mut |sc, _, plays| {
        Ok(search.best_play(sc, plays, 0)?.0)
    })
}

/// [`play_game`] with each turn's play made by `choose` instead of the best 0-ply
/// play; the dice, and the end drawn for a cut game (from the mover's 0-ply
/// probabilities), come from `rng` in the same order.
pub fn play_game_with(
    search: &Search,
    starter: Side,
    rng: &mut ChaCha8Rng,
    choose: &mut Chooser,
) -> Result<(Outcome, bool), EvalError> {
    let variant = search.variant;
    let mut board = Board::from_position(&Position::start(variant, Side::White), starter);
    let mut mover = starter;
    let mut plays = Vec::with_capacity(64);
    with_scratch(|sc| {
        for _ in 0..MAX_GAME_PLIES {
            plays.clear();
            generate_positions(variant, &board, roll(rng), &mut plays);
            let i = choose(sc, mover, &plays)?;
            if let Some(o) = play_outcome(variant, &plays[i]) {
                return Ok((absolute(o, true, mover), false));
            }
            board = plays[i].mirror(variant);
            mover = mover.opponent();
            if let Some((won, o)) = board.game_over_for_mover(variant) {
                return Ok((absolute(o, won, mover), false));
            }
        }
        // Cut: an end drawn from the mover's 0-ply probabilities.
        let p = search.evaluate(sc, &board, 0)?;
        let lose = 1.0 - p.win - p.draw;
        let ends = [
            (p.win - p.win_mars, GameEnd::WinSingle),
            (p.win_mars, GameEnd::WinMars),
            (lose - p.lose_mars, GameEnd::LoseSingle),
            (p.lose_mars, GameEnd::LoseMars),
        ];
        let mut u: f32 = rng.random();
        // What is left after the four (rounding, or a draw) is a draw in Plakoto only.
        let mut end = match variant {
            Variant::Plakoto => GameEnd::Draw,
            _ => GameEnd::LoseSingle,
        };
        for (q, e) in ends {
            if u < q {
                end = e;
                break;
            }
            u -= q;
        }
        let (winner, points, reason) = match end {
            GameEnd::WinSingle => (mover, 1, OutcomeReason::BoreOff),
            GameEnd::WinMars => (mover, 2, OutcomeReason::Mars),
            GameEnd::LoseSingle => (mover.opponent(), 1, OutcomeReason::BoreOff),
            GameEnd::LoseMars => (mover.opponent(), 2, OutcomeReason::Mars),
            GameEnd::Draw => return Ok((RelOutcome::Draw.to_outcome(mover), true)),
        };
        let outcome = Outcome {
            winner: Some(winner),
            points,
            reason,
        };
        Ok((outcome, true))
    })
}

/// Plays the match from `start` to its end with the engine against itself: the
/// winner, and the games counted.
fn play_match(
    engine: &Engine,
    start: MatchState,
    rng: &mut ChaCha8Rng,
) -> Result<(Side, Counts), EvalError> {
    play_match_with(engine, start, rng, None, &mut |_, search, sc, _, plays| {
        Ok(search.best_play(sc, plays, 0)?.0)
    })
}

/// Plays the match from `start` to its end, each turn's play made by `choose`: the
/// winner, and the games counted. The opening rolls and the dice come from `rng`;
/// with `per_game_seed`, `rng` is first reseeded at the start of each game with
/// ChaCha8 of `mix(seed ^ mix(games played))`, so that game `k` of two matches of
/// the same seed rolls the same dice whatever happened before it (duplicate dice).
pub(super) fn play_match_with(
    engine: &Engine,
    start: MatchState,
    rng: &mut ChaCha8Rng,
    per_game_seed: Option<u64>,
    choose: &mut MatchChooser,
) -> Result<(Side, Counts), EvalError> {
    let mut m = start;
    let mut counts = Counts::default();
    loop {
        if let Some(w) = m.winner {
            return Ok((w, counts));
        }
        if let Some(seed) = per_game_seed {
            *rng = ChaCha8Rng::seed_from_u64(mix(seed ^ mix(m.games_played as u64)));
        }
        let starter = m.starter.unwrap_or_else(|| opening_roll(rng));
        let search = engine.search(m.variant, StopWhen::default());
        let game = MatchState {
            starter: Some(starter),
            ..m
        };
        let (outcome, cut) = play_game_with(&search, starter, rng, &mut |sc, mover, plays| {
            choose(&game, &search, sc, mover, plays)
        })?;
        counts.games += 1;
        counts.draws += outcome.winner.is_none() as u64;
        counts.cut += cut as u64;
        m = m.advance(&outcome)?;
    }
}

/// Simulates `cfg.matches` matches from each of `points` and compares White's share
/// of wins with the table's chance; `progress(points done)` after each point.
/// Errors: field `matches` for 0; a state the table does not cover (as
/// [`MatchEquityTable::mwc_match`]); [`EvalError::Unavailable`] without a static
/// evaluator for a variant.
pub fn check(
    engine: &Engine,
    table: &MatchEquityTable,
    points: &[MatchState],
    cfg: &CheckConfig,
    progress: &mut dyn FnMut(usize),
) -> Result<Vec<PointResult>, EvalError> {
    if cfg.matches == 0 {
        return Err(RulesError::invalid("matches", "at least 1 match per score").into());
    }
    let threads = match cfg.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .clamp(1, cfg.matches as usize);
    let mut out = Vec::with_capacity(points.len());
    for (k, &state) in points.iter().enumerate() {
        let expected = table.mwc_match(&state, Side::White)?;
        let per_thread = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    s.spawn(move || -> Result<(u32, Counts), EvalError> {
                        let mut wins = 0;
                        let mut c = Counts::default();
                        for i in (t as u32..cfg.matches).step_by(threads) {
                            let seed = mix(cfg.seed ^ mix(((k as u64) << 32) | i as u64));
                            let mut rng = ChaCha8Rng::seed_from_u64(seed);
                            let (w, g) = play_match(engine, state, &mut rng)?;
                            wins += (w == Side::White) as u32;
                            c.games += g.games;
                            c.draws += g.draws;
                            c.cut += g.cut;
                        }
                        Ok((wins, c))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("worker panicked"))
                .collect::<Result<Vec<_>, _>>()
        })?;
        let mut r = PointResult {
            state,
            table: expected,
            matches: cfg.matches,
            wins: 0,
            games: 0,
            draws: 0,
            cut: 0,
        };
        for (w, c) in per_thread {
            r.wins += w;
            r.games += c.games;
            r.draws += c.draws;
            r.cut += c.cut;
        }
        out.push(r);
        progress(k + 1);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matchequity::Starter;

    #[test]
    fn standard_points_cover_every_variant_and_starter_and_the_table() {
        let pts = standard_points();
        let t = MatchEquityTable::builtin();
        for v in Variant::ALL {
            let of_v: Vec<_> = pts.iter().filter(|p| p.variant == v).collect();
            assert!(of_v.len() >= 10, "{v}: {}", of_v.len());
            for s in [None, Some(Side::White), Some(Side::Black)] {
                assert!(of_v.iter().any(|p| p.starter == s), "{v} {s:?}");
            }
        }
        for p in &pts {
            t.mwc_match(p, Side::White).unwrap();
        }
    }

    #[test]
    fn matches_are_deterministic_and_counted() {
        let engine = Engine::load_default();
        let t = MatchEquityTable::builtin();
        let m = |length, score, variant, starter| MatchState {
            length,
            score,
            variant,
            starter,
            games_played: 0,
            winner: None,
        };
        let points = [
            // A 1-point Portes match is one game; 1-away against 2 at Fevga, one or
            // two games (a single loss leaves 1-away each at Portes).
            m(1, [0, 0], Variant::Portes, None),
            m(2, [1, 0], Variant::Fevga, Some(Side::Black)),
        ];
        let run = |threads| {
            let cfg = CheckConfig {
                matches: 6,
                seed: 3,
                threads,
            };
            check(&engine, t, &points, &cfg, &mut |_| {}).unwrap()
        };
        let one = run(1);
        assert_eq!(one, run(2));
        assert_eq!(one[0].games, 6);
        assert!((6..=12).contains(&one[1].games), "{:?}", one[1]);
        assert_eq!(
            one[0].table,
            t.mwc(1, [0, 0], Variant::Portes, Starter::OpeningRoll)
                .unwrap()
        );
        assert!(one
            .iter()
            .all(|r| r.cut == 0 && r.draws == 0 && r.matches == 6));
        let cfg = CheckConfig {
            matches: 0,
            seed: 0,
            threads: 1,
        };
        assert!(matches!(
            check(&engine, t, &points, &cfg, &mut |_| {}),
            Err(EvalError::Rules(RulesError::Invalid { ref field, .. })) if field == "matches"
        ));
    }

    #[test]
    fn absolute_outcomes() {
        let win = RelOutcome::Win {
            points: 2,
            reason: OutcomeReason::Mars,
        };
        assert_eq!(absolute(win, true, Side::Black).winner, Some(Side::Black));
        assert_eq!(absolute(win, false, Side::Black).winner, Some(Side::White));
        assert_eq!(absolute(win, false, Side::Black).points, 2);
        assert_eq!(absolute(RelOutcome::Draw, false, Side::Black).winner, None);
    }
}
