//! The client side of Kafka's SASL exchange (what a broker runs when it connects to a SASL
//! listener of another broker, Kafka's `SaslClientAuthenticator`): SaslHandshake naming the
//! mechanism, then SaslAuthenticate round trips until the server accepts, for PLAIN and
//! SCRAM-SHA-256/512 with a username and password.
//!
//! Sans-IO like the server side: the caller sends what [`SaslClientExchange`] asks for and feeds
//! back the server's answers as the server authenticator's own [`HandshakeResponse`] and
//! [`AuthenticateResponse`] fields, so a test can wire one straight to the other.

use crate::authenticator::{AuthenticateResponse, HandshakeResponse};
use crate::client::scram::{ScramClient, ScramClientError};
use crate::mechanism::SaslMechanism;
use crate::scram::ScramMechanism;
use josef_protocol::ErrorCode;

/// Why a client exchange cannot start or failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SaslClientError {
    /// The mechanism has no password-based client here (OAUTHBEARER needs a token source).
    #[error("SASL mechanism {0} has no username/password client")]
    UnsupportedMechanism(SaslMechanism),
    /// The server does not enable the mechanism (UNSUPPORTED_SASL_MECHANISM).
    #[error("the server does not enable SASL mechanism {mechanism} (enabled: {enabled:?})")]
    MechanismNotEnabled {
        /// What was asked for.
        mechanism: String,
        /// What the server offers.
        enabled: Vec<String>,
    },
    /// The server refused the credentials (SASL_AUTHENTICATION_FAILED).
    #[error("authentication failed: {message}")]
    AuthenticationFailed {
        /// The server's message (Kafka's wording, e.g. "Authentication failed: Invalid username or password").
        message: String,
    },
    /// The server answered another error code.
    #[error("SASL {step} failed with error {code:?}: {message}")]
    Server {
        /// SaslHandshake or SaslAuthenticate.
        step: &'static str,
        /// The code.
        code: ErrorCode,
        /// The server's message, if any.
        message: String,
    },
    /// The SCRAM exchange broke (bad server-first, wrong server signature: the server does not
    /// know the password).
    #[error("SCRAM: {0}")]
    Scram(#[from] ScramClientError),
    /// A response came when none was expected, or the server claimed success too early.
    #[error("SASL exchange out of order: {0}")]
    OutOfOrder(&'static str),
}

impl SaslClientError {
    /// True when the server rejected the credentials themselves (as opposed to a mechanism or
    /// protocol mismatch): what an operator fixes in the JAAS entry.
    pub fn is_bad_credentials(&self) -> bool {
        matches!(
            self,
            SaslClientError::AuthenticationFailed { .. }
                | SaslClientError::Scram(ScramClientError::InvalidServerSignature)
        )
    }
}

#[derive(Debug)]
enum State {
    Handshake,
    /// PLAIN's single token was sent.
    PlainSent,
    /// SCRAM's client-first was sent; the next answer carries server-first.
    ScramFirstSent,
    /// SCRAM's client-final was sent; the next answer carries server-final.
    ScramFinalSent,
    Done,
    Failed,
}

/// One client-side SASL exchange: [`SaslClientExchange::mechanism`] goes in SaslHandshake, the
/// handshake answer gives the first SaslAuthenticate token, each SaslAuthenticate answer the next
/// one or the end.
#[derive(Debug)]
pub struct SaslClientExchange {
    mechanism: SaslMechanism,
    username: String,
    password: String,
    scram: Option<ScramClient>,
    state: State,
    session_lifetime_ms: i64,
}

/// What to do after an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientStep {
    /// Send these bytes as the next SaslAuthenticate `auth_bytes`.
    Send(Vec<u8>),
    /// Authenticated: requests may follow.
    Done,
}

impl SaslClientExchange {
    /// A PLAIN or SCRAM exchange for `username` / `password`. `nonce` is SCRAM's client nonce
    /// (printable, no `,`; random per exchange, e.g. [`crate::kafka_nonce`]); PLAIN ignores it.
    pub fn new(
        mechanism: SaslMechanism,
        username: &str,
        password: &str,
        nonce: &str,
    ) -> Result<SaslClientExchange, SaslClientError> {
        let scram = match mechanism {
            SaslMechanism::Plain => None,
            SaslMechanism::ScramSha256 => Some(ScramClient::new(
                ScramMechanism::Sha256,
                username,
                password,
                nonce,
            )),
            SaslMechanism::ScramSha512 => Some(ScramClient::new(
                ScramMechanism::Sha512,
                username,
                password,
                nonce,
            )),
            SaslMechanism::OAuthBearer => {
                return Err(SaslClientError::UnsupportedMechanism(mechanism))
            }
        };
        Ok(SaslClientExchange {
            mechanism,
            username: username.to_string(),
            password: password.to_string(),
            scram,
            state: State::Handshake,
            session_lifetime_ms: 0,
        })
    }

    /// The mechanism, as SaslHandshake names it.
    pub fn mechanism(&self) -> SaslMechanism {
        self.mechanism
    }

    /// KIP-368: the session lifetime the server gave with its success (0: unbounded). A client
    /// must re-authenticate before it ends; a broker's peer connection simply reconnects.
    pub fn session_lifetime_ms(&self) -> i64 {
        self.session_lifetime_ms
    }

    /// True once the server accepted the credentials.
    pub fn is_authenticated(&self) -> bool {
        matches!(self.state, State::Done)
    }

    fn fail<T>(&mut self, e: SaslClientError) -> Result<T, SaslClientError> {
        self.state = State::Failed;
        Err(e)
    }

    /// Takes the SaslHandshake answer; gives the first SaslAuthenticate token.
    pub fn on_handshake(&mut self, r: &HandshakeResponse) -> Result<Vec<u8>, SaslClientError> {
        if !matches!(self.state, State::Handshake) {
            return self.fail(SaslClientError::OutOfOrder("a second handshake answer"));
        }
        match r.error_code {
            ErrorCode::None => {}
            ErrorCode::UnsupportedSaslMechanism => {
                return self.fail(SaslClientError::MechanismNotEnabled {
                    mechanism: self.mechanism.name().to_string(),
                    enabled: r.mechanisms.clone(),
                })
            }
            code => {
                return self.fail(SaslClientError::Server {
                    step: "SaslHandshake",
                    code,
                    message: String::new(),
                })
            }
        }
        match &mut self.scram {
            None => {
                self.state = State::PlainSent;
                Ok(super::plain_message("", &self.username, &self.password))
            }
            Some(s) => {
                self.state = State::ScramFirstSent;
                Ok(s.client_first())
            }
        }
    }

    /// Takes a SaslAuthenticate answer; gives the next token or the end.
    pub fn on_authenticate(
        &mut self,
        r: &AuthenticateResponse,
    ) -> Result<ClientStep, SaslClientError> {
        match r.error_code {
            ErrorCode::None => {}
            ErrorCode::SaslAuthenticationFailed => {
                let message = r.error_message.clone().unwrap_or_default();
                return self.fail(SaslClientError::AuthenticationFailed { message });
            }
            code => {
                let message = r.error_message.clone().unwrap_or_default();
                return self.fail(SaslClientError::Server {
                    step: "SaslAuthenticate",
                    code,
                    message,
                });
            }
        }
        let state = std::mem::replace(&mut self.state, State::Failed);
        let step = match (state, self.scram.as_mut()) {
            (State::PlainSent, None) => ClientStep::Done,
            (State::ScramFirstSent, Some(s)) => {
                let last = s.client_final(&r.auth_bytes)?;
                self.state = State::ScramFinalSent;
                return Ok(ClientStep::Send(last));
            }
            (State::ScramFinalSent, Some(s)) => {
                s.verify_server_final(&r.auth_bytes)?;
                ClientStep::Done
            }
            _ => return Err(SaslClientError::OutOfOrder("an authenticate answer")),
        };
        self.state = State::Done;
        self.session_lifetime_ms = r.session_lifetime_ms;
        Ok(step)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::plain::PlainUsers;
    use crate::scram::{ScramCredential, ScramCredentials};
    use crate::{AuthenticatorConfig, CountingNonce, SaslListener, SaslServerFactory};

    fn listener(mechanisms: &[&str]) -> Arc<SaslListener> {
        let users = PlainUsers::from_jaas_config(
            r#"org.apache.kafka.common.security.plain.PlainLoginModule required user_broker="broker-secret";"#,
        )
        .unwrap();
        let mut scram = ScramCredentials::new();
        for m in [ScramMechanism::Sha256, ScramMechanism::Sha512] {
            scram.insert(
                m,
                "broker",
                ScramCredential::from_password(m, "broker-secret", b"salt-of-broker", 4096),
            );
        }
        SaslListener::new(
            AuthenticatorConfig::new(mechanisms.iter().copied()),
            SaslServerFactory::new()
                .with_plain(users)
                .with_scram(Arc::new(scram), Arc::new(CountingNonce::new("srv"))),
        )
        .unwrap()
    }

    /// Runs the client against the server authenticator; the client's result and the
    /// principal the server saw.
    fn run(
        server: &Arc<SaslListener>,
        mut client: SaslClientExchange,
    ) -> (Result<(), SaslClientError>, Option<String>) {
        let mut conn = server.connection();
        let hs = conn
            .handshake(1, client.mechanism().name())
            .response
            .unwrap();
        let mut token = match client.on_handshake(&hs) {
            Ok(t) => t,
            Err(e) => return (Err(e), None),
        };
        for _ in 0..4 {
            let out = conn.authenticate(2, &token, 0).response.unwrap();
            match client.on_authenticate(&out) {
                Ok(ClientStep::Send(next)) => token = next,
                Ok(ClientStep::Done) => {
                    return (Ok(()), conn.principal().map(|p| p.to_string()));
                }
                Err(e) => return (Err(e), conn.principal().map(|p| p.to_string())),
            }
        }
        panic!("exchange did not end");
    }

    #[test]
    fn plain_and_both_scram_hashes_authenticate_against_the_server() {
        for m in [
            SaslMechanism::Plain,
            SaslMechanism::ScramSha256,
            SaslMechanism::ScramSha512,
        ] {
            let server = listener(&[m.name()]);
            let client = SaslClientExchange::new(m, "broker", "broker-secret", "cnonce").unwrap();
            let (result, principal) = run(&server, client);
            assert_eq!(result, Ok(()), "{m}");
            assert_eq!(principal.as_deref(), Some("User:broker"), "{m}");
        }
    }

    #[test]
    fn a_wrong_password_is_reported_as_bad_credentials() {
        for m in [
            SaslMechanism::Plain,
            SaslMechanism::ScramSha256,
            SaslMechanism::ScramSha512,
        ] {
            let server = listener(&[m.name()]);
            let client = SaslClientExchange::new(m, "broker", "wrong", "cnonce").unwrap();
            let (result, principal) = run(&server, client);
            let e = result.unwrap_err();
            assert!(e.is_bad_credentials(), "{m}: {e}");
            assert!(e.to_string().contains("Authentication failed"), "{m}: {e}");
            assert_eq!(principal, None, "{m}");
        }
    }

    #[test]
    fn a_mechanism_the_server_does_not_enable_names_what_it_does() {
        let server = listener(&["PLAIN"]);
        let client =
            SaslClientExchange::new(SaslMechanism::ScramSha512, "broker", "broker-secret", "n")
                .unwrap();
        let e = run(&server, client).0.unwrap_err();
        assert_eq!(
            e,
            SaslClientError::MechanismNotEnabled {
                mechanism: "SCRAM-SHA-512".into(),
                enabled: vec!["PLAIN".into()],
            }
        );
        assert!(!e.is_bad_credentials());
    }

    #[test]
    fn a_server_that_does_not_know_the_password_is_caught_by_its_signature() {
        let mut client =
            SaslClientExchange::new(SaslMechanism::ScramSha256, "broker", "broker-secret", "cn")
                .unwrap();
        let ok = HandshakeResponse {
            error_code: ErrorCode::None,
            mechanisms: vec!["SCRAM-SHA-256".into()],
        };
        client.on_handshake(&ok).unwrap();
        let answer = |bytes: &[u8]| AuthenticateResponse {
            error_code: ErrorCode::None,
            error_message: None,
            auth_bytes: bytes.to_vec(),
            session_lifetime_ms: 0,
        };
        let step = client
            .on_authenticate(&answer(b"r=cnSRV,s=c2FsdA==,i=4096"))
            .unwrap();
        assert!(matches!(step, ClientStep::Send(_)));
        let e = client.on_authenticate(&answer(b"v=AAAA")).unwrap_err();
        assert!(e.is_bad_credentials(), "{e}");
        assert!(!client.is_authenticated());
        // Nothing more is accepted after a failure.
        assert!(client.on_authenticate(&answer(b"")).is_err());
    }

    #[test]
    fn hostile_server_first_messages_are_refused_without_work() {
        for first in [
            &b"r=cnX,s=c2FsdA==,i=4294967295"[..],
            b"r=cnX,s=c2FsdA==,i=1",
            b"r=other,s=c2FsdA==,i=4096",
            b"garbage",
            b"\xff\xfe",
        ] {
            let mut client =
                SaslClientExchange::new(SaslMechanism::ScramSha512, "u", "p", "cn").unwrap();
            client
                .on_handshake(&HandshakeResponse {
                    error_code: ErrorCode::None,
                    mechanisms: vec![],
                })
                .unwrap();
            let r = client.on_authenticate(&AuthenticateResponse {
                error_code: ErrorCode::None,
                error_message: None,
                auth_bytes: first.to_vec(),
                session_lifetime_ms: 0,
            });
            assert!(
                matches!(r, Err(SaslClientError::Scram(_))),
                "{first:?}: {r:?}"
            );
        }
    }

    #[test]
    fn out_of_order_answers_and_oauthbearer_are_errors() {
        assert_eq!(
            SaslClientExchange::new(SaslMechanism::OAuthBearer, "u", "p", "n").unwrap_err(),
            SaslClientError::UnsupportedMechanism(SaslMechanism::OAuthBearer)
        );
        let mut c = SaslClientExchange::new(SaslMechanism::Plain, "u", "p", "n").unwrap();
        let r = c.on_authenticate(&AuthenticateResponse {
            error_code: ErrorCode::None,
            error_message: None,
            auth_bytes: vec![],
            session_lifetime_ms: 0,
        });
        assert!(matches!(r, Err(SaslClientError::OutOfOrder(_))), "{r:?}");
    }
}
