//! Josef's TLS record layer (`josef_tls::ServerStream` after the handshake) from arbitrary bytes.
//!
//! Each input runs a real handshake between a rustls client and a `TlsListener` over an
//! in-memory pipe (TLS 1.3 or 1.2 by the first byte), then the client sends `data[1..k]` as
//! application data (`k` from the second byte) and the rest of the input raw, as if a peer or the
//! network wrote it after the client's records. The server reads with `read_into` (as the broker
//! does) until an error or the end. Nothing may panic or hang, and what it delivers must be a
//! prefix of what the client sent: bytes nobody encrypted with the session's keys (the AEAD
//! cannot be forged) never reach the reader.
#![no_main]

use std::io::Write;
use std::sync::{Arc, OnceLock};

use bytes::BytesMut;
use josef_tls::{ClientAuth, ServerStream, SslSettings, TlsListener};
use libfuzzer_sys::fuzz_target;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

struct Fixture {
    listener: TlsListener,
    tls13: Arc<rustls::ClientConfig>,
    tls12: Arc<rustls::ClientConfig>,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let settings = SslSettings {
            keystore_location: None,
            keystore_certificate_chain: Some(cert.pem()),
            keystore_key: Some(key.serialize_pem()),
            truststore_location: None,
            truststore_certificates: None,
            client_auth: ClientAuth::None,
            principal_mapping_rules: "DEFAULT".into(),
            enabled_protocols: vec!["TLSv1.2".into(), "TLSv1.3".into()],
            cipher_suites: Vec::new(),
            endpoint_identification: true,
        };
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert.der().clone()).unwrap();
        let client = |v: &'static rustls::SupportedProtocolVersion| {
            Arc::new(
                rustls::ClientConfig::builder_with_provider(Arc::new(
                    rustls::crypto::ring::default_provider(),
                ))
                .with_protocol_versions(&[v])
                .unwrap()
                .with_root_certificates(roots.clone())
                .with_no_client_auth(),
            )
        };
        Fixture {
            listener: TlsListener::new(&settings).unwrap(),
            tls13: client(&rustls::version::TLS13),
            tls12: client(&rustls::version::TLS12),
        }
    })
}

/// Moves the client's pending TLS bytes into the pipe.
async fn flush_client(client: &mut rustls::ClientConnection, pipe: &mut DuplexStream) {
    let mut out = Vec::new();
    while client.wants_write() {
        client.write_tls(&mut out).unwrap();
    }
    pipe.write_all(&out).await.unwrap();
}

/// Drives the client's side of the handshake until it is done (or the server gave up).
async fn client_handshake(client: &mut rustls::ClientConnection, pipe: &mut DuplexStream) -> bool {
    let mut buf = vec![0u8; 16 * 1024];
    while client.is_handshaking() {
        flush_client(client, pipe).await;
        if !client.is_handshaking() {
            break;
        }
        let n = match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => n,
        };
        let mut rd = &buf[..n];
        while !rd.is_empty() {
            if client.read_tls(&mut rd).is_err() || client.process_new_packets().is_err() {
                return false;
            }
        }
    }
    flush_client(client, pipe).await;
    true
}

fn run(data: &[u8]) {
    let (Some(&mode), Some(&split)) = (data.first(), data.get(1)) else {
        return;
    };
    let rest = &data[2..];
    let k = (split as usize * rest.len()) / 255;
    let (plain, raw) = rest.split_at(k.min(rest.len()));
    let f = fixture();
    let config = if mode & 1 == 0 { f.tls13.clone() } else { f.tls12.clone() };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (mut a, b) = tokio::io::duplex(64 * 1024);
        let name = ServerName::try_from("localhost").unwrap();
        let mut client = rustls::ClientConnection::new(config, name).unwrap();
        let (ok, accepted) = tokio::join!(
            client_handshake(&mut client, &mut a),
            f.listener.accept(b)
        );
        let (Ok((mut server, _)), true) = (accepted, ok) else {
            return;
        };
        let writer = {
            client.writer().write_all(plain).unwrap();
            let mut out = Vec::new();
            while client.wants_write() {
                client.write_tls(&mut out).unwrap();
            }
            out.extend_from_slice(raw);
            tokio::spawn(async move {
                let _ = a.write_all(&out).await;
                let _ = a.shutdown().await;
                // Keep the pipe open for the server's answers (alerts, KeyUpdate) until it ends.
                let mut sink = Vec::new();
                let _ = a.read_to_end(&mut sink).await;
            })
        };
        let got = read_all(&mut server).await;
        assert!(
            plain.starts_with(&got),
            "delivered {} bytes that are not a prefix of the {} sent",
            got.len(),
            plain.len()
        );
        drop(server);
        let _ = writer.await;
    });
}

async fn read_all(server: &mut ServerStream<DuplexStream>) -> Vec<u8> {
    let mut buf = BytesMut::new();
    loop {
        buf.reserve(ServerStream::<DuplexStream>::room_for(4096));
        match server.read_into(&mut buf).await {
            Ok(0) | Err(_) => return buf.to_vec(),
            Ok(_) => {}
        }
    }
}

fuzz_target!(|data: &[u8]| run(data));
