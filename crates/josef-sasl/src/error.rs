//! Typed failures of a SASL exchange and the Kafka error codes and messages they become.

use josef_protocol::ErrorCode;

use crate::mechanism::SaslMechanism;

/// Why a mechanism refused the client. Kafka's mechanisms throw either a `SaslException`, whose
/// text never reaches the client (it could reveal whether a user exists), or a
/// `SaslAuthenticationException`, whose text does; [`AuthFailure::is_public`] tells which.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthFailure {
    /// PLAIN: the message did not have exactly three NUL-separated parts.
    #[error("Invalid SASL/PLAIN response: expected 3 tokens, got {parts}")]
    PlainMalformed {
        /// How many parts the message had.
        parts: usize,
    },
    /// PLAIN: the message was not UTF-8.
    #[error("Invalid SASL/PLAIN response: not UTF-8")]
    PlainNotUtf8,
    /// PLAIN: empty authentication id.
    #[error("Authentication failed: username not specified")]
    PlainUsernameMissing,
    /// PLAIN: empty password.
    #[error("Authentication failed: password not specified")]
    PlainPasswordMissing,
    /// PLAIN: unknown user or wrong password (the same answer for both).
    #[error("Authentication failed: Invalid username or password")]
    InvalidUsernameOrPassword,
    /// PLAIN or SCRAM: the authzid is neither empty nor the user name.
    #[error(
        "Authentication failed: Client requested an authorization id that is different from username"
    )]
    AuthorizationIdMismatch,
    /// SCRAM: the client-first message does not have RFC 5802's shape (or asks for channel binding).
    #[error("Invalid SCRAM client first message format")]
    ScramInvalidClientFirst,
    /// SCRAM: the client-final message does not have RFC 5802's shape.
    #[error("Invalid SCRAM client final message format")]
    ScramInvalidClientFinal,
    /// SCRAM: no credential for this user and mechanism.
    #[error("Authentication failed: Invalid user credentials")]
    ScramUnknownUser,
    /// SCRAM with `tokenauth=true`: no delegation token with this id.
    #[error("Token Authentication failed: Invalid tokenId : {token_id}")]
    ScramInvalidTokenId {
        /// The token id the client sent as its user name.
        token_id: String,
    },
    /// SCRAM: the stored credential has fewer iterations than the mechanism allows.
    #[error("Iterations {iterations} is less than the minimum {minimum} for {mechanism}")]
    ScramIterationsTooLow {
        /// The credential's iterations.
        iterations: u32,
        /// The mechanism's minimum.
        minimum: u32,
        /// The mechanism name.
        mechanism: &'static str,
    },
    /// SCRAM: the client-final nonce is not the combined nonce of server-first.
    #[error("Invalid client nonce in the final client message.")]
    ScramInvalidNonce,
    /// SCRAM: the channel binding is not the base64 of the client's gs2 header.
    #[error("Invalid channel binding in the final client message.")]
    ScramInvalidChannelBinding,
    /// SCRAM: the client proof does not verify against the stored key.
    #[error("Invalid client credentials")]
    ScramInvalidProof,
    /// OAUTHBEARER: the client response does not have RFC 7628's shape.
    #[error("Invalid OAUTHBEARER client first message")]
    OAuthBearerInvalidClientFirst,
    /// OAUTHBEARER: the `auth` scheme is not `Bearer`.
    #[error("Invalid scheme in OAUTHBEARER client first message: {scheme}")]
    OAuthBearerInvalidScheme {
        /// The scheme the client sent.
        scheme: String,
    },
    /// OAUTHBEARER: the token was rejected; the client was sent this JSON challenge and answered
    /// with `%x01`. Kafka passes the JSON on as the failure message.
    #[error("{json}")]
    OAuthBearerTokenRejected {
        /// The `{"status":...}` challenge.
        json: String,
    },
    /// OAUTHBEARER: the authzid is neither empty nor the token's principal.
    #[error("Authentication failed: Client requested an authorization id ({authorization_id}) that is different from the token's principal name ({principal})")]
    OAuthBearerAuthorizationIdMismatch {
        /// The authzid the client asked for.
        authorization_id: String,
        /// The token's principal name.
        principal: String,
    },
    /// OAUTHBEARER: the validator refused some extensions.
    #[error("Authentication failed: {count} extensions are invalid! They are: {details}")]
    OAuthBearerInvalidExtensions {
        /// How many.
        count: usize,
        /// `name: reason` pairs, `; `-separated.
        details: String,
    },
    /// Re-authentication (KIP-368) asked for a mechanism other than the session's.
    #[error("SASL mechanism '{requested}' requested by client is not supported for re-authentication of mechanism '{previous}'")]
    ReauthMechanismChanged {
        /// The mechanism of the re-authentication handshake.
        requested: String,
        /// The mechanism the connection authenticated with.
        previous: String,
    },
    /// Re-authentication (KIP-368) established another principal.
    #[error("Cannot change principals during re-authentication from {previous_type}.{previous_name}: {new_type}.{new_name}")]
    ReauthPrincipalChanged {
        /// The session's principal type.
        previous_type: String,
        /// The session's principal name.
        previous_name: String,
        /// The new principal type.
        new_type: String,
        /// The new principal name.
        new_name: String,
    },
}

impl AuthFailure {
    /// True when Kafka sends this text to the client (a `SaslAuthenticationException`); false when
    /// it sends only the generic "invalid credentials" message (a plain `SaslException`).
    pub fn is_public(&self) -> bool {
        matches!(
            self,
            AuthFailure::InvalidUsernameOrPassword
                | AuthFailure::AuthorizationIdMismatch
                | AuthFailure::OAuthBearerTokenRejected { .. }
                | AuthFailure::OAuthBearerAuthorizationIdMismatch { .. }
                | AuthFailure::OAuthBearerInvalidExtensions { .. }
                | AuthFailure::ReauthMechanismChanged { .. }
                | AuthFailure::ReauthPrincipalChanged { .. }
        )
    }

    /// The `error_message` of the SaslAuthenticate response, as
    /// `SaslServerAuthenticator.handleSaslToken` words it.
    pub fn client_message(&self, mechanism: &str, reauthentication: bool) -> String {
        if self.is_public() {
            self.to_string()
        } else {
            generic_failure_message(mechanism, reauthentication)
        }
    }
}

/// Kafka's message for a failure whose cause stays on the server.
pub fn generic_failure_message(mechanism: &str, reauthentication: bool) -> String {
    let phase = if reauthentication {
        "re-authentication"
    } else {
        "authentication"
    };
    format!("Authentication failed during {phase} due to invalid credentials with SASL mechanism {mechanism}")
}

/// A failed step of a mechanism session or of the connection authenticator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SaslError {
    /// The credentials or the message were refused: SASL_AUTHENTICATION_FAILED.
    #[error(transparent)]
    Authentication(#[from] AuthFailure),
    /// A token arrived in a state that takes none (after completion or failure): ILLEGAL_SASL_STATE.
    #[error("Unexpected SASL request in state {state}")]
    IllegalSaslState {
        /// The state the session was in.
        state: &'static str,
    },
    /// The mechanism is not enabled or not known: UNSUPPORTED_SASL_MECHANISM.
    #[error("Unsupported SASL mechanism {mechanism}")]
    UnsupportedMechanism {
        /// The requested mechanism name.
        mechanism: String,
    },
}

impl SaslError {
    /// The Kafka error code this failure is answered with.
    pub fn error_code(&self) -> ErrorCode {
        match self {
            SaslError::Authentication(_) => ErrorCode::SaslAuthenticationFailed,
            SaslError::IllegalSaslState { .. } => ErrorCode::IllegalSaslState,
            SaslError::UnsupportedMechanism { .. } => ErrorCode::UnsupportedSaslMechanism,
        }
    }

    /// The text the client may see (see [`AuthFailure::client_message`]).
    pub fn client_message(&self, mechanism: SaslMechanism, reauthentication: bool) -> String {
        match self {
            SaslError::Authentication(f) => f.client_message(mechanism.name(), reauthentication),
            other => other.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_failures_get_kafkas_generic_message() {
        let e = SaslError::from(AuthFailure::ScramUnknownUser);
        assert_eq!(e.error_code(), ErrorCode::SaslAuthenticationFailed);
        assert_eq!(
            e.client_message(SaslMechanism::ScramSha512, false),
            "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
        );
        assert_eq!(
            e.client_message(SaslMechanism::ScramSha256, true),
            "Authentication failed during re-authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
        );
    }

    #[test]
    fn public_failures_pass_their_text() {
        let e = SaslError::from(AuthFailure::InvalidUsernameOrPassword);
        assert_eq!(
            e.client_message(SaslMechanism::Plain, false),
            "Authentication failed: Invalid username or password"
        );
        let e = SaslError::IllegalSaslState { state: "COMPLETE" };
        assert_eq!(e.error_code(), ErrorCode::IllegalSaslState);
        let e = SaslError::UnsupportedMechanism {
            mechanism: "GSSAPI".into(),
        };
        assert_eq!(e.error_code(), ErrorCode::UnsupportedSaslMechanism);
    }
}
