//! The arithmetic of a net's `f32` forward pass ([`super::net::Net::forward`], which
//! training uses; the evaluator's first layer is the integer one of
//! [`super::first_layer`]): the sparse first layer and the output dot products (these
//! the evaluator shares), written so that the compiler keeps a block of hidden sums in
//! vector registers across all active inputs (instead of loading and storing every
//! hidden sum once per input).
//!
//! On x86-64 the same code is compiled twice, for the baseline (SSE2) and with AVX2,
//! and the AVX2 version is used when the CPU has it (checked once, at run time); on a
//! CPU with AVX-512F the first layer's blocks of 128 hidden units use 16-float vectors
//! (`block128_avx512`; valgrind hides AVX-512, so callgrind counts the AVX2 path). The
//! operations and their order are the same in both, and the same as a plain loop: each
//! hidden sum is its bias plus `value × weight` added input by input in input order,
//! each product rounded before the add (no fused multiply-add; a unit of value 1 adds
//! its weight, which is the same number); each output sums eight lanes `k mod 8` and
//! then the lanes in order. So every version gives the same bits.
//!
//! Both forward passes also share from here the shape of a net's layers
//! ([`OUTPUTS`], [`MAX_HIDDEN`]) and the outputs' activation ([`sigmoid`]).

use super::inputs::SparseInputs;

/// Number of outputs of a net: win, win_mars, lose_mars, draw.
pub const OUTPUTS: usize = 4;
/// The largest hidden layer accepted (stack buffers are this size).
pub const MAX_HIDDEN: usize = 512;

/// The logistic function, the activation of a net's outputs.
#[inline(always)]
pub(crate) fn sigmoid(z: f32) -> f32 {
    1.0 / (1.0 + (-z).exp())
}

/// Hidden sums kept in registers at a time: eight registers, SSE or AVX2 (eight
/// independent chains of adds, so that their latency overlaps).
const BLOCK_SSE: usize = 32;
const BLOCK_AVX2: usize = 64;
/// With AVX2, hidden sums are first summed 128 at a time ([`block128_avx2`]: 14
/// vectors of sums in registers, two in memory), which reads each input's index and
/// value once per 128 units instead of twice; then [`BLOCK_AVX2`] at a time.
const WIDE_AVX2: usize = 128;

/// `h[..hidden] = b1 + Σ_inputs value × w1[input * hidden ..]` (pre-activations).
/// Shapes: `b1.len() == h.len() == hidden`, `w1` input-major (`w1[j * hidden + k]`).
#[inline]
pub fn hidden_pre(b1: &[f32], w1: &[f32], x: &SparseInputs, h: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if avx2() {
        // SAFETY: the CPU supports AVX2 (checked by `avx2`).
        return unsafe { hidden_pre_avx2(b1, w1, x, h) };
    }
    hidden_pre_any::<BLOCK_SSE, BLOCK_SSE>(b1, w1, x, h)
}

/// The net's output pre-activations `b2[k] + w2[k·hidden..] · relu(h)` for the four
/// outputs, `h` being [`hidden_pre`]'s result (used as scratch: afterwards some or all
/// of it may hold `relu(h)`).
#[inline]
pub fn outputs(w2: &[f32], b2: &[f32; 4], h: &mut [f32]) -> [f32; 4] {
    outputs_first::<4>(w2, b2, h)
}

/// [`outputs`] of the first `N` (1..=4) outputs only; the others are 0. Each
/// computed output has the same bits as in [`outputs`].
#[inline]
pub fn outputs_first<const N: usize>(w2: &[f32], b2: &[f32; 4], h: &mut [f32]) -> [f32; 4] {
    #[cfg(target_arch = "x86_64")]
    if avx2() {
        // SAFETY: the CPU supports AVX2 (checked by `avx2`).
        return unsafe { outputs_avx2_first::<N>(w2, b2, h) };
    }
    outputs_any::<N>(w2, b2, h)
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn hidden_pre_avx2(b1: &[f32], w1: &[f32], x: &SparseInputs, h: &mut [f32]) {
    hidden_pre_blocks::<WIDE_AVX2, BLOCK_AVX2, true>(b1, w1, x, h)
}

/// [`outputs_any`] (the first `N` outputs, [`outputs_first`]) with the dot products
/// interleaved (their chains of adds overlap); each output's lane `i` still sums its
/// products in chunk order, so the bits are `dot`'s.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn outputs_avx2_first<const N: usize>(w2: &[f32], b2: &[f32; 4], h: &mut [f32]) -> [f32; 4] {
    use std::arch::x86_64::*;
    const { assert!(N >= 1 && N <= 4) };
    let hidden = h.len();
    assert!(
        w2.len() >= N * hidden,
        "w2 holds a row of hidden weights per output"
    );
    let chunks = hidden / 8;
    for a in h[8 * chunks..].iter_mut() {
        *a = a.max(0.0);
    }
    let mut acc = [_mm256_setzero_ps(); N];
    let zero = _mm256_setzero_ps();
    for c in 0..chunks {
        // SAFETY: `8 * c + 8 <= hidden`, and row `k < N` of `w2` starts at
        // `k * hidden` with `N * hidden <= w2.len()`: every access is in bounds.
        // The activation as the chunk is read, instead of a pass over `h` before (one
        // `vmaxps`, zero second: a NaN gives 0 as `f32::max` does; a zero's sign
        // cannot change the sums, which start at +0 and so are never -0).
        let hc = unsafe { _mm256_max_ps(_mm256_loadu_ps(h.as_ptr().add(8 * c)), zero) };
        for (k, a) in acc.iter_mut().enumerate() {
            let wc = unsafe { _mm256_loadu_ps(w2.as_ptr().add(k * hidden + 8 * c)) };
            *a = _mm256_add_ps(*a, _mm256_mul_ps(wc, hc));
        }
    }
    let mut z = [0f32; 4];
    for (k, zk) in z.iter_mut().enumerate().take(N) {
        let mut lanes = [0f32; 8];
        // SAFETY: `lanes` holds eight floats.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), acc[k]) };
        let mut s: f32 = lanes.iter().sum();
        let w = &w2[k * hidden..(k + 1) * hidden];
        for (x, y) in w[8 * chunks..].iter().zip(&h[8 * chunks..]) {
            s += x * y;
        }
        *zk = b2[k] + s;
    }
    z
}

/// [`block`] for 128 hidden units with AVX2, in assembly: 14 of the 16 vectors of
/// sums stay in registers; the last two live in `h` while a product is added
/// (loaded, added and stored), which leaves two registers for the broadcast value and
/// the product, and in the two free registers during a run of units of value 1.
/// (Keeping all 16 in registers, the compiler spilled and reloaded three sums around
/// every product, and it does not keep the layout asked for here from intrinsics.)
/// The same operations on every sum in the same order as [`block`]: a unit of value 1
/// adds its weight (`vaddps`), any other value adds the rounded product (`vmulps`,
/// then `vaddps`; no fused multiply-add).
///
/// # Safety
/// The CPU has AVX2, `start + 128 <= h.len()` and `<= b1.len()`, and
/// `(j + 1) * h.len() <= w1.len()` for every index `j` of `idx`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn block128_avx2(
    b1: &[f32],
    w1: &[f32],
    idx: &[u16],
    val: &[f32],
    h: &mut [f32],
    start: usize,
) {
    use std::arch::x86_64::*;
    let hidden = h.len();
    // SAFETY (every access below): units `start..start + 128` of `b1`, `h` and row
    // `j` of `w1`, by the contract.
    unsafe {
        let bp = b1.as_ptr().add(start);
        let hp = h.as_mut_ptr().add(start);
        let mut a0 = _mm256_loadu_ps(bp.add(0));
        let mut a1 = _mm256_loadu_ps(bp.add(8));
        let mut a2 = _mm256_loadu_ps(bp.add(16));
        let mut a3 = _mm256_loadu_ps(bp.add(24));
        let mut a4 = _mm256_loadu_ps(bp.add(32));
        let mut a5 = _mm256_loadu_ps(bp.add(40));
        let mut a6 = _mm256_loadu_ps(bp.add(48));
        let mut a7 = _mm256_loadu_ps(bp.add(56));
        let mut a8 = _mm256_loadu_ps(bp.add(64));
        let mut a9 = _mm256_loadu_ps(bp.add(72));
        let mut a10 = _mm256_loadu_ps(bp.add(80));
        let mut a11 = _mm256_loadu_ps(bp.add(88));
        let mut a12 = _mm256_loadu_ps(bp.add(96));
        let mut a13 = _mm256_loadu_ps(bp.add(104));
        _mm256_storeu_ps(hp.add(112), _mm256_loadu_ps(bp.add(112)));
        _mm256_storeu_ps(hp.add(120), _mm256_loadu_ps(bp.add(120)));
        let base = w1.as_ptr().add(start);
        // The value's bits are read as an integer for the compare, and broadcast from
        // memory for a product (no moves between vector and integer registers).
        let (ip, vp) = (idx.as_ptr(), val.as_ptr());
        let n = idx.len().min(val.len());
        let mut i = 0;
        while i < n {
            if *(vp.add(i) as *const u32) == ONE_BITS {
                // A run of units of value 1: the two sums kept in memory come into the
                // two registers a product needs, for the whole run.
                let mut a14 = _mm256_loadu_ps(hp.add(112));
                let mut a15 = _mm256_loadu_ps(hp.add(120));
                while i < n && *(vp.add(i) as *const u32) == ONE_BITS {
                    let col = base.add(*ip.add(i) as usize * hidden);
                    std::arch::asm!(
                        "vaddps {a0}, {a0}, ymmword ptr [{col} + 0]",
                        "vaddps {a1}, {a1}, ymmword ptr [{col} + 32]",
                        "vaddps {a2}, {a2}, ymmword ptr [{col} + 64]",
                        "vaddps {a3}, {a3}, ymmword ptr [{col} + 96]",
                        "vaddps {a4}, {a4}, ymmword ptr [{col} + 128]",
                        "vaddps {a5}, {a5}, ymmword ptr [{col} + 160]",
                        "vaddps {a6}, {a6}, ymmword ptr [{col} + 192]",
                        "vaddps {a7}, {a7}, ymmword ptr [{col} + 224]",
                        "vaddps {a8}, {a8}, ymmword ptr [{col} + 256]",
                        "vaddps {a9}, {a9}, ymmword ptr [{col} + 288]",
                        "vaddps {a10}, {a10}, ymmword ptr [{col} + 320]",
                        "vaddps {a11}, {a11}, ymmword ptr [{col} + 352]",
                        "vaddps {a12}, {a12}, ymmword ptr [{col} + 384]",
                        "vaddps {a13}, {a13}, ymmword ptr [{col} + 416]",
                        "vaddps {a14}, {a14}, ymmword ptr [{col} + 448]",
                        "vaddps {a15}, {a15}, ymmword ptr [{col} + 480]",
                        col = in(reg) col,
                        a0 = inout(ymm_reg) a0,
                        a1 = inout(ymm_reg) a1,
                        a2 = inout(ymm_reg) a2,
                        a3 = inout(ymm_reg) a3,
                        a4 = inout(ymm_reg) a4,
                        a5 = inout(ymm_reg) a5,
                        a6 = inout(ymm_reg) a6,
                        a7 = inout(ymm_reg) a7,
                        a8 = inout(ymm_reg) a8,
                        a9 = inout(ymm_reg) a9,
                        a10 = inout(ymm_reg) a10,
                        a11 = inout(ymm_reg) a11,
                        a12 = inout(ymm_reg) a12,
                        a13 = inout(ymm_reg) a13,
                        a14 = inout(ymm_reg) a14,
                        a15 = inout(ymm_reg) a15,
                        options(nostack, preserves_flags, readonly),
                    );
                    i += 1;
                }
                _mm256_storeu_ps(hp.add(112), a14);
                _mm256_storeu_ps(hp.add(120), a15);
                continue;
            }
            let col = base.add(*ip.add(i) as usize * hidden);
            {
                std::arch::asm!(
                    "vbroadcastss {b}, dword ptr [{v}]",
                    "vmulps {t}, {b}, ymmword ptr [{col} + 0]",
                    "vaddps {a0}, {a0}, {t}",
                    "vmulps {t}, {b}, ymmword ptr [{col} + 32]",
                    "vaddps {a1}, {a1}, {t}",
                    "vmulps {t}, {b}, ymmword ptr [{col} + 64]",
                    "vaddps {a2}, {a2}, {t}",
                    "vmulps {t}, {b}, ymmword ptr [{col} + 96]",
                    "vaddps {a3}, {a3}, {t}",
                    "vmulps {t}, {b}, ymmword ptr [{col} + 128]",
                    "vaddps {a4}, {a4}, {t}",
                    "vmulps {t}, {b}, ymmword ptr [{col} + 160]",
                    "vaddps {a5}, {a5}, {t}",
                    "vmulps {t}, {b}, ymmword ptr [{col} + 192]",
                    "vaddps {a6}, {a6}, {t}",
                    "vmulps {t}, {b}, ymmword ptr [{col} + 224]",
                    "vaddps {a7}, {a7}, {t}",
                    "vmulps {t}, {b}, ymmword ptr [{col} + 256]",
                    "vaddps {a8}, {a8}, {t}",
                    "vmulps {t}, {b}, ymmword ptr [{col} + 288]",
                    "vaddps {a9}, {a9}, {t}",
                    "vmulps {t}, {b}, ymmword ptr [{col} + 320]",
                    "vaddps {a10}, {a10}, {t}",
                    "vmulps {t}, {b}, ymmword ptr [{col} + 352]",
                    "vaddps {a11}, {a11}, {t}",
                    "vmulps {t}, {b}, ymmword ptr [{col} + 384]",
                    "vaddps {a12}, {a12}, {t}",
                    "vmulps {t}, {b}, ymmword ptr [{col} + 416]",
                    "vaddps {a13}, {a13}, {t}",
                    "vmulps {t}, {b}, ymmword ptr [{col} + 448]",
                    "vaddps {t}, {t}, ymmword ptr [{hp} + 448]",
                    "vmovups ymmword ptr [{hp} + 448], {t}",
                    "vmulps {t}, {b}, ymmword ptr [{col} + 480]",
                    "vaddps {t}, {t}, ymmword ptr [{hp} + 480]",
                    "vmovups ymmword ptr [{hp} + 480], {t}",
                    col = in(reg) col,
                    hp = in(reg) hp,
                    v = in(reg) vp.add(i),
                    b = out(ymm_reg) _,
                    t = out(ymm_reg) _,
                    a0 = inout(ymm_reg) a0,
                    a1 = inout(ymm_reg) a1,
                    a2 = inout(ymm_reg) a2,
                    a3 = inout(ymm_reg) a3,
                    a4 = inout(ymm_reg) a4,
                    a5 = inout(ymm_reg) a5,
                    a6 = inout(ymm_reg) a6,
                    a7 = inout(ymm_reg) a7,
                    a8 = inout(ymm_reg) a8,
                    a9 = inout(ymm_reg) a9,
                    a10 = inout(ymm_reg) a10,
                    a11 = inout(ymm_reg) a11,
                    a12 = inout(ymm_reg) a12,
                    a13 = inout(ymm_reg) a13,
                    options(nostack, preserves_flags),
                );
            }
            i += 1;
        }
        _mm256_storeu_ps(hp.add(0), a0);
        _mm256_storeu_ps(hp.add(8), a1);
        _mm256_storeu_ps(hp.add(16), a2);
        _mm256_storeu_ps(hp.add(24), a3);
        _mm256_storeu_ps(hp.add(32), a4);
        _mm256_storeu_ps(hp.add(40), a5);
        _mm256_storeu_ps(hp.add(48), a6);
        _mm256_storeu_ps(hp.add(56), a7);
        _mm256_storeu_ps(hp.add(64), a8);
        _mm256_storeu_ps(hp.add(72), a9);
        _mm256_storeu_ps(hp.add(80), a10);
        _mm256_storeu_ps(hp.add(88), a11);
        _mm256_storeu_ps(hp.add(96), a12);
        _mm256_storeu_ps(hp.add(104), a13);
    }
}

/// Whether the CPU has AVX-512F ([`block128_avx512`]; std caches the answer, as for
/// [`avx2`]).
#[cfg(target_arch = "x86_64")]
#[inline]
fn has_avx512f() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
}

/// [`block128_avx2`] with AVX-512F: the 128 hidden sums are eight 16-float vectors,
/// all in registers (of 32) for the whole pass, so no sum goes through memory. The
/// same operations on every sum in the same order as [`block`] (a unit of value 1
/// adds its weight; any other value adds the rounded product, `vmulps` then
/// `vaddps`, no fused multiply-add), so the same bits.
///
/// # Safety
/// The CPU has AVX-512F, `start + 128 <= h.len()` and `<= b1.len()`, and
/// `(j + 1) * h.len() <= w1.len()` for every index `j` of `idx`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn block128_avx512(
    b1: &[f32],
    w1: &[f32],
    idx: &[u16],
    val: &[f32],
    h: &mut [f32],
    start: usize,
) {
    use std::arch::x86_64::*;
    let hidden = h.len();
    // SAFETY (every access below): units `start..start + 128` of `b1`, `h` and row
    // `j` of `w1`, by the contract.
    unsafe {
        let bp = b1.as_ptr().add(start);
        let hp = h.as_mut_ptr().add(start);
        let mut a = [_mm512_setzero_ps(); 8];
        for (k, ak) in a.iter_mut().enumerate() {
            *ak = _mm512_loadu_ps(bp.add(16 * k));
        }
        let base = w1.as_ptr().add(start);
        for (&j, &v) in idx.iter().zip(val) {
            let col = base.add(j as usize * hidden);
            if v.to_bits() == ONE_BITS {
                for (k, ak) in a.iter_mut().enumerate() {
                    *ak = _mm512_add_ps(*ak, _mm512_loadu_ps(col.add(16 * k)));
                }
            } else {
                let b = _mm512_set1_ps(v);
                for (k, ak) in a.iter_mut().enumerate() {
                    *ak = _mm512_add_ps(*ak, _mm512_mul_ps(b, _mm512_loadu_ps(col.add(16 * k))));
                }
            }
        }
        for (k, ak) in a.iter().enumerate() {
            _mm512_storeu_ps(hp.add(16 * k), *ak);
        }
    }
}

/// The first layer in blocks of `WIDE` hidden units, then of `BLOCK`, then one unit
/// at a time (every hidden sum in input order, whatever its block).
#[inline(always)]
fn hidden_pre_any<const WIDE: usize, const BLOCK: usize>(
    b1: &[f32],
    w1: &[f32],
    x: &SparseInputs,
    h: &mut [f32],
) {
    hidden_pre_blocks::<WIDE, BLOCK, false>(b1, w1, x, h)
}

/// [`hidden_pre_any`]; with `AVX2` (only in code compiled for AVX2) and `WIDE == 128`
/// the wide blocks are [`block128_avx2`].
#[inline(always)]
fn hidden_pre_blocks<const WIDE: usize, const BLOCK: usize, const AVX2: bool>(
    b1: &[f32],
    w1: &[f32],
    x: &SparseInputs,
    h: &mut [f32],
) {
    let hidden = h.len();
    let n = x.len.min(x.idx.len());
    let (idx, val) = (&x.idx[..n], &x.val[..n]);
    assert!(b1.len() >= hidden, "b1 holds a bias per hidden unit");
    // Every row read below lies inside `w1`: checked once for all inputs (the largest
    // index; a fold the compiler vectorises), not once per input and block.
    let top = idx.iter().fold(0u16, |m, &j| m.max(j)) as usize;
    assert!(
        n == 0 || (top + 1) * hidden <= w1.len(),
        "input {top} has no row in w1"
    );
    let mut start = 0;
    while start + WIDE <= hidden {
        #[cfg(target_arch = "x86_64")]
        if AVX2 && WIDE == 128 {
            // SAFETY: set only where the CPU has AVX2 (and AVX-512F where
            // `has_avx512f` says so); `start + 128 <= hidden` and every index is at
            // most `top`.
            if has_avx512f() {
                unsafe { block128_avx512(b1, w1, idx, val, h, start) };
            } else {
                unsafe { block128_avx2(b1, w1, idx, val, h, start) };
            }
            start += WIDE;
            continue;
        }
        // SAFETY: `start + WIDE <= hidden` and every index is at most `top`.
        unsafe { block::<WIDE>(b1, w1, idx, val, h, start) };
        start += WIDE;
    }
    while start + BLOCK <= hidden {
        // SAFETY: `start + BLOCK <= hidden` and every index is at most `top`.
        unsafe { block::<BLOCK>(b1, w1, idx, val, h, start) };
        start += BLOCK;
    }
    // The rest (hidden not a multiple of the block): the same sums, a unit at a time.
    for k in start..hidden {
        let mut a = b1[k];
        for (&j, &v) in idx.iter().zip(val) {
            a += v * w1[j as usize * hidden + k];
        }
        h[k] = a;
    }
}

/// Hidden units `start..start + BLOCK` of [`hidden_pre_any`], kept in registers
/// across all inputs.
///
/// # Safety
/// `start + BLOCK <= h.len()` (the hidden units), and `(j + 1) * h.len() <= w1.len()`
/// for every index `j` of `idx`.
#[inline(always)]
unsafe fn block<const BLOCK: usize>(
    b1: &[f32],
    w1: &[f32],
    idx: &[u16],
    val: &[f32],
    h: &mut [f32],
    start: usize,
) {
    let hidden = h.len();
    let mut acc = [0f32; BLOCK];
    acc.copy_from_slice(&b1[start..start + BLOCK]);
    // SAFETY: the block of row `j` is `w1[j * hidden + start..][..BLOCK]`, inside `w1`
    // by the contract.
    let base = unsafe { w1.as_ptr().add(start) };
    for (&j, &v) in idx.iter().zip(val) {
        let col = unsafe { &*(base.add(j as usize * hidden) as *const [f32; BLOCK]) };
        // Most units are 1 (the first three unary units, flags): `1 × w` is exactly
        // `w`, so the product is skipped, not changed. (Compared as bits: one integer
        // compare.)
        if v.to_bits() == ONE_BITS {
            for (a, &w) in acc.iter_mut().zip(col) {
                *a += w;
            }
        } else {
            for (a, &w) in acc.iter_mut().zip(col) {
                *a += v * w;
            }
        }
    }
    h[start..start + BLOCK].copy_from_slice(&acc);
}

/// The bits of 1.0 (a unit of value 1 adds its weight without a product).
const ONE_BITS: u32 = 0x3f80_0000;

#[inline(always)]
fn outputs_any<const N: usize>(w2: &[f32], b2: &[f32; 4], h: &mut [f32]) -> [f32; 4] {
    for a in h.iter_mut() {
        *a = a.max(0.0);
    }
    let hidden = h.len();
    let mut z = [0f32; 4];
    for (k, zk) in z.iter_mut().enumerate().take(N) {
        *zk = b2[k] + dot(&w2[k * hidden..(k + 1) * hidden], h);
    }
    z
}

/// Dot product with 8 independent accumulators (lane `i mod 8`, so the compiler
/// vectorises it), then the lanes in order, then the tail.
#[inline(always)]
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    let mut s: f32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain loops the kernels replace (the former `Net::hidden_pre` and
    /// `Net::forward` arithmetic).
    fn reference(b1: &[f32], w1: &[f32], w2: &[f32], b2: &[f32; 4], x: &SparseInputs) -> [f32; 4] {
        let hn = b1.len();
        let mut h = b1.to_vec();
        for (j, v) in x.iter() {
            for (a, &w) in h.iter_mut().zip(&w1[j * hn..(j + 1) * hn]) {
                *a += v * w;
            }
        }
        for a in h.iter_mut() {
            *a = a.max(0.0);
        }
        let mut z = [0f32; 4];
        for (k, zk) in z.iter_mut().enumerate() {
            *zk = b2[k] + dot(&w2[k * hn..(k + 1) * hn], &h);
        }
        z
    }

    #[test]
    fn kernels_give_the_plain_loops_bits() {
        let mut seed = 0x1234_5678_9abc_def0u64;
        let mut rnd = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        for hidden in [1, 7, 32, 96, 100, 128, 256, 512] {
            let inputs = 204;
            let w1: Vec<f32> = (0..inputs * hidden).map(|_| rnd()).collect();
            let b1: Vec<f32> = (0..hidden).map(|_| rnd()).collect();
            let w2: Vec<f32> = (0..4 * hidden).map(|_| rnd()).collect();
            let b2 = [rnd(), rnd(), rnd(), rnd()];
            let mut x = SparseInputs::default();
            for (n, j) in (0..inputs).step_by(5).enumerate() {
                x.idx[n] = j as u16;
                x.val[n] = 1.0 + (n % 3) as f32 * 0.5;
                x.len = n + 1;
            }
            let mut h = vec![0f32; hidden];
            hidden_pre(&b1, &w1, &x, &mut h);
            let got = outputs(&w2, &b2, &mut h);
            let want = reference(&b1, &w1, &w2, &b2, &x);
            assert_eq!(
                got.map(f32::to_bits),
                want.map(f32::to_bits),
                "hidden {hidden}"
            );
            // Each x86-64 build of the 128-unit block the CPU can run, called directly
            // (`hidden_pre` above takes only the widest).
            #[cfg(target_arch = "x86_64")]
            if hidden >= 128 {
                for wide in [false, true] {
                    let has = if wide {
                        std::arch::is_x86_feature_detected!("avx512f")
                    } else {
                        std::arch::is_x86_feature_detected!("avx2")
                    };
                    if !has {
                        continue;
                    }
                    let (idx, val) = (&x.idx[..x.len], &x.val[..x.len]);
                    for start in (0..=hidden - 128).step_by(128) {
                        // SAFETY: the CPU has the feature, `start + 128 <= hidden`
                        // and every index is below `inputs`.
                        unsafe {
                            if wide {
                                block128_avx512(&b1, &w1, idx, val, &mut h, start)
                            } else {
                                block128_avx2(&b1, &w1, idx, val, &mut h, start)
                            }
                        }
                    }
                    let blocks = outputs_any::<4>(&w2, &b2, &mut h);
                    assert_eq!(
                        blocks.map(f32::to_bits),
                        want.map(f32::to_bits),
                        "hidden {hidden}, AVX-512 {wide}"
                    );
                }
            }
            // And the portable build of the same code, with each block size.
            for block in [32, 64, 128] {
                match block {
                    32 => hidden_pre_any::<32, 32>(&b1, &w1, &x, &mut h),
                    64 => hidden_pre_any::<64, 32>(&b1, &w1, &x, &mut h),
                    _ => hidden_pre_any::<128, 64>(&b1, &w1, &x, &mut h),
                }
                let any = outputs_any::<4>(&w2, &b2, &mut h);
                assert_eq!(
                    any.map(f32::to_bits),
                    want.map(f32::to_bits),
                    "hidden {hidden}"
                );
                // The first three outputs alone: the same bits, the fourth 0.
                let three = [want[0], want[1], want[2], 0.0].map(f32::to_bits);
                let any3 = outputs_any::<3>(&w2, &b2, &mut h.clone());
                assert_eq!(any3.map(f32::to_bits), three, "hidden {hidden}");
                let first3 = outputs_first::<3>(&w2, &b2, &mut h.clone());
                assert_eq!(first3.map(f32::to_bits), three, "hidden {hidden}");
            }
        }
    }
}
