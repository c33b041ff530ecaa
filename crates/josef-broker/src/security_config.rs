//! The security settings of each client listener: `listener.security.protocol.map`, the `ssl.*`
//! settings of SSL and SASL_SSL listeners and the `sasl.*` settings of SASL_PLAINTEXT and
//! SASL_SSL listeners, each read listener-prefixed first (`listener.name.<name>.<setting>`, SASL
//! JAAS and re-authentication settings also `listener.name.<name>.<mechanism>.<setting>`) and
//! then unprefixed, as Kafka's `ListenerName.configPrefix` does.
//!
//! Values are checked here; files (PEM keystores) are read when the listener starts
//! ([`crate::tls`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::config::{ConfigError, Listener, Props};

/// Kafka's default `listener.security.protocol.map`: each protocol under its own name.
pub const DEFAULT_PROTOCOL_MAP: &str =
    "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL";

/// `security.protocol` of a listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// `ssl.client.auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// No client certificate is asked for.
    None,
    /// A certificate is asked for; a client without one is ANONYMOUS.
    Requested,
    /// The handshake fails without a certificate the truststore trusts.
    Required,
}

/// The TLS settings of one listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SslSettings {
    /// `ssl.keystore.location`: a PEM file with the private key and the certificate chain.
    pub keystore_location: Option<PathBuf>,
    /// `ssl.keystore.certificate.chain`: the chain as inline PEM.
    pub keystore_certificate_chain: Option<String>,
    /// `ssl.keystore.key`: the PKCS#8 private key as inline PEM.
    pub keystore_key: Option<String>,
    /// `ssl.truststore.location`: a PEM file of CA certificates.
    pub truststore_location: Option<PathBuf>,
    /// `ssl.truststore.certificates`: CA certificates as inline PEM.
    pub truststore_certificates: Option<String>,
    /// `ssl.client.auth` (on SASL_SSL only when listener-prefixed, as Kafka).
    pub client_auth: ClientAuth,
    /// `ssl.principal.mapping.rules` (checked to parse).
    pub principal_mapping_rules: String,
    /// `ssl.enabled.protocols` (TLSv1.2, TLSv1.3).
    pub enabled_protocols: Vec<String>,
}

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

/// Reads listener-prefixed values first, then unprefixed ones; unprefixed values are removed
/// from the settings once every listener has read them.
struct Scoped<'a> {
    p: &'a mut Props,
    globals: BTreeMap<&'static str, Option<String>>,
}

/// The unprefixed settings this module applies.
const GLOBAL_KEYS: &[&str] = &[
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.key.password",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "ssl.client.auth",
    "ssl.principal.mapping.rules",
    "ssl.enabled.protocols",
    "sasl.enabled.mechanisms",
    "sasl.jaas.config",
    "connections.max.reauth.ms",
    "connection.failed.authentication.delay.ms",
    "sasl.server.max.receive.size",
];

impl Scoped<'_> {
    /// `listener.name.<l>.<key>`, else `<key>`: (the value, the key it came from).
    fn get(&mut self, listener: &str, key: &'static str) -> Option<(String, String)> {
        let prefixed = format!("listener.name.{}.{key}", listener.to_ascii_lowercase());
        if let Some(v) = self.p.take(&prefixed) {
            return Some((v, prefixed));
        }
        self.global(key).map(|v| (v, key.to_string()))
    }

    /// Only the listener-prefixed value.
    fn prefixed(&mut self, listener: &str, key: &str) -> Option<(String, String)> {
        let prefixed = format!("listener.name.{}.{key}", listener.to_ascii_lowercase());
        self.p.take(&prefixed).map(|v| (v, prefixed))
    }

    fn global(&mut self, key: &'static str) -> Option<String> {
        let p = &mut self.p;
        self.globals
            .entry(key)
            .or_insert_with(|| p.take(key))
            .clone()
    }
}

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn number<T>(v: &(String, String), min: T) -> Result<T, ConfigError>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy,
{
    let n: T =
        v.0.parse()
            .map_err(|_| Props::invalid(&v.1, &v.0, "not a number"))?;
    if n < min {
        return Err(Props::invalid(
            &v.1,
            &v.0,
            format!("must be at least {min}"),
        ));
    }
    Ok(n)
}

/// Reads the security settings of `listeners` (client listeners, controller ones removed) with
/// the protocol `map`. Every setting read is removed from `p`.
pub(crate) fn parse(
    p: &mut Props,
    listeners: &[Listener],
    map: &BTreeMap<String, SecurityProtocol>,
) -> Result<SecurityConfig, ConfigError> {
    let mut s = Scoped {
        p,
        globals: BTreeMap::new(),
    };
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
            Some(parse_ssl(&mut s, &l.name, protocol)?)
        } else {
            None
        };
        let sasl = if protocol.uses_sasl() {
            Some(parse_sasl(&mut s, &l.name)?)
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
    // Unprefixed settings no listener read are still Kafka's and still checked for shape where
    // it matters; consume them so they are not reported as unknown.
    for key in GLOBAL_KEYS {
        s.global(key);
    }
    if let Some(v) = s
        .globals
        .get("ssl.principal.mapping.rules")
        .cloned()
        .flatten()
    {
        josef_sasl::ssl_principal::SslPrincipalMapper::parse(&v)
            .map_err(|e| Props::invalid("ssl.principal.mapping.rules", &v, e.to_string()))?;
    }
    Ok(out)
}

fn pem_type(s: &mut Scoped<'_>, listener: &str, key: &'static str) -> Result<(), ConfigError> {
    let v = s
        .get(listener, key)
        .unwrap_or_else(|| ("JKS".to_string(), key.to_string()));
    if !v.0.eq_ignore_ascii_case("PEM") {
        return Err(Props::invalid(
            &v.1,
            &v.0,
            "only PEM stores are supported (Kafka's default is JKS: set it to PEM)",
        ));
    }
    Ok(())
}

fn parse_ssl(
    s: &mut Scoped<'_>,
    listener: &str,
    protocol: SecurityProtocol,
) -> Result<SslSettings, ConfigError> {
    let keystore_location = s.get(listener, "ssl.keystore.location");
    let chain = s.get(listener, "ssl.keystore.certificate.chain");
    let key = s.get(listener, "ssl.keystore.key");
    match (&keystore_location, &chain, &key) {
        (Some(_), None, None) | (None, Some(_), Some(_)) => {}
        (None, None, None) => {
            return Err(Props::invalid(
                "ssl.keystore.location",
                "",
                format!(
                    "listener {listener} uses {} but has no keystore (ssl.keystore.location, or ssl.keystore.certificate.chain and ssl.keystore.key)",
                    protocol.name()
                ),
            ))
        }
        (Some(loc), _, _) => {
            return Err(Props::invalid(
                &loc.1,
                &loc.0,
                "give either ssl.keystore.location or the inline certificate chain and key, not both",
            ))
        }
        _ => {
            return Err(Props::invalid(
                "ssl.keystore.key",
                "",
                "an inline keystore needs both ssl.keystore.certificate.chain and ssl.keystore.key",
            ))
        }
    }
    pem_type(s, listener, "ssl.keystore.type")?;
    for k in ["ssl.keystore.password", "ssl.key.password"] {
        if let Some(v) = s.get(listener, k) {
            return Err(Props::invalid(
                &v.1,
                "(hidden)",
                "encrypted PEM keys and store passwords are not supported: give an unencrypted PKCS#8 key",
            ));
        }
    }
    let truststore_location = s.get(listener, "ssl.truststore.location");
    let truststore_certificates = s.get(listener, "ssl.truststore.certificates");
    if truststore_location.is_some() || truststore_certificates.is_some() {
        pem_type(s, listener, "ssl.truststore.type")?;
    }
    if let (Some(a), Some(_)) = (&truststore_location, &truststore_certificates) {
        return Err(Props::invalid(
            &a.1,
            &a.0,
            "give either ssl.truststore.location or ssl.truststore.certificates, not both",
        ));
    }
    if let Some(v) = s.get(listener, "ssl.truststore.password") {
        return Err(Props::invalid(
            &v.1,
            "(hidden)",
            "a PEM truststore has no password",
        ));
    }
    // On SASL_SSL, Kafka applies only a listener-prefixed `ssl.client.auth`.
    let client_auth_value = if protocol == SecurityProtocol::SaslSsl {
        s.prefixed(listener, "ssl.client.auth")
    } else {
        s.get(listener, "ssl.client.auth")
    };
    let client_auth = match client_auth_value {
        None => ClientAuth::None,
        Some((v, k)) => match v.to_ascii_lowercase().as_str() {
            "none" => ClientAuth::None,
            "requested" => ClientAuth::Requested,
            "required" => ClientAuth::Required,
            _ => {
                return Err(Props::invalid(
                    &k,
                    &v,
                    "expected none, requested or required",
                ))
            }
        },
    };
    if client_auth != ClientAuth::None
        && truststore_location.is_none()
        && truststore_certificates.is_none()
    {
        return Err(Props::invalid(
            "ssl.client.auth",
            "",
            format!("listener {listener} asks for client certificates but has no truststore"),
        ));
    }
    let principal_mapping_rules = match s.get(listener, "ssl.principal.mapping.rules") {
        None => josef_sasl::ssl_principal::DEFAULT_SSL_PRINCIPAL_MAPPING_RULES.to_string(),
        Some((v, k)) => {
            josef_sasl::ssl_principal::SslPrincipalMapper::parse(&v)
                .map_err(|e| Props::invalid(&k, &v, e.to_string()))?;
            v
        }
    };
    let enabled_protocols = match s.get(listener, "ssl.enabled.protocols") {
        None => vec!["TLSv1.2".to_string(), "TLSv1.3".to_string()],
        Some((v, k)) => {
            let l = list(&v);
            if l.is_empty() || l.iter().any(|p| p != "TLSv1.2" && p != "TLSv1.3") {
                return Err(Props::invalid(
                    &k,
                    &v,
                    "only TLSv1.2 and TLSv1.3 are supported",
                ));
            }
            l
        }
    };
    Ok(SslSettings {
        keystore_location: keystore_location.map(|v| PathBuf::from(v.0)),
        keystore_certificate_chain: chain.map(|v| v.0),
        keystore_key: key.map(|v| v.0),
        truststore_location: truststore_location.map(|v| PathBuf::from(v.0)),
        truststore_certificates: truststore_certificates.map(|v| v.0),
        client_auth,
        principal_mapping_rules,
        enabled_protocols,
    })
}

fn parse_sasl(s: &mut Scoped<'_>, listener: &str) -> Result<SaslSettings, ConfigError> {
    let enabled_mechanisms = s
        .get(listener, "sasl.enabled.mechanisms")
        .map(|v| list(&v.0))
        .unwrap_or_else(|| vec!["GSSAPI".to_string()]);
    let mut jaas_config = BTreeMap::new();
    let mut reauth_by_mechanism = BTreeMap::new();
    let listener_jaas = s.prefixed(listener, "sasl.jaas.config");
    let global_jaas = s.global("sasl.jaas.config");
    for m in &enabled_mechanisms {
        let lower = m.to_ascii_lowercase();
        let scoped = s.prefixed(listener, &format!("{lower}.sasl.jaas.config"));
        if let Some(v) = scoped
            .map(|v| v.0)
            .or_else(|| listener_jaas.as_ref().map(|v| v.0.clone()))
            .or_else(|| global_jaas.clone())
        {
            jaas_config.insert(lower.clone(), v);
        }
        if let Some(v) = s.prefixed(listener, &format!("{lower}.connections.max.reauth.ms")) {
            reauth_by_mechanism.insert(m.clone(), number::<i64>(&v, 0)?);
        }
    }
    let connections_max_reauth_ms = match s.get(listener, "connections.max.reauth.ms") {
        None => 0,
        Some(v) => number::<i64>(&v, 0)?,
    };
    let failed_authentication_delay_ms = match s.global("connection.failed.authentication.delay.ms")
    {
        None => josef_sasl::DEFAULT_FAILED_AUTHENTICATION_DELAY_MS,
        Some(v) => number::<i64>(&(v, "connection.failed.authentication.delay.ms".into()), 0)?,
    };
    let max_receive_size = match s.global("sasl.server.max.receive.size") {
        None => josef_sasl::DEFAULT_SASL_SERVER_MAX_RECEIVE_SIZE as i32,
        Some(v) => number::<i32>(&(v, "sasl.server.max.receive.size".into()), 1)?,
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
