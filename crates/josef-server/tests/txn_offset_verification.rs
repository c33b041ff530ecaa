//! KIP-890 part 1 for transactional offset commits on one node: a TxnOffsetCommit below v5 is
//! written only once the transaction coordinator confirms that AddOffsetsToTxn put the group's
//! `__consumer_offsets` partition in the producer's transaction. A commit without it, or from a
//! fenced producer, is refused (INVALID_TXN_STATE below v4, TRANSACTION_ABORTABLE from v4,
//! INVALID_PRODUCER_EPOCH) and writes nothing, so no transactional offsets are left that no marker
//! ever ends. With `transaction.partition.verification.enable=false` the same zombie commit is
//! written and the offsets partition's LSO sticks behind it.

mod common;

use bytes::Bytes;
use josef_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use josef_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use josef_protocol::messages::*;
use josef_protocol::{ErrorCode, ResponseBody};
use josef_records::RecordBatchBuilder;

use common::{create_topic, start_with, Client};

/// A single node with `transaction.partition.verification.enable` = `verification`, one
/// partition per internal topic and a topic `t`.
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
    create_topic(&mut c, "t", 1).await;
    (broker, c)
}

/// InitProducerId for `tx`, asked again (a bounded number of times) while a fenced transaction is
/// still being aborted.
async fn init(c: &mut Client) -> (i64, i16) {
    for _ in 0..100 {
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

/// AddPartitionsToTxn of `t-0` and one transactional batch there: the transaction is open.
async fn begin(c: &mut Client, pid: i64, epoch: i16) {
    let ResponseBody::AddPartitionsToTxn(r) = c
        .call(
            3,
            AddPartitionsToTxnRequest {
                v3_and_below_transactional_id: "tx".into(),
                v3_and_below_producer_id: pid,
                v3_and_below_producer_epoch: epoch,
                v3_and_below_topics: vec![AddPartitionsToTxnTopic {
                    name: "t".into(),
                    partitions: [0].into_iter().collect(),
                    ..Default::default()
                }],
                ..Default::default()
            },
        )
        .await
    else {
        panic!()
    };
    let codes: Vec<i16> = r
        .results_by_topic_v3_and_below
        .iter()
        .flat_map(|t| {
            t.results_by_partition
                .iter()
                .map(|p| p.partition_error_code)
        })
        .collect();
    assert_eq!(codes, vec![0], "{r:?}");
    let batch: Bytes = RecordBatchBuilder::new()
        .producer(pid, epoch, 0)
        .transactional(true)
        .record(0, None, Some(b"v"))
        .build_bytes()
        .unwrap();
    let mut req = common::produce_request("t", batch);
    req.transactional_id = Some("tx".into());
    let ResponseBody::Produce(r) = c.call(9, req).await else {
        panic!()
    };
    assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
}

async fn add_offsets(c: &mut Client, pid: i64, epoch: i16) {
    let req = AddOffsetsToTxnRequest {
        transactional_id: "tx".into(),
        producer_id: pid,
        producer_epoch: epoch,
        group_id: "g".into(),
        ..Default::default()
    };
    let ResponseBody::AddOffsetsToTxn(r) = c.call(3, req).await else {
        panic!()
    };
    assert_eq!(r.error_code, 0);
}

/// TxnOffsetCommit of `offset` for group `g` on `t-0` at `version`; the partition's error.
async fn commit(c: &mut Client, version: i16, pid: i64, epoch: i16, offset: i64) -> i16 {
    let codes = common::txn_offset_commit_codes(c, version, pid, epoch, offset).await;
    assert_eq!(codes.len(), 1, "{codes:?}");
    codes[0]
}

async fn end_txn(c: &mut Client, pid: i64, epoch: i16, commit: bool) {
    let req = EndTxnRequest {
        transactional_id: "tx".into(),
        producer_id: pid,
        producer_epoch: epoch,
        committed: commit,
        ..Default::default()
    };
    let ResponseBody::EndTxn(r) = c.call(3, req).await else {
        panic!()
    };
    assert_eq!(r.error_code, 0);
}

/// (LSO, HW) of `__consumer_offsets-0`: what the group coordinator wrote, and whether an open
/// transaction holds it back.
async fn offsets_log(c: &mut Client) -> (i64, i64) {
    let p = common::read_committed_partition(c, "__consumer_offsets", 0).await;
    assert_eq!(p.error_code, 0, "{p:?}");
    (p.last_stable_offset, p.high_watermark)
}

/// The committed offset of `g` on `t-0` (-1 if none).
async fn committed_offset(c: &mut Client) -> i64 {
    let req = OffsetFetchRequest {
        group_id: "g".into(),
        topics: Some(vec![OffsetFetchRequestTopic {
            name: "t".into(),
            partition_indexes: [0].into_iter().collect(),
            ..Default::default()
        }]),
        ..Default::default()
    };
    let ResponseBody::OffsetFetch(r) = c.call(5, req).await else {
        panic!()
    };
    assert_eq!(r.error_code, 0, "{r:?}");
    r.topics[0].partitions[0].committed_offset
}

#[tokio::test]
async fn a_commit_without_add_offsets_to_txn_is_refused_by_version_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, mut c) = start(dir.path(), "true").await;
    let (pid, epoch) = init(&mut c).await;
    begin(&mut c, pid, epoch).await;
    // Loads the group's shard, so the log below starts from what loading wrote.
    assert_eq!(committed_offset(&mut c).await, -1);
    let before = offsets_log(&mut c).await;
    assert_eq!(before.0, before.1);

    // No AddOffsetsToTxn: the offsets partition is not in the transaction.
    let abortable = ErrorCode::TransactionAbortable.code();
    let invalid = ErrorCode::InvalidTxnState.code();
    assert_eq!(commit(&mut c, 4, pid, epoch, 5).await, abortable, "v4");
    for v in [0, 2, 3] {
        assert_eq!(commit(&mut c, v, pid, epoch, 5).await, invalid, "v{v}");
    }
    assert_eq!(offsets_log(&mut c).await, before, "nothing written");

    // Once added, the same commit is written and committed with the transaction.
    add_offsets(&mut c, pid, epoch).await;
    assert_eq!(commit(&mut c, 3, pid, epoch, 5).await, 0);
    let (lso, hw) = offsets_log(&mut c).await;
    assert!(
        hw > before.1 && lso < hw,
        "pending offsets: {:?}",
        (lso, hw)
    );
    // A second commit in the same transaction is written too.
    assert_eq!(commit(&mut c, 4, pid, epoch, 6).await, 0);
    end_txn(&mut c, pid, epoch, true).await;
    assert_eq!(committed_offset(&mut c).await, 6);
    let (lso, hw) = offsets_log(&mut c).await;
    assert_eq!(lso, hw);
    broker.shutdown().await;
}

#[tokio::test]
async fn a_fenced_producers_commit_is_refused_and_leaves_no_open_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, mut c) = start(dir.path(), "true").await;
    let (pid, epoch) = init(&mut c).await;
    begin(&mut c, pid, epoch).await;
    assert_eq!(committed_offset(&mut c).await, -1);
    // A new instance of `tx` fences the producer and aborts its transaction.
    let (pid2, epoch2) = init(&mut c).await;
    assert_eq!(pid2, pid);
    assert!(epoch2 > epoch);
    let before = offsets_log(&mut c).await;

    // The zombie commits offsets it never wrote to the group's partition before: the partition
    // has no newer epoch of it to fence with; the transaction coordinator does.
    assert_eq!(
        commit(&mut c, 3, pid, epoch, 9).await,
        ErrorCode::InvalidProducerEpoch.code()
    );
    assert_eq!(offsets_log(&mut c).await, before, "nothing written");
    assert_eq!(before.0, before.1, "nothing holds the LSO back");
    assert_eq!(committed_offset(&mut c).await, -1);
    broker.shutdown().await;
}

/// With verification off (Kafka before 3.6) the zombie's offsets are written in a transaction no
/// marker ends: the offsets partition's LSO sticks. (What the check above prevents.)
#[tokio::test]
async fn without_verification_a_zombie_commit_holds_the_offsets_lso() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, mut c) = start(dir.path(), "false").await;
    let (pid, epoch) = init(&mut c).await;
    begin(&mut c, pid, epoch).await;
    assert_eq!(committed_offset(&mut c).await, -1);
    init(&mut c).await;
    let before = offsets_log(&mut c).await;
    assert_eq!(commit(&mut c, 3, pid, epoch, 9).await, 0, "written");
    let (lso, hw) = offsets_log(&mut c).await;
    assert!(hw > before.1, "written");
    assert_eq!(lso, before.1, "the LSO sticks at the zombie's offsets");
    broker.shutdown().await;
}
