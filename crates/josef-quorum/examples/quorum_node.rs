//! One voter of a metadata quorum as a process, driven by lines on stdin.
//!
//! ```text
//! cargo run -p josef-quorum --example quorum_node -- \
//!     --id 1 --voters 1@127.0.0.1:19093,2@127.0.0.1:29093,3@127.0.0.1:39093 --dir /tmp/q1 \
//!     [--election-timeout-ms 1000] [--heartbeat-interval-ms 250] [--snapshot-every 10000]
//! ```
//!
//! It listens on its own voter address. Stdin: `propose TEXT` proposes a one-record batch; `status`
//! prints the quorum status. Stdout, one line per event:
//! `ready`, `leader ID TERM` / `leader none` on every change, `applied INDEX TERM TEXT` for every
//! committed entry (`-` for an empty batch), `snapshot INDEX` when a snapshot is loaded,
//! `proposed TEXT INDEX`, `notleader TEXT LEADER|none`, `error TEXT MESSAGE`.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use josef_quorum::{parse_voters, MetadataQuorum, MetadataStateMachine, QuorumConfig, QuorumError};
use tokio::io::AsyncBufReadExt;

/// The state: every applied record by index, as text.
#[derive(Default)]
struct Printer {
    state: Mutex<(u64, BTreeMap<u64, String>)>,
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

impl MetadataStateMachine for Printer {
    fn apply(&self, index: u64, term: u64, batch: &[Bytes]) {
        let text = if batch.is_empty() {
            "-".to_string()
        } else {
            batch
                .iter()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .collect::<Vec<_>>()
                .join("|")
        };
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.0 = index;
        if !batch.is_empty() {
            s.1.insert(index, text.clone());
        }
        say(&format!("applied {index} {term} {text}"));
    }

    fn snapshot(&self) -> (u64, Vec<u8>) {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        (s.0, serde_json::to_vec(&s.1).unwrap_or_default())
    }

    fn install_snapshot(&self, last_index: u64, data: &[u8]) {
        let map: BTreeMap<u64, String> = serde_json::from_slice(data).unwrap_or_default();
        // Report the snapshot's entries as applied, so a reader of stdout sees the whole state.
        for (i, t) in &map {
            say(&format!("applied {i} 0 {t}"));
        }
        *self.state.lock().unwrap_or_else(|p| p.into_inner()) = (last_index, map);
        say(&format!("snapshot {last_index}"));
    }
}

fn usage(msg: &str) -> ! {
    eprintln!("quorum_node: {msg}");
    eprintln!("usage: quorum_node --id N --voters ID@HOST:PORT,... --dir PATH [--election-timeout-ms MS] [--heartbeat-interval-ms MS] [--snapshot-every N]");
    std::process::exit(2)
}

#[tokio::main]
async fn main() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .try_init();
    let mut args = std::env::args().skip(1);
    let (mut id, mut voters, mut dir) = (None, None, None);
    let (mut election, mut heartbeat, mut snapshot_every) = (None, None, None);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .unwrap_or_else(|| usage(&format!("{flag} needs a value")));
        let num = |v: &str| {
            v.parse::<u64>()
                .unwrap_or_else(|_| usage(&format!("{flag}: not a number: {v}")))
        };
        match flag.as_str() {
            "--id" => id = Some(num(&value)),
            "--voters" => {
                voters = Some(parse_voters(&value).unwrap_or_else(|e| usage(&e.to_string())))
            }
            "--dir" => dir = Some(value),
            "--election-timeout-ms" => election = Some(num(&value)),
            "--heartbeat-interval-ms" => heartbeat = Some(num(&value)),
            "--snapshot-every" => snapshot_every = Some(num(&value)),
            _ => usage(&format!("unknown flag {flag}")),
        }
    }
    let id = id.unwrap_or_else(|| usage("--id is required"));
    let voters = voters.unwrap_or_else(|| usage("--voters is required"));
    let dir = dir.unwrap_or_else(|| usage("--dir is required"));
    let Some(addr) = voters.get(&id).cloned() else {
        usage("--id is not one of --voters")
    };
    let mut config = QuorumConfig::new(id, voters, dir);
    config.election_timeout_ms = election.unwrap_or(config.election_timeout_ms);
    config.heartbeat_interval_ms = heartbeat.unwrap_or(config.heartbeat_interval_ms);
    config.snapshot_every_n_entries = snapshot_every.unwrap_or(config.snapshot_every_n_entries);

    let quorum = match MetadataQuorum::start(config, Arc::new(Printer::default())).await {
        Ok(q) => q,
        Err(e) => {
            eprintln!("quorum_node: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = quorum.bind_and_serve(&addr).await {
        eprintln!("quorum_node: {e}");
        std::process::exit(1);
    }
    let mut leadership = quorum.subscribe_leader();
    tokio::spawn(async move {
        loop {
            let now = *leadership.borrow_and_update();
            match now {
                Some((l, t)) => say(&format!("leader {l} {t}")),
                None => say("leader none"),
            }
            if leadership.changed().await.is_err() {
                return;
            }
        }
    });
    say("ready");

    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let line = line.trim().to_string();
        if let Some(text) = line.strip_prefix("propose ") {
            let q = quorum.clone();
            let text = text.to_string();
            tokio::spawn(async move {
                match q.propose(vec![Bytes::from(text.clone())]).await {
                    Ok(index) => say(&format!("proposed {text} {index}")),
                    Err(QuorumError::NotLeader { leader }) => say(&format!(
                        "notleader {text} {}",
                        leader.map_or("none".into(), |l| l.to_string())
                    )),
                    Err(e) => say(&format!("error {text} {e}")),
                }
            });
        } else if line == "status" {
            say(&format!("status {:?}", quorum.status()));
        } else if !line.is_empty() {
            say(&format!("error {line} unknown command"));
        }
    }
    // Stdin closed: stop gracefully.
    let _ = quorum.shutdown().await;
}
