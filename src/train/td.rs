//! TD(λ) self-play training of a [`Net`] (Tesauro, "Practical issues in temporal
//! difference learning", 1992; "Temporal difference learning and TD-Gammon", 1995),
//! and quick matches between policies to measure progress.
//!
//! One game: from the variant's start position (R1; the opening roll's dice are not
//! played, R2, so the first mover simply rolls), the side to move rolls,
//! [`generate_positions`] gives the board after every legal play, and the net picks the play whose resulting board is best
//! for it at 0 ply: the board after the play is mirrored (the opponent to move), the
//! net evaluates it, the result is flipped back, and plays are ranked by **Tavli
//! equity** ([`Probabilities::equity`]: a mars or a mother win counts 2). A play that
//! ends the game is valued by its outcome (R5.5, R7).
//!
//! Learning uses the offline λ-return form of TD(λ): with `v_t` the chosen value
//! after the mover's play at ply `t` (mover's view) and `G_T-1 = v_T-1` (the terminal
//! reward), `G_t = (1 − λ)·v_t + λ·flip(G_t+1)`, where `flip` turns the next mover's
//! view into this mover's (the board is always "side to move", so one net serves both
//! sides). After the game every visited board `s_t` is trained towards `G_t` with the
//! cross-entropy gradient of the sigmoid outputs ([`Net::train`]).

use crate::eval::inputs::SparseInputs;
use crate::eval::net::{to_probabilities, Net, OUTPUTS};
use crate::eval::{Evaluator, Probabilities};
use crate::rules::board::{Board, RelOutcome};
use crate::rules::movegen::{generate_positions, play_outcome, PlayResult};
use crate::rules::{Dice, Position, Side, Variant};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;

/// A game longer than this many plies is abandoned (never seen in practice).
pub const MAX_PLIES: usize = 5000;

/// The start board of `variant` for the side to move (both sides are symmetric).
pub fn start_board(variant: Variant) -> Board {
    Board::from_position(&Position::start(variant, Side::White), Side::White)
}

/// Rolls two dice.
pub fn roll(rng: &mut impl Rng) -> Dice {
    Dice::new(rng.random_range(1..=6), rng.random_range(1..=6)).expect("dice in 1..=6")
}

/// Target vector `[win, win_mars, lose_mars, draw]` of a finished game, mover's view.
pub fn outcome_vector(o: RelOutcome) -> [f32; OUTPUTS] {
    match o {
        RelOutcome::Win { points: 2, .. } => [1.0, 1.0, 0.0, 0.0],
        RelOutcome::Win { .. } => [1.0, 0.0, 0.0, 0.0],
        RelOutcome::Draw => [0.0, 0.0, 0.0, 1.0],
    }
}

/// Points of a finished game for the mover: 1, 2 or 0 (draw).
pub fn outcome_points(o: RelOutcome) -> i32 {
    match o {
        RelOutcome::Win { points, .. } => points as i32,
        RelOutcome::Draw => 0,
    }
}

/// The output vector seen by the other side: `[1 − win − draw, lose_mars, win_mars,
/// draw]`, clamped to `[0, 1]`.
pub fn flip_vector(y: [f32; OUTPUTS]) -> [f32; OUTPUTS] {
    [(1.0 - y[0] - y[3]).clamp(0.0, 1.0), y[2], y[1], y[3]]
}

/// Chooses one of the legal plays of a board.
pub trait Policy {
    /// Index into `plays`, the resulting boards of the legal plays of `board` from
    /// [`generate_positions`] (never empty: a pass is the board itself).
    fn choose(
        &self,
        variant: Variant,
        board: &Board,
        plays: &[Board],
        rng: &mut ChaCha8Rng,
    ) -> usize;
    /// A name for reports.
    fn label(&self, variant: Variant) -> String;
}

/// Uniformly random legal plays.
pub struct RandomPolicy;

impl Policy for RandomPolicy {
    fn choose(&self, _: Variant, _: &Board, plays: &[Board], rng: &mut ChaCha8Rng) -> usize {
        rng.random_range(0..plays.len())
    }
    fn label(&self, _: Variant) -> String {
        "random".into()
    }
}

/// Greedy 0-ply play by any [`Evaluator`], ranking by Tavli equity (first best wins
/// ties).
pub struct GreedyPolicy(pub Arc<dyn Evaluator>);

/// Mover's equity after `play` (from either generation path) under `eval`.
pub fn equity_after<P: PlayResult>(eval: &dyn Evaluator, variant: Variant, play: &P) -> f32 {
    match play.outcome(variant) {
        Some(o) => outcome_points(o) as f32,
        None => eval
            .eval_board(variant, &play.board().mirror(variant))
            .flip()
            .equity(),
    }
}

impl Policy for GreedyPolicy {
    fn choose(&self, variant: Variant, _: &Board, plays: &[Board], _: &mut ChaCha8Rng) -> usize {
        let mut best = (f32::NEG_INFINITY, 0);
        for (i, p) in plays.iter().enumerate() {
            let e = equity_after(self.0.as_ref(), variant, p);
            if e > best.0 {
                best = (e, i);
            }
        }
        best.1
    }
    fn label(&self, variant: Variant) -> String {
        self.0.name(variant)
    }
}

/// Tesauro's pubeval move choice ([`crate::eval::pubeval::best_play`], Portes).
pub struct PubEvalPolicy;

impl Policy for PubEvalPolicy {
    fn choose(&self, _: Variant, board: &Board, plays: &[Board], _: &mut ChaCha8Rng) -> usize {
        crate::eval::pubeval::best_play(board, plays)
    }
    fn label(&self, _: Variant) -> String {
        "pubeval".into()
    }
}

/// Result of [`play_match`], from player `a`'s view.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MatchResult {
    /// Games played.
    pub games: u32,
    /// Net points won by `a` (wins minus losses, marses counting 2).
    pub points: i64,
    /// Games `a` won / lost / drew.
    pub wins: u32,
    pub losses: u32,
    pub draws: u32,
    /// Sum of squared per-game points (for the standard error).
    pub sum_sq: i64,
}

impl MatchResult {
    /// Mean points per game for `a`.
    pub fn ppg(&self) -> f64 {
        self.points as f64 / self.games.max(1) as f64
    }
    /// Standard error of [`ppg`](Self::ppg).
    pub fn stderr(&self) -> f64 {
        let n = self.games.max(2) as f64;
        let m = self.ppg();
        ((self.sum_sq as f64 / n - m * m).max(0.0) / (n - 1.0)).sqrt()
    }
}

/// Plays one game between `first` (moves first) and `second` with the dice from
/// `dice_rng`. Returns the points for `first` (0 for a draw or an abandoned game).
pub fn play_game(
    variant: Variant,
    first: &dyn Policy,
    second: &dyn Policy,
    dice_rng: &mut ChaCha8Rng,
    policy_rng: &mut ChaCha8Rng,
    plays: &mut Vec<Board>,
) -> i32 {
    let mut board = start_board(variant);
    for ply in 0..MAX_PLIES {
        let dice = roll(dice_rng);
        plays.clear();
        generate_positions(variant, &board, dice, plays);
        let mover = if ply % 2 == 0 { first } else { second };
        let chosen = plays[mover.choose(variant, &board, plays, policy_rng)];
        if let Some(o) = play_outcome(variant, &chosen) {
            let pts = outcome_points(o);
            return if ply % 2 == 0 { pts } else { -pts };
        }
        board = chosen.mirror(variant);
    }
    0
}

/// Plays `games` games (rounded up to even) between `a` and `b`: game pairs share the
/// dice sequence with the first move swapped (variance reduction). Deterministic from
/// `seed`.
pub fn play_match(
    variant: Variant,
    a: &dyn Policy,
    b: &dyn Policy,
    games: u32,
    seed: u64,
) -> MatchResult {
    let mut r = MatchResult::default();
    let mut plays = Vec::with_capacity(256);
    let mut policy_rng = ChaCha8Rng::seed_from_u64(seed ^ 0x005e_ed0f_b1a5);
    for pair in 0..games.div_ceil(2) {
        let dice_seed = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ pair as u64;
        for a_first in [true, false] {
            let mut dice_rng = ChaCha8Rng::seed_from_u64(dice_seed);
            let pts = if a_first {
                play_game(variant, a, b, &mut dice_rng, &mut policy_rng, &mut plays)
            } else {
                -play_game(variant, b, a, &mut dice_rng, &mut policy_rng, &mut plays)
            };
            r.games += 1;
            r.points += pts as i64;
            r.sum_sq += (pts * pts) as i64;
            match pts.signum() {
                1 => r.wins += 1,
                -1 => r.losses += 1,
                _ => r.draws += 1,
            }
        }
    }
    r
}

/// Hyper-parameters of [`Trainer`].
#[derive(Clone, Copy, Debug)]
pub struct TdConfig {
    /// Step size of [`Net::train`].
    pub alpha: f32,
    /// λ of the λ-return, in `[0, 1]`.
    pub lambda: f32,
    /// Probability of a uniformly random play instead of the greedy one.
    pub epsilon: f32,
}

/// Statistics of one self-play game.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GameStats {
    /// Plies played.
    pub plies: usize,
    /// Points for the first mover (0 for a draw or an abandoned game).
    pub points_first: i32,
}

/// TD(λ) self-play trainer. Deterministic from the seed given to [`Trainer::new`].
pub struct Trainer {
    /// The net being trained.
    pub net: Net,
    /// Hyper-parameters (may be changed between games).
    pub cfg: TdConfig,
    rng: ChaCha8Rng,
    plays: Vec<Board>,
    states: Vec<SparseInputs>,
    values: Vec<[f32; OUTPUTS]>,
}

impl Trainer {
    /// A trainer for `net`; the random stream depends on `seed` and `net.games`, so a
    /// resumed run is deterministic too.
    pub fn new(net: Net, cfg: TdConfig, seed: u64) -> Trainer {
        let s = seed ^ net.games.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        Trainer {
            net,
            cfg,
            rng: ChaCha8Rng::seed_from_u64(s),
            plays: Vec::with_capacity(256),
            states: Vec::with_capacity(256),
            values: Vec::with_capacity(256),
        }
    }

    /// The mover's value vector after `play` (outcome, or the flipped net output of
    /// the mirrored board).
    #[inline]
    fn value_after(&self, play: &Board) -> [f32; OUTPUTS] {
        let v = self.net.variant;
        match play_outcome(v, play) {
            Some(o) => outcome_vector(o),
            None => flip_vector(self.net.eval_raw_f32(&play.mirror(v))),
        }
    }

    /// Plays one self-play game and trains on it.
    pub fn train_game(&mut self) -> GameStats {
        let variant = self.net.variant;
        let mut board = start_board(variant);
        self.states.clear();
        self.values.clear();
        let mut stats = GameStats::default();
        let mut finished = false;
        for ply in 0..MAX_PLIES {
            let dice = roll(&mut self.rng);
            self.plays.clear();
            generate_positions(variant, &board, dice, &mut self.plays);
            let mut best = (f32::NEG_INFINITY, 0, [0.0; OUTPUTS]);
            for (i, p) in self.plays.iter().enumerate() {
                let v = self.value_after(p);
                let e = to_probabilities(variant, v).equity();
                if e > best.0 {
                    best = (e, i, v);
                }
            }
            if self.cfg.epsilon > 0.0 && self.rng.random::<f32>() < self.cfg.epsilon {
                let i = self.rng.random_range(0..self.plays.len());
                best = (0.0, i, self.value_after(&self.plays[i]));
            }
            let chosen = self.plays[best.1];
            let mut x = SparseInputs::default();
            self.net.encode(&board, &mut x);
            self.states.push(x);
            self.values.push(best.2);
            stats.plies = ply + 1;
            if let Some(o) = play_outcome(variant, &chosen) {
                let pts = outcome_points(o);
                stats.points_first = if ply % 2 == 0 { pts } else { -pts };
                finished = true;
                break;
            }
            board = chosen.mirror(variant);
        }
        if finished {
            self.learn();
        }
        self.net.games += 1;
        stats
    }

    /// λ-returns backwards, then one gradient step per visited board.
    fn learn(&mut self) {
        let lambda = self.cfg.lambda;
        let n = self.values.len();
        let mut g = self.values[n - 1];
        let mut targets = vec![[0.0f32; OUTPUTS]; n];
        targets[n - 1] = g;
        for t in (0..n - 1).rev() {
            let next = flip_vector(g);
            let v = self.values[t];
            for k in 0..OUTPUTS {
                g[k] = (1.0 - lambda) * v[k] + lambda * next[k];
            }
            targets[t] = g;
        }
        for (x, target) in self.states.iter().zip(&targets) {
            self.net.train(x, target, self.cfg.alpha);
        }
    }
}

/// Probabilities of the net for the start position (a quick sanity figure).
pub fn start_probabilities(net: &Net) -> Probabilities {
    net.eval(&start_board(net.variant))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::inputs::InputSet;
    use crate::eval::net::NetEvaluator;

    #[test]
    fn flip_vector_is_an_involution_without_draws() {
        let y = [0.7, 0.2, 0.1, 0.0];
        let f = flip_vector(y);
        assert!((f[0] - 0.3).abs() < 1e-6);
        assert_eq!((f[1], f[2]), (0.1, 0.2));
        let back = flip_vector(f);
        for k in 0..4 {
            assert!((back[k] - y[k]).abs() < 1e-6);
        }
        let d = flip_vector([0.5, 0.1, 0.1, 0.2]);
        assert!((d[0] - 0.3).abs() < 1e-6);
        assert_eq!(d[3], 0.2);
    }

    #[test]
    fn random_match_is_deterministic_and_symmetric() {
        for v in Variant::ALL {
            let r1 = play_match(v, &RandomPolicy, &RandomPolicy, 20, 42);
            let r2 = play_match(v, &RandomPolicy, &RandomPolicy, 20, 42);
            assert_eq!(r1, r2);
            assert_eq!(r1.games, 20);
            assert_eq!(r1.wins + r1.losses + r1.draws, 20);
            assert!(r1.points.abs() <= 40);
        }
    }

    #[test]
    fn training_is_deterministic_and_changes_the_net() {
        for v in Variant::ALL {
            let cfg = TdConfig {
                alpha: 0.01,
                lambda: 0.7,
                epsilon: 0.0,
            };
            let net = Net::new_random(v, InputSet::V2, 8, 1);
            let mut t1 = Trainer::new(net.clone(), cfg, 5);
            let mut t2 = Trainer::new(net.clone(), cfg, 5);
            for _ in 0..3 {
                let s1 = t1.train_game();
                let s2 = t2.train_game();
                assert_eq!(s1, s2);
                assert!(s1.plies > 10, "{v}: {s1:?}");
            }
            assert_eq!(t1.net, t2.net);
            assert_eq!(t1.net.games, 3);
            assert_ne!(t1.net.w1, net.w1);
        }
    }

    #[test]
    fn embedded_nets_beat_random_play() {
        for v in Variant::ALL {
            if let Some(e) = crate::eval::net::load_default(v) {
                // A trained net beats random play by far (about +1.9 points a game).
                let r = play_match(v, &GreedyPolicy(e), &RandomPolicy, 20, 3);
                assert!(r.ppg() > 1.0, "{v}: {r:?}");
            }
        }
    }

    #[test]
    fn greedy_net_policy_plays_legal_games() {
        let e = Arc::new(NetEvaluator::single(
            2,
            Net::new_random(Variant::Fevga, InputSet::V2, 8, 9),
        ));
        let r = play_match(Variant::Fevga, &GreedyPolicy(e), &RandomPolicy, 4, 1);
        assert_eq!(r.games, 4);
        assert_eq!(r.wins + r.losses + r.draws, 4);
    }
}
