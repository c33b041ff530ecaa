//! Primitive encodings of the Kafka protocol, used by the generated code and useful on their own
//! (for example varints in record batches).
//!
//! Readers take `&mut Bytes` and advance it; they never panic and never allocate from a length that
//! has not been checked against the bytes remaining. Writers append to any `BufMut` (records through [`crate::EncodeBuf`], so they can be shared, not copied).

use crate::{
    DecodeError, EncodeBuf, EncodeError, RecordsFile, StrBytes, UnknownTaggedFields, Uuid,
};
use bytes::{Buf, BufMut, Bytes};
use smallvec::SmallVec;
use std::collections::btree_map;
use std::iter::Peekable;

/// Preallocation of decoded arrays is capped at this many bytes of elements; larger arrays grow as
/// their elements are actually read.
const MAX_PREALLOC_BYTES: usize = 64 * 1024;

/// Longest string Kafka allows (its length prefix is an int16 in every encoding Kafka writes).
const MAX_STRING_LEN: usize = i16::MAX as usize;

#[inline]
fn need(buf: &Bytes, n: usize) -> Result<(), DecodeError> {
    if buf.remaining() < n {
        Err(truncated(buf, n))
    } else {
        Ok(())
    }
}

#[cold]
#[inline(never)]
fn truncated(buf: &Bytes, needed: usize) -> DecodeError {
    DecodeError::Truncated {
        needed,
        remaining: buf.remaining(),
    }
}

/// The next `N` bytes, consumed. Inlined into every generated decoder: a fixed-size read is a
/// bounds check, a load and a pointer bump (the `Buf` getters were out-of-line calls).
#[inline(always)]
fn take<const N: usize>(buf: &mut Bytes) -> Result<[u8; N], DecodeError> {
    match buf.first_chunk::<N>() {
        Some(b) => {
            let b = *b;
            buf.advance(N);
            Ok(b)
        }
        None => Err(truncated(buf, N)),
    }
}

/// Reads a boolean (any non-zero byte is true, as in Kafka).
#[inline(always)]
pub fn get_bool(buf: &mut Bytes) -> Result<bool, DecodeError> {
    Ok(take::<1>(buf)?[0] != 0)
}

/// Reads an int8.
#[inline(always)]
pub fn get_i8(buf: &mut Bytes) -> Result<i8, DecodeError> {
    Ok(i8::from_be_bytes(take(buf)?))
}

/// Reads a big-endian int16.
#[inline(always)]
pub fn get_i16(buf: &mut Bytes) -> Result<i16, DecodeError> {
    Ok(i16::from_be_bytes(take(buf)?))
}

/// Reads a big-endian uint16.
#[inline(always)]
pub fn get_u16(buf: &mut Bytes) -> Result<u16, DecodeError> {
    Ok(u16::from_be_bytes(take(buf)?))
}

/// Reads a big-endian int32.
#[inline(always)]
pub fn get_i32(buf: &mut Bytes) -> Result<i32, DecodeError> {
    Ok(i32::from_be_bytes(take(buf)?))
}

/// Reads a big-endian uint32.
#[inline(always)]
pub fn get_u32(buf: &mut Bytes) -> Result<u32, DecodeError> {
    Ok(u32::from_be_bytes(take(buf)?))
}

/// Reads a big-endian int64.
#[inline(always)]
pub fn get_i64(buf: &mut Bytes) -> Result<i64, DecodeError> {
    Ok(i64::from_be_bytes(take(buf)?))
}

/// Reads a big-endian IEEE 754 float64.
#[inline(always)]
pub fn get_f64(buf: &mut Bytes) -> Result<f64, DecodeError> {
    Ok(f64::from_be_bytes(take(buf)?))
}

/// Reads a 16-byte uuid.
#[inline(always)]
pub fn get_uuid(buf: &mut Bytes) -> Result<Uuid, DecodeError> {
    Ok(Uuid::from_bytes(take(buf)?))
}

/// Reads an unsigned varint of at most 5 bytes (32 bits).
#[inline(always)]
pub fn get_uvarint(buf: &mut Bytes) -> Result<u32, DecodeError> {
    // One byte is the usual case (tagged-field counts, short lengths): inline; longer ones call.
    match buf.first() {
        Some(&b) if b < 0x80 => {
            buf.advance(1);
            Ok(u32::from(b))
        }
        _ => get_uvarint_long(buf),
    }
}

#[inline(never)]
fn get_uvarint_long(buf: &mut Bytes) -> Result<u32, DecodeError> {
    let (value, used) = uvarint_from(buf)?;
    buf.advance(used);
    Ok(value)
}

/// An unsigned varint of at most 5 bytes at the start of `s`, and the bytes it takes (Kafka's
/// byte-at-a-time loop). Shared by the readers over `Bytes` and over slices ([`crate::view`]).
#[inline]
pub(crate) fn uvarint_from(s: &[u8]) -> Result<(u32, usize), DecodeError> {
    let mut value: u32 = 0;
    let mut i = 0;
    while i < s.len() {
        let b = s[i];
        if i == 4 && b > 0x0f {
            return Err(DecodeError::VarintTooLong);
        }
        value |= u32::from(b & 0x7f) << (7 * i);
        i += 1;
        if b & 0x80 == 0 {
            return Ok((value, i));
        }
        if i == 5 {
            return Err(DecodeError::VarintTooLong);
        }
    }
    Err(DecodeError::Truncated {
        needed: s.len() + 1,
        remaining: s.len(),
    })
}

/// Reads a zig-zag signed varint (32 bits).
#[inline]
pub fn get_varint(buf: &mut Bytes) -> Result<i32, DecodeError> {
    let v = get_uvarint(buf)?;
    Ok(((v >> 1) as i32) ^ -((v & 1) as i32))
}

/// Reads an unsigned varlong of at most 10 bytes (64 bits).
#[inline]
pub fn get_uvarlong(buf: &mut Bytes) -> Result<u64, DecodeError> {
    let mut value: u64 = 0;
    for i in 0..10 {
        need(buf, 1)?;
        let b = buf.get_u8();
        if i == 9 && b > 0x01 {
            return Err(DecodeError::VarintTooLong);
        }
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(DecodeError::VarintTooLong)
}

/// Reads a zig-zag signed varlong (64 bits).
#[inline]
pub fn get_varlong(buf: &mut Bytes) -> Result<i64, DecodeError> {
    let v = get_uvarlong(buf)?;
    Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
}

/// Reads a length prefix: int16 (strings) or int32 (bytes, arrays) when not flexible, uvarint N+1
/// when flexible. `None` is null. The length is checked against the bytes remaining.
#[inline]
fn get_len(buf: &mut Bytes, flexible: bool, short: bool) -> Result<Option<usize>, DecodeError> {
    let len: i64 = if flexible {
        i64::from(get_uvarint(buf)?) - 1
    } else if short {
        i64::from(get_i16(buf)?)
    } else {
        i64::from(get_i32(buf)?)
    };
    checked_len(len, buf.remaining())
}

/// A length prefix's value as a length: `None` for -1 (null), an error when it is otherwise
/// negative or longer than the `remaining` bytes. Shared with [`crate::view`]'s readers.
#[inline(always)]
pub(crate) fn checked_len(len: i64, remaining: usize) -> Result<Option<usize>, DecodeError> {
    if len == -1 {
        return Ok(None);
    }
    if len < 0 || len as u64 > remaining as u64 {
        return Err(DecodeError::InvalidLength {
            length: len,
            remaining,
        });
    }
    Ok(Some(len as usize))
}

/// Reads a nullable string (zero copy).
#[inline]
pub fn get_nullable_string(
    buf: &mut Bytes,
    flexible: bool,
) -> Result<Option<StrBytes>, DecodeError> {
    match get_len(buf, flexible, true)? {
        None => Ok(None),
        Some(n) => {
            let b = buf.split_to(n);
            StrBytes::from_utf8(b)
                .map(Some)
                .map_err(|_| DecodeError::InvalidUtf8)
        }
    }
}

/// Reads a non-null string (zero copy).
#[inline]
pub fn get_string(buf: &mut Bytes, flexible: bool) -> Result<StrBytes, DecodeError> {
    get_nullable_string(buf, flexible)?.ok_or(DecodeError::UnexpectedNull)
}

/// Reads nullable bytes (zero copy: a slice of `buf`).
#[inline]
pub fn get_nullable_bytes(buf: &mut Bytes, flexible: bool) -> Result<Option<Bytes>, DecodeError> {
    Ok(get_len(buf, flexible, false)?.map(|n| buf.split_to(n)))
}

/// Reads non-null bytes (zero copy).
#[inline]
pub fn get_bytes(buf: &mut Bytes, flexible: bool) -> Result<Bytes, DecodeError> {
    get_nullable_bytes(buf, flexible)?.ok_or(DecodeError::UnexpectedNull)
}

/// Reads a nullable array whose elements `read` decodes. The count must not exceed the bytes
/// remaining (as in Kafka), and preallocation is capped.
#[inline]
pub fn get_nullable_array<T>(
    buf: &mut Bytes,
    flexible: bool,
    mut read: impl FnMut(&mut Bytes) -> Result<T, DecodeError>,
) -> Result<Option<Vec<T>>, DecodeError> {
    let Some(n) = get_len(buf, flexible, false)? else {
        return Ok(None);
    };
    let cap = n.min(MAX_PREALLOC_BYTES / std::mem::size_of::<T>().max(1));
    let mut v = Vec::with_capacity(cap);
    for _ in 0..n {
        v.push(read(buf)?);
    }
    Ok(Some(v))
}

/// Reads a non-null array.
#[inline]
pub fn get_array<T>(
    buf: &mut Bytes,
    flexible: bool,
    read: impl FnMut(&mut Bytes) -> Result<T, DecodeError>,
) -> Result<Vec<T>, DecodeError> {
    get_nullable_array(buf, flexible, read)?.ok_or(DecodeError::UnexpectedNull)
}

/// Reads a nullable array of fixed-size numbers into a `SmallVec`: short arrays (the usual replica
/// lists) stay inline, longer ones allocate once, capped as `get_nullable_array` caps.
#[inline]
pub fn get_nullable_small_array<A: smallvec::Array>(
    buf: &mut Bytes,
    flexible: bool,
    mut read: impl FnMut(&mut Bytes) -> Result<A::Item, DecodeError>,
) -> Result<Option<SmallVec<A>>, DecodeError> {
    let Some(n) = get_len(buf, flexible, false)? else {
        return Ok(None);
    };
    let mut v = SmallVec::new();
    if n > A::size() {
        v.reserve_exact(n.min(MAX_PREALLOC_BYTES / std::mem::size_of::<A::Item>().max(1)));
    }
    for _ in 0..n {
        v.push(read(buf)?);
    }
    Ok(Some(v))
}

/// Reads a non-null array of fixed-size numbers into a `SmallVec`.
#[inline]
pub fn get_small_array<A: smallvec::Array>(
    buf: &mut Bytes,
    flexible: bool,
    read: impl FnMut(&mut Bytes) -> Result<A::Item, DecodeError>,
) -> Result<SmallVec<A>, DecodeError> {
    get_nullable_small_array(buf, flexible, read)?.ok_or(DecodeError::UnexpectedNull)
}

/// Reads a nullable struct: an int8 marker (negative = null) then the struct.
#[inline]
pub fn get_nullable_struct<T>(
    buf: &mut Bytes,
    read: impl FnOnce(&mut Bytes) -> Result<T, DecodeError>,
) -> Result<Option<T>, DecodeError> {
    if get_i8(buf)? < 0 {
        Ok(None)
    } else {
        read(buf).map(Some)
    }
}

/// Reads one tagged field's tag and payload, checking that tags strictly increase.
#[inline]
pub fn get_tagged_field(
    buf: &mut Bytes,
    last_tag: &mut Option<u32>,
) -> Result<(u32, Bytes), DecodeError> {
    let tag = get_uvarint(buf)?;
    check_tag_order(tag, last_tag)?;
    let size = get_uvarint(buf)? as usize;
    check_tagged_size(size, buf.remaining())?;
    Ok((tag, buf.split_to(size)))
}

/// Checks that a tagged field's `tag` is strictly above the previous one, which it becomes.
/// Shared with [`crate::view`]'s readers.
#[inline(always)]
pub(crate) fn check_tag_order(tag: u32, last_tag: &mut Option<u32>) -> Result<(), DecodeError> {
    if let Some(previous) = *last_tag {
        if tag <= previous {
            return Err(DecodeError::TaggedFieldOrder { tag, previous });
        }
    }
    *last_tag = Some(tag);
    Ok(())
}

/// Checks that a tagged field's `size` fits in the `remaining` bytes. Shared with
/// [`crate::view`]'s readers.
#[inline(always)]
pub(crate) fn check_tagged_size(size: usize, remaining: usize) -> Result<(), DecodeError> {
    if size > remaining {
        return Err(DecodeError::InvalidLength {
            length: size as i64,
            remaining,
        });
    }
    Ok(())
}

/// Checks that a known tagged field's payload was read completely.
#[inline]
pub fn expect_consumed(buf: &Bytes, field: &'static str) -> Result<(), DecodeError> {
    crate::view::read::expect_consumed(buf, field)
}

/// Writes a boolean as 0 or 1.
#[inline]
pub fn put_bool<B: BufMut>(buf: &mut B, v: bool) {
    buf.put_u8(u8::from(v));
}

/// Writes an int8.
#[inline]
pub fn put_i8<B: BufMut>(buf: &mut B, v: i8) {
    buf.put_i8(v);
}

/// Writes a big-endian int16.
#[inline]
pub fn put_i16<B: BufMut>(buf: &mut B, v: i16) {
    buf.put_i16(v);
}

/// Writes a big-endian uint16.
#[inline]
pub fn put_u16<B: BufMut>(buf: &mut B, v: u16) {
    buf.put_u16(v);
}

/// Writes a big-endian int32.
#[inline]
pub fn put_i32<B: BufMut>(buf: &mut B, v: i32) {
    buf.put_i32(v);
}

/// Writes a big-endian uint32.
#[inline]
pub fn put_u32<B: BufMut>(buf: &mut B, v: u32) {
    buf.put_u32(v);
}

/// Writes a big-endian int64.
#[inline]
pub fn put_i64<B: BufMut>(buf: &mut B, v: i64) {
    buf.put_i64(v);
}

/// Writes a big-endian float64.
#[inline]
pub fn put_f64<B: BufMut>(buf: &mut B, v: f64) {
    buf.put_f64(v);
}

/// Writes a uuid.
#[inline]
pub fn put_uuid<B: BufMut>(buf: &mut B, v: &Uuid) {
    buf.put_slice(v.as_bytes());
}

/// Writes an unsigned varint.
#[inline]
pub fn put_uvarint<B: BufMut>(buf: &mut B, mut v: u32) {
    while v >= 0x80 {
        buf.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    buf.put_u8(v as u8);
}

/// Writes a zig-zag signed varint.
#[inline]
pub fn put_varint<B: BufMut>(buf: &mut B, v: i32) {
    put_uvarint(buf, ((v << 1) ^ (v >> 31)) as u32);
}

/// Writes an unsigned varlong.
#[inline]
pub fn put_uvarlong<B: BufMut>(buf: &mut B, mut v: u64) {
    while v >= 0x80 {
        buf.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    buf.put_u8(v as u8);
}

/// Writes a zig-zag signed varlong.
#[inline]
pub fn put_varlong<B: BufMut>(buf: &mut B, v: i64) {
    put_uvarlong(buf, ((v << 1) ^ (v >> 63)) as u64);
}

/// Writes a `usize` (a count or size) as an unsigned varint, failing above `u32::MAX`.
#[inline]
pub fn put_uvarint_len<B: BufMut>(buf: &mut B, v: usize) -> Result<(), EncodeError> {
    let v = u32::try_from(v).map_err(|_| EncodeError::TooLong {
        what: "varint",
        len: v,
    })?;
    put_uvarint(buf, v);
    Ok(())
}

/// Bytes of an unsigned varint.
#[inline]
pub const fn uvarint_size(v: u32) -> usize {
    match v {
        0..=0x7f => 1,
        0x80..=0x3fff => 2,
        0x4000..=0x1f_ffff => 3,
        0x20_0000..=0xfff_ffff => 4,
        _ => 5,
    }
}

/// Bytes of an unsigned varlong.
#[inline]
pub const fn uvarlong_size(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Bytes of a `usize` written as an unsigned varint (saturating; writing then fails).
#[inline]
pub fn usize_uvarint_size(v: usize) -> usize {
    if v < 0x80 {
        return 1;
    }
    uvarint_size(u32::try_from(v).unwrap_or(u32::MAX))
}

#[inline]
fn put_len<B: BufMut>(
    buf: &mut B,
    len: Option<usize>,
    flexible: bool,
    short: bool,
    what: &'static str,
) -> Result<(), EncodeError> {
    match len {
        None => {
            if flexible {
                put_uvarint(buf, 0);
            } else if short {
                put_i16(buf, -1);
            } else {
                put_i32(buf, -1);
            }
        }
        Some(n) => {
            let max = if short {
                MAX_STRING_LEN
            } else {
                i32::MAX as usize - 1
            };
            if n > max {
                return Err(EncodeError::TooLong { what, len: n });
            }
            if flexible {
                put_uvarint(buf, n as u32 + 1);
            } else if short {
                put_i16(buf, n as i16);
            } else {
                put_i32(buf, n as i32);
            }
        }
    }
    Ok(())
}

#[inline]
fn len_size(len: Option<usize>, flexible: bool, short: bool) -> usize {
    match (flexible, len) {
        (true, None) => 1,
        (true, Some(n)) => usize_uvarint_size(n.saturating_add(1)),
        (false, _) if short => 2,
        (false, _) => 4,
    }
}

/// Writes a non-null string.
#[inline]
pub fn put_string<B: BufMut>(buf: &mut B, s: &str, flexible: bool) -> Result<(), EncodeError> {
    put_len(buf, Some(s.len()), flexible, true, "string")?;
    buf.put_slice(s.as_bytes());
    Ok(())
}

/// Writes a nullable string.
#[inline]
pub fn put_nullable_string<B: BufMut>(
    buf: &mut B,
    s: Option<&str>,
    flexible: bool,
) -> Result<(), EncodeError> {
    match s {
        None => put_len(buf, None, flexible, true, "string"),
        Some(s) => put_string(buf, s, flexible),
    }
}

/// Writes non-null bytes.
#[inline]
pub fn put_bytes<B: BufMut>(buf: &mut B, b: &[u8], flexible: bool) -> Result<(), EncodeError> {
    put_len(buf, Some(b.len()), flexible, false, "bytes")?;
    buf.put_slice(b);
    Ok(())
}

/// Writes nullable bytes.
#[inline]
pub fn put_nullable_bytes<B: BufMut>(
    buf: &mut B,
    b: Option<&[u8]>,
    flexible: bool,
) -> Result<(), EncodeError> {
    match b {
        None => put_len(buf, None, flexible, false, "bytes"),
        Some(b) => put_bytes(buf, b, flexible),
    }
}

/// Writes a non-null `records` field: its length, then the records through
/// [`EncodeBuf::put_shared`] (a reference instead of a copy where the buffer can keep one).
#[inline]
pub fn put_records<B: EncodeBuf>(
    buf: &mut B,
    r: &Bytes,
    flexible: bool,
) -> Result<(), EncodeError> {
    put_len(buf, Some(r.len()), flexible, false, "records")?;
    buf.put_shared(r);
    Ok(())
}

/// Writes a `records` field held as a file slice: the length, then the slice as the buffer
/// takes it (a piece of its own in a [`crate::FrameChunks`], a copy elsewhere).
#[inline]
pub fn put_records_file<B: EncodeBuf>(
    buf: &mut B,
    file: &RecordsFile,
    flexible: bool,
) -> Result<(), EncodeError> {
    put_len(buf, Some(file.0.len()), flexible, false, "records")?;
    buf.put_records_file(file)
}

/// Encoded size of a `records` field held as a file slice.
#[inline]
pub fn records_file_size(file: &RecordsFile, flexible: bool) -> usize {
    len_size(Some(file.0.len()), flexible, false) + file.0.len()
}

/// Writes a nullable `records` field.
#[inline]
pub fn put_nullable_records<B: EncodeBuf>(
    buf: &mut B,
    r: Option<&Bytes>,
    flexible: bool,
) -> Result<(), EncodeError> {
    match r {
        None => put_len(buf, None, flexible, false, "records"),
        Some(r) => put_records(buf, r, flexible),
    }
}

/// Writes an array's element count.
#[inline]
pub fn put_array_len<B: BufMut>(
    buf: &mut B,
    len: usize,
    flexible: bool,
) -> Result<(), EncodeError> {
    put_len(buf, Some(len), flexible, false, "array")
}

/// Writes a null array.
#[inline]
pub fn put_null_array<B: BufMut>(buf: &mut B, flexible: bool) {
    if flexible {
        put_uvarint(buf, 0);
    } else {
        put_i32(buf, -1);
    }
}

/// Encoded size of a non-null string.
#[inline]
pub fn string_size(s: &str, flexible: bool) -> usize {
    len_size(Some(s.len()), flexible, true) + s.len()
}

/// Encoded size of a nullable string.
#[inline]
pub fn nullable_string_size(s: Option<&str>, flexible: bool) -> usize {
    match s {
        None => len_size(None, flexible, true),
        Some(s) => string_size(s, flexible),
    }
}

/// Encoded size of non-null bytes.
#[inline]
pub fn bytes_size(b: &[u8], flexible: bool) -> usize {
    len_size(Some(b.len()), flexible, false) + b.len()
}

/// Encoded size of nullable bytes.
#[inline]
pub fn nullable_bytes_size(b: Option<&[u8]>, flexible: bool) -> usize {
    match b {
        None => len_size(None, flexible, false),
        Some(b) => bytes_size(b, flexible),
    }
}

/// Encoded size of an array's element count.
#[inline]
pub fn array_len_size(len: usize, flexible: bool) -> usize {
    len_size(Some(len), flexible, false)
}

/// Encoded size of a null array.
#[inline]
pub fn null_array_size(flexible: bool) -> usize {
    len_size(None, flexible, false)
}

/// Iterator over unknown tagged fields, in tag order.
pub type UnknownTaggedFieldsIter<'a> = Peekable<btree_map::Iter<'a, u32, Bytes>>;

fn put_raw_tagged_field<B: BufMut>(buf: &mut B, tag: u32, data: &Bytes) -> Result<(), EncodeError> {
    put_uvarint(buf, tag);
    put_uvarint_len(buf, data.len())?;
    buf.put_slice(data);
    Ok(())
}

/// Writes the unknown tagged fields whose tag is below `tag` (so that known and unknown fields come
/// out in one increasing tag order).
#[inline]
pub fn put_unknown_tagged_fields_before<B: BufMut>(
    buf: &mut B,
    unknown: &mut UnknownTaggedFieldsIter<'_>,
    tag: u32,
) -> Result<(), EncodeError> {
    while let Some((t, data)) = unknown.next_if(|(t, _)| **t < tag) {
        put_raw_tagged_field(buf, *t, data)?;
    }
    Ok(())
}

/// Writes the remaining unknown tagged fields.
#[inline]
pub fn put_remaining_unknown_tagged_fields<B: BufMut>(
    buf: &mut B,
    unknown: &mut UnknownTaggedFieldsIter<'_>,
) -> Result<(), EncodeError> {
    for (t, data) in unknown {
        put_raw_tagged_field(buf, *t, data)?;
    }
    Ok(())
}

/// Encoded size of unknown tagged fields (tags, sizes and payloads, without the count).
#[inline]
pub fn unknown_tagged_fields_size(unknown: &UnknownTaggedFields) -> usize {
    if unknown.is_empty() {
        // The common case: skip building an iterator over the map.
        return 0;
    }
    unknown
        .iter()
        .map(|(t, d)| uvarint_size(*t) + usize_uvarint_size(d.len()) + d.len())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;

    #[test]
    fn uvarint_round_trips_and_sizes_agree() {
        for v in [
            0u32,
            1,
            127,
            128,
            16383,
            16384,
            2_097_151,
            2_097_152,
            268_435_455,
            268_435_456,
            u32::MAX,
        ] {
            let mut b = BytesMut::new();
            put_uvarint(&mut b, v);
            assert_eq!(b.len(), uvarint_size(v));
            let mut r = b.freeze();
            assert_eq!(get_uvarint(&mut r).unwrap(), v);
            assert!(r.is_empty());
        }
    }

    #[test]
    fn varlong_round_trips_and_sizes_agree() {
        for v in [0i64, -1, 1, 63, -64, 64, i64::MAX, i64::MIN] {
            let mut b = BytesMut::new();
            put_varlong(&mut b, v);
            assert_eq!(b.len(), uvarlong_size(((v << 1) ^ (v >> 63)) as u64));
            assert_eq!(get_varlong(&mut b.freeze()).unwrap(), v);
        }
    }

    /// The reference the inlined readers are checked against: Kafka's byte-at-a-time loop.
    fn uvarint_model(input: &[u8]) -> Option<(u32, usize)> {
        let mut value = 0u32;
        for (i, &b) in input.iter().enumerate().take(5) {
            if i == 4 && b > 0x0f {
                return None;
            }
            value |= u32::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Some((value, i + 1));
            }
        }
        None
    }

    proptest::proptest! {
        #[test]
        fn uvarint_reader_matches_the_byte_at_a_time_model(
            input in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..8),
            continuation in 0usize..6,
        ) {
            // Bias towards multi-byte varints: set the continuation bit on the first bytes.
            let mut input = input;
            for b in input.iter_mut().take(continuation) {
                *b |= 0x80;
            }
            let mut buf = Bytes::from(input.clone());
            match (get_uvarint(&mut buf), uvarint_model(&input)) {
                (Ok(v), Some((expected, used))) => {
                    proptest::prop_assert_eq!(v, expected);
                    proptest::prop_assert_eq!(buf.len(), input.len() - used);
                }
                (Err(_), None) => {}
                (got, expected) => proptest::prop_assert!(false, "{got:?} vs {expected:?}"),
            }
        }

        #[test]
        fn fixed_size_readers_read_big_endian_or_report_truncation(
            input in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..20),
        ) {
            let mut buf = Bytes::from(input.clone());
            match get_i64(&mut buf) {
                Ok(v) => {
                    proptest::prop_assert_eq!(v.to_be_bytes(), <[u8; 8]>::try_from(&input[..8]).unwrap());
                    proptest::prop_assert_eq!(buf.len(), input.len() - 8);
                }
                Err(e) => {
                    proptest::prop_assert!(input.len() < 8);
                    proptest::prop_assert_eq!(e, DecodeError::Truncated { needed: 8, remaining: input.len() });
                    proptest::prop_assert_eq!(buf.len(), input.len());
                }
            }
            let mut buf = Bytes::from(input.clone());
            proptest::prop_assert_eq!(get_uuid(&mut buf).is_ok(), input.len() >= 16);
        }
    }

    #[test]
    fn uvarint_longer_than_five_bytes_is_rejected() {
        let mut b = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0x7f]);
        assert_eq!(get_uvarint(&mut b), Err(DecodeError::VarintTooLong));
    }

    #[test]
    fn string_length_beyond_remaining_is_rejected_without_allocating() {
        let mut b = Bytes::from_static(&[0x7f, 0xff, b'a']);
        assert!(matches!(
            get_string(&mut b, false),
            Err(DecodeError::InvalidLength { .. })
        ));
    }

    #[test]
    fn array_count_beyond_remaining_is_rejected() {
        let mut b = Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff, 0, 0]);
        let r = get_array(&mut b, false, get_i8);
        assert!(matches!(r, Err(DecodeError::InvalidLength { .. })));
    }

    #[test]
    fn null_string_in_non_nullable_position_is_an_error() {
        let mut b = Bytes::from_static(&[0xff, 0xff]);
        assert_eq!(get_string(&mut b, false), Err(DecodeError::UnexpectedNull));
        let mut c = Bytes::from_static(&[0x00]);
        assert_eq!(get_nullable_string(&mut c, true), Ok(None));
    }

    #[test]
    fn tagged_fields_must_increase() {
        let mut b = Bytes::from_static(&[1, 0, 1, 0]);
        let mut last = None;
        assert_eq!(get_tagged_field(&mut b, &mut last).unwrap().0, 1);
        assert!(matches!(
            get_tagged_field(&mut b, &mut last),
            Err(DecodeError::TaggedFieldOrder { .. })
        ));
    }

    #[test]
    fn string_longer_than_int16_is_an_encode_error() {
        let s = "a".repeat(40_000);
        let mut b = BytesMut::new();
        assert!(matches!(
            put_string(&mut b, &s, true),
            Err(EncodeError::TooLong { .. })
        ));
    }
}
