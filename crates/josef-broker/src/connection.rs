//! One client connection: length-prefixed frames in, responses out, strictly one request at a time
//! (Kafka mutes a channel while its request is in flight, so responses leave in request order).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

/// What the connection knows about itself; handlers read it (e.g. the listener name for the
/// advertised address in Metadata).
#[derive(Debug, Clone)]
pub struct ConnectionInfo {
    /// Listener name the connection came in on.
    pub listener: String,
    /// The port that listener is bound to (its configured port may be 0).
    pub bound_port: u16,
    /// The client's address.
    pub peer: SocketAddr,
}

/// What to do after a request.
#[derive(Debug)]
pub enum Outcome {
    /// Send these bytes (a complete frame, length prefix included).
    Respond(BytesMut),
    /// The request has no response (Produce with acks=0).
    NoResponse,
    /// Close the connection without answering (malformed input, unknown API, acks=0 failure).
    Close(String),
}

/// Turns one request frame (without its length prefix) into an [`Outcome`].
pub trait FrameHandler: Send + Sync + 'static {
    /// Handles one request; the connection reads nothing more until this completes.
    fn handle(&self, conn: &ConnectionInfo, frame: Bytes) -> impl Future<Output = Outcome> + Send;
}

/// Connection limits.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// `socket.request.max.bytes`: a larger (or negative) size prefix closes the connection.
    pub max_request_bytes: i32,
    /// `connections.max.idle.ms`: no request for this long closes the connection (None = never).
    pub idle_timeout: Option<Duration>,
}

/// Serves one connection until the peer closes it, a frame is bad, it idles out, or `shutdown`
/// fires between requests (an in-flight request is always finished and answered first).
pub async fn serve_connection<H: FrameHandler>(
    stream: TcpStream,
    info: ConnectionInfo,
    handler: Arc<H>,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) {
    let _ = stream.set_nodelay(true);
    let (read_half, mut write_half) = stream.into_split();
    let mut reader = BufReader::with_capacity(64 * 1024, read_half);
    loop {
        let mut len = [0u8; 4];
        let read_len = async {
            match limits.idle_timeout {
                Some(d) => match tokio::time::timeout(d, reader.read_exact(&mut len)).await {
                    Ok(r) => r.map(|_| true),
                    Err(_) => Ok(false),
                },
                None => reader.read_exact(&mut len).await.map(|_| true),
            }
        };
        let got = tokio::select! {
            _ = shutdown.cancelled() => return,
            r = read_len => r,
        };
        match got {
            Ok(true) => {}
            Ok(false) => {
                tracing::debug!(peer = %info.peer, "closing idle connection");
                return;
            }
            Err(e) => {
                if e.kind() != std::io::ErrorKind::UnexpectedEof {
                    tracing::debug!(peer = %info.peer, error = %e, "connection read failed");
                }
                return;
            }
        }
        let size = i32::from_be_bytes(len);
        // Checked before any allocation: a hostile prefix must not size a buffer.
        if size < 0 || size > limits.max_request_bytes {
            tracing::warn!(peer = %info.peer, size, max = limits.max_request_bytes,
                "invalid request size, closing connection");
            return;
        }
        let mut body = BytesMut::zeroed(size as usize);
        let body_read = async {
            match limits.idle_timeout {
                Some(d) => tokio::time::timeout(d, reader.read_exact(&mut body))
                    .await
                    .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into())),
                None => reader.read_exact(&mut body).await,
            }
        };
        if let Err(e) = body_read.await {
            tracing::debug!(peer = %info.peer, error = %e, "connection closed mid-request");
            return;
        }
        match handler.handle(&info, body.freeze()).await {
            Outcome::Respond(bytes) => {
                if let Err(e) = write_half.write_all(&bytes).await {
                    tracing::debug!(peer = %info.peer, error = %e, "response write failed");
                    return;
                }
            }
            Outcome::NoResponse => {}
            Outcome::Close(reason) => {
                tracing::info!(peer = %info.peer, %reason, "closing connection");
                let _ = write_half.shutdown().await;
                return;
            }
        }
    }
}
