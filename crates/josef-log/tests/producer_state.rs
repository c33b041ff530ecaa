//! Log::rebuild_producer_state: newest snapshot + replay, through the ProducerStateReplay trait.

use std::collections::BTreeMap;

use josef_log::testing::TestBatch;
use josef_log::{AbortedTxn, BatchHeader, Log, LogConfig, ProducerStateReplay, TimestampType};
use josef_records::{ControlRecordType, EndTxnMarker};

/// A tiny producer table: last sequence per producer, open transactions, and what was replayed.
#[derive(Default, Debug, PartialEq)]
struct Table {
    last_seq: BTreeMap<i64, i32>,
    open_txn: BTreeMap<i64, i64>,
    replayed: Vec<i64>,
}

impl Table {
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (pid, seq) in &self.last_seq {
            out.extend_from_slice(&pid.to_be_bytes());
            out.extend_from_slice(&seq.to_be_bytes());
        }
        out
    }
}

impl ProducerStateReplay for Table {
    type SnapshotError = std::io::Error;

    fn load_snapshot(&mut self, _offset: i64, bytes: &[u8]) -> std::io::Result<()> {
        if bytes.len() % 12 != 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "torn snapshot",
            ));
        }
        for c in bytes.chunks(12) {
            let pid = i64::from_be_bytes(c[..8].try_into().unwrap());
            let seq = i32::from_be_bytes(c[8..].try_into().unwrap());
            self.last_seq.insert(pid, seq);
        }
        Ok(())
    }

    fn replay_batch(&mut self, h: &BatchHeader) {
        self.last_seq.insert(h.producer_id, h.last_sequence());
        if h.is_transactional() {
            self.open_txn.entry(h.producer_id).or_insert(h.base_offset);
        }
        self.replayed.push(h.base_offset);
    }

    fn replay_marker(&mut self, h: &BatchHeader, marker: EndTxnMarker) -> Option<AbortedTxn> {
        self.replayed.push(h.base_offset);
        let first = self.open_txn.remove(&h.producer_id)?;
        (marker.control_type == ControlRecordType::Abort).then_some(AbortedTxn {
            producer_id: h.producer_id,
            first_offset: first,
            last_offset: h.base_offset,
            last_stable_offset: h.base_offset + 1,
        })
    }
}

fn append(log: &mut Log, b: bytes::BytesMut) -> i64 {
    log.append_as_leader(b, 0, 1, TimestampType::CreateTime)
        .unwrap()
        .first_offset
}

fn idempotent(pid: i64, seq: i32) -> bytes::BytesMut {
    TestBatch::new(0)
        .producer(pid, 0, seq)
        .record(1, None, Some(b"v"))
        .build()
}

#[test]
fn rebuild_loads_the_newest_snapshot_then_replays_the_batches_after_it() {
    let d = tempfile::tempdir().unwrap();
    let mut log = Log::open(d.path().join("t-0"), LogConfig::default(), 0).unwrap();
    append(&mut log, idempotent(1, 0));
    append(&mut log, idempotent(2, 0));
    let mut live = Table::default();
    live.last_seq.insert(1, 0);
    live.last_seq.insert(2, 0);
    let at = log.log_end_offset();
    log.write_producer_snapshot(at, &live.encode()).unwrap();
    let third = append(&mut log, idempotent(1, 1));
    // A batch without producer id is not producer state.
    append(
        &mut log,
        TestBatch::new(0).record(1, None, Some(b"plain")).build(),
    );
    let mut t = Table::default();
    let r = log.rebuild_producer_state(&mut t).unwrap();
    assert_eq!(r.snapshot_offset, Some(at));
    assert_eq!(r.replayed_from, at);
    assert_eq!(t.replayed, vec![third]);
    assert_eq!(t.last_seq, BTreeMap::from([(1, 1), (2, 0)]));
}

#[test]
fn a_full_truncation_drops_every_snapshot_of_the_old_history() {
    // A follower whose leader's log start passed its LEO empties its log and restarts there;
    // a snapshot of the old history at or below that offset, left behind, would be loaded by the
    // rebuild at the next open and give producers the old history's sequences.
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let mut log = Log::open(&dir, LogConfig::default(), 0).unwrap();
    append(&mut log, idempotent(1, 0));
    append(&mut log, idempotent(1, 1));
    let mut old = Table::default();
    old.last_seq.insert(1, 1);
    log.write_producer_snapshot(1, &old.encode()).unwrap();
    log.write_producer_snapshot(2, &old.encode()).unwrap();
    log.truncate_fully_and_start_at(2, 0).unwrap();
    assert!(log.producer_snapshot_offsets().is_empty());
    log.close().unwrap();
    let mut log = Log::open(&dir, LogConfig::default(), 0).unwrap();
    let mut t = Table::default();
    let r = log.rebuild_producer_state(&mut t).unwrap();
    assert_eq!(r.snapshot_offset, None);
    assert!(t.last_seq.is_empty(), "{t:?}");
}

#[test]
fn a_bad_snapshot_falls_back_to_a_replay_from_the_log_start() {
    let d = tempfile::tempdir().unwrap();
    let mut log = Log::open(d.path().join("t-0"), LogConfig::default(), 0).unwrap();
    append(&mut log, idempotent(1, 0));
    append(&mut log, idempotent(1, 1));
    log.write_producer_snapshot(2, b"torn").unwrap();
    let mut t = Table::default();
    let r = log.rebuild_producer_state(&mut t).unwrap();
    assert_eq!(r.snapshot_offset, None);
    // The replay's own error is kept as the source, with the snapshot's offset.
    let e = r.snapshot_error.as_ref().unwrap();
    assert_eq!(e.offset, 2);
    let source = std::error::Error::source(e)
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .unwrap();
    assert_eq!(source.to_string(), "torn snapshot");
    assert_eq!((r.replayed_from, r.replayed_batches), (0, 2));
    assert_eq!(t.last_seq, BTreeMap::from([(1, 1)]));
}

#[test]
fn an_aborted_transaction_missing_from_the_txnindex_is_indexed_again() {
    let d = tempfile::tempdir().unwrap();
    let mut log = Log::open(d.path().join("t-0"), LogConfig::default(), 0).unwrap();
    let first = append(
        &mut log,
        TestBatch::new(0)
            .producer(4, 0, 0)
            .transactional()
            .record(1, None, Some(b"x"))
            .build(),
    );
    // The marker is in the log but (a crash) its .txnindex entry was never written.
    let m = append(
        &mut log,
        TestBatch::new(0)
            .producer(4, 0, -1)
            .control_marker(2, false)
            .build(),
    );
    assert!(log.collect_aborted_transactions(0, 100).is_empty());
    let mut t = Table::default();
    let r = log.rebuild_producer_state(&mut t).unwrap();
    assert_eq!(r.reindexed_aborted_txns, 1);
    let idx = log.collect_aborted_transactions(0, 100);
    assert_eq!(idx.len(), 1);
    assert_eq!((idx[0].first_offset, idx[0].last_offset), (first, m));
    // A second rebuild finds it there and adds nothing.
    let r = log.rebuild_producer_state(&mut Table::default()).unwrap();
    assert_eq!(r.reindexed_aborted_txns, 0);
    assert_eq!(log.collect_aborted_transactions(0, 100).len(), 1);
}

#[test]
fn batches_appended_as_follower_are_replayed_and_aborts_indexed() {
    let d = tempfile::tempdir().unwrap();
    let mut log = Log::open(d.path().join("t-0"), LogConfig::default(), 0).unwrap();
    let mut bytes = bytes::BytesMut::new();
    bytes.extend_from_slice(
        &TestBatch::new(0)
            .producer(7, 0, 0)
            .transactional()
            .record(1, None, Some(b"a"))
            .record(1, None, Some(b"b"))
            .build(),
    );
    bytes.extend_from_slice(&TestBatch::new(2).record(1, None, Some(b"plain")).build());
    bytes.extend_from_slice(
        &TestBatch::new(3)
            .producer(7, 0, -1)
            .control_marker(2, false)
            .build(),
    );
    let bytes = bytes.freeze();
    log.append_as_follower(bytes.clone(), 5).unwrap();
    let mut table = Table::default();
    assert_eq!(log.replay_appended_batches(&bytes, &mut table).unwrap(), 2);
    assert_eq!(table.replayed, vec![0, 3]);
    assert_eq!(table.last_seq.get(&7), Some(&1));
    let aborted = log.collect_aborted_transactions(0, 4);
    assert_eq!(aborted.len(), 1);
    assert_eq!((aborted[0].first_offset, aborted[0].last_offset), (0, 3));
}
