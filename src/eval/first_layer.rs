//! The integer first layer that the evaluator runs (issue #10).
//!
//! Every input of the nets is an integer count over a fixed scale
//! ([`InputSet::scales`]: 1 for the unary and binary units, 2 for the fourth unary
//! unit, 15 for the borne-off counts, the feature scales). So the first layer can be
//! computed in integers: the weight `w` of an input of scale `s` becomes
//! `W = round(w / s · 2^shift)`, the bias `b` becomes `round(b · 2^shift)`, and a hidden
//! unit's pre-activation is `2^-shift · (B + Σ count · W)`, summed in `i32`.
//!
//! Integer sums are exact, so they do not depend on the order of the adds. That is
//! what lets a run of boards share work (`Chain`): the hidden sums of a board are
//! those of the previous board plus `(count − previous count) · W` over the inputs
//! whose counts differ (consecutive plays of one roll differ in about 14 of their 61
//! active inputs, docs/performance.md), and the result is the same bits as summing
//! from the bias. `shift` is the largest (at most 30) for which no board's sum can
//! leave `i32` (from the largest count of each input, [`InputSet::max_counts`]); the
//! arithmetic wraps, so partial sums may wrap as long as the final sum is in range.
//!
//! The output layer stays in `f32`: `2^-shift` is folded into its weights (a power of
//! two, so exact) and the hidden sums are converted to `f32` once.

use super::cpu::has_avx2;
use super::inputs::{Counts, InputSet, MAX_INPUTS};
use super::kernels::{sigmoid, MAX_HIDDEN, OUTPUTS};
use crate::rules::board::Board;
use crate::rules::Variant;

/// The largest number of fractional bits of the fixed point.
const MAX_SHIFT: i32 = 30;

/// A net's first layer in fixed point, and its output layer scaled to match.
#[derive(Clone, Debug)]
pub struct FirstLayer {
    /// The variant whose inputs it reads.
    variant: Variant,
    /// The encoding it reads.
    input_set: InputSet,
    /// Hidden units.
    hidden: usize,
    /// Inputs (`input_set.count(variant)`).
    inputs: usize,
    /// Fractional bits: a hidden sum `S` stands for `S · 2^-shift`.
    shift: i32,
    /// `w[j * hidden + h] = round(w1[j * hidden + h] / scale_j · 2^shift)`, in
    /// 64-byte blocks ([`FirstLayer::w`]).
    w: Vec<Block>,
    /// `round(b1[h] · 2^shift)`.
    b: Vec<i32>,
    /// `w2 · 2^-shift` (`OUTPUTS × hidden`).
    w2: Vec<f32>,
    /// The output biases.
    b2: [f32; OUTPUTS],
    /// Whether the draw output is computed (Plakoto: the only variant with draws,
    /// R5.5); elsewhere it is 0.
    draws: bool,
}

impl FirstLayer {
    /// The fixed-point form of a net's first layer, from its `f32` weights in the
    /// layout of [`super::net::Net`] (`w1[j * hidden + h]` for the
    /// `input_set.count(variant)` inputs `j`, `b1` of `hidden`, `w2[k * hidden + h]`
    /// and `b2` of the [`OUTPUTS`] outputs `k`); `None` when no shift keeps every sum
    /// in `i32` or a weight is not finite (first-layer weights of about 10^7 or more:
    /// no trained net comes near; [`super::net::Nets::from_bytes`] rejects such
    /// files).
    pub fn new(
        variant: Variant,
        input_set: InputSet,
        hidden: usize,
        w1: &[f32],
        b1: &[f32],
        w2: &[f32],
        b2: [f32; OUTPUTS],
    ) -> Option<FirstLayer> {
        let inputs = input_set.count(variant);
        let finite = |v: &[f32]| v.iter().all(|x| x.is_finite());
        if !(finite(w1) && finite(b1) && finite(w2) && finite(&b2)) {
            return None;
        }
        let scales = input_set.scales(variant);
        let max = input_set.max_counts(variant);
        let side = |j: usize| input_set.checker_side(variant, j);
        // The largest |sum| any board can give, unit by unit, for weights `w` (the
        // scaled weights in fixed point, or the float ones): each side's checker units
        // count at most its 15 checkers in all (`checker_side`), so they add at most
        // 15 times their largest weight; every other input at most its largest count
        // times its weight.
        let bound = |w: &dyn Fn(usize) -> f64, b: &dyn Fn(usize) -> f64| {
            (0..hidden)
                .map(|h| {
                    let (mut sides, mut s) = ([0f64; 2], b(h).abs());
                    for (j, &m) in max.iter().enumerate().take(inputs) {
                        let x = w(j * hidden + h).abs();
                        match side(j) {
                            Some(k) => sides[k] = sides[k].max(x),
                            None => s += x * m as f64,
                        }
                    }
                    s + 15.0 * (sides[0] + sides[1])
                })
                .fold(0.0, f64::max)
        };
        let unit = |k: usize| w1[k] as f64 / scales[k / hidden] as f64;
        let fixed = |shift: i32| {
            let f = (2.0f64).powi(shift);
            let w: Vec<f64> = (0..inputs * hidden)
                .map(|k| (unit(k) * f).round())
                .collect();
            let b: Vec<f64> = b1.iter().map(|&x| (x as f64 * f).round()).collect();
            // Exact in f64: integers far below 2^53.
            (bound(&|k| w[k], &|h| b[h]) <= i32::MAX as f64).then_some((w, b))
        };
        // The float bound gives the shift to within one (rounding moves each weight by
        // at most half a unit); the rounded weights are checked from one above it
        // down, so the shift is the largest that fits.
        let estimate = bound(&unit, &|h| b1[h] as f64);
        let start = if estimate > 0.0 {
            ((i32::MAX as f64 / estimate).log2().floor() as i32 + 1).clamp(0, MAX_SHIFT)
        } else {
            MAX_SHIFT
        };
        let (shift, (w, b)) = (0..=start).rev().find_map(|s| fixed(s).map(|q| (s, q)))?;
        let down = (2.0f32).powi(-shift);
        Some(FirstLayer {
            variant,
            input_set,
            hidden,
            inputs,
            shift,
            w: w.chunks(16)
                .map(|c| {
                    let mut b = Block([0; 16]);
                    for (x, &v) in b.0.iter_mut().zip(c) {
                        *x = v as i32;
                    }
                    b
                })
                .collect(),
            b: b.into_iter().map(|x| x as i32).collect(),
            w2: w2.iter().map(|&x| x * down).collect(),
            b2,
            draws: variant == Variant::Plakoto,
        })
    }

    /// The fixed-point weights, `inputs × hidden`, input-major. Stored in 64-byte
    /// aligned blocks, so that with 128, 256 or 512 hidden units every row starts on a cache line
    /// and no 64-byte load of the AVX-512 kernel straddles two.
    #[inline]
    fn w(&self) -> &[i32] {
        // SAFETY: `Block` is 16 `i32`s with no padding (`repr(C)`, size 64), so the
        // blocks are `16 · len` consecutive `i32`s; `inputs · hidden` of them are
        // the weights (the last block is padded with zeros).
        unsafe {
            std::slice::from_raw_parts(self.w.as_ptr() as *const i32, self.inputs * self.hidden)
        }
    }

    /// Fractional bits of the fixed point (22 to 24 for the committed nets).
    pub fn shift(&self) -> i32 {
        self.shift
    }

    /// The hidden sums of `counts`: `acc[..hidden] = B + Σ_j counts[j] · W_j`.
    #[inline]
    pub fn sums(&self, counts: &Counts, acc: &mut [i32]) {
        acc[..self.hidden].copy_from_slice(&self.b);
        add_changes(self.w(), self.hidden, self.inputs, counts, &ZERO, acc);
    }

    /// The hidden sums of `counts` from those of `prev` (`acc` holds them):
    /// `acc += Σ_j (counts[j] − prev[j]) · W_j`, the same bits as [`FirstLayer::sums`].
    #[inline]
    pub fn update(&self, counts: &Counts, prev: &Counts, acc: &mut [i32]) {
        add_changes(self.w(), self.hidden, self.inputs, counts, prev, acc);
    }

    /// The raw sigmoid outputs `[win, win_mars, lose_mars, draw]` of hidden sums
    /// (`acc[..hidden]`); `h` is scratch of at least `hidden` floats. Outside Plakoto
    /// the draw is 0 (its output is not computed: no draw is possible there, R5.5).
    #[inline]
    pub fn outputs(&self, acc: &[i32], h: &mut [f32]) -> [f32; OUTPUTS] {
        let h = &mut h[..self.hidden];
        for (x, &a) in h.iter_mut().zip(acc) {
            *x = a as f32;
        }
        if self.draws {
            super::kernels::outputs(&self.w2, &self.b2, h).map(sigmoid)
        } else {
            let z = super::kernels::outputs_first::<3>(&self.w2, &self.b2, h);
            [sigmoid(z[0]), sigmoid(z[1]), sigmoid(z[2]), 0.0]
        }
    }
}

/// 16 weights on a 64-byte boundary.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Block([i32; 16]);

const _: () = assert!(std::mem::size_of::<Block>() == 64);

/// No counts (the previous counts of a sum from the bias).
static ZERO: Counts = [0; MAX_INPUTS];

/// `acc[h] += Σ_{j < inputs, cur[j] != prev[j]} (cur[j] − prev[j]) · w[j · hidden + h]`,
/// in wrapping `i32` arithmetic.
#[inline]
fn add_changes(
    w: &[i32],
    hidden: usize,
    inputs: usize,
    cur: &Counts,
    prev: &Counts,
    acc: &mut [i32],
) {
    assert!(w.len() >= inputs * hidden && acc.len() >= hidden && inputs <= MAX_INPUTS);
    #[cfg(target_arch = "x86_64")]
    if has_avx2() && std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F, AVX2 and BMI1; shapes checked above.
        match hidden {
            128 => return unsafe { add_changes_avx512::<8, 1>(w, inputs, cur, prev, acc) },
            256 => return unsafe { add_changes_avx512::<16, 1>(w, inputs, cur, prev, acc) },
            512 => return unsafe { add_changes_avx512::<16, 2>(w, inputs, cur, prev, acc) },
            _ => {}
        }
    }
    #[cfg(target_arch = "x86_64")]
    if hidden.is_multiple_of(64) && has_avx2() {
        // SAFETY: the CPU has AVX2 and BMI1 (`has_avx2`); shapes checked above.
        return unsafe { add_changes_avx2_by64(w, hidden, inputs, cur, prev, acc) };
    }
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU has AVX2 (`has_avx2`).
        return unsafe { add_changes_avx2(w, hidden, inputs, cur, prev, acc) };
    }
    add_changes_any(w, hidden, inputs, cur, prev, acc)
}

/// Runs `$body` with `$j` and `$d = cur[j] − prev[j]` bound, for every input `j <
/// inputs` whose count changed, in increasing `j`: 16 counts compared at a time (two
/// mask bits per 16-bit lane; in the last 16, the lanes at or above `inputs` are
/// masked off, whatever they hold). A macro rather than a function taking a closure:
/// the body is then a plain loop body, and the AVX-512 kernel keeps its sums in
/// registers through it (with a closure it ran 6 % slower).
///
/// Use only inside an `unsafe` block of a function compiled with AVX2 and BMI1, with
/// `cur`, `prev`: `&Counts` and `inputs <= MAX_INPUTS` (asserted).
#[cfg(target_arch = "x86_64")]
macro_rules! for_each_change {
    ($cur:expr, $prev:expr, $inputs:expr, |$j:ident, $d:ident| $body:block) => {{
        const { assert!(MAX_INPUTS.is_multiple_of(16)) };
        let (cur, prev, inputs): (&Counts, &Counts, usize) = ($cur, $prev, $inputs);
        assert!(inputs <= MAX_INPUTS);
        for c in 0..inputs.div_ceil(16) {
            // `16 c + 16 <= MAX_INPUTS` (a multiple of 16), and so is every `j`.
            let x = _mm256_loadu_si256(cur.as_ptr().add(16 * c) as *const __m256i);
            let y = _mm256_loadu_si256(prev.as_ptr().add(16 * c) as *const __m256i);
            let mut m = !(_mm256_movemask_epi8(_mm256_cmpeq_epi16(x, y)) as u32);
            if 16 * c + 16 > inputs {
                m &= (1u32 << (2 * (inputs - 16 * c))) - 1;
            }
            while m != 0 {
                let lane = (m.trailing_zeros() / 2) as usize;
                m &= !(3 << (2 * lane));
                let $j = 16 * c + lane;
                let $d = *cur.get_unchecked($j) as i32 - *prev.get_unchecked($j) as i32;
                $body
            }
        }
    }};
}

/// [`add_changes`] for a multiple of 64 hidden units with AVX2: one pass over the
/// changed inputs per 64 units, each with 64 sums in eight 8-lane registers (AVX2 has
/// 16 registers: too few for 128 sums and a row).
///
/// # Safety
/// The CPU has AVX2 and BMI1; `hidden` is a multiple of 64, `w.len() >= inputs *
/// hidden`, `acc.len() >= hidden`, `inputs <= MAX_INPUTS`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1")]
unsafe fn add_changes_avx2_by64(
    w: &[i32],
    hidden: usize,
    inputs: usize,
    cur: &Counts,
    prev: &Counts,
    acc: &mut [i32],
) {
    use std::arch::x86_64::*;
    debug_assert!(hidden.is_multiple_of(64));
    // The changed inputs and their changes, found once for all passes.
    let (mut idx, mut delta) = ([0u16; MAX_INPUTS], [0i32; MAX_INPUTS]);
    let mut n = 0;
    // SAFETY (every access below): `n` < the number of inputs; rows `j < inputs` of
    // `w`, units `64 part..64 part + 64` (below `hidden`); the first `hidden` entries
    // of `acc` (the contract).
    unsafe {
        for_each_change!(cur, prev, inputs, |j, d| {
            *idx.get_unchecked_mut(n) = j as u16;
            *delta.get_unchecked_mut(n) = d;
            n += 1;
        });
        for part in 0..hidden / 64 {
            let ap = acc.as_mut_ptr().add(64 * part);
            let mut a = [_mm256_setzero_si256(); 8];
            for (k, ak) in a.iter_mut().enumerate() {
                *ak = _mm256_loadu_si256(ap.add(8 * k) as *const __m256i);
            }
            for (&j, &d) in idx[..n].iter().zip(&delta[..n]) {
                let row = w.as_ptr().add(j as usize * hidden + 64 * part);
                let r = |k: usize| _mm256_loadu_si256(row.add(8 * k) as *const __m256i);
                if d == 1 {
                    for (k, ak) in a.iter_mut().enumerate() {
                        *ak = _mm256_add_epi32(*ak, r(k));
                    }
                } else if d == -1 {
                    for (k, ak) in a.iter_mut().enumerate() {
                        *ak = _mm256_sub_epi32(*ak, r(k));
                    }
                } else {
                    let f = _mm256_set1_epi32(d);
                    for (k, ak) in a.iter_mut().enumerate() {
                        *ak = _mm256_add_epi32(*ak, _mm256_mullo_epi32(r(k), f));
                    }
                }
            }
            for (k, ak) in a.iter().enumerate() {
                _mm256_storeu_si256(ap.add(8 * k) as *mut __m256i, *ak);
            }
        }
    }
}

/// [`add_changes`] as plain loops (any hidden size, any CPU).
#[inline(always)]
fn add_changes_any(
    w: &[i32],
    hidden: usize,
    inputs: usize,
    cur: &Counts,
    prev: &Counts,
    acc: &mut [i32],
) {
    for j in 0..inputs {
        let d = cur[j] as i32 - prev[j] as i32;
        if d != 0 {
            let row = &w[j * hidden..(j + 1) * hidden];
            for (a, &x) in acc[..hidden].iter_mut().zip(row) {
                *a = a.wrapping_add(d.wrapping_mul(x));
            }
        }
    }
}

/// [`add_changes_any`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn add_changes_avx2(
    w: &[i32],
    hidden: usize,
    inputs: usize,
    cur: &Counts,
    prev: &Counts,
    acc: &mut [i32],
) {
    add_changes_any(w, hidden, inputs, cur, prev, acc)
}

/// [`add_changes`] for `16 K P` hidden units with AVX-512F (`K` = 8 or 16, `P` = 1
/// or 2: 128, 256 or 512 units): in each of `P` passes over `16 K` of the units their
/// sums stay in `K` 16-lane registers (of the 32) while 16 counts at a time are
/// compared with the previous ones and only the changed inputs' rows are read (a
/// change of ±1, most of them, adds or subtracts the row; others multiply it).
///
/// # Safety
/// The CPU has AVX-512F, AVX2 and BMI1; `w.len() >= inputs * 16 K P`, `acc.len() >=
/// 16 K P`, `inputs <= MAX_INPUTS`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,bmi1")]
unsafe fn add_changes_avx512<const K: usize, const P: usize>(
    w: &[i32],
    inputs: usize,
    cur: &Counts,
    prev: &Counts,
    acc: &mut [i32],
) {
    const { assert!((K == 8 || K == 16) && (P == 1 || P == 2)) };
    for part in 0..P {
        // SAFETY: the pass's first unit, `16 K part < 16 K P`, is inside every row of
        // `w` and inside `acc` (the contract); the CPU features are this function's.
        unsafe {
            let acc = acc.as_mut_ptr().add(16 * K * part);
            let w = w.as_ptr().add(16 * K * part);
            add_changes_avx512_part::<K, P>(w, inputs, cur, prev, acc);
        }
    }
}

/// One pass of [`add_changes_avx512`]: units `0..16 K` of rows `16 K P` long, from `w`
/// and `acc` at the pass's first unit.
///
/// # Safety
/// As [`add_changes_avx512`], with `w` and `acc` offset to the pass.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,bmi1")]
#[inline]
unsafe fn add_changes_avx512_part<const K: usize, const P: usize>(
    w: *const i32,
    inputs: usize,
    cur: &Counts,
    prev: &Counts,
    acc: *mut i32,
) {
    use std::arch::x86_64::*;
    // SAFETY (every access below): rows `j < inputs` of `w`, `16 K` units of each; the
    // first `16 K` entries of `acc` (the contract).
    unsafe {
        let mut a = [_mm512_setzero_si512(); K];
        for (k, ak) in a.iter_mut().enumerate() {
            *ak = _mm512_loadu_si512(acc.add(16 * k) as *const _);
        }
        for_each_change!(cur, prev, inputs, |j, d| {
            let row = w.add(j * 16 * K * P);
            if d == 1 {
                for (k, ak) in a.iter_mut().enumerate() {
                    *ak = _mm512_add_epi32(*ak, _mm512_loadu_si512(row.add(16 * k) as *const _));
                }
            } else if d == -1 {
                for (k, ak) in a.iter_mut().enumerate() {
                    *ak = _mm512_sub_epi32(*ak, _mm512_loadu_si512(row.add(16 * k) as *const _));
                }
            } else {
                let f = _mm512_set1_epi32(d);
                for (k, ak) in a.iter_mut().enumerate() {
                    let r = _mm512_loadu_si512(row.add(16 * k) as *const _);
                    *ak = _mm512_add_epi32(*ak, _mm512_mullo_epi32(r, f));
                }
            }
        });
        for (k, ak) in a.iter().enumerate() {
            _mm512_storeu_si512(acc.add(16 * k) as *mut _, *ak);
        }
    }
}

/// Evaluates a run of boards with one net's first layer, each board's hidden sums
/// updated from the previous board's ([`FirstLayer::update`]): the same bits as
/// evaluating each alone.
pub(crate) struct Chain {
    /// The counts of the previous board, then of the current one.
    counts: [Counts; 2],
    /// Which of `counts` holds the previous board's.
    prev: usize,
    /// The previous board's hidden sums (valid when `net` is set).
    acc: [i32; MAX_HIDDEN],
    /// The first layer whose sums `acc` holds (its address), if any.
    net: Option<usize>,
    /// Scratch for the output layer.
    h: [f32; MAX_HIDDEN],
}

impl Default for Chain {
    fn default() -> Self {
        Chain::new()
    }
}

impl Chain {
    /// A chain with no previous board.
    pub(crate) const fn new() -> Chain {
        Chain {
            counts: [[0; MAX_INPUTS]; 2],
            prev: 0,
            acc: [0; MAX_HIDDEN],
            net: None,
            h: [0.0; MAX_HIDDEN],
        }
    }

    /// Forgets the previous board. Call it before a run of boards: a chain compares
    /// nets by address, and a dropped net's address may be reused.
    pub(crate) fn reset(&mut self) {
        self.net = None;
    }

    /// The raw outputs of the net of `first` for `board` (the mover's view, game not
    /// over).
    #[inline]
    pub(crate) fn eval(&mut self, first: &FirstLayer, board: &Board) -> [f32; OUTPUTS] {
        let cur = 1 - self.prev;
        let [a, b] = &mut self.counts;
        let (cur_counts, prev_counts) = if cur == 0 { (a, &*b) } else { (b, &*a) };
        first
            .input_set
            .encode_counts(first.variant, board, cur_counts);
        let id = first as *const FirstLayer as usize;
        if self.net == Some(id) {
            first.update(cur_counts, prev_counts, &mut self.acc);
        } else {
            first.sums(cur_counts, &mut self.acc);
            self.net = Some(id);
        }
        self.prev = cur;
        first.outputs(&self.acc, &mut self.h)
    }
}

/// Runs `f` with this thread's [`Chain`], reset (no previous board): one chain per
/// thread, reused by every evaluation (a constant initialiser, so no lazy set-up
/// check per call). `f` must not evaluate through it again (a `RefCell`).
#[inline]
pub(crate) fn with_chain<R>(f: impl FnOnce(&mut Chain) -> R) -> R {
    thread_local! {
        static CHAIN: std::cell::RefCell<Chain> = const {
            std::cell::RefCell::new(Chain::new())
        };
    }
    CHAIN.with(|c| {
        let c = &mut *c.borrow_mut();
        c.reset();
        f(c)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::features::tests::random_play_boards;
    use crate::eval::inputs::SparseInputs;
    use crate::eval::net::{default_bytes, Nets};
    use crate::eval::Probabilities;
    use rand::{Rng, SeedableRng};

    const VARIANTS: [Variant; 3] = [Variant::Portes, Variant::Plakoto, Variant::Fevga];

    fn bits(p: &Probabilities) -> [u32; 4] {
        [p.win, p.win_mars, p.lose_mars, p.draw].map(f32::to_bits)
    }

    #[test]
    fn chains_give_the_bits_of_single_evaluations() {
        for v in VARIANTS {
            let nets = Nets::from_bytes(default_bytes(v)).unwrap();
            let boards = random_play_boards(v, 7, 4000);
            let mut many = Vec::new();
            nets.eval_many(&boards, &mut many);
            assert_eq!(many.len(), boards.len());
            let mut race = 0;
            for (b, p) in boards.iter().zip(&many) {
                assert_eq!(bits(p), bits(&nets.eval(b)), "{v:?} {b:?}");
                race += nets
                    .race
                    .as_ref()
                    .is_some_and(|r| std::ptr::eq(nets.net_for(b), r))
                    as usize;
            }
            // The Portes run switches between its contact and race nets.
            if v == Variant::Portes {
                assert!(race > 0 && race < boards.len(), "{race} race boards");
            }
        }
    }

    #[test]
    fn integer_outputs_stay_within_the_weights_rounding_of_the_float_ones() {
        for v in VARIANTS {
            let nets = Nets::from_bytes(default_bytes(v)).unwrap();
            // The committed nets' fixed points (the bound of `FirstLayer::new`).
            let shift = nets.main.first_layer().shift();
            let want = match v {
                Variant::Portes => 23,
                Variant::Plakoto => 22,
                Variant::Fevga => 24,
            };
            assert_eq!(shift, want, "{v:?}");
            let mut worst = 0f32;
            for b in random_play_boards(v, 11, 3000) {
                let net = nets.net_for(&b);
                let mut x = SparseInputs::EMPTY;
                net.encode(&b, &mut x);
                let (f, q) = (net.forward(&x), net.eval_raw(&b));
                // The draw only in Plakoto (R5.5); elsewhere it is not computed.
                let outputs = if v == Variant::Plakoto { OUTPUTS } else { 3 };
                for k in 0..outputs {
                    worst = worst.max((f[k] - q[k]).abs());
                }
                assert!(outputs == OUTPUTS || q[3] == 0.0, "{v:?} draw {}", q[3]);
            }
            // Each weight is rounded by at most 2^-(shift+1) per count; the largest
            // counts (mobility up to 10,260) make that up to about 10^-3 of a
            // pre-activation, far less in an output.
            assert!(worst < 1e-3, "{v:?}: {worst}");
            assert!(worst > 0.0, "{v:?}: the same bits as the float pass?");
        }
    }

    /// Random weights for `inputs` × `hidden` and random counts, each below its
    /// input's largest.
    fn random_layer(seed: u64, inputs: usize, hidden: usize) -> (Vec<i32>, Counts, Counts) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let w = (0..inputs * hidden)
            .map(|_| rng.random_range(-(1 << 24)..(1 << 24)))
            .collect();
        let mut c = [[0i16; MAX_INPUTS]; 2];
        for counts in &mut c {
            for x in &mut counts[..inputs] {
                // Mostly unchanged zeros and ones, some larger counts.
                *x = match rng.random_range(0..4) {
                    0 => rng.random_range(0..300),
                    _ => rng.random_range(0..2),
                };
            }
        }
        (w, c[0], c[1])
    }

    #[test]
    fn the_vector_kernels_give_the_plain_loops_sums() {
        let shapes = [(1, 244, 128), (2, 288, 128), (3, 240, 128), (4, 17, 128)];
        let wide = [
            (5, 244, 256),
            (6, 288, 256),
            (7, 33, 256),
            (8, 244, 192),
            (9, 244, 512),
        ];
        for (seed, inputs, hidden) in shapes.into_iter().chain(wide) {
            let (w, cur, prev) = random_layer(seed, inputs, hidden);
            let start: Vec<i32> = (0..hidden as i32).map(|h| h * 1000 - 64_000).collect();
            let mut want = start.clone();
            add_changes_any(&w, hidden, inputs, &cur, &prev, &mut want);
            assert_ne!(want, start);
            // The dispatcher, whichever kernel it picks on this CPU.
            let mut a = start.clone();
            add_changes(&w, hidden, inputs, &cur, &prev, &mut a);
            assert_eq!(a, want, "seed {seed}");
            #[cfg(target_arch = "x86_64")]
            {
                let run = |f: &dyn Fn(&mut [i32])| {
                    let mut a = start.clone();
                    f(&mut a);
                    a
                };
                if crate::eval::cpu::has_avx2() {
                    // SAFETY: the CPU has AVX2 and BMI1; shapes as the contracts ask
                    // (every `hidden` here is a multiple of 64).
                    let a = run(&|a| unsafe {
                        add_changes_avx2_by64(&w, hidden, inputs, &cur, &prev, a)
                    });
                    assert_eq!(a, want, "seed {seed}");
                    // SAFETY: as above.
                    let a =
                        run(&|a| unsafe { add_changes_avx2(&w, hidden, inputs, &cur, &prev, a) });
                    assert_eq!(a, want, "seed {seed}");
                }
                if crate::eval::cpu::has_avx2() && std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU has AVX-512F, AVX2 and BMI1; shapes as the
                    // contract asks (16 K P hidden units).
                    let a = match hidden {
                        128 => run(&|a| unsafe {
                            add_changes_avx512::<8, 1>(&w, inputs, &cur, &prev, a)
                        }),
                        256 => run(&|a| unsafe {
                            add_changes_avx512::<16, 1>(&w, inputs, &cur, &prev, a)
                        }),
                        512 => run(&|a| unsafe {
                            add_changes_avx512::<16, 2>(&w, inputs, &cur, &prev, a)
                        }),
                        _ => want.clone(),
                    };
                    assert_eq!(a, want, "seed {seed}");
                }
            }
        }
    }

    #[test]
    fn counts_past_the_inputs_are_not_read() {
        // A public `Counts` may hold anything past the net's inputs: the kernels read
        // only the rows of inputs below `inputs` (244 for Portes, so lanes 244..256
        // of the last 16 are masked off).
        let nets = Nets::from_bytes(default_bytes(Variant::Portes)).unwrap();
        let (net, first) = (&nets.main, nets.main.first_layer());
        let b = random_play_boards(Variant::Portes, 2, 1)[0];
        let mut c = [0i16; MAX_INPUTS];
        net.input_set.encode_counts(net.variant, &b, &mut c);
        let (mut want, mut got) = ([0i32; MAX_HIDDEN], [0i32; MAX_HIDDEN]);
        first.sums(&c, &mut want);
        c[net.inputs()..].fill(7);
        first.sums(&c, &mut got);
        assert_eq!(got, want);
    }

    #[test]
    fn files_the_fixed_point_cannot_hold_are_rejected() {
        let nets = Nets::from_bytes(default_bytes(Variant::Fevga)).unwrap();
        for bad in [f32::NAN, f32::INFINITY, 1e12] {
            let mut n = nets.clone();
            n.main.w1[5] = bad;
            n.main.weights_changed();
            assert!(n.main.build_first_layer().is_none(), "{bad}");
            assert!(
                matches!(
                    Nets::from_bytes(&n.to_bytes()),
                    Err(crate::eval::net::NetError::BadWeights(_))
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn an_update_from_another_board_equals_the_sums_from_the_bias() {
        let nets = Nets::from_bytes(default_bytes(Variant::Plakoto)).unwrap();
        let (net, first) = (&nets.main, nets.main.first_layer());
        let boards = random_play_boards(Variant::Plakoto, 3, 200);
        let (mut c0, mut c1) = ([0i16; MAX_INPUTS], [0i16; MAX_INPUTS]);
        // Pairs far apart in the game as well as neighbours.
        for (a, b) in boards.iter().zip(boards.iter().rev()) {
            net.input_set.encode_counts(net.variant, a, &mut c0);
            net.input_set.encode_counts(net.variant, b, &mut c1);
            let (mut from_a, mut from_bias) = ([0i32; MAX_HIDDEN], [0i32; MAX_HIDDEN]);
            first.sums(&c0, &mut from_a);
            first.update(&c1, &c0, &mut from_a);
            first.sums(&c1, &mut from_bias);
            assert_eq!(from_a, from_bias);
        }
    }
}
