//! Legacy message sets (magic 0 and 1): round trips, wrappers, mixed streams, up-conversion.

use bytes::{Bytes, BytesMut};
use josef_records::{
    legacy_to_v2, AnyBatch, AnyBatches, Batches, Compression, DecompressLimits, LegacyConversion,
    LegacyMessageSet, LegacySetBuilder, RecordBatch, RecordBatchBuilder, RecordsError,
    TimestampType,
};
use proptest::prelude::*;

type Rec = (i64, Option<Vec<u8>>, Option<Vec<u8>>);

fn gen_rec() -> impl Strategy<Value = Rec> {
    (
        0i64..1 << 42,
        prop::option::of(prop::collection::vec(any::<u8>(), 0..20)),
        prop::option::of(prop::collection::vec(any::<u8>(), 0..100)),
    )
}

fn build(magic: i8, codec: Compression, lat: Option<i64>, base: i64, recs: &[Rec]) -> BytesMut {
    let mut b = LegacySetBuilder::new(magic)
        .compression(codec)
        .base_offset(base);
    if let Some(t) = lat {
        b = b.log_append_time(t);
    }
    for (t, k, v) in recs {
        b = b.record(*t, k.as_deref(), v.as_deref());
    }
    b.build().unwrap()
}

fn legacy_codec() -> impl Strategy<Value = Compression> {
    prop::sample::select(vec![
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn legacy_sets_round_trip_for_every_magic_codec_and_timestamp_type(
        magic in 0i8..=1,
        codec in legacy_codec(),
        lat in prop::option::of(0i64..1 << 42),
        base in 0i64..1 << 40,
        recs in prop::collection::vec(gen_rec(), 1..8),
    ) {
        let lat = if magic == 0 { None } else { lat };
        let set = build(magic, codec, lat, base, &recs).freeze();
        let shallow: Vec<_> = LegacyMessageSet::new(set.clone()).collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(shallow.len(), if codec == Compression::None { recs.len() } else { 1 });
        for m in &shallow {
            m.validate_crc().unwrap();
            prop_assert_eq!(m.magic, magic);
            prop_assert_eq!(m.compression().unwrap(), codec);
        }
        let got = LegacyMessageSet::new(set.clone()).records(&DecompressLimits::default()).unwrap();
        prop_assert_eq!(got.len(), recs.len());
        for (i, (g, (t, k, v))) in got.iter().zip(&recs).enumerate() {
            prop_assert_eq!(g.offset, base + i as i64);
            let want_ts = match (magic, lat) { (0, _) => -1, (_, Some(l)) => l, _ => *t };
            prop_assert_eq!(g.timestamp, want_ts);
            let want_type = if lat.is_some() { TimestampType::LogAppendTime } else { TimestampType::CreateTime };
            prop_assert_eq!(g.timestamp_type, want_type);
            prop_assert_eq!(g.key.as_deref(), k.as_deref());
            prop_assert_eq!(g.value.as_deref(), v.as_deref());
        }

        // Up-conversion keeps every record.
        for keep_offsets in [false, true] {
            let conv = LegacyConversion { compression: Compression::Zstd, keep_offsets };
            let v2 = legacy_to_v2(set.clone(), &DecompressLimits::default(), &conv).unwrap();
            let batch = RecordBatch::parse(v2.freeze()).unwrap();
            batch.validate_crc().unwrap();
            prop_assert_eq!(batch.base_offset, if keep_offsets { base } else { 0 });
            prop_assert_eq!(batch.timestamp_type(), if lat.is_some() { TimestampType::LogAppendTime } else { TimestampType::CreateTime });
            let v2recs: Vec<_> = batch.records(&DecompressLimits::default()).unwrap().collect::<Result<_, _>>().unwrap();
            prop_assert_eq!(v2recs.len(), recs.len());
            for (a, b) in v2recs.iter().zip(&got) {
                prop_assert_eq!((&a.key, &a.value, a.timestamp), (&b.key, &b.value, b.timestamp));
                prop_assert!(a.headers.is_empty());
            }
        }
    }
}

#[test]
fn mixed_stream_yields_legacy_and_v2_entries_in_order() {
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&build(
        0,
        Compression::None,
        None,
        0,
        &[(0, None, Some(b"a".to_vec()))],
    ));
    buf.extend_from_slice(&build(
        1,
        Compression::Gzip,
        None,
        1,
        &[(5, None, Some(b"b".to_vec()))],
    ));
    buf.extend_from_slice(
        &RecordBatchBuilder::new()
            .base_offset(2)
            .record(6, None, Some(b"c"))
            .build()
            .unwrap(),
    );
    let buf = buf.freeze();
    let entries: Vec<AnyBatch> = AnyBatches::new(buf.clone())
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        entries.iter().map(AnyBatch::magic).collect::<Vec<_>>(),
        [0, 1, 2]
    );
    assert!(matches!(&entries[2], AnyBatch::V2(b) if b.base_offset == 2));
    // The v2-only iterator stops at the first legacy entry with a typed error.
    assert_eq!(
        Batches::new(buf.clone()).next().unwrap().unwrap_err(),
        RecordsError::UnexpectedMagic {
            found: 0,
            expected: 2
        }
    );
    // The legacy iterator stops at the v2 batch.
    let mut it = LegacyMessageSet::new(buf);
    assert!(it.next().unwrap().is_ok());
    assert!(it.next().unwrap().is_ok());
    assert!(matches!(
        it.next(),
        Some(Err(RecordsError::UnexpectedMagic { found: 2, .. }))
    ));
    assert!(it.next().is_none());
}

#[test]
fn legacy_truncated_tail_is_truncated() {
    let set = build(
        1,
        Compression::None,
        None,
        0,
        &[(1, None, Some(b"abc".to_vec()))],
    )
    .freeze();
    for cut in 1..set.len() {
        let err = LegacyMessageSet::new(set.slice(..cut))
            .next()
            .unwrap()
            .unwrap_err();
        assert!(err.is_truncated(), "cut {cut}: {err:?}");
    }
}

#[test]
fn legacy_wrapper_bomb_is_decompressed_too_large() {
    let big = vec![0u8; 4 << 20];
    let set = build(1, Compression::Gzip, None, 0, &[(1, None, Some(big))]).freeze();
    let err = LegacyMessageSet::new(set)
        .records(&DecompressLimits::new(1 << 20))
        .unwrap_err();
    assert_eq!(err, RecordsError::DecompressedTooLarge { limit: 1 << 20 });
}

#[test]
fn v0_message_known_bytes() {
    // offset 7, size 20, crc, magic 0, attributes 0, key null, value "hi\0\0\0\0" ... built by hand.
    let mut m = Vec::new();
    m.extend_from_slice(&7i64.to_be_bytes());
    m.extend_from_slice(&16i32.to_be_bytes());
    let body_start = m.len() + 4;
    m.extend_from_slice(&[0; 4]);
    m.extend_from_slice(&[0, 0]);
    m.extend_from_slice(&(-1i32).to_be_bytes());
    m.extend_from_slice(&2i32.to_be_bytes());
    m.extend_from_slice(b"hi");
    let crc = crc32fast::hash(&m[body_start..]);
    m[12..16].copy_from_slice(&crc.to_be_bytes());
    let set = Bytes::from(m);
    let msg = LegacyMessageSet::new(set.clone()).next().unwrap().unwrap();
    msg.validate_crc().unwrap();
    assert_eq!(
        (msg.offset, msg.key.clone(), msg.value.as_deref()),
        (7, None, Some(&b"hi"[..]))
    );
    // The writer produces the same bytes.
    let built = LegacySetBuilder::new(0)
        .base_offset(7)
        .record(123, None, Some(b"hi"))
        .build()
        .unwrap();
    assert_eq!(&built[..], &set[..]);
}
