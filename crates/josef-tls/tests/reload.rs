//! Kafka's dynamic keystore update: after [`TlsListener::reload`] new handshakes (on every clone
//! of the listener) present the new certificate, a connection opened before keeps the old one,
//! and stores that do not load are refused with the old ones kept.

use std::sync::Arc;

mod common;

use common::self_signed;
use josef_tls::TlsListener;
use rustls::RootCertStore;
use rustls_pki_types::CertificateDer;

/// The certificate the server presents in a handshake with `listener` (the client trusts both
/// `a` and `b`).
async fn presented(
    listener: &TlsListener,
    trusted: &[&CertificateDer<'static>],
) -> CertificateDer<'static> {
    let mut roots = RootCertStore::empty();
    for c in trusted {
        roots.add((*c).clone()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let (a, s) = tokio::io::duplex(64 * 1024);
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let (client, server) = tokio::join!(connector.connect(name, a), listener.accept(s));
    server.unwrap();
    let client = client.unwrap();
    client.get_ref().1.peer_certificates().unwrap()[0].clone()
}

#[tokio::test]
async fn new_handshakes_use_the_reloaded_keystore() {
    let (a, settings_a) = self_signed();
    let (b, settings_b) = self_signed();
    let listener = TlsListener::new(&settings_a).unwrap();
    // What the accept loop hands each connection: a clone.
    let clone = listener.clone();
    assert_eq!(presented(&clone, &[&a, &b]).await, a);
    listener.reload(&settings_b).unwrap();
    assert_eq!(presented(&clone, &[&a, &b]).await, b);
    assert_eq!(presented(&listener, &[&a, &b]).await, b);
}

#[tokio::test]
async fn a_keystore_that_does_not_load_is_refused_and_the_old_one_stays() {
    let (a, settings_a) = self_signed();
    let listener = TlsListener::new(&settings_a).unwrap();
    let mut bad = settings_a.clone();
    bad.keystore_key = Some("not a key".into());
    assert!(TlsListener::check(&bad).is_err());
    assert!(listener.reload(&bad).is_err());
    let mut missing = settings_a.clone();
    missing.keystore_certificate_chain = None;
    missing.keystore_key = None;
    missing.keystore_location = Some("/nonexistent/josef-new-keystore.pem".into());
    assert!(listener.reload(&missing).is_err());
    assert_eq!(presented(&listener, &[&a]).await, a);
    assert!(TlsListener::check(&settings_a).is_ok());
}
