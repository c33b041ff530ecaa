//! What Metadata shows, the partitions already act on: on three nodes of the built binary, a
//! topic deleted through DeleteTopics is gone from a follower's Metadata only once that
//! follower's replica is gone too, so a Produce sent to it the moment Metadata stops listing the
//! topic gets UNKNOWN_TOPIC_OR_PARTITION, never NOT_LEADER_OR_FOLLOWER from a replica the
//! publisher has not removed yet (a CI failure of `test_cluster_admin.py`: the Metadata answer
//! came from the newest committed image, the replica from the publisher a moment later).
//! The same rule the other way: once every node's Metadata shows a new topic's leader with its
//! ISR, the leader takes a Produce (before, it could answer UNKNOWN_TOPIC_OR_PARTITION).
//! With Metadata answered from the committed image both assertions fail within a few topics.
//!
//! The window is a few milliseconds, so the test polls Metadata without pause and repeats the
//! deletion over several topics; every wait is bounded.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use josef_protocol::messages::DeleteTopicsRequest;
use josef_protocol::{ErrorCode, ResponseBody};
use josef_testbed::{client, wait_until, BrokerCommand, Cluster};

const SETTLE: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(50);
const TOPICS: usize = 12;

fn delete_topic(addr: SocketAddr, name: &str) {
    let req = DeleteTopicsRequest {
        topic_names: vec![name.into()],
        timeout_ms: 30_000,
        ..Default::default()
    };
    match client::call(addr, 4, req.into()) {
        Ok(ResponseBody::DeleteTopics(r)) => {
            let code = r.responses.first().map(|t| t.error_code);
            assert_eq!(code, Some(0), "DeleteTopics {name}: {r:?}");
        }
        other => panic!("DeleteTopics {name}: {other:?}"),
    }
}

/// Whether the node at `addr` lists `topic` in Metadata (`None` when it cannot answer).
fn listed(addr: SocketAddr, topic: &str) -> Option<bool> {
    let m = client::metadata(addr).ok()?;
    Some(m.topics.iter().any(|t| t.name.as_deref() == Some(topic)))
}

#[test]
fn a_deleted_topic_gone_from_metadata_is_gone_from_the_replica_too() {
    let mut cluster = Cluster::builder()
        .command(BrokerCommand::new(env!("CARGO_BIN_EXE_josef-broker")))
        .combined(3)
        .start()
        .unwrap();
    let addrs = cluster.client_addrs();
    let (leader, follower) = (addrs[&1], addrs[&2]);
    for i in 0..TOPICS {
        let topic = format!("deleted-{i}");
        let mut code = None;
        let created = wait_until(SETTLE, POLL, || {
            code = client::create_topic_assigned(leader, &topic, &[1, 2, 3]).ok();
            matches!(code, Some(0) | Some(36))
        });
        assert!(created, "CreateTopics {topic}: {code:?}");
        let replicated = wait_until(SETTLE, POLL, || {
            client::agreed_partition(&addrs, &[1, 2, 3], &topic, 0, |p| {
                p.leader == 1 && p.isr.len() == 3
            })
            .is_some()
        });
        assert!(replicated, "{topic} never had its three replicas in sync");
        let written = client::produce(leader, &topic, 0, -1, Duration::from_secs(10), &[b"v"])
            .map(|p| p.error_code);
        assert_eq!(written.ok(), Some(0), "produce to {topic}");

        delete_topic(addrs[&3], &topic);
        // No pause: the first Metadata answer without the topic is the moment that matters.
        let deadline = Instant::now() + SETTLE;
        while listed(follower, &topic) != Some(false) {
            assert!(
                Instant::now() < deadline,
                "{topic} never left node 2's Metadata"
            );
        }
        let code = client::produce(follower, &topic, 0, -1, Duration::from_secs(5), &[b"late"])
            .map(|p| p.error_code);
        assert_eq!(
            code.ok(),
            Some(ErrorCode::UnknownTopicOrPartition as i16),
            "{topic}: node 2 no longer lists it, so its replica must be gone"
        );
    }
    let _ = cluster.stop_all();
}
