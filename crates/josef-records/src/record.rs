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

/// Iterator over the records of one v2 batch; yields `Result<Record, RecordsError>` and stops after
/// the first error.
///
/// It checks what Kafka's `DefaultRecord.readFrom` checks: every record's fields add up to exactly
/// its declared size, lengths are not below -1, header keys are not null, and the records section
/// holds exactly `record_count` records ([`RecordsError::RecordCountMismatch`] otherwise).
#[derive(Debug, Clone)]
pub struct RecordIter {
    data: Bytes,
    pos: usize,
    declared: i32,
    decoded: i32,
    base_offset: i64,
    base_timestamp: i64,
    log_append_time: Option<i64>,
    done: bool,
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
            pos: 0,
            declared,
            decoded: 0,
            base_offset,
            base_timestamp,
            log_append_time,
            done: false,
        }
    }

    /// The records section this iterator reads (decompressed when the batch is compressed).
    pub fn records_bytes(&self) -> &Bytes {
        &self.data
    }

    fn next_record(&mut self) -> Result<Option<Record>, RecordsError> {
        let data = &self.data[..];
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
        let key = self.read_bytes(rec, &mut pos, "key")?;
        let value = self.read_bytes(rec, &mut pos, "value")?;
        let header_count = read_varint(rec, &mut pos).map_err(in_record)?;
        if header_count < 0 {
            return Err(RecordsError::InvalidLength {
                what: "header count",
                length: header_count as i64,
            });
        }
        // Each header needs at least 2 bytes, so the capacity is bounded by the record size.
        let mut headers = Vec::with_capacity((header_count as usize).min((end - pos) / 2));
        for _ in 0..header_count {
            let key = self
                .read_bytes(rec, &mut pos, "header key")?
                .ok_or(RecordsError::InvalidRecord("null header key"))?;
            let value = self.read_bytes(rec, &mut pos, "header value")?;
            headers.push(Header { key, value });
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
        Ok(Some(Record {
            attributes,
            timestamp,
            offset: self.base_offset.wrapping_add(offset_delta as i64),
            timestamp_delta,
            offset_delta,
            key,
            value,
            headers,
        }))
    }

    #[inline]
    fn read_bytes(
        &self,
        rec: &[u8],
        pos: &mut usize,
        what: &'static str,
    ) -> Result<Option<Bytes>, RecordsError> {
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
        Ok(Some(self.data.slice(start..*pos)))
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
        if self.done {
            return None;
        }
        match self.next_record() {
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

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.done {
            return (0, Some(0));
        }
        let left = (self.declared - self.decoded).max(0) as usize;
        // One more item may be an error.
        (0, Some(left + 1))
    }
}
