//! Conversions between this crate's types and the protocol: CreateAcls creations, DescribeAcls and
//! DeleteAcls filters and responses, and the metadata log's AccessControlEntryRecord and
//! RemoveAccessControlEntryRecord.
//!
//! Codes Kafka does not know become `Unknown` (as Kafka's `fromCode`), which validation then refuses
//! with INVALID_REQUEST; nothing here fails.

use std::collections::BTreeMap;

use josef_protocol::messages::create_acls_request::AclCreation;
use josef_protocol::messages::create_acls_response::AclCreationResult;
use josef_protocol::messages::delete_acls_request::DeleteAclsFilter;
use josef_protocol::messages::delete_acls_response::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl,
};
use josef_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use josef_protocol::messages::{
    CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest, DescribeAclsResponse,
};
use josef_protocol::metadata_records::{AccessControlEntryRecord, RemoveAccessControlEntryRecord};
use josef_protocol::{ErrorCode, StrBytes, Uuid};

use crate::authorizer::{AclCreateOutcome, StandardAuthorizer};
use crate::binding::{
    AccessControlEntry, AccessControlEntryFilter, AclBinding, AclBindingFilter, AclWithId,
    ResourcePattern, ResourcePatternFilter,
};
use crate::error::AclError;
use crate::types::{AclOperation, AclPermissionType, PatternType, ResourceType};

/// The binding a CreateAcls creation asks for (`CreateAclsRequest.aclBinding`).
pub fn binding_from_creation(c: &AclCreation) -> AclBinding {
    binding_from_codes(
        (c.resource_type, &c.resource_name, c.resource_pattern_type),
        (&c.principal, &c.host, c.operation, c.permission_type),
    )
}

/// A binding from wire fields: (resource type, name, pattern type) and (principal, host,
/// operation, permission type).
fn binding_from_codes(
    (resource_type, name, pattern_type): (i8, &str, i8),
    (principal, host, operation, permission_type): (&str, &str, i8, i8),
) -> AclBinding {
    AclBinding::new(
        ResourcePattern::new(
            ResourceType::from_code(resource_type),
            name,
            PatternType::from_code(pattern_type),
        ),
        AccessControlEntry::new(
            principal,
            host,
            AclOperation::from_code(operation),
            AclPermissionType::from_code(permission_type),
        ),
    )
}

/// Every binding of a CreateAcls request, in order.
pub fn bindings_from_create_request(r: &CreateAclsRequest) -> Vec<AclBinding> {
    r.creations.iter().map(binding_from_creation).collect()
}

/// The CreateAcls creation for a binding (what a client sends).
pub fn creation_from_binding(b: &AclBinding) -> AclCreation {
    AclCreation {
        resource_type: b.pattern.resource_type.code(),
        resource_name: StrBytes::from(b.pattern.name.as_str()),
        resource_pattern_type: b.pattern.pattern_type.code(),
        principal: StrBytes::from(b.entry.principal.as_str()),
        host: StrBytes::from(b.entry.host.as_str()),
        operation: b.entry.operation.code(),
        permission_type: b.entry.permission_type.code(),
        ..Default::default()
    }
}

/// The CreateAcls answer for one creation: NONE on success (a duplicate included), else the
/// error's code and message.
pub fn acl_creation_result(result: &Result<AclCreateOutcome, AclError>) -> AclCreationResult {
    let (code, message) = error_fields(result.as_ref().err());
    AclCreationResult {
        error_code: code,
        error_message: message,
        ..Default::default()
    }
}

/// The filter in a DescribeAclsRequest or DeleteAclsFilter (both name its fields alike).
macro_rules! filter_from_wire {
    ($r:expr) => {{
        let r = $r;
        AclBindingFilter::new(
            ResourcePatternFilter {
                resource_type: ResourceType::from_code(r.resource_type_filter),
                name: r.resource_name_filter.as_deref().map(str::to_string),
                pattern_type: PatternType::from_code(r.pattern_type_filter),
            },
            AccessControlEntryFilter {
                principal: r.principal_filter.as_deref().map(str::to_string),
                host: r.host_filter.as_deref().map(str::to_string),
                operation: AclOperation::from_code(r.operation),
                permission_type: AclPermissionType::from_code(r.permission_type),
            },
        )
    }};
}

/// A DescribeAclsRequest or DeleteAclsFilter (`$ty`) carrying `$f`.
macro_rules! filter_to_wire {
    ($ty:ident, $f:expr) => {{
        let f: &AclBindingFilter = $f;
        let (p, e) = (&f.pattern_filter, &f.entry_filter);
        $ty {
            resource_type_filter: p.resource_type.code(),
            resource_name_filter: p.name.as_deref().map(StrBytes::from),
            pattern_type_filter: p.pattern_type.code(),
            principal_filter: e.principal.as_deref().map(StrBytes::from),
            host_filter: e.host.as_deref().map(StrBytes::from),
            operation: e.operation.code(),
            permission_type: e.permission_type.code(),
            ..Default::default()
        }
    }};
}

/// A `$ty` (AccessControlEntryRecord, DeleteAclsMatchingAcl: both name the binding's fields
/// alike) carrying binding `$b` and the `$extra` fields.
macro_rules! binding_to_wire {
    ($ty:ident { $($field:ident: $value:expr),* } from $b:expr) => {{
        let b: &AclBinding = $b;
        let (p, e) = (&b.pattern, &b.entry);
        $ty {
            $($field: $value,)*
            resource_type: p.resource_type.code(),
            resource_name: StrBytes::from(p.name.as_str()),
            pattern_type: p.pattern_type.code(),
            principal: StrBytes::from(e.principal.as_str()),
            host: StrBytes::from(e.host.as_str()),
            operation: e.operation.code(),
            permission_type: e.permission_type.code(),
            ..Default::default()
        }
    }};
}

/// The filter of a DescribeAcls request (`DescribeAclsRequest.filter`).
pub fn filter_from_describe_request(r: &DescribeAclsRequest) -> AclBindingFilter {
    filter_from_wire!(r)
}

/// One DeleteAcls filter.
pub fn filter_from_delete_filter(f: &DeleteAclsFilter) -> AclBindingFilter {
    filter_from_wire!(f)
}

/// Every filter of a DeleteAcls request, in order.
pub fn filters_from_delete_request(r: &DeleteAclsRequest) -> Vec<AclBindingFilter> {
    r.filters.iter().map(filter_from_delete_filter).collect()
}

/// A DescribeAcls request for a filter (what a client sends).
pub fn describe_request_from_filter(f: &AclBindingFilter) -> DescribeAclsRequest {
    filter_to_wire!(DescribeAclsRequest, f)
}

/// A DeleteAcls filter for a filter (what a client sends).
pub fn delete_filter_from_filter(f: &AclBindingFilter) -> DeleteAclsFilter {
    filter_to_wire!(DeleteAclsFilter, f)
}

/// DescribeAcls resources: the bindings grouped by resource pattern
/// (`DescribeAclsResponse.aclsResources`), patterns in sorted order.
pub fn describe_acls_resources(bindings: &[AclBinding]) -> Vec<DescribeAclsResource> {
    let mut grouped: BTreeMap<&ResourcePattern, Vec<AclDescription>> = BTreeMap::new();
    for b in bindings {
        grouped.entry(&b.pattern).or_default().push(AclDescription {
            principal: StrBytes::from(b.entry.principal.as_str()),
            host: StrBytes::from(b.entry.host.as_str()),
            operation: b.entry.operation.code(),
            permission_type: b.entry.permission_type.code(),
            ..Default::default()
        });
    }
    grouped
        .into_iter()
        .map(|(p, acls)| DescribeAclsResource {
            resource_type: p.resource_type.code(),
            resource_name: StrBytes::from(p.name.as_str()),
            pattern_type: p.pattern_type.code(),
            acls,
            ..Default::default()
        })
        .collect()
}

/// The DescribeAcls response for a describe result (throttle time left at 0).
pub fn describe_acls_response(result: &Result<Vec<AclBinding>, AclError>) -> DescribeAclsResponse {
    let (error_code, error_message) = error_fields(result.as_ref().err());
    DescribeAclsResponse {
        error_code,
        error_message,
        resources: match result {
            Ok(bindings) => describe_acls_resources(bindings),
            Err(_) => Vec::new(),
        },
        ..Default::default()
    }
}

/// The DeleteAcls answer for one filter: the ACLs it removed, or its error.
pub fn delete_acls_filter_result(
    result: &Result<Vec<AclWithId>, AclError>,
) -> DeleteAclsFilterResult {
    let (error_code, error_message) = error_fields(result.as_ref().err());
    let matching_acls = match result {
        Ok(acls) => acls
            .iter()
            .map(|a| {
                binding_to_wire!(DeleteAclsMatchingAcl {
                    error_code: ErrorCode::None.code(),
                    error_message: None
                } from &a.binding)
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    DeleteAclsFilterResult {
        error_code,
        error_message,
        matching_acls,
        ..Default::default()
    }
}

fn error_fields(error: Option<&AclError>) -> (i16, Option<StrBytes>) {
    match error {
        None => (ErrorCode::None.code(), None),
        Some(e) => (
            e.kafka_error_code().code(),
            Some(StrBytes::from(e.to_string())),
        ),
    }
}

impl AclWithId {
    /// The ACL from its metadata record (`StandardAclWithId.fromRecord`).
    pub fn from_record(r: &AccessControlEntryRecord) -> AclWithId {
        AclWithId {
            id: r.id,
            binding: binding_from_codes(
                (r.resource_type, &r.resource_name, r.pattern_type),
                (&r.principal, &r.host, r.operation, r.permission_type),
            ),
        }
    }

    /// The AccessControlEntryRecord (type 18, version 0) that creates this ACL.
    pub fn to_record(&self) -> AccessControlEntryRecord {
        binding_to_wire!(AccessControlEntryRecord { id: self.id } from &self.binding)
    }

    /// The RemoveAccessControlEntryRecord (type 19) that deletes this ACL.
    pub fn to_remove_record(&self) -> RemoveAccessControlEntryRecord {
        remove_record(self.id)
    }
}

/// The RemoveAccessControlEntryRecord for an ACL id.
pub fn remove_record(id: Uuid) -> RemoveAccessControlEntryRecord {
    RemoveAccessControlEntryRecord {
        id,
        ..Default::default()
    }
}

impl StandardAuthorizer {
    /// Replays an AccessControlEntryRecord from the metadata log.
    pub fn replay_access_control_entry(
        &mut self,
        record: &AccessControlEntryRecord,
    ) -> Result<(), AclError> {
        let acl = AclWithId::from_record(record);
        self.add_acl(acl.id, acl.binding)
    }

    /// Replays a RemoveAccessControlEntryRecord, returning the removed ACL.
    pub fn replay_remove_access_control_entry(
        &mut self,
        record: &RemoveAccessControlEntryRecord,
    ) -> Result<AclBinding, AclError> {
        self.remove_acl(&record.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> AclWithId {
        AclWithId {
            id: Uuid::from_u128(42),
            binding: AclBinding::new(
                ResourcePattern::prefixed(ResourceType::Topic, "orders-"),
                AccessControlEntry::deny("User:bob", "10.0.0.1", AclOperation::Write),
            ),
        }
    }

    #[test]
    fn record_round_trip() {
        let a = sample();
        let r = a.to_record();
        assert_eq!(
            (
                r.resource_type,
                r.pattern_type,
                r.operation,
                r.permission_type
            ),
            (2, 4, 4, 2)
        );
        assert_eq!(AclWithId::from_record(&r), a);
        assert_eq!(a.to_remove_record().id, a.id);
    }

    #[test]
    fn creation_and_filters_round_trip() {
        let a = sample();
        assert_eq!(
            binding_from_creation(&creation_from_binding(&a.binding)),
            a.binding
        );
        let f = a.binding.to_filter();
        assert_eq!(
            filter_from_describe_request(&describe_request_from_filter(&f)),
            f
        );
        assert_eq!(filter_from_delete_filter(&delete_filter_from_filter(&f)), f);
        let any = AclBindingFilter::ANY;
        let req = describe_request_from_filter(&any);
        assert_eq!(req.resource_name_filter, None);
        assert_eq!(filter_from_describe_request(&req), any);
    }

    #[test]
    fn unknown_codes_become_unknown() {
        let c = AclCreation {
            resource_type: 42,
            resource_pattern_type: -7,
            operation: 99,
            permission_type: 9,
            ..Default::default()
        };
        let b = binding_from_creation(&c);
        assert_eq!(b.pattern.resource_type, ResourceType::Unknown);
        assert_eq!(b.pattern.pattern_type, PatternType::Unknown);
        assert_eq!(b.entry.operation, AclOperation::Unknown);
        assert_eq!(b.entry.permission_type, AclPermissionType::Unknown);
        let r = acl_creation_result(&b.validate().map(|_| AclCreateOutcome::AlreadyExists));
        assert_eq!(r.error_code, ErrorCode::InvalidRequest.code());
    }

    #[test]
    fn responses_group_and_report_errors() {
        let a = sample();
        let mut b2 = a.binding.clone();
        b2.entry.principal = "User:carol".into();
        let resources = describe_acls_resources(&[a.binding.clone(), b2]);
        assert_eq!(resources.len(), 1);
        assert_eq!(resources[0].acls.len(), 2);
        let err = describe_acls_response(&Err(AclError::UnknownPatternFilter));
        assert_eq!(err.error_code, ErrorCode::InvalidRequest.code());
        assert!(err.resources.is_empty());
        let del = delete_acls_filter_result(&Ok(vec![a]));
        assert_eq!(del.error_code, 0);
        assert_eq!(del.matching_acls[0].principal.as_str(), "User:bob");
    }
}
