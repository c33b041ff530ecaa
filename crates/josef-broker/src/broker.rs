//! The running broker: identity, listeners, request handler, shutdown order.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use crate::config::BrokerConfig;
use crate::connection::{ConnectionInfo, ConnectionLimits, FrameHandler, Outcome};
use crate::meta::{ensure_meta, MetaError};
use crate::server::{bind, BoundListener, Server};

/// Why the broker could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A log dir's identity is missing or wrong.
    #[error(transparent)]
    Meta(#[from] MetaError),
    /// A listener could not be bound.
    #[error("{0}")]
    Bind(std::io::Error),
}

/// The state every request handler sees.
pub struct BrokerState {
    /// Settings.
    pub config: BrokerConfig,
    /// From meta.properties.
    pub cluster_id: String,
}

impl FrameHandler for BrokerState {
    async fn handle(&self, _conn: &ConnectionInfo, _frame: Bytes) -> Outcome {
        Outcome::Close("no API is served yet".into())
    }
}

/// A started broker.
pub struct Broker {
    server: Server<BrokerState>,
}

impl Broker {
    /// Checks the log dirs, binds the listeners and starts serving.
    pub async fn start(config: BrokerConfig) -> Result<Broker, StartError> {
        let metas = ensure_meta(&config.log_dirs, config.node_id)?;
        let bound = bind(&config).await.map_err(StartError::Bind)?;
        let limits = ConnectionLimits {
            max_request_bytes: config.socket_request_max_bytes,
            idle_timeout: (config.connections_max_idle_ms >= 0)
                .then(|| Duration::from_millis(config.connections_max_idle_ms as u64)),
        };
        let state = Arc::new(BrokerState {
            cluster_id: metas[0].cluster_id.clone(),
            config,
        });
        tracing::info!(cluster_id = %state.cluster_id, node_id = state.config.node_id, "broker started");
        Ok(Broker {
            server: Server::start(bound, state, limits),
        })
    }

    /// The bound listeners (the real port when 0 was configured).
    pub fn listeners(&self) -> &[BoundListener] {
        self.server.listeners()
    }

    /// Graceful shutdown: stop accepting, finish in-flight requests, flush and close the logs.
    pub async fn shutdown(self) {
        self.server.stop().await;
    }
}
