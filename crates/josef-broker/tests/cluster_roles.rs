//! The `process.roles` layouts of docs/cluster.md, as processes of the built binary on free
//! loopback ports with temp data dirs:
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
//! Every wait is on a condition, bounded; the processes are stopped by PID at the end (and
//! killed if a check fails).

mod common;

use std::collections::BTreeSet;
use std::net::SocketAddr;

use common::{
    broker_ids, call, create_topic, free_port, metadata, three_combined, voters, wait_until, Node,
    Nodes, PROTOCOLS, SETTLE,
};
use josef_protocol::messages::describe_quorum_request::{PartitionData, TopicData};
use josef_protocol::messages::{DescribeQuorumRequest, MetadataResponse, ProduceRequest};
use josef_protocol::ResponseBody;

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
    let tmp = tempfile::tempdir().unwrap();
    let cports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let bports: Vec<u16> = (0..2).map(|_| free_port()).collect();
    let quorum = voters(&cports);
    let mut nodes = Vec::new();
    for (i, p) in cports.iter().enumerate() {
        nodes.push(Node::spawn(
            tmp.path(),
            i as i32 + 1,
            &[
                ("process.roles", "controller".into()),
                ("controller.quorum.voters", quorum.clone()),
                ("listeners", format!("CONTROLLER://127.0.0.1:{p}")),
                ("controller.listener.names", "CONTROLLER".into()),
                ("listener.security.protocol.map", PROTOCOLS.into()),
            ],
        ));
    }
    for (i, p) in bports.iter().enumerate() {
        nodes.push(Node::spawn(
            tmp.path(),
            i as i32 + 4,
            &[
                ("process.roles", "broker".into()),
                ("controller.quorum.voters", quorum.clone()),
                ("listeners", format!("PLAINTEXT://127.0.0.1:{p}")),
                ("advertised.listeners", format!("PLAINTEXT://127.0.0.1:{p}")),
                ("controller.listener.names", "CONTROLLER".into()),
                ("inter.broker.listener.name", "PLAINTEXT".into()),
                ("listener.security.protocol.map", PROTOCOLS.into()),
            ],
        ));
    }
    let nodes = Nodes(nodes);
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
        leader = addrs[..3].iter().find_map(|a| quorum_leader(*a));
        leader.is_some()
    });
    assert!(found, "a quorum leader\n{}", nodes.logs());
    let leader = leader.unwrap();
    assert!((1..=3).contains(&leader), "leader {leader}");
    let mut nodes = nodes;
    nodes.0[leader as usize - 1].kill();
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
    let tmp = tempfile::tempdir().unwrap();
    let (nodes, bports) = three_combined(tmp.path(), &[("num.replica.fetchers", "2".into())]);
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
    two_replica_fetchers_per_leader(&addrs, &nodes);
    // Last: it leaves one broker fenced until it restarts.
    controlled_shutdown_on_a_client_listener_moves_leaderships(&addrs, &nodes);
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
fn two_replica_fetchers_per_leader(addrs: &[SocketAddr], nodes: &Nodes) {
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
    assert!(created, "CreateTopics {TOPIC}\n{}", nodes.logs());
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
        nodes.logs()
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
    let log = std::fs::read_to_string(nodes.0[follower as usize - 1].dir.join("stderr.log"))
        .unwrap_or_default();
    for id in 0..2 {
        let line = format!("replica fetcher started leader={leader} fetcher_id={id}");
        assert!(
            log.contains(&line),
            "node {follower} runs `{line}`\n{}",
            nodes.logs()
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
fn controlled_shutdown_on_a_client_listener_moves_leaderships(addrs: &[SocketAddr], nodes: &Nodes) {
    use josef_protocol::messages::{ApiVersionsRequest, ControlledShutdownRequest};
    let Some(ResponseBody::ApiVersions(v)) =
        call(addrs[0], 3, ApiVersionsRequest::default().into())
    else {
        panic!("ApiVersions\n{}", nodes.logs());
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
    assert!(created, "CreateTopics cs\n{}", nodes.logs());
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
    assert!(ok, "cs led, ISR 3: {seen:?}\n{}", nodes.logs());
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
        nodes.logs()
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
        nodes.logs()
    );
}

/// KIP-951: Produce v10+ refused by a node that does not lead the partition names the leader,
/// its epoch and its endpoint, so the client moves on without a metadata round trip.
fn kip951_a_produce_to_a_follower_names_the_leader(addrs: &[SocketAddr], nodes: &Nodes) {
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
        nodes.logs()
    );
}
