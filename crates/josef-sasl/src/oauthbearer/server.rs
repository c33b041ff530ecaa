//! The server side of OAUTHBEARER, after Kafka's `OAuthBearerSaslServer`.

use std::sync::Arc;

use super::message::{ClientInitialResponse, ClientResponseError, SEPARATOR};
use super::OAuthBearerValidator;
use crate::error::{AuthFailure, SaslError};
use crate::mechanism::{Authenticated, SaslMechanism, SaslServer, SaslStep};
use crate::principal::KafkaPrincipal;

enum State {
    /// Waiting for a client initial response.
    Initial,
    /// The JSON challenge of a rejected token was sent; `%x01` ends in failure, anything else is
    /// read as a new initial response (as Kafka does).
    ErrorSent(String),
    Complete,
    Failed,
}

/// An OAUTHBEARER session.
pub struct OAuthBearerSaslServer {
    validator: Arc<dyn OAuthBearerValidator>,
    state: State,
}

impl std::fmt::Debug for OAuthBearerSaslServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthBearerSaslServer")
            .finish_non_exhaustive()
    }
}

impl OAuthBearerSaslServer {
    /// A session validating tokens with `validator`.
    pub fn new(validator: Arc<dyn OAuthBearerValidator>) -> Self {
        OAuthBearerSaslServer {
            validator,
            state: State::Initial,
        }
    }

    fn initial(&mut self, response: &[u8], now_ms: i64) -> Result<SaslStep, SaslError> {
        let msg = ClientInitialResponse::parse(response).map_err(|e| match e {
            ClientResponseError::Scheme(scheme) => AuthFailure::OAuthBearerInvalidScheme { scheme },
            _ => AuthFailure::OAuthBearerInvalidClientFirst,
        })?;
        let token = match self.validator.validate_token(msg.token, now_ms) {
            Ok(t) => t,
            Err(rejection) => {
                let json = rejection.challenge_json();
                self.state = State::ErrorSent(json.clone());
                return Ok(SaslStep::Challenge(json.into_bytes()));
            }
        };
        if !msg.authorization_id.is_empty() && msg.authorization_id != token.principal_name {
            return Err(AuthFailure::OAuthBearerAuthorizationIdMismatch {
                authorization_id: msg.authorization_id.to_string(),
                principal: token.principal_name,
            }
            .into());
        }
        let extensions = self
            .validator
            .validate_extensions(&token, &msg.extensions)
            .map_err(|invalid| AuthFailure::OAuthBearerInvalidExtensions {
                count: invalid.len(),
                details: invalid
                    .iter()
                    .map(|(k, v)| format!("{k}: {v}"))
                    .collect::<Vec<_>>()
                    .join("; "),
            })?;
        self.state = State::Complete;
        Ok(SaslStep::Complete(Authenticated {
            principal: KafkaPrincipal::user(token.principal_name),
            response: Vec::new(),
            credential_expiry_ms: Some(token.lifetime_ms),
            extensions,
        }))
    }
}

impl SaslServer for OAuthBearerSaslServer {
    fn mechanism(&self) -> SaslMechanism {
        SaslMechanism::OAuthBearer
    }

    fn evaluate_response(&mut self, response: &[u8], now_ms: i64) -> Result<SaslStep, SaslError> {
        match std::mem::replace(&mut self.state, State::Failed) {
            State::ErrorSent(json) if response == [SEPARATOR] => {
                Err(AuthFailure::OAuthBearerTokenRejected { json }.into())
            }
            State::Initial | State::ErrorSent(_) => self.initial(response, now_ms),
            State::Complete => {
                self.state = State::Complete;
                Err(SaslError::IllegalSaslState { state: "COMPLETE" })
            }
            State::Failed => Err(SaslError::IllegalSaslState { state: "FAILED" }),
        }
    }
}
