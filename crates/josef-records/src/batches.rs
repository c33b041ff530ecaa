//! Splitting a buffer of concatenated log entries (a Produce request's records, a log segment, a
//! Fetch response) into batches without decoding records.
//!
//! Two iterators share one splitter:
//! - [`Batches`] yields only v2 [`RecordBatch`]es and reports a legacy (magic 0/1) entry as
//!   [`RecordsError::UnexpectedMagic`]; this is what a log and a Produce v3+ path want.
//! - [`AnyBatches`] yields [`AnyBatch`], either a v2 batch or a legacy message (a shallow entry: a
//!   compressed legacy wrapper is one entry; see [`crate::LegacyMessage::records`]), for Produce
//!   v0–v2 and for reading old segments.
//!
//! Both follow Kafka's `ByteBufferLogInputStream`: fewer than 12 bytes left, or fewer bytes than the
//! entry's length field announces, is [`RecordsError::Truncated`] (a torn tail, or a fetch cut at
//! its size limit); a length below the smallest legal entry (14 bytes, a v0 message) or a bad magic
//! is corruption. After any error the iterator ends; [`Batches::position`] tells how many bytes of
//! complete entries were yielded, which is where a log truncates a torn segment.

use bytes::Bytes;

use crate::header::{be_i32, offsets, BatchHeader, LOG_OVERHEAD};
use crate::legacy::{LegacyMessage, LEGACY_MIN_SIZE};
use crate::{RecordBatch, RecordsError};

/// One entry of a mixed stream: a v2 batch or a legacy v0/v1 message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnyBatch {
    /// A v2 record batch.
    V2(RecordBatch),
    /// A legacy message (possibly a compressed wrapper of more messages).
    Legacy(LegacyMessage),
}

impl AnyBatch {
    /// The bytes of the whole entry.
    pub fn as_bytes(&self) -> &Bytes {
        match self {
            AnyBatch::V2(b) => b.as_bytes(),
            AnyBatch::Legacy(m) => m.as_bytes(),
        }
    }

    /// The entry's magic byte.
    pub fn magic(&self) -> i8 {
        match self {
            AnyBatch::V2(_) => 2,
            AnyBatch::Legacy(m) => m.magic,
        }
    }
}

#[derive(Debug, Clone)]
struct Splitter {
    bytes: Bytes,
    pos: usize,
    done: bool,
}

impl Splitter {
    /// Finds the next entry: its magic and total size, or the error that ends the stream.
    fn next_entry(&mut self) -> Option<Result<(i8, usize), RecordsError>> {
        if self.done || self.pos >= self.bytes.len() {
            self.done = true;
            return None;
        }
        let rest = &self.bytes[self.pos..];
        let r = entry_extent(rest);
        if r.is_err() {
            self.done = true;
        }
        Some(r)
    }
}

/// The magic and total size of the entry at the start of `rest` (which is not empty).
fn entry_extent(rest: &[u8]) -> Result<(i8, usize), RecordsError> {
    if rest.len() < LOG_OVERHEAD {
        return Err(RecordsError::Truncated {
            needed: LOG_OVERHEAD,
            available: rest.len(),
        });
    }
    let length = be_i32(rest, offsets::BATCH_LENGTH);
    if length < LEGACY_MIN_SIZE as i32 {
        return Err(RecordsError::InvalidLength {
            what: "log entry",
            length: length as i64,
        });
    }
    let total = LOG_OVERHEAD + length as usize;
    if rest.len() < total {
        return Err(RecordsError::Truncated {
            needed: total,
            available: rest.len(),
        });
    }
    let magic = rest[offsets::MAGIC] as i8;
    if !(0..=2).contains(&magic) {
        return Err(RecordsError::UnknownMagic(magic));
    }
    Ok((magic, total))
}

/// Iterator over the v2 batches of a buffer; see the [module docs](self).
///
/// ```
/// use bytes::BytesMut;
/// use josef_records::{Batches, RecordBatchBuilder};
/// let mut buf = BytesMut::new();
/// buf.extend_from_slice(&RecordBatchBuilder::new().record(1, None, Some(b"a")).build().unwrap());
/// buf.extend_from_slice(&RecordBatchBuilder::new().base_offset(1).record(2, None, Some(b"b")).build().unwrap());
/// let whole = buf.len();
/// buf.extend_from_slice(&[0, 0, 0]); // a torn tail
/// let mut it = Batches::new(buf.freeze());
/// assert_eq!(it.next().unwrap().unwrap().base_offset, 0);
/// assert_eq!(it.next().unwrap().unwrap().base_offset, 1);
/// assert!(it.next().unwrap().unwrap_err().is_truncated());
/// assert!(it.next().is_none());
/// assert_eq!(it.position(), whole);
/// ```
#[derive(Debug, Clone)]
pub struct Batches {
    inner: Splitter,
}

impl Batches {
    /// Iterates the entries of `bytes`.
    pub fn new(bytes: Bytes) -> Batches {
        Batches {
            inner: Splitter {
                bytes,
                pos: 0,
                done: false,
            },
        }
    }

    /// Bytes covered by the entries yielded so far (the start of the first entry not yielded).
    pub fn position(&self) -> usize {
        self.inner.pos
    }

    /// The bytes not yet yielded.
    pub fn remaining(&self) -> Bytes {
        self.inner.bytes.slice(self.inner.pos..)
    }
}

impl Iterator for Batches {
    type Item = Result<RecordBatch, RecordsError>;

    fn next(&mut self) -> Option<Self::Item> {
        let s = &mut self.inner;
        let (magic, total) = match s.next_entry()? {
            Ok(x) => x,
            Err(e) => return Some(Err(e)),
        };
        if magic != 2 {
            s.done = true;
            return Some(Err(RecordsError::UnexpectedMagic {
                found: magic,
                expected: 2,
            }));
        }
        let header = match BatchHeader::parse(&s.bytes[s.pos..s.pos + total]) {
            Ok(h) => h,
            Err(e) => {
                s.done = true;
                return Some(Err(e));
            }
        };
        let bytes = s.bytes.slice(s.pos..s.pos + total);
        s.pos += total;
        Some(Ok(RecordBatch::from_parts(header, bytes)))
    }
}

/// Iterator over a buffer that may mix v2 batches and legacy messages; see the [module docs](self).
#[derive(Debug, Clone)]
pub struct AnyBatches {
    inner: Splitter,
}

impl AnyBatches {
    /// Iterates the entries of `bytes`.
    pub fn new(bytes: Bytes) -> AnyBatches {
        AnyBatches {
            inner: Splitter {
                bytes,
                pos: 0,
                done: false,
            },
        }
    }

    /// Bytes covered by the entries yielded so far.
    pub fn position(&self) -> usize {
        self.inner.pos
    }
}

impl Iterator for AnyBatches {
    type Item = Result<AnyBatch, RecordsError>;

    fn next(&mut self) -> Option<Self::Item> {
        let s = &mut self.inner;
        let (magic, total) = match s.next_entry()? {
            Ok(x) => x,
            Err(e) => return Some(Err(e)),
        };
        let bytes = s.bytes.slice(s.pos..s.pos + total);
        let entry = if magic == 2 {
            BatchHeader::parse(&bytes).map(|h| AnyBatch::V2(RecordBatch::from_parts(h, bytes)))
        } else {
            LegacyMessage::parse(bytes).map(AnyBatch::Legacy)
        };
        match entry {
            Ok(e) => {
                s.pos += total;
                Some(Ok(e))
            }
            Err(e) => {
                s.done = true;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RecordBatchBuilder;

    #[test]
    fn entry_length_below_legacy_minimum_is_corrupt_not_truncated() {
        let mut b = vec![0u8; 12];
        b[8..12].copy_from_slice(&13i32.to_be_bytes());
        let err = Batches::new(Bytes::from(b)).next().unwrap().unwrap_err();
        assert!(matches!(err, RecordsError::InvalidLength { .. }));
    }

    #[test]
    fn lying_length_past_the_end_is_truncated() {
        let mut b = RecordBatchBuilder::new()
            .record(0, None, Some(b"x"))
            .build()
            .unwrap()
            .to_vec();
        b[8..12].copy_from_slice(&1_000_000i32.to_be_bytes());
        let available = b.len();
        let err = Batches::new(Bytes::from(b)).next().unwrap().unwrap_err();
        assert_eq!(
            err,
            RecordsError::Truncated {
                needed: 1_000_012,
                available
            }
        );
    }

    #[test]
    fn unknown_magic_is_an_error() {
        let mut b = RecordBatchBuilder::new()
            .record(0, None, Some(b"x"))
            .build()
            .unwrap()
            .to_vec();
        b[16] = 9;
        let err = Batches::new(Bytes::from(b)).next().unwrap().unwrap_err();
        assert_eq!(err, RecordsError::UnknownMagic(9));
    }

    #[test]
    fn empty_buffer_yields_nothing() {
        assert!(Batches::new(Bytes::new()).next().is_none());
        assert!(AnyBatches::new(Bytes::new()).next().is_none());
    }
}
