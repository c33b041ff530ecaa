//! What every listener-aware part of a broker reads the same way: `listener.security.protocol.map`
//! (with Kafka's default map and its KRaft rule for controller listeners) and listener-prefixed
//! settings, `listener.name.<listener>.<setting>` before the unprefixed `<setting>`, as Kafka's
//! `ListenerName.configPrefix` does.
//!
//! ```
//! use std::collections::BTreeMap;
//! use josef_config::listener::{effective_protocol_map, SecurityProtocol};
//! use josef_config::settings::Props;
//!
//! let map = effective_protocol_map(Some("client:SASL_SSL,CONTROLLER:PLAINTEXT"), &[]).unwrap();
//! assert_eq!(map["CLIENT"], SecurityProtocol::SaslSsl);
//!
//! let mut p = Props::new(BTreeMap::from([
//!     ("listener.name.client.sasl.enabled.mechanisms".to_string(), "PLAIN".to_string()),
//!     ("sasl.enabled.mechanisms".to_string(), "SCRAM-SHA-512".to_string()),
//! ]));
//! let got = p.listener_or_global("CLIENT", "sasl.enabled.mechanisms").unwrap();
//! assert_eq!((got.value.as_str(), got.key.as_str()), ("PLAIN", "listener.name.client.sasl.enabled.mechanisms"));
//! // The unprefixed value stays for the other listeners.
//! assert_eq!(p.listener_or_global("OTHER", "sasl.enabled.mechanisms").unwrap().value, "SCRAM-SHA-512");
//! ```

use std::collections::BTreeMap;

use crate::settings::{ConfigError, Props};

/// Kafka's default `listener.security.protocol.map`: each protocol under its own name.
pub const DEFAULT_PROTOCOL_MAP: &str =
    "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL";

/// `security.protocol` of a listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SecurityProtocol {
    /// No TLS, no authentication.
    Plaintext,
    /// TLS; the principal is the client certificate's (or ANONYMOUS).
    Ssl,
    /// SASL without TLS.
    SaslPlaintext,
    /// TLS, then SASL.
    SaslSsl,
}

impl SecurityProtocol {
    /// The protocol of a Kafka name (case-insensitive, as Kafka).
    pub fn from_name(name: &str) -> Option<SecurityProtocol> {
        match name.to_ascii_uppercase().as_str() {
            "PLAINTEXT" => Some(SecurityProtocol::Plaintext),
            "SSL" => Some(SecurityProtocol::Ssl),
            "SASL_PLAINTEXT" => Some(SecurityProtocol::SaslPlaintext),
            "SASL_SSL" => Some(SecurityProtocol::SaslSsl),
            _ => None,
        }
    }

    /// Kafka's name.
    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// True for SSL and SASL_SSL.
    pub fn uses_tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }

    /// True for SASL_PLAINTEXT and SASL_SSL.
    pub fn uses_sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }
}

/// Parses `listener.security.protocol.map` (`NAME:PROTOCOL,...`), upper-casing names.
pub fn parse_protocol_map(value: &str) -> Result<BTreeMap<String, SecurityProtocol>, ConfigError> {
    let mut out = BTreeMap::new();
    for entry in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (n, proto) = entry.split_once(':').ok_or_else(|| {
            Props::invalid(
                "listener.security.protocol.map",
                value,
                "expected NAME:PROTOCOL",
            )
        })?;
        let protocol = SecurityProtocol::from_name(proto.trim()).ok_or_else(|| {
            Props::invalid(
                "listener.security.protocol.map",
                value,
                format!("unknown security protocol {}", proto.trim()),
            )
        })?;
        out.insert(n.trim().to_ascii_uppercase(), protocol);
    }
    Ok(out)
}

/// The protocol map in force: the configured one, else Kafka's default; controller listeners
/// missing from a default map are PLAINTEXT (Kafka's KRaft rule).
pub fn effective_protocol_map(
    configured: Option<&str>,
    controller_names: &[String],
) -> Result<BTreeMap<String, SecurityProtocol>, ConfigError> {
    match configured {
        Some(v) => parse_protocol_map(v),
        None => {
            let mut m = parse_protocol_map(DEFAULT_PROTOCOL_MAP)?;
            for c in controller_names {
                m.entry(c.clone()).or_insert(SecurityProtocol::Plaintext);
            }
            Ok(m)
        }
    }
}

/// `listener.name.<listener, lower case>.<key>`.
pub fn prefixed_key(listener: &str, key: &str) -> String {
    format!("listener.name.{}.{key}", listener.to_ascii_lowercase())
}

/// A value and the key it was found under (for error messages naming what the user wrote).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// The (trimmed) value.
    pub value: String,
    /// The key, prefixed or not.
    pub key: String,
}

impl Setting {
    /// The error for this value, with `reason`.
    pub fn invalid(&self, reason: impl Into<String>) -> ConfigError {
        Props::invalid(&self.key, &self.value, reason)
    }

    /// The value as a number at least `min`.
    pub fn num<T>(&self, min: T) -> Result<T, ConfigError>
    where
        T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy,
    {
        let n: T = self
            .value
            .parse()
            .map_err(|_| self.invalid("not a number"))?;
        if n < min {
            return Err(self.invalid(format!("must be at least {min}")));
        }
        Ok(n)
    }

    /// The value as Kafka's comma-separated list (items trimmed, empty ones dropped).
    pub fn list(&self) -> Vec<String> {
        list(&self.value)
    }
}

/// Kafka's comma-separated list: items trimmed, empty ones dropped.
pub fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

impl Props {
    /// Takes only the listener-prefixed value of `key`.
    pub fn take_listener(&mut self, listener: &str, key: &str) -> Option<Setting> {
        let prefixed = prefixed_key(listener, key);
        self.take(&prefixed).map(|value| Setting {
            value,
            key: prefixed,
        })
    }

    /// Takes the listener-prefixed value of `key`, else reads the unprefixed one without taking
    /// it: every listener falls back to it, so the caller takes it once all listeners have read
    /// ([`Props::take`]).
    pub fn listener_or_global(&mut self, listener: &str, key: &str) -> Option<Setting> {
        self.take_listener(listener, key).or_else(|| {
            self.peek(key).map(|v| Setting {
                value: v.to_string(),
                key: key.to_string(),
            })
        })
    }

    /// The unprefixed value of `key`, without taking it.
    pub fn global(&self, key: &str) -> Option<Setting> {
        self.peek(key).map(|v| Setting {
            value: v.to_string(),
            key: key.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> Props {
        Props::new(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    #[test]
    fn protocol_map_parses_names_case_insensitively() {
        let m = parse_protocol_map(" client : sasl_ssl , ,INTERNAL:PLAINTEXT").unwrap();
        assert_eq!(m["CLIENT"], SecurityProtocol::SaslSsl);
        assert_eq!(m["INTERNAL"], SecurityProtocol::Plaintext);
        assert_eq!(m.len(), 2);
        let e = parse_protocol_map("CLIENT").unwrap_err().to_string();
        assert!(e.contains("expected NAME:PROTOCOL"), "{e}");
        let e = parse_protocol_map("CLIENT:TLS").unwrap_err().to_string();
        assert!(e.contains("unknown security protocol TLS"), "{e}");
    }

    #[test]
    fn default_map_adds_controller_listeners_as_plaintext() {
        let m = effective_protocol_map(None, &["CONTROLLER".to_string()]).unwrap();
        assert_eq!(m.len(), 5);
        assert_eq!(m["CONTROLLER"], SecurityProtocol::Plaintext);
        assert_eq!(m["SASL_SSL"], SecurityProtocol::SaslSsl);
        let m = effective_protocol_map(Some("A:SSL"), &["CONTROLLER".to_string()]).unwrap();
        assert_eq!(m.keys().collect::<Vec<_>>(), ["A"]);
    }

    #[test]
    fn protocol_names_round_trip() {
        for p in [
            SecurityProtocol::Plaintext,
            SecurityProtocol::Ssl,
            SecurityProtocol::SaslPlaintext,
            SecurityProtocol::SaslSsl,
        ] {
            assert_eq!(SecurityProtocol::from_name(p.name()), Some(p));
            assert_eq!(p.uses_tls(), p.name().ends_with("SSL"));
            assert_eq!(p.uses_sasl(), p.name().starts_with("SASL"));
        }
    }

    #[test]
    fn prefixed_values_are_taken_and_global_ones_left() {
        let mut p = props(&[("listener.name.a.x", "1"), ("x", "2"), ("y", "3")]);
        assert_eq!(p.take_listener("A", "y"), None);
        let a = p.listener_or_global("A", "x").unwrap();
        assert_eq!(
            (a.value.as_str(), a.key.as_str()),
            ("1", "listener.name.a.x")
        );
        assert!(!p.contains("listener.name.a.x"));
        let a = p.listener_or_global("A", "x").unwrap();
        assert_eq!((a.value.as_str(), a.key.as_str()), ("2", "x"));
        assert!(p.contains("x"));
        assert_eq!(p.global("y").unwrap().value, "3");
    }

    #[test]
    fn setting_numbers_and_lists() {
        let s = |v: &str| Setting {
            value: v.into(),
            key: "k".into(),
        };
        let err = |r: Result<i64, ConfigError>| r.unwrap_err().to_string();
        assert!(err(s("-1").num::<i64>(0)).contains("at least 0"));
        assert_eq!(s("-1").num::<i64>(-1).unwrap(), -1);
        assert!(err(s("x").num::<i64>(0)).contains("not a number"));
        let e = s("x").num::<i32>(0).unwrap_err().to_string();
        assert!(e.contains("not a number"), "{e}");
        assert_eq!(s(" a, ,b ").list(), ["a", "b"]);
    }
}
