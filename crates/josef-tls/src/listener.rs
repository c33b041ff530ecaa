//! A TLS listener: the rustls server configuration (ring provider) from a listener's PEM
//! settings, the handshake under a timeout over any stream, and the principal of a client
//! certificate through `ssl.principal.mapping.rules`.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use josef_sasl::ssl_principal::{MappingRuleError, NoMatchingRule, SslPrincipalMapper};
use josef_sasl::KafkaPrincipal;
use rustls::server::UnbufferedServerConnection;
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::pem::{certificates, pem_text, private_key};
use crate::settings::{ClientAuth, SslSettings};
use crate::stream::ServerStream;
use crate::subject::{subject_dn, SubjectError};

/// How long a client has to finish the TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a TLS listener cannot start.
#[derive(Debug, thiserror::Error)]
pub enum TlsConfigError {
    /// A PEM file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The PEM text has no certificate or no usable key, or more than one key.
    #[error("{what}: {reason}")]
    Pem {
        /// Which setting.
        what: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// rustls refused the key, chain or truststore.
    #[error("{what}: {source}")]
    Rustls {
        /// Which part.
        what: &'static str,
        /// The cause.
        source: rustls::Error,
    },
    /// The truststore could not build a client certificate verifier.
    #[error("ssl.truststore: {0}")]
    Verifier(String),
    /// `ssl.principal.mapping.rules` does not parse.
    #[error("ssl.principal.mapping.rules: {0}")]
    Rules(#[from] MappingRuleError),
}

/// Why a connection's TLS handshake did not give a principal.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    /// The handshake failed (bad client certificate, protocol error, closed stream).
    #[error("TLS handshake failed: {0}")]
    Failed(#[source] std::io::Error),
    /// The client did not finish the handshake in time.
    #[error("TLS handshake timed out")]
    TimedOut,
    /// The client certificate's subject has no RFC 2253 text.
    #[error("client certificate subject does not parse")]
    Subject(#[source] SubjectError),
    /// No `ssl.principal.mapping.rules` rule matches the subject.
    #[error(transparent)]
    Mapping(#[from] NoMatchingRule),
}

/// The keystore's certificate chain and private key (inline PEM, else the file).
pub(crate) fn keystore(
    s: &SslSettings,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsConfigError> {
    Ok(match (&s.keystore_certificate_chain, &s.keystore_key) {
        (Some(chain), Some(key)) => (
            certificates(chain.as_bytes(), "ssl.keystore.certificate.chain")?,
            private_key(key.as_bytes(), "ssl.keystore.key")?,
        ),
        _ => {
            let pem = pem_text(None, s.keystore_location.as_ref())?.ok_or(TlsConfigError::Pem {
                what: "ssl.keystore.location",
                reason: "not set".into(),
            })?;
            (
                certificates(&pem, "ssl.keystore.location")?,
                private_key(&pem, "ssl.keystore.location")?,
            )
        }
    })
}

/// The truststore's CA certificates, if one is configured.
pub(crate) fn truststore(s: &SslSettings) -> Result<Option<RootCertStore>, TlsConfigError> {
    let Some(pem) = pem_text(
        s.truststore_certificates.as_deref(),
        s.truststore_location.as_ref(),
    )?
    else {
        return Ok(None);
    };
    let mut roots = RootCertStore::empty();
    for c in certificates(&pem, "ssl.truststore")? {
        roots.add(c).map_err(|source| TlsConfigError::Rustls {
            what: "ssl.truststore",
            source,
        })?;
    }
    Ok(Some(roots))
}

/// `ssl.enabled.protocols` as rustls versions.
pub(crate) fn protocol_versions(s: &SslSettings) -> Vec<&'static rustls::SupportedProtocolVersion> {
    s.enabled_protocols
        .iter()
        .filter_map(|p| match p.as_str() {
            "TLSv1.2" => Some(&rustls::version::TLS12),
            "TLSv1.3" => Some(&rustls::version::TLS13),
            _ => None,
        })
        .collect()
}

/// A TLS listener: the rustls configuration and how client certificates become principals. Cheap
/// to clone; clones share the configuration, so [`TlsListener::reload`] on one changes what every
/// clone's next handshake uses (Kafka's dynamic keystore update: connections already
/// established keep the certificate they were opened with).
#[derive(Clone)]
pub struct TlsListener {
    config: Arc<RwLock<Arc<ServerConfig>>>,
    mapper: Arc<SslPrincipalMapper>,
    handshake_timeout: Duration,
}

impl std::fmt::Debug for TlsListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsListener")
            .field("mapper", &self.mapper.to_string())
            .field("handshake_timeout", &self.handshake_timeout)
            .finish_non_exhaustive()
    }
}

/// The rustls server configuration of `s`: keystore, truststore, client authentication.
fn server_config(s: &SslSettings) -> Result<Arc<ServerConfig>, TlsConfigError> {
    let provider = crate::suites::provider(s);
    let (chain, key) = keystore(s)?;
    let versions = protocol_versions(s);
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|source| TlsConfigError::Rustls {
            what: "ssl.enabled.protocols",
            source,
        })?;
    let builder = match (s.client_auth, truststore(s)?) {
        (ClientAuth::None, _) | (_, None) => builder.with_no_client_auth(),
        (auth, Some(roots)) => {
            let v = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let v = if auth == ClientAuth::Requested {
                v.allow_unauthenticated()
            } else {
                v
            };
            builder.with_client_cert_verifier(
                v.build()
                    .map_err(|e| TlsConfigError::Verifier(e.to_string()))?,
            )
        }
    };
    let mut config =
        builder
            .with_single_cert(chain, key)
            .map_err(|source| TlsConfigError::Rustls {
                what: "ssl.keystore",
                source,
            })?;
    // Kafka clients do not negotiate ALPN.
    config.alpn_protocols.clear();
    // With `ssl.cipher.suites` the operator's order decides (e.g. AES-128 before the AES-256
    // that OpenSSL clients list first: 10 AES rounds per block instead of 14); without it the
    // client's order does, as before.
    config.ignore_client_order = !s.cipher_suites.is_empty();
    // After the handshake the stream does the record layer itself with the negotiated keys
    // (`crate::records`: records decrypted in place, no copy per record into a rustls `Vec`).
    config.enable_secret_extraction = true;
    Ok(Arc::new(config))
}

impl TlsListener {
    /// Reads the keystore and truststore and builds the rustls configuration.
    pub fn new(s: &SslSettings) -> Result<TlsListener, TlsConfigError> {
        Ok(TlsListener {
            config: Arc::new(RwLock::new(server_config(s)?)),
            mapper: Arc::new(SslPrincipalMapper::parse(&s.principal_mapping_rules)?),
            handshake_timeout: HANDSHAKE_TIMEOUT,
        })
    }

    /// Checks that `s` builds a listener (the keystore and truststore read and accepted), without
    /// building one: what a dynamic update is validated with before it is stored.
    pub fn check(s: &SslSettings) -> Result<(), TlsConfigError> {
        server_config(s).map(drop)
    }

    /// Reads the keystore and truststore of `s` again and makes the next handshakes (of this
    /// listener and every clone) use them. On an error nothing changes: the listener keeps the
    /// stores it had. The principal mapping rules are not reloaded (Kafka does not update them
    /// dynamically either).
    pub fn reload(&self, s: &SslSettings) -> Result<(), TlsConfigError> {
        let config = server_config(s)?;
        *self.config.write().unwrap_or_else(|e| e.into_inner()) = config;
        Ok(())
    }

    fn current_config(&self) -> Arc<ServerConfig> {
        self.config
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The same listener with another handshake timeout (default [`HANDSHAKE_TIMEOUT`]).
    pub fn with_handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// Runs the handshake over `stream` (at most the handshake timeout, so a slow or broken
    /// client cannot hold a connection task) and maps the client certificate, if any, to its
    /// principal (`User:ANONYMOUS` without one). Needs a tokio runtime with timers.
    pub async fn accept<S: AsyncRead + AsyncWrite + Unpin + 'static>(
        &self,
        stream: S,
    ) -> Result<(ServerStream<S>, KafkaPrincipal), HandshakeError> {
        let conn = UnbufferedServerConnection::new(self.current_config())
            .map_err(|e| HandshakeError::Failed(std::io::Error::other(e)))?;
        let mut tls = ServerStream::new(stream, conn);
        match tokio::time::timeout(self.handshake_timeout, tls.handshake()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(HandshakeError::Failed(e)),
            Err(_) => return Err(HandshakeError::TimedOut),
        }
        let principal = match tls.peer_certificates().and_then(|c| c.first()) {
            None => KafkaPrincipal::anonymous(),
            Some(cert) => self.principal_of(cert.as_ref())?,
        };
        Ok((tls, principal))
    }

    /// The principal of a DER client certificate under this listener's mapping rules.
    pub fn principal_of(&self, der: &[u8]) -> Result<KafkaPrincipal, HandshakeError> {
        let dn = subject_dn(der).map_err(HandshakeError::Subject)?;
        Ok(KafkaPrincipal::user(self.mapper.name(&dn)?))
    }
}
