//! Seeded random-play games: reproducible corpora of positions for tests, regression
//! counts and benchmarks. Deterministic for a seed on every platform (ChaCha8).

use crate::rules::board::Board;
use crate::rules::movegen::{generate, RawPlay};
use crate::rules::{Dice, Position, Side, Variant};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A roll of two fair dice from `rng`.
pub fn roll(rng: &mut impl Rng) -> Dice {
    Dice::new(rng.random_range(1..=6), rng.random_range(1..=6)).expect("1..=6")
}

/// Plays uniformly random legal plays from the start of `variant` (White first) until
/// the game ends, calling `visit(position before the roll)` at every turn. Returns the
/// finished game's last position and its outcome. Games are capped at `max_turns`
/// turns (returns `None` for the outcome if the cap is hit).
pub fn random_game(
    variant: Variant,
    rng: &mut ChaCha8Rng,
    max_turns: usize,
    mut visit: impl FnMut(&Position),
) -> (Position, Option<crate::rules::Outcome>) {
    let mut pos = Position::start(variant, Side::White);
    let mut plays: Vec<RawPlay> = Vec::new();
    for _ in 0..max_turns {
        visit(&pos);
        let dice = roll(rng);
        let board = Board::from_position(&pos, pos.turn);
        plays.clear();
        generate(variant, &board, dice, &mut plays);
        let pick = &plays[rng.random_range(0..plays.len())];
        let mover = pos.turn;
        pos = pick.board.to_position(variant, mover, mover.opponent());
        if let Some(o) = pick.outcome {
            return (pos, Some(o.to_outcome(mover)));
        }
    }
    (pos, None)
}

/// `n` positions (side to move varies) collected from seeded random games of
/// `variant`, every position of each game in order, games played until `n` are found.
pub fn random_positions(variant: Variant, seed: u64, n: usize) -> Vec<Position> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        random_game(variant, &mut rng, 10_000, |p| {
            if out.len() < n {
                out.push(*p);
            }
        });
    }
    out
}
