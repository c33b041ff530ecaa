//! Differential tests against the `kafka-protocol` crate's record codec, both directions, on the
//! same bytes.
//!
//! kafka-protocol keeps headers in a map (so header keys are generated unique here), writes the
//! smallest timestamp as the base timestamp, never sets the timestamp-type bit when encoding, and
//! reports `base + delta` as the timestamp even for `LogAppendTime` batches; the comparisons
//! account for exactly those differences.

mod common;

use bytes::{Bytes, BytesMut};
use common::{gen_compression, gen_record, GenRecord};
use indexmap::IndexMap;
use josef_records::{Batches, Compression, DecompressLimits, RecordBatchBuilder, TimestampType};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records as kp;
use proptest::prelude::*;

fn kp_codec(c: Compression) -> kp::Compression {
    match c {
        Compression::None => kp::Compression::None,
        Compression::Gzip => kp::Compression::Gzip,
        Compression::Snappy => kp::Compression::Snappy,
        Compression::Lz4 => kp::Compression::Lz4,
        Compression::Zstd => kp::Compression::Zstd,
    }
}

fn unique_headers(r: &mut GenRecord) {
    let mut seen = std::collections::HashSet::new();
    r.headers.retain(|(k, _)| seen.insert(k.clone()));
    // kafka-protocol's header keys are strings.
    for (k, _) in &mut r.headers {
        for b in k.iter_mut() {
            *b = b'a' + (*b % 26);
        }
    }
    let mut seen = std::collections::HashSet::new();
    r.headers.retain(|(k, _)| seen.insert(k.clone()));
}

#[derive(Debug, Clone)]
struct Producer {
    id: i64,
    epoch: i16,
    base_sequence: i32,
    transactional: bool,
}

fn gen_producer() -> impl Strategy<Value = Producer> {
    prop_oneof![
        Just(Producer {
            id: -1,
            epoch: -1,
            base_sequence: -1,
            transactional: false
        }),
        (0i64..1 << 40, 0i16..100, 0i32..10_000, any::<bool>()).prop_map(|(id, epoch, s, t)| {
            Producer {
                id,
                epoch,
                base_sequence: s,
                transactional: t,
            }
        }),
    ]
}

fn kp_records(records: &[GenRecord], base_offset: i64, p: &Producer) -> Vec<kp::Record> {
    records
        .iter()
        .enumerate()
        .map(|(i, r)| kp::Record {
            transactional: p.transactional,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 5,
            producer_id: p.id,
            producer_epoch: p.epoch,
            timestamp_type: kp::TimestampType::Creation,
            offset: base_offset + i as i64,
            // kafka-protocol derives every record's sequence as base + delta, even from -1.
            sequence: p.base_sequence.wrapping_add(i as i32),
            timestamp: r.timestamp,
            key: r.key.clone().map(Bytes::from),
            value: r.value.clone().map(Bytes::from),
            headers: r
                .headers
                .iter()
                .map(|(k, v)| {
                    (
                        StrBytes::from_string(String::from_utf8(k.clone()).unwrap()),
                        v.clone().map(Bytes::from),
                    )
                })
                .collect::<IndexMap<_, _>>(),
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Our builder's bytes decode with kafka-protocol to the same records.
    #[test]
    fn our_batches_decode_the_same_in_kafka_protocol(
        mut records in prop::collection::vec(gen_record(), 1..10),
        codec in gen_compression(),
        p in gen_producer(),
        base_offset in 0i64..1 << 40,
        log_append in prop::option::of(0i64..1 << 42),
    ) {
        records.iter_mut().for_each(unique_headers);
        let mut b = RecordBatchBuilder::new()
            .base_offset(base_offset)
            .partition_leader_epoch(5)
            .compression(codec)
            .producer(p.id, p.epoch, p.base_sequence)
            .transactional(p.transactional);
        if let Some(t) = log_append {
            b = b.log_append_time(t);
        }
        for r in &records {
            let h: Vec<(&[u8], Option<&[u8]>)> = r.headers.iter().map(|(k, v)| (k.as_slice(), v.as_deref())).collect();
            b.push(r.timestamp, r.key.as_deref(), r.value.as_deref(), &h);
        }
        let bytes = b.build_bytes().unwrap();
        let mut buf = bytes.clone();
        let set = kp::RecordBatchDecoder::decode(&mut buf).unwrap();
        prop_assert_eq!(set.compression, kp_codec(codec));
        prop_assert_eq!(set.records.len(), records.len());
        let mut expected = kp_records(&records, base_offset, &p);
        for (got, want) in set.records.iter().zip(expected.iter_mut()) {
            if log_append.is_some() {
                want.timestamp_type = kp::TimestampType::LogAppend;
            }
            prop_assert_eq!(got, &*want);
        }
    }

    /// kafka-protocol's bytes parse the same with ours; uncompressed they are byte-identical to
    /// our builder's when timestamps do not decrease (both then use the first as the base).
    #[test]
    fn kafka_protocol_batches_parse_the_same_here(
        mut records in prop::collection::vec(gen_record(), 1..10),
        codec in gen_compression(),
        p in gen_producer(),
        base_offset in 0i64..1 << 40,
    ) {
        records.iter_mut().for_each(unique_headers);
        let input = kp_records(&records, base_offset, &p);
        let mut out = BytesMut::new();
        kp::RecordBatchEncoder::encode(
            &mut out,
            &input,
            &kp::RecordEncodeOptions { version: 2, compression: kp_codec(codec) },
        )
        .unwrap();
        let bytes = out.freeze();
        let batches: Vec<_> = Batches::new(bytes.clone()).collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(batches.len(), 1);
        let batch = &batches[0];
        batch.validate_crc().unwrap();
        prop_assert_eq!(batch.compression().unwrap(), codec);
        prop_assert_eq!(batch.timestamp_type(), TimestampType::CreateTime);
        prop_assert_eq!((batch.producer_id, batch.producer_epoch, batch.base_sequence), (p.id, p.epoch, p.base_sequence));
        prop_assert_eq!(batch.is_transactional(), p.transactional);
        prop_assert_eq!(batch.base_offset, base_offset);
        let parsed: Vec<_> = batch.records(&DecompressLimits::default()).unwrap().collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(parsed.len(), records.len());
        for (got, want) in parsed.iter().zip(&input) {
            prop_assert_eq!(got.offset, want.offset);
            prop_assert_eq!(got.timestamp, want.timestamp);
            prop_assert_eq!(&got.key, &want.key);
            prop_assert_eq!(&got.value, &want.value);
            let h: Vec<(Vec<u8>, Option<Bytes>)> = got.headers.iter().map(|h| (h.key.to_vec(), h.value.clone())).collect();
            let w: Vec<(Vec<u8>, Option<Bytes>)> = want.headers.iter().map(|(k, v)| (k.as_bytes().to_vec(), v.clone())).collect();
            prop_assert_eq!(h, w);
        }
        let sorted = records.windows(2).all(|w| w[0].timestamp <= w[1].timestamp);
        // Like Kafka's MemoryRecordsBuilder, our max timestamp starts at -1 (NO_TIMESTAMP), so
        // timestamps below -1 give a different max than kafka-protocol's plain maximum.
        let no_negative = records.iter().all(|r| r.timestamp >= -1);
        if codec == Compression::None && sorted && no_negative {
            let mut b = RecordBatchBuilder::new()
                .base_offset(base_offset)
                .partition_leader_epoch(5)
                .producer(p.id, p.epoch, p.base_sequence)
                .transactional(p.transactional);
            for r in &records {
                let h: Vec<(&[u8], Option<&[u8]>)> = r.headers.iter().map(|(k, v)| (k.as_slice(), v.as_deref())).collect();
                b.push(r.timestamp, r.key.as_deref(), r.value.as_deref(), &h);
            }
            prop_assert_eq!(b.build_bytes().unwrap(), bytes);
        }
    }
}

/// The real-client batches decode to the same records in kafka-protocol and here.
#[test]
fn client_fixture_batches_agree_with_kafka_protocol() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        // kafka-protocol does not read legacy message sets.
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".bin") || name.contains("legacy") {
            continue;
        }
        let bytes = Bytes::from(std::fs::read(&path).unwrap());
        let mut buf = bytes.clone();
        let theirs = kp::RecordBatchDecoder::decode_all(&mut buf).unwrap();
        let ours: Vec<_> = Batches::new(bytes)
            .flat_map(|b| b.unwrap().records(&DecompressLimits::default()).unwrap())
            .map(Result::unwrap)
            .collect();
        let theirs: Vec<_> = theirs.into_iter().flat_map(|s| s.records).collect();
        assert_eq!(ours.len(), theirs.len(), "{path:?}");
        for (o, t) in ours.iter().zip(&theirs) {
            assert_eq!((o.offset, o.timestamp), (t.offset, t.timestamp));
            assert_eq!((&o.key, &o.value), (&t.key, &t.value));
            assert_eq!(o.headers.len(), t.headers.len());
            for (h, (k, v)) in o.headers.iter().zip(&t.headers) {
                assert_eq!((&h.key[..], &h.value), (k.as_bytes(), v));
            }
        }
        n += 1;
    }
    assert!(n >= 13);
}
