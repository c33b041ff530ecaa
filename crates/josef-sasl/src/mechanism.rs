//! The mechanism names and the server-side session interface every mechanism implements.

use std::collections::BTreeMap;
use std::fmt;

use crate::error::SaslError;
use crate::principal::KafkaPrincipal;

/// A SASL mechanism this crate implements, by its exact Kafka name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SaslMechanism {
    /// `PLAIN` (RFC 4616).
    Plain,
    /// `SCRAM-SHA-256` (RFC 7677).
    ScramSha256,
    /// `SCRAM-SHA-512`.
    ScramSha512,
    /// `OAUTHBEARER` (RFC 7628).
    OAuthBearer,
}

impl SaslMechanism {
    /// Every mechanism, in the order above.
    pub const ALL: [SaslMechanism; 4] = [
        SaslMechanism::Plain,
        SaslMechanism::ScramSha256,
        SaslMechanism::ScramSha512,
        SaslMechanism::OAuthBearer,
    ];

    /// The name on the wire and in `sasl.enabled.mechanisms`.
    pub const fn name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::ScramSha256 => "SCRAM-SHA-256",
            SaslMechanism::ScramSha512 => "SCRAM-SHA-512",
            SaslMechanism::OAuthBearer => "OAUTHBEARER",
        }
    }

    /// The mechanism of an exact (case-sensitive, as Kafka compares) name.
    pub fn from_name(name: &str) -> Option<SaslMechanism> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }
}

impl fmt::Display for SaslMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A successful end of an exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    /// `User:<authorization id>`.
    pub principal: KafkaPrincipal,
    /// The last bytes to send to the client: empty for PLAIN and OAUTHBEARER, SCRAM's
    /// server-final message `v=...`.
    pub response: Vec<u8>,
    /// When the credential stops being valid, in ms since the epoch (an OAUTHBEARER token's `exp`,
    /// a delegation token's expiry); `None` when it does not expire. KIP-368 bounds the session by it.
    pub credential_expiry_ms: Option<i64>,
    /// SASL extensions the client sent (OAUTHBEARER key/values, SCRAM extensions such as
    /// `tokenauth`), for a custom principal builder or authorizer.
    pub extensions: BTreeMap<String, String>,
}

/// What a mechanism answers to one client token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SaslStep {
    /// Send these bytes and wait for the client's next token.
    Challenge(Vec<u8>),
    /// The exchange succeeded.
    Complete(Authenticated),
}

/// One server-side mechanism session: Kafka's `SaslServer.evaluateResponse`, as a deterministic
/// state machine. The time is an argument; the session reads no clock and does no I/O.
///
/// After an error or a [`SaslStep::Complete`], every further token is
/// [`SaslError::IllegalSaslState`].
pub trait SaslServer: Send {
    /// The session's mechanism.
    fn mechanism(&self) -> SaslMechanism;

    /// Evaluates one client token (SaslAuthenticate's `auth_bytes`, or a raw v0 token) at
    /// `now_ms` (ms since the epoch).
    fn evaluate_response(&mut self, response: &[u8], now_ms: i64) -> Result<SaslStep, SaslError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_exactly() {
        for m in SaslMechanism::ALL {
            assert_eq!(SaslMechanism::from_name(m.name()), Some(m));
        }
        assert_eq!(SaslMechanism::from_name("plain"), None);
        assert_eq!(SaslMechanism::from_name("GSSAPI"), None);
    }
}
