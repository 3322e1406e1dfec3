//! A 256-bit unsigned integer for the exact sums of squares of rollouts
//! ([`super::rollout::RolloutSums`]): addition, products of 128-bit integers,
//! subtraction, conversion to `f64` and to big-endian bytes. Only what those sums need;
//! every operation that could overflow is checked.

/// An unsigned integer below 2^256: `hi · 2^128 + lo`. Ordered by value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct U256 {
    /// The high 128 bits.
    pub hi: u128,
    /// The low 128 bits.
    pub lo: u128,
}

impl U256 {
    /// Zero.
    pub const ZERO: U256 = U256 { hi: 0, lo: 0 };

    /// `x` as a 256-bit integer.
    pub const fn from_u128(x: u128) -> U256 {
        U256 { hi: 0, lo: x }
    }

    /// `a · b`, exactly.
    pub fn mul_u128(a: u128, b: u128) -> U256 {
        const M: u128 = u64::MAX as u128;
        let (a1, a0) = (a >> 64, a & M);
        let (b1, b0) = (b >> 64, b & M);
        let (p00, p01, p10, p11) = (a0 * b0, a0 * b1, a1 * b0, a1 * b1);
        // The middle column: p01 + p10 + the carry of p00, at most 3 · 2^128: split it.
        let mid = (p00 >> 64) + (p01 & M) + (p10 & M);
        let lo = (p00 & M) | (mid << 64);
        let hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
        U256 { hi, lo }
    }

    /// `self + other`, or `None` past 2^256 − 1.
    pub fn checked_add(self, other: U256) -> Option<U256> {
        let (lo, carry) = self.lo.overflowing_add(other.lo);
        let hi = self.hi.checked_add(other.hi)?.checked_add(carry as u128)?;
        Some(U256 { hi, lo })
    }

    /// `self − other`, or `None` below 0.
    pub fn checked_sub(self, other: U256) -> Option<U256> {
        let (lo, borrow) = self.lo.overflowing_sub(other.lo);
        let hi = self.hi.checked_sub(other.hi)?.checked_sub(borrow as u128)?;
        Some(U256 { hi, lo })
    }

    /// `self · n`, or `None` past 2^256 − 1.
    pub fn checked_mul_u64(self, n: u64) -> Option<U256> {
        let lo = U256::mul_u128(self.lo, n as u128);
        let hi = U256::mul_u128(self.hi, n as u128);
        if hi.hi != 0 {
            return None;
        }
        lo.checked_add(U256 { hi: hi.lo, lo: 0 })
    }

    /// The nearest `f64` of the value, as `hi · 2^128 + lo` with two roundings (a
    /// function of the value alone, so the same on every machine).
    pub fn to_f64(self) -> f64 {
        self.hi as f64 * 2f64.powi(128) + self.lo as f64
    }

    /// The value as big-endian bytes without leading zero bytes (empty for 0).
    pub fn to_be_bytes_min(self) -> Vec<u8> {
        let mut b = Vec::with_capacity(32);
        b.extend_from_slice(&self.hi.to_be_bytes());
        b.extend_from_slice(&self.lo.to_be_bytes());
        let skip = b.iter().take_while(|&&x| x == 0).count();
        b.split_off(skip)
    }

    /// The value of big-endian bytes (at most 32, leading zeros allowed), or `None`
    /// when longer.
    pub fn from_be_bytes(bytes: &[u8]) -> Option<U256> {
        let start = bytes.iter().take_while(|&&x| x == 0).count();
        let b = &bytes[start..];
        if b.len() > 32 {
            return None;
        }
        let mut full = [0u8; 32];
        full[32 - b.len()..].copy_from_slice(b);
        Some(U256 {
            hi: u128::from_be_bytes(full[..16].try_into().expect("16")),
            lo: u128::from_be_bytes(full[16..].try_into().expect("16")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn products_sums_and_differences_are_exact() {
        let m = u128::MAX;
        // (2^128 − 1)² = 2^256 − 2^129 + 1.
        assert_eq!(U256::mul_u128(m, m), U256 { hi: m - 1, lo: 1 });
        assert_eq!(
            U256::mul_u128(1 << 100, 1 << 100),
            U256 { hi: 1 << 72, lo: 0 }
        );
        assert_eq!(U256::mul_u128(3, 5), U256::from_u128(15));
        let a = U256::from_u128(m);
        assert_eq!(
            a.checked_add(U256::from_u128(1)),
            Some(U256 { hi: 1, lo: 0 })
        );
        assert_eq!(
            U256 { hi: 1, lo: 0 }.checked_sub(U256::from_u128(1)),
            Some(a)
        );
        assert_eq!(U256::ZERO.checked_sub(U256::from_u128(1)), None);
        assert_eq!(U256 { hi: m, lo: m }.checked_add(U256::from_u128(1)), None);
        assert_eq!(
            a.checked_mul_u64(u64::MAX),
            Some(U256::mul_u128(m, u64::MAX as u128))
        );
        assert_eq!(U256 { hi: m, lo: 0 }.checked_mul_u64(2), None);
        assert_eq!(U256 { hi: 1, lo: 0 }.to_f64(), 2f64.powi(128));
    }

    #[test]
    fn bytes_round_trip() {
        for v in [
            U256::ZERO,
            U256::from_u128(1),
            U256::from_u128(0x1234),
            U256 {
                hi: 7,
                lo: u128::MAX,
            },
            U256 {
                hi: u128::MAX,
                lo: 0,
            },
        ] {
            let b = v.to_be_bytes_min();
            assert_eq!(U256::from_be_bytes(&b), Some(v), "{b:?}");
        }
        assert!(U256::ZERO.to_be_bytes_min().is_empty());
        assert_eq!(U256::from_u128(0x1234).to_be_bytes_min(), [0x12, 0x34]);
        assert_eq!(U256::from_be_bytes(&[0, 0, 1]), Some(U256::from_u128(1)));
        assert_eq!(U256::from_be_bytes(&[1; 33]), None);
    }
}
