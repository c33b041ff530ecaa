//! Behaviour of the driver: deferred release at the high watermark, the failure path, load/replay.

use josef_coordinator::{
    CoordinatorDriver, CoordinatorResult, CoordinatorShard, DriverError, InMemoryPartitionWriter,
    LogEntry, PartitionWriter, ReplayError, TransactionResult, WriteError, NOT_COORDINATOR,
};
use std::collections::BTreeMap;

/// A key/value shard that also tracks transactional puts until their marker.
#[derive(Debug, Default, Clone, PartialEq)]
struct Kv {
    map: BTreeMap<String, u32>,
    pending: BTreeMap<i64, Vec<(String, u32)>>,
    replayed_offsets: Vec<i64>,
}

#[derive(Debug, Clone, PartialEq)]
enum Rec {
    Put(String, u32),
    Poison,
}

impl CoordinatorShard for Kv {
    type Record = Rec;
    fn replay(&mut self, offset: i64, pid: i64, _epoch: i16, r: &Rec) -> Result<(), ReplayError> {
        self.replayed_offsets.push(offset);
        match r {
            Rec::Put(k, v) if pid >= 0 => {
                self.pending.entry(pid).or_default().push((k.clone(), *v));
                Ok(())
            }
            Rec::Put(k, v) => {
                self.map.insert(k.clone(), *v);
                Ok(())
            }
            Rec::Poison => Err(ReplayError::InvalidRecord {
                offset,
                reason: "poison".into(),
            }),
        }
    }

    fn replay_end_transaction_marker(
        &mut self,
        _offset: i64,
        pid: i64,
        _epoch: i16,
        result: TransactionResult,
    ) -> Result<(), ReplayError> {
        let puts = self.pending.remove(&pid).unwrap_or_default();
        if result == TransactionResult::Commit {
            self.map.extend(puts);
        }
        Ok(())
    }
}

fn put(k: &str, v: u32) -> impl FnOnce(&Kv) -> CoordinatorResult<Rec, String> + '_ {
    move |kv: &Kv| {
        let old = kv.map.get(k).copied();
        CoordinatorResult::new(vec![Rec::Put(k.into(), v)], format!("{k}:{old:?}->{v}"))
    }
}

type Driver = CoordinatorDriver<Kv, InMemoryPartitionWriter<Rec>, String>;

fn driver() -> Driver {
    CoordinatorDriver::new(Kv::default(), InMemoryPartitionWriter::new())
}

#[test]
fn response_is_held_until_high_watermark_passes_last_record() {
    let mut d = driver();
    assert_eq!(d.write(put("a", 1)).unwrap(), None);
    assert_eq!(d.write(put("b", 2)).unwrap(), None);
    assert_eq!(d.pending_responses(), 2);
    // HW = 1: offset 0 durable, offset 1 not yet.
    d.writer_mut().advance_high_watermark(1);
    assert_eq!(d.on_high_watermark(1), vec!["a:None->1".to_string()]);
    assert!(d.on_high_watermark(1).is_empty());
    assert_eq!(d.on_high_watermark(2), vec!["b:None->2".to_string()]);
    assert_eq!(d.pending_responses(), 0);
}

#[test]
fn records_are_replayed_at_their_offsets_before_commit() {
    let mut d = driver();
    d.write(|_: &Kv| {
        CoordinatorResult::new(
            vec![Rec::Put("a".into(), 1), Rec::Put("b".into(), 2)],
            String::new(),
        )
    })
    .unwrap();
    d.write(put("c", 3)).unwrap();
    assert_eq!(d.shard().replayed_offsets, vec![0, 1, 2]);
    assert_eq!(d.last_written_offset(), 2);
    // The next handler sees the uncommitted state.
    assert_eq!(d.read(|kv| kv.map.len()), 3);
}

#[test]
fn empty_write_waits_for_earlier_uncommitted_records() {
    let mut d = driver();
    d.write(put("a", 1)).unwrap();
    // Read-your-writes: an answer computed from uncommitted state must not be released early.
    let r = d
        .write(|kv: &Kv| CoordinatorResult::response_only(format!("{:?}", kv.map.get("a"))))
        .unwrap();
    assert_eq!(r, None);
    assert_eq!(d.on_high_watermark(1).len(), 2);
    // Once everything is committed, an empty write is answered at once.
    let r = d
        .write(|_: &Kv| CoordinatorResult::response_only("now".to_string()))
        .unwrap();
    assert_eq!(r.as_deref(), Some("now"));
}

#[test]
fn failed_append_leaves_the_shard_unchanged() {
    let mut d = driver();
    d.write(put("a", 1)).unwrap();
    let before = d.shard().clone();
    d.writer_mut().fail_next_append(WriteError::NotLeader);
    let err = d.write(put("b", 2)).unwrap_err();
    assert_eq!(err, DriverError::Write(WriteError::NotLeader));
    assert_eq!(err.kafka_error_code(), NOT_COORDINATOR);
    assert_eq!(d.shard(), &before);
    assert_eq!(d.last_written_offset(), 0);
    assert_eq!(d.pending_responses(), 1);
    // The next write goes through at the next offset.
    d.write(put("b", 2)).unwrap();
    assert_eq!(d.last_written_offset(), 1);
}

#[test]
fn replay_error_is_reported() {
    let mut d = driver();
    let err = d
        .write(|_: &Kv| CoordinatorResult::new(vec![Rec::Poison], String::new()))
        .unwrap_err();
    assert!(matches!(
        err,
        DriverError::Replay(ReplayError::InvalidRecord { offset: 0, .. })
    ));
}

#[test]
fn fail_all_hands_back_held_responses_on_partition_loss() {
    let mut d = driver();
    d.write(put("a", 1)).unwrap();
    d.write(put("b", 1)).unwrap();
    assert_eq!(d.fail_all().len(), 2);
    assert!(d.on_high_watermark(10).is_empty());
}

#[test]
fn load_replays_stored_entries_into_same_state() {
    let mut d = driver();
    for i in 0..10 {
        d.write(put(&format!("k{}", i % 3), i)).unwrap();
    }
    d.write_transactional(7, 0, put("tx", 99)).unwrap();
    d.complete_transaction(7, 0, 0, TransactionResult::Commit, "marker".into())
        .unwrap();
    d.write_transactional(8, 0, put("aborted", 1)).unwrap();
    d.complete_transaction(8, 0, 0, TransactionResult::Abort, "marker".into())
        .unwrap();
    let (live, writer) = d.into_parts();
    assert_eq!(live.map.get("tx"), Some(&99));
    assert_eq!(live.map.get("aborted"), None);

    let mut restarted: Driver =
        CoordinatorDriver::new(Kv::default(), InMemoryPartitionWriter::new());
    let n = restarted.load(writer.entries().to_vec()).unwrap();
    assert_eq!(n, 14);
    assert_eq!(restarted.shard(), &live);
    assert_eq!(restarted.last_written_offset(), 13);
    // Loaded entries count as committed: a read-style write is answered at once.
    let r = restarted
        .write(|_: &Kv| CoordinatorResult::response_only("x".into()))
        .unwrap();
    assert_eq!(r.as_deref(), Some("x"));
}

#[test]
fn load_stops_at_first_bad_record() {
    let entries = vec![
        LogEntry::Record(josef_coordinator::StoredRecord {
            offset: 0,
            producer_id: -1,
            producer_epoch: -1,
            record: Rec::Put("a".into(), 1),
        }),
        LogEntry::Record(josef_coordinator::StoredRecord {
            offset: 1,
            producer_id: -1,
            producer_epoch: -1,
            record: Rec::Poison,
        }),
    ];
    let mut d = driver();
    assert!(d.load(entries).is_err());
}

#[test]
fn restart_after_failover_loses_only_unanswered_writes() {
    let mut d = driver();
    d.write(put("a", 1)).unwrap();
    let hw = d.writer_mut().commit_all();
    let answered = d.on_high_watermark(hw);
    assert_eq!(answered.len(), 1);
    d.write(put("b", 2)).unwrap(); // never committed, never answered
    let (_, mut writer) = d.into_parts();
    writer.truncate_to_high_watermark();
    let mut restarted: Driver =
        CoordinatorDriver::new(Kv::default(), InMemoryPartitionWriter::new());
    restarted.load(writer.entries().to_vec()).unwrap();
    assert_eq!(restarted.shard().map.get("a"), Some(&1));
    assert_eq!(restarted.shard().map.get("b"), None);
}

#[test]
fn writer_by_mutable_reference_works() {
    let mut w = InMemoryPartitionWriter::new();
    {
        let mut d: CoordinatorDriver<Kv, &mut InMemoryPartitionWriter<Rec>, String> =
            CoordinatorDriver::new(Kv::default(), &mut w);
        d.write(put("a", 1)).unwrap();
    }
    assert_eq!(w.log_end_offset(), 1);
    assert_eq!(
        w.append_end_transaction_marker(1, 0, 0, TransactionResult::Abort),
        Ok(1)
    );
}
