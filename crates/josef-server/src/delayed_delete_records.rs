//! DeleteRecords waiting for the replicas (Kafka's `DelayedDeleteRecords`), parked in the
//! broker's purgatory beside the delayed fetches and produces: the leader moved its log start at
//! once, and the request is answered when each partition's low watermark (josef-partition's
//! `Partition::check_low_watermark_reaches`: the lowest log start over the leader and the
//! followers on live brokers) reaches the offset asked for, or with NOT_LEADER_OR_FOLLOWER once
//! leadership moved, or with REQUEST_TIMED_OUT at the request's `timeout_ms`. Followers report
//! their log start in their fetches; the partition's listener wakes the request then.

use std::sync::Arc;

use josef_metadata::MetadataImage;
use josef_protocol::ErrorCode;
use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::cluster::ClusterNode;
use crate::delayed_fetch::PartitionKey;
use crate::partition::Partition;

/// One partition a DeleteRecords waits on.
pub struct DeletingPartition {
    /// The partition.
    pub partition: Arc<Partition>,
    /// The offset asked for (−1 resolved to the HW): the low watermark it waits for.
    pub required_offset: i64,
    /// The low watermark when the leader deleted (what a timed-out answer carries).
    pub low_watermark: i64,
}

/// A partition's answer: the error code and the low watermark (−1 with an error other than
/// REQUEST_TIMED_OUT).
pub type DeleteRecordsStatus = (ErrorCode, i64);

/// A DeleteRecords waiting for the followers' log starts. The statuses go to the waiting request
/// task, in the partitions' order.
pub struct DelayedDeleteRecords {
    partitions: Vec<DeletingPartition>,
    timeout_ms: u64,
    /// Which brokers count as alive (registered and not fenced in the newest image); `None` on
    /// the single-node broker, whose partitions have no followers.
    cluster: Option<Arc<ClusterNode>>,
    decided: Mutex<Vec<Option<DeleteRecordsStatus>>>,
    done: Mutex<Option<oneshot::Sender<Vec<DeleteRecordsStatus>>>>,
}

impl DelayedDeleteRecords {
    /// A delayed DeleteRecords and the receiver its statuses arrive on.
    pub fn new(
        partitions: Vec<DeletingPartition>,
        timeout_ms: u64,
        cluster: Option<Arc<ClusterNode>>,
    ) -> (
        DelayedDeleteRecords,
        oneshot::Receiver<Vec<DeleteRecordsStatus>>,
    ) {
        let (tx, rx) = oneshot::channel();
        let n = partitions.len();
        let op = DelayedDeleteRecords {
            partitions,
            timeout_ms,
            cluster,
            decided: Mutex::new(vec![None; n]),
            done: Mutex::new(Some(tx)),
        };
        (op, rx)
    }

    /// The purgatory keys of its partitions.
    pub fn keys(&self) -> Vec<PartitionKey> {
        self.partitions
            .iter()
            .map(|w| (w.partition.topic_id, w.partition.index))
            .collect()
    }

    pub(crate) fn delay_ms(&self) -> u64 {
        self.timeout_ms
    }

    pub(crate) fn try_complete(&self) -> bool {
        // The image is taken before any partition lock: liveness is read under it.
        let image: Option<MetadataImage> = self.cluster.as_ref().map(|n| n.log.image());
        let is_alive = |id: i32| match &image {
            None => true,
            Some(i) => i.broker(id).is_some_and(|b| !b.fenced),
        };
        let mut decided = self.decided.lock();
        for (w, status) in self.partitions.iter().zip(decided.iter_mut()) {
            if status.is_some() {
                continue;
            }
            match w
                .partition
                .check_low_watermark_reaches(w.required_offset, is_alive)
            {
                Ok(Some(low)) => *status = Some((ErrorCode::None, low)),
                Ok(None) => {}
                Err(code) => *status = Some((code, -1)),
            }
        }
        decided.iter().all(Option::is_some)
    }

    pub(crate) fn on_complete(&self) {
        let statuses = self
            .decided
            .lock()
            .iter()
            .zip(&self.partitions)
            .map(|(s, w)| s.unwrap_or((ErrorCode::RequestTimedOut, w.low_watermark)))
            .collect();
        if let Some(tx) = self.done.lock().take() {
            let _ = tx.send(statuses);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delayed_fetch::{append_listener, new_purgatory, DelayedOp, FetchPurgatory};
    use crate::partition::{ClientBatch, FollowerFetch, PartitionEvent};
    use josef_log::{BatchHeader, LogConfig};
    use josef_protocol::Uuid;
    use josef_sequencer::ProducerStateConfig;
    use josef_timer::{ManualClock, Purgatory};

    /// Leader 1 of ISR [1, 2] with four records that follower 2 holds (HW 4).
    fn leader_with_records(dir: &tempfile::TempDir) -> Arc<Partition> {
        let p = Partition::open_replica(
            &dir.path().join("t-0"),
            "t",
            0,
            Uuid::ZERO,
            LogConfig::default(),
            ProducerStateConfig::default(),
            1,
            0,
        )
        .unwrap();
        p.make_leader(0, 0, &[1, 2], &[1, 2], 1, 0).unwrap();
        for t in 0..4 {
            let b = josef_log::testing::batch(0, t, &[(None, Some(b"v"))]);
            let h = BatchHeader::parse(&b).unwrap();
            p.append_from_client(ClientBatch::Owned(b), &h, 1, 1, t)
                .unwrap();
        }
        follower_fetch(&p, 4, 0);
        assert_eq!(p.high_watermark(), 4);
        Arc::new(p)
    }

    /// Follower 2 fetches from `offset` reporting `log_start`.
    fn follower_fetch(p: &Partition, offset: i64, log_start: i64) {
        let fetch = FollowerFetch {
            log_start_offset: log_start,
            ..FollowerFetch::new(2, offset, 0)
        };
        p.fetch_from_follower(&fetch, 1).unwrap();
    }

    /// Deletes before `offset` on the leader and parks the request for `timeout_ms`.
    fn delete_and_park(
        p: &Arc<Partition>,
        purgatory: &FetchPurgatory,
        offset: i64,
        timeout_ms: u64,
    ) -> (bool, oneshot::Receiver<Vec<DeleteRecordsStatus>>) {
        let done = p.delete_records_on_leader(offset, |_| true).unwrap();
        let (op, rx) = DelayedDeleteRecords::new(
            vec![DeletingPartition {
                partition: p.clone(),
                required_offset: done.requested_offset,
                low_watermark: done.low_watermark,
            }],
            timeout_ms,
            None,
        );
        let op = DelayedOp::DeleteRecords(op);
        let keys = op.keys();
        (purgatory.try_complete_else_watch(op, keys), rx)
    }

    #[test]
    fn the_answer_waits_for_the_follower_to_report_the_new_log_start() {
        let dir = tempfile::tempdir().unwrap();
        let p = leader_with_records(&dir);
        let purgatory = new_purgatory();
        p.set_append_listener(append_listener(&purgatory));
        let (completed, mut rx) = delete_and_park(&p, &purgatory, 3, 60_000);
        assert!(!completed, "the follower still has records below 3");
        // A fetch still reporting log start 0 (it learns 3 from this answer) decides nothing.
        follower_fetch(&p, 4, 0);
        assert!(rx.try_recv().is_err());
        // Its next fetch reports 3: the listener completes the request.
        follower_fetch(&p, 4, 3);
        assert_eq!(rx.try_recv().unwrap(), vec![(ErrorCode::None, 3)]);
    }

    #[test]
    fn a_parked_delete_expires_with_request_timed_out_and_the_low_watermark_it_had() {
        let dir = tempfile::tempdir().unwrap();
        let p = leader_with_records(&dir);
        let clock = Arc::new(ManualClock::new(0));
        let purgatory: FetchPurgatory = Purgatory::new(clock.clone());
        p.set_append_listener(Arc::new(|_: &Partition, _: &PartitionEvent| {}));
        let (completed, mut rx) = delete_and_park(&p, &purgatory, 3, 1_000);
        assert!(!completed);
        clock.advance(999);
        assert_eq!(purgatory.advance_clock(0), 0);
        assert!(rx.try_recv().is_err());
        clock.advance(1);
        assert_eq!(purgatory.advance_clock(0), 1);
        assert_eq!(
            rx.try_recv().unwrap(),
            vec![(ErrorCode::RequestTimedOut, 0)]
        );
    }

    #[test]
    fn a_parked_delete_fails_when_leadership_moves() {
        let dir = tempfile::tempdir().unwrap();
        let p = leader_with_records(&dir);
        let purgatory = new_purgatory();
        p.set_append_listener(append_listener(&purgatory));
        let (_, mut rx) = delete_and_park(&p, &purgatory, 3, 60_000);
        p.make_follower(2, 1, 1);
        assert_eq!(
            rx.try_recv().unwrap(),
            vec![(ErrorCode::NotLeaderOrFollower, -1)]
        );
    }

    #[test]
    fn a_single_replica_answers_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let p = Partition::open(
            &dir.path().join("t-0"),
            "t",
            0,
            Uuid::ZERO,
            LogConfig::default(),
            ProducerStateConfig::default(),
            0,
        )
        .unwrap();
        let b = josef_log::testing::batch(0, 0, &[(None, Some(b"v")), (None, Some(b"w"))]);
        p.append_internal(b, 0).unwrap();
        let p = Arc::new(p);
        let purgatory = new_purgatory();
        let (completed, mut rx) = delete_and_park(&p, &purgatory, -1, 60_000);
        assert!(completed);
        assert_eq!(rx.try_recv().unwrap(), vec![(ErrorCode::None, 2)]);
    }
}
