//! Typed errors, each mapped to the Kafka error code a broker answers with.

use josef_protocol::{ErrorCode, Uuid};

use crate::types::{AclOperation, AclPermissionType, PatternType, ResourceType};

/// Why an ACL binding, a filter or an ACL mutation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AclError {
    /// A binding names `CLUSTER` with a name other than `kafka-cluster` (checked by the broker
    /// before the controller, `AclApis.handleCreateAcls`).
    #[error("The only valid name for the CLUSTER resource is kafka-cluster, not {0:?}")]
    InvalidClusterName(String),
    /// A binding with an empty resource name.
    #[error("Invalid empty resource name")]
    EmptyResourceName,
    /// A binding whose resource type is `UNKNOWN` or `ANY`.
    #[error("Invalid resourceType {0}")]
    InvalidResourceType(ResourceType),
    /// A binding whose pattern type is neither `LITERAL` nor `PREFIXED`.
    #[error("Invalid patternType {0}")]
    InvalidPatternType(PatternType),
    /// A binding whose operation is `UNKNOWN` or `ANY`.
    #[error("Invalid operation {0}")]
    InvalidOperation(AclOperation),
    /// A binding whose permission type is neither `ALLOW` nor `DENY`.
    #[error("Invalid permissionType {0}")]
    InvalidPermissionType(AclPermissionType),
    /// A filter whose resource type or pattern type is `UNKNOWN`.
    #[error("Unknown patternFilter.")]
    UnknownPatternFilter,
    /// A filter whose operation or permission type is `UNKNOWN`.
    #[error("Unknown entryFilter.")]
    UnknownEntryFilter,
    /// `authorize_by_resource_type` with an `ANY`/`UNKNOWN` operation or resource type.
    #[error("authorize_by_resource_type needs a concrete operation and resource type, not {operation} on {resource_type}")]
    NotConcreteForResourceTypeCheck {
        /// The operation asked about.
        operation: AclOperation,
        /// The resource type asked about.
        resource_type: ResourceType,
    },
    /// An ACL record whose id is already held by another ACL.
    #[error("an ACL with id {0} already exists")]
    DuplicateAclId(Uuid),
    /// A removal naming an id no ACL has.
    #[error("no ACL with id {0}")]
    UnknownAclId(Uuid),
    /// An ACL id that is zero (Kafka never assigns it).
    #[error("the zero uuid is not a valid ACL id")]
    ZeroAclId,
    /// The id source kept returning ids already in use.
    #[error("could not find an unused ACL id")]
    NoFreshAclId,
}

impl AclError {
    /// The Kafka error code a broker puts in the response for this error.
    pub fn kafka_error_code(&self) -> ErrorCode {
        match self {
            AclError::InvalidClusterName(_)
            | AclError::EmptyResourceName
            | AclError::InvalidResourceType(_)
            | AclError::InvalidPatternType(_)
            | AclError::InvalidOperation(_)
            | AclError::InvalidPermissionType(_)
            | AclError::UnknownPatternFilter
            | AclError::UnknownEntryFilter => ErrorCode::InvalidRequest,
            AclError::NotConcreteForResourceTypeCheck { .. }
            | AclError::DuplicateAclId(_)
            | AclError::UnknownAclId(_)
            | AclError::ZeroAclId
            | AclError::NoFreshAclId => ErrorCode::UnknownServerError,
        }
    }
}

/// A name that is not one of Kafka's names for a resource type, pattern type, operation or
/// permission type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a Kafka {what}")]
pub struct ParseNameError {
    /// What was being parsed (`resource type`, `operation`, ...).
    pub what: &'static str,
    /// The text.
    pub text: String,
}
