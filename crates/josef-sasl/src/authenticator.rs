//! The connection-level authentication state machine of a SASL listener, after Kafka's
//! `SaslServerAuthenticator`, `KafkaChannel.maybeBeginServerReauthentication` and the expiry check
//! of `SocketServer.Processor`.
//!
//! The broker's connection layer asks [`ServerAuthenticator::admit`] about every request header
//! it reads and hands ApiVersions, SaslHandshake and SaslAuthenticate to the authenticator until
//! it is [`SaslState::Complete`]. After a SaslHandshake v0 the client sends raw size-prefixed
//! tokens instead of Kafka requests: [`ServerAuthenticator::expects_raw_tokens`] says so and
//! [`ServerAuthenticator::raw_token`] takes them.

use std::collections::BTreeMap;
use std::sync::Arc;

use josef_protocol::{ApiKey, ErrorCode};

use crate::error::{AuthFailure, SaslError};
use crate::factory::SaslServerFactory;
use crate::mechanism::{SaslMechanism, SaslServer, SaslStep};
use crate::principal::KafkaPrincipal;

/// `connection.failed.authentication.delay.ms` default.
pub const DEFAULT_FAILED_AUTHENTICATION_DELAY_MS: i64 = 100;
/// `sasl.server.max.receive.size` default.
pub const DEFAULT_SASL_SERVER_MAX_RECEIVE_SIZE: usize = 524_288;
/// `KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS`, in ms.
pub const MIN_REAUTH_INTERVAL_MS: i64 = 1_000;

/// A listener's SASL settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthenticatorConfig {
    /// `sasl.enabled.mechanisms`, in order; also the list every SaslHandshake answer carries.
    pub enabled_mechanisms: Vec<String>,
    /// `connections.max.reauth.ms` (0 = sessions do not expire for this reason).
    pub connections_max_reauth_ms: i64,
    /// `listener.name.<l>.<mechanism>.connections.max.reauth.ms` overrides.
    pub connections_max_reauth_ms_by_mechanism: BTreeMap<SaslMechanism, i64>,
    /// `connection.failed.authentication.delay.ms`: how long to wait before closing after a
    /// failed authentication.
    pub failed_authentication_delay_ms: i64,
    /// `sasl.server.max.receive.size`: the largest frame read before authentication completes.
    pub max_receive_size: usize,
}

impl AuthenticatorConfig {
    /// These mechanisms enabled, everything else at Kafka's defaults.
    pub fn new<S: Into<String>>(enabled_mechanisms: impl IntoIterator<Item = S>) -> Self {
        AuthenticatorConfig {
            enabled_mechanisms: enabled_mechanisms.into_iter().map(Into::into).collect(),
            connections_max_reauth_ms: 0,
            connections_max_reauth_ms_by_mechanism: BTreeMap::new(),
            failed_authentication_delay_ms: DEFAULT_FAILED_AUTHENTICATION_DELAY_MS,
            max_receive_size: DEFAULT_SASL_SERVER_MAX_RECEIVE_SIZE,
        }
    }

    /// `connections.max.reauth.ms` for `m`.
    pub fn max_reauth_ms(&self, m: SaslMechanism) -> i64 {
        self.connections_max_reauth_ms_by_mechanism
            .get(&m)
            .copied()
            .unwrap_or(self.connections_max_reauth_ms)
    }
}

/// A listener configuration that cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// An enabled mechanism was given nothing to run with (no JAAS users, no store).
    #[error("SASL mechanism {0} is enabled but not configured on this listener")]
    MechanismNotConfigured(String),
}

/// A SASL listener: its configuration and mechanisms, shared by its connections.
#[derive(Debug)]
pub struct SaslListener {
    config: AuthenticatorConfig,
    factory: SaslServerFactory,
}

impl SaslListener {
    /// Checks that every enabled mechanism this crate implements can run. A mechanism it does
    /// not implement (Kafka's default `GSSAPI`, a custom one) may stay enabled: it is listed in
    /// SaslHandshake answers as Kafka lists it, and a client asking for it gets
    /// UNSUPPORTED_SASL_MECHANISM.
    pub fn new(
        config: AuthenticatorConfig,
        factory: SaslServerFactory,
    ) -> Result<Arc<SaslListener>, ConfigError> {
        for name in &config.enabled_mechanisms {
            match SaslMechanism::from_name(name) {
                Some(m) if !factory.supports(m) => {
                    return Err(ConfigError::MechanismNotConfigured(name.clone()))
                }
                _ => {}
            }
        }
        Ok(Arc::new(SaslListener { config, factory }))
    }

    /// The configuration.
    pub fn config(&self) -> &AuthenticatorConfig {
        &self.config
    }

    /// The authenticator of a new connection.
    pub fn connection(self: &Arc<Self>) -> ServerAuthenticator {
        ServerAuthenticator {
            listener: Arc::clone(self),
            state: State::HandshakeOrVersions,
            raw_tokens: false,
            session: None,
            previous: None,
            last_reauth_start_ms: None,
        }
    }
}

/// The KIP-368 session lifetime to send in SaslAuthenticate v1+: the smaller of the credential's
/// remaining life and `connections.max.reauth.ms` (when positive), never negative; `None` (sent
/// as 0) when neither bounds the session.
pub fn session_lifetime_ms(
    credential_expiry_ms: Option<i64>,
    connections_max_reauth_ms: i64,
    now_ms: i64,
) -> Option<i64> {
    let max_reauth = (connections_max_reauth_ms > 0).then_some(connections_max_reauth_ms);
    let remaining = credential_expiry_ms.map(|e| e.saturating_sub(now_ms));
    let lifetime = match (remaining, max_reauth) {
        (None, None) => return None,
        (Some(r), None) => r,
        (None, Some(m)) => m,
        (Some(r), Some(m)) => r.min(m),
    };
    Some(lifetime.max(0))
}

/// Where the connection stands (Kafka's `SaslState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaslState {
    /// Nothing read yet: ApiVersions or SaslHandshake may come.
    HandshakeOrVersions,
    /// ApiVersions answered (or a re-authentication began): SaslHandshake must come.
    HandshakeRequest,
    /// A mechanism exchange is under way.
    Authenticate,
    /// A re-authentication asked for another mechanism; the next token fails.
    ReauthBadMechanism,
    /// Authenticated: every request is processed.
    Complete,
    /// Failed: the connection is closing.
    Failed,
}

enum State {
    HandshakeOrVersions,
    HandshakeRequest,
    Authenticate(Box<dyn SaslServer>),
    ReauthBadMechanism(AuthFailure),
    Complete,
    Failed,
}

/// An established session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The principal.
    pub principal: KafkaPrincipal,
    /// The mechanism.
    pub mechanism: SaslMechanism,
    /// When the session ends unless re-authenticated, in ms since the epoch.
    pub expires_at_ms: Option<i64>,
    /// The extensions the mechanism reported.
    pub extensions: BTreeMap<String, String>,
}

/// Why the connection closes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseReason {
    /// A request this state does not take (for example Metadata before authentication).
    UnexpectedRequest {
        /// The request's API key.
        api_key: i16,
    },
    /// A SaslHandshake or SaslAuthenticate version outside what Kafka supports.
    UnsupportedVersion,
    /// The handshake named a mechanism that is not enabled.
    UnsupportedMechanism,
    /// The mechanism refused the client.
    AuthenticationFailed,
    /// A token came in a state that takes none.
    IllegalSaslState,
    /// A request came after the session expired (KIP-368) without re-authentication.
    SessionExpired,
    /// A frame larger than `sasl.server.max.receive.size` before authentication completed.
    FrameTooLarge,
}

/// Close the connection after `delay_ms` (once any response is written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Close {
    /// Why.
    pub reason: CloseReason,
    /// How long to wait first (`connection.failed.authentication.delay.ms` after a failed
    /// authentication, else 0).
    pub delay_ms: i64,
}

/// The answer to one authenticator call: a response to write (if any), then maybe a close.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome<R> {
    /// The response to send.
    pub response: Option<R>,
    /// Close after sending it.
    pub close: Option<Close>,
}

/// The fields of a SaslHandshake response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandshakeResponse {
    /// NONE or UNSUPPORTED_SASL_MECHANISM.
    pub error_code: ErrorCode,
    /// The enabled mechanisms (always sent).
    pub mechanisms: Vec<String>,
}

/// The fields of a SaslAuthenticate response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthenticateResponse {
    /// NONE, SASL_AUTHENTICATION_FAILED or ILLEGAL_SASL_STATE.
    pub error_code: ErrorCode,
    /// The failure text.
    pub error_message: Option<String>,
    /// The mechanism's bytes (empty on failure).
    pub auth_bytes: Vec<u8>,
    /// KIP-368 lifetime (v1+), 0 when the session does not expire or the exchange goes on.
    pub session_lifetime_ms: i64,
}

/// What to do with a request the connection layer just read the header of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Hand it to this authenticator: ApiVersions (answer it as usual, then call
    /// [`ServerAuthenticator::api_versions_answered`]), SaslHandshake
    /// ([`ServerAuthenticator::handshake`]) or SaslAuthenticate
    /// ([`ServerAuthenticator::authenticate`]).
    Authenticator,
    /// Authenticated: process it as the session's principal.
    Process,
    /// Answer it with ILLEGAL_SASL_STATE (and this message where the response has one), then
    /// close if `close`.
    IllegalSaslState {
        /// The error message.
        message: Option<String>,
        /// Close after the answer.
        close: bool,
    },
    /// Close the connection without answering.
    Close(CloseReason),
}

/// One connection's authentication.
pub struct ServerAuthenticator {
    listener: Arc<SaslListener>,
    state: State,
    raw_tokens: bool,
    session: Option<Session>,
    /// The session being re-authenticated.
    previous: Option<Session>,
    last_reauth_start_ms: Option<i64>,
}

impl std::fmt::Debug for ServerAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerAuthenticator")
            .field("state", &self.state())
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

fn close(reason: CloseReason, delay_ms: i64) -> Option<Close> {
    Some(Close { reason, delay_ms })
}

impl ServerAuthenticator {
    /// The state.
    pub fn state(&self) -> SaslState {
        match self.state {
            State::HandshakeOrVersions => SaslState::HandshakeOrVersions,
            State::HandshakeRequest => SaslState::HandshakeRequest,
            State::Authenticate(_) => SaslState::Authenticate,
            State::ReauthBadMechanism(_) => SaslState::ReauthBadMechanism,
            State::Complete => SaslState::Complete,
            State::Failed => SaslState::Failed,
        }
    }

    /// True once authenticated (and not re-authenticating).
    pub fn is_authenticated(&self) -> bool {
        matches!(self.state, State::Complete)
    }

    /// The established session, if authenticated.
    pub fn session(&self) -> Option<&Session> {
        self.session.as_ref()
    }

    /// The authenticated principal.
    pub fn principal(&self) -> Option<&KafkaPrincipal> {
        self.session.as_ref().map(|s| &s.principal)
    }

    /// True when the next frame is a raw SASL token (after SaslHandshake v0), not a request.
    pub fn expects_raw_tokens(&self) -> bool {
        self.raw_tokens && matches!(self.state, State::Authenticate(_))
    }

    /// True while a KIP-368 re-authentication is under way.
    pub fn is_reauthenticating(&self) -> bool {
        self.previous.is_some()
    }

    /// The largest frame the connection may read now: `sasl.server.max.receive.size` until
    /// authenticated, `None` (the broker's own limit) after.
    pub fn max_receive_size(&self) -> Option<usize> {
        (!self.is_authenticated()).then_some(self.listener.config.max_receive_size)
    }

    /// Checks a frame length before reading it; a too-large frame fails the connection.
    pub fn check_frame_size(&mut self, size: usize) -> Result<(), CloseReason> {
        match self.max_receive_size() {
            Some(max) if size > max => {
                self.fail();
                Err(CloseReason::FrameTooLarge)
            }
            _ => Ok(()),
        }
    }

    fn fail(&mut self) {
        self.state = State::Failed;
        self.session = None;
        self.previous = None;
    }

    fn failure_delay(&self) -> i64 {
        self.listener.config.failed_authentication_delay_ms
    }

    /// Decides about a request with this API key at `now_ms`.
    pub fn admit(&mut self, api_key: i16, now_ms: i64) -> Admission {
        let key = ApiKey::from_i16(api_key);
        let unexpected = CloseReason::UnexpectedRequest { api_key };
        match &self.state {
            State::HandshakeOrVersions => match key {
                Some(ApiKey::ApiVersions | ApiKey::SaslHandshake) => Admission::Authenticator,
                _ => {
                    self.fail();
                    Admission::Close(unexpected)
                }
            },
            State::HandshakeRequest => match key {
                Some(ApiKey::SaslHandshake) => Admission::Authenticator,
                _ => {
                    self.fail();
                    Admission::Close(unexpected)
                }
            },
            State::Authenticate(_) | State::ReauthBadMechanism(_) => {
                if self.raw_tokens {
                    self.fail();
                    return Admission::Close(unexpected);
                }
                match key {
                    Some(ApiKey::SaslAuthenticate) => Admission::Authenticator,
                    _ => {
                        let name = key.map_or("UNKNOWN", ApiKey::name);
                        self.fail();
                        Admission::IllegalSaslState {
                            message: Some(format!(
                                "Unexpected Kafka request of type {name} during SASL authentication."
                            )),
                            close: true,
                        }
                    }
                }
            }
            State::Complete => self.admit_authenticated(key, now_ms),
            State::Failed => Admission::Close(CloseReason::AuthenticationFailed),
        }
    }

    fn admit_authenticated(&mut self, key: Option<ApiKey>, now_ms: i64) -> Admission {
        let Some(session) = &self.session else {
            return Admission::Close(CloseReason::AuthenticationFailed);
        };
        let may_reauth = session.expires_at_ms.is_some()
            && self
                .last_reauth_start_ms
                .map_or(true, |t| now_ms.saturating_sub(t) >= MIN_REAUTH_INTERVAL_MS);
        if key == Some(ApiKey::SaslHandshake) && may_reauth {
            self.last_reauth_start_ms = Some(now_ms);
            self.previous = self.session.take();
            self.state = State::HandshakeRequest;
            return Admission::Authenticator;
        }
        if session.expires_at_ms.is_some_and(|e| now_ms >= e) {
            self.fail();
            return Admission::Close(CloseReason::SessionExpired);
        }
        match key {
            Some(ApiKey::SaslHandshake) => Admission::IllegalSaslState {
                message: None,
                close: false,
            },
            Some(ApiKey::SaslAuthenticate) => Admission::IllegalSaslState {
                message: Some(
                    "SaslAuthenticate request received after successful authentication".into(),
                ),
                close: false,
            },
            _ => Admission::Process,
        }
    }

    /// The broker answered the ApiVersions it was handed with `error_code`. A successful answer
    /// moves on to waiting for SaslHandshake; an UNSUPPORTED_VERSION answer lets the client retry.
    pub fn api_versions_answered(&mut self, error_code: ErrorCode) {
        if matches!(self.state, State::HandshakeOrVersions) && error_code == ErrorCode::None {
            self.state = State::HandshakeRequest;
        }
    }

    /// Handles SaslHandshake `version` asking for `mechanism`.
    pub fn handshake(&mut self, version: i16, mechanism: &str) -> Outcome<HandshakeResponse> {
        if !matches!(
            self.state,
            State::HandshakeOrVersions | State::HandshakeRequest
        ) {
            self.fail();
            return Outcome {
                response: None,
                close: close(CloseReason::IllegalSaslState, 0),
            };
        }
        let (min, max) = ApiKey::SaslHandshake.valid_versions();
        if !(min..=max).contains(&version) {
            self.fail();
            return Outcome {
                response: None,
                close: close(CloseReason::UnsupportedVersion, 0),
            };
        }
        let config = &self.listener.config;
        let mechanisms = config.enabled_mechanisms.clone();
        let runnable = SaslMechanism::from_name(mechanism).is_some();
        if !runnable || !mechanisms.iter().any(|m| m == mechanism) {
            self.fail();
            return Outcome {
                response: Some(HandshakeResponse {
                    error_code: ErrorCode::UnsupportedSaslMechanism,
                    mechanisms,
                }),
                close: close(CloseReason::UnsupportedMechanism, self.failure_delay()),
            };
        }
        self.raw_tokens = version == 0;
        let previous = self.previous.as_ref().map(|p| p.mechanism.name());
        self.state = match previous {
            Some(prev) if prev != mechanism => {
                State::ReauthBadMechanism(AuthFailure::ReauthMechanismChanged {
                    requested: mechanism.to_string(),
                    previous: prev.to_string(),
                })
            }
            // Every enabled mechanism was checked to be creatable when the listener was built.
            _ => match self.listener.factory.create(mechanism) {
                Ok(server) => State::Authenticate(server),
                Err(_) => State::Failed,
            },
        };
        Outcome {
            response: Some(HandshakeResponse {
                error_code: ErrorCode::None,
                mechanisms,
            }),
            close: None,
        }
    }

    /// Handles SaslAuthenticate `version` carrying `auth_bytes`, at `now_ms`.
    pub fn authenticate(
        &mut self,
        version: i16,
        auth_bytes: &[u8],
        now_ms: i64,
    ) -> Outcome<AuthenticateResponse> {
        if self.is_authenticated() {
            return Outcome {
                response: Some(AuthenticateResponse {
                    error_code: ErrorCode::IllegalSaslState,
                    error_message: Some(
                        "SaslAuthenticate request received after successful authentication".into(),
                    ),
                    auth_bytes: Vec::new(),
                    session_lifetime_ms: 0,
                }),
                close: None,
            };
        }
        let (min, max) = ApiKey::SaslAuthenticate.valid_versions();
        if self.raw_tokens || !(min..=max).contains(&version) {
            let reason = if self.raw_tokens {
                CloseReason::UnexpectedRequest {
                    api_key: ApiKey::SaslAuthenticate as i16,
                }
            } else {
                CloseReason::UnsupportedVersion
            };
            self.fail();
            return Outcome {
                response: None,
                close: close(reason, 0),
            };
        }
        match self.step(auth_bytes, now_ms) {
            Ok((bytes, lifetime)) => Outcome {
                response: Some(AuthenticateResponse {
                    error_code: ErrorCode::None,
                    error_message: None,
                    auth_bytes: bytes,
                    session_lifetime_ms: lifetime,
                }),
                close: None,
            },
            Err(StepError::Refused(message)) => Outcome {
                response: Some(AuthenticateResponse {
                    error_code: ErrorCode::SaslAuthenticationFailed,
                    error_message: Some(message),
                    auth_bytes: Vec::new(),
                    session_lifetime_ms: 0,
                }),
                close: close(CloseReason::AuthenticationFailed, self.failure_delay()),
            },
            Err(StepError::Illegal) => Outcome {
                response: None,
                close: close(CloseReason::IllegalSaslState, 0),
            },
        }
    }

    /// Handles a raw token of the SaslHandshake v0 flow; the response (possibly empty) is sent
    /// with a 4-byte size prefix. A failure sends nothing and closes.
    pub fn raw_token(&mut self, token: &[u8], now_ms: i64) -> Outcome<Vec<u8>> {
        if !self.expects_raw_tokens() {
            self.fail();
            return Outcome {
                response: None,
                close: close(CloseReason::IllegalSaslState, 0),
            };
        }
        if token.len() > self.listener.config.max_receive_size {
            self.fail();
            return Outcome {
                response: None,
                close: close(CloseReason::FrameTooLarge, 0),
            };
        }
        match self.step(token, now_ms) {
            Ok((bytes, _)) => Outcome {
                response: Some(bytes),
                close: None,
            },
            Err(StepError::Refused(_)) => Outcome {
                response: None,
                close: close(CloseReason::AuthenticationFailed, self.failure_delay()),
            },
            Err(StepError::Illegal) => Outcome {
                response: None,
                close: close(CloseReason::IllegalSaslState, 0),
            },
        }
    }

    /// Feeds one token to the mechanism: the bytes to send and the session lifetime on success.
    fn step(&mut self, token: &[u8], now_ms: i64) -> Result<(Vec<u8>, i64), StepError> {
        let reauth = self.previous.is_some();
        let server = match std::mem::replace(&mut self.state, State::Failed) {
            State::Authenticate(server) => server,
            State::ReauthBadMechanism(failure) => {
                let mechanism = self.previous.as_ref().map_or("", |p| p.mechanism.name());
                let message = failure.client_message(mechanism, reauth);
                self.fail();
                return Err(StepError::Refused(message));
            }
            _ => {
                self.fail();
                return Err(StepError::Illegal);
            }
        };
        let mut server = server;
        let mechanism = server.mechanism();
        match server.evaluate_response(token, now_ms) {
            Ok(SaslStep::Challenge(bytes)) => {
                self.state = State::Authenticate(server);
                Ok((bytes, 0))
            }
            Ok(SaslStep::Complete(done)) => {
                if let Some(prev) = &self.previous {
                    if prev.principal != done.principal {
                        let failure = AuthFailure::ReauthPrincipalChanged {
                            previous_type: prev.principal.principal_type.clone(),
                            previous_name: prev.principal.name.clone(),
                            new_type: done.principal.principal_type.clone(),
                            new_name: done.principal.name.clone(),
                        };
                        self.fail();
                        return Err(StepError::Refused(failure.to_string()));
                    }
                }
                let lifetime = session_lifetime_ms(
                    done.credential_expiry_ms,
                    self.listener.config.max_reauth_ms(mechanism),
                    now_ms,
                );
                self.session = Some(Session {
                    principal: done.principal,
                    mechanism,
                    expires_at_ms: lifetime.map(|l| now_ms.saturating_add(l)),
                    extensions: done.extensions,
                });
                self.previous = None;
                self.state = State::Complete;
                Ok((done.response, lifetime.unwrap_or(0)))
            }
            Err(SaslError::Authentication(failure)) => {
                self.fail();
                Err(StepError::Refused(
                    failure.client_message(mechanism.name(), reauth),
                ))
            }
            Err(SaslError::IllegalSaslState { .. } | SaslError::UnsupportedMechanism { .. }) => {
                self.fail();
                Err(StepError::Illegal)
            }
        }
    }
}

enum StepError {
    /// SASL_AUTHENTICATION_FAILED with this message.
    Refused(String),
    /// No answer: close.
    Illegal,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifetime_is_the_smaller_bound() {
        assert_eq!(session_lifetime_ms(None, 0, 100), None);
        assert_eq!(session_lifetime_ms(None, 5000, 100), Some(5000));
        assert_eq!(session_lifetime_ms(Some(1100), 0, 100), Some(1000));
        assert_eq!(session_lifetime_ms(Some(1100), 500, 100), Some(500));
        assert_eq!(session_lifetime_ms(Some(1100), 5000, 100), Some(1000));
        assert_eq!(session_lifetime_ms(Some(50), 5000, 100), Some(0));
    }
}
