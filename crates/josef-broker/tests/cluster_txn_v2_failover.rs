//! Transactions v2 across a transaction coordinator's crash, spoken raw: three nodes, one
//! `__transaction_state` partition, two transactional ids it coordinates. Each opens a transaction
//! with Produce v12 on every partition of `t` (no AddPartitionsToTxn), then the coordinator's node
//! is killed with kill -9. The new leader of `__transaction_state` loads both:
//! - `tx-commit`'s producer completes its transaction with EndTxn v5 at the new coordinator and
//!   goes on with the bumped epoch it is answered (another committed transaction);
//! - `tx-timeout`'s transaction (3 s timeout) is aborted by the coordinator with its epoch
//!   bumped: the old epoch cannot end it, and the producer goes on after InitProducerId.
//!
//! read_committed then sees exactly the committed records on every partition, and nothing holds
//! an LSO back. The markers written after the failover carry the new coordinator epoch (the
//! `__transaction_state` partition's leader epoch), so a marker of the deposed coordinator's
//! epoch is refused TRANSACTION_COORDINATOR_FENCED by the partition leaders.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use josef_protocol::messages::create_topics_request::CreatableTopic;
use josef_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use josef_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use josef_protocol::messages::*;
use josef_protocol::{ErrorCode, RequestBody, ResponseBody};
use josef_records::{Batches, DecompressLimits, EndTxnMarker, RecordBatchBuilder};
use josef_testbed::{client, wait_for, wait_until, Cluster};

const WAIT: Duration = Duration::from_secs(60);
const EVERY: Duration = Duration::from_millis(100);
const PARTITIONS: i32 = 3;
const TXN_STATE: &str = "__transaction_state";

fn call(addr: SocketAddr, version: i16, body: impl Into<RequestBody>) -> Option<ResponseBody> {
    client::call(addr, version, body.into()).ok()
}

/// Calls until `f` accepts the answer (bounded by [`WAIT`]); the accepted value.
fn until<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    wait_for(WAIT, EVERY, f).unwrap_or_else(|| panic!("{what}: no answer within {WAIT:?}"))
}

/// Codes a client retries while a coordinator or a leader moves.
/// One transactional batch of `id` with value `value` on `t-<partition>`, Produce v12, at `addr`.
#[allow(clippy::too_many_arguments)]
fn produce(
    addr: SocketAddr,
    id: &str,
    pid: i64,
    epoch: i16,
    seq: i32,
    partition: i32,
    value: &str,
) -> Option<i16> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let batch = RecordBatchBuilder::new()
        .producer(pid, epoch, seq)
        .transactional(true)
        .record(now, None, Some(value.as_bytes()))
        .build_bytes()
        .unwrap();
    let req = ProduceRequest {
        transactional_id: Some(id.into()),
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

/// EndTxn v5 at `addr`: (error, producer id, epoch).
fn end_txn(
    addr: SocketAddr,
    id: &str,
    pid: i64,
    epoch: i16,
    commit: bool,
) -> Option<(i16, i64, i16)> {
    let req = EndTxnRequest {
        transactional_id: id.into(),
        producer_id: pid,
        producer_epoch: epoch,
        committed: commit,
        ..Default::default()
    };
    match call(addr, 5, req)? {
        ResponseBody::EndTxn(r) => Some((r.error_code, r.producer_id, r.producer_epoch)),
        _ => None,
    }
}

/// What a read_committed consumer of `t-<partition>` gets from its leader at `addr`: the values of
/// the committed records, (LSO, HW), and the coordinator epoch of each transaction marker by
/// producer id (the last one seen).
struct Committed {
    values: Vec<String>,
    lso: i64,
    hw: i64,
    marker_epochs: BTreeMap<i64, i32>,
}

fn read_committed(addr: SocketAddr, partition: i32) -> Option<Committed> {
    let p = client::fetch_read_committed(addr, "t", partition)?;
    // The consumer's rule: a producer's batches from an aborted transaction's first offset up to
    // its abort marker are skipped.
    let mut aborted: Vec<(i64, i64)> = p
        .aborted_transactions
        .iter()
        .flatten()
        .map(|a| (a.first_offset, a.producer_id))
        .collect();
    aborted.sort();
    let mut skipping: BTreeSet<i64> = BTreeSet::new();
    let mut out = Committed {
        values: Vec::new(),
        lso: p.last_stable_offset,
        hw: p.high_watermark,
        marker_epochs: BTreeMap::new(),
    };
    let limits = DecompressLimits::default();
    for batch in Batches::new(p.records.clone().unwrap_or_default()) {
        let batch = batch.ok()?;
        let h = *batch.header();
        while let Some(&(first, pid)) = aborted.first() {
            if first > h.last_offset() {
                break;
            }
            skipping.insert(pid);
            aborted.remove(0);
        }
        let records: Vec<_> = batch
            .records(&limits)
            .ok()?
            .collect::<Result<_, _>>()
            .ok()?;
        if h.is_control() {
            let r = records.first()?;
            let marker = EndTxnMarker::parse(r.key.as_deref()?, r.value.as_deref()?).ok()?;
            out.marker_epochs
                .insert(h.producer_id, marker.coordinator_epoch);
            skipping.remove(&h.producer_id);
            continue;
        }
        if skipping.contains(&h.producer_id) {
            continue;
        }
        for r in records {
            out.values
                .push(String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into());
        }
    }
    Some(out)
}

#[test]
fn a_v2_transaction_open_when_its_coordinator_is_killed_is_completed_or_aborted_by_the_next() {
    let mut cluster = Cluster::builder()
        .combined(3)
        .property("transaction.state.log.num.partitions", 1)
        .property("transaction.state.log.replication.factor", 3)
        .property("transaction.state.log.min.isr", 2)
        .property(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            200,
        )
        .start()
        .unwrap();
    let ids: Vec<i32> = cluster.nodes().map(|n| n.id()).collect();
    let addrs: BTreeMap<i32, SocketAddr> = cluster
        .nodes()
        .map(|n| (n.id(), n.client_addr().unwrap()))
        .collect();
    let addr = |id: i32| addrs[&id];
    let created = call(
        addr(ids[0]),
        5,
        CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: "t".into(),
                num_partitions: PARTITIONS,
                replication_factor: 3,
                ..Default::default()
            }],
            timeout_ms: 30_000,
            ..Default::default()
        },
    );
    assert!(matches!(created, Some(ResponseBody::CreateTopics(_))));

    // Both ids live on the one __transaction_state partition: one coordinator.
    let old = until("FindCoordinator", || {
        client::transaction_coordinator(addr(ids[0]), "tx-commit")
    });
    assert_eq!(
        until("FindCoordinator", || client::transaction_coordinator(
            addr(ids[0]),
            "tx-timeout"
        )),
        old
    );
    let (_, old_epoch) = until("__transaction_state leader", || {
        client::partition_leader(addr(ids[0]), TXN_STATE, 0).filter(|(l, _)| *l == old)
    });
    let producer = |id: &str, timeout_ms: i32| {
        until("InitProducerId", || {
            client::init_producer_id(addr(old), id, timeout_ms).filter(|(e, _, _)| *e == 0)
        })
    };
    let (_, pc, c0) = producer("tx-commit", 60_000);
    let (_, pt, t0) = producer("tx-timeout", 3_000);

    // Both open a transaction on every partition with Produce v12 (the leaders add them).
    for p in 0..PARTITIONS {
        for (id, pid, epoch, value) in [("tx-commit", pc, c0, "A"), ("tx-timeout", pt, t0, "B")] {
            let code = until("Produce v12", || {
                let (l, _) = client::partition_leader(addr(old), "t", p)?;
                produce(addr(l), id, pid, epoch, 0, p, &format!("{value}{p}"))
                    .filter(|c| !client::txn_retriable(*c))
            });
            assert_eq!(code, 0, "{id} on t-{p}");
        }
    }

    // kill -9 of the coordinator with both transactions open.
    cluster.node_mut(old).unwrap().kill9().unwrap();
    let alive: Vec<i32> = ids.iter().copied().filter(|&i| i != old).collect();
    let any = addr(alive[0]);
    let new = until("a new coordinator", || {
        client::transaction_coordinator(any, "tx-commit").filter(|&n| n != old)
    });
    let (_, new_epoch) = until("__transaction_state leader epoch", || {
        client::partition_leader(any, TXN_STATE, 0).filter(|(l, _)| *l == new)
    });
    assert!(new_epoch > old_epoch, "{new_epoch} after {old_epoch}");

    // tx-commit's producer completes its transaction at the new coordinator (it loaded the
    // partitions the leaders added) and is answered the bumped epoch.
    let (err, pid, c1) = until("EndTxn v5 commit", || {
        end_txn(addr(new), "tx-commit", pc, c0, true).filter(|(e, _, _)| !client::txn_retriable(*e))
    });
    assert_eq!((err, pid, c1), (0, pc, c0 + 1), "tx-commit");

    // tx-timeout's transaction is aborted by the new coordinator at its timeout: every LSO comes
    // up to its HW once both transactions have their markers.
    for p in 0..PARTITIONS {
        assert!(
            wait_until(WAIT, EVERY, || {
                client::partition_leader(any, "t", p)
                    .and_then(|(l, _)| read_committed(addr(l), p))
                    .is_some_and(|c| {
                        c.lso == c.hw
                            && c.marker_epochs.contains_key(&pt)
                            && c.marker_epochs.contains_key(&pc)
                    })
            }),
            "t-{p}: a transaction is never ended"
        );
    }
    // The epoch of tx-timeout was bumped: the producer cannot end the transaction with the old
    // one.
    let (err, _, _) = until("EndTxn v5 at the aborted epoch", || {
        end_txn(addr(new), "tx-timeout", pt, t0, true)
            .filter(|(e, _, _)| !client::txn_retriable(*e))
    });
    assert!(
        err == ErrorCode::ProducerFenced.code() || err == ErrorCode::InvalidProducerEpoch.code(),
        "{err}"
    );

    // tx-commit's old epoch is fenced on the partitions; the bumped one writes the next
    // transaction.
    let (l0, _) = until("leader of t-0", || client::partition_leader(any, "t", 0));
    assert_eq!(
        until("Produce at the old epoch", || {
            produce(addr(l0), "tx-commit", pc, c0, 1, 0, "X").filter(|c| !client::txn_retriable(*c))
        }),
        ErrorCode::InvalidProducerEpoch.code()
    );
    for p in 0..PARTITIONS {
        let code = until("Produce v12 at the bumped epoch", || {
            let (l, _) = client::partition_leader(any, "t", p)?;
            produce(addr(l), "tx-commit", pc, c1, 0, p, &format!("D{p}"))
                .filter(|c| !client::txn_retriable(*c))
        });
        assert_eq!(code, 0, "tx-commit D on t-{p}");
    }
    let (err, _, c2) = until("EndTxn v5 commit", || {
        end_txn(addr(new), "tx-commit", pc, c1, true).filter(|(e, _, _)| !client::txn_retriable(*e))
    });
    assert_eq!((err, c2), (0, c1 + 1));

    // tx-timeout's producer goes on after InitProducerId, with an epoch above the bumped one.
    let (_, pt2, t1) = until("InitProducerId", || {
        client::init_producer_id(addr(new), "tx-timeout", 3_000).filter(|(e, _, _)| *e == 0)
    });
    assert_eq!(pt2, pt);
    assert!(t1 > t0 + 1, "{t1} after the abort of {t0}");
    let code = until("Produce v12 after InitProducerId", || {
        let (l, _) = client::partition_leader(any, "t", 1)?;
        produce(addr(l), "tx-timeout", pt, t1, 0, 1, "C1").filter(|c| !client::txn_retriable(*c))
    });
    assert_eq!(code, 0);
    let (err, _, _) = until("EndTxn v5 commit", || {
        end_txn(addr(new), "tx-timeout", pt, t1, true)
            .filter(|(e, _, _)| !client::txn_retriable(*e))
    });
    assert_eq!(err, 0);

    // Exactly the committed records, in order, and no LSO held back.
    for p in 0..PARTITIONS {
        let mut want = vec![format!("A{p}"), format!("D{p}")];
        if p == 1 {
            want.push("C1".into());
        }
        let seen = || {
            client::partition_leader(any, "t", p)
                .and_then(|(l, _)| read_committed(addr(l), p))
                .map(|c| (c.values, c.lso == c.hw))
        };
        assert!(
            wait_until(WAIT, EVERY, || seen() == Some((want.clone(), true))),
            "t-{p}: {:?}",
            seen()
        );
    }

    // The markers written since the failover carry the new coordinator epoch, and a marker of the
    // deposed coordinator's epoch is fenced by the leader: on every partition, so both the
    // in-process path (a partition the new coordinator leads) and the inter-broker one (the others)
    // are covered.
    let mut leaders = BTreeSet::new();
    for p in 0..PARTITIONS {
        let (l, _) = until("leader", || client::partition_leader(any, "t", p));
        leaders.insert(l);
        let c = until("read", || read_committed(addr(l), p));
        assert_eq!(
            c.marker_epochs.get(&pc),
            Some(&new_epoch),
            "t-{p} on {l}, coordinator {new}: {:?}",
            c.marker_epochs
        );
        let stale = WriteTxnMarkersRequest {
            markers: vec![WritableTxnMarker {
                producer_id: pc,
                producer_epoch: c2,
                transaction_result: true,
                coordinator_epoch: old_epoch,
                topics: vec![WritableTxnMarkerTopic {
                    name: "t".into(),
                    partition_indexes: [p].into_iter().collect(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let ResponseBody::WriteTxnMarkers(r) = call(addr(l), 1, stale).unwrap() else {
            panic!()
        };
        let code = r.markers[0].topics[0].partitions[0].error_code;
        assert_eq!(
            code,
            ErrorCode::TransactionCoordinatorFenced.code(),
            "t-{p}: {r:?}"
        );
    }
    assert!(
        leaders.iter().any(|&l| l != new),
        "some partition is led away from the coordinator: {leaders:?}"
    );
}
