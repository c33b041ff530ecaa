//! CreateAcls (30), DescribeAcls (29) and DeleteAcls (31) as a broker answers them: without an
//! authorizer every answer is SECURITY_DISABLED; without Cluster ALTER (DESCRIBE for
//! DescribeAcls) it is CLUSTER_AUTHORIZATION_FAILED. Creations and deletions are planned against
//! the current ACLs: the plan holds the metadata records to store and, once the broker knows
//! whether they were stored, the response.
//!
//! ```
//! use josef_authorizer::acl_apis::{plan_create_acls, refuse_create_acls};
//! use josef_authorizer::request::RequestAuth;
//! use josef_authorizer::*;
//! use josef_protocol::messages::{create_acls_request::AclCreation, CreateAclsRequest};
//! use std::sync::Arc;
//!
//! let authorizer = StandardAuthorizer::new(AuthorizerConfig::default().with_super_user("User:admin"));
//! let admin = AuthorizableRequestContext::new(KafkaPrincipal::user("admin"), "10.0.0.1", "PLAINTEXT");
//! let auth = RequestAuth::new(Some(Arc::new(authorizer.clone())), admin);
//! let req = CreateAclsRequest {
//!     creations: vec![AclCreation {
//!         resource_type: ResourceType::Topic.code(),
//!         resource_name: "orders".into(),
//!         resource_pattern_type: PatternType::Literal.code(),
//!         principal: "User:alice".into(),
//!         host: "*".into(),
//!         operation: AclOperation::Read.code(),
//!         permission_type: AclPermissionType::Allow.code(),
//!         ..Default::default()
//!     }],
//!     ..Default::default()
//! };
//! assert!(refuse_create_acls(&auth, &req).is_none());
//! let plan = plan_create_acls(&authorizer, &req, || josef_protocol::Uuid::from_u128(1));
//! assert_eq!(plan.records.len(), 1);
//! // The broker stores the records, then answers.
//! assert_eq!(plan.response(true).results[0].error_code, 0);
//! assert_ne!(plan.response(false).results[0].error_code, 0);
//! ```

use josef_metadata::MetadataRecord;
use josef_protocol::messages::create_acls_response::AclCreationResult;
use josef_protocol::messages::delete_acls_response::DeleteAclsFilterResult;
use josef_protocol::messages::{
    CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse,
};
use josef_protocol::{ErrorCode, StrBytes, Uuid};

use crate::convert::{
    acl_creation_result, bindings_from_create_request, delete_acls_filter_result,
    describe_acls_response, filter_from_describe_request, filters_from_delete_request,
    remove_record,
};
use crate::request::RequestAuth;
use crate::{AclCreateOutcome, AclError, AclOperation, AclWithId, StandardAuthorizer};

/// Why the request is refused as a whole, if it is: (code, message).
fn refusal(auth: &RequestAuth, op: AclOperation) -> Option<(i16, Option<StrBytes>)> {
    let (code, m) = if auth.authorizer.is_none() {
        (ErrorCode::SecurityDisabled, "No Authorizer is configured.")
    } else if !auth.cluster(op) {
        (
            ErrorCode::ClusterAuthorizationFailed,
            "Cluster authorization failed.",
        )
    } else {
        return None;
    };
    Some((code.code(), Some(StrBytes::from(m))))
}

fn not_stored(what: &str) -> (i16, Option<StrBytes>) {
    (
        ErrorCode::UnknownServerError.code(),
        Some(StrBytes::from(format!("The {what} could not be stored."))),
    )
}

fn creation_result((error_code, error_message): (i16, Option<StrBytes>)) -> AclCreationResult {
    AclCreationResult {
        error_code,
        error_message,
        ..Default::default()
    }
}

fn filter_result((error_code, error_message): (i16, Option<StrBytes>)) -> DeleteAclsFilterResult {
    DeleteAclsFilterResult {
        error_code,
        error_message,
        ..Default::default()
    }
}

/// The CreateAcls answer when the request is refused as a whole (no authorizer, or no Cluster
/// ALTER): one refused result per creation.
pub fn refuse_create_acls(
    auth: &RequestAuth,
    req: &CreateAclsRequest,
) -> Option<CreateAclsResponse> {
    let (code, message) = refusal(auth, AclOperation::Alter)?;
    Some(create_acls_error(req, code, message))
}

/// The CreateAcls answer with one error on every creation (refused, or not the controller).
pub fn create_acls_error(
    req: &CreateAclsRequest,
    error_code: i16,
    error_message: Option<StrBytes>,
) -> CreateAclsResponse {
    CreateAclsResponse {
        results: vec![creation_result((error_code, error_message)); req.creations.len()],
        ..Default::default()
    }
}

/// A CreateAcls request planned against the current ACLs.
#[derive(Debug, Clone)]
pub struct CreateAclsPlan {
    results: Vec<Result<AclCreateOutcome, AclError>>,
    /// The AccessControlEntryRecords to store, in request order.
    pub records: Vec<MetadataRecord>,
}

impl CreateAclsPlan {
    /// The response, once the broker knows whether [`records`](Self::records) were `stored`
    /// (if not, each ACL that would have been created is UNKNOWN_SERVER_ERROR).
    pub fn response(&self, stored: bool) -> CreateAclsResponse {
        let results = self
            .results
            .iter()
            .map(|r| match r {
                Ok(AclCreateOutcome::Created(_)) if !stored => creation_result(not_stored("ACL")),
                _ => acl_creation_result(r),
            })
            .collect();
        CreateAclsResponse {
            results,
            ..Default::default()
        }
    }
}

/// Plans `req` against `authorizer`'s ACLs, each new ACL getting an id from `new_id`.
pub fn plan_create_acls(
    authorizer: &StandardAuthorizer,
    req: &CreateAclsRequest,
    new_id: impl FnMut() -> Uuid,
) -> CreateAclsPlan {
    let plan = authorizer.plan_create(&bindings_from_create_request(req), new_id);
    let records = plan
        .new_acls
        .iter()
        .map(|a| MetadataRecord::AccessControlEntry(a.to_record()))
        .collect();
    CreateAclsPlan {
        results: plan.results,
        records,
    }
}

/// DescribeAcls, from the ACLs of `auth`'s authorizer.
pub fn describe_acls(auth: &RequestAuth, req: &DescribeAclsRequest) -> DescribeAclsResponse {
    if let Some((error_code, error_message)) = refusal(auth, AclOperation::Describe) {
        return DescribeAclsResponse {
            error_code,
            error_message,
            ..Default::default()
        };
    }
    let Some(authorizer) = &auth.authorizer else {
        return DescribeAclsResponse::default();
    };
    describe_acls_response(&authorizer.describe(&filter_from_describe_request(req)))
}

/// The DeleteAcls answer when the request is refused as a whole (no authorizer, or no Cluster
/// ALTER): one refused result per filter.
pub fn refuse_delete_acls(
    auth: &RequestAuth,
    req: &DeleteAclsRequest,
) -> Option<DeleteAclsResponse> {
    let (code, message) = refusal(auth, AclOperation::Alter)?;
    Some(delete_acls_error(req, code, message))
}

/// The DeleteAcls answer with one error on every filter (refused, or not the controller).
pub fn delete_acls_error(
    req: &DeleteAclsRequest,
    error_code: i16,
    error_message: Option<StrBytes>,
) -> DeleteAclsResponse {
    DeleteAclsResponse {
        filter_results: vec![filter_result((error_code, error_message)); req.filters.len()],
        ..Default::default()
    }
}

/// A DeleteAcls request planned against the current ACLs.
#[derive(Debug, Clone)]
pub struct DeleteAclsPlan {
    results: Vec<Result<Vec<AclWithId>, AclError>>,
    /// The RemoveAccessControlEntryRecords to store, one per ACL removed.
    pub records: Vec<MetadataRecord>,
}

impl DeleteAclsPlan {
    /// The response, once the broker knows whether [`records`](Self::records) were `stored`
    /// (if not, each filter that matched is UNKNOWN_SERVER_ERROR).
    pub fn response(&self, stored: bool) -> DeleteAclsResponse {
        let filter_results = self
            .results
            .iter()
            .map(|r| match r {
                Ok(_) if !stored => filter_result(not_stored("ACL removals")),
                _ => delete_acls_filter_result(r),
            })
            .collect();
        DeleteAclsResponse {
            filter_results,
            ..Default::default()
        }
    }
}

/// Plans `req` against `authorizer`'s ACLs.
pub fn plan_delete_acls(
    authorizer: &StandardAuthorizer,
    req: &DeleteAclsRequest,
) -> DeleteAclsPlan {
    let results = authorizer.plan_delete(&filters_from_delete_request(req));
    // An ACL two filters match is listed under both but removed once.
    let mut ids: Vec<Uuid> = results.iter().flatten().flatten().map(|a| a.id).collect();
    ids.sort();
    ids.dedup();
    let records = ids
        .into_iter()
        .map(|id| MetadataRecord::RemoveAccessControlEntry(remove_record(id)))
        .collect();
    DeleteAclsPlan { results, records }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::convert::{creation_from_binding, delete_filter_from_filter};
    use crate::{
        AccessControlEntry, AclBinding, AclBindingFilter, AuthorizableRequestContext,
        AuthorizerConfig, KafkaPrincipal, ResourcePattern, ResourceType,
    };

    fn auth(authorizer: Option<&StandardAuthorizer>, user: &str) -> RequestAuth {
        let context =
            AuthorizableRequestContext::new(KafkaPrincipal::user(user), "10.0.0.1", "PLAINTEXT");
        RequestAuth::new(authorizer.cloned().map(Arc::new), context)
    }

    fn read(topic: &str) -> AclBinding {
        AclBinding::new(
            ResourcePattern::literal(ResourceType::Topic, topic),
            AccessControlEntry::allow("User:alice", "*", AclOperation::Read),
        )
    }

    fn create_request(bindings: &[AclBinding]) -> CreateAclsRequest {
        CreateAclsRequest {
            creations: bindings.iter().map(creation_from_binding).collect(),
            ..Default::default()
        }
    }

    fn admin_authorizer() -> StandardAuthorizer {
        StandardAuthorizer::new(AuthorizerConfig::default().with_super_user("User:admin"))
    }

    #[test]
    fn refusals_answer_every_entry_with_the_reason() {
        let req = create_request(&[read("a"), read("b")]);
        let disabled = refuse_create_acls(&auth(None, "admin"), &req).unwrap();
        let codes: Vec<_> = disabled.results.iter().map(|r| r.error_code).collect();
        assert_eq!(codes, [ErrorCode::SecurityDisabled.code(); 2]);
        let authorizer = admin_authorizer();
        let denied = refuse_create_acls(&auth(Some(&authorizer), "bob"), &req).unwrap();
        let codes: Vec<_> = denied.results.iter().map(|r| r.error_code).collect();
        assert_eq!(codes, [ErrorCode::ClusterAuthorizationFailed.code(); 2]);
        let delete = DeleteAclsRequest {
            filters: vec![delete_filter_from_filter(&AclBindingFilter::ANY)],
            ..Default::default()
        };
        let denied = refuse_delete_acls(&auth(Some(&authorizer), "bob"), &delete).unwrap();
        assert_eq!(
            denied.filter_results[0].error_code,
            ErrorCode::ClusterAuthorizationFailed.code()
        );
        assert!(refuse_delete_acls(&auth(Some(&authorizer), "admin"), &delete).is_none());
        let describe = describe_acls(&auth(None, "admin"), &DescribeAclsRequest::default());
        assert_eq!(describe.error_code, ErrorCode::SecurityDisabled.code());
    }

    #[test]
    fn unstored_records_turn_successes_into_unknown_server_errors() {
        let authorizer = admin_authorizer();
        let plan = plan_create_acls(&authorizer, &create_request(&[read("a")]), || {
            Uuid::from_u128(7)
        });
        assert_eq!(plan.records.len(), 1);
        assert_eq!(plan.response(true).results[0].error_code, 0);
        assert_eq!(
            plan.response(false).results[0].error_code,
            ErrorCode::UnknownServerError.code()
        );
    }

    #[test]
    fn an_acl_two_filters_match_is_removed_once() {
        let mut authorizer = admin_authorizer();
        let mut next = 0u128;
        authorizer.create_acls(&[read("a"), read("b")], || {
            next += 1;
            Uuid::from_u128(next)
        });
        let req = DeleteAclsRequest {
            filters: vec![
                delete_filter_from_filter(&AclBindingFilter::ANY),
                delete_filter_from_filter(&read("a").to_filter()),
            ],
            ..Default::default()
        };
        let plan = plan_delete_acls(&authorizer, &req);
        assert_eq!(plan.records.len(), 2);
        let r = plan.response(true);
        assert_eq!(r.filter_results[0].matching_acls.len(), 2);
        assert_eq!(r.filter_results[1].matching_acls.len(), 1);
        let unstored = plan.response(false);
        assert!(unstored
            .filter_results
            .iter()
            .all(|f| f.error_code == ErrorCode::UnknownServerError.code()));
    }
}
