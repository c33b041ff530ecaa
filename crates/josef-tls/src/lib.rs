//! Kafka's SSL and SASL_SSL listeners with rustls (ring provider; no OpenSSL), for any broker built
//! from the Josef crates:
//!
//! - [`settings`]: a listener's `ssl.*` settings as Kafka names them (PEM keystore and truststore,
//!   inline or as files, `ssl.client.auth`, `ssl.enabled.protocols`, `ssl.cipher.suites`,
//!   `ssl.principal.mapping.rules`), listener-prefixed first, read from a
//!   [`josef_config::settings::Props`];
//! - [`TlsListener`]: the rustls server configuration they build, and the handshake over any
//!   `AsyncRead + AsyncWrite` stream under a timeout, giving the TLS stream ([`ServerStream`], on
//!   rustls's unbuffered API) and the client certificate's principal;
//! - [`TlsConnector`]: the client side over the same settings (truststore to verify the server,
//!   keystore as the client certificate, `ssl.endpoint.identification.algorithm`), what a broker
//!   uses to reach another broker's SSL listener;
//! - [`subject_dn`]: a certificate's subject as Java's RFC 2253 text, what the mapping rules match.
//!
//! Certificates are read when the listener is built and again on [`TlsListener::reload`] (Kafka's
//! dynamic `listener.name.<l>.ssl.keystore.*` update): new handshakes use the new stores, open
//! connections keep theirs, and stores that do not load leave the old ones in place.
//!
//! ```
//! use std::collections::BTreeMap;
//! use josef_config::listener::SecurityProtocol;
//! use josef_config::settings::Props;
//! use josef_tls::{ClientAuth, SslSettings, TlsListener};
//!
//! let key = rcgen::KeyPair::generate().unwrap();
//! let cert = rcgen::CertificateParams::new(vec!["localhost".into()]).unwrap().self_signed(&key).unwrap();
//! let mut p = Props::new(BTreeMap::from([
//!     ("ssl.keystore.type".to_string(), "PEM".to_string()),
//!     ("listener.name.client.ssl.keystore.certificate.chain".to_string(), cert.pem()),
//!     ("listener.name.client.ssl.keystore.key".to_string(), key.serialize_pem()),
//! ]));
//! let settings = SslSettings::from_props(&mut p, "CLIENT", SecurityProtocol::Ssl).unwrap();
//! SslSettings::take_unprefixed(&mut p).unwrap();
//! assert_eq!(p.into_remaining_keys().count(), 0);
//! assert_eq!(settings.client_auth, ClientAuth::None);
//! let listener = TlsListener::new(&settings).unwrap();
//! // `listener.accept(tcp_stream).await` runs the handshake and names the client.
//! # drop(listener);
//! ```
#![deny(missing_docs)]

mod connector;
mod listener;
mod opener;
pub mod pem;
mod records;
pub mod settings;
mod stream;
mod subject;
mod suites;

pub use connector::{tls_error, TlsConnector};
pub use listener::{HandshakeError, TlsConfigError, TlsListener, HANDSHAKE_TIMEOUT};
pub use settings::{ClientAuth, SslSettings};
pub use stream::ServerStream;
pub use subject::{subject_dn, SubjectError};

/// The README's example, run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
