//! WriteTxnMarkers (api 27) as a partition leader serves it: per-partition answers, the control
//! batch appended with the coordinator epoch, and a marker from a deposed coordinator (a lower
//! coordinator epoch than the last marker's) refused with TRANSACTION_COORDINATOR_FENCED.

mod common;

use bytes::Bytes;
use josef_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use josef_protocol::messages::fetch_request::FetchTopic;
use josef_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use josef_protocol::messages::*;
use josef_protocol::{ErrorCode, ResponseBody};
use josef_records::RecordBatchBuilder;

use common::{create_topic, start_with, Client};

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// InitProducerId + AddPartitionsToTxn for `t-0` and `t-1`, then one transactional batch on
/// each, with sequence `seq`.
async fn open_txn(c: &mut Client, pid_epoch: Option<(i64, i16)>, seq: i32) -> (i64, i16) {
    let (pid, epoch) = match pid_epoch {
        Some(x) => x,
        None => {
            let ResponseBody::InitProducerId(r) = c
                .call(
                    4,
                    InitProducerIdRequest {
                        transactional_id: Some("tx".into()),
                        transaction_timeout_ms: 60_000,
                        producer_id: -1,
                        producer_epoch: -1,
                        ..Default::default()
                    },
                )
                .await
            else {
                panic!()
            };
            assert_eq!(r.error_code, 0);
            (r.producer_id, r.producer_epoch)
        }
    };
    let ResponseBody::AddPartitionsToTxn(r) = c
        .call(
            3,
            AddPartitionsToTxnRequest {
                v3_and_below_transactional_id: "tx".into(),
                v3_and_below_producer_id: pid,
                v3_and_below_producer_epoch: epoch,
                v3_and_below_topics: vec![AddPartitionsToTxnTopic {
                    name: "t".into(),
                    partitions: [0, 1].into_iter().collect(),
                    ..Default::default()
                }],
                ..Default::default()
            },
        )
        .await
    else {
        panic!()
    };
    for t in &r.results_by_topic_v3_and_below {
        for p in &t.results_by_partition {
            assert_eq!(p.partition_error_code, 0, "{p:?}");
        }
    }
    for partition in [0, 1] {
        let batch: Bytes = RecordBatchBuilder::new()
            .producer(pid, epoch, seq)
            .transactional(true)
            .record(now(), None, Some(b"v"))
            .build_bytes()
            .unwrap();
        let mut req = common::produce_request("t", batch);
        req.transactional_id = Some("tx".into());
        req.topic_data[0].partition_data[0].index = partition;
        let ResponseBody::Produce(r) = c.call(9, req).await else {
            panic!()
        };
        assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
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
    let req = FetchRequest {
        replica_id: -1,
        max_wait_ms: 0,
        min_bytes: 0,
        max_bytes: 1 << 20,
        isolation_level: 1,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: "t".into(),
            partitions: vec![common::fetch_partition(partition, 0)],
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = c.fetch(12, req).await;
    let p = &r.responses[0].partitions[0];
    (p.last_stable_offset, p.high_watermark)
}

#[tokio::test]
async fn the_leader_writes_markers_per_partition_and_fences_a_stale_coordinator_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_with(
        dir.path(),
        &[
            ("offsets.topic.num.partitions", "1"),
            ("transaction.state.log.num.partitions", "1"),
        ],
    )
    .await;
    let mut c = Client::connect(&broker).await;
    create_topic(&mut c, "t", 2).await;
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
