//! The Raft transport: TCP connections that start with [`RAFT_PREAMBLE`], then frames.
//!
//! A frame is `length: u32 BE | JSON`. The length is checked against [`MAX_FRAME_BYTES`] before
//! anything is read, and the body buffer grows only as bytes arrive. The client sends one
//! [`WireRequest`] and reads one [`WireResponse`] at a time on a connection (one connection per
//! openraft client: a replication stream, or the vote sender). Byte payloads (records, snapshot
//! data) are base64 strings in the JSON. Anything that does not decode closes the connection with
//! a warning.

use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::transport::{QuorumStream, StreamConnector};
use openraft::error::{
    Fatal, InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, ReplicationClosed,
    StreamingError, Timeout, Unreachable,
};
use openraft::network::{Backoff, RPCOption, RPCTypes, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    SnapshotResponse, VoteRequest, VoteResponse,
};
use openraft::{BasicNode, Raft};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};

use crate::log_store::Progress;
use crate::types::{SnapshotMeta, TypeConfig, Vote, B64};
use crate::RAFT_PREAMBLE;

/// The largest frame accepted (a whole snapshot travels in one frame).
pub const MAX_FRAME_BYTES: u32 = 256 * 1024 * 1024;

/// A request on the wire, addressed to one node.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct WireRequest {
    /// The node the sender meant to reach; a node that is someone else answers nothing and closes
    /// (a wrong `controller.quorum.voters`).
    pub(crate) to: u64,
    pub(crate) rpc: Rpc,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Rpc {
    AppendEntries(AppendEntriesRequest<TypeConfig>),
    Vote(VoteRequest<u64>),
    Snapshot {
        vote: Vote,
        meta: SnapshotMeta,
        data: B64,
    },
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum WireResponse {
    AppendEntries(Result<AppendEntriesResponse<u64>, RaftError<u64>>),
    Vote(Result<VoteResponse<u64>, RaftError<u64>>),
    Snapshot(Result<SnapshotResponse<u64>, Fatal<u64>>),
}

/// Writes one frame.
pub(crate) async fn write_frame<W: AsyncWrite + Unpin>(w: &mut W, body: &[u8]) -> io::Result<()> {
    let len = u32::try_from(body.len())
        .ok()
        .filter(|l| *l <= MAX_FRAME_BYTES)
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("frame of {} bytes too large", body.len()),
            )
        })?;
    w.write_all(&len.to_be_bytes()).await?;
    w.write_all(body).await?;
    w.flush().await
}

/// Reads one frame; `None` on a clean end of stream before a frame starts.
pub(crate) async fn read_frame<R: AsyncRead + Unpin>(r: &mut R) -> io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        let n = r.read(&mut len[got..]).await?;
        if n == 0 {
            return if got == 0 {
                Ok(None)
            } else {
                Err(io::ErrorKind::UnexpectedEof.into())
            };
        }
        got += n;
    }
    let len = u32::from_be_bytes(len);
    if len > MAX_FRAME_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame length {len} over {MAX_FRAME_BYTES}"),
        ));
    }
    let mut body = Vec::with_capacity((len as usize).min(64 * 1024));
    let read = r.take(u64::from(len)).read_to_end(&mut body).await?;
    if read != len as usize {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(Some(body))
}

/// What the leader last heard from a peer.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Contact {
    /// Unix ms of the last successful AppendEntries answer.
    pub(crate) last_fetch_ms: i64,
    /// Unix ms of the last successful AppendEntries that carried the leader's whole log as it was
    /// when it was sent (Kafka's last caught-up time).
    pub(crate) last_caught_up_ms: Option<i64>,
}

/// The leader's [`Contact`] with each peer.
pub(crate) type Contacts = Arc<Mutex<BTreeMap<u64, Contact>>>;

pub(crate) fn now_unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Makes a client per target; addresses come from the configured voters, else from the
/// membership's node.
#[derive(Clone)]
pub(crate) struct Network {
    pub(crate) node_id: u64,
    pub(crate) voters: Arc<BTreeMap<u64, String>>,
    pub(crate) request_timeout: Duration,
    pub(crate) backoff: Duration,
    pub(crate) contacts: Contacts,
    pub(crate) progress: Arc<Progress>,
    pub(crate) connector: Arc<dyn StreamConnector>,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerClient;

    async fn new_client(&mut self, target: u64, node: &BasicNode) -> PeerClient {
        let addr = self
            .voters
            .get(&target)
            .cloned()
            .unwrap_or_else(|| node.addr.clone());
        PeerClient {
            from: self.node_id,
            target,
            addr,
            conn: None,
            request_timeout: self.request_timeout,
            backoff: self.backoff,
            contacts: self.contacts.clone(),
            progress: self.progress.clone(),
            connector: self.connector.clone(),
        }
    }
}

type Conn = (
    BufReader<tokio::io::ReadHalf<QuorumStream>>,
    BufWriter<tokio::io::WriteHalf<QuorumStream>>,
);

/// One connection to one peer, opened on first use and again after any error.
pub(crate) struct PeerClient {
    from: u64,
    target: u64,
    addr: String,
    conn: Option<Conn>,
    request_timeout: Duration,
    backoff: Duration,
    contacts: Contacts,
    progress: Arc<Progress>,
    connector: Arc<dyn StreamConnector>,
}

enum CallError {
    /// Could not connect.
    Unreachable(io::Error),
    /// Connected, then the exchange failed.
    Network(io::Error),
    Timeout,
}

impl PeerClient {
    /// One request and its response. The connection is taken out of `self` for the exchange and
    /// put back only once the response is read whole: openraft drops an RPC future at its own
    /// timeout (the heartbeat interval for AppendEntries), and a connection kept after a request
    /// whose response was never read would hand that late response to the next request. Raft then
    /// took a conflict or a match for another request's log id (openraft's debug asserts on
    /// "follower log reversion" and on `has_log_id` below the committed index, in the soak).
    async fn exchange(&mut self, req: &WireRequest) -> Result<WireResponse, CallError> {
        let (mut r, mut w) = match self.conn.take() {
            Some(c) => c,
            None => {
                let stream = self
                    .connector
                    .connect(&self.addr)
                    .await
                    .map_err(CallError::Unreachable)?;
                let (r, w) = tokio::io::split(stream);
                let mut w = BufWriter::new(w);
                w.write_all(&RAFT_PREAMBLE)
                    .await
                    .map_err(CallError::Unreachable)?;
                (BufReader::new(r), w)
            }
        };
        let body = serde_json::to_vec(req).map_err(|e| CallError::Network(io::Error::other(e)))?;
        write_frame(&mut w, &body)
            .await
            .map_err(CallError::Network)?;
        let frame = read_frame(&mut r)
            .await
            .map_err(CallError::Network)?
            .ok_or_else(|| CallError::Network(io::ErrorKind::UnexpectedEof.into()))?;
        let resp = serde_json::from_slice(&frame)
            .map_err(|e| CallError::Network(io::Error::new(io::ErrorKind::InvalidData, e)))?;
        self.conn = Some((r, w));
        Ok(resp)
    }

    async fn call(&mut self, rpc: Rpc, timeout: Duration) -> Result<WireResponse, CallError> {
        let req = WireRequest {
            to: self.target,
            rpc,
        };
        let res = match tokio::time::timeout(timeout, self.exchange(&req)).await {
            Ok(r) => r,
            Err(_) => Err(CallError::Timeout),
        };
        if res.is_err() {
            // The stream may hold half a frame: start over on the next call.
            self.conn = None;
        }
        res
    }

    fn rpc_error<E: std::error::Error>(
        &self,
        e: CallError,
        action: RPCTypes,
        timeout: Duration,
    ) -> RPCError<u64, BasicNode, E> {
        match e {
            CallError::Unreachable(e) => RPCError::Unreachable(Unreachable::new(&e)),
            CallError::Network(e) => RPCError::Network(NetworkError::new(&e)),
            CallError::Timeout => RPCError::Timeout(Timeout {
                action,
                id: self.from,
                target: self.target,
                timeout,
            }),
        }
    }

    fn unexpected<E: std::error::Error>(&mut self) -> RPCError<u64, BasicNode, E> {
        self.conn = None;
        RPCError::Network(NetworkError::new(&io::Error::new(
            io::ErrorKind::InvalidData,
            "mismatched response",
        )))
    }

    fn timeout_for(&self, option: &RPCOption) -> Duration {
        option.hard_ttl().max(self.request_timeout)
    }
}

impl RaftNetwork<TypeConfig> for PeerClient {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        let timeout = self.timeout_for(&option);
        // Whether this request brings the peer up to the leader's log end as it is now.
        let sent_up_to = rpc
            .entries
            .last()
            .map(|e| e.log_id.index)
            .or(rpc.prev_log_id.map(|l| l.index));
        let whole_log = sent_up_to >= self.progress.last_log();
        match self.call(Rpc::AppendEntries(rpc), timeout).await {
            Ok(WireResponse::AppendEntries(Ok(resp))) => {
                if let Ok(mut c) = self.contacts.lock() {
                    let now = now_unix_ms();
                    let contact = c.entry(self.target).or_default();
                    contact.last_fetch_ms = now;
                    if whole_log && resp.is_success() {
                        contact.last_caught_up_ms = Some(now);
                    }
                }
                Ok(resp)
            }
            Ok(WireResponse::AppendEntries(Err(e))) => {
                Err(RPCError::RemoteError(RemoteError::new(self.target, e)))
            }
            Ok(_) => Err(self.unexpected()),
            Err(e) => Err(self.rpc_error(e, RPCTypes::AppendEntries, timeout)),
        }
    }

    async fn install_snapshot(
        &mut self,
        _rpc: InstallSnapshotRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<u64>,
        RPCError<u64, BasicNode, RaftError<u64, InstallSnapshotError>>,
    > {
        // With `generic-snapshot-data` openraft sends snapshots through `full_snapshot` only.
        Err(RPCError::Network(NetworkError::new(&io::Error::other(
            "chunked snapshots are not used",
        ))))
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        option: RPCOption,
    ) -> Result<VoteResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        let timeout = self.timeout_for(&option);
        match self.call(Rpc::Vote(rpc), timeout).await {
            Ok(WireResponse::Vote(Ok(resp))) => Ok(resp),
            Ok(WireResponse::Vote(Err(e))) => {
                Err(RPCError::RemoteError(RemoteError::new(self.target, e)))
            }
            Ok(_) => Err(self.unexpected()),
            Err(e) => Err(self.rpc_error(e, RPCTypes::Vote, timeout)),
        }
    }

    async fn full_snapshot(
        &mut self,
        vote: Vote,
        snapshot: openraft::Snapshot<TypeConfig>,
        cancel: impl Future<Output = ReplicationClosed> + Send + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<u64>, StreamingError<TypeConfig, Fatal<u64>>> {
        let timeout = self
            .timeout_for(&option)
            .max(self.request_timeout.saturating_mul(10));
        let rpc = Rpc::Snapshot {
            vote,
            meta: snapshot.meta,
            data: B64(*snapshot.snapshot),
        };
        let res = tokio::select! {
            closed = cancel => {
                self.conn = None;
                return Err(StreamingError::Closed(closed));
            }
            res = self.call(rpc, timeout) => res,
        };
        match res {
            Ok(WireResponse::Snapshot(Ok(resp))) => Ok(resp),
            Ok(WireResponse::Snapshot(Err(e))) => Err(StreamingError::RemoteError(
                RemoteError::new(self.target, e),
            )),
            Ok(_) => {
                self.conn = None;
                Err(StreamingError::Network(NetworkError::new(
                    &io::Error::other("mismatched response"),
                )))
            }
            Err(CallError::Unreachable(e)) => {
                Err(StreamingError::Unreachable(Unreachable::new(&e)))
            }
            Err(CallError::Network(e)) => Err(StreamingError::Network(NetworkError::new(&e))),
            Err(CallError::Timeout) => Err(StreamingError::Timeout(Timeout {
                action: RPCTypes::InstallSnapshot,
                id: self.from,
                target: self.target,
                timeout,
            })),
        }
    }

    fn backoff(&self) -> Backoff {
        Backoff::new(std::iter::repeat(self.backoff))
    }
}

/// Serves Raft RPCs on an accepted connection whose preamble was already read, until the peer
/// closes it, a frame does not decode, or `stop` fires.
pub(crate) async fn serve(
    raft: Raft<TypeConfig>,
    node_id: u64,
    stream: QuorumStream,
    peer: String,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let (r, w) = tokio::io::split(stream);
    let mut r = BufReader::new(r);
    let mut w = BufWriter::new(w);
    if *stop.borrow_and_update() {
        return;
    }
    loop {
        let frame = tokio::select! {
            _ = stop.changed() => return,
            f = read_frame(&mut r) => f,
        };
        let frame = match frame {
            Ok(Some(f)) => f,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!("raft connection from {peer}: {e}; closing it");
                return;
            }
        };
        let req: WireRequest = match serde_json::from_slice(&frame) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(
                    "raft connection from {peer}: undecodable request ({e}); closing it"
                );
                return;
            }
        };
        if req.to != node_id {
            tracing::warn!(
                "raft connection from {peer}: request for node {} reached node {node_id} (check \
                 controller.quorum.voters); closing it",
                req.to
            );
            return;
        }
        let resp = match req.rpc {
            Rpc::AppendEntries(a) => WireResponse::AppendEntries(raft.append_entries(a).await),
            Rpc::Vote(v) => WireResponse::Vote(raft.vote(v).await),
            Rpc::Snapshot { vote, meta, data } => WireResponse::Snapshot(
                raft.install_full_snapshot(
                    vote,
                    openraft::Snapshot {
                        meta,
                        snapshot: Box::new(data.0),
                    },
                )
                .await,
            ),
        };
        let body = match serde_json::to_vec(&resp) {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(
                    "raft connection from {peer}: cannot encode a response ({e}); closing it"
                );
                return;
            }
        };
        if let Err(e) = write_frame(&mut w, &body).await {
            tracing::debug!("raft connection from {peer}: {e}");
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vote_request(term: u64) -> Rpc {
        Rpc::Vote(VoteRequest::new(openraft::Vote::new(term, 1), None))
    }

    /// A request whose future is dropped before its response arrives (openraft's own timeout)
    /// must not leave that response for the next request to read.
    #[tokio::test]
    async fn a_dropped_call_does_not_hand_its_late_response_to_the_next_one() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        // Answers each request with a vote response carrying the request's term; the first
        // request on every connection is answered late.
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                tokio::spawn(async move {
                    let (r, w) = stream.into_split();
                    let (mut r, mut w) = (BufReader::new(r), BufWriter::new(w));
                    let mut preamble = [0u8; RAFT_PREAMBLE.len()];
                    r.read_exact(&mut preamble).await.unwrap();
                    let mut first = true;
                    while let Ok(Some(frame)) = read_frame(&mut r).await {
                        let req: WireRequest = serde_json::from_slice(&frame).unwrap();
                        let Rpc::Vote(v) = req.rpc else {
                            panic!("not a vote")
                        };
                        if first {
                            tokio::time::sleep(Duration::from_millis(300)).await;
                            first = false;
                        }
                        let resp = WireResponse::Vote(Ok(VoteResponse::new(v.vote, None, true)));
                        let body = serde_json::to_vec(&resp).unwrap();
                        if write_frame(&mut w, &body).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        let mut client = PeerClient {
            from: 1,
            target: 2,
            addr,
            conn: None,
            request_timeout: Duration::from_secs(5),
            backoff: Duration::from_millis(10),
            contacts: Contacts::default(),
            progress: Arc::new(Progress::default()),
            connector: Arc::new(crate::transport::TcpConnector),
        };
        let dropped = tokio::time::timeout(
            Duration::from_millis(50),
            client.call(vote_request(7), Duration::from_secs(5)),
        )
        .await;
        assert!(dropped.is_err(), "the first call should still be waiting");
        let answer = client
            .call(vote_request(8), Duration::from_secs(5))
            .await
            .ok()
            .expect("the second call is answered");
        match answer {
            WireResponse::Vote(Ok(v)) => assert_eq!(v.vote.leader_id().term, 8),
            other => panic!("unexpected answer {other:?}"),
        }
    }

    #[tokio::test]
    async fn frames_round_trip_and_bounds() {
        let mut buf = Vec::new();
        write_frame(&mut buf, b"hello").await.unwrap();
        write_frame(&mut buf, b"").await.unwrap();
        let mut r = buf.as_slice();
        assert_eq!(read_frame(&mut r).await.unwrap().unwrap(), b"hello");
        assert_eq!(read_frame(&mut r).await.unwrap().unwrap(), b"");
        assert!(read_frame(&mut r).await.unwrap().is_none());
        // A length over the bound is refused before any allocation.
        let mut r: &[u8] = &[0xff, 0xff, 0xff, 0xf0];
        assert_eq!(
            read_frame(&mut r).await.unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
        // Cut inside the header or the body.
        let mut r: &[u8] = &[0, 0];
        assert!(read_frame(&mut r).await.is_err());
        let mut r: &[u8] = &[0, 0, 0, 9, 1, 2];
        assert!(read_frame(&mut r).await.is_err());
    }
}
