//! The `process.roles` layouts of docs/cluster.md, as processes of the built binary run by the
//! josef-testbed crate (properties per the contract, free loopback ports, temp data dirs):
//!
//! - 3 controller-only nodes + 2 broker-only nodes: the brokers follow the metadata log as
//!   observers of the controllers, both register (each one's Metadata lists the two brokers), and
//!   a topic with RF=2 created through one broker shows on the other's Metadata with leaders,
//!   and again after the active controller is killed (-9);
//! - 3 combined nodes: each prints `listening on`, and each one's Metadata lists 3 brokers.
//!
//! Every wait is on a condition, bounded; the processes are killed by PID at the end (the
//! directory with the logs is kept if a check fails).

use std::net::SocketAddr;
use std::time::Duration;

use josef_protocol::messages::create_topics_request::CreatableTopic;
use josef_protocol::messages::describe_quorum_request::{PartitionData, TopicData};
use josef_protocol::messages::{
    CreateTopicsRequest, CreateTopicsResponse, DescribeQuorumRequest, MetadataResponse,
};
use josef_protocol::{RequestBody, ResponseBody};
use josef_testbed::{client, Cluster, ClusterBuilder, Node};

const START: Duration = Duration::from_secs(30);
const SETTLE: Duration = Duration::from_secs(20);

/// Polls `cond` every 50 ms until it holds or `timeout` passes; whether it held.
fn wait_until(timeout: Duration, cond: impl FnMut() -> bool) -> bool {
    josef_testbed::wait_until(timeout, Duration::from_millis(50), cond)
}

/// The nodes of one test: a josef-testbed cluster of the built binary, each node's properties
/// per the contract of docs/cluster.md with the test bed's lowered timeouts. Dropping it kills
/// every process by PID (and keeps the directory with the logs if the test failed).
struct Nodes(Cluster);

impl Nodes {
    /// Writes every node's properties and launches them all without waiting (a quorum needs
    /// its voters up before any node answers).
    fn spawn(layout: ClusterBuilder) -> Nodes {
        let mut c = layout
            .broker_program(env!("CARGO_BIN_EXE_josef-broker"))
            .build()
            .unwrap();
        for n in c.nodes_mut() {
            n.launch().unwrap();
        }
        Nodes(c)
    }

    /// Each node's port of one kind, in node order.
    fn ports(&self, port: impl Fn(&Node) -> Option<u16>) -> Vec<u16> {
        self.0.nodes().filter_map(port).collect()
    }

    /// SIGKILL node `id` by PID, and reap it.
    fn kill(&mut self, id: i32) {
        self.0.node_mut(id).unwrap().kill9().unwrap();
    }

    fn logs(&self) -> String {
        self.0.logs(25)
    }

    /// Waits until every node printed `listening on`; their addresses (each node's first line).
    fn listening(&self) -> Vec<SocketAddr> {
        let first = |n: &Node| {
            n.current_log()
                .lines()
                .find_map(|l| l.strip_prefix("listening on ")?.trim().parse().ok())
        };
        let ok = wait_until(START, || self.0.nodes().all(|n| first(n).is_some()));
        assert!(ok, "every node prints `listening on`\n{}", self.logs());
        self.0.nodes().map(|n| first(n).unwrap()).collect()
    }
}

/// One Kafka request on a fresh connection; `None` on any failure (the node may be starting).
fn call(addr: SocketAddr, version: i16, body: RequestBody) -> Option<ResponseBody> {
    client::call(addr, version, body).ok()
}

fn metadata(addr: SocketAddr) -> Option<MetadataResponse> {
    client::metadata(addr).ok()
}

fn broker_ids(m: &MetadataResponse) -> Vec<i32> {
    let mut ids: Vec<i32> = m.brokers.iter().map(|b| b.node_id).collect();
    ids.sort_unstable();
    ids
}

fn create_topic(
    addr: SocketAddr,
    name: &str,
    partitions: i32,
    rf: i16,
) -> Option<CreateTopicsResponse> {
    let req = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: name.into(),
            num_partitions: partitions,
            replication_factor: rf,
            ..Default::default()
        }],
        timeout_ms: 10_000,
        ..Default::default()
    };
    match call(addr, 7, req.into())? {
        ResponseBody::CreateTopics(r) => Some(r),
        _ => None,
    }
}

/// The metadata quorum's leader as the controller at `addr` sees it (DescribeQuorum).
fn quorum_leader(addr: SocketAddr) -> Option<i32> {
    let req = DescribeQuorumRequest {
        topics: vec![TopicData {
            topic_name: "__cluster_metadata".into(),
            partitions: vec![PartitionData {
                partition_index: 0,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    match call(addr, 2, req.into())? {
        ResponseBody::DescribeQuorum(r) => {
            let leader = r.topics.first()?.partitions.first()?.leader_id;
            (leader >= 0).then_some(leader)
        }
        _ => None,
    }
}

/// Whether `m` shows `topic` with `partitions` partitions of 2 replicas, each led by a broker
/// among `brokers` that is in its ISR.
fn has_led_topic(m: &MetadataResponse, topic: &str, partitions: usize, brokers: &[i32]) -> bool {
    m.topics.iter().any(|t| {
        t.name.as_deref() == Some(topic)
            && t.error_code == 0
            && t.partitions.len() == partitions
            && t.partitions.iter().all(|p| {
                p.replica_nodes.len() == 2
                    && brokers.contains(&p.leader_id)
                    && p.isr_nodes.contains(&p.leader_id)
            })
    })
}

/// Creates `topic` (3 partitions, RF=2) through `addr`, retrying within `SETTLE` (a retry may
/// find it created: TOPIC_ALREADY_EXISTS).
fn create_rf2(addr: SocketAddr, topic: &str) -> Result<(), String> {
    let mut created = None;
    let ok = wait_until(SETTLE, || {
        created = create_topic(addr, topic, 3, 2);
        created.as_ref().is_some_and(|r| {
            r.topics.iter().all(
                |t| t.error_code == 0 || t.error_code == 36, /* TOPIC_ALREADY_EXISTS */
            )
        })
    });
    if ok {
        Ok(())
    } else {
        Err(format!("CreateTopics {topic} through {addr}: {created:?}"))
    }
}

#[test]
fn three_controllers_and_two_broker_only_nodes() {
    let nodes = Nodes::spawn(Cluster::builder().controllers(3).brokers(2));
    let cports = nodes.ports(Node::controller_port);
    let bports = nodes.ports(Node::client_port);
    let addrs = nodes.listening();
    // A controller-only node listens on its CONTROLLER port, a broker on its client port.
    for (a, p) in addrs.iter().zip(cports.iter().chain(&bports)) {
        assert_eq!(a.port(), *p);
    }
    let (b4, b5) = (addrs[3], addrs[4]);

    // Both broker-only nodes registered: each one's Metadata lists the two of them.
    let mut last: [Option<Vec<i32>>; 2] = [None, None];
    let registered = wait_until(SETTLE, || {
        last = [b4, b5].map(|a| metadata(a).map(|m| broker_ids(&m)));
        last.iter().all(|ids| ids.as_deref() == Some(&[4, 5][..]))
    });
    assert!(
        registered,
        "both brokers listed: {last:?}\n{}",
        nodes.logs()
    );

    // RF=2 through broker 4, seen with leaders on broker 5.
    if let Err(e) = create_rf2(b4, "roles") {
        panic!("{e}\n{}", nodes.logs());
    }
    let mut seen = None;
    let ok = wait_until(SETTLE, || {
        seen = metadata(b5);
        seen.as_ref()
            .is_some_and(|m| has_led_topic(m, "roles", 3, &[4, 5]))
    });
    assert!(
        ok,
        "the topic on broker 5 with leaders: {seen:?}\n{}",
        nodes.logs()
    );
    // Both brokers lead some partition (placement spreads the leaders).
    let m = seen.unwrap();
    let t = m
        .topics
        .iter()
        .find(|t| t.name.as_deref() == Some("roles"))
        .unwrap();
    let leaders: std::collections::BTreeSet<i32> =
        t.partitions.iter().map(|p| p.leader_id).collect();
    assert_eq!(leaders.len(), 2, "{t:?}");
    // Clients are told a broker as the controller (Kafka: clients cannot reach KRaft
    // controllers; any broker forwards).
    assert!(
        [4, 5].contains(&m.controller_id),
        "controller id {}",
        m.controller_id
    );

    // SIGKILL the active controller: the brokers follow the log through the new leader, and a
    // topic created through broker 5 shows on broker 4.
    let mut leader = None;
    let found = wait_until(SETTLE, || {
        leader = addrs[..3].iter().find_map(|a| quorum_leader(*a));
        leader.is_some()
    });
    assert!(found, "a quorum leader\n{}", nodes.logs());
    let leader = leader.unwrap();
    assert!((1..=3).contains(&leader), "leader {leader}");
    let mut nodes = nodes;
    nodes.kill(leader);
    if let Err(e) = create_rf2(b5, "roles-after-failover") {
        panic!("{e}\n{}", nodes.logs());
    }
    let mut seen = None;
    let ok = wait_until(SETTLE, || {
        seen = metadata(b4);
        seen.as_ref()
            .is_some_and(|m| has_led_topic(m, "roles-after-failover", 3, &[4, 5]))
    });
    assert!(
        ok,
        "the topic made after the failover on broker 4: {seen:?}\n{}",
        nodes.logs()
    );
}

#[test]
fn three_combined_nodes() {
    let nodes = Nodes::spawn(Cluster::builder().combined(3));
    let bports = nodes.ports(Node::client_port);
    let addrs = nodes.listening();
    for (a, p) in addrs.iter().zip(&bports) {
        assert_eq!(a.port(), *p, "a combined node prints its client listener");
    }
    let mut last = Vec::new();
    let ok = wait_until(SETTLE, || {
        last = addrs
            .iter()
            .map(|a| metadata(*a).map(|m| broker_ids(&m)))
            .collect();
        last.iter()
            .all(|ids| ids.as_deref() == Some(&[1, 2, 3][..]))
    });
    assert!(
        ok,
        "each node's Metadata lists 3 brokers: {last:?}\n{}",
        nodes.logs()
    );
    kip951_a_produce_to_a_follower_names_the_leader(&addrs, &nodes);
}

/// KIP-951: Produce v10+ refused by a node that does not lead the partition names the leader,
/// its epoch and its endpoint, so the client moves on without a metadata round trip.
fn kip951_a_produce_to_a_follower_names_the_leader(addrs: &[SocketAddr], nodes: &Nodes) {
    use josef_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use josef_protocol::messages::ProduceRequest;
    let created = wait_until(SETTLE, || {
        create_topic(addrs[0], "hints", 1, 3).is_some_and(|r| {
            r.topics
                .iter()
                .all(|t| t.error_code == 0 || t.error_code == 36)
        })
    });
    assert!(created, "CreateTopics hints\n{}", nodes.logs());
    let mut answer = None;
    let ok = wait_until(SETTLE, || {
        let Some(m) = metadata(addrs[0]) else {
            return false;
        };
        let Some(p) = m
            .topics
            .iter()
            .find(|t| t.name.as_deref() == Some("hints"))
            .and_then(|t| t.partitions.first())
        else {
            return false;
        };
        if p.leader_id < 1 {
            return false;
        }
        let (leader, epoch) = (p.leader_id, p.leader_epoch);
        let leader_port = addrs[leader as usize - 1].port();
        let follower = addrs[(leader as usize) % 3];
        let batch = josef_log::testing::batch(0, 1, &[(None, Some(b"v"))]).freeze();
        let req = ProduceRequest {
            acks: 1,
            timeout_ms: 5000,
            topic_data: vec![TopicProduceData {
                name: "hints".into(),
                partition_data: vec![PartitionProduceData {
                    index: 0,
                    records: Some(batch),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let Some(ResponseBody::Produce(r)) = call(follower, 11, req.into()) else {
            return false;
        };
        let part = &r.responses[0].partition_responses[0];
        answer = Some(format!("{r:?}"));
        part.error_code == 6 /* NOT_LEADER_OR_FOLLOWER */
            && part.current_leader.leader_id == leader
            && part.current_leader.leader_epoch == epoch
            && r
                .node_endpoints
                .iter()
                .any(|e| e.node_id == leader && e.port == i32::from(leader_port))
    });
    assert!(
        ok,
        "a follower's NOT_LEADER_OR_FOLLOWER names the leader: {answer:?}\n{}",
        nodes.logs()
    );
}
