//! Three voters of a metadata quorum in one process: they elect a leader, the leader proposes
//! metadata batches, every voter applies them in the same order; then the leader stops and the
//! two others elect a new one and go on.
//!
//! ```text
//! cargo run -p josef-quorum --example three_voters
//! ```
//!
//! A real cluster runs one voter per controller node (see `quorum_node.rs` and josef-broker's
//! cluster mode); the state machine here just keeps the applied batches as text.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use josef_quorum::{MetadataQuorum, MetadataStateMachine, QuorumConfig};

/// What a controller would rebuild its metadata image from: the applied batches, in order.
#[derive(Default)]
struct Applied(Mutex<Vec<String>>);

impl MetadataStateMachine for Applied {
    fn apply(&self, _index: u64, _term: u64, batch: &[Bytes]) {
        // Empty batches (membership, a new leader's first entry) carry no records.
        for r in batch {
            self.0
                .lock()
                .unwrap()
                .push(String::from_utf8_lossy(r).into_owned());
        }
    }
    fn snapshot(&self) -> (u64, Vec<u8>) {
        (0, self.0.lock().unwrap().join("\n").into_bytes())
    }
    fn install_snapshot(&self, _last_index: u64, data: &[u8]) {
        let text = String::from_utf8_lossy(data);
        *self.0.lock().unwrap() = text.lines().map(str::to_owned).collect();
    }
}

/// A port nobody listens on right now.
fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Polls `cond` every 20 ms for at most `limit`.
async fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cond()
}

/// Runs the example, writing what happens to `out`.
pub async fn run(
    dir: &std::path::Path,
    out: &mut dyn Write,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut voters = BTreeMap::new();
    for id in 1..=3u64 {
        voters.insert(id, format!("127.0.0.1:{}", free_port()?));
    }
    let mut nodes = BTreeMap::new();
    for (id, addr) in &voters {
        let mut config = QuorumConfig::new(*id, voters.clone(), dir.join(format!("node{id}")));
        // Short timeouts so the example (and its test) elect quickly.
        config.election_timeout_ms = 300;
        config.heartbeat_interval_ms = 60;
        let applied = Arc::new(Applied::default());
        let quorum = MetadataQuorum::start(config, applied.clone()).await?;
        quorum.bind_and_serve(addr).await?;
        nodes.insert(*id, (quorum, applied));
    }

    let leader_of = |nodes: &BTreeMap<u64, (MetadataQuorum, Arc<Applied>)>| {
        nodes
            .values()
            .find(|(q, _)| q.is_leader())
            .map(|(q, _)| q.node_id())
    };
    if !wait_for(Duration::from_secs(20), || leader_of(&nodes).is_some()).await {
        return Err("no leader elected".into());
    }
    let first = leader_of(&nodes).expect("a leader");
    writeln!(out, "leader elected")?;
    for text in ["TopicRecord orders", "PartitionRecord orders-0"] {
        nodes[&first].0.propose(vec![Bytes::from(text)]).await?;
    }
    let all_have = |nodes: &BTreeMap<u64, (MetadataQuorum, Arc<Applied>)>, n: usize| {
        nodes.values().all(|(_, a)| a.0.lock().unwrap().len() >= n)
    };
    if !wait_for(Duration::from_secs(20), || all_have(&nodes, 2)).await {
        return Err("the batches did not reach every voter".into());
    }
    writeln!(
        out,
        "3 voters applied: {}",
        nodes[&1].1 .0.lock().unwrap().join(", ")
    )?;

    // The leader goes away; a majority (two of three) elects another and commits without it.
    let (old, _) = nodes.remove(&first).expect("the leader");
    old.shutdown().await?;
    writeln!(out, "leader stopped")?;
    if !wait_for(Duration::from_secs(20), || leader_of(&nodes).is_some()).await {
        return Err("no new leader".into());
    }
    let second = leader_of(&nodes).expect("a leader");
    writeln!(out, "new leader elected: {}", second != first)?;
    nodes[&second]
        .0
        .propose(vec![Bytes::from("PartitionChangeRecord orders-0")])
        .await?;
    if !wait_for(Duration::from_secs(20), || all_have(&nodes, 3)).await {
        return Err("the batch did not reach both voters".into());
    }
    for (_, applied) in nodes.values() {
        writeln!(
            out,
            "voter applied: {}",
            applied.0.lock().unwrap().join(", ")
        )?;
    }
    for (_, (quorum, _)) in nodes {
        quorum.shutdown().await?;
    }
    Ok(())
}

#[allow(dead_code)]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    run(dir.path(), &mut std::io::stdout()).await
}
