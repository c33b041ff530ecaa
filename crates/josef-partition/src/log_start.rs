//! What moves a partition's log start offset, always together with its producer state (Kafka's
//! `UnifiedLog.maybeIncrementLogStartOffset` and its callers): retention, DeleteRecords on the
//! leader, the leader's log start as a follower learns it from fetch responses, and compaction,
//! which keeps the active producers' last batches.

use josef_log::cleaner::{CompactionStats, LastRecord};
use josef_log::cleaner_manager::Dirtiness;
use josef_protocol::ErrorCode;

use crate::error::PartitionError;
use crate::partition::{Partition, PartitionData};
use crate::replication::ReplicaId;

/// What the leader did with a DeleteRecords for one partition, from
/// [`Partition::delete_records_on_leader`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeleteRecordsOutcome {
    /// The offset asked for (−1 resolved to the HW): the request is complete once the low
    /// watermark reaches it.
    pub requested_offset: i64,
    /// The low watermark right after the leader's log start moved (what a request that times
    /// out answers).
    pub low_watermark: i64,
}

/// [`Partition::low_watermark`] under the lock, on a leader.
fn low_watermark_locked(d: &PartitionData, is_alive: &dyn Fn(ReplicaId) -> bool) -> i64 {
    let local = d.replication.local_id();
    d.replication
        .replicas()
        .iter()
        .filter(|id| **id != local && is_alive(**id))
        .filter_map(|id| d.replication.follower(*id))
        .map(|f| f.log_start_offset)
        .fold(d.log.log_start_offset(), i64::min)
}

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

    /// Whether [`Partition::compact`] would clean now, and how dirty the log is (for the cleaner
    /// threads to pick the filthiest partition first); `None` when it would not.
    pub fn cleanable(&self, now_ms: i64) -> Result<Option<Dirtiness>, PartitionError> {
        let d = self.data.lock();
        let lso = d.last_stable_offset();
        Ok(d.log.cleanable(now_ms, lso)?)
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

    /// DeleteRecords on the leader, as [`Partition::delete_records_before`], with what the
    /// request then waits for (Kafka's `LogDeleteRecordsResult`): the offset asked for (−1
    /// resolved to the HW) and the low watermark right after the leader's log start moved.
    /// `is_alive` tells which brokers count (see [`Partition::low_watermark`]).
    pub fn delete_records_on_leader(
        &self,
        offset: i64,
        is_alive: impl Fn(ReplicaId) -> bool,
    ) -> Result<DeleteRecordsOutcome, PartitionError> {
        let mut d = self.data.lock();
        if !d.replication.is_leader() {
            return Err(PartitionError::new(ErrorCode::NotLeaderOrFollower));
        }
        let hw = d.log.high_watermark();
        let requested_offset = if offset == -1 { hw } else { offset };
        if requested_offset < 0 || requested_offset > hw {
            return Err(PartitionError::new(ErrorCode::OffsetOutOfRange));
        }
        d.increment_log_start_offset(requested_offset)?;
        Ok(DeleteRecordsOutcome {
            requested_offset,
            low_watermark: low_watermark_locked(&d, &is_alive),
        })
    }

    /// Leader: the lowest log start offset over this replica and every assigned follower on a
    /// live broker (`is_alive`: registered and not fenced), as their last fetches told it
    /// (Kafka's `lowWatermarkIfLeader`, what DeleteRecords waits for). Followers out of the ISR
    /// count too, and a live follower that has not fetched in this leadership holds it at −1,
    /// so deleted records are gone from every replica that may still serve them before the
    /// request is answered. NOT_LEADER_OR_FOLLOWER elsewhere.
    pub fn low_watermark(&self, is_alive: impl Fn(ReplicaId) -> bool) -> Result<i64, ErrorCode> {
        let d = self.data.lock();
        if !d.replication.is_leader() {
            return Err(ErrorCode::NotLeaderOrFollower);
        }
        Ok(low_watermark_locked(&d, &is_alive))
    }

    /// The delayed DeleteRecords condition for one partition (Kafka's
    /// `DelayedDeleteRecords.tryComplete`): `Ok(Some(low watermark))` once the low watermark
    /// reached `required_offset`, `Ok(None)` while it has not, NOT_LEADER_OR_FOLLOWER once this
    /// replica no longer leads (the request is answered then).
    pub fn check_low_watermark_reaches(
        &self,
        required_offset: i64,
        is_alive: impl Fn(ReplicaId) -> bool,
    ) -> Result<Option<i64>, ErrorCode> {
        let low = self.low_watermark(is_alive)?;
        Ok((low >= required_offset).then_some(low))
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
