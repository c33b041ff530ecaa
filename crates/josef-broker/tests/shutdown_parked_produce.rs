//! SIGTERM of a leader whose acks=-1 produce is parked for followers that do not fetch (both
//! paused with SIGSTOP), on nodes with `controlled.shutdown.enable=false`: leadership does not
//! move first, so the parked produce would hold the partition when its log closes. The node must
//! answer it (REQUEST_TIMED_OUT: not acknowledged), exit 0, and leave the partition's log dir
//! marked clean (`.kafka_cleanshutdown`), so its next start runs no log recovery.
//!
//! Three combined nodes of the built binary on free ports with their own data dirs (josef-testbed);
//! every wait is on a condition, bounded.

use std::net::SocketAddr;
use std::time::Duration;

use josef_protocol::messages::create_topics_request::CreatableTopic;
use josef_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use josef_protocol::messages::{CreateTopicsRequest, ProduceRequest};
use josef_protocol::{ErrorCode, ResponseBody};
use josef_testbed::{client, wait_until, Cluster};

const TOPIC: &str = "parked";
const SETTLE: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(50);

fn create_rf3(addr: SocketAddr) -> bool {
    let req = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: TOPIC.into(),
            num_partitions: 1,
            replication_factor: 3,
            ..Default::default()
        }],
        timeout_ms: 10_000,
        ..Default::default()
    };
    matches!(
        client::call(addr, 7, req.into()),
        Ok(ResponseBody::CreateTopics(r))
            if r.topics.iter().all(|t| t.error_code == 0 || t.error_code == 36 /* exists */)
    )
}

/// The partition's leader, once it has one with all three replicas in the ISR.
fn leader_with_full_isr(addr: SocketAddr) -> Option<i32> {
    let m = client::metadata(addr).ok()?;
    let t = m.topics.iter().find(|t| t.name.as_deref() == Some(TOPIC))?;
    let p = t.partitions.first()?;
    (t.error_code == 0 && p.leader_id > 0 && p.isr_nodes.len() == 3).then_some(p.leader_id)
}

/// Produce v9, acks=-1, one record, waiting at most `timeout_ms` for the ISR. The partition's
/// error code, or `None` if the connection gave no answer.
fn produce_acks_all(addr: SocketAddr, timeout_ms: i32) -> Option<i16> {
    let batch = josef_log::testing::batch(0, 1, &[(None, Some(b"v"))]).freeze();
    let req = ProduceRequest {
        acks: -1,
        timeout_ms,
        topic_data: vec![TopicProduceData {
            name: TOPIC.into(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(batch),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    match client::call(addr, 9, req.into()).ok()? {
        ResponseBody::Produce(r) => {
            Some(r.responses.first()?.partition_responses.first()?.error_code)
        }
        _ => None,
    }
}

#[test]
fn sigterm_of_a_leader_with_a_parked_acks_all_produce_closes_its_logs_clean() {
    let mut cluster = Cluster::builder()
        .combined(3)
        .property("controlled.shutdown.enable", false)
        .start()
        .expect("a 3-node cluster");
    let any = cluster.node(1).unwrap().client_addr().unwrap();
    assert!(
        wait_until(SETTLE, POLL, || create_rf3(any)),
        "CreateTopics {TOPIC}\n{}",
        cluster.logs(40)
    );
    let mut leader = None;
    assert!(
        wait_until(SETTLE, POLL, || {
            leader = leader_with_full_isr(any);
            leader.is_some()
        }),
        "{TOPIC} never had a leader with ISR of 3\n{}",
        cluster.logs(40)
    );
    let leader = leader.unwrap();
    let node = cluster.node(leader).unwrap();
    let addr = node.client_addr().unwrap();
    let dir = node.data_dir().join(format!("{TOPIC}-0"));
    let segment = dir.join("00000000000000000000.log");
    // One marker per log dir, written once every log of the dir is closed.
    let marker = node.data_dir().join(".kafka_cleanshutdown");
    // One acks=-1 produce completes first: every replica exists and fetches.
    let mut first = None;
    assert!(
        wait_until(SETTLE, POLL, || {
            first = produce_acks_all(addr, 8_000);
            first == Some(0)
        }),
        "a first acks=-1 produce to leader {leader}: {first:?}\n{}",
        cluster.logs(40)
    );
    let size = std::fs::metadata(&segment).unwrap().len();
    let followers: Vec<i32> = [1, 2, 3].into_iter().filter(|&i| i != leader).collect();
    for &f in &followers {
        cluster.node_mut(f).unwrap().pause().unwrap();
    }
    let producer = std::thread::spawn(move || produce_acks_all(addr, 600_000));
    // The record is in the leader's log: the produce is parked for the paused followers.
    assert!(
        wait_until(SETTLE, POLL, || std::fs::metadata(&segment)
            .is_ok_and(|m| m.len() > size)),
        "the second produce never reached {}\n{}",
        segment.display(),
        cluster.logs(40)
    );
    assert!(!marker.exists());

    let status = cluster
        .node_mut(leader)
        .unwrap()
        .stop_within(Duration::from_secs(60))
        .expect("the leader exits on SIGTERM");
    let log = cluster.logs(60);
    assert!(status.success(), "leader {leader} exited {status}\n{log}");
    let answer = producer.join().unwrap();
    assert!(
        marker.exists(),
        "leader {leader} closed {} without the clean-shutdown marker (answer {answer:?})\n{log}",
        dir.display()
    );
    // Answered before the connection closed, and not as acknowledged: REQUEST_TIMED_OUT, what
    // the parked produce answers when it stops waiting.
    assert_eq!(
        answer,
        Some(ErrorCode::RequestTimedOut.code()),
        "the parked acks=-1 produce's answer at shutdown\n{log}"
    );
    for &f in &followers {
        cluster.node_mut(f).unwrap().resume().unwrap();
    }
}
