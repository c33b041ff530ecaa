//! SASL/OAUTHBEARER (RFC 7628) as Kafka's `OAuthBearerSaslServer`, with the validator behind a
//! trait: [`UnsecuredJwsValidator`] is Kafka's default (`OAuthBearerUnsecuredValidatorCallbackHandler`),
//! and a builder plugs signed-token (JWKS) validation in through [`OAuthBearerValidator`].

pub mod message;
mod server;
mod unsecured;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

pub use server::OAuthBearerSaslServer;
pub use unsecured::{
    unsecured_token, UnsecuredConfigError, UnsecuredJwsError, UnsecuredJwsValidator,
    UnsecuredValidatorConfig, ALLOWABLE_CLOCK_SKEW_MS_OPTION, PRINCIPAL_CLAIM_NAME_OPTION,
    REQUIRED_SCOPE_OPTION, SCOPE_CLAIM_NAME_OPTION,
};

/// A validated token (`OAuthBearerToken`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthBearerToken {
    /// The compact serialization the client sent.
    pub value: String,
    /// The principal name (the `sub` claim by default).
    pub principal_name: String,
    /// The scope.
    pub scope: BTreeSet<String>,
    /// When the token expires, in ms since the epoch (`exp` × 1000): it bounds the session.
    pub lifetime_ms: i64,
    /// When it was issued, in ms since the epoch (`iat` × 1000), if known.
    pub start_time_ms: Option<i64>,
}

/// A token the validator refused. The client is sent Kafka's JSON challenge
/// ([`TokenRejection::challenge_json`]); the reason stays on the server.
#[derive(Debug)]
pub struct TokenRejection {
    /// Why, for logs.
    pub reason: Box<dyn std::error::Error + Send + Sync>,
    /// The scope the token lacked (makes the status `insufficient_scope`).
    pub scope: Option<String>,
    /// An `openid-configuration` URL to advertise.
    pub openid_configuration: Option<String>,
}

impl TokenRejection {
    /// A rejection for a bad token (status `invalid_token`).
    pub fn invalid(reason: impl std::error::Error + Send + Sync + 'static) -> Self {
        TokenRejection {
            reason: Box::new(reason),
            scope: None,
            openid_configuration: None,
        }
    }

    /// `insufficient_scope` when a scope is named, else `invalid_token`.
    pub fn status(&self) -> &'static str {
        if self.scope.is_some() {
            "insufficient_scope"
        } else {
            "invalid_token"
        }
    }

    /// The challenge Kafka sends: `{"status":"invalid_token"}`, with `, "scope":"..."` and
    /// `, "openid-configuration":"..."` when set.
    pub fn challenge_json(&self) -> String {
        let quote = |s: &str| serde_json::Value::String(s.to_string()).to_string();
        let mut json = format!("{{\"status\":{}", quote(self.status()));
        if let Some(scope) = &self.scope {
            json.push_str(&format!(", \"scope\":{}", quote(scope)));
        }
        if let Some(url) = &self.openid_configuration {
            json.push_str(&format!(", \"openid-configuration\":{}", quote(url)));
        }
        json.push('}');
        json
    }
}

impl fmt::Display for TokenRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status(), self.reason)
    }
}

/// Validates bearer tokens (Kafka's `OAuthBearerValidatorCallback` and
/// `OAuthBearerExtensionsValidatorCallback` handler).
pub trait OAuthBearerValidator: Send + Sync {
    /// Validates `token` at `now_ms`.
    fn validate_token(&self, token: &str, now_ms: i64) -> Result<OAuthBearerToken, TokenRejection>;

    /// Splits the client's extensions into the accepted ones (returned) and the refused ones
    /// (the `Err` map, name → reason, fails the login). The default accepts every extension, as
    /// Kafka's unsecured handler does.
    fn validate_extensions(
        &self,
        token: &OAuthBearerToken,
        extensions: &BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, String>, BTreeMap<String, String>> {
        let _ = token;
        Ok(extensions.clone())
    }
}
