//! Old clients: Fetch v0–3 get their data down-converted to legacy message sets (magic 0 for
//! v0/v1, magic 1 for v2/v3) with Kafka 2.x's sizing rules, and ListOffsets v0 answers
//! old_style_offsets. A broker started in-process on port 0, spoken to with josef-protocol frames.

use bytes::Bytes;
use josef_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use josef_protocol::messages::fetch_response::PartitionData;
use josef_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use josef_protocol::messages::*;
use josef_protocol::{ErrorCode, ResponseBody};
use josef_records::{
    Compression, DecompressLimits, LegacyMessageSet, LegacyRecord, RecordBatchBuilder,
    RecordsError, TimestampType,
};

mod common;
use common::{create_topic, create_topic_with, start_with, Client};

/// Produces one v2 batch (Produce v9); returns its base offset.
async fn produce(c: &mut Client, topic: &str, batch: Bytes) -> i64 {
    let p = common::produce_records(c, 9, topic, batch).await;
    assert_eq!(p.error_code, 0);
    p.base_offset
}

fn batch(codec: Compression, values: &[&[u8]]) -> Bytes {
    let mut b = RecordBatchBuilder::new().compression(codec);
    for (i, v) in values.iter().enumerate() {
        b = b.record_with_headers(
            1_700_000_000_000 + i as i64,
            Some(format!("k{i}").as_bytes()),
            Some(v),
            &[(b"header", Some(b"dropped"))],
        );
    }
    b.build_bytes().unwrap()
}

fn fetch_req(
    topic: &str,
    fetch_offset: i64,
    partition_max_bytes: i32,
    max_bytes: i32,
) -> FetchRequest {
    FetchRequest {
        replica_id: -1,
        max_wait_ms: 0,
        min_bytes: 1,
        max_bytes,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: topic.into(),
            partitions: vec![FetchPartition {
                partition: 0,
                fetch_offset,
                partition_max_bytes,
                current_leader_epoch: -1,
                log_start_offset: -1,
                last_fetched_epoch: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

async fn fetch_partition(
    c: &mut Client,
    version: i16,
    topic: &str,
    fetch_offset: i64,
    partition_max_bytes: i32,
) -> PartitionData {
    let r = c
        .fetch(
            version,
            fetch_req(topic, fetch_offset, partition_max_bytes, 1 << 20),
        )
        .await;
    r.responses[0].partitions[0].clone()
}

fn legacy_records(p: &PartitionData) -> Vec<LegacyRecord> {
    LegacyMessageSet::new(p.records.clone().unwrap())
        .records(&DecompressLimits::default())
        .unwrap()
}

#[tokio::test]
async fn fetch_v0_to_v3_serve_legacy_messages_magic_0_then_1_for_every_legacy_codec() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_with(dir.path(), &[]).await;
    let mut c = Client::connect(&b).await;
    create_topic(&mut c, "old", 1).await;
    let codecs = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
    ];
    for codec in codecs {
        produce(&mut c, "old", batch(codec, &[b"one", b"two"])).await;
    }
    for version in 0..=3 {
        let p = fetch_partition(&mut c, version, "old", 0, 1 << 20).await;
        assert_eq!(p.error_code, 0, "v{version}");
        assert_eq!(p.high_watermark, 8);
        let want_magic = if version <= 1 { 0 } else { 1 };
        let mut messages = 0;
        for m in LegacyMessageSet::new(p.records.clone().unwrap()) {
            let m = m.unwrap();
            m.validate_crc().unwrap();
            assert_eq!(m.magic, want_magic, "v{version}");
            messages += 1;
        }
        // Two plain messages, then one wrapper per compressed batch.
        assert_eq!(messages, 2 + 3, "v{version}");
        let recs = legacy_records(&p);
        assert_eq!(
            recs.iter().map(|r| r.offset).collect::<Vec<_>>(),
            (0..8).collect::<Vec<_>>()
        );
        for (i, r) in recs.iter().enumerate() {
            assert_eq!(r.key.as_deref(), Some(format!("k{}", i % 2).as_bytes()));
            let want: &[u8] = if i % 2 == 0 { b"one" } else { b"two" };
            assert_eq!(r.value.as_deref(), Some(want));
            let want_ts = if version <= 1 {
                -1
            } else {
                1_700_000_000_000 + (i % 2) as i64
            };
            assert_eq!(r.timestamp, want_ts, "v{version} offset {i}");
            assert_eq!(r.timestamp_type, TimestampType::CreateTime);
        }
    }
    b.shutdown().await;
}

#[tokio::test]
async fn fetch_v2_drops_uncompressed_records_below_the_fetch_offset() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_with(dir.path(), &[]).await;
    let mut c = Client::connect(&b).await;
    create_topic(&mut c, "t", 1).await;
    produce(
        &mut c,
        "t",
        batch(Compression::None, &[b"a", b"b", b"c", b"d"]),
    )
    .await;
    produce(&mut c, "t", batch(Compression::Gzip, &[b"e", b"f", b"g"])).await;
    let p = fetch_partition(&mut c, 2, "t", 2, 1 << 20).await;
    let offsets: Vec<i64> = legacy_records(&p).iter().map(|r| r.offset).collect();
    assert_eq!(offsets, [2, 3, 4, 5, 6]);
    // In a compressed batch the whole wrapper comes: the client skips what it has read.
    let p = fetch_partition(&mut c, 2, "t", 5, 1 << 20).await;
    let offsets: Vec<i64> = legacy_records(&p).iter().map(|r| r.offset).collect();
    assert_eq!(offsets, [4, 5, 6]);
    b.shutdown().await;
}

#[tokio::test]
async fn fetch_v0_to_v2_first_batch_beyond_partition_max_bytes_is_a_partial_message() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_with(dir.path(), &[]).await;
    let mut c = Client::connect(&b).await;
    create_topic(&mut c, "big", 1).await;
    produce(&mut c, "big", batch(Compression::None, &[&[7u8; 2000]])).await;
    for version in 0..=2 {
        let p = fetch_partition(&mut c, version, "big", 0, 500).await;
        assert_eq!(p.error_code, 0);
        let records = p.records.clone().unwrap();
        assert_eq!(
            records.len(),
            500,
            "v{version}: exactly partition_max_bytes"
        );
        let err = LegacyMessageSet::new(records).next().unwrap().unwrap_err();
        assert!(err.is_truncated(), "v{version}: {err:?}");
    }
    // v3 (KIP-74): the first message comes whole even beyond both limits.
    let r = c.fetch(3, fetch_req("big", 0, 500, 100)).await;
    let p = &r.responses[0].partitions[0];
    let recs = legacy_records(p);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].value.as_deref().map(<[u8]>::len), Some(2000));
    b.shutdown().await;
}

#[tokio::test]
async fn down_converted_fetch_is_cut_at_the_v2_size_but_never_below_the_first_batch() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_with(dir.path(), &[]).await;
    let mut c = Client::connect(&b).await;
    create_topic(&mut c, "small", 1).await;
    // Many tiny records: legacy messages are far larger than v2 records.
    let tiny = || {
        let mut b = RecordBatchBuilder::new();
        for i in 0..20 {
            b = b.record(1, Some(format!("k{i}").as_bytes()), Some(b"x"));
        }
        b.build_bytes().unwrap()
    };
    let first = tiny();
    let v2_size = first.len() * 2;
    produce(&mut c, "small", first).await;
    produce(&mut c, "small", tiny()).await;
    let p = fetch_partition(&mut c, 3, "small", 0, 1 << 20).await;
    let records = p.records.clone().unwrap();
    // Magic 1, one message per record: 12 + 22 + key "kNN" + value "x".
    let first_batch_legacy: usize = (0..20).map(|i| 34 + format!("k{i}").len() + 1).sum();
    assert!(
        first_batch_legacy > v2_size,
        "the test needs conversion to grow the data"
    );
    assert_eq!(records.len(), first_batch_legacy);
    let offsets: Vec<i64> = legacy_records(&p).iter().map(|r| r.offset).collect();
    assert_eq!(offsets, (0..20).collect::<Vec<_>>());
    // The client moves on and gets the second batch.
    let p = fetch_partition(&mut c, 3, "small", 20, 1 << 20).await;
    let offsets: Vec<i64> = legacy_records(&p).iter().map(|r| r.offset).collect();
    assert_eq!(offsets, (20..40).collect::<Vec<_>>());
    b.shutdown().await;
}

#[tokio::test]
async fn zstd_data_cannot_reach_old_fetchers_but_what_precedes_it_does() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_with(dir.path(), &[]).await;
    let mut c = Client::connect(&b).await;
    // A zstd batch in an ordinary topic: v0–3 cannot express it.
    create_topic(&mut c, "mixed", 1).await;
    produce(&mut c, "mixed", batch(Compression::Zstd, &[b"z"])).await;
    let p = fetch_partition(&mut c, 3, "mixed", 0, 1 << 20).await;
    assert_eq!(p.error_code, ErrorCode::UnsupportedCompressionType.code());
    assert_eq!(p.records.as_deref(), Some(&[][..]));
    assert_eq!(
        fetch_partition(&mut c, 4, "mixed", 0, 1 << 20)
            .await
            .error_code,
        0
    );
    // Batches before a zstd one still reach the client (Kafka converts lazily, batch by batch);
    // the error comes when the zstd batch is first.
    create_topic(&mut c, "later", 1).await;
    produce(&mut c, "later", batch(Compression::Gzip, &[b"a", b"b"])).await;
    let zstd_at = produce(&mut c, "later", batch(Compression::Zstd, &[b"z"])).await;
    let p = fetch_partition(&mut c, 2, "later", 0, 1 << 20).await;
    assert_eq!(p.error_code, 0);
    let offsets: Vec<i64> = legacy_records(&p).iter().map(|r| r.offset).collect();
    assert_eq!(offsets, [0, 1]);
    let p = fetch_partition(&mut c, 2, "later", zstd_at, 1 << 20).await;
    assert_eq!(p.error_code, ErrorCode::UnsupportedCompressionType.code());
    // A zstd topic: below v10 nothing is served (Kafka's rule for old fetchers).
    create_topic_with(&mut c, "zt", 1, &[("compression.type", "zstd")]).await;
    produce(&mut c, "zt", batch(Compression::None, &[b"z"])).await;
    for version in [0, 3, 9] {
        let p = fetch_partition(&mut c, version, "zt", 0, 1 << 20).await;
        assert_eq!(
            p.error_code,
            ErrorCode::UnsupportedCompressionType.code(),
            "v{version}"
        );
    }
    assert_eq!(
        fetch_partition(&mut c, 10, "zt", 0, 1 << 20)
            .await
            .error_code,
        0
    );
    b.shutdown().await;
}

#[tokio::test]
async fn downconversion_disabled_topic_answers_unsupported_version_to_v0_to_v3() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_with(dir.path(), &[]).await;
    let mut c = Client::connect(&b).await;
    create_topic_with(
        &mut c,
        "nodown",
        1,
        &[("message.downconversion.enable", "false")],
    )
    .await;
    produce(&mut c, "nodown", batch(Compression::None, &[b"v"])).await;
    for version in 0..=3 {
        let p = fetch_partition(&mut c, version, "nodown", 0, 1 << 20).await;
        assert_eq!(
            p.error_code,
            ErrorCode::UnsupportedVersion.code(),
            "v{version}"
        );
    }
    assert_eq!(
        fetch_partition(&mut c, 4, "nodown", 0, 1 << 20)
            .await
            .error_code,
        0
    );
    b.shutdown().await;
}

async fn list_offsets_v0(
    c: &mut Client,
    topic: &str,
    partition: i32,
    timestamp: i64,
    max: i32,
) -> (i16, Vec<i64>) {
    let req = ListOffsetsRequest {
        replica_id: -1,
        topics: vec![ListOffsetsTopic {
            name: topic.into(),
            partitions: vec![ListOffsetsPartition {
                partition_index: partition,
                timestamp,
                max_num_offsets: max,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::ListOffsets(r) = c.call(0, req).await else {
        panic!("not a ListOffsets response")
    };
    let p = &r.topics[0].partitions[0];
    (p.error_code, p.old_style_offsets.to_vec())
}

#[tokio::test]
async fn list_offsets_v0_answers_old_style_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_with(dir.path(), &[]).await;
    let mut c = Client::connect(&b).await;
    create_topic(&mut c, "lo", 1).await;
    // An empty log: one empty segment, so latest and earliest are both 0.
    assert_eq!(list_offsets_v0(&mut c, "lo", 0, -1, 1).await, (0, vec![0]));
    assert_eq!(list_offsets_v0(&mut c, "lo", 0, -2, 1).await, (0, vec![0]));
    for _ in 0..3 {
        produce(&mut c, "lo", batch(Compression::None, &[b"a", b"b"])).await;
    }
    // Latest: the LEO (= HW), then the segment base offsets going back.
    assert_eq!(list_offsets_v0(&mut c, "lo", 0, -1, 1).await, (0, vec![6]));
    assert_eq!(
        list_offsets_v0(&mut c, "lo", 0, -1, 10).await,
        (0, vec![6, 0])
    );
    assert_eq!(list_offsets_v0(&mut c, "lo", 0, -2, 10).await, (0, vec![0]));
    // Before every segment was written: nothing; a time in the future: all of them.
    assert_eq!(list_offsets_v0(&mut c, "lo", 0, 1, 10).await, (0, vec![]));
    assert_eq!(
        list_offsets_v0(&mut c, "lo", 0, i64::MAX, 10).await,
        (0, vec![6, 0])
    );
    assert_eq!(
        list_offsets_v0(&mut c, "lo", 7, -1, 1).await,
        (ErrorCode::UnknownTopicOrPartition.code(), vec![])
    );
    b.shutdown().await;
}

#[test]
fn legacy_reader_reports_a_cut_message_as_truncated() {
    // The premise of the partial-message rule: a cut message is a torn tail, not corruption.
    let set = josef_records::LegacySetBuilder::new(1)
        .record(1, None, Some(&[1u8; 100]))
        .build()
        .unwrap()
        .freeze();
    let err = LegacyMessageSet::new(set.slice(..50))
        .next()
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, RecordsError::Truncated { .. }));
}
