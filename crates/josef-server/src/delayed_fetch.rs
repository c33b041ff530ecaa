//! Fetches waiting for `fetch.min.bytes` (Kafka's `DelayedFetch`), parked in a josef-timer
//! purgatory keyed by partition. Every append, HW move and leadership change completes the waiting
//! fetches of its partition whose condition now holds, at once (`Purgatory::check_and_complete`,
//! called from the partition's listener on the task that changed it); the purgatory's timer
//! expires the rest at `fetch.max.wait.ms`. The condition per partition is josef-partition's
//! (`Partition::available_bytes`, over the same checks and bound as the read).
//!
//! An event re-checks only the partition it happened to ([`DelayedOp::try_complete_on`]) where
//! that decides the same as a full check: a fetch that any one record completes (`min_bytes` ≤ 1,
//! what followers and most consumers send) and a produce, whose partitions are decided one by one.
//! Every state change of a partition is an event on that partition, so the others cannot have
//! changed. A follower's fetch parked on a 10,000-partition session thus costs one partition per
//! event, not 10,000 (which at 30,000 partitions on 3 nodes left no CPU for ISR upkeep).
//!
//! acks=−1 produces wait in the same purgatory as a [`DelayedProduce`] (Kafka keeps one purgatory
//! per kind; here they share keys and wake-ups): complete when the HW passes each appended
//! partition's last offset (`Partition::check_enough_replicas_reach_offset`), or with
//! REQUEST_TIMED_OUT for the partitions still short at the request's `timeout_ms`. DeleteRecords
//! waits here too, for the followers' log starts (`delayed_delete_records.rs`).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use josef_fetch::{FetchSessionCache, TopicIdPartition};
use josef_protocol::{ErrorCode, Uuid};
use josef_timer::{DelayedOperation, Purgatory, PurgatoryConfig, SystemClock};
use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::delayed_delete_records::DelayedDeleteRecords;
use crate::partition::{AppendListener, FetchIsolation, Partition, PartitionEvent};

/// The purgatory key of a partition.
pub type PartitionKey = (Uuid, i32);

/// The key a wide fetch waits under instead of one key per partition (no partition has a negative
/// index): see [`WIDE_FETCH_PARTITIONS`].
pub const WIDE_FETCH_KEY: PartitionKey = (Uuid::ZERO, -1);

/// A fetch over more partitions than this that any one record completes (`min_bytes` ≤ 1: every
/// follower's) waits under [`WIDE_FETCH_KEY`] alone, and every partition event checks it for the
/// partition of the event (a binary search in its partition list). Watching each partition of
/// an idle follower's 10,000-partition session cost 10,000 watch-list insertions per parked
/// fetch, twice a second per follower (`replica.fetch.wait.max.ms` 500): one key instead took an
/// idle 30,000-partition cluster node from 8.4–9.7 % to 7.6–8.1 % of a core (twenty-first
/// session, docs/performance.md). The price: every event checks
/// every parked wide fetch (its lock and a binary search), also those that do not read the
/// event's partition, where per-partition keys would check only those that do. Wide fetches are
/// few (a follower's fetchers, consumers assigned more than 64 partitions) and park only while
/// idle, so an event checks a handful.
pub const WIDE_FETCH_PARTITIONS: usize = 64;

/// The broker's purgatory of delayed fetches and produces.
pub type FetchPurgatory = Purgatory<DelayedOp, PartitionKey>;

/// What waits in the broker's purgatory.
pub enum DelayedOp {
    /// A fetch waiting for `min_bytes`.
    Fetch(DelayedFetch),
    /// An acks=−1 produce waiting for the ISR.
    Produce(DelayedProduce),
    /// A DeleteRecords waiting for the followers' log starts.
    DeleteRecords(DelayedDeleteRecords),
}

impl DelayedOp {
    /// The purgatory keys of its partitions.
    pub fn keys(&self) -> Vec<PartitionKey> {
        match self {
            DelayedOp::Fetch(f) => f.keys(),
            DelayedOp::Produce(p) => p
                .partitions
                .iter()
                .map(|w| (w.partition.topic_id, w.partition.index))
                .collect(),
            DelayedOp::DeleteRecords(d) => d.keys(),
        }
    }

    /// `try_complete` after an event on the partition `key` only: the same answer as a full
    /// check when the other partitions had no event since the last check.
    pub fn try_complete_on(&self, key: &PartitionKey) -> bool {
        match self {
            DelayedOp::Fetch(f) => f.try_complete_on(key),
            DelayedOp::Produce(p) => p.try_complete_on(key),
            DelayedOp::DeleteRecords(d) => d.try_complete(),
        }
    }
}

/// Where each partition key sits in an operation's partition list (sorted for a binary search;
/// a key may appear more than once, e.g. a topic named twice in one request).
struct KeyIndex(Vec<(PartitionKey, u32)>);

impl KeyIndex {
    fn new(keys: impl Iterator<Item = PartitionKey>) -> Self {
        let mut index: Vec<_> = keys.zip(0u32..).collect();
        index.sort_unstable();
        KeyIndex(index)
    }

    /// The positions of `key` in the list.
    fn positions<'a>(&'a self, key: &'a PartitionKey) -> impl Iterator<Item = usize> + 'a {
        let start = self.0.partition_point(|(k, _)| k < key);
        self.0[start..]
            .iter()
            .take_while(move |(k, _)| k == key)
            .map(|&(_, i)| i as usize)
    }
}

impl DelayedOperation for DelayedOp {
    fn delay_ms(&self) -> u64 {
        match self {
            DelayedOp::Fetch(f) => f.delay_ms(),
            DelayedOp::Produce(p) => p.timeout_ms,
            DelayedOp::DeleteRecords(d) => d.delay_ms(),
        }
    }

    fn try_complete(&self) -> bool {
        match self {
            DelayedOp::Fetch(f) => f.try_complete(),
            DelayedOp::Produce(p) => p.try_complete(),
            DelayedOp::DeleteRecords(d) => d.try_complete(),
        }
    }

    fn on_complete(&self) {
        match self {
            DelayedOp::Fetch(f) => f.on_complete(),
            DelayedOp::Produce(p) => p.on_complete(),
            DelayedOp::DeleteRecords(d) => d.on_complete(),
        }
    }
}

/// One appended partition an acks=−1 produce waits on.
pub struct ProducingPartition {
    /// The partition.
    pub partition: Arc<Partition>,
    /// Last offset of the appended batch + 1: the HW it waits for.
    pub required_offset: i64,
    /// The topic's `min.insync.replicas`.
    pub min_insync_replicas: i32,
    /// The leader epoch the batch was appended in (a change means leadership moved).
    pub leader_epoch: i32,
}

/// An acks=−1 produce waiting for the ISR (Kafka's `DelayedProduce`): each partition's status
/// starts as REQUEST_TIMED_OUT and becomes NONE (or NOT_ENOUGH_REPLICAS_AFTER_APPEND,
/// NOT_LEADER_OR_FOLLOWER) once decided; the whole completes when every partition is decided, or
/// at `timeout_ms`. The statuses go to the waiting request task, in the partitions' order.
pub struct DelayedProduce {
    partitions: Vec<ProducingPartition>,
    index: KeyIndex,
    timeout_ms: u64,
    decided: Mutex<Decided>,
    /// Partition checks made (tests count them).
    checks: Arc<AtomicUsize>,
    done: Mutex<Option<oneshot::Sender<Vec<ErrorCode>>>>,
    /// Counted in PurgatorySize{delayedOperation="Produce"} until completed.
    waiting: Mutex<Option<crate::metrics::InPurgatory>>,
}

impl DelayedProduce {
    /// A delayed produce and the receiver its statuses arrive on.
    pub fn new(
        partitions: Vec<ProducingPartition>,
        timeout_ms: u64,
    ) -> (DelayedProduce, oneshot::Receiver<Vec<ErrorCode>>) {
        let (tx, rx) = oneshot::channel();
        let n = partitions.len();
        let index = KeyIndex::new(
            partitions
                .iter()
                .map(|w| (w.partition.topic_id, w.partition.index)),
        );
        let op = DelayedProduce {
            partitions,
            index,
            timeout_ms,
            decided: Mutex::new(Decided {
                statuses: vec![None; n],
                undecided: n,
            }),
            checks: Arc::default(),
            done: Mutex::new(Some(tx)),
            waiting: Mutex::new(Some(crate::metrics::InPurgatory::produce())),
        };
        (op, rx)
    }

    fn try_complete(&self) -> bool {
        let mut decided = self.decided.lock();
        for i in 0..self.partitions.len() {
            self.decide(&mut decided, i);
        }
        decided.undecided == 0
    }

    /// Decides only the partitions under `key` (each partition's status changes only with its
    /// own events), so a produce over n partitions costs n checks in all, not n per event.
    #[cfg(test)]
    fn check_counter(&self) -> Arc<AtomicUsize> {
        self.checks.clone()
    }

    fn try_complete_on(&self, key: &PartitionKey) -> bool {
        let mut decided = self.decided.lock();
        for i in self.index.positions(key) {
            self.decide(&mut decided, i);
        }
        decided.undecided == 0
    }

    fn decide(&self, decided: &mut Decided, i: usize) {
        if decided.statuses[i].is_some() {
            return;
        }
        self.checks.fetch_add(1, Ordering::Relaxed);
        let w = &self.partitions[i];
        let status = if w.partition.leader_epoch() != w.leader_epoch {
            Some(ErrorCode::NotLeaderOrFollower)
        } else {
            match w
                .partition
                .check_enough_replicas_reach_offset(w.required_offset, w.min_insync_replicas)
            {
                Ok(true) => Some(ErrorCode::None),
                Ok(false) => None,
                Err(code) => Some(code),
            }
        };
        if status.is_some() {
            decided.statuses[i] = status;
            decided.undecided -= 1;
        }
    }

    fn on_complete(&self) {
        let statuses = self
            .decided
            .lock()
            .statuses
            .iter()
            .map(|s| s.unwrap_or(ErrorCode::RequestTimedOut))
            .collect();
        self.waiting.lock().take();
        if let Some(tx) = self.done.lock().take() {
            let _ = tx.send(statuses);
        }
    }
}

/// Partition events seen by [`append_listener`]s, in this process: a fetch that read nothing
/// and saw this number unchanged since before its read knows no partition changed meanwhile,
/// so its first completion checks need not look ([`DelayedFetch::read_at_event`]). Shared by
/// every broker in the process: more brokers only mean more checks, never a missed one.
static PARTITION_EVENTS: AtomicU64 = AtomicU64::new(0);

/// The current partition event sequence number (see [`DelayedFetch::read_at_event`]); take it
/// before the fetch decides what to read (its session's changed partitions included).
pub fn partition_event_seq() -> u64 {
    PARTITION_EVENTS.load(Ordering::SeqCst)
}

/// A produce's per-partition statuses and how many are still open.
struct Decided {
    statuses: Vec<Option<ErrorCode>>,
    undecided: usize,
}

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
        let key = (p.topic_id, p.index);
        purgatory.check_and_complete_with(&key, |op| op.try_complete_on(&key));
        purgatory.check_and_complete_with(&WIDE_FETCH_KEY, |op| op.try_complete_on(&key));
        // After the change is visible: a fetch that took the number before this either read
        // the change or sees the number moved when it checks.
        PARTITION_EVENTS.fetch_add(1, Ordering::SeqCst);
    })
}

/// `listener`, and then records the partition's change in the fetch-session cache (both the
/// by-name and the by-id key, as sessions name partitions either way), so incremental fetches
/// read it again (`FetchSessionCache::record_change`; nothing while change tracking is off).
pub fn with_session_changes(
    listener: AppendListener,
    sessions: &Arc<Mutex<FetchSessionCache<TopicIdPartition>>>,
) -> AppendListener {
    let sessions = sessions.clone();
    Arc::new(move |p: &Partition, event: &PartitionEvent| {
        listener(p, event);
        let mut cache = sessions.lock();
        if !cache.tracks_changes() {
            return;
        }
        cache.record_change(TopicIdPartition::by_id(p.topic_id, p.index));
        cache.record_change(TopicIdPartition::by_name(p.topic.as_str(), p.index));
        drop(cache);
        // Again once the session knows: a fetch whose session skipped this partition as
        // unchanged took its number before this, so it sees the number moved.
        PARTITION_EVENTS.fetch_add(1, Ordering::SeqCst);
    })
}

/// Shutdown: completes now every operation parked on one of `keys`, whatever its condition, and
/// stops watching them. A fetch answers with what it has; an acks=−1 produce still short of the
/// ISR answers REQUEST_TIMED_OUT, as at its timeout (it was not acknowledged; the producer
/// retries elsewhere). A parked operation holds its partitions, so until it is answered the
/// partitions cannot be closed (and marked clean). Wide fetches ([`WIDE_FETCH_KEY`]) complete
/// too. Returns how many completed.
pub fn complete_parked(
    purgatory: &FetchPurgatory,
    keys: impl IntoIterator<Item = PartitionKey>,
) -> usize {
    keys.into_iter()
        .chain([WIDE_FETCH_KEY])
        .map(|k| purgatory.force_complete_all(&k))
        .sum()
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
    /// False for a replica the leader holds back (KIP-73): its bytes do not complete the wait,
    /// its errors still do.
    pub counts_bytes: bool,
}

/// A fetch that could not be answered yet. Completion (by data or by expiry) only signals the
/// waiting request task, which then reads again and answers (as Kafka's `onComplete` re-reads).
pub struct DelayedFetch {
    partitions: Vec<WaitingPartition>,
    index: KeyIndex,
    /// [`partition_event_seq`] before the read that found too little.
    read_at_event: Option<u64>,
    /// Partition checks made (tests count them).
    checks: Arc<AtomicUsize>,
    min_bytes: i64,
    isolation: FetchIsolation,
    max_wait_ms: u64,
    done: Mutex<Option<oneshot::Sender<()>>>,
    /// Counted in PurgatorySize{delayedOperation="Fetch"} until completed.
    waiting: Mutex<Option<crate::metrics::InPurgatory>>,
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
        let index = KeyIndex::new(
            partitions
                .iter()
                .map(|w| (w.partition.topic_id, w.partition.index)),
        );
        let op = DelayedFetch {
            partitions,
            index,
            read_at_event: None,
            checks: Arc::default(),
            min_bytes,
            isolation,
            max_wait_ms,
            done: Mutex::new(Some(tx)),
            waiting: Mutex::new(Some(crate::metrics::InPurgatory::fetch())),
        };
        (op, rx)
    }

    /// The fetch was read, and found too little, after [`partition_event_seq`] returned `seq`:
    /// while no partition event has happened since, a full completion check (the two of
    /// `try_complete_else_watch`) answers `false` without looking at any partition. A follower
    /// fetch parked on a 10,000-partition session checked 20,000 partitions to learn that.
    pub fn read_at_event(mut self, seq: u64) -> Self {
        self.read_at_event = Some(seq);
        self
    }

    /// The purgatory keys it waits under: its partitions', or [`WIDE_FETCH_KEY`] alone for a
    /// wide fetch ([`DelayedFetch::is_wide`]).
    pub fn keys(&self) -> Vec<PartitionKey> {
        if self.is_wide() {
            return vec![WIDE_FETCH_KEY];
        }
        self.partitions
            .iter()
            .map(|w| (w.partition.topic_id, w.partition.index))
            .collect()
    }

    /// Over more than [`WIDE_FETCH_PARTITIONS`] partitions, and completed by any one record:
    /// an event on one partition decides it alone, so it can wait under one key for all.
    pub fn is_wide(&self) -> bool {
        self.min_bytes <= 1 && self.partitions.len() > WIDE_FETCH_PARTITIONS
    }
}

impl DelayedFetch {
    fn delay_ms(&self) -> u64 {
        self.max_wait_ms
    }

    /// Kafka's `DelayedFetch.tryComplete`: complete when a partition can no longer be read as
    /// asked (fenced epoch, leadership lost, fetch offset out of range or past the bound after a
    /// truncation), or when the bytes available between the fetch offsets and the bounds (each
    /// capped at `partition_max_bytes`) reach `min_bytes`; with `min_bytes` ≤ 1 any record is
    /// enough and nothing is sized.
    fn try_complete(&self) -> bool {
        if self.read_at_event == Some(partition_event_seq()) {
            return false;
        }
        let exact = self.min_bytes > 1;
        let mut available: i64 = 0;
        for w in &self.partitions {
            match self.available(w, exact) {
                None => return true,
                Some(n) if w.counts_bytes => available += n,
                Some(_) => {}
            }
            if available > 0 && available >= self.min_bytes {
                return true;
            }
        }
        false
    }

    #[cfg(test)]
    fn check_counter(&self) -> Arc<AtomicUsize> {
        self.checks.clone()
    }

    /// After an event on `key`: with `min_bytes` ≤ 1 one readable record or one partition that
    /// can no longer be read as asked completes the fetch, and only `key`'s partition can have
    /// become so; a larger `min_bytes` sums every partition, as Kafka does.
    fn try_complete_on(&self, key: &PartitionKey) -> bool {
        if self.min_bytes > 1 {
            return self.try_complete();
        }
        self.index.positions(key).any(|i| {
            let w = &self.partitions[i];
            match self.available(w, false) {
                None => true,
                Some(n) => w.counts_bytes && n > 0,
            }
        })
    }

    fn available(&self, w: &WaitingPartition, exact: bool) -> Option<i64> {
        self.checks.fetch_add(1, Ordering::Relaxed);
        w.partition.available_bytes(
            w.fetch_offset,
            w.current_leader_epoch,
            self.isolation,
            i64::from(w.max_bytes),
            exact,
        )
    }

    fn on_complete(&self) {
        self.waiting.lock().take();
        if let Some(tx) = self.done.lock().take() {
            let _ = tx.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use josef_log::{BatchHeader, LogConfig};
    use josef_partition::{
        AlterPartitionOutcome, ClientBatch, CommittedPartitionState, FollowerFetch,
    };
    use josef_protocol::constants::NO_PARTITION_LEADER_EPOCH;
    use josef_sequencer::ProducerStateConfig;
    use josef_timer::ManualClock;

    fn leader(dir: &tempfile::TempDir) -> Arc<Partition> {
        leader_at(dir, 0)
    }

    fn leader_at(dir: &tempfile::TempDir, index: i32) -> Arc<Partition> {
        let p = Partition::open_replica(
            &dir.path().join(format!("t-{index}")),
            "t",
            index,
            Uuid::ZERO,
            LogConfig::default(),
            ProducerStateConfig::default(),
            1,
            0,
        )
        .unwrap();
        p.make_leader(0, 0, &[1, 2], &[1, 2], 2, 0).unwrap();
        Arc::new(p)
    }

    /// A leader of ISR [1, 2] whose events wake the broker's purgatory.
    fn wired_leader() -> (tempfile::TempDir, Arc<Partition>, Arc<FetchPurgatory>) {
        let dir = tempfile::tempdir().unwrap();
        let p = leader(&dir);
        let purgatory = new_purgatory();
        p.set_append_listener(append_listener(&purgatory));
        (dir, p, purgatory)
    }

    fn follower_fetch(p: &Partition, offset: i64) {
        let fetch = FollowerFetch::new(2, offset, 0);
        p.fetch_from_follower(&fetch, 1).unwrap();
    }

    /// Appends one record as a client with `acks`; the offset after it.
    fn append(p: &Partition, acks: i16) -> josef_partition::ProduceResult {
        let b = josef_log::testing::batch(0, 1, &[(None, Some(b"v"))]);
        let h = BatchHeader::parse(&b).unwrap();
        p.append_from_client(ClientBatch::Owned(b), &h, acks, 2, 1)
            .unwrap()
    }

    fn produce_and_park(
        p: &Arc<Partition>,
        purgatory: &FetchPurgatory,
    ) -> oneshot::Receiver<Vec<ErrorCode>> {
        produce_and_park_for(p, purgatory, 60_000)
    }

    fn produce_and_park_for(
        p: &Arc<Partition>,
        purgatory: &FetchPurgatory,
        timeout_ms: u64,
    ) -> oneshot::Receiver<Vec<ErrorCode>> {
        let r = append(p, -1);
        let (op, rx) = DelayedProduce::new(
            vec![ProducingPartition {
                partition: p.clone(),
                required_offset: r.last_offset + 1,
                min_insync_replicas: 2,
                leader_epoch: r.leader_epoch,
            }],
            timeout_ms,
        );
        let op = DelayedOp::Produce(op);
        let keys = op.keys();
        assert!(!purgatory.try_complete_else_watch(op, keys));
        rx
    }

    #[test]
    fn an_acks_all_produce_completes_when_the_follower_reaches_it() {
        let (_dir, p, purgatory) = wired_leader();
        let mut rx = produce_and_park(&p, &purgatory);
        // The follower fetches from 0 (has nothing yet): still waiting.
        follower_fetch(&p, 0);
        assert!(rx.try_recv().is_err());
        // It fetches from 1: the HW moves, the listener completes the produce.
        follower_fetch(&p, 1);
        assert_eq!(rx.try_recv().unwrap(), vec![ErrorCode::None]);
    }

    #[test]
    fn a_parked_produce_fails_when_leadership_moves() {
        let (_dir, p, purgatory) = wired_leader();
        let mut rx = produce_and_park(&p, &purgatory);
        p.make_follower(2, 1, 1);
        assert_eq!(rx.try_recv().unwrap(), vec![ErrorCode::NotLeaderOrFollower]);
    }

    /// Shutdown answers a produce parked for followers that never come, and lets go of its
    /// partition, which can then be closed (and marked clean).
    #[test]
    fn shutdown_answers_parked_produces_and_releases_their_partitions() {
        let (_dir, p, purgatory) = wired_leader();
        let mut rx = produce_and_park(&p, &purgatory);
        // Another partition's key: nothing parked there.
        let keys = [(p.topic_id, p.index), (p.topic_id, p.index + 1)];
        assert_eq!(complete_parked(&purgatory, keys), 1);
        assert_eq!(rx.try_recv().unwrap(), vec![ErrorCode::RequestTimedOut]);
        assert_eq!(purgatory.num_delayed(), 0);
        assert_eq!(purgatory.watched(), 0);
        assert!(
            Arc::try_unwrap(p).is_ok(),
            "the purgatory still holds the partition"
        );
    }

    #[test]
    fn a_parked_produce_expires_with_request_timed_out() {
        let dir = tempfile::tempdir().unwrap();
        let p = leader(&dir);
        let clock = Arc::new(ManualClock::new(0));
        let purgatory: FetchPurgatory = Purgatory::new(clock.clone());
        p.set_append_listener(Arc::new(|_: &Partition, _: &PartitionEvent| {}));
        let mut rx = produce_and_park_for(&p, &purgatory, 1_000);
        // The follower never fetches: nothing decides the partition before the timeout.
        clock.advance(999);
        assert_eq!(purgatory.advance_clock(0), 0);
        assert!(rx.try_recv().is_err());
        clock.advance(1);
        assert_eq!(purgatory.advance_clock(0), 1);
        assert_eq!(rx.try_recv().unwrap(), vec![ErrorCode::RequestTimedOut]);
    }

    /// Follower 2 lags past replica.lag.time.max.ms (30 s) at `now_ms`: the leader proposes ISR
    /// [1] and the controller commits it; the outcome.
    fn shrink_isr_to_leader(p: &Partition, now_ms: i64) -> AlterPartitionOutcome {
        let shrink = p.maybe_shrink_isr(now_ms).expect("follower 2 lags");
        assert_eq!(shrink.new_isr, [1]);
        let committed = CommittedPartitionState {
            leader_id: 1,
            leader_epoch: shrink.leader_epoch,
            isr: vec![1],
            partition_epoch: shrink.partition_epoch + 1,
        };
        p.on_alter_partition_response(&shrink, Ok(committed), now_ms)
    }

    #[test]
    fn an_isr_shrink_while_parked_freezes_the_hw_and_the_produce_times_out() {
        let dir = tempfile::tempdir().unwrap();
        let p = leader(&dir);
        let clock = Arc::new(ManualClock::new(0));
        let purgatory: Arc<FetchPurgatory> = Arc::new(Purgatory::new(clock.clone()));
        p.set_append_listener(append_listener(&purgatory));
        let mut rx = produce_and_park_for(&p, &purgatory, 1_000);
        // ISR [1] < min.insync.replicas 2: the HW stays at 0 (KAFKA-15583), so the shrink does
        // not decide the produce...
        assert_eq!(
            shrink_isr_to_leader(&p, 40_000),
            AlterPartitionOutcome::Committed {
                high_watermark: None
            }
        );
        assert!(rx.try_recv().is_err());
        // ...and it ends at its timeout.
        clock.advance(1_000);
        assert_eq!(purgatory.advance_clock(0), 1);
        assert_eq!(rx.try_recv().unwrap(), vec![ErrorCode::RequestTimedOut]);
    }

    #[test]
    fn a_produce_past_the_hw_with_the_isr_below_min_insync_replicas_is_not_enough_after_append() {
        let (_dir, p, purgatory) = wired_leader();
        // The acks=-1 batch at offset 0; before the purgatory checks it, follower 2 fetches it
        // (HW 1), then falls behind a later batch and the ISR shrinks to [1].
        let r = append(&p, -1);
        follower_fetch(&p, 1);
        append(&p, 1);
        shrink_isr_to_leader(&p, 40_000);
        let (op, mut rx) = DelayedProduce::new(
            vec![ProducingPartition {
                partition: p.clone(),
                required_offset: r.last_offset + 1,
                min_insync_replicas: 2,
                leader_epoch: r.leader_epoch,
            }],
            60_000,
        );
        let op = DelayedOp::Produce(op);
        let keys = op.keys();
        // The HW passed the batch, but with one replica in the ISR: decided at the first check.
        assert!(purgatory.try_complete_else_watch(op, keys));
        assert_eq!(
            rx.try_recv().unwrap(),
            vec![ErrorCode::NotEnoughReplicasAfterAppend]
        );
    }

    #[test]
    fn a_consumer_fetch_wakes_when_the_hw_moves_without_an_append() {
        let (_dir, p, purgatory) = wired_leader();
        // One record at offset 0, not yet on follower 2: HW 0, nothing a consumer may read.
        append(&p, 1);
        follower_fetch(&p, 0);
        let (op, mut rx) = DelayedFetch::new(
            vec![WaitingPartition {
                partition: p.clone(),
                fetch_offset: 0,
                current_leader_epoch: NO_PARTITION_LEADER_EPOCH,
                max_bytes: 1 << 20,
                counts_bytes: true,
            }],
            1,
            FetchIsolation::HighWatermark,
            60_000,
        );
        let op = DelayedOp::Fetch(op);
        let keys = op.keys();
        assert!(!purgatory.try_complete_else_watch(op, keys));
        assert!(rx.try_recv().is_err());
        // Follower 2 fetches from 1: no append on the leader, only the HW moves to 1; the parked
        // consumer fetch completes now, long before its 60 s max wait.
        follower_fetch(&p, 1);
        assert!(rx.try_recv().is_ok());
    }

    #[test]
    fn the_bytes_of_a_held_back_replica_do_not_complete_the_wait() {
        let (_dir, p, purgatory) = wired_leader();
        append(&p, 1);
        let waiting = |counts_bytes| WaitingPartition {
            partition: p.clone(),
            fetch_offset: 0,
            current_leader_epoch: NO_PARTITION_LEADER_EPOCH,
            max_bytes: 1 << 20,
            counts_bytes,
        };
        // A follower's fetch from offset 0 with a record there: complete at once, unless the
        // leader holds the replica back (KIP-73).
        for (counts, completes) in [(true, true), (false, false)] {
            let (op, _rx) =
                DelayedFetch::new(vec![waiting(counts)], 1, FetchIsolation::LogEnd, 60_000);
            let op = DelayedOp::Fetch(op);
            let keys = op.keys();
            assert_eq!(purgatory.try_complete_else_watch(op, keys), completes);
        }
    }

    /// `n` wired leaders of ISR [1, 2] sharing one purgatory.
    fn wired_leaders(n: i32) -> (tempfile::TempDir, Vec<Arc<Partition>>, Arc<FetchPurgatory>) {
        let dir = tempfile::tempdir().unwrap();
        let purgatory = new_purgatory();
        let ps = (0..n)
            .map(|i| {
                let p = leader_at(&dir, i);
                p.set_append_listener(append_listener(&purgatory));
                p
            })
            .collect();
        (dir, ps, purgatory)
    }

    /// Each partition waited on from offset 0, its bytes counted.
    fn waiting_from_zero(ps: &[Arc<Partition>]) -> Vec<WaitingPartition> {
        ps.iter()
            .map(|p| WaitingPartition {
                partition: p.clone(),
                fetch_offset: 0,
                current_leader_epoch: NO_PARTITION_LEADER_EPOCH,
                max_bytes: 1 << 20,
                counts_bytes: true,
            })
            .collect()
    }

    /// A follower's fetch parked on 40 partitions (nothing to read in any): an append to one
    /// checks that one only, not all 40 (a regression makes each event cost the whole session).
    #[test]
    fn an_event_rechecks_only_its_own_partition_of_a_parked_fetch() {
        let (_dir, ps, purgatory) = wired_leaders(40);
        let waiting = waiting_from_zero(&ps);
        let (op, mut rx) = DelayedFetch::new(waiting, 1, FetchIsolation::LogEnd, 60_000);
        let checks = op.check_counter();
        let op = DelayedOp::Fetch(op);
        let keys = op.keys();
        assert!(!purgatory.try_complete_else_watch(op, keys));
        // Two full checks: before and after watching.
        assert_eq!(checks.load(Ordering::Relaxed), 80);
        append(&ps[30], 1);
        assert!(rx.try_recv().is_ok(), "the record completes the fetch");
        assert_eq!(checks.load(Ordering::Relaxed), 81);
    }

    /// An acks=-1 produce over 30 partitions: each follower read that moves one partition's HW
    /// decides that partition alone; 30 events cost 30 checks after parking, not 30 + 29 + ...
    #[test]
    fn a_produce_over_many_partitions_decides_each_on_its_own_event() {
        let (_dir, ps, purgatory) = wired_leaders(30);
        let producing = ps
            .iter()
            .map(|p| {
                let r = append(p, -1);
                ProducingPartition {
                    partition: p.clone(),
                    required_offset: r.last_offset + 1,
                    min_insync_replicas: 2,
                    leader_epoch: r.leader_epoch,
                }
            })
            .collect();
        let (op, mut rx) = DelayedProduce::new(producing, 60_000);
        let checks = op.check_counter();
        let op = DelayedOp::Produce(op);
        let keys = op.keys();
        assert!(!purgatory.try_complete_else_watch(op, keys));
        assert_eq!(checks.load(Ordering::Relaxed), 60);
        for p in &ps {
            assert!(rx.try_recv().is_err());
            follower_fetch(p, 1);
        }
        assert_eq!(rx.try_recv().unwrap(), vec![ErrorCode::None; 30]);
        assert_eq!(checks.load(Ordering::Relaxed), 90);
    }

    /// A follower's fetch parked on 100 partitions waits under one purgatory key, not 100 (a
    /// regression makes every idle fetch of a large session insert itself into each
    /// partition's watch list); an append to one of them completes it with one check, an
    /// append elsewhere checks none of its partitions, and shutdown answers it.
    #[test]
    fn a_wide_fetch_waits_under_one_key_and_wakes_on_its_partitions() {
        let (_dir, ps, purgatory) = wired_leaders(101);
        let (theirs, other) = ps.split_at(100);
        let (op, mut rx) =
            DelayedFetch::new(waiting_from_zero(theirs), 1, FetchIsolation::LogEnd, 60_000);
        assert!(op.is_wide());
        let checks = op.check_counter();
        let op = DelayedOp::Fetch(op);
        let keys = op.keys();
        assert_eq!(keys, vec![WIDE_FETCH_KEY]);
        assert!(!purgatory.try_complete_else_watch(op, keys));
        assert_eq!(purgatory.watched(), 1);
        assert_eq!(purgatory.watched_keys(), 1);
        assert_eq!(checks.load(Ordering::Relaxed), 200);
        // A partition it does not fetch: looked up in its list, none of its partitions checked.
        append(&other[0], 1);
        assert!(rx.try_recv().is_err());
        assert_eq!(checks.load(Ordering::Relaxed), 200);
        append(&theirs[77], 1);
        assert!(rx.try_recv().is_ok(), "the record completes the fetch");
        assert_eq!(checks.load(Ordering::Relaxed), 201);

        // Parked again (nothing new to read from offset 1 on partition 77): shutdown answers it.
        let mut waiting = waiting_from_zero(theirs);
        waiting[77].fetch_offset = 1;
        let (op, mut rx) = DelayedFetch::new(waiting, 1, FetchIsolation::LogEnd, 60_000);
        let op = DelayedOp::Fetch(op);
        let keys = op.keys();
        assert!(!purgatory.try_complete_else_watch(op, keys));
        assert_eq!(complete_parked(&purgatory, std::iter::empty()), 1);
        assert!(rx.try_recv().is_ok());
        assert_eq!(purgatory.num_delayed(), 0);
    }

    /// Up to [`WIDE_FETCH_PARTITIONS`] partitions, or with `min_bytes` > 1 (the sum over all
    /// partitions decides), a fetch waits under each partition's key.
    #[test]
    fn narrow_fetches_and_min_bytes_fetches_wait_under_their_partitions() {
        let (_dir, ps, _purgatory) = wired_leaders(WIDE_FETCH_PARTITIONS as i32 + 1);
        let (op, _rx) = DelayedFetch::new(
            waiting_from_zero(&ps[..WIDE_FETCH_PARTITIONS]),
            1,
            FetchIsolation::LogEnd,
            60_000,
        );
        assert!(!op.is_wide());
        assert_eq!(op.keys().len(), WIDE_FETCH_PARTITIONS);
        let (op, _rx) =
            DelayedFetch::new(waiting_from_zero(&ps), 2, FetchIsolation::LogEnd, 60_000);
        assert!(!op.is_wide());
        assert_eq!(op.keys().len(), WIDE_FETCH_PARTITIONS + 1);
    }

    /// min_bytes > 1 still sums every partition (bytes elsewhere count toward the wait).
    #[test]
    fn a_fetch_with_min_bytes_sums_the_partitions_on_every_event() {
        let (_dir, ps, purgatory) = wired_leaders(2);
        append(&ps[0], 1);
        let waiting = waiting_from_zero(&ps);
        let one_batch = ps[0]
            .available_bytes(
                0,
                NO_PARTITION_LEADER_EPOCH,
                FetchIsolation::LogEnd,
                1 << 20,
                true,
            )
            .unwrap();
        let (op, mut rx) =
            DelayedFetch::new(waiting, one_batch + 1, FetchIsolation::LogEnd, 60_000);
        let op = DelayedOp::Fetch(op);
        let keys = op.keys();
        assert!(!purgatory.try_complete_else_watch(op, keys));
        // A batch on partition 1: with partition 0's, over min_bytes.
        append(&ps[1], 1);
        assert!(rx.try_recv().is_ok());
    }

    /// A fetch that read nothing parks without checking any partition while no partition event
    /// happened since its read, and still completes on the next event.
    #[test]
    fn a_fetch_that_read_nothing_parks_without_checking_its_partitions() {
        let (_dir, ps, purgatory) = wired_leaders(10);
        // The event number is per process, so other tests' partitions may move it while this
        // one parks (then the checks run, as they must). Park until one attempt saw no foreign
        // event, bounded: it must have checked nothing. Without the gate every attempt checks
        // all 10 partitions twice.
        let mut quiet_attempt = None;
        for _ in 0..200 {
            let seq = partition_event_seq();
            let (op, rx) =
                DelayedFetch::new(waiting_from_zero(&ps), 1, FetchIsolation::LogEnd, 60_000);
            let op = op.read_at_event(seq);
            let checks = op.check_counter();
            let op = DelayedOp::Fetch(op);
            let keys = op.keys();
            assert!(
                !purgatory.try_complete_else_watch(op, keys),
                "nothing to read"
            );
            if partition_event_seq() == seq {
                quiet_attempt = Some((checks.load(Ordering::Relaxed), rx));
                break;
            }
        }
        let (checks, mut rx) = quiet_attempt.expect("no attempt without a foreign event");
        assert_eq!(checks, 0);
        append(&ps[4], 1);
        assert!(rx.try_recv().is_ok(), "the record completes the fetch");
    }

    /// An event between the read and the watch is not missed: the number moved, so the checks
    /// look at the partitions.
    #[test]
    fn an_event_after_the_read_makes_the_parking_fetch_check() {
        let (_dir, ps, purgatory) = wired_leaders(3);
        let seq = partition_event_seq();
        append(&ps[1], 1);
        let (op, mut rx) =
            DelayedFetch::new(waiting_from_zero(&ps), 1, FetchIsolation::LogEnd, 60_000);
        let op = DelayedOp::Fetch(op.read_at_event(seq));
        let keys = op.keys();
        assert!(purgatory.try_complete_else_watch(op, keys));
        assert!(rx.try_recv().is_ok());
    }
}
