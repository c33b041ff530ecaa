//! The partition's counters, read back from a debugging recorder: bytes and messages in for a
//! client append (not for the broker's own records), bytes out for a consumer read (not for a
//! follower's), ISR expansions and shrinks once the controller commits them (by its answer or
//! by the metadata, whichever comes first).

use josef_log::testing::batch;
use josef_log::{BatchHeader, LogConfig};
use josef_partition::metrics::{BYTES_IN, BYTES_OUT, ISR_EXPANDS, ISR_SHRINKS, MESSAGES_IN};
use josef_partition::{
    ClientBatch, CommittedPartitionState, FetchIsolation, FollowerFetch, Partition, ReadParams,
};
use josef_protocol::Uuid;
use josef_sequencer::ProducerStateConfig;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::MetricKind;
use std::cell::RefCell;
use std::collections::HashMap;

/// Counter totals: the debugging recorder's snapshot drains what it reports, so the totals are
/// kept here across snapshots.
struct Totals {
    snap: Snapshotter,
    seen: RefCell<HashMap<(String, Option<String>), u64>>,
}

impl Totals {
    fn new(recorder: &DebuggingRecorder) -> Self {
        Totals {
            snap: recorder.snapshotter(),
            seen: RefCell::new(HashMap::new()),
        }
    }

    /// The total of counter `name` (for `topic`, or over every label set).
    fn get(&self, name: &str, topic: Option<&str>) -> u64 {
        let mut seen = self.seen.borrow_mut();
        for (k, _, _, v) in self.snap.snapshot().into_vec() {
            if let (MetricKind::Counter, DebugValue::Counter(n)) = (k.kind(), v) {
                let t = k
                    .key()
                    .labels()
                    .find(|l| l.key() == "topic")
                    .map(|l| l.value().to_string());
                *seen.entry((k.key().name().to_string(), t)).or_default() += n;
            }
        }
        seen.iter()
            .filter(|((n, t), _)| n == name && (topic.is_none() || t.as_deref() == topic))
            .map(|(_, v)| *v)
            .sum()
    }
}

fn leader(dir: &tempfile::TempDir, recorder: &DebuggingRecorder) -> Partition {
    metrics::with_local_recorder(recorder, || {
        Partition::open_replica(
            &dir.path().join("orders-0"),
            "orders",
            0,
            Uuid::ZERO,
            LogConfig::default(),
            ProducerStateConfig::default(),
            1,
            0,
        )
        .unwrap()
    })
}

#[test]
fn client_appends_and_consumer_reads_are_counted_per_topic() {
    let recorder = DebuggingRecorder::new();
    let totals = Totals::new(&recorder);
    let dir = tempfile::tempdir().unwrap();
    let p = leader(&dir, &recorder);
    p.make_leader(0, 0, &[1], &[1], 1, 0).unwrap();
    let b = batch(
        0,
        3,
        &[(None, Some(b"a")), (None, Some(b"bb")), (None, Some(b"c"))],
    );
    let size = b.len() as u64;
    let h = BatchHeader::parse(&b).unwrap();
    p.append_from_client(ClientBatch::Owned(b), &h, 1, 1, 1)
        .unwrap();
    assert_eq!(totals.get(BYTES_IN, Some("orders")), size);
    assert_eq!(totals.get(MESSAGES_IN, Some("orders")), 3);
    // The broker's own records (coordinator state) are not client traffic.
    p.append_internal(batch(0, 1, &[(None, Some(b"x"))]), 2)
        .unwrap();
    assert_eq!(totals.get(MESSAGES_IN, Some("orders")), 3);
    let r = p
        .read(&ReadParams {
            fetch_offset: 0,
            current_leader_epoch: -1,
            max_bytes: 1 << 20,
            min_one_message: true,
            hard_limit: false,
            isolation: FetchIsolation::HighWatermark,
            require_leader: true,
        })
        .unwrap();
    assert!(r.size as u64 > size);
    assert_eq!(totals.get(BYTES_OUT, Some("orders")), r.size as u64);
    assert_eq!(totals.get(BYTES_OUT, Some("other")), 0);
}

#[test]
fn committed_isr_changes_count_as_expands_and_shrinks() {
    let recorder = DebuggingRecorder::new();
    let totals = Totals::new(&recorder);
    let dir = tempfile::tempdir().unwrap();
    let p = leader(&dir, &recorder);
    // Leads [1, 2] with ISR [1]: follower 2 catching up proposes an expansion.
    p.make_leader(0, 0, &[1], &[1, 2], 1, 0).unwrap();
    let b = batch(0, 1, &[(None, Some(b"v"))]);
    let h = BatchHeader::parse(&b).unwrap();
    p.append_from_client(ClientBatch::Owned(b), &h, 1, 1, 0)
        .unwrap();
    let fetch = |offset, now| {
        p.fetch_from_follower(&FollowerFetch::new(2, offset, 0), now)
            .unwrap()
    };
    let expand = fetch(1, 1).alter_partition.expect("expansion proposed");
    // A follower's fetch is replication, not consumer traffic.
    assert_eq!(totals.get(BYTES_OUT, None), 0);
    assert_eq!(totals.get(ISR_EXPANDS, None), 0, "counted on commit only");
    let commit = |isr: Vec<i32>, epoch| CommittedPartitionState {
        leader_id: 1,
        leader_epoch: 0,
        isr,
        partition_epoch: epoch,
    };
    // The commit comes back in the metadata first (the controller's record), then the answer:
    // one expansion.
    p.make_leader(0, 1, &[1, 2], &[1, 2], 1, 2).unwrap();
    assert_eq!(totals.get(ISR_EXPANDS, None), 1);
    p.on_alter_partition_response(&expand, Ok(commit(vec![1, 2], 1)), 2);
    assert_eq!(totals.get(ISR_EXPANDS, None), 1);
    // Metadata that merely repeats the ISR is no change.
    p.make_leader(0, 1, &[1, 2], &[1, 2], 1, 2).unwrap();
    assert_eq!(totals.get(ISR_EXPANDS, None), 1);
    assert_eq!(totals.get(ISR_SHRINKS, None), 0);
    // Follower 2 stops fetching while the log grows: past replica.lag.time.max.ms the leader
    // proposes a shrink.
    let b = batch(1, 1, &[(None, Some(b"w"))]);
    let h = BatchHeader::parse(&b).unwrap();
    p.append_from_client(ClientBatch::Owned(b), &h, 1, 1, 3)
        .unwrap();
    let shrink = p.maybe_shrink_isr(1_000_000).expect("shrink proposed");
    p.on_alter_partition_response(&shrink, Ok(commit(vec![1], 2)), 1_000_001);
    assert_eq!(totals.get(ISR_SHRINKS, None), 1);
    assert_eq!(totals.get(ISR_EXPANDS, None), 1);
}
