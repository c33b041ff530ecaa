//! SASL on a connection of a SASL_PLAINTEXT or SASL_SSL listener: the connection layer hands
//! every frame to [`SaslConnection::on_frame`] first, which drives josef-sasl's
//! [`ServerAuthenticator`] (SaslHandshake, SaslAuthenticate, the raw tokens after a v0 handshake,
//! KIP-368 re-authentication and session expiry) and lets through only what the authenticator
//! admits: ApiVersions before authentication, everything after it, as the session's principal.
//!
//! Also here: how a listener's mechanisms are built from its settings (PLAIN users from
//! `sasl.jaas.config`, SCRAM credentials from the metadata image, OAUTHBEARER's unsecured JWS
//! validator).

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use josef_protocol::messages::{SaslAuthenticateResponse, SaslHandshakeResponse};
use josef_protocol::{
    decode_request_frame, encode_response_frame_chunks, ApiKey, ErrorCode, FrameChunks,
    RequestBody, ResponseBody, StrBytes,
};
use josef_sasl::jaas::JaasConfig;
use josef_sasl::oauthbearer::{UnsecuredJwsValidator, UnsecuredValidatorConfig};
use josef_sasl::plain::PlainUsers;
use josef_sasl::scram::{ScramCredential, ScramCredentialStore, ScramMechanism};
use josef_sasl::{
    Admission, AuthenticatorConfig, Close, SaslListener, SaslMechanism, SaslServerFactory,
    ServerAuthenticator,
};

use crate::connection::{ConnectionInfo, Outcome};
use crate::security_config::SaslSettings;

/// Where SCRAM credentials come from: the metadata image in force when a login starts.
pub type ImageSource = Arc<dyn Fn() -> Arc<josef_metadata::MetadataImage> + Send + Sync>;

/// SCRAM credentials of the metadata image's UserScramCredentialRecords.
struct ImageScramStore {
    image: ImageSource,
}

impl ScramCredentialStore for ImageScramStore {
    fn scram_credential(&self, m: ScramMechanism, username: &str) -> Option<ScramCredential> {
        let image = (self.image)();
        let r = image
            .scram_credentials()
            .get(&(username.to_string(), m.mechanism_type()))?;
        Some(ScramCredential {
            salt: r.salt.to_vec(),
            stored_key: r.stored_key.to_vec(),
            server_key: r.server_key.to_vec(),
            iterations: u32::try_from(r.iterations).ok()?,
        })
    }
}

/// Why a SASL listener cannot start.
#[derive(Debug, thiserror::Error)]
pub enum SaslConfigError {
    /// A JAAS text does not parse or misses what a mechanism needs.
    #[error("{mechanism} sasl.jaas.config: {reason}")]
    Jaas {
        /// The mechanism (lower case, as in the setting name).
        mechanism: String,
        /// What is wrong.
        reason: String,
    },
    /// An enabled mechanism has nothing to run with.
    #[error(transparent)]
    Listener(#[from] josef_sasl::ConfigError),
}

/// Builds the SASL side of one listener.
pub fn listener(
    settings: &SaslSettings,
    image: ImageSource,
) -> Result<Arc<SaslListener>, SaslConfigError> {
    let mut factory = SaslServerFactory::new();
    let jaas_err = |mechanism: &str, reason: String| SaslConfigError::Jaas {
        mechanism: mechanism.to_string(),
        reason,
    };
    for name in &settings.enabled_mechanisms {
        let lower = name.to_ascii_lowercase();
        match SaslMechanism::from_name(name) {
            Some(SaslMechanism::Plain) => {
                let text = settings.jaas_config.get(&lower).ok_or_else(|| {
                    jaas_err(
                        &lower,
                        "PLAIN needs listener.name.<listener>.plain.sasl.jaas.config (or sasl.jaas.config) with user_<name>=\"<password>\" options".into(),
                    )
                })?;
                let users = PlainUsers::from_jaas_config(text)
                    .map_err(|e| jaas_err(&lower, e.to_string()))?;
                factory = factory.with_plain(users);
            }
            Some(SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512) => {
                let store = Arc::new(ImageScramStore {
                    image: image.clone(),
                });
                let nonces = Arc::new(|| josef_sasl::kafka_nonce(rand::random()));
                factory = factory.with_scram(store, nonces);
            }
            Some(SaslMechanism::OAuthBearer) => {
                let config = match settings.jaas_config.get(&lower) {
                    None => UnsecuredValidatorConfig::default(),
                    Some(text) => {
                        let jaas =
                            JaasConfig::parse(text).map_err(|e| jaas_err(&lower, e.to_string()))?;
                        let entry = jaas
                            .entries
                            .first()
                            .ok_or_else(|| jaas_err(&lower, "no login module".into()))?;
                        UnsecuredValidatorConfig::from_jaas_options(&entry.options)
                            .map_err(|e| jaas_err(&lower, e.to_string()))?
                    }
                };
                factory = factory.with_oauthbearer(Arc::new(UnsecuredJwsValidator::new(config)));
            }
            // GSSAPI and other mechanisms stay enabled: a client asking for them is told
            // UNSUPPORTED_SASL_MECHANISM.
            None => {}
        }
    }
    if !settings
        .enabled_mechanisms
        .iter()
        .any(|m| SaslMechanism::from_name(m).is_some())
    {
        tracing::warn!(
            mechanisms = ?settings.enabled_mechanisms,
            "no enabled SASL mechanism is one Josef implements (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER): every login on this listener fails; set sasl.enabled.mechanisms"
        );
    }
    let mut config = AuthenticatorConfig::new(settings.enabled_mechanisms.iter().cloned());
    config.connections_max_reauth_ms = settings.connections_max_reauth_ms;
    for (m, v) in &settings.connections_max_reauth_ms_by_mechanism {
        if let Some(m) = SaslMechanism::from_name(m) {
            config.connections_max_reauth_ms_by_mechanism.insert(m, *v);
        }
    }
    config.failed_authentication_delay_ms = settings.failed_authentication_delay_ms;
    config.max_receive_size = usize::try_from(settings.max_receive_size).unwrap_or(0);
    Ok(SaslListener::new(config, factory)?)
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// What the connection does with a frame.
pub enum Gate {
    /// Hand it to the request handler.
    Handle,
    /// Answer (or close) without the handler.
    Answer(Outcome),
}

/// The SASL state of one connection.
pub struct SaslConnection {
    auth: ServerAuthenticator,
}

impl std::fmt::Debug for SaslConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.auth.fmt(f)
    }
}

fn close_outcome(response: Option<FrameChunks>, close: &Close) -> Outcome {
    let reason = format!("SASL: {:?}", close.reason);
    match response {
        Some(frame) => Outcome::RespondAndClose {
            frame,
            reason,
            delay: Duration::from_millis(close.delay_ms.max(0) as u64),
        },
        None => Outcome::Close(reason),
    }
}

fn encode(correlation_id: i32, key: ApiKey, version: i16, body: ResponseBody) -> Outcome {
    match encode_response_frame_chunks(correlation_id, key, version, &body) {
        Ok(frame) => Outcome::Respond(frame),
        Err(e) => Outcome::Close(format!("cannot encode {key:?} v{version}: {e}")),
    }
}

fn with_close(o: Outcome, close: Option<&Close>) -> Outcome {
    match (o, close) {
        (Outcome::Respond(frame), Some(c)) => close_outcome(Some(frame), c),
        (o, _) => o,
    }
}

impl SaslConnection {
    /// A new connection of `listener`.
    pub fn new(listener: &Arc<SaslListener>) -> Self {
        SaslConnection {
            auth: listener.connection(),
        }
    }

    /// The largest frame the connection may read now (`sasl.server.max.receive.size` before
    /// authentication).
    pub fn max_receive_size(&self) -> Option<usize> {
        self.auth.max_receive_size()
    }

    /// Decides about one frame; sets `info.principal` once authenticated.
    pub fn on_frame(&mut self, info: &mut ConnectionInfo, frame: &Bytes) -> Gate {
        let now = now_ms();
        if self.auth.expects_raw_tokens() {
            let out = self.auth.raw_token(frame, now);
            self.sync_principal(info);
            let response = out.response.map(|bytes| {
                let mut f = FrameChunks::new();
                let len = i32::try_from(bytes.len()).unwrap_or(i32::MAX);
                bytes::BufMut::put_slice(&mut f, &len.to_be_bytes());
                bytes::BufMut::put_slice(&mut f, &bytes);
                f
            });
            return Gate::Answer(match (&out.close, response) {
                (Some(c), r) => close_outcome(r, c),
                (None, Some(r)) => Outcome::Respond(r),
                (None, None) => Outcome::NoResponse,
            });
        }
        if frame.len() < 8 {
            return Gate::Answer(Outcome::Close("SASL: request too short".into()));
        }
        let key = i16::from_be_bytes([frame[0], frame[1]]);
        let version = i16::from_be_bytes([frame[2], frame[3]]);
        let correlation_id = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
        match self.auth.admit(key, now) {
            Admission::Process => Gate::Handle,
            Admission::Close(reason) => {
                Gate::Answer(Outcome::Close(format!("SASL: {reason:?} (api key {key})")))
            }
            Admission::IllegalSaslState { message, close } => {
                let body = match ApiKey::from_i16(key) {
                    Some(ApiKey::SaslHandshake) => {
                        ResponseBody::SaslHandshake(SaslHandshakeResponse {
                            error_code: ErrorCode::IllegalSaslState.code(),
                            ..Default::default()
                        })
                    }
                    Some(ApiKey::SaslAuthenticate) => {
                        ResponseBody::SaslAuthenticate(SaslAuthenticateResponse {
                            error_code: ErrorCode::IllegalSaslState.code(),
                            error_message: message.map(StrBytes::from),
                            ..Default::default()
                        })
                    }
                    // Another request during the exchange: Kafka fails the connection.
                    _ => {
                        return Gate::Answer(Outcome::Close(
                            message.unwrap_or_else(|| "SASL: illegal state".into()),
                        ))
                    }
                };
                let o = encode(
                    correlation_id,
                    ApiKey::from_i16(key).unwrap_or(ApiKey::SaslHandshake),
                    version,
                    body,
                );
                Gate::Answer(if close {
                    with_close(
                        o,
                        Some(&Close {
                            reason: josef_sasl::CloseReason::IllegalSaslState,
                            delay_ms: 0,
                        }),
                    )
                } else {
                    o
                })
            }
            Admission::Authenticator => match ApiKey::from_i16(key) {
                Some(ApiKey::ApiVersions) => {
                    let (min, max) = ApiKey::ApiVersions.valid_versions();
                    // The dispatcher answers every version in the codec's range without error.
                    if (min..=max).contains(&version) {
                        self.auth.api_versions_answered(ErrorCode::None);
                    }
                    Gate::Handle
                }
                Some(ApiKey::SaslHandshake) | Some(ApiKey::SaslAuthenticate) => {
                    Gate::Answer(self.exchange(info, frame.clone(), now))
                }
                _ => Gate::Answer(Outcome::Close(format!("SASL: unexpected api key {key}"))),
            },
        }
    }

    fn exchange(&mut self, info: &mut ConnectionInfo, frame: Bytes, now: i64) -> Outcome {
        let (header, body) = match decode_request_frame(frame) {
            Ok(x) => x,
            Err(e) => return Outcome::Close(format!("SASL: {e}")),
        };
        let (corr, v) = (header.correlation_id, header.request_api_version);
        match body {
            RequestBody::SaslHandshake(r) => {
                let out = self.auth.handshake(v, &r.mechanism);
                let o = match out.response {
                    Some(h) => encode(
                        corr,
                        ApiKey::SaslHandshake,
                        v,
                        ResponseBody::SaslHandshake(SaslHandshakeResponse {
                            error_code: h.error_code.code(),
                            mechanisms: h.mechanisms.into_iter().map(StrBytes::from).collect(),
                        }),
                    ),
                    None => Outcome::NoResponse,
                };
                match (&out.close, o) {
                    (Some(c), Outcome::NoResponse) => close_outcome(None, c),
                    (c, o) => with_close(o, c.as_ref()),
                }
            }
            RequestBody::SaslAuthenticate(r) => {
                let out = self.auth.authenticate(v, &r.auth_bytes, now);
                self.sync_principal(info);
                let o = match out.response {
                    Some(a) => encode(
                        corr,
                        ApiKey::SaslAuthenticate,
                        v,
                        ResponseBody::SaslAuthenticate(SaslAuthenticateResponse {
                            error_code: a.error_code.code(),
                            error_message: a.error_message.map(StrBytes::from),
                            auth_bytes: Bytes::from(a.auth_bytes),
                            session_lifetime_ms: a.session_lifetime_ms,
                            ..Default::default()
                        }),
                    ),
                    None => Outcome::NoResponse,
                };
                match (&out.close, o) {
                    (Some(c), Outcome::NoResponse) => close_outcome(None, c),
                    (c, o) => with_close(o, c.as_ref()),
                }
            }
            other => Outcome::Close(format!("SASL: unexpected {:?}", other.api_key())),
        }
    }

    fn sync_principal(&self, info: &mut ConnectionInfo) {
        if self.auth.is_authenticated() {
            if let Some(p) = self.auth.principal() {
                info.principal =
                    josef_authorizer::KafkaPrincipal::new(p.principal_type.clone(), p.name.clone());
            }
        }
    }
}
