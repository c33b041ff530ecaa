//! Transactions v2 across brokers, spoken raw (no installed client runs it): three nodes, a
//! transactional producer that never sends AddPartitionsToTxn writes with Produce v12 to a
//! partition led by a broker other than its transaction coordinator, so the leader adds the
//! partition over the inter-broker listener (AddPartitionsToTxn v5); EndTxn v5 commits with the
//! epoch bumped, the marker reaches that leader, read_committed sees the record, and the old
//! epoch is fenced there afterwards; TxnOffsetCommit v5 at the group coordinator adds the offsets
//! partition to the next transaction the same way. And the `transaction.version` feature: a new cluster starts
//! at 2, and UpdateFeatures lowering it withdraws the v2 API versions from every node.

use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use josef_protocol::messages::create_topics_request::CreatableTopic;
use josef_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use josef_protocol::messages::*;
use josef_protocol::{ErrorCode, RequestBody, ResponseBody};
use josef_records::RecordBatchBuilder;
use josef_testbed::{client, wait_for, wait_until, Cluster};

const WAIT: Duration = Duration::from_secs(60);
const EVERY: Duration = Duration::from_millis(100);

fn call(addr: SocketAddr, version: i16, body: impl Into<RequestBody>) -> Option<ResponseBody> {
    client::call(addr, version, body.into()).ok()
}

/// Calls until `f` accepts the answer (bounded by [`WAIT`]); the accepted value.
fn until<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    wait_for(WAIT, EVERY, f).unwrap_or_else(|| panic!("{what}: no answer within {WAIT:?}"))
}

fn produce(addr: SocketAddr, pid: i64, epoch: i16, seq: i32, partition: i32) -> Option<i16> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let batch = RecordBatchBuilder::new()
        .producer(pid, epoch, seq)
        .transactional(true)
        .record(now, None, Some(b"v"))
        .build_bytes()
        .unwrap();
    let req = ProduceRequest {
        transactional_id: Some("tx".into()),
        acks: -1,
        timeout_ms: 10_000,
        topic_data: vec![TopicProduceData {
            name: "t".into(),
            partition_data: vec![PartitionProduceData {
                index: partition,
                records: Some(batch),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    match call(addr, 12, req)? {
        ResponseBody::Produce(r) => Some(r.responses[0].partition_responses[0].error_code),
        _ => None,
    }
}

fn lso_hw(addr: SocketAddr, partition: i32) -> Option<(i64, i64)> {
    let p = client::fetch_read_committed(addr, "t", partition)?;
    Some((p.last_stable_offset, p.high_watermark))
}

/// (EndTxn max version, finalized `transaction.version`) in the ApiVersions of `addr`.
fn txn_versions(addr: SocketAddr) -> Option<(i16, Option<i16>)> {
    let ResponseBody::ApiVersions(r) = call(addr, 3, ApiVersionsRequest::default())? else {
        return None;
    };
    let end_txn = r
        .api_keys
        .iter()
        .find(|k| k.api_key == josef_protocol::ApiKey::EndTxn as i16)?
        .max_version;
    let level = r
        .finalized_features
        .iter()
        .find(|f| f.name.as_str() == "transaction.version")
        .map(|f| f.max_version_level);
    Some((end_txn, level))
}

#[test]
fn a_v2_producer_writes_to_a_partition_led_away_from_its_coordinator() {
    let cluster = Cluster::builder()
        .combined(3)
        .property("transaction.state.log.num.partitions", 1)
        .property("transaction.state.log.replication.factor", 3)
        .start()
        .unwrap();
    let addr = |id: i32| cluster.node(id).unwrap().client_addr().unwrap();
    let any = addr(1);
    for id in 1..=3 {
        assert_eq!(
            txn_versions(addr(id)),
            Some((5, Some(2))),
            "node {id} at start"
        );
    }

    // t: three partitions on every node, so some partition is led away from the coordinator.
    let created = call(
        any,
        5,
        CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: "t".into(),
                num_partitions: 3,
                replication_factor: 3,
                ..Default::default()
            }],
            timeout_ms: 30_000,
            ..Default::default()
        },
    );
    assert!(matches!(created, Some(ResponseBody::CreateTopics(_))));

    // Coordinator of "tx" (FindCoordinator v3, key type 1), then InitProducerId there.
    let coordinator = until("FindCoordinator", || {
        match call(
            any,
            3,
            FindCoordinatorRequest {
                key: "tx".into(),
                key_type: 1,
                ..Default::default()
            },
        )? {
            ResponseBody::FindCoordinator(r) if r.error_code == 0 => Some(r.node_id),
            _ => None,
        }
    });
    let (pid, e0) = until("InitProducerId", || {
        match call(
            addr(coordinator),
            5,
            InitProducerIdRequest {
                transactional_id: Some("tx".into()),
                transaction_timeout_ms: 60_000,
                producer_id: -1,
                producer_epoch: -1,
                ..Default::default()
            },
        )? {
            ResponseBody::InitProducerId(r) if r.error_code == 0 => {
                Some((r.producer_id, r.producer_epoch))
            }
            _ => None,
        }
    });

    // A partition of t led by another broker.
    let (partition, leader) = until("a leader other than the coordinator", || {
        let m = client::metadata(any).ok()?;
        let t = m.topics.iter().find(|t| t.name.as_deref() == Some("t"))?;
        t.partitions
            .iter()
            .find(|p| p.leader_id >= 0 && p.leader_id != coordinator)
            .map(|p| (p.partition_index, p.leader_id))
    });

    // Produce v12 with no AddPartitionsToTxn: the leader adds t-<partition> at the coordinator.
    let code = until("Produce v12", || {
        let c = produce(addr(leader), pid, e0, 0, partition)?;
        let retriable = [
            ErrorCode::NotEnoughReplicas,
            ErrorCode::NotLeaderOrFollower,
            ErrorCode::ConcurrentTransactions,
        ];
        (!retriable.iter().any(|e| e.code() == c)).then_some(c)
    });
    assert_eq!(
        code, 0,
        "t-{partition} on {leader}, coordinator {coordinator}"
    );
    assert_eq!(until("open", || lso_hw(addr(leader), partition)), (0, 1));

    // EndTxn v5 commit: the new epoch in the answer; the marker lands on the other leader.
    let (err, pid1, e1) = until("EndTxn v5", || {
        match call(
            addr(coordinator),
            5,
            EndTxnRequest {
                transactional_id: "tx".into(),
                producer_id: pid,
                producer_epoch: e0,
                committed: true,
                ..Default::default()
            },
        )? {
            ResponseBody::EndTxn(r) if r.error_code != ErrorCode::ConcurrentTransactions.code() => {
                Some((r.error_code, r.producer_id, r.producer_epoch))
            }
            _ => None,
        }
    });
    assert_eq!((err, pid1, e1), (0, pid, e0 + 1));
    assert!(
        wait_until(WAIT, EVERY, || lso_hw(addr(leader), partition)
            == Some((2, 2))),
        "the commit marker reaches t-{partition}: {:?}",
        lso_hw(addr(leader), partition)
    );

    // The ended transaction's epoch is fenced on that leader.
    assert_eq!(
        produce(addr(leader), pid, e0, 1, partition),
        Some(ErrorCode::InvalidProducerEpoch.code())
    );
    // The new epoch opens the next transaction there.
    assert_eq!(
        until("Produce v12 at the new epoch", || {
            let c = produce(addr(leader), pid, e1, 0, partition)?;
            (c != ErrorCode::ConcurrentTransactions.code()).then_some(c)
        }),
        0
    );

    // Offsets in that transaction without AddOffsetsToTxn: TxnOffsetCommit v5 at the group's
    // coordinator adds its __consumer_offsets partition at the transaction coordinator.
    let group_coordinator = until("FindCoordinator (group)", || {
        match call(
            any,
            3,
            FindCoordinatorRequest {
                key: "g".into(),
                key_type: 0,
                ..Default::default()
            },
        )? {
            ResponseBody::FindCoordinator(r) if r.error_code == 0 => Some(r.node_id),
            _ => None,
        }
    });
    let committed = until("TxnOffsetCommit v5", || {
        let req = TxnOffsetCommitRequest {
            transactional_id: "tx".into(),
            group_id: "g".into(),
            producer_id: pid,
            producer_epoch: e1,
            generation_id: -1,
            member_id: "".into(),
            topics: vec![txn_offset_commit_request::TxnOffsetCommitRequestTopic {
                name: "t".into(),
                partitions: vec![txn_offset_commit_request::TxnOffsetCommitRequestPartition {
                    partition_index: partition,
                    committed_offset: 42,
                    committed_leader_epoch: -1,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let ResponseBody::TxnOffsetCommit(r) = call(addr(group_coordinator), 5, req)? else {
            return None;
        };
        let code = r.topics[0].partitions[0].error_code;
        let retriable = [
            ErrorCode::CoordinatorNotAvailable,
            ErrorCode::CoordinatorLoadInProgress,
            ErrorCode::NotCoordinator,
            ErrorCode::ConcurrentTransactions,
        ];
        (!retriable.iter().any(|e| e.code() == code)).then_some(code)
    });
    assert_eq!(committed, 0, "group coordinator {group_coordinator}");
    let (err, _, e2) = until("EndTxn v5 (offsets)", || {
        match call(
            addr(coordinator),
            5,
            EndTxnRequest {
                transactional_id: "tx".into(),
                producer_id: pid,
                producer_epoch: e1,
                committed: true,
                ..Default::default()
            },
        )? {
            ResponseBody::EndTxn(r) if r.error_code != ErrorCode::ConcurrentTransactions.code() => {
                Some((r.error_code, r.producer_id, r.producer_epoch))
            }
            _ => None,
        }
    });
    assert_eq!((err, e2), (0, e1 + 1));
    let offset = || {
        let req = OffsetFetchRequest {
            group_id: "g".into(),
            topics: Some(vec![offset_fetch_request::OffsetFetchRequestTopic {
                name: "t".into(),
                partition_indexes: [partition].into_iter().collect(),
                ..Default::default()
            }]),
            ..Default::default()
        };
        match call(addr(group_coordinator), 5, req)? {
            ResponseBody::OffsetFetch(r) if r.error_code == 0 => {
                Some(r.topics[0].partitions[0].committed_offset)
            }
            _ => None,
        }
    };
    assert!(
        wait_until(WAIT, EVERY, || offset() == Some(42)),
        "the committed offset shows: {:?}",
        offset()
    );

    // Lowered to 1 (a safe downgrade): every node stops offering EndTxn v5.
    let ResponseBody::UpdateFeatures(r) = call(
        any,
        1,
        UpdateFeaturesRequest {
            timeout_ms: 30_000,
            feature_updates: vec![update_features_request::FeatureUpdateKey {
                feature: "transaction.version".into(),
                max_version_level: 1,
                upgrade_type: 2,
                ..Default::default()
            }],
            ..Default::default()
        },
    )
    .unwrap() else {
        panic!()
    };
    assert_eq!(r.error_code, 0, "{r:?}");
    for id in 1..=3 {
        assert!(
            wait_until(WAIT, EVERY, || txn_versions(addr(id)) == Some((4, Some(1)))),
            "node {id}: {:?}",
            txn_versions(addr(id))
        );
    }
}
