//! Record batches written by real clients (librdkafka via confluent-kafka, kafka-python, kafkajs),
//! extracted from the Produce request frames in the shared fixtures into `tests/data/*.bin`.
//!
//! `JOSEF_REGEN_FIXTURES=1 cargo test -p josef-records --test client_fixtures` rewrites the
//! `.bin` files from the frames; without it, the files are checked against the frames when the
//! frames are present, and parsed always.

mod common;

use std::path::{Path, PathBuf};

use bytes::Bytes;
use josef_records::{Batches, Compression, DecompressLimits, Record, RecordBatch};

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
        .filter(|n| n.ends_with(".bin") && !n.starts_with("generated-"))
        .collect();
    files.sort();
    let mut expected: Vec<String> = EXPECTED.iter().map(|e| e.0.to_string()).collect();
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
            matches!(
                batch.validate_crc(),
                Err(josef_records::RecordsError::CorruptCrc { .. })
            ),
            "{file}"
        );
    }
}
