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

/// A view decoded and then read completely: every field of every element visited (arrays decoded
/// a second time as they are iterated), folded into a number so that nothing is optimised away.
/// This is the fair counterpart of an owned decode, whose result holds every field.
pub trait ReadAll {
    fn read_all(&self) -> u64;
}

/// Folds values into a checksum (wrapping: negative fields are common).
#[derive(Default)]
struct Sum(u64);

impl Sum {
    fn add(&mut self, v: impl Into<i64>) {
        self.0 = self.0.wrapping_add(v.into() as u64);
    }
    fn len(&mut self, s: Option<&[u8]>) {
        self.add(s.map_or(-1, |s| s.len() as i64));
    }
    fn str(&mut self, s: Option<&str>) {
        self.len(s.map(str::as_bytes));
    }
}

impl ReadAll for josef_protocol::messages::ProduceRequestView<'_> {
    fn read_all(&self) -> u64 {
        let mut s = Sum::default();
        s.str(self.transactional_id);
        s.add(self.acks);
        s.add(self.timeout_ms);
        for topic in self.topic_data.iter() {
            s.str(Some(topic.name));
            for p in topic.partition_data.iter() {
                s.add(p.index);
                s.len(p.records);
            }
        }
        s.0
    }
}

impl ReadAll for josef_protocol::messages::FetchResponseView<'_> {
    fn read_all(&self) -> u64 {
        let mut s = Sum::default();
        s.add(self.throttle_time_ms);
        s.add(self.error_code);
        s.add(self.session_id);
        for topic in self.responses.iter() {
            s.str(Some(topic.topic));
            s.add(topic.topic_id.as_bytes()[0]);
            for p in topic.partitions.iter() {
                s.add(p.partition_index);
                s.add(p.error_code);
                s.add(p.high_watermark);
                s.add(p.last_stable_offset);
                s.add(p.log_start_offset);
                s.add(p.diverging_epoch.epoch);
                s.add(p.diverging_epoch.end_offset);
                s.add(p.current_leader.leader_id);
                s.add(p.current_leader.leader_epoch);
                s.add(p.snapshot_id.end_offset);
                s.add(p.snapshot_id.epoch);
                s.add(p.preferred_read_replica);
                s.len(p.records);
                for a in p.aborted_transactions.iter().flatten() {
                    s.add(a.producer_id);
                    s.add(a.first_offset);
                }
            }
        }
        for n in self.node_endpoints.iter() {
            s.add(n.node_id);
            s.str(Some(n.host));
            s.add(n.port);
            s.str(n.rack);
        }
        s.0
    }
}

impl ReadAll for josef_protocol::messages::MetadataResponseView<'_> {
    fn read_all(&self) -> u64 {
        let mut s = Sum::default();
        s.add(self.throttle_time_ms);
        s.str(self.cluster_id);
        s.add(self.controller_id);
        s.add(self.cluster_authorized_operations);
        for b in self.brokers.iter() {
            s.add(b.node_id);
            s.str(Some(b.host));
            s.add(b.port);
            s.str(b.rack);
        }
        for t in self.topics.iter() {
            s.add(t.error_code);
            s.str(t.name);
            s.add(t.topic_id.as_bytes()[0]);
            s.add(t.is_internal);
            s.add(t.topic_authorized_operations);
            for p in t.partitions.iter() {
                s.add(p.error_code);
                s.add(p.partition_index);
                s.add(p.leader_id);
                s.add(p.leader_epoch);
                for n in p
                    .replica_nodes
                    .iter()
                    .chain(p.isr_nodes.iter())
                    .chain(p.offline_replicas.iter())
                {
                    s.add(n);
                }
            }
        }
        s.0
    }
}
