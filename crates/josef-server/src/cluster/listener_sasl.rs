//! The SASL exchange that opens every connection of a SASL_PLAINTEXT or SASL_SSL controller
//! listener, before the metadata quorum's preamble or any controller API: Kafka's
//! SaslHandshake / SaslAuthenticate frames answered by the same gate as the client listeners'
//! ([`SaslConnection`]), ApiVersions allowed before it, anything else closing the connection.
//! A quorum preamble before authentication is refused: the quorum's own protocol carries no
//! login, so the only proof a Raft or observer peer gives is this exchange.
//!
//! Frames are read one at a time with exact reads, never ahead: the bytes that follow the login
//! (a preamble, or the first Kafka request) stay in the stream for whoever serves it next.

use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use crate::connection::{ConnectionInfo, FrameHandler, Outcome, Transport};
use crate::sasl_session::{Gate, SaslConnection};

/// How long each read of the exchange may wait: a peer that stalls mid-login holds only its own
/// connection, and not for long.
pub(super) const LOGIN_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a connection ended before it authenticated.
#[derive(Debug, thiserror::Error)]
pub(super) enum LoginEnd {
    /// The peer closed, stalled or the read failed.
    #[error("connection lost during the SASL exchange: {0}")]
    Io(String),
    /// The quorum's preamble arrived before authentication.
    #[error("a metadata quorum connection did not authenticate first")]
    UnauthenticatedQuorum,
    /// A size prefix that is negative or over the bound before authentication.
    #[error("invalid request size {0} before authentication")]
    Size(i32),
    /// The gate (or the handler) closed it: a failed login, a request not allowed before it.
    #[error("{0}")]
    Closed(String),
    /// The node is shutting down.
    #[error("shutting down")]
    Shutdown,
}

/// Reads exactly `buf.len()` bytes, bounded by `timeout` (`None`: only by `shutdown`).
async fn read_exact<S: Transport>(
    stream: &mut S,
    buf: &mut [u8],
    timeout: Option<Duration>,
    shutdown: &CancellationToken,
) -> Result<(), LoginEnd> {
    let read = async {
        match timeout {
            Some(t) => match tokio::time::timeout(t, stream.read_exact(buf)).await {
                Ok(r) => r.map(|_| ()),
                Err(_) => Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("nothing for {t:?}"),
                )),
            },
            None => stream.read_exact(buf).await.map(|_| ()),
        }
    };
    tokio::select! {
        r = read => r.map_err(|e| LoginEnd::Io(e.to_string())),
        _ = shutdown.cancelled() => Err(LoginEnd::Shutdown),
    }
}

fn is_preamble(head: [u8; 4]) -> bool {
    head == josef_quorum::RAFT_PREAMBLE || head == josef_quorum::OBSERVER_PREAMBLE
}

/// Runs the SASL exchange on `stream` until it authenticates, answering ApiVersions through
/// `handler`; then returns the next four bytes, a quorum preamble or the size of the first
/// Kafka request (which the caller replays). `info.principal` is the SASL identity by then.
/// On a failed login the answer goes out and the close waits the listener's
/// `connection.failed.authentication.delay.ms`, as on the client listeners.
pub(super) async fn authenticate<S: Transport, H: FrameHandler>(
    stream: &mut S,
    info: &mut ConnectionInfo,
    sasl: &mut SaslConnection,
    handler: &H,
    max_request_bytes: i32,
    shutdown: &CancellationToken,
) -> Result<[u8; 4], LoginEnd> {
    loop {
        let authenticated = sasl.is_authenticated();
        let mut head = [0u8; 4];
        // Once authenticated the peer may take its time: it proved who it is.
        let timeout = (!authenticated).then_some(LOGIN_READ_TIMEOUT);
        read_exact(stream, &mut head, timeout, shutdown).await?;
        if authenticated {
            return Ok(head);
        }
        if is_preamble(head) {
            return Err(LoginEnd::UnauthenticatedQuorum);
        }
        let size = i32::from_be_bytes(head);
        let max = sasl.max_receive_size().map_or(max_request_bytes, |m| {
            max_request_bytes.min(i32::try_from(m).unwrap_or(i32::MAX))
        });
        if size < 0 || size > max {
            return Err(LoginEnd::Size(size));
        }
        let mut frame = vec![0u8; size as usize];
        read_exact(stream, &mut frame, timeout, shutdown).await?;
        let frame = Bytes::from(frame);
        let outcome = match sasl.on_frame(info, &frame) {
            Gate::Answer(o) => o,
            // Before authentication the gate lets only ApiVersions through.
            Gate::Handle => handler.handle(info, frame).await,
        };
        let io = |e: std::io::Error| LoginEnd::Io(e.to_string());
        match outcome {
            Outcome::Respond(mut frame) => {
                stream.write_all_buf(&mut frame).await.map_err(io)?;
                stream.flush().await.map_err(io)?;
            }
            Outcome::Throttled {
                response: Some(mut frame),
                ..
            } => {
                stream.write_all_buf(&mut frame).await.map_err(io)?;
                stream.flush().await.map_err(io)?;
            }
            Outcome::NoResponse | Outcome::Throttled { response: None, .. } => {}
            Outcome::Close(reason) => return Err(LoginEnd::Closed(reason)),
            Outcome::RespondAndClose {
                mut frame,
                reason,
                delay,
            } => {
                let _ = stream.write_all_buf(&mut frame).await;
                let _ = stream.flush().await;
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = shutdown.cancelled() => {}
                }
                let _ = stream.shutdown().await;
                return Err(LoginEnd::Closed(reason));
            }
        }
    }
}
