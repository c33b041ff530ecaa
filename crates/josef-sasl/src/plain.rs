//! SASL/PLAIN (RFC 4616) as Kafka's `PlainSaslServer` with `PlainServerCallbackHandler`: the users
//! are the `user_<name>="<password>"` options of the listener's `PlainLoginModule` JAAS entry.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use subtle::ConstantTimeEq;

use crate::error::{AuthFailure, SaslError};
use crate::jaas::{JaasConfig, JaasError};
use crate::mechanism::{Authenticated, SaslMechanism, SaslServer, SaslStep};
use crate::principal::KafkaPrincipal;

/// The JAAS login module class whose options hold PLAIN users.
pub const PLAIN_LOGIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";

/// The prefix of a user's option in the PLAIN JAAS entry.
pub const USER_OPTION_PREFIX: &str = "user_";

/// A PLAIN message parsed: `[authzid] NUL authcid NUL passwd`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlainMessage<'a> {
    /// The authorization id (may be empty).
    pub authorization_id: &'a str,
    /// The user name (non-empty).
    pub username: &'a str,
    /// The password (non-empty).
    pub password: &'a str,
}

impl<'a> PlainMessage<'a> {
    /// Parses a client's PLAIN message. Exactly three parts, the user and the password non-empty.
    /// (Kafka's own split ignores anything after a third NUL; RFC 4616 forbids NUL in a password,
    /// so this refuses it.)
    pub fn parse(bytes: &'a [u8]) -> Result<PlainMessage<'a>, AuthFailure> {
        let text = std::str::from_utf8(bytes).map_err(|_| AuthFailure::PlainNotUtf8)?;
        let mut parts = text.split('\0');
        let (Some(authorization_id), Some(username), Some(password), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(AuthFailure::PlainMalformed {
                parts: text.split('\0').count(),
            });
        };
        if username.is_empty() {
            return Err(AuthFailure::PlainUsernameMissing);
        }
        if password.is_empty() {
            return Err(AuthFailure::PlainPasswordMissing);
        }
        Ok(PlainMessage {
            authorization_id,
            username,
            password,
        })
    }
}

/// The PLAIN users of a listener, from its JAAS config.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct PlainUsers {
    passwords: BTreeMap<String, String>,
}

impl fmt::Debug for PlainUsers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print passwords.
        f.debug_struct("PlainUsers")
            .field("users", &self.passwords.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl PlainUsers {
    /// No users.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces a user.
    pub fn with_user(mut self, name: impl Into<String>, password: impl Into<String>) -> Self {
        self.passwords.insert(name.into(), password.into());
        self
    }

    /// The users of the single `PlainLoginModule` entry of a `sasl.jaas.config`.
    pub fn from_jaas(config: &JaasConfig) -> Result<Self, JaasError> {
        let entry = config.single_entry(PLAIN_LOGIN_MODULE)?;
        let passwords = entry
            .options
            .iter()
            .filter_map(|(k, v)| {
                k.strip_prefix(USER_OPTION_PREFIX)
                    .map(|name| (name.to_string(), v.clone()))
            })
            .collect();
        Ok(PlainUsers { passwords })
    }

    /// Parses a `sasl.jaas.config` value and takes its PLAIN users.
    pub fn from_jaas_config(text: &str) -> Result<Self, JaasError> {
        Self::from_jaas(&JaasConfig::parse(text)?)
    }

    /// The user names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.passwords.keys().map(String::as_str)
    }

    /// True when `password` is the user's. The comparison takes the same time wherever the
    /// passwords differ; an unknown user compares against an empty password so it fails alike.
    pub fn authenticate(&self, username: &str, password: &str) -> bool {
        let (expected, known) = match self.passwords.get(username) {
            Some(p) => (p.as_bytes(), true),
            None => (&b""[..], false),
        };
        let equal: bool = expected.ct_eq(password.as_bytes()).into();
        equal && known
    }
}

/// A PLAIN session: one client token, then success or failure.
#[derive(Debug)]
pub struct PlainSaslServer {
    users: Arc<PlainUsers>,
    done: bool,
}

impl PlainSaslServer {
    /// A session checking against `users`.
    pub fn new(users: Arc<PlainUsers>) -> Self {
        PlainSaslServer { users, done: false }
    }
}

impl SaslServer for PlainSaslServer {
    fn mechanism(&self) -> SaslMechanism {
        SaslMechanism::Plain
    }

    fn evaluate_response(&mut self, response: &[u8], _now_ms: i64) -> Result<SaslStep, SaslError> {
        if self.done {
            return Err(SaslError::IllegalSaslState { state: "COMPLETE" });
        }
        self.done = true;
        let msg = PlainMessage::parse(response)?;
        if !self.users.authenticate(msg.username, msg.password) {
            return Err(AuthFailure::InvalidUsernameOrPassword.into());
        }
        if !msg.authorization_id.is_empty() && msg.authorization_id != msg.username {
            return Err(AuthFailure::AuthorizationIdMismatch.into());
        }
        Ok(SaslStep::Complete(Authenticated {
            principal: KafkaPrincipal::user(msg.username),
            response: Vec::new(),
            credential_expiry_ms: None,
            extensions: BTreeMap::new(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn users() -> Arc<PlainUsers> {
        Arc::new(
            PlainUsers::from_jaas_config(
                r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";"#,
            )
            .unwrap(),
        )
    }

    fn run(token: &[u8]) -> Result<SaslStep, SaslError> {
        PlainSaslServer::new(users()).evaluate_response(token, 0)
    }

    #[test]
    fn jaas_users_are_the_user_options() {
        let u = users();
        assert_eq!(u.names().collect::<Vec<_>>(), ["admin", "alice"]);
        assert!(!format!("{u:?}").contains("secret"));
    }

    #[test]
    fn right_password_authenticates_with_empty_reply() {
        for token in [&b"\0alice\0alice-secret"[..], b"alice\0alice\0alice-secret"] {
            let SaslStep::Complete(a) = run(token).unwrap() else {
                panic!("not complete")
            };
            assert_eq!(a.principal, KafkaPrincipal::user("alice"));
            assert!(a.response.is_empty());
        }
    }

    #[test]
    fn failures_are_typed_as_kafka_words_them() {
        let cases: [(&[u8], AuthFailure); 7] = [
            (b"\0alice\0wrong", AuthFailure::InvalidUsernameOrPassword),
            (
                b"\0bob\0alice-secret",
                AuthFailure::InvalidUsernameOrPassword,
            ),
            (b"\0alice\0", AuthFailure::PlainPasswordMissing),
            (b"\0\0pw", AuthFailure::PlainUsernameMissing),
            (b"alice", AuthFailure::PlainMalformed { parts: 1 }),
            (
                b"\0alice\0alice-secret\0x",
                AuthFailure::PlainMalformed { parts: 4 },
            ),
            (
                b"admin\0alice\0alice-secret",
                AuthFailure::AuthorizationIdMismatch,
            ),
        ];
        for (token, failure) in cases {
            assert_eq!(
                run(token),
                Err(SaslError::Authentication(failure)),
                "{token:?}"
            );
        }
        assert_eq!(
            run(b"\0\xff\0x"),
            Err(SaslError::Authentication(AuthFailure::PlainNotUtf8))
        );
    }

    #[test]
    fn second_token_is_illegal_state() {
        let mut s = PlainSaslServer::new(users());
        assert!(s.evaluate_response(b"\0alice\0alice-secret", 0).is_ok());
        assert_eq!(
            s.evaluate_response(b"\0alice\0alice-secret", 0),
            Err(SaslError::IllegalSaslState { state: "COMPLETE" })
        );
    }

    #[test]
    fn unknown_user_with_empty_password_option_cannot_log_in() {
        let u = PlainUsers::new().with_user("e", "");
        assert!(u.authenticate("e", ""));
        assert!(!u.authenticate("nobody", ""));
    }
}
