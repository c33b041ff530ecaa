//! Record batches written by real clients (librdkafka via confluent-kafka, kafka-python, kafkajs),
//! extracted from the Produce request frames in the shared fixtures into `tests/data/*.bin`.
//!
//! `JOSEF_REGEN_FIXTURES=1 cargo test -p josef-records --test client_fixtures` rewrites the
//! `.bin` files from the frames; without it, the files are checked against the frames when the
//! frames are present, and parsed always.

mod common;

use std::path::{Path, PathBuf};

use bytes::Bytes;
use josef_records::{
    legacy_to_v2, Batches, Compression, DecompressLimits, LegacyConversion, LegacyMessageSet,
    Record, RecordBatch, RecordsError, TimestampType,
};

const FRAMES: &str = "/work/shared/fixtures/client-frames";

/// (frame file, data file stem).
const PRODUCE_FRAMES: &[(&str, &str)] = &[
    (
        "confluent-kafka/Produce-v10-1.bin",
        "librdkafka-none-idempotent",
    ),
    ("confluent-kafka/Produce-v10-2.bin", "librdkafka-zstd"),
    (
        "confluent-kafka/Produce-v10-3.bin",
        "librdkafka-snappy-transactional",
    ),
    ("kafka-python/Produce-v3-1.bin", "kafka-python-lz4-v3"),
    ("kafka-python/Produce-v3-2.bin", "kafka-python-snappy-v3"),
    ("kafka-python/Produce-v3-3.bin", "kafka-python-gzip-v3"),
    (
        "kafka-python/Produce-v9-1.bin",
        "kafka-python-none-idempotent",
    ),
    ("kafka-python/Produce-v9-2.bin", "kafka-python-lz4"),
    ("kafka-python/Produce-v9-3.bin", "kafka-python-snappy"),
    ("kafkajs/Produce-v7-1.bin", "kafkajs-none-idempotent"),
    ("kafkajs/Produce-v7-2.bin", "kafkajs-gzip"),
    ("kafkajs/Produce-v7-3.bin", "kafkajs-none-two-topics"),
];

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// The record sets of a frame, one per partition, named `<stem>-<i>.bin`.
fn extracted(frame_file: &str, stem: &str) -> Vec<(String, Vec<u8>)> {
    let frame = std::fs::read(Path::new(FRAMES).join(frame_file)).unwrap();
    common::produce_partitions(&frame)
        .into_iter()
        .enumerate()
        .map(|(i, p)| (format!("{stem}-{i}.bin"), p.records))
        .collect()
}

#[test]
fn data_files_match_the_client_frames() {
    if !Path::new(FRAMES).exists() {
        eprintln!("{FRAMES} absent: only the committed data files are tested");
        return;
    }
    let regen = std::env::var_os("JOSEF_REGEN_FIXTURES").is_some();
    for (frame, stem) in PRODUCE_FRAMES {
        for (name, bytes) in extracted(frame, stem) {
            let path = data_dir().join(&name);
            if regen {
                std::fs::write(&path, &bytes).unwrap();
            }
            assert_eq!(
                std::fs::read(&path).unwrap(),
                bytes,
                "{name} differs from {frame}"
            );
        }
    }
}

fn load(name: &str) -> Bytes {
    Bytes::from(std::fs::read(data_dir().join(name)).unwrap())
}

fn all_records(set: Bytes) -> Vec<(RecordBatch, Vec<Record>)> {
    Batches::new(set)
        .map(|b| {
            let b = b.unwrap();
            b.validate_crc().unwrap();
            let recs = b
                .records(&DecompressLimits::default())
                .unwrap()
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
            (b, recs)
        })
        .collect()
}

/// What each data file holds: (file, value tag, codec, librdkafka's extra null-valued header,
/// transactional, producer id).
const EXPECTED: &[(&str, &str, Compression, bool, bool, i64)] = &[
    (
        "librdkafka-none-idempotent-0.bin",
        "idem-none",
        Compression::None,
        true,
        false,
        1,
    ),
    (
        "librdkafka-zstd-0.bin",
        "zstd",
        Compression::Zstd,
        true,
        false,
        -1,
    ),
    (
        "librdkafka-snappy-transactional-0.bin",
        "txn-abort",
        Compression::Snappy,
        true,
        true,
        2,
    ),
    (
        "kafka-python-lz4-v3-0.bin",
        "lz4",
        Compression::Lz4,
        false,
        false,
        -1,
    ),
    (
        "kafka-python-snappy-v3-0.bin",
        "snappy",
        Compression::Snappy,
        false,
        false,
        -1,
    ),
    (
        "kafka-python-gzip-v3-0.bin",
        "gzip",
        Compression::Gzip,
        false,
        false,
        -1,
    ),
    (
        "kafka-python-none-idempotent-0.bin",
        "idem-none",
        Compression::None,
        false,
        false,
        5,
    ),
    (
        "kafka-python-lz4-0.bin",
        "lz4",
        Compression::Lz4,
        false,
        false,
        -1,
    ),
    (
        "kafka-python-snappy-0.bin",
        "snappy",
        Compression::Snappy,
        false,
        false,
        -1,
    ),
    // kafkajs' idempotent InitProducerId failed on the capture broker: producer id -1, epoch 0.
    (
        "kafkajs-none-idempotent-0.bin",
        "idem-none",
        Compression::None,
        false,
        false,
        -1,
    ),
    (
        "kafkajs-gzip-0.bin",
        "gzip",
        Compression::Gzip,
        false,
        false,
        -1,
    ),
    (
        "kafkajs-none-two-topics-0.bin",
        "batch-a",
        Compression::None,
        false,
        false,
        -1,
    ),
    (
        "kafkajs-none-two-topics-1.bin",
        "batch-b",
        Compression::None,
        false,
        false,
        -1,
    ),
];

fn header(k: &str, v: Option<&[u8]>) -> (Vec<u8>, Option<Vec<u8>>) {
    (k.as_bytes().to_vec(), v.map(<[u8]>::to_vec))
}

/// The records every driver sent: k0..k3 with headers, a null key, a tombstone.
fn expected_records(tag: &str, h_null: bool) -> Vec<ExpectedRecord> {
    let mut out = Vec::new();
    for i in 0..4u8 {
        let mut headers = vec![
            header("h-seq", Some(i.to_string().as_bytes())),
            header("h-bin", Some(&[i, 0, 255])),
        ];
        if h_null {
            headers.push(header("h-null", None));
        }
        out.push(ExpectedRecord {
            key: Some(format!("k{i}").into_bytes()),
            value: Some(format!("{tag}-value-{i}").into_bytes()),
            headers,
        });
    }
    out.push(ExpectedRecord {
        key: None,
        value: Some(format!("{tag}-nokey").into_bytes()),
        headers: vec![],
    });
    out.push(ExpectedRecord {
        key: Some(b"k-tomb".to_vec()),
        value: None,
        headers: vec![header("h-tomb", Some(b"1"))],
    });
    out
}

#[derive(Debug, PartialEq)]
struct ExpectedRecord {
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

impl From<&Record> for ExpectedRecord {
    fn from(r: &Record) -> Self {
        ExpectedRecord {
            key: r.key.as_ref().map(|b| b.to_vec()),
            value: r.value.as_ref().map(|b| b.to_vec()),
            headers: r
                .headers
                .iter()
                .map(|h| (h.key.to_vec(), h.value.as_ref().map(|v| v.to_vec())))
                .collect(),
        }
    }
}

#[test]
fn client_batches_parse_to_their_known_contents() {
    for &(file, tag, codec, h_null, transactional, producer_id) in EXPECTED {
        let batches = all_records(load(file));
        assert_eq!(batches.len(), 1, "{file}");
        let (batch, records) = &batches[0];
        assert_eq!(batch.compression().unwrap(), codec, "{file}");
        assert_eq!(batch.is_transactional(), transactional, "{file}");
        assert!(!batch.is_control(), "{file}");
        assert_eq!(batch.producer_id, producer_id, "{file}");
        assert_eq!(batch.record_count, 6, "{file}");
        assert_eq!(batch.last_offset_delta, 5, "{file}");
        let got: Vec<ExpectedRecord> = records.iter().map(ExpectedRecord::from).collect();
        assert_eq!(got, expected_records(tag, h_null), "{file}");
        for (i, r) in records.iter().enumerate() {
            assert_eq!(r.offset, i as i64, "{file}");
            assert!(r.timestamp >= batch.base_timestamp && r.timestamp <= batch.max_timestamp);
        }
        assert_eq!(
            records.iter().map(|r| r.timestamp).max(),
            Some(batch.max_timestamp),
            "{file}"
        );
    }
}

#[test]
fn every_data_file_is_covered_by_expectations() {
    let mut files: Vec<String> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".bin"))
        .collect();
    files.sort();
    let mut expected: Vec<String> = EXPECTED
        .iter()
        .map(|e| e.0.to_string())
        .chain(LEGACY_EXPECTED.iter().map(|e| e.0.to_string()))
        .collect();
    expected.sort();
    assert_eq!(files, expected);
}

#[test]
fn snappy_framing_differs_by_client_and_both_are_read() {
    // librdkafka writes one raw snappy block, kafka-python the xerial framing.
    let raw = load("librdkafka-snappy-transactional-0.bin");
    assert_ne!(&raw[61..69], b"\x82SNAPPY\0");
    let xerial = load("kafka-python-snappy-0.bin");
    assert_eq!(&xerial[61..69], b"\x82SNAPPY\0");
}

#[test]
fn client_batch_with_flipped_byte_fails_crc() {
    for &(file, ..) in EXPECTED {
        let mut bytes = load(file).to_vec();
        let n = bytes.len();
        bytes[n - 1] ^= 0x40;
        let batch = Batches::new(Bytes::from(bytes)).next().unwrap().unwrap();
        assert!(
            matches!(batch.validate_crc(), Err(RecordsError::CorruptCrc { .. })),
            "{file}"
        );
    }
}

/// Legacy sets written by kafka-python 3.0.12 pinned to api_version (0, 9) (magic 0, Produce v1)
/// and (0, 10, 0) (magic 1, Produce v2), captured with `tests/data/capture_legacy.py`:
/// (file, magic, codec).
const LEGACY_EXPECTED: &[(&str, i8, Compression)] = &[
    ("kafka-python-legacy-m0-none.bin", 0, Compression::None),
    ("kafka-python-legacy-m0-gzip.bin", 0, Compression::Gzip),
    ("kafka-python-legacy-m0-snappy.bin", 0, Compression::Snappy),
    // kafka-python writes the broken LZ4 header checksum old brokers expect for magic 0.
    ("kafka-python-legacy-m0-lz4.bin", 0, Compression::Lz4),
    ("kafka-python-legacy-m1-none.bin", 1, Compression::None),
    ("kafka-python-legacy-m1-gzip.bin", 1, Compression::Gzip),
    ("kafka-python-legacy-m1-snappy.bin", 1, Compression::Snappy),
    ("kafka-python-legacy-m1-lz4.bin", 1, Compression::Lz4),
];

type Kv = (Option<Vec<u8>>, Option<Vec<u8>>);

fn legacy_expected(tag: &str) -> Vec<Kv> {
    let mut out: Vec<Kv> = (0..4)
        .map(|i| {
            (
                Some(format!("k{i}").into_bytes()),
                Some(format!("{tag}-value-{i}").into_bytes()),
            )
        })
        .collect();
    out.push((None, Some(format!("{tag}-nokey").into_bytes())));
    out.push((Some(b"k-tomb".to_vec()), None));
    out
}

#[test]
fn kafka_python_legacy_sets_parse_to_their_known_contents() {
    for &(file, magic, codec) in LEGACY_EXPECTED {
        let set = load(file);
        let shallow: Vec<_> = LegacyMessageSet::new(set.clone())
            .collect::<Result<_, _>>()
            .unwrap();
        let wrappers = if codec == Compression::None { 6 } else { 1 };
        assert_eq!(shallow.len(), wrappers, "{file}");
        for m in &shallow {
            m.validate_crc().unwrap();
            assert_eq!(
                (m.magic, m.compression().unwrap()),
                (magic, codec),
                "{file}"
            );
        }
        let records = LegacyMessageSet::new(set.clone())
            .records(&DecompressLimits::default())
            .unwrap();
        let tag = file
            .trim_start_matches("kafka-python-legacy-")
            .trim_end_matches(".bin");
        let got: Vec<Kv> = records
            .iter()
            .map(|r| {
                (
                    r.key.as_ref().map(|b| b.to_vec()),
                    r.value.as_ref().map(|b| b.to_vec()),
                )
            })
            .collect();
        assert_eq!(got, legacy_expected(tag), "{file}");
        for (i, r) in records.iter().enumerate() {
            assert_eq!(r.offset, i as i64, "{file}");
            assert_eq!(r.timestamp_type, TimestampType::CreateTime);
            let ts = if magic == 0 {
                -1
            } else {
                1_700_000_000_000 + i as i64
            };
            assert_eq!(r.timestamp, ts, "{file}");
        }
        // Up-converted to v2, the same records come out.
        let v2 = legacy_to_v2(
            set,
            &DecompressLimits::default(),
            &LegacyConversion::default(),
        )
        .unwrap();
        let batch = RecordBatch::parse(v2.freeze()).unwrap();
        batch.validate_crc().unwrap();
        let v2recs: Vec<Kv> = batch
            .records(&DecompressLimits::default())
            .unwrap()
            .map(|r| {
                let r = r.unwrap();
                (r.key.map(|b| b.to_vec()), r.value.map(|b| b.to_vec()))
            })
            .collect();
        assert_eq!(v2recs, legacy_expected(tag), "{file}");
    }
}

#[test]
fn magic0_lz4_from_kafka_python_carries_the_broken_header_checksum() {
    let set = load("kafka-python-legacy-m0-lz4.bin");
    let m = LegacyMessageSet::new(set).next().unwrap().unwrap();
    let value = m.value.clone().unwrap();
    // The plain frame decoder rejects it; the legacy path repairs the checksum.
    assert!(
        josef_records::decompress(Compression::Lz4, &value, &DecompressLimits::default()).is_err()
    );
    assert_eq!(m.records(&DecompressLimits::default()).unwrap().len(), 6);
}
