//! What the test files share: a self-signed server certificate and its settings.

use josef_tls::{ClientAuth, SslSettings};
use rustls_pki_types::CertificateDer;

/// A self-signed certificate for localhost and its settings (key and chain inline).
pub fn self_signed() -> (CertificateDer<'static>, SslSettings) {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let s = SslSettings {
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
    (cert.der().clone(), s)
}
