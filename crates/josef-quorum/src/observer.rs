//! Observers: nodes that are not voters (Kafka's broker-only nodes, Raft observers) follow the
//! committed metadata log by fetching it from the voters.
//!
//! # Wire
//!
//! A connection opens with [`OBSERVER_PREAMBLE`](crate::OBSERVER_PREAMBLE), then carries frames as
//! the Raft transport does (`length: u32 BE | JSON`, at most [`MAX_FRAME_BYTES`](crate::MAX_FRAME_BYTES), the length
//! checked before anything is read). The observer sends one request and reads one response at a
//! time:
//!
//! - request `{"to": <voter id>, "from_index": N, "max_wait_ms": W, "max_bytes": B}`: the
//!   committed entries from index `N` on;
//! - response `{"Entries": {"node_id", "leader": [id, term] | null, "committed", "entries":
//!   [{"index", "term", "batch": [base64 record, ...]}, ...]}}`: COMMITTED entries only (never
//!   past the voter's committed index), in order and without gaps, starting at `N`, their records
//!   adding up to about `B` bytes (at least one entry). When the voter has nothing from `N` yet it
//!   waits up to `W` ms (at most 5 s) for a commit, or for a change of leader, and then answers,
//!   possibly with no entry (so the observer learns new commits within a round trip, and the
//!   leader as soon as it changes);
//! - or `{"Snapshot": {"node_id", "leader", "last_index", "last_term", "data": base64}}` when `N`
//!   is at or below the voter's purge point: its newest snapshot, after which the observer asks
//!   from `last_index + 1`.
//!
//! `leader` is the voter's [`MetadataQuorum::leader`](crate::MetadataQuorum::leader). A request
//! for another node id, or anything that does not decode, closes the connection with a warning.
//! Any voter serves what it has committed (Raft never takes a committed entry back, so every
//! voter serves the same entries); the observer prefers the leader it is told of.

use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::transport::{QuorumStream, StreamConnector, TcpConnector};
use openraft::EntryPayload;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncWriteExt, BufReader, BufWriter};
use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::log_store::{LogStore, Progress};
use crate::network::{read_frame, write_frame};
use crate::state_machine::CurrentSnapshot;
use crate::types::{Batch, B64};
use crate::{MetadataStateMachine, QuorumError, OBSERVER_PREAMBLE};

/// The longest a voter holds a fetch that has nothing to return.
const MAX_WAIT_MS: u64 = 5_000;
/// The most record bytes a voter puts in one answer, whatever the observer asks.
const MAX_RESPONSE_BYTES: u64 = 64 * 1024 * 1024;

/// An observer's fetch.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct FetchRequest {
    /// The voter meant (a wrong `controller.quorum.voters` is caught).
    pub(crate) to: u64,
    /// The first index wanted: one past the last the observer applied.
    pub(crate) from_index: u64,
    /// How long the voter may wait for a commit when it has nothing to return.
    pub(crate) max_wait_ms: u64,
    /// About how many bytes of records to return at most (at least one entry is).
    pub(crate) max_bytes: u64,
}

/// One committed entry.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct FetchedEntry {
    pub(crate) index: u64,
    pub(crate) term: u64,
    /// The records; empty for the initial membership and each leader's blank entry.
    pub(crate) batch: Batch,
}

/// A voter's answer.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum FetchResponse {
    Entries {
        node_id: u64,
        leader: Option<(u64, u64)>,
        committed: Option<u64>,
        entries: Vec<FetchedEntry>,
    },
    Snapshot {
        node_id: u64,
        leader: Option<(u64, u64)>,
        last_index: u64,
        last_term: u64,
        data: B64,
    },
}

/// What a voter serves observers from: its log, committed index and newest snapshot.
#[derive(Clone)]
pub(crate) struct ObserverSource {
    pub(crate) node_id: u64,
    pub(crate) log: LogStore,
    pub(crate) progress: Arc<Progress>,
    pub(crate) snapshot: CurrentSnapshot,
    pub(crate) leadership: watch::Receiver<Option<(u64, u64)>>,
}

impl ObserverSource {
    /// Answers one fetch: entries, a snapshot, or nothing once the wait is over. `None` when
    /// `stop` fires meanwhile.
    async fn answer(
        &self,
        req: &FetchRequest,
        stop: &mut watch::Receiver<bool>,
    ) -> Option<FetchResponse> {
        let wait = Duration::from_millis(req.max_wait_ms.min(MAX_WAIT_MS));
        let deadline = tokio::time::Instant::now() + wait;
        let max_bytes = usize::try_from(req.max_bytes.clamp(1, MAX_RESPONSE_BYTES)).unwrap_or(1);
        let mut leadership = self.leadership.clone();
        let leader = *leadership.borrow_and_update();
        loop {
            // Registered before the committed index is read, so no commit is missed.
            let notified = self.progress.commits.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let committed = self.progress.committed();
            match self.log.read_range(req.from_index, committed, max_bytes) {
                None => {
                    if let Some(resp) = self.snapshot_answer(req.from_index) {
                        return Some(resp);
                    }
                }
                Some(entries) if !entries.is_empty() => {
                    let entries = entries
                        .into_iter()
                        .map(|e| FetchedEntry {
                            index: e.log_id.index,
                            term: e.log_id.leader_id.term,
                            batch: match e.payload {
                                EntryPayload::Normal(b) => b,
                                EntryPayload::Blank | EntryPayload::Membership(_) => {
                                    Batch::default()
                                }
                            },
                        })
                        .collect();
                    return Some(FetchResponse::Entries {
                        node_id: self.node_id,
                        leader: *self.leadership.borrow(),
                        committed,
                        entries,
                    });
                }
                Some(_) => {}
            }
            let done = tokio::select! {
                _ = stop.changed() => return None,
                _ = &mut notified => false,
                changed = leadership.changed() => changed.is_err() || *leadership.borrow() != leader,
                _ = tokio::time::sleep_until(deadline) => true,
            };
            if done || tokio::time::Instant::now() >= deadline {
                return Some(FetchResponse::Entries {
                    node_id: self.node_id,
                    leader: *self.leadership.borrow(),
                    committed: self.progress.committed(),
                    entries: Vec::new(),
                });
            }
        }
    }

    fn snapshot_answer(&self, from_index: u64) -> Option<FetchResponse> {
        let g = self.snapshot.lock().unwrap_or_else(|p| p.into_inner());
        match g.as_ref() {
            Some((meta, data)) => {
                let last = meta.last_log_id?;
                if last.index < from_index {
                    return None;
                }
                Some(FetchResponse::Snapshot {
                    node_id: self.node_id,
                    leader: *self.leadership.borrow(),
                    last_index: last.index,
                    last_term: last.leader_id.term,
                    data: B64((**data).clone()),
                })
            }
            None => {
                tracing::warn!(
                    "metadata quorum {}: the log is purged past {from_index} but no snapshot is held",
                    self.node_id
                );
                None
            }
        }
    }
}

/// Serves observer fetches on an accepted connection whose preamble was already read, until the
/// peer closes it, a frame does not decode, or `stop` fires.
pub(crate) async fn serve(
    source: ObserverSource,
    stream: QuorumStream,
    peer: String,
    mut stop: watch::Receiver<bool>,
) {
    let (r, w) = tokio::io::split(stream);
    let mut r = BufReader::new(r);
    let mut w = BufWriter::new(w);
    if *stop.borrow_and_update() {
        return;
    }
    let me = source.node_id;
    loop {
        let frame = tokio::select! {
            _ = stop.changed() => return,
            f = read_frame(&mut r) => f,
        };
        let frame = match frame {
            Ok(Some(f)) => f,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!("metadata observer connection from {peer}: {e}; closing it");
                return;
            }
        };
        let req: FetchRequest = match serde_json::from_slice(&frame) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(
                    "metadata observer connection from {peer}: undecodable request ({e}); closing it"
                );
                return;
            }
        };
        if req.to != me {
            tracing::warn!(
                "metadata observer connection from {peer}: fetch for node {} reached node {me} \
                 (check controller.quorum.voters); closing it",
                req.to
            );
            return;
        }
        let Some(resp) = source.answer(&req, &mut stop).await else {
            return;
        };
        let body = match serde_json::to_vec(&resp) {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!("metadata observer connection from {peer}: cannot encode ({e})");
                return;
            }
        };
        if let Err(e) = write_frame(&mut w, &body).await {
            tracing::warn!("metadata observer connection from {peer}: {e}; closing it");
            return;
        }
    }
}

/// How a [`MetadataObserver`] fetches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObserverConfig {
    /// This node's id (`node.id`), for the logs.
    pub node_id: u64,
    /// `controller.quorum.request.timeout.ms` (default 2000): the bound of a connect, and of an
    /// answer beyond [`max_wait_ms`](Self::max_wait_ms). A voter that failed is not tried
    /// again for this long while another one can be.
    pub request_timeout_ms: u64,
    /// How long a voter may hold a fetch that has nothing new (default 500, at most 5000): new
    /// commits arrive within a round trip of being committed on that voter.
    pub max_wait_ms: u64,
    /// About how many bytes of records one answer carries at most (default 1 MiB; at least one
    /// entry; a snapshot comes whole, up to [`MAX_FRAME_BYTES`](crate::MAX_FRAME_BYTES)).
    pub max_bytes: u64,
    /// The pause after a failed connection before the next voter is tried (default 100).
    pub retry_backoff_ms: u64,
    /// The last index the state machine already holds (it resumes after it); `None` (the
    /// default) for an empty state, which then sees index 0 first, as a voter's does.
    pub applied_index: Option<u64>,
}

impl ObserverConfig {
    /// A config with the defaults.
    pub fn new(node_id: u64) -> Self {
        ObserverConfig {
            node_id,
            request_timeout_ms: 2000,
            max_wait_ms: 500,
            max_bytes: 1024 * 1024,
            retry_backoff_ms: 100,
            applied_index: None,
        }
    }

    fn validate(&self) -> Result<(), QuorumError> {
        if self.request_timeout_ms == 0 || self.max_bytes == 0 {
            return Err(QuorumError::InvalidConfig(
                "observer request_timeout_ms and max_bytes must be positive".into(),
            ));
        }
        Ok(())
    }
}

/// A node that follows the committed metadata log without voting (Kafka's observer: a
/// broker-only node). It fetches committed entries from a voter (the leader when it is told of
/// one, else any) and hands them to its [`MetadataStateMachine`] exactly as a voter's state
/// machine gets them: every index in order, no gap, no repeat, [`install_snapshot`] when the
/// voter's log is purged past what it has. On an error it moves to another voter. Cheap to
/// clone; it stops on [`shutdown`](Self::shutdown) or when the last clone is dropped.
///
/// [`install_snapshot`]: MetadataStateMachine::install_snapshot
#[derive(Clone)]
pub struct MetadataObserver {
    inner: Arc<ObserverInner>,
}

struct ObserverInner {
    node_id: u64,
    applied: watch::Receiver<Option<u64>>,
    leader: watch::Receiver<Option<(u64, u64)>>,
    stop: watch::Sender<bool>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for ObserverInner {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

impl MetadataObserver {
    /// Starts following the log of `voters` (node id to `host:port` of its CONTROLLER
    /// listener, as in [`QuorumConfig::voters`](crate::QuorumConfig::voters)) into
    /// `state_machine`. Must be called within a tokio runtime; the fetch task runs on it.
    pub fn start(
        voters: BTreeMap<u64, String>,
        state_machine: Arc<dyn MetadataStateMachine>,
        config: ObserverConfig,
    ) -> Result<MetadataObserver, QuorumError> {
        Self::start_with_connector(voters, state_machine, config, Arc::new(TcpConnector))
    }

    /// [`start`](Self::start) with the voters dialled through `connector` (TLS, say) instead
    /// of plain TCP.
    pub fn start_with_connector(
        voters: BTreeMap<u64, String>,
        state_machine: Arc<dyn MetadataStateMachine>,
        config: ObserverConfig,
        connector: Arc<dyn StreamConnector>,
    ) -> Result<MetadataObserver, QuorumError> {
        config.validate()?;
        if voters.is_empty() {
            return Err(QuorumError::InvalidConfig("no voters to observe".into()));
        }
        let runtime = Handle::try_current().map_err(|_| {
            QuorumError::InvalidConfig("an observer must start within a tokio runtime".into())
        })?;
        let (applied_tx, applied) = watch::channel(config.applied_index);
        let (leader_tx, leader) = watch::channel(None);
        let (stop, stop_rx) = watch::channel(false);
        let follower = Follower {
            next: config.applied_index.map_or(0, |a| a.saturating_add(1)),
            last_term: 0,
            voters: voters.into_iter().collect(),
            sm: state_machine,
            applied_tx,
            leader_tx,
            avoid: BTreeMap::new(),
            turn: 0,
            config: config.clone(),
            connector,
        };
        let task = runtime.spawn(follower.run(stop_rx));
        Ok(MetadataObserver {
            inner: Arc::new(ObserverInner {
                node_id: config.node_id,
                applied,
                leader,
                stop,
                task: Mutex::new(Some(task)),
            }),
        })
    }

    /// The last index applied to the state machine (`None` before the first).
    pub fn applied_index(&self) -> Option<u64> {
        *self.inner.applied.borrow()
    }

    /// A receiver of [`applied_index`](Self::applied_index).
    pub fn subscribe_applied(&self) -> watch::Receiver<Option<u64>> {
        self.inner.applied.clone()
    }

    /// The leader and term as the voter last fetched from named them (`None` when it named
    /// none): a hint for whoever looks for the active controller.
    pub fn leader(&self) -> Option<(u64, u64)> {
        *self.inner.leader.borrow()
    }

    /// A receiver of [`leader`](Self::leader).
    pub fn subscribe_leader(&self) -> watch::Receiver<Option<(u64, u64)>> {
        self.inner.leader.clone()
    }

    /// Stops fetching and waits for the fetch task to end (an apply in progress completes).
    pub async fn shutdown(&self) {
        let _ = self.inner.stop.send(true);
        let task = self
            .inner
            .task
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

impl std::fmt::Debug for MetadataObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetadataObserver")
            .field("node_id", &self.inner.node_id)
            .field("applied_index", &self.applied_index())
            .field("leader", &self.leader())
            .finish()
    }
}

/// Why the observer leaves a voter.
enum Leave {
    /// The voter named another leader: go there.
    ToLeader(u64),
    /// The voter knows no leader and has had nothing new for a while: try another.
    Rotate,
    /// Shut down.
    Stop,
}

/// Why a connection to a voter ended badly.
#[derive(Debug, thiserror::Error)]
enum FollowError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("bad answer: {0}")]
    Protocol(String),
}

type Conn = (
    BufReader<tokio::io::ReadHalf<QuorumStream>>,
    BufWriter<tokio::io::WriteHalf<QuorumStream>>,
);

/// The fetch task's state.
struct Follower {
    /// The next index to apply.
    next: u64,
    /// The term of the last applied entry (terms never go down along the log).
    last_term: u64,
    voters: Vec<(u64, String)>,
    sm: Arc<dyn MetadataStateMachine>,
    applied_tx: watch::Sender<Option<u64>>,
    leader_tx: watch::Sender<Option<(u64, u64)>>,
    /// Voters that failed, and until when another one is preferred.
    avoid: BTreeMap<u64, Instant>,
    /// Where the round robin over the voters is.
    turn: usize,
    config: ObserverConfig,
    connector: Arc<dyn StreamConnector>,
}

impl Follower {
    async fn run(mut self, mut stop: watch::Receiver<bool>) {
        let me = self.config.node_id;
        let backoff = Duration::from_millis(self.config.retry_backoff_ms);
        let mut preferred: Option<u64> = None;
        loop {
            if *stop.borrow_and_update() {
                return;
            }
            let voter = self.pick(preferred.take());
            let Some(addr) = self
                .voters
                .iter()
                .find(|(id, _)| *id == voter)
                .map(|(_, a)| a.clone())
            else {
                return;
            };
            match self.follow(voter, &addr, &mut stop).await {
                Ok(Leave::Stop) => return,
                Ok(Leave::ToLeader(l)) => {
                    tracing::debug!(
                        "metadata observer {me}: voter {voter} names {l} leader; moving there"
                    );
                    preferred = Some(l);
                }
                Ok(Leave::Rotate) => {
                    tracing::info!(
                        "metadata observer {me}: voter {voter} knows no leader and has nothing new; trying another"
                    );
                    self.avoid_for_a_while(voter);
                }
                Err(e) => {
                    let bad_bytes = match &e {
                        FollowError::Protocol(_) => true,
                        FollowError::Io(io) => io.kind() == io::ErrorKind::InvalidData,
                        FollowError::Timeout(_) => false,
                    };
                    match bad_bytes {
                        true => tracing::warn!(
                            "metadata observer {me}: voter {voter} ({addr}): {e}; closing the connection"
                        ),
                        false => {
                            tracing::info!("metadata observer {me}: voter {voter} ({addr}): {e}")
                        }
                    }
                    self.avoid_for_a_while(voter);
                    tokio::select! {
                        _ = stop.changed() => return,
                        _ = tokio::time::sleep(backoff) => {}
                    }
                }
            }
        }
    }

    fn avoid_for_a_while(&mut self, voter: u64) {
        let d = Duration::from_millis(self.config.request_timeout_ms);
        self.avoid.insert(voter, Instant::now() + d);
    }

    fn avoided(&self, voter: u64) -> bool {
        self.avoid.get(&voter).is_some_and(|t| *t > Instant::now())
    }

    /// The voter to fetch from: `preferred` when given, else the next in turn that did not fail
    /// lately (the one whose failure is oldest when all did).
    fn pick(&mut self, preferred: Option<u64>) -> u64 {
        if let Some(p) = preferred.filter(|p| self.voters.iter().any(|(id, _)| id == p)) {
            return p;
        }
        let n = self.voters.len();
        for k in 0..n {
            let (id, _) = self.voters[(self.turn + k) % n];
            if !self.avoided(id) {
                self.turn = (self.turn + k + 1) % n;
                return id;
            }
        }
        let id = self
            .voters
            .iter()
            .map(|(id, _)| *id)
            .min_by_key(|id| self.avoid.get(id).copied())
            .unwrap_or(self.voters[0].0);
        self.turn = (self.turn + 1) % n;
        id
    }

    async fn connect(&self, addr: &str) -> Result<Conn, FollowError> {
        let timeout = Duration::from_millis(self.config.request_timeout_ms);
        let stream = tokio::time::timeout(timeout, self.connector.connect(addr))
            .await
            .map_err(|_| FollowError::Timeout(timeout))??;
        let (r, w) = tokio::io::split(stream);
        let mut w = BufWriter::new(w);
        w.write_all(&OBSERVER_PREAMBLE).await?;
        Ok((BufReader::new(r), w))
    }

    /// Fetches from one voter until it should be left.
    async fn follow(
        &mut self,
        voter: u64,
        addr: &str,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<Leave, FollowError> {
        let (mut r, mut w) = tokio::select! {
            _ = stop.changed() => return Ok(Leave::Stop),
            c = self.connect(addr) => c?,
        };
        let max_wait_ms = self.config.max_wait_ms.min(MAX_WAIT_MS);
        let answer_within =
            Duration::from_millis(max_wait_ms.saturating_add(self.config.request_timeout_ms));
        let idle_limit = Duration::from_millis(self.config.request_timeout_ms.saturating_mul(2));
        let mut last_news = Instant::now();
        loop {
            let req = FetchRequest {
                to: voter,
                from_index: self.next,
                max_wait_ms,
                max_bytes: self.config.max_bytes,
            };
            let body =
                serde_json::to_vec(&req).map_err(|e| FollowError::Protocol(e.to_string()))?;
            let exchange = async {
                write_frame(&mut w, &body).await?;
                read_frame(&mut r)
                    .await?
                    .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))
            };
            let frame = tokio::select! {
                _ = stop.changed() => return Ok(Leave::Stop),
                f = tokio::time::timeout(answer_within, exchange) => {
                    f.map_err(|_| FollowError::Timeout(answer_within))??
                }
            };
            let resp: FetchResponse = serde_json::from_slice(&frame)
                .map_err(|e| FollowError::Protocol(format!("undecodable ({e})")))?;
            let leader = match resp {
                FetchResponse::Entries {
                    node_id,
                    leader,
                    entries,
                    ..
                } => {
                    self.check_sender(voter, node_id)?;
                    if !entries.is_empty() {
                        last_news = Instant::now();
                    }
                    for e in entries {
                        if e.index != self.next {
                            return Err(FollowError::Protocol(format!(
                                "entry {} where {} was asked for",
                                e.index, self.next
                            )));
                        }
                        if e.term < self.last_term {
                            return Err(FollowError::Protocol(format!(
                                "entry {} of term {} after term {}",
                                e.index, e.term, self.last_term
                            )));
                        }
                        self.sm.apply(e.index, e.term, &e.batch.0);
                        self.applied(e.index, e.term);
                    }
                    leader
                }
                FetchResponse::Snapshot {
                    node_id,
                    leader,
                    last_index,
                    last_term,
                    data,
                } => {
                    self.check_sender(voter, node_id)?;
                    if last_index < self.next {
                        return Err(FollowError::Protocol(format!(
                            "a snapshot at {last_index} when {} was asked for",
                            self.next
                        )));
                    }
                    tracing::info!(
                        "metadata observer {}: installing the snapshot at {last_index} from voter {voter}",
                        self.config.node_id
                    );
                    self.sm.install_snapshot(last_index, &data.0);
                    self.applied(last_index, last_term);
                    last_news = Instant::now();
                    leader
                }
            };
            self.leader_tx.send_if_modified(|cur| {
                let changed = *cur != leader;
                *cur = leader;
                changed
            });
            match leader {
                Some((l, _)) if l != voter => {
                    if self.voters.iter().any(|(id, _)| *id == l) && !self.avoided(l) {
                        return Ok(Leave::ToLeader(l));
                    }
                }
                Some(_) => {}
                None => {
                    if last_news.elapsed() >= idle_limit && self.voters.len() > 1 {
                        return Ok(Leave::Rotate);
                    }
                }
            }
        }
    }

    fn check_sender(&self, voter: u64, node_id: u64) -> Result<(), FollowError> {
        if node_id != voter {
            return Err(FollowError::Protocol(format!(
                "answered by node {node_id}, not {voter} (check controller.quorum.voters)"
            )));
        }
        Ok(())
    }

    fn applied(&mut self, index: u64, term: u64) {
        self.next = index.saturating_add(1);
        self.last_term = term;
        self.applied_tx.send_replace(Some(index));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_json_shapes() {
        let req: FetchRequest =
            serde_json::from_str(r#"{"to":1,"from_index":5,"max_wait_ms":10,"max_bytes":100}"#)
                .unwrap();
        assert_eq!((req.to, req.from_index), (1, 5));
        let resp = FetchResponse::Entries {
            node_id: 1,
            leader: Some((2, 3)),
            committed: Some(9),
            entries: vec![FetchedEntry {
                index: 5,
                term: 3,
                batch: Batch(vec![bytes::Bytes::from_static(b"r")]),
            }],
        };
        let j = serde_json::to_string(&resp).unwrap();
        assert!(j.contains(r#""batch":["cg=="]"#), "{j}");
        assert!(serde_json::from_str::<FetchResponse>(&j).is_ok());
        assert!(serde_json::from_str::<FetchResponse>(r#"{"Entries":{}}"#).is_err());
    }
}
