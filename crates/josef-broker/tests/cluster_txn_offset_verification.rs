//! KIP-890 part 1 for transactional offset commits across brokers, spoken raw: three nodes, a
//! group whose coordinator is not the transaction coordinator of the producer. A TxnOffsetCommit
//! below v5 that no AddOffsetsToTxn preceded is verified over the inter-broker listener (a
//! verify-only AddPartitionsToTxn) and refused (INVALID_TXN_STATE at v3, TRANSACTION_ABORTABLE
//! at v4) without writing anything to `__consumer_offsets`; after AddOffsetsToTxn the same commit
//! is written and committed with the transaction.

use std::net::SocketAddr;
use std::time::Duration;

use josef_protocol::messages::create_topics_request::CreatableTopic;
use josef_protocol::messages::*;
use josef_protocol::{ErrorCode, RequestBody, ResponseBody};
use josef_testbed::{client, wait_for, wait_until, Cluster};

const WAIT: Duration = Duration::from_secs(60);
const EVERY: Duration = Duration::from_millis(100);
const OFFSETS_PARTITIONS: i32 = 3;

fn call(addr: SocketAddr, version: i16, body: impl Into<RequestBody>) -> Option<ResponseBody> {
    client::call(addr, version, body.into()).ok()
}

/// Calls until `f` accepts the answer (bounded by [`WAIT`]); the accepted value.
fn until<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    wait_for(WAIT, EVERY, f).unwrap_or_else(|| panic!("{what}: no answer within {WAIT:?}"))
}

/// The node FindCoordinator (v3) names for `key` of `key_type` (0 group, 1 transaction).
fn coordinator(any: SocketAddr, key: &str, key_type: i8) -> i32 {
    until("FindCoordinator", || {
        let req = FindCoordinatorRequest {
            key: key.into(),
            key_type,
            ..Default::default()
        };
        match call(any, 3, req)? {
            ResponseBody::FindCoordinator(r) if r.error_code == 0 => Some(r.node_id),
            _ => None,
        }
    })
}

/// TxnOffsetCommit of `offset` on `t-0` at `version`, asked again while the answer is one a
/// client retries (the group or the transaction coordinator still loading or moving).
fn commit(addr: SocketAddr, version: i16, group: &str, pid: i64, epoch: i16, offset: i64) -> i16 {
    until("TxnOffsetCommit", || {
        let req = TxnOffsetCommitRequest {
            transactional_id: "tx".into(),
            group_id: group.into(),
            producer_id: pid,
            producer_epoch: epoch,
            generation_id: -1,
            member_id: "".into(),
            topics: vec![txn_offset_commit_request::TxnOffsetCommitRequestTopic {
                name: "t".into(),
                partitions: vec![txn_offset_commit_request::TxnOffsetCommitRequestPartition {
                    partition_index: 0,
                    committed_offset: offset,
                    committed_leader_epoch: -1,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let ResponseBody::TxnOffsetCommit(r) = call(addr, version, req)? else {
            return None;
        };
        let code = r.topics[0].partitions[0].error_code;
        let retriable = [
            ErrorCode::CoordinatorNotAvailable,
            ErrorCode::CoordinatorLoadInProgress,
            ErrorCode::NotCoordinator,
        ];
        (!retriable.iter().any(|e| e.code() == code)).then_some(code)
    })
}

/// (LSO, HW) of `__consumer_offsets-<partition>` on its leader `addr`.
fn offsets_log(addr: SocketAddr, partition: i32) -> Option<(i64, i64)> {
    let p = client::fetch_read_committed(addr, "__consumer_offsets", partition)?;
    Some((p.last_stable_offset, p.high_watermark))
}

#[test]
fn a_commit_outside_the_transaction_is_refused_by_a_remote_transaction_coordinator() {
    let cluster = Cluster::builder()
        .combined(3)
        .property("transaction.state.log.num.partitions", 1)
        .property("transaction.state.log.replication.factor", 3)
        .property("offsets.topic.num.partitions", OFFSETS_PARTITIONS)
        .property("offsets.topic.replication.factor", 3)
        .start()
        .unwrap();
    let addr = |id: i32| cluster.node(id).unwrap().client_addr().unwrap();
    let any = addr(1);
    let created = call(
        any,
        5,
        CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: "t".into(),
                num_partitions: 1,
                replication_factor: 3,
                ..Default::default()
            }],
            timeout_ms: 30_000,
            ..Default::default()
        },
    );
    assert!(matches!(created, Some(ResponseBody::CreateTopics(_))));

    let txn_coordinator = coordinator(any, "tx", 1);
    let (pid, epoch) = until("InitProducerId", || {
        let req = InitProducerIdRequest {
            transactional_id: Some("tx".into()),
            transaction_timeout_ms: 60_000,
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        };
        match call(addr(txn_coordinator), 4, req)? {
            ResponseBody::InitProducerId(r) if r.error_code == 0 => {
                Some((r.producer_id, r.producer_epoch))
            }
            _ => None,
        }
    });

    // A group coordinated away from the transaction coordinator: the check crosses brokers.
    let (group, group_coordinator) = until("a group coordinated elsewhere", || {
        (0..50).map(|i| format!("g{i}")).find_map(|g| {
            let node = coordinator(any, &g, 0);
            (node != txn_coordinator).then_some((g, node))
        })
    });
    let partition = josef_txn::group_partition_for(&group, OFFSETS_PARTITIONS);
    let gc = addr(group_coordinator);

    // No AddOffsetsToTxn.
    assert_eq!(
        commit(gc, 3, &group, pid, epoch, 7),
        ErrorCode::InvalidTxnState.code(),
        "v3, group on {group_coordinator}, transaction on {txn_coordinator}"
    );
    let before = until("offsets log", || offsets_log(gc, partition));
    assert_eq!(
        commit(gc, 4, &group, pid, epoch, 7),
        ErrorCode::TransactionAbortable.code(),
        "v4"
    );
    assert_eq!(offsets_log(gc, partition), Some(before), "nothing written");
    assert_eq!(before.0, before.1, "nothing holds the LSO back");

    // AddOffsetsToTxn at the transaction coordinator, then the same commit is written.
    let added = until("AddOffsetsToTxn", || {
        let req = AddOffsetsToTxnRequest {
            transactional_id: "tx".into(),
            producer_id: pid,
            producer_epoch: epoch,
            group_id: group.as_str().into(),
            ..Default::default()
        };
        match call(addr(txn_coordinator), 3, req)? {
            ResponseBody::AddOffsetsToTxn(r) => Some(r.error_code),
            _ => None,
        }
    });
    assert_eq!(added, 0);
    assert_eq!(commit(gc, 3, &group, pid, epoch, 7), 0);
    let ended = until("EndTxn", || {
        let req = EndTxnRequest {
            transactional_id: "tx".into(),
            producer_id: pid,
            producer_epoch: epoch,
            committed: true,
            ..Default::default()
        };
        match call(addr(txn_coordinator), 3, req)? {
            ResponseBody::EndTxn(r) => Some(r.error_code),
            _ => None,
        }
    });
    assert_eq!(ended, 0);
    let offset = || {
        let req = OffsetFetchRequest {
            group_id: group.as_str().into(),
            topics: Some(vec![offset_fetch_request::OffsetFetchRequestTopic {
                name: "t".into(),
                partition_indexes: [0].into_iter().collect(),
                ..Default::default()
            }]),
            ..Default::default()
        };
        match call(gc, 5, req)? {
            ResponseBody::OffsetFetch(r) if r.error_code == 0 => {
                Some(r.topics[0].partitions[0].committed_offset)
            }
            _ => None,
        }
    };
    assert!(
        wait_until(WAIT, EVERY, || offset() == Some(7)),
        "the committed offset shows: {:?}",
        offset()
    );
}
