//! The StandardAuthorizer's configs: `super.users` and `allow.everyone.if.no.acl.found`.

use std::collections::BTreeSet;

/// The config naming principals allowed everything.
pub const SUPER_USERS_CONFIG: &str = "super.users";
/// The config deciding actions on resources no ACL matches.
pub const ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG: &str = "allow.everyone.if.no.acl.found";

/// The authorizer's configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorizerConfig {
    /// Principal texts (`User:alice`) allowed every action, over any DENY.
    pub super_users: BTreeSet<String>,
    /// If true, an action on a resource that no ACL matches at all is allowed (default false).
    pub allow_everyone_if_no_acl_found: bool,
}

impl AuthorizerConfig {
    /// Reads the two configs from `(key, value)` pairs (other keys are ignored), as Kafka does:
    /// `super.users` is a `;`-separated list with blanks dropped; the flag is true only for
    /// `true`, in any case.
    ///
    /// ```
    /// use josef_authorizer::AuthorizerConfig;
    /// let c = AuthorizerConfig::from_configs([
    ///     ("super.users", "User:alice; User:bob;"),
    ///     ("allow.everyone.if.no.acl.found", "TRUE"),
    /// ]);
    /// assert!(c.super_users.contains("User:bob"));
    /// assert_eq!(c.super_users.len(), 2);
    /// assert!(c.allow_everyone_if_no_acl_found);
    /// ```
    pub fn from_configs<'a>(configs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut config = AuthorizerConfig::default();
        for (key, value) in configs {
            match key {
                SUPER_USERS_CONFIG => config.super_users = parse_super_users(value),
                ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG => {
                    config.allow_everyone_if_no_acl_found =
                        value.trim().eq_ignore_ascii_case("true")
                }
                _ => {}
            }
        }
        config
    }

    /// Adds a super user (`User:alice`).
    pub fn with_super_user(mut self, principal: impl Into<String>) -> Self {
        self.super_users.insert(principal.into());
        self
    }

    /// Sets `allow.everyone.if.no.acl.found`.
    pub fn with_allow_everyone_if_no_acl_found(mut self, allow: bool) -> Self {
        self.allow_everyone_if_no_acl_found = allow;
        self
    }
}

/// Splits a `super.users` value at `;`, trimming each entry and dropping empty ones.
pub fn parse_super_users(value: &str) -> BTreeSet<String> {
    value
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_defaults_false_and_accepts_only_true() {
        assert!(!AuthorizerConfig::default().allow_everyone_if_no_acl_found);
        let c = AuthorizerConfig::from_configs([(ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG, "yes")]);
        assert!(!c.allow_everyone_if_no_acl_found);
        assert!(parse_super_users(" ; ;").is_empty());
    }
}
