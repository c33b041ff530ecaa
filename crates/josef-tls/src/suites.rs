//! `ssl.cipher.suites`: Kafka names a suite as Java's JSSE does (the IANA name, so TLS 1.3's
//! `TLS_AES_128_GCM_SHA256` where rustls says `TLS13_AES_128_GCM_SHA256`); this maps those names
//! to the ring provider's suites and builds the provider a listener or connector offers.

use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::SupportedCipherSuite;

use crate::SslSettings;

/// The name Kafka (JSSE) gives `suite`.
fn kafka_name(suite: &SupportedCipherSuite) -> String {
    let rustls_name = suite.suite().as_str().unwrap_or_default();
    match rustls_name.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => rustls_name.to_string(),
    }
}

/// The ring provider's suite Kafka calls `name`, if rustls has it.
pub(crate) fn by_kafka_name(name: &str) -> Option<SupportedCipherSuite> {
    rustls::crypto::ring::ALL_CIPHER_SUITES
        .iter()
        .find(|s| kafka_name(s) == name)
        .copied()
}

/// Every suite name `ssl.cipher.suites` accepts, in rustls's default order: what an error
/// message lists.
pub(crate) fn kafka_names() -> Vec<String> {
    rustls::crypto::ring::ALL_CIPHER_SUITES
        .iter()
        .map(kafka_name)
        .collect()
}

/// The ring provider with the suites of `s.cipher_suites` in their configured order (rustls's
/// own list when none is configured). Names were checked when the settings were read; one that
/// is not known here (settings built by hand) is left out.
pub(crate) fn provider(s: &SslSettings) -> Arc<CryptoProvider> {
    let mut p = rustls::crypto::ring::default_provider();
    if !s.cipher_suites.is_empty() {
        p.cipher_suites = s
            .cipher_suites
            .iter()
            .filter_map(|n| by_kafka_name(n))
            .collect();
    }
    Arc::new(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_names_are_jsse_names() {
        let names = kafka_names();
        for n in [
            "TLS_AES_256_GCM_SHA384",
            "TLS_AES_128_GCM_SHA256",
            "TLS_CHACHA20_POLY1305_SHA256",
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        ] {
            assert!(names.iter().any(|x| x == n), "{n} not in {names:?}");
            assert_eq!(kafka_name(&by_kafka_name(n).unwrap()), n);
        }
        assert!(by_kafka_name("TLS13_AES_128_GCM_SHA256").is_none());
    }
}
