//! One test per Kafka producer-state rule (KIP-98 idempotence and transactions, partition side).

use josef_sequencer::*;

const PID: i64 = 1000;
const TS: i64 = 1_700_000_000_000;

fn table() -> ProducerStateTable {
    ProducerStateTable::new(ProducerStateConfig::default())
}

/// Appends an idempotent batch through validate + commit at the given offsets.
fn append(t: &mut ProducerStateTable, b: BatchInfo, first: i64) -> Validation {
    let last = first + b.record_count() - 1;
    match t.validate(&b).expect("batch accepted") {
        Validation::Append(plan) => {
            t.commit(plan.clone().with_offsets(first, last, TS + first));
            Validation::Append(plan)
        }
        dup => dup,
    }
}

fn code(r: Result<Validation, SequenceError>) -> i16 {
    r.expect_err("batch refused").kafka_error_code()
}

#[test]
fn duplicate_of_one_of_last_five_batches_returns_original_offsets() {
    let mut t = table();
    for i in 0..5 {
        append(
            &mut t,
            BatchInfo::idempotent(PID, 0, i * 2, 2),
            10 * i64::from(i),
        );
    }
    for i in 0..5 {
        let retry = BatchInfo::idempotent(PID, 0, i * 2, 2);
        let first = 10 * i64::from(i);
        assert_eq!(
            t.validate(&retry).unwrap(),
            Validation::Duplicate {
                first_offset: first,
                last_offset: first + 1,
                timestamp: TS + first
            }
        );
    }
    // A duplicate changes nothing: the next in-order batch is still accepted.
    assert!(matches!(
        t.validate(&BatchInfo::idempotent(PID, 0, 10, 1)).unwrap(),
        Validation::Append(_)
    ));
}

#[test]
fn batch_older_than_the_last_five_is_out_of_order_not_duplicate() {
    let mut t = table();
    for i in 0..6 {
        append(&mut t, BatchInfo::idempotent(PID, 0, i, 1), i64::from(i));
    }
    assert_eq!(code(t.validate(&BatchInfo::idempotent(PID, 0, 0, 1))), 45);
    assert!(matches!(
        t.validate(&BatchInfo::idempotent(PID, 0, 1, 1)).unwrap(),
        Validation::Duplicate {
            first_offset: 1,
            ..
        }
    ));
}

#[test]
fn duplicate_requires_the_exact_sequence_range() {
    let mut t = table();
    append(&mut t, BatchInfo::idempotent(PID, 0, 0, 4), 0);
    // Same first sequence, different length: not a duplicate, and out of order.
    assert_eq!(code(t.validate(&BatchInfo::idempotent(PID, 0, 0, 3))), 45);
    assert_eq!(code(t.validate(&BatchInfo::idempotent(PID, 0, 1, 3))), 45);
}

#[test]
fn duplicate_needs_the_same_epoch() {
    let mut t = table();
    append(&mut t, BatchInfo::idempotent(PID, 1, 0, 1), 0);
    // Same sequence range but epoch 2: a new epoch starting at 0, appended, not a duplicate.
    assert!(matches!(
        t.validate(&BatchInfo::idempotent(PID, 2, 0, 1)).unwrap(),
        Validation::Append(_)
    ));
}

#[test]
fn sequence_gap_is_out_of_order_sequence_number() {
    let mut t = table();
    append(&mut t, BatchInfo::idempotent(PID, 0, 0, 3), 0);
    let err = t
        .validate(&BatchInfo::idempotent(PID, 0, 4, 1))
        .unwrap_err();
    assert_eq!(
        err,
        SequenceError::OutOfOrderSequence {
            producer_id: PID,
            producer_epoch: 0,
            received_sequence: 4,
            last_sequence: 2
        }
    );
    assert_eq!(err.kafka_error_code(), codes::OUT_OF_ORDER_SEQUENCE_NUMBER);
    // Behind the last sequence but not a cached range: also out of order.
    assert_eq!(code(t.validate(&BatchInfo::idempotent(PID, 0, 2, 1))), 45);
    // The next sequence is fine.
    assert!(t.validate(&BatchInfo::idempotent(PID, 0, 3, 1)).is_ok());
}

#[test]
fn older_epoch_is_invalid_producer_epoch() {
    let mut t = table();
    append(&mut t, BatchInfo::idempotent(PID, 5, 0, 1), 0);
    let err = t
        .validate(&BatchInfo::idempotent(PID, 4, 1, 1))
        .unwrap_err();
    assert_eq!(
        err,
        SequenceError::InvalidProducerEpoch {
            producer_id: PID,
            received_epoch: 4,
            current_epoch: 5
        }
    );
    assert_eq!(err.kafka_error_code(), codes::INVALID_PRODUCER_EPOCH);
}

#[test]
fn unknown_producer_accepts_any_sequence() {
    let t = table();
    for seq in [0, 1, 42, i32::MAX] {
        assert!(matches!(
            t.validate(&BatchInfo::idempotent(PID, 3, seq, 1)).unwrap(),
            Validation::Append(_)
        ));
    }
}

#[test]
fn new_epoch_must_start_at_sequence_zero() {
    let mut t = table();
    append(&mut t, BatchInfo::idempotent(PID, 0, 0, 5), 0);
    assert_eq!(code(t.validate(&BatchInfo::idempotent(PID, 1, 5, 1))), 45);
    assert_eq!(code(t.validate(&BatchInfo::idempotent(PID, 1, 1, 1))), 45);
    assert!(matches!(
        append(&mut t, BatchInfo::idempotent(PID, 1, 0, 2), 5),
        Validation::Append(_)
    ));
    assert_eq!(t.producer(PID).unwrap().producer_epoch(), 1);
}

#[test]
fn new_epoch_over_stored_no_epoch_accepts_any_sequence() {
    // A stored entry without an epoch (-1), e.g. loaded from a snapshot.
    let bytes = encode_entries([&ProducerStateEntry::empty(PID)]);
    let t =
        ProducerStateTable::from_snapshot(ProducerStateConfig::default(), &bytes, 0, 0).unwrap();
    assert_eq!(t.producer(PID).unwrap().producer_epoch(), NO_PRODUCER_EPOCH);
    assert!(t.validate(&BatchInfo::idempotent(PID, 2, 17, 1)).is_ok());
}

#[test]
fn sequence_wraps_from_i32_max_to_zero() {
    let mut t = table();
    append(&mut t, BatchInfo::idempotent(PID, 0, i32::MAX - 1, 2), 0);
    assert_eq!(t.producer(PID).unwrap().last_seq(), i32::MAX);
    assert!(matches!(
        append(&mut t, BatchInfo::idempotent(PID, 0, 0, 1), 2),
        Validation::Append(_)
    ));
    assert_eq!(code(t.validate(&BatchInfo::idempotent(PID, 0, 2, 1))), 45);
    // A batch that itself spans the wrap, and its retry.
    let mut t = table();
    append(&mut t, BatchInfo::idempotent(PID, 0, i32::MAX - 3, 2), 0);
    let spanning = BatchInfo::idempotent(PID, 0, i32::MAX - 1, 4);
    assert_eq!(spanning.last_sequence, 1);
    append(&mut t, spanning, 2);
    assert!(matches!(
        t.validate(&spanning).unwrap(),
        Validation::Duplicate {
            first_offset: 2,
            last_offset: 5,
            ..
        }
    ));
    assert!(t.validate(&BatchInfo::idempotent(PID, 0, 2, 1)).is_ok());
}

#[test]
fn non_transactional_write_with_open_transaction_is_invalid_txn_state() {
    let mut t = table();
    t.append(&BatchInfo::transactional(PID, 0, 0, 1).with_offsets(7, 7, TS))
        .unwrap();
    let err = t
        .validate(&BatchInfo::idempotent(PID, 0, 1, 1))
        .unwrap_err();
    assert_eq!(
        err,
        SequenceError::InvalidTxnState {
            producer_id: PID,
            txn_first_offset: 7
        }
    );
    assert_eq!(err.kafka_error_code(), codes::INVALID_TXN_STATE);
}

#[test]
fn transactional_batch_opens_transaction_at_its_first_offset() {
    let mut t = table();
    let Validation::Append(plan) = t.validate(&BatchInfo::transactional(PID, 0, 0, 3)).unwrap()
    else {
        panic!("expected append")
    };
    assert_eq!(t.first_undecided_offset(), None);
    t.commit(plan.with_offsets(20, 22, TS));
    assert_eq!(
        t.producer(PID).unwrap().current_txn_first_offset(),
        Some(20)
    );
    assert_eq!(
        t.ongoing_transactions().collect::<Vec<_>>(),
        vec![(20, PID)]
    );
    // A second batch of the same transaction does not move its start.
    t.append(&BatchInfo::transactional(PID, 0, 3, 1).with_offsets(30, 30, TS))
        .unwrap();
    assert_eq!(t.first_undecided_offset(), Some(20));
}

#[test]
fn commit_marker_closes_transaction_and_yields_completed_txn() {
    for (control_type, aborted) in [(ControlType::Commit, false), (ControlType::Abort, true)] {
        let mut t = table();
        t.append(&BatchInfo::transactional(PID, 0, 0, 2).with_offsets(0, 1, TS))
            .unwrap();
        let plan = t
            .validate_marker(&EndTxnMarker::new(PID, 0, control_type, 4))
            .unwrap();
        let done = t.commit_marker(plan.with_offset(2, TS + 1)).unwrap();
        assert_eq!(
            done,
            CompletedTxn {
                producer_id: PID,
                first_offset: 0,
                last_offset: 2,
                is_aborted: aborted,
                last_stable_offset: 3
            }
        );
        let e = t.producer(PID).unwrap();
        assert_eq!(e.current_txn_first_offset(), None);
        assert_eq!(e.coordinator_epoch(), 4);
        assert_eq!(t.first_undecided_offset(), None);
        // After the marker, a non-transactional batch is allowed again.
        assert!(t.validate(&BatchInfo::idempotent(PID, 0, 2, 1)).is_ok());
    }
}

#[test]
fn marker_without_open_transaction_yields_no_completed_txn() {
    let mut t = table();
    let done = t
        .append_marker(&EndTxnMarker::new(PID, 0, ControlType::Commit, 0).at(0, TS))
        .unwrap();
    assert_eq!(done, None);
    // The marker still records the producer's epoch and coordinator epoch.
    assert_eq!(t.producer(PID).unwrap().coordinator_epoch(), 0);
}

#[test]
fn marker_with_older_coordinator_epoch_is_transaction_coordinator_fenced() {
    let mut t = table();
    t.append(&BatchInfo::transactional(PID, 0, 0, 1).with_offsets(0, 0, TS))
        .unwrap();
    t.append_marker(&EndTxnMarker::new(PID, 0, ControlType::Commit, 5).at(1, TS))
        .unwrap();
    t.append(&BatchInfo::transactional(PID, 0, 1, 1).with_offsets(2, 2, TS))
        .unwrap();
    let err = t
        .validate_marker(&EndTxnMarker::new(PID, 0, ControlType::Abort, 4))
        .unwrap_err();
    assert_eq!(
        err,
        SequenceError::TransactionCoordinatorFenced {
            producer_id: PID,
            received_coordinator_epoch: 4,
            current_coordinator_epoch: 5
        }
    );
    assert_eq!(
        err.kafka_error_code(),
        codes::TRANSACTION_COORDINATOR_FENCED
    );
    // Equal or newer coordinator epochs are accepted.
    assert!(t
        .validate_marker(&EndTxnMarker::new(PID, 0, ControlType::Abort, 5))
        .is_ok());
}

#[test]
fn marker_with_older_producer_epoch_is_invalid_producer_epoch() {
    let mut t = table();
    t.append(&BatchInfo::transactional(PID, 3, 0, 1).with_offsets(0, 0, TS))
        .unwrap();
    let err = t
        .validate_marker(&EndTxnMarker::new(PID, 2, ControlType::Commit, 0))
        .unwrap_err();
    assert_eq!(err.kafka_error_code(), codes::INVALID_PRODUCER_EPOCH);
    // A legacy (TV0/1) marker at the same epoch is fine, and so is a bumped one.
    assert!(t
        .validate_marker(&EndTxnMarker::new(PID, 3, ControlType::Commit, 0))
        .is_ok());
    assert!(t
        .validate_marker(&EndTxnMarker::new(PID, 4, ControlType::Abort, 0))
        .is_ok());
}

#[test]
fn transaction_version_two_marker_must_carry_a_bumped_epoch() {
    let mut t = table();
    t.append(&BatchInfo::transactional(PID, 3, 0, 1).with_offsets(0, 0, TS))
        .unwrap();
    let mut same = EndTxnMarker::new(PID, 3, ControlType::Commit, 0).at(1, TS);
    same.transaction_version = 2;
    assert_eq!(
        t.validate_marker(&same).unwrap_err().kafka_error_code(),
        codes::INVALID_PRODUCER_EPOCH
    );
    let mut bumped = same;
    bumped.producer_epoch = 4;
    let done = t.append_marker(&bumped).unwrap().unwrap();
    assert_eq!(done.first_offset, 0);
    assert_eq!(t.producer(PID).unwrap().producer_epoch(), 4);
    // A retry of the same TV2 marker after the transaction ended is accepted and closes nothing.
    assert_eq!(t.append_marker(&bumped.at(2, TS)).unwrap(), None);
}

#[test]
fn last_stable_offset_is_first_offset_of_oldest_open_transaction() {
    let mut t = table();
    assert_eq!(t.last_stable_offset(50), 50);
    t.append(&BatchInfo::transactional(1, 0, 0, 1).with_offsets(10, 10, TS))
        .unwrap();
    t.append(&BatchInfo::transactional(2, 0, 0, 1).with_offsets(12, 12, TS))
        .unwrap();
    assert_eq!(t.first_unstable_offset(), Some(10));
    assert_eq!(t.last_stable_offset(13), 10);
    // The LSO never passes the high watermark.
    assert_eq!(t.last_stable_offset(5), 5);
    t.append_marker(&EndTxnMarker::new(1, 0, ControlType::Commit, 0).at(13, TS))
        .unwrap();
    t.on_high_watermark_updated(14);
    assert_eq!(t.last_stable_offset(14), 12);
}

#[test]
fn last_stable_offset_waits_until_the_marker_is_below_the_high_watermark() {
    let mut t = table();
    t.append(&BatchInfo::transactional(PID, 0, 0, 1).with_offsets(0, 0, TS))
        .unwrap();
    t.append_marker(&EndTxnMarker::new(PID, 0, ControlType::Commit, 0).at(1, TS))
        .unwrap();
    // Completed but the marker (offset 1) is not below HW 1: still unstable.
    assert_eq!(t.last_stable_offset(1), 0);
    assert_eq!(t.first_unstable_offset(), Some(0));
    // Once HW passes the marker the LSO follows the HW, even before the table is told.
    assert_eq!(t.last_stable_offset(2), 2);
    t.on_high_watermark_updated(2);
    assert_eq!(t.first_unstable_offset(), None);
}

#[test]
fn completed_txn_lso_is_first_offset_of_next_open_transaction_of_another_producer() {
    let mut t = table();
    t.append(&BatchInfo::transactional(1, 0, 0, 1).with_offsets(0, 0, TS))
        .unwrap();
    t.append(&BatchInfo::transactional(2, 0, 0, 1).with_offsets(1, 1, TS))
        .unwrap();
    let done = t
        .append_marker(&EndTxnMarker::new(1, 0, ControlType::Abort, 0).at(2, TS))
        .unwrap()
        .unwrap();
    assert_eq!(done.last_stable_offset, 1);
    let done = t
        .append_marker(&EndTxnMarker::new(2, 0, ControlType::Abort, 0).at(3, TS))
        .unwrap()
        .unwrap();
    assert_eq!(done.last_stable_offset, 4);
}

#[test]
fn idle_producer_expires_after_producer_id_expiration_ms() {
    let mut t = ProducerStateTable::new(ProducerStateConfig {
        producer_id_expiration_ms: 1000,
    });
    t.append(&BatchInfo::idempotent(PID, 0, 0, 1).with_offsets(0, 0, 5_000))
        .unwrap();
    assert_eq!(t.remove_expired_producers(5_999), 0);
    assert_eq!(t.remove_expired_producers(6_000), 1);
    assert!(t.producer(PID).is_none());
    // A forgotten producer is an unknown one again: any sequence is accepted.
    assert!(t.validate(&BatchInfo::idempotent(PID, 0, 9, 1)).is_ok());
}

#[test]
fn producer_with_open_transaction_never_expires() {
    let mut t = ProducerStateTable::new(ProducerStateConfig {
        producer_id_expiration_ms: 1000,
    });
    t.append(&BatchInfo::transactional(PID, 0, 0, 1).with_offsets(0, 0, 5_000))
        .unwrap();
    assert_eq!(t.remove_expired_producers(i64::MAX), 0);
    t.append_marker(&EndTxnMarker::new(PID, 0, ControlType::Commit, 0).at(1, 5_500))
        .unwrap();
    // Idle time counts from the marker.
    assert_eq!(t.remove_expired_producers(6_499), 0);
    assert_eq!(t.remove_expired_producers(6_500), 1);
}

#[test]
fn snapshot_round_trips_last_batch_coordinator_epoch_and_open_transaction() {
    let mut t = table();
    t.append(&BatchInfo::idempotent(1, 2, 0, 3).with_offsets(0, 2, TS))
        .unwrap();
    t.append(&BatchInfo::idempotent(1, 2, 3, 2).with_offsets(3, 4, TS + 1))
        .unwrap();
    t.append(&BatchInfo::transactional(2, 0, 0, 1).with_offsets(5, 5, TS + 2))
        .unwrap();
    t.append_marker(&EndTxnMarker::new(2, 0, ControlType::Commit, 7).at(6, TS + 3))
        .unwrap();
    t.append(&BatchInfo::transactional(2, 0, 1, 1).with_offsets(7, 7, TS + 4))
        .unwrap();
    let bytes = t.encode_snapshot();
    // One entry per remembered batch: two for each producer.
    assert_eq!(bytes.len(), 10 + 4 * SNAPSHOT_ENTRY_LEN);
    let r = ProducerStateTable::from_snapshot(*t.config(), &bytes, t.map_end_offset(), TS).unwrap();
    assert_eq!(r.map_end_offset(), 8);
    let p1 = r.producer(1).unwrap();
    assert_eq!(
        (
            p1.producer_epoch(),
            p1.last_seq(),
            p1.first_seq(),
            p1.last_data_offset()
        ),
        (2, 4, 0, 4)
    );
    // Both batches (Kafka's snapshot keeps only the newest): the older one's retry is still a
    // duplicate after a restart.
    assert_eq!(p1.batches().len(), 2);
    assert_eq!(
        r.validate(&BatchInfo::idempotent(1, 2, 0, 3)),
        Ok(Validation::Duplicate {
            first_offset: 0,
            last_offset: 2,
            timestamp: TS
        })
    );
    let p2 = r.producer(2).unwrap();
    assert_eq!(p2.coordinator_epoch(), 7);
    assert_eq!(p2.current_txn_first_offset(), Some(7));
    assert_eq!(r.ongoing_transactions().collect::<Vec<_>>(), vec![(7, 2)]);
    // The restored table keeps validating: next sequence OK, last batch a duplicate.
    assert!(r.validate(&BatchInfo::idempotent(1, 2, 5, 1)).is_ok());
    assert!(matches!(
        r.validate(&BatchInfo::idempotent(1, 2, 3, 2)).unwrap(),
        Validation::Duplicate {
            first_offset: 3,
            last_offset: 4,
            ..
        }
    ));
    // Encoding is deterministic.
    assert_eq!(r.encode_snapshot(), bytes);
}

#[test]
fn snapshot_layout_matches_kafka_producer_snapshot_v1() {
    let mut t = table();
    t.append(&BatchInfo::transactional(0x0102, 3, 10, 2).with_offsets(20, 21, 99))
        .unwrap();
    let bytes = t.encode_snapshot();
    let mut body = Vec::new();
    body.extend_from_slice(&1i32.to_be_bytes()); // entry count
    body.extend_from_slice(&0x0102i64.to_be_bytes()); // producer_id
    body.extend_from_slice(&3i16.to_be_bytes()); // epoch
    body.extend_from_slice(&11i32.to_be_bytes()); // last_sequence
    body.extend_from_slice(&21i64.to_be_bytes()); // last_offset
    body.extend_from_slice(&1i32.to_be_bytes()); // offset_delta
    body.extend_from_slice(&99i64.to_be_bytes()); // timestamp
    body.extend_from_slice(&(-1i32).to_be_bytes()); // coordinator_epoch
    body.extend_from_slice(&20i64.to_be_bytes()); // current_txn_first_offset
    let mut expected = vec![0, 1];
    expected.extend_from_slice(&crc32c::crc32c(&body).to_be_bytes());
    expected.extend_from_slice(&body);
    assert_eq!(bytes, expected);
}

#[test]
fn corrupt_snapshot_is_a_typed_error() {
    let mut t = table();
    t.append(&BatchInfo::idempotent(1, 0, 0, 1).with_offsets(0, 0, TS))
        .unwrap();
    let good = t.encode_snapshot();
    let cfg = ProducerStateConfig::default();

    let mut flipped = good.clone();
    flipped[20] ^= 0x40;
    assert!(matches!(
        ProducerStateTable::from_snapshot(cfg, &flipped, 0, TS),
        Err(SnapshotError::CrcMismatch { .. })
    ));
    assert!(matches!(
        decode_snapshot(&good[..good.len() - 1]),
        Err(SnapshotError::CrcMismatch { .. }) | Err(SnapshotError::Truncated { .. })
    ));
    assert!(matches!(
        decode_snapshot(&good[..4]),
        Err(SnapshotError::Truncated { .. })
    ));
    let mut v2 = good.clone();
    v2[1] = 2;
    assert_eq!(decode_snapshot(&v2), Err(SnapshotError::UnknownVersion(2)));
    assert_eq!(decode_snapshot(&good).unwrap().len(), 1);
}

#[test]
fn snapshot_load_drops_expired_producers() {
    let cfg = ProducerStateConfig {
        producer_id_expiration_ms: 100,
    };
    let mut t = ProducerStateTable::new(cfg);
    t.append(&BatchInfo::idempotent(1, 0, 0, 1).with_offsets(0, 0, 1_000))
        .unwrap();
    t.append(&BatchInfo::transactional(2, 0, 0, 1).with_offsets(1, 1, 1_000))
        .unwrap();
    let r = ProducerStateTable::from_snapshot(cfg, &t.encode_snapshot(), 2, 1_100).unwrap();
    assert!(r.producer(1).is_none());
    assert!(r.producer(2).is_some());
}

#[test]
fn replay_rebuilds_state_without_sequence_validation() {
    let mut t = table();
    // Gaps, epoch regressions and anything else already in the log are taken as they are.
    t.replay(&BatchInfo::idempotent(PID, 2, 0, 1).with_offsets(0, 0, TS));
    t.replay(&BatchInfo::idempotent(PID, 2, 50, 1).with_offsets(1, 1, TS));
    t.replay(&BatchInfo::transactional(PID, 2, 51, 1).with_offsets(2, 2, TS));
    let done = t.replay_control(&EndTxnMarker::new(PID, 2, ControlType::Abort, 0).at(3, TS));
    assert_eq!(
        done.map(|d| (d.first_offset, d.is_aborted)),
        Some((2, true))
    );
    assert_eq!(t.producer(PID).unwrap().last_seq(), 51);
    assert_eq!(t.map_end_offset(), 4);
}

#[test]
fn replay_restores_the_last_five_batches_for_duplicate_detection() {
    let mut live = table();
    let mut log = Vec::new();
    for i in 0..7 {
        let b = BatchInfo::idempotent(PID, 0, i, 1).with_offsets(i64::from(i), i64::from(i), TS);
        live.append(&b).unwrap();
        log.push(b);
    }
    let mut rebuilt = table();
    for b in &log {
        rebuilt.replay(b);
    }
    for b in &log {
        assert_eq!(
            live.validate(b).map_err(|e| e.kafka_error_code()),
            rebuilt.validate(b).map_err(|e| e.kafka_error_code())
        );
    }
    assert_eq!(rebuilt.encode_snapshot(), live.encode_snapshot());
}

#[test]
fn dropped_plan_leaves_the_table_unchanged() {
    let mut t = table();
    append(&mut t, BatchInfo::idempotent(PID, 0, 0, 1), 0);
    let before = t.encode_snapshot();
    let plan = t.validate(&BatchInfo::transactional(PID, 0, 1, 1)).unwrap();
    // The log append failed: the plan is dropped without commit.
    let _ = plan;
    assert_eq!(t.encode_snapshot(), before);
    assert_eq!(t.first_undecided_offset(), None);
}

#[test]
fn epoch_bump_clears_the_duplicate_cache() {
    let mut t = table();
    append(&mut t, BatchInfo::idempotent(PID, 0, 0, 1), 0);
    append(&mut t, BatchInfo::idempotent(PID, 1, 0, 1), 1);
    assert_eq!(t.producer(PID).unwrap().batches().len(), 1);
    // The old epoch's batch is now a zombie, not a duplicate.
    assert_eq!(code(t.validate(&BatchInfo::idempotent(PID, 0, 0, 1))), 47);
}

#[test]
fn coordinator_origin_checks_epoch_only() {
    let mut t = table();
    append(&mut t, BatchInfo::idempotent(PID, 3, 0, 1), 0);
    let gap = BatchInfo::transactional(PID, 3, 77, 1);
    assert!(t.validate_from(&gap, AppendOrigin::Coordinator).is_ok());
    let old = BatchInfo::transactional(PID, 2, 1, 1);
    assert_eq!(
        t.validate_from(&old, AppendOrigin::Coordinator)
            .unwrap_err()
            .kafka_error_code(),
        47
    );
    // Replication checks nothing.
    assert!(t.validate_from(&old, AppendOrigin::Replication).is_ok());
}

#[test]
fn batch_without_producer_id_passes_through() {
    let mut t = table();
    let b = BatchInfo::idempotent(NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE, 1);
    let Validation::Append(plan) = t.validate(&b).unwrap() else {
        panic!("expected append")
    };
    t.commit(plan.with_offsets(0, 9, TS));
    assert!(t.is_empty());
    assert_eq!(t.map_end_offset(), 10);
}

#[test]
fn negative_base_sequence_is_invalid_record() {
    let t = table();
    let b = BatchInfo::idempotent(PID, 0, -5, 1);
    assert_eq!(code(t.validate(&b)), codes::INVALID_RECORD);
}

#[test]
fn control_batch_on_the_data_path_is_invalid_record() {
    let t = table();
    let mut b = BatchInfo::transactional(PID, 0, 0, 1);
    b.is_control = true;
    assert_eq!(code(t.validate(&b)), codes::INVALID_RECORD);
}

#[test]
fn kafka_error_codes_match_kafka() {
    assert_eq!(codes::OUT_OF_ORDER_SEQUENCE_NUMBER, 45);
    assert_eq!(codes::DUPLICATE_SEQUENCE_NUMBER, 46);
    assert_eq!(codes::INVALID_PRODUCER_EPOCH, 47);
    assert_eq!(codes::INVALID_TXN_STATE, 48);
    assert_eq!(codes::TRANSACTION_COORDINATOR_FENCED, 52);
    assert_eq!(codes::UNKNOWN_PRODUCER_ID, 59);
    assert_eq!(codes::INVALID_RECORD, 87);
    assert_eq!(codes::PRODUCER_FENCED, 90);
}

#[test]
fn producer_ids_are_handed_out_in_blocks_and_never_reused_after_restart() {
    let mut store = InMemoryBlockStore::default();
    let mut ids = Vec::new();
    {
        let mut m = ProducerIdManager::new(&mut store, DEFAULT_PRODUCER_ID_BLOCK_SIZE).unwrap();
        for _ in 0..1001 {
            ids.push(m.next_id().unwrap());
        }
    }
    assert_eq!(store.saves, 2);
    assert_eq!(store.next_block_start, Some(2000));
    let mut m = ProducerIdManager::new(&mut store, DEFAULT_PRODUCER_ID_BLOCK_SIZE).unwrap();
    assert_eq!(m.next_id().unwrap(), 2000);
    assert_eq!(ids[1000], 1000);
}
