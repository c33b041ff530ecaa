//! The client side of TLS, for a broker connecting to another broker's SSL or SASL_SSL listener
//! with that listener's own settings, as Kafka's inter-broker clients do: the truststore verifies
//! the server, the keystore is presented when the server asks for a client certificate (mTLS),
//! and `ssl.endpoint.identification.algorithm` decides whether the certificate must name the host
//! dialled.

use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, SignatureScheme};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector as RustlsConnector;

use crate::listener::{keystore, protocol_versions, truststore};
use crate::{HandshakeError, SslSettings, TlsConfigError, HANDSHAKE_TIMEOUT};

/// A TLS client configuration. Cheap to clone.
#[derive(Clone)]
pub struct TlsConnector {
    connector: RustlsConnector,
    handshake_timeout: Duration,
}

impl std::fmt::Debug for TlsConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConnector")
            .field("handshake_timeout", &self.handshake_timeout)
            .finish_non_exhaustive()
    }
}

/// The WebPKI verifier without the host name check (`ssl.endpoint.identification.algorithm=`):
/// the chain must still lead to the truststore.
#[derive(Debug)]
struct AnyHostVerifier(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyHostVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // rustls checks the name after the chain, so a name error means the chain was good.
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

impl TlsConnector {
    /// Builds the client configuration of a listener's settings. The truststore is required
    /// (there is no system trust store here); the keystore is the client certificate.
    pub fn new(s: &SslSettings) -> Result<TlsConnector, TlsConfigError> {
        let provider = crate::suites::provider(s);
        let roots = truststore(s)?.ok_or(TlsConfigError::Pem {
            what: "ssl.truststore",
            reason: "a TLS client needs ssl.truststore.location or ssl.truststore.certificates to verify the server".into(),
        })?;
        let verifier =
            WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                .build()
                .map_err(|e| TlsConfigError::Verifier(e.to_string()))?;
        let builder = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&protocol_versions(s))
            .map_err(|source| TlsConfigError::Rustls {
                what: "ssl.enabled.protocols",
                source,
            })?;
        let builder = if s.endpoint_identification {
            builder.with_webpki_verifier(verifier)
        } else {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyHostVerifier(verifier)))
        };
        let (chain, key) = keystore(s)?;
        let config = builder
            .with_client_auth_cert(chain, key)
            .map_err(|source| TlsConfigError::Rustls {
                what: "ssl.keystore",
                source,
            })?;
        Ok(TlsConnector {
            connector: RustlsConnector::from(Arc::new(config)),
            handshake_timeout: HANDSHAKE_TIMEOUT,
        })
    }

    /// The same connector with another handshake timeout (default [`HANDSHAKE_TIMEOUT`]).
    pub fn with_handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// Runs the client handshake over `stream` to `host` (a DNS name or an IP address, checked
    /// against the server certificate unless endpoint identification is off), at most the
    /// handshake timeout. Needs a tokio runtime with timers.
    pub async fn connect<S: AsyncRead + AsyncWrite + Unpin>(
        &self,
        host: &str,
        stream: S,
    ) -> Result<TlsStream<S>, HandshakeError> {
        let name = ServerName::try_from(host.to_string()).map_err(|e| {
            HandshakeError::Failed(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{host:?} is not a host name: {e}"),
            ))
        })?;
        match tokio::time::timeout(self.handshake_timeout, self.connector.connect(name, stream))
            .await
        {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(e)) => Err(HandshakeError::Failed(e)),
            Err(_) => Err(HandshakeError::TimedOut),
        }
    }
}

/// The TLS-level error inside `e` (from reading or writing a TLS stream), if it is one rather
/// than a socket error: how a client learns, on its first read after a TLS 1.3 handshake, that
/// the server refused its certificate (the client's side of the handshake had already finished;
/// depending on timing the server's alert shows as the alert or as a record that does not
/// decrypt).
pub fn tls_error(e: &std::io::Error) -> Option<String> {
    let inner = e.get_ref()?.downcast_ref::<rustls::Error>()?;
    Some(match inner {
        rustls::Error::AlertReceived(a) => format!("received alert {a:?}"),
        other => other.to_string(),
    })
}
