//! The multi-partition router: placement, load status errors, write failures, release at HW.

use josef_coordinator::{InMemoryPartitionWriter, LogEntry, WriteError};
use josef_txn::*;

type C = TxnCoordinator<InMemoryPartitionWriter<TxnLogRecord>, u32>;

fn init(id: &str) -> InitProducerIdRequest {
    InitProducerIdRequest {
        transactional_id: Some(id.into()),
        transaction_timeout_ms: 60_000,
        producer_id: -1,
        producer_epoch: -1,
    }
}

fn empty() -> Vec<LogEntry<TxnLogRecord>> {
    Vec::new()
}

#[test]
fn request_for_partition_not_led_here_is_not_coordinator() {
    let mut c = C::new(TxnConfig::default());
    let mut pids = SequentialProducerIdGenerator::new(0);
    let r = c.init_producer_id(&init("t"), 0, &mut pids, 1).unwrap();
    assert_eq!(
        r.reply,
        TxnReply::InitProducerId(InitProducerIdResponse::error(TxnError::NotCoordinator))
    );
    assert_eq!(c.describe("t").error, Some(TxnError::NotCoordinator));
}

#[test]
fn request_while_loading_is_coordinator_load_in_progress() {
    let mut c = C::new(TxnConfig::default());
    let p = c.partition_for("t");
    c.begin_loading(p, 3);
    assert_eq!(
        c.status(p),
        Some(PartitionStatus::Loading {
            coordinator_epoch: 3
        })
    );
    let mut pids = SequentialProducerIdGenerator::new(0);
    let r = c.init_producer_id(&init("t"), 0, &mut pids, 1).unwrap();
    assert_eq!(
        r.reply,
        TxnReply::InitProducerId(InitProducerIdResponse::error(
            TxnError::CoordinatorLoadInProgress
        ))
    );
    let end = EndTxnRequest {
        transactional_id: "t".into(),
        producer_id: 0,
        producer_epoch: 0,
        committed: true,
        client_transaction_version: TransactionVersion::V0,
    };
    let r = c.end_txn(&end, 0, &mut pids, 2).unwrap();
    assert_eq!(
        r.reply,
        TxnReply::EndTxn(EndTxnResponse::error(TxnError::CoordinatorLoadInProgress))
    );
    c.complete_loading(p, 3, InMemoryPartitionWriter::new(), empty(), 0)
        .unwrap();
    assert!(c.init_producer_id(&init("t"), 0, &mut pids, 3).is_none());
}

#[test]
fn append_failure_maps_to_kafka_coordinator_errors() {
    let mut c = C::new(TxnConfig::default());
    let p = c.partition_for("t");
    c.complete_loading(p, 0, InMemoryPartitionWriter::new(), empty(), 0)
        .unwrap();
    let mut pids = SequentialProducerIdGenerator::new(0);
    c.driver_mut(p)
        .unwrap()
        .writer_mut()
        .fail_next_append(WriteError::NotLeader);
    let r = c.init_producer_id(&init("t"), 0, &mut pids, 1).unwrap();
    assert_eq!(r.context, Some(1));
    assert_eq!(
        r.reply,
        TxnReply::InitProducerId(InitProducerIdResponse::error(TxnError::NotCoordinator))
    );
    c.driver_mut(p)
        .unwrap()
        .writer_mut()
        .fail_next_append(WriteError::NotEnoughReplicas);
    let r = c.init_producer_id(&init("t"), 0, &mut pids, 2).unwrap();
    assert_eq!(
        r.reply,
        TxnReply::InitProducerId(InitProducerIdResponse::error(
            TxnError::CoordinatorNotAvailable
        ))
    );
    // Nothing was applied.
    assert!(c.shard(p).unwrap().get("t").is_none());
}

#[test]
fn end_txn_answer_and_markers_wait_for_high_watermark() {
    let mut c = C::new(TxnConfig::default());
    let p = c.partition_for("t");
    c.complete_loading(p, 4, InMemoryPartitionWriter::new(), empty(), 0)
        .unwrap();
    let mut pids = SequentialProducerIdGenerator::new(0);
    assert!(c.init_producer_id(&init("t"), 0, &mut pids, 1).is_none());
    let add = AddPartitionsToTxnRequest {
        transactional_id: "t".into(),
        producer_id: 0,
        producer_epoch: 0,
        partitions: [TopicPartition::new("a", 0)].into(),
        verify_only: false,
    };
    assert!(c
        .add_partitions_to_txn(&add, 1, TransactionVersion::V0, 2)
        .is_none());
    let end = EndTxnRequest {
        transactional_id: "t".into(),
        producer_id: 0,
        producer_epoch: 0,
        committed: true,
        client_transaction_version: TransactionVersion::V0,
    };
    assert!(c.end_txn(&end, 2, &mut pids, 3).is_none());
    // HW 2: init and add are durable, the PrepareCommit (offset 2) is not.
    let r = c.on_high_watermark(p, 2);
    assert_eq!(
        r.iter().map(|r| r.context).collect::<Vec<_>>(),
        vec![Some(1), Some(2)]
    );
    assert!(r.iter().all(|r| r.markers.is_empty()));
    let r = c.on_high_watermark(p, 3);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].context, Some(3));
    assert_eq!(r[0].markers.len(), 1);
    let marker = r[0].markers[0].clone();
    assert_eq!(marker.coordinator_epoch, 4);
    assert!(c.markers_completed(&marker, 3).unwrap().is_none());
    let r = c.on_high_watermark(p, 4);
    assert_eq!(r[0].reply, TxnReply::MarkersCompleted(true));
    assert_eq!(
        c.shard(p).unwrap().get("t").unwrap().state,
        TxnState::CompleteCommit
    );
}

#[test]
fn resign_hands_back_held_answers() {
    let mut c = C::new(TxnConfig::default());
    let p = c.partition_for("t");
    c.complete_loading(p, 0, InMemoryPartitionWriter::new(), empty(), 0)
        .unwrap();
    let mut pids = SequentialProducerIdGenerator::new(0);
    assert!(c.init_producer_id(&init("t"), 0, &mut pids, 9).is_none());
    let held = c.resign(p);
    assert_eq!(held.len(), 1);
    assert_eq!(
        held[0].reply.failed(TxnError::NotCoordinator),
        TxnReply::InitProducerId(InitProducerIdResponse::error(TxnError::NotCoordinator))
    );
    assert_eq!(c.status(p), None);
}

#[test]
fn null_transactional_id_is_answered_by_any_node() {
    let mut c = C::new(TxnConfig::default());
    let mut pids = SequentialProducerIdGenerator::new(50);
    let req = InitProducerIdRequest {
        transactional_id: None,
        transaction_timeout_ms: 1,
        producer_id: -1,
        producer_epoch: -1,
    };
    let r = c.init_producer_id(&req, 0, &mut pids, 1).unwrap();
    assert_eq!(
        r.reply,
        TxnReply::InitProducerId(InitProducerIdResponse {
            error: None,
            producer_id: 50,
            producer_epoch: 0
        })
    );
}

#[test]
fn reload_after_failover_resends_markers_of_prepared_transactions() {
    let mut c = C::new(TxnConfig::default());
    let p = c.partition_for("t");
    c.complete_loading(p, 0, InMemoryPartitionWriter::new(), empty(), 0)
        .unwrap();
    let mut pids = SequentialProducerIdGenerator::new(0);
    c.init_producer_id(&init("t"), 0, &mut pids, 1);
    let add = AddPartitionsToTxnRequest {
        transactional_id: "t".into(),
        producer_id: 0,
        producer_epoch: 0,
        partitions: [TopicPartition::new("a", 0)].into(),
        verify_only: false,
    };
    c.add_partitions_to_txn(&add, 1, TransactionVersion::V0, 2);
    let end = EndTxnRequest {
        transactional_id: "t".into(),
        producer_id: 0,
        producer_epoch: 0,
        committed: false,
        client_transaction_version: TransactionVersion::V0,
    };
    c.end_txn(&end, 2, &mut pids, 3);
    let (mut w, held) = c.take_writer(p).unwrap();
    assert_eq!(held.len(), 3);
    w.commit_all();
    let entries = w.entries().to_vec();
    c.begin_loading(p, 1);
    let markers = c.complete_loading(p, 1, w, entries, 2).unwrap();
    assert_eq!(markers.len(), 1);
    assert_eq!(
        (markers[0].result, markers[0].coordinator_epoch),
        (TransactionResult::Abort, 1)
    );
}

/// A transaction begun on a node whose clock is `skew_ms` off this one's, then loaded here at
/// `loaded_at` (this node's clock): `(state after a tick just before its timeout on this clock,
/// state after a tick just after it)`.
fn loaded_transaction_timeout(skew_ms: i64, loaded_at: i64) -> (TxnState, TxnState) {
    let timeout = 60_000;
    let mut old = C::new(TxnConfig::default());
    let p = old.partition_for("t");
    old.complete_loading(p, 0, InMemoryPartitionWriter::new(), empty(), 0)
        .unwrap();
    let mut pids = SequentialProducerIdGenerator::new(0);
    let theirs = loaded_at + skew_ms; // the old coordinator's clock, when the load happens here
    old.init_producer_id(&init("t"), theirs - 10, &mut pids, 1);
    let add = AddPartitionsToTxnRequest {
        transactional_id: "t".into(),
        producer_id: 0,
        producer_epoch: 0,
        partitions: [TopicPartition::new("a", 0)].into(),
        verify_only: false,
    };
    old.add_partitions_to_txn(&add, theirs - 5, TransactionVersion::V0, 2);
    let (mut w, _) = old.take_writer(p).unwrap();
    w.commit_all();
    let entries = w.entries().to_vec();

    let mut c = C::new(TxnConfig::default());
    c.begin_loading(p, 1);
    c.complete_loading(p, 1, w, entries, loaded_at).unwrap();
    let state = |c: &C| c.shard(p).unwrap().get("t").unwrap().state;
    assert_eq!(state(&c), TxnState::Ongoing);
    c.on_tick(loaded_at + timeout - 1);
    let before = state(&c);
    c.on_tick(loaded_at + timeout + 1);
    (before, state(&c))
}

#[test]
fn a_loaded_transaction_times_out_by_this_nodes_clock_whatever_the_old_coordinators_said() {
    let hour = 3_600_000;
    // Written on a clock an hour behind: by its own timestamps it is an hour old already.
    assert_eq!(
        loaded_transaction_timeout(-hour, 10 * hour),
        (TxnState::Ongoing, TxnState::PrepareAbort)
    );
    // Written on a clock an hour ahead: by its timestamps it would live an hour past its timeout.
    assert_eq!(
        loaded_transaction_timeout(hour, 10 * hour),
        (TxnState::Ongoing, TxnState::PrepareAbort)
    );
    // Clocks that agree: the same.
    assert_eq!(
        loaded_transaction_timeout(0, 10 * hour),
        (TxnState::Ongoing, TxnState::PrepareAbort)
    );
}
