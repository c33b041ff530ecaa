//! The SCRAM server nonce comes from outside, so sessions stay deterministic under test.

use std::sync::atomic::{AtomicU64, Ordering};

/// Source of SCRAM server nonces. A broker backs it with a CSPRNG (for example
/// `|| kafka_nonce(rand::random())`); tests use a fixed or counting source.
pub trait NonceSource: Send + Sync {
    /// A fresh nonce of printable ASCII without `,` (RFC 5802's `printable`).
    fn server_nonce(&self) -> String;
}

impl<F: Fn() -> String + Send + Sync> NonceSource for F {
    fn server_nonce(&self) -> String {
        self()
    }
}

/// Kafka's `ScramFormatter.secureRandomString()` shape: 130 random bits written in base 36
/// (lower-case, no leading zeros). Feed it 17 random bytes; the top 6 bits are dropped.
pub fn kafka_nonce(random: [u8; 17]) -> String {
    let mut value: u128 = 0;
    // 130 bits do not fit a u128: keep the low 128 in `value` and the 2 above in `high`.
    let high = u32::from(random[0] & 0b11);
    for b in &random[1..] {
        value = (value << 8) | u128::from(*b);
    }
    // Divide the 130-bit number (high:value) by 36 repeatedly.
    let mut digits = Vec::new();
    let (mut hi, mut lo) = (high as u128, value);
    loop {
        // (hi * 2^128 + lo) / 36, with hi < 36 after the first step and at most 3 at the start.
        let rem_hi = hi % 36;
        hi /= 36;
        // rem_hi * 2^128 + lo = rem_hi * (36 * q + r) + lo, with 2^128 = 36 * q + r.
        const Q: u128 = u128::MAX / 36; // (2^128 - 1) / 36
        const R: u128 = u128::MAX % 36 + 1; // 2^128 - 36 * Q
        let (lo_q, lo_r) = (lo / 36, lo % 36);
        let carry = rem_hi * R + lo_r;
        lo = rem_hi * Q + lo_q + carry / 36;
        let digit = (carry % 36) as u8;
        digits.push(if digit < 10 {
            b'0' + digit
        } else {
            b'a' + digit - 10
        });
        if hi == 0 && lo == 0 {
            break;
        }
    }
    digits.reverse();
    String::from_utf8(digits).expect("ASCII digits")
}

/// A deterministic source for tests: `prefix` followed by a counter.
#[derive(Debug)]
pub struct CountingNonce {
    prefix: String,
    next: AtomicU64,
}

impl CountingNonce {
    /// Nonces `prefix0`, `prefix1`, ...
    pub fn new(prefix: impl Into<String>) -> Self {
        CountingNonce {
            prefix: prefix.into(),
            next: AtomicU64::new(0),
        }
    }
}

impl NonceSource for CountingNonce {
    fn server_nonce(&self) -> String {
        format!(
            "{}{}",
            self.prefix,
            self.next.fetch_add(1, Ordering::Relaxed)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_nonce_is_base36_of_130_bits() {
        assert_eq!(kafka_nonce([0; 17]), "0");
        let mut one = [0u8; 17];
        one[16] = 35;
        assert_eq!(kafka_nonce(one), "z");
        one[16] = 36;
        assert_eq!(kafka_nonce(one), "10");
        // 2^128 = "f5lxx1zz5pnorynqglhzmsp34" in base 36.
        let mut p128 = [0u8; 17];
        p128[0] = 1;
        assert_eq!(kafka_nonce(p128), "f5lxx1zz5pnorynqglhzmsp34");
        // 2^130 - 1, the largest value: top bits beyond 130 are ignored.
        let max = [0xff; 17];
        assert_eq!(kafka_nonce(max), "1omfro7zwmumr3umxudzyj6scf");
        assert!(kafka_nonce(max).bytes().all(|b| b.is_ascii_alphanumeric()));
    }

    #[test]
    fn counting_nonce_counts() {
        let n = CountingNonce::new("x");
        assert_eq!(n.server_nonce(), "x0");
        assert_eq!(n.server_nonce(), "x1");
        let f = || "fixed".to_string();
        assert_eq!(f.server_nonce(), "fixed");
    }
}
