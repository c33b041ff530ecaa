//! Kafka's SASL mechanisms as sans-IO, deterministic server-side state machines, plus the
//! connection-level authenticator a broker drives around them.
//!
//! - [`SaslServer`]: one mechanism session. Feed it each client token (SaslAuthenticate's
//!   `auth_bytes`, or a raw token after SaslHandshake v0) with the current time; it answers a
//!   challenge, a success with the [`KafkaPrincipal`] and the credential's expiry, or a typed
//!   [`SaslError`] that maps to Kafka's error code and message.
//! - Mechanisms: [`plain`] (users from `sasl.jaas.config`, parsed by [`jaas`]), [`scram`]
//!   (SCRAM-SHA-256/512 over a [`scram::ScramCredentialStore`]), [`oauthbearer`] (Kafka's unsecured
//!   JWS validation, or any [`oauthbearer::OAuthBearerValidator`]).
//! - [`ServerAuthenticator`]: which requests a connection may send in which state, the
//!   SaslHandshake answer, KIP-368 session lifetimes and re-authentication, and when to close.
//! - [`gate`]: the same over request frames: a connection hands it every frame with the time and
//!   gets back encoded answers (or a close) or "pass to the handler", as the session's principal.
//! - [`settings`]: a listener's `sasl.*` settings (listener- and mechanism-prefixed, as Kafka
//!   reads them) from a [`josef_config::settings::Props`], and the [`SaslListener`] they build.
//! - [`ssl_principal`]: `ssl.principal.mapping.rules`, the principal of a TLS client certificate.
//! - [`client`]: the client side of each mechanism, and [`client::SaslClientExchange`], the
//!   whole PLAIN / SCRAM login as a client (a broker connecting to another broker).
//!
//! No clock, socket or random source inside: time is an argument and the SCRAM server nonce comes
//! from a [`NonceSource`].
//!
//! ```
//! use std::sync::Arc;
//! use josef_sasl::{client, AuthenticatorConfig, SaslListener, SaslServerFactory, Admission};
//! use josef_sasl::plain::PlainUsers;
//! use josef_protocol::{ApiKey, ErrorCode};
//!
//! let users = PlainUsers::from_jaas_config(
//!     r#"org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";"#,
//! ).unwrap();
//! let listener = SaslListener::new(
//!     AuthenticatorConfig::new(["PLAIN"]),
//!     SaslServerFactory::new().with_plain(users),
//! ).unwrap();
//! let mut conn = listener.connection();
//!
//! assert_eq!(conn.admit(ApiKey::Metadata as i16, 0), Admission::Close(
//!     josef_sasl::CloseReason::UnexpectedRequest { api_key: 3 }));
//! # let mut conn = listener.connection();
//! assert_eq!(conn.admit(ApiKey::SaslHandshake as i16, 0), Admission::Authenticator);
//! let hs = conn.handshake(1, "PLAIN").response.unwrap();
//! assert_eq!((hs.error_code, hs.mechanisms), (ErrorCode::None, vec!["PLAIN".to_string()]));
//! assert_eq!(conn.admit(ApiKey::SaslAuthenticate as i16, 0), Admission::Authenticator);
//! let out = conn.authenticate(2, &client::plain_message("", "alice", "alice-secret"), 0);
//! assert_eq!(out.response.unwrap().error_code, ErrorCode::None);
//! assert_eq!(conn.principal().unwrap().to_string(), "User:alice");
//! assert_eq!(conn.admit(ApiKey::Metadata as i16, 0), Admission::Process);
//! ```
#![deny(missing_docs)]

mod authenticator;
pub mod client;
mod error;
mod factory;
pub mod gate;
pub mod jaas;
mod mechanism;
mod nonce;
pub mod oauthbearer;
pub mod plain;
mod principal;
pub mod scram;
pub mod settings;
pub mod ssl_principal;

pub use authenticator::{
    session_lifetime_ms, Admission, AuthenticateResponse, AuthenticatorConfig, Close, CloseReason,
    ConfigError, HandshakeResponse, Outcome, SaslListener, SaslState, ServerAuthenticator, Session,
    DEFAULT_FAILED_AUTHENTICATION_DELAY_MS, DEFAULT_SASL_SERVER_MAX_RECEIVE_SIZE,
    MIN_REAUTH_INTERVAL_MS,
};
pub use error::{generic_failure_message, AuthFailure, SaslError};
pub use factory::SaslServerFactory;
pub use mechanism::{Authenticated, SaslMechanism, SaslServer, SaslStep};
pub use nonce::{kafka_nonce, CountingNonce, NonceSource};
pub use principal::KafkaPrincipal;

/// The README's example, run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
