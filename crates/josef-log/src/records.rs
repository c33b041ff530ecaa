//! Record-level helpers the log needs beyond batch headers.
//!
//! TEMPORARY: until josef-records (record iteration, decompression) lands, the timestamp search
//! answers at batch granularity.

use crate::batch::BatchHeader;
use crate::index::TimestampOffset;

/// The first record of `batch` with timestamp `>= timestamp` and offset `>= starting_offset`.
pub(crate) fn first_record_at_or_after(
    _batch: &[u8],
    header: &BatchHeader,
    timestamp: i64,
    starting_offset: i64,
) -> Option<TimestampOffset> {
    if header.max_timestamp < timestamp || header.last_offset() < starting_offset {
        return None;
    }
    Some(TimestampOffset {
        timestamp: header.max_timestamp,
        offset: header.base_offset.max(starting_offset),
    })
}
