//! Runs one codec path of josef-protocol or of the `kafka-protocol` crate 200 times on the inputs of
//! `benches/protocol.rs`, so their costs can be compared in instructions, which stay repeatable on a
//! busy machine where criterion's wall-clock figures do not:
//!
//! ```text
//! cargo build --release --example protocol_codec_cost
//! for m in {produce,fetch,metadata}_{decode,encode}_{josef,kafka_protocol}; do
//!   for r in 0 200; do
//!     echo -n "$m rounds=$r "; ROUNDS=$r valgrind --tool=callgrind \
//!       --callgrind-out-file=/dev/null target/release/examples/protocol_codec_cost $m 2>&1 \
//!       | grep Collected
//!   done
//! done
//! ```
//! (instructions at 200 rounds − instructions at 0 rounds) / 200 = instructions per message.

use std::hint::black_box;

use bytes::{Bytes, BytesMut};
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

/// Runs `mode`'s path for one message kind; returns false when `mode` is not about this kind.
fn run<O, T>(mode: &str, kind: &str, version: i16, ours: O) -> bool
where
    O: Decode + Encode,
    T: Decodable + Encodable,
{
    let Some(path) = mode.strip_prefix(kind) else {
        return false;
    };
    let bytes = encode_ours(&ours, version);
    let theirs = T::decode(&mut bytes.clone(), version).expect("kafka-protocol decodes");
    assert_eq!(
        encode_theirs(&theirs, version),
        bytes,
        "both crates write the same bytes"
    );
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(200);
    let mut n = 0usize;
    for _ in 0..rounds {
        n += match path {
            "_decode_josef" => {
                black_box(O::decode(&mut black_box(bytes.clone()), version).expect("decode"));
                1
            }
            "_decode_kafka_protocol" => {
                black_box(T::decode(&mut black_box(bytes.clone()), version).expect("decode"));
                1
            }
            "_encode_josef" => encode_ours(black_box(&ours), version).len(),
            "_encode_kafka_protocol" => encode_theirs(black_box(&theirs), version).len(),
            _ => return false,
        };
    }
    println!("{mode}: {n}");
    true
}

fn main() {
    let mode = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "produce_decode_josef".into());
    let (p, f, m) = (produce(), fetch(), metadata());
    let done = run::<_, kafka_protocol::messages::ProduceRequest>(&mode, "produce", 9, p)
        || run::<_, kafka_protocol::messages::FetchResponse>(&mode, "fetch", 16, f)
        || run::<_, kafka_protocol::messages::MetadataResponse>(&mode, "metadata", 12, m);
    if !done {
        eprintln!("unknown mode {mode}");
        std::process::exit(2);
    }
}
