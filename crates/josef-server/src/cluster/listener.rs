//! The CONTROLLER listener: one port for the metadata quorum's Raft traffic and for the Kafka
//! controller APIs brokers call. A connection that opens with one of josef-quorum's preambles (a
//! negative number, so never a Kafka frame size: Raft's, or an observer's fetching the committed
//! log) is handed to the quorum; any other is a Kafka connection. On an SSL or SASL_SSL
//! controller listener the TLS handshake comes first and the preamble is read inside it; on a
//! SASL_PLAINTEXT or SASL_SSL one the SASL exchange comes next ([`super::listener_sasl`]), and
//! only an authenticated connection reaches the quorum or the controller APIs.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use josef_quorum::QuorumStream;
use josef_sasl::SaslListener;
use josef_tls::TlsListener;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::listener_sasl::LoginEnd;
use crate::connection::{
    serve_authenticated, serve_connection, ConnectionInfo, ConnectionLimits, FrameHandler,
    Transport,
};
use crate::sasl_session::SaslConnection;

/// How long a new connection may take to send its first four bytes.
const FIRST_BYTES_TIMEOUT: Duration = Duration::from_secs(10);

/// Where Raft connections go.
pub trait RaftAcceptor: Send + Sync + 'static {
    /// Serves a connection (from `peer`) whose preamble has been read.
    fn serve_raft(&self, stream: QuorumStream, peer: String);
    /// Serves an observer's connection (a broker-only node fetching the committed metadata log)
    /// whose preamble ([`josef_quorum::OBSERVER_PREAMBLE`]) has been read.
    fn serve_observer(&self, stream: QuorumStream, peer: String);
}

/// A stream whose first four bytes were read to tell Raft from Kafka: they are read again first.
struct Replayed<S> {
    head: [u8; 4],
    pos: usize,
    inner: S,
}

impl<S: AsyncRead + Unpin> AsyncRead for Replayed<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.pos < self.head.len() {
            let n = (self.head.len() - self.pos).min(buf.remaining());
            let start = self.pos;
            buf.put_slice(&self.head[start..start + n]);
            self.pos += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Replayed<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Peeks the first four bytes: the quorum preamble they are (Raft or observer), if any.
async fn is_raft(stream: &TcpStream) -> std::io::Result<Option<[u8; 4]>> {
    let preambles = [josef_quorum::RAFT_PREAMBLE, josef_quorum::OBSERVER_PREAMBLE];
    let mut buf = [0u8; 4];
    loop {
        let n = stream.peek(&mut buf).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        if n >= 4 {
            return Ok(preambles.into_iter().find(|p| *p == buf));
        }
        if !preambles.iter().any(|p| buf[..n] == p[..n]) {
            return Ok(None);
        }
        // Fewer than four bytes so far: wait for more without spinning.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// A bound controller listener.
pub struct ControllerSocket {
    /// The listener name.
    pub name: String,
    /// The bound socket.
    pub listener: TcpListener,
    /// The TLS side of an SSL or SASL_SSL controller listener.
    pub tls: Option<TlsListener>,
    /// The SASL side of a SASL_PLAINTEXT or SASL_SSL controller listener.
    pub sasl: Option<Arc<SaslListener>>,
}

/// What one accepted connection is served with.
struct Route<H, R> {
    handler: Arc<H>,
    raft: Arc<R>,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
}

impl<H: FrameHandler, R: RaftAcceptor> Route<H, R> {
    /// Serves a connection already through TLS (if any): the SASL exchange when the listener
    /// has one, then the quorum or the controller APIs by the first four bytes.
    async fn serve<S: Transport + Sync + 'static>(
        self,
        mut stream: S,
        mut info: ConnectionInfo,
        sasl: Option<Arc<SaslListener>>,
    ) {
        let peer = info.peer;
        let (head, sasl) = match sasl {
            Some(listener) => {
                let mut conn = SaslConnection::new(&listener);
                match super::listener_sasl::authenticate(
                    &mut stream,
                    &mut info,
                    &mut conn,
                    self.handler.as_ref(),
                    self.limits.max_request_bytes,
                    &self.shutdown,
                )
                .await
                {
                    Ok(head) => (head, Some(conn)),
                    // A peer that went away (a port probe, a node restarting) is no refusal.
                    Err(e @ (LoginEnd::Io(_) | LoginEnd::Shutdown)) => {
                        tracing::debug!(%peer, listener = %info.listener, error = %e, "controller connection closed before it authenticated");
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(%peer, listener = %info.listener, error = %e, "SASL authentication on the controller listener failed; connection closed");
                        return;
                    }
                }
            }
            None => {
                let mut head = [0u8; 4];
                match tokio::time::timeout(FIRST_BYTES_TIMEOUT, stream.read_exact(&mut head)).await
                {
                    Ok(Ok(_)) => (head, None),
                    _ => return,
                }
            }
        };
        if head == josef_quorum::RAFT_PREAMBLE {
            tracing::debug!(%peer, principal = %info.principal, "metadata quorum connection");
            self.raft.serve_raft(Box::new(stream), peer.to_string());
        } else if head == josef_quorum::OBSERVER_PREAMBLE {
            tracing::debug!(%peer, principal = %info.principal, "metadata observer connection");
            self.raft.serve_observer(Box::new(stream), peer.to_string());
        } else {
            let s = Replayed {
                head,
                pos: 0,
                inner: stream,
            };
            serve_authenticated(s, info, self.handler, self.limits, self.shutdown, sasl).await;
        }
    }
}

/// Accepts on `socket` until `shutdown`, routing each connection.
pub fn spawn_accept_loop<H: FrameHandler, R: RaftAcceptor>(
    socket: ControllerSocket,
    handler: Arc<H>,
    raft: Arc<R>,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
    tracker: TaskTracker,
) {
    let ControllerSocket {
        name,
        listener,
        tls,
        sasl,
    } = socket;
    let bound_port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let conns = tracker.clone();
    tracker.spawn(async move {
        loop {
            let accepted = tokio::select! {
                _ = shutdown.cancelled() => break,
                a = listener.accept() => a,
            };
            let (stream, peer) = match accepted {
                Ok(x) => x,
                Err(e) => {
                    tracing::warn!(error = %e, "controller listener accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let route = Route {
                handler: handler.clone(),
                raft: raft.clone(),
                limits,
                shutdown: shutdown.clone(),
            };
            let info = ConnectionInfo::new(name.clone(), bound_port, peer);
            let tls = tls.clone();
            let sasl = sasl.clone();
            conns.spawn(async move {
                let _ = stream.set_nodelay(true);
                if let Some(tls) = tls {
                    let (s, principal) = match tls.accept(stream).await {
                        Ok(x) => x,
                        Err(e) => {
                            tracing::info!(%peer, error = %e, "TLS connection to the controller listener refused");
                            return;
                        }
                    };
                    let mut info = info;
                    // On SASL_SSL the SASL identity is the principal, not the certificate's.
                    if sasl.is_none() {
                        info.principal = crate::sasl_session::authorizer_principal(&principal);
                    }
                    route.serve(s, info, sasl).await;
                    return;
                }
                if sasl.is_some() {
                    route.serve(stream, info, sasl).await;
                    return;
                }
                match tokio::time::timeout(FIRST_BYTES_TIMEOUT, is_raft(&stream)).await {
                    Ok(Ok(Some(preamble))) => {
                        let mut stream = stream;
                        let mut pre = [0u8; 4];
                        if stream.read_exact(&mut pre).await.is_ok() {
                            if preamble == josef_quorum::OBSERVER_PREAMBLE {
                                route.raft.serve_observer(Box::new(stream), peer.to_string());
                            } else {
                                route.raft.serve_raft(Box::new(stream), peer.to_string());
                            }
                        }
                    }
                    Ok(Ok(None)) => {
                        serve_connection(stream, info, route.handler, limits, route.shutdown)
                            .await;
                    }
                    Ok(Err(e)) => {
                        tracing::debug!(%peer, error = %e, "controller connection closed")
                    }
                    Err(_) => tracing::info!(%peer, "controller connection sent nothing; closed"),
                }
            });
        }
    });
}
