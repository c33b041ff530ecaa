//! Builder -> bytes -> parser round trips over every codec x timestamp type x flag combination.

mod common;

use bytes::Bytes;
use common::{gen_compression, gen_record, gen_timestamp_type, GenRecord};
use josef_records::{
    build_control_batch, set_base_offset, set_log_append_time, set_partition_leader_epoch,
    BatchHeader, Batches, Compression, CompressionOptions, ControlRecordType, DecompressLimits,
    EndTxnMarker, RecordBatch, RecordBatchBuilder, SnappyFraming, TimestampType,
};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Flags {
    transactional: bool,
    control: bool,
    producer: Option<(i64, i16, i32)>,
    base_offset: i64,
    leader_epoch: i32,
    delete_horizon: Option<i64>,
    xerial: bool,
}

fn gen_flags() -> impl Strategy<Value = Flags> {
    (
        any::<bool>(),
        any::<bool>(),
        prop::option::of((
            0i64..1 << 40,
            0i16..i16::MAX,
            prop_oneof![0..1000i32, Just(i32::MAX - 2)],
        )),
        0i64..1 << 50,
        -1i32..100,
        prop::option::weighted(0.2, 0i64..1 << 42),
        any::<bool>(),
    )
        .prop_map(
            |(
                transactional,
                control,
                producer,
                base_offset,
                leader_epoch,
                delete_horizon,
                xerial,
            )| Flags {
                transactional,
                control,
                producer,
                base_offset,
                leader_epoch,
                delete_horizon,
                xerial,
            },
        )
}

fn build(
    records: &[GenRecord],
    codec: Compression,
    ts_type: TimestampType,
    append_time: i64,
    f: &Flags,
) -> Bytes {
    let mut b = RecordBatchBuilder::new()
        .base_offset(f.base_offset)
        .partition_leader_epoch(f.leader_epoch)
        .compression(codec)
        .compression_options(CompressionOptions {
            snappy_framing: if f.xerial {
                SnappyFraming::Xerial
            } else {
                SnappyFraming::Raw
            },
            ..Default::default()
        })
        .transactional(f.transactional)
        .control(f.control);
    if let Some((pid, epoch, seq)) = f.producer {
        b = b.producer(pid, epoch, seq);
    }
    if let Some(h) = f.delete_horizon {
        b = b.delete_horizon(h);
    }
    if ts_type == TimestampType::LogAppendTime {
        b = b.log_append_time(append_time);
    }
    for r in records {
        let headers: Vec<(&[u8], Option<&[u8]>)> = r
            .headers
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_deref()))
            .collect();
        b.push(r.timestamp, r.key.as_deref(), r.value.as_deref(), &headers);
    }
    b.build_bytes().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn builder_then_parser_gives_back_every_field(
        records in prop::collection::vec(gen_record(), 0..12),
        codec in gen_compression(),
        ts_type in gen_timestamp_type(),
        append_time in 0i64..1 << 42,
        f in gen_flags(),
    ) {
        let bytes = build(&records, codec, ts_type, append_time, &f);
        let batch = RecordBatch::parse(bytes.clone()).unwrap();
        batch.validate_crc().unwrap();
        prop_assert_eq!(batch.total_size(), bytes.len());
        prop_assert_eq!(batch.compression().unwrap(), codec);
        prop_assert_eq!(batch.timestamp_type(), ts_type);
        prop_assert_eq!(batch.is_transactional(), f.transactional);
        prop_assert_eq!(batch.is_control(), f.control);
        prop_assert_eq!(batch.attributes.has_delete_horizon(), f.delete_horizon.is_some());
        prop_assert_eq!(batch.base_offset, f.base_offset);
        prop_assert_eq!(batch.partition_leader_epoch, f.leader_epoch);
        prop_assert_eq!(batch.record_count as usize, records.len());
        prop_assert_eq!(batch.last_offset(), f.base_offset + records.len().saturating_sub(1) as i64);
        let (pid, epoch, seq) = f.producer.unwrap_or((-1, -1, -1));
        prop_assert_eq!((batch.producer_id, batch.producer_epoch, batch.base_sequence), (pid, epoch, seq));
        prop_assert_eq!(batch.has_producer_id(), f.producer.is_some());
        if ts_type == TimestampType::LogAppendTime {
            prop_assert_eq!(batch.max_timestamp, append_time);
        } else {
            prop_assert_eq!(batch.max_timestamp, records.iter().map(|r| r.timestamp).max().unwrap_or(-1).max(-1));
        }
        if codec == Compression::Snappy && !records.is_empty() {
            prop_assert_eq!(&bytes[61..69] == b"\x82SNAPPY\0", f.xerial);
        }
        let parsed: Vec<_> = batch
            .records(&DecompressLimits::default())
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        prop_assert_eq!(parsed.len(), records.len());
        // The borrowed view yields the same records.
        let iter = batch.records(&DecompressLimits::default()).unwrap();
        let refs: Vec<_> = iter.refs().collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(refs.len(), parsed.len());
        for (r, o) in refs.iter().zip(&parsed) {
            prop_assert_eq!((r.offset, r.timestamp, r.key, r.value), (o.offset, o.timestamp, o.key.as_deref(), o.value.as_deref()));
            let rh: Vec<_> = r.headers().collect();
            let oh: Vec<_> = o.headers.iter().map(|h| (&h.key[..], h.value.as_deref())).collect();
            prop_assert_eq!(rh, oh);
        }
        for (i, (got, want)) in parsed.iter().zip(&records).enumerate() {
            prop_assert_eq!(got.offset, f.base_offset + i as i64);
            prop_assert_eq!(got.offset_delta, i as i32);
            let want_ts = if ts_type == TimestampType::LogAppendTime { append_time } else { want.timestamp };
            prop_assert_eq!(got.timestamp, want_ts);
            prop_assert_eq!(got.key.as_deref(), want.key.as_deref());
            prop_assert_eq!(got.value.as_deref(), want.value.as_deref());
            let headers: Vec<(Vec<u8>, Option<Vec<u8>>)> = got
                .headers
                .iter()
                .map(|h| (h.key.to_vec(), h.value.as_ref().map(|v| v.to_vec())))
                .collect();
            prop_assert_eq!(&headers, &want.headers);
        }
    }

    #[test]
    fn rewrites_keep_the_batch_valid(
        records in prop::collection::vec(gen_record(), 1..6),
        codec in gen_compression(),
        f in gen_flags(),
        offset in any::<i64>(),
        epoch in any::<i32>(),
        ts in any::<i64>(),
    ) {
        let bytes = build(&records, codec, TimestampType::CreateTime, 0, &f);
        let mut buf = bytes.to_vec();
        set_base_offset(&mut buf, offset).unwrap();
        set_partition_leader_epoch(&mut buf, epoch).unwrap();
        // The CRC does not cover these two fields.
        prop_assert_eq!(BatchHeader::parse(&buf).unwrap().crc, BatchHeader::parse(&bytes).unwrap().crc);
        set_log_append_time(&mut buf, ts).unwrap();
        let batch = RecordBatch::parse(Bytes::from(buf)).unwrap();
        batch.validate_crc().unwrap();
        prop_assert_eq!((batch.base_offset, batch.partition_leader_epoch, batch.max_timestamp), (offset, epoch, ts));
        for r in batch.records(&DecompressLimits::default()).unwrap() {
            prop_assert_eq!(r.unwrap().timestamp, ts);
        }
    }

    #[test]
    fn concatenated_batches_split_back_and_any_cut_is_truncated(
        batches in prop::collection::vec((prop::collection::vec(gen_record(), 0..4), gen_compression()), 1..5),
        cut in any::<prop::sample::Index>(),
    ) {
        let f = Flags { transactional: false, control: false, producer: None, base_offset: 0, leader_epoch: 0, delete_horizon: None, xerial: false };
        let mut all = Vec::new();
        let mut ends = Vec::new();
        for (recs, codec) in &batches {
            all.extend_from_slice(&build(recs, *codec, TimestampType::CreateTime, 0, &f));
            ends.push(all.len());
        }
        let split: Vec<_> = Batches::new(Bytes::from(all.clone())).collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(split.len(), batches.len());
        // Cut anywhere strictly inside: the complete batches before the cut come out, then Truncated.
        let at = cut.index(all.len() - 1) + 1;
        if ends.contains(&at) {
            return Ok(());
        }
        let mut it = Batches::new(Bytes::from(all[..at].to_vec()));
        let whole = ends.iter().filter(|&&e| e <= at).count();
        for _ in 0..whole {
            prop_assert!(it.next().unwrap().is_ok());
        }
        let err = it.next().unwrap().unwrap_err();
        prop_assert!(err.is_truncated(), "{:?}", err);
        prop_assert!(it.next().is_none());
        prop_assert_eq!(it.position(), if whole == 0 { 0 } else { ends[whole - 1] });
    }
}

#[test]
fn control_batches_round_trip_both_markers() {
    for control_type in [ControlRecordType::Abort, ControlRecordType::Commit] {
        let marker = EndTxnMarker {
            control_type,
            coordinator_epoch: 12,
        };
        let buf = build_control_batch(77, 3, marker, 500, 9, 1234);
        let batch = RecordBatch::parse(buf.freeze()).unwrap();
        batch.validate_crc().unwrap();
        assert!(batch.is_control() && batch.is_transactional());
        assert_eq!(
            (batch.producer_id, batch.producer_epoch, batch.base_sequence),
            (77, 3, -1)
        );
        assert_eq!((batch.base_offset, batch.partition_leader_epoch), (500, 9));
        assert_eq!(
            batch.control_marker(&DecompressLimits::default()).unwrap(),
            Some(marker)
        );
        let r = batch
            .records(&DecompressLimits::default())
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        assert_eq!(r.timestamp, 1234);
        assert_eq!(r.key.as_deref(), Some(&[0, 0, 0, control_type as u8][..]));
    }
}

#[test]
fn non_control_batch_has_no_marker() {
    let b = RecordBatchBuilder::new()
        .record(1, None, Some(b"x"))
        .build_bytes()
        .unwrap();
    let batch = RecordBatch::parse(b).unwrap();
    assert_eq!(
        batch.control_marker(&DecompressLimits::default()).unwrap(),
        None
    );
}

#[test]
fn last_sequence_wraps_past_i32_max() {
    let b = RecordBatchBuilder::new()
        .producer(1, 0, i32::MAX - 1)
        .record(1, None, None)
        .record(1, None, None)
        .record(1, None, None)
        .build_bytes()
        .unwrap();
    let h = BatchHeader::parse(&b).unwrap();
    assert_eq!(h.last_sequence(), 0);
}

#[test]
fn explicit_offset_deltas_keep_gaps() {
    let mut b = RecordBatchBuilder::new().base_offset(10);
    b.push_with_offset_delta(0, 5, None, Some(Bytes::from_static(b"a")), vec![])
        .unwrap();
    b.push_with_offset_delta(7, 6, None, Some(Bytes::from_static(b"b")), vec![])
        .unwrap();
    assert!(b.push_with_offset_delta(7, 6, None, None, vec![]).is_err());
    let batch = RecordBatch::parse(b.build_bytes().unwrap()).unwrap();
    assert_eq!(batch.last_offset(), 17);
    let offsets: Vec<i64> = batch
        .records(&DecompressLimits::default())
        .unwrap()
        .map(|r| r.unwrap().offset)
        .collect();
    assert_eq!(offsets, [10, 17]);
}
