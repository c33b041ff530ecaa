//! Transactions v2 (KIP-890 part 2) on one node, spoken raw since no installed client runs it: a
//! producer that never sends AddPartitionsToTxn or AddOffsetsToTxn (Produce v12 and
//! TxnOffsetCommit v5 add the partitions), EndTxn v5 bumping the epoch on every commit and abort
//! and answering the new one, the old epoch fenced afterwards; an EndTxn v4 client keeps its
//! epoch. And the `transaction.version` feature gating the v2 API versions in ApiVersions.

mod common;

use bytes::Bytes;
use josef_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use josef_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use josef_protocol::messages::*;
use josef_protocol::{ApiKey, ErrorCode, ResponseBody};
use josef_records::RecordBatchBuilder;

use common::{create_topic, start_with, Client};

async fn start(dir: &std::path::Path, extra: &[(&str, &str)]) -> (josef_server::Broker, Client) {
    let mut settings = vec![
        ("offsets.topic.num.partitions", "1"),
        ("transaction.state.log.num.partitions", "1"),
    ];
    settings.extend_from_slice(extra);
    let broker = start_with(dir, &settings).await;
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

/// InitProducerId for `id`, retried (a bounded number of times) while the coordinator answers
/// CONCURRENT_TRANSACTIONS.
async fn init(c: &mut Client, id: &str) -> (i64, i16) {
    for _ in 0..100 {
        let r = common::init_producer_id(c, 5, id).await;
        if r.error_code == ErrorCode::ConcurrentTransactions.code() {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            continue;
        }
        assert_eq!(r.error_code, 0);
        return (r.producer_id, r.producer_epoch);
    }
    panic!("InitProducerId kept answering CONCURRENT_TRANSACTIONS")
}

/// One transactional batch of `id` on `t-<partition>` at Produce `version`; its error code.
#[allow(clippy::too_many_arguments)]
async fn produce_txn(
    c: &mut Client,
    version: i16,
    id: &str,
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
    req.transactional_id = Some(id.into());
    req.topic_data[0].partition_data[0].index = partition;
    let ResponseBody::Produce(r) = c.call(version, req).await else {
        panic!()
    };
    r.responses[0].partition_responses[0].error_code
}

/// EndTxn at `version`: (error, producer id, producer epoch) of the answer.
async fn end_txn(
    c: &mut Client,
    version: i16,
    id: &str,
    pid: i64,
    epoch: i16,
    commit: bool,
) -> (i16, i64, i16) {
    let req = EndTxnRequest {
        transactional_id: id.into(),
        producer_id: pid,
        producer_epoch: epoch,
        committed: commit,
        ..Default::default()
    };
    let ResponseBody::EndTxn(r) = c.call(version, req).await else {
        panic!()
    };
    (r.error_code, r.producer_id, r.producer_epoch)
}

/// The committed offset of group `g` on `t-0` (-1 if none).
/// A read_committed fetch of `t`-`partition`: its LSO, HW and the producer ids of the aborted
/// transactions.
async fn read_committed(c: &mut Client, partition: i32) -> (i64, i64, Vec<i64>) {
    let p = common::read_committed_partition(c, "t", partition).await;
    let aborted = p
        .aborted_transactions
        .iter()
        .flatten()
        .map(|a| a.producer_id)
        .collect();
    (p.last_stable_offset, p.high_watermark, aborted)
}

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
async fn a_v2_producer_adds_partitions_by_producing_and_each_end_txn_bumps_its_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, mut c) = start(dir.path(), &[]).await;
    let (pid, e0) = init(&mut c, "tx").await;

    // No AddPartitionsToTxn: Produce v12 adds t-0 and t-1 to the transaction.
    for p in [0, 1] {
        assert_eq!(
            produce_txn(&mut c, 12, "tx", pid, e0, 0, p).await,
            0,
            "t-{p}"
        );
    }
    assert_eq!(read_committed(&mut c, 0).await, (0, 1, vec![]), "open");
    // A v11 producer (transactions v1) is still only verified: t-2 was never added.
    assert_eq!(
        produce_txn(&mut c, 11, "tx", pid, e0, 0, 2).await,
        ErrorCode::TransactionAbortable.code()
    );

    // Commit: the answer carries the bumped epoch; the markers committed both partitions.
    let (err, pid1, e1) = end_txn(&mut c, 5, "tx", pid, e0, true).await;
    assert_eq!((err, pid1, e1), (0, pid, e0 + 1));
    for p in [0, 1] {
        assert_eq!(read_committed(&mut c, p).await, (2, 2, vec![]), "t-{p}");
    }
    // A retry of the same EndTxn (the client did not hear the answer) gets the same answer.
    assert_eq!(end_txn(&mut c, 5, "tx", pid, e0, true).await, (0, pid, e1));

    // Next transaction at the new epoch (sequences start over), aborted: invisible.
    for p in [0, 1] {
        assert_eq!(
            produce_txn(&mut c, 12, "tx", pid, e1, 0, p).await,
            0,
            "t-{p}"
        );
    }
    let (err, _, e2) = end_txn(&mut c, 5, "tx", pid, e1, false).await;
    assert_eq!((err, e2), (0, e1 + 1));
    for p in [0, 1] {
        assert_eq!(read_committed(&mut c, p).await, (4, 4, vec![pid]), "t-{p}");
    }

    // The epoch of the ended transaction is fenced: on a partition it wrote, and on one it never
    // wrote (which it must not be able to open a transaction on, holding the LSO back).
    for p in [0, 3] {
        assert_eq!(
            produce_txn(&mut c, 12, "tx", pid, e1, 1, p).await,
            ErrorCode::InvalidProducerEpoch.code(),
            "t-{p}"
        );
    }
    let (lso, hw, _) = read_committed(&mut c, 3).await;
    assert_eq!((lso, hw), (0, 0), "nothing written on t-3");
    assert_eq!(
        end_txn(&mut c, 5, "tx", pid, e1 - 1, true).await.0,
        ErrorCode::ProducerFenced.code()
    );

    // Offsets in the transaction without AddOffsetsToTxn: TxnOffsetCommit v5 adds the group's
    // __consumer_offsets partition; the offset shows only once committed.
    assert_eq!(produce_txn(&mut c, 12, "tx", pid, e2, 0, 0).await, 0);
    assert_eq!(
        common::txn_offset_commit_codes(&mut c, 5, pid, e2, 42).await,
        vec![0]
    );
    assert_eq!(
        committed_offset(&mut c).await,
        -1,
        "pending until the commit"
    );
    let (err, _, e3) = end_txn(&mut c, 5, "tx", pid, e2, true).await;
    assert_eq!((err, e3), (0, e2 + 1));
    assert_eq!(committed_offset(&mut c).await, 42);
    assert_eq!(read_committed(&mut c, 0).await, (6, 6, vec![pid]));
    broker.shutdown().await;
}

/// The add of Produce v12 is the transaction's only record of the partition, so it happens with
/// `transaction.partition.verification.enable` off too (else the commit would miss the partition
/// and its LSO would stick).
#[tokio::test]
async fn produce_v12_adds_its_partition_with_verification_off() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, mut c) = start(
        dir.path(),
        &[("transaction.partition.verification.enable", "false")],
    )
    .await;
    let (pid, e0) = init(&mut c, "tx").await;
    assert_eq!(produce_txn(&mut c, 12, "tx", pid, e0, 0, 0).await, 0);
    assert_eq!(end_txn(&mut c, 5, "tx", pid, e0, true).await.0, 0);
    assert_eq!(read_committed(&mut c, 0).await, (2, 2, vec![]));
    broker.shutdown().await;
}

/// A transactions v1 client (EndTxn v4, AddPartitionsToTxn) on the same node: the epoch stays,
/// the answer carries no producer, the next transaction goes on at the same epoch.
#[tokio::test]
async fn an_end_txn_v4_client_keeps_its_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, mut c) = start(dir.path(), &[]).await;
    let (pid, epoch) = init(&mut c, "old").await;
    for round in 0..2 {
        let ResponseBody::AddPartitionsToTxn(r) = c
            .call(
                3,
                AddPartitionsToTxnRequest {
                    v3_and_below_transactional_id: "old".into(),
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
        assert_eq!(
            r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code,
            0
        );
        assert_eq!(produce_txn(&mut c, 9, "old", pid, epoch, round, 0).await, 0);
        let (err, _, _) = end_txn(&mut c, 4, "old", pid, epoch, true).await;
        assert_eq!(err, 0, "round {round}");
        let (lso, hw, _) = read_committed(&mut c, 0).await;
        assert_eq!(lso, hw);
    }
    broker.shutdown().await;
}

/// (EndTxn, Produce, TxnOffsetCommit) max versions and the finalized `transaction.version` in
/// ApiVersions.
async fn advertised(c: &mut Client) -> ((i16, i16, i16), Option<i16>) {
    let ResponseBody::ApiVersions(r) = c.call(3, ApiVersionsRequest::default()).await else {
        panic!()
    };
    let max = |k: ApiKey| {
        r.api_keys
            .iter()
            .find(|a| a.api_key == k as i16)
            .map_or(-1, |a| a.max_version)
    };
    let supported = r
        .supported_features
        .iter()
        .find(|f| f.name.as_str() == "transaction.version")
        .map(|f| (f.min_version, f.max_version));
    assert_eq!(supported, Some((0, 2)));
    let finalized = r
        .finalized_features
        .iter()
        .find(|f| f.name.as_str() == "transaction.version")
        .map(|f| f.max_version_level);
    (
        (
            max(ApiKey::EndTxn),
            max(ApiKey::Produce),
            max(ApiKey::TxnOffsetCommit),
        ),
        finalized,
    )
}

#[tokio::test]
async fn the_v2_versions_are_advertised_only_at_transaction_version_2() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, mut c) = start(dir.path(), &[]).await;
    assert_eq!(advertised(&mut c).await, ((5, 12, 5), Some(2)), "default");
    broker.shutdown().await;

    let dir = tempfile::tempdir().unwrap();
    let (broker, mut c) = start(dir.path(), &[("transaction.version", "1")]).await;
    assert_eq!(advertised(&mut c).await, ((4, 11, 4), Some(1)));
    broker.shutdown().await;
}
