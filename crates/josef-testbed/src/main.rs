//! `josef-testbed up --nodes 3 --dir DIR`: a cluster on this machine until Ctrl-C or SIGTERM;
//! `josef-testbed can-mount`: whether the disk-fault tests can mount their disks here.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use josef_testbed::disk::{DiskKind, DiskMount};
use josef_testbed::{BrokerCommand, Cluster, Node};

#[derive(Parser)]
#[command(about = "Josef nodes on this machine, per the cluster contract of docs/cluster.md")]
struct Args {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Starts a cluster, prints each node's ports and log, and stops it on Ctrl-C or SIGTERM.
    Up {
        /// Combined (broker,controller) nodes.
        #[arg(long, default_value_t = 3)]
        nodes: usize,
        /// Where the node directories go (kept afterwards).
        #[arg(long)]
        dir: PathBuf,
        /// A property for every node (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// The broker program (taking `-c FILE`); default: $JOSEF_BROKER_BIN or josef-broker.
        #[arg(long)]
        broker: Option<PathBuf>,
    },
    /// Says whether this machine can mount the disks of the disk-fault tests (tmpfs, and ext4 on
    /// a loop device turning read-only on an error); exits 0 only when it can mount both. The
    /// test command runs it so that, where mounting works, those tests must run rather than
    /// report SKIPPED.
    CanMount,
}

/// Blocks SIGINT and SIGTERM in this thread (and the threads it starts), so `wait_for_signal`
/// takes them synchronously; the nodes unblock them before exec (`BrokerCommand`).
fn block_signals() -> libc::sigset_t {
    // SAFETY: a zeroed sigset_t is initialised by sigemptyset before use; these calls only
    // touch the set and this thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

fn wait_for_signal(set: &libc::sigset_t) -> libc::c_int {
    let mut sig: libc::c_int = 0;
    // SAFETY: `set` was initialised by block_signals; sigwait writes only `sig`.
    unsafe { libc::sigwait(set, &mut sig) };
    sig
}

fn describe(n: &Node) -> String {
    let port = |p: Option<u16>| p.map_or("-".to_string(), |p| format!("127.0.0.1:{p}"));
    format!(
        "node {}: pid {}, client {}, controller {}, log {}",
        n.id(),
        n.pid().unwrap_or(0),
        port(n.client_port()),
        port(n.controller_port()),
        n.log_path().display()
    )
}

fn up(nodes: usize, dir: PathBuf, set: Vec<String>, broker: Option<PathBuf>) -> Result<(), String> {
    let signals = block_signals();
    let mut b = Cluster::builder().combined(nodes).dir(dir);
    for kv in set {
        let (k, v) = kv
            .split_once('=')
            .ok_or(format!("--set {kv}: not KEY=VALUE"))?;
        b = b.property(k, v);
    }
    if let Some(p) = broker {
        b = b.command(BrokerCommand::new(p));
    }
    // Dropping the cluster on an error kills every node by PID.
    let mut cluster = b.start().map_err(|e| e.to_string())?;
    for n in cluster.nodes() {
        println!("{}", describe(n));
    }
    println!("bootstrap.servers={}", cluster.bootstrap());
    println!("running; Ctrl-C or SIGTERM stops every node");
    let sig = wait_for_signal(&signals);
    println!("signal {sig}: stopping (SIGTERM to every node)");
    let exits = cluster.stop_all().map_err(|e| e.to_string())?;
    for (id, status) in exits {
        println!("node {id}: {status}");
    }
    Ok(())
}

fn can_mount() -> ExitCode {
    let mut all = true;
    for kind in [DiskKind::Tmpfs, DiskKind::Ext4] {
        match DiskMount::unavailable(kind) {
            None => println!("{kind:?}: can be mounted"),
            Some(why) => {
                all = false;
                println!("{kind:?}: cannot be mounted: {why}");
            }
        }
    }
    if all {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn main() -> ExitCode {
    let (nodes, dir, set, broker) = match Args::parse().command {
        Cmd::CanMount => return can_mount(),
        Cmd::Up {
            nodes,
            dir,
            set,
            broker,
        } => (nodes, dir, set, broker),
    };
    match up(nodes, dir, set, broker) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("josef-testbed: {e}");
            ExitCode::FAILURE
        }
    }
}
