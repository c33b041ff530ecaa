//! Fetches waiting for `fetch.min.bytes` (Kafka's `DelayedFetch`), parked in a josef-timer
//! purgatory keyed by partition. Every append, HW move and leadership change completes the waiting
//! fetches of its partition whose condition now holds, at once (`Purgatory::check_and_complete`,
//! called from the partition's listener on the task that changed it); the purgatory's timer
//! expires the rest at `fetch.max.wait.ms`. The condition per partition is josef-partition's
//! (`Partition::available_bytes`, over the same checks and bound as the read).

use std::sync::Arc;

use josef_protocol::Uuid;
use josef_timer::{DelayedOperation, Purgatory, PurgatoryConfig, SystemClock};
use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::partition::{AppendListener, FetchIsolation, Partition, PartitionEvent};

/// The purgatory key of a partition.
pub type PartitionKey = (Uuid, i32);

/// The broker's purgatory of delayed fetches.
pub type FetchPurgatory = Purgatory<DelayedFetch, PartitionKey>;

/// A new fetch purgatory (fewer watcher shards than Kafka's 512: one node, few partitions).
pub fn new_purgatory() -> Arc<FetchPurgatory> {
    let config = PurgatoryConfig {
        name: "Fetch".to_owned(),
        shards: 64,
        ..PurgatoryConfig::default()
    };
    Arc::new(
        Purgatory::with_config(Arc::new(SystemClock), config)
            .expect("64 shards and the default timer are a valid purgatory config"),
    )
}

/// The partition listener that wakes the fetches parked on a partition (consumers wait for the
/// HW or the LSO, followers for the LEO: any event may complete one).
pub fn append_listener(purgatory: &Arc<FetchPurgatory>) -> AppendListener {
    let purgatory = purgatory.clone();
    Arc::new(move |p: &Partition, _event: &PartitionEvent| {
        purgatory.check_and_complete(&(p.topic_id, p.index));
    })
}

/// One partition a delayed fetch waits on.
pub struct WaitingPartition {
    /// The partition.
    pub partition: Arc<Partition>,
    /// Where the fetch reads from.
    pub fetch_offset: i64,
    /// The fetcher's `current_leader_epoch` (−1: none).
    pub current_leader_epoch: i32,
    /// `partition_max_bytes`.
    pub max_bytes: i32,
}

/// A fetch that could not be answered yet. Completion (by data or by expiry) only signals the
/// waiting request task, which then reads again and answers (as Kafka's `onComplete` re-reads).
pub struct DelayedFetch {
    partitions: Vec<WaitingPartition>,
    min_bytes: i64,
    isolation: FetchIsolation,
    max_wait_ms: u64,
    done: Mutex<Option<oneshot::Sender<()>>>,
}

impl DelayedFetch {
    /// A delayed fetch and the receiver its completion fires.
    pub fn new(
        partitions: Vec<WaitingPartition>,
        min_bytes: i64,
        isolation: FetchIsolation,
        max_wait_ms: u64,
    ) -> (DelayedFetch, oneshot::Receiver<()>) {
        let (tx, rx) = oneshot::channel();
        let op = DelayedFetch {
            partitions,
            min_bytes,
            isolation,
            max_wait_ms,
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
}

impl DelayedOperation for DelayedFetch {
    fn delay_ms(&self) -> u64 {
        self.max_wait_ms
    }

    /// Kafka's `DelayedFetch.tryComplete`: complete when a partition can no longer be read as
    /// asked (fenced epoch, leadership lost, fetch offset out of range or past the bound after a
    /// truncation), or when the bytes available between the fetch offsets and the bounds (each
    /// capped at `partition_max_bytes`) reach `min_bytes`; with `min_bytes` ≤ 1 any record is
    /// enough and nothing is sized.
    fn try_complete(&self) -> bool {
        let exact = self.min_bytes > 1;
        let mut available: i64 = 0;
        for w in &self.partitions {
            match w.partition.available_bytes(
                w.fetch_offset,
                w.current_leader_epoch,
                self.isolation,
                i64::from(w.max_bytes),
                exact,
            ) {
                None => return true,
                Some(n) => available += n,
            }
            if available > 0 && available >= self.min_bytes {
                return true;
            }
        }
        false
    }

    fn on_complete(&self) {
        if let Some(tx) = self.done.lock().take() {
            let _ = tx.send(());
        }
    }
}
