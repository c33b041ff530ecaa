//! Three `quorum_node` example processes on loopback; the leader is killed with SIGKILL.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::wait_until;

const WAIT: Duration = Duration::from_secs(20);

/// The example binary, built by `cargo test` next to the test binaries.
fn example_binary() -> PathBuf {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(build_example).clone()
}

fn build_example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let debug_dir = exe.parent().and_then(Path::parent).unwrap();
    let path = debug_dir
        .join("examples")
        .join(format!("quorum_node{}", std::env::consts::EXE_SUFFIX));
    // `cargo test` builds the examples, `cargo test --test processes` does not: build it (a
    // no-op when it is up to date) whenever cargo runs this test.
    if let Ok(cargo) = std::env::var("CARGO") {
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "-p", "josef-quorum", "--example", "quorum_node"]);
        if let Some(target_dir) = debug_dir.parent() {
            cmd.arg("--target-dir").arg(target_dir);
        }
        if debug_dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("run cargo build");
        assert!(status.success(), "build the quorum_node example");
    }
    assert!(
        path.exists(),
        "{} is missing (run through cargo test)",
        path.display()
    );
    path
}

struct Proc {
    child: Child,
    stdin: ChildStdin,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Proc {
    fn spawn(id: u64, voters: &str, dir: &Path) -> Proc {
        let mut child = Command::new(example_binary())
            .args(["--id", &id.to_string(), "--voters", voters, "--dir"])
            .arg(dir)
            .args([
                "--election-timeout-ms",
                "300",
                "--heartbeat-interval-ms",
                "50",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            // The nodes' logs (openraft reports unreachable peers as errors) only when asked for.
            .stderr(if std::env::var_os("RUST_LOG").is_some() {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .spawn()
            .expect("start quorum_node");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                match line {
                    Ok(l) => sink.lock().unwrap().push(l),
                    Err(_) => return,
                }
            }
        });
        Proc {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// The latest `leader ID TERM` line.
    fn leader(&self) -> Option<(u64, u64)> {
        let lines = self.lines();
        let last = lines.iter().rev().find(|l| l.starts_with("leader "))?;
        let mut it = last.split(' ').skip(1);
        Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
    }

    /// Applied non-empty entries: text -> index (a restarted process reports them again).
    fn applied(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for l in self.lines() {
            let parts: Vec<&str> = l.splitn(4, ' ').collect();
            if parts.len() == 4 && parts[0] == "applied" && parts[3] != "-" {
                if let Ok(i) = parts[1].parse() {
                    out.insert(parts[3].to_string(), i);
                }
            }
        }
        out
    }

    fn proposed(&self, text: &str) -> Option<u64> {
        let prefix = format!("proposed {text} ");
        self.lines()
            .iter()
            .find_map(|l| l.strip_prefix(&prefix).and_then(|i| i.parse().ok()))
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn agreed_leader(procs: &BTreeMap<u64, Proc>, not: Option<u64>) -> Option<(u64, u64)> {
    let mut found = None;
    wait_until(WAIT, || {
        let views: Vec<_> = procs.values().map(Proc::leader).collect();
        let first = views[0];
        let ok = first.is_some_and(|(l, _)| procs.contains_key(&l) && Some(l) != not)
            && views.iter().all(|v| *v == first);
        if ok {
            found = first;
        }
        ok
    });
    found
}

/// Commits each text through whoever leads, one at a time, retrying under a new text when
/// leadership moves meanwhile. Records the text that committed and its index.
fn propose_all(
    procs: &mut BTreeMap<u64, Proc>,
    texts: &[String],
    committed: &mut BTreeMap<String, u64>,
) {
    let deadline = Instant::now() + WAIT;
    for text in texts {
        let mut attempt = 0;
        loop {
            assert!(Instant::now() < deadline, "{text} did not commit");
            let (leader, _) = agreed_leader(procs, None).expect("a leader");
            let t = if attempt == 0 {
                text.clone()
            } else {
                format!("{text}#{attempt}")
            };
            let p = procs.get_mut(&leader).unwrap();
            p.send(&format!("propose {t}"));
            let answered = |l: &String| {
                l.starts_with(&format!("proposed {t} "))
                    || l.starts_with(&format!("notleader {t} "))
                    || l.starts_with(&format!("error {t} "))
            };
            assert!(
                wait_until(WAIT, || p.lines().iter().any(answered)),
                "no answer to {t}"
            );
            if let Some(index) = p.proposed(&t) {
                committed.insert(t, index);
                break;
            }
            attempt += 1;
        }
    }
}

fn has_all(p: &Proc, committed: &BTreeMap<String, u64>) -> bool {
    let applied = p.applied();
    committed.iter().all(|(t, i)| applied.get(t) == Some(i))
}

#[test]
fn sigkill_of_the_leader_process() {
    common::init_tracing();
    let tmp = tempfile::tempdir().unwrap();
    let voters: BTreeMap<u64, u16> = (1..=3).map(|id| (id, free_port())).collect();
    let voters_arg = voters
        .iter()
        .map(|(id, p)| format!("{id}@127.0.0.1:{p}"))
        .collect::<Vec<_>>()
        .join(",");
    let dir = |id: u64| tmp.path().join(format!("node{id}"));
    let mut procs: BTreeMap<u64, Proc> = voters
        .keys()
        .map(|&id| (id, Proc::spawn(id, &voters_arg, &dir(id))))
        .collect();

    agreed_leader(&procs, None).expect("a leader is elected");
    let mut committed = BTreeMap::new();
    let first: Vec<String> = (0..10).map(|i| format!("v{i}")).collect();
    propose_all(&mut procs, &first, &mut committed);
    assert!(
        wait_until(WAIT, || procs.values().all(|p| has_all(p, &committed))),
        "every node applies the batches"
    );

    // kill -9 the leader.
    let (leader, term) = agreed_leader(&procs, None).expect("a leader");
    let mut old = procs.remove(&leader).unwrap();
    old.child.kill().unwrap();
    let killed_at = Instant::now();
    let _ = old.child.wait();
    drop(old);

    let (_, new_term) = agreed_leader(&procs, Some(leader)).expect("a new leader is elected");
    let failover = killed_at.elapsed();
    assert!(new_term > term);
    assert!(
        failover < Duration::from_secs(10),
        "failover took {failover:?}"
    );
    let second: Vec<String> = (10..20).map(|i| format!("v{i}")).collect();
    propose_all(&mut procs, &second, &mut committed);
    assert!(
        wait_until(WAIT, || procs.values().all(|p| has_all(p, &committed))),
        "no committed entry is lost"
    );

    // The killed node restarts from its directory and catches up.
    procs.insert(leader, Proc::spawn(leader, &voters_arg, &dir(leader)));
    assert!(
        wait_until(WAIT, || has_all(&procs[&leader], &committed)),
        "the restarted node catches up: {:?}",
        procs[&leader].applied()
    );
    // Indexes agree everywhere.
    let views: Vec<_> = procs.values().map(|p| p.applied()).collect();
    for v in &views {
        for (t, i) in &committed {
            assert_eq!(v.get(t), Some(i));
        }
    }
}
