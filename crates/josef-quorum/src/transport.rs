//! The byte streams the quorum runs over. Raft and observer connections are this crate's own
//! protocol, opened by a preamble; a caller that wants them inside TLS (or any other wrapping)
//! gives the quorum a [`StreamConnector`] that dials and wraps, and hands accepted, already
//! unwrapped streams to [`crate::MetadataQuorum::serve_stream`] /
//! [`crate::MetadataQuorum::serve_observer_stream`]. The default is plain TCP.

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// What a quorum connection can run over.
pub trait QuorumIo: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static> QuorumIo for T {}

/// An open connection to or from a peer.
pub type QuorumStream = Box<dyn QuorumIo>;

/// The future of [`StreamConnector::connect`].
pub type ConnectFuture<'a> = Pin<Box<dyn Future<Output = io::Result<QuorumStream>> + Send + 'a>>;

/// Opens connections to voters (`host:port` from `controller.quorum.voters`). The quorum writes
/// its preamble on what this returns, so a wrapper must finish its own handshake first.
pub trait StreamConnector: Send + Sync + fmt::Debug + 'static {
    /// Connects to `addr`. The caller bounds the time it takes.
    fn connect<'a>(&'a self, addr: &'a str) -> ConnectFuture<'a>;
}

/// Plain TCP with Nagle off: the default.
#[derive(Debug, Clone, Copy, Default)]
pub struct TcpConnector;

impl StreamConnector for TcpConnector {
    fn connect<'a>(&'a self, addr: &'a str) -> ConnectFuture<'a> {
        Box::pin(async move {
            let s = TcpStream::connect(addr).await?;
            let _ = s.set_nodelay(true);
            Ok(Box::new(s) as QuorumStream)
        })
    }
}

/// The peer address of an accepted TCP stream, for the logs.
pub(crate) fn peer_of(s: &TcpStream) -> String {
    s.peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "?".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn the_tcp_connector_gives_a_working_stream() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let (mut c, accepted) = tokio::join!(TcpConnector.connect(&addr), l.accept());
        let (mut s, _) = accepted.unwrap();
        let c = c.as_mut().unwrap();
        c.write_all(b"ping").await.unwrap();
        let mut buf = [0u8; 4];
        s.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"ping");
        assert!(TcpConnector.connect("127.0.0.1:1").await.is_err());
    }
}
