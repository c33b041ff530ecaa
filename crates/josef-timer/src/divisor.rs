//! Division of `u64`s by a divisor fixed when the wheel is built (a wheel's tick, the wheel size):
//! a multiply-high and two shifts instead of a hardware `div`, which costs tens of cycles and sits on
//! the path of every timer insert and every bucket flush.
//!
//! The method is Granlund and Montgomery's ("Division by invariant integers using multiplication",
//! PLDI 1994, figure 4.1), exact for every `u64` dividend and every non-zero divisor.

#[derive(Clone, Copy, Debug)]
pub(crate) struct Divisor {
    divisor: u64,
    multiplier: u64,
    shift1: u32,
    shift2: u32,
}

impl Divisor {
    /// # Panics
    /// If `divisor` is zero (the wheel validates its tick and size before building one).
    pub(crate) fn new(divisor: u64) -> Self {
        assert!(divisor != 0, "division by zero");
        // l = ceil(log2(divisor))
        let l = 64 - (divisor - 1).leading_zeros();
        // m = floor(2^64 * (2^l - d) / d) + 1, which is below 2^64 because 2^l - d < d.
        let multiplier =
            ((1u128 << 64) * ((1u128 << l) - u128::from(divisor)) / u128::from(divisor) + 1) as u64;
        Divisor {
            divisor,
            multiplier,
            shift1: l.min(1),
            shift2: l.saturating_sub(1),
        }
    }

    /// The divisor.
    #[inline]
    pub(crate) fn get(self) -> u64 {
        self.divisor
    }

    /// `n / divisor`.
    #[inline]
    pub(crate) fn div(self, n: u64) -> u64 {
        let t1 = ((u128::from(self.multiplier) * u128::from(n)) >> 64) as u64;
        (t1 + ((n - t1) >> self.shift1)) >> self.shift2
    }

    /// `(n / divisor, n % divisor)`.
    #[inline]
    pub(crate) fn div_rem(self, n: u64) -> (u64, u64) {
        let q = self.div(n);
        (q, n - q * self.divisor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check(d: u64, n: u64) {
        let div = Divisor::new(d);
        assert_eq!(div.div_rem(n), (n / d, n % d), "{n} / {d}");
    }

    #[test]
    fn exact_at_the_edges() {
        let ds = [
            1,
            2,
            3,
            7,
            20,
            400,
            8_000,
            1 << 32,
            (1 << 32) + 1,
            u32::MAX as u64,
            (1 << 63) - 1,
            1 << 63,
            (1 << 63) + 1,
            u64::MAX - 1,
            u64::MAX,
        ];
        for &d in &ds {
            for n in [
                0,
                1,
                d - 1,
                d,
                d.wrapping_add(1),
                u64::MAX,
                u64::MAX - 1,
                1 << 63,
            ] {
                check(d, n);
            }
            for k in [2u64, 3, 1000, 1 << 20] {
                check(d, d.saturating_mul(k));
                check(d, d.saturating_mul(k).saturating_sub(1));
            }
        }
    }

    proptest! {
        #[test]
        fn matches_hardware_division(d in 1u64.., n: u64, small in 1u64..100_000, shift in 0u32..64) {
            check(d, n);
            check(small, n);
            check(small, n >> shift);
            check((d >> shift).max(1), n);
        }
    }
}
