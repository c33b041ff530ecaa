//! The `process.roles` layouts of docs/cluster.md, as processes of the built binary started by
//! the test bed (`josef-testbed`: node files per `contract.json`, free loopback ports, temp data
//! dirs):
//!
//! - 3 controller-only nodes + 2 broker-only nodes: the brokers follow the metadata log as
//!   observers of the controllers, both register (each one's Metadata lists the two brokers), and
//!   a topic with RF=2 created through one broker shows on the other's Metadata with leaders,
//!   and again after the active controller is killed (-9);
//! - 3 combined nodes: each prints `listening on`, and each one's Metadata lists 3 brokers; with
//!   `num.replica.fetchers=2`, a follower runs two fetchers to one leader (Kafka's fetcher id per
//!   partition) and acks=-1 produces to partitions of both fetchers complete; a
//!   ControlledShutdown (API 7) sent to the client listener of the broker Metadata names as
//!   controller is forwarded to the active controller and moves the named broker's leaderships.
//!
//! Every wait is on a condition, bounded; dropping the cluster kills its processes by PID (and
//! keeps its directory, printing each node's log tail, when a check failed).

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;

use josef_protocol::messages::create_topics_request::CreatableTopic;
use josef_protocol::messages::describe_quorum_request::{PartitionData, TopicData};
use josef_protocol::messages::{
    CreateTopicsRequest, CreateTopicsResponse, DescribeQuorumRequest, MetadataResponse,
    ProduceRequest,
};
use josef_protocol::{RequestBody, ResponseBody};
use josef_testbed::{BrokerCommand, Cluster, ClusterBuilder};

/// Bound of each wait for the cluster to act (a topic created, a leader moved).
const SETTLE: Duration = Duration::from_secs(20);

/// This package's binary, with the session timeout these checks were written for; Kafka's
/// `replica.lag.time.max.ms` (30 s) so that only a follower that stops fetching leaves the ISR
/// (the acks=-1 produces below wait on the followers' fetches, not on a shrink).
fn bed() -> ClusterBuilder {
    Cluster::builder()
        .command(BrokerCommand::new(env!("CARGO_BIN_EXE_josef-broker")))
        .timeouts([
            ("broker.session.timeout.ms", "3000"),
            ("broker.heartbeat.interval.ms", "500"),
        ])
}

/// Polls `cond` every 50 ms until it holds or `timeout` passes; whether it held.
fn wait_until(timeout: Duration, cond: impl FnMut() -> bool) -> bool {
    josef_testbed::wait_until(timeout, Duration::from_millis(50), cond)
}

/// One Kafka request on a fresh connection; `None` on any failure (the node may be busy).
fn call(addr: SocketAddr, version: i16, body: RequestBody) -> Option<ResponseBody> {
    josef_testbed::client::call(addr, version, body).ok()
}

fn metadata(addr: SocketAddr) -> Option<MetadataResponse> {
    josef_testbed::client::metadata(addr).ok()
}

fn broker_ids(addr: SocketAddr) -> Option<Vec<i32>> {
    josef_testbed::client::broker_ids(addr).ok()
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

/// Each node printed `listening on` its first listener: the client one, or the CONTROLLER one
/// of a controller-only node.
fn assert_listening(cluster: &Cluster) {
    for n in cluster.nodes() {
        let line = format!("listening on {}", n.ready_addr());
        assert!(
            n.log().contains(&line),
            "node {} prints `{line}`\n{}",
            n.id(),
            cluster.logs(30)
        );
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
    // Ready: each node answers ApiVersions, and both brokers' Metadata lists both brokers
    // (they registered with the controllers).
    let mut cluster = bed().controllers(3).brokers(2).start().unwrap();
    assert_listening(&cluster);
    let addr = |id: i32| cluster.node(id).unwrap().ready_addr();
    let controllers: Vec<SocketAddr> = (1..=3).map(addr).collect();
    let (b4, b5) = (addr(4), addr(5));
    for b in [b4, b5] {
        assert_eq!(
            broker_ids(b).as_deref(),
            Some(&[4, 5][..]),
            "brokers seen from {b}"
        );
    }

    // RF=2 through broker 4, seen with leaders on broker 5.
    if let Err(e) = create_rf2(b4, "roles") {
        panic!("{e}\n{}", cluster.logs(30));
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
        cluster.logs(30)
    );
    // Both brokers lead some partition (placement spreads the leaders).
    let m = seen.unwrap();
    let t = m
        .topics
        .iter()
        .find(|t| t.name.as_deref() == Some("roles"))
        .unwrap();
    let leaders: BTreeSet<i32> = t.partitions.iter().map(|p| p.leader_id).collect();
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
        leader = controllers.iter().find_map(|a| quorum_leader(*a));
        leader.is_some()
    });
    assert!(found, "a quorum leader\n{}", cluster.logs(30));
    let leader = leader.unwrap();
    assert!((1..=3).contains(&leader), "leader {leader}");
    cluster.node_mut(leader).unwrap().kill9().unwrap();
    if let Err(e) = create_rf2(b5, "roles-after-failover") {
        panic!("{e}\n{}", cluster.logs(30));
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
        cluster.logs(30)
    );
}

#[test]
fn three_combined_nodes() {
    // Ready: each node answers ApiVersions and each one's Metadata lists 3 brokers.
    let cluster = bed()
        .combined(3)
        .property("num.replica.fetchers", 2)
        .start()
        .unwrap();
    assert_listening(&cluster);
    let addrs: Vec<SocketAddr> = cluster.nodes().filter_map(|n| n.client_addr()).collect();
    for a in &addrs {
        assert_eq!(
            broker_ids(*a).as_deref(),
            Some(&[1, 2, 3][..]),
            "brokers seen from {a}"
        );
    }
    kip951_a_produce_to_a_follower_names_the_leader(&addrs, &cluster);
    two_replica_fetchers_per_leader(&addrs, &cluster);
    // Last: it leaves one broker fenced until it restarts.
    controlled_shutdown_on_a_client_listener_moves_leaderships(&addrs, &cluster);
}

/// A Produce of one record to `topic`-`partition`.
fn produce_one(topic: &str, partition: i32, acks: i16, timeout_ms: i32) -> ProduceRequest {
    use josef_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    let batch = josef_log::testing::batch(0, 1, &[(None, Some(b"v"))]).freeze();
    ProduceRequest {
        acks,
        timeout_ms,
        topic_data: vec![TopicProduceData {
            name: topic.into(),
            partition_data: vec![PartitionProduceData {
                index: partition,
                records: Some(batch),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Produce v9 of one record to `topic`-`partition` at `addr` with acks=-1; the error code.
fn produce_acks_all(addr: SocketAddr, topic: &str, partition: i32) -> Option<i16> {
    // Below the call's 10 s read timeout, and well below replica.lag.time.max.ms (30 s), so
    // only followers that fetch can complete it.
    let req = produce_one(topic, partition, -1, 8000);
    match call(addr, 9, req.into())? {
        ResponseBody::Produce(r) => {
            Some(r.responses.first()?.partition_responses.first()?.error_code)
        }
        _ => None,
    }
}

/// `num.replica.fetchers=2`: a follower of a leader whose partitions fall on both fetcher ids
/// starts two fetchers to it (each on its own connection), and an acks=-1 produce to every
/// partition (ISR = all three replicas) completes, so both fetchers catch up.
fn two_replica_fetchers_per_leader(addrs: &[SocketAddr], cluster: &Cluster) {
    use josef_server::cluster::fetcher_key::fetcher_id;
    const TOPIC: &str = "two-fetchers";
    const PARTITIONS: i32 = 8;
    let created = wait_until(SETTLE, || {
        create_topic(addrs[0], TOPIC, PARTITIONS, 3).is_some_and(|r| {
            r.topics
                .iter()
                .all(|t| t.error_code == 0 || t.error_code == 36)
        })
    });
    assert!(created, "CreateTopics {TOPIC}\n{}", cluster.logs(30));
    // partition -> (leader, ISR), once every partition has a leader and a full ISR.
    let mut layout: Vec<(i32, Vec<i32>)> = Vec::new();
    let mut acked = vec![false; PARTITIONS as usize];
    let ok = wait_until(SETTLE, || {
        let Some(m) = metadata(addrs[0]) else {
            return false;
        };
        let Some(t) = m.topics.iter().find(|t| t.name.as_deref() == Some(TOPIC)) else {
            return false;
        };
        let mut parts: Vec<_> = t.partitions.iter().collect();
        parts.sort_by_key(|p| p.partition_index);
        if parts.len() != PARTITIONS as usize
            || parts
                .iter()
                .any(|p| p.leader_id < 1 || p.isr_nodes.len() != 3)
        {
            return false;
        }
        layout = parts
            .iter()
            .map(|p| (p.leader_id, p.isr_nodes.to_vec()))
            .collect();
        for (i, (leader, _)) in layout.iter().enumerate() {
            if !acked[i] {
                acked[i] =
                    produce_acks_all(addrs[*leader as usize - 1], TOPIC, i as i32) == Some(0);
            }
        }
        acked.iter().all(|a| *a)
    });
    assert!(
        ok,
        "acks=-1 to every partition of {TOPIC}: {acked:?} {layout:?}\n{}",
        cluster.logs(30)
    );
    // A leader leading partitions of both fetcher ids, and a follower of it.
    let both = (1..=3).find(|l| {
        let ids: std::collections::BTreeSet<i32> = (0..PARTITIONS)
            .filter(|p| layout[*p as usize].0 == *l)
            .map(|p| fetcher_id(TOPIC, p, 2))
            .collect();
        ids.len() == 2
    });
    let leader = both.unwrap_or_else(|| panic!("no leader of both fetcher ids: {layout:?}"));
    let follower = (1..=3).find(|f| *f != leader).unwrap();
    let log = cluster.node(follower).unwrap().log();
    for id in 0..2 {
        let line = format!("replica fetcher started leader={leader} fetcher_id={id}");
        assert!(
            log.contains(&line),
            "node {follower} runs `{line}`\n{}",
            cluster.logs(30)
        );
    }
}

/// Partition leaders of `topic` in `m`, by partition index (−1: none).
fn leaders_of(m: &MetadataResponse, topic: &str) -> Vec<i32> {
    m.topics
        .iter()
        .find(|t| t.name.as_deref() == Some(topic))
        .map_or_else(Vec::new, |t| {
            t.partitions.iter().map(|p| p.leader_id).collect()
        })
}

/// ControlledShutdown (API 7, Kafka's ZooKeeper-era broker-to-controller request) sent to the
/// client listener of the broker Metadata names as controller, as older tools do: forwarded to
/// the active controller, answered NONE with nothing left to move (every partition has RF 3),
/// and the named broker leads nothing afterwards.
fn controlled_shutdown_on_a_client_listener_moves_leaderships(
    addrs: &[SocketAddr],
    cluster: &Cluster,
) {
    use josef_protocol::messages::{ApiVersionsRequest, ControlledShutdownRequest};
    let Some(ResponseBody::ApiVersions(v)) =
        call(addrs[0], 3, ApiVersionsRequest::default().into())
    else {
        panic!("ApiVersions\n{}", cluster.logs(30));
    };
    assert!(
        v.api_keys.iter().any(|k| k.api_key == 7),
        "a client listener advertises ControlledShutdown: {v:?}"
    );
    let created = wait_until(SETTLE, || {
        create_topic(addrs[0], "cs", 6, 3).is_some_and(|r| {
            r.topics
                .iter()
                .all(|t| t.error_code == 0 || t.error_code == 36)
        })
    });
    assert!(created, "CreateTopics cs\n{}", cluster.logs(30));
    // Every partition led, with its 3 replicas in the ISR.
    let mut seen = None;
    let ok = wait_until(SETTLE, || {
        seen = metadata(addrs[0]);
        seen.as_ref().is_some_and(|m| {
            m.topics.iter().any(|t| {
                t.name.as_deref() == Some("cs")
                    && t.partitions.len() == 6
                    && t.partitions
                        .iter()
                        .all(|p| p.leader_id > 0 && p.isr_nodes.len() == 3)
            })
        })
    });
    assert!(ok, "cs led, ISR 3: {seen:?}\n{}", cluster.logs(30));
    let m = seen.unwrap();
    let victim = leaders_of(&m, "cs")[0];
    let controller = addrs[m.controller_id as usize - 1];
    let req = ControlledShutdownRequest {
        broker_id: victim,
        broker_epoch: -1,
        ..Default::default()
    };
    let mut answer = None;
    let answered = wait_until(SETTLE, || {
        answer = call(controller, 3, req.clone().into());
        matches!(&answer, Some(ResponseBody::ControlledShutdown(r)) if r.error_code == 0)
    });
    assert!(
        answered,
        "ControlledShutdown for {victim} through {controller}: {answer:?}\n{}",
        cluster.logs(30)
    );
    let Some(ResponseBody::ControlledShutdown(r)) = answer else {
        unreachable!()
    };
    assert!(
        r.remaining_partitions.is_empty(),
        "RF 3: nothing left to move: {r:?}"
    );
    let mut leaders = Vec::new();
    let moved = wait_until(SETTLE, || {
        let Some(m) = metadata(addrs[(victim as usize) % 3]) else {
            return false;
        };
        leaders = leaders_of(&m, "cs");
        leaders.len() == 6 && leaders.iter().all(|&l| l > 0 && l != victim)
    });
    assert!(
        moved,
        "broker {victim}'s leaderships of cs moved: {leaders:?}\n{}",
        cluster.logs(30)
    );
}

/// KIP-951: Produce v10+ refused by a node that does not lead the partition names the leader,
/// its epoch and its endpoint, so the client moves on without a metadata round trip.
fn kip951_a_produce_to_a_follower_names_the_leader(addrs: &[SocketAddr], cluster: &Cluster) {
    let created = wait_until(SETTLE, || {
        create_topic(addrs[0], "hints", 1, 3).is_some_and(|r| {
            r.topics
                .iter()
                .all(|t| t.error_code == 0 || t.error_code == 36)
        })
    });
    assert!(created, "CreateTopics hints\n{}", cluster.logs(30));
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
        let req = produce_one("hints", 0, 1, 5000);
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
        cluster.logs(30)
    );
}
