//! Listeners, accept loops and shutdown.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::BrokerConfig;
use crate::connection::{serve_connection, ConnectionInfo, ConnectionLimits, FrameHandler};

/// How long shutdown waits for in-flight requests (parked fetches, joins) before it stops them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// A bound listener.
#[derive(Debug, Clone)]
pub struct BoundListener {
    /// Listener name.
    pub name: String,
    /// The address actually bound (port 0 resolved).
    pub addr: SocketAddr,
}

/// Accept loops over bound listeners, serving connections with one handler.
pub struct Server<H: FrameHandler> {
    handler: Arc<H>,
    shutdown: CancellationToken,
    tracker: TaskTracker,
    listeners: Vec<BoundListener>,
}

/// Binds every configured listener. Port 0 picks a free port.
pub async fn bind(config: &BrokerConfig) -> std::io::Result<Vec<(BoundListener, TcpListener)>> {
    let mut out = Vec::new();
    for l in &config.listeners {
        let host = if l.host.is_empty() {
            "0.0.0.0"
        } else {
            &l.host
        };
        let listener = TcpListener::bind((host, l.port)).await.map_err(|e| {
            std::io::Error::new(e.kind(), format!("cannot bind {host}:{}: {e}", l.port))
        })?;
        let addr = listener.local_addr()?;
        out.push((
            BoundListener {
                name: l.name.clone(),
                addr,
            },
            listener,
        ));
    }
    Ok(out)
}

impl<H: FrameHandler> Server<H> {
    /// Starts accepting on the bound listeners.
    pub fn start(
        bound: Vec<(BoundListener, TcpListener)>,
        handler: Arc<H>,
        limits: ConnectionLimits,
    ) -> Self {
        let shutdown = CancellationToken::new();
        let tracker = TaskTracker::new();
        let mut listeners = Vec::new();
        for (info, listener) in bound {
            listeners.push(info.clone());
            let handler = handler.clone();
            let shutdown = shutdown.clone();
            let conns = tracker.clone();
            tracker.spawn(async move {
                loop {
                    let accepted = tokio::select! {
                        _ = shutdown.cancelled() => break,
                        a = listener.accept() => a,
                    };
                    match accepted {
                        Ok((stream, peer)) => {
                            let _ = stream.set_nodelay(true);
                            let ci = ConnectionInfo {
                                listener: info.name.clone(),
                                bound_port: info.addr.port(),
                                peer,
                                principal: josef_authorizer::KafkaPrincipal::anonymous(),
                            };
                            tracing::debug!(%peer, listener = %info.name, "accepted connection");
                            conns.spawn(serve_connection(
                                stream,
                                ci,
                                handler.clone(),
                                limits,
                                shutdown.clone(),
                            ));
                        }
                        Err(e) => {
                            // EMFILE and friends: back off instead of spinning.
                            tracing::warn!(error = %e, "accept failed");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                }
            });
        }
        Server {
            handler,
            shutdown,
            tracker,
            listeners,
        }
    }

    /// The bound listeners.
    pub fn listeners(&self) -> &[BoundListener] {
        &self.listeners
    }

    /// The handler shared by all connections.
    pub fn handler(&self) -> &Arc<H> {
        &self.handler
    }

    /// Stops accepting, lets every connection finish its in-flight request, and waits for them
    /// (at most [`SHUTDOWN_GRACE`]).
    pub async fn stop(&self) {
        self.shutdown.cancel();
        self.tracker.close();
        if tokio::time::timeout(SHUTDOWN_GRACE, self.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!("connections still busy after the shutdown grace period");
        }
    }
}
