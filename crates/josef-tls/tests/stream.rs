//! The accepted TLS stream against a rustls client: large requests both ways on TLS 1.2 and 1.3,
//! reads of any size, KeyUpdate, close_notify, bad records after the handshake, and how often a
//! large request reads the socket; and the same through `read_into`, which decrypts in the
//! reader's buffer.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

mod common;

use common::self_signed;
use josef_tls::{ServerStream, TlsListener};
use rustls::RootCertStore;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream, ReadBuf};
use tokio_rustls::client::TlsStream as ClientStream;

/// A stream that counts the reads that returned bytes.
struct Counting {
    inner: DuplexStream,
    reads: Arc<AtomicUsize>,
}

impl AsyncRead for Counting {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.reads.fetch_add(1, Ordering::Relaxed);
        }
        r
    }
}

impl AsyncWrite for Counting {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

struct Pair {
    client: ClientStream<DuplexStream>,
    server: ServerStream<Counting>,
    server_reads: Arc<AtomicUsize>,
}

/// A listener with a fresh self-signed certificate for `localhost`, and a client that trusts it
/// and speaks only `version`.
fn listener_and_client(
    version: &'static rustls::SupportedProtocolVersion,
) -> (TlsListener, tokio_rustls::TlsConnector) {
    listener_and_client_with(version, rustls::crypto::ring::default_provider())
}

/// As [`listener_and_client`], the client offering only what `provider` has.
fn listener_and_client_with(
    version: &'static rustls::SupportedProtocolVersion,
    provider: rustls::crypto::CryptoProvider,
) -> (TlsListener, tokio_rustls::TlsConnector) {
    let (cert, settings) = self_signed();
    let mut roots = RootCertStore::empty();
    roots.add(cert).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[version])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    (
        TlsListener::new(&settings).unwrap(),
        tokio_rustls::TlsConnector::from(Arc::new(config)),
    )
}

/// A handshake over a pipe of `pipe` bytes, the client limited to `version`.
async fn pair(version: &'static rustls::SupportedProtocolVersion, pipe: usize) -> Pair {
    let (listener, connector) = listener_and_client(version);
    let (a, b) = tokio::io::duplex(pipe);
    let reads = Arc::new(AtomicUsize::new(0));
    let b = Counting {
        inner: b,
        reads: reads.clone(),
    };
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let (client, server) = tokio::join!(connector.connect(name, a), listener.accept(b));
    let (server, _) = server.unwrap();
    reads.store(0, Ordering::Relaxed);
    Pair {
        client: client.unwrap(),
        server,
        server_reads: reads,
    }
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
}

/// The client writes a request of `len` bytes while the server reads it: it must arrive intact.
async fn request_arrives_intact<S: AsyncRead + AsyncWrite + Unpin + 'static>(
    client: ClientStream<DuplexStream>,
    server: &mut ServerStream<S>,
    len: usize,
) -> ClientStream<DuplexStream> {
    request_arrives_intact_via(client, server, len, false).await
}

/// As [`request_arrives_intact`]; with `read_into` the server reads with
/// [`ServerStream::read_into`] into a buffer given the room [`ServerStream::room_for`] asks (as
/// the connection does).
async fn request_arrives_intact_via<S: AsyncRead + AsyncWrite + Unpin + 'static>(
    mut client: ClientStream<DuplexStream>,
    server: &mut ServerStream<S>,
    len: usize,
    read_into: bool,
) -> ClientStream<DuplexStream> {
    let request = pattern(len);
    let sent = request.clone();
    let writer = tokio::spawn(async move {
        client.write_all(&sent).await.unwrap();
        client.flush().await.unwrap();
        client
    });
    let got = if read_into {
        let mut buf = bytes::BytesMut::with_capacity(ServerStream::<S>::room_for(len));
        while buf.len() < len {
            let n = server.read_into(&mut buf).await.unwrap();
            assert!(n > 0, "end of stream after {} bytes", buf.len());
        }
        buf.to_vec()
    } else {
        let mut got = vec![0u8; len];
        server.read_exact(&mut got).await.unwrap();
        got
    };
    assert!(got == request, "request differs");
    writer.await.unwrap()
}

#[tokio::test]
async fn a_large_request_and_a_large_vectored_response_cross_intact_on_tls12_and_tls13() {
    for version in [&rustls::version::TLS12, &rustls::version::TLS13] {
        let Pair {
            client, mut server, ..
        } = pair(version, 64 * 1024).await;
        let mut client = request_arrives_intact(client, &mut server, 1_000_003).await;
        // A response as the connection writes it: a small header, then record data, vectored.
        let body = pattern(300_001);
        let header = [0u8, 4, 147, 226, 9, 9, 9];
        let mut frames = bytes::Bytes::from(header.to_vec())
            .chain(bytes::Bytes::from(body.clone()))
            .chain(bytes::Bytes::from_static(b"tail"));
        let reader = tokio::spawn(async move {
            let mut all = vec![0u8; 7 + 300_001 + 4];
            client.read_exact(&mut all).await.unwrap();
            all
        });
        server.write_all_buf(&mut frames).await.unwrap();
        server.flush().await.unwrap();
        let all = reader.await.unwrap();
        assert_eq!(all[..7], header, "{version:?}");
        assert!(
            all[7..7 + body.len()] == body[..],
            "{version:?}: body differs"
        );
        assert_eq!(&all[7 + body.len()..], b"tail");
    }
}

use bytes::Buf;

/// Every TLS 1.3 and TLS 1.2 suite of rustls's ring provider (ECDSA certificates), with its version.
fn every_ring_suite() -> [(
    &'static rustls::SupportedProtocolVersion,
    rustls::SupportedCipherSuite,
); 6] {
    use rustls::crypto::ring::cipher_suite as cs;
    [
        (&rustls::version::TLS13, cs::TLS13_AES_128_GCM_SHA256),
        (&rustls::version::TLS13, cs::TLS13_AES_256_GCM_SHA384),
        (&rustls::version::TLS13, cs::TLS13_CHACHA20_POLY1305_SHA256),
        (
            &rustls::version::TLS12,
            cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        ),
        (
            &rustls::version::TLS12,
            cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        ),
        (
            &rustls::version::TLS12,
            cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        ),
    ]
}

/// A handshake on `suite` over a pipe of `pipe` bytes.
async fn suite_pair(
    version: &'static rustls::SupportedProtocolVersion,
    suite: rustls::SupportedCipherSuite,
    pipe: usize,
) -> (ClientStream<DuplexStream>, ServerStream<DuplexStream>) {
    let mut provider = rustls::crypto::ring::default_provider();
    provider.cipher_suites = vec![suite];
    let (listener, connector) = listener_and_client_with(version, provider);
    let (a, b) = tokio::io::duplex(pipe);
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let (client, server) = tokio::join!(connector.connect(name, a), listener.accept(b));
    (client.unwrap(), server.unwrap().0)
}

#[tokio::test]
async fn every_suite_carries_data_both_ways_through_the_streams_record_layer() {
    for (version, suite) in every_ring_suite() {
        let (client, mut server) = suite_pair(version, suite, 64 * 1024).await;
        assert_eq!(server.negotiated_cipher_suite(), Some(suite));
        let mut client = request_arrives_intact(client, &mut server, 100_003).await;
        let response = pattern(50_001);
        server.write_all(&response).await.unwrap();
        server.shutdown().await.unwrap();
        let mut back = Vec::new();
        client.read_to_end(&mut back).await.unwrap();
        assert!(back == response, "{suite:?}: response differs");
    }
}

#[tokio::test]
async fn a_large_request_is_read_in_few_socket_reads() {
    // The whole request is in the pipe before the server reads: rustls's buffered stream reads
    // it 4 KiB at a time (over 250 reads for 1 MB); this stream asks for what the reader wants.
    let Pair {
        mut client,
        mut server,
        server_reads,
    } = pair(&rustls::version::TLS13, 4 * 1024 * 1024).await;
    let request = pattern(1 << 20);
    client.write_all(&request).await.unwrap();
    client.flush().await.unwrap();
    let mut got = vec![0u8; request.len()];
    server.read_exact(&mut got).await.unwrap();
    assert!(got == request);
    let reads = server_reads.load(Ordering::Relaxed);
    assert!(reads <= 4, "{reads} socket reads for 1 MiB");
}

#[tokio::test]
async fn reads_of_one_byte_get_every_byte_in_order() {
    let Pair {
        mut client,
        mut server,
        ..
    } = pair(&rustls::version::TLS13, 64 * 1024).await;
    let request = pattern(40_000);
    client.write_all(&request).await.unwrap();
    client.flush().await.unwrap();
    let mut got = Vec::new();
    while got.len() < request.len() {
        got.push(server.read_u8().await.unwrap());
    }
    assert!(got == request);
}

#[tokio::test]
async fn a_key_update_from_the_client_is_followed_both_ways() {
    let Pair {
        mut client,
        mut server,
        ..
    } = pair(&rustls::version::TLS13, 64 * 1024).await;
    for round in 0..3u8 {
        // The client asks for new keys both ways (update_requested); the server answers with
        // its own KeyUpdate before its next record.
        client.get_mut().1.refresh_traffic_keys().unwrap();
        client.write_all(&[b'p', round]).await.unwrap();
        client.flush().await.unwrap();
        let mut got = [0u8; 2];
        server.read_exact(&mut got).await.unwrap();
        assert_eq!(got, [b'p', round]);
        server.write_all(&[b'q', round]).await.unwrap();
        server.flush().await.unwrap();
        client.read_exact(&mut got).await.unwrap();
        assert_eq!(got, [b'q', round]);
    }
}

#[tokio::test]
async fn close_notify_ends_the_stream_both_ways() {
    let Pair {
        mut client,
        mut server,
        ..
    } = pair(&rustls::version::TLS13, 64 * 1024).await;
    client.write_all(b"last").await.unwrap();
    client.shutdown().await.unwrap();
    let mut got = Vec::new();
    server.read_to_end(&mut got).await.unwrap();
    assert_eq!(got, b"last");
    // The server's close_notify: the client sees a clean end, not a truncation error.
    server.write_all(b"bye").await.unwrap();
    server.shutdown().await.unwrap();
    let mut got = Vec::new();
    client.read_to_end(&mut got).await.unwrap();
    assert_eq!(got, b"bye");
}

#[tokio::test]
async fn garbage_after_the_handshake_is_a_read_error() {
    let Pair {
        client, mut server, ..
    } = pair(&rustls::version::TLS13, 64 * 1024).await;
    let (mut raw, _) = client.into_inner();
    // An application-data record header, then bytes that do not authenticate.
    let mut record = vec![23u8, 3, 3, 0, 200];
    record.extend(std::iter::repeat(0xAB).take(200));
    raw.write_all(&record).await.unwrap();
    let mut buf = [0u8; 16];
    assert!(server.read(&mut buf).await.is_err());
    // A header announcing more than a record may hold: refused, not waited for or allocated.
    let Pair {
        client, mut server, ..
    } = pair(&rustls::version::TLS13, 64 * 1024).await;
    let (mut raw, _) = client.into_inner();
    raw.write_all(&[23u8, 3, 3, 0xFF, 0xFF, 1, 2, 3])
        .await
        .unwrap();
    assert!(server.read(&mut buf).await.is_err());
}

#[tokio::test]
async fn a_stream_closed_mid_record_is_an_error_and_a_clean_close_is_the_end() {
    let Pair {
        client, mut server, ..
    } = pair(&rustls::version::TLS13, 64 * 1024).await;
    let (mut raw, _) = client.into_inner();
    raw.write_all(&[23u8, 3, 3, 0, 100, 1, 2]).await.unwrap();
    drop(raw);
    let mut buf = [0u8; 16];
    assert!(server.read(&mut buf).await.is_err());
    let Pair {
        client, mut server, ..
    } = pair(&rustls::version::TLS13, 64 * 1024).await;
    drop(client);
    assert_eq!(server.read(&mut buf).await.unwrap(), 0);
}

/// SO_RCVLOWAT of a socket.
fn rcvlowat(fd: std::os::fd::RawFd) -> usize {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: a valid socket and an option buffer of the right size.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVLOWAT,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    assert_eq!(r, 0);
    v as usize
}

#[tokio::test]
async fn over_tcp_a_read_waits_for_the_expected_bytes_then_for_any_byte_again() {
    use std::os::fd::AsRawFd;
    let (listener, connector) = listener_and_client(&rustls::version::TLS13);
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let (client, server) = tokio::join!(
        async {
            connector
                .connect(name, tokio::net::TcpStream::connect(addr).await.unwrap())
                .await
        },
        async { listener.accept(tcp.accept().await.unwrap().0).await }
    );
    let (mut client, mut server) = (client.unwrap(), server.unwrap().0);
    let fd = server.get_ref().as_raw_fd();
    let total = 1_500_000;
    let mut buf = vec![0u8; total];
    server.expect(total);
    {
        // Nothing sent yet: the read waits, and the kernel is told to wake it for 1 MiB (the
        // cap: the rest of a librdkafka default-size request in one wake-up).
        let mut read = std::pin::pin!(server.read(&mut buf));
        let pending =
            std::future::poll_fn(|cx| Poll::Ready(read.as_mut().poll(cx).is_pending())).await;
        assert!(pending);
    }
    assert_eq!(rcvlowat(fd), 1024 * 1024);
    let request = pattern(total);
    let sent = request.clone();
    let writer = tokio::spawn(async move {
        for piece in sent.chunks(16 * 1024) {
            client.write_all(piece).await.unwrap();
            client.flush().await.unwrap();
        }
        client
    });
    let mut got = 0;
    while got < total {
        server.expect(total - got);
        let n = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            server.read(&mut buf[got..]),
        )
        .await
        .expect("the read waited for more than the client sends")
        .unwrap();
        assert!(n > 0);
        got += n;
    }
    assert!(buf == request);
    // Nothing certain any more: a small request wakes the reader at once.
    let mut client = writer.await.unwrap();
    client.write_all(b"small").await.unwrap();
    client.flush().await.unwrap();
    server.expect(0);
    let mut small = [0u8; 5];
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        server.read_exact(&mut small),
    )
    .await
    .expect("a small request waited")
    .unwrap();
    assert_eq!(&small, b"small");
    assert_eq!(rcvlowat(fd), 1);
}

#[tokio::test]
async fn read_into_decrypts_a_request_in_the_readers_buffer_without_copying_it() {
    for version in [&rustls::version::TLS13, &rustls::version::TLS12] {
        // The whole request is in the pipe before the server reads (as a fast client's request
        // is in the socket when SO_RCVLOWAT wakes the broker).
        let Pair {
            mut client,
            mut server,
            server_reads,
        } = pair(version, 4 * 1024 * 1024).await;
        let len = 1 << 20;
        let request = pattern(len);
        client.write_all(&request).await.unwrap();
        client.flush().await.unwrap();
        let mut buf = bytes::BytesMut::with_capacity(ServerStream::<Counting>::room_for(len));
        while buf.len() < len {
            assert!(server.read_into(&mut buf).await.unwrap() > 0);
        }
        assert!(buf[..] == request[..]);
        // Through `AsyncRead` every plaintext byte is copied once after decryption; here only a
        // record a socket read cut in two is (its front, twice: out of and back into the buffer).
        let reads = server_reads.load(Ordering::Relaxed) as u64;
        let copied = server.bytes_copied();
        assert!(
            copied <= reads * 2 * (16 * 1024 + 256),
            "{copied} bytes copied in {reads} reads on {version:?}"
        );
        assert!(
            copied < len as u64 / 8,
            "{copied} bytes copied on {version:?}"
        );
    }
}

#[tokio::test]
async fn through_async_read_every_plaintext_byte_is_copied_once() {
    // What `bytes_copied` counts, against which the test above compares.
    let Pair {
        mut client,
        mut server,
        ..
    } = pair(&rustls::version::TLS13, 4 * 1024 * 1024).await;
    let request = pattern(100_000);
    client.write_all(&request).await.unwrap();
    client.flush().await.unwrap();
    let mut got = vec![0u8; request.len()];
    server.read_exact(&mut got).await.unwrap();
    assert_eq!(server.bytes_copied(), request.len() as u64);
}

#[tokio::test]
async fn read_into_gets_records_cut_anywhere_by_small_reads_on_every_suite() {
    for (version, suite) in every_ring_suite() {
        // A pipe smaller than a record: reads cut records at changing places.
        let (client, mut server) = suite_pair(version, suite, 5_000).await;
        let mut client = request_arrives_intact_via(client, &mut server, 300_007, true).await;
        // Then small requests, one record each, and the end of the stream.
        for round in 0..3u8 {
            client.write_all(&[b'r', round]).await.unwrap();
            client.flush().await.unwrap();
            let mut buf = bytes::BytesMut::new();
            server.read_into(&mut buf).await.unwrap();
            assert_eq!(&buf[..], &[b'r', round], "{suite:?}");
        }
        client.shutdown().await.unwrap();
        let mut buf = bytes::BytesMut::new();
        assert_eq!(server.read_into(&mut buf).await.unwrap(), 0, "{suite:?}");
    }
}

#[tokio::test]
async fn read_into_follows_key_updates_and_takes_over_from_async_read() {
    let p = pair(&rustls::version::TLS13, 64 * 1024).await;
    let (mut client, mut server) = (p.client, p.server);
    // Two records, the first read partly through `AsyncRead`: the rest comes through `read_into`.
    let first_request = pattern(20_000);
    client.write_all(&first_request).await.unwrap();
    client.flush().await.unwrap();
    let mut first = [0u8; 100];
    server.read_exact(&mut first).await.unwrap();
    let mut buf = bytes::BytesMut::from(&first[..]);
    while buf.len() < first_request.len() {
        server.read_into(&mut buf).await.unwrap();
    }
    assert!(buf[..] == first_request[..]);
    for round in 0..3u8 {
        client.get_mut().1.refresh_traffic_keys().unwrap();
        client =
            request_arrives_intact_via(client, &mut server, 40_000 + round as usize, true).await;
        // The server answered the KeyUpdate with its own before this record.
        server.write_all(&[b'q', round]).await.unwrap();
        server.flush().await.unwrap();
        let mut got = [0u8; 2];
        client.read_exact(&mut got).await.unwrap();
        assert_eq!(got, [b'q', round]);
    }
}

#[tokio::test]
async fn read_into_refuses_garbage_and_a_stream_closed_mid_record() {
    let bad: [&[u8]; 4] = [
        // A record that does not authenticate.
        &[[23u8, 3, 3, 0, 40].as_slice(), &[0xAB; 40]].concat(),
        // A header announcing more than a record may hold.
        &[23u8, 3, 3, 0xFF, 0xFF, 1, 2, 3],
        // Not TLS at all.
        b"GET / HTTP/1.1\r\n\r\n",
        // A record cut off by the end of the stream.
        &[23u8, 3, 3, 0, 100, 1, 2],
    ];
    for bytes in bad {
        let p = pair(&rustls::version::TLS13, 64 * 1024).await;
        let (mut raw, _) = p.client.into_inner();
        let mut server = p.server;
        raw.write_all(bytes).await.unwrap();
        drop(raw);
        let mut buf = bytes::BytesMut::new();
        assert!(server.read_into(&mut buf).await.is_err(), "{bytes:?}");
        assert!(buf.is_empty());
    }
}
