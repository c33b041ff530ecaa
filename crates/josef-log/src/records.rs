//! Record-level helpers the log needs beyond batch headers, over josef-records.

use bytes::Bytes;
use josef_records::{DecompressLimits, RecordBatch};

use crate::batch::BatchHeader;
use crate::index::TimestampOffset;

/// The first record of `batch` with timestamp `>= timestamp` and offset `>= starting_offset`
/// (Kafka's `FileRecords.searchForTimestamp` within one batch). Records are decoded (and
/// decompressed, bounded by `limits`); a batch whose records cannot be decoded answers at batch
/// granularity from its header.
pub(crate) fn first_record_at_or_after(
    batch: Bytes,
    header: &BatchHeader,
    timestamp: i64,
    starting_offset: i64,
    limits: &DecompressLimits,
) -> Option<TimestampOffset> {
    if header.max_timestamp < timestamp || header.last_offset() < starting_offset {
        return None;
    }
    let from_header = TimestampOffset {
        timestamp: header.max_timestamp,
        offset: header.base_offset.max(starting_offset),
    };
    let Ok(parsed) = RecordBatch::parse(batch) else {
        return Some(from_header);
    };
    let Ok(records) = parsed.records(limits) else {
        return Some(from_header);
    };
    for record in records {
        let Ok(record) = record else {
            return Some(from_header);
        };
        if record.timestamp >= timestamp && record.offset >= starting_offset {
            return Some(TimestampOffset {
                timestamp: record.timestamp,
                offset: record.offset,
            });
        }
    }
    None
}
