//! josef-protocol benches, each side by side with the `kafka-protocol` crate in the same group:
//! decode and encode of a ProduceRequest v9 carrying one 1,000-record x 100 B batch, a FetchResponse
//! v16 carrying such a batch for 10 partitions, and a MetadataResponse v12 of 100 topics x 10 partitions.
//!
//! `cargo bench --bench protocol -- --warm-up-time 1 --measurement-time 2`

use std::hint::black_box;

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use josef_protocol::messages::{fetch_response, metadata_response, produce_request};
use josef_protocol::messages::{FetchResponse, MetadataResponse, ProduceRequest};
use josef_protocol::{Decode, Encode, Uuid};
use josef_records::{Compression, RecordBatchBuilder};
use kafka_protocol::protocol::{Decodable, Encodable};

fn batch() -> Bytes {
    let mut b = RecordBatchBuilder::new()
        .compression(Compression::None)
        .producer(1, 0, 0);
    for i in 0..1_000 {
        let key = format!("key-{i}");
        let value = vec![b'v'; 100];
        b.push(
            1_700_000_000_000 + i as i64,
            Some(key.as_bytes()),
            Some(&value),
            &[],
        );
    }
    b.build_bytes().unwrap()
}

fn produce() -> ProduceRequest {
    ProduceRequest {
        acks: -1,
        timeout_ms: 30_000,
        topic_data: vec![produce_request::TopicProduceData {
            name: "bench-topic".into(),
            partition_data: vec![produce_request::PartitionProduceData {
                index: 0,
                records: Some(batch()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn fetch() -> FetchResponse {
    let records = batch();
    FetchResponse {
        session_id: 1,
        responses: vec![fetch_response::FetchableTopicResponse {
            topic_id: Uuid::from_bytes([3; 16]),
            partitions: (0..10)
                .map(|p| fetch_response::PartitionData {
                    partition_index: p,
                    high_watermark: 1_000,
                    last_stable_offset: 1_000,
                    log_start_offset: 0,
                    records: Some(records.clone()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn metadata() -> MetadataResponse {
    MetadataResponse {
        brokers: (0..3)
            .map(|i| metadata_response::MetadataResponseBroker {
                node_id: i,
                host: format!("broker-{i}.example.com").into(),
                port: 9092,
                rack: None,
                ..Default::default()
            })
            .collect(),
        cluster_id: Some("cluster".into()),
        controller_id: 0,
        topics: (0..100)
            .map(|t| metadata_response::MetadataResponseTopic {
                name: Some(format!("topic-{t}").into()),
                topic_id: Uuid::from_u64_pair(t, t),
                partitions: (0..10)
                    .map(|p| metadata_response::MetadataResponsePartition {
                        partition_index: p,
                        leader_id: p % 3,
                        leader_epoch: 5,
                        replica_nodes: vec![0, 1, 2],
                        isr_nodes: vec![0, 1, 2],
                        offline_replicas: vec![],
                        ..Default::default()
                    })
                    .collect(),
                topic_authorized_operations: -2147483648,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

fn encode_ours<M: Encode>(m: &M, v: i16) -> Bytes {
    let mut buf = BytesMut::with_capacity(m.encoded_len(v).unwrap());
    m.encode(&mut buf, v).unwrap();
    buf.freeze()
}

fn encode_theirs<M: Encodable>(m: &M, v: i16) -> Bytes {
    let mut buf = BytesMut::with_capacity(m.compute_size(v).unwrap());
    m.encode(&mut buf, v).unwrap();
    buf.freeze()
}

fn bench_pair<O, T>(c: &mut Criterion, name: &str, version: i16, ours: O)
where
    O: Decode + Encode,
    T: Decodable + Encodable,
{
    let bytes = encode_ours(&ours, version);
    let theirs = T::decode(&mut bytes.clone(), version).unwrap();
    assert_eq!(
        encode_theirs(&theirs, version),
        bytes,
        "{name}: both crates must produce the same bytes"
    );

    let mut g = c.benchmark_group(format!("{name}_decode"));
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("josef", |b| {
        b.iter(|| O::decode(&mut black_box(bytes.clone()), version).unwrap())
    });
    g.bench_function("kafka_protocol", |b| {
        b.iter(|| T::decode(&mut black_box(bytes.clone()), version).unwrap())
    });
    g.finish();

    let mut g = c.benchmark_group(format!("{name}_encode"));
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("josef", |b| {
        b.iter(|| encode_ours(black_box(&ours), version))
    });
    g.bench_function("kafka_protocol", |b| {
        b.iter(|| encode_theirs(black_box(&theirs), version))
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    bench_pair::<_, kafka_protocol::messages::ProduceRequest>(
        c,
        "produce_request_v9_1000x100B",
        9,
        produce(),
    );
    bench_pair::<_, kafka_protocol::messages::FetchResponse>(
        c,
        "fetch_response_v16_10_partitions",
        16,
        fetch(),
    );
    bench_pair::<_, kafka_protocol::messages::MetadataResponse>(
        c,
        "metadata_response_v12_100x10",
        12,
        metadata(),
    );
}

criterion_group!(protocol, benches);
criterion_main!(protocol);
