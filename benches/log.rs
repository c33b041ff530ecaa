//! josef-log benches: append of 16 KiB batches next to a plain `write` of the same bytes to a file
//! in the same directory, sequential read, offset and timestamp lookup, and opening a log of 1,000
//! segments after a clean shutdown.
//!
//! `cargo bench --bench log -- --warm-up-time 1 --measurement-time 2`

use std::hint::black_box;
use std::io::{Seek, SeekFrom, Write};

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use josef::log::testing::TestBatch;
use josef::log::{Log, LogConfig, PartitionState, TimestampType};

const BATCH: usize = 16 * 1024;

/// Bench directories live on tmpfs when there is one, so the numbers measure the log's own path
/// (both the plain write and the log write into the page cache; rolls' fsyncs cost nothing) rather
/// than the device. Set JOSEF_BENCH_DIR to measure a real disk.
fn bench_dir() -> tempfile::TempDir {
    if let Ok(d) = std::env::var("JOSEF_BENCH_DIR") {
        return tempfile::tempdir_in(d).unwrap();
    }
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(t) = tempfile::tempdir_in(shm) {
            return t;
        }
    }
    tempfile::tempdir().unwrap()
}
const LIMIT: u64 = 256 << 20;

/// One 16 KiB batch of 16 records of ~1 KiB.
fn batch_16k() -> BytesMut {
    let mut b = TestBatch::new(0);
    let value = vec![0x5a; 1010];
    for i in 0..16 {
        b = b.record(
            1_700_000_000_000 + i,
            Some(format!("key-{i}").as_bytes()),
            Some(&value),
        );
    }
    let bytes = b.build();
    debug_assert!(bytes.len() >= BATCH);
    bytes
}

fn bench_append(c: &mut Criterion) {
    let template = batch_16k();
    let mut g = c.benchmark_group("append");
    g.throughput(Throughput::Bytes(template.len() as u64));
    let tmp = bench_dir();

    let path = tmp.path().join("plain.bin");
    let mut file = std::fs::File::create(&path).unwrap();
    let mut written = 0u64;
    g.bench_function("plain_write_16k", |b| {
        b.iter(|| {
            file.write_all(black_box(&template)).unwrap();
            written += template.len() as u64;
            if written > LIMIT {
                file.set_len(0).unwrap();
                file.seek(SeekFrom::Start(0)).unwrap();
                written = 0;
            }
        })
    });

    let config = LogConfig {
        segment_bytes: 64 << 20,
        retention_bytes: 128 << 20,
        retention_ms: -1,
        // The bench clock stands still: deleted segments must go at once, not after a delay.
        file_delete_delay_ms: 0,
        ..LogConfig::default()
    };
    let mut log = Log::open(tmp.path().join("bench-0"), config, 0).unwrap();
    g.bench_function("log_append_as_leader_16k", |b| {
        b.iter_batched(
            || template.clone(),
            |batch| {
                let info = log
                    .append_as_leader(batch, 1, 0, TimestampType::CreateTime)
                    .unwrap();
                if info.rolled_to.is_some() {
                    log.update_high_watermark(log.log_end_offset());
                    log.delete_old_segments(0).unwrap();
                }
                info.last_offset
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

/// A log of ~64 MiB of 16 KiB batches with increasing timestamps.
fn filled_log(dir: &std::path::Path) -> Log {
    let mut log = Log::open(
        dir,
        LogConfig {
            segment_bytes: 16 << 20,
            ..LogConfig::default()
        },
        0,
    )
    .unwrap();
    let value = vec![0x5a; 1000];
    for n in 0..4096i64 {
        let mut b = TestBatch::new(0);
        for i in 0..16 {
            b = b.record(n * 100 + i, Some(b"k"), Some(&value));
        }
        log.append_as_leader(b.build(), 1, 0, TimestampType::CreateTime)
            .unwrap();
    }
    log.update_high_watermark(log.log_end_offset());
    log
}

fn bench_read_and_lookup(c: &mut Criterion) {
    let tmp = bench_dir();
    let log = filled_log(&tmp.path().join("read-0"));
    let leo = log.log_end_offset();

    let mut g = c.benchmark_group("read");
    g.throughput(Throughput::Bytes(1 << 20));
    let mut next = 0i64;
    g.bench_function("sequential_read_1MiB", |b| {
        b.iter(|| {
            if next >= leo {
                next = 0;
            }
            let r = log.read(next, 1 << 20, leo, true).unwrap();
            let last = josef::records::Batches::new(r.records.clone())
                .last()
                .unwrap()
                .unwrap();
            next = last.header().next_offset();
            r.records.len()
        })
    });
    g.finish();

    let mut g = c.benchmark_group("lookup");
    let mut x = 12345u64;
    let mut rnd = move |n: i64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as i64
    };
    g.bench_function("offset_lookup", |b| {
        b.iter(|| log.translate_offset(black_box(rnd(leo))).unwrap())
    });
    let max_ts = 4096 * 100;
    g.bench_function("timestamp_lookup", |b| {
        b.iter(|| {
            log.fetch_offset_by_timestamp(black_box(rnd(max_ts)))
                .unwrap()
        })
    });
    g.finish();
}

fn bench_open(c: &mut Criterion) {
    let tmp = bench_dir();
    let dir = tmp.path().join("many-0");
    let config = LogConfig {
        segment_bytes: 4 * 1024,
        ..LogConfig::default()
    };
    {
        let mut log = Log::open(&dir, config.clone(), 0).unwrap();
        let value = vec![1u8; 900];
        while log.segment_count() < 1000 {
            let b = TestBatch::new(0)
                .record(1, Some(b"k"), Some(&value))
                .build();
            log.append_as_leader(b, 0, 0, TimestampType::CreateTime)
                .unwrap();
        }
        log.close().unwrap();
    }
    let mut g = c.benchmark_group("open");
    g.sample_size(10);
    g.bench_function("open_1000_segments_after_clean_shutdown", |b| {
        b.iter(|| {
            // Managed state: the clean-shutdown flag is passed in, so it holds for every iteration.
            let state = PartitionState::Managed {
                recovery_point: i64::MAX,
                log_start_offset: 0,
                clean_shutdown: true,
            };
            let log = Log::open_with(&dir, config.clone(), 0, state).unwrap();
            assert_eq!(log.segment_count(), 1000);
            // Dropped, not closed: the next open re-checks only the active segment.
            log.segment_count()
        })
    });
    g.finish();
}

criterion_group!(benches, bench_append, bench_read_and_lookup, bench_open);
criterion_main!(benches);
