//! Requests measured against client quotas and their answers throttled, as a broker sees them.

use std::time::Duration;

use bytes::Bytes;
use josef_protocol::messages::create_topics_request::CreatableTopic;
use josef_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use josef_protocol::messages::*;
use josef_protocol::{ErrorCode, RequestBody, ResponseBody, Uuid};
use josef_quota::{
    EntityName, QuotaChange, QuotaClient, QuotaEntity, QuotaManagersConfig, QuotaWindow,
    RequestQuotas, TopicPartitionCounts,
};

const T0: u64 = 1_700_000_000_000;
const APP: QuotaClient<'static> = QuotaClient {
    user: "ANONYMOUS",
    client_id: "app",
};

/// Every topic has 4 partitions; `num.partitions` is 3.
struct Topics;
impl TopicPartitionCounts for Topics {
    fn partition_count(&self, _: Option<&str>, _: Uuid) -> usize {
        4
    }
    fn default_num_partitions(&self) -> usize {
        3
    }
}

fn quotas(key: &str, value: f64) -> RequestQuotas {
    let mut q = RequestQuotas::new(QuotaManagersConfig {
        client: QuotaWindow::new(2, 1).unwrap(),
        controller: QuotaWindow::new(2, 1).unwrap(),
        replication: QuotaWindow::default(),
    });
    q.apply(&QuotaChange {
        entity: QuotaEntity::ClientId(EntityName::from("app")),
        key: key.into(),
        value: Some(value),
    });
    q
}

fn fetch_response(bytes: usize) -> ResponseBody {
    ResponseBody::Fetch(FetchResponse {
        session_id: 77,
        responses: vec![FetchableTopicResponse {
            partitions: vec![PartitionData {
                records: Some(Bytes::from(vec![0u8; bytes])),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    })
}

#[test]
fn nothing_is_measured_without_a_quota_or_for_inter_broker_requests() {
    let mut none = RequestQuotas::new(QuotaManagersConfig::default());
    let mut produce = RequestBody::Produce(ProduceRequest::default());
    assert!(none
        .begin(APP, 9, &mut produce, 1 << 20, T0, &Topics)
        .is_none());
    let mut q = quotas("request_percentage", 1.0);
    let mut heartbeat = RequestBody::BrokerHeartbeat(BrokerHeartbeatRequest::default());
    assert!(q.begin(APP, 1, &mut heartbeat, 10, T0, &Topics).is_none());
    assert!(q.begin(APP, 9, &mut produce, 10, T0, &Topics).is_some());
}

#[test]
fn produce_bytes_throttle_and_the_response_carries_it() {
    let mut q = quotas("producer_byte_rate", 1000.0);
    let mut other = RequestBody::Produce(ProduceRequest::default());
    let bob = QuotaClient {
        user: "ANONYMOUS",
        client_id: "bob",
    };
    let b = q.begin(bob, 9, &mut other, 50_000, T0, &Topics).unwrap();
    assert_eq!(q.finish(&b, Duration::ZERO, None, T0), 0);
    let mut body = RequestBody::Produce(ProduceRequest::default());
    let m = q.begin(APP, 5, &mut body, 50_000, T0, &Topics).unwrap();
    let mut resp = ResponseBody::Produce(ProduceResponse::default());
    let throttle = q.finish(&m, Duration::ZERO, Some(&mut resp), T0);
    assert!(throttle > 0);
    let ResponseBody::Produce(p) = resp else {
        unreachable!()
    };
    assert_eq!(i64::from(p.throttle_time_ms), throttle as i64);
    // Produce v5 predates KIP-219: the broker holds the answer.
    assert!(!m.client_backs_off());
    let mut body = RequestBody::Produce(ProduceRequest::default());
    assert!(q
        .begin(APP, 6, &mut body, 1, T0, &Topics)
        .unwrap()
        .client_backs_off());
}

#[test]
fn a_consumer_fetch_is_capped_and_answered_empty_when_throttled_but_a_follower_is_exempt() {
    let mut q = quotas("consumer_byte_rate", 1000.0);
    let mut follower = RequestBody::Fetch(FetchRequest {
        replica_id: 1,
        max_bytes: i32::MAX,
        ..Default::default()
    });
    assert!(q.begin(APP, 12, &mut follower, 10, T0, &Topics).is_none());
    let mut follower15 = RequestBody::Fetch(FetchRequest {
        replica_id: -1,
        replica_state: fetch_request::ReplicaState {
            replica_id: 2,
            ..Default::default()
        },
        ..Default::default()
    });
    assert!(q.begin(APP, 15, &mut follower15, 10, T0, &Topics).is_none());

    let mut fetch = RequestBody::Fetch(FetchRequest {
        replica_id: -1,
        max_bytes: i32::MAX,
        ..Default::default()
    });
    let f = q.begin(APP, 12, &mut fetch, 10, T0, &Topics).unwrap();
    let RequestBody::Fetch(r) = &fetch else {
        unreachable!()
    };
    // quota × (num − 1) × size: 1000 × 1 × 1.
    assert_eq!(r.max_bytes, 1000);
    // Within the quota: the records go out.
    let mut small = fetch_response(500);
    assert_eq!(q.finish(&f, Duration::ZERO, Some(&mut small), T0), 0);
    assert_eq!(small, fetch_response(500));
    // Over it: nothing but the session and the throttle.
    let mut fetch = RequestBody::Fetch(FetchRequest {
        replica_id: -1,
        ..Default::default()
    });
    let f = q.begin(APP, 12, &mut fetch, 10, T0, &Topics).unwrap();
    let mut big = fetch_response(50_000);
    let throttle = q.finish(&f, Duration::ZERO, Some(&mut big), T0);
    assert!(throttle > 0);
    let ResponseBody::Fetch(r) = big else {
        unreachable!()
    };
    assert_eq!(r.session_id, 77);
    assert!(r.responses.is_empty());
    assert_eq!(i64::from(r.throttle_time_ms), throttle as i64);
    // The withheld bytes were un-recorded: the same small fetch is still within the quota.
    let mut fetch = RequestBody::Fetch(FetchRequest {
        replica_id: -1,
        ..Default::default()
    });
    let f = q.begin(APP, 12, &mut fetch, 10, T0, &Topics).unwrap();
    let mut small = fetch_response(100);
    assert_eq!(q.finish(&f, Duration::ZERO, Some(&mut small), T0), 0);
}

#[test]
fn handler_time_counts_against_request_percentage() {
    let mut q = quotas("request_percentage", 1.0);
    let mut body = RequestBody::Metadata(MetadataRequest::default());
    let m = q.begin(APP, 12, &mut body, 10, T0, &Topics).unwrap();
    let mut resp = ResponseBody::Metadata(MetadataResponse::default());
    let throttle = q.finish(&m, Duration::from_millis(500), Some(&mut resp), T0);
    assert!(throttle > 0);
    let ResponseBody::Metadata(r) = resp else {
        unreachable!()
    };
    assert_eq!(i64::from(r.throttle_time_ms), throttle as i64);
}

fn create_topics(names: &[&str]) -> RequestBody {
    RequestBody::CreateTopics(CreateTopicsRequest {
        topics: names
            .iter()
            .map(|n| CreatableTopic {
                name: (*n).into(),
                num_partitions: -1,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    })
}

fn topic_count(body: &RequestBody) -> usize {
    let RequestBody::CreateTopics(r) = body else {
        unreachable!()
    };
    r.topics.len()
}

#[test]
fn a_strict_mutation_quota_refuses_topics_and_an_old_version_is_only_throttled() {
    // 1 partition/s over 2 × 1 s: a burst of 2; each topic takes num.partitions = 3.
    let mut q = quotas("controller_mutation_rate", 1.0);
    let mut body = create_topics(&["a", "b", "c"]);
    let m = q.begin(APP, 6, &mut body, 10, T0, &Topics).unwrap();
    // "a" drives the bucket below zero; "b" and "c" meet it there.
    assert_eq!(topic_count(&body), 1);
    assert_eq!(m.mutation().unwrap().throttled_topics(), 2);
    let mut resp = ResponseBody::CreateTopics(CreateTopicsResponse::default());
    let throttle = q.finish(&m, Duration::ZERO, Some(&mut resp), T0);
    assert!(throttle > 0);
    let ResponseBody::CreateTopics(r) = resp else {
        unreachable!()
    };
    assert_eq!(i64::from(r.throttle_time_ms), throttle as i64);
    let refused: Vec<_> = r.topics.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(refused, ["b", "c"]);
    for t in &r.topics {
        assert_eq!(t.error_code, ErrorCode::ThrottlingQuotaExceeded.code());
        assert_eq!((t.num_partitions, t.replication_factor), (-1, -1));
    }
    // CreateTopics v5 is not strict: every topic goes on, the answer is throttled.
    let mut body = create_topics(&["d", "e"]);
    let m = q.begin(APP, 5, &mut body, 10, T0, &Topics).unwrap();
    assert_eq!(topic_count(&body), 2);
    let mut resp = ResponseBody::CreateTopics(CreateTopicsResponse::default());
    assert!(q.finish(&m, Duration::ZERO, Some(&mut resp), T0) > 0);
    let ResponseBody::CreateTopics(r) = resp else {
        unreachable!()
    };
    assert!(r.topics.is_empty());
}

#[test]
fn deleting_and_adding_partitions_charge_the_partitions_concerned() {
    // Deleting "x" (4 partitions) empties a burst of 2, so "y" is refused.
    let mut q = quotas("controller_mutation_rate", 1.0);
    let mut body = RequestBody::DeleteTopics(DeleteTopicsRequest {
        topic_names: vec!["x".into(), "y".into()],
        ..Default::default()
    });
    let m = q.begin(APP, 5, &mut body, 10, T0, &Topics).unwrap();
    let RequestBody::DeleteTopics(r) = &body else {
        unreachable!()
    };
    assert_eq!(r.topic_names, vec![josef_protocol::StrBytes::from("x")]);
    let mut resp = ResponseBody::DeleteTopics(DeleteTopicsResponse::default());
    q.finish(&m, Duration::ZERO, Some(&mut resp), T0);
    let ResponseBody::DeleteTopics(r) = resp else {
        unreachable!()
    };
    assert_eq!(r.responses.len(), 1);
    assert_eq!(r.responses[0].name.as_deref(), Some("y"));
    assert_eq!(
        r.responses[0].error_code,
        ErrorCode::ThrottlingQuotaExceeded.code()
    );
    // Growing a 4-partition topic to 5 costs one permit: within a fresh bucket's burst.
    let mut q = quotas("controller_mutation_rate", 1.0);
    let mut body = RequestBody::CreatePartitions(CreatePartitionsRequest {
        topics: vec![create_partitions_request::CreatePartitionsTopic {
            name: "x".into(),
            count: 5,
            ..Default::default()
        }],
        ..Default::default()
    });
    let m = q.begin(APP, 3, &mut body, 10, T0, &Topics).unwrap();
    let mut resp = ResponseBody::CreatePartitions(CreatePartitionsResponse::default());
    assert_eq!(q.finish(&m, Duration::ZERO, Some(&mut resp), T0), 0);
    assert_eq!(m.mutation().unwrap().throttled_topics(), 0);
}
