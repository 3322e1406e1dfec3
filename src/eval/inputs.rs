//! Neural-net input encoding of a mover-relative [`Board`].
//!
//! Source: the truncated unary point encoding of TD-Gammon (Tesauro 1992, 1995) as
//! used by GNU Backgammon and wildbg: for a count `x` of checkers of one side on one
//! point, four units `x>=1`, `x>=2`, `x>=3`, `(x-3)/2` for `x>3` (else 0).
//!
//! Layout (indices into the input vector, `i` = own point 1..=24 of the mover):
//!
//! | range | all variants |
//! |---|---|
//! | `(i-1)*8 + 0..4` | mover's free checkers on point `i`, 4 unary units |
//! | `(i-1)*8 + 4..8` | opponent's free checkers on point `i` (mover's numbering) |
//!
//! then the per-variant features from index 192:
//!
//! - **Portes** (204 inputs): 192..196 mover's bar (4 unary units), 196..200
//!   opponent's bar, 200/201 mover/opponent off ÷ 15, 202/203 mover/opponent has
//!   borne off at least one (a mars is no longer possible against it, R7).
//! - **Plakoto** (248 inputs): 192..216 a mover checker pinned on point `i`
//!   (`192 + i - 1`), 216..240 an opponent checker pinned on point `i`, 240/241 off
//!   ÷ 15, 242/243 off ≥ 1, 244 the mover's mother is pinned (own 24), 245 the
//!   opponent's mother is pinned (own 1), 246/247 the mover / the opponent has no
//!   checker left on its own start point (pinning the other mother then wins, R5.5).
//! - **Fevga** (200 inputs): 192/193 off ÷ 15, 194/195 off ≥ 1, 196 all 15 mover
//!   checkers still on its start, 197 the mover's first checker has not yet passed
//!   the opponent's start (R8.2), 198/199 the same two flags for the opponent.
//!
//! That is input set [`InputSet::V1`] (the v1 nets). [`InputSet::V2`] (the v2 nets)
//! appends [`SIDE_FEATURES`] hand-made features of the mover and then the same
//! features of the opponent ([`super::features::side_features`] on the board and on
//! the mirrored board): 244 / 288 / 240 inputs.
//!
//! One encoder spells this layout out for the two forms the nets read: the sparse
//! `f32` values of training's forward pass ([`InputSet::encode`] into
//! [`SparseInputs`]: only non-zero units, in increasing index order) and the integer
//! counts of the evaluator's first layer ([`InputSet::encode_counts`] into
//! [`Counts`]: a value is its count over its scale). Both are built with lookup
//! tables by count and no allocation.

#[cfg(test)]
use super::features::side_features;
use super::features::{side_counts_inline, side_features_inline, SIDE_FEATURES};
use crate::rules::board::{below_mask, flip_index, Board, BAR, OFF};
use crate::rules::Variant;

/// The largest input count of any variant and input set (Plakoto, V2).
pub const MAX_INPUTS: usize = 248 + 2 * SIDE_FEATURES;

/// Index of the first per-variant feature (after 24 points × 2 sides × 4 units).
pub const POINT_INPUTS: usize = 192;

/// Capacity of [`SparseInputs`]: [`MAX_INPUTS`] plus slack for branch-free writes.
const CAP: usize = MAX_INPUTS + 8;

/// Number of inputs of the V1 encoding of `variant`: Portes 204, Plakoto 248, Fevga
/// 200.
pub const fn num_inputs(variant: Variant) -> usize {
    match variant {
        Variant::Portes => 204,
        Variant::Plakoto => 248,
        Variant::Fevga => 200,
    }
}

/// Which encoding a net reads (stored in its `.tnet` file as a code).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InputSet {
    /// Points, bar, off and the per-variant flags ([`encode`]); code 1.
    V1,
    /// V1 followed by the [`SIDE_FEATURES`] features of the mover and of the
    /// opponent; code 2.
    V2,
}

impl InputSet {
    /// The code stored in `.tnet` files.
    pub const fn code(self) -> u32 {
        match self {
            InputSet::V1 => 1,
            InputSet::V2 => 2,
        }
    }

    /// The input set of a stored code, if known.
    pub const fn from_code(code: u32) -> Option<InputSet> {
        match code {
            1 => Some(InputSet::V1),
            2 => Some(InputSet::V2),
            _ => None,
        }
    }

    /// Features per side appended to the V1 inputs: 0 or [`SIDE_FEATURES`].
    pub const fn features(self) -> usize {
        match self {
            InputSet::V1 => 0,
            InputSet::V2 => SIDE_FEATURES,
        }
    }

    /// Number of inputs for `variant`: [`num_inputs`] plus `2 * self.features()`.
    pub const fn count(self, variant: Variant) -> usize {
        num_inputs(variant) + 2 * self.features()
    }

    /// Encodes `board` (the mover's view, game not over) into `out`, the inputs that
    /// training's `f32` forward pass reads ([`encode_into`]).
    #[inline]
    pub fn encode(self, variant: Variant, board: &Board, out: &mut SparseInputs) {
        encode_any(self, variant, board, out)
    }
}

/// [`encode_into`] by its copy compiled for AVX2 and the bit instructions
/// ([`encode_fast`]) when the CPU has them, else by the baseline one (the same
/// results).
#[inline(always)]
fn encode_any(set: InputSet, variant: Variant, board: &Board, out: &mut impl Sink) {
    #[cfg(target_arch = "x86_64")]
    if super::cpu::has_avx2() {
        // SAFETY: the CPU supports AVX2, POPCNT, LZCNT and BMI1 (checked by
        // `has_avx2`).
        unsafe { encode_fast(set, variant, board, out) };
        return;
    }
    encode_into::<_, false>(set, variant, board, out)
}

/// [`encode_into`] compiled for CPUs with AVX2 and the bit instructions.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt,lzcnt,bmi1")]
#[inline]
fn encode_fast(set: InputSet, variant: Variant, board: &Board, out: &mut impl Sink) {
    encode_into::<_, true>(set, variant, board, out)
}

/// Where [`encode_into`] writes a board's inputs: the sparse `f32` values of
/// training's forward pass ([`SparseInputs`]) or the integer counts of the
/// evaluator's first layer ([`Counts`]). The layout (which input is where) is
/// [`encode_into`]'s alone; a sink only stores a unit of each kind, in increasing
/// index order. An input's value is its count over its scale
/// ([`InputSet::scales`]).
trait Sink {
    /// Starts a board: every input 0.
    fn clear(&mut self);
    /// The four unary units of `count` (0..=15) at `base..base + 4`: counts 1, 1, 1
    /// and `count − 3` of scales 1, 1, 1, 2, each unit present from the count it
    /// needs on ([`UNARY_COUNTS`]).
    fn unary(&mut self, base: usize, count: u8);
    /// A binary unit at `index`.
    fn flag(&mut self, index: usize, on: bool);
    /// Every set bit `i` (1..=24) of `mask` as a binary unit at `base + i − 1`.
    fn bits(&mut self, base: usize, mask: u32);
    /// A borne-off count (0..=15) at `index`, of scale 15.
    fn off(&mut self, index: usize, count: u8);
    /// The [`SIDE_FEATURES`] features of the mover (from `sides[0]`, the board) and
    /// then of the opponent (from `sides[1]`, the mirrored board) at `base..base + 2 ·
    /// SIDE_FEATURES`. `AVX2` as for `side_features_inline`: set only in code compiled
    /// for AVX2 and the bit instructions ([`encode_fast`]).
    fn features<const AVX2: bool>(&mut self, variant: Variant, base: usize, sides: [&Board; 2]);
}

/// Encodes `board` (the mover's view, game not over) for a net of `set` and
/// `variant` into `out`: the layout of the module documentation, spelled out once
/// for both encodings (`counts_over_scales_are_the_inputs` checks that their values
/// agree bit for bit). `AVX2` as for [`Sink::features`].
#[inline(always)]
fn encode_into<S: Sink, const AVX2: bool>(
    set: InputSet,
    variant: Variant,
    board: &Board,
    out: &mut S,
) {
    // The opponent's view first: its features read it with wide loads, which wait
    // when they follow the narrower stores that built it too closely.
    let mirrored = (set.features() > 0).then(|| board.mirror(variant));
    out.clear();
    // Only points holding checkers have non-zero units: visit those, in order.
    let empty = below_mask::<1>(&board.own) & below_mask::<1>(&board.opp);
    let mut occupied = !empty & 0x01ff_fffe;
    while occupied != 0 {
        let i = occupied.trailing_zeros() as usize;
        occupied &= occupied - 1;
        out.unary((i - 1) * 8, board.own[i]);
        out.unary((i - 1) * 8 + 4, board.opp[i]);
    }
    let b = POINT_INPUTS;
    let (own_off, opp_off) = (board.own[OFF], board.opp[OFF]);
    match variant {
        Variant::Portes => {
            out.unary(b, board.own[BAR]);
            out.unary(b + 4, board.opp[BAR]);
            off_units(out, b + 8, own_off, opp_off);
        }
        Variant::Plakoto => {
            out.bits(b, board.own_pinned);
            out.bits(b + 24, board.opp_pinned);
            off_units(out, b + 48, own_off, opp_off);
            out.flag(b + 52, board.own_pinned >> 24 & 1 == 1);
            out.flag(b + 53, board.opp_pinned >> 1 & 1 == 1);
            out.flag(b + 54, board.own_at(24) == 0);
            out.flag(b + 55, board.opp_at(1) == 0);
        }
        Variant::Fevga => {
            off_units(out, b, own_off, opp_off);
            // The opponent's own point j is the mover's flip_index(j) (R1).
            let opp_own = |j: usize| board.opp[flip_index(Variant::Fevga, j)];
            let own_runner = (12..=23).any(|p| board.own[p] > 0);
            let opp_runner = (12..=23).any(|j| opp_own(j) > 0);
            out.flag(b + 4, board.own[24] == 15);
            out.flag(b + 5, board.own[24] == 14 && own_runner);
            out.flag(b + 6, opp_own(24) == 15);
            out.flag(b + 7, opp_own(24) == 14 && opp_runner);
        }
    }
    if let Some(mirrored) = &mirrored {
        out.features::<AVX2>(variant, num_inputs(variant), [board, mirrored]);
    }
}

/// Off counts ÷ 15 and "at least one off" flags at `base..base+4`.
#[inline(always)]
fn off_units(out: &mut impl Sink, base: usize, own_off: u8, opp_off: u8) {
    out.off(base, own_off);
    out.off(base + 1, opp_off);
    out.flag(base + 2, own_off > 0);
    out.flag(base + 3, opp_off > 0);
}

/// `COMPACT[m]`: the lanes `k` (0..8) whose bit `k` is set in `m`, in increasing
/// order, then zeros: the permutation that packs the selected lanes of a vector to
/// its front ([`SparseInputs::dense_avx2`]).
#[cfg(target_arch = "x86_64")]
const COMPACT: [[u32; 8]; 256] = {
    let mut t = [[0u32; 8]; 256];
    let mut m = 0;
    while m < 256 {
        let (mut k, mut n) = (0, 0);
        while k < 8 {
            if m >> k & 1 == 1 {
                t[m][n] = k as u32;
                n += 1;
            }
            k += 1;
        }
        m += 1;
    }
    t
};

/// The four unary units for a count 0..=15: [`UNARY_COUNTS`] over their scales (the
/// fourth `(c - 3) / 2`).
const UNARY: [[f32; 4]; 16] = {
    let mut t = [[0.0f32; 4]; 16];
    let mut c = 0;
    while c < 16 {
        let mut k = 0;
        while k < 4 {
            t[c][k] = UNARY_COUNTS[c][k] as f32 / if k == 3 { 2.0 } else { 1.0 };
            k += 1;
        }
        c += 1;
    }
    t
};

/// How many of the four unary units are non-zero for a count 0..=15: `min(c, 4)`.
const UNITS: [usize; 16] = [0, 1, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4];

/// A sparse input vector: `idx[k]`, `val[k]` for `k < len`, indices increasing and
/// values non-zero. Fixed size, so it lives on the stack.
#[derive(Clone, Copy, Debug)]
pub struct SparseInputs {
    /// Input indices, `< num_inputs(variant)`.
    pub idx: [u16; CAP],
    /// Input values (unit activations).
    pub val: [f32; CAP],
    /// Number of used entries.
    pub len: usize,
}

impl Default for SparseInputs {
    fn default() -> Self {
        SparseInputs::EMPTY
    }
}

impl SparseInputs {
    /// No inputs (usable in constants, e.g. a `thread_local!`'s `const` initialiser).
    pub const EMPTY: SparseInputs = SparseInputs {
        idx: [0; CAP],
        val: [0.0; CAP],
        len: 0,
    };

    /// The used `(index, value)` pairs.
    pub fn iter(&self) -> impl Iterator<Item = (usize, f32)> + '_ {
        self.idx[..self.len]
            .iter()
            .zip(&self.val[..self.len])
            .map(|(&i, &v)| (i as usize, v))
    }

    /// Appends `value` at `index` when `keep` (branch-free).
    #[inline(always)]
    fn push_if(&mut self, index: usize, value: f32, keep: bool) {
        self.idx[self.len] = index as u16;
        self.val[self.len] = value;
        self.len += keep as usize;
    }

    /// Appends the non-zero values of `values` at `base..base + values.len()`.
    #[inline(always)]
    fn dense(&mut self, base: usize, values: &[f32]) {
        for (k, &x) in values.iter().enumerate() {
            self.push_if(base + k, x, x != 0.0);
        }
    }

    /// [`SparseInputs::dense`] of 40 values, eight at a time: the non-zero lanes of
    /// each vector of eight (NaN counts as non-zero, as `x != 0.0`) are packed to the
    /// front by one permutation ([`COMPACT`]) and stored with their indices; `len`
    /// advances by their number. The same entries as `dense`.
    ///
    /// # Safety
    /// The CPU must have AVX2 and POPCNT.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn dense_avx2(&mut self, base: usize, values: &[f32; 2 * SIDE_FEATURES]) {
        use std::arch::x86_64::*;
        // Every store below writes eight entries from `len`, and `len <= base + 8 c`
        // before chunk `c`: they stay inside `idx` and `val`.
        assert!(self.len <= base && base + values.len() + 8 <= CAP);
        for c in 0..values.len() / 8 {
            // SAFETY: `8 c + 8 <= values.len()`; `len + 8 <= CAP` (above); AVX2 and
            // POPCNT by the caller's contract.
            unsafe {
                let v = _mm256_loadu_ps(values.as_ptr().add(8 * c));
                let keep = _mm256_cmp_ps::<_CMP_NEQ_UQ>(v, _mm256_setzero_ps());
                let mask = _mm256_movemask_ps(keep) as usize;
                let perm = _mm256_loadu_si256(COMPACT[mask].as_ptr() as *const __m256i);
                let at = self.len;
                _mm256_storeu_ps(
                    self.val.as_mut_ptr().add(at),
                    _mm256_permutevar8x32_ps(v, perm),
                );
                let index = _mm256_add_epi32(perm, _mm256_set1_epi32((base + 8 * c) as i32));
                let index16 = _mm_packus_epi32(
                    _mm256_castsi256_si128(index),
                    _mm256_extracti128_si256::<1>(index),
                );
                _mm_storeu_si128(self.idx.as_mut_ptr().add(at) as *mut __m128i, index16);
                self.len = at + mask.count_ones() as usize;
            }
        }
    }
}

impl Sink for SparseInputs {
    #[inline(always)]
    fn clear(&mut self) {
        self.len = 0;
    }

    /// Only the non-zero units are kept: all four are written, `len` advances by
    /// their number.
    #[inline(always)]
    fn unary(&mut self, base: usize, count: u8) {
        let c = (count as usize).min(15);
        let n = self.len;
        let b = base as u16;
        self.idx[n..n + 4].copy_from_slice(&[b, b + 1, b + 2, b + 3]);
        self.val[n..n + 4].copy_from_slice(&UNARY[c]);
        self.len = n + UNITS[c];
    }

    #[inline(always)]
    fn flag(&mut self, index: usize, on: bool) {
        self.push_if(index, 1.0, on);
    }

    #[inline(always)]
    fn bits(&mut self, base: usize, mask: u32) {
        let mut m = mask & 0x01ff_fffe;
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            self.idx[self.len] = (base + i - 1) as u16;
            self.val[self.len] = 1.0;
            self.len += 1;
            m &= m - 1;
        }
    }

    #[inline(always)]
    fn off(&mut self, index: usize, count: u8) {
        self.push_if(index, count as f32 / 15.0, count > 0);
    }

    /// Each side's counts over their scales (`side_features_inline`), the non-zero
    /// ones appended eight at a time with AVX2 ([`SparseInputs::dense_avx2`]).
    #[inline(always)]
    fn features<const AVX2: bool>(&mut self, variant: Variant, base: usize, sides: [&Board; 2]) {
        let mut f = [0.0f32; 2 * SIDE_FEATURES];
        let (own, opp) = f.split_at_mut(SIDE_FEATURES);
        side_features_inline::<AVX2>(variant, sides[0], own.try_into().expect("20 features"));
        side_features_inline::<AVX2>(variant, sides[1], opp.try_into().expect("20 features"));
        #[cfg(target_arch = "x86_64")]
        if AVX2 {
            // SAFETY: `AVX2` is set only where the CPU has AVX2 and POPCNT (the
            // trait's contract).
            unsafe { self.dense_avx2(base, &f) };
            return;
        }
        self.dense(base, &f);
    }
}

/// Encodes `board` (the mover's view, game not over) for the V1 net of `variant`
/// ([`InputSet::V1`]).
#[inline(always)]
pub fn encode(variant: Variant, board: &Board, out: &mut SparseInputs) {
    encode_into::<_, false>(InputSet::V1, variant, board, out)
}

/// Dense form of [`encode`]: `out[..num_inputs(variant)]` is the input vector, the
/// rest is zero.
pub fn encode_dense(variant: Variant, board: &Board, out: &mut [f32; MAX_INPUTS]) {
    encode_dense_set(InputSet::V1, variant, board, out)
}

/// Dense form of [`InputSet::encode`]: `out[..set.count(variant)]` is the input
/// vector, the rest is zero.
pub fn encode_dense_set(
    set: InputSet,
    variant: Variant,
    board: &Board,
    out: &mut [f32; MAX_INPUTS],
) {
    let mut s = SparseInputs::default();
    set.encode(variant, board, &mut s);
    out.fill(0.0);
    for (i, v) in s.iter() {
        out[i] = v;
    }
}

/// Dense integer counts of the inputs, for the integer first layer
/// ([`super::net::Net::eval_raw`]): input `j`'s value (what [`InputSet::encode`]
/// gives) is `counts[j] as f32 / scales[j]` ([`InputSet::scales`]); entries from
/// `set.count(variant)` on are zero.
pub type Counts = [i16; MAX_INPUTS];

/// The four unary units of a count 0..=15 as counts (the fourth, `(c - 3) / 2`, as
/// `c - 3` over the scale 2).
const UNARY_COUNTS: [[i16; 4]; 16] = {
    let mut t = [[0i16; 4]; 16];
    let mut c = 1;
    while c < 16 {
        t[c][0] = 1;
        if c >= 2 {
            t[c][1] = 1;
        }
        if c >= 3 {
            t[c][2] = 1;
        }
        if c >= 4 {
            t[c][3] = c as i16 - 3;
        }
        c += 1;
    }
    t
};

impl InputSet {
    /// The scale of each input of `variant`: input `j`'s value is an integer count
    /// over `scales[j]` (1 for the unary and binary units, 2 for the fourth unary
    /// unit, 15 for the borne-off counts, the feature scales of
    /// [`super::features::side_features`]). `count(variant)` entries.
    pub fn scales(self, variant: Variant) -> Vec<f32> {
        self.table(variant, [1.0, 1.0, 1.0, 2.0], [15.0, 15.0, 1.0, 1.0], |k| {
            super::features::feature_scales(variant)[k]
        })
    }

    /// The largest count of each input of `variant` on a valid board (at most 15
    /// checkers a side): 1 for the units, 12 for the fourth unary unit, 15 for the
    /// borne-off counts, the table of `features.rs` (`FEATURE_MAX`) for the features.
    pub fn max_counts(self, variant: Variant) -> Vec<f32> {
        self.table(
            variant,
            [1.0, 1.0, 1.0, 12.0],
            [15.0, 15.0, 1.0, 1.0],
            |k| super::features::FEATURE_MAX[k] as f32,
        )
    }

    /// The side whose checkers input `j` of `variant` counts, for the inputs whose
    /// counts add up to at most that side's 15 checkers: `Some(0)` for the mover's
    /// unary point units (and bar units, Portes; pinned checkers, Plakoto), `Some(1)`
    /// for the opponent's; `None` for the others (borne-off inputs, flags,
    /// features). A point of `c` checkers has unary counts adding up to `c` (1, 1, 1,
    /// `c − 3`).
    pub fn checker_side(self, variant: Variant, j: usize) -> Option<usize> {
        let b = POINT_INPUTS;
        match (variant, j) {
            (_, j) if j < b => Some(j % 8 / 4),
            (Variant::Portes, j) if j < b + 8 => Some((j - b) / 4),
            (Variant::Plakoto, j) if j < b + 48 => Some((j - b) / 24),
            _ => None,
        }
    }

    /// A per-input table: `unary` for each block of four unary units, `off` for the
    /// four borne-off inputs, 1 for the other units, `feature(k)` for feature `k` of
    /// either side.
    fn table(
        self,
        variant: Variant,
        unary: [f32; 4],
        off: [f32; 4],
        feature: impl Fn(usize) -> f32,
    ) -> Vec<f32> {
        let mut t = vec![1.0f32; self.count(variant)];
        for block in t[..POINT_INPUTS].chunks_exact_mut(4) {
            block.copy_from_slice(&unary);
        }
        let b = POINT_INPUTS;
        let off_at = match variant {
            Variant::Portes => {
                t[b..b + 4].copy_from_slice(&unary);
                t[b + 4..b + 8].copy_from_slice(&unary);
                b + 8
            }
            Variant::Plakoto => b + 48,
            Variant::Fevga => b,
        };
        t[off_at..off_at + 4].copy_from_slice(&off);
        let n = num_inputs(variant);
        for k in 0..self.features() {
            t[n + k] = feature(k);
            t[n + SIDE_FEATURES + k] = feature(k);
        }
        t
    }

    /// Encodes `board` (the mover's view, game not over) as [`Counts`], the inputs
    /// of the evaluator's integer first layer ([`encode_into`]).
    #[inline]
    pub fn encode_counts(self, variant: Variant, board: &Board, out: &mut Counts) {
        encode_any(self, variant, board, out)
    }
}

impl Sink for Counts {
    #[inline(always)]
    fn clear(&mut self) {
        *self = [0; MAX_INPUTS];
    }

    #[inline(always)]
    fn unary(&mut self, base: usize, count: u8) {
        self[base..base + 4].copy_from_slice(&UNARY_COUNTS[count.min(15) as usize]);
    }

    #[inline(always)]
    fn flag(&mut self, index: usize, on: bool) {
        self[index] = on as i16;
    }

    #[inline(always)]
    fn bits(&mut self, base: usize, mask: u32) {
        let mut m = mask & 0x01ff_fffe;
        while m != 0 {
            self[base + m.trailing_zeros() as usize - 1] = 1;
            m &= m - 1;
        }
    }

    #[inline(always)]
    fn off(&mut self, index: usize, count: u8) {
        self[index] = count as i16;
    }

    #[inline(always)]
    fn features<const AVX2: bool>(&mut self, variant: Variant, base: usize, sides: [&Board; 2]) {
        let own = side_counts_inline::<AVX2>(variant, sides[0]);
        let opp = side_counts_inline::<AVX2>(variant, sides[1]);
        for k in 0..SIDE_FEATURES {
            self[base + k] = own[k] as i16;
            self[base + SIDE_FEATURES + k] = opp[k] as i16;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{Position, Side};

    fn start(v: Variant) -> Board {
        Board::from_position(&Position::start(v, Side::White), Side::White)
    }

    #[test]
    fn unary_table() {
        assert_eq!(UNARY[0], [0.0, 0.0, 0.0, 0.0]);
        assert_eq!(UNARY[1], [1.0, 0.0, 0.0, 0.0]);
        assert_eq!(UNARY[3], [1.0, 1.0, 1.0, 0.0]);
        assert_eq!(UNARY[5], [1.0, 1.0, 1.0, 1.0]);
        assert_eq!(UNARY[15], [1.0, 1.0, 1.0, 6.0]);
    }

    #[test]
    fn portes_start() {
        let mut x = [0.0; MAX_INPUTS];
        encode_dense(Variant::Portes, &start(Variant::Portes), &mut x);
        // Own 2 on 24, 5 on 13, 3 on 8, 5 on 6.
        assert_eq!(&x[23 * 8..23 * 8 + 4], &[1.0, 1.0, 0.0, 0.0]);
        assert_eq!(&x[12 * 8..12 * 8 + 4], &[1.0, 1.0, 1.0, 1.0]);
        assert_eq!(&x[7 * 8..7 * 8 + 4], &[1.0, 1.0, 1.0, 0.0]);
        // Opponent 2 on own 1, 5 on own 6's mirror (own 19).
        assert_eq!(&x[4..8], &[1.0, 1.0, 0.0, 0.0]);
        assert_eq!(&x[18 * 8 + 4..18 * 8 + 8], &[1.0, 1.0, 1.0, 1.0]);
        // Sum of all units: per side 2 + 4.5 + 3 + 4.5 (unary of 2, 5, 3, 5).
        let sum: f32 = x.iter().sum();
        assert_eq!(sum, 2.0 * (2.0 + 4.0 + 3.0 + 4.0));
        assert!(x[POINT_INPUTS..].iter().all(|&v| v == 0.0));
    }

    #[test]
    fn plakoto_pins_and_mothers() {
        let mut b = start(Variant::Plakoto);
        // Mover's mother pinned by the opponent on own 24, 14 free still there.
        b.own[24] = 0;
        b.own[20] = 13;
        b.own_pinned = 1 << 24;
        b.opp[1] = 13;
        b.opp[24] = 1;
        b.opp_pinned = 1 << 5;
        b.own[5] = 1;
        b.opp[1] -= 1; // the pinned opponent checker is counted only in the mask
        let mut x = [0.0; MAX_INPUTS];
        encode_dense(Variant::Plakoto, &b, &mut x);
        assert_eq!(x[192 + 23], 1.0, "own pinned on 24");
        assert_eq!(x[216 + 4], 1.0, "opp pinned on 5");
        assert_eq!(x[244], 1.0, "own mother pinned");
        assert_eq!(x[245], 0.0);
        assert_eq!(x[246], 0.0, "the pinned mother still stands on 24");
        assert_eq!(x[247], 0.0);
        let ones = x[192..240].iter().filter(|&&v| v == 1.0).count();
        assert_eq!(ones, 2);
    }

    #[test]
    fn fevga_first_checker_flags() {
        let b = start(Variant::Fevga);
        let mut x = [0.0; MAX_INPUTS];
        encode_dense(Variant::Fevga, &b, &mut x);
        assert_eq!(&x[196..200], &[1.0, 0.0, 1.0, 0.0]);
        // Mover's runner on own 15: pending; opponent's runner on its own 13 = mover 1.
        let mut b2 = b;
        b2.own[24] = 14;
        b2.own[15] = 1;
        b2.opp[12] = 14;
        b2.opp[1] = 1;
        encode_dense(Variant::Fevga, &b2, &mut x);
        assert_eq!(&x[196..200], &[0.0, 1.0, 0.0, 1.0]);
        // Runner passed (own 11): not pending.
        b2.own[15] = 0;
        b2.own[11] = 1;
        encode_dense(Variant::Fevga, &b2, &mut x);
        assert_eq!(&x[196..200], &[0.0, 0.0, 0.0, 1.0]);
    }

    #[test]
    fn sparse_is_sorted_and_bounded() {
        for v in Variant::ALL {
            for set in [InputSet::V1, InputSet::V2] {
                let mut s = SparseInputs::default();
                let mut b = start(v);
                b.own[OFF] = 3;
                b.own[24] -= 3;
                set.encode(v, &b, &mut s);
                assert!(s.idx[..s.len].windows(2).all(|w| w[0] < w[1]));
                assert!(s.iter().all(|(i, x)| i < set.count(v) && x != 0.0));
            }
        }
    }

    #[test]
    fn counts_over_scales_are_the_inputs() {
        for v in [Variant::Portes, Variant::Plakoto, Variant::Fevga] {
            let (scales, max) = (InputSet::V2.scales(v), InputSet::V2.max_counts(v));
            let n = InputSet::V2.count(v);
            assert_eq!((scales.len(), max.len()), (n, n));
            let mut seen_max = vec![0i16; n];
            for b in crate::eval::features::tests::random_play_boards(v, 5, 20_000) {
                let mut counts = [0i16; MAX_INPUTS];
                InputSet::V2.encode_counts(v, &b, &mut counts);
                let mut values = [0f32; MAX_INPUTS];
                encode_dense_set(InputSet::V2, v, &b, &mut values);
                let mut side = [0i32; 2];
                for j in 0..MAX_INPUTS {
                    if j >= n {
                        assert_eq!(counts[j], 0);
                        continue;
                    }
                    // The same bits as the encoder's value.
                    let x = counts[j] as f32 / scales[j];
                    assert_eq!(x.to_bits(), values[j].to_bits(), "{v:?} input {j}: {b:?}");
                    assert!((0.0..=max[j]).contains(&(counts[j] as f32)), "{v:?} {j}");
                    seen_max[j] = seen_max[j].max(counts[j]);
                    if let Some(k) = InputSet::V2.checker_side(v, j) {
                        side[k] += counts[j] as i32;
                    }
                }
                // R1: each side has 15 checkers, so its checker units count at most 15.
                assert!(side[0] <= 15 && side[1] <= 15, "{v:?} {side:?}");
            }
            // Random play reaches counts above 1 (the fourth unary unit, the
            // features), so the comparison above covered more than units.
            assert!(seen_max.iter().any(|&c| c > 100), "{v:?}");
        }
    }

    #[test]
    fn v2_appends_both_sides_features() {
        let v = Variant::Portes;
        let b = start(v);
        let mut x = [0.0; MAX_INPUTS];
        encode_dense_set(InputSet::V2, v, &b, &mut x);
        let mut y = [0.0; MAX_INPUTS];
        encode_dense(v, &b, &mut y);
        assert_eq!(&x[..204], &y[..204], "V1 part unchanged");
        let (mut own, mut opp) = ([0.0; SIDE_FEATURES], [0.0; SIDE_FEATURES]);
        side_features(v, &b, &mut own);
        side_features(v, &b.mirror(v), &mut opp);
        assert_eq!(&x[204..204 + SIDE_FEATURES], &own);
        assert_eq!(&x[204 + SIDE_FEATURES..204 + 2 * SIDE_FEATURES], &opp);
        assert_eq!(InputSet::V2.count(v), 244);
        assert_eq!(InputSet::from_code(InputSet::V2.code()), Some(InputSet::V2));
        assert_eq!(InputSet::from_code(3), None);
    }
}
