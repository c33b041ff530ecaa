//! Three voters in one process, each on its own runtime and loopback port: election, commit,
//! a leader crash (its runtime dropped, no graceful stop), failover, catch-up, and a restart of
//! every node from snapshot + log, and a snapshot taken on time (`snapshot_max_interval_ms`).

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::cluster::{expected, Cluster, WAIT};
use common::{init_tracing, wait_until, Recorder};
use josef_quorum::{MetadataQuorum, QuorumConfig, QuorumError, RAFT_PREAMBLE};

#[test]
fn three_voters_elect_commit_fail_over_and_catch_up() {
    let mut c = Cluster::new(3, 10_000);
    let (leader, term) = c.agreed_leader().expect("a leader is elected");
    assert!(c.node(leader).quorum.as_ref().unwrap().is_leader());

    // A follower refuses with the leader's id.
    let follower = c.voters.keys().copied().find(|id| *id != leader).unwrap();
    match c.propose(follower, "nope") {
        Err(QuorumError::NotLeader { leader: l }) => assert_eq!(l, Some(leader)),
        other => panic!("expected NotLeader, got {other:?}"),
    }

    let mut committed: Vec<(u64, String)> = (0..20).map(|i| c.commit(&format!("a{i}"))).collect();
    assert!(committed.windows(2).all(|w| w[0].0 < w[1].0));
    assert!(
        wait_until(WAIT, || c.consistent(&committed)),
        "all nodes apply the 20 batches"
    );
    let last = committed.last().unwrap().0;
    // The leader's view of the quorum: everyone has the last entry, and was heard from.
    assert!(wait_until(WAIT, || {
        let Some((l, _)) = c.agreed_leader() else {
            return false;
        };
        let q = c.node(l).quorum.as_ref().unwrap();
        let s = q.status();
        q.committed_index() >= Some(last)
            && s.leader == Some(l)
            && s.term >= term
            && s.high_watermark > last
            && s.voters.len() == 3
            && s.voters.iter().all(|v| {
                v.log_end_offset > last as i64
                    && v.last_fetch_ms.is_some()
                    && v.last_caught_up_ms.is_some()
            })
    }));

    // Bad bytes on the Raft port close that connection, and nothing else.
    let addr = c.node(follower).addr;
    for junk in [
        &b"GET / HTTP/1.1\r\n\r\n"[..],
        &[0xff, 0xff, 0xff, 0x01, 0x7f, 0xff, 0xff, 0xff, 1, 2][..],
        &[0xff, 0xff, 0xff, 0x01, 0, 0, 0, 3, b'{', b'x', b'}'][..],
    ] {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(WAIT)).unwrap();
        s.write_all(junk).unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(s.read(&mut buf).unwrap_or(0), 0, "connection closed");
    }
    let _ = RAFT_PREAMBLE;

    // Crash the leader (whoever leads now).
    let (leader, term) = c.agreed_leader().unwrap();
    c.kill(leader);
    let killed_at = Instant::now();
    let (new_leader, new_term) = c.agreed_leader().expect("a new leader is elected");
    let failover = killed_at.elapsed();
    assert_ne!(new_leader, leader);
    assert!(new_term > term);
    assert!(
        failover < Duration::from_secs(5),
        "failover took {failover:?}"
    );
    // Naming itself leader means it has applied everything committed before its term.
    let applied = c.node(new_leader).sm.texts();
    assert!(
        expected(&committed).iter().all(|w| applied.contains(w)),
        "the new leader claims only after replaying the earlier terms"
    );

    committed.extend((0..10).map(|i| c.commit(&format!("b{i}"))));
    assert!(
        wait_until(WAIT, || c.consistent(&committed)),
        "no committed entry lost"
    );

    // The old leader comes back with its log and catches up.
    c.restart(leader);
    assert!(
        wait_until(WAIT, || c.consistent(&committed)),
        "restarted node catches up: {:?}",
        c.node(leader).sm.texts()
    );
    committed.push(c.commit("c0"));
    assert!(wait_until(WAIT, || c.consistent(&committed)));
    for n in c.live() {
        assert!(
            n.sm.errors().is_empty(),
            "node {}: {:?}",
            n.id,
            n.sm.errors()
        );
    }
}

#[test]
fn all_voters_restart_from_snapshot_and_log() {
    let mut c = Cluster::new(3, 10);
    c.agreed_leader().expect("a leader is elected");
    let committed: Vec<(u64, String)> = (0..35).map(|i| c.commit(&format!("s{i}"))).collect();
    assert!(wait_until(WAIT, || c.consistent(&committed)));
    // Snapshots were taken and the log below them purged, on every node.
    assert!(wait_until(WAIT, || c.nodes.iter().all(|n| {
        let names: Vec<String> = std::fs::read_dir(&n.dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.iter().any(|f| f.starts_with("snapshot-"))
            && names.iter().any(|f| f == "purged.json")
            && !names.iter().any(|f| f == "log-00000000000000000000.seg")
    })));
    let before: Vec<_> = c.nodes.iter().map(|n| n.sm.state()).collect();

    // A graceful stop of one node, a crash of the two others.
    let ids: Vec<u64> = c.voters.keys().copied().collect();
    {
        let n = c.node(ids[0]);
        n.rt.as_ref()
            .unwrap()
            .block_on(n.quorum.as_ref().unwrap().shutdown())
            .unwrap();
    }
    for id in &ids {
        c.kill(*id);
    }
    for id in &ids {
        c.restart(*id);
    }
    // Each node loaded its snapshot before anything else.
    for n in &c.nodes {
        let first = n.sm.installed.lock().unwrap().first().copied();
        assert!(
            first.is_some_and(|i| i >= 10),
            "node {} loaded a snapshot: {first:?}",
            n.id
        );
    }
    c.agreed_leader().expect("a leader after the restart");
    assert!(
        wait_until(WAIT, || c.nodes.iter().zip(&before).all(|(n, b)| n
            .sm
            .state()
            .batches
            == b.batches)),
        "the same state after the restart"
    );
    for (n, b) in c.nodes.iter().zip(&before) {
        assert!(n.sm.state().last >= b.last);
        assert!(
            n.sm.errors().is_empty(),
            "node {}: {:?}",
            n.id,
            n.sm.errors()
        );
    }
    let (index, _) = c.commit("after");
    assert!(index > committed.last().unwrap().0);
}

#[test]
fn a_follower_far_behind_gets_a_snapshot() {
    let mut c = Cluster::new(3, 10);
    let (leader, _) = c.agreed_leader().expect("a leader is elected");
    let behind = c.voters.keys().copied().find(|id| *id != leader).unwrap();
    c.kill(behind);
    let committed: Vec<(u64, String)> = (0..40).map(|i| c.commit(&format!("f{i}"))).collect();
    // The live nodes have purged what the stopped follower lacks.
    assert!(wait_until(WAIT, || c
        .live()
        .all(|n| n.dir.join("purged.json").exists())));
    c.restart(behind);
    assert!(
        wait_until(WAIT, || c.consistent(&committed)),
        "the follower catches up: {:?}",
        c.node(behind).sm.texts()
    );
    assert!(
        !c.node(behind).sm.installed.lock().unwrap().is_empty(),
        "through a snapshot from the leader"
    );
    assert!(
        c.node(behind).sm.errors().is_empty(),
        "{:?}",
        c.node(behind).sm.errors()
    );
}

#[test]
fn a_leader_cut_off_from_the_majority_stops_leading() {
    let mut c = Cluster::new(3, 10_000);
    let (leader, term) = c.agreed_leader().expect("a leader is elected");
    let committed = vec![c.commit("x0")];
    let followers: Vec<u64> = c
        .voters
        .keys()
        .copied()
        .filter(|id| *id != leader)
        .collect();
    for f in &followers {
        c.kill(*f);
    }
    let q = c.node(leader).quorum.clone().unwrap();
    assert!(
        wait_until(WAIT, || q.leader().is_none()),
        "the lone leader stops leading"
    );
    match c.propose(leader, "lost") {
        Err(QuorumError::NotLeader { leader: None }) => {}
        other => panic!("expected NotLeader without a leader, got {other:?}"),
    }
    // A majority again: a leader (of this term or a later one) and writes commit.
    c.restart(followers[0]);
    let (_, t) = c.agreed_leader().expect("a leader once a majority is back");
    assert!(t >= term);
    let mut committed = committed;
    committed.push(c.commit("x1"));
    assert!(wait_until(WAIT, || c.consistent(&committed)));
}

#[tokio::test]
async fn a_single_voter_commits_alone_and_bad_starts_are_typed_errors() {
    init_tracing();
    let tmp = tempfile::tempdir().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let voters =
        josef_quorum::parse_voters(&format!("7@{}", listener.local_addr().unwrap())).unwrap();
    let dir = tmp.path().join("__cluster_metadata-0");

    // Not a voter.
    let bad = QuorumConfig::new(8, voters.clone(), &dir);
    assert!(matches!(
        MetadataQuorum::start(bad, Arc::new(Recorder::default())).await,
        Err(QuorumError::InvalidConfig(_))
    ));

    let mut config = QuorumConfig::new(7, voters.clone(), &dir);
    config.election_timeout_ms = 300;
    config.heartbeat_interval_ms = 50;
    let sm = Arc::new(Recorder::default());
    let q = MetadataQuorum::start(config.clone(), sm.clone())
        .await
        .unwrap();
    q.serve_listener(listener).unwrap();
    let mut rx = q.subscribe_leader();
    let term = tokio::time::timeout(WAIT, async {
        loop {
            if let Some((7, term)) = *rx.borrow_and_update() {
                return term;
            }
            rx.changed().await.unwrap();
        }
    })
    .await
    .expect("the single voter leads");
    let index = q.propose(vec![Bytes::from_static(b"solo")]).await.unwrap();
    assert_eq!(sm.texts(), vec![(index, "solo".to_string())]);
    let s = q.status();
    assert_eq!(
        (s.leader, s.term, s.high_watermark),
        (Some(7), term, index + 1)
    );
    q.shutdown().await.unwrap();
    drop(q);

    // A vote file that does not parse stops the start instead of a guess.
    std::fs::write(dir.join("vote.json"), b"{\"leader_id\":").unwrap();
    assert!(matches!(
        MetadataQuorum::start(config, Arc::new(Recorder::default())).await,
        Err(QuorumError::Corrupt(_))
    ));
}

/// `snapshot_max_interval_ms` (Kafka's `metadata.log.max.snapshot.interval.ms`): with an entry
/// threshold never reached, a snapshot of the applied entries is still taken on time.
#[tokio::test]
async fn a_snapshot_is_taken_on_time_when_the_entry_threshold_is_not_reached() {
    init_tracing();
    let tmp = tempfile::tempdir().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let voters =
        josef_quorum::parse_voters(&format!("1@{}", listener.local_addr().unwrap())).unwrap();
    let dir = tmp.path().join("__cluster_metadata-0");
    let mut config = QuorumConfig::new(1, voters, &dir);
    config.election_timeout_ms = 300;
    config.heartbeat_interval_ms = 50;
    config.snapshot_every_n_entries = 1_000_000;
    config.snapshot_max_interval_ms = 100;
    let q = MetadataQuorum::start(config, Arc::new(Recorder::default()))
        .await
        .unwrap();
    q.serve_listener(listener).unwrap();
    let index = tokio::time::timeout(WAIT, async {
        loop {
            match q.propose(vec![Bytes::from_static(b"timed")]).await {
                Ok(i) => return i,
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    })
    .await
    .expect("the single voter commits");
    let snapshot_at = || {
        std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| {
                let name = e.unwrap().file_name().to_string_lossy().into_owned();
                name.strip_prefix("snapshot-")?
                    .strip_suffix(".snap")?
                    .parse::<u64>()
                    .ok()
            })
            .max()
    };
    let taken = tokio::time::timeout(WAIT, async {
        while !matches!(snapshot_at(), Some(i) if i >= index) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        taken.is_ok(),
        "snapshot at {:?}, entry at {index}",
        snapshot_at()
    );
    q.shutdown().await.unwrap();
}
