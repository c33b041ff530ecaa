//! What moves a partition's log start offset, always together with its producer state (Kafka's
//! `UnifiedLog.maybeIncrementLogStartOffset` and its callers): retention, DeleteRecords on the
//! leader, the leader's log start as a follower learns it from fetch responses, and compaction,
//! which keeps the active producers' last batches.

use josef_log::cleaner::{CompactionStats, LastRecord};
use josef_protocol::ErrorCode;

use crate::error::PartitionError;
use crate::partition::{Partition, PartitionData};

impl PartitionData {
    /// Moves the log start to `offset` (not above the HW) in the log and the producer state.
    fn increment_log_start_offset(&mut self, offset: i64) -> Result<i64, PartitionError> {
        let low = self.log.delete_records_before(offset)?;
        self.producers.on_log_start_offset_incremented(low);
        Ok(low)
    }
}

impl Partition {
    /// Retention (`retention.ms` / `retention.bytes`): deletes the segments past it and moves
    /// the producer state's log start with the log's. Returns the number of segments deleted.
    pub fn delete_old_segments(&self, now_ms: i64) -> Result<usize, PartitionError> {
        let mut d = self.data.lock();
        let n = d.log.delete_old_segments(now_ms)?;
        if n > 0 {
            let start = d.log.log_start_offset();
            d.producers.on_log_start_offset_incremented(start);
        }
        Ok(n)
    }

    /// Compaction by josef-log's cleaner, if the topic's `cleanup.policy` compacts: the work is
    /// picked under the partition lock, done without it (appends and fetches go on), and swapped
    /// in under it. Undecided transactions stay out of reach (the bound is the LSO) and the active
    /// producers' last batches survive (their sequence state lives in them). `None` when there
    /// was nothing to clean.
    pub fn compact(&self, now_ms: i64) -> Result<Option<CompactionStats>, PartitionError> {
        let (task, active) = {
            let d = self.data.lock();
            if !d.log.config().cleanup_policy.compacts() {
                return Ok(None);
            }
            let lso = d.last_stable_offset();
            let Some(task) = d.log.prepare_compaction(now_ms, lso)? else {
                return Ok(None);
            };
            let active: Vec<(i64, LastRecord)> = d
                .producers
                .producers()
                .map(|e| {
                    let last = e.last_data_offset();
                    (
                        e.producer_id(),
                        LastRecord {
                            last_data_offset: (last >= 0).then_some(last),
                            producer_epoch: e.producer_epoch(),
                        },
                    )
                })
                .collect();
            (task, active)
        };
        let result = task.with_active_producers(active).run()?;
        Ok(Some(self.data.lock().log.finish_compaction(result)?))
    }

    /// DeleteRecords (Kafka's `deleteRecordsOnLeader`): leader only (NOT_LEADER_OR_FOLLOWER: a
    /// follower learns the leader's log start from its fetches instead, so the replicas never
    /// diverge); `offset` −1 means the HW; an offset below 0 or above the HW is
    /// OFFSET_OUT_OF_RANGE. The log start moves up to it, and the producer state with it. Returns
    /// the leader's new log start; the request is complete once [`Partition::low_watermark`]
    /// reaches it.
    pub fn delete_records_before(&self, offset: i64) -> Result<i64, PartitionError> {
        let mut d = self.data.lock();
        if !d.replication.is_leader() {
            return Err(PartitionError::new(ErrorCode::NotLeaderOrFollower));
        }
        let hw = d.log.high_watermark();
        let offset = if offset == -1 { hw } else { offset };
        if offset < 0 || offset > hw {
            return Err(PartitionError::new(ErrorCode::OffsetOutOfRange));
        }
        d.increment_log_start_offset(offset)
    }

    /// Leader: the lowest log start offset over this replica and the ISR's followers, as their
    /// last fetches told it (Kafka's `lowWatermarkIfLeader`, what DeleteRecords waits for);
    /// NOT_LEADER_OR_FOLLOWER elsewhere.
    pub fn low_watermark(&self) -> Result<i64, ErrorCode> {
        let d = self.data.lock();
        if !d.replication.is_leader() {
            return Err(ErrorCode::NotLeaderOrFollower);
        }
        let local = d.replication.local_id();
        let low = d
            .replication
            .isr()
            .iter()
            .filter(|id| **id != local)
            .filter_map(|id| d.replication.follower(*id))
            .map(|f| f.log_start_offset)
            .fold(d.log.log_start_offset(), i64::min);
        Ok(low)
    }

    /// Follower: takes the leader's log start offset from a fetch response (Kafka's
    /// `maybeIncrementLogStartOffset` with `LeaderOffsetIncremented`), so DeleteRecords and the
    /// leader's retention reach every replica. It never passes this replica's HW (what is above
    /// it is not known to be the leader's data yet) and never moves back; −1 (unknown) does
    /// nothing, and so does a call on a leader (a stale answer). Returns the log start after the
    /// call.
    pub fn maybe_increment_log_start_offset(
        &self,
        leader_log_start_offset: i64,
    ) -> Result<i64, PartitionError> {
        let mut d = self.data.lock();
        Self::follow_log_start_locked(&mut d, leader_log_start_offset)
    }

    pub(crate) fn follow_log_start_locked(
        d: &mut PartitionData,
        leader_log_start_offset: i64,
    ) -> Result<i64, PartitionError> {
        let current = d.log.log_start_offset();
        if d.replication.is_leader() {
            // Became leader since the fetch was sent: the answer is stale.
            return Ok(current);
        }
        let target = leader_log_start_offset.min(d.log.high_watermark());
        if target <= current {
            return Ok(current);
        }
        d.increment_log_start_offset(target)
    }
}
