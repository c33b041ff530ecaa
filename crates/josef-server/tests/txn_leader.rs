//! A partition leader's side of transactions: WriteTxnMarkers (api 27) answered per partition,
//! the control batch appended with the coordinator epoch and a marker from a deposed coordinator
//! (a lower coordinator epoch than the last marker's) refused with TRANSACTION_COORDINATOR_FENCED;
//! and KIP-890 verification, where a transactional append the coordinator does not know about is
//! refused so that the partition's LSO never sticks behind it.

mod common;

use bytes::Bytes;
use josef_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use josef_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use josef_protocol::messages::*;
use josef_protocol::{ErrorCode, ResponseBody};
use josef_records::RecordBatchBuilder;

use common::{create_topic, start_with, Client};

/// A single node with `transaction.partition.verification.enable` = `verification` and a topic
/// `t` of four partitions.
async fn start(dir: &std::path::Path, verification: &str) -> (josef_server::Broker, Client) {
    let broker = start_with(
        dir,
        &[
            ("offsets.topic.num.partitions", "1"),
            ("transaction.state.log.num.partitions", "1"),
            ("transaction.partition.verification.enable", verification),
        ],
    )
    .await;
    let mut c = Client::connect(&broker).await;
    create_topic(&mut c, "t", 4).await;
    (broker, c)
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// InitProducerId for `tx` until it is answered without CONCURRENT_TRANSACTIONS (a fence of an
/// open transaction answers that first).
async fn init(c: &mut Client) -> (i64, i16) {
    for _ in 0..50 {
        let r = common::init_producer_id(c, 4, "tx").await;
        if r.error_code == ErrorCode::ConcurrentTransactions.code() {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            continue;
        }
        assert_eq!(r.error_code, 0);
        return (r.producer_id, r.producer_epoch);
    }
    panic!("InitProducerId kept answering CONCURRENT_TRANSACTIONS")
}

async fn add(c: &mut Client, pid: i64, epoch: i16, partitions: &[i32]) {
    let ResponseBody::AddPartitionsToTxn(r) = c
        .call(
            3,
            AddPartitionsToTxnRequest {
                v3_and_below_transactional_id: "tx".into(),
                v3_and_below_producer_id: pid,
                v3_and_below_producer_epoch: epoch,
                v3_and_below_topics: vec![AddPartitionsToTxnTopic {
                    name: "t".into(),
                    partitions: partitions.iter().copied().collect(),
                    ..Default::default()
                }],
                ..Default::default()
            },
        )
        .await
    else {
        panic!()
    };
    // Every partition asked for is answered, and with NONE (an empty response is no success).
    let mut answered: Vec<(String, i32, i16)> = r
        .results_by_topic_v3_and_below
        .iter()
        .flat_map(|t| {
            t.results_by_partition.iter().map(|p| {
                (
                    t.name.to_string(),
                    p.partition_index,
                    p.partition_error_code,
                )
            })
        })
        .collect();
    answered.sort();
    let mut want: Vec<(String, i32, i16)> = partitions
        .iter()
        .map(|&p| ("t".to_string(), p, 0))
        .collect();
    want.sort();
    assert_eq!(answered, want, "{r:?}");
}

/// One transactional batch of `tx` on `t-<partition>` at Produce `version`; its error code.
async fn produce_txn(
    c: &mut Client,
    version: i16,
    pid: i64,
    epoch: i16,
    seq: i32,
    partition: i32,
) -> i16 {
    let batch: Bytes = RecordBatchBuilder::new()
        .producer(pid, epoch, seq)
        .transactional(true)
        .record(now(), None, Some(b"v"))
        .build_bytes()
        .unwrap();
    let mut req = common::produce_request("t", batch);
    req.transactional_id = Some("tx".into());
    req.topic_data[0].partition_data[0].index = partition;
    let ResponseBody::Produce(r) = c.call(version, req).await else {
        panic!()
    };
    r.responses[0].partition_responses[0].error_code
}

/// InitProducerId (unless given) + AddPartitionsToTxn for `t-0` and `t-1`, then one
/// transactional batch on each, with sequence `seq`.
async fn open_txn(c: &mut Client, pid_epoch: Option<(i64, i16)>, seq: i32) -> (i64, i16) {
    let (pid, epoch) = match pid_epoch {
        Some(x) => x,
        None => init(c).await,
    };
    add(c, pid, epoch, &[0, 1]).await;
    for partition in [0, 1] {
        assert_eq!(produce_txn(c, 9, pid, epoch, seq, partition).await, 0);
    }
    (pid, epoch)
}

async fn markers(
    c: &mut Client,
    pid: i64,
    epoch: i16,
    coordinator_epoch: i32,
    topics: &[(&str, &[i32])],
) -> Vec<(String, i32, i16)> {
    let req = WriteTxnMarkersRequest {
        markers: vec![WritableTxnMarker {
            producer_id: pid,
            producer_epoch: epoch,
            transaction_result: true,
            coordinator_epoch,
            topics: topics
                .iter()
                .map(|(t, ps)| WritableTxnMarkerTopic {
                    name: (*t).into(),
                    partition_indexes: ps.iter().copied().collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::WriteTxnMarkers(r) = c.call(1, req).await else {
        panic!()
    };
    assert_eq!(r.markers.len(), 1);
    assert_eq!(r.markers[0].producer_id, pid);
    let mut out: Vec<(String, i32, i16)> = r.markers[0]
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.name.to_string(), p.partition_index, p.error_code))
        })
        .collect();
    out.sort();
    out
}

async fn last_stable_offset(c: &mut Client, partition: i32) -> (i64, i64) {
    let p = common::read_committed_partition(c, "t", partition).await;
    (p.last_stable_offset, p.high_watermark)
}

#[tokio::test]
async fn the_leader_writes_markers_per_partition_and_fences_a_stale_coordinator_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, mut c) = start(dir.path(), "true").await;
    let (pid, epoch) = open_txn(&mut c, None, 0).await;
    assert_eq!(
        last_stable_offset(&mut c, 0).await,
        (0, 1),
        "the open transaction holds the LSO"
    );

    // The coordinator (epoch 5) commits; a partition that does not exist is answered alone.
    let none = ErrorCode::None.code();
    let r = markers(&mut c, pid, epoch, 5, &[("t", &[0, 1, 7]), ("gone", &[0])]).await;
    assert_eq!(
        r,
        vec![
            ("gone".into(), 0, ErrorCode::UnknownTopicOrPartition.code()),
            ("t".into(), 0, none),
            ("t".into(), 1, none),
            ("t".into(), 7, ErrorCode::UnknownTopicOrPartition.code()),
        ]
    );
    for p in [0, 1] {
        assert_eq!(
            last_stable_offset(&mut c, p).await,
            (2, 2),
            "t-{p}: committed"
        );
    }

    // A second transaction; a deposed coordinator (epoch 4) tries to end it: fenced, nothing
    // written, the transaction stays open.
    open_txn(&mut c, Some((pid, epoch)), 1).await;
    let fenced = ErrorCode::TransactionCoordinatorFenced.code();
    let r = markers(&mut c, pid, epoch, 4, &[("t", &[0, 1])]).await;
    assert_eq!(r, vec![("t".into(), 0, fenced), ("t".into(), 1, fenced)]);
    assert_eq!(last_stable_offset(&mut c, 0).await, (2, 3));
    // The current coordinator (same epoch 5, or a newer 6) is accepted.
    let r = markers(&mut c, pid, epoch, 6, &[("t", &[0, 1])]).await;
    assert_eq!(r, vec![("t".into(), 0, none), ("t".into(), 1, none)]);
    assert_eq!(last_stable_offset(&mut c, 0).await, (4, 4));
    // ... and from now on epoch 5 is stale too.
    open_txn(&mut c, Some((pid, epoch)), 2).await;
    let r = markers(&mut c, pid, epoch, 5, &[("t", &[0])]).await;
    assert_eq!(r, vec![("t".into(), 0, fenced)]);
    broker.shutdown().await;
}

/// A transaction of `tx` with one batch on `t-0` (added first, so verified).
async fn begin_on_t0(c: &mut Client) -> (i64, i16) {
    let (pid, epoch) = init(c).await;
    add(c, pid, epoch, &[0]).await;
    assert_eq!(
        produce_txn(c, 9, pid, epoch, 0, 0).await,
        0,
        "added, so verified"
    );
    (pid, epoch)
}

/// A new instance of `tx`: the producer at `epoch` is fenced and its transaction aborted.
async fn fence(c: &mut Client, pid: i64, epoch: i16) {
    let (pid2, epoch2) = init(c).await;
    assert_eq!(pid2, pid);
    assert!(epoch2 > epoch);
}

/// KIP-890 part 1: a producer writing to a partition outside its transaction, or a fenced
/// producer writing to a partition it never wrote before, is refused by the leader (verified with
/// the coordinator), nothing is written and the LSO stays at the HW.
#[tokio::test]
async fn a_transactional_append_the_coordinator_does_not_know_is_refused_and_the_lso_moves_on() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, mut c) = start(dir.path(), "true").await;
    let (pid, epoch) = begin_on_t0(&mut c).await;
    // t-1 was never added to the transaction.
    let invalid = ErrorCode::InvalidTxnState.code();
    assert_eq!(produce_txn(&mut c, 9, pid, epoch, 1, 1).await, invalid);
    assert_eq!(
        produce_txn(&mut c, 11, pid, epoch, 1, 1).await,
        ErrorCode::TransactionAbortable.code(),
        "Produce v11 gets TRANSACTION_ABORTABLE"
    );
    assert_eq!(last_stable_offset(&mut c, 1).await, (0, 0));

    // A new instance with the same transactional id fences the producer and aborts its
    // transaction; the zombie then writes to a partition it never wrote before.
    fence(&mut c, pid, epoch).await;
    assert_eq!(
        produce_txn(&mut c, 9, pid, epoch, 0, 2).await,
        ErrorCode::InvalidProducerEpoch.code()
    );
    for p in [0, 1, 2] {
        let (lso, hw) = last_stable_offset(&mut c, p).await;
        assert_eq!(lso, hw, "t-{p}: nothing holds the LSO back");
    }
    assert_eq!(
        last_stable_offset(&mut c, 2).await,
        (0, 0),
        "nothing written"
    );
    broker.shutdown().await;
}

/// With verification off (Kafka before 3.6), the same zombie append opens a transaction nobody
/// ends: the LSO sticks. (What the check above prevents.)
#[tokio::test]
async fn without_verification_a_zombie_append_holds_the_lso() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, mut c) = start(dir.path(), "false").await;
    let (pid, epoch) = begin_on_t0(&mut c).await;
    fence(&mut c, pid, epoch).await;
    assert_eq!(
        produce_txn(&mut c, 9, pid, epoch, 0, 3).await,
        0,
        "accepted unverified"
    );
    assert_eq!(
        last_stable_offset(&mut c, 3).await,
        (0, 1),
        "the LSO sticks"
    );
    broker.shutdown().await;
}
