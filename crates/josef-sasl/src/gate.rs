//! The SASL gate of one connection of a SASL_PLAINTEXT or SASL_SSL listener, over request frames
//! (each without its 4-byte length prefix): it drives a [`ServerAuthenticator`] (SaslHandshake,
//! SaslAuthenticate, the raw tokens after a v0 handshake, KIP-368 re-authentication and session
//! expiry), answers the exchange itself with encoded responses, and lets through only what the
//! authenticator admits: ApiVersions before authentication, everything after it.
//!
//! Sans-IO: a frame and the current time in, a [`Gate`] out. The caller reads frames no larger
//! than [`SaslGate::max_receive_size`] (`sasl.server.max.receive.size` before authentication),
//! writes the answers, closes when told (after the delay), and runs the requests let through as
//! [`SaslGate::principal`].
//!
//! ```
//! use std::sync::Arc;
//! use bytes::Bytes;
//! use josef_protocol::messages::SaslHandshakeRequest;
//! use josef_protocol::{encode_request_frame, ApiKey, RequestBody, RequestHeader, StrBytes};
//! use josef_sasl::gate::{Answer, Gate, SaslGate};
//! use josef_sasl::plain::PlainUsers;
//! use josef_sasl::{AuthenticatorConfig, SaslListener, SaslServerFactory};
//!
//! let users = PlainUsers::new().with_user("alice", "secret");
//! let listener = SaslListener::new(
//!     AuthenticatorConfig::new(["PLAIN"]),
//!     SaslServerFactory::new().with_plain(users),
//! ).unwrap();
//! let mut gate = SaslGate::new(&listener);
//!
//! // Metadata (api key 3) before authentication: the connection closes without an answer.
//! let metadata = Bytes::from_static(&[0, 3, 0, 12, 0, 0, 0, 1, 0, 0]);
//! assert!(matches!(gate.on_frame(&metadata, 0), Gate::Answer(Answer::Close(_))));
//!
//! let mut gate = SaslGate::new(&listener);
//! let header = RequestHeader { request_api_key: ApiKey::SaslHandshake as i16, request_api_version: 1,
//!     correlation_id: 7, client_id: None, ..Default::default() };
//! let body = RequestBody::SaslHandshake(SaslHandshakeRequest { mechanism: StrBytes::from_static_str("PLAIN"), ..Default::default() });
//! let mut buf = bytes::BytesMut::new();
//! encode_request_frame(&header, &body, &mut buf).unwrap();
//! // The encoded frame starts with its length prefix; the gate takes what follows it.
//! match gate.on_frame(&buf.freeze().slice(4..), 0) {
//!     Gate::Answer(Answer::Respond(response)) => assert!(response.len() > 8),
//!     _ => panic!("a SaslHandshake is answered by the gate"),
//! }
//! assert_eq!(gate.principal(), None);
//! ```

use std::sync::Arc;

use bytes::Bytes;
use josef_protocol::messages::{SaslAuthenticateResponse, SaslHandshakeResponse};
use josef_protocol::{
    decode_request_frame, encode_response_frame_chunks, ApiKey, EncodeError, ErrorCode,
    FrameChunks, FrameError, RequestBody, ResponseBody, StrBytes,
};

use crate::authenticator::{Admission, Close, CloseReason, SaslListener, ServerAuthenticator};
use crate::principal::KafkaPrincipal;

/// What the connection does with a frame.
#[derive(Debug)]
pub enum Gate {
    /// Hand it to the request handler, as [`SaslGate::principal`] (ApiVersions before
    /// authentication, any request after it).
    Handle,
    /// Answer (or close) without the handler.
    Answer(Answer),
}

/// The gate's own answer to a frame.
#[derive(Debug)]
pub enum Answer {
    /// Send this complete frame (length prefix included).
    Respond(FrameChunks),
    /// Send this frame, then close after `close.delay_ms` (a failed authentication waits
    /// `connection.failed.authentication.delay.ms`, as Kafka).
    RespondAndClose {
        /// The last response.
        frame: FrameChunks,
        /// Why and when the connection closes.
        close: Close,
    },
    /// Nothing to send (a SaslHandshake version the authenticator does not answer).
    NoResponse,
    /// Close without answering.
    Close(GateClose),
}

/// Why the gate closes a connection without an answer.
#[derive(Debug, thiserror::Error)]
pub enum GateClose {
    /// The authenticator closes the connection.
    #[error("SASL: {0:?}")]
    Authenticator(CloseReason),
    /// The authenticator refuses this request in this state.
    #[error("SASL: {reason:?} (api key {api_key})")]
    Refused {
        /// Why.
        reason: CloseReason,
        /// The request's API key.
        api_key: i16,
    },
    /// A frame shorter than a request header's fixed part.
    #[error("SASL: request too short")]
    TooShort,
    /// A request other than SaslHandshake/SaslAuthenticate during the exchange.
    #[error("{}", message.as_deref().unwrap_or("SASL: illegal state"))]
    IllegalState {
        /// The authenticator's message.
        message: Option<String>,
    },
    /// A SaslHandshake or SaslAuthenticate request that does not decode.
    #[error("SASL: {0}")]
    Malformed(#[source] FrameError),
    /// The authenticator handed over an API key it does not run.
    #[error("SASL: unexpected api key {0}")]
    UnexpectedApiKey(i16),
    /// A request body of another API than its header's.
    #[error("SASL: unexpected {0:?}")]
    UnexpectedRequest(ApiKey),
    /// The response could not be encoded at the request's version.
    #[error("cannot encode {api_key:?} v{version}: {source}")]
    Encode {
        /// The API.
        api_key: ApiKey,
        /// The version.
        version: i16,
        /// Why.
        #[source]
        source: EncodeError,
    },
}

/// The SASL state of one connection.
pub struct SaslGate {
    auth: ServerAuthenticator,
}

impl std::fmt::Debug for SaslGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.auth.fmt(f)
    }
}

fn close_answer(response: Option<FrameChunks>, close: &Close) -> Answer {
    match response {
        Some(frame) => Answer::RespondAndClose {
            frame,
            close: close.clone(),
        },
        None => Answer::Close(GateClose::Authenticator(close.reason.clone())),
    }
}

fn encode(correlation_id: i32, key: ApiKey, version: i16, body: ResponseBody) -> Answer {
    match encode_response_frame_chunks(correlation_id, key, version, &body) {
        Ok(frame) => Answer::Respond(frame),
        Err(source) => Answer::Close(GateClose::Encode {
            api_key: key,
            version,
            source,
        }),
    }
}

fn with_close(a: Answer, close: Option<&Close>) -> Answer {
    match (a, close) {
        (Answer::Respond(frame), Some(c)) => close_answer(Some(frame), c),
        (a, _) => a,
    }
}

/// An answer and maybe a close, as the authenticator's calls return them.
fn finish(answer: Answer, close: Option<&Close>) -> Answer {
    match (close, answer) {
        (Some(c), Answer::NoResponse) => close_answer(None, c),
        (c, a) => with_close(a, c),
    }
}

impl SaslGate {
    /// A new connection of `listener`.
    pub fn new(listener: &Arc<SaslListener>) -> Self {
        SaslGate {
            auth: listener.connection(),
        }
    }

    /// The authenticator behind the gate.
    pub fn authenticator(&self) -> &ServerAuthenticator {
        &self.auth
    }

    /// The largest frame the connection may read now (`sasl.server.max.receive.size` before
    /// authentication, `None` after it).
    pub fn max_receive_size(&self) -> Option<usize> {
        self.auth.max_receive_size()
    }

    /// Who the connection is authenticated as; it changes only on frames the gate answers.
    pub fn principal(&self) -> Option<&KafkaPrincipal> {
        if self.auth.is_authenticated() {
            self.auth.principal()
        } else {
            None
        }
    }

    /// Decides about one request frame (without its length prefix) read at `now_ms`.
    pub fn on_frame(&mut self, frame: &Bytes, now_ms: i64) -> Gate {
        if self.auth.expects_raw_tokens() {
            let out = self.auth.raw_token(frame, now_ms);
            let response = out.response.and_then(|bytes| {
                // A token longer than a frame can say is not sent half-framed.
                let len = i32::try_from(bytes.len()).ok()?;
                let mut f = FrameChunks::new();
                bytes::BufMut::put_slice(&mut f, &len.to_be_bytes());
                bytes::BufMut::put_slice(&mut f, &bytes);
                Some(f)
            });
            return Gate::Answer(match (&out.close, response) {
                (Some(c), r) => close_answer(r, c),
                (None, Some(r)) => Answer::Respond(r),
                (None, None) => Answer::NoResponse,
            });
        }
        let Some(&[k0, k1, v0, v1, c0, c1, c2, c3]) = frame.get(..8) else {
            return Gate::Answer(Answer::Close(GateClose::TooShort));
        };
        let key = i16::from_be_bytes([k0, k1]);
        let version = i16::from_be_bytes([v0, v1]);
        let correlation_id = i32::from_be_bytes([c0, c1, c2, c3]);
        match self.auth.admit(key, now_ms) {
            Admission::Process => Gate::Handle,
            Admission::Close(reason) => Gate::Answer(Answer::Close(GateClose::Refused {
                reason,
                api_key: key,
            })),
            Admission::IllegalSaslState { message, close } => {
                Gate::Answer(illegal_state(key, version, correlation_id, message, close))
            }
            Admission::Authenticator => match ApiKey::from_i16(key) {
                Some(ApiKey::ApiVersions) => {
                    let (min, max) = ApiKey::ApiVersions.valid_versions();
                    // The handler answers every version in the codec's range without error.
                    if (min..=max).contains(&version) {
                        self.auth.api_versions_answered(ErrorCode::None);
                    }
                    Gate::Handle
                }
                Some(ApiKey::SaslHandshake) | Some(ApiKey::SaslAuthenticate) => {
                    Gate::Answer(self.exchange(frame.clone(), now_ms))
                }
                _ => Gate::Answer(Answer::Close(GateClose::UnexpectedApiKey(key))),
            },
        }
    }

    fn exchange(&mut self, frame: Bytes, now_ms: i64) -> Answer {
        let (header, body) = match decode_request_frame(frame) {
            Ok(x) => x,
            Err(e) => return Answer::Close(GateClose::Malformed(e)),
        };
        let (corr, v) = (header.correlation_id, header.request_api_version);
        match body {
            RequestBody::SaslHandshake(r) => {
                let out = self.auth.handshake(v, &r.mechanism);
                let a = match out.response {
                    Some(h) => encode(
                        corr,
                        ApiKey::SaslHandshake,
                        v,
                        ResponseBody::SaslHandshake(SaslHandshakeResponse {
                            error_code: h.error_code.code(),
                            mechanisms: h.mechanisms.into_iter().map(StrBytes::from).collect(),
                        }),
                    ),
                    None => Answer::NoResponse,
                };
                finish(a, out.close.as_ref())
            }
            RequestBody::SaslAuthenticate(r) => {
                let out = self.auth.authenticate(v, &r.auth_bytes, now_ms);
                let a = match out.response {
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
                    None => Answer::NoResponse,
                };
                finish(a, out.close.as_ref())
            }
            other => Answer::Close(GateClose::UnexpectedRequest(other.api_key())),
        }
    }
}

/// ILLEGAL_SASL_STATE in the response of a SaslHandshake or SaslAuthenticate; any other request
/// during the exchange fails the connection, as Kafka.
fn illegal_state(
    key: i16,
    version: i16,
    correlation_id: i32,
    message: Option<String>,
    close: bool,
) -> Answer {
    let (api, body) = match ApiKey::from_i16(key) {
        Some(ApiKey::SaslHandshake) => (
            ApiKey::SaslHandshake,
            ResponseBody::SaslHandshake(SaslHandshakeResponse {
                error_code: ErrorCode::IllegalSaslState.code(),
                ..Default::default()
            }),
        ),
        Some(ApiKey::SaslAuthenticate) => (
            ApiKey::SaslAuthenticate,
            ResponseBody::SaslAuthenticate(SaslAuthenticateResponse {
                error_code: ErrorCode::IllegalSaslState.code(),
                error_message: message.map(StrBytes::from),
                ..Default::default()
            }),
        ),
        _ => return Answer::Close(GateClose::IllegalState { message }),
    };
    let a = encode(correlation_id, api, version, body);
    if close {
        with_close(
            a,
            Some(&Close {
                reason: CloseReason::IllegalSaslState,
                delay_ms: 0,
            }),
        )
    } else {
        a
    }
}
