//! Broker → controller requests (Kafka's `NodeToControllerChannelManager`): one connection at a
//! time to the voter believed to be the active controller, the next voter on a connection error or
//! a NOT_CONTROLLER answer, bounded by a deadline.

use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use josef_protocol::{
    encode_request_frame, ApiKey, ErrorCode, RequestBody, RequestHeader, ResponseBody, StrBytes,
};
use tokio::sync::Mutex;

use crate::cluster_config::Voter;
use crate::peer_connection::{ExchangeError, PeerConnectError, PeerConnector, PeerStream};

/// Why a controller request failed.
#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    /// No voter answered as the active controller before the deadline.
    #[error("no active controller answered within {0:?}")]
    Timeout(Duration),
    /// The request could not be encoded.
    #[error("cannot encode the request: {0}")]
    Encode(String),
}

/// How often a request in flight checks whether the local quorum moved to another leader.
const HINT_POLL: Duration = Duration::from_millis(50);

/// Largest controller response accepted (a full CreateTopics answer is far smaller).
const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

struct Conn {
    voter: usize,
    stream: PeerStream,
}

/// A request channel to the active controller.
pub struct ControllerChannel {
    voters: Vec<Voter>,
    client_id: String,
    /// Index into `voters` of the last one that answered as controller.
    current: parking_lot::Mutex<usize>,
    /// A hint from the local quorum (combined nodes know the Raft leader).
    leader_hint: Option<Arc<dyn Fn() -> Option<i32> + Send + Sync>>,
    conn: Mutex<Option<Conn>>,
    correlation: std::sync::atomic::AtomicI32,
    request_timeout: Duration,
    connector: PeerConnector,
}

/// Whether a controller response says "not the controller" (then another voter is tried).
pub fn is_not_controller(body: &ResponseBody) -> bool {
    let nc = ErrorCode::NotController.code();
    match body {
        ResponseBody::BrokerRegistration(r) => r.error_code == nc,
        ResponseBody::BrokerHeartbeat(r) => r.error_code == nc,
        ResponseBody::UnregisterBroker(r) => r.error_code == nc,
        ResponseBody::AlterPartition(r) => r.error_code == nc,
        ResponseBody::AllocateProducerIds(r) => r.error_code == nc,
        ResponseBody::ControlledShutdown(r) => r.error_code == nc,
        ResponseBody::UpdateFeatures(r) => r.error_code == nc,
        ResponseBody::ElectLeaders(r) => r.error_code == nc,
        ResponseBody::AlterPartitionReassignments(r) => r.error_code == nc,
        ResponseBody::ListPartitionReassignments(r) => r.error_code == nc,
        ResponseBody::CreateTopics(r) => {
            !r.topics.is_empty() && r.topics.iter().all(|t| t.error_code == nc)
        }
        ResponseBody::DeleteTopics(r) => {
            !r.responses.is_empty() && r.responses.iter().all(|t| t.error_code == nc)
        }
        ResponseBody::CreatePartitions(r) => {
            !r.results.is_empty() && r.results.iter().all(|t| t.error_code == nc)
        }
        ResponseBody::IncrementalAlterConfigs(r) => {
            !r.responses.is_empty() && r.responses.iter().all(|t| t.error_code == nc)
        }
        ResponseBody::AlterClientQuotas(r) => {
            !r.entries.is_empty() && r.entries.iter().all(|e| e.error_code == nc)
        }
        ResponseBody::AlterConfigs(r) => {
            !r.responses.is_empty() && r.responses.iter().all(|t| t.error_code == nc)
        }
        ResponseBody::CreateAcls(r) => {
            !r.results.is_empty() && r.results.iter().all(|t| t.error_code == nc)
        }
        ResponseBody::DeleteAcls(r) => {
            !r.filter_results.is_empty() && r.filter_results.iter().all(|t| t.error_code == nc)
        }
        _ => false,
    }
}

impl ControllerChannel {
    /// A channel to `voters` (their controller listener, reached through `connector`);
    /// `leader_hint` names the Raft leader where this node knows it.
    pub fn new(
        voters: Vec<Voter>,
        node_id: i32,
        leader_hint: Option<Arc<dyn Fn() -> Option<i32> + Send + Sync>>,
        request_timeout: Duration,
        connector: PeerConnector,
    ) -> Self {
        ControllerChannel {
            voters,
            client_id: format!("josef-broker-{node_id}-to-controller"),
            current: parking_lot::Mutex::new(0),
            leader_hint,
            conn: Mutex::new(None),
            correlation: std::sync::atomic::AtomicI32::new(1),
            request_timeout,
            connector,
        }
    }

    /// The voter the local quorum names as leader, if it names one.
    fn hint(&self) -> Option<usize> {
        let id = (self.leader_hint.as_ref()?)()?;
        self.voters.iter().position(|v| v.id == id)
    }

    fn preferred_voter(&self) -> usize {
        self.hint().unwrap_or_else(|| *self.current.lock())
    }

    /// Resolves once the local quorum names a leader other than `voter` (never without a hint).
    async fn hint_moves_from(&self, voter: usize) {
        if self.leader_hint.is_none() {
            return std::future::pending().await;
        }
        loop {
            tokio::time::sleep(HINT_POLL).await;
            if self.hint().is_some_and(|h| h != voter) {
                return;
            }
        }
    }

    /// Sends `body` at `version` to the active controller and returns its answer; retries other
    /// voters until `deadline` passes.
    pub async fn send(
        &self,
        body: RequestBody,
        version: i16,
        deadline: Duration,
    ) -> Result<ResponseBody, ChannelError> {
        let started = tokio::time::Instant::now();
        let mut backoff = Duration::from_millis(20);
        let mut voter = self.preferred_voter();
        loop {
            let attempt =
                tokio::time::timeout(self.request_timeout, self.send_to(voter, &body, version));
            // A request to a controller that stopped answering (paused, partitioned) would hold
            // the connection for the whole request timeout, which can be the broker session
            // timeout; so would the requests queued behind it. Give it up (waiting for the
            // connection included) as soon as the local quorum names another leader.
            let outcome = tokio::select! {
                r = attempt => r.ok(),
                _ = self.hint_moves_from(voter) => None,
            };
            match outcome {
                Some(Ok(resp)) if !is_not_controller(&resp) => {
                    *self.current.lock() = voter;
                    return Ok(resp);
                }
                Some(Err(SendError::Encode(e))) => return Err(ChannelError::Encode(e)),
                Some(Err(SendError::Connect(e))) => {
                    tracing::debug!(voter = self.voters[voter].id, error = %e, "controller connection failed");
                    *self.conn.lock().await = None;
                }
                Some(Err(SendError::Io(e))) => {
                    tracing::debug!(voter = self.voters[voter].id, error = %e, "controller request failed");
                    *self.conn.lock().await = None;
                }
                Some(Ok(_)) | None => {
                    *self.conn.lock().await = None;
                }
            }
            if started.elapsed() >= deadline {
                return Err(ChannelError::Timeout(deadline));
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_millis(200));
            let hinted = self.preferred_voter();
            voter = if hinted != voter {
                hinted
            } else {
                (voter + 1) % self.voters.len()
            };
        }
    }

    async fn send_to(
        &self,
        voter: usize,
        body: &RequestBody,
        version: i16,
    ) -> Result<ResponseBody, SendError> {
        let key = body.api_key();
        let header = RequestHeader {
            request_api_key: key as i16,
            request_api_version: version,
            correlation_id: self
                .correlation
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            client_id: Some(StrBytes::from(self.client_id.as_str())),
            ..Default::default()
        };
        let mut buf = BytesMut::new();
        encode_request_frame(&header, body, &mut buf)
            .map_err(|e| SendError::Encode(e.to_string()))?;
        let mut guard = self.conn.lock().await;
        if guard.as_ref().map_or(true, |c| c.voter != voter) {
            let stream = self
                .connector
                .connect(&self.voters[voter].address(), &self.client_id)
                .await
                .map_err(SendError::Connect)?;
            *guard = Some(Conn { voter, stream });
        }
        let conn = guard.as_mut().expect("connected above");
        let result = exchange(&mut conn.stream, &buf, key, version, header.correlation_id).await;
        if result.is_err() {
            *guard = None;
        }
        result
    }
}

pub(crate) enum SendError {
    Connect(PeerConnectError),
    Io(std::io::Error),
    Encode(String),
}

/// One request and its answer on an open peer connection (responses up to
/// [`MAX_RESPONSE_BYTES`]).
pub(crate) async fn exchange(
    stream: &mut PeerStream,
    frame: &[u8],
    key: ApiKey,
    version: i16,
    correlation_id: i32,
) -> Result<ResponseBody, SendError> {
    crate::peer_connection::exchange(
        stream,
        frame,
        key,
        version,
        correlation_id,
        MAX_RESPONSE_BYTES,
    )
    .await
    .map_err(|e| match e {
        ExchangeError::Io(e) => SendError::Io(e),
        ExchangeError::Invalid(m) => {
            SendError::Io(std::io::Error::new(std::io::ErrorKind::InvalidData, m))
        }
    })
}
