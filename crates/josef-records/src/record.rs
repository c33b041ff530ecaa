//! Records inside a v2 batch and the iterator that decodes them.

use bytes::Bytes;

use crate::varint::{read_varint, read_varlong};
use crate::RecordsError;

/// A record header: a key (a UTF-8 string in Kafka, kept here as bytes) and an optional value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Header {
    /// Header key; Kafka clients write UTF-8, see [`Header::key_str`].
    pub key: Bytes,
    /// Header value, `None` for a null value.
    pub value: Option<Bytes>,
}

impl Header {
    /// The key as a string, or the UTF-8 error when the key is not valid UTF-8.
    pub fn key_str(&self) -> Result<&str, std::str::Utf8Error> {
        std::str::from_utf8(&self.key)
    }
}

/// One decoded record. Keys, values and headers are slices of the batch's (decompressed) buffer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Record {
    /// Record attributes (unused by Kafka so far, kept as found).
    pub attributes: i8,
    /// Absolute timestamp: `base_timestamp + timestamp_delta`, or the batch max timestamp when the
    /// batch uses log append time.
    pub timestamp: i64,
    /// Absolute offset: `base_offset + offset_delta`.
    pub offset: i64,
    /// Timestamp relative to the batch base timestamp, as stored.
    pub timestamp_delta: i64,
    /// Offset relative to the batch base offset, as stored.
    pub offset_delta: i32,
    /// Key, `None` for a null key.
    pub key: Option<Bytes>,
    /// Value, `None` for a null value (a tombstone).
    pub value: Option<Bytes>,
    /// Headers in stored order.
    pub headers: Vec<Header>,
}

/// A record borrowed from a records buffer: keys, values and headers are `&[u8]` slices, so
/// iterating costs no reference counting at all. Obtained from [`RecordIter::refs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordRef<'a> {
    /// Record attributes.
    pub attributes: i8,
    /// Absolute timestamp (the batch max timestamp for log-append-time batches).
    pub timestamp: i64,
    /// Absolute offset.
    pub offset: i64,
    /// Stored timestamp delta.
    pub timestamp_delta: i64,
    /// Stored offset delta.
    pub offset_delta: i32,
    /// Key, `None` when null.
    pub key: Option<&'a [u8]>,
    /// Value, `None` when null.
    pub value: Option<&'a [u8]>,
    header_count: usize,
    headers_raw: &'a [u8],
}

impl<'a> RecordRef<'a> {
    /// Number of headers.
    pub fn header_count(&self) -> usize {
        self.header_count
    }

    /// The headers as `(key, value)` slices, in stored order (already validated).
    pub fn headers(&self) -> impl Iterator<Item = (&'a [u8], Option<&'a [u8]>)> + 'a {
        let raw = self.headers_raw;
        let mut pos = 0;
        (0..self.header_count).map_while(move |_| {
            let key = read_slice(raw, &mut pos, "header key").ok()??;
            let value = read_slice(raw, &mut pos, "header value").ok()?;
            Some((key, value))
        })
    }
}

/// Where a records iterator stands.
#[derive(Debug, Clone)]
struct Cursor {
    pos: usize,
    declared: i32,
    decoded: i32,
    base_offset: i64,
    base_timestamp: i64,
    log_append_time: Option<i64>,
    done: bool,
}

impl Cursor {
    /// Decodes the next record of `data`, checking what Kafka's `DefaultRecord.readFrom` checks.
    #[inline(always)]
    fn next_record<'a>(&mut self, data: &'a [u8]) -> Result<Option<RecordRef<'a>>, RecordsError> {
        if self.decoded >= self.declared {
            if self.pos < data.len() {
                return Err(RecordsError::RecordCountMismatch {
                    declared: self.declared as i64,
                    found: self.declared as i64 + 1,
                });
            }
            return Ok(None);
        }
        if self.pos >= data.len() {
            return Err(RecordsError::RecordCountMismatch {
                declared: self.declared as i64,
                found: self.decoded as i64,
            });
        }
        if let Some((record, end)) = self.try_decode(data) {
            self.pos = end;
            self.decoded += 1;
            return Ok(Some(record));
        }
        self.next_record_checked(data)
    }

    /// The hot path: decodes a well-formed record with small `Option` returns only, so no
    /// error value is built or moved per field. Any doubt returns `None`, and
    /// [`Cursor::next_record_checked`] re-reads the record to name the exact error.
    #[inline(always)]
    fn try_decode<'a>(&self, data: &'a [u8]) -> Option<(RecordRef<'a>, usize)> {
        let mut pos = self.pos;
        let size = fast::varint(data, &mut pos)?;
        let end = pos.wrapping_add(size as isize as usize);
        let rec = data.get(..end)?;
        if end < pos {
            return None;
        }
        let attributes = *rec.get(pos)? as i8;
        pos += 1;
        let timestamp_delta = fast::varlong(rec, &mut pos)?;
        let offset_delta = fast::varint(rec, &mut pos)?;
        let key = fast::slice(rec, &mut pos)?;
        let value = fast::slice(rec, &mut pos)?;
        let header_count = fast::varint(rec, &mut pos)?;
        if header_count < 0 {
            return None;
        }
        let headers_start = pos;
        for _ in 0..header_count {
            fast::slice(rec, &mut pos)??;
            fast::slice(rec, &mut pos)?;
        }
        if pos != end {
            return None;
        }
        let timestamp = match self.log_append_time {
            Some(t) => t,
            None => self.base_timestamp.wrapping_add(timestamp_delta),
        };
        Some((
            RecordRef {
                attributes,
                timestamp,
                offset: self.base_offset.wrapping_add(offset_delta as i64),
                timestamp_delta,
                offset_delta,
                key,
                value,
                header_count: header_count as usize,
                headers_raw: &rec[headers_start..end],
            },
            end,
        ))
    }

    /// Decodes the record at `self.pos` field by field with full error reporting.
    #[cold]
    #[inline(never)]
    fn next_record_checked<'a>(
        &mut self,
        data: &'a [u8],
    ) -> Result<Option<RecordRef<'a>>, RecordsError> {
        let mut pos = self.pos;
        let size = read_varint(data, &mut pos).map_err(in_record)?;
        if size < 0 || size as usize > data.len() - pos {
            return Err(RecordsError::InvalidLength {
                what: "record",
                length: size as i64,
            });
        }
        let end = pos + size as usize;
        let rec = &data[..end];
        let attributes = *rec.get(pos).ok_or(SHORT_RECORD)? as i8;
        pos += 1;
        let timestamp_delta = read_varlong(rec, &mut pos).map_err(in_record)?;
        let offset_delta = read_varint(rec, &mut pos).map_err(in_record)?;
        let key = read_slice(rec, &mut pos, "key")?;
        let value = read_slice(rec, &mut pos, "value")?;
        let header_count = read_varint(rec, &mut pos).map_err(in_record)?;
        if header_count < 0 {
            return Err(RecordsError::InvalidLength {
                what: "header count",
                length: header_count as i64,
            });
        }
        let headers_start = pos;
        for _ in 0..header_count {
            read_slice(rec, &mut pos, "header key")?
                .ok_or(RecordsError::InvalidRecord("null header key"))?;
            read_slice(rec, &mut pos, "header value")?;
        }
        if pos != end {
            return Err(RecordsError::InvalidRecord(
                "record fields do not add up to its size",
            ));
        }
        self.pos = end;
        self.decoded += 1;
        let timestamp = match self.log_append_time {
            Some(t) => t,
            None => self.base_timestamp.wrapping_add(timestamp_delta),
        };
        Ok(Some(RecordRef {
            attributes,
            timestamp,
            offset: self.base_offset.wrapping_add(offset_delta as i64),
            timestamp_delta,
            offset_delta,
            key,
            value,
            header_count: header_count as usize,
            headers_raw: &rec[headers_start..end],
        }))
    }

    fn step<'a>(&mut self, data: &'a [u8]) -> Option<Result<RecordRef<'a>, RecordsError>> {
        if self.done {
            return None;
        }
        match self.next_record(data) {
            Ok(Some(r)) => Some(Ok(r)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// Iterator over the records of one v2 batch; yields `Result<Record, RecordsError>` and stops after
/// the first error.
///
/// It checks what Kafka's `DefaultRecord.readFrom` checks: every record's fields add up to exactly
/// its declared size, lengths are not below -1, header keys are not null, and the records section
/// holds exactly `record_count` records ([`RecordsError::RecordCountMismatch`] otherwise).
/// [`RecordIter::refs`] iterates the same records as borrowed [`RecordRef`]s, without reference
/// counting, for hot paths.
#[derive(Debug, Clone)]
pub struct RecordIter {
    data: Bytes,
    cursor: Cursor,
}

impl RecordIter {
    pub(crate) fn new(
        data: Bytes,
        declared: i32,
        base_offset: i64,
        base_timestamp: i64,
        log_append_time: Option<i64>,
    ) -> RecordIter {
        RecordIter {
            data,
            cursor: Cursor {
                pos: 0,
                declared,
                decoded: 0,
                base_offset,
                base_timestamp,
                log_append_time,
                done: false,
            },
        }
    }

    /// The records section this iterator reads (decompressed when the batch is compressed).
    pub fn records_bytes(&self) -> &Bytes {
        &self.data
    }

    /// Iterates the records (from where this iterator stands) as borrowed [`RecordRef`]s.
    ///
    /// ```
    /// use josef_records::{DecompressLimits, RecordBatch, RecordBatchBuilder};
    /// let b = RecordBatchBuilder::new()
    ///     .record_with_headers(1, Some(b"k"), Some(b"v"), &[(b"h", Some(b"x"))])
    ///     .build_bytes()
    ///     .unwrap();
    /// let records = RecordBatch::parse(b).unwrap().records(&DecompressLimits::default()).unwrap();
    /// for r in records.refs() {
    ///     let r = r.unwrap();
    ///     assert_eq!(r.value, Some(&b"v"[..]));
    ///     assert_eq!(r.headers().collect::<Vec<_>>(), [(&b"h"[..], Some(&b"x"[..]))]);
    /// }
    /// ```
    pub fn refs(&self) -> RecordRefIter<'_> {
        RecordRefIter {
            data: &self.data,
            cursor: self.cursor.clone(),
        }
    }

    fn to_owned_record(&self, r: &RecordRef<'_>) -> Record {
        let data = &self.data;
        Record {
            attributes: r.attributes,
            timestamp: r.timestamp,
            offset: r.offset,
            timestamp_delta: r.timestamp_delta,
            offset_delta: r.offset_delta,
            key: r.key.map(|k| data.slice_ref(k)),
            value: r.value.map(|v| data.slice_ref(v)),
            headers: if r.header_count == 0 {
                Vec::new()
            } else {
                r.headers()
                    .map(|(k, v)| Header {
                        key: data.slice_ref(k),
                        value: v.map(|v| data.slice_ref(v)),
                    })
                    .collect()
            },
        }
    }
}

/// Borrowed twin of [`RecordIter`]: yields [`RecordRef`]s; see [`RecordIter::refs`].
#[derive(Debug, Clone)]
pub struct RecordRefIter<'a> {
    data: &'a [u8],
    cursor: Cursor,
}

impl<'a> RecordRefIter<'a> {
    /// Records of a (decompressed) records section, for callers inside the crate that hold a
    /// plain slice (the produce validator).
    pub(crate) fn over(
        data: &'a [u8],
        declared: i32,
        base_offset: i64,
        base_timestamp: i64,
        log_append_time: Option<i64>,
    ) -> RecordRefIter<'a> {
        RecordRefIter {
            data,
            cursor: Cursor {
                pos: 0,
                declared,
                decoded: 0,
                base_offset,
                base_timestamp,
                log_append_time,
                done: false,
            },
        }
    }
}

impl<'a> Iterator for RecordRefIter<'a> {
    type Item = Result<RecordRef<'a>, RecordsError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let c = &mut self.cursor;
        // Straight to the fast decoder: no intermediate Result/Option layers to move the
        // record through. Past the declared count, at the end, or on any doubt, `step` decides.
        if !c.done && c.decoded < c.declared {
            if let Some((record, end)) = c.try_decode(self.data) {
                c.pos = end;
                c.decoded += 1;
                return Some(Ok(record));
            }
        }
        self.cursor.step(self.data)
    }
}

#[inline]
fn read_slice<'a>(
    rec: &'a [u8],
    pos: &mut usize,
    what: &'static str,
) -> Result<Option<&'a [u8]>, RecordsError> {
    let len = read_varint(rec, pos).map_err(in_record)?;
    if len == -1 {
        return Ok(None);
    }
    if len < 0 || len as usize > rec.len() - *pos {
        return Err(RecordsError::InvalidLength {
            what,
            length: len as i64,
        });
    }
    let start = *pos;
    *pos += len as usize;
    Ok(Some(&rec[start..*pos]))
}

/// Error-free twins of the varint and length-prefixed-slice readers for the hot path: `None`
/// wherever the checked readers return an error (truncation, overflow, a length below -1 or past
/// the record), with the same bit-dropping as Java's shifts.
mod fast {
    use crate::varint::{read_varint, read_varlong};

    /// A one- or two-byte zig-zag varint inline; longer ones (rare in records) through the
    /// checked reader, whose error just means `None` here.
    macro_rules! short_varint {
        ($name:ident, $signed:ty, $unsigned:ty, $checked:ident) => {
            #[inline(always)]
            pub(super) fn $name(buf: &[u8], pos: &mut usize) -> Option<$signed> {
                let b = *buf.get(*pos)?;
                if b < 0x80 {
                    *pos += 1;
                    return Some(((b >> 1) as $signed) ^ -((b & 1) as $signed));
                }
                // Two bytes cover sizes, lengths and deltas below 8 KiB: most records of most
                // batches.
                if let Some(&b1) = buf.get(*pos + 1) {
                    if b1 < 0x80 {
                        let v = (b & 0x7f) as $unsigned | ((b1 as $unsigned) << 7);
                        *pos += 2;
                        return Some(((v >> 1) as $signed) ^ -((v & 1) as $signed));
                    }
                }
                $checked(buf, pos).ok()
            }
        };
    }

    short_varint!(varint, i32, u32, read_varint);
    short_varint!(varlong, i64, u64, read_varlong);

    /// `Some(None)` for a null (-1) length, `None` for anything invalid.
    #[inline(always)]
    pub(super) fn slice<'a>(rec: &'a [u8], pos: &mut usize) -> Option<Option<&'a [u8]>> {
        let len = varint(rec, pos)?;
        if len == -1 {
            return Some(None);
        }
        // A negative length sign-extends past any remaining length: one compare checks both.
        let len = len as isize as usize;
        let start = *pos;
        let end = start.wrapping_add(len);
        let slice = rec.get(start..end)?;
        *pos = end;
        Some(Some(slice))
    }
}

const SHORT_RECORD: RecordsError = RecordsError::InvalidRecord("record fields exceed its size");

/// Inside a record whose size is known, running out of bytes is corruption, not a torn tail.
fn in_record(e: RecordsError) -> RecordsError {
    if e.is_truncated() {
        SHORT_RECORD
    } else {
        e
    }
}

impl Iterator for RecordIter {
    type Item = Result<Record, RecordsError>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(match self.cursor.step(&self.data)? {
            Ok(r) => Ok(self.to_owned_record(&r)),
            Err(e) => Err(e),
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.cursor.done {
            return (0, Some(0));
        }
        let left = (self.cursor.declared - self.cursor.decoded).max(0) as usize;
        // One more item may be an error.
        (0, Some(left + 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cursor() -> Cursor {
        Cursor {
            pos: 0,
            declared: 1,
            decoded: 0,
            base_offset: 100,
            base_timestamp: 1_000,
            log_append_time: None,
            done: false,
        }
    }

    /// A well-formed record to mutate: size, attributes, deltas, key, value, one header.
    fn record_bytes(key: &[u8], value: &[u8]) -> Vec<u8> {
        use crate::varint::{put_varint, put_varlong};
        let mut body = vec![0u8];
        put_varlong(&mut body, 300);
        put_varint(&mut body, 7);
        put_varint(&mut body, key.len() as i32);
        body.extend_from_slice(key);
        put_varint(&mut body, value.len() as i32);
        body.extend_from_slice(value);
        put_varint(&mut body, 1);
        put_varint(&mut body, 1);
        body.push(b'h');
        put_varint(&mut body, -1);
        let mut out = Vec::new();
        put_varint(&mut out, body.len() as i32);
        out.extend_from_slice(&body);
        out
    }

    proptest! {
        /// The fast path accepts exactly what the checked path accepts, with the same record
        /// and end position; what it refuses, the checked path names as an error.
        #[test]
        fn fast_path_agrees_with_checked_path(
            key in proptest::collection::vec(any::<u8>(), 0..200),
            value in proptest::collection::vec(any::<u8>(), 0..200),
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4),
            cut in any::<usize>(),
        ) {
            let mut bytes = record_bytes(&key, &value);
            for (at, b) in edits {
                let i = at % bytes.len();
                bytes[i] = b;
            }
            let cut = if cut % 4 == 0 { cut % (bytes.len() + 1) } else { bytes.len() };
            let data = &bytes[..cut];
            let fast = cursor().try_decode(data);
            let mut checked_cursor = cursor();
            let checked = checked_cursor.next_record_checked(data);
            match fast {
                Some((r, end)) => {
                    prop_assert_eq!(checked, Ok(Some(r)));
                    prop_assert_eq!(checked_cursor.pos, end);
                }
                None => prop_assert!(checked.is_err(), "checked accepted what fast refused"),
            }
        }
    }
}
