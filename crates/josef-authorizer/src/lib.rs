//! Kafka's `StandardAuthorizer` (the KRaft ACL authorizer) as a pure library.
//!
//! - [`types`]: resource types, pattern types, operations and permission types with Kafka's codes.
//! - [`AclBinding`] / [`AclBindingFilter`]: ACLs and the DescribeAcls / DeleteAcls filters, with
//!   Kafka's matching (`ANY`, `MATCH`, null fields) and CreateAcls validation ([`AclError`], each
//!   error with its [`kafka_error_code`](AclError::kafka_error_code)).
//! - [`StandardAuthorizer`]: `super.users`, DENY over ALLOW, literal / prefixed / `*` patterns,
//!   `User:*`, host `*`, implied operations, `allow.everyone.if.no.acl.found`, the type-wide check
//!   for idempotent producers and KIP-430 [authorized operations](AuthorizedOperations). ACLs are
//!   indexed per resource type in sorted maps, so finding the prefixed ACLs covering a name costs
//!   O(log n) per covering or skipped pattern, not a scan.
//! - [`api_acls`]: per Kafka API, which ACLs the broker must check and the error when they fail.
//! - [`convert`]: CreateAcls / DescribeAcls / DeleteAcls messages and the metadata log's
//!   AccessControlEntryRecord / RemoveAccessControlEntryRecord.
//! - For a broker: [`request`] applies the ACLs each API needs around its handler (refused
//!   entries taken out before, answered after, KIP-430 authorized operations); [`acl_apis`]
//!   answers CreateAcls / DescribeAcls / DeleteAcls; [`AclFollower`] keeps an authorizer in step
//!   with a metadata image's ACLs; [`settings`] reads `authorizer.class.name` and its settings.
//!
//! No sockets, threads or clocks: ACLs come in as records, questions come in with a request
//! context.
//!
//! ```
//! use josef_authorizer::*;
//!
//! let config = AuthorizerConfig::from_configs([("super.users", "User:admin")]);
//! let mut authorizer = StandardAuthorizer::new(config);
//! let mut next = 0u128;
//! let mut ids = || { next += 1; josef_protocol::Uuid::from_u128(next) };
//! authorizer.create_acls(
//!     &[
//!         AclBinding::new(
//!             ResourcePattern::prefixed(ResourceType::Topic, "orders-"),
//!             AccessControlEntry::allow("User:*", "*", AclOperation::Read),
//!         ),
//!         AclBinding::new(
//!             ResourcePattern::literal(ResourceType::Topic, "orders-secret"),
//!             AccessControlEntry::deny("User:bob", "*", AclOperation::Read),
//!         ),
//!     ],
//!     &mut ids,
//! );
//! let alice = AuthorizableRequestContext::new(KafkaPrincipal::user("alice"), "10.0.0.7", "PLAINTEXT");
//! let bob = AuthorizableRequestContext::new(KafkaPrincipal::user("bob"), "10.0.0.8", "PLAINTEXT");
//! let read = |name: &str| Action::new(AclOperation::Read, ResourceType::Topic, name);
//! assert_eq!(
//!     authorizer.authorize(&alice, &[read("orders-eu"), read("orders-secret"), read("order")]),
//!     [AuthorizationResult::Allowed, AuthorizationResult::Allowed, AuthorizationResult::Denied],
//! );
//! // DENY wins over the wildcard-principal ALLOW; READ implies DESCRIBE.
//! assert!(!authorizer.is_allowed(&bob, AclOperation::Read, ResourceType::Topic, "orders-secret"));
//! assert!(authorizer.is_allowed(&bob, AclOperation::Describe, ResourceType::Topic, "orders-secret"));
//! // KIP-430: READ and the DESCRIBE it implies are bits 3 and 8.
//! let ops = authorizer.authorized_operations(&alice, ResourceType::Topic, "orders-eu");
//! assert_eq!(ops.bits(), (1 << 3) | (1 << 8));
//! ```
#![deny(missing_docs)]

/// The README's example, run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub mod acl_apis;
pub mod api_acls;
mod authorizer;
mod binding;
mod config;
mod context;
pub mod convert;
mod error;
mod follow;
mod index;
mod operations;
pub mod request;
pub mod settings;
pub mod types;

pub use authorizer::{implied_by_allow, AclCreateOutcome, CreatePlan, StandardAuthorizer};
pub use binding::{
    AccessControlEntry, AccessControlEntryFilter, AclBinding, AclBindingFilter, AclWithId,
    ResourcePattern, ResourcePatternFilter, CLUSTER_NAME, WILDCARD_HOST, WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
};
pub use config::{
    parse_super_users, AuthorizerConfig, ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG, SUPER_USERS_CONFIG,
};
pub use context::{
    java_host_address, Action, AuthorizableRequestContext, AuthorizationResult, KafkaPrincipal,
    ParsePrincipalError,
};
pub use error::{AclError, ParseNameError};
pub use follow::{AclFollower, AclNotApplied};
pub use operations::{authorized_operations, AuthorizedOperations, AUTHORIZED_OPERATIONS_OMITTED};
pub use types::{AclOperation, AclPermissionType, PatternType, ResourceType};
