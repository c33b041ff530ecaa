//! josef-records benches: header view + CRC of a 1,000 x 100 B batch next to raw CRC-32C, full
//! record iteration next to kafka-protocol's decoder, and each codec's throughput.
//!
//! `cargo bench --bench records -- --warm-up-time 1 --measurement-time 2`

use std::hint::black_box;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use josef_records::{
    compress, decompress, BatchHeader, Compression, CompressionOptions, DecompressLimits,
    RecordBatch, RecordBatchBuilder,
};

const RECORDS: usize = 1_000;
const VALUE_SIZE: usize = 100;

/// Text-like values (a small vocabulary), so codecs have something realistic to do.
fn value(i: usize) -> Vec<u8> {
    const WORDS: [&str; 16] = [
        "order",
        "id",
        "user",
        "amount",
        "status",
        "paid",
        "shipped",
        "eur",
        "usd",
        "item",
        "sku",
        "qty",
        "42",
        "1700000000",
        "true",
        "false",
    ];
    let mut v = Vec::with_capacity(VALUE_SIZE);
    let mut x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    while v.len() < VALUE_SIZE {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(WORDS[(x % 16) as usize].as_bytes());
        v.push(b' ');
    }
    v.truncate(VALUE_SIZE);
    v
}

fn batch(codec: Compression) -> Bytes {
    let mut b = RecordBatchBuilder::new()
        .compression(codec)
        .producer(1, 0, 0);
    for i in 0..RECORDS {
        let key = format!("key-{i}");
        b.push(
            1_700_000_000_000 + i as i64,
            Some(key.as_bytes()),
            Some(&value(i)),
            &[],
        );
    }
    b.build_bytes().unwrap()
}

fn header_and_crc(c: &mut Criterion) {
    let bytes = batch(Compression::None);
    let mut g = c.benchmark_group("header_crc_1000x100B");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("josef_header_view_and_validate_crc", |b| {
        b.iter(|| {
            let h = BatchHeader::parse(black_box(&bytes)).unwrap();
            let batch = RecordBatch::parse(black_box(bytes.clone())).unwrap();
            batch.validate_crc().unwrap();
            h.record_count
        })
    });
    g.bench_function("raw_crc32c_same_bytes", |b| {
        b.iter(|| crc32c::crc32c(black_box(&bytes[21..])))
    });
    g.finish();
}

fn iterate(c: &mut Criterion) {
    let limits = DecompressLimits::default();
    for codec in [Compression::None, Compression::Lz4] {
        let bytes = batch(codec);
        let mut g = c.benchmark_group(format!("iterate_1000x100B_{}", codec.name()));
        g.throughput(Throughput::Elements(RECORDS as u64));
        g.bench_function("josef_records_iterate", |b| {
            b.iter(|| {
                let batch = RecordBatch::parse(bytes.clone()).unwrap();
                let mut n = 0usize;
                for r in batch.records(&limits).unwrap() {
                    let r = r.unwrap();
                    n += r.value.map_or(0, |v| v.len());
                }
                n
            })
        });
        g.bench_function("josef_records_iterate_refs", |b| {
            b.iter(|| {
                let batch = RecordBatch::parse(bytes.clone()).unwrap();
                let records = batch.records(&limits).unwrap();
                let mut n = 0usize;
                for r in records.refs() {
                    let r = r.unwrap();
                    n += r.value.map_or(0, <[u8]>::len);
                }
                n
            })
        });
        g.bench_function("josef_records_crc_and_iterate", |b| {
            b.iter(|| {
                let batch = RecordBatch::parse(bytes.clone()).unwrap();
                batch.validate_crc().unwrap();
                let mut n = 0usize;
                for r in batch.records(&limits).unwrap() {
                    let r = r.unwrap();
                    n += r.value.map_or(0, |v| v.len());
                }
                n
            })
        });
        g.bench_function("kafka_protocol_decode", |b| {
            b.iter(|| {
                let mut buf = bytes.clone();
                let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut buf).unwrap();
                set.records
                    .iter()
                    .map(|r| r.value.as_ref().map_or(0, |v| v.len()))
                    .sum::<usize>()
            })
        });
        g.finish();
    }
}

fn codecs(c: &mut Criterion) {
    // The uncompressed records section of the 1,000 x 100 B batch.
    let plain = batch(Compression::None).slice(61..);
    let opts = CompressionOptions::default();
    let limits = DecompressLimits::default();
    let mut g = c.benchmark_group("codec_records_section");
    g.throughput(Throughput::Bytes(plain.len() as u64));
    for codec in [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let z = compress(codec, &plain, &opts).unwrap();
        eprintln!(
            "{}: {} -> {} bytes ({:.2}x)",
            codec.name(),
            plain.len(),
            z.len(),
            plain.len() as f64 / z.len() as f64
        );
        g.bench_function(format!("{}_compress", codec.name()), |b| {
            b.iter(|| compress(codec, black_box(&plain), &opts).unwrap())
        });
        g.bench_function(format!("{}_decompress", codec.name()), |b| {
            b.iter(|| decompress(codec, black_box(&z), &limits).unwrap())
        });
    }
    g.finish();
}

criterion_group!(benches, header_and_crc, iterate, codecs);
criterion_main!(benches);
