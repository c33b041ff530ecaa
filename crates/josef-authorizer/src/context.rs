//! Who is asking and what for: Kafka's `KafkaPrincipal`, `AuthorizableRequestContext`, `Action` and
//! `AuthorizationResult`.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use crate::types::{AclOperation, ResourceType};

/// Kafka's `KafkaPrincipal`: a type (`User` for every built-in principal builder) and a name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KafkaPrincipal {
    /// The principal type (`User`).
    pub principal_type: String,
    /// The name (`alice`, `ANONYMOUS`, a mapped certificate DN, ...).
    pub name: String,
}

impl KafkaPrincipal {
    /// The type of every principal Kafka's default principal builder makes.
    pub const USER_TYPE: &'static str = "User";

    /// A principal.
    pub fn new(principal_type: impl Into<String>, name: impl Into<String>) -> Self {
        KafkaPrincipal {
            principal_type: principal_type.into(),
            name: name.into(),
        }
    }

    /// A `User` principal.
    pub fn user(name: impl Into<String>) -> Self {
        Self::new(Self::USER_TYPE, name)
    }

    /// `User:ANONYMOUS`, the principal of unauthenticated connections.
    pub fn anonymous() -> Self {
        Self::user("ANONYMOUS")
    }

    /// True if an ACL's principal text names this principal: `Type:name` split at the first colon
    /// and compared field by field, as Kafka compares parsed principals. A text without a colon
    /// names nobody (Kafka cannot parse it either).
    pub fn is_named_by(&self, acl_principal: &str) -> bool {
        acl_principal
            .split_once(':')
            .is_some_and(|(t, n)| t == self.principal_type && n == self.name)
    }
}

impl fmt::Display for KafkaPrincipal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.principal_type, self.name)
    }
}

/// A principal text without the `Type:` part.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected a principal in the form principalType:principalName, not {0:?}")]
pub struct ParsePrincipalError(pub String);

/// Parses `Type:name`, splitting at the first colon (Kafka's `SecurityUtils.parseKafkaPrincipal`).
impl FromStr for KafkaPrincipal {
    type Err = ParsePrincipalError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.split_once(':') {
            Some((t, n)) if !s.is_empty() => Ok(KafkaPrincipal::new(t, n)),
            _ => Err(ParsePrincipalError(s.to_string())),
        }
    }
}

/// The client address as Java's `InetAddress.getHostAddress` prints it, which is the text host ACLs
/// are compared with: dotted IPv4; IPv6 as eight lower-case hex groups without `::` compression;
/// an IPv4-mapped IPv6 address as its IPv4 form (Java turns those into `Inet4Address`).
///
/// ```
/// use josef_authorizer::java_host_address;
/// assert_eq!(java_host_address("127.0.0.1".parse().unwrap()), "127.0.0.1");
/// assert_eq!(java_host_address("::1".parse().unwrap()), "0:0:0:0:0:0:0:1");
/// assert_eq!(java_host_address("::ffff:10.0.0.1".parse().unwrap()), "10.0.0.1");
/// ```
pub fn java_host_address(addr: IpAddr) -> String {
    match addr {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                format!(
                    "{:x}:{:x}:{:x}:{:x}:{:x}:{:x}:{:x}:{:x}",
                    s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]
                )
            }
        },
    }
}

/// Kafka's `AuthorizableRequestContext`, reduced to what the authorizer decides on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizableRequestContext {
    /// The authenticated principal.
    pub principal: KafkaPrincipal,
    /// The client address as text (see [`java_host_address`]).
    pub host: String,
    /// The listener the request came in on (not used by the standard rules; kept for custom ones).
    pub listener: String,
}

impl AuthorizableRequestContext {
    /// A context.
    pub fn new(
        principal: KafkaPrincipal,
        host: impl Into<String>,
        listener: impl Into<String>,
    ) -> Self {
        AuthorizableRequestContext {
            principal,
            host: host.into(),
            listener: listener.into(),
        }
    }

    /// A context from a socket address, with the host text Kafka would compare.
    pub fn from_addr(principal: KafkaPrincipal, addr: IpAddr, listener: impl Into<String>) -> Self {
        Self::new(principal, java_host_address(addr), listener)
    }
}

/// Kafka's `Action`: one operation on one (literal) resource.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Action {
    /// The operation.
    pub operation: AclOperation,
    /// The resource type.
    pub resource_type: ResourceType,
    /// The resource name (`kafka-cluster` for the cluster).
    pub resource_name: String,
}

impl Action {
    /// An action.
    pub fn new(
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: impl Into<String>,
    ) -> Self {
        Action {
            operation,
            resource_type,
            resource_name: resource_name.into(),
        }
    }

    /// An operation on the cluster resource.
    pub fn cluster(operation: AclOperation) -> Self {
        Self::new(operation, ResourceType::Cluster, crate::CLUSTER_NAME)
    }
}

/// Kafka's `AuthorizationResult`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuthorizationResult {
    /// The action may proceed.
    Allowed,
    /// The action is refused.
    Denied,
}

impl AuthorizationResult {
    /// True for [`AuthorizationResult::Allowed`].
    pub fn is_allowed(self) -> bool {
        self == AuthorizationResult::Allowed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principal_text_round_trips_and_splits_at_first_colon() {
        let p: KafkaPrincipal = "User:CN=a:b".parse().unwrap();
        assert_eq!(p, KafkaPrincipal::user("CN=a:b"));
        assert_eq!(p.to_string(), "User:CN=a:b");
        assert!(p.is_named_by("User:CN=a:b"));
        assert!(!p.is_named_by("User:CN=a"));
        assert!(!KafkaPrincipal::user("alice").is_named_by("alice"));
        assert!("alice".parse::<KafkaPrincipal>().is_err());
    }

    #[test]
    fn java_ipv6_text_is_uncompressed() {
        let a: IpAddr = "fe80::1:abcd".parse().unwrap();
        assert_eq!(java_host_address(a), "fe80:0:0:0:0:0:1:abcd");
    }
}
