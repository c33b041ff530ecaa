//! ACL bindings (a resource pattern plus an access control entry) and the filters DescribeAcls and
//! DeleteAcls select them with.

use josef_protocol::Uuid;

use crate::error::AclError;
use crate::types::{AclOperation, AclPermissionType, PatternType, ResourceType};

/// The literal resource name that covers every resource of a type.
pub const WILDCARD_RESOURCE: &str = "*";
/// The ACL principal that matches every principal.
pub const WILDCARD_PRINCIPAL: &str = "User:*";
/// The ACL host that matches every client address.
pub const WILDCARD_HOST: &str = "*";
/// The only name of the `CLUSTER` resource.
pub const CLUSTER_NAME: &str = "kafka-cluster";

/// Kafka's `ResourcePattern`: a resource type, a name and how the name is matched.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourcePattern {
    /// The resource type.
    pub resource_type: ResourceType,
    /// The name (`*` with [`PatternType::Literal`] means every resource of the type).
    pub name: String,
    /// How `name` is matched.
    pub pattern_type: PatternType,
}

impl ResourcePattern {
    /// A pattern.
    pub fn new(
        resource_type: ResourceType,
        name: impl Into<String>,
        pattern_type: PatternType,
    ) -> Self {
        ResourcePattern {
            resource_type,
            name: name.into(),
            pattern_type,
        }
    }

    /// A literal pattern.
    pub fn literal(resource_type: ResourceType, name: impl Into<String>) -> Self {
        Self::new(resource_type, name, PatternType::Literal)
    }

    /// A prefixed pattern.
    pub fn prefixed(resource_type: ResourceType, name: impl Into<String>) -> Self {
        Self::new(resource_type, name, PatternType::Prefixed)
    }

    /// The cluster resource (`CLUSTER`, `kafka-cluster`, literal).
    pub fn cluster() -> Self {
        Self::literal(ResourceType::Cluster, CLUSTER_NAME)
    }

    /// True if this pattern covers the resource `name` of `resource_type` (the authorizer's rule:
    /// a literal equal name, the literal wildcard, or a prefix).
    pub fn covers(&self, resource_type: ResourceType, name: &str) -> bool {
        self.resource_type == resource_type
            && match self.pattern_type {
                PatternType::Literal => self.name == name || self.name == WILDCARD_RESOURCE,
                PatternType::Prefixed => name.starts_with(self.name.as_str()),
                _ => false,
            }
    }
}

/// Kafka's `AccessControlEntry`: who, from where, what, and whether it is allowed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AccessControlEntry {
    /// The principal as `Type:name` (`User:alice`, or `User:*` for everyone).
    pub principal: String,
    /// The client address as text, or `*` for every host.
    pub host: String,
    /// The operation.
    pub operation: AclOperation,
    /// Allow or deny.
    pub permission_type: AclPermissionType,
}

impl AccessControlEntry {
    /// An entry.
    pub fn new(
        principal: impl Into<String>,
        host: impl Into<String>,
        operation: AclOperation,
        permission_type: AclPermissionType,
    ) -> Self {
        AccessControlEntry {
            principal: principal.into(),
            host: host.into(),
            operation,
            permission_type,
        }
    }

    /// An allowing entry.
    pub fn allow(
        principal: impl Into<String>,
        host: impl Into<String>,
        operation: AclOperation,
    ) -> Self {
        Self::new(principal, host, operation, AclPermissionType::Allow)
    }

    /// A denying entry.
    pub fn deny(
        principal: impl Into<String>,
        host: impl Into<String>,
        operation: AclOperation,
    ) -> Self {
        Self::new(principal, host, operation, AclPermissionType::Deny)
    }
}

/// Kafka's `AclBinding`: one ACL.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AclBinding {
    /// What it protects.
    pub pattern: ResourcePattern,
    /// Who may (or may not) do what.
    pub entry: AccessControlEntry,
}

impl AclBinding {
    /// A binding.
    pub fn new(pattern: ResourcePattern, entry: AccessControlEntry) -> Self {
        AclBinding { pattern, entry }
    }

    /// Checks the binding as a CreateAcls creation, in Kafka's order (the broker's cluster-name and
    /// empty-name checks, then the controller's `validateNewAcl`); every failure is
    /// INVALID_REQUEST for that creation only.
    pub fn validate(&self) -> Result<(), AclError> {
        let p = &self.pattern;
        if p.resource_type == ResourceType::Cluster && p.name != CLUSTER_NAME {
            return Err(AclError::InvalidClusterName(p.name.clone()));
        }
        self.validate_record()
    }

    /// The controller's checks alone (`AclControlManager.validateNewAcl`): what a binding read back
    /// from the metadata log must satisfy to be indexed.
    pub fn validate_record(&self) -> Result<(), AclError> {
        let p = &self.pattern;
        if p.name.is_empty() {
            return Err(AclError::EmptyResourceName);
        }
        if !p.resource_type.is_concrete() {
            return Err(AclError::InvalidResourceType(p.resource_type));
        }
        if !matches!(p.pattern_type, PatternType::Literal | PatternType::Prefixed) {
            return Err(AclError::InvalidPatternType(p.pattern_type));
        }
        if matches!(
            self.entry.operation,
            AclOperation::Unknown | AclOperation::Any
        ) {
            return Err(AclError::InvalidOperation(self.entry.operation));
        }
        if !matches!(
            self.entry.permission_type,
            AclPermissionType::Allow | AclPermissionType::Deny
        ) {
            return Err(AclError::InvalidPermissionType(self.entry.permission_type));
        }
        Ok(())
    }

    /// The filter that selects exactly this binding.
    pub fn to_filter(&self) -> AclBindingFilter {
        AclBindingFilter {
            pattern_filter: ResourcePatternFilter {
                resource_type: self.pattern.resource_type,
                name: Some(self.pattern.name.clone()),
                pattern_type: self.pattern.pattern_type,
            },
            entry_filter: AccessControlEntryFilter {
                principal: Some(self.entry.principal.clone()),
                host: Some(self.entry.host.clone()),
                operation: self.entry.operation,
                permission_type: self.entry.permission_type,
            },
        }
    }
}

/// An ACL with the id its AccessControlEntryRecord carries.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AclWithId {
    /// The ACL's id (never zero).
    pub id: Uuid,
    /// The ACL.
    pub binding: AclBinding,
}

/// Kafka's `ResourcePatternFilter`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResourcePatternFilter {
    /// `Any` matches every type; otherwise only that type.
    pub resource_type: ResourceType,
    /// `None` matches every name.
    pub name: Option<String>,
    /// `Any`: any pattern type, equal names. `Match`: every pattern that would cover `name`.
    /// Otherwise: that pattern type with an equal name.
    pub pattern_type: PatternType,
}

impl ResourcePatternFilter {
    /// The filter that matches every pattern.
    pub const ANY: ResourcePatternFilter = ResourcePatternFilter {
        resource_type: ResourceType::Any,
        name: None,
        pattern_type: PatternType::Any,
    };

    /// True if the resource type or pattern type is `Unknown`.
    pub fn is_unknown(&self) -> bool {
        self.resource_type.is_unknown() || self.pattern_type.is_unknown()
    }

    /// Kafka's `ResourcePatternFilter.matches`.
    pub fn matches(&self, pattern: &ResourcePattern) -> bool {
        if self.resource_type != ResourceType::Any && self.resource_type != pattern.resource_type {
            return false;
        }
        let any_or_match = matches!(self.pattern_type, PatternType::Any | PatternType::Match);
        if !any_or_match && self.pattern_type != pattern.pattern_type {
            return false;
        }
        let Some(name) = &self.name else {
            return true;
        };
        if self.pattern_type == PatternType::Any || self.pattern_type == pattern.pattern_type {
            return *name == pattern.name;
        }
        // MATCH against a stored pattern. Kafka throws for a stored pattern that is neither
        // literal nor prefixed; such a pattern can never be indexed here, so it simply does not
        // match.
        match pattern.pattern_type {
            PatternType::Literal => *name == pattern.name || pattern.name == WILDCARD_RESOURCE,
            PatternType::Prefixed => name.starts_with(pattern.name.as_str()),
            _ => false,
        }
    }
}

/// Kafka's `AccessControlEntryFilter`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AccessControlEntryFilter {
    /// `None` matches every principal; otherwise the principal text must be equal (`User:*` in a
    /// filter matches only ACLs for `User:*`).
    pub principal: Option<String>,
    /// `None` matches every host; otherwise equal text.
    pub host: Option<String>,
    /// `Any` matches every operation.
    pub operation: AclOperation,
    /// `Any` matches both permissions.
    pub permission_type: AclPermissionType,
}

impl AccessControlEntryFilter {
    /// The filter that matches every entry.
    pub const ANY: AccessControlEntryFilter = AccessControlEntryFilter {
        principal: None,
        host: None,
        operation: AclOperation::Any,
        permission_type: AclPermissionType::Any,
    };

    /// True if the operation or permission type is `Unknown`.
    pub fn is_unknown(&self) -> bool {
        self.operation.is_unknown() || self.permission_type.is_unknown()
    }

    /// Kafka's `AccessControlEntryFilter.matches`.
    pub fn matches(&self, entry: &AccessControlEntry) -> bool {
        self.principal
            .as_ref()
            .map_or(true, |p| *p == entry.principal)
            && self.host.as_ref().map_or(true, |h| *h == entry.host)
            && (self.operation == AclOperation::Any || self.operation == entry.operation)
            && (self.permission_type == AclPermissionType::Any
                || self.permission_type == entry.permission_type)
    }
}

/// Kafka's `AclBindingFilter`: a pattern filter and an entry filter, both of which must match.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AclBindingFilter {
    /// Selects resource patterns.
    pub pattern_filter: ResourcePatternFilter,
    /// Selects entries.
    pub entry_filter: AccessControlEntryFilter,
}

impl AclBindingFilter {
    /// The filter that matches every binding.
    pub const ANY: AclBindingFilter = AclBindingFilter {
        pattern_filter: ResourcePatternFilter::ANY,
        entry_filter: AccessControlEntryFilter::ANY,
    };

    /// A filter.
    pub fn new(
        pattern_filter: ResourcePatternFilter,
        entry_filter: AccessControlEntryFilter,
    ) -> Self {
        AclBindingFilter {
            pattern_filter,
            entry_filter,
        }
    }

    /// A filter on resource patterns only: every entry of the patterns of `resource_type`,
    /// `name` (`None`: any) and `pattern_type` (see [`ResourcePatternFilter`]).
    pub fn of_patterns(
        resource_type: ResourceType,
        name: Option<&str>,
        pattern_type: PatternType,
    ) -> Self {
        Self::new(
            ResourcePatternFilter {
                resource_type,
                name: name.map(str::to_string),
                pattern_type,
            },
            AccessControlEntryFilter::ANY,
        )
    }

    /// True if any field is `Unknown`.
    pub fn is_unknown(&self) -> bool {
        self.pattern_filter.is_unknown() || self.entry_filter.is_unknown()
    }

    /// Refuses filters with `Unknown` fields as DescribeAcls and DeleteAcls do (INVALID_REQUEST).
    pub fn validate(&self) -> Result<(), AclError> {
        if self.pattern_filter.is_unknown() {
            return Err(AclError::UnknownPatternFilter);
        }
        if self.entry_filter.is_unknown() {
            return Err(AclError::UnknownEntryFilter);
        }
        Ok(())
    }

    /// Kafka's `AclBindingFilter.matches`.
    pub fn matches(&self, binding: &AclBinding) -> bool {
        self.pattern_filter.matches(&binding.pattern) && self.entry_filter.matches(&binding.entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topic_read(pattern: ResourcePattern) -> AclBinding {
        AclBinding::new(
            pattern,
            AccessControlEntry::allow("User:alice", "*", AclOperation::Read),
        )
    }

    use AclBindingFilter as F;

    #[test]
    fn match_filter_selects_literal_wildcard_and_covering_prefixes() {
        let f = F::of_patterns(ResourceType::Topic, Some("orders-eu"), PatternType::Match);
        assert!(f.matches(&topic_read(ResourcePattern::literal(
            ResourceType::Topic,
            "orders-eu"
        ))));
        assert!(f.matches(&topic_read(ResourcePattern::literal(
            ResourceType::Topic,
            "*"
        ))));
        assert!(f.matches(&topic_read(ResourcePattern::prefixed(
            ResourceType::Topic,
            "orders-"
        ))));
        assert!(f.matches(&topic_read(ResourcePattern::prefixed(
            ResourceType::Topic,
            "orders-eu"
        ))));
        assert!(!f.matches(&topic_read(ResourcePattern::prefixed(
            ResourceType::Topic,
            "orders-us"
        ))));
        assert!(!f.matches(&topic_read(ResourcePattern::literal(
            ResourceType::Topic,
            "orders"
        ))));
        assert!(!f.matches(&topic_read(ResourcePattern::literal(
            ResourceType::Group,
            "orders-eu"
        ))));
    }

    #[test]
    fn any_filter_compares_names_exactly_across_pattern_types() {
        let f = F::of_patterns(ResourceType::Any, Some("orders-"), PatternType::Any);
        assert!(f.matches(&topic_read(ResourcePattern::prefixed(
            ResourceType::Topic,
            "orders-"
        ))));
        assert!(f.matches(&topic_read(ResourcePattern::literal(
            ResourceType::Group,
            "orders-"
        ))));
        assert!(!f.matches(&topic_read(ResourcePattern::literal(
            ResourceType::Topic,
            "*"
        ))));
        let all = F::of_patterns(ResourceType::Topic, None, PatternType::Any);
        assert!(all.matches(&topic_read(ResourcePattern::literal(
            ResourceType::Topic,
            "*"
        ))));
    }

    #[test]
    fn concrete_pattern_type_filter_is_exact() {
        let f = F::of_patterns(ResourceType::Topic, Some("*"), PatternType::Literal);
        assert!(f.matches(&topic_read(ResourcePattern::literal(
            ResourceType::Topic,
            "*"
        ))));
        assert!(!f.matches(&topic_read(ResourcePattern::prefixed(
            ResourceType::Topic,
            "*"
        ))));
        let f = F::of_patterns(ResourceType::Topic, None, PatternType::Prefixed);
        assert!(f.matches(&topic_read(ResourcePattern::prefixed(
            ResourceType::Topic,
            "a"
        ))));
        assert!(!f.matches(&topic_read(ResourcePattern::literal(
            ResourceType::Topic,
            "a"
        ))));
    }

    #[test]
    fn entry_filter_fields() {
        let b = topic_read(ResourcePattern::literal(ResourceType::Topic, "t"));
        let mut f = AclBindingFilter::ANY;
        assert!(f.matches(&b));
        f.entry_filter.principal = Some("User:*".into());
        assert!(
            !f.matches(&b),
            "a wildcard principal in a filter is literal text"
        );
        f.entry_filter.principal = Some("User:alice".into());
        f.entry_filter.host = Some("10.0.0.1".into());
        assert!(!f.matches(&b));
        f.entry_filter.host = Some("*".into());
        f.entry_filter.operation = AclOperation::Write;
        assert!(!f.matches(&b));
        f.entry_filter.operation = AclOperation::Read;
        f.entry_filter.permission_type = AclPermissionType::Deny;
        assert!(!f.matches(&b));
        f.entry_filter.permission_type = AclPermissionType::Allow;
        assert!(f.matches(&b));
    }

    #[test]
    fn validation_errors_are_invalid_request() {
        use josef_protocol::ErrorCode;
        let ok = topic_read(ResourcePattern::literal(ResourceType::Topic, "t"));
        assert_eq!(ok.validate(), Ok(()));
        let cases = [
            (
                AclBinding::new(
                    ResourcePattern::literal(ResourceType::Cluster, "c"),
                    ok.entry.clone(),
                ),
                AclError::InvalidClusterName("c".into()),
            ),
            (
                topic_read(ResourcePattern::literal(ResourceType::Topic, "")),
                AclError::EmptyResourceName,
            ),
            (
                topic_read(ResourcePattern::literal(ResourceType::Any, "t")),
                AclError::InvalidResourceType(ResourceType::Any),
            ),
            (
                topic_read(ResourcePattern::literal(ResourceType::Unknown, "t")),
                AclError::InvalidResourceType(ResourceType::Unknown),
            ),
            (
                topic_read(ResourcePattern::new(
                    ResourceType::Topic,
                    "t",
                    PatternType::Match,
                )),
                AclError::InvalidPatternType(PatternType::Match),
            ),
            (
                topic_read(ResourcePattern::new(
                    ResourceType::Topic,
                    "t",
                    PatternType::Any,
                )),
                AclError::InvalidPatternType(PatternType::Any),
            ),
            (
                AclBinding::new(
                    ok.pattern.clone(),
                    AccessControlEntry::allow("User:a", "*", AclOperation::Any),
                ),
                AclError::InvalidOperation(AclOperation::Any),
            ),
            (
                AclBinding::new(
                    ok.pattern.clone(),
                    AccessControlEntry::new(
                        "User:a",
                        "*",
                        AclOperation::Read,
                        AclPermissionType::Any,
                    ),
                ),
                AclError::InvalidPermissionType(AclPermissionType::Any),
            ),
        ];
        for (binding, want) in cases {
            let got = binding.validate().unwrap_err();
            assert_eq!(got, want, "{binding:?}");
            assert_eq!(got.kafka_error_code(), ErrorCode::InvalidRequest);
        }
        let mut f = AclBindingFilter::ANY;
        f.entry_filter.operation = AclOperation::Unknown;
        assert_eq!(f.validate(), Err(AclError::UnknownEntryFilter));
        let mut f = AclBindingFilter::ANY;
        f.pattern_filter.pattern_type = PatternType::Unknown;
        assert_eq!(f.validate(), Err(AclError::UnknownPatternFilter));
    }
}
