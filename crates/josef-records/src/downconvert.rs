//! Down-conversion: v2 record batches rewritten as legacy message sets (magic 0 or 1) for clients
//! that fetch with Fetch v0–3, as Kafka did before 4.0 (`RecordsUtil.downConvert`,
//! `LazyDownConversionRecords`).
//!
//! The rules, batch by batch (Kafka's `RecordsUtil.downConvert` / `convertRecordBatch`):
//! - control batches (transaction markers) are skipped: legacy formats cannot express them;
//! - a zstd batch cannot be expressed either: [`RecordsError::UnknownCompression`] (the broker
//!   answers UNSUPPORTED_COMPRESSION_TYPE);
//! - offsets are kept; headers are dropped; magic 0 has no timestamp, magic 1 keeps the record
//!   timestamps and the batch's timestamp type (a `LogAppendTime` batch's append time is its max
//!   timestamp);
//! - an uncompressed batch becomes one message per record, and records below `first_offset` (the
//!   fetch offset) are left out, since an old consumer takes the first message it sees as the
//!   fetch position;
//! - a compressed batch becomes one wrapper message with the same codec holding all of its
//!   records (old consumers skip the inner messages below their position themselves);
//! - entries already at or below the target magic are copied unchanged; a magic-1 message going
//!   to magic 0 is rewritten like a v2 batch.
//!
//! A torn tail (the input cut at a size limit) ends the conversion quietly, as Kafka's batch
//! iterator does.

use bytes::{Bytes, BytesMut};

use crate::legacy::{write_legacy_set, LegacyEntry};
use crate::{AnyBatch, AnyBatches, Compression, DecompressLimits, RecordsError, TimestampType};

/// The result of [`down_convert`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DownConverted {
    /// The legacy message set.
    pub records: Bytes,
    /// Bytes of `records` that came from the first input entry that produced any output: a fetch
    /// must send at least this much so that an old consumer can make progress (Kafka's
    /// `LazyDownConversionRecords` always sends its first converted chunk whole).
    pub first_entry_size: usize,
    /// Records written out as legacy messages (copied legacy entries not counted).
    pub converted_records: usize,
    /// Input bytes read (whole entries; a torn tail is not counted).
    pub consumed_bytes: usize,
}

/// Rewrites the entries of `records` (concatenated v2 batches and/or legacy messages, as a log
/// read or a fetch returns them) as a legacy message set of magic `to_magic` (0 or 1).
/// `first_offset` is the fetch offset: records below it in uncompressed batches are dropped.
/// Decompression of each batch is bounded by `limits`.
///
/// Errors: `to_magic` other than 0/1 is [`RecordsError::UnknownMagic`]; a zstd batch is
/// [`RecordsError::UnknownCompression`]; corrupt input fails with what the reader reports. A torn
/// tail is not an error.
///
/// ```
/// use josef_records::{
///     down_convert, Compression, DecompressLimits, LegacyMessageSet, RecordBatchBuilder,
/// };
/// let batch = RecordBatchBuilder::new()
///     .base_offset(40)
///     .compression(Compression::Gzip)
///     .record_with_headers(1_000, Some(b"k"), Some(b"v1"), &[(b"dropped", None)])
///     .record(1_001, None, Some(b"v2"))
///     .build_bytes()
///     .unwrap();
/// let limits = DecompressLimits::default();
/// let legacy = down_convert(batch, 1, 40, &limits).unwrap();
/// let records = LegacyMessageSet::new(legacy.records).records(&limits).unwrap();
/// assert_eq!(records.len(), 2);
/// assert_eq!((records[1].offset, records[1].timestamp), (41, 1_001));
/// assert_eq!(records[0].key.as_deref(), Some(&b"k"[..]));
/// ```
pub fn down_convert(
    records: Bytes,
    to_magic: i8,
    first_offset: i64,
    limits: &DecompressLimits,
) -> Result<DownConverted, RecordsError> {
    if !(0..=1).contains(&to_magic) {
        return Err(RecordsError::UnknownMagic(to_magic));
    }
    let mut out = BytesMut::new();
    let mut first_entry_size = None;
    let mut converted_records = 0usize;
    let mut entries = AnyBatches::new(records);
    for entry in entries.by_ref() {
        let entry = match entry {
            Ok(e) => e,
            Err(e) if e.is_truncated() => break,
            Err(e) => return Err(e),
        };
        let before = out.len();
        if entry.magic() <= to_magic {
            out.extend_from_slice(entry.as_bytes());
        } else {
            converted_records += convert_entry(&entry, to_magic, first_offset, limits, &mut out)?;
        }
        if first_entry_size.is_none() && out.len() > before {
            first_entry_size = Some(out.len() - before);
        }
    }
    Ok(DownConverted {
        records: out.freeze(),
        first_entry_size: first_entry_size.unwrap_or(0),
        converted_records,
        consumed_bytes: entries.position(),
    })
}

/// Owned fields of one record to write (the decoded batch owns the bytes).
struct Owned {
    offset: i64,
    timestamp: i64,
    key: Option<Bytes>,
    value: Option<Bytes>,
}

/// Converts one entry whose magic is above `to_magic`; returns the records written.
fn convert_entry(
    entry: &AnyBatch,
    to_magic: i8,
    first_offset: i64,
    limits: &DecompressLimits,
    out: &mut BytesMut,
) -> Result<usize, RecordsError> {
    let (codec, log_append_time, records) = match entry {
        AnyBatch::V2(batch) => {
            if batch.is_control() {
                return Ok(0);
            }
            let codec = batch.compression()?;
            if codec == Compression::Zstd {
                return Err(RecordsError::UnknownCompression(codec.id()));
            }
            let lat = (batch.timestamp_type() == TimestampType::LogAppendTime)
                .then_some(batch.max_timestamp);
            let mut records = Vec::new();
            for r in batch.records(limits)? {
                let r = r?;
                records.push(Owned {
                    offset: r.offset,
                    timestamp: r.timestamp,
                    key: r.key,
                    value: r.value,
                });
            }
            (codec, lat, records)
        }
        AnyBatch::Legacy(m) => {
            // Only magic 1 → 0 gets here; magic 0 has no timestamps to keep.
            let codec = m.compression()?;
            let records = m
                .records(limits)?
                .into_iter()
                .map(|r| Owned {
                    offset: r.offset,
                    timestamp: r.timestamp,
                    key: r.key,
                    value: r.value,
                })
                .collect();
            (codec, None, records)
        }
    };
    let keep = |r: &&Owned| codec != Compression::None || r.offset >= first_offset;
    let entries: Vec<LegacyEntry<'_>> = records
        .iter()
        .filter(keep)
        .map(|r| LegacyEntry {
            offset: r.offset,
            timestamp: r.timestamp,
            key: r.key.as_deref(),
            value: r.value.as_deref(),
        })
        .collect();
    write_legacy_set(out, to_magic, codec, log_append_time, &entries)?;
    Ok(entries.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        build_control_batch, ControlRecordType, EndTxnMarker, LegacyMessageSet, RecordBatchBuilder,
    };

    fn batch(base: i64, codec: Compression, n: usize) -> Bytes {
        let mut b = RecordBatchBuilder::new()
            .base_offset(base)
            .compression(codec);
        for i in 0..n {
            b = b.record(100 + i as i64, Some(b"k"), Some(format!("v{i}").as_bytes()));
        }
        b.build_bytes().unwrap()
    }

    fn offsets(set: &Bytes) -> Vec<i64> {
        LegacyMessageSet::new(set.clone())
            .records(&DecompressLimits::default())
            .unwrap()
            .iter()
            .map(|r| r.offset)
            .collect()
    }

    #[test]
    fn uncompressed_records_below_the_fetch_offset_are_dropped() {
        let d = down_convert(
            batch(10, Compression::None, 5),
            1,
            12,
            &DecompressLimits::default(),
        )
        .unwrap();
        assert_eq!(offsets(&d.records), [12, 13, 14]);
        assert_eq!(d.converted_records, 3);
    }

    #[test]
    fn compressed_batches_keep_records_below_the_fetch_offset() {
        let d = down_convert(
            batch(10, Compression::Gzip, 5),
            0,
            12,
            &DecompressLimits::default(),
        )
        .unwrap();
        assert_eq!(offsets(&d.records), [10, 11, 12, 13, 14]);
    }

    #[test]
    fn control_batches_are_skipped() {
        let marker = EndTxnMarker {
            control_type: ControlRecordType::Commit,
            coordinator_epoch: 0,
        };
        let marker = build_control_batch(7, 0, marker, 15, 0, 1_000);
        let mut input = BytesMut::new();
        input.extend_from_slice(&batch(10, Compression::None, 5));
        input.extend_from_slice(&marker);
        input.extend_from_slice(&batch(16, Compression::Snappy, 2));
        let d = down_convert(input.freeze(), 1, 0, &DecompressLimits::default()).unwrap();
        assert_eq!(offsets(&d.records), [10, 11, 12, 13, 14, 16, 17]);
    }

    #[test]
    fn zstd_batches_cannot_be_down_converted() {
        let err = down_convert(
            batch(0, Compression::Zstd, 1),
            1,
            0,
            &DecompressLimits::default(),
        )
        .unwrap_err();
        assert_eq!(err, RecordsError::UnknownCompression(4));
    }

    #[test]
    fn torn_tail_ends_the_conversion_quietly() {
        let mut input = BytesMut::new();
        input.extend_from_slice(&batch(0, Compression::None, 2));
        let whole = input.len();
        input.extend_from_slice(&batch(2, Compression::None, 2)[..30]);
        let d = down_convert(input.freeze(), 0, 0, &DecompressLimits::default()).unwrap();
        assert_eq!(offsets(&d.records), [0, 1]);
        assert_eq!(d.consumed_bytes, whole);
    }

    #[test]
    fn first_entry_size_counts_the_first_entry_with_output() {
        let mut input = BytesMut::new();
        input.extend_from_slice(&batch(0, Compression::None, 2));
        input.extend_from_slice(&batch(2, Compression::None, 3));
        let d = down_convert(input.freeze(), 1, 1, &DecompressLimits::default()).unwrap();
        // Offset 0 is dropped; the first entry gives one magic-1 message of 12 + 22 + 1 + 2 bytes.
        assert_eq!(d.first_entry_size, 12 + 22 + 1 + 2);
        assert_eq!(offsets(&d.records), [1, 2, 3, 4]);
    }

    #[test]
    fn magic_above_one_is_unknown_magic() {
        assert_eq!(
            down_convert(Bytes::new(), 2, 0, &DecompressLimits::default()),
            Err(RecordsError::UnknownMagic(2))
        );
    }
}
