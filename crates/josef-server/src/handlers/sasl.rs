//! SaslHandshake (17) and SaslAuthenticate (36) reaching the request handler: on a SASL listener
//! the connection's SASL gate ([`crate::sasl_session`]) answers them itself, so what arrives here
//! comes from a listener without SASL, where Kafka answers ILLEGAL_SASL_STATE.

use josef_protocol::messages::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use josef_protocol::ErrorCode;

/// SaslHandshake on a listener without SASL.
pub fn handshake(_req: SaslHandshakeRequest) -> SaslHandshakeResponse {
    SaslHandshakeResponse {
        error_code: ErrorCode::IllegalSaslState.code(),
        mechanisms: Vec::new(),
    }
}

/// SaslAuthenticate on a listener without SASL.
pub fn authenticate(_req: SaslAuthenticateRequest) -> SaslAuthenticateResponse {
    SaslAuthenticateResponse {
        error_code: ErrorCode::IllegalSaslState.code(),
        error_message: Some("SaslAuthenticate request received on a listener without SASL".into()),
        ..Default::default()
    }
}
