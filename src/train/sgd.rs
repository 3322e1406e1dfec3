//! Training side of [`Net`]: random initialisation and the gradient steps on the
//! cross-entropy of the sigmoid outputs: plain SGD, one position at a time
//! ([`Net::train`]), or minibatch Adam ([`Adam`], Kingma & Ba 2015, "Adam: a method
//! for stochastic optimization"). The runtime forward pass and the file format stay in
//! [`crate::eval::net`].

use crate::eval::inputs::{InputSet, SparseInputs};
use crate::eval::kernels::{dot, sigmoid};
use crate::eval::net::{Net, MAX_HIDDEN, OUTPUTS};
use crate::rules::Variant;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

impl Net {
    /// A fresh net reading `input_set` with small random weights (He-style for the
    /// ~40 active inputs), deterministic from `seed`. Panics when `hidden` is 0 or
    /// above [`MAX_HIDDEN`].
    pub fn new_random(variant: Variant, input_set: InputSet, hidden: usize, seed: u64) -> Net {
        assert!(
            (1..=MAX_HIDDEN).contains(&hidden),
            "hidden must be 1..=MAX_HIDDEN"
        );
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
            first: Default::default(),
        }
    }

    /// The same net reading `input_set` with `hidden` units: the inputs it has keep
    /// their weights (V1 inputs, then its features of each side), new inputs start at
    /// weight 0, new hidden units get small random input weights (from `seed`) and
    /// output weights 0. So the widened net computes exactly what this one does, and a
    /// fit goes on from there (a warm start of a v2 net from a v1 net). Panics when
    /// `input_set` has fewer features or `hidden` is smaller or above [`MAX_HIDDEN`].
    pub fn widen(&self, input_set: InputSet, hidden: usize, seed: u64) -> Net {
        let (k0, k1) = (self.input_set.features(), input_set.features());
        assert!(k1 >= k0, "cannot drop features");
        assert!(
            (self.hidden..=MAX_HIDDEN).contains(&hidden),
            "hidden must not shrink"
        );
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let base = crate::eval::inputs::num_inputs(self.variant);
        let n1 = input_set.count(self.variant);
        let (h0, h1) = (self.hidden, hidden);
        let a1 = 0.1 * (6.0f32 / 40.0).sqrt();
        let mut w1 = vec![0.0f32; n1 * h1];
        for (j, row) in w1.chunks_exact_mut(h1).enumerate() {
            // The old input of new input j, if any.
            let old = if j < base {
                Some(j)
            } else if j < base + k1 {
                (j - base < k0).then_some(j)
            } else {
                let f = j - base - k1;
                (f < k0).then_some(base + k0 + f)
            };
            if let Some(o) = old {
                row[..h0].copy_from_slice(&self.w1[o * h0..(o + 1) * h0]);
            }
            for w in &mut row[h0..] {
                *w = rng.random_range(-a1..a1);
            }
        }
        let mut b1 = self.b1.clone();
        b1.resize(h1, 0.0);
        let mut w2 = vec![0.0f32; OUTPUTS * h1];
        for k in 0..OUTPUTS {
            w2[k * h1..k * h1 + h0].copy_from_slice(&self.w2[k * h0..(k + 1) * h0]);
        }
        Net {
            variant: self.variant,
            input_set,
            hidden: h1,
            w1,
            b1,
            w2,
            b2: self.b2,
            games: self.games,
            first: Default::default(),
        }
    }

    /// The forward pass of one position and the descent directions of its
    /// cross-entropy against `target` (the draw target is ignored outside Plakoto):
    /// the outputs' `e = target − y` and the hidden units' `dh` (through the ReLU).
    fn backprop(&self, x: &SparseInputs, target: &[f32; OUTPUTS]) -> Backprop {
        let hn = self.hidden;
        let mut pre = [0.0f32; MAX_HIDDEN];
        let mut g = Backprop {
            act: [0.0; MAX_HIDDEN],
            y: [0.0; OUTPUTS],
            e: [0.0; OUTPUTS],
            dh: [0.0; MAX_HIDDEN],
        };
        self.hidden_pre(x, &mut pre[..hn]);
        for (a, &p) in g.act[..hn].iter_mut().zip(&pre[..hn]) {
            *a = p.max(0.0);
        }
        for (k, (y, e)) in g.y.iter_mut().zip(&mut g.e).enumerate() {
            let w = &self.w2[k * hn..(k + 1) * hn];
            *y = sigmoid(self.b2[k] + dot(w, &g.act[..hn]));
            *e = target[k] - *y;
        }
        if self.variant != Variant::Plakoto {
            g.e[3] = 0.0;
        }
        for (k, &ek) in g.e.iter().enumerate() {
            let w = &self.w2[k * hn..(k + 1) * hn];
            for (d, &wk) in g.dh[..hn].iter_mut().zip(w) {
                *d += ek * wk;
            }
        }
        for (d, &p) in g.dh[..hn].iter_mut().zip(&pre[..hn]) {
            if p <= 0.0 {
                *d = 0.0;
            }
        }
        g
    }

    /// One stochastic gradient step of the cross-entropy between the sigmoid outputs
    /// and `target` (each in `[0, 1]`; the draw target is ignored outside Plakoto),
    /// with step size `alpha`. Returns the outputs before the step.
    pub fn train(&mut self, x: &SparseInputs, target: &[f32; OUTPUTS], alpha: f32) -> [f32; 4] {
        let hn = self.hidden;
        let Backprop { act, y, e, mut dh } = self.backprop(x, target);
        for d in &mut dh[..hn] {
            *d *= alpha;
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
        self.weights_changed();
        y
    }
}

/// What [`Net::backprop`] gives for one position.
struct Backprop {
    /// Hidden activations (the first `hidden`).
    act: [f32; MAX_HIDDEN],
    /// Outputs.
    y: [f32; OUTPUTS],
    /// `target − y` (0 for the draw outside Plakoto).
    e: [f32; OUTPUTS],
    /// Descent direction of each hidden unit's sum, 0 where the ReLU is off.
    dh: [f32; MAX_HIDDEN],
}

/// Minibatch Adam for one [`Net`] (Kingma & Ba 2015): the summed descent directions
/// of the positions of the current batch, and the moment estimates of every weight.
/// The weights are taken in the order `w1`, `b1`, `w2`, `b2` (the [`Net`] fields).
/// Built for one net's shape by [`Adam::new`]; [`Net::accumulate`] adds a position,
/// [`Net::adam_step`] applies the batch's mean and starts the next batch.
#[derive(Clone, Debug)]
pub struct Adam {
    /// Σ over the batch of `−∂loss/∂weight`, one per weight.
    sum: Vec<f32>,
    /// First moment (mean) estimate.
    m: Vec<f32>,
    /// Second moment (uncentred variance) estimate.
    v: Vec<f32>,
    /// Steps taken (for the bias correction).
    t: i32,
    /// Positions summed into the current batch.
    pub count: usize,
}

/// Adam's decay rates and ε (the paper's defaults).
const BETA1: f32 = 0.9;
const BETA2: f32 = 0.999;
const EPSILON: f32 = 1e-8;

impl Adam {
    /// Empty sums and moments for `net`'s shape.
    pub fn new(net: &Net) -> Adam {
        let n = net.floats();
        Adam {
            sum: vec![0.0; n],
            m: vec![0.0; n],
            v: vec![0.0; n],
            t: 0,
            count: 0,
        }
    }
}

impl Net {
    /// Adds `−∂loss/∂weight` of one position (the cross-entropy of each output against
    /// `target`, as in [`Net::train`]; the draw target is ignored outside Plakoto) to
    /// `adam`'s batch. The weights do not change. Returns the outputs. Panics when
    /// `adam` was built for another shape.
    pub fn accumulate(
        &self,
        x: &SparseInputs,
        target: &[f32; OUTPUTS],
        adam: &mut Adam,
    ) -> [f32; 4] {
        let hn = self.hidden;
        let (nw1, nb1) = (self.w1.len(), self.b1.len());
        assert_eq!(adam.sum.len(), self.floats());
        let Backprop { act, y, e, dh } = self.backprop(x, target);
        let (g_w1, rest) = adam.sum.split_at_mut(nw1);
        let (g_b1, rest) = rest.split_at_mut(nb1);
        let (g_w2, g_b2) = rest.split_at_mut(OUTPUTS * hn);
        for (k, &ek) in e.iter().enumerate() {
            g_b2[k] += ek;
            for (g, &a) in g_w2[k * hn..(k + 1) * hn].iter_mut().zip(&act[..hn]) {
                *g += ek * a;
            }
        }
        for (g, &d) in g_b1.iter_mut().zip(&dh[..hn]) {
            *g += d;
        }
        for (j, v) in x.iter() {
            for (g, &d) in g_w1[j * hn..(j + 1) * hn].iter_mut().zip(&dh[..hn]) {
                *g += v * d;
            }
        }
        adam.count += 1;
        y
    }

    /// One Adam step with step size `alpha` along the mean of `adam`'s batch, then an
    /// empty batch. Nothing happens for an empty batch.
    pub fn adam_step(&mut self, adam: &mut Adam, alpha: f32) {
        if adam.count == 0 {
            return;
        }
        adam.t += 1;
        let scale = 1.0 / adam.count as f32;
        let c1 = 1.0 - BETA1.powi(adam.t);
        let c2 = 1.0 - BETA2.powi(adam.t);
        let step = alpha * c2.sqrt() / c1;
        let weights = self
            .w1
            .iter_mut()
            .chain(self.b1.iter_mut())
            .chain(self.w2.iter_mut())
            .chain(self.b2.iter_mut());
        for (((w, s), m), v) in weights
            .zip(adam.sum.iter_mut())
            .zip(adam.m.iter_mut())
            .zip(adam.v.iter_mut())
        {
            let g = *s * scale;
            *s = 0.0;
            *m = BETA1 * *m + (1.0 - BETA1) * g;
            *v = BETA2 * *v + (1.0 - BETA2) * g * g;
            *w += step * *m / (v.sqrt() + EPSILON);
        }
        adam.count = 0;
        self.weights_changed();
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

    #[test]
    fn adam_moves_outputs_towards_target() {
        let mut net = Net::new_random(Variant::Plakoto, InputSet::V2, 16, 3);
        let (mut x, mut x2) = (SparseInputs::default(), SparseInputs::default());
        let b = start(Variant::Plakoto);
        let mut after_65 = Vec::new();
        crate::rules::movegen::generate_positions(
            Variant::Plakoto,
            &b,
            crate::rules::Dice::parse("65").unwrap(),
            &mut after_65,
        );
        net.encode(&b, &mut x);
        net.encode(&after_65[0], &mut x2);
        let (t1, t2) = ([0.9, 0.3, 0.05, 0.02], [0.2, 0.01, 0.1, 0.0]);
        let mut adam = Adam::new(&net);
        let before = (net.forward(&x), net.forward(&x2));
        for _ in 0..1000 {
            assert_eq!(net.accumulate(&x, &t1, &mut adam), net.forward(&x));
            net.accumulate(&x2, &t2, &mut adam);
            assert_eq!(adam.count, 2);
            net.adam_step(&mut adam, 0.01);
            assert_eq!(adam.count, 0);
        }
        let after = (net.forward(&x), net.forward(&x2));
        for k in 0..4 {
            assert!((after.0[k] - t1[k]).abs() < (before.0[k] - t1[k]).abs().max(0.005));
            assert!((after.0[k] - t1[k]).abs() < 0.02, "{k}: {after:?}");
            assert!((after.1[k] - t2[k]).abs() < 0.02, "{k}: {after:?}");
        }
        // An empty batch changes nothing.
        let w = net.w1.clone();
        net.adam_step(&mut adam, 0.01);
        assert_eq!(net.w1, w);
    }

    #[test]
    fn widened_net_computes_the_same() {
        for v in Variant::ALL {
            let net = Net::new_random(v, InputSet::V1, 24, 4);
            let b = start(v);
            let mut x = SparseInputs::default();
            for (set, h) in [(InputSet::V1, 24), (InputSet::V2, 40)] {
                let wide = net.widen(set, h, 9);
                assert_eq!(
                    (wide.input_set, wide.hidden, wide.inputs()),
                    (set, h, set.count(v))
                );
                let mut x0 = SparseInputs::default();
                net.encode(&b, &mut x0);
                wide.encode(&b, &mut x);
                let (y0, y1) = (net.forward(&x0), wide.forward(&x));
                for k in 0..OUTPUTS {
                    assert!((y0[k] - y1[k]).abs() < 1e-6, "{v} {set:?}: {y0:?} {y1:?}");
                }
            }
        }
    }
}
