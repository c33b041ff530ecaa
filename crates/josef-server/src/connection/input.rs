//! The connection's read buffer, and how much of it a connection keeps while it waits.
//!
//! Most connections of a broker wait most of the time (idle consumers between fetches, producers
//! between batches, clients that connected and sent nothing), so what a waiting connection holds
//! is memory per connection. A read with nothing buffered is first tried with a whole
//! [`READ_CHUNK`]: when the client's bytes are already there (a busy or pipelining client) they go
//! straight into it, as before. When nothing is there yet, the chunk is given back and the wait
//! reads into a buffer the size of the client's last request (at least [`WAIT_MIN`]): a client
//! that sends requests of one size one at a time still gets each in one `recv`, and one that
//! connected and sent nothing holds [`WAIT_MIN`] bytes. On TLS the wait buffer also has room for
//! the records around that much plaintext ([`josef_tls::ServerStream::wait_room`]), so that the
//! read ending the wait takes a large request's first record whole instead of cutting it.
//!
//! A TLS stream reads its records straight into this buffer and decrypts them there
//! ([`josef_tls::ServerStream::read_into`]): a request's plaintext is never copied.

use std::pin::pin;
use std::task::Poll;

use bytes::BytesMut;
use tokio::io::AsyncReadExt;

use super::{reserve_for_next, Transport, READ_CHUNK};

/// The smallest buffer a waiting connection reads into: most requests of consumers and of
/// group members (Fetch, Heartbeat, OffsetCommit, Metadata) fit.
pub(super) const WAIT_MIN: usize = 512;

/// Bytes read from the client and not yet split into frames.
#[derive(Debug, Default)]
pub(super) struct Input {
    /// The bytes.
    pub(super) buf: BytesMut,
    /// Size (prefix included) of the last complete request: how much the next one likely needs.
    last_request: usize,
}

impl Input {
    /// Notes a complete request of `size` bytes (prefix included) split off the buffer.
    pub(super) fn request_seen(&mut self, size: usize) {
        self.last_request = size;
    }

    /// Bytes of the buffered request still to come: what the client is sure to send next (its
    /// size prefix was checked by `next_frame` before the connection reads again).
    fn rest_of_frame(&self) -> usize {
        match self.buf.get(..4) {
            Some(p) => {
                let size = i32::from_be_bytes([p[0], p[1], p[2], p[3]]).max(0) as usize;
                (4 + size).saturating_sub(self.buf.len())
            }
            None => 0,
        }
    }

    /// The bytes to wait with when nothing is buffered.
    fn wait_size(&self) -> usize {
        self.last_request.clamp(WAIT_MIN, READ_CHUNK)
    }

    /// Reads what the client sends next; `Ok(0)` is the end of the stream. Cancel safe: bytes
    /// read before a cancellation are in the buffer.
    pub(super) async fn read_from<S: Transport>(
        &mut self,
        stream: &mut S,
    ) -> std::io::Result<usize> {
        /// Buffer room a read of so many bytes of the stream's data needs.
        type Room = fn(usize) -> usize;
        let (room, wait_room): (Room, Room) = match tls_stream(stream) {
            Some(tls) => {
                // The TLS stream may then wait for that much before it wakes the connection.
                tls.expect(self.rest_of_frame());
                (
                    josef_tls::ServerStream::<tokio::net::TcpStream>::room_for,
                    josef_tls::ServerStream::<tokio::net::TcpStream>::wait_room,
                )
            }
            None => (std::convert::identity, std::convert::identity),
        };
        reserve_for_next(&mut self.buf, room);
        if !self.buf.is_empty() {
            return read_some(stream, &mut self.buf).await;
        }
        {
            let mut read = pin!(read_some(stream, &mut self.buf));
            if let Poll::Ready(r) = futures::poll!(read.as_mut()) {
                return r;
            }
        }
        // A `Pending` read left the buffer as it was: empty.
        // On TLS, room for the records that carry it: the read that ends the wait then takes the
        // request's first record whole.
        self.buf = BytesMut::with_capacity(wait_room(self.wait_size()));
        read_some(stream, &mut self.buf).await
    }
}

/// The stream as a TLS stream of the broker's listeners, if it is one.
fn tls_stream<S: Transport>(
    stream: &mut S,
) -> Option<&mut josef_tls::ServerStream<tokio::net::TcpStream>> {
    (stream as &mut dyn std::any::Any)
        .downcast_mut::<josef_tls::ServerStream<tokio::net::TcpStream>>()
}

/// Reads onto the end of `buf`: a TLS stream decrypts its records there.
async fn read_some<S: Transport>(stream: &mut S, buf: &mut BytesMut) -> std::io::Result<usize> {
    match tls_stream(stream) {
        Some(tls) => tls.read_into(buf).await,
        None => stream.read_buf(buf).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn a_connection_waiting_with_nothing_buffered_holds_no_read_chunk() {
        let (mut client, mut server) = tokio::io::duplex(64 * 1024);
        let mut input = Input::default();
        // Cancelled while waiting, as the connection's `select!` does when its idle timer fires.
        {
            let mut read = pin!(input.read_from(&mut server));
            assert!(futures::poll!(read.as_mut()).is_pending());
        }
        assert!(input.buf.is_empty());
        assert!(
            input.buf.capacity() < READ_CHUNK / 4,
            "a waiting connection holds {} bytes",
            input.buf.capacity()
        );
        // What arrives during a wait is read.
        {
            let mut read = pin!(input.read_from(&mut server));
            assert!(futures::poll!(read.as_mut()).is_pending());
            client.write_all(b"abc").await.unwrap();
            assert_eq!(read.await.unwrap(), 3);
        }
        assert_eq!(&input.buf[..], b"abc");
    }

    #[test]
    fn the_rest_of_a_request_is_what_its_size_prefix_says_is_missing() {
        let mut input = Input::default();
        assert_eq!(input.rest_of_frame(), 0);
        input.buf.extend_from_slice(&[0, 0]);
        assert_eq!(input.rest_of_frame(), 0);
        input.buf.extend_from_slice(&[1, 0, 9, 9, 9]);
        assert_eq!(input.rest_of_frame(), 256 - 3);
        input.buf.clear();
        input.buf.extend_from_slice(&(-5i32).to_be_bytes());
        assert_eq!(input.rest_of_frame(), 0);
    }

    #[tokio::test]
    async fn bytes_already_there_are_read_into_a_whole_chunk() {
        let (mut client, mut server) = tokio::io::duplex(64 * 1024);
        client.write_all(&[7u8; 10_000]).await.unwrap();
        let mut input = Input::default();
        assert_eq!(input.read_from(&mut server).await.unwrap(), 10_000);
        assert!(input.buf.capacity() >= READ_CHUNK);
    }

    #[tokio::test]
    async fn a_request_as_large_as_the_last_one_is_read_whole_after_a_wait() {
        let (mut client, mut server) = tokio::io::duplex(64 * 1024);
        let mut input = Input::default();
        input.request_seen(3000);
        {
            let mut read = pin!(input.read_from(&mut server));
            assert!(futures::poll!(read.as_mut()).is_pending());
            client.write_all(&[1u8; 3000]).await.unwrap();
            assert_eq!(read.await.unwrap(), 3000);
        }
        assert!(input.buf.capacity() < READ_CHUNK);
    }

    /// A TLS connection over TCP: the broker's stream type, and a rustls client.
    async fn tls_pair() -> (
        tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
        josef_tls::ServerStream<tokio::net::TcpStream>,
    ) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let mut props = josef_config::settings::Props::new(std::collections::BTreeMap::from([
            ("ssl.keystore.type".to_string(), "PEM".to_string()),
            (
                "listener.name.ssl.ssl.keystore.certificate.chain".to_string(),
                cert.pem(),
            ),
            (
                "listener.name.ssl.ssl.keystore.key".to_string(),
                key.serialize_pem(),
            ),
        ]));
        let settings = josef_tls::SslSettings::from_props(
            &mut props,
            "SSL",
            josef_config::listener::SecurityProtocol::Ssl,
        )
        .unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert.der().clone()).unwrap();
        let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
        let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
        let listener = josef_tls::TlsListener::new(&settings).unwrap();
        let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = tcp.local_addr().unwrap();
        let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
        let (client, server) = tokio::join!(
            async {
                let s = tokio::net::TcpStream::connect(addr).await.unwrap();
                connector.connect(name, s).await.unwrap()
            },
            async {
                listener
                    .accept(tcp.accept().await.unwrap().0)
                    .await
                    .unwrap()
                    .0
            }
        );
        (client, server)
    }

    #[tokio::test]
    async fn after_a_wait_a_tls_requests_first_record_is_read_whole() {
        let (mut client, mut server) = tls_pair().await;
        let mut input = Input::default();
        // The last request was large: the connection waits with a buffer for a full record's
        // plaintext (16 KiB).
        input.request_seen(1_000_000);
        let body = vec![7u8; 100_000];
        let mut frame = (body.len() as i32).to_be_bytes().to_vec();
        frame.extend_from_slice(&body);
        let first = {
            let mut read = pin!(input.read_from(&mut server));
            assert!(futures::poll!(read.as_mut()).is_pending());
            // Full 16 KiB records, all sent before the read.
            client.write_all(&frame).await.unwrap();
            client.flush().await.unwrap();
            read.await.unwrap()
        };
        // The read that ended the wait delivered the first record: none of it was cut off,
        // copied out and read again (16,384 bytes copied and nothing delivered by that read
        // before, when the buffer held the plaintext but not the record around it).
        assert!(first >= 16 * 1024, "{first} bytes delivered");
        let copied = server.bytes_copied();
        assert!(copied < 1024, "{copied} bytes copied");
        while input.buf.len() < frame.len() {
            assert!(input.read_from(&mut server).await.unwrap() > 0);
        }
        assert!(input.buf[..] == frame[..]);
    }

    #[tokio::test]
    async fn a_tls_request_sent_in_small_writes_is_read_in_few_socket_reads() {
        let (mut client, mut server) = tls_pair().await;
        let body = vec![3u8; 1_000_000];
        let mut frame = (body.len() as i32).to_be_bytes().to_vec();
        frame.extend_from_slice(&body);
        // One 16 KiB record per write with a pause after each, as an OpenSSL client encrypts and
        // writes while the broker could read.
        let writer = tokio::spawn(async move {
            for piece in frame.chunks(16 * 1024) {
                client.write_all(piece).await.unwrap();
                client.flush().await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
            client
        });
        let mut input = Input::default();
        while input.buf.len() < 4 + body.len() {
            assert!(input.read_from(&mut server).await.unwrap() > 0);
        }
        let _client = writer.await.unwrap();
        // Once the size prefix is known the kernel is asked to wake the connection only when the
        // rest of the request is there (SO_RCVLOWAT), up to 1 MiB; it still wakes it early
        // whenever the receive window fills. 6 socket reads here with the 1 MiB cap, 9 with the
        // 256 KiB cap before it.
        let reads = server.socket_reads();
        assert!(reads <= 7, "{reads} socket reads");
    }

    #[tokio::test]
    async fn a_tls_request_is_decrypted_in_the_connections_buffer_not_copied_into_it() {
        let (mut client, mut server) = tls_pair().await;
        let body: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
        let mut frame = (body.len() as i32).to_be_bytes().to_vec();
        frame.extend_from_slice(&body);
        let writer = tokio::spawn(async move {
            client.write_all(&frame).await.unwrap();
            client.flush().await.unwrap();
            client
        });
        let mut input = Input::default();
        while input.buf.len() < 4 + body.len() {
            assert!(input.read_from(&mut server).await.unwrap() > 0);
        }
        assert!(input.buf[4..] == body[..]);
        let _client = writer.await.unwrap();
        // Read through `AsyncRead` every byte would be copied once after decryption; here only
        // the records socket reads cut in two are.
        let copied = server.bytes_copied();
        assert!(copied < body.len() as u64 / 4, "{copied} bytes copied");
    }
}
