//! ListOffsets for one partition (Kafka's `Partition.fetchOffsetForTimestamp` and the legacy
//! v0 `fetchOffsetsBefore`): the special timestamps, lookups by timestamp, and the bound that
//! depends on who asks.

use josef_log::TimestampOffset;
use josef_protocol::ErrorCode;

use crate::error::log_error_code;
use crate::partition::{FetchIsolation, Partition};

/// ListOffsets' timestamp for the LEO (or the bound of the asker's isolation).
pub const LATEST_TIMESTAMP: i64 = -1;
/// ListOffsets' timestamp for the log start offset.
pub const EARLIEST_TIMESTAMP: i64 = -2;
/// ListOffsets' timestamp for the record with the largest timestamp (KIP-734).
pub const MAX_TIMESTAMP: i64 = -3;
/// ListOffsets' timestamp for the first offset on local storage (KIP-405).
pub const EARLIEST_LOCAL_TIMESTAMP: i64 = -4;
/// ListOffsets' timestamp for the last tiered offset (KIP-1005).
pub const LATEST_TIERED_TIMESTAMP: i64 = -5;

impl Partition {
    /// The offset ListOffsets answers for `timestamp` (one of the special timestamps above, or
    /// a time in ms to look up) as `(offset, timestamp)`, the timestamp −1 for the special ones;
    /// `None` for no offset (nothing at or after the time below the bound, or the latest tiered
    /// offset, which Josef has none of). The bound is the asker's: the LEO for a replica or a
    /// debugging tool (`FetchIsolation::LogEnd`, which is what a follower out of range truncates
    /// to), else the HW or, for read_committed, the LSO.
    ///
    /// A leader elected moments ago has a HW that only moves once its followers fetch in its
    /// epoch; until it reaches the epoch's start its HW (and LSO) is older than what the previous
    /// leader already served, so a consumer gets OFFSET_NOT_AVAILABLE for the latest offset and
    /// for a time found past the bound, and retries. Leader-epoch checks are
    /// [`Partition::check_current_leader_epoch`]'s.
    pub fn fetch_offset_for_timestamp(
        &self,
        timestamp: i64,
        isolation: FetchIsolation,
    ) -> Result<Option<(i64, i64)>, ErrorCode> {
        let d = self.data.lock();
        let from_consumer = isolation != FetchIsolation::LogEnd;
        let bound = match isolation {
            FetchIsolation::LogEnd => d.log.log_end_offset(),
            FetchIsolation::HighWatermark => d.log.high_watermark(),
            FetchIsolation::TxnCommitted => d.last_stable_offset(),
        };
        let lagging = from_consumer
            && d.replication
                .high_watermark_lags_epoch_start(d.log.high_watermark());
        let found = match timestamp {
            LATEST_TIMESTAMP if lagging => return Err(ErrorCode::OffsetNotAvailable),
            LATEST_TIMESTAMP => return Ok(Some((bound, -1))),
            EARLIEST_TIMESTAMP | EARLIEST_LOCAL_TIMESTAMP => {
                return Ok(Some((d.log.log_start_offset(), -1)))
            }
            LATEST_TIERED_TIMESTAMP => return Ok(None),
            MAX_TIMESTAMP => d.log.offset_of_max_timestamp(),
            ts => d.log.fetch_offset_by_timestamp(ts),
        };
        match found {
            Ok(Some(TimestampOffset { offset, timestamp })) if offset < bound => {
                Ok(Some((offset, timestamp)))
            }
            Ok(Some(_)) if lagging => Err(ErrorCode::OffsetNotAvailable),
            Ok(_) => Ok(None),
            Err(e) => Err(log_error_code(&e)),
        }
    }

    /// ListOffsets v0's old_style_offsets: up to `max_num_offsets` segment base offsets before
    /// `timestamp` (see `josef_log::legacy_offsets`), none above the HW for a consumer
    /// (`from_consumer`); `None` for a negative `max_num_offsets`.
    pub fn legacy_offsets_before(
        &self,
        timestamp: i64,
        max_num_offsets: i32,
        from_consumer: bool,
        now_ms: i64,
    ) -> Option<Vec<i64>> {
        let d = self.data.lock();
        let offsets = d
            .log
            .legacy_offsets_before(timestamp, max_num_offsets, now_ms)?;
        Some(if from_consumer {
            josef_log::legacy_offsets::cap_at_high_watermark(offsets, d.log.high_watermark())
        } else {
            offsets
        })
    }
}
