//! Listeners, accept loops and shutdown.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use std::collections::BTreeMap;

use crate::config::BrokerConfig;
use crate::connection::{serve_authenticated, ConnectionInfo, ConnectionLimits, FrameHandler};
use crate::connection_quotas::ConnectionSlot;
use crate::sasl_session::SaslConnection;
use josef_tls::TlsListener;

/// What a listener's connections go through before their requests: a TLS handshake, a SASL
/// exchange, both or neither (PLAINTEXT).
#[derive(Debug, Clone, Default)]
pub struct ListenerSecurity {
    /// TLS (SSL, SASL_SSL).
    pub tls: Option<TlsListener>,
    /// SASL (SASL_PLAINTEXT, SASL_SSL).
    pub sasl: Option<Arc<josef_sasl::SaslListener>>,
}

/// Builds every client listener's TLS and SASL from the configuration; SCRAM credentials are
/// read from `image` at each login.
pub fn listener_security(
    config: &BrokerConfig,
    image: crate::sasl_session::ImageSource,
) -> Result<BTreeMap<String, ListenerSecurity>, String> {
    let mut out = BTreeMap::new();
    for (name, s) in &config.security.listeners {
        let tls = match &s.ssl {
            Some(ssl) => Some(TlsListener::new(ssl).map_err(|e| format!("listener {name}: {e}"))?),
            None => None,
        };
        let sasl = match &s.sasl {
            Some(sasl) => Some(
                crate::sasl_session::listener(sasl, image.clone())
                    .map_err(|e| format!("listener {name}: {e}"))?,
            ),
            None => None,
        };
        out.insert(name.clone(), ListenerSecurity { tls, sasl });
    }
    Ok(out)
}

/// Serves one accepted connection: TLS handshake (under its timeout, in this connection's own
/// task), then requests, through SASL when the listener has it. `slot` is counted as long as
/// the connection is served.
///
/// This future is what each connection's task holds for its whole life, idle or not, and tokio
/// copies all of it into the task at spawn: its size is memory per connection. The TLS path is
/// boxed so that a PLAINTEXT connection does not carry the handshake's and the TLS stream's
/// states (`connection_future_size` tests the bound).
async fn serve_accepted<H: FrameHandler>(
    stream: tokio::net::TcpStream,
    info: ConnectionInfo,
    handler: Arc<H>,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
    security: ListenerSecurity,
    slot: ConnectionSlot,
) {
    let _slot = slot;
    let sasl = security.sasl.as_ref().map(SaslConnection::new);
    match security.tls {
        None => serve_authenticated(stream, info, handler, limits, shutdown, sasl).await,
        Some(tls) => {
            Box::pin(serve_tls(
                stream, tls, info, handler, limits, shutdown, sasl,
            ))
            .await
        }
    }
}

/// The TLS handshake, then requests over the TLS stream.
async fn serve_tls<H: FrameHandler>(
    stream: tokio::net::TcpStream,
    tls: TlsListener,
    mut info: ConnectionInfo,
    handler: Arc<H>,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
    sasl: Option<SaslConnection>,
) {
    let accepted = tokio::select! {
        r = tls.accept(stream) => r,
        _ = shutdown.cancelled() => return,
    };
    match accepted {
        Ok((stream, principal)) => {
            // On SASL_SSL the SASL identity is the principal, not the certificate's.
            if sasl.is_none() {
                info.principal = crate::sasl_session::authorizer_principal(&principal);
            }
            serve_authenticated(stream, info, handler, limits, shutdown, sasl).await
        }
        Err(reason) => tracing::info!(peer = %info.peer, %reason, "TLS connection refused"),
    }
}

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
    /// Starts accepting on the bound listeners, every one PLAINTEXT.
    pub fn start(
        bound: Vec<(BoundListener, TcpListener)>,
        handler: Arc<H>,
        limits: ConnectionLimits,
    ) -> Self {
        Self::start_secure(
            bound,
            handler,
            limits,
            BTreeMap::new(),
            crate::connection_quotas::ConnectionQuotas::unlimited(),
        )
    }

    /// Starts accepting on the bound listeners, each with its `security` (PLAINTEXT when the
    /// map has no entry for it), within `quotas` (`max.connections` and the rest).
    pub fn start_secure(
        bound: Vec<(BoundListener, TcpListener)>,
        handler: Arc<H>,
        limits: ConnectionLimits,
        security: BTreeMap<String, ListenerSecurity>,
        quotas: Arc<crate::connection_quotas::ConnectionQuotas>,
    ) -> Self {
        let shutdown = CancellationToken::new();
        let tracker = TaskTracker::new();
        let mut listeners = Vec::new();
        for (info, listener) in bound {
            listeners.push(info.clone());
            let handler = handler.clone();
            let shutdown = shutdown.clone();
            let conns = tracker.clone();
            let sec = security.get(&info.name).cloned().unwrap_or_default();
            let quotas = quotas.clone();
            tracker.spawn(async move {
                loop {
                    // At `max.connections` (the listener's or the broker's) nothing is accepted
                    // until a connection closes: new ones wait in the kernel's backlog.
                    tokio::select! {
                        _ = shutdown.cancelled() => break,
                        _ = quotas.wait_for_room(&info.name) => {}
                    }
                    let accepted = tokio::select! {
                        _ = shutdown.cancelled() => break,
                        a = listener.accept() => a,
                    };
                    match accepted {
                        Ok((stream, peer)) => {
                            let (slot, wait) = match quotas.admit(&info.name, peer.ip(), now_ms()) {
                                Ok(admitted) => admitted,
                                Err(e) => {
                                    tracing::info!(%peer, listener = %info.name, "closing connection: {e}");
                                    drop(stream);
                                    continue;
                                }
                            };
                            // Over the address's connection_creation_rate: accepted, then closed
                            // after the throttle time (KIP-612), without being served.
                            if let Some(delay) = quotas.ip_rate_throttle(peer.ip(), now_ms()) {
                                tracing::debug!(%peer, listener = %info.name, ?delay, "connection_creation_rate exceeded; closing the connection after the throttle time");
                                let shutdown = shutdown.clone();
                                conns.spawn(async move {
                                    tokio::select! {
                                        _ = shutdown.cancelled() => {}
                                        _ = tokio::time::sleep(delay) => {}
                                    }
                                    drop((stream, slot));
                                });
                                continue;
                            }
                            let _ = stream.set_nodelay(true);
                            let ci = ConnectionInfo::new(info.name.clone(), info.addr.port(), peer);
                            tracing::debug!(%peer, listener = %info.name, "accepted connection");
                            conns.spawn(serve_accepted(
                                stream,
                                ci,
                                handler.clone(),
                                limits,
                                shutdown.clone(),
                                sec.clone(),
                                slot,
                            ));
                            // Over `max.connection.creation.rate`: the next accept waits.
                            if !wait.is_zero() {
                                tokio::select! {
                                    _ = shutdown.cancelled() => break,
                                    _ = tokio::time::sleep(wait) => {}
                                }
                            }
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

/// Wall-clock milliseconds, for the connection-rate windows.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of what `f` returns, without calling it.
    fn returned_size<A, B, C, D, E, G, I, F>(_: impl FnOnce(A, B, C, D, E, G, I) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// Memory per idle connection starts with the size of its task's future: 18,688 bytes in a
    /// debug build with the broker's handler future inline, 2,728 with it boxed. The bound holds
    /// for debug builds, whose futures are larger than release ones.
    #[test]
    fn connection_future_size() {
        let size = returned_size(serve_accepted::<crate::state::BrokerState>);
        assert!(size <= 4096, "a connection's future is {size} bytes");
    }
}
