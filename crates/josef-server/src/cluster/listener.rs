//! The CONTROLLER listener: one port for the metadata quorum's Raft traffic and for the Kafka
//! controller APIs brokers call. A connection that opens with one of josef-quorum's preambles (a
//! negative number, so never a Kafka frame size: Raft's, or an observer's fetching the committed
//! log) is handed to the quorum; any other is a Kafka connection.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::connection::{serve_connection, ConnectionInfo, ConnectionLimits, FrameHandler};

/// How long a new connection may take to send its first four bytes.
const FIRST_BYTES_TIMEOUT: Duration = Duration::from_secs(10);

/// Where Raft connections go.
pub trait RaftAcceptor: Send + Sync + 'static {
    /// Serves a connection whose preamble has been read.
    fn serve_raft(&self, stream: TcpStream);
    /// Serves an observer's connection (a broker-only node fetching the committed metadata log)
    /// whose preamble ([`josef_quorum::OBSERVER_PREAMBLE`]) has been read.
    fn serve_observer(&self, stream: TcpStream);
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

/// Accepts on `listener` until `shutdown`, routing each connection.
pub fn spawn_accept_loop<H: FrameHandler, R: RaftAcceptor>(
    name: String,
    listener: TcpListener,
    handler: Arc<H>,
    raft: Arc<R>,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
    tracker: TaskTracker,
) {
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
            let handler = handler.clone();
            let raft = raft.clone();
            let shutdown = shutdown.clone();
            let name = name.clone();
            conns.spawn(async move {
                let _ = stream.set_nodelay(true);
                match tokio::time::timeout(FIRST_BYTES_TIMEOUT, is_raft(&stream)).await {
                    Ok(Ok(Some(preamble))) => {
                        use tokio::io::AsyncReadExt;
                        let mut stream = stream;
                        let mut pre = [0u8; 4];
                        if stream.read_exact(&mut pre).await.is_ok() {
                            if preamble == josef_quorum::OBSERVER_PREAMBLE {
                                raft.serve_observer(stream);
                            } else {
                                raft.serve_raft(stream);
                            }
                        }
                    }
                    Ok(Ok(None)) => {
                        let ci = ConnectionInfo::new(name, bound_port, peer);
                        serve_connection(stream, ci, handler, limits, shutdown).await;
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
