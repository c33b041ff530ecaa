//! Properties of the produce validator (`josef_records::validate`) against a small model of
//! Kafka's `LogValidator` rules.

use josef_records::validate::{codes, validate_client_batch, ValidationConfig, ValidationError};
use josef_records::{Compression, RecordBatchBuilder, TimestampType};
use proptest::prelude::*;

const NOW: i64 = 1_700_000_000_000;

#[derive(Debug, Clone)]
struct Rec {
    ts: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
}

fn rec() -> impl Strategy<Value = Rec> {
    (
        prop_oneof![Just(-1i64), (NOW - 10_000)..(NOW + 10_000)],
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..8)),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..16)),
    )
        .prop_map(|(ts, key, value)| Rec { ts, key, value })
}

fn codec() -> impl Strategy<Value = Compression> {
    prop_oneof![
        Just(Compression::None),
        Just(Compression::Gzip),
        Just(Compression::Snappy),
        Just(Compression::Lz4),
        Just(Compression::Zstd),
    ]
}

fn build(records: &[Rec], codec: Compression) -> Vec<u8> {
    let mut b = RecordBatchBuilder::new().compression(codec);
    for r in records {
        b.push(r.ts, r.key.as_deref(), r.value.as_deref(), &[]);
    }
    b.build().unwrap().to_vec()
}

fn config() -> impl Strategy<Value = ValidationConfig> {
    (
        prop_oneof![Just(i64::MAX), 0i64..20_000],
        prop_oneof![Just(i64::MAX), 0i64..20_000],
        any::<bool>(),
    )
        .prop_map(|(before, after, compacted)| ValidationConfig {
            timestamp_before_max_ms: before,
            timestamp_after_max_ms: after,
            compacted,
            ..ValidationConfig::default()
        })
}

/// The model: which records fail, and whether any failure is a timestamp failure.
fn expected_errors(records: &[Rec], cfg: &ValidationConfig) -> (Vec<i32>, bool) {
    let mut idx = Vec::new();
    let mut ts_err = false;
    for (i, r) in records.iter().enumerate() {
        if cfg.compacted && r.key.is_none() {
            idx.push(i as i32);
        } else if r.ts != -1
            && ((NOW as i128 - r.ts as i128) > cfg.timestamp_before_max_ms as i128
                || (r.ts as i128 - NOW as i128) > cfg.timestamp_after_max_ms as i128)
        {
            idx.push(i as i32);
            ts_err = true;
        }
    }
    (idx, ts_err)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn record_errors_are_exactly_the_records_the_rules_reject(
        records in proptest::collection::vec(rec(), 1..12),
        codec in codec(),
        cfg in config(),
    ) {
        let bytes = build(&records, codec);
        let (idx, ts_err) = expected_errors(&records, &cfg);
        match validate_client_batch(&bytes, &cfg, NOW) {
            Ok(v) => {
                prop_assert!(idx.is_empty());
                let max = records.iter().map(|r| r.ts).max().unwrap().max(-1);
                prop_assert_eq!(v.max_timestamp, max);
                prop_assert!(!v.needs_rebuild());
                prop_assert_eq!(v.header_timestamp_fix(&cfg), None);
            }
            Err(e) => {
                let got: Vec<i32> = e.record_errors().iter().map(|r| r.batch_index).collect();
                prop_assert_eq!(got, idx);
                let code = if ts_err { codes::INVALID_TIMESTAMP } else { codes::INVALID_RECORD };
                prop_assert_eq!(e.kafka_error_code(), code);
            }
        }
    }

    #[test]
    fn log_append_time_topics_never_reject_for_timestamps(
        records in proptest::collection::vec(rec(), 1..8),
        codec in codec(),
    ) {
        let cfg = ValidationConfig {
            timestamp_type: TimestampType::LogAppendTime,
            timestamp_before_max_ms: 0,
            timestamp_after_max_ms: 0,
            ..ValidationConfig::default()
        };
        let bytes = build(&records, codec);
        prop_assert!(validate_client_batch(&bytes, &cfg, NOW).is_ok());
    }

    /// Any change to a byte the CRC covers (or to the framing fields) is refused; the partition
    /// leader epoch is the one field a client may send anything in (the broker overwrites it).
    #[test]
    fn changing_any_byte_but_the_leader_epoch_is_refused(
        records in proptest::collection::vec(rec(), 1..6),
        codec in codec(),
        pos_seed in any::<usize>(),
        xor in 1u8..=255,
    ) {
        let mut bytes = build(&records, codec);
        let pos = pos_seed % bytes.len();
        bytes[pos] ^= xor;
        let r = validate_client_batch(&bytes, &ValidationConfig::default(), NOW);
        if (12..16).contains(&pos) {
            prop_assert!(r.is_ok(), "{:?}", r);
        } else {
            prop_assert!(r.is_err());
        }
    }

    /// Arbitrary bytes never panic and never pass unless they are a whole, consistent batch.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(v) = validate_client_batch(&bytes, &ValidationConfig::default(), NOW) {
            prop_assert_eq!(v.header.total_size(), bytes.len());
        }
    }
}

#[test]
fn a_compacted_topic_rejects_a_tombstone_without_key_but_accepts_one_with_a_key() {
    let cfg = ValidationConfig {
        compacted: true,
        ..ValidationConfig::default()
    };
    let with_key = build(
        &[Rec {
            ts: NOW,
            key: Some(b"k".to_vec()),
            value: None,
        }],
        Compression::None,
    );
    assert!(validate_client_batch(&with_key, &cfg, NOW).is_ok());
    let without = build(
        &[Rec {
            ts: NOW,
            key: None,
            value: None,
        }],
        Compression::None,
    );
    let e = validate_client_batch(&without, &cfg, NOW).unwrap_err();
    assert!(matches!(
        e,
        ValidationError::Records {
            timestamp: false,
            ..
        }
    ));
}
