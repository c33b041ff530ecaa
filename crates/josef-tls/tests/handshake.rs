//! The handshake over an in-memory stream: client certificates become the mapped principal,
//! a missing one is ANONYMOUS or a refusal as `ssl.client.auth` says, a silent client times out.

use std::sync::Arc;
use std::time::Duration;

use josef_tls::{ClientAuth, HandshakeError, SslSettings, TlsListener};
use rustls::RootCertStore;
use rustls_pki_types::PrivateKeyDer;

fn settings(
    server_pem: String,
    ca_pem: String,
    client_auth: ClientAuth,
    rules: &str,
) -> SslSettings {
    SslSettings {
        keystore_location: None,
        keystore_certificate_chain: Some(server_pem.clone()),
        keystore_key: Some(server_pem),
        truststore_location: None,
        truststore_certificates: Some(ca_pem),
        client_auth,
        principal_mapping_rules: rules.into(),
        enabled_protocols: vec!["TLSv1.2".into(), "TLSv1.3".into()],
        cipher_suites: Vec::new(),
        endpoint_identification: true,
    }
}

struct Pki {
    ca: rcgen::Certificate,
    server_pem: String,
    client: rcgen::Certificate,
    client_key: rcgen::KeyPair,
}

fn pki() -> Pki {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let server_key = rcgen::KeyPair::generate().unwrap();
    let server = rcgen::CertificateParams::new(vec!["localhost".into()])
        .unwrap()
        .signed_by(&server_key, &ca, &ca_key)
        .unwrap();
    let client_key = rcgen::KeyPair::generate().unwrap();
    let mut client_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    let mut dn = rcgen::DistinguishedName::new();
    dn.push(rcgen::DnType::OrganizationName, "x");
    dn.push(rcgen::DnType::CommonName, "Bob");
    client_params.distinguished_name = dn;
    let client = client_params.signed_by(&client_key, &ca, &ca_key).unwrap();
    let server_pem = format!("{}{}", server_key.serialize_pem(), server.pem());
    Pki {
        ca,
        server_pem,
        client,
        client_key,
    }
}

#[tokio::test]
async fn a_client_certificate_becomes_the_mapped_principal() {
    let Pki {
        ca,
        server_pem,
        client,
        client_key,
    } = pki();
    for (auth, with_cert, expect) in [
        (ClientAuth::Required, true, Some("User:bob")),
        (ClientAuth::Requested, false, Some("User:ANONYMOUS")),
        (ClientAuth::Required, false, None),
    ] {
        let listener = TlsListener::new(&settings(
            server_pem.clone(),
            ca.pem(),
            auth,
            "RULE:^CN=([^,]+),.*$/$1/L",
        ))
        .unwrap();
        let mut roots = RootCertStore::empty();
        roots.add(ca.der().clone()).unwrap();
        let b = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
        let config = if with_cert {
            b.with_client_auth_cert(
                vec![client.der().clone()],
                PrivateKeyDer::Pkcs8(client_key.serialize_der().into()),
            )
            .unwrap()
        } else {
            b.with_no_client_auth()
        };
        let (a, s) = tokio::io::duplex(64 * 1024);
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
        let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
        // Both ends at once, each kept open until the other is done.
        let (client_side, got) = tokio::join!(connector.connect(name, a), listener.accept(s));
        let got = got.map(|(_, p)| p.to_string());
        drop(client_side);
        assert_eq!(got.ok().as_deref(), expect, "{auth:?} cert={with_cert}");
    }
}

/// The suite a server with `cipher_suites` negotiates with a client that lists AES-256 first
/// (as librdkafka over OpenSSL does).
async fn negotiated_with_an_aes256_first_client(cipher_suites: &[&str]) -> String {
    let Pki { ca, server_pem, .. } = pki();
    let mut s = settings(server_pem, ca.pem(), ClientAuth::None, "DEFAULT");
    s.cipher_suites = cipher_suites.iter().map(|n| n.to_string()).collect();
    let listener = TlsListener::new(&s).unwrap();
    let mut roots = RootCertStore::empty();
    roots.add(ca.der().clone()).unwrap();
    let mut provider = rustls::crypto::ring::default_provider();
    provider.cipher_suites = vec![
        rustls::crypto::ring::cipher_suite::TLS13_AES_256_GCM_SHA384,
        rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256,
    ];
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let (a, s) = tokio::io::duplex(64 * 1024);
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let (client_side, got) = tokio::join!(connector.connect(name, a), listener.accept(s));
    let (server_side, _) = got.unwrap();
    drop(client_side);
    let suite = server_side.negotiated_cipher_suite().unwrap();
    format!("{:?}", suite.suite())
}

#[tokio::test]
async fn ssl_cipher_suites_order_decides_over_the_clients() {
    // Default: the client's preference, as before.
    assert_eq!(
        negotiated_with_an_aes256_first_client(&[]).await,
        "TLS13_AES_256_GCM_SHA384"
    );
    // An operator's list: its order, whatever the client prefers.
    assert_eq!(
        negotiated_with_an_aes256_first_client(&[
            "TLS_AES_128_GCM_SHA256",
            "TLS_AES_256_GCM_SHA384"
        ])
        .await,
        "TLS13_AES_128_GCM_SHA256"
    );
    assert_eq!(
        negotiated_with_an_aes256_first_client(&[
            "TLS_AES_256_GCM_SHA384",
            "TLS_AES_128_GCM_SHA256"
        ])
        .await,
        "TLS13_AES_256_GCM_SHA384"
    );
}

#[tokio::test]
async fn a_subject_no_rule_matches_refuses_the_connection() {
    let Pki {
        ca,
        server_pem,
        client,
        ..
    } = pki();
    let listener = TlsListener::new(&settings(
        server_pem,
        ca.pem(),
        ClientAuth::Required,
        "RULE:^CN=admin,.*$/admin/",
    ))
    .unwrap();
    match listener.principal_of(client.der()) {
        Err(HandshakeError::Mapping(e)) => assert_eq!(e.dn, "CN=Bob,O=x"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        listener.principal_of(b"\x30\x03\x02\x01"),
        Err(HandshakeError::Subject(_))
    ));
}

#[tokio::test(start_paused = true)]
async fn a_silent_client_times_out() {
    let Pki { ca, server_pem, .. } = pki();
    let listener = TlsListener::new(&settings(server_pem, ca.pem(), ClientAuth::None, "DEFAULT"))
        .unwrap()
        .with_handshake_timeout(Duration::from_secs(3));
    let (_client, s) = tokio::io::duplex(1024);
    let started = tokio::time::Instant::now();
    assert!(matches!(
        listener.accept(s).await,
        Err(HandshakeError::TimedOut)
    ));
    assert_eq!(started.elapsed(), Duration::from_secs(3));
}

#[tokio::test]
async fn garbage_instead_of_a_client_hello_fails_the_handshake() {
    use tokio::io::AsyncWriteExt;
    let Pki { ca, server_pem, .. } = pki();
    let listener =
        TlsListener::new(&settings(server_pem, ca.pem(), ClientAuth::None, "DEFAULT")).unwrap();
    let (mut client, s) = tokio::io::duplex(1024);
    // A Kafka request on a TLS port: not a TLS record.
    client
        .write_all(&[0, 0, 0, 10, 0, 18, 0, 3, 0, 0, 0, 1, 0, 0])
        .await
        .unwrap();
    client.shutdown().await.unwrap();
    assert!(matches!(
        listener.accept(s).await,
        Err(HandshakeError::Failed(_))
    ));
}

#[test]
fn bad_keystores_fail_the_start() {
    let Pki { ca, server_pem, .. } = pki();
    let mut s = settings(
        server_pem.clone(),
        ca.pem(),
        ClientAuth::Required,
        "DEFAULT",
    );
    s.keystore_key = Some(ca.pem());
    let e = TlsListener::new(&s).unwrap_err().to_string();
    assert!(
        e.starts_with("ssl.keystore.key: no unencrypted PRIVATE KEY"),
        "{e}"
    );
    let mut s = settings(
        server_pem.clone(),
        ca.pem(),
        ClientAuth::Required,
        "DEFAULT",
    );
    s.truststore_certificates = Some("junk".into());
    let e = TlsListener::new(&s).unwrap_err().to_string();
    assert!(e.starts_with("ssl.truststore: no CERTIFICATE"), "{e}");
    let mut s = settings(server_pem, ca.pem(), ClientAuth::None, "DEFAULT");
    s.keystore_certificate_chain = None;
    s.keystore_location = Some("/nonexistent/josef-keystore.pem".into());
    let e = TlsListener::new(&s).unwrap_err().to_string();
    assert!(
        e.starts_with("cannot read /nonexistent/josef-keystore.pem"),
        "{e}"
    );
}
