//! Produce record validation as a client sees it (josef_records::validate called by the broker):
//! error codes, per-record errors, and what ends up in the log.

use bytes::{Bytes, BytesMut};
use josef_protocol::messages::fetch_request::FetchTopic;
use josef_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use josef_protocol::messages::produce_response::PartitionProduceResponse;
use josef_protocol::messages::*;
use josef_protocol::ResponseBody;
use josef_records::{BatchHeader, Compression, RecordBatchBuilder, TimestampType};
use josef_server::Broker;

mod common;
use common::{create_topic_with, start_with, Client};

async fn start(dir: &std::path::Path) -> Broker {
    start_with(
        dir,
        &[
            ("offsets.topic.num.partitions", "1"),
            ("transaction.state.log.num.partitions", "1"),
        ],
    )
    .await
}

async fn create_topic(c: &mut Client, name: &str, configs: &[(&str, &str)]) {
    create_topic_with(c, name, 1, configs).await;
}

async fn produce(
    c: &mut Client,
    version: i16,
    topic: &str,
    records: Bytes,
) -> PartitionProduceResponse {
    common::produce_records(c, version, topic, records).await
}

async fn fetch_first_batch(c: &mut Client, topic: &str) -> Option<Bytes> {
    let req = FetchRequest {
        replica_id: -1,
        max_wait_ms: 0,
        min_bytes: 0,
        max_bytes: 1 << 20,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: topic.into(),
            partitions: vec![common::fetch_partition(0, 0)],
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::Fetch(r) = c.call(12, req).await else {
        panic!()
    };
    r.responses[0].partitions[0]
        .records
        .clone()
        .filter(|b| !b.is_empty())
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[tokio::test]
async fn a_null_key_on_a_compacted_topic_is_invalid_record_with_the_record_index() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path()).await;
    let mut c = Client::connect(&broker).await;
    create_topic(&mut c, "compacted", &[("cleanup.policy", "compact")]).await;
    let t = now();
    let bad = RecordBatchBuilder::new()
        .record(t, Some(b"k"), Some(b"v"))
        .record(t, None, Some(b"no key"))
        .build_bytes()
        .unwrap();
    let p = produce(&mut c, 9, "compacted", bad).await;
    assert_eq!(p.error_code, 87, "INVALID_RECORD");
    assert_eq!(p.base_offset, -1);
    assert_eq!(p.record_errors.len(), 1);
    assert_eq!(p.record_errors[0].batch_index, 1);
    assert!(p.error_message.is_some());
    // Nothing of the refused batch was written: the next good batch starts at offset 0.
    assert_eq!(fetch_first_batch(&mut c, "compacted").await, None);
    let good = RecordBatchBuilder::new()
        .record(t, Some(b"k"), None)
        .build_bytes()
        .unwrap();
    let p = produce(&mut c, 9, "compacted", good).await;
    assert_eq!((p.error_code, p.base_offset), (0, 0));
    broker.shutdown().await;
}

#[tokio::test]
async fn timestamps_beyond_the_topic_bounds_are_invalid_timestamp() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path()).await;
    let mut c = Client::connect(&broker).await;
    create_topic(
        &mut c,
        "bounded",
        &[
            ("message.timestamp.before.max.ms", "3600000"),
            ("message.timestamp.after.max.ms", "60000"),
        ],
    )
    .await;
    let t = now();
    for ts in [t + 3_600_000, t - 7_200_000] {
        let b = RecordBatchBuilder::new()
            .record(t, None, Some(b"fine"))
            .record(ts, None, Some(b"out of range"))
            .build_bytes()
            .unwrap();
        let p = produce(&mut c, 9, "bounded", b).await;
        assert_eq!(p.error_code, 32, "INVALID_TIMESTAMP for {ts}");
        assert_eq!(p.record_errors[0].batch_index, 1);
    }
    // Older clients (v7) get the code without the per-record list.
    let b = RecordBatchBuilder::new()
        .record(t + 3_600_000, None, Some(b"x"))
        .build_bytes()
        .unwrap();
    let p = produce(&mut c, 7, "bounded", b).await;
    assert_eq!(p.error_code, 32);
    // In bounds, and a record without timestamp, are fine.
    let b = RecordBatchBuilder::new()
        .record(t + 1000, None, Some(b"x"))
        .record(-1, None, Some(b"y"))
        .build_bytes()
        .unwrap();
    assert_eq!(produce(&mut c, 9, "bounded", b).await.error_code, 0);
    broker.shutdown().await;
}

#[tokio::test]
async fn the_deprecated_difference_setting_bounds_both_sides() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path()).await;
    let mut c = Client::connect(&broker).await;
    create_topic(
        &mut c,
        "diff",
        &[("message.timestamp.difference.max.ms", "1000")],
    )
    .await;
    let t = now();
    for ts in [t + 60_000, t - 60_000] {
        let b = RecordBatchBuilder::new()
            .record(ts, None, Some(b"x"))
            .build_bytes()
            .unwrap();
        assert_eq!(produce(&mut c, 9, "diff", b).await.error_code, 32);
    }
    broker.shutdown().await;
}

#[tokio::test]
async fn the_max_timestamp_and_a_client_set_log_append_time_bit_are_rewritten_on_create_time_topics(
) {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path()).await;
    let mut c = Client::connect(&broker).await;
    create_topic(&mut c, "ct", &[]).await;
    let t = now();
    let lat = RecordBatchBuilder::new()
        .log_append_time(t)
        .record(t, None, Some(b"x"))
        .build_bytes()
        .unwrap();
    assert_eq!(produce(&mut c, 9, "ct", lat).await.error_code, 0);
    let stored = fetch_first_batch(&mut c, "ct").await.unwrap();
    let h = BatchHeader::parse(&stored).unwrap();
    assert_eq!(h.timestamp_type(), TimestampType::CreateTime);
    assert_eq!(h.max_timestamp, t);
    let batch = josef_records::RecordBatch::parse(stored.slice(..h.total_size())).unwrap();
    batch.validate_crc().unwrap();
    broker.shutdown().await;
}

#[tokio::test]
async fn framing_rules_are_checked_per_partition() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path()).await;
    let mut c = Client::connect(&broker).await;
    create_topic(&mut c, "frames", &[]).await;
    let one = RecordBatchBuilder::new()
        .record(now(), None, Some(b"x"))
        .build_bytes()
        .unwrap();
    // Two batches in one partition.
    let mut two = BytesMut::from(&one[..]);
    two.extend_from_slice(&one);
    assert_eq!(
        produce(&mut c, 9, "frames", two.freeze()).await.error_code,
        87
    );
    // zstd below v7.
    let zstd = RecordBatchBuilder::new()
        .compression(Compression::Zstd)
        .record(now(), None, Some(b"x"))
        .build_bytes()
        .unwrap();
    assert_eq!(
        produce(&mut c, 6, "frames", zstd.clone()).await.error_code,
        76
    );
    assert_eq!(produce(&mut c, 7, "frames", zstd).await.error_code, 0);
    // A corrupted CRC.
    let mut bad = BytesMut::from(&one[..]);
    let last = bad.len() - 1;
    bad[last] ^= 1;
    assert_eq!(
        produce(&mut c, 9, "frames", bad.freeze()).await.error_code,
        2
    );
    broker.shutdown().await;
}

#[tokio::test]
async fn legacy_message_sets_in_produce_v0_to_v2_are_up_converted_to_v2_batches() {
    use josef_records::{DecompressLimits, LegacySetBuilder, RecordBatch};
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path()).await;
    let mut c = Client::connect(&broker).await;
    create_topic(&mut c, "legacy", &[]).await;
    let t = now();
    let v0 = LegacySetBuilder::new(0)
        .record(-1, Some(b"k0"), Some(b"magic zero"))
        .build()
        .unwrap()
        .freeze();
    let p = produce(&mut c, 0, "legacy", v0).await;
    assert_eq!((p.error_code, p.base_offset), (0, 0));
    let v1 = LegacySetBuilder::new(1)
        .compression(Compression::Gzip)
        .record(t, Some(b"k1"), Some(b"magic one"))
        .record(t + 1, None, Some(b"gzip"))
        .build()
        .unwrap()
        .freeze();
    let p = produce(&mut c, 2, "legacy", v1).await;
    assert_eq!(
        (p.error_code, p.base_offset, p.log_append_time_ms),
        (0, 1, -1)
    );
    // A corrupted legacy message is CORRUPT_MESSAGE.
    let mut bad = BytesMut::from(
        &LegacySetBuilder::new(1)
            .record(t, None, Some(b"x"))
            .build()
            .unwrap()[..],
    );
    let last = bad.len() - 1;
    bad[last] ^= 1;
    assert_eq!(
        produce(&mut c, 1, "legacy", bad.freeze()).await.error_code,
        2
    );
    // Read back as v2 batches.
    let data = fetch_first_batch(&mut c, "legacy").await.unwrap();
    let mut values = Vec::new();
    for b in josef_records::Batches::new(data) {
        let b: RecordBatch = b.unwrap();
        b.validate_crc().unwrap();
        for r in b.records(&DecompressLimits::default()).unwrap() {
            let r = r.unwrap();
            values.push((r.offset, r.timestamp, r.value.unwrap()));
        }
    }
    assert_eq!(
        values,
        vec![
            (0, -1, Bytes::from_static(b"magic zero")),
            (1, t, Bytes::from_static(b"magic one")),
            (2, t + 1, Bytes::from_static(b"gzip")),
        ]
    );
    broker.shutdown().await;
}

#[tokio::test]
async fn a_topic_compression_type_other_than_producer_stores_batches_in_that_codec() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path()).await;
    let mut c = Client::connect(&broker).await;
    for (topic, codec, sent, stored) in [
        ("to-zstd", "zstd", Compression::None, Compression::Zstd),
        (
            "to-plain",
            "uncompressed",
            Compression::Gzip,
            Compression::None,
        ),
        ("as-sent", "producer", Compression::Lz4, Compression::Lz4),
    ] {
        create_topic(&mut c, topic, &[("compression.type", codec)]).await;
        let b = RecordBatchBuilder::new()
            .compression(sent)
            .producer(-1, -1, -1)
            .record(now(), Some(b"k"), Some(b"value"))
            .record(now(), None, Some(b"second"))
            .build_bytes()
            .unwrap();
        assert_eq!(produce(&mut c, 9, topic, b).await.error_code, 0);
        let data = fetch_first_batch(&mut c, topic).await.unwrap();
        let h = BatchHeader::parse(&data).unwrap();
        assert_eq!(h.compression().unwrap(), stored, "{topic}");
        let batch = josef_records::RecordBatch::parse(data.slice(..h.total_size())).unwrap();
        batch.validate_crc().unwrap();
        let values: Vec<_> = batch
            .records(&josef_records::DecompressLimits::default())
            .unwrap()
            .map(|r| r.unwrap().value.unwrap())
            .collect();
        assert_eq!(values, [&b"value"[..], &b"second"[..]], "{topic}");
    }
    broker.shutdown().await;
}

/// Sets topic configs with IncrementalAlterConfigs (SET) and checks they were accepted.
async fn alter_topic_configs(c: &mut Client, topic: &str, configs: &[(&str, &str)]) {
    use josef_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    let req = IncrementalAlterConfigsRequest {
        resources: vec![AlterConfigsResource {
            resource_type: 2,
            resource_name: topic.into(),
            configs: configs
                .iter()
                .map(|(k, v)| AlterableConfig {
                    name: (*k).into(),
                    config_operation: 0,
                    value: Some((*v).into()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::IncrementalAlterConfigs(r) = c.call(1, req).await else {
        panic!()
    };
    assert_eq!(
        r.responses[0].error_code, 0,
        "{:?}",
        r.responses[0].error_message
    );
}

#[tokio::test]
async fn a_topic_config_change_rules_the_next_produce() {
    // The produce path reads the partition's parsed config: a change must be parsed again.
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path()).await;
    let mut c = Client::connect(&broker).await;
    create_topic(&mut c, "altered", &[]).await;
    let old = || {
        RecordBatchBuilder::new()
            .record(now() - 7_200_000, Some(b"k"), Some(b"old"))
            .build_bytes()
            .unwrap()
    };
    assert_eq!(produce(&mut c, 9, "altered", old()).await.error_code, 0);
    alter_topic_configs(
        &mut c,
        "altered",
        &[
            ("message.timestamp.before.max.ms", "3600000"),
            ("compression.type", "gzip"),
            ("cleanup.policy", "compact"),
        ],
    )
    .await;
    assert_eq!(produce(&mut c, 9, "altered", old()).await.error_code, 32);
    let no_key = RecordBatchBuilder::new()
        .record(now(), None, Some(b"v"))
        .build_bytes()
        .unwrap();
    assert_eq!(produce(&mut c, 9, "altered", no_key).await.error_code, 87);
    let fresh = RecordBatchBuilder::new()
        .record(now(), Some(b"k"), Some(b"v"))
        .build_bytes()
        .unwrap();
    let p = produce(&mut c, 9, "altered", fresh).await;
    assert_eq!((p.error_code, p.base_offset), (0, 1));
    // The second batch in the log (after the first, uncompressed one) was stored in gzip.
    let data = fetch_first_batch(&mut c, "altered").await.unwrap();
    let first = BatchHeader::parse(&data).unwrap();
    assert_eq!(first.compression().unwrap(), Compression::None);
    let second = BatchHeader::parse(&data[first.total_size()..]).unwrap();
    assert_eq!(second.compression().unwrap(), Compression::Gzip);
    broker.shutdown().await;
}

#[tokio::test]
async fn a_transactional_batch_without_transactional_id_fails_every_partition() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path()).await;
    let mut c = Client::connect(&broker).await;
    create_topic(&mut c, "plain", &[]).await;
    let txn = RecordBatchBuilder::new()
        .producer(1000, 0, 0)
        .transactional(true)
        .record(now(), None, Some(b"t"))
        .build()
        .unwrap();
    // Even followed by a second batch (which alone would be INVALID_RECORD): the first decides.
    let mut two = txn.clone();
    two.extend_from_slice(&txn);
    let plain = RecordBatchBuilder::new()
        .record(now(), None, Some(b"p"))
        .build_bytes()
        .unwrap();
    let req = ProduceRequest {
        acks: -1,
        timeout_ms: 5000,
        topic_data: vec![
            TopicProduceData {
                name: "plain".into(),
                partition_data: vec![PartitionProduceData {
                    index: 0,
                    records: Some(plain),
                    ..Default::default()
                }],
                ..Default::default()
            },
            TopicProduceData {
                name: "missing".into(),
                partition_data: vec![PartitionProduceData {
                    index: 0,
                    records: Some(two.freeze()),
                    ..Default::default()
                }],
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let ResponseBody::Produce(r) = c.call(9, req).await else {
        panic!()
    };
    for t in &r.responses {
        assert_eq!(t.partition_responses[0].error_code, 53, "{}", t.name);
    }
    broker.shutdown().await;
}

/// `producer.id.expiration.ms` through the broker's own periodic check
/// (`producer.id.expiration.check.interval.ms`): a producer idle past it is forgotten, so its
/// batch at a later sequence is taken where it was refused before the expiry.
#[tokio::test]
async fn an_idle_producer_id_expires_at_the_check_interval() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_with(
        dir.path(),
        &[
            ("offsets.topic.num.partitions", "1"),
            ("transaction.state.log.num.partitions", "1"),
            ("producer.id.expiration.ms", "2000"),
            ("producer.id.expiration.check.interval.ms", "50"),
        ],
    )
    .await;
    let mut c = Client::connect(&broker).await;
    create_topic(&mut c, "t", &[]).await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let batch = |seq: i32, ts: i64| -> Bytes {
        RecordBatchBuilder::new()
            .producer(4242, 0, seq)
            .record(ts, None, Some(b"v"))
            .build_bytes()
            .unwrap()
    };
    // Stamped now: not idle for long enough, so a gap is refused for now.
    let r = common::produce_records(&mut c, 9, "t", batch(0, now)).await;
    assert_eq!(r.error_code, 0);
    let r = common::produce_records(&mut c, 9, "t", batch(7, now)).await;
    assert_eq!(
        r.error_code, 45,
        "OUT_OF_ORDER_SEQUENCE_NUMBER while the producer is known"
    );
    // Two seconds after its last batch the periodic check forgets it; bounded wait.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let r = common::produce_records(&mut c, 9, "t", batch(7, now)).await;
        if r.error_code == 0 {
            break;
        }
        assert_eq!(r.error_code, 45);
        assert!(
            std::time::Instant::now() < deadline,
            "the producer was never expired"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    broker.shutdown().await;
}
