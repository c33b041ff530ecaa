//! A partition on `MemoryStorage`: idempotence, transactions (LSO, aborted-transaction index)
//! and the producer state rebuilt after a reopen, as on disk.

use std::sync::Arc;

use bytes::BytesMut;
use josef_log::storage::{MemoryStorage, Storage};
use josef_log::testing::{end_txn_marker, txn_batch, TestBatch};
use josef_log::{BatchHeader, Log, LogConfig, PartitionState};
use josef_partition::{ClientBatch, Partition};
use josef_protocol::{ErrorCode, Uuid};
use josef_sequencer::{ControlType, EndTxnMarker, ProducerStateConfig};

fn open(storage: &Arc<dyn Storage>) -> Partition {
    open_with(storage, ProducerStateConfig::default())
}

fn open_with(storage: &Arc<dyn Storage>, producers: ProducerStateConfig) -> Partition {
    let log = Log::open_in(
        storage.clone(),
        "/mem/t-0",
        LogConfig::default(),
        0,
        PartitionState::Standalone,
    )
    .unwrap();
    Partition::single_replica_from_log(log, "t", 0, Uuid::ZERO, producers, 0).unwrap()
}

fn produce(p: &Partition, b: BytesMut, now: i64) -> Result<(i64, i64), ErrorCode> {
    let h = BatchHeader::parse(&b).unwrap();
    p.append_from_client(ClientBatch::Owned(b), &h, -1, 1, now)
        .map(|r| (r.base_offset, r.last_offset))
        .map_err(|e| e.code)
}

#[test]
fn transactions_and_idempotence_survive_a_reopen_on_memory() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let p = open(&storage);
    let txn = txn_batch(7, 0, 0, 1, b"t");
    assert_eq!(produce(&p, txn, 1), Ok((0, 0)));
    let idem = TestBatch::new(0)
        .producer(8, 0, 0)
        .record(1, None, Some(b"i"))
        .build();
    assert_eq!(produce(&p, idem.clone(), 2), Ok((1, 1)));
    // The open transaction holds the LSO at its first offset.
    assert_eq!(p.last_stable_offset(), 0);
    let marker = end_txn_marker(7, 0, 3, false);
    p.append_marker(marker, EndTxnMarker::new(7, 0, ControlType::Abort, 0), 3)
        .unwrap();
    {
        assert_eq!(p.last_stable_offset(), 3);
        assert_eq!(p.aborted_transactions(0, 3).len(), 1);
    }
    p.close().unwrap();

    // Reopened on the same storage: the retry is recognised as a duplicate, the abort is still
    // indexed, and a sequence gap is still refused.
    let p = open(&storage);
    assert_eq!(produce(&p, idem, 4), Ok((1, 1)));
    assert_eq!(p.aborted_transactions(0, 3).len(), 1);
    let gap = TestBatch::new(0)
        .producer(8, 0, 5)
        .record(1, None, Some(b"x"))
        .build();
    assert_eq!(
        produce(&p, gap, 5),
        Err(ErrorCode::OutOfOrderSequenceNumber)
    );
    assert_eq!(p.log_end_offset(), 3);
}

#[test]
fn producers_idle_past_the_expiration_are_forgotten_but_not_an_open_transaction() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let p = open_with(
        &storage,
        ProducerStateConfig {
            producer_id_expiration_ms: 1_000,
        },
    );
    let idem = |seq| {
        TestBatch::new(0)
            .producer(8, 0, seq)
            .record(10_000, None, Some(b"i"))
            .build()
    };
    assert_eq!(produce(&p, idem(0), 10_000), Ok((0, 0)));
    assert_eq!(
        produce(&p, txn_batch(7, 0, 0, 10_000, b"t"), 10_000),
        Ok((1, 1))
    );
    // Idle 999 ms: still known, so a gap is refused.
    assert_eq!(p.remove_expired_producers(10_999), 0);
    assert_eq!(
        produce(&p, idem(5), 10_999),
        Err(ErrorCode::OutOfOrderSequenceNumber)
    );
    // Idle 1,000 ms: the idempotent producer goes, the one with an open transaction stays.
    assert_eq!(p.remove_expired_producers(11_000), 1);
    assert_eq!(p.remove_expired_producers(50_000), 0);
    assert_eq!(p.last_stable_offset(), 1);
    // Unknown now: its next batch is taken at whatever sequence it carries.
    assert_eq!(produce(&p, idem(5), 11_000), Ok((2, 2)));
}

/// Bug 23 of docs/reliability.md: a node restarted with SIGTERM led the partition again before an
/// idempotent producer's retries were answered; the oldest of its in-flight batches, already in
/// the log, came back as OUT_OF_ORDER_SEQUENCE_NUMBER (the snapshot had kept only the newest
/// batch) and librdkafka failed fatally ("sequence desynchronization"). Every batch a producer
/// has in flight (at most five) must still be recognised after a clean restart.
#[test]
fn a_retry_of_any_in_flight_batch_is_a_duplicate_after_a_clean_restart() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let p = open(&storage);
    let batch = |seq: i32| {
        TestBatch::new(0)
            .producer(8, 0, seq)
            .record(1, None, Some(b"a"))
            .record(1, None, Some(b"b"))
            .build()
    };
    let sent: Vec<_> = (0..5).map(|i| batch(9021 + 2 * i)).collect();
    for (i, b) in sent.iter().enumerate() {
        let o = 2 * i as i64;
        assert_eq!(produce(&p, b.clone(), 1), Ok((o, o + 1)));
    }
    p.close().unwrap();
    let p = open(&storage);
    for (i, b) in sent.into_iter().enumerate() {
        let o = 2 * i as i64;
        assert_eq!(produce(&p, b, 2), Ok((o, o + 1)), "retry of batch {i}");
    }
    assert_eq!(p.log_end_offset(), 10);
    assert_eq!(produce(&p, batch(9031), 3), Ok((10, 11)));
}
