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
