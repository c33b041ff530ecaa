//! josef-fetch: what a fetch session costs the broker per fetch. An incremental fetch that lists
//! nothing (the steady state of a consumer) runs `new_context` + `update_and_generate_response`
//! over the session's partitions; compared with a sessionless fetch of the same partitions.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use josef_fetch::{
    FetchMetadata, FetchSessionCache, FetchSessionCacheConfig, PartitionFetch, PartitionOutcome,
    TopicIdPartition,
};
use josef_protocol::Uuid;

fn key(i: usize) -> TopicIdPartition {
    TopicIdPartition::by_id(Uuid::from_u64_pair(1, (i / 8) as u64), (i % 8) as i32)
}

fn outcome(hw: i64, records: bool) -> PartitionOutcome {
    PartitionOutcome {
        high_watermark: hw,
        has_records: records,
        ..Default::default()
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("fetch_session_per_fetch");
    for n in [1usize, 10, 100] {
        let parts: Vec<(TopicIdPartition, PartitionFetch)> = (0..n)
            .map(|i| (key(i), PartitionFetch::new(0, 1 << 20)))
            .collect();
        let mut cache = FetchSessionCache::new(FetchSessionCacheConfig::default());
        let ctx = cache.new_context(FetchMetadata::new(0, 0), true, false, parts.clone(), [], 0);
        let mut resp: Vec<(TopicIdPartition, PartitionOutcome)> = parts
            .iter()
            .map(|(k, _)| (k.clone(), outcome(0, false)))
            .collect();
        let id = cache
            .update_and_generate_response(&ctx, 0, &mut resp, |r| (&r.0, r.1))
            .session_id;
        let mut epoch = 1;
        g.bench_with_input(
            BenchmarkId::new("incremental_one_changed", n),
            &n,
            |b, _| {
                b.iter(|| {
                    let ctx =
                        cache.new_context(FetchMetadata::new(id, epoch), true, false, [], [], 1);
                    epoch = josef_fetch::next_epoch(epoch);
                    let mut resp: Vec<(&TopicIdPartition, PartitionOutcome)> = ctx
                        .partitions()
                        .iter()
                        .enumerate()
                        .map(|(i, (k, _))| (k, outcome(0, i == 0)))
                        .collect();
                    let r = cache.update_and_generate_response(&ctx, 1, &mut resp, |r| (r.0, r.1));
                    assert_eq!(resp.len(), 1);
                    r
                })
            },
        );
        g.bench_with_input(BenchmarkId::new("sessionless", n), &n, |b, _| {
            b.iter(|| {
                let ctx = cache.new_context(
                    FetchMetadata::SESSIONLESS,
                    true,
                    false,
                    parts.clone(),
                    [],
                    1,
                );
                let mut resp: Vec<(&TopicIdPartition, PartitionOutcome)> = ctx
                    .partitions()
                    .iter()
                    .map(|(k, _)| (k, outcome(0, false)))
                    .collect();
                cache.update_and_generate_response(&ctx, 1, &mut resp, |r| (r.0, r.1))
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
