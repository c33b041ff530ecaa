//! Observers (non-voting followers of the committed log) over loopback: three voters and an
//! observer that keeps up through a leader crash; an observer that starts after the log was
//! purged gets the snapshot and then the tail; only committed entries are served; bad bytes on
//! either side close the connection and nothing else.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::cluster::{Cluster, WAIT};
use common::{wait_until, Recorder};
use josef_quorum::{MetadataObserver, ObserverConfig, OBSERVER_PREAMBLE};
use tokio::runtime::Runtime;

/// An observer on a runtime of its own (as another process would have).
struct Observer {
    rt: Runtime,
    handle: MetadataObserver,
    sm: Arc<Recorder>,
}

impl Observer {
    fn start(voters: BTreeMap<u64, String>) -> Observer {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let sm = Arc::new(Recorder::default());
        let mut config = ObserverConfig::new(100);
        config.request_timeout_ms = 500;
        config.max_wait_ms = 200;
        config.retry_backoff_ms = 50;
        // Small answers, so catching up takes several fetches.
        config.max_bytes = 200;
        let handle = rt
            .block_on(async { MetadataObserver::start(voters, sm.clone(), config) })
            .unwrap();
        Observer { rt, handle, sm }
    }

    /// Whether the observer's state is every live voter's.
    fn caught_up(&self, c: &Cluster) -> bool {
        let mine = self.sm.state();
        c.live().all(|n| n.sm.state() == mine)
    }

    fn stop(self) {
        self.rt.block_on(self.handle.shutdown());
        assert!(self.sm.errors().is_empty(), "{:?}", self.sm.errors());
    }
}

#[test]
fn an_observer_follows_the_commits_and_keeps_up_through_a_leader_crash() {
    let mut c = Cluster::new(3, 10_000);
    let (leader, _) = c.agreed_leader().expect("a leader is elected");
    let obs = Observer::start(c.voters.clone());
    let mut committed: Vec<(u64, String)> = (0..20).map(|i| c.commit(&format!("a{i}"))).collect();
    assert!(wait_until(WAIT, || c.consistent(&committed)));
    assert!(
        wait_until(WAIT, || obs.caught_up(&c)),
        "the observer applies what the voters applied: {:?}",
        obs.sm.texts()
    );
    assert!(
        wait_until(WAIT, || obs.handle.leader().map(|(l, _)| l) == Some(leader)),
        "the observer learns the leader: {:?}",
        obs.handle.leader()
    );
    assert_eq!(obs.handle.applied_index(), obs.sm.state().last);

    c.kill(leader);
    let (new_leader, new_term) = c.agreed_leader().expect("a new leader");
    assert_ne!(new_leader, leader);
    committed.extend((0..10).map(|i| c.commit(&format!("b{i}"))));
    assert!(wait_until(WAIT, || c.consistent(&committed)));
    assert!(
        wait_until(WAIT, || obs.caught_up(&c)),
        "the observer keeps up after the failover: {:?}",
        obs.sm.texts()
    );
    assert!(
        wait_until(WAIT, || obs.handle.leader() == Some((new_leader, new_term))),
        "and follows the new leader: {:?}",
        obs.handle.leader()
    );
    // Entries committed while it follows the new leader arrive too (long poll, not a timer).
    committed.push(c.commit("c0"));
    assert!(wait_until(Duration::from_secs(5), || obs.caught_up(&c)));
    assert!(
        obs.sm.installed.lock().unwrap().is_empty(),
        "no snapshot was needed"
    );
    obs.stop();
}

#[test]
fn a_late_observer_gets_the_snapshot_then_the_tail() {
    let c = Cluster::new(3, 10);
    c.agreed_leader().expect("a leader is elected");
    let mut committed: Vec<(u64, String)> = (0..40).map(|i| c.commit(&format!("s{i}"))).collect();
    assert!(wait_until(WAIT, || c.consistent(&committed)));
    assert!(wait_until(WAIT, || c
        .live()
        .all(|n| n.dir.join("purged.json").exists())));
    let obs = Observer::start(c.voters.clone());
    assert!(
        wait_until(WAIT, || obs.caught_up(&c)),
        "the late observer catches up: {:?}",
        obs.sm.texts()
    );
    let installed = obs.sm.installed.lock().unwrap().clone();
    assert!(
        installed.first().is_some_and(|i| *i >= 10),
        "through a snapshot: {installed:?}"
    );
    committed.extend((0..5).map(|i| c.commit(&format!("t{i}"))));
    assert!(wait_until(WAIT, || c.consistent(&committed)));
    assert!(
        wait_until(WAIT, || obs.caught_up(&c)),
        "then the tail: {:?}",
        obs.sm.texts()
    );
    obs.stop();
}

/// Sends one observer fetch on a raw connection and reads the answer as JSON.
fn fetch(
    s: &mut std::net::TcpStream,
    to: u64,
    from_index: u64,
    max_wait_ms: u64,
) -> serde_json::Value {
    let body = serde_json::json!({
        "to": to, "from_index": from_index, "max_wait_ms": max_wait_ms, "max_bytes": 1_000_000
    })
    .to_string();
    s.write_all(&(body.len() as u32).to_be_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut buf = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut buf).unwrap();
    serde_json::from_slice(&buf).unwrap()
}

fn closed(s: &mut std::net::TcpStream) -> bool {
    let mut buf = [0u8; 16];
    s.read(&mut buf).unwrap_or(0) == 0
}

#[test]
fn only_committed_entries_are_served_and_bad_requests_close_the_connection() {
    let mut c = Cluster::new(3, 10_000);
    let (leader, _) = c.agreed_leader().expect("a leader is elected");
    let (index, _) = c.commit("x0");
    let addr = c.node(leader).addr;

    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    s.write_all(&OBSERVER_PREAMBLE).unwrap();
    let resp = fetch(&mut s, leader, 0, 0);
    let entries = resp["Entries"]["entries"].as_array().unwrap().clone();
    assert_eq!(entries[0]["index"], 0, "{resp}");
    assert!(entries
        .iter()
        .any(|e| e["index"] == index && e["batch"].as_array().unwrap().len() == 2));
    assert_eq!(resp["Entries"]["leader"][0], leader);

    // Cut the leader off: what it appends now cannot commit, and is not served.
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
    let hw = q.status().high_watermark;
    c.node(leader).rt.as_ref().unwrap().spawn({
        let q = q.clone();
        async move {
            let _ = q.propose(vec![Bytes::from_static(b"uncommitted")]).await;
        }
    });
    assert!(wait_until(WAIT, || {
        let s = q.status();
        s.voters
            .iter()
            .any(|v| v.id == leader && v.log_end_offset > hw as i64)
    }));
    assert_eq!(q.status().high_watermark, hw);
    let resp = fetch(&mut s, leader, hw, 300);
    assert_eq!(
        resp["Entries"]["entries"].as_array().map(|e| e.len()),
        Some(0),
        "an uncommitted entry is not served: {resp}"
    );

    // A fetch for another node, junk, and an oversized frame each close their connection.
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    s.write_all(&OBSERVER_PREAMBLE).unwrap();
    let body = br#"{"to":999,"from_index":0,"max_wait_ms":0,"max_bytes":10}"#;
    s.write_all(&(body.len() as u32).to_be_bytes()).unwrap();
    s.write_all(body).unwrap();
    assert!(closed(&mut s), "a fetch meant for another node");
    for junk in [
        &[0xff, 0xff, 0xff, 0x02, 0x7f, 0xff, 0xff, 0xff, 1, 2][..],
        &[0xff, 0xff, 0xff, 0x02, 0, 0, 0, 3, b'{', b'x', b'}'][..],
        &[0xff, 0xff, 0xff, 0x02, 0, 0, 0, 2, b'{', b'}'][..],
    ] {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(WAIT)).unwrap();
        s.write_all(junk).unwrap();
        assert!(closed(&mut s), "junk {junk:?}");
    }
    // The leader still serves.
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    s.write_all(&OBSERVER_PREAMBLE).unwrap();
    assert!(fetch(&mut s, leader, 0, 0)["Entries"].is_object());
}

/// A "voter" that answers every fetch with bad bytes: a length over the bound, JSON that is not
/// an answer, or entries out of sequence, by turns.
fn spawn_bad_voter() -> (String, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let conns = Arc::new(AtomicUsize::new(0));
    let n = conns.clone();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            let k = n.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                let reply: Vec<u8> = match k % 3 {
                    0 => vec![0x7f, 0xff, 0xff, 0xff, 1, 2, 3],
                    1 => {
                        let b = br#"{"Nope":1}"#;
                        [&(b.len() as u32).to_be_bytes()[..], b].concat()
                    }
                    _ => {
                        let b = br#"{"Entries":{"node_id":0,"leader":null,"committed":9,"entries":[{"index":7,"term":1,"batch":[]}]}}"#;
                        [&(b.len() as u32).to_be_bytes()[..], b].concat()
                    }
                };
                let _ = s.write_all(&reply);
                let _ = s.read(&mut buf);
            });
        }
    });
    (addr, conns)
}

#[test]
fn bad_answers_close_the_connection_and_the_observer_moves_on() {
    let (bad, conns) = spawn_bad_voter();
    // Only the bad voter: the observer keeps retrying it and applies nothing.
    let alone = Observer::start(BTreeMap::from([(0, bad.clone())]));
    assert!(
        wait_until(WAIT, || conns.load(Ordering::SeqCst) >= 4),
        "the observer reconnects after each bad answer"
    );
    assert_eq!(alone.handle.applied_index(), None);
    assert!(alone.sm.state().last.is_none());
    alone.stop();

    // With real voters besides, it ends up with the real log.
    let c = Cluster::new(3, 10_000);
    c.agreed_leader().expect("a leader is elected");
    let committed: Vec<(u64, String)> = (0..3).map(|i| c.commit(&format!("g{i}"))).collect();
    assert!(wait_until(WAIT, || c.consistent(&committed)));
    let mut voters = c.voters.clone();
    voters.insert(0, bad);
    let before = conns.load(Ordering::SeqCst);
    let obs = Observer::start(voters);
    assert!(
        wait_until(WAIT, || obs.caught_up(&c)),
        "{:?}",
        obs.sm.texts()
    );
    assert!(
        conns.load(Ordering::SeqCst) > before,
        "the bad voter was tried first"
    );
    obs.stop();
}

#[test]
fn an_observer_needs_voters_and_a_runtime() {
    let sm = Arc::new(Recorder::default());
    assert!(MetadataObserver::start(
        BTreeMap::from([(1, "127.0.0.1:1".to_string())]),
        sm.clone(),
        ObserverConfig::new(5)
    )
    .is_err());
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        assert!(MetadataObserver::start(BTreeMap::new(), sm, ObserverConfig::new(5)).is_err());
    });
}
