//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka's `ScramSaslServer`.
//!
//! - [`ScramSaslServer`]: the server session (client-first → server-first → client-final →
//!   server-final).
//! - [`ScramCredential`]: what the broker stores per user and mechanism (the metadata log's
//!   `UserScramCredentialRecord`), derived from a password or, for AlterUserScramCredentials,
//!   from the salted password the client sends.
//! - [`ScramCredentialStore`]: where the session looks a user up.
//! - [`admin`]: DescribeUserScramCredentials and AlterUserScramCredentials, as pure functions.

pub mod admin;
mod credential;
mod crypto;
pub mod messages;
mod server;

pub use credential::{
    CredentialError, DelegationTokenCredential, ScramCredential, ScramCredentialStore,
    ScramCredentials,
};
pub use crypto::{client_proof, hi, server_key, server_signature};
pub use server::ScramSaslServer;

/// The SCRAM hash, with Kafka's `ScramMechanism` numbers and bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScramMechanism {
    /// `SCRAM-SHA-256`, mechanism type 1.
    Sha256,
    /// `SCRAM-SHA-512`, mechanism type 2.
    Sha512,
}

/// The smallest iteration count Kafka accepts for either mechanism.
pub const MIN_ITERATIONS: u32 = 4096;
/// The largest iteration count AlterUserScramCredentials accepts.
pub const MAX_ITERATIONS: u32 = 16384;

impl ScramMechanism {
    /// The SASL mechanism name.
    pub const fn mechanism_name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    /// The mechanism type of UserScramCredentialRecord and the SCRAM APIs (1 or 2).
    pub const fn mechanism_type(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
        }
    }

    /// The mechanism of a record's or an API's mechanism type.
    pub const fn from_type(t: i8) -> Option<ScramMechanism> {
        match t {
            1 => Some(ScramMechanism::Sha256),
            2 => Some(ScramMechanism::Sha512),
            _ => None,
        }
    }

    /// The mechanism of a SASL mechanism name.
    pub fn from_mechanism_name(name: &str) -> Option<ScramMechanism> {
        [ScramMechanism::Sha256, ScramMechanism::Sha512]
            .into_iter()
            .find(|m| m.mechanism_name() == name)
    }

    /// Kafka's minimum iteration count (4096 for both).
    pub const fn min_iterations(self) -> u32 {
        MIN_ITERATIONS
    }

    /// Kafka's maximum iteration count (16384 for both).
    pub const fn max_iterations(self) -> u32 {
        MAX_ITERATIONS
    }

    /// The hash output length in bytes: the length of keys, proofs and signatures.
    pub const fn hash_len(self) -> usize {
        match self {
            ScramMechanism::Sha256 => 32,
            ScramMechanism::Sha512 => 64,
        }
    }

    /// The [`crate::SaslMechanism`] of this hash.
    pub const fn sasl_mechanism(self) -> crate::SaslMechanism {
        match self {
            ScramMechanism::Sha256 => crate::SaslMechanism::ScramSha256,
            ScramMechanism::Sha512 => crate::SaslMechanism::ScramSha512,
        }
    }
}
