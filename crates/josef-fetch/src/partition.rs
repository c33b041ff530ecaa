//! What a session remembers per partition: the fetcher's last request parameters and the last
//! high watermark and log start offset the broker sent (Kafka's `CachedPartition`).

/// A fetcher's parameters for one partition (the per-partition fields of a fetch request).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PartitionFetch {
    /// The offset to read from.
    pub fetch_offset: i64,
    /// `partition_max_bytes`.
    pub max_bytes: i32,
    /// The leader epoch the fetcher believes in (−1 = no check).
    pub current_leader_epoch: i32,
    /// The fetcher's own log start offset (followers; −1 for consumers).
    pub log_start_offset: i64,
    /// The epoch of the last batch the fetcher has (followers, v12+; −1 otherwise).
    pub last_fetched_epoch: i32,
}

impl PartitionFetch {
    /// A consumer's parameters: no leader-epoch check, no follower fields.
    pub fn new(fetch_offset: i64, max_bytes: i32) -> Self {
        PartitionFetch {
            fetch_offset,
            max_bytes,
            current_leader_epoch: -1,
            log_start_offset: -1,
            last_fetched_epoch: -1,
        }
    }
}

/// What the broker is about to send for one partition, as far as the session cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PartitionOutcome {
    /// The partition's error code (0 = none).
    pub error_code: i16,
    /// The high watermark in the response.
    pub high_watermark: i64,
    /// The log start offset in the response.
    pub log_start_offset: i64,
    /// Whether the response carries records (at least one byte).
    pub has_records: bool,
    /// Whether the response names a preferred read replica (≠ −1).
    pub has_preferred_read_replica: bool,
    /// Whether the response carries a diverging epoch (followers).
    pub has_diverging_epoch: bool,
    /// Nothing more to read for now: no records, no error, and the fetch offset at the bound
    /// (the HW). With change tracking ([`crate::FetchSessionCache::sync_generation`]) a settled
    /// partition is not read again by its session until a change is recorded for it; an
    /// unsettled one (the default, always safe) is read on every incremental fetch, as in Kafka.
    pub settled: bool,
}

/// One partition of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachedPartition {
    /// The fetcher's last parameters; unlisted partitions of an incremental fetch are read
    /// with these (the broker never advances `fetch_offset` itself).
    pub request: PartitionFetch,
    /// The high watermark last sent (−1 after an error, so the partition is re-sent once
    /// healthy).
    pub high_watermark: i64,
    /// The log start offset last sent.
    pub local_log_start_offset: i64,
}

impl CachedPartition {
    /// A partition just added by a request, nothing sent yet.
    pub fn new(request: PartitionFetch) -> Self {
        CachedPartition {
            request,
            high_watermark: -1,
            local_log_start_offset: -1,
        }
    }

    /// A partition of a session created from a full fetch and its response.
    pub fn with_response(request: PartitionFetch, outcome: &PartitionOutcome) -> Self {
        CachedPartition {
            request,
            high_watermark: outcome.high_watermark,
            local_log_start_offset: outcome.log_start_offset,
        }
    }

    /// Kafka's `maybeUpdateResponseData`: whether an incremental response must include this
    /// partition (records, an HW or log start change, an error, a preferred replica or a
    /// diverging epoch). With `update`, remembers what is sent; an error resets the cached HW
    /// to −1. A change of the LSO alone does not make a partition appear (as in Kafka).
    pub fn must_respond(&mut self, outcome: &PartitionOutcome, update: bool) -> bool {
        let mut must = outcome.has_records;
        if self.high_watermark != outcome.high_watermark {
            must = true;
            if update {
                self.high_watermark = outcome.high_watermark;
            }
        }
        if self.local_log_start_offset != outcome.log_start_offset {
            must = true;
            if update {
                self.local_log_start_offset = outcome.log_start_offset;
            }
        }
        if outcome.has_preferred_read_replica || outcome.has_diverging_epoch {
            must = true;
        }
        if outcome.error_code != 0 {
            if update {
                self.high_watermark = -1;
            }
            must = true;
        }
        must
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(hw: i64, lso: i64) -> PartitionOutcome {
        PartitionOutcome {
            high_watermark: hw,
            log_start_offset: lso,
            ..Default::default()
        }
    }

    #[test]
    fn unchanged_partition_without_records_is_omitted() {
        let mut c = CachedPartition::with_response(PartitionFetch::new(5, 100), &outcome(5, 0));
        assert!(!c.must_respond(&outcome(5, 0), true));
    }

    #[test]
    fn high_watermark_change_is_sent_once() {
        let mut c = CachedPartition::with_response(PartitionFetch::new(5, 100), &outcome(5, 0));
        assert!(c.must_respond(&outcome(7, 0), true));
        assert!(!c.must_respond(&outcome(7, 0), true));
    }

    #[test]
    fn log_start_change_is_sent() {
        let mut c = CachedPartition::with_response(PartitionFetch::new(5, 100), &outcome(5, 0));
        assert!(c.must_respond(&outcome(5, 3), true));
        assert_eq!(c.local_log_start_offset, 3);
    }

    #[test]
    fn records_are_always_sent() {
        let mut c = CachedPartition::with_response(PartitionFetch::new(5, 100), &outcome(9, 0));
        let o = PartitionOutcome {
            has_records: true,
            ..outcome(9, 0)
        };
        assert!(c.must_respond(&o, true));
    }

    #[test]
    fn error_resets_cached_hw_so_recovery_is_sent() {
        let mut c = CachedPartition::with_response(PartitionFetch::new(5, 100), &outcome(9, 0));
        let err = PartitionOutcome {
            error_code: 1,
            ..outcome(9, 0)
        };
        assert!(c.must_respond(&err, true));
        assert_eq!(c.high_watermark, -1);
        assert!(c.must_respond(&outcome(9, 0), true));
    }

    #[test]
    fn check_without_update_changes_nothing() {
        let mut c = CachedPartition::with_response(PartitionFetch::new(5, 100), &outcome(5, 0));
        assert!(c.must_respond(&outcome(8, 2), false));
        assert_eq!(c.high_watermark, 5);
        assert_eq!(c.local_log_start_offset, 0);
    }
}
