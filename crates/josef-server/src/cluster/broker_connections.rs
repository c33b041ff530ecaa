//! Requests from this broker to another broker's inter-broker listener (WriteTxnMarkers from the
//! transaction coordinator, verify-only AddPartitionsToTxn from a partition leader): one
//! connection per broker, one request at a time on it, reconnected after any failure.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::channel::{exchange, SendError};
use super::ClusterNode;
use crate::peer_connection::PeerStream;
use bytes::BytesMut;
use josef_protocol::{encode_request_frame, RequestBody, RequestHeader, ResponseBody, StrBytes};
use parking_lot::Mutex;

type Conn = Arc<tokio::sync::Mutex<Option<(String, PeerStream)>>>;

/// Connections to other brokers for one kind of traffic (each kind has its own, so slow
/// requests of one never queue the other's).
pub struct BrokerConnections {
    client_id: String,
    conns: Mutex<BTreeMap<i32, Conn>>,
    correlation: AtomicI32,
}

impl BrokerConnections {
    /// Connections sending with `client_id`.
    pub fn new(client_id: String) -> Self {
        BrokerConnections {
            client_id,
            conns: Mutex::new(BTreeMap::new()),
            correlation: AtomicI32::new(1),
        }
    }

    /// Sends `body` at `version` to `broker` (its inter-broker listener in `node`'s image) and
    /// returns the answer; `None` when the broker is unknown, unreachable or silent for
    /// `timeout`.
    pub async fn call(
        &self,
        node: &ClusterNode,
        broker: i32,
        body: RequestBody,
        version: i16,
        timeout: Duration,
    ) -> Option<ResponseBody> {
        let endpoint = node
            .log
            .image()
            .broker(broker)
            .and_then(|r| r.listener(node.inter_broker.listener()))
            .map(|e| format!("{}:{}", e.host, e.port))?;
        let key = body.api_key();
        let header = RequestHeader {
            request_api_key: key as i16,
            request_api_version: version,
            correlation_id: self.correlation.fetch_add(1, Ordering::Relaxed),
            client_id: Some(StrBytes::from(self.client_id.as_str())),
            ..Default::default()
        };
        let mut buf = BytesMut::new();
        if let Err(e) = encode_request_frame(&header, &body, &mut buf) {
            tracing::error!(error = %e, ?key, "cannot encode an inter-broker request");
            return None;
        }
        let conn = self.conns.lock().entry(broker).or_default().clone();
        let mut guard = conn.lock().await;
        let result = tokio::time::timeout(timeout, async {
            if guard.as_ref().map_or(true, |(e, _)| *e != endpoint) {
                let stream = node
                    .inter_broker
                    .connect(&endpoint, &self.client_id)
                    .await
                    .map_err(SendError::Connect)?;
                *guard = Some((endpoint.clone(), stream));
            }
            let (_, stream) = guard.as_mut().expect("connected above");
            exchange(stream, &buf, key, version, header.correlation_id).await
        })
        .await;
        match result {
            Ok(Ok(body)) => Some(body),
            _ => {
                tracing::debug!(broker, %endpoint, ?key, "inter-broker request failed; reconnecting");
                *guard = None;
                None
            }
        }
    }
}
