//! Per-batch cost of josef-sequencer's validate + commit on a partition with 10,000 active
//! idempotent producers, plus the duplicate path and a snapshot of the whole table.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use josef_sequencer::{
    increment_sequence, BatchInfo, ProducerStateConfig, ProducerStateTable, Validation,
};

const PRODUCERS: i64 = 10_000;
const RECORDS_PER_BATCH: i32 = 10;

/// A table where every producer has already written five batches.
fn warm_table() -> (ProducerStateTable, Vec<i32>, i64) {
    let mut table = ProducerStateTable::new(ProducerStateConfig::default());
    let mut next_seq = vec![0i32; PRODUCERS as usize];
    let mut offset = 0i64;
    for _ in 0..5 {
        for pid in 0..PRODUCERS {
            let seq = &mut next_seq[pid as usize];
            let b = BatchInfo::idempotent(pid, 0, *seq, RECORDS_PER_BATCH).with_offsets(
                offset,
                offset + i64::from(RECORDS_PER_BATCH) - 1,
                offset,
            );
            table.append(&b).expect("in order");
            *seq += RECORDS_PER_BATCH;
            offset += i64::from(RECORDS_PER_BATCH);
        }
    }
    (table, next_seq, offset)
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("sequencer");
    g.throughput(Throughput::Elements(1));

    let (mut table, mut next_seq, mut offset) = warm_table();
    let mut pid = 0i64;
    g.bench_function("validate_commit_10k_producers", |b| {
        b.iter(|| {
            // Round-robin over the producers so every lookup misses the previous one's cache line.
            pid = (pid + 7919) % PRODUCERS;
            let seq = &mut next_seq[pid as usize];
            let batch = BatchInfo::idempotent(pid, 0, *seq, RECORDS_PER_BATCH);
            match table.validate(black_box(&batch)) {
                Ok(Validation::Append(plan)) => {
                    let last = offset + i64::from(RECORDS_PER_BATCH) - 1;
                    table.commit(plan.with_offsets(offset, last, offset));
                    offset = last + 1;
                    *seq = increment_sequence(*seq, RECORDS_PER_BATCH);
                }
                other => panic!("unexpected {other:?}"),
            }
        })
    });

    let (table, next_seq, _) = warm_table();
    let mut pid = 0i64;
    g.bench_function("validate_duplicate_10k_producers", |b| {
        b.iter(|| {
            pid = (pid + 7919) % PRODUCERS;
            // The oldest of the five remembered batches: the slowest duplicate to find.
            let seq = next_seq[pid as usize] - 5 * RECORDS_PER_BATCH;
            let batch = BatchInfo::idempotent(pid, 0, seq, RECORDS_PER_BATCH);
            match table.validate(black_box(&batch)) {
                Ok(v @ Validation::Duplicate { .. }) => black_box(v),
                other => panic!("unexpected {other:?}"),
            };
        })
    });
    g.finish();

    let mut g = c.benchmark_group("sequencer_snapshot");
    g.throughput(Throughput::Elements(PRODUCERS as u64));
    g.bench_function("encode_10k_producers", |b| {
        b.iter(|| black_box(table.encode_snapshot()))
    });
    let bytes = table.encode_snapshot();
    g.bench_function("decode_10k_producers", |b| {
        b.iter(|| {
            black_box(
                ProducerStateTable::from_snapshot(
                    ProducerStateConfig::default(),
                    black_box(&bytes),
                    0,
                    0,
                )
                .expect("valid snapshot"),
            )
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
