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
    /// How this broker connects to the other brokers' inter-broker listener (cluster brokers).
    pub inter_broker_client: Option<PeerClientSettings>,
    /// The TLS settings of each controller listener mapped to SSL or SASL_SSL (its own
    /// `listener.name.<l>.ssl.*`, else the unprefixed ones): the server side on controllers,
    /// and for the first of `controller.listener.names` the client side every node uses to
    /// reach the controllers (Raft, observers, broker-to-controller requests).
    pub controller_tls: BTreeMap<String, SslSettings>,
    /// The SASL settings of each controller listener mapped to SASL_PLAINTEXT or SASL_SSL: the
    /// server side on controllers.
    pub controller_sasl: BTreeMap<String, SaslSettings>,
    /// The login every node uses to reach the controllers when the first of
    /// `controller.listener.names` is SASL: `sasl.mechanism.controller.protocol` with that
    /// listener's JAAS `username` / `password`.
    pub controller_login: Option<josef_sasl::settings::ClientCredentials>,
}

impl SecurityConfig {
    /// How this node connects to the controllers: the first of `controller.listener.names`,
    /// with its protocol, TLS settings and SASL login.
    pub fn controller_client(&self, controller_listener_names: &[String]) -> PeerClientSettings {
        let name = controller_listener_names
            .first()
            .cloned()
            .unwrap_or_default();
        let ssl = self.controller_tls.get(&name).cloned();
        let sasl = self
            .controller_login
            .clone()
            .filter(|_| self.controller_sasl.contains_key(&name));
        let protocol = match (ssl.is_some(), sasl.is_some()) {
            (false, false) => SecurityProtocol::Plaintext,
            (true, false) => SecurityProtocol::Ssl,
            (false, true) => SecurityProtocol::SaslPlaintext,
            (true, true) => SecurityProtocol::SaslSsl,
        };
        PeerClientSettings {
            protocol,
            listener: name,
            ssl,
            sasl,
        }
    }
}

/// The setting naming the mechanism nodes log in to the controllers with.
const CONTROLLER_MECHANISM_KEY: &str = "sasl.mechanism.controller.protocol";

/// The login to the SASL controller listener `listener` (`settings` are its own) with
/// `mechanism` (`sasl.mechanism.controller.protocol`; Kafka's default GSSAPI when unset).
fn controller_login(
    settings: &SaslSettings,
    listener: &str,
    protocol: SecurityProtocol,
    mechanism: Option<String>,
) -> Result<josef_sasl::settings::ClientCredentials, ConfigError> {
    let m = mechanism.unwrap_or_else(|| "GSSAPI".to_string());
    let m = m.trim();
    if m.to_ascii_uppercase().starts_with("SCRAM-") {
        // Kafka's bootstrap problem: SCRAM credentials are records of the metadata log, which a
        // node can only read once it has authenticated to the controllers. Kafka seeds them with
        // `kafka-storage format --add-scram`; Josef has no such step, so they never exist first.
        return Err(Props::invalid(
            CONTROLLER_MECHANISM_KEY,
            m,
            format!(
                "controller listener {listener} uses {}: SCRAM credentials are kept in the metadata log, which nodes read through the controllers, so none exist when the quorum forms (Josef cannot add them before it, as kafka-storage format --add-scram does); use PLAIN on the controller listener, as Kafka's documentation recommends",
                protocol.name()
            ),
        ));
    }
    settings.client_credentials(m).map_err(|e| {
        Props::invalid(
            CONTROLLER_MECHANISM_KEY,
            m,
            format!(
                "controller listener {listener} uses {}: {e}",
                protocol.name()
            ),
        )
    })
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

/// How this node connects, as a client, to one listener of its peers (the inter-broker listener):
/// that listener's protocol and TLS settings, and the SASL identity it logs in with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerClientSettings {
    /// The listener name (upper case).
    pub listener: String,
    /// Its protocol.
    pub protocol: SecurityProtocol,
    /// Its TLS settings (SSL, SASL_SSL): the truststore checks the peer, the keystore is this
    /// node's client certificate.
    pub ssl: Option<SslSettings>,
    /// The SASL login (SASL_PLAINTEXT, SASL_SSL).
    pub sasl: Option<josef_sasl::settings::ClientCredentials>,
}

/// The client settings for connections to `listener` of the other brokers, from the listener's
/// own settings in `security` and `sasl.mechanism.inter.broker.protocol` (taken from `p`), as
/// Kafka's inter-broker clients are configured.
pub(crate) fn inter_broker_client(
    p: &mut Props,
    security: &SecurityConfig,
    listener: &str,
) -> Result<PeerClientSettings, ConfigError> {
    const MECHANISM_KEY: &str = "sasl.mechanism.inter.broker.protocol";
    let mechanism = p.take(MECHANISM_KEY);
    let l = security.of(listener);
    let sasl = match &l.sasl {
        None => None,
        Some(settings) => {
            // Kafka's default, GSSAPI, is not implemented here: the setting is required.
            let m = mechanism.clone().unwrap_or_else(|| "GSSAPI".to_string());
            let m = m.trim();
            let credentials = settings.client_credentials(m).map_err(|e| {
                Props::invalid(
                    MECHANISM_KEY,
                    m,
                    format!(
                        "inter-broker listener {listener} uses {}: {e}",
                        l.protocol.name()
                    ),
                )
            })?;
            Some(credentials)
        }
    };
    if let Some(ssl) = &l.ssl {
        if ssl.truststore_location.is_none() && ssl.truststore_certificates.is_none() {
            return Err(Props::invalid(
                "ssl.truststore.location",
                "",
                format!(
                    "inter-broker listener {listener} uses {}: brokers verify each other with its truststore (ssl.truststore.location or ssl.truststore.certificates)",
                    l.protocol.name()
                ),
            ));
        }
    }
    Ok(PeerClientSettings {
        listener: listener.to_string(),
        protocol: l.protocol,
        ssl: l.ssl,
        sasl,
    })
}

/// Reads the security settings of `listeners` (client listeners, controller ones removed) with
/// the protocol `map`. Every setting read is removed from `p`.
pub(crate) fn parse(
    p: &mut Props,
    listeners: &[Listener],
    map: &BTreeMap<String, SecurityProtocol>,
    controller_listener_names: &[String],
) -> Result<SecurityConfig, ConfigError> {
    let mut out = SecurityConfig::default();
    let controller_mechanism = p.take(CONTROLLER_MECHANISM_KEY);
    for name in controller_listener_names {
        let protocol = map
            .get(name)
            .copied()
            .unwrap_or(SecurityProtocol::Plaintext);
        if protocol.uses_tls() {
            let s = SslSettings::from_props(p, name, protocol)?;
            if s.truststore_location.is_none() && s.truststore_certificates.is_none() {
                return Err(Props::invalid(
                    "ssl.truststore.location",
                    "",
                    format!("controller listener {name} uses {}: nodes verify the controllers with its truststore (ssl.truststore.location or ssl.truststore.certificates)", protocol.name()),
                ));
            }
            out.controller_tls.insert(name.clone(), s);
        }
        if protocol.uses_sasl() {
            let s = SaslSettings::from_props(p, name)?;
            // Every node logs in to the first controller listener, as Kafka's nodes do.
            if controller_listener_names.first() == Some(name) {
                out.controller_login = Some(controller_login(
                    &s,
                    name,
                    protocol,
                    controller_mechanism.clone(),
                )?);
            }
            out.controller_sasl.insert(name.clone(), s);
        }
    }
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

#[cfg(test)]
mod tests {
    use crate::config::BrokerConfig;

    fn cluster(extra: &[(&str, &str)]) -> Result<BrokerConfig, String> {
        cluster_with_warnings(extra).map(|(c, _)| c)
    }

    fn cluster_with_warnings(
        extra: &[(&str, &str)],
    ) -> Result<(BrokerConfig, Vec<crate::config::ConfigWarning>), String> {
        let mut m: std::collections::BTreeMap<String, String> = [
            ("process.roles", "broker,controller"),
            ("node.id", "1"),
            ("controller.quorum.voters", "1@127.0.0.1:9093"),
            (
                "listeners",
                "PLAINTEXT://127.0.0.1:9092,INTERNAL://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093",
            ),
            ("controller.listener.names", "CONTROLLER"),
            ("inter.broker.listener.name", "INTERNAL"),
            ("log.dirs", "/tmp/josef-unused"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        for (k, v) in extra {
            m.insert(k.to_string(), v.to_string());
        }
        BrokerConfig::from_properties_with_warnings(m).map_err(|e| e.to_string())
    }

    const PLAIN_JAAS: &str = r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="pw" user_broker="pw";"#;

    #[test]
    fn sasl_between_brokers_needs_a_mechanism_and_the_broker_s_own_login() {
        let map = (
            "listener.security.protocol.map",
            "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
        );
        let e = cluster(&[map, ("sasl.enabled.mechanisms", "PLAIN")]).unwrap_err();
        assert!(
            e.contains("sasl.mechanism.inter.broker.protocol") && e.contains("GSSAPI"),
            "{e}"
        );
        let e = cluster(&[
            map,
            ("sasl.enabled.mechanisms", "PLAIN"),
            ("sasl.mechanism.inter.broker.protocol", "PLAIN"),
            (
                "listener.name.internal.plain.sasl.jaas.config",
                r#"org.apache.kafka.common.security.plain.PlainLoginModule required user_broker="pw";"#,
            ),
        ])
        .unwrap_err();
        assert!(e.contains("no username option"), "{e}");
        let c = cluster(&[
            map,
            ("sasl.enabled.mechanisms", "PLAIN"),
            ("sasl.mechanism.inter.broker.protocol", "PLAIN"),
            ("listener.name.internal.plain.sasl.jaas.config", PLAIN_JAAS),
        ])
        .unwrap();
        let client = c.security.inter_broker_client.unwrap();
        assert_eq!(client.listener, "INTERNAL");
        let sasl = client.sasl.unwrap();
        assert_eq!(
            (sasl.username.as_str(), sasl.password.as_str()),
            ("broker", "pw")
        );
        assert!(client.ssl.is_none());
    }

    #[test]
    fn tls_between_brokers_takes_the_listener_s_stores_and_needs_a_truststore() {
        let base = [
            (
                "listener.security.protocol.map",
                "PLAINTEXT:PLAINTEXT,INTERNAL:SSL,CONTROLLER:PLAINTEXT",
            ),
            ("ssl.keystore.type", "PEM"),
            ("listener.name.internal.ssl.keystore.location", "/ks.pem"),
        ];
        let e = cluster(&base).unwrap_err();
        assert!(e.contains("brokers verify each other"), "{e}");
        let mut with_trust = base.to_vec();
        with_trust.push(("ssl.truststore.type", "PEM"));
        with_trust.push(("ssl.truststore.location", "/ca.pem"));
        with_trust.push(("listener.name.internal.ssl.client.auth", "required"));
        let c = cluster(&with_trust).unwrap();
        let client = c.security.inter_broker_client.unwrap();
        let ssl = client.ssl.unwrap();
        assert_eq!(
            ssl.truststore_location.unwrap(),
            std::path::PathBuf::from("/ca.pem")
        );
        assert_eq!(
            ssl.keystore_location.unwrap(),
            std::path::PathBuf::from("/ks.pem")
        );
        assert!(client.sasl.is_none());
        // PLAINTEXT between brokers: nothing to set up.
        let c = cluster(&[
            ("inter.broker.listener.name", "PLAINTEXT"),
            (
                "listener.security.protocol.map",
                "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
            ),
        ])
        .unwrap();
        let client = c.security.inter_broker_client.unwrap();
        assert!(client.ssl.is_none() && client.sasl.is_none());
    }

    #[test]
    fn a_controller_listener_may_be_ssl_with_a_truststore() {
        let map = (
            "listener.security.protocol.map",
            "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:SSL",
        );
        let ks = [
            ("listener.name.controller.ssl.keystore.type", "PEM"),
            ("listener.name.controller.ssl.keystore.location", "/c.pem"),
        ];
        let mut pairs = ks.to_vec();
        pairs.push(map);
        let e = cluster(&pairs).unwrap_err();
        assert!(e.contains("nodes verify the controllers"), "{e}");
        pairs.push(("ssl.truststore.type", "PEM"));
        pairs.push(("ssl.truststore.location", "/ca.pem"));
        let c = cluster(&pairs).unwrap();
        let client = c
            .security
            .controller_client(&c.cluster.as_ref().unwrap().controller_listener_names);
        assert_eq!(client.protocol, super::SecurityProtocol::Ssl);
        assert_eq!(
            client.ssl.unwrap().keystore_location.unwrap(),
            std::path::PathBuf::from("/c.pem")
        );
        assert!(client.sasl.is_none());
        // Not a client listener: the controller listener stays out of `listeners`.
        assert!(!c.security.listeners.contains_key("CONTROLLER"));
    }

    const CONTROLLER_JAAS: &str = r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="controller" password="ctl" user_controller="ctl";"#;

    fn sasl_controller(
        protocol: &str,
        extra: &[(&'static str, &'static str)],
    ) -> Result<BrokerConfig, String> {
        let map = match protocol {
            "SASL_SSL" => "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:SASL_SSL",
            _ => "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        };
        let mut pairs = vec![("listener.security.protocol.map", map)];
        pairs.extend_from_slice(extra);
        cluster(&pairs)
    }

    #[test]
    fn a_sasl_controller_listener_logs_in_with_the_controller_mechanism() {
        let plain = [
            ("listener.name.controller.sasl.enabled.mechanisms", "PLAIN"),
            ("sasl.mechanism.controller.protocol", "PLAIN"),
            (
                "listener.name.controller.plain.sasl.jaas.config",
                CONTROLLER_JAAS,
            ),
        ];
        let c = sasl_controller("SASL_PLAINTEXT", &plain).unwrap();
        let client = c
            .security
            .controller_client(&c.cluster.as_ref().unwrap().controller_listener_names);
        assert_eq!(client.protocol, super::SecurityProtocol::SaslPlaintext);
        assert!(client.ssl.is_none());
        let login = client.sasl.unwrap();
        assert_eq!(
            (login.username.as_str(), login.password.as_str()),
            ("controller", "ctl")
        );
        assert_eq!(login.mechanism, josef_sasl::SaslMechanism::Plain);
        // The server side: the listener's own SASL settings.
        assert_eq!(
            c.security.controller_sasl["CONTROLLER"].enabled_mechanisms,
            ["PLAIN"]
        );
        // The client listeners' mechanisms are not the controller listener's.
        assert!(!c.security.listeners.contains_key("CONTROLLER"));

        // SASL_SSL: TLS first (with its truststore), then the same login.
        let mut tls = plain.to_vec();
        tls.push(("listener.name.controller.ssl.keystore.type", "PEM"));
        tls.push(("listener.name.controller.ssl.keystore.location", "/c.pem"));
        let e = sasl_controller("SASL_SSL", &tls).unwrap_err();
        assert!(e.contains("nodes verify the controllers"), "{e}");
        tls.push(("listener.name.controller.ssl.truststore.type", "PEM"));
        tls.push((
            "listener.name.controller.ssl.truststore.location",
            "/ca.pem",
        ));
        let c = sasl_controller("SASL_SSL", &tls).unwrap();
        let client = c
            .security
            .controller_client(&c.cluster.as_ref().unwrap().controller_listener_names);
        assert_eq!(client.protocol, super::SecurityProtocol::SaslSsl);
        assert!(client.ssl.is_some() && client.sasl.is_some());
    }

    #[test]
    fn a_sasl_controller_listener_is_refused_at_start_without_a_usable_login() {
        let jaas = (
            "listener.name.controller.plain.sasl.jaas.config",
            CONTROLLER_JAAS,
        );
        let enabled = ("listener.name.controller.sasl.enabled.mechanisms", "PLAIN");
        // Kafka's default mechanism, GSSAPI, is not implemented.
        let e = sasl_controller("SASL_PLAINTEXT", &[enabled, jaas]).unwrap_err();
        assert!(
            e.contains("sasl.mechanism.controller.protocol") && e.contains("GSSAPI"),
            "{e}"
        );
        // A mechanism the controller listener does not enable.
        let e = sasl_controller(
            "SASL_PLAINTEXT",
            &[
                (
                    "listener.name.controller.sasl.enabled.mechanisms",
                    "SCRAM-SHA-512",
                ),
                ("sasl.mechanism.controller.protocol", "PLAIN"),
                jaas,
            ],
        )
        .unwrap_err();
        assert!(e.contains("must be in sasl.enabled.mechanisms"), "{e}");
        // No password of its own.
        let e = sasl_controller(
            "SASL_PLAINTEXT",
            &[
                enabled,
                ("sasl.mechanism.controller.protocol", "PLAIN"),
                (
                    "listener.name.controller.plain.sasl.jaas.config",
                    r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="controller" user_controller="ctl";"#,
                ),
            ],
        )
        .unwrap_err();
        assert!(e.contains("no password option"), "{e}");
        // SCRAM: the credentials would be in the metadata log the login is needed to read.
        let e = sasl_controller(
            "SASL_PLAINTEXT",
            &[
                ("listener.name.controller.sasl.enabled.mechanisms", "SCRAM-SHA-512"),
                ("sasl.mechanism.controller.protocol", "SCRAM-SHA-512"),
                (
                    "listener.name.controller.scram-sha-512.sasl.jaas.config",
                    r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="c" password="p";"#,
                ),
            ],
        )
        .unwrap_err();
        assert!(e.contains("use PLAIN on the controller listener"), "{e}");
    }

    #[test]
    fn the_controller_mechanism_is_read_where_no_controller_listener_uses_sasl() {
        // Kafka's setting, read and unused: not reported as unknown or unused.
        let (c, warnings) = cluster_with_warnings(&[
            (
                "listener.security.protocol.map",
                "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
            ),
            ("sasl.mechanism.controller.protocol", "PLAIN"),
        ])
        .unwrap();
        assert!(c.security.controller_login.is_none());
        assert!(
            !warnings
                .iter()
                .any(|w| w.to_string().contains("sasl.mechanism.controller.protocol")),
            "{warnings:?}"
        );
    }
}
