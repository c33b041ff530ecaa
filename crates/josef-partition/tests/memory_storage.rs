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
    let log = Log::open_in(
        storage.clone(),
        "/mem/t-0",
        LogConfig::default(),
        0,
        PartitionState::Standalone,
    )
    .unwrap();
    Partition::single_replica_from_log(log, "t", 0, Uuid::ZERO, ProducerStateConfig::default(), 0)
        .unwrap()
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
