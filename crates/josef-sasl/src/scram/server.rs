//! The server side of a SCRAM exchange, after Kafka's `ScramSaslServer`.

use std::sync::Arc;

use subtle::ConstantTimeEq;

use super::credential::{ScramCredential, ScramCredentialStore};
use super::crypto::{hash, hmac, xor};
use super::messages::{
    server_first_message, username_of_saslname, ClientFinalMessage, ClientFirstMessage,
    ServerFinalMessage,
};
use super::ScramMechanism;
use crate::error::{AuthFailure, SaslError};
use crate::mechanism::{Authenticated, SaslMechanism, SaslServer, SaslStep};
use crate::nonce::NonceSource;
use crate::principal::KafkaPrincipal;

enum State {
    ReceiveClientFirst,
    ReceiveClientFinal(Box<Pending>),
    Complete,
    Failed,
}

/// What server-first committed to, kept until client-final.
struct Pending {
    credential: ScramCredential,
    authorization_id: String,
    credential_expiry_ms: Option<i64>,
    extensions: std::collections::BTreeMap<String, String>,
    gs2_header: String,
    combined_nonce: String,
    /// The client's own nonce, the start of `combined_nonce`.
    client_nonce: String,
    /// `client-first-bare "," server-first`: the AuthMessage without its last part.
    auth_prefix: String,
}

/// A SCRAM session.
pub struct ScramSaslServer {
    mechanism: ScramMechanism,
    store: Arc<dyn ScramCredentialStore>,
    nonces: Arc<dyn NonceSource>,
    state: State,
}

impl std::fmt::Debug for ScramSaslServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramSaslServer")
            .field("mechanism", &self.mechanism)
            .field("state", &self.state_name())
            .finish_non_exhaustive()
    }
}

impl ScramSaslServer {
    /// A session of `mechanism` looking users up in `store`, with server nonces from `nonces`.
    pub fn new(
        mechanism: ScramMechanism,
        store: Arc<dyn ScramCredentialStore>,
        nonces: Arc<dyn NonceSource>,
    ) -> Self {
        ScramSaslServer {
            mechanism,
            store,
            nonces,
            state: State::ReceiveClientFirst,
        }
    }

    fn state_name(&self) -> &'static str {
        match self.state {
            State::ReceiveClientFirst => "RECEIVE_CLIENT_FIRST_MESSAGE",
            State::ReceiveClientFinal(_) => "RECEIVE_CLIENT_FINAL_MESSAGE",
            State::Complete => "COMPLETE",
            State::Failed => "FAILED",
        }
    }

    fn client_first(&self, response: &[u8]) -> Result<(Vec<u8>, Box<Pending>), AuthFailure> {
        let first = ClientFirstMessage::parse(response)
            .map_err(|_| AuthFailure::ScramInvalidClientFirst)?;
        let username = username_of_saslname(first.saslname);
        let (credential, authorization_id, credential_expiry_ms) = if first.token_authenticated() {
            let token = self
                .store
                .delegation_token(self.mechanism, &username)
                .ok_or_else(|| AuthFailure::ScramInvalidTokenId {
                    token_id: username.clone(),
                })?;
            (
                token.credential,
                token.owner,
                Some(token.expiry_timestamp_ms),
            )
        } else {
            let credential = self
                .store
                .scram_credential(self.mechanism, &username)
                .ok_or(AuthFailure::ScramUnknownUser)?;
            (credential, username.clone(), None)
        };
        // Kafka compares the authzid as sent (a saslname) with the decoded user name.
        if !first.authorization_id.is_empty() && first.authorization_id != username {
            return Err(AuthFailure::AuthorizationIdMismatch);
        }
        if credential.iterations < self.mechanism.min_iterations() {
            return Err(AuthFailure::ScramIterationsTooLow {
                iterations: credential.iterations,
                minimum: self.mechanism.min_iterations(),
                mechanism: self.mechanism.mechanism_name(),
            });
        }
        let combined_nonce = format!("{}{}", first.nonce, self.nonces.server_nonce());
        let server_first =
            server_first_message(&combined_nonce, &credential.salt, credential.iterations);
        let pending = Pending {
            auth_prefix: format!("{},{}", first.bare, server_first),
            credential,
            authorization_id,
            credential_expiry_ms,
            extensions: first.extensions.clone(),
            gs2_header: first.gs2_header.to_string(),
            client_nonce: first.nonce.to_string(),
            combined_nonce,
        };
        Ok((server_first.into_bytes(), Box::new(pending)))
    }

    fn client_final(&self, p: &Pending, response: &[u8]) -> Result<Authenticated, AuthFailure> {
        let fin = ClientFinalMessage::parse(response)
            .map_err(|_| AuthFailure::ScramInvalidClientFinal)?;
        if !nonce_echoed(fin.nonce, p) {
            return Err(AuthFailure::ScramInvalidNonce);
        }
        if fin.channel_binding != p.gs2_header.as_bytes() {
            return Err(AuthFailure::ScramInvalidChannelBinding);
        }
        let m = self.mechanism;
        let auth_message = format!("{},{}", p.auth_prefix, fin.without_proof);
        let stored_key = &p.credential.stored_key;
        if fin.proof.len() != stored_key.len() {
            return Err(AuthFailure::ScramInvalidProof);
        }
        let client_signature = hmac(m, stored_key, auth_message.as_bytes());
        let client_key = xor(&fin.proof, &client_signature);
        let computed: bool = hash(m, &client_key).ct_eq(stored_key).into();
        if !computed {
            return Err(AuthFailure::ScramInvalidProof);
        }
        let signature = hmac(m, &p.credential.server_key, auth_message.as_bytes());
        Ok(Authenticated {
            principal: KafkaPrincipal::user(p.authorization_id.clone()),
            response: ServerFinalMessage::Verifier(signature)
                .to_message()
                .into_bytes(),
            credential_expiry_ms: p.credential_expiry_ms,
            extensions: p.extensions.clone(),
        })
    }
}

/// Whether client-final echoes the combined nonce. librdkafka before 2.2 (kcat 1.7.1 in Debian
/// links 2.0.2) sends its own nonce in front of it a second time, which Kafka's `endsWith` check
/// let through for years; that one form is accepted too. The proof still covers the message as
/// sent, and nothing else may precede the combined nonce.
fn nonce_echoed(nonce: &str, p: &Pending) -> bool {
    nonce == p.combined_nonce
        || nonce
            .strip_prefix(p.client_nonce.as_str())
            .is_some_and(|rest| rest == p.combined_nonce)
}

impl SaslServer for ScramSaslServer {
    fn mechanism(&self) -> SaslMechanism {
        self.mechanism.sasl_mechanism()
    }

    fn evaluate_response(&mut self, response: &[u8], _now_ms: i64) -> Result<SaslStep, SaslError> {
        match std::mem::replace(&mut self.state, State::Failed) {
            State::ReceiveClientFirst => {
                let (server_first, pending) = self.client_first(response)?;
                self.state = State::ReceiveClientFinal(pending);
                Ok(SaslStep::Challenge(server_first))
            }
            State::ReceiveClientFinal(pending) => {
                let done = self.client_final(&pending, response)?;
                self.state = State::Complete;
                Ok(SaslStep::Complete(done))
            }
            s @ (State::Complete | State::Failed) => {
                self.state = s;
                Err(SaslError::IllegalSaslState {
                    state: self.state_name(),
                })
            }
        }
    }
}
