//! CPU features the evaluator checks at run time: the encoder ([`super::inputs`]) and
//! the integer first layer ([`super::first_layer`]) each have a copy compiled for
//! AVX2 and choose it here, once per process.

/// Whether the CPU has AVX2 and the bit instructions POPCNT, LZCNT and BMI1 (which
/// every AVX2 CPU has; checked once).
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn has_avx2() -> bool {
    static AVX2: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVX2.get_or_init(|| {
        std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("popcnt")
            && std::arch::is_x86_feature_detected!("lzcnt")
            && std::arch::is_x86_feature_detected!("bmi1")
    })
}
