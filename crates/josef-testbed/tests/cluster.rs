//! The test bed against the real josef-broker (built: `cargo build -p josef-broker`, or
//! `$JOSEF_BROKER_BIN`): three combined nodes through a pause past the session timeout, a kill -9
//! and restart, and SIGTERM; and the directory rules without any broker.

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use josef_testbed::{client, wait_until, BrokerCommand, Cluster};

const SETTLE: Duration = Duration::from_secs(30);

fn lists(c: &Cluster, id: i32) -> Option<Vec<i32>> {
    client::broker_ids(c.node(id).ok()?.client_addr()?).ok()
}

#[test]
fn three_nodes_pause_kill_restart_and_sigterm() {
    let mut c = Cluster::builder().combined(3).start().unwrap();

    // Ready means each node's Metadata lists the three brokers.
    for id in 1..=3 {
        assert_eq!(
            lists(&c, id),
            Some(vec![1, 2, 3]),
            "node {id}\n{}",
            c.logs(20)
        );
        let props = std::fs::read_to_string(c.node(id).unwrap().properties_path()).unwrap();
        assert!(
            props.contains("process.roles=broker,controller\n"),
            "{props}"
        );
        assert!(
            props.contains("broker.session.timeout.ms=2000\n"),
            "{props}"
        );
    }

    // SIGSTOP node 2 past the session timeout: the kernel shows it stopped, it answers nothing,
    // and the controller fences it (node 1's Metadata drops it).
    let n2 = c.node_mut(2).unwrap();
    n2.pause().unwrap();
    assert_eq!(n2.proc_state(), Some('T'));
    assert!(!client::api_versions_ok(n2.client_addr().unwrap()));
    let mut seen = None;
    let fenced = wait_until(SETTLE, Duration::from_millis(200), || {
        seen = lists(&c, 1);
        seen.as_ref().is_some_and(|ids| !ids.contains(&2))
    });
    assert!(
        fenced,
        "node 2 fenced while paused: {seen:?}\n{}",
        c.logs(20)
    );
    c.node_mut(2).unwrap().resume().unwrap();
    assert_ne!(c.node(2).unwrap().proc_state(), Some('T'));
    c.wait_ready(SETTLE).unwrap();

    // kill -9 node 3 and start it again on the same ports and data dir.
    let n3 = c.node_mut(3).unwrap();
    let pid = n3.pid().unwrap();
    let status = n3.kill9().unwrap();
    assert_eq!(status.signal(), Some(9));
    assert!(!n3.is_running());
    n3.start().unwrap();
    assert_ne!(n3.pid(), Some(pid));
    assert_eq!(n3.log().matches("==== testbed: starting node 3").count(), 2);
    assert_eq!(
        n3.current_log()
            .matches("==== testbed: starting node 3")
            .count(),
        1
    );
    c.wait_ready(SETTLE).unwrap();

    // SIGTERM to all: each exits 0.
    let exits = c.stop_all().unwrap();
    assert_eq!(exits.len(), 3);
    for (id, status) in &exits {
        assert_eq!(
            status.code(),
            Some(0),
            "node {id}: {status}\n{}",
            c.logs(20)
        );
    }
}

#[test]
fn the_directory_goes_unless_the_thread_panicked() {
    let built = || {
        Cluster::builder()
            .combined(1)
            .broker_program("/bin/false")
            .build()
            .unwrap()
    };
    let c = built();
    let dir = c.dir().to_path_buf();
    assert!(dir.join("node1").is_dir());
    drop(c);
    assert!(!dir.exists(), "removed after a passing test");

    let kept: Arc<Mutex<Option<PathBuf>>> = Arc::default();
    let k = kept.clone();
    let panicked = std::thread::spawn(move || {
        let c = built();
        *k.lock().unwrap() = Some(c.dir().to_path_buf());
        panic!("a failing test");
    })
    .join()
    .is_err();
    assert!(panicked);
    let dir = kept.lock().unwrap().take().unwrap();
    assert!(dir.join("node1").is_dir(), "kept after a panic");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_node_that_exits_is_reported_with_its_log() {
    let mut c = Cluster::builder()
        .combined(1)
        .broker_program("/bin/false")
        .build()
        .unwrap();
    let err = c.start().unwrap_err().to_string();
    assert!(err.contains("node 1 exited"), "{err}");
    assert!(err.contains("==== testbed: starting node 1"), "{err}");
}

/// A stand-in broker that ignores its `-c FILE` and sleeps (SIGTERM's default action ends it).
fn sleeper() -> BrokerCommand {
    BrokerCommand::new("/bin/sh").args(["-c", "exec sleep 60", "sh"])
}

#[test]
fn a_node_gets_sigterm_even_if_the_test_bed_blocks_it() {
    // The CLI blocks SIGTERM to sigwait it; a blocked mask is inherited across exec, and a node
    // that never sees SIGTERM could not be stopped.
    // SAFETY: the set is initialised by sigemptyset; only this thread's mask changes.
    let old = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        old
    };
    let mut c = Cluster::builder()
        .combined(1)
        .command(sleeper())
        .build()
        .unwrap();
    let n = c.node_mut(1).unwrap();
    n.launch().unwrap();
    let stopped = n.stop_within(Duration::from_secs(10));
    // SAFETY: restores the mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    assert_eq!(stopped.unwrap().signal(), Some(libc::SIGTERM));
}

fn prop(c: &Cluster, id: i32, key: &str) -> String {
    let n = c.node(id).unwrap();
    n.properties()
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| panic!("node {id} has no {key}"))
}

#[test]
fn with_faults_each_node_reaches_its_peers_through_proxies_it_alone_is_given() {
    let c = Cluster::builder()
        .broker_program("/bin/true")
        .combined(3)
        .faults(true)
        .build()
        .unwrap();
    let proxies: Vec<u16> = c.proxies().map(|p| p.port()).collect();
    assert_eq!(
        proxies.len(),
        3 + 3 * 2,
        "one advertised proxy per broker, one per voter pair"
    );
    let mut seen = std::collections::BTreeSet::new();
    for n in c.nodes() {
        let id = n.id();
        // The advertised PLAINTEXT listener is its proxy, forwarding to the real one.
        let proxy = c.advertised_proxy(id).unwrap();
        assert_eq!(proxy.target(), n.client_addr().unwrap());
        assert_eq!(
            prop(&c, id, "advertised.listeners"),
            format!("PLAINTEXT://127.0.0.1:{}", proxy.port())
        );
        // Its own voter entry is its real CONTROLLER port; the others are proxy ports that no
        // other node's file names.
        for entry in prop(&c, id, "controller.quorum.voters").split(',') {
            let (voter, addr) = entry.split_once('@').unwrap();
            let port: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
            if voter == id.to_string() {
                assert_eq!(Some(port), n.controller_port());
            } else {
                assert!(proxies.contains(&port), "{entry} of node {id}");
                assert!(seen.insert(port), "{port} given to two nodes");
            }
        }
    }
    let plain = Cluster::builder()
        .broker_program("/bin/true")
        .combined(2)
        .build()
        .unwrap();
    assert!(plain.net().is_none() && plain.proxies().next().is_none());
    let n1 = plain.node(1).unwrap();
    assert_eq!(
        prop(&plain, 1, "advertised.listeners"),
        format!("PLAINTEXT://127.0.0.1:{}", n1.client_port().unwrap())
    );
}
