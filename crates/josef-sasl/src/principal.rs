//! The authenticated identity, as Kafka's `KafkaPrincipal`.

use std::fmt;

/// Kafka's `KafkaPrincipal`: a type (`User` for every SASL mechanism) and a name. It displays as
/// `User:alice`, the form ACLs and `super.users` use.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KafkaPrincipal {
    /// `User` for SASL (`KafkaPrincipal.USER_TYPE`).
    pub principal_type: String,
    /// The authorization id the mechanism established.
    pub name: String,
}

impl KafkaPrincipal {
    /// Kafka's `KafkaPrincipal.USER_TYPE`.
    pub const USER_TYPE: &'static str = "User";

    /// `User:<name>`, what `DefaultKafkaPrincipalBuilder` makes of a SASL authorization id.
    pub fn user(name: impl Into<String>) -> Self {
        KafkaPrincipal {
            principal_type: Self::USER_TYPE.to_string(),
            name: name.into(),
        }
    }

    /// Kafka's `KafkaPrincipal.ANONYMOUS`, `User:ANONYMOUS`: a connection nothing authenticated
    /// (PLAINTEXT, or TLS without a client certificate).
    pub fn anonymous() -> Self {
        Self::user("ANONYMOUS")
    }
}

impl fmt::Display for KafkaPrincipal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.principal_type, self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_principal_displays_as_acls_write_it() {
        let p = KafkaPrincipal::user("alice");
        assert_eq!(p.principal_type, "User");
        assert_eq!(p.to_string(), "User:alice");
    }
}
