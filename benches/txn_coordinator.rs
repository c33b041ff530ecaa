//! Throughput of the transaction coordinator shard: full transactions (InitProducerId,
//! AddPartitionsToTxn, EndTxn, markers completed) through the josef-coordinator driver over an
//! in-memory partition, committed after every write.

use std::collections::BTreeSet;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use josef_coordinator::{CoordinatorDriver, InMemoryPartitionWriter};
use josef_txn::*;

type Driver =
    CoordinatorDriver<TxnShard, InMemoryPartitionWriter<TxnLogRecord>, Vec<TxnMarkerRequest>>;

fn commit(d: &mut Driver) -> Vec<Vec<TxnMarkerRequest>> {
    let hw = d.writer_mut().commit_all();
    d.on_high_watermark(hw)
}

fn transaction_cycle(c: &mut Criterion) {
    let mut group = c.benchmark_group("txn_coordinator");
    group.throughput(Throughput::Elements(1));
    group.bench_function("init_add_end_complete", |b| {
        let mut d: Driver = CoordinatorDriver::new(
            TxnShard::new(TxnConfig::default(), 0),
            InMemoryPartitionWriter::new(),
        );
        let mut pids = SequentialProducerIdGenerator::new(0);
        let mut now = 0i64;
        let mut n = 0u64;
        let partitions: BTreeSet<TopicPartition> =
            (0..3).map(|p| TopicPartition::new("orders", p)).collect();
        b.iter(|| {
            n += 1;
            now += 1;
            let id = format!("txn-{}", n % 1000);
            let init = InitProducerIdRequest {
                transactional_id: Some(id.clone()),
                transaction_timeout_ms: 60_000,
                producer_id: -1,
                producer_epoch: -1,
            };
            d.write(|s| {
                s.init_producer_id(&init, now, &mut pids)
                    .map_response(|r| r.markers)
            })
            .unwrap();
            commit(&mut d);
            let m = d.shard().get(&id).unwrap();
            let (pid, epoch) = (m.producer_id, m.producer_epoch);
            let add = AddPartitionsToTxnRequest {
                transactional_id: id.clone(),
                producer_id: pid,
                producer_epoch: epoch,
                partitions: partitions.clone(),
                verify_only: false,
            };
            d.write(|s| {
                s.add_partitions_to_txn(&add, now, TransactionVersion::V0)
                    .map_response(|r| r.markers)
            })
            .unwrap();
            let end = EndTxnRequest {
                transactional_id: id.clone(),
                producer_id: pid,
                producer_epoch: epoch,
                committed: true,
                client_transaction_version: TransactionVersion::V0,
            };
            d.write(|s| s.end_txn(&end, now, &mut pids).map_response(|r| r.markers))
                .unwrap();
            let markers: Vec<TxnMarkerRequest> = commit(&mut d).into_iter().flatten().collect();
            for m in &markers {
                d.write(|s| s.markers_completed(m, now).map_response(|r| r.markers))
                    .unwrap();
            }
            black_box(commit(&mut d));
        });
    });
    group.finish();
}

criterion_group!(benches, transaction_cycle);
criterion_main!(benches);
