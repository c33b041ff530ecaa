//! Runs one decoding path 200 times over the records bench's batch (1,000 records of 100 B), so
//! its cost can be counted in instructions, which stay repeatable on a busy machine where
//! criterion's wall-clock figures do not:
//!
//! ```text
//! cargo build --release --example records_iteration_cost
//! for m in baseline header_crc raw_crc32c refs owned kafka_protocol; do
//!   valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/records_iteration_cost $m 2>&1 | grep Collected
//! done
//! ```
//! (instructions of a mode − baseline) / 200 / 1,000 = instructions per record.

use std::hint::black_box;

use bytes::Bytes;
use josef_records::{BatchHeader, Compression, DecompressLimits, RecordBatch, RecordBatchBuilder};

const ROUNDS: usize = 200;

fn batch() -> Bytes {
    let mut b = RecordBatchBuilder::new()
        .compression(Compression::None)
        .producer(1, 0, 0);
    for i in 0..1_000usize {
        let key = format!("key-{i}");
        b.push(
            1_700_000_000_000 + i as i64,
            Some(key.as_bytes()),
            Some(&[b'x'; 100]),
            &[],
        );
    }
    b.build_bytes().expect("valid batch")
}

#[inline(never)]
fn header_crc(bytes: &Bytes) -> usize {
    let h = BatchHeader::parse(bytes).expect("header");
    let batch = RecordBatch::parse(bytes.clone()).expect("batch");
    batch.validate_crc().expect("crc");
    h.record_count as usize
}

#[inline(never)]
fn raw_crc32c(bytes: &Bytes) -> usize {
    crc32c::crc32c(&bytes[21..]) as usize
}

#[inline(never)]
fn refs(bytes: &Bytes, limits: &DecompressLimits) -> usize {
    let batch = RecordBatch::parse(bytes.clone()).expect("batch");
    let records = batch.records(limits).expect("records");
    records
        .refs()
        .map(|r| r.expect("record").value.map_or(0, <[u8]>::len))
        .sum()
}

#[inline(never)]
fn owned(bytes: &Bytes, limits: &DecompressLimits) -> usize {
    let batch = RecordBatch::parse(bytes.clone()).expect("batch");
    batch
        .records(limits)
        .expect("records")
        .map(|r| r.expect("record").value.map_or(0, |v| v.len()))
        .sum()
}

#[inline(never)]
fn kafka_protocol(bytes: &Bytes) -> usize {
    let mut buf = bytes.clone();
    let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut buf).expect("decode");
    set.records
        .iter()
        .map(|r| r.value.as_ref().map_or(0, |v| v.len()))
        .sum()
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "refs".into());
    let bytes = batch();
    let limits = DecompressLimits::default();
    let mut sum = 0usize;
    for _ in 0..ROUNDS {
        let b = black_box(&bytes);
        sum += match mode.as_str() {
            "baseline" => 0,
            "header_crc" => header_crc(b),
            "raw_crc32c" => raw_crc32c(b),
            "refs" => refs(b, &limits),
            "owned" => owned(b, &limits),
            "kafka_protocol" => kafka_protocol(b),
            other => {
                eprintln!("unknown mode {other}");
                std::process::exit(2);
            }
        };
    }
    println!("{mode}: {sum}");
}
