//! Stored SCRAM credentials and where a session finds them.

use std::collections::BTreeMap;
use std::fmt;

use josef_protocol::ErrorCode;

use super::crypto::{hash, hi, hmac};
use super::ScramMechanism;

/// Kafka's `ScramCredential`: what a broker keeps per user and mechanism
/// (`UserScramCredentialRecord`'s Salt, StoredKey, ServerKey, Iterations). The password itself is
/// never stored.
#[derive(Clone, PartialEq, Eq)]
pub struct ScramCredential {
    /// The salt.
    pub salt: Vec<u8>,
    /// `H(HMAC(SaltedPassword, "Client Key"))`.
    pub stored_key: Vec<u8>,
    /// `HMAC(SaltedPassword, "Server Key")`.
    pub server_key: Vec<u8>,
    /// The PBKDF2 iteration count.
    pub iterations: u32,
}

impl fmt::Debug for ScramCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The keys let anyone who holds them impersonate the server; keep them out of logs.
        f.debug_struct("ScramCredential")
            .field("salt_len", &self.salt.len())
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

/// Why AlterUserScramCredentials refuses an upsertion (`ScramControlManager`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    /// Iterations outside 4096..=16384: UNACCEPTABLE_CREDENTIAL.
    #[error("Iterations {iterations} not in the range [{min}, {max}] for {mechanism}")]
    IterationsOutOfRange {
        /// The requested count.
        iterations: i32,
        /// The mechanism's minimum.
        min: u32,
        /// The mechanism's maximum.
        max: u32,
        /// The mechanism name.
        mechanism: &'static str,
    },
    /// A salted password whose length is not the hash length: UNACCEPTABLE_CREDENTIAL.
    #[error("Salted password of {len} bytes for {mechanism}, which needs {expected}")]
    SaltedPasswordLength {
        /// Its length.
        len: usize,
        /// The hash length.
        expected: usize,
        /// The mechanism name.
        mechanism: &'static str,
    },
    /// An empty salt: UNACCEPTABLE_CREDENTIAL.
    #[error("Empty salt")]
    EmptySalt,
}

impl CredentialError {
    /// The per-user error code of the AlterUserScramCredentials response.
    pub fn error_code(&self) -> ErrorCode {
        ErrorCode::UnacceptableCredential
    }
}

impl ScramCredential {
    /// Checks Kafka's iteration bounds for a new credential.
    pub fn validate_iterations(m: ScramMechanism, iterations: i32) -> Result<u32, CredentialError> {
        match u32::try_from(iterations) {
            Ok(i) if (m.min_iterations()..=m.max_iterations()).contains(&i) => Ok(i),
            _ => Err(CredentialError::IterationsOutOfRange {
                iterations,
                min: m.min_iterations(),
                max: m.max_iterations(),
                mechanism: m.mechanism_name(),
            }),
        }
    }

    /// The credential of a salted password (`Hi(password, salt, i)`), as the controller derives it
    /// from an AlterUserScramCredentials upsertion. Validates the iterations, the salt and the
    /// salted password's length.
    pub fn from_salted_password(
        m: ScramMechanism,
        salted_password: &[u8],
        salt: &[u8],
        iterations: i32,
    ) -> Result<ScramCredential, CredentialError> {
        let iterations = Self::validate_iterations(m, iterations)?;
        if salt.is_empty() {
            return Err(CredentialError::EmptySalt);
        }
        if salted_password.len() != m.hash_len() {
            return Err(CredentialError::SaltedPasswordLength {
                len: salted_password.len(),
                expected: m.hash_len(),
                mechanism: m.mechanism_name(),
            });
        }
        Ok(Self::derive(m, salted_password, salt, iterations))
    }

    /// The credential of a password (UTF-8, no SASLprep, as Kafka), with any iteration count (a
    /// test or a bootstrap credential may use fewer than Kafka accepts; logins still refuse
    /// fewer than 4096).
    pub fn from_password(
        m: ScramMechanism,
        password: &str,
        salt: &[u8],
        iterations: u32,
    ) -> ScramCredential {
        let salted = hi(m, password.as_bytes(), salt, iterations);
        Self::derive(m, &salted, salt, iterations)
    }

    fn derive(m: ScramMechanism, salted: &[u8], salt: &[u8], iterations: u32) -> ScramCredential {
        let client_key = hmac(m, salted, b"Client Key");
        ScramCredential {
            salt: salt.to_vec(),
            stored_key: hash(m, &client_key),
            server_key: hmac(m, salted, b"Server Key"),
            iterations,
        }
    }
}

/// A delegation token usable with SCRAM's `tokenauth=true` extension: the token id is the SCRAM
/// user name, its HMAC the password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelegationTokenCredential {
    /// The SCRAM credential of the token's HMAC.
    pub credential: ScramCredential,
    /// The owner, who becomes the principal.
    pub owner: String,
    /// When the token expires, in ms since the epoch.
    pub expiry_timestamp_ms: i64,
}

/// Where a SCRAM session finds credentials. A broker backs it with the metadata image's
/// `UserScramCredentialRecord`s.
pub trait ScramCredentialStore: Send + Sync {
    /// The credential of `username` for `mechanism`, if any.
    fn scram_credential(
        &self,
        mechanism: ScramMechanism,
        username: &str,
    ) -> Option<ScramCredential>;

    /// The delegation token `token_id` for `mechanism`, if delegation tokens are supported. The
    /// default supports none, so `tokenauth=true` logins fail.
    fn delegation_token(
        &self,
        mechanism: ScramMechanism,
        token_id: &str,
    ) -> Option<DelegationTokenCredential> {
        let _ = (mechanism, token_id);
        None
    }
}

/// An in-memory store, for tests and small brokers.
#[derive(Debug, Clone, Default)]
pub struct ScramCredentials {
    users: BTreeMap<(ScramMechanism, String), ScramCredential>,
    tokens: BTreeMap<(ScramMechanism, String), DelegationTokenCredential>,
}

impl ScramCredentials {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces a user's credential.
    pub fn insert(&mut self, m: ScramMechanism, user: impl Into<String>, c: ScramCredential) {
        self.users.insert((m, user.into()), c);
    }

    /// Removes a user's credential (RemoveUserScramCredentialRecord).
    pub fn remove(&mut self, m: ScramMechanism, user: &str) -> Option<ScramCredential> {
        self.users.remove(&(m, user.to_string()))
    }

    /// Adds or replaces a delegation token.
    pub fn insert_token(
        &mut self,
        m: ScramMechanism,
        token_id: impl Into<String>,
        t: DelegationTokenCredential,
    ) {
        self.tokens.insert((m, token_id.into()), t);
    }
}

impl ScramCredentialStore for ScramCredentials {
    fn scram_credential(&self, m: ScramMechanism, username: &str) -> Option<ScramCredential> {
        self.users.get(&(m, username.to_string())).cloned()
    }

    fn delegation_token(&self, m: ScramMechanism, id: &str) -> Option<DelegationTokenCredential> {
        self.tokens.get(&(m, id.to_string())).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iteration_bounds_are_kafkas() {
        for m in [ScramMechanism::Sha256, ScramMechanism::Sha512] {
            assert_eq!(ScramCredential::validate_iterations(m, 4096), Ok(4096));
            assert_eq!(ScramCredential::validate_iterations(m, 16384), Ok(16384));
            for bad in [4095, 16385, 0, -1] {
                let e = ScramCredential::validate_iterations(m, bad).unwrap_err();
                assert_eq!(e.error_code(), ErrorCode::UnacceptableCredential);
            }
        }
    }

    #[test]
    fn salted_password_and_password_give_the_same_credential() {
        let m = ScramMechanism::Sha512;
        let salted = hi(m, b"secret", b"salt", 4096);
        let a = ScramCredential::from_salted_password(m, &salted, b"salt", 4096).unwrap();
        let b = ScramCredential::from_password(m, "secret", b"salt", 4096);
        assert_eq!(a, b);
        assert_eq!(a.stored_key.len(), 64);
        assert!(matches!(
            ScramCredential::from_salted_password(m, &salted[..32], b"salt", 4096),
            Err(CredentialError::SaltedPasswordLength { len: 32, .. })
        ));
        assert_eq!(
            ScramCredential::from_salted_password(m, &salted, b"", 4096),
            Err(CredentialError::EmptySalt)
        );
        assert!(!format!("{a:?}").contains("stored_key"));
    }

    #[test]
    fn store_finds_by_mechanism_and_user() {
        let mut s = ScramCredentials::new();
        let c = ScramCredential::from_password(ScramMechanism::Sha256, "p", b"s", 4096);
        s.insert(ScramMechanism::Sha256, "alice", c.clone());
        assert_eq!(s.scram_credential(ScramMechanism::Sha256, "alice"), Some(c));
        assert_eq!(s.scram_credential(ScramMechanism::Sha512, "alice"), None);
        assert!(s.remove(ScramMechanism::Sha256, "alice").is_some());
        assert_eq!(s.scram_credential(ScramMechanism::Sha256, "alice"), None);
    }
}
