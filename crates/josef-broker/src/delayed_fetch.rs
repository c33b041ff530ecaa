//! Fetches waiting for `fetch.min.bytes` (Kafka's `DelayedFetch`), parked in a josef-timer
//! purgatory keyed by partition. Every append completes the waiting fetches of its partition at
//! once (`Purgatory::check_and_complete`, called from the partition's append listener on the
//! appending task); the purgatory's timer expires the rest at `fetch.max.wait.ms`.

use std::sync::Arc;

use josef_protocol::Uuid;
use josef_timer::{DelayedOperation, Purgatory, PurgatoryConfig, SystemClock};
use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::partition::{AppendListener, Partition};

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

/// The append listener that wakes the fetches parked on a partition.
pub fn append_listener(purgatory: &Arc<FetchPurgatory>) -> AppendListener {
    let purgatory = purgatory.clone();
    Arc::new(move |p: &Partition| {
        purgatory.check_and_complete(&(p.topic_id, p.index));
    })
}

/// One partition a delayed fetch waits on.
pub struct WaitingPartition {
    /// The partition.
    pub partition: Arc<Partition>,
    /// Where the fetch reads from.
    pub fetch_offset: i64,
    /// `partition_max_bytes`.
    pub max_bytes: i32,
}

/// A fetch that could not be answered yet. Completion (by data or by expiry) only signals the
/// waiting request task, which then reads again and answers (as Kafka's `onComplete` re-reads).
pub struct DelayedFetch {
    partitions: Vec<WaitingPartition>,
    min_bytes: i64,
    read_committed: bool,
    max_wait_ms: u64,
    done: Mutex<Option<oneshot::Sender<()>>>,
}

impl DelayedFetch {
    /// A delayed fetch and the receiver its completion fires.
    pub fn new(
        partitions: Vec<WaitingPartition>,
        min_bytes: i64,
        read_committed: bool,
        max_wait_ms: u64,
    ) -> (DelayedFetch, oneshot::Receiver<()>) {
        let (tx, rx) = oneshot::channel();
        let op = DelayedFetch {
            partitions,
            min_bytes,
            read_committed,
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

    /// Kafka's `DelayedFetch.tryComplete`: complete when a partition's fetch offset is out of
    /// range or past the read bound (truncation), or when the bytes available between the fetch
    /// offsets and the bounds (each capped at `partition_max_bytes`) reach `min_bytes`.
    fn try_complete(&self) -> bool {
        let mut available: i64 = 0;
        for w in &self.partitions {
            let d = w.partition.data.lock();
            let log_start = d.log.log_start_offset();
            let leo = d.log.log_end_offset();
            if w.fetch_offset < log_start || w.fetch_offset > leo {
                return true;
            }
            let bound = if self.read_committed {
                d.last_stable_offset()
            } else {
                d.log.high_watermark()
            };
            if w.fetch_offset > bound {
                return true;
            }
            if bound == w.fetch_offset {
                continue;
            }
            if self.min_bytes <= 1 {
                // Any record at all is enough (the clients' default): no need to size it.
                return true;
            }
            let limit = usize::try_from(w.max_bytes).unwrap_or(0);
            // A first batch larger than max_bytes counts as max_bytes (Kafka's min(available,
            // maxBytes)), so read it whole and cap.
            match d.log.read(w.fetch_offset, limit, bound, true) {
                Ok(info) => available += info.records.len().min(limit) as i64,
                Err(_) => return true,
            }
            if available >= self.min_bytes {
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
