//! The security settings of each client listener, wired from the libraries that read them:
//! `listener.security.protocol.map` ([`josef_config::listener`]), the `ssl.*` settings of SSL and
//! SASL_SSL listeners ([`josef_tls::SslSettings`]) and the `sasl.*` settings of SASL_PLAINTEXT and
//! SASL_SSL listeners ([`josef_sasl::settings::SaslSettings`]), each listener-prefixed first.

use std::collections::BTreeMap;

pub use josef_config::listener::{
    effective_protocol_map, parse_protocol_map, SecurityProtocol, DEFAULT_PROTOCOL_MAP,
};
pub use josef_sasl::settings::SaslSettings;
pub use josef_tls::{ClientAuth, SslSettings};

use crate::config::{ConfigError, Listener, Props};

/// One listener's protocol and settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerSecurity {
    /// The protocol the map gives the listener.
    pub protocol: SecurityProtocol,
    /// TLS settings (SSL, SASL_SSL).
    pub ssl: Option<SslSettings>,
    /// SASL settings (SASL_PLAINTEXT, SASL_SSL).
    pub sasl: Option<SaslSettings>,
}

impl ListenerSecurity {
    /// A PLAINTEXT listener.
    pub fn plaintext() -> Self {
        ListenerSecurity {
            protocol: SecurityProtocol::Plaintext,
            ssl: None,
            sasl: None,
        }
    }
}

/// The security of every client listener, by (upper-case) listener name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecurityConfig {
    /// Per listener; a listener not in the map is PLAINTEXT.
    pub listeners: BTreeMap<String, ListenerSecurity>,
}

impl SecurityConfig {
    /// The settings of `listener` (PLAINTEXT when unknown).
    pub fn of(&self, listener: &str) -> ListenerSecurity {
        self.listeners
            .get(listener)
            .cloned()
            .unwrap_or_else(ListenerSecurity::plaintext)
    }
}

/// Reads the security settings of `listeners` (client listeners, controller ones removed) with
/// the protocol `map`. Every setting read is removed from `p`.
pub(crate) fn parse(
    p: &mut Props,
    listeners: &[Listener],
    map: &BTreeMap<String, SecurityProtocol>,
) -> Result<SecurityConfig, ConfigError> {
    let mut out = SecurityConfig::default();
    for l in listeners {
        let protocol = match map.get(&l.name) {
            Some(p) => *p,
            None => {
                return Err(Props::invalid(
                    "listener.security.protocol.map",
                    &map.keys().cloned().collect::<Vec<_>>().join(","),
                    format!("no security protocol is defined for listener {}", l.name),
                ))
            }
        };
        let ssl = if protocol.uses_tls() {
            Some(SslSettings::from_props(p, &l.name, protocol)?)
        } else {
            None
        };
        let sasl = if protocol.uses_sasl() {
            Some(SaslSettings::from_props(p, &l.name)?)
        } else {
            None
        };
        out.listeners.insert(
            l.name.clone(),
            ListenerSecurity {
                protocol,
                ssl,
                sasl,
            },
        );
    }
    // Unprefixed settings no listener read are still Kafka's: consume them so they are not
    // reported as unknown (the mapping rules must still parse).
    SslSettings::take_unprefixed(p)?;
    SaslSettings::take_unprefixed(p);
    Ok(out)
}
