//! TLS listeners with rustls (ring provider; no OpenSSL): the server configuration from a
//! listener's PEM settings, the handshake (run in the connection's own task, under a timeout, so a
//! slow or broken client never holds up the accept loop), and the principal of a client
//! certificate (its subject as Java's RFC 2253 text, through `ssl.principal.mapping.rules`).
//!
//! Certificates are read once when the listener starts; changing them needs a restart.

use std::io::BufReader;
use std::sync::Arc;
use std::time::Duration;

use josef_sasl::ssl_principal::SslPrincipalMapper;
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use crate::security_config::{ClientAuth, SslSettings};

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
    Rules(#[from] josef_sasl::ssl_principal::MappingRuleError),
}

fn pem_text(
    inline: &Option<String>,
    location: &Option<std::path::PathBuf>,
) -> Result<Option<Vec<u8>>, TlsConfigError> {
    if let Some(t) = inline {
        return Ok(Some(t.as_bytes().to_vec()));
    }
    match location {
        Some(p) => std::fs::read(p)
            .map(Some)
            .map_err(|source| TlsConfigError::Io {
                path: p.display().to_string(),
                source,
            }),
        None => Ok(None),
    }
}

fn certificates(
    pem: &[u8],
    what: &'static str,
) -> Result<Vec<CertificateDer<'static>>, TlsConfigError> {
    let certs: Result<Vec<_>, _> = rustls_pemfile_certs(pem);
    let certs = certs.map_err(|e| TlsConfigError::Pem {
        what,
        reason: e.to_string(),
    })?;
    if certs.is_empty() {
        return Err(TlsConfigError::Pem {
            what,
            reason: "no CERTIFICATE block".into(),
        });
    }
    Ok(certs)
}

fn rustls_pemfile_certs(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, std::io::Error> {
    use rustls_pki_types::pem::PemObject;
    CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))
}

fn private_key(pem: &[u8], what: &'static str) -> Result<PrivateKeyDer<'static>, TlsConfigError> {
    use rustls_pki_types::pem::SectionKind;
    let mut keys = Vec::new();
    let mut reader = BufReader::new(pem);
    loop {
        let item =
            rustls_pki_types::pem::from_buf(&mut reader).map_err(|e| TlsConfigError::Pem {
                what,
                reason: e.to_string(),
            })?;
        let Some((kind, der)) = item else { break };
        match kind {
            SectionKind::PrivateKey => keys.push(PrivateKeyDer::Pkcs8(der.into())),
            SectionKind::RsaPrivateKey => keys.push(PrivateKeyDer::Pkcs1(der.into())),
            SectionKind::EcPrivateKey => keys.push(PrivateKeyDer::Sec1(der.into())),
            _ => {}
        }
    }
    match keys.len() {
        1 => Ok(keys.remove(0)),
        0 => Err(TlsConfigError::Pem {
            what,
            reason: "no unencrypted PRIVATE KEY block (encrypted keys are not supported)".into(),
        }),
        n => Err(TlsConfigError::Pem {
            what,
            reason: format!("{n} private keys; a keystore holds one"),
        }),
    }
}

/// A TLS listener: the acceptor and how client certificates become principals.
#[derive(Clone)]
pub struct TlsListener {
    acceptor: TlsAcceptor,
    mapper: Arc<SslPrincipalMapper>,
}

impl std::fmt::Debug for TlsListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsListener")
            .field("mapper", &self.mapper.to_string())
            .finish_non_exhaustive()
    }
}

impl TlsListener {
    /// Reads the keystore and truststore and builds the rustls configuration.
    pub fn new(s: &SslSettings) -> Result<TlsListener, TlsConfigError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let (chain, key) = match (&s.keystore_certificate_chain, &s.keystore_key) {
            (Some(chain), Some(key)) => (
                certificates(chain.as_bytes(), "ssl.keystore.certificate.chain")?,
                private_key(key.as_bytes(), "ssl.keystore.key")?,
            ),
            _ => {
                let pem = pem_text(&None, &s.keystore_location)?.ok_or(TlsConfigError::Pem {
                    what: "ssl.keystore.location",
                    reason: "not set".into(),
                })?;
                (
                    certificates(&pem, "ssl.keystore.location")?,
                    private_key(&pem, "ssl.keystore.location")?,
                )
            }
        };
        let versions: Vec<&'static rustls::SupportedProtocolVersion> = s
            .enabled_protocols
            .iter()
            .filter_map(|p| match p.as_str() {
                "TLSv1.2" => Some(&rustls::version::TLS12),
                "TLSv1.3" => Some(&rustls::version::TLS13),
                _ => None,
            })
            .collect();
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&versions)
            .map_err(|source| TlsConfigError::Rustls {
                what: "ssl.enabled.protocols",
                source,
            })?;
        let trust = pem_text(&s.truststore_certificates, &s.truststore_location)?;
        let builder = match (s.client_auth, trust) {
            (ClientAuth::None, _) | (_, None) => builder.with_no_client_auth(),
            (auth, Some(pem)) => {
                let mut roots = RootCertStore::empty();
                for c in certificates(&pem, "ssl.truststore")? {
                    roots.add(c).map_err(|source| TlsConfigError::Rustls {
                        what: "ssl.truststore",
                        source,
                    })?;
                }
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
        Ok(TlsListener {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            mapper: Arc::new(SslPrincipalMapper::parse(&s.principal_mapping_rules)?),
        })
    }

    /// Runs the handshake (at most [`HANDSHAKE_TIMEOUT`]) and maps the client certificate, if
    /// any, to its principal (`User:ANONYMOUS` without one).
    pub async fn accept<S: crate::connection::Transport>(
        &self,
        stream: S,
    ) -> Result<(TlsStream<S>, josef_authorizer::KafkaPrincipal), String> {
        let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, self.acceptor.accept(stream)).await
        {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(format!("TLS handshake failed: {e}")),
            Err(_) => return Err("TLS handshake timed out".into()),
        };
        let principal = match tls.get_ref().1.peer_certificates().and_then(|c| c.first()) {
            None => josef_authorizer::KafkaPrincipal::anonymous(),
            Some(cert) => {
                let dn = subject_dn(cert.as_ref())
                    .ok_or_else(|| "client certificate subject does not parse".to_string())?;
                let name = self.mapper.name(&dn).map_err(|e| e.to_string())?;
                josef_authorizer::KafkaPrincipal::user(name)
            }
        };
        Ok((tls, principal))
    }
}

/// The subject of a DER certificate as Java's `X500Principal.getName()` (RFC 2253): the most
/// specific RDN first, `,` between RDNs, `+` inside a multi-valued one, Java's keywords (CN, C, L,
/// ST, O, OU, DC, STREET, UID), other attributes as `OID=#hex`.
pub fn subject_dn(der: &[u8]) -> Option<String> {
    use x509_parser::der_parser::asn1_rs::ToDer;
    use x509_parser::prelude::*;
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    let mut rdns = Vec::new();
    for rdn in cert.subject().iter() {
        let mut parts = Vec::new();
        for atv in rdn.iter() {
            let oid = atv.attr_type().to_id_string();
            let keyword = match oid.as_str() {
                "2.5.4.3" => Some("CN"),
                "2.5.4.6" => Some("C"),
                "2.5.4.7" => Some("L"),
                "2.5.4.8" => Some("ST"),
                "2.5.4.10" => Some("O"),
                "2.5.4.11" => Some("OU"),
                "2.5.4.9" => Some("STREET"),
                "0.9.2342.19200300.100.1.25" => Some("DC"),
                "0.9.2342.19200300.100.1.1" => Some("UID"),
                _ => None,
            };
            match (keyword, atv.as_str()) {
                (Some(k), Ok(v)) => parts.push(format!("{k}={}", escape_rfc2253(v))),
                _ => {
                    let raw = atv.attr_value().to_der_vec().ok()?;
                    let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
                    parts.push(format!("{oid}=#{hex}"));
                }
            }
        }
        rdns.push(parts.join("+"));
    }
    rdns.reverse();
    Some(rdns.join(","))
}

/// RFC 2253 escaping of an attribute value.
fn escape_rfc2253(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let n = v.chars().count();
    for (i, c) in v.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i + 1 == n && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc2253_escaping() {
        assert_eq!(escape_rfc2253("a,b"), "a\\,b");
        assert_eq!(escape_rfc2253(" #x "), "\\ #x\\ ");
        assert_eq!(escape_rfc2253("#x"), "\\#x");
        assert_eq!(escape_rfc2253("plain"), "plain");
    }

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
        }
    }

    #[tokio::test]
    async fn a_client_certificate_becomes_the_mapped_principal() {
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

    #[test]
    fn subject_is_most_specific_first() {
        let mut params = rcgen::CertificateParams::new(vec!["localhost".into()]).unwrap();
        let mut dn = rcgen::DistinguishedName::new();
        dn.push(rcgen::DnType::CountryName, "US");
        dn.push(rcgen::DnType::OrganizationName, "corp, inc");
        dn.push(rcgen::DnType::OrganizationalUnitName, "eng");
        dn.push(rcgen::DnType::CommonName, "alice");
        params.distinguished_name = dn;
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        assert_eq!(
            subject_dn(cert.der()).unwrap(),
            "CN=alice,OU=eng,O=corp\\, inc,C=US"
        );
        assert_eq!(subject_dn(b"garbage"), None);
    }
}
