//! Kafka's ACL vocabulary: resource types, pattern types, operations and permission types, each
//! with the `i8` code it has on the wire and in metadata records.

use std::fmt;
use std::str::FromStr;

use crate::error::ParseNameError;

/// Declares a Kafka code enum: `from_code` maps unknown codes to `Unknown` (as Kafka's `fromCode`
/// does), `code` gives the wire value, `name` and `FromStr` use Kafka's upper-case names.
macro_rules! kafka_code_enum {
    (
        $(#[$meta:meta])*
        $name:ident, $what:literal {
            $( $(#[$vmeta:meta])* $variant:ident = $code:literal, $text:literal; )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(i8)]
        pub enum $name {
            $( $(#[$vmeta])* $variant = $code, )+
        }

        impl $name {
            /// Every value, in code order.
            pub const ALL_VALUES: &'static [$name] = &[$($name::$variant),+];

            /// The value of a wire code; codes Kafka does not know are `Unknown`.
            pub const fn from_code(code: i8) -> $name {
                match code {
                    $( $code => $name::$variant, )+
                    _ => $name::Unknown,
                }
            }

            /// The wire code.
            pub const fn code(self) -> i8 {
                self as i8
            }

            /// Kafka's name (`TOPIC`, `PREFIXED`, `DESCRIBE_CONFIGS`, `ALLOW`, ...).
            pub const fn name(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }

            /// True for `Unknown`.
            pub const fn is_unknown(self) -> bool {
                matches!(self, $name::Unknown)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        /// Parses Kafka's name, case-insensitively, as Kafka's `fromString` does.
        impl FromStr for $name {
            type Err = ParseNameError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $name::ALL_VALUES
                    .iter()
                    .copied()
                    .find(|v| v.name().eq_ignore_ascii_case(s))
                    .ok_or(ParseNameError { what: $what, text: s.to_string() })
            }
        }
    };
}

kafka_code_enum! {
    /// Kafka's `ResourceType`: what an ACL protects.
    ResourceType, "resource type" {
        /// A code this version does not know.
        Unknown = 0, "UNKNOWN";
        /// In a filter: any resource type.
        Any = 1, "ANY";
        /// A topic.
        Topic = 2, "TOPIC";
        /// A consumer (or share) group.
        Group = 3, "GROUP";
        /// The cluster; its only name is [`CLUSTER_NAME`](crate::CLUSTER_NAME).
        Cluster = 4, "CLUSTER";
        /// A transactional id.
        TransactionalId = 5, "TRANSACTIONAL_ID";
        /// A delegation token.
        DelegationToken = 6, "DELEGATION_TOKEN";
        /// A user (for delegation tokens created on behalf of others).
        User = 7, "USER";
    }
}

kafka_code_enum! {
    /// Kafka's `PatternType`: how an ACL's resource name is matched.
    PatternType, "pattern type" {
        /// A code this version does not know.
        Unknown = 0, "UNKNOWN";
        /// In a filter: any pattern type, names compared exactly.
        Any = 1, "ANY";
        /// In a filter: every pattern that would apply to the filter's name (literal, `*`, covering
        /// prefixes).
        Match = 2, "MATCH";
        /// The name is the resource name, or `*` for every resource of the type.
        Literal = 3, "LITERAL";
        /// The name is a prefix of the resource names it covers.
        Prefixed = 4, "PREFIXED";
    }
}

kafka_code_enum! {
    /// Kafka's `AclOperation`.
    AclOperation, "operation" {
        /// A code this version does not know.
        Unknown = 0, "UNKNOWN";
        /// In a filter: any operation.
        Any = 1, "ANY";
        /// Every operation.
        All = 2, "ALL";
        /// Read (fetch, commit offsets, join a group).
        Read = 3, "READ";
        /// Write (produce).
        Write = 4, "WRITE";
        /// Create topics.
        Create = 5, "CREATE";
        /// Delete topics, groups, records.
        Delete = 6, "DELETE";
        /// Alter (partitions, ACLs, reassignments).
        Alter = 7, "ALTER";
        /// Describe.
        Describe = 8, "DESCRIBE";
        /// Inter-broker and controller requests.
        ClusterAction = 9, "CLUSTER_ACTION";
        /// Describe configs.
        DescribeConfigs = 10, "DESCRIBE_CONFIGS";
        /// Alter configs.
        AlterConfigs = 11, "ALTER_CONFIGS";
        /// Idempotent produce.
        IdempotentWrite = 12, "IDEMPOTENT_WRITE";
        /// Create delegation tokens.
        CreateTokens = 13, "CREATE_TOKENS";
        /// Describe delegation tokens.
        DescribeTokens = 14, "DESCRIBE_TOKENS";
    }
}

kafka_code_enum! {
    /// Kafka's `AclPermissionType`.
    AclPermissionType, "permission type" {
        /// A code this version does not know.
        Unknown = 0, "UNKNOWN";
        /// In a filter: either permission.
        Any = 1, "ANY";
        /// The ACL denies; a denial wins over every allow.
        Deny = 2, "DENY";
        /// The ACL allows.
        Allow = 3, "ALLOW";
    }
}

impl ResourceType {
    /// The operations Kafka reports in KIP-430 authorized-operations fields for this type
    /// (`AclEntry.supportedOperations`); empty for `Unknown` and `Any`.
    pub const fn supported_operations(self) -> &'static [AclOperation] {
        use AclOperation::*;
        match self {
            ResourceType::Topic => &[
                Read,
                Write,
                Create,
                Describe,
                Delete,
                Alter,
                DescribeConfigs,
                AlterConfigs,
            ],
            ResourceType::Group => &[Read, Describe, Delete, DescribeConfigs, AlterConfigs],
            ResourceType::Cluster => &[
                Create,
                ClusterAction,
                DescribeConfigs,
                AlterConfigs,
                IdempotentWrite,
                Alter,
                Describe,
            ],
            ResourceType::TransactionalId => &[Describe, Write],
            ResourceType::DelegationToken => &[Describe],
            ResourceType::User => &[CreateTokens, DescribeTokens],
            ResourceType::Unknown | ResourceType::Any => &[],
        }
    }

    /// True for a type an ACL can name (not `Unknown` or `Any`).
    pub const fn is_concrete(self) -> bool {
        !matches!(self, ResourceType::Unknown | ResourceType::Any)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_kafkas() {
        assert_eq!(ResourceType::Topic.code(), 2);
        assert_eq!(ResourceType::User.code(), 7);
        assert_eq!(PatternType::Prefixed.code(), 4);
        assert_eq!(AclOperation::DescribeTokens.code(), 14);
        assert_eq!(AclOperation::IdempotentWrite.code(), 12);
        assert_eq!(AclPermissionType::Allow.code(), 3);
        assert_eq!(ResourceType::from_code(99), ResourceType::Unknown);
        assert_eq!(AclOperation::from_code(-1), AclOperation::Unknown);
        for op in AclOperation::ALL_VALUES {
            assert_eq!(AclOperation::from_code(op.code()), *op);
        }
    }

    #[test]
    fn names_parse_case_insensitively() {
        assert_eq!(
            "describe_configs".parse::<AclOperation>().unwrap(),
            AclOperation::DescribeConfigs
        );
        assert_eq!(
            "Transactional_Id".parse::<ResourceType>().unwrap(),
            ResourceType::TransactionalId
        );
        assert!("nope".parse::<PatternType>().is_err());
        assert_eq!(AclPermissionType::Deny.to_string(), "DENY");
    }
}
