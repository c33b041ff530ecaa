//! Kafka's unsecured JWS validation (`OAuthBearerUnsecuredJws`,
//! `OAuthBearerUnsecuredValidatorCallbackHandler`, `OAuthBearerValidationUtils`): for tests and
//! development, never production, since anyone can mint such a token.

use std::collections::{BTreeMap, BTreeSet};

use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use serde_json::Value;

use super::{OAuthBearerToken, OAuthBearerValidator, TokenRejection};

/// The option naming the principal claim (default `sub`).
pub const PRINCIPAL_CLAIM_NAME_OPTION: &str = "unsecuredValidatorPrincipalClaimName";
/// The option naming the scope claim (default `scope`).
pub const SCOPE_CLAIM_NAME_OPTION: &str = "unsecuredValidatorScopeClaimName";
/// The option listing required scopes, space-separated.
pub const REQUIRED_SCOPE_OPTION: &str = "unsecuredValidatorRequiredScope";
/// The option allowing clock skew in ms (default 0).
pub const ALLOWABLE_CLOCK_SKEW_MS_OPTION: &str = "unsecuredValidatorAllowableClockSkewMs";

fn engine(a: &alphabet::Alphabet) -> GeneralPurpose {
    GeneralPurpose::new(
        a,
        GeneralPurposeConfig::new()
            .with_decode_padding_mode(DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    )
}

/// Why an unsecured token is refused (`OAuthBearerIllegalTokenException` reasons).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnsecuredJwsError {
    /// The token contains `..`.
    #[error("Malformed compact serialization contains '..'")]
    DoubleDot,
    /// Not three dot-separated parts.
    #[error(
        "Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values"
    )]
    PartCount,
    /// A part is not base64.
    #[error("malformed Base64 URL encoded value")]
    Base64,
    /// A part is not a JSON object.
    #[error("malformed JSON")]
    Json,
    /// The header has no `alg`.
    #[error("JWS header must have an Algorithm value")]
    AlgMissing,
    /// `alg` is not `none`.
    #[error("Unsecured JWS must have 'none' for an algorithm")]
    AlgNotNone,
    /// The signature part is not empty.
    #[error("Unsecured JWS must not contain a digital signature")]
    Signature,
    /// A claim has the wrong JSON type.
    #[error("The '{claim}' claim was not of type {expected}")]
    ClaimType {
        /// The claim.
        claim: String,
        /// `String`, `Number` or `List`.
        expected: &'static str,
    },
    /// No `exp`.
    #[error("No expiration time in JWT")]
    NoExpiration,
    /// The principal claim is missing or blank.
    #[error("No principal name in JWT claim: {0}")]
    NoPrincipal(String),
    /// `iat` is later than now plus the skew.
    #[error("The Issued At value ({iat} seconds) was after the indicated time ({now_ms} ms) plus allowable clock skew ({skew_ms} ms)")]
    IssuedInFuture {
        /// `iat`.
        iat: String,
        /// Now.
        now_ms: i64,
        /// The skew.
        skew_ms: i64,
    },
    /// Now minus the skew is at or after `exp`.
    #[error("The indicated time ({now_ms} ms) minus allowable clock skew ({skew_ms} ms) was on or after the Expiration Time value ({exp} seconds)")]
    Expired {
        /// `exp`.
        exp: String,
        /// Now.
        now_ms: i64,
        /// The skew.
        skew_ms: i64,
    },
    /// `exp` is not after `iat`.
    #[error(
        "The Expiration Time time ({exp} seconds) was not after the Issued At time ({iat} seconds)"
    )]
    ExpiresBeforeIssued {
        /// `exp`.
        exp: String,
        /// `iat`.
        iat: String,
    },
    /// A required scope is missing.
    #[error("The provided scope ({provided:?}) was missing a required scope ({missing}).  All required scope elements: {required:?}")]
    MissingScope {
        /// The token's scope.
        provided: BTreeSet<String>,
        /// The first missing one.
        missing: String,
        /// All required ones.
        required: Vec<String>,
    },
}

/// A bad validator option.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnsecuredConfigError {
    /// The clock skew is not a non-negative 32-bit integer.
    #[error("Allowable clock skew millis must be a non-negative integer: {0}")]
    ClockSkew(String),
}

/// The unsecured validator's options, from the OAUTHBEARER JAAS entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsecuredValidatorConfig {
    /// `unsecuredValidatorPrincipalClaimName` (default `sub`).
    pub principal_claim_name: String,
    /// `unsecuredValidatorScopeClaimName` (default `scope`).
    pub scope_claim_name: String,
    /// `unsecuredValidatorRequiredScope`, split on spaces.
    pub required_scope: Vec<String>,
    /// `unsecuredValidatorAllowableClockSkewMs` (default 0).
    pub allowable_clock_skew_ms: i64,
}

impl Default for UnsecuredValidatorConfig {
    fn default() -> Self {
        UnsecuredValidatorConfig {
            principal_claim_name: "sub".into(),
            scope_claim_name: "scope".into(),
            required_scope: Vec::new(),
            allowable_clock_skew_ms: 0,
        }
    }
}

impl UnsecuredValidatorConfig {
    /// Reads the options of an `OAuthBearerLoginModule` JAAS entry; blank options take defaults.
    pub fn from_jaas_options(
        options: &BTreeMap<String, String>,
    ) -> Result<Self, UnsecuredConfigError> {
        let opt = |k: &str| options.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
        let mut c = UnsecuredValidatorConfig::default();
        if let Some(v) = opt(PRINCIPAL_CLAIM_NAME_OPTION) {
            c.principal_claim_name = v.to_string();
        }
        if let Some(v) = opt(SCOPE_CLAIM_NAME_OPTION) {
            c.scope_claim_name = v.to_string();
        }
        if let Some(v) = opt(REQUIRED_SCOPE_OPTION) {
            c.required_scope = v
                .split(' ')
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
        }
        if let Some(v) = opt(ALLOWABLE_CLOCK_SKEW_MS_OPTION) {
            c.allowable_clock_skew_ms = v
                .parse::<i32>()
                .ok()
                .filter(|s| *s >= 0)
                .map(i64::from)
                .ok_or_else(|| UnsecuredConfigError::ClockSkew(v.to_string()))?;
        }
        Ok(c)
    }
}

/// Kafka's default OAUTHBEARER validator.
#[derive(Debug, Clone, Default)]
pub struct UnsecuredJwsValidator {
    config: UnsecuredValidatorConfig,
}

/// Jackson's `asText` of a non-number claim, which Kafka's claim map holds.
#[derive(Debug, Clone, PartialEq)]
enum Claim {
    Text(String),
    Number(f64),
    List(Vec<String>),
}

fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".into(),
        Value::Number(n) => n.to_string(),
        Value::Array(_) | Value::Object(_) => String::new(),
    }
}

fn to_claims(part: &str) -> Result<BTreeMap<String, Claim>, UnsecuredJwsError> {
    let bytes = engine(&alphabet::URL_SAFE)
        .decode(part)
        .or_else(|_| engine(&alphabet::STANDARD).decode(part))
        .map_err(|_| UnsecuredJwsError::Base64)?;
    // Jackson's `properties()` of a non-object is empty: `[]` is a JSON document without claims.
    let map = match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => map,
        Ok(_) => serde_json::Map::new(),
        Err(_) => return Err(UnsecuredJwsError::Json),
    };
    Ok(map
        .into_iter()
        .map(|(k, v)| {
            let c = match &v {
                Value::Array(items) => Claim::List(items.iter().map(as_text).collect()),
                Value::Number(n) => Claim::Number(n.as_f64().unwrap_or(f64::NAN)),
                other => Claim::Text(as_text(other)),
            };
            (k, c)
        })
        .collect())
}

fn number(claims: &BTreeMap<String, Claim>, name: &str) -> Result<Option<f64>, UnsecuredJwsError> {
    match claims.get(name) {
        None => Ok(None),
        Some(Claim::Number(n)) => Ok(Some(*n)),
        Some(_) => Err(UnsecuredJwsError::ClaimType {
            claim: name.into(),
            expected: "Number",
        }),
    }
}

fn seconds_to_ms(s: f64) -> i64 {
    // Java's Math.round(double * 1000), saturating.
    (s * 1000.0).round() as i64
}

/// Java's `%f`: six decimals.
fn java_f(s: f64) -> String {
    format!("{s:.6}")
}

impl UnsecuredJwsValidator {
    /// A validator with these options.
    pub fn new(config: UnsecuredValidatorConfig) -> Self {
        UnsecuredJwsValidator { config }
    }

    /// The options.
    pub fn config(&self) -> &UnsecuredValidatorConfig {
        &self.config
    }

    /// Validates an unsecured JWS at `now_ms`, in Kafka's order of checks.
    pub fn validate(
        &self,
        token: &str,
        now_ms: i64,
    ) -> Result<OAuthBearerToken, UnsecuredJwsError> {
        if token.contains("..") {
            return Err(UnsecuredJwsError::DoubleDot);
        }
        let parts: Vec<&str> = token.split('.').collect();
        let [header, payload, signature] = parts[..] else {
            return Err(UnsecuredJwsError::PartCount);
        };
        let header = to_claims(header)?;
        let claims = to_claims(payload)?;
        match header.get("alg") {
            None => return Err(UnsecuredJwsError::AlgMissing),
            Some(Claim::Text(alg)) if alg == "none" => {}
            Some(_) => return Err(UnsecuredJwsError::AlgNotNone),
        }
        if !signature.is_empty() {
            return Err(UnsecuredJwsError::Signature);
        }
        let scope = self.scope(&claims)?;
        let exp = number(&claims, "exp")?.ok_or(UnsecuredJwsError::NoExpiration)?;
        let principal_claim = &self.config.principal_claim_name;
        let principal_name = match claims.get(principal_claim) {
            Some(Claim::Text(s)) if !s.trim().is_empty() => s.clone(),
            None | Some(Claim::Text(_)) => {
                return Err(UnsecuredJwsError::NoPrincipal(principal_claim.clone()))
            }
            Some(_) => {
                return Err(UnsecuredJwsError::ClaimType {
                    claim: principal_claim.clone(),
                    expected: "String",
                })
            }
        };
        let iat = number(&claims, "iat")?;
        let skew = self.config.allowable_clock_skew_ms;
        if let Some(iat) = iat {
            if 1000.0 * iat > (now_ms.saturating_add(skew)) as f64 {
                return Err(UnsecuredJwsError::IssuedInFuture {
                    iat: java_f(iat),
                    now_ms,
                    skew_ms: skew,
                });
            }
        }
        if (now_ms.saturating_sub(skew)) as f64 >= 1000.0 * exp || exp.is_nan() {
            return Err(UnsecuredJwsError::Expired {
                exp: java_f(exp),
                now_ms,
                skew_ms: skew,
            });
        }
        if let Some(iat) = iat {
            if exp <= iat {
                return Err(UnsecuredJwsError::ExpiresBeforeIssued {
                    exp: java_f(exp),
                    iat: java_f(iat),
                });
            }
        }
        if let Some(missing) = self
            .config
            .required_scope
            .iter()
            .find(|s| !scope.contains(*s))
        {
            return Err(UnsecuredJwsError::MissingScope {
                provided: scope,
                missing: missing.clone(),
                required: self.config.required_scope.clone(),
            });
        }
        Ok(OAuthBearerToken {
            value: token.to_string(),
            principal_name,
            scope,
            lifetime_ms: seconds_to_ms(exp),
            start_time_ms: iat.map(seconds_to_ms),
        })
    }

    /// A string scope claim is one scope (trimmed); a list claim is one scope per non-blank item.
    fn scope(
        &self,
        claims: &BTreeMap<String, Claim>,
    ) -> Result<BTreeSet<String>, UnsecuredJwsError> {
        Ok(match claims.get(&self.config.scope_claim_name) {
            None => BTreeSet::new(),
            Some(Claim::Text(s)) if s.trim().is_empty() => BTreeSet::new(),
            Some(Claim::Text(s)) => BTreeSet::from([s.trim().to_string()]),
            Some(Claim::List(items)) => items
                .iter()
                .filter(|s| !s.trim().is_empty())
                .map(|s| s.trim().to_string())
                .collect(),
            Some(Claim::Number(_)) => {
                return Err(UnsecuredJwsError::ClaimType {
                    claim: self.config.scope_claim_name.clone(),
                    expected: "List",
                })
            }
        })
    }
}

/// Java's `List.toString()`: `[a, b]`.
fn java_list(items: &[String]) -> String {
    format!("[{}]", items.join(", "))
}

impl OAuthBearerValidator for UnsecuredJwsValidator {
    fn validate_token(&self, token: &str, now_ms: i64) -> Result<OAuthBearerToken, TokenRejection> {
        self.validate(token, now_ms).map_err(|e| {
            let scope = match &e {
                UnsecuredJwsError::MissingScope { required, .. } => Some(java_list(required)),
                _ => None,
            };
            TokenRejection {
                reason: Box::new(e),
                scope,
                openid_configuration: None,
            }
        })
    }
}

/// Builds an unsecured token `base64url(header).base64url(claims).` (the client side, for tests).
pub fn unsecured_token(claims: &Value) -> String {
    let e = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    format!(
        "{}.{}.",
        e.encode(br#"{"alg":"none"}"#),
        e.encode(claims.to_string())
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: i64 = 1_700_000_000_000;

    fn v() -> UnsecuredJwsValidator {
        UnsecuredJwsValidator::default()
    }

    #[test]
    fn accepts_a_valid_token() {
        let t = unsecured_token(
            &json!({"sub":"alice","exp":1_700_000_060,"iat":1_700_000_000,"scope":["a"," b ",""]}),
        );
        let tok = v().validate(&t, NOW).unwrap();
        assert_eq!(tok.principal_name, "alice");
        assert_eq!(tok.lifetime_ms, 1_700_000_060_000);
        assert_eq!(tok.start_time_ms, Some(NOW));
        assert_eq!(
            tok.scope,
            BTreeSet::from(["a".to_string(), "b".to_string()])
        );
    }

    #[test]
    fn refuses_per_kafkas_rules() {
        let cases = [
            (json!({"sub":"a","exp":1_699_999_999}), "Expired"),
            (json!({"sub":"a","exp":1_700_000_000}), "Expired"),
            (json!({"sub":"a"}), "NoExpiration"),
            (json!({"sub":"a","exp":"1800000000"}), "ClaimType"),
            (json!({"sub":"  ","exp":1_800_000_000}), "NoPrincipal"),
            (json!({"exp":1_800_000_000}), "NoPrincipal"),
            (json!({"sub":5,"exp":1_800_000_000}), "ClaimType"),
            (
                json!({"sub":"a","exp":1_800_000_000,"iat":1_700_000_001}),
                "IssuedInFuture",
            ),
            (
                json!({"sub":"a","exp":1_700_000_001,"iat":1_700_000_001.5}),
                "IssuedInFuture",
            ),
            (
                json!({"sub":"a","exp":1_800_000_000,"scope":5}),
                "ClaimType",
            ),
        ];
        for (claims, kind) in cases {
            let e = v().validate(&unsecured_token(&claims), NOW).unwrap_err();
            assert!(format!("{e:?}").starts_with(kind), "{claims}: {e:?}");
        }
        let e = |t: &str| v().validate(t, NOW).unwrap_err();
        assert_eq!(e("a..b"), UnsecuredJwsError::DoubleDot);
        assert_eq!(e("a.b"), UnsecuredJwsError::PartCount);
        assert_eq!(e("!!.e30."), UnsecuredJwsError::Base64);
        assert_eq!(e("e30.W10."), UnsecuredJwsError::AlgMissing);
        let hs = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(r#"{"alg":"HS256"}"#);
        assert_eq!(e(&format!("{hs}.e30.")), UnsecuredJwsError::AlgNotNone);
        let good = unsecured_token(&json!({"sub":"a","exp":1_800_000_000}));
        assert_eq!(e(&format!("{good}sig")), UnsecuredJwsError::Signature);
    }

    #[test]
    fn clock_skew_and_expiry_order() {
        let cfg = UnsecuredValidatorConfig {
            allowable_clock_skew_ms: 2000,
            ..Default::default()
        };
        let v = UnsecuredJwsValidator::new(cfg);
        // Expired one second ago, within the skew.
        let t = unsecured_token(&json!({"sub":"a","exp":1_699_999_999,"iat":1_699_999_990}));
        assert_eq!(v.validate(&t, NOW).unwrap().principal_name, "a");
        // Issued one second ahead, within the skew.
        let t = unsecured_token(&json!({"sub":"a","exp":1_700_000_100,"iat":1_700_000_001}));
        assert!(v.validate(&t, NOW).is_ok());
        let t = unsecured_token(&json!({"sub":"a","exp":1_700_000_001,"iat":1_700_000_001}));
        assert!(matches!(
            v.validate(&t, NOW),
            Err(UnsecuredJwsError::ExpiresBeforeIssued { .. })
        ));
    }

    #[test]
    fn options_and_scope_rejection_challenge() {
        let opts = BTreeMap::from([
            (
                PRINCIPAL_CLAIM_NAME_OPTION.to_string(),
                " user ".to_string(),
            ),
            (SCOPE_CLAIM_NAME_OPTION.to_string(), "scp".to_string()),
            (REQUIRED_SCOPE_OPTION.to_string(), "read  write".to_string()),
            (ALLOWABLE_CLOCK_SKEW_MS_OPTION.to_string(), "10".to_string()),
        ]);
        let cfg = UnsecuredValidatorConfig::from_jaas_options(&opts).unwrap();
        assert_eq!(cfg.principal_claim_name, "user");
        assert_eq!(cfg.required_scope, ["read", "write"]);
        assert_eq!(cfg.allowable_clock_skew_ms, 10);
        let v = UnsecuredJwsValidator::new(cfg);
        let t = unsecured_token(&json!({"user":"bob","exp":1_800_000_000,"scp":"read"}));
        let r = v.validate_token(&t, NOW).unwrap_err();
        assert_eq!(
            r.challenge_json(),
            r#"{"status":"insufficient_scope", "scope":"[read, write]"}"#
        );
        let t = unsecured_token(&json!({"user":"bob","exp":1_800_000_000,"scp":["write","read"]}));
        assert_eq!(v.validate_token(&t, NOW).unwrap().principal_name, "bob");
        let t = unsecured_token(&json!({"sub":"bob","exp":1}));
        assert_eq!(
            v.validate_token(&t, NOW).unwrap_err().challenge_json(),
            r#"{"status":"invalid_token"}"#
        );
        for bad in ["-1", "x", "99999999999"] {
            let opts =
                BTreeMap::from([(ALLOWABLE_CLOCK_SKEW_MS_OPTION.to_string(), bad.to_string())]);
            assert!(UnsecuredValidatorConfig::from_jaas_options(&opts).is_err());
        }
    }
}
