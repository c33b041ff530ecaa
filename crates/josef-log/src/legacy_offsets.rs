//! ListOffsets v0's offset lookup (Kafka's `legacyFetchOffsetsBefore`): old clients ask for up to
//! `max_num_offsets` offsets "before" a time, answered from segment base offsets and segment file
//! modification times. Kept here, next to the segments it reads, so any broker serving v0 can use it.

use crate::Log;

/// The `timestamp` that asks for the latest offset.
pub const LATEST_TIMESTAMP: i64 = -1;
/// The `timestamp` that asks for the earliest offset.
pub const EARLIEST_TIMESTAMP: i64 = -2;

/// What the legacy lookup needs of one segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentInfo {
    /// The segment's base offset.
    pub base_offset: i64,
    /// The `.log` file's modification time (ms since the epoch).
    pub last_modified_ms: i64,
    /// The segment's size in bytes.
    pub size: u32,
}

/// Kafka's `legacyFetchOffsetsBefore`: the candidate offsets are every segment's base offset (not
/// below the log start) with the segment's mtime, plus the LEO stamped `now` when the last segment
/// holds data. -1 (latest) starts from the last candidate, -2 (earliest) from the first, a
/// timestamp from the last candidate whose time is <= it; from there up to `max_num` candidates
/// going back, in descending offset order. `None` for a negative `max_num` (Kafka fails there).
///
/// ```
/// use josef_log::legacy_offsets::{legacy_fetch_offsets_before, SegmentInfo, LATEST_TIMESTAMP};
/// let seg = |base_offset, last_modified_ms| SegmentInfo { base_offset, last_modified_ms, size: 10 };
/// let segments = [seg(0, 100), seg(50, 200)];
/// // Latest: the LEO (stamped now), then the segment bases going back.
/// assert_eq!(
///     legacy_fetch_offsets_before(&segments, 0, 80, 1_000, LATEST_TIMESTAMP, 10),
///     Some(vec![80, 50, 0])
/// );
/// // Before time 150: only the first segment was last modified by then.
/// assert_eq!(legacy_fetch_offsets_before(&segments, 0, 80, 1_000, 150, 10), Some(vec![0]));
/// ```
pub fn legacy_fetch_offsets_before(
    segments: &[SegmentInfo],
    log_start_offset: i64,
    log_end_offset: i64,
    now_ms: i64,
    timestamp: i64,
    max_num: i32,
) -> Option<Vec<i64>> {
    let mut candidates: Vec<(i64, i64)> = segments
        .iter()
        .map(|s| (s.base_offset.max(log_start_offset), s.last_modified_ms))
        .collect();
    if segments.last().is_some_and(|s| s.size > 0) {
        candidates.push((log_end_offset, now_ms));
    }
    // Index one past the starting candidate (0: nothing qualifies).
    let start = match timestamp {
        LATEST_TIMESTAMP => candidates.len(),
        EARLIEST_TIMESTAMP => candidates.len().min(1),
        ts => candidates
            .iter()
            .rposition(|&(_, t)| t <= ts)
            .map_or(0, |i| i + 1),
    };
    let max_num = usize::try_from(max_num).ok()?;
    let mut offsets: Vec<i64> = candidates[..start]
        .iter()
        .rev()
        .take(max_num)
        .map(|&(o, _)| o)
        .collect();
    offsets.sort_unstable_by(|a, b| b.cmp(a));
    Some(offsets)
}

/// For consumers, offsets above the HW are replaced by the HW (`Partition.legacyFetchOffsetsForTimestamp`).
pub fn cap_at_high_watermark(offsets: Vec<i64>, hw: i64) -> Vec<i64> {
    if !offsets.iter().any(|&o| o > hw) {
        return offsets;
    }
    std::iter::once(hw)
        .chain(offsets.into_iter().skip_while(|&o| o > hw))
        .collect()
}

impl Log {
    /// [`legacy_fetch_offsets_before`] over this log's segments, with the LEO stamped `now_ms`.
    pub fn legacy_offsets_before(
        &self,
        timestamp: i64,
        max_num: i32,
        now_ms: i64,
    ) -> Option<Vec<i64>> {
        let segments: Vec<SegmentInfo> = self
            .segments()
            .map(|s| SegmentInfo {
                base_offset: s.base_offset(),
                last_modified_ms: s.last_modified_ms(),
                size: s.size(),
            })
            .collect();
        legacy_fetch_offsets_before(
            &segments,
            self.log_start_offset(),
            self.log_end_offset(),
            now_ms,
            timestamp,
            max_num,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(base_offset: i64, last_modified_ms: i64, size: u32) -> SegmentInfo {
        SegmentInfo {
            base_offset,
            last_modified_ms,
            size,
        }
    }

    #[test]
    fn v0_latest_is_the_leo_then_segment_bases_descending() {
        let segs = [seg(0, 100, 10), seg(50, 200, 10), seg(90, 300, 10)];
        assert_eq!(
            legacy_fetch_offsets_before(&segs, 0, 120, 1_000, LATEST_TIMESTAMP, 10),
            Some(vec![120, 90, 50, 0])
        );
        assert_eq!(
            legacy_fetch_offsets_before(&segs, 0, 120, 1_000, LATEST_TIMESTAMP, 1),
            Some(vec![120])
        );
    }

    #[test]
    fn v0_earliest_is_the_log_start_offset() {
        let segs = [seg(0, 100, 10), seg(50, 200, 10)];
        assert_eq!(
            legacy_fetch_offsets_before(&segs, 7, 60, 1_000, EARLIEST_TIMESTAMP, 5),
            Some(vec![7])
        );
    }

    #[test]
    fn v0_timestamp_picks_segments_modified_at_or_before_it() {
        let segs = [seg(0, 100, 10), seg(50, 200, 10), seg(90, 300, 10)];
        assert_eq!(
            legacy_fetch_offsets_before(&segs, 0, 120, 1_000, 250, 10),
            Some(vec![50, 0])
        );
        assert_eq!(
            legacy_fetch_offsets_before(&segs, 0, 120, 1_000, 99, 10),
            Some(vec![])
        );
        // The LEO counts as modified now.
        assert_eq!(
            legacy_fetch_offsets_before(&segs, 0, 120, 1_000, 1_000, 2),
            Some(vec![120, 90])
        );
    }

    #[test]
    fn v0_empty_last_segment_adds_no_leo_entry() {
        let segs = [seg(0, 100, 10), seg(40, 200, 0)];
        assert_eq!(
            legacy_fetch_offsets_before(&segs, 0, 40, 1_000, LATEST_TIMESTAMP, 10),
            Some(vec![40, 0])
        );
    }

    #[test]
    fn v0_negative_max_num_offsets_fails_like_kafka() {
        assert_eq!(
            legacy_fetch_offsets_before(&[seg(0, 1, 1)], 0, 1, 2, LATEST_TIMESTAMP, -1),
            None
        );
    }

    #[test]
    fn v0_consumer_offsets_above_the_hw_become_the_hw() {
        assert_eq!(cap_at_high_watermark(vec![120, 90, 50], 100), [100, 90, 50]);
        assert_eq!(cap_at_high_watermark(vec![120, 110], 100), [100]);
        assert_eq!(cap_at_high_watermark(vec![90, 50], 100), [90, 50]);
    }
}
