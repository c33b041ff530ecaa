//! Behaviour tests: a broker started in-process on port 0, spoken to with josef-protocol.

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use josef_protocol::messages::fetch_request::FetchTopic;
use josef_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use josef_protocol::messages::metadata_request::MetadataRequestTopic;
use josef_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use josef_protocol::messages::*;
use josef_protocol::{ApiKey, ResponseBody};
use josef_server::Broker;
use tokio::io::AsyncWriteExt;

mod common;
use common::{create_topic, start_with, Client};

/// Small internal topics keep the coordinator tests fast.
async fn start(dir: &std::path::Path) -> Broker {
    start_with(
        dir,
        &[
            ("offsets.topic.num.partitions", "3"),
            ("transaction.state.log.num.partitions", "3"),
        ],
    )
    .await
}

fn batch(values: &[&[u8]]) -> Bytes {
    let kvs: Vec<_> = values.iter().map(|v| (None, Some(*v))).collect();
    josef_log::testing::batch(0, 1_700_000_000_000, &kvs).freeze()
}

fn produce_req(topic: &str, partition: i32, acks: i16, records: Bytes) -> ProduceRequest {
    ProduceRequest {
        acks,
        timeout_ms: 5000,
        topic_data: vec![TopicProduceData {
            name: topic.into(),
            partition_data: vec![PartitionProduceData {
                index: partition,
                records: Some(records),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn fetch_req(topic: &str, offset: i64, max_wait_ms: i32, min_bytes: i32) -> FetchRequest {
    FetchRequest {
        replica_id: -1,
        max_wait_ms,
        min_bytes,
        max_bytes: 1 << 20,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: topic.into(),
            partitions: vec![common::fetch_partition(0, offset)],
            ..Default::default()
        }],
        ..Default::default()
    }
}

async fn produce(c: &mut Client, topic: &str, acks: i16, values: &[&[u8]]) -> (i16, i64) {
    let ResponseBody::Produce(r) = c.call(9, produce_req(topic, 0, acks, batch(values))).await
    else {
        panic!()
    };
    let p = &r.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

#[tokio::test]
async fn api_versions_answers_and_unknown_version_gets_v0_unsupported_version() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path()).await;
    let mut c = Client::connect(&b).await;
    let ResponseBody::ApiVersions(r) = c.call(3, ApiVersionsRequest::default()).await else {
        panic!()
    };
    assert_eq!(r.error_code, 0);
    for key in [
        ApiKey::Produce,
        ApiKey::Fetch,
        ApiKey::Metadata,
        ApiKey::ListOffsets,
    ] {
        assert!(
            r.api_keys.iter().any(|k| k.api_key == key as i16),
            "{key:?}"
        );
    }
    // Unknown ApiVersions version: answered at v0 with UNSUPPORTED_VERSION (35).
    let mut raw = BytesMut::new();
    raw.extend_from_slice(&[0, 0, 0, 10, 0, 18, 0x03, 0xe7, 0, 0, 0, 9, 0xff, 0xff]);
    c.stream.write_all(&raw).await.unwrap();
    let ResponseBody::ApiVersions(r) = c.recv(ApiKey::ApiVersions, 0).await.unwrap() else {
        panic!()
    };
    assert_eq!(r.error_code, 35);
    assert!(r.api_keys.iter().any(|k| k.api_key == 18));
    b.shutdown().await;
}

#[tokio::test]
async fn produce_assigns_offsets_from_the_leo_and_fetch_reads_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path()).await;
    let mut c = Client::connect(&b).await;
    create_topic(&mut c, "orders", 1).await;
    assert_eq!(produce(&mut c, "orders", 1, &[b"a", b"b"]).await, (0, 0));
    assert_eq!(produce(&mut c, "orders", -1, &[b"c"]).await, (0, 2));
    let ResponseBody::Fetch(r) = c.call(12, fetch_req("orders", 0, 0, 1)).await else {
        panic!()
    };
    let p = &r.responses[0].partitions[0];
    assert_eq!((p.error_code, p.high_watermark), (0, 3));
    let records = p.records.clone().unwrap();
    let h = josef_log::BatchHeader::parse(&records).unwrap();
    assert_eq!(h.base_offset, 0);
    b.shutdown().await;
}

#[tokio::test]
async fn produce_to_an_unknown_topic_is_unknown_topic_or_partition() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path()).await;
    let mut c = Client::connect(&b).await;
    let (code, base) = produce(&mut c, "nope", 1, &[b"x"]).await;
    assert_eq!((code, base), (3, -1));
    b.shutdown().await;
}

#[tokio::test]
async fn acks_zero_gets_no_response_and_the_next_request_is_answered() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path()).await;
    let mut c = Client::connect(&b).await;
    create_topic(&mut c, "fire", 1).await;
    c.send(9, produce_req("fire", 0, 0, batch(&[b"x"])).into())
        .await;
    // The next response on the connection is the metadata answer, not a produce answer.
    let ResponseBody::Metadata(m) = c.call(12, MetadataRequest::default()).await else {
        panic!()
    };
    assert!(m.topics.is_empty() || m.topics.iter().any(|t| t.name.as_deref() == Some("fire")));
    b.shutdown().await;
}

#[tokio::test]
async fn parked_fetch_wakes_as_soon_as_data_is_appended() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path()).await;
    let mut consumer = Client::connect(&b).await;
    let mut producer = Client::connect(&b).await;
    create_topic(&mut consumer, "wake", 1).await;
    consumer
        .send(12, fetch_req("wake", 0, 10_000, 1).into())
        .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let t0 = Instant::now();
    assert_eq!(produce(&mut producer, "wake", 1, &[b"now"]).await.0, 0);
    let ResponseBody::Fetch(r) = consumer.recv(ApiKey::Fetch, 12).await.unwrap() else {
        panic!()
    };
    let waited = t0.elapsed();
    assert!(
        waited < Duration::from_millis(500),
        "fetch woke after {waited:?}"
    );
    assert!(!r.responses[0].partitions[0]
        .records
        .as_ref()
        .unwrap()
        .is_empty());
    b.shutdown().await;
}

#[tokio::test]
async fn fetch_with_max_wait_returns_empty_after_the_wait() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path()).await;
    let mut c = Client::connect(&b).await;
    create_topic(&mut c, "quiet", 1).await;
    let t0 = Instant::now();
    let ResponseBody::Fetch(r) = c.call(12, fetch_req("quiet", 0, 200, 1)).await else {
        panic!()
    };
    assert!(t0.elapsed() >= Duration::from_millis(180));
    assert!(r.responses[0].partitions[0]
        .records
        .as_ref()
        .unwrap()
        .is_empty());
    b.shutdown().await;
}

#[tokio::test]
async fn fetch_out_of_range_is_offset_out_of_range() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path()).await;
    let mut c = Client::connect(&b).await;
    create_topic(&mut c, "range", 1).await;
    let ResponseBody::Fetch(r) = c.call(12, fetch_req("range", 5, 100, 1)).await else {
        panic!()
    };
    assert_eq!(r.responses[0].partitions[0].error_code, 1);
    b.shutdown().await;
}

#[tokio::test]
async fn metadata_auto_creates_a_named_topic_and_reports_this_node() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path()).await;
    let mut c = Client::connect(&b).await;
    let req = MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            name: Some("auto".into()),
            ..Default::default()
        }]),
        allow_auto_topic_creation: true,
        ..Default::default()
    };
    let ResponseBody::Metadata(m) = c.call(12, req).await else {
        panic!()
    };
    assert_eq!(m.brokers.len(), 1);
    assert_eq!(m.brokers[0].port, i32::from(b.listeners()[0].addr.port()));
    assert_eq!(m.controller_id, 1);
    assert_eq!(m.topics[0].error_code, 0);
    assert_eq!(m.topics[0].partitions.len(), 1);
    assert_eq!(m.topics[0].partitions[0].leader_id, 1);
    b.shutdown().await;
}

#[tokio::test]
async fn list_offsets_earliest_and_latest() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path()).await;
    let mut c = Client::connect(&b).await;
    create_topic(&mut c, "lo", 1).await;
    produce(&mut c, "lo", 1, &[b"a", b"b", b"c"]).await;
    for (ts, want) in [(-2i64, 0i64), (-1, 3)] {
        let req = ListOffsetsRequest {
            replica_id: -1,
            topics: vec![ListOffsetsTopic {
                name: "lo".into(),
                partitions: vec![ListOffsetsPartition {
                    partition_index: 0,
                    timestamp: ts,
                    current_leader_epoch: -1,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let ResponseBody::ListOffsets(r) = c.call(7, req).await else {
            panic!()
        };
        assert_eq!(r.topics[0].partitions[0].offset, want, "timestamp {ts}");
    }
    b.shutdown().await;
}

#[tokio::test]
async fn malformed_frames_close_only_their_connection() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path()).await;
    let mut bad = Client::connect(&b).await;
    bad.stream
        .write_all(&[
            0, 0, 0, 16, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ])
        .await
        .unwrap();
    assert!(bad.closed().await);
    let mut huge = Client::connect(&b).await;
    huge.stream
        .write_all(&0x7fff_ffffi32.to_be_bytes())
        .await
        .unwrap();
    assert!(huge.closed().await);
    let mut good = Client::connect(&b).await;
    let ResponseBody::ApiVersions(r) = good.call(0, ApiVersionsRequest::default()).await else {
        panic!()
    };
    assert_eq!(r.error_code, 0);
    b.shutdown().await;
}

#[tokio::test]
async fn data_survives_a_graceful_restart() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path()).await;
    let mut c = Client::connect(&b).await;
    create_topic(&mut c, "keep", 1).await;
    produce(&mut c, "keep", -1, &[b"1", b"2"]).await;
    drop(c);
    b.shutdown().await;
    let b = start(dir.path()).await;
    let mut c = Client::connect(&b).await;
    assert_eq!(produce(&mut c, "keep", -1, &[b"3"]).await, (0, 2));
    b.shutdown().await;
}

fn join_req(member_id: &str) -> JoinGroupRequest {
    JoinGroupRequest {
        group_id: "g1".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 10_000,
        member_id: member_id.into(),
        protocol_type: "consumer".into(),
        protocols: vec![
            josef_protocol::messages::join_group_request::JoinGroupRequestProtocol {
                name: "range".into(),
                metadata: Bytes::from_static(b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"),
                ..Default::default()
            },
        ],
        ..Default::default()
    }
}

#[tokio::test]
async fn a_single_member_group_joins_syncs_and_its_offsets_survive_a_restart() {
    use josef_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use josef_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path()).await;
    let mut c = Client::connect(&b).await;
    create_topic(&mut c, "gt", 1).await;
    // v5: the first join is answered MEMBER_ID_REQUIRED (79) with an id to rejoin with.
    let ResponseBody::JoinGroup(j) = c.call(5, join_req("")).await else {
        panic!()
    };
    assert_eq!(j.error_code, 79);
    let ResponseBody::JoinGroup(j) = c.call(5, join_req(&j.member_id)).await else {
        panic!()
    };
    assert_eq!(j.error_code, 0);
    assert_eq!(j.leader, j.member_id);
    let sync = SyncGroupRequest {
        group_id: "g1".into(),
        generation_id: j.generation_id,
        member_id: j.member_id.clone(),
        assignments: vec![
            josef_protocol::messages::sync_group_request::SyncGroupRequestAssignment {
                member_id: j.member_id.clone(),
                assignment: Bytes::from_static(b"assignment"),
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let ResponseBody::SyncGroup(s) = c.call(3, sync).await else {
        panic!()
    };
    assert_eq!((s.error_code, &s.assignment[..]), (0, &b"assignment"[..]));
    let commit = OffsetCommitRequest {
        group_id: "g1".into(),
        generation_id_or_member_epoch: j.generation_id,
        member_id: j.member_id.clone(),
        retention_time_ms: -1,
        topics: vec![OffsetCommitRequestTopic {
            name: "gt".into(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: 42,
                committed_leader_epoch: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::OffsetCommit(r) = c.call(7, commit).await else {
        panic!()
    };
    assert_eq!(r.topics[0].partitions[0].error_code, 0);
    drop(c);
    b.shutdown().await;
    let b = start(dir.path()).await;
    let mut c = Client::connect(&b).await;
    let fetch = OffsetFetchRequest {
        group_id: "g1".into(),
        topics: Some(vec![OffsetFetchRequestTopic {
            name: "gt".into(),
            partition_indexes: josef_protocol::smallvec![0],
            ..Default::default()
        }]),
        ..Default::default()
    };
    let ResponseBody::OffsetFetch(r) = c.call(5, fetch).await else {
        panic!()
    };
    assert_eq!(r.topics[0].partitions[0].committed_offset, 42);
    b.shutdown().await;
}

#[tokio::test]
async fn an_aborted_transaction_is_listed_for_read_committed_and_moves_the_lso() {
    use josef_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path()).await;
    let mut c = Client::connect(&b).await;
    create_topic(&mut c, "tx", 1).await;
    let ip = common::init_producer_id(&mut c, 3, "t1").await;
    assert_eq!(ip.error_code, 0);
    let add = AddPartitionsToTxnRequest {
        v3_and_below_transactional_id: "t1".into(),
        v3_and_below_producer_id: ip.producer_id,
        v3_and_below_producer_epoch: ip.producer_epoch,
        v3_and_below_topics: vec![AddPartitionsToTxnTopic {
            name: "tx".into(),
            partitions: josef_protocol::smallvec![0],
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::AddPartitionsToTxn(a) = c.call(3, add).await else {
        panic!()
    };
    assert_eq!(
        a.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code,
        0
    );
    let batch = josef_records::RecordBatchBuilder::new()
        .producer(ip.producer_id, ip.producer_epoch, 0)
        .transactional(true)
        .record(1_700_000_000_000, None, Some(b"in-txn"))
        .build_bytes()
        .unwrap();
    let mut req = produce_req("tx", 0, -1, batch);
    req.transactional_id = Some("t1".into());
    let ResponseBody::Produce(p) = c.call(9, req).await else {
        panic!()
    };
    assert_eq!(p.responses[0].partition_responses[0].error_code, 0);
    // Open transaction: the LSO stays at its first offset.
    let mut f = fetch_req("tx", 0, 0, 1);
    f.isolation_level = 1;
    let ResponseBody::Fetch(r) = c.call(12, f.clone()).await else {
        panic!()
    };
    assert_eq!(r.responses[0].partitions[0].last_stable_offset, 0);
    let end = EndTxnRequest {
        transactional_id: "t1".into(),
        producer_id: ip.producer_id,
        producer_epoch: ip.producer_epoch,
        committed: false,
        ..Default::default()
    };
    let ResponseBody::EndTxn(e) = c.call(3, end).await else {
        panic!()
    };
    assert_eq!(e.error_code, 0);
    let ResponseBody::Fetch(r) = c.call(12, f).await else {
        panic!()
    };
    let part = &r.responses[0].partitions[0];
    assert_eq!(part.last_stable_offset, 2, "data + abort marker");
    let aborted = part.aborted_transactions.as_ref().unwrap();
    assert_eq!(aborted.len(), 1);
    assert_eq!(
        (aborted[0].producer_id, aborted[0].first_offset),
        (ip.producer_id, 0)
    );
    b.shutdown().await;
}

/// Kafka reports a single broker's `broker.rack` as it does a cluster node's: in Metadata's and
/// DescribeCluster's broker list (librdkafka's `client.rack` fetch-from-follower and rack-aware
/// assignors read it there).
#[tokio::test]
async fn a_single_node_reports_its_broker_rack_in_metadata_and_describe_cluster() {
    for rack in [Some("r1"), None] {
        let dir = tempfile::tempdir().unwrap();
        let props: Vec<(&str, &str)> = rack.map(|r| ("broker.rack", r)).into_iter().collect();
        let b = start_with(dir.path(), &props).await;
        let mut c = Client::connect(&b).await;
        let ResponseBody::Metadata(m) = c.call(12, MetadataRequest::default()).await else {
            panic!()
        };
        assert_eq!(m.brokers.len(), 1);
        assert_eq!(m.brokers[0].rack.as_deref(), rack, "Metadata");
        let ResponseBody::DescribeCluster(d) = c
            .call(
                0,
                DescribeClusterRequest {
                    endpoint_type: 1,
                    ..Default::default()
                },
            )
            .await
        else {
            panic!()
        };
        assert_eq!(d.brokers.len(), 1);
        assert_eq!(d.brokers[0].rack.as_deref(), rack, "DescribeCluster");
        b.shutdown().await;
    }
}
