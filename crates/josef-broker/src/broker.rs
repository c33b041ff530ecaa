//! The running broker: identity, listeners, request handler, background work, shutdown order.

use std::sync::Arc;
use std::time::Duration;

use crate::config::BrokerConfig;
use crate::connection::ConnectionLimits;
use crate::meta::{ensure_meta, MetaError};
use crate::server::{bind, BoundListener, Server};
use crate::state::BrokerState;

/// Why the broker could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A log dir's identity is missing or wrong.
    #[error(transparent)]
    Meta(#[from] MetaError),
    /// The logs or topic metadata could not be opened.
    #[error("cannot open the logs: {0}")]
    Storage(String),
    /// A listener could not be bound.
    #[error("{0}")]
    Bind(std::io::Error),
}

/// A started broker.
pub struct Broker {
    server: Server<BrokerState>,
    background: tokio::task::JoinHandle<()>,
    ticker: tokio::task::JoinHandle<()>,
    /// Expires delayed fetches at their max wait.
    fetch_reaper: josef_timer::tokio_driver::TokioDriver,
}

impl Broker {
    /// Checks the log dirs, opens (and recovers) the logs, binds the listeners and serves.
    pub async fn start(config: BrokerConfig) -> Result<Broker, StartError> {
        let metas = ensure_meta(&config.log_dirs, config.node_id)?;
        let config = Arc::new(config);
        let cluster_id = metas[0].cluster_id.clone();
        let state = {
            let config = config.clone();
            tokio::task::spawn_blocking(move || BrokerState::open(config, cluster_id))
                .await
                .map_err(|e| StartError::Storage(e.to_string()))?
                .map_err(StartError::Storage)?
        };
        let bound = bind(&config).await.map_err(StartError::Bind)?;
        let limits = ConnectionLimits {
            max_request_bytes: config.socket_request_max_bytes,
            idle_timeout: (config.connections_max_idle_ms >= 0)
                .then(|| Duration::from_millis(config.connections_max_idle_ms as u64)),
        };
        let state = Arc::new(state);
        tracing::info!(cluster_id = %state.cluster_id, node_id = config.node_id, "broker started");
        let background = {
            let state = state.clone();
            let every =
                Duration::from_millis(config.log_retention_check_interval_ms.max(100) as u64);
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(every);
                tick.tick().await;
                loop {
                    tick.tick().await;
                    let s = state.clone();
                    let _ = tokio::task::spawn_blocking(move || s.topics.run_retention()).await;
                }
            })
        };
        let ticker = {
            let state = state.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_millis(20));
                let mut n: u64 = 0;
                loop {
                    tick.tick().await;
                    state.groups.tick();
                    n += 1;
                    if n % 10 == 0 {
                        state.txns.tick(&crate::txns::Env {
                            topics: &state.topics,
                            groups: &state.groups,
                            pids: &state.producer_ids,
                        });
                    }
                }
            })
        };
        let fetch_reaper = josef_timer::tokio_driver::spawn_reaper(state.fetch_purgatory.clone());
        Ok(Broker {
            ticker,
            fetch_reaper,
            server: Server::start(bound, state, limits),
            background,
        })
    }

    /// The bound listeners (the real port when 0 was configured).
    pub fn listeners(&self) -> &[BoundListener] {
        self.server.listeners()
    }

    /// The shared state (for tests and embedding).
    pub fn state(&self) -> &Arc<BrokerState> {
        self.server.handler()
    }

    /// Graceful shutdown: stop accepting, finish in-flight requests, then flush every log,
    /// snapshot producer state and mark the logs clean.
    pub async fn shutdown(self) {
        self.server.stop().await;
        self.background.abort();
        self.ticker.abort();
        self.fetch_reaper.shutdown().await;
        let state = self.server.handler().clone();
        let _ = tokio::task::spawn_blocking(move || state.topics.shutdown()).await;
    }
}
