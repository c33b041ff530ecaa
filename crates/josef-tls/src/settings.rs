//! A listener's `ssl.*` settings as Kafka names them, read from a broker's [`Props`]:
//! listener-prefixed first (`listener.name.<l>.<setting>`), then unprefixed. Values are checked
//! here; the PEM files are read when the listener starts ([`crate::TlsListener::new`]).

use std::path::PathBuf;

use josef_config::listener::{SecurityProtocol, Setting};
use josef_config::settings::{ConfigError, Props};
use josef_sasl::ssl_principal::{SslPrincipalMapper, DEFAULT_SSL_PRINCIPAL_MAPPING_RULES};

/// The unprefixed SSL settings every TLS listener falls back to.
pub const UNPREFIXED_KEYS: &[&str] = &[
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
    "ssl.cipher.suites",
    "ssl.endpoint.identification.algorithm",
];

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
    /// `ssl.cipher.suites`: the suites this listener offers, as Kafka (JSSE) names them
    /// (`TLS_AES_128_GCM_SHA256`, `TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256`, ...), in the
    /// operator's order of preference. Empty (Kafka's default) keeps rustls's suites and order.
    /// A server with a list picks by its own order, not the client's, so an operator can prefer
    /// the cheaper AES-128 over the AES-256 a client lists first.
    pub cipher_suites: Vec<String>,
    /// `ssl.endpoint.identification.algorithm`: `https` (the default) makes a connecting client
    /// check that the server certificate names the host it dialled; empty turns that off. Used
    /// only when this listener's settings make a client ([`crate::TlsConnector`]).
    pub endpoint_identification: bool,
}

fn pem_type(p: &mut Props, listener: &str, key: &'static str) -> Result<(), ConfigError> {
    let v = p
        .listener_or_global(listener, key)
        .unwrap_or_else(|| Setting {
            value: "JKS".to_string(),
            key: key.to_string(),
        });
    if !v.value.eq_ignore_ascii_case("PEM") {
        return Err(
            v.invalid("only PEM stores are supported (Kafka's default is JKS: set it to PEM)")
        );
    }
    Ok(())
}

fn hidden(v: &Setting, reason: &str) -> ConfigError {
    Props::invalid(&v.key, "(hidden)", reason)
}

impl SslSettings {
    /// Reads the SSL settings of `listener` (of `protocol`, SSL or SASL_SSL), taking its
    /// listener-prefixed ones from `p`; the unprefixed ones stay for the other listeners
    /// ([`SslSettings::take_unprefixed`]).
    pub fn from_props(
        p: &mut Props,
        listener: &str,
        protocol: SecurityProtocol,
    ) -> Result<SslSettings, ConfigError> {
        let keystore_location = p.listener_or_global(listener, "ssl.keystore.location");
        let chain = p.listener_or_global(listener, "ssl.keystore.certificate.chain");
        let key = p.listener_or_global(listener, "ssl.keystore.key");
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
                return Err(loc.invalid(
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
        pem_type(p, listener, "ssl.keystore.type")?;
        for k in ["ssl.keystore.password", "ssl.key.password"] {
            if let Some(v) = p.listener_or_global(listener, k) {
                return Err(hidden(
                    &v,
                    "encrypted PEM keys and store passwords are not supported: give an unencrypted PKCS#8 key",
                ));
            }
        }
        let truststore_location = p.listener_or_global(listener, "ssl.truststore.location");
        let truststore_certificates = p.listener_or_global(listener, "ssl.truststore.certificates");
        if truststore_location.is_some() || truststore_certificates.is_some() {
            pem_type(p, listener, "ssl.truststore.type")?;
        }
        if let (Some(a), Some(_)) = (&truststore_location, &truststore_certificates) {
            return Err(a.invalid(
                "give either ssl.truststore.location or ssl.truststore.certificates, not both",
            ));
        }
        if let Some(v) = p.listener_or_global(listener, "ssl.truststore.password") {
            return Err(hidden(&v, "a PEM truststore has no password"));
        }
        // On SASL_SSL, Kafka applies only a listener-prefixed `ssl.client.auth`.
        let client_auth_value = if protocol == SecurityProtocol::SaslSsl {
            p.take_listener(listener, "ssl.client.auth")
        } else {
            p.listener_or_global(listener, "ssl.client.auth")
        };
        let client_auth = match client_auth_value {
            None => ClientAuth::None,
            Some(v) => match v.value.to_ascii_lowercase().as_str() {
                "none" => ClientAuth::None,
                "requested" => ClientAuth::Requested,
                "required" => ClientAuth::Required,
                _ => return Err(v.invalid("expected none, requested or required")),
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
        let principal_mapping_rules =
            match p.listener_or_global(listener, "ssl.principal.mapping.rules") {
                None => DEFAULT_SSL_PRINCIPAL_MAPPING_RULES.to_string(),
                Some(v) => {
                    SslPrincipalMapper::parse(&v.value).map_err(|e| v.invalid(e.to_string()))?;
                    v.value
                }
            };
        let enabled_protocols = match p.listener_or_global(listener, "ssl.enabled.protocols") {
            None => vec!["TLSv1.2".to_string(), "TLSv1.3".to_string()],
            Some(v) => {
                let l = v.list();
                if l.is_empty() || l.iter().any(|p| p != "TLSv1.2" && p != "TLSv1.3") {
                    return Err(v.invalid("only TLSv1.2 and TLSv1.3 are supported"));
                }
                l
            }
        };
        let cipher_suites = match p.listener_or_global(listener, "ssl.cipher.suites") {
            None => Vec::new(),
            Some(v) => {
                let l = v.list();
                if let Some(bad) = l.iter().find(|n| crate::suites::by_kafka_name(n).is_none()) {
                    return Err(v.invalid(format!(
                        "unknown cipher suite {bad} (supported: {})",
                        crate::suites::kafka_names().join(", ")
                    )));
                }
                l
            }
        };
        let endpoint_identification =
            match p.listener_or_global(listener, "ssl.endpoint.identification.algorithm") {
                None => true,
                Some(v) if v.value.trim().is_empty() => false,
                Some(v) if v.value.trim().eq_ignore_ascii_case("https") => true,
                Some(v) => return Err(v.invalid("expected https or an empty value")),
            };
        Ok(SslSettings {
            endpoint_identification,
            keystore_location: keystore_location.map(|v| PathBuf::from(v.value)),
            keystore_certificate_chain: chain.map(|v| v.value),
            keystore_key: key.map(|v| v.value),
            truststore_location: truststore_location.map(|v| PathBuf::from(v.value)),
            truststore_certificates: truststore_certificates.map(|v| v.value),
            client_auth,
            principal_mapping_rules,
            enabled_protocols,
            cipher_suites,
        })
    }

    /// Takes the unprefixed SSL settings once every listener has read them (they are Kafka's
    /// even when no listener uses TLS). `ssl.principal.mapping.rules` must still parse.
    pub fn take_unprefixed(p: &mut Props) -> Result<(), ConfigError> {
        let rules = p.take("ssl.principal.mapping.rules");
        for key in UNPREFIXED_KEYS {
            p.take(key);
        }
        if let Some(v) = rules {
            SslPrincipalMapper::parse(&v)
                .map_err(|e| Props::invalid("ssl.principal.mapping.rules", &v, e.to_string()))?;
        }
        Ok(())
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

    fn read(pairs: &[(&str, &str)], protocol: SecurityProtocol) -> Result<SslSettings, String> {
        SslSettings::from_props(&mut props(pairs), "CLIENT", protocol).map_err(|e| e.to_string())
    }

    const INLINE: [(&str, &str); 3] = [
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.certificate.chain", "chain"),
        ("ssl.keystore.key", "key"),
    ];

    #[test]
    fn keystore_is_a_file_or_inline_pem_never_both() {
        let e = read(&[], SecurityProtocol::Ssl).unwrap_err();
        assert!(
            e.contains("listener CLIENT uses SSL but has no keystore"),
            "{e}"
        );
        let e = read(
            &[("ssl.keystore.location", "/k.jks")],
            SecurityProtocol::Ssl,
        )
        .unwrap_err();
        assert!(e.contains("only PEM"), "{e}");
        let e = read(
            &[("ssl.keystore.location", "/k"), ("ssl.keystore.key", "k")],
            SecurityProtocol::Ssl,
        )
        .unwrap_err();
        assert!(e.contains("not both"), "{e}");
        let e = read(&[("ssl.keystore.key", "k")], SecurityProtocol::Ssl).unwrap_err();
        assert!(e.contains("needs both"), "{e}");
        let s = read(&INLINE, SecurityProtocol::Ssl).unwrap();
        assert_eq!(s.keystore_certificate_chain.as_deref(), Some("chain"));
        assert_eq!(s.client_auth, ClientAuth::None);
        assert_eq!(s.principal_mapping_rules, "DEFAULT");
        assert_eq!(s.enabled_protocols, ["TLSv1.2", "TLSv1.3"]);
        assert!(s.cipher_suites.is_empty());
        assert!(s.endpoint_identification);
    }

    #[test]
    fn endpoint_identification_is_https_or_off() {
        for (v, want) in [
            ("https", Some(true)),
            ("HTTPS", Some(true)),
            ("", Some(false)),
            ("ldap", None),
        ] {
            let mut pairs = INLINE.to_vec();
            pairs.push((
                "listener.name.client.ssl.endpoint.identification.algorithm",
                v,
            ));
            let got = read(&pairs, SecurityProtocol::Ssl).map(|s| s.endpoint_identification);
            match want {
                Some(w) => assert_eq!(got, Ok(w), "{v:?}"),
                None => assert!(got.unwrap_err().contains("expected https"), "{v:?}"),
            }
        }
    }

    #[test]
    fn cipher_suites_are_kafka_names_and_unknown_ones_are_refused() {
        let mut pairs = INLINE.to_vec();
        pairs.push((
            "listener.name.client.ssl.cipher.suites",
            "TLS_AES_128_GCM_SHA256, TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        ));
        let s = read(&pairs, SecurityProtocol::Ssl).unwrap();
        assert_eq!(
            s.cipher_suites,
            [
                "TLS_AES_128_GCM_SHA256",
                "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"
            ]
        );
        for bad in ["TLS_RSA_WITH_RC4_128_MD5", "TLS13_AES_128_GCM_SHA256"] {
            let mut pairs = INLINE.to_vec();
            pairs.push(("ssl.cipher.suites", bad));
            let e = read(&pairs, SecurityProtocol::Ssl).unwrap_err();
            assert!(
                e.contains("ssl.cipher.suites")
                    && e.contains(&format!("unknown cipher suite {bad}")),
                "{e}"
            );
        }
    }

    #[test]
    fn passwords_are_refused_without_echoing_them() {
        for k in [
            "ssl.keystore.password",
            "ssl.key.password",
            "ssl.truststore.password",
        ] {
            let mut pairs = INLINE.to_vec();
            pairs.push((k, "s3cret"));
            let e = read(&pairs, SecurityProtocol::Ssl).unwrap_err();
            assert!(e.contains(k) && !e.contains("s3cret"), "{e}");
        }
    }

    #[test]
    fn client_auth_needs_a_truststore_and_is_listener_prefixed_on_sasl_ssl() {
        let mut pairs = INLINE.to_vec();
        pairs.push(("ssl.client.auth", "required"));
        let e = read(&pairs, SecurityProtocol::Ssl).unwrap_err();
        assert!(e.contains("has no truststore"), "{e}");
        pairs.push(("ssl.truststore.certificates", "ca"));
        pairs.push(("ssl.truststore.type", "PEM"));
        assert_eq!(
            read(&pairs, SecurityProtocol::Ssl).unwrap().client_auth,
            ClientAuth::Required
        );
        // Unprefixed: ignored on SASL_SSL.
        assert_eq!(
            read(&pairs, SecurityProtocol::SaslSsl).unwrap().client_auth,
            ClientAuth::None
        );
        pairs.push(("listener.name.client.ssl.client.auth", "REQUESTED"));
        assert_eq!(
            read(&pairs, SecurityProtocol::SaslSsl).unwrap().client_auth,
            ClientAuth::Requested
        );
        pairs.push(("listener.name.client.ssl.truststore.location", "/ca.pem"));
        let e = read(&pairs, SecurityProtocol::Ssl).unwrap_err();
        assert!(
            e.contains("listener.name.client.ssl.truststore.location"),
            "{e}"
        );
        let mut pairs = INLINE.to_vec();
        pairs.push(("ssl.client.auth", "maybe"));
        let e = read(&pairs, SecurityProtocol::Ssl).unwrap_err();
        assert!(e.contains("expected none, requested or required"), "{e}");
    }

    #[test]
    fn protocols_and_mapping_rules_are_checked() {
        let mut pairs = INLINE.to_vec();
        pairs.push(("ssl.enabled.protocols", "TLSv1.3"));
        pairs.push(("ssl.principal.mapping.rules", "RULE:^CN=(.*)$/$1/L,DEFAULT"));
        let s = read(&pairs, SecurityProtocol::Ssl).unwrap();
        assert_eq!(s.enabled_protocols, ["TLSv1.3"]);
        assert_eq!(s.principal_mapping_rules, "RULE:^CN=(.*)$/$1/L,DEFAULT");
        for (k, v, want) in [
            (
                "ssl.enabled.protocols",
                "TLSv1.1",
                "only TLSv1.2 and TLSv1.3",
            ),
            ("ssl.enabled.protocols", " , ", "only TLSv1.2 and TLSv1.3"),
            (
                "ssl.principal.mapping.rules",
                "RULE:(",
                "ssl.principal.mapping.rules",
            ),
        ] {
            let mut pairs = INLINE.to_vec();
            pairs.push((k, v));
            let e = read(&pairs, SecurityProtocol::Ssl).unwrap_err();
            assert!(e.contains(want), "{k}={v}: {e}");
        }
    }

    #[test]
    fn unprefixed_settings_are_taken_and_their_rules_checked() {
        let mut p = props(&INLINE);
        SslSettings::from_props(&mut p, "A", SecurityProtocol::Ssl).unwrap();
        SslSettings::from_props(&mut p, "B", SecurityProtocol::Ssl).unwrap();
        SslSettings::take_unprefixed(&mut p).unwrap();
        assert_eq!(p.into_remaining_keys().count(), 0);
        let mut p = props(&[("ssl.principal.mapping.rules", "nonsense")]);
        assert!(SslSettings::take_unprefixed(&mut p).is_err());
    }
}
