//! The client side of SCRAM (RFC 5802), written apart from the server's parser: it builds its own
//! messages and AuthMessage, so a round trip checks one against the other.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use subtle::ConstantTimeEq;

use crate::scram::{
    client_proof, hi, server_key, server_signature, ScramMechanism, MAX_ITERATIONS, MIN_ITERATIONS,
};

/// A failed client step.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScramClientError {
    /// The server-first message is not `r=...,s=...,i=...`.
    #[error("invalid server-first message")]
    InvalidServerFirst,
    /// The server nonce does not extend the client nonce.
    #[error("server nonce does not start with the client nonce")]
    NonceMismatch,
    /// The server sent `e=<error>`.
    #[error("server error: {0}")]
    ServerError(String),
    /// The server signature is missing or wrong: the server does not know the password.
    #[error("invalid server signature")]
    InvalidServerSignature,
    /// Steps called out of order.
    #[error("client step out of order")]
    OutOfOrder,
    /// The server asks for an iteration count outside Kafka's 4096..=16384: below is weak, above
    /// would let a hostile server make the client burn CPU.
    #[error("server asks for {0} iterations (Kafka's bounds are 4096..=16384)")]
    IterationsOutOfRange(u32),
}

/// A SCRAM client session: [`ScramClient::client_first`], then
/// [`ScramClient::client_final`] with the server's challenge, then
/// [`ScramClient::verify_server_final`].
#[derive(Debug, Clone)]
pub struct ScramClient {
    mechanism: ScramMechanism,
    username: String,
    password: String,
    nonce: String,
    extensions: Vec<(String, String)>,
    first_bare: Option<String>,
    expected_signature: Option<Vec<u8>>,
}

impl ScramClient {
    /// A client for `username` with `password` and client nonce `nonce`.
    pub fn new(
        mechanism: ScramMechanism,
        username: &str,
        password: &str,
        nonce: &str,
    ) -> ScramClient {
        ScramClient {
            mechanism,
            username: username.to_string(),
            password: password.to_string(),
            nonce: nonce.to_string(),
            extensions: Vec::new(),
            first_bare: None,
            expected_signature: None,
        }
    }

    /// Adds an extension to client-first (for example `tokenauth=true`).
    pub fn with_extension(mut self, key: &str, value: &str) -> Self {
        self.extensions.push((key.to_string(), value.to_string()));
        self
    }

    /// `n,,n=<user>,r=<nonce>[,ext]`.
    pub fn client_first(&mut self) -> Vec<u8> {
        let mut name = String::new();
        for c in self.username.chars() {
            match c {
                ',' => name.push_str("=2C"),
                '=' => name.push_str("=3D"),
                c => name.push(c),
            }
        }
        let mut bare = format!("n={name},r={}", self.nonce);
        for (k, v) in &self.extensions {
            bare.push_str(&format!(",{k}={v}"));
        }
        let msg = format!("n,,{bare}");
        self.first_bare = Some(bare);
        msg.into_bytes()
    }

    /// Answers server-first with `c=biws,r=<nonce>,p=<proof>`.
    pub fn client_final(&mut self, server_first: &[u8]) -> Result<Vec<u8>, ScramClientError> {
        let bare = self
            .first_bare
            .as_ref()
            .ok_or(ScramClientError::OutOfOrder)?;
        let text =
            std::str::from_utf8(server_first).map_err(|_| ScramClientError::InvalidServerFirst)?;
        let mut nonce = None;
        let mut salt = None;
        let mut iterations = None;
        for attr in text.split(',') {
            match attr.split_at_checked(2) {
                Some(("r=", v)) => nonce = Some(v),
                Some(("s=", v)) => salt = STANDARD.decode(v).ok(),
                Some(("i=", v)) => iterations = v.parse::<u32>().ok(),
                _ => {}
            }
        }
        let (Some(nonce), Some(salt), Some(iterations)) = (nonce, salt, iterations) else {
            return Err(ScramClientError::InvalidServerFirst);
        };
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
            return Err(ScramClientError::NonceMismatch);
        }
        if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
            return Err(ScramClientError::IterationsOutOfRange(iterations));
        }
        let without_proof = format!("c={},r={nonce}", STANDARD.encode("n,,"));
        let auth_message = format!("{bare},{text},{without_proof}");
        let salted = hi(self.mechanism, self.password.as_bytes(), &salt, iterations);
        let proof = client_proof(self.mechanism, &salted, auth_message.as_bytes());
        let server_key = server_key(self.mechanism, &salted);
        self.expected_signature = Some(server_signature(
            self.mechanism,
            &server_key,
            auth_message.as_bytes(),
        ));
        Ok(format!("{without_proof},p={}", STANDARD.encode(proof)).into_bytes())
    }

    /// Checks server-final (`v=<signature>` or `e=<error>`).
    pub fn verify_server_final(&self, server_final: &[u8]) -> Result<(), ScramClientError> {
        let expected = self
            .expected_signature
            .as_ref()
            .ok_or(ScramClientError::OutOfOrder)?;
        let text = std::str::from_utf8(server_final)
            .map_err(|_| ScramClientError::InvalidServerSignature)?;
        if let Some(e) = text.strip_prefix("e=") {
            return Err(ScramClientError::ServerError(e.to_string()));
        }
        let v = text
            .split(',')
            .next()
            .and_then(|a| a.strip_prefix("v="))
            .and_then(|v| STANDARD.decode(v).ok())
            .ok_or(ScramClientError::InvalidServerSignature)?;
        if bool::from(v.ct_eq(expected)) {
            Ok(())
        } else {
            Err(ScramClientError::InvalidServerSignature)
        }
    }
}
