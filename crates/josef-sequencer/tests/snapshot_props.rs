//! Property tests of the snapshot codec: round trip, and no panic on arbitrary bytes.

use josef_sequencer::*;
use proptest::prelude::*;

fn batch() -> impl Strategy<Value = (i64, i16, i32, i32, bool)> {
    (0..20i64, 0..3i16, 0..1000i32, 1..5i32, any::<bool>())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn snapshot_round_trips_any_replayed_table(
        batches in proptest::collection::vec(batch(), 0..60),
        markers in proptest::collection::vec((0..20i64, any::<bool>(), 0..5i32), 0..10),
    ) {
        let mut t = ProducerStateTable::new(ProducerStateConfig::default());
        let mut offset = 0i64;
        for (pid, epoch, seq, count, txn) in batches {
            let mut b = BatchInfo::idempotent(pid, epoch, seq, count);
            b.is_transactional = txn;
            let last = offset + i64::from(count) - 1;
            t.replay(&b.with_offsets(offset, last, offset));
            offset = last + 1;
        }
        for (pid, abort, ce) in markers {
            let kind = if abort { ControlType::Abort } else { ControlType::Commit };
            t.replay_control(&EndTxnMarker::new(pid, 2, kind, ce).at(offset, offset));
            offset += 1;
        }
        let bytes = t.encode_snapshot();
        let r = ProducerStateTable::from_snapshot(*t.config(), &bytes, offset, 0).unwrap();
        prop_assert_eq!(r.encode_snapshot(), bytes);
        prop_assert_eq!(r.len(), t.len());
        prop_assert_eq!(r.first_undecided_offset(), t.first_undecided_offset());
        for e in t.producers() {
            let g = r.producer(e.producer_id()).unwrap();
            prop_assert_eq!(g.producer_epoch(), e.producer_epoch());
            prop_assert_eq!(g.last_seq(), e.last_seq());
            prop_assert_eq!(g.coordinator_epoch(), e.coordinator_epoch());
            prop_assert_eq!(g.current_txn_first_offset(), e.current_txn_first_offset());
            // The snapshot stores one timestamp per producer (the newest batch's or marker's).
            prop_assert_eq!(g.last_timestamp(), e.last_timestamp());
            let strip = |b: Option<&BatchMetadata>| b.map(|b| (b.last_seq, b.last_offset, b.offset_delta));
            prop_assert_eq!(strip(g.last_batch()), strip(e.last_batch()));
        }
    }

    #[test]
    fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = decode_snapshot(&bytes);
    }

    #[test]
    fn decoding_a_snapshot_with_a_valid_crc_but_random_body_never_panics(
        body in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        let mut bytes = vec![0, 1, 0, 0, 0, 0];
        bytes.extend_from_slice(&body);
        let crc = crc32c::crc32c(&bytes[6..]);
        bytes[2..6].copy_from_slice(&crc.to_be_bytes());
        let _ = decode_snapshot(&bytes);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Every remembered batch survives a snapshot, so a retry of any of a producer's last five
    /// batches is still a duplicate after a clean restart (Kafka keeps only the newest).
    #[test]
    fn every_remembered_batch_survives_a_snapshot(
        producers in proptest::collection::vec((0..6i64, 1..9usize), 1..6),
    ) {
        let mut t = ProducerStateTable::new(ProducerStateConfig::default());
        let mut offset = 0i64;
        let mut sent = Vec::new();
        for (pid, n) in producers {
            let first = t.producer(pid).map_or(0, |e| e.last_seq() + 1);
            for i in 0..n as i32 {
                let b = BatchInfo::idempotent(pid, 0, first + 2 * i, 2)
                    .with_offsets(offset, offset + 1, 1_000 + offset);
                t.append(&b).unwrap();
                sent.push(b);
                offset += 2;
            }
        }
        let bytes = t.encode_snapshot();
        let r = ProducerStateTable::from_snapshot(*t.config(), &bytes, offset, 0).unwrap();
        prop_assert_eq!(r.encode_snapshot(), bytes);
        for e in t.producers() {
            prop_assert_eq!(r.producer(e.producer_id()).unwrap().batches(), e.batches());
        }
        for b in sent {
            let kept = t.producer(b.producer_id).unwrap().batches().iter()
                .any(|m| m.last_offset == b.last_offset);
            let answer = r.validate(&b);
            if kept {
                prop_assert_eq!(answer, Ok(Validation::Duplicate {
                    first_offset: b.first_offset,
                    last_offset: b.last_offset,
                    timestamp: b.max_timestamp,
                }));
            }
        }
    }
}

/// What Kafka's reader does with a Josef snapshot: it keeps the last entry it reads for a
/// producer id, which is the newest batch, as Kafka itself would have written.
#[test]
fn the_last_entry_of_a_producer_is_its_newest_batch() {
    let mut t = ProducerStateTable::new(ProducerStateConfig::default());
    for (i, seq) in [0, 3, 6].into_iter().enumerate() {
        let o = i as i64 * 3;
        t.append(&BatchInfo::idempotent(9, 0, seq, 3).with_offsets(o, o + 2, 50 + o))
            .unwrap();
    }
    let bytes = t.encode_snapshot();
    let entries = (bytes.len() - 10) / SNAPSHOT_ENTRY_LEN;
    assert_eq!(entries, 3);
    let last = &bytes[bytes.len() - SNAPSHOT_ENTRY_LEN..];
    assert_eq!(i64::from_be_bytes(last[0..8].try_into().unwrap()), 9);
    assert_eq!(
        i32::from_be_bytes(last[10..14].try_into().unwrap()),
        8,
        "last sequence"
    );
    assert_eq!(
        i64::from_be_bytes(last[14..22].try_into().unwrap()),
        8,
        "last offset"
    );
}
