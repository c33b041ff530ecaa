//! Kafka's 128-bit topic, directory and client instance ids.

use std::fmt;
use std::str::FromStr;

/// A Kafka UUID: 16 bytes, displayed as Kafka does (URL-safe base64 without padding, 22 characters).
///
/// This pure crate does not generate random ids; build one from bytes.
///
/// ```
/// use josef_protocol::Uuid;
/// let id = Uuid::from_bytes([7; 16]);
/// let text = id.to_string();
/// assert_eq!(text.len(), 22);
/// assert_eq!(text.parse::<Uuid>().unwrap(), id);
/// assert_eq!(Uuid::ZERO.to_string(), "AAAAAAAAAAAAAAAAAAAAAA");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Uuid([u8; 16]);

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// The text was not a 22-character URL-safe base64 UUID.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid Kafka UUID text")]
pub struct ParseUuidError;

impl Uuid {
    /// The all-zero id Kafka uses for "no id".
    pub const ZERO: Uuid = Uuid([0; 16]);

    /// Wraps 16 bytes (big-endian most significant half first, as on the wire).
    pub const fn from_bytes(bytes: [u8; 16]) -> Uuid {
        Uuid(bytes)
    }

    /// The 16 bytes.
    pub const fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// From Kafka's two halves (`mostSignificantBits`, `leastSignificantBits`).
    pub fn from_u64_pair(most: u64, least: u64) -> Uuid {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&most.to_be_bytes());
        b[8..].copy_from_slice(&least.to_be_bytes());
        Uuid(b)
    }

    /// From a 128-bit integer.
    pub const fn from_u128(v: u128) -> Uuid {
        Uuid(v.to_be_bytes())
    }

    /// As a 128-bit integer.
    pub const fn as_u128(&self) -> u128 {
        u128::from_be_bytes(self.0)
    }

    /// True for [`Uuid::ZERO`].
    pub fn is_zero(&self) -> bool {
        self.0 == [0; 16]
    }
}

impl fmt::Display for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = [0u8; 22];
        let mut acc: u32 = 0;
        let mut bits = 0;
        let mut n = 0;
        for &b in &self.0 {
            acc = (acc << 8) | u32::from(b);
            bits += 8;
            while bits >= 6 {
                bits -= 6;
                out[n] = ALPHABET[((acc >> bits) & 63) as usize];
                n += 1;
            }
        }
        if bits > 0 {
            out[n] = ALPHABET[((acc << (6 - bits)) & 63) as usize];
        }
        f.write_str(std::str::from_utf8(&out).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Uuid({self})")
    }
}

impl FromStr for Uuid {
    type Err = ParseUuidError;
    fn from_str(s: &str) -> Result<Uuid, ParseUuidError> {
        let s = s.as_bytes();
        if s.len() != 22 {
            return Err(ParseUuidError);
        }
        let mut out = [0u8; 16];
        let mut acc: u32 = 0;
        let mut bits = 0;
        let mut n = 0;
        for &c in s {
            let v = ALPHABET
                .iter()
                .position(|&a| a == c)
                .ok_or(ParseUuidError)? as u32;
            acc = (acc << 6) | v;
            bits += 6;
            if bits >= 8 {
                bits -= 8;
                if n < 16 {
                    out[n] = (acc >> bits) as u8;
                    n += 1;
                }
            }
        }
        // The last character carries 2 bits beyond the 128; Kafka's encoder leaves them zero.
        if acc & ((1 << bits) - 1) != 0 {
            return Err(ParseUuidError);
        }
        Ok(Uuid(out))
    }
}

impl From<[u8; 16]> for Uuid {
    fn from(b: [u8; 16]) -> Uuid {
        Uuid(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_matches_kafka_base64url() {
        // Kafka: new Uuid(0x0123456789abcdefL, 0xfedcba9876543210L).toString()
        let id = Uuid::from_u64_pair(0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210);
        assert_eq!(id.to_string(), "ASNFZ4mrze_-3LqYdlQyEA");
        assert_eq!("ASNFZ4mrze_-3LqYdlQyEA".parse::<Uuid>().unwrap(), id);
    }

    #[test]
    fn parse_rejects_bad_text() {
        assert!("short".parse::<Uuid>().is_err());
        assert!("ASNFZ4mrze_-3LqYdlQyE!".parse::<Uuid>().is_err());
    }
}
