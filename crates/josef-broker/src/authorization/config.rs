//! `authorizer.class.name`, `super.users` and `allow.everyone.if.no.acl.found`.

use josef_authorizer::{
    AuthorizerConfig, ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG, SUPER_USERS_CONFIG,
};

use crate::config::{ConfigError, ConfigWarning, Props};

/// The setting naming the authorizer.
pub const AUTHORIZER_CLASS_NAME_CONFIG: &str = "authorizer.class.name";

/// Kafka's KRaft authorizer, the one Josef implements.
pub const STANDARD_AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

/// Kafka's ZooKeeper-mode authorizer (removed in Kafka 4.0).
const ZOOKEEPER_AUTHORIZER: &str = "kafka.security.authorizer.AclAuthorizer";

const NO_AUTHORIZER: &str = "authorizer.class.name is not set, so every operation is allowed";

/// Reads the three settings: `None` when `authorizer.class.name` is empty (Kafka's default: no
/// authorizer, every operation allowed), the StandardAuthorizer's configuration when it names
/// Kafka's StandardAuthorizer; any other class fails the start.
pub(crate) fn parse(
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

    use crate::config::{BrokerConfig, ConfigError, ConfigWarning};

    fn parse(pairs: &[(&str, &str)]) -> Result<(BrokerConfig, Vec<ConfigWarning>), ConfigError> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        BrokerConfig::from_properties_with_warnings(map)
    }

    #[test]
    fn no_class_means_no_authorizer() {
        let (c, w) = parse(&[]).unwrap();
        assert!(c.authorizer.is_none());
        assert!(w.is_empty());
        let (c, w) = parse(&[("authorizer.class.name", ""), ("super.users", "User:a")]).unwrap();
        assert!(c.authorizer.is_none());
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].key(), "super.users");
    }

    #[test]
    fn standard_authorizer_reads_its_settings() {
        let (c, w) = parse(&[
            ("authorizer.class.name", super::STANDARD_AUTHORIZER),
            ("super.users", "User:admin; User:ops"),
            ("allow.everyone.if.no.acl.found", "true"),
        ])
        .unwrap();
        assert!(w.is_empty(), "{w:?}");
        let a = c.authorizer.unwrap();
        assert_eq!(a.super_users.len(), 2);
        assert!(a.super_users.contains("User:ops"));
        assert!(a.allow_everyone_if_no_acl_found);
        let (c, _) = parse(&[("authorizer.class.name", super::STANDARD_AUTHORIZER)]).unwrap();
        let a = c.authorizer.unwrap();
        assert!(a.super_users.is_empty());
        assert!(!a.allow_everyone_if_no_acl_found);
    }

    #[test]
    fn other_authorizers_fail_the_start() {
        for class in [
            "kafka.security.authorizer.AclAuthorizer",
            "com.example.Mine",
        ] {
            let e = parse(&[("authorizer.class.name", class)]).unwrap_err();
            assert!(
                matches!(&e, ConfigError::Invalid { key, .. } if key == "authorizer.class.name"),
                "{e}"
            );
        }
    }
}
