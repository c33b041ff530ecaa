//! The client side against the listener: one node's settings used both ways, as between brokers
//! (mTLS with the keystore presented, the server checked against the truststore and its name).

use josef_tls::{ClientAuth, HandshakeError, SslSettings, TlsConnector, TlsListener};

struct Node {
    ca_pem: String,
    /// Key and chain of a certificate for `localhost` and 127.0.0.1, CN=broker.
    pem: String,
}

fn new_ca() -> (rcgen::Certificate, rcgen::KeyPair) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    (params.self_signed(&key).unwrap(), key)
}

fn node(ca: &rcgen::Certificate, ca_key: &rcgen::KeyPair) -> Node {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params =
        rcgen::CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let mut dn = rcgen::DistinguishedName::new();
    dn.push(rcgen::DnType::CommonName, "broker");
    params.distinguished_name = dn;
    let cert = params.signed_by(&key, ca, ca_key).unwrap();
    Node {
        ca_pem: ca.pem(),
        pem: format!("{}{}", key.serialize_pem(), cert.pem()),
    }
}

fn settings(n: &Node, client_auth: ClientAuth, endpoint_identification: bool) -> SslSettings {
    SslSettings {
        keystore_location: None,
        keystore_certificate_chain: Some(n.pem.clone()),
        keystore_key: Some(n.pem.clone()),
        truststore_location: None,
        truststore_certificates: Some(n.ca_pem.clone()),
        client_auth,
        principal_mapping_rules: "RULE:^CN=([^,]+)$/$1/".into(),
        enabled_protocols: vec!["TLSv1.2".into(), "TLSv1.3".into()],
        cipher_suites: Vec::new(),
        endpoint_identification,
    }
}

/// Runs both ends over an in-memory pipe: the client's result and the principal the server saw.
async fn handshake(
    client: &SslSettings,
    server: &SslSettings,
    host: &str,
) -> (Result<(), String>, Result<String, String>) {
    let connector = TlsConnector::new(client).unwrap();
    let listener = TlsListener::new(server).unwrap();
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (c, s) = tokio::join!(connector.connect(host, a), listener.accept(b));
    (
        c.map(drop).map_err(|e| format!("{e:?}")),
        s.map(|(_, p)| p.to_string()).map_err(|e| format!("{e:?}")),
    )
}

#[tokio::test]
async fn mtls_between_two_nodes_of_one_ca_names_the_client() {
    let (ca, ca_key) = new_ca();
    let (one, two) = (node(&ca, &ca_key), node(&ca, &ca_key));
    for host in ["localhost", "127.0.0.1"] {
        let (c, s) = handshake(
            &settings(&one, ClientAuth::Required, true),
            &settings(&two, ClientAuth::Required, true),
            host,
        )
        .await;
        assert_eq!(c, Ok(()), "{host}");
        assert_eq!(s.as_deref(), Ok("User:broker"), "{host}");
    }
}

#[tokio::test]
async fn a_certificate_of_another_ca_is_refused_either_way() {
    let (ca, ca_key) = new_ca();
    let (other_ca, other_key) = new_ca();
    let good = node(&ca, &ca_key);
    let stranger = node(&other_ca, &other_key);
    // The client presents a certificate the server does not trust.
    let mut client = settings(&stranger, ClientAuth::Required, true);
    client.truststore_certificates = Some(good.ca_pem.clone());
    let (_, s) = handshake(
        &client,
        &settings(&good, ClientAuth::Required, true),
        "localhost",
    )
    .await;
    assert!(s.is_err(), "{s:?}");
    // The server presents a certificate the client does not trust.
    let (c, _) = handshake(
        &settings(&stranger, ClientAuth::Required, true),
        &settings(&good, ClientAuth::None, true),
        "localhost",
    )
    .await;
    assert!(c.is_err(), "{c:?}");
}

#[tokio::test]
async fn the_host_name_is_checked_unless_endpoint_identification_is_off() {
    let (ca, ca_key) = new_ca();
    let n = node(&ca, &ca_key);
    let server = settings(&n, ClientAuth::None, true);
    let (c, _) = handshake(
        &settings(&n, ClientAuth::None, true),
        &server,
        "broker.example",
    )
    .await;
    assert!(c.unwrap_err().contains("NotValidForName"));
    let (c, _) = handshake(
        &settings(&n, ClientAuth::None, false),
        &server,
        "broker.example",
    )
    .await;
    assert_eq!(c, Ok(()));
}

#[test]
fn a_client_needs_a_truststore() {
    let (ca, ca_key) = new_ca();
    let mut s = settings(&node(&ca, &ca_key), ClientAuth::None, true);
    s.truststore_certificates = None;
    let e = TlsConnector::new(&s).unwrap_err().to_string();
    assert!(e.starts_with("ssl.truststore: a TLS client needs"), "{e}");
}

#[tokio::test(start_paused = true)]
async fn a_silent_server_times_the_client_out() {
    let (ca, ca_key) = new_ca();
    let c = TlsConnector::new(&settings(&node(&ca, &ca_key), ClientAuth::None, true))
        .unwrap()
        .with_handshake_timeout(std::time::Duration::from_secs(2));
    let (a, _b) = tokio::io::duplex(1024);
    assert!(matches!(
        c.connect("localhost", a).await,
        Err(HandshakeError::TimedOut)
    ));
}

#[tokio::test]
async fn a_refused_client_certificate_shows_as_a_tls_error_on_the_first_read() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (ca, ca_key) = new_ca();
    let (other, other_key) = new_ca();
    let server = settings(&node(&ca, &ca_key), ClientAuth::Required, true);
    let mut client = settings(&node(&other, &other_key), ClientAuth::None, true);
    client.truststore_certificates = Some(ca.pem());
    client.enabled_protocols = vec!["TLSv1.3".into()];
    let connector = TlsConnector::new(&client).unwrap();
    let listener = TlsListener::new(&server).unwrap();
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (c, s) = tokio::join!(connector.connect("localhost", a), listener.accept(b));
    assert!(s.is_err());
    // TLS 1.3: the client finished its side before the server checked the certificate.
    let mut c = c.unwrap();
    let _ = c.write_all(b"hello").await;
    let e = c.read_u8().await.unwrap_err();
    assert!(josef_tls::tls_error(&e).is_some(), "{e:?}");
    assert_eq!(
        josef_tls::tls_error(&std::io::ErrorKind::BrokenPipe.into()),
        None
    );
}
