//! Down-conversion of v2 batches to legacy message sets (magic 0 and 1), checked through the
//! crate's own legacy reader and up-conversion: offsets, keys and values survive for every codec
//! a legacy set can carry, magic 1 keeps timestamps and timestamp types, magic 0 has none.

use bytes::{Bytes, BytesMut};
use josef_records::{
    build_control_batch, down_convert, legacy_to_v2, Compression, ControlRecordType,
    DecompressLimits, EndTxnMarker, LegacyConversion, LegacyMessageSet, RecordBatch,
    RecordBatchBuilder, RecordsError, TimestampType,
};
use proptest::prelude::*;

/// One generated record: offset gap before it (compaction leaves holes), timestamp, key, value,
/// and whether it carries a header (dropped by down-conversion).
type Rec = (i32, i64, Option<Vec<u8>>, Option<Vec<u8>>, bool);

#[derive(Debug, Clone)]
struct Batch {
    codec: Compression,
    log_append_time: Option<i64>,
    records: Vec<Rec>,
    /// A transaction marker written after this batch.
    then_marker: bool,
}

fn gen_rec() -> impl Strategy<Value = Rec> {
    (
        0i32..3,
        0i64..1 << 42,
        prop::option::of(prop::collection::vec(any::<u8>(), 0..16)),
        prop::option::of(prop::collection::vec(any::<u8>(), 0..64)),
        any::<bool>(),
    )
}

fn legacy_codec() -> impl Strategy<Value = Compression> {
    prop::sample::select(vec![
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
    ])
}

fn gen_batch() -> impl Strategy<Value = Batch> {
    (
        legacy_codec(),
        prop::option::of(0i64..1 << 42),
        prop::collection::vec(gen_rec(), 1..6),
        any::<bool>(),
    )
        .prop_map(|(codec, log_append_time, records, then_marker)| Batch {
            codec,
            log_append_time,
            records,
            then_marker,
        })
}

/// What a legacy reader should see of one record.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Expected {
    offset: i64,
    timestamp: i64,
    timestamp_type: TimestampType,
    key: Option<Bytes>,
    value: Option<Bytes>,
}

/// Writes the batches from offset `base`; returns the log bytes and, per batch, its records as
/// (offset, timestamp as a v2 reader sees it, key, value).
fn write_log(base: i64, batches: &[Batch]) -> (Bytes, Vec<Vec<Expected>>) {
    let mut log = BytesMut::new();
    let mut next = base;
    let mut all = Vec::new();
    for b in batches {
        let mut builder = RecordBatchBuilder::new()
            .base_offset(next)
            .compression(b.codec);
        if let Some(t) = b.log_append_time {
            builder = builder.log_append_time(t);
        }
        let mut delta = -1i32;
        let mut recs = Vec::new();
        for (gap, ts, k, v, header) in &b.records {
            delta += 1 + gap;
            let headers = if *header {
                vec![(Bytes::from_static(b"h"), Some(Bytes::from_static(b"x")))]
            } else {
                Vec::new()
            };
            let key = k.clone().map(Bytes::from);
            let value = v.clone().map(Bytes::from);
            builder
                .push_with_offset_delta(delta, *ts, key.clone(), value.clone(), headers)
                .unwrap();
            recs.push(Expected {
                offset: next + i64::from(delta),
                timestamp: b.log_append_time.unwrap_or(*ts),
                timestamp_type: if b.log_append_time.is_some() {
                    TimestampType::LogAppendTime
                } else {
                    TimestampType::CreateTime
                },
                key,
                value,
            });
        }
        log.extend_from_slice(&builder.build().unwrap());
        next += i64::from(delta) + 1;
        all.push(recs);
        if b.then_marker {
            let marker = EndTxnMarker {
                control_type: ControlRecordType::Commit,
                coordinator_epoch: 3,
            };
            log.extend_from_slice(&build_control_batch(9, 1, marker, next, 0, 5));
            next += 1;
        }
    }
    (log.freeze(), all)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    #[test]
    fn down_conversion_round_trips_through_up_conversion_for_every_legacy_codec(
        magic in 0i8..=1,
        base in 0i64..1 << 40,
        batches in prop::collection::vec(gen_batch(), 1..4),
        fetch_skip in 0i64..4,
    ) {
        let (log, per_batch) = write_log(base, &batches);
        let fetch_offset = base + fetch_skip;
        let limits = DecompressLimits::default();
        let converted = down_convert(log, magic, fetch_offset, &limits).unwrap();

        // Records below the fetch offset are dropped from uncompressed batches only.
        let mut want: Vec<Expected> = Vec::new();
        for (b, recs) in batches.iter().zip(&per_batch) {
            for r in recs {
                if b.codec != Compression::None || r.offset >= fetch_offset {
                    let mut r = r.clone();
                    if magic == 0 {
                        r.timestamp = -1;
                        r.timestamp_type = TimestampType::CreateTime;
                    }
                    want.push(r);
                }
            }
        }
        prop_assert_eq!(converted.converted_records, want.len());

        // Every message is a valid legacy message of the target magic; wrappers keep the codec.
        let mut messages = 0;
        for m in LegacyMessageSet::new(converted.records.clone()) {
            let m = m.unwrap();
            m.validate_crc().unwrap();
            prop_assert_eq!(m.magic, magic);
            messages += 1;
        }
        prop_assert!(messages <= want.len());

        let got: Vec<Expected> = LegacyMessageSet::new(converted.records.clone())
            .records(&limits)
            .unwrap()
            .into_iter()
            .map(|r| Expected {
                offset: r.offset,
                timestamp: r.timestamp,
                timestamp_type: r.timestamp_type,
                key: r.key,
                value: r.value,
            })
            .collect();
        prop_assert_eq!(&got, &want);

        // The existing up-conversion (Produce v0-2 path) brings the same records back.
        if !want.is_empty() {
            let conv = LegacyConversion { compression: Compression::Lz4, keep_offsets: true };
            let v2 = legacy_to_v2(converted.records.clone(), &limits, &conv).unwrap();
            let batch = RecordBatch::parse(v2.freeze()).unwrap();
            batch.validate_crc().unwrap();
            let back: Vec<_> = batch.records(&limits).unwrap().collect::<Result<_, _>>().unwrap();
            prop_assert_eq!(back.len(), want.len());
            let any_lat = want.iter().any(|r| r.timestamp_type == TimestampType::LogAppendTime);
            for (a, w) in back.iter().zip(&want) {
                prop_assert_eq!(a.offset, w.offset);
                prop_assert_eq!(&a.key, &w.key);
                prop_assert_eq!(&a.value, &w.value);
                prop_assert!(a.headers.is_empty());
                if !any_lat {
                    prop_assert_eq!(a.timestamp, w.timestamp);
                }
            }
        }
    }
}

#[test]
fn magic_1_wrapper_offset_is_the_last_inner_offset_and_inner_offsets_are_relative() {
    let batch = RecordBatchBuilder::new()
        .base_offset(500)
        .compression(Compression::Gzip)
        .record(1, None, Some(b"a"))
        .record(2, None, Some(b"b"))
        .record(3, None, Some(b"c"))
        .build_bytes()
        .unwrap();
    let limits = DecompressLimits::default();
    let d = down_convert(batch, 1, 500, &limits).unwrap();
    let wrappers: Vec<_> = LegacyMessageSet::new(d.records.clone())
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(wrappers.len(), 1);
    let w = &wrappers[0];
    assert_eq!(w.offset, 502);
    assert_eq!(
        w.timestamp, 3,
        "a CreateTime wrapper carries the max timestamp"
    );
    let inner =
        josef_records::decompress(Compression::Gzip, w.value.as_ref().unwrap(), &limits).unwrap();
    let inner_offsets: Vec<i64> = LegacyMessageSet::new(Bytes::from(inner))
        .map(|m| m.unwrap().offset)
        .collect();
    assert_eq!(inner_offsets, [0, 1, 2]);
}

#[test]
fn magic_0_wrapper_inner_offsets_are_absolute() {
    let batch = RecordBatchBuilder::new()
        .base_offset(500)
        .compression(Compression::Snappy)
        .record(1, None, Some(b"a"))
        .record(2, None, Some(b"b"))
        .build_bytes()
        .unwrap();
    let limits = DecompressLimits::default();
    let d = down_convert(batch, 0, 0, &limits).unwrap();
    let w = LegacyMessageSet::new(d.records).next().unwrap().unwrap();
    assert_eq!((w.offset, w.magic), (501, 0));
    let inner =
        josef_records::decompress(Compression::Snappy, w.value.as_ref().unwrap(), &limits).unwrap();
    let inner_offsets: Vec<i64> = LegacyMessageSet::new(Bytes::from(inner))
        .map(|m| m.unwrap().offset)
        .collect();
    assert_eq!(inner_offsets, [500, 501]);
}

#[test]
fn magic_0_lz4_wrapper_has_kafkas_broken_header_checksum() {
    let batch = RecordBatchBuilder::new()
        .compression(Compression::Lz4)
        .record(1, None, Some(b"lz4 payload lz4 payload"))
        .build_bytes()
        .unwrap();
    let limits = DecompressLimits::default();
    for (magic, standard_reader_ok) in [(0, false), (1, true)] {
        let d = down_convert(batch.clone(), magic, 0, &limits).unwrap();
        let w = LegacyMessageSet::new(d.records.clone())
            .next()
            .unwrap()
            .unwrap();
        let frame = w.value.as_ref().unwrap();
        assert_eq!(
            josef_records::decompress(Compression::Lz4, frame, &limits).is_ok(),
            standard_reader_ok,
            "magic {magic}"
        );
        assert!(josef_records::decompress_lz4_legacy_v0(frame, &limits).is_ok());
        assert_eq!(
            LegacyMessageSet::new(d.records).records(&limits).unwrap()[0]
                .value
                .as_deref(),
            Some(&b"lz4 payload lz4 payload"[..])
        );
    }
}

#[test]
fn log_append_time_batch_keeps_its_append_time_and_type_in_magic_1() {
    for codec in [Compression::None, Compression::Gzip] {
        let batch = RecordBatchBuilder::new()
            .compression(codec)
            .log_append_time(777)
            .record(1, None, Some(b"a"))
            .record(2, None, Some(b"b"))
            .build_bytes()
            .unwrap();
        let limits = DecompressLimits::default();
        let d = down_convert(batch, 1, 0, &limits).unwrap();
        for m in LegacyMessageSet::new(d.records.clone()) {
            let m = m.unwrap();
            assert_eq!(m.timestamp_type(), TimestampType::LogAppendTime);
            assert_eq!(m.timestamp, 777);
        }
        let recs = LegacyMessageSet::new(d.records).records(&limits).unwrap();
        assert!(recs
            .iter()
            .all(|r| r.timestamp == 777 && r.timestamp_type == TimestampType::LogAppendTime));
    }
}

#[test]
fn magic_1_message_goes_down_to_magic_0_and_magic_0_is_copied() {
    let limits = DecompressLimits::default();
    let v1 = josef_records::LegacySetBuilder::new(1)
        .compression(Compression::Gzip)
        .base_offset(7)
        .record(5, Some(b"k"), Some(b"v"))
        .build()
        .unwrap()
        .freeze();
    let d = down_convert(v1, 0, 0, &limits).unwrap();
    let recs = LegacyMessageSet::new(d.records.clone())
        .records(&limits)
        .unwrap();
    assert_eq!(
        (recs[0].magic, recs[0].offset, recs[0].timestamp),
        (0, 7, -1)
    );
    let again = down_convert(d.records.clone(), 0, 0, &limits).unwrap();
    assert_eq!(
        again.records, d.records,
        "magic 0 entries are copied as they are"
    );
    assert_eq!(again.converted_records, 0);
}

#[test]
fn corrupt_v2_batch_is_an_error_not_a_panic() {
    let mut batch = BytesMut::from(
        &RecordBatchBuilder::new()
            .compression(Compression::Gzip)
            .record(1, None, Some(b"a"))
            .build_bytes()
            .unwrap()[..],
    );
    let n = batch.len();
    batch[n - 3] ^= 0xff;
    let err = down_convert(batch.freeze(), 1, 0, &DecompressLimits::default()).unwrap_err();
    assert!(matches!(err, RecordsError::Compression { .. }), "{err:?}");
}
