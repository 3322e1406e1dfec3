//! Training side of [`Net`]: random initialisation and the stochastic gradient step
//! (cross-entropy of the sigmoid outputs, plain SGD). The runtime forward pass and the
//! file format stay in [`crate::eval::net`].

use crate::eval::inputs::{InputSet, SparseInputs};
use crate::eval::net::{dot, sigmoid, Net, MAX_HIDDEN, OUTPUTS};
use crate::rules::Variant;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

impl Net {
    /// A fresh net reading `input_set` with small random weights (He-style for the
    /// ~40 active inputs), deterministic from `seed`. Panics when `hidden` is 0 or
    /// above [`MAX_HIDDEN`].
    pub fn new_random(variant: Variant, input_set: InputSet, hidden: usize, seed: u64) -> Net {
        assert!((1..=MAX_HIDDEN).contains(&hidden), "hidden must be 1..=256");
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let n = input_set.count(variant);
        let a1 = (6.0f32 / 40.0).sqrt();
        let a2 = (6.0f32 / hidden as f32).sqrt() * 0.5;
        Net {
            variant,
            input_set,
            hidden,
            w1: (0..n * hidden).map(|_| rng.random_range(-a1..a1)).collect(),
            b1: vec![0.0; hidden],
            w2: (0..OUTPUTS * hidden)
                .map(|_| rng.random_range(-a2..a2))
                .collect(),
            b2: [0.0, -2.0, -2.0, -4.0],
            games: 0,
        }
    }

    /// One stochastic gradient step of the cross-entropy between the sigmoid outputs
    /// and `target` (each in `[0, 1]`; the draw target is ignored outside Plakoto),
    /// with step size `alpha`. Returns the outputs before the step.
    pub fn train(&mut self, x: &SparseInputs, target: &[f32; OUTPUTS], alpha: f32) -> [f32; 4] {
        let hn = self.hidden;
        let mut pre = [0.0f32; MAX_HIDDEN];
        let mut act = [0.0f32; MAX_HIDDEN];
        self.hidden_pre(x, &mut pre[..hn]);
        for (a, &p) in act[..hn].iter_mut().zip(&pre[..hn]) {
            *a = p.max(0.0);
        }
        let mut y = [0.0; OUTPUTS];
        let mut e = [0.0; OUTPUTS];
        for k in 0..OUTPUTS {
            let w = &self.w2[k * hn..(k + 1) * hn];
            y[k] = sigmoid(self.b2[k] + dot(w, &act[..hn]));
            e[k] = target[k] - y[k];
        }
        if self.variant != Variant::Plakoto {
            e[3] = 0.0;
        }
        // Back-propagate through the old output weights.
        let mut dh = [0.0f32; MAX_HIDDEN];
        for (k, &ek) in e.iter().enumerate() {
            let w = &self.w2[k * hn..(k + 1) * hn];
            for (d, &wk) in dh[..hn].iter_mut().zip(w) {
                *d += ek * wk;
            }
        }
        for (d, &p) in dh[..hn].iter_mut().zip(&pre[..hn]) {
            *d = if p > 0.0 { *d * alpha } else { 0.0 };
        }
        for (k, &ek) in e.iter().enumerate() {
            let g = alpha * ek;
            self.b2[k] += g;
            let w = &mut self.w2[k * hn..(k + 1) * hn];
            for (wk, &a) in w.iter_mut().zip(&act[..hn]) {
                *wk += g * a;
            }
        }
        for (b, &d) in self.b1.iter_mut().zip(&dh[..hn]) {
            *b += d;
        }
        for (j, v) in x.iter() {
            let col = &mut self.w1[j * hn..(j + 1) * hn];
            for (w, &d) in col.iter_mut().zip(&dh[..hn]) {
                *w += v * d;
            }
        }
        y
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::board::Board;
    use crate::rules::{Position, Side};

    fn start(v: Variant) -> Board {
        Board::from_position(&Position::start(v, Side::White), Side::White)
    }

    #[test]
    fn training_moves_outputs_towards_target() {
        let mut net = Net::new_random(Variant::Plakoto, InputSet::V2, 16, 3);
        let mut x = SparseInputs::default();
        net.encode(&start(Variant::Plakoto), &mut x);
        let target = [0.9, 0.3, 0.05, 0.02];
        let before = net.forward(&x);
        for _ in 0..200 {
            net.train(&x, &target, 0.05);
        }
        let after = net.forward(&x);
        for k in 0..4 {
            assert!((after[k] - target[k]).abs() < (before[k] - target[k]).abs());
            assert!((after[k] - target[k]).abs() < 0.02, "{k}: {after:?}");
        }
    }
}
