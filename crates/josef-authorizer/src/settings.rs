//! `authorizer.class.name`, `super.users` and `allow.everyone.if.no.acl.found` read from a broker
//! configuration.
//!
//! ```
//! use std::collections::BTreeMap;
//! use josef_authorizer::settings::{authorizer_from_props, STANDARD_AUTHORIZER};
//! use josef_config::settings::Props;
//!
//! let mut p = Props::new(BTreeMap::from([
//!     ("authorizer.class.name".to_string(), STANDARD_AUTHORIZER.to_string()),
//!     ("super.users".to_string(), "User:admin".to_string()),
//! ]));
//! let mut warnings = Vec::new();
//! let config = authorizer_from_props(&mut p, &mut warnings).unwrap().unwrap();
//! assert!(config.super_users.contains("User:admin"));
//! assert!(warnings.is_empty());
//! ```

use josef_config::settings::{ConfigError, ConfigWarning, Props};

use crate::{AuthorizerConfig, ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG, SUPER_USERS_CONFIG};

/// The setting naming the authorizer.
pub const AUTHORIZER_CLASS_NAME_CONFIG: &str = "authorizer.class.name";

/// Kafka's KRaft authorizer, the one this crate implements.
pub const STANDARD_AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

/// Kafka's ZooKeeper-mode authorizer (removed in Kafka 4.0).
const ZOOKEEPER_AUTHORIZER: &str = "kafka.security.authorizer.AclAuthorizer";

const NO_AUTHORIZER: &str = "authorizer.class.name is not set, so every operation is allowed";

/// Takes the three settings out of `p`: `None` when `authorizer.class.name` is empty (Kafka's
/// default: no authorizer, every operation allowed; `super.users` or the flag given anyway is a
/// warning), the StandardAuthorizer's configuration when it names Kafka's StandardAuthorizer;
/// any other class is [`ConfigError::Invalid`].
pub fn authorizer_from_props(
    p: &mut Props,
    warnings: &mut Vec<ConfigWarning>,
) -> Result<Option<AuthorizerConfig>, ConfigError> {
    let class = p.take(AUTHORIZER_CLASS_NAME_CONFIG).unwrap_or_default();
    let super_users = p.take(SUPER_USERS_CONFIG);
    let allow_everyone = p.take(ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG);
    let class = class.trim();
    if class.is_empty() {
        for (key, given) in [
            (SUPER_USERS_CONFIG, &super_users),
            (ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG, &allow_everyone),
        ] {
            if given.is_some() {
                warnings.push(ConfigWarning::NotUsed {
                    key: key.to_string(),
                    reason: NO_AUTHORIZER,
                });
            }
        }
        return Ok(None);
    }
    if class != STANDARD_AUTHORIZER {
        let reason = if class == ZOOKEEPER_AUTHORIZER {
            format!("AclAuthorizer is ZooKeeper mode's; use {STANDARD_AUTHORIZER}")
        } else {
            format!("the only authorizer Josef has is {STANDARD_AUTHORIZER}")
        };
        return Err(Props::invalid(AUTHORIZER_CLASS_NAME_CONFIG, class, reason));
    }
    let pairs = [
        (SUPER_USERS_CONFIG, super_users.as_deref()),
        (
            ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG,
            allow_everyone.as_deref(),
        ),
    ];
    Ok(Some(AuthorizerConfig::from_configs(
        pairs.into_iter().filter_map(|(k, v)| v.map(|v| (k, v))),
    )))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    type Parsed = (Option<AuthorizerConfig>, Vec<ConfigWarning>, Props);

    fn parse(pairs: &[(&str, &str)]) -> Result<Parsed, ConfigError> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut p = Props::new(map);
        let mut w = Vec::new();
        let c = authorizer_from_props(&mut p, &mut w)?;
        Ok((c, w, p))
    }

    #[test]
    fn no_class_means_no_authorizer() {
        let (c, w, _) = parse(&[]).unwrap();
        assert!(c.is_none());
        assert!(w.is_empty());
        let (c, w, p) = parse(&[("authorizer.class.name", ""), ("super.users", "User:a")]).unwrap();
        assert!(c.is_none());
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].key(), "super.users");
        // The settings are consumed: the broker does not report them as unknown.
        assert_eq!(p.into_remaining_keys().count(), 0);
    }

    #[test]
    fn standard_authorizer_reads_its_settings() {
        let (c, w, _) = parse(&[
            ("authorizer.class.name", STANDARD_AUTHORIZER),
            ("super.users", "User:admin; User:ops"),
            ("allow.everyone.if.no.acl.found", "true"),
        ])
        .unwrap();
        assert!(w.is_empty(), "{w:?}");
        let a = c.unwrap();
        assert_eq!(a.super_users.len(), 2);
        assert!(a.super_users.contains("User:ops"));
        assert!(a.allow_everyone_if_no_acl_found);
        let (c, _, _) = parse(&[("authorizer.class.name", STANDARD_AUTHORIZER)]).unwrap();
        let a = c.unwrap();
        assert!(a.super_users.is_empty());
        assert!(!a.allow_everyone_if_no_acl_found);
    }

    #[test]
    fn other_authorizers_fail_the_start() {
        for class in [
            "kafka.security.authorizer.AclAuthorizer",
            "com.example.Mine",
        ] {
            let Err(e) = parse(&[("authorizer.class.name", class)]) else {
                panic!("{class} accepted");
            };
            assert!(
                matches!(&e, ConfigError::Invalid { key, .. } if key == "authorizer.class.name"),
                "{e}"
            );
        }
    }
}
