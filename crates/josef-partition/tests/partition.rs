//! A leader and a follower `Partition` on real logs: replication byte for byte, HW, diverging
//! epoch and truncation, producer state and the transaction index on the follower.

mod support;

use josef_log::testing::{batch, TestBatch};
use josef_log::{BatchHeader, LogConfig};
use josef_partition::{ClientBatch, EpochEndOffset, FetchIsolation, Partition, ReadParams};
use josef_protocol::{ErrorCode, Uuid};
use josef_sequencer::{ControlType, EndTxnMarker, ProducerStateConfig};
use support::{open, produce, replicate};

fn log_bytes(p: &Partition) -> Vec<u8> {
    support::read_to_log_end(p, 0, 1 << 24).to_vec()
}

#[test]
fn a_follower_replicates_byte_for_byte_and_the_hw_follows() {
    let dir = tempfile::tempdir().unwrap();
    let (l, f) = (open(&dir, 1), open(&dir, 2));
    l.make_leader(0, 0, &[1, 2], &[1, 2], 2, 0).unwrap();
    f.make_follower(1, 0, 0);
    assert_eq!(
        produce(&f, batch(0, 1, &[(None, Some(b"x"))]), 1, 1),
        Err(ErrorCode::NotLeaderOrFollower)
    );
    assert_eq!(
        produce(&l, batch(0, 1, &[(None, Some(b"a"))]), -1, 1),
        Ok((0, 0))
    );
    assert_eq!(
        produce(
            &l,
            batch(0, 2, &[(None, Some(b"b")), (None, Some(b"c"))]),
            1,
            2
        ),
        Ok((1, 2))
    );
    assert_eq!(l.high_watermark(), 0);
    assert_eq!(l.check_enough_replicas_reach_offset(3, 2), Ok(false));
    replicate(&l, &f, 2, 3);
    assert_eq!(log_bytes(&l), log_bytes(&f));
    // The follower's next fetch tells the leader it has everything.
    replicate(&l, &f, 2, 4);
    assert_eq!(l.high_watermark(), 3);
    assert_eq!(l.check_enough_replicas_reach_offset(3, 2), Ok(true));
    // The follower learns it with its next fetch (the HW answered was sampled before).
    assert_eq!(f.high_watermark(), 0);
    replicate(&l, &f, 2, 4);
    assert_eq!(f.high_watermark(), 3);
    // Consumers read to the HW only.
    produce(&l, batch(0, 5, &[(None, Some(b"d"))]), 1, 5).unwrap();
    let read = |isolation| {
        l.read(&ReadParams {
            fetch_offset: 3,
            current_leader_epoch: 0,
            max_bytes: 1 << 20,
            min_one_message: true,
            hard_limit: false,
            isolation,
            require_leader: true,
        })
        .unwrap()
    };
    assert!(read(FetchIsolation::HighWatermark).records.is_empty());
    assert!(!read(FetchIsolation::LogEnd).records.is_empty());
    assert_eq!(
        l.available_bytes(3, 0, FetchIsolation::HighWatermark, 100, true),
        Some(0)
    );
    assert_eq!(
        l.available_bytes(3, 7, FetchIsolation::HighWatermark, 100, true),
        None
    );
    assert_eq!(
        f.read(&ReadParams {
            fetch_offset: 0,
            current_leader_epoch: 0,
            max_bytes: 100,
            min_one_message: true,
            hard_limit: false,
            isolation: FetchIsolation::HighWatermark,
            require_leader: true,
        }),
        Err(ErrorCode::NotLeaderOrFollower)
    );
}

#[test]
fn min_insync_replicas_refuses_acks_all_before_the_append() {
    let dir = tempfile::tempdir().unwrap();
    let l = open(&dir, 1);
    l.make_leader(0, 0, &[1], &[1, 2, 3], 2, 0).unwrap();
    assert_eq!(
        produce(&l, batch(0, 1, &[(None, Some(b"a"))]), -1, 1),
        Err(ErrorCode::NotEnoughReplicas)
    );
    assert_eq!(l.log_end_offset(), 0);
    assert_eq!(
        produce(&l, batch(0, 1, &[(None, Some(b"a"))]), 1, 1),
        Ok((0, 0))
    );
    // Under min ISR the HW is frozen (KAFKA-15583).
    assert_eq!(l.high_watermark(), 0);
}

#[test]
fn a_diverged_follower_truncates_to_the_new_leaders_epoch_end() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (open(&dir, 1), open(&dir, 2));
    a.make_leader(0, 0, &[1, 2], &[1, 2], 1, 0).unwrap();
    b.make_follower(1, 0, 0);
    produce(&a, batch(0, 1, &[(None, Some(b"a"))]), 1, 1).unwrap();
    replicate(&a, &b, 2, 2);
    // Two more on the old leader that never reach b.
    produce(&a, batch(0, 2, &[(None, Some(b"b"))]), 1, 3).unwrap();
    produce(&a, batch(0, 3, &[(None, Some(b"c"))]), 1, 3).unwrap();
    // b becomes leader in epoch 1 and writes its own.
    b.make_leader(1, 1, &[2], &[1, 2], 1, 4).unwrap();
    a.make_follower(2, 1, 1);
    produce(&b, batch(0, 4, &[(None, Some(b"z"))]), 1, 5).unwrap();
    let d = replicate(&b, &a, 1, 6).expect("a diverges");
    assert_eq!(
        d,
        EpochEndOffset {
            epoch: 0,
            end_offset: 1
        }
    );
    assert_eq!(a.log_end_offset(), 1);
    assert!(replicate(&b, &a, 1, 7).is_none());
    assert_eq!(log_bytes(&a), log_bytes(&b));
    assert_eq!(a.end_offset_for_epoch(0), (0, 1));
}

#[test]
fn producer_state_and_aborted_transactions_are_kept_on_the_follower() {
    let dir = tempfile::tempdir().unwrap();
    let (l, f) = (open(&dir, 1), open(&dir, 2));
    l.make_leader(0, 0, &[1, 2], &[1, 2], 1, 0).unwrap();
    f.make_follower(1, 0, 0);
    let txn = TestBatch::new(0)
        .producer(7, 0, 0)
        .transactional()
        .record(1, None, Some(b"t"))
        .build();
    produce(&l, txn, 1, 1).unwrap();
    let marker = TestBatch::new(0)
        .producer(7, 0, -1)
        .control_marker(2, false)
        .build();
    l.append_marker(marker, EndTxnMarker::new(7, 0, ControlType::Abort, 0), 2)
        .unwrap();
    let idem = TestBatch::new(0)
        .producer(8, 0, 0)
        .record(1, None, Some(b"i"))
        .build();
    assert_eq!(produce(&l, idem.clone(), 1, 3), Ok((2, 2)));
    for now in 3..6 {
        replicate(&l, &f, 2, now);
    }
    assert_eq!(f.aborted_transactions(0, 3).len(), 1);
    assert!(f.producer_txn_state(7).producer_epoch.is_some());
    assert_eq!(f.last_stable_offset(), 3);
    // The promoted follower knows the idempotent producer: a retry gets its original offsets.
    f.make_leader(1, 1, &[2], &[1, 2], 1, 5).unwrap();
    assert_eq!(produce(&f, idem, 1, 6), Ok((2, 2)));
    assert_eq!(f.log_end_offset(), 3);
}

#[test]
fn fetch_answers_map_to_the_fetchers_next_step() {
    use bytes::Bytes;
    use josef_partition::{FetchResponseAction, LeaderFetchAnswer};
    let dir = tempfile::tempdir().unwrap();
    let f = open(&dir, 2);
    assert_eq!(f.follower_fetch_request(), None);
    f.make_follower(1, 3, 3);
    let sent = f.follower_fetch_request().unwrap();
    assert_eq!(
        (sent.leader_id, sent.current_leader_epoch, sent.fetch_offset),
        (1, 3, 0)
    );
    let answer = |error| LeaderFetchAnswer {
        error,
        high_watermark: -1,
        log_start_offset: -1,
        diverging_epoch: None,
        records: Bytes::new(),
    };
    let on = |error| {
        f.on_follower_fetch_response(&sent, answer(error), 1)
            .unwrap()
    };
    assert_eq!(
        on(ErrorCode::FencedLeaderEpoch),
        FetchResponseAction::Fenced
    );
    assert_eq!(
        on(ErrorCode::UnknownLeaderEpoch),
        FetchResponseAction::Backoff(ErrorCode::UnknownLeaderEpoch)
    );
    assert_eq!(
        on(ErrorCode::OffsetOutOfRange),
        FetchResponseAction::OffsetOutOfRange
    );
    assert!(matches!(
        on(ErrorCode::None),
        FetchResponseAction::Appended(_)
    ));
    // The epoch moved since the fetch was sent: its answer is stale, FENCED included.
    f.make_follower(1, 4, 4);
    assert_eq!(on(ErrorCode::FencedLeaderEpoch), FetchResponseAction::Stale);
    assert_eq!(on(ErrorCode::None), FetchResponseAction::Stale);
}

#[test]
fn offset_out_of_range_truncates_or_restarts_at_the_leaders_log_start() {
    let dir = tempfile::tempdir().unwrap();
    let (l, f) = (open(&dir, 1), open(&dir, 2));
    l.make_leader(0, 0, &[1, 2], &[1, 2], 1, 0).unwrap();
    f.make_follower(1, 0, 0);
    for t in 0..3 {
        produce(&l, batch(0, t, &[(None, Some(b"a"))]), 1, t).unwrap();
    }
    replicate(&l, &f, 2, 5);
    assert_eq!(f.log_end_offset(), 3);
    // A leader behind us (unclean history): truncate to its LEO.
    use josef_partition::OutOfRangeOutcome;
    let sent = f.follower_fetch_request().unwrap();
    assert_eq!(
        f.on_offset_out_of_range(&sent, 1, 0, 6).unwrap(),
        OutOfRangeOutcome::TruncatedTo(1)
    );
    assert_eq!(f.log_end_offset(), 1);
    // Offsets asked for a fetch from before the truncation are for another state: ignored.
    assert_eq!(
        f.on_offset_out_of_range(&sent, 20, 10, 7).unwrap(),
        OutOfRangeOutcome::Stale
    );
    assert_eq!(f.log_end_offset(), 1);
    // Our LEO inside the leader's log: fetch on.
    let sent = f.follower_fetch_request().unwrap();
    assert_eq!(
        f.on_offset_out_of_range(&sent, 5, 0, 7).unwrap(),
        OutOfRangeOutcome::Unchanged
    );
    // A leader whose log starts past our LEO: start over there.
    assert_eq!(
        f.on_offset_out_of_range(&sent, 20, 10, 7).unwrap(),
        OutOfRangeOutcome::StartedAt(10)
    );
    assert_eq!((f.log_start_offset(), f.log_end_offset()), (10, 10));
    // ... and fetches from there.
    let next = f.follower_fetch_request().unwrap();
    assert_eq!((next.fetch_offset, next.log_start_offset), (10, 10));
}

#[test]
fn delete_records_moves_the_log_start_on_the_leader_only() {
    let dir = tempfile::tempdir().unwrap();
    let l = Partition::open(
        &dir.path().join("solo/t-0"),
        "t",
        0,
        Uuid::ZERO,
        LogConfig::default(),
        ProducerStateConfig::default(),
        0,
    )
    .unwrap();
    for t in 0..3 {
        produce(&l, batch(0, t, &[(None, Some(b"a"))]), -1, t).unwrap();
    }
    assert_eq!(
        l.delete_records_before(5).map_err(|e| e.code),
        Err(ErrorCode::OffsetOutOfRange)
    );
    assert_eq!(l.delete_records_before(2), Ok(2));
    assert_eq!(l.delete_records_before(-1), Ok(3));
    assert_eq!(l.delete_old_segments(10), Ok(0));
    let f = open(&dir, 2);
    f.make_follower(1, 0, 0);
    assert_eq!(
        f.delete_records_before(0).map_err(|e| e.code),
        Err(ErrorCode::NotLeaderOrFollower)
    );
}

#[test]
fn a_txn_marker_is_checked_fenced_and_appended_as_leader() {
    let dir = tempfile::tempdir().unwrap();
    let (l, f) = (open(&dir, 1), open(&dir, 2));
    let commit =
        |coordinator_epoch| EndTxnMarker::new(7, 0, ControlType::Commit, coordinator_epoch);
    // A follower refuses: the coordinator looks the leader up again.
    f.make_follower(1, 3, 0);
    assert_eq!(
        f.append_txn_marker(&commit(0), -1, 1, 1)
            .map_err(|e| e.code),
        Err(ErrorCode::NotLeaderOrFollower)
    );
    l.make_leader(3, 0, &[1], &[1, 2], 1, 0).unwrap();
    let txn = TestBatch::new(0)
        .producer(7, 0, 0)
        .transactional()
        .record(1, None, Some(b"t"))
        .build();
    // min.insync.replicas 1: the helper's 2 would freeze the HW with one replica in the ISR.
    let h = BatchHeader::parse(&txn).unwrap();
    l.append_from_client(ClientBatch::Owned(txn), &h, 1, 1, 1)
        .unwrap();
    // acks = -1 under min.insync.replicas: nothing written.
    assert_eq!(
        l.append_txn_marker(&commit(5), -1, 2, 2)
            .map_err(|e| e.code),
        Err(ErrorCode::NotEnoughReplicas)
    );
    assert_eq!(l.log_end_offset(), 1);
    assert_eq!(
        l.append_txn_marker(&commit(5), -1, 1, 2)
            .map_err(|e| e.code),
        Ok(1)
    );
    {
        assert_eq!(l.log_end_offset(), 2);
        assert_eq!(l.last_stable_offset(), 2);
        let bytes = support::read_to_log_end(&l, 1, 1 << 20);
        let h = BatchHeader::parse(&bytes).unwrap();
        assert!(h.is_control() && h.is_transactional());
        assert_eq!((h.producer_id, h.producer_epoch), (7, 0));
        assert_eq!(h.partition_leader_epoch, 3);
    }
    // A deposed coordinator (a lower coordinator epoch than the last marker's) is fenced.
    assert_eq!(
        l.append_txn_marker(&commit(4), -1, 1, 3)
            .map_err(|e| e.code),
        Err(ErrorCode::TransactionCoordinatorFenced)
    );
    // So is an older producer epoch than the one the partition knows.
    let bumped = TestBatch::new(0)
        .producer(7, 1, 0)
        .transactional()
        .record(1, None, Some(b"u"))
        .build();
    let h = BatchHeader::parse(&bumped).unwrap();
    l.append_from_client(ClientBatch::Owned(bumped), &h, 1, 1, 4)
        .unwrap();
    assert_eq!(
        l.append_txn_marker(&commit(5), -1, 1, 5)
            .map_err(|e| e.code),
        Err(ErrorCode::InvalidProducerEpoch)
    );
    assert_eq!(l.log_end_offset(), 3);
}

/// A follower stopped right after it caught up leaves the ISR (controlled shutdown, or its
/// session timing out) in one metadata image and is marked fenced or shutting down in that or a
/// later one. Outside the ISR but caught up less than `replica.lag.time.max.ms` ago it holds the
/// HW only while it may rejoin: once the broker learns it is ineligible the HW must move, and
/// the listener (which completes parked acks=all produces) must hear it, since the stopped
/// follower sends no fetch that would recompute it.
#[test]
fn an_ineligible_follower_out_of_the_isr_stops_holding_the_hw() {
    use std::sync::atomic::{AtomicI64, Ordering};
    use std::sync::Arc;

    let dir = tempfile::tempdir().unwrap();
    let (l, f) = (open(&dir, 1), open(&dir, 2));
    l.make_leader(0, 0, &[1, 2], &[1, 2], 1, 0).unwrap();
    f.make_follower(1, 0, 0);
    produce(&l, batch(0, 1, &[(None, Some(b"a"))]), -1, 1).unwrap();
    replicate(&l, &f, 2, 2);
    replicate(&l, &f, 2, 3);
    assert_eq!(l.high_watermark(), 1);
    let heard = Arc::new(AtomicI64::new(-1));
    let h = heard.clone();
    l.set_append_listener(Arc::new(move |_, e| {
        if let Some(hw) = e.high_watermark {
            h.store(hw, Ordering::SeqCst);
        }
    }));
    // Follower 2 stops; the controller's ISR shrink arrives (a new partition epoch) 100 ms
    // after it last caught up, well within replica.lag.time.max.ms (30 s by default).
    l.make_leader(0, 1, &[1], &[1, 2], 1, 100).unwrap();
    // acks=all with min.insync.replicas 1 (the helper's `produce` sets 2).
    let b = batch(0, 1, &[(None, Some(b"b"))]);
    let h = BatchHeader::parse(&b).unwrap();
    l.append_from_client(ClientBatch::Owned(b), &h, -1, 1, 100)
        .unwrap();
    // Still eligible and recently caught up: it may rejoin, so it holds the HW (Kafka's rule).
    assert_eq!(l.high_watermark(), 1);
    assert_eq!(l.check_enough_replicas_reach_offset(2, 1), Ok(false));
    // The image fencing it (or marking it shutting down): the HW moves at once.
    l.set_ineligible_replicas(&[2], 200);
    assert_eq!(l.high_watermark(), 2);
    assert_eq!(heard.load(Ordering::SeqCst), 2);
    assert_eq!(l.check_enough_replicas_reach_offset(2, 1), Ok(true));
    // Set again unchanged: nothing to do.
    heard.store(-1, Ordering::SeqCst);
    l.set_ineligible_replicas(&[2], 300);
    assert_eq!(heard.load(Ordering::SeqCst), -1);
}
