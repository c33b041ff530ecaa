//! A listener's SASL settings as Kafka names them, read from a broker's [`Props`]: each
//! listener-prefixed first (`listener.name.<l>.<setting>`; JAAS and re-authentication also
//! `listener.name.<l>.<mechanism>.<setting>`), then unprefixed; and the [`SaslListener`] they
//! build (PLAIN users from `sasl.jaas.config`, SCRAM over the caller's credential store,
//! OAUTHBEARER's unsecured JWS validator).
//!
//! ```
//! use std::collections::BTreeMap;
//! use std::sync::Arc;
//! use josef_config::settings::Props;
//! use josef_sasl::settings::SaslSettings;
//! use josef_sasl::scram::ScramCredentials;
//!
//! let mut p = Props::new(BTreeMap::from([
//!     ("sasl.enabled.mechanisms".to_string(), "PLAIN,SCRAM-SHA-256".to_string()),
//!     (
//!         "listener.name.client.plain.sasl.jaas.config".to_string(),
//!         r#"org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="s";"#.to_string(),
//!     ),
//!     ("connections.max.reauth.ms".to_string(), "60000".to_string()),
//! ]));
//! let s = SaslSettings::from_props(&mut p, "CLIENT").unwrap();
//! SaslSettings::take_unprefixed(&mut p);
//! assert_eq!(p.into_remaining_keys().count(), 0);
//! assert_eq!(s.connections_max_reauth_ms, 60000);
//!
//! let listener = s
//!     .listener(Arc::new(ScramCredentials::new()), Arc::new(josef_sasl::CountingNonce::new("n")))
//!     .unwrap();
//! assert_eq!(listener.config().enabled_mechanisms, ["PLAIN", "SCRAM-SHA-256"]);
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;

use josef_config::settings::{ConfigError, Props};

use crate::authenticator::{
    AuthenticatorConfig, SaslListener, DEFAULT_FAILED_AUTHENTICATION_DELAY_MS,
    DEFAULT_SASL_SERVER_MAX_RECEIVE_SIZE,
};
use crate::factory::SaslServerFactory;
use crate::jaas::JaasConfig;
use crate::mechanism::SaslMechanism;
use crate::nonce::NonceSource;
use crate::oauthbearer::{UnsecuredJwsValidator, UnsecuredValidatorConfig};
use crate::plain::PlainUsers;
use crate::scram::ScramCredentialStore;

/// The unprefixed SASL settings every SASL listener falls back to.
pub const UNPREFIXED_KEYS: &[&str] = &[
    "sasl.enabled.mechanisms",
    "sasl.jaas.config",
    "connections.max.reauth.ms",
    "connection.failed.authentication.delay.ms",
    "sasl.server.max.receive.size",
];

/// The SASL settings of one listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslSettings {
    /// `sasl.enabled.mechanisms` (Kafka's default: GSSAPI, which Josef does not implement).
    pub enabled_mechanisms: Vec<String>,
    /// `sasl.jaas.config` per mechanism (lower-case name): the listener-and-mechanism-prefixed
    /// value, else the listener-prefixed one, else the unprefixed one.
    pub jaas_config: BTreeMap<String, String>,
    /// `connections.max.reauth.ms` (0: sessions are not bounded by it).
    pub connections_max_reauth_ms: i64,
    /// `listener.name.<l>.<mechanism>.connections.max.reauth.ms`, by upper-case mechanism name.
    pub connections_max_reauth_ms_by_mechanism: BTreeMap<String, i64>,
    /// `connection.failed.authentication.delay.ms` (100).
    pub failed_authentication_delay_ms: i64,
    /// `sasl.server.max.receive.size` (524288).
    pub max_receive_size: i32,
}

/// Why a SASL listener cannot start.
#[derive(Debug, thiserror::Error)]
pub enum SaslConfigError {
    /// A JAAS text does not parse or misses what a mechanism needs.
    #[error("{mechanism} sasl.jaas.config: {reason}")]
    Jaas {
        /// The mechanism (lower case, as in the setting name).
        mechanism: String,
        /// What is wrong.
        reason: String,
    },
    /// An enabled mechanism has nothing to run with.
    #[error(transparent)]
    Listener(#[from] crate::authenticator::ConfigError),
}

impl SaslSettings {
    /// Reads the SASL settings of `listener`, taking its listener-prefixed ones from `p`; the
    /// unprefixed ones stay for the other listeners ([`SaslSettings::take_unprefixed`]).
    pub fn from_props(p: &mut Props, listener: &str) -> Result<SaslSettings, ConfigError> {
        let enabled_mechanisms = p
            .listener_or_global(listener, "sasl.enabled.mechanisms")
            .map(|v| v.list())
            .unwrap_or_else(|| vec!["GSSAPI".to_string()]);
        let mut jaas_config = BTreeMap::new();
        let mut reauth_by_mechanism = BTreeMap::new();
        let listener_jaas = p.take_listener(listener, "sasl.jaas.config");
        let global_jaas = p.global("sasl.jaas.config");
        for m in &enabled_mechanisms {
            let lower = m.to_ascii_lowercase();
            let scoped = p.take_listener(listener, &format!("{lower}.sasl.jaas.config"));
            if let Some(v) = scoped
                .or_else(|| listener_jaas.clone())
                .or_else(|| global_jaas.clone())
            {
                jaas_config.insert(lower.clone(), v.value);
            }
            if let Some(v) =
                p.take_listener(listener, &format!("{lower}.connections.max.reauth.ms"))
            {
                reauth_by_mechanism.insert(m.clone(), v.num::<i64>(0)?);
            }
        }
        let connections_max_reauth_ms =
            match p.listener_or_global(listener, "connections.max.reauth.ms") {
                None => 0,
                Some(v) => v.num::<i64>(0)?,
            };
        let failed_authentication_delay_ms =
            match p.global("connection.failed.authentication.delay.ms") {
                None => DEFAULT_FAILED_AUTHENTICATION_DELAY_MS,
                Some(v) => v.num::<i64>(0)?,
            };
        let max_receive_size = match p.global("sasl.server.max.receive.size") {
            None => DEFAULT_SASL_SERVER_MAX_RECEIVE_SIZE as i32,
            Some(v) => v.num::<i32>(1)?,
        };
        Ok(SaslSettings {
            enabled_mechanisms,
            jaas_config,
            connections_max_reauth_ms,
            connections_max_reauth_ms_by_mechanism: reauth_by_mechanism,
            failed_authentication_delay_ms,
            max_receive_size,
        })
    }

    /// Takes the unprefixed SASL settings once every listener has read them (they are Kafka's
    /// even when no listener uses SASL, so they must not be reported as unknown).
    pub fn take_unprefixed(p: &mut Props) {
        for key in UNPREFIXED_KEYS {
            p.take(key);
        }
    }

    /// True when an enabled mechanism is one Josef implements (PLAIN, SCRAM-SHA-256,
    /// SCRAM-SHA-512, OAUTHBEARER); without one every login fails.
    pub fn has_implemented_mechanism(&self) -> bool {
        self.enabled_mechanisms
            .iter()
            .any(|m| SaslMechanism::from_name(m).is_some())
    }

    /// Builds the listener: PLAIN users from the mechanism's JAAS text, SCRAM over `scram` with
    /// server nonces from `nonces`, OAUTHBEARER's unsecured validator with the JAAS options.
    /// GSSAPI and other mechanisms stay enabled: a client asking for them is told
    /// UNSUPPORTED_SASL_MECHANISM.
    pub fn listener(
        &self,
        scram: Arc<dyn ScramCredentialStore>,
        nonces: Arc<dyn NonceSource>,
    ) -> Result<Arc<SaslListener>, SaslConfigError> {
        let mut factory = SaslServerFactory::new();
        let jaas_err = |mechanism: &str, reason: String| SaslConfigError::Jaas {
            mechanism: mechanism.to_string(),
            reason,
        };
        for name in &self.enabled_mechanisms {
            let lower = name.to_ascii_lowercase();
            match SaslMechanism::from_name(name) {
                Some(SaslMechanism::Plain) => {
                    let text = self.jaas_config.get(&lower).ok_or_else(|| {
                        jaas_err(
                            &lower,
                            "PLAIN needs listener.name.<listener>.plain.sasl.jaas.config (or sasl.jaas.config) with user_<name>=\"<password>\" options".into(),
                        )
                    })?;
                    let users = PlainUsers::from_jaas_config(text)
                        .map_err(|e| jaas_err(&lower, e.to_string()))?;
                    factory = factory.with_plain(users);
                }
                Some(SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512) => {
                    factory = factory.with_scram(scram.clone(), nonces.clone());
                }
                Some(SaslMechanism::OAuthBearer) => {
                    let config = match self.jaas_config.get(&lower) {
                        None => UnsecuredValidatorConfig::default(),
                        Some(text) => {
                            let jaas = JaasConfig::parse(text)
                                .map_err(|e| jaas_err(&lower, e.to_string()))?;
                            let entry = jaas
                                .entries
                                .first()
                                .ok_or_else(|| jaas_err(&lower, "no login module".into()))?;
                            UnsecuredValidatorConfig::from_jaas_options(&entry.options)
                                .map_err(|e| jaas_err(&lower, e.to_string()))?
                        }
                    };
                    factory =
                        factory.with_oauthbearer(Arc::new(UnsecuredJwsValidator::new(config)));
                }
                None => {}
            }
        }
        let mut config = AuthenticatorConfig::new(self.enabled_mechanisms.iter().cloned());
        config.connections_max_reauth_ms = self.connections_max_reauth_ms;
        for (m, v) in &self.connections_max_reauth_ms_by_mechanism {
            if let Some(m) = SaslMechanism::from_name(m) {
                config.connections_max_reauth_ms_by_mechanism.insert(m, *v);
            }
        }
        config.failed_authentication_delay_ms = self.failed_authentication_delay_ms;
        config.max_receive_size = usize::try_from(self.max_receive_size).unwrap_or(0);
        Ok(SaslListener::new(config, factory)?)
    }

    /// The client identity a broker logs in with when it connects to this listener of another
    /// broker with `mechanism` (`sasl.mechanism.inter.broker.protocol`): the `username` and
    /// `password` options of the mechanism's JAAS entry, as Kafka's PlainLoginModule and
    /// ScramLoginModule take them. The mechanism must be enabled here, as Kafka requires.
    pub fn client_credentials(
        &self,
        mechanism: &str,
    ) -> Result<ClientCredentials, SaslConfigError> {
        let lower = mechanism.to_ascii_lowercase();
        let err = |reason: String| SaslConfigError::Jaas {
            mechanism: lower.clone(),
            reason,
        };
        let parsed = match SaslMechanism::from_name(mechanism) {
            Some(m @ (SaslMechanism::Plain | SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512)) => m,
            _ => {
                return Err(err(format!(
                    "{mechanism} cannot be used between brokers here: use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"
                )))
            }
        };
        if !self.enabled_mechanisms.iter().any(|m| m == mechanism) {
            return Err(err(format!(
                "{mechanism} must be in sasl.enabled.mechanisms of the listener brokers connect to (enabled: {})",
                self.enabled_mechanisms.join(",")
            )));
        }
        let text = self.jaas_config.get(&lower).ok_or_else(|| {
            err(format!(
                "a broker logging in with {mechanism} needs listener.name.<listener>.{lower}.sasl.jaas.config with username and password"
            ))
        })?;
        let jaas = JaasConfig::parse(text).map_err(|e| err(e.to_string()))?;
        let entry = jaas
            .entries
            .first()
            .ok_or_else(|| err("no login module".into()))?;
        let option = |k: &str| {
            entry.options.get(k).cloned().ok_or_else(|| {
                err(format!(
                    "the JAAS entry has no {k} option (the broker's own login)"
                ))
            })
        };
        Ok(ClientCredentials {
            mechanism: parsed,
            username: option("username")?,
            password: option("password")?,
        })
    }
}

/// What a broker logs in with as a SASL client.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientCredentials {
    /// The mechanism.
    pub mechanism: SaslMechanism,
    /// `username`.
    pub username: String,
    /// `password`.
    pub password: String,
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .field("password", &"(hidden)")
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scram::ScramCredentials;
    use crate::CountingNonce;

    fn props(pairs: &[(&str, &str)]) -> Props {
        Props::new(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    const PLAIN_JAAS: &str =
        r#"org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a";"#;

    #[test]
    fn client_credentials_come_from_the_mechanism_s_jaas_entry() {
        let mut p = props(&[
            ("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-512"),
            (
                "listener.name.a.plain.sasl.jaas.config",
                r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="pw" user_broker="pw";"#,
            ),
            (
                "listener.name.a.scram-sha-512.sasl.jaas.config",
                r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="admin";"#,
            ),
        ]);
        let s = SaslSettings::from_props(&mut p, "A").unwrap();
        let c = s.client_credentials("PLAIN").unwrap();
        assert_eq!((c.username.as_str(), c.password.as_str()), ("broker", "pw"));
        assert_eq!(c.mechanism, SaslMechanism::Plain);
        assert!(!format!("{c:?}").contains("pw"));
        for (m, want) in [
            ("SCRAM-SHA-512", "no password option"),
            ("SCRAM-SHA-256", "must be in sasl.enabled.mechanisms"),
            ("OAUTHBEARER", "cannot be used between brokers"),
            ("GSSAPI", "cannot be used between brokers"),
        ] {
            let e = s.client_credentials(m).unwrap_err().to_string();
            assert!(e.contains(want), "{m}: {e}");
        }
    }

    #[test]
    fn defaults_are_kafka_s() {
        let mut p = props(&[]);
        let s = SaslSettings::from_props(&mut p, "SASL_PLAINTEXT").unwrap();
        assert_eq!(s.enabled_mechanisms, ["GSSAPI"]);
        assert!(s.jaas_config.is_empty());
        assert_eq!(s.connections_max_reauth_ms, 0);
        assert_eq!(s.failed_authentication_delay_ms, 100);
        assert_eq!(s.max_receive_size, 524_288);
        assert!(!s.has_implemented_mechanism());
    }

    #[test]
    fn jaas_is_read_mechanism_prefixed_then_listener_prefixed_then_unprefixed() {
        let mut p = props(&[
            ("sasl.enabled.mechanisms", "PLAIN,OAUTHBEARER,SCRAM-SHA-512"),
            ("listener.name.a.plain.sasl.jaas.config", "m"),
            ("listener.name.a.sasl.jaas.config", "l"),
            ("sasl.jaas.config", "g"),
            (
                "listener.name.a.scram-sha-512.connections.max.reauth.ms",
                "5000",
            ),
            ("listener.name.b.connections.max.reauth.ms", "7"),
        ]);
        let a = SaslSettings::from_props(&mut p, "A").unwrap();
        assert_eq!(a.jaas_config["plain"], "m");
        assert_eq!(a.jaas_config["oauthbearer"], "l");
        assert_eq!(a.jaas_config["scram-sha-512"], "l");
        assert_eq!(
            a.connections_max_reauth_ms_by_mechanism,
            BTreeMap::from([("SCRAM-SHA-512".to_string(), 5000)])
        );
        let b = SaslSettings::from_props(&mut p, "B").unwrap();
        assert_eq!(b.jaas_config["plain"], "g");
        assert_eq!(b.connections_max_reauth_ms, 7);
        assert!(b.connections_max_reauth_ms_by_mechanism.is_empty());
        SaslSettings::take_unprefixed(&mut p);
        assert_eq!(p.into_remaining_keys().count(), 0);
    }

    #[test]
    fn bad_numbers_name_the_key_they_came_from() {
        for (k, v, want) in [
            (
                "listener.name.a.connections.max.reauth.ms",
                "-1",
                "at least 0",
            ),
            ("connections.max.reauth.ms", "x", "not a number"),
            ("sasl.server.max.receive.size", "0", "at least 1"),
            ("sasl.server.max.receive.size", "9999999999", "not a number"),
            (
                "connection.failed.authentication.delay.ms",
                "-5",
                "at least 0",
            ),
        ] {
            let mut p = props(&[(k, v)]);
            let e = SaslSettings::from_props(&mut p, "A")
                .unwrap_err()
                .to_string();
            assert!(e.contains(k) && e.contains(want), "{k}={v}: {e}");
        }
    }

    fn listener_of(pairs: &[(&str, &str)]) -> Result<Arc<SaslListener>, SaslConfigError> {
        let s = SaslSettings::from_props(&mut props(pairs), "A").unwrap();
        s.listener(
            Arc::new(ScramCredentials::new()),
            Arc::new(CountingNonce::new("n")),
        )
    }

    #[test]
    fn the_listener_runs_what_is_enabled() {
        let l = listener_of(&[
            ("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,GSSAPI"),
            ("sasl.jaas.config", PLAIN_JAAS),
            ("connections.max.reauth.ms", "1000"),
            ("listener.name.a.plain.connections.max.reauth.ms", "2000"),
        ])
        .unwrap();
        let c = l.config();
        assert_eq!(c.enabled_mechanisms, ["PLAIN", "SCRAM-SHA-256", "GSSAPI"]);
        assert_eq!(c.max_reauth_ms(SaslMechanism::Plain), 2000);
        assert_eq!(c.max_reauth_ms(SaslMechanism::ScramSha256), 1000);
        assert_eq!(c.max_receive_size, 524_288);
    }

    #[test]
    fn plain_without_users_or_with_bad_jaas_fails_the_start() {
        let e = listener_of(&[("sasl.enabled.mechanisms", "PLAIN")]).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("plain sasl.jaas.config: PLAIN needs"),
            "{e}"
        );
        let e = listener_of(&[
            ("sasl.enabled.mechanisms", "PLAIN"),
            ("sasl.jaas.config", "not jaas"),
        ])
        .unwrap_err();
        assert!(matches!(e, SaslConfigError::Jaas { ref mechanism, .. } if mechanism == "plain"));
        let e = listener_of(&[
            ("sasl.enabled.mechanisms", "OAUTHBEARER"),
            ("sasl.jaas.config", "garbage = ;"),
        ])
        .unwrap_err();
        assert!(
            matches!(e, SaslConfigError::Jaas { ref mechanism, .. } if mechanism == "oauthbearer")
        );
    }
}
