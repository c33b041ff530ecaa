//! Client quotas as a client sees them: AlterClientQuotas / DescribeClientQuotas, and Produce and
//! Fetch over a byte-rate quota answered with `throttle_time_ms` and a muted connection (KIP-219).
//!
//! The broker runs with `quota.window.num=2`, so a rate is measured over at least one 1 s window
//! and a test's throttle stays near a second.

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use josef_protocol::messages::alter_client_quotas_request::AlterClientQuotasRequest;
use josef_protocol::messages::fetch_request::FetchTopic;
use josef_protocol::messages::*;
use josef_protocol::{
    decode_response_frame, encode_request_frame, ApiKey, ErrorCode, RequestBody, ResponseBody,
};
use josef_records::RecordBatchBuilder;
use josef_server::Broker;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

mod common;
use common::{fetch_partition, produce_request, start_with};

async fn start(dir: &std::path::Path) -> Broker {
    start_with(
        dir,
        &[
            ("offsets.topic.num.partitions", "1"),
            ("transaction.state.log.num.partitions", "1"),
            ("quota.window.num", "2"),
        ],
    )
    .await
}

/// A raw client with its own client id.
struct Conn {
    stream: TcpStream,
    client_id: &'static str,
    correlation: i32,
}

impl Conn {
    async fn open(b: &Broker, client_id: &'static str) -> Conn {
        Conn {
            stream: TcpStream::connect(b.listeners()[0].addr).await.unwrap(),
            client_id,
            correlation: 0,
        }
    }

    async fn send(&mut self, version: i16, body: impl Into<RequestBody>) {
        let body = body.into();
        self.correlation += 1;
        let header = RequestHeader {
            request_api_key: body.api_key() as i16,
            request_api_version: version,
            correlation_id: self.correlation,
            client_id: Some(self.client_id.into()),
            ..Default::default()
        };
        let mut buf = BytesMut::new();
        encode_request_frame(&header, &body, &mut buf).unwrap();
        self.stream.write_all(&buf).await.unwrap();
    }

    async fn recv(&mut self, key: ApiKey, version: i16) -> ResponseBody {
        let read = async {
            let mut len = [0u8; 4];
            self.stream.read_exact(&mut len).await.unwrap();
            let mut body = vec![0u8; i32::from_be_bytes(len) as usize];
            self.stream.read_exact(&mut body).await.unwrap();
            decode_response_frame(key, version, Bytes::from(body))
                .unwrap()
                .1
        };
        tokio::time::timeout(Duration::from_secs(20), read)
            .await
            .expect("a response within 20 s")
    }

    async fn call(&mut self, version: i16, body: impl Into<RequestBody>) -> ResponseBody {
        let body = body.into();
        let key = body.api_key();
        self.send(version, body).await;
        self.recv(key, version).await
    }

    async fn produce(&mut self, version: i16, topic: &str, records: Bytes) -> ProduceResponse {
        let ResponseBody::Produce(r) = self.call(version, produce_request(topic, records)).await
        else {
            panic!("not a produce response")
        };
        r
    }

    /// Sends ApiVersions and returns how long its answer took.
    async fn api_versions_latency(&mut self) -> Duration {
        let t = Instant::now();
        self.call(3, ApiVersionsRequest::default()).await;
        t.elapsed()
    }
}

/// An entity's (type, name) components.
type Entity<'a> = &'a [(&'a str, Option<&'a str>)];
/// Operations: (key, value), `None` removing the key.
type Ops<'a> = &'a [(&'a str, Option<f64>)];

fn alter(entries: &[(Entity<'_>, Ops<'_>)], validate_only: bool) -> AlterClientQuotasRequest {
    AlterClientQuotasRequest {
        entries: entries
            .iter()
            .map(|(e, ops)| josef_quota::alter_entry(e, ops))
            .collect(),
        validate_only,
        ..Default::default()
    }
}

async fn alter_codes(c: &mut Conn, version: i16, req: AlterClientQuotasRequest) -> Vec<i16> {
    let ResponseBody::AlterClientQuotas(r) = c.call(version, req).await else {
        panic!("not an AlterClientQuotas response")
    };
    r.entries.iter().map(|e| e.error_code).collect()
}

async fn set_client_quota(c: &mut Conn, client: &str, key: &str, value: f64) {
    let codes = alter_codes(
        c,
        1,
        alter(
            &[(&[("client-id", Some(client))], &[(key, Some(value))])],
            false,
        ),
    )
    .await;
    assert_eq!(codes, vec![0]);
}

/// Describe with (type, match type, match) components: entity → (key, value) pairs.
async fn describe(
    c: &mut Conn,
    version: i16,
    components: &[(&str, i8, Option<&str>)],
    strict: bool,
) -> Result<Vec<(Vec<(String, Option<String>)>, Vec<(String, f64)>)>, i16> {
    let req = josef_quota::describe_request(components, strict);
    let ResponseBody::DescribeClientQuotas(r) = c.call(version, req).await else {
        panic!("not a DescribeClientQuotas response")
    };
    if r.error_code != 0 {
        return Err(r.error_code);
    }
    Ok(r.entries
        .unwrap_or_default()
        .iter()
        .map(|e| {
            (
                e.entity
                    .iter()
                    .map(|x| {
                        (
                            x.entity_type.to_string(),
                            x.entity_name.as_ref().map(|n| n.to_string()),
                        )
                    })
                    .collect(),
                e.values
                    .iter()
                    .map(|v| (v.key.to_string(), v.value))
                    .collect(),
            )
        })
        .collect())
}

async fn create_topic(c: &mut Conn, name: &str) {
    let ResponseBody::CreateTopics(r) = c.call(7, creatable(&[name], 1)).await else {
        panic!("not a CreateTopics response")
    };
    assert_eq!(r.topics[0].error_code, 0);
}

/// One batch of one record with a `size`-byte value.
fn batch(size: usize) -> Bytes {
    RecordBatchBuilder::new()
        .record(0, None, Some(&vec![b'x'; size]))
        .build_bytes()
        .unwrap()
}

const INVALID_REQUEST: i16 = ErrorCode::InvalidRequest as i16;

#[tokio::test]
async fn describe_returns_what_alter_set_and_bad_alterations_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path()).await;
    let mut c = Conn::open(&broker, "admin").await;
    // v0 and v1 both serve.
    let codes = alter_codes(
        &mut c,
        0,
        alter(
            &[
                (
                    &[("user", Some("alice"))],
                    &[("producer_byte_rate", Some(1024.0))],
                ),
                (
                    &[("user", Some("alice")), ("client-id", None)],
                    &[
                        ("consumer_byte_rate", Some(2048.0)),
                        ("request_percentage", Some(12.5)),
                    ],
                ),
                (
                    &[("client-id", None)],
                    &[("producer_byte_rate", Some(4096.0))],
                ),
                (
                    &[("ip", Some("10.0.0.1"))],
                    &[("connection_creation_rate", Some(5.0))],
                ),
            ],
            false,
        ),
    )
    .await;
    assert_eq!(codes, vec![0, 0, 0, 0]);

    let alice = describe(&mut c, 1, &[("user", 0, Some("alice"))], true).await;
    assert_eq!(
        alice,
        Ok(vec![(
            vec![("user".into(), Some("alice".into()))],
            vec![("producer_byte_rate".into(), 1024.0)]
        )])
    );
    // Not strict: alice's (user, default client-id) entity matches too.
    assert_eq!(
        describe(&mut c, 1, &[("user", 0, Some("alice"))], false)
            .await
            .unwrap()
            .len(),
        2
    );
    let default_client = describe(&mut c, 0, &[("client-id", 1, None)], true).await;
    assert_eq!(
        default_client,
        Ok(vec![(
            vec![("client-id".into(), None)],
            vec![("producer_byte_rate".into(), 4096.0)]
        )])
    );
    // SPECIFIED ("any"): every entity with a client-id.
    assert_eq!(
        describe(&mut c, 1, &[("client-id", 2, None)], false)
            .await
            .unwrap()
            .len(),
        2
    );
    assert_eq!(describe(&mut c, 1, &[], false).await.unwrap().len(), 4);
    assert_eq!(
        describe(
            &mut c,
            1,
            &[("ip", 0, Some("10.0.0.1")), ("user", 2, None)],
            false
        )
        .await,
        Err(INVALID_REQUEST)
    );
    assert_eq!(
        describe(&mut c, 1, &[("group", 2, None)], false).await,
        Err(ErrorCode::UnsupportedVersion as i16)
    );

    // Refused: a fractional byte rate, a zero rate, ip with user, a key the entity cannot take, an
    // unknown entity type, an address that is not one.
    let codes = alter_codes(
        &mut c,
        1,
        alter(
            &[
                (
                    &[("user", Some("bob"))],
                    &[("producer_byte_rate", Some(1.5))],
                ),
                (
                    &[("user", Some("carol"))],
                    &[("consumer_byte_rate", Some(0.0))],
                ),
                (
                    &[("ip", Some("10.0.0.2")), ("user", None)],
                    &[("connection_creation_rate", Some(1.0))],
                ),
                (
                    &[("user", Some("dave"))],
                    &[("connection_creation_rate", Some(1.0))],
                ),
                (
                    &[("group", Some("g"))],
                    &[("producer_byte_rate", Some(1.0))],
                ),
                (
                    &[("ip", Some("not-an-ip"))],
                    &[("connection_creation_rate", Some(1.0))],
                ),
                (&[("user", Some("erin"))], &[("no_such_quota", Some(1.0))]),
            ],
            false,
        ),
    )
    .await;
    assert_eq!(codes, vec![INVALID_REQUEST; 7]);
    // validate_only answers but writes nothing.
    let codes = alter_codes(
        &mut c,
        1,
        alter(
            &[(
                &[("user", Some("frank"))],
                &[("producer_byte_rate", Some(10.0))],
            )],
            true,
        ),
    )
    .await;
    assert_eq!(codes, vec![0]);
    assert_eq!(
        describe(&mut c, 1, &[("user", 0, Some("frank"))], false).await,
        Ok(vec![])
    );
    // Removing a key.
    let codes = alter_codes(
        &mut c,
        1,
        alter(
            &[(&[("user", Some("alice"))], &[("producer_byte_rate", None)])],
            false,
        ),
    )
    .await;
    assert_eq!(codes, vec![0]);
    assert_eq!(
        describe(&mut c, 1, &[("user", 0, Some("alice"))], true).await,
        Ok(vec![])
    );
    broker.shutdown().await;

    // The quotas are metadata records: they survive a restart.
    let broker = start(dir.path()).await;
    let mut c = Conn::open(&broker, "admin").await;
    assert_eq!(describe(&mut c, 1, &[], false).await.unwrap().len(), 3);
    broker.shutdown().await;
}

#[tokio::test]
async fn produce_over_its_quota_is_throttled_and_the_connection_muted() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path()).await;
    let mut admin = Conn::open(&broker, "admin").await;
    create_topic(&mut admin, "t").await;
    set_client_quota(&mut admin, "slow", "producer_byte_rate", 50_000.0).await;

    // 100 kB at once against 50 kB/s measured over one 1 s window: about 1 s of throttle.
    let mut slow = Conn::open(&broker, "slow").await;
    let r = slow.produce(9, "t", batch(100_000)).await;
    assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
    let throttle = r.throttle_time_ms;
    assert!((500..=1_500).contains(&throttle), "throttle {throttle}");
    // The connection reads nothing more until the throttle has passed.
    let waited = slow.api_versions_latency().await;
    assert!(
        waited >= Duration::from_millis(throttle as u64 - 100),
        "answered after {waited:?}, throttle {throttle} ms"
    );
    // After it the connection is served at once again.
    assert!(slow.api_versions_latency().await < Duration::from_millis(300));

    // Another client id has no quota: the same load is not throttled.
    let mut fast = Conn::open(&broker, "fast").await;
    for _ in 0..3 {
        let r = fast.produce(9, "t", batch(100_000)).await;
        assert_eq!(r.throttle_time_ms, 0);
    }
    assert!(fast.api_versions_latency().await < Duration::from_millis(300));

    // A client older than KIP-219 (Produce v5) gets its answer late instead of a throttle to
    // honour itself.
    let mut old = Conn::open(&broker, "slow").await;
    let t = Instant::now();
    let r = old.produce(5, "t", batch(100_000)).await;
    assert!(r.throttle_time_ms > 0);
    // Saturating: a throttle under 100 ms underflowed here (a panic, not a failed assertion).
    let throttle = u64::try_from(r.throttle_time_ms).unwrap();
    assert!(t.elapsed() >= Duration::from_millis(throttle.saturating_sub(100)));
    broker.shutdown().await;
}

#[tokio::test]
async fn a_fetch_over_its_quota_is_answered_empty_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path()).await;
    let mut admin = Conn::open(&broker, "admin").await;
    create_topic(&mut admin, "t").await;
    for _ in 0..20 {
        let r = admin.produce(9, "t", batch(3_000)).await;
        assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
    }
    set_client_quota(&mut admin, "reader", "consumer_byte_rate", 10_000.0).await;

    let mut reader = Conn::open(&broker, "reader").await;
    let fetch = |offset: i64| FetchRequest {
        replica_id: -1,
        max_wait_ms: 0,
        min_bytes: 1,
        max_bytes: 50 << 20,
        topics: vec![FetchTopic {
            topic: "t".into(),
            partitions: vec![fetch_partition(0, offset)],
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut offset = 0i64;
    let mut throttled = 0;
    let t0 = Instant::now();
    while offset < 20 {
        let ResponseBody::Fetch(r) = reader.call(12, fetch(offset)).await else {
            panic!("not a fetch response")
        };
        let records = r
            .responses
            .first()
            .and_then(|t| t.partitions.first())
            .and_then(|p| p.records.clone())
            .unwrap_or_default();
        if r.throttle_time_ms > 0 {
            throttled += 1;
            // A throttled fetch carries no data.
            assert!(r.responses.is_empty());
            continue;
        }
        // max_bytes is capped at quota × (num − 1) × size = 10 kB (at least one batch).
        assert!(records.len() <= 10_000, "{} bytes", records.len());
        let mut b = records;
        while !b.is_empty() {
            let header = josef_records::BatchHeader::parse(&b).unwrap();
            offset = header.last_offset() + 1;
            b = b.slice(header.total_size()..);
        }
    }
    // 60 kB at 10 kB/s: throttled on the way and about 5 s in all.
    assert!(throttled > 0);
    assert!(t0.elapsed() >= Duration::from_secs(3), "{:?}", t0.elapsed());
    broker.shutdown().await;
}

#[tokio::test]
async fn request_percentage_throttles_a_metadata_flood_by_at_most_one_window_and_user_quotas_apply()
{
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path()).await;
    let mut admin = Conn::open(&broker, "admin").await;
    create_topic(&mut admin, "t").await;
    // A user quota: the principal of a PLAINTEXT connection is User:ANONYMOUS. The user level
    // (3) beats the client-id level (7), so the generous client-id quota does not help.
    let codes = alter_codes(
        &mut admin,
        1,
        alter(
            &[
                (
                    &[("user", Some("ANONYMOUS"))],
                    &[("request_percentage", Some(0.01))],
                ),
                (
                    &[("client-id", Some("flood"))],
                    &[("request_percentage", Some(1000.0))],
                ),
            ],
            false,
        ),
    )
    .await;
    assert_eq!(codes, vec![0, 0]);
    let mut flood = Conn::open(&broker, "flood").await;
    let mut throttles = Vec::new();
    for _ in 0..200 {
        let ResponseBody::Metadata(r) = flood
            .call(
                12,
                MetadataRequest {
                    topics: None,
                    ..Default::default()
                },
            )
            .await
        else {
            panic!("not a metadata response")
        };
        throttles.push(r.throttle_time_ms);
        if r.throttle_time_ms > 0 {
            break;
        }
    }
    let throttle = *throttles.last().unwrap();
    // 0.01 % of a thread is 100 µs per second: a few Metadata requests exceed it.
    assert!(throttle > 0, "{throttles:?}");
    // A request throttle is capped at one window.
    assert!(throttle <= 1_000, "{throttle}");
    broker.shutdown().await;
}

fn creatable(names: &[&str], partitions: i32) -> CreateTopicsRequest {
    CreateTopicsRequest {
        topics: names
            .iter()
            .map(|n| create_topics_request::CreatableTopic {
                name: (*n).into(),
                num_partitions: partitions,
                replication_factor: 1,
                ..Default::default()
            })
            .collect(),
        timeout_ms: 5000,
        ..Default::default()
    }
}

#[tokio::test]
async fn controller_mutation_rate_refuses_topics_past_the_burst_from_create_topics_v6() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path()).await;
    let mut admin = Conn::open(&broker, "admin").await;
    for client in ["mutator", "old-mutator"] {
        set_client_quota(&mut admin, client, "controller_mutation_rate", 1.0).await;
    }
    // 1 partition/s with controller.quota.window.num 11: a burst of 11 partitions. The first topic
    // takes 6, the second drives the bucket below zero, the rest are refused.
    let mut c = Conn::open(&broker, "mutator").await;
    let ResponseBody::CreateTopics(r) = c.call(6, creatable(&["m1", "m2", "m3", "m4"], 6)).await
    else {
        panic!("not a CreateTopics response")
    };
    let codes: Vec<(String, i16)> = r
        .topics
        .iter()
        .map(|t| (t.name.to_string(), t.error_code))
        .collect();
    let throttled = ErrorCode::ThrottlingQuotaExceeded as i16;
    assert_eq!(
        codes,
        vec![
            ("m1".into(), 0),
            ("m2".into(), 0),
            ("m3".into(), throttled),
            ("m4".into(), throttled)
        ]
    );
    assert!(r.throttle_time_ms > 0);
    // CreateTopics v5 is permissive: everything is created, and the client is throttled.
    let mut old = Conn::open(&broker, "old-mutator").await;
    let ResponseBody::CreateTopics(r) = old.call(5, creatable(&["o1", "o2", "o3"], 6)).await else {
        panic!("not a CreateTopics response")
    };
    // All three answered NONE (`all` over an empty answer would pass).
    let created: Vec<(String, i16)> = r
        .topics
        .iter()
        .map(|t| (t.name.to_string(), t.error_code))
        .collect();
    assert_eq!(
        created,
        [
            ("o1".to_string(), 0),
            ("o2".to_string(), 0),
            ("o3".to_string(), 0)
        ],
        "{r:?}"
    );
    assert!(r.throttle_time_ms > 0);
    broker.shutdown().await;
}
