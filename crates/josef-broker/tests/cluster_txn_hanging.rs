//! A transaction left open by a crash is ended by the next coordinator without any client asking
//! (issue #17; Kafka's `TransactionStateManager` loads a `__transaction_state` partition when its
//! leadership arrives, then aborts what times out). Three nodes, one `__transaction_state`
//! partition: a producer opens a transaction with a short `transaction.timeout.ms` on a data
//! partition led by another node, then the coordinator's node is killed with kill -9 and nothing
//! more is ever sent for that transactional id (its producer is gone too). The new leader of
//! `__transaction_state` must load it on election and abort the transaction at its timeout:
//! otherwise it hangs and holds the data partition's LSO back forever, and every read_committed
//! consumer stalls.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use josef_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use josef_protocol::messages::*;
use josef_protocol::{RequestBody, ResponseBody};
use josef_records::{Batches, RecordBatchBuilder};
use josef_testbed::{client, wait_for, Cluster};

const WAIT: Duration = Duration::from_secs(60);
const EVERY: Duration = Duration::from_millis(100);
const TXN_STATE: &str = "__transaction_state";
const TXN_TIMEOUT_MS: i32 = 3_000;

fn call(addr: SocketAddr, version: i16, body: impl Into<RequestBody>) -> Option<ResponseBody> {
    client::call(addr, version, body.into()).ok()
}

/// Calls until `f` accepts the answer (bounded by [`WAIT`]); the accepted value.
fn until<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    wait_for(WAIT, EVERY, f).unwrap_or_else(|| panic!("{what}: no answer within {WAIT:?}"))
}

/// One transactional batch of `id` on `t-0`, Produce v12 (the leader adds the partition to the
/// transaction), at `addr`.
fn produce(addr: SocketAddr, id: &str, pid: i64, epoch: i16, seq: i32) -> Option<i16> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let batch = RecordBatchBuilder::new()
        .producer(pid, epoch, seq)
        .transactional(true)
        .record(now, None, Some(b"open".as_slice()))
        .build_bytes()
        .unwrap();
    let req = ProduceRequest {
        transactional_id: Some(id.into()),
        acks: -1,
        timeout_ms: 10_000,
        topic_data: vec![TopicProduceData {
            name: "t".into(),
            partition_data: vec![PartitionProduceData {
                index: 0,
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

/// What a read_committed fetch of `t-0` from `addr` sees: (LSO, HW, whether a control batch of
/// producer `pid` is in the log).
fn read_committed(addr: SocketAddr, pid: i64) -> Option<(i64, i64, bool)> {
    let p = client::fetch_read_committed(addr, "t", 0)?;
    let mut marker = false;
    for batch in Batches::new(p.records.clone().unwrap_or_default()) {
        let h = *batch.ok()?.header();
        marker |= h.is_control() && h.producer_id == pid;
    }
    Some((p.last_stable_offset, p.high_watermark, marker))
}

#[test]
fn an_open_transaction_whose_coordinator_and_producer_died_is_aborted_by_the_next_coordinator() {
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

    let id = "tx-hanging";
    let old = until("FindCoordinator", || {
        client::transaction_coordinator(addr(ids[0]), id)
    });
    let (_, old_epoch) = until("__transaction_state leader", || {
        client::partition_leader(addr(ids[0]), TXN_STATE, 0).filter(|(l, _)| *l == old)
    });
    // t-0 is led by another node, which outlives the coordinator: its LSO is what must move.
    let mut replicas: Vec<i32> = ids.iter().copied().filter(|&i| i != old).collect();
    let data_leader = replicas[0];
    replicas.push(old);
    let created = client::create_topic_assigned(addr(data_leader), "t", &replicas);
    assert!(created.is_ok(), "CreateTopics: {created:?}");
    until("t-0 led by its first replica", || {
        client::partition_leader(addr(data_leader), "t", 0).filter(|(l, _)| *l == data_leader)
    });

    let (_, pid, epoch) = until("InitProducerId", || {
        client::init_producer_id(addr(old), id, TXN_TIMEOUT_MS).filter(|(e, _, _)| *e == 0)
    });
    let code = until("Produce v12", || {
        produce(addr(data_leader), id, pid, epoch, 0).filter(|c| !client::txn_retriable(*c))
    });
    assert_eq!(code, 0);
    let (lso, hw, _) = until("read_committed", || read_committed(addr(data_leader), pid));
    assert!(
        lso < hw,
        "the open transaction holds the LSO back: {lso} < {hw}"
    );

    // The coordinator dies with the transaction open; its producer is never heard from again.
    cluster.node_mut(old).unwrap().kill9().unwrap();
    let (new, new_epoch) = until("a new __transaction_state leader", || {
        client::partition_leader(addr(data_leader), TXN_STATE, 0).filter(|(l, _)| *l != old)
    });
    assert!(new_epoch > old_epoch, "{new_epoch} after {old_epoch}");

    // Aborted by the new coordinator at its timeout: the marker is written, the LSO reaches the HW.
    let ended = wait_for(WAIT, EVERY, || {
        read_committed(addr(data_leader), pid).filter(|&(lso, hw, marker)| marker && lso == hw)
    });
    assert!(
        ended.is_some(),
        "the transaction still hangs {WAIT:?} after its coordinator {old} died (new coordinator \
         {new}): t-0 read_committed {:?}",
        read_committed(addr(data_leader), pid)
    );
}
