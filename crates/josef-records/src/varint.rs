//! Zig-zag varints as Kafka's `ByteUtils` reads and writes them.
//!
//! Reading mirrors Kafka exactly: a 32-bit varint may take at most 5 bytes and a 64-bit one at most
//! 10; a continuation bit on the last allowed byte is [`RecordsError::VarintOverflow`]; value bits
//! beyond the type's width in that last byte are dropped, as Java's shifts drop them.

use bytes::BufMut;

use crate::RecordsError;

/// Reads a zig-zag 32-bit varint from `buf[*pos..]`, advancing `pos`.
#[inline]
pub fn read_varint(buf: &[u8], pos: &mut usize) -> Result<i32, RecordsError> {
    let mut value: u32 = 0;
    let mut shift = 0u32;
    loop {
        let Some(&b) = buf.get(*pos) else {
            return Err(RecordsError::Truncated {
                needed: *pos + 1,
                available: buf.len(),
            });
        };
        *pos += 1;
        if b & 0x80 == 0 {
            value |= (b as u32).wrapping_shl(shift);
            return Ok(((value >> 1) as i32) ^ -((value & 1) as i32));
        }
        value |= ((b & 0x7f) as u32).wrapping_shl(shift);
        shift += 7;
        if shift > 28 {
            return Err(RecordsError::VarintOverflow);
        }
    }
}

/// Reads a zig-zag 64-bit varint from `buf[*pos..]`, advancing `pos`.
#[inline]
pub fn read_varlong(buf: &[u8], pos: &mut usize) -> Result<i64, RecordsError> {
    let mut value: u64 = 0;
    let mut shift = 0u32;
    loop {
        let Some(&b) = buf.get(*pos) else {
            return Err(RecordsError::Truncated {
                needed: *pos + 1,
                available: buf.len(),
            });
        };
        *pos += 1;
        if b & 0x80 == 0 {
            value |= (b as u64).wrapping_shl(shift);
            return Ok(((value >> 1) as i64) ^ -((value & 1) as i64));
        }
        value |= ((b & 0x7f) as u64).wrapping_shl(shift);
        shift += 7;
        if shift > 63 {
            return Err(RecordsError::VarintOverflow);
        }
    }
}

/// Appends `v` as a zig-zag 32-bit varint.
#[inline]
pub fn put_varint<B: BufMut + ?Sized>(out: &mut B, v: i32) {
    let mut z = ((v << 1) ^ (v >> 31)) as u32;
    while z & !0x7f != 0 {
        out.put_u8(((z & 0x7f) | 0x80) as u8);
        z >>= 7;
    }
    out.put_u8(z as u8);
}

/// Appends `v` as a zig-zag 64-bit varint.
#[inline]
pub fn put_varlong<B: BufMut + ?Sized>(out: &mut B, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z & !0x7f != 0 {
        out.put_u8(((z & 0x7f) | 0x80) as u8);
        z >>= 7;
    }
    out.put_u8(z as u8);
}

/// Bytes `v` takes as a zig-zag 32-bit varint.
#[inline]
pub fn varint_size(v: i32) -> usize {
    let z = ((v << 1) ^ (v >> 31)) as u32;
    let bits = 32 - (z | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Bytes `v` takes as a zig-zag 64-bit varint.
#[inline]
pub fn varlong_size(v: i64) -> usize {
    let z = ((v << 1) ^ (v >> 63)) as u64;
    let bits = 64 - (z | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn varint_round_trip(v in any::<i32>()) {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            prop_assert_eq!(out.len(), varint_size(v));
            let mut pos = 0;
            prop_assert_eq!(read_varint(&out, &mut pos).unwrap(), v);
            prop_assert_eq!(pos, out.len());
        }

        #[test]
        fn varlong_round_trip(v in any::<i64>()) {
            let mut out = Vec::new();
            put_varlong(&mut out, v);
            prop_assert_eq!(out.len(), varlong_size(v));
            let mut pos = 0;
            prop_assert_eq!(read_varlong(&out, &mut pos).unwrap(), v);
            prop_assert_eq!(pos, out.len());
        }
    }

    #[test]
    fn varint_of_six_bytes_is_overflow() {
        let mut pos = 0;
        assert_eq!(
            read_varint(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x01], &mut pos),
            Err(RecordsError::VarintOverflow)
        );
        let mut pos = 0;
        // Five bytes with the last one terminating are fine, like Kafka.
        assert!(read_varint(&[0xff, 0xff, 0xff, 0xff, 0x0f], &mut pos).is_ok());
    }

    #[test]
    fn varlong_of_eleven_bytes_is_overflow() {
        let mut pos = 0;
        let mut b = [0xffu8; 11];
        b[10] = 1;
        assert_eq!(
            read_varlong(&b, &mut pos),
            Err(RecordsError::VarintOverflow)
        );
    }

    #[test]
    fn varint_cut_short_is_truncated() {
        let mut pos = 0;
        assert!(read_varint(&[0x80, 0x80], &mut pos)
            .unwrap_err()
            .is_truncated());
    }

    #[test]
    fn known_encodings() {
        let mut out = Vec::new();
        put_varint(&mut out, -1);
        put_varint(&mut out, 1);
        put_varint(&mut out, 64);
        assert_eq!(out, [0x01, 0x02, 0x80, 0x01]);
    }
}
