//! The replicated metadata log (`__cluster_metadata`) of a Josef cluster, on
//! [openraft](https://docs.rs/openraft/0.9) 0.9.
//!
//! Every controller node (a voter of `controller.quorum.voters`) runs one [`MetadataQuorum`]. The
//! leader [`propose`](MetadataQuorum::propose)s batches of records (one controller write each,
//! opaque bytes encoded by josef-metadata); once a majority has them on disk they commit, and every
//! node hands every committed entry, in log order, to the caller's [`MetadataStateMachine`].
//!
//! - **Metadata offset = Raft log index.** Index 0 is the initial membership, each leader's first
//!   entry of its term is a blank one; both reach [`MetadataStateMachine::apply`] with an empty
//!   batch, so the state machine sees every index, without gaps.
//! - **Controller epoch = Raft term** (see [`MetadataQuorum::leader`]).
//! - **Forming a cluster**: with empty directories on every voter the same static membership is
//!   initialized on each (openraft allows it), and a leader is elected with no other step.
//! - **Storage**: the log in segment files with CRCs, fsynced on append; snapshots of the caller's
//!   state; both under [`QuorumConfig::dir`]. See the `log_store` and `state_machine` module docs
//!   (in the source) for the formats and the recovery rules: a torn or damaged log tail is
//!   truncated with a warning, never a panic.
//! - **Transport**: TCP. A Raft connection starts with [`RAFT_PREAMBLE`], then length-prefixed
//!   JSON frames (bounded by [`MAX_FRAME_BYTES`]). The broker's CONTROLLER listener reads the
//!   first four bytes and hands Raft connections to [`MetadataQuorum::serve_connection`], and
//!   observer connections ([`OBSERVER_PREAMBLE`]) to
//!   [`MetadataQuorum::serve_observer_connection`]; without a broker,
//!   [`MetadataQuorum::bind_and_serve`] runs a listener of its own. The streams are pluggable
//!   ([`transport`]): [`MetadataQuorum::start_with_connector`] /
//!   [`MetadataObserver::start_with_connector`] dial through a [`StreamConnector`] (TLS, say)
//!   and [`MetadataQuorum::serve_stream`] / [`MetadataQuorum::serve_observer_stream`] serve
//!   streams the caller accepted and unwrapped.
//!
//! A node without a quorum (a single-node broker) keeps its metadata records in a
//! [`LocalMetadataLog`] instead: one file of CRC-framed records, fsynced on append.
//!
//! # Files under [`QuorumConfig::dir`]
//!
//! | file | content |
//! |---|---|
//! | `log-<first index>.seg` | log records `length u32 LE, crc32c u32 LE, body` (index, term, leader, kind, the batch's records); fsynced on append |
//! | `vote.json` | the Raft vote, replaced atomically and fsynced before it is acted on |
//! | `purged.json` | the last log id removed below a snapshot |
//! | `committed.json` | the last committed log id (a hint: re-applied at start without waiting for a leader) |
//! | `snapshot-<last index>.snap` | `"JQSNAP01"`, openraft's snapshot meta as JSON, the caller's bytes, a crc32c; only the newest is kept |
//!
//! At start a record cut short, with a wrong CRC, undecodable, or out of sequence ends the log:
//! its segment is truncated there and later segments are deleted (a warning says so); the leader
//! sends what is missing. A damaged snapshot is skipped for an older one. A vote file that does
//! not parse, or a log purged past every usable snapshot, fails the start with
//! [`QuorumError::Corrupt`] rather than guessing.
//!
//! # Limits
//!
//! - Static voters only (`controller.quorum.voters`): no openraft learners, no membership
//!   changes. Every node running a [`MetadataQuorum`] must be a voter. Other nodes (broker-only
//!   ones) follow the committed log with a [`MetadataObserver`], which fetches it from the
//!   voters over [`OBSERVER_PREAMBLE`] connections (not part of Raft: observers never vote and
//!   never count towards a commit).
//! - The entries after the last purge are also held in memory (the metadata log is snapshotted
//!   every [`QuorumConfig::snapshot_every_n_entries`], and every
//!   [`QuorumConfig::snapshot_max_interval_ms`] when entries were applied since the last one).
//! - A snapshot travels as one frame: its JSON (base64 data) must fit [`MAX_FRAME_BYTES`].
//! - A voter whose directory was wiped initializes itself again and rejoins; as with any Raft,
//!   losing the disks of a majority can lose committed entries.
//!
//! # Example
//!
//! ```no_run
//! use std::sync::{Arc, Mutex};
//! use bytes::Bytes;
//! use josef_quorum::{parse_voters, MetadataQuorum, MetadataStateMachine, QuorumConfig};
//!
//! #[derive(Default)]
//! struct Records(Mutex<Vec<(u64, Vec<Bytes>)>>);
//!
//! impl MetadataStateMachine for Records {
//!     fn apply(&self, index: u64, _term: u64, batch: &[Bytes]) {
//!         self.0.lock().unwrap().push((index, batch.to_vec()));
//!     }
//!     fn snapshot(&self) -> (u64, Vec<u8>) {
//!         let g = self.0.lock().unwrap();
//!         (g.last().map_or(0, |(i, _)| *i), format!("{} entries", g.len()).into_bytes())
//!     }
//!     fn install_snapshot(&self, _last_index: u64, _data: &[u8]) { /* rebuild the state */ }
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let voters = parse_voters("1@127.0.0.1:19093,2@127.0.0.1:29093,3@127.0.0.1:39093")?;
//! let config = QuorumConfig::new(1, voters, "/data/node1/__cluster_metadata-0");
//! let quorum = MetadataQuorum::start(config, Arc::new(Records::default())).await?;
//! quorum.bind_and_serve("127.0.0.1:19093").await?;
//! let mut leadership = quorum.subscribe_leader();
//! while leadership.borrow_and_update().map(|(id, _)| id) != Some(1) {
//!     leadership.changed().await?;
//! }
//! let offset = quorum.propose(vec![Bytes::from_static(b"a record")]).await?;
//! println!("committed at metadata offset {offset}");
//! quorum.shutdown().await?;
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod config;
mod error;
mod files;
/// Hooks for the fuzz targets in `fuzz/` (recovery and decoders without a running node); not
/// part of the API.
#[doc(hidden)]
pub mod fuzzing;
mod inspect;
mod local_log;
mod log_store;
mod network;
mod observer;
mod snapshot_timer;
mod state_machine;
pub mod transport;
mod types;

/// The README's example, run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use openraft::error::{ClientWriteError, InitializeError, RaftError};
use openraft::{BasicNode, Raft, SnapshotPolicy};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio::runtime::Handle;
use tokio::sync::watch;

pub use config::{heartbeat_for, parse_voters, QuorumConfig, VotersError};
pub use error::QuorumError;
pub use inspect::{read_log_dir, StoredEntry, StoredPayload};
pub use local_log::{
    decode_local_frames, encode_local_frame, CorruptFrame, FrameError, LocalFrames, LocalLogError,
    LocalMetadataLog, LocalRecord, MAX_LOCAL_RECORD_BYTES,
};
pub use network::MAX_FRAME_BYTES;
pub use observer::{MetadataObserver, ObserverConfig};
pub use transport::{ConnectFuture, QuorumStream, StreamConnector, TcpConnector};

use log_store::{LogStore, Progress};
use network::{Contacts, Network};
use observer::ObserverSource;
use state_machine::{load_latest_snapshot, SmStore};
use types::{Batch, TypeConfig};

/// The first four bytes of a Raft connection on the CONTROLLER listener: `0xFFFF_FF01`, negative
/// as a Kafka frame size, so never the start of a Kafka request.
pub const RAFT_PREAMBLE: [u8; 4] = [0xFF, 0xFF, 0xFF, 0x01];

/// The first four bytes of an observer's connection on the CONTROLLER listener: `0xFFFF_FF02`,
/// negative too. A [`MetadataObserver`] fetches the committed log on it; the broker hands such
/// connections to [`MetadataQuorum::serve_observer_connection`].
pub const OBSERVER_PREAMBLE: [u8; 4] = [0xFF, 0xFF, 0xFF, 0x02];

/// The committed state, implemented by the caller (the controller and the broker's metadata
/// image).
///
/// Calls come from one task, one at a time, in log order; each call must finish its work before
/// it returns (the next snapshot is taken from the state as it is then).
pub trait MetadataStateMachine: Send + Sync + 'static {
    /// Applies the committed entry at `index` (the metadata offset), written by the leader of
    /// `term`. Called for every index on every node, in order: the initial membership (index 0),
    /// membership changes and each leader's first, blank entry come with an empty `batch` (as
    /// does a proposal of an empty batch). A node names itself leader
    /// ([`MetadataQuorum::leader`]) only after its own blank entry of the term went through here,
    /// so by then every earlier entry has been applied.
    fn apply(&self, index: u64, term: u64, batch: &[Bytes]);

    /// The state after the last applied entry: that entry's index and the state's bytes.
    fn snapshot(&self) -> (u64, Vec<u8>);

    /// Replaces the whole state with a snapshot taken at `last_index` (at start, from the newest
    /// snapshot on disk, or when the leader sends one to a node that is too far behind). The
    /// next [`apply`](Self::apply) is for `last_index + 1`.
    fn install_snapshot(&self, last_index: u64, data: &[u8]);
}

/// One voter as [`MetadataQuorum::status`] sees it (Kafka's DescribeQuorum ReplicaState).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VoterStatus {
    /// The voter's node id.
    pub id: u64,
    /// Kafka's LogEndOffset: one past the last log index known to be on that voter (on the
    /// leader: replicated there; for this node itself: its own log), -1 when unknown.
    pub log_end_offset: i64,
    /// Kafka's LastFetchTimestamp: when the leader last had a successful AppendEntries answer
    /// from it, in unix ms; for the leader itself, now. `None` when unknown (on a follower).
    pub last_fetch_ms: Option<i64>,
    /// Kafka's LastCaughtUpTimestamp: when it last acknowledged an AppendEntries that carried
    /// the leader's whole log, in unix ms; for the leader itself, now. `None` when unknown.
    pub last_caught_up_ms: Option<i64>,
}

/// The quorum as this node sees it, for DescribeQuorum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumStatus {
    /// This node's id.
    pub node_id: u64,
    /// The leader, when one is known.
    pub leader: Option<u64>,
    /// The current term (Kafka's leader epoch of the metadata log).
    pub term: u64,
    /// The last committed index known here.
    pub committed_index: Option<u64>,
    /// Kafka's high watermark: one past the last committed index (0 when nothing is committed).
    pub high_watermark: u64,
    /// The last index applied to the state machine here.
    pub applied_index: Option<u64>,
    /// Every configured voter, by id; log positions and contact times are known on the leader.
    pub voters: Vec<VoterStatus>,
}

/// A running member of the metadata quorum. Cheap to clone (all clones are the same node).
#[derive(Clone)]
pub struct MetadataQuorum {
    inner: Arc<Inner>,
}

struct Inner {
    raft: Raft<TypeConfig>,
    config: QuorumConfig,
    progress: Arc<Progress>,
    contacts: Contacts,
    leadership: watch::Receiver<Option<(u64, u64)>>,
    cut_off: Arc<AtomicBool>,
    stop: watch::Sender<bool>,
    runtime: Handle,
    observers: ObserverSource,
}

fn leader_of(m: &openraft::RaftMetrics<u64, BasicNode>) -> Option<(u64, u64)> {
    m.current_leader.map(|l| (l, m.current_term))
}

/// Publishes the leader as openraft knows it, except for this node itself: it names itself only
/// once it has applied its own first entry of the term (so every entry of earlier terms is
/// applied: Kafka's controller claims leadership only after replaying up to the epoch start
/// offset), and stops naming itself once it has not heard from a majority for
/// `fetch_timeout_ms` (checked every heartbeat interval as well as on every change of
/// openraft's metrics); `cut_off` is set meanwhile.
fn spawn_leadership_watch(
    runtime: &Handle,
    raft: &Raft<TypeConfig>,
    config: &QuorumConfig,
    contacts: Contacts,
    progress: Arc<Progress>,
    cut_off: Arc<AtomicBool>,
) -> watch::Receiver<Option<(u64, u64)>> {
    let mut metrics = raft.metrics();
    let me = config.node_id;
    let voters: Vec<u64> = config.voters.keys().copied().collect();
    let majority = voters.len() / 2 + 1;
    let fetch_timeout = Duration::from_millis(config.fetch_timeout_ms);
    let fetch_timeout_ms = i64::try_from(config.fetch_timeout_ms).unwrap_or(i64::MAX);
    let heartbeat = Duration::from_millis(config.heartbeat_interval_ms);
    let (tx, rx) = watch::channel(None);
    runtime.spawn(async move {
        let mut tick = tokio::time::interval(heartbeat);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut leading_since: Option<(u64, std::time::Instant)> = None;
        loop {
            let raw = leader_of(&metrics.borrow_and_update());
            let now = match raw {
                Some((l, term)) if l == me => {
                    let since = match leading_since {
                        Some((t, at)) if t == term => at,
                        _ => {
                            let at = std::time::Instant::now();
                            leading_since = Some((term, at));
                            at
                        }
                    };
                    let reachable = since.elapsed() < fetch_timeout || {
                        let now_ms = network::now_unix_ms();
                        let heard = contacts.lock().map_or(0, |c| {
                            voters
                                .iter()
                                .filter(|id| **id != me)
                                .filter(|id| {
                                    c.get(id).is_some_and(|c| now_ms - c.last_fetch_ms <= fetch_timeout_ms)
                                })
                                .count()
                        });
                        heard + 1 >= majority
                    };
                    cut_off.store(!reachable, Ordering::Release);
                    let caught_up = progress.applied_leader() == Some((term, me));
                    if reachable && caught_up {
                        raw
                    } else {
                        None
                    }
                }
                other => {
                    leading_since = None;
                    cut_off.store(false, Ordering::Release);
                    other
                }
            };
            tx.send_if_modified(|cur| {
                if *cur != now {
                    if cur.is_some_and(|(l, _)| l == me) && now.is_none() {
                        tracing::warn!(
                            "metadata quorum {me}: no answer from a majority for {fetch_timeout:?}; not leading"
                        );
                    }
                    *cur = now;
                    true
                } else {
                    false
                }
            });
            tokio::select! {
                changed = metrics.changed() => if changed.is_err() { return },
                _ = tick.tick() => {}
            }
        }
    });
    rx
}

impl MetadataQuorum {
    /// Opens the log under `config.dir` (recovering it), loads the newest snapshot into
    /// `state_machine`, and starts the Raft node; on an empty directory it initializes the static
    /// voters as the membership. Must be called within a tokio runtime; the node's tasks run on
    /// it. It does not listen: hand connections to [`serve_connection`](Self::serve_connection)
    /// or call [`bind_and_serve`](Self::bind_and_serve).
    pub async fn start(
        config: QuorumConfig,
        state_machine: Arc<dyn MetadataStateMachine>,
    ) -> Result<MetadataQuorum, QuorumError> {
        Self::start_with_connector(config, state_machine, Arc::new(TcpConnector)).await
    }

    /// [`start`](Self::start) with the other voters dialled through `connector` (TLS, say)
    /// instead of plain TCP; accepted connections then come unwrapped through
    /// [`serve_stream`](Self::serve_stream).
    pub async fn start_with_connector(
        config: QuorumConfig,
        state_machine: Arc<dyn MetadataStateMachine>,
        connector: Arc<dyn StreamConnector>,
    ) -> Result<MetadataQuorum, QuorumError> {
        config.validate()?;
        let runtime = Handle::try_current().map_err(|_| {
            QuorumError::InvalidConfig("start must run within a tokio runtime".into())
        })?;
        let progress = Arc::new(Progress::default());
        let log = LogStore::open(
            &config.dir,
            config.fsync,
            config.segment_bytes,
            progress.clone(),
        )?;
        let snapshot = load_latest_snapshot(&config.dir)?;
        let snap_index = snapshot
            .as_ref()
            .and_then(|(m, _)| m.last_log_id)
            .map(|l| l.index);
        if let Some(p) = log.purged() {
            if snap_index.map_or(true, |s| s < p.index) {
                return Err(QuorumError::Corrupt(format!(
                    "the log is purged up to {} but the newest usable snapshot is at {snap_index:?}; \
                     empty {} to fetch the state from the leader again",
                    p.index,
                    config.dir.display()
                )));
            }
        }
        if let Some((meta, data)) = &snapshot {
            let index = meta.last_log_id.map_or(0, |l| l.index);
            tracing::info!(
                "metadata quorum {}: loading the snapshot at {index}",
                config.node_id
            );
            state_machine.install_snapshot(index, data);
        }
        let pristine = log.is_pristine() && snapshot.is_none();
        let log_reader = log.clone();
        let sm = SmStore::new(
            state_machine,
            config.dir.clone(),
            config.fsync,
            snapshot,
            progress.clone(),
        );
        let current_snapshot = sm.current_snapshot();

        let raft_config = openraft::Config {
            cluster_name: "josef-metadata".into(),
            election_timeout_min: config.election_timeout_ms,
            election_timeout_max: config.election_timeout_ms.saturating_mul(2),
            heartbeat_interval: config.heartbeat_interval_ms,
            install_snapshot_timeout: config.request_timeout_ms.saturating_mul(10),
            snapshot_policy: SnapshotPolicy::LogsSinceLast(config.snapshot_every_n_entries),
            max_in_snapshot_log_to_keep: config.entries_kept_after_snapshot,
            // Purge once per snapshot (it deletes whole segments only).
            purge_batch_size: 1,
            ..Default::default()
        }
        .validate()
        .map_err(|e| QuorumError::InvalidConfig(e.to_string()))?;

        let contacts = Contacts::default();
        let network = Network {
            node_id: config.node_id,
            voters: Arc::new(config.voters.clone()),
            request_timeout: Duration::from_millis(config.request_timeout_ms),
            backoff: Duration::from_millis(config.heartbeat_interval_ms),
            contacts: contacts.clone(),
            progress: progress.clone(),
            connector,
        };
        let raft = Raft::new(config.node_id, Arc::new(raft_config), network, log, sm)
            .await
            .map_err(|e| QuorumError::Stopped(e.to_string()))?;

        if pristine {
            let members: BTreeMap<u64, BasicNode> = config
                .voters
                .iter()
                .map(|(id, addr)| (*id, BasicNode { addr: addr.clone() }))
                .collect();
            match raft.initialize(members).await {
                Ok(()) => tracing::info!(
                    "metadata quorum {}: new log, voters {:?}",
                    config.node_id,
                    config.voters.keys().collect::<Vec<_>>()
                ),
                // Another voter's leader reached us first.
                Err(RaftError::APIError(InitializeError::NotAllowed(e))) => {
                    tracing::info!(
                        "metadata quorum {}: already initialized ({e})",
                        config.node_id
                    )
                }
                Err(e) => {
                    let _ = raft.shutdown().await;
                    return Err(QuorumError::Stopped(format!("initialize: {e}")));
                }
            }
        }

        let cut_off = Arc::new(AtomicBool::new(false));
        let rx = spawn_leadership_watch(
            &runtime,
            &raft,
            &config,
            contacts.clone(),
            progress.clone(),
            cut_off.clone(),
        );
        let (stop, _) = watch::channel(false);
        snapshot_timer::spawn(
            &runtime,
            raft.clone(),
            config.snapshot_max_interval_ms,
            progress.clone(),
            current_snapshot.clone(),
            stop.subscribe(),
        );
        let observers = ObserverSource {
            node_id: config.node_id,
            log: log_reader,
            progress: progress.clone(),
            snapshot: current_snapshot,
            leadership: rx.clone(),
        };
        Ok(MetadataQuorum {
            inner: Arc::new(Inner {
                raft,
                config,
                progress,
                contacts,
                leadership: rx,
                cut_off,
                stop,
                runtime,
                observers,
            }),
        })
    }

    /// This node's id.
    pub fn node_id(&self) -> u64 {
        self.inner.config.node_id
    }

    /// Appends `batch` as one entry and returns its index (the metadata offset) once it is
    /// committed and applied on this node. On a node that is not the leader:
    /// [`QuorumError::NotLeader`] with the leader it knows of (`None` on a leader cut off from a
    /// majority for `fetch_timeout_ms`). After `propose_timeout_ms`:
    /// [`QuorumError::Timeout`] (the entry may still commit later).
    pub async fn propose(&self, batch: Vec<Bytes>) -> Result<u64, QuorumError> {
        if self.inner.cut_off.load(Ordering::Acquire) {
            // Leading in openraft's eyes, but cut off from a majority (see `fetch_timeout_ms`).
            return Err(QuorumError::NotLeader { leader: None });
        }
        let timeout_ms = self.inner.config.propose_timeout_ms;
        let write = self.inner.raft.client_write(Batch(batch));
        match tokio::time::timeout(Duration::from_millis(timeout_ms), write).await {
            Err(_) => Err(QuorumError::Timeout { timeout_ms }),
            Ok(Ok(resp)) => Ok(resp.log_id.index),
            Ok(Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f)))) => {
                Err(QuorumError::NotLeader {
                    leader: f.leader_id,
                })
            }
            Ok(Err(RaftError::APIError(ClientWriteError::ChangeMembershipError(e)))) => {
                Err(QuorumError::Stopped(e.to_string()))
            }
            Ok(Err(RaftError::Fatal(f))) => Err(QuorumError::Stopped(f.to_string())),
        }
    }

    /// The leader and the term, when a leader is known (the controller epoch is the term).
    ///
    /// This node names itself only once it may act as the active controller: it has applied its
    /// own first (blank) entry of the term, hence every entry of earlier terms, as Kafka's
    /// controller claims only after replaying up to the epoch start offset; and it has heard from
    /// a majority within `fetch_timeout_ms`. Other nodes name the leader as soon as they know it.
    pub fn leader(&self) -> Option<(u64, u64)> {
        *self.inner.leadership.borrow()
    }

    /// Whether this node is the leader now.
    pub fn is_leader(&self) -> bool {
        self.leader()
            .is_some_and(|(l, _)| l == self.inner.config.node_id)
    }

    /// A receiver of [`leader`](Self::leader) that changes with every change of leader or term,
    /// for the controller driver to activate and deactivate.
    pub fn subscribe_leader(&self) -> watch::Receiver<Option<(u64, u64)>> {
        self.inner.leadership.clone()
    }

    /// The last committed index known on this node.
    pub fn committed_index(&self) -> Option<u64> {
        self.inner.progress.committed()
    }

    /// The last index applied to the state machine on this node.
    pub fn applied_index(&self) -> Option<u64> {
        self.inner.progress.applied()
    }

    /// The quorum as this node sees it (for DescribeQuorum).
    pub fn status(&self) -> QuorumStatus {
        let m = self.inner.raft.metrics().borrow().clone();
        let me = self.inner.config.node_id;
        let is_leader = m.current_leader == Some(me);
        let contacts = self
            .inner
            .contacts
            .lock()
            .map(|c| c.clone())
            .unwrap_or_default();
        let end = |last: Option<u64>| last.map_or(-1, |i| i as i64 + 1);
        let now = network::now_unix_ms();
        let voters = self
            .inner
            .config
            .voters
            .keys()
            .map(|&id| {
                if id == me {
                    VoterStatus {
                        id,
                        log_end_offset: end(m.last_log_index),
                        last_fetch_ms: is_leader.then_some(now),
                        last_caught_up_ms: is_leader.then_some(now),
                    }
                } else {
                    let replicated = m
                        .replication
                        .as_ref()
                        .and_then(|r| r.get(&id).copied().flatten());
                    let contact = if is_leader {
                        contacts.get(&id).copied()
                    } else {
                        None
                    };
                    VoterStatus {
                        id,
                        log_end_offset: end(replicated.map(|l| l.index)),
                        last_fetch_ms: contact.map(|c| c.last_fetch_ms),
                        last_caught_up_ms: contact.and_then(|c| c.last_caught_up_ms),
                    }
                }
            })
            .collect();
        let committed_index = self.committed_index();
        QuorumStatus {
            node_id: me,
            leader: m.current_leader,
            term: m.current_term,
            committed_index,
            high_watermark: committed_index.map_or(0, |c| c + 1),
            applied_index: self.applied_index(),
            voters,
        }
    }

    /// Serves Raft RPCs on a connection accepted by the caller, AFTER the caller read the four
    /// bytes of [`RAFT_PREAMBLE`]. Returns at once; the connection is served on a task of its own
    /// until the peer closes it, a frame does not decode (logged), or [`shutdown`](Self::shutdown).
    pub fn serve_connection(&self, stream: TcpStream) {
        let _ = stream.set_nodelay(true);
        let peer = transport::peer_of(&stream);
        self.serve_stream(Box::new(stream), peer);
    }

    /// [`serve_connection`](Self::serve_connection) over any stream (one the caller accepted
    /// and unwrapped, e.g. from TLS); `peer` names it in the logs.
    pub fn serve_stream(&self, stream: QuorumStream, peer: String) {
        let raft = self.inner.raft.clone();
        let stop = self.inner.stop.subscribe();
        let id = self.inner.config.node_id;
        self.inner
            .runtime
            .spawn(network::serve(raft, id, stream, peer, stop));
    }

    /// Serves observer fetches (a [`MetadataObserver`] following the committed log) on a
    /// connection accepted by the caller, AFTER the caller read the four bytes of
    /// [`OBSERVER_PREAMBLE`]. Returns at once, like [`serve_connection`](Self::serve_connection).
    /// Only committed entries are served (see the `observer` module docs for the exchange).
    pub fn serve_observer_connection(&self, stream: TcpStream) {
        let _ = stream.set_nodelay(true);
        let peer = transport::peer_of(&stream);
        self.serve_observer_stream(Box::new(stream), peer);
    }

    /// [`serve_observer_connection`](Self::serve_observer_connection) over any stream; `peer`
    /// names it in the logs.
    pub fn serve_observer_stream(&self, stream: QuorumStream, peer: String) {
        let source = self.inner.observers.clone();
        let stop = self.inner.stop.subscribe();
        self.inner
            .runtime
            .spawn(observer::serve(source, stream, peer, stop));
    }

    /// Binds a listener of its own at `addr` and serves Raft connections on it (each must start
    /// with [`RAFT_PREAMBLE`], or [`OBSERVER_PREAMBLE`] for an observer; others are closed with a
    /// warning). Returns the bound address.
    /// For tests and tools without a broker; the broker uses
    /// [`serve_connection`](Self::serve_connection).
    pub async fn bind_and_serve(&self, addr: &str) -> Result<SocketAddr, QuorumError> {
        let listener = std::net::TcpListener::bind(addr)
            .map_err(|e| QuorumError::io(format!("bind {addr}"), e))?;
        self.serve_listener(listener)
    }

    /// Serves Raft connections on a listener bound by the caller (as
    /// [`bind_and_serve`](Self::bind_and_serve) does), so a test can bind port 0 first and
    /// put the port into the voters. Returns the listener's address.
    pub fn serve_listener(
        &self,
        listener: std::net::TcpListener,
    ) -> Result<SocketAddr, QuorumError> {
        let local = listener
            .local_addr()
            .map_err(|e| QuorumError::io("listener address", e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| QuorumError::io("listener non-blocking", e))?;
        let this = self.clone();
        let mut stop = self.inner.stop.subscribe();
        let preamble_timeout = Duration::from_millis(self.inner.config.request_timeout_ms);
        self.inner.runtime.spawn(async move {
            let listener = match tokio::net::TcpListener::from_std(listener) {
                Ok(l) => l,
                Err(e) => {
                    tracing::error!("raft listener {local}: {e}");
                    return;
                }
            };
            loop {
                let accepted = tokio::select! {
                    _ = stop.changed() => return,
                    a = listener.accept() => a,
                };
                let (mut stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!("raft listener {local}: accept: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let this = this.clone();
                this.inner.runtime.clone().spawn(async move {
                    let mut pre = [0u8; 4];
                    match tokio::time::timeout(preamble_timeout, stream.read_exact(&mut pre)).await
                    {
                        Ok(Ok(_)) if pre == RAFT_PREAMBLE => this.serve_connection(stream),
                        Ok(Ok(_)) if pre == OBSERVER_PREAMBLE => {
                            this.serve_observer_connection(stream)
                        }
                        Ok(Ok(_)) => tracing::warn!(
                            "raft listener {local}: {peer} sent no raft preamble; closing"
                        ),
                        Ok(Err(e)) => tracing::debug!("raft listener {local}: {peer}: {e}"),
                        Err(_) => tracing::warn!(
                            "raft listener {local}: {peer} sent no preamble in time; closing"
                        ),
                    }
                });
            }
        });
        Ok(local)
    }

    /// Waits until the Raft node stops on its own, and says why: a storage error (a metadata log
    /// write or fsync failed) or a panic of its core. `None` once [`shutdown`](Self::shutdown) was
    /// asked for. A node whose quorum stopped can neither vote nor take entries, yet its peers
    /// may keep counting on it; Kafka halts the process on such a fault, and so should the
    /// caller.
    pub async fn wait_fatal(&self) -> Option<String> {
        let mut metrics = self.inner.raft.metrics();
        let mut stop = self.inner.stop.subscribe();
        loop {
            if *stop.borrow_and_update() {
                return None;
            }
            if let Err(e) = &metrics.borrow_and_update().running_state {
                return Some(e.to_string());
            }
            tokio::select! {
                changed = metrics.changed() => if changed.is_err() {
                    // The core is gone without a last word.
                    return (!*stop.borrow()).then(|| "the Raft core stopped".to_string());
                },
                _ = stop.changed() => {}
            }
        }
    }

    /// Stops the node gracefully: listeners and served connections close, the Raft tasks end.
    /// Everything acknowledged is already on disk.
    pub async fn shutdown(&self) -> Result<(), QuorumError> {
        let _ = self.inner.stop.send(true);
        self.inner
            .raft
            .shutdown()
            .await
            .map_err(|e| QuorumError::Stopped(format!("shutdown: {e}")))
    }
}

impl std::fmt::Debug for MetadataQuorum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetadataQuorum")
            .field("node_id", &self.inner.config.node_id)
            .field("leader", &self.leader())
            .field("committed_index", &self.committed_index())
            .finish()
    }
}
