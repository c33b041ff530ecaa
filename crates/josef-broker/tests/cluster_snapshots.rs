//! The broker's own metadata snapshots through the quorum, as processes of the built binary: 3
//! combined nodes with `metadata.log.max.record.bytes.between.snapshots` lowered (about 10
//! entries between snapshots) and small metadata log segments, so snapshots are taken and the
//! log below them purged after a few dozen topics.
//!
//! - A node killed (-9) and restarted loads its newest snapshot and replays its log after it; its
//!   image (Metadata: brokers, topics, ids, partitions, replicas, leaders, ISR; DescribeConfigs
//!   of a topic) equals the others'. All three stopped and restarted: the same topics, ids,
//!   replicas and configs as before, and the same image on each node.
//! - A voter down while the others snapshot and purge past its log end catches up by the
//!   snapshot the leader sends, to the same image.
//!
//! Started by the test bed (`josef-testbed`: node files per `contract.json`, free loopback ports,
//! temp data dirs). Every wait is on a condition, bounded; dropping the cluster kills its
//! processes by PID.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use josef_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use josef_protocol::messages::describe_configs_request::DescribeConfigsResource;
use josef_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use josef_protocol::messages::{
    CreateTopicsRequest, CreateTopicsResponse, DescribeConfigsRequest,
    IncrementalAlterConfigsRequest, MetadataResponse,
};
use josef_protocol::{RequestBody, ResponseBody};
use josef_testbed::{BrokerCommand, Cluster, Node};

/// Bound of each wait for the cluster to act (a topic created, a config altered).
const SETTLE: Duration = Duration::from_secs(20);
/// Waits for a cluster to converge after starts and restarts (slower under load than SETTLE).
const CONVERGE: Duration = Duration::from_secs(60);
/// Kafka's resource type TOPIC.
const TOPIC: i8 = 2;
/// The topic whose configs are compared.
const CFG_TOPIC: &str = "snap-cfg";

/// The settings that make snapshots frequent: about 10 entries between two (20480 bytes at
/// josef-server's assumed 2048 bytes per entry) and 2 KiB segments, so purging deletes some.
fn snapshot_props() -> Vec<(&'static str, String)> {
    vec![
        (
            "metadata.log.max.record.bytes.between.snapshots",
            "20480".into(),
        ),
        ("metadata.log.segment.min.bytes", "1024".into()),
        ("metadata.log.segment.bytes", "2048".into()),
    ]
}

/// Polls `cond` every 50 ms until it holds or `timeout` passes; whether it held.
fn wait_until(timeout: Duration, cond: impl FnMut() -> bool) -> bool {
    josef_testbed::wait_until(timeout, Duration::from_millis(50), cond)
}

/// One Kafka request on a fresh connection; `None` on any failure (the node may be starting).
fn call(addr: SocketAddr, version: i16, body: RequestBody) -> Option<ResponseBody> {
    josef_testbed::client::call(addr, version, body).ok()
}

fn metadata(addr: SocketAddr) -> Option<MetadataResponse> {
    josef_testbed::client::metadata(addr).ok()
}

fn broker_ids(m: &MetadataResponse) -> Vec<i32> {
    let mut ids: Vec<i32> = m.brokers.iter().map(|b| b.node_id).collect();
    ids.sort_unstable();
    ids
}

fn create_topics(addr: SocketAddr, topics: Vec<CreatableTopic>) -> Option<CreateTopicsResponse> {
    let req = CreateTopicsRequest {
        topics,
        timeout_ms: 10_000,
        ..Default::default()
    };
    match call(addr, 7, req.into())? {
        ResponseBody::CreateTopics(r) => Some(r),
        _ => None,
    }
}

/// Failure context: every node's log tail.
fn logs(cluster: &Cluster) -> String {
    cluster.logs(25)
}

/// 3 combined nodes (ids 1, 2, 3) of this package's binary with [`snapshot_props`] and the
/// session timeout these checks were written for, each answering with all 3 brokers registered;
/// their client addresses.
fn start_cluster() -> (Cluster, Vec<SocketAddr>) {
    let mut bed = Cluster::builder()
        .command(BrokerCommand::new(env!("CARGO_BIN_EXE_josef-broker")))
        .timeouts([
            ("broker.session.timeout.ms", "3000"),
            ("broker.heartbeat.interval.ms", "500"),
        ])
        .combined(3);
    for (k, v) in snapshot_props() {
        bed = bed.property(k, v);
    }
    let cluster = bed.start().unwrap();
    let addrs: Vec<SocketAddr> = cluster.nodes().filter_map(Node::client_addr).collect();
    let ok = wait_until(CONVERGE, || {
        addrs
            .iter()
            .all(|a| metadata(*a).is_some_and(|m| broker_ids(&m) == [1, 2, 3]))
    });
    assert!(ok, "3 brokers registered\n{}", logs(&cluster));
    (cluster, addrs)
}

fn meta_dir(n: &Node) -> PathBuf {
    n.data_dir().join("__cluster_metadata-0")
}

/// The index of the newest `snapshot-<index>.snap` under the node's metadata log dir.
fn newest_snapshot(n: &Node) -> Option<u64> {
    std::fs::read_dir(meta_dir(n))
        .ok()?
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_string_lossy().into_owned();
            name.strip_prefix("snapshot-")?
                .strip_suffix(".snap")?
                .parse()
                .ok()
        })
        .max()
}

/// The first and last index of the entries in the node's metadata log on disk.
fn log_range(n: &Node) -> Option<(u64, u64)> {
    let (entries, _) = josef_quorum::read_log_dir(&meta_dir(n)).ok()?;
    Some((entries.first()?.index, entries.last()?.index))
}

/// How often the node's log says it loaded a snapshot at start / installed one from the leader.
fn loaded_snapshots(n: &Node) -> usize {
    n.log().matches("loading the snapshot at").count()
}
fn installed_snapshots(n: &Node) -> usize {
    n.log().matches("installing metadata snapshot at").count()
}

/// A node's image as its clients see it, in two parts: what survives any restart (brokers,
/// topics with ids, partitions, replicas, the topic configs of [`CFG_TOPIC`]), and what the
/// controller may change when brokers come and go (leaders, leader epochs, ISR).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Image {
    durable: Vec<String>,
    live: Vec<String>,
}

fn image(addr: SocketAddr) -> Option<Image> {
    let m = metadata(addr)?;
    let mut durable = vec![format!("brokers {:?}", broker_ids(&m))];
    let mut live = Vec::new();
    let mut topics: Vec<_> = m.topics.iter().collect();
    topics.sort_by(|a, b| a.name.cmp(&b.name));
    for t in topics {
        if t.error_code != 0 {
            return None;
        }
        let name = t.name.as_deref()?;
        durable.push(format!("topic {name} {:?}", t.topic_id));
        let mut parts: Vec<_> = t.partitions.iter().collect();
        parts.sort_by_key(|p| p.partition_index);
        for p in parts {
            durable.push(format!(
                "{name}-{} replicas {:?}",
                p.partition_index, p.replica_nodes
            ));
            let mut isr = p.isr_nodes.to_vec();
            isr.sort_unstable();
            live.push(format!(
                "{name}-{} leader {} epoch {} isr {isr:?} offline {:?}",
                p.partition_index, p.leader_id, p.leader_epoch, p.offline_replicas
            ));
        }
    }
    durable.extend(topic_configs(addr, CFG_TOPIC)?);
    Some(Image { durable, live })
}

/// The topic-level configs (source DYNAMIC_TOPIC_CONFIG) of `topic`, as `name=value`.
fn topic_configs(addr: SocketAddr, topic: &str) -> Option<Vec<String>> {
    let req = DescribeConfigsRequest {
        resources: vec![DescribeConfigsResource {
            resource_type: TOPIC,
            resource_name: topic.into(),
            configuration_keys: None,
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::DescribeConfigs(r) = call(addr, 4, req.into())? else {
        return None;
    };
    let res = r.results.first()?;
    if res.error_code != 0 {
        return None;
    }
    let mut out: Vec<String> = res
        .configs
        .iter()
        .filter(|c| c.config_source == 1)
        .map(|c| format!("config {}={:?}", c.name.as_str(), c.value.as_deref()))
        .collect();
    out.sort();
    Some(out)
}

/// Waits until every running node answers the same image holding at least `topics` topics;
/// that image.
fn converged(cluster: &Cluster, topics: usize) -> Image {
    let mut last = Vec::new();
    let ok = wait_until(CONVERGE, || {
        // The nodes with a process (the test killed or stopped none of them since).
        let addrs: Vec<SocketAddr> = cluster
            .nodes()
            .filter(|n| n.pid().is_some())
            .filter_map(Node::client_addr)
            .collect();
        last = addrs.iter().map(|a| image(*a)).collect();
        !last.is_empty()
            && last.iter().all(|i| i.is_some() && *i == last[0])
            && last[0].as_ref().is_some_and(|i| {
                i.durable.iter().filter(|l| l.starts_with("topic ")).count() >= topics
            })
    });
    assert!(
        ok,
        "the same image on every node: {last:#?}\n{}",
        logs(cluster)
    );
    last[0].clone().unwrap()
}

/// Creates `name` (one CreateTopics, so one metadata log entry), retrying within SETTLE.
fn create(addr: SocketAddr, name: &str, partitions: i32, rf: i16, configs: &[(&str, &str)]) {
    let topic = CreatableTopic {
        name: name.into(),
        num_partitions: partitions,
        replication_factor: rf,
        configs: configs
            .iter()
            .map(|(k, v)| CreatableTopicConfig {
                name: (*k).into(),
                value: Some((*v).into()),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let mut last = None;
    let ok = wait_until(SETTLE, || {
        last = create_topics(addr, vec![topic.clone()]);
        last.as_ref().is_some_and(|r| {
            r.topics.iter().all(
                |t| t.error_code == 0 || t.error_code == 36, /* TOPIC_ALREADY_EXISTS */
            )
        })
    });
    assert!(ok, "CreateTopics {name} through {addr}: {last:?}");
}

/// IncrementalAlterConfigs SET `key=value` on `topic`, retrying within SETTLE.
fn set_topic_config(addr: SocketAddr, topic: &str, key: &str, value: &str) {
    let req = IncrementalAlterConfigsRequest {
        resources: vec![AlterConfigsResource {
            resource_type: TOPIC,
            resource_name: topic.into(),
            configs: vec![AlterableConfig {
                name: key.into(),
                config_operation: 0, // SET
                value: Some(value.into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut last = None;
    let ok = wait_until(SETTLE, || {
        last = call(addr, 1, req.clone().into());
        matches!(&last, Some(ResponseBody::IncrementalAlterConfigs(r))
            if r.responses.iter().all(|x| x.error_code == 0))
    });
    assert!(ok, "IncrementalAlterConfigs {topic} {key}: {last:?}");
}

/// The topics and configs both tests start with: the config topic (3 partitions, RF=3, two
/// configs at creation and one altered) and `n` more topics, one entry each.
fn fill(addr: SocketAddr, n: usize) {
    create(
        addr,
        CFG_TOPIC,
        3,
        3,
        &[("retention.ms", "123456789"), ("cleanup.policy", "compact")],
    );
    set_topic_config(addr, CFG_TOPIC, "max.message.bytes", "54321");
    for i in 0..n {
        create(addr, &format!("snap-{i:03}"), 2, 2, &[]);
    }
}

/// Node `id` of `cluster`.
fn node(cluster: &Cluster, id: i32) -> &Node {
    cluster.node(id).unwrap()
}

#[test]
fn restart_from_snapshot_and_log_gives_the_same_image() {
    let (mut cluster, addrs) = start_cluster();
    fill(addrs[0], 30);
    let before = converged(&cluster, 31);
    assert!(
        before
            .durable
            .iter()
            .any(|l| l.contains("max.message.bytes")),
        "{before:?}"
    );
    // Several snapshots taken on every node (about one per 10 entries; only the newest is kept).
    let ok = wait_until(CONVERGE, || {
        cluster
            .nodes()
            .all(|n| newest_snapshot(n).is_some_and(|i| i >= 20))
    });
    let snaps: Vec<_> = cluster.nodes().map(newest_snapshot).collect();
    assert!(ok, "snapshots on disk: {snaps:?}\n{}", logs(&cluster));

    // (a) kill -9 one node and start it again: it loads its snapshot, replays its log after
    // it, and answers the image the others answer.
    cluster.node_mut(2).unwrap().kill9().unwrap();
    assert_eq!(
        loaded_snapshots(node(&cluster, 2)),
        0,
        "a fresh node had no snapshot"
    );
    if let Err(e) = cluster.node_mut(2).unwrap().start() {
        panic!("node 2 starts again: {e}\n{}", logs(&cluster));
    }
    let after_kill = converged(&cluster, 31);
    assert!(
        loaded_snapshots(node(&cluster, 2)) >= 1,
        "the restarted node loaded its snapshot\n{}",
        logs(&cluster)
    );
    assert_eq!(after_kill.durable, before.durable);

    // (b) stop all three, start them again: each loads a snapshot; the same topics, ids,
    // replicas and configs as before, and every node answers the same image.
    let loaded: Vec<usize> = cluster.nodes().map(loaded_snapshots).collect();
    if let Err(e) = cluster.stop_all() {
        panic!("all three stop on SIGTERM: {e}\n{}", logs(&cluster));
    }
    if let Err(e) = cluster.start() {
        panic!("all three start again: {e}\n{}", logs(&cluster));
    }
    let after_all = converged(&cluster, 31);
    for (n, was) in cluster.nodes().zip(&loaded) {
        assert!(
            loaded_snapshots(n) > *was,
            "node {} loaded a snapshot at its restart\n{}",
            n.id(),
            logs(&cluster)
        );
    }
    assert_eq!(after_all.durable, before.durable);
}

#[test]
fn a_voter_far_behind_catches_up_from_the_snapshot() {
    let (mut cluster, addrs) = start_cluster();
    fill(addrs[0], 3);
    converged(&cluster, 4);
    cluster.node_mut(3).unwrap().kill9().unwrap();
    let (_, behind) = log_range(node(&cluster, 3)).expect("node 3 has a metadata log");
    // Topics until both live voters snapshotted and purged their logs past node 3's end, so
    // it can only catch up from a snapshot.
    let mut created = 4;
    let purged_past = |cluster: &Cluster| {
        [1, 2]
            .iter()
            .all(|id| log_range(node(cluster, *id)).is_some_and(|(first, _)| first > behind + 1))
    };
    while !purged_past(&cluster) {
        assert!(
            created < 120,
            "the live voters purge past index {behind}: {:?}\n{}",
            [1, 2]
                .iter()
                .map(|id| log_range(node(&cluster, *id)))
                .collect::<Vec<_>>(),
            logs(&cluster)
        );
        create(addrs[0], &format!("behind-{created:03}"), 1, 1, &[]);
        created += 1;
    }
    assert_eq!(installed_snapshots(node(&cluster, 3)), 0);
    if let Err(e) = cluster.node_mut(3).unwrap().start() {
        panic!("node 3 starts again: {e}\n{}", logs(&cluster));
    }
    converged(&cluster, created);
    assert!(
        installed_snapshots(node(&cluster, 3)) >= 1,
        "node 3 installed the leader's snapshot\n{}",
        logs(&cluster)
    );
}
