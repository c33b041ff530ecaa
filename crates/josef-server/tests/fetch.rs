//! Fetch over the wire: incremental fetch sessions (KIP-227) and delayed fetches in the
//! purgatory. A broker started in-process on port 0, spoken to with josef-protocol frames.

use std::time::{Duration, Instant};

use josef_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use josef_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use josef_protocol::messages::*;
use josef_protocol::{ApiKey, ErrorCode, ResponseBody};
use josef_server::Broker;

mod common;
use common::{create_topic, fetch_partition, start_with, Client};

async fn start(dir: &std::path::Path) -> Broker {
    start_with(dir, &[]).await
}

async fn produce(c: &mut Client, topic: &str, partition: i32, value: &[u8]) {
    let records = josef_log::testing::batch(0, 1_700_000_000_000, &[(None, Some(value))]).freeze();
    let req = ProduceRequest {
        acks: 1,
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
    };
    let ResponseBody::Produce(r) = c.call(9, req).await else {
        panic!()
    };
    assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
}

fn fetch(
    session_id: i32,
    epoch: i32,
    topic: &str,
    parts: Vec<FetchPartition>,
    max_wait_ms: i32,
) -> FetchRequest {
    FetchRequest {
        replica_id: -1,
        max_wait_ms,
        min_bytes: 1,
        max_bytes: 1 << 20,
        session_id,
        session_epoch: epoch,
        topics: if parts.is_empty() {
            Vec::new()
        } else {
            vec![FetchTopic {
                topic: topic.into(),
                partitions: parts,
                ..Default::default()
            }]
        },
        ..Default::default()
    }
}

/// (partition, has records) of every partition in a response, in order.
fn seen(r: &FetchResponse) -> Vec<(i32, bool)> {
    r.responses
        .iter()
        .flat_map(|t| t.partitions.iter())
        .map(|p| {
            (
                p.partition_index,
                p.records.as_ref().is_some_and(|b| !b.is_empty()),
            )
        })
        .collect()
}

#[tokio::test]
async fn full_fetch_creates_a_session_and_incremental_fetch_returns_only_changed_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path()).await;
    let mut c = Client::connect(&b).await;
    create_topic(&mut c, "s", 3).await;
    produce(&mut c, "s", 0, b"a").await;
    produce(&mut c, "s", 1, b"b").await;

    let r = c
        .fetch(
            12,
            fetch(
                0,
                0,
                "s",
                vec![
                    fetch_partition(0, 0),
                    fetch_partition(1, 0),
                    fetch_partition(2, 0),
                ],
                0,
            ),
        )
        .await;
    assert_eq!(r.error_code, 0);
    assert!(
        r.session_id > 0,
        "a full fetch with epoch 0 creates a session"
    );
    assert_eq!(seen(&r), [(0, true), (1, true), (2, false)]);
    let id = r.session_id;

    // The client moves past what it read on 0 and 1; partition 2 gets new data.
    produce(&mut c, "s", 2, b"c").await;
    let r = c
        .fetch(
            12,
            fetch(
                id,
                1,
                "s",
                vec![fetch_partition(0, 1), fetch_partition(1, 1)],
                0,
            ),
        )
        .await;
    assert_eq!((r.error_code, r.session_id), (0, id));
    assert_eq!(seen(&r), [(2, true)], "only the partition that changed");

    // Nothing new anywhere once the client moved partition 2 past its record.
    let r = c
        .fetch(12, fetch(id, 2, "s", vec![fetch_partition(2, 1)], 0))
        .await;
    assert_eq!((r.error_code, r.session_id), (0, id));
    assert_eq!(seen(&r), []);
    b.shutdown().await;
}

#[tokio::test]
async fn wrong_epoch_is_invalid_fetch_session_epoch_and_unknown_id_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path()).await;
    let mut c = Client::connect(&b).await;
    create_topic(&mut c, "e", 1).await;
    let r = c
        .fetch(12, fetch(0, 0, "e", vec![fetch_partition(0, 0)], 0))
        .await;
    let id = r.session_id;
    assert!(id > 0);

    let r = c.fetch(12, fetch(id, 5, "e", vec![], 0)).await;
    assert_eq!(r.error_code, ErrorCode::InvalidFetchSessionEpoch.code());
    assert_eq!(r.session_id, 0);
    assert!(r.responses.is_empty());

    let r = c
        .fetch(12, fetch(id.wrapping_add(1), 1, "e", vec![], 0))
        .await;
    assert_eq!(r.error_code, ErrorCode::FetchSessionIdNotFound.code());

    // The session survived the bad requests: epoch 1 still works, and epoch 1 again does not.
    let r = c.fetch(12, fetch(id, 1, "e", vec![], 0)).await;
    assert_eq!((r.error_code, r.session_id), (0, id));
    let r = c.fetch(12, fetch(id, 1, "e", vec![], 0)).await;
    assert_eq!(r.error_code, ErrorCode::InvalidFetchSessionEpoch.code());

    // Epoch -1 closes it.
    let r = c
        .fetch(12, fetch(id, -1, "e", vec![fetch_partition(0, 0)], 0))
        .await;
    assert_eq!((r.error_code, r.session_id), (0, 0));
    let r = c.fetch(12, fetch(id, 2, "e", vec![], 0)).await;
    assert_eq!(r.error_code, ErrorCode::FetchSessionIdNotFound.code());
    b.shutdown().await;
}

#[tokio::test]
async fn forgotten_partitions_leave_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path()).await;
    let mut c = Client::connect(&b).await;
    create_topic(&mut c, "f", 2).await;
    let r = c
        .fetch(
            12,
            fetch(
                0,
                0,
                "f",
                vec![fetch_partition(0, 0), fetch_partition(1, 0)],
                0,
            ),
        )
        .await;
    let id = r.session_id;
    let mut req = fetch(id, 1, "f", vec![], 0);
    req.forgotten_topics_data = vec![ForgottenTopic {
        topic: "f".into(),
        partitions: josef_protocol::smallvec![1],
        ..Default::default()
    }];
    let r = c.fetch(12, req).await;
    assert_eq!((r.error_code, r.session_id), (0, id));

    produce(&mut c, "f", 0, b"x").await;
    produce(&mut c, "f", 1, b"y").await;
    let r = c.fetch(12, fetch(id, 2, "f", vec![], 0)).await;
    assert_eq!(seen(&r), [(0, true)], "partition 1 was forgotten");

    // Forgetting the last partition closes the session; the fetch runs sessionless.
    let mut req = fetch(id, 3, "f", vec![], 0);
    req.forgotten_topics_data = vec![ForgottenTopic {
        topic: "f".into(),
        partitions: josef_protocol::smallvec![0],
        ..Default::default()
    }];
    let r = c.fetch(12, req).await;
    assert_eq!((r.error_code, r.session_id), (0, 0));
    let r = c.fetch(12, fetch(id, 4, "f", vec![], 0)).await;
    assert_eq!(r.error_code, ErrorCode::FetchSessionIdNotFound.code());
    b.shutdown().await;
}

#[tokio::test]
async fn parked_incremental_fetch_wakes_on_data_for_an_unlisted_session_partition() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path()).await;
    let mut consumer = Client::connect(&b).await;
    let mut producer = Client::connect(&b).await;
    create_topic(&mut consumer, "w", 2).await;
    let r = consumer
        .fetch(
            12,
            fetch(
                0,
                0,
                "w",
                vec![fetch_partition(0, 0), fetch_partition(1, 0)],
                0,
            ),
        )
        .await;
    let id = r.session_id;
    consumer
        .send(12, fetch(id, 1, "w", vec![], 30_000).into())
        .await;
    produce(&mut producer, "w", 1, b"late").await;
    let r = tokio::time::timeout(Duration::from_secs(10), consumer.recv(ApiKey::Fetch, 12))
        .await
        .expect("the parked fetch is answered when data arrives, not at max_wait")
        .expect("a response");
    let ResponseBody::Fetch(r) = r else { panic!() };
    assert_eq!((r.error_code, r.session_id), (0, id));
    assert_eq!(seen(&r), [(1, true)]);
    b.shutdown().await;
}

#[tokio::test]
async fn topic_id_sessions_work_from_v13_and_reject_older_versions() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path()).await;
    let mut c = Client::connect(&b).await;
    let topic_id = create_topic(&mut c, "ids", 1).await;
    produce(&mut c, "ids", 0, b"v").await;
    let mut req = fetch(0, 0, "", vec![fetch_partition(0, 0)], 0);
    req.topics[0].topic_id = topic_id;
    let r = c.fetch(13, req).await;
    assert!(r.session_id > 0);
    assert_eq!(r.responses[0].topic_id, topic_id);
    assert_eq!(seen(&r), [(0, true)]);
    let id = r.session_id;

    produce(&mut c, "ids", 0, b"w").await;
    let r = c.fetch(13, fetch(id, 1, "", vec![], 0)).await;
    assert_eq!((r.error_code, r.session_id), (0, id));
    assert_eq!(r.responses[0].topic_id, topic_id);
    assert_eq!(seen(&r), [(0, true)]);

    // The same session from a pre-v13 request: topic-id use differs.
    let r = c.fetch(12, fetch(id, 2, "ids", vec![], 0)).await;
    assert_eq!(r.error_code, ErrorCode::FetchSessionTopicIdError.code());
    b.shutdown().await;
}

#[tokio::test]
async fn delayed_fetch_waits_for_min_bytes_and_completes_when_enough_arrives() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path()).await;
    let mut consumer = Client::connect(&b).await;
    let mut producer = Client::connect(&b).await;
    create_topic(&mut consumer, "mb", 1).await;
    let mut req = fetch(0, -1, "mb", vec![fetch_partition(0, 0)], 30_000);
    req.min_bytes = 2_000;
    consumer.send(12, req.into()).await;
    // A small record is not enough: the fetch stays parked in the purgatory.
    produce(&mut producer, "mb", 0, b"small").await;
    let parked = Instant::now();
    while b.state().fetch_purgatory.num_delayed() == 0 {
        assert!(
            parked.elapsed() < Duration::from_secs(10),
            "the fetch never parked"
        );
        tokio::task::yield_now().await;
    }
    produce(&mut producer, "mb", 0, b"small again").await;
    assert_eq!(b.state().fetch_purgatory.num_delayed(), 1);
    // Enough bytes: the append completes it at once, long before max_wait (30 s).
    let t0 = Instant::now();
    produce(&mut producer, "mb", 0, &[7u8; 4000]).await;
    let r = tokio::time::timeout(Duration::from_secs(10), consumer.recv(ApiKey::Fetch, 12))
        .await
        .expect("answered when min_bytes became available")
        .expect("a response");
    assert!(t0.elapsed() < Duration::from_secs(5));
    let ResponseBody::Fetch(r) = r else { panic!() };
    let records = r.responses[0].partitions[0].records.as_ref().unwrap();
    assert!(
        records.len() >= 2_000,
        "all three batches: {} bytes",
        records.len()
    );
    assert_eq!(b.state().fetch_purgatory.num_delayed(), 0);
    b.shutdown().await;
}

#[tokio::test]
async fn delayed_fetch_expires_at_max_wait_with_what_is_there() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path()).await;
    let mut c = Client::connect(&b).await;
    create_topic(&mut c, "exp", 1).await;
    produce(&mut c, "exp", 0, b"only").await;
    let mut req = fetch(0, -1, "exp", vec![fetch_partition(0, 0)], 300);
    req.min_bytes = 1 << 20;
    let t0 = Instant::now();
    let r = c.fetch(12, req).await;
    let waited = t0.elapsed();
    assert!(
        waited >= Duration::from_millis(290),
        "expired after {waited:?}"
    );
    assert!(waited < Duration::from_secs(10), "expired after {waited:?}");
    assert_eq!(seen(&r), [(0, true)]);
    assert_eq!(b.state().fetch_purgatory.num_delayed(), 0);
    b.shutdown().await;
}

/// How many partitions incremental fetches have been given to read so far.
fn incremental_reads(b: &Broker) -> u64 {
    b.state().fetch_sessions.lock().incremental_reads()
}

#[tokio::test]
async fn incremental_fetch_reads_only_the_changed_partitions_of_its_session() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path()).await;
    let mut c = Client::connect(&b).await;
    create_topic(&mut c, "many", 100).await;
    let all = (0..100).map(|p| fetch_partition(p, 0)).collect();
    let r = c.fetch(12, fetch(0, 0, "many", all, 0)).await;
    let id = r.session_id;
    assert!(id > 0);

    // Nothing changed: nothing read, nothing answered (Kafka reads all 100 to find that out).
    let before = incremental_reads(&b);
    let r = c.fetch(12, fetch(id, 1, "many", vec![], 0)).await;
    assert_eq!((r.error_code, seen(&r)), (0, vec![]));
    assert_eq!(incremental_reads(&b) - before, 0);

    // One partition got a record: it alone is read, and answered.
    produce(&mut c, "many", 37, b"x").await;
    let before = incremental_reads(&b);
    let r = c.fetch(12, fetch(id, 2, "many", vec![], 0)).await;
    assert_eq!(seen(&r), [(37, true)]);
    assert_eq!(incremental_reads(&b) - before, 1);

    // The consumer moves past it: that listed partition is read, nothing is answered.
    let before = incremental_reads(&b);
    let r = c
        .fetch(12, fetch(id, 3, "many", vec![fetch_partition(37, 1)], 0))
        .await;
    assert_eq!(seen(&r), []);
    assert_eq!(incremental_reads(&b) - before, 1);
    let before = incremental_reads(&b);
    let r = c.fetch(12, fetch(id, 4, "many", vec![], 0)).await;
    assert_eq!(seen(&r), []);
    assert_eq!(incremental_reads(&b) - before, 0);
    b.shutdown().await;
}

#[tokio::test]
async fn a_log_start_moved_by_delete_records_is_answered_as_kafka_does() {
    use josef_protocol::messages::delete_records_request::{
        DeleteRecordsPartition, DeleteRecordsTopic,
    };
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path()).await;
    let mut c = Client::connect(&b).await;
    create_topic(&mut c, "ls", 2).await;
    produce(&mut c, "ls", 0, b"a").await;
    produce(&mut c, "ls", 0, b"b").await;
    let r = c
        .fetch(
            12,
            fetch(
                0,
                0,
                "ls",
                vec![fetch_partition(0, 2), fetch_partition(1, 0)],
                0,
            ),
        )
        .await;
    let id = r.session_id;
    let r = c.fetch(12, fetch(id, 1, "ls", vec![], 0)).await;
    assert_eq!(seen(&r), []);
    let ResponseBody::DeleteRecords(d) = c
        .call(
            2,
            DeleteRecordsRequest {
                topics: vec![DeleteRecordsTopic {
                    name: "ls".into(),
                    partitions: vec![DeleteRecordsPartition {
                        partition_index: 0,
                        offset: 1,
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                timeout_ms: 5000,
                ..Default::default()
            },
        )
        .await
    else {
        panic!()
    };
    assert_eq!(d.topics[0].partitions[0].error_code, 0);
    // No record, no HW change: the log start alone makes partition 0 appear.
    let r = c.fetch(12, fetch(id, 2, "ls", vec![], 0)).await;
    assert_eq!(seen(&r), [(0, false)]);
    assert_eq!(r.responses[0].partitions[0].log_start_offset, 1);
    let r = c.fetch(12, fetch(id, 3, "ls", vec![], 0)).await;
    assert_eq!(seen(&r), []);
    b.shutdown().await;
}
