//! Down-conversion cost (Fetch v0–3): a 1,000 x 100 B v2 batch rewritten as a magic-1 and a
//! magic-0 legacy set, per codec (a compressed batch is decompressed and re-compressed).
//!
//! `cargo bench --bench records_downconvert -- --warm-up-time 1 --measurement-time 2`

use std::hint::black_box;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use josef_records::{down_convert, Compression, DecompressLimits, RecordBatchBuilder};

const RECORDS: usize = 1_000;
const VALUE_SIZE: usize = 100;

/// A v2 batch of text-like records (so codecs have something realistic to do).
fn batch(codec: Compression) -> Bytes {
    let mut b = RecordBatchBuilder::new().compression(codec);
    for i in 0..RECORDS {
        let key = format!("key-{i}");
        let value: Vec<u8> = format!("order {i} user {} amount {} status paid ", i % 97, i * 7)
            .into_bytes()
            .into_iter()
            .cycle()
            .take(VALUE_SIZE)
            .collect();
        b.push(
            1_700_000_000_000 + i as i64,
            Some(key.as_bytes()),
            Some(&value),
            &[],
        );
    }
    b.build_bytes().unwrap()
}

fn bench(c: &mut Criterion) {
    let limits = DecompressLimits::default();
    let mut g = c.benchmark_group("down_convert");
    g.throughput(Throughput::Elements(RECORDS as u64));
    for codec in [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
    ] {
        let input = batch(codec);
        for magic in [1i8, 0] {
            g.bench_function(format!("{}_to_magic{magic}", codec.name()), |b| {
                b.iter(|| {
                    let d = down_convert(black_box(input.clone()), magic, 0, &limits).unwrap();
                    black_box(d.records.len())
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
