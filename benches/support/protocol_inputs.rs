//! The inputs of the protocol benches, shared by `benches/protocol.rs` (criterion, wall clock) and
//! `examples/protocol_codec_cost.rs` (instruction counts): a ProduceRequest v9 with one
//! 1,000-record x 100 B batch, a FetchResponse v16 with that batch for 10 partitions and a
//! MetadataResponse v12 of 100 topics x 10 partitions, plus one encoder per crate.
#![allow(dead_code)] // each includer uses a different part

use bytes::{Bytes, BytesMut};
use josef_protocol::messages::{fetch_response, metadata_response, produce_request};
use josef_protocol::messages::{FetchResponse, MetadataResponse, ProduceRequest};
use josef_protocol::{Encode, Uuid};
use josef_records::{Compression, RecordBatchBuilder};
use kafka_protocol::protocol::Encodable;

pub fn batch() -> Bytes {
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

pub fn produce() -> ProduceRequest {
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

pub fn fetch() -> FetchResponse {
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

pub fn metadata() -> MetadataResponse {
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
                        replica_nodes: josef_protocol::smallvec![0, 1, 2],
                        isr_nodes: josef_protocol::smallvec![0, 1, 2],
                        offline_replicas: josef_protocol::smallvec![],
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

pub fn encode_ours<M: Encode>(m: &M, v: i16) -> Bytes {
    let mut buf = BytesMut::with_capacity(m.encoded_len(v).unwrap());
    m.encode(&mut buf, v).unwrap();
    buf.freeze()
}

/// Our encoding as a vectored frame: records of 2 KiB or more referenced, not copied (what
/// josef-broker writes with `writev`).
pub fn encode_ours_chunks<M: Encode>(m: &M, v: i16) -> josef_protocol::FrameChunks {
    let mut out =
        josef_protocol::FrameChunks::with_capacity(m.encoded_len(v).unwrap().min(16 * 1024));
    m.encode(&mut out, v).unwrap();
    out
}

pub fn encode_theirs<M: Encodable>(m: &M, v: i16) -> Bytes {
    let mut buf = BytesMut::with_capacity(m.compute_size(v).unwrap());
    m.encode(&mut buf, v).unwrap();
    buf.freeze()
}
