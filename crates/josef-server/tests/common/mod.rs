//! What the broker's behaviour tests share: an in-process broker on port 0 with a fresh data dir,
//! and a raw client speaking josef-protocol frames to it.
#![allow(dead_code)] // each test file uses its own part

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use josef_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use josef_protocol::messages::fetch_request::FetchPartition;
use josef_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use josef_protocol::messages::produce_response::PartitionProduceResponse;
use josef_protocol::messages::{
    CreateTopicsRequest, FetchRequest, FetchResponse, ProduceRequest, RequestHeader,
};
use josef_protocol::{
    decode_response_frame, encode_request_frame, ApiKey, RequestBody, ResponseBody, Uuid,
};
use josef_server::config::BrokerConfig;
use josef_server::Broker;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// Starts a broker on 127.0.0.1:0 with its data in `dir` and `extra` properties on top.
pub async fn start_with(dir: &std::path::Path, extra: &[(&str, &str)]) -> Broker {
    let mut props = std::collections::BTreeMap::new();
    props.insert("listeners".into(), "PLAINTEXT://127.0.0.1:0".into());
    props.insert("log.dirs".into(), dir.display().to_string());
    for (k, v) in extra {
        props.insert((*k).to_string(), (*v).to_string());
    }
    Broker::start(BrokerConfig::from_properties(props).unwrap())
        .await
        .unwrap()
}

/// A broker on a fresh temp dir, a client connected to it, and `topic` created with
/// `partitions` partitions (keep the dir alive as long as the broker).
pub async fn broker_with_topic(
    topic: &str,
    partitions: i32,
) -> (tempfile::TempDir, Broker, Client) {
    let dir = tempfile::tempdir().unwrap();
    let b = start_with(dir.path(), &[]).await;
    let mut c = Client::connect(&b).await;
    create_topic(&mut c, topic, partitions).await;
    (dir, b, c)
}

/// A raw client: one connection (TCP unless built [`Client::over`] another stream), correlation
/// ids counted up from 1.
pub struct Client<S = TcpStream> {
    /// The connection, for tests that write raw bytes.
    pub stream: S,
    correlation: i32,
}

/// What a [`Client`] can talk over.
pub trait Stream: AsyncRead + AsyncWrite + Unpin {}

impl<S: AsyncRead + AsyncWrite + Unpin> Stream for S {}

impl Client {
    /// Connects to the broker's first listener.
    pub async fn connect(b: &Broker) -> Client {
        Client::over(TcpStream::connect(b.listeners()[0].addr).await.unwrap())
    }
}

impl<S: Stream> Client<S> {
    /// A client over any connected stream (an in-memory pipe, say).
    pub fn over(stream: S) -> Client<S> {
        Client {
            stream,
            correlation: 0,
        }
    }

    /// Sends one request; returns its correlation id.
    pub async fn send(&mut self, version: i16, body: RequestBody) -> i32 {
        self.correlation += 1;
        let header = RequestHeader {
            request_api_key: body.api_key() as i16,
            request_api_version: version,
            correlation_id: self.correlation,
            client_id: Some("josef-test".into()),
            ..Default::default()
        };
        let mut buf = BytesMut::new();
        encode_request_frame(&header, &body, &mut buf).unwrap();
        self.stream.write_all(&buf).await.unwrap();
        self.correlation
    }

    /// Reads one response of `key`/`version`; `None` when the broker closed the connection.
    pub async fn recv(&mut self, key: ApiKey, version: i16) -> Option<ResponseBody> {
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len).await.ok()?;
        let mut body = vec![0u8; i32::from_be_bytes(len) as usize];
        self.stream.read_exact(&mut body).await.ok()?;
        let (_, b) = decode_response_frame(key, version, Bytes::from(body)).unwrap();
        Some(b)
    }

    /// Sends a request and waits (at most 10 s) for its response.
    pub async fn call(&mut self, version: i16, body: impl Into<RequestBody>) -> ResponseBody {
        let body = body.into();
        let key = body.api_key();
        self.send(version, body).await;
        tokio::time::timeout(Duration::from_secs(10), self.recv(key, version))
            .await
            .expect("a response within 10 s")
            .expect("a response")
    }

    /// A Fetch round trip.
    pub async fn fetch(&mut self, version: i16, req: FetchRequest) -> FetchResponse {
        let ResponseBody::Fetch(r) = self.call(version, req).await else {
            panic!("not a fetch response")
        };
        r
    }

    /// True when the broker closed the connection without answering.
    pub async fn closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(
            tokio::time::timeout(Duration::from_secs(5), self.stream.read(&mut b)).await,
            Ok(Ok(0)) | Ok(Err(_))
        )
    }
}

/// Creates a topic with `configs` through CreateTopics v7 and asserts it worked; returns its id.
pub async fn create_topic_with<S: Stream>(
    c: &mut Client<S>,
    name: &str,
    partitions: i32,
    configs: &[(&str, &str)],
) -> Uuid {
    let r = c
        .call(
            7,
            CreateTopicsRequest {
                topics: vec![CreatableTopic {
                    name: name.into(),
                    num_partitions: partitions,
                    replication_factor: 1,
                    configs: configs
                        .iter()
                        .map(|(k, v)| CreatableTopicConfig {
                            name: (*k).into(),
                            value: Some((*v).into()),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }],
                timeout_ms: 5000,
                ..Default::default()
            },
        )
        .await;
    let ResponseBody::CreateTopics(r) = r else {
        panic!("not a CreateTopics response")
    };
    assert_eq!(r.topics[0].error_code, 0, "{:?}", r.topics[0].error_message);
    r.topics[0].topic_id
}

/// Creates a topic with default configs; returns its id.
pub async fn create_topic<S: Stream>(c: &mut Client<S>, name: &str, partitions: i32) -> Uuid {
    create_topic_with(c, name, partitions, &[]).await
}

/// A Produce request (acks=all) of `records` to partition 0 of `topic`.
pub fn produce_request(topic: &str, records: Bytes) -> ProduceRequest {
    ProduceRequest {
        acks: -1,
        timeout_ms: 5000,
        topic_data: vec![TopicProduceData {
            name: topic.into(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(records),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Produces `records` to partition 0 of `topic` with acks=all at Produce `version`; returns that
/// partition's response.
pub async fn produce_records<S: Stream>(
    c: &mut Client<S>,
    version: i16,
    topic: &str,
    records: Bytes,
) -> PartitionProduceResponse {
    let ResponseBody::Produce(r) = c.call(version, produce_request(topic, records)).await else {
        panic!("not a produce response")
    };
    r.responses[0].partition_responses[0].clone()
}

/// `partition` fetched from `fetch_offset` with 1 MiB of room and no leader-epoch checks.
pub fn fetch_partition(partition: i32, fetch_offset: i64) -> FetchPartition {
    FetchPartition {
        partition,
        fetch_offset,
        current_leader_epoch: -1,
        partition_max_bytes: 1 << 20,
        log_start_offset: -1,
        last_fetched_epoch: -1,
        ..Default::default()
    }
}

/// InitProducerId for `transactional_id` at `version` (60 s transaction timeout, no producer
/// named).
pub async fn init_producer_id<S: Stream>(
    c: &mut Client<S>,
    version: i16,
    transactional_id: &str,
) -> josef_protocol::messages::InitProducerIdResponse {
    let req = josef_protocol::messages::InitProducerIdRequest {
        transactional_id: Some(transactional_id.into()),
        transaction_timeout_ms: 60_000,
        producer_id: -1,
        producer_epoch: -1,
        ..Default::default()
    };
    let ResponseBody::InitProducerId(r) = c.call(version, req).await else {
        panic!("not an InitProducerId response")
    };
    r
}

/// TxnOffsetCommit of `offset` for group `g` on `t-0` by transactional id `tx` at `version`: each
/// partition's error code.
pub async fn txn_offset_commit_codes<S: Stream>(
    c: &mut Client<S>,
    version: i16,
    pid: i64,
    epoch: i16,
    offset: i64,
) -> Vec<i16> {
    use josef_protocol::messages::txn_offset_commit_request::{
        TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
    };
    let req = josef_protocol::messages::TxnOffsetCommitRequest {
        transactional_id: "tx".into(),
        group_id: "g".into(),
        producer_id: pid,
        producer_epoch: epoch,
        generation_id: -1,
        member_id: "".into(),
        topics: vec![TxnOffsetCommitRequestTopic {
            name: "t".into(),
            partitions: vec![TxnOffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: offset,
                committed_leader_epoch: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::TxnOffsetCommit(r) = c.call(version, req).await else {
        panic!("TxnOffsetCommit answered with another response type")
    };
    r.topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
        .collect()
}

/// A read_committed Fetch (v12) of `topic`-`partition` from offset 0: that partition's answer.
pub async fn read_committed_partition<S: Stream>(
    c: &mut Client<S>,
    topic: &str,
    partition: i32,
) -> josef_protocol::messages::fetch_response::PartitionData {
    let req = FetchRequest {
        replica_id: -1,
        max_wait_ms: 0,
        min_bytes: 0,
        max_bytes: 1 << 20,
        isolation_level: 1,
        session_epoch: -1,
        topics: vec![josef_protocol::messages::fetch_request::FetchTopic {
            topic: topic.into(),
            partitions: vec![fetch_partition(partition, 0)],
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut r = c.fetch(12, req).await;
    r.responses.swap_remove(0).partitions.swap_remove(0)
}
