//! CreateAcls (30), DescribeAcls (29) and DeleteAcls (31). Without an authorizer every answer is
//! SECURITY_DISABLED; without Cluster ALTER (DESCRIBE for DescribeAcls) it is
//! CLUSTER_AUTHORIZATION_FAILED. A single node plans with josef-authorizer and appends the records
//! to `local_metadata`; a cluster node forwards creations and deletions to the active controller,
//! which plans the same way and commits the records to the metadata log.

use josef_authorizer::convert::{
    acl_creation_result, bindings_from_create_request, delete_acls_filter_result,
    describe_acls_response, filter_from_describe_request, filters_from_delete_request,
    remove_record,
};
use josef_authorizer::{AclCreateOutcome, AclOperation, StandardAuthorizer};
use josef_metadata::MetadataRecord;
use josef_protocol::messages::create_acls_response::AclCreationResult;
use josef_protocol::messages::delete_acls_response::DeleteAclsFilterResult;
use josef_protocol::messages::{
    CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse,
};
use josef_protocol::{ErrorCode, RequestBody, ResponseBody, StrBytes, Uuid};

use super::RequestAuth;
use crate::state::BrokerState;

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

/// On a single node, under the ACL write lock: `plan` with the current ACLs, then the records it
/// returns appended to the local store. The answer, and whether the records were stored.
fn write_local<T>(
    state: &BrokerState,
    plan: impl FnOnce(&StandardAuthorizer) -> (T, Vec<MetadataRecord>),
) -> Option<(T, bool)> {
    let _serial = state.authorizer.write_lock.lock();
    let store = state.local_metadata.as_ref()?;
    let authorizer = state.authorizer.get(&state.metadata_image())?;
    let (answer, records) = plan(&authorizer);
    let written = records.is_empty() || store.append(&records).is_ok();
    Some((answer, written))
}

fn not_stored(what: &str) -> (i16, Option<StrBytes>) {
    (
        ErrorCode::UnknownServerError.code(),
        Some(StrBytes::from(format!("The {what} could not be stored."))),
    )
}

/// CreateAcls.
pub async fn create(
    state: &BrokerState,
    auth: &RequestAuth,
    req: CreateAclsRequest,
    version: i16,
) -> ResponseBody {
    let result = |(error_code, error_message)| AclCreationResult {
        error_code,
        error_message,
        ..Default::default()
    };
    if let Some(refused) = refusal(auth, AclOperation::Alter) {
        let results = req
            .creations
            .iter()
            .map(|_| result(refused.clone()))
            .collect();
        return CreateAclsResponse {
            results,
            ..Default::default()
        }
        .into();
    }
    if let Some(node) = &state.cluster {
        let body = RequestBody::CreateAcls(req);
        return crate::handlers::cluster::forward(node, body, version).await;
    }
    let bindings = bindings_from_create_request(&req);
    let written = write_local(state, |authorizer| {
        let plan = authorizer.plan_create(&bindings, || Uuid::from_u128(rand::random()));
        let records = plan
            .new_acls
            .iter()
            .map(|a| MetadataRecord::AccessControlEntry(a.to_record()))
            .collect();
        (plan.results, records)
    });
    let Some((results, written)) = written else {
        return CreateAclsResponse::default().into();
    };
    let results = results
        .iter()
        .map(|r| match r {
            Ok(AclCreateOutcome::Created(_)) if !written => result(not_stored("ACL")),
            _ => acl_creation_result(r),
        })
        .collect();
    CreateAclsResponse {
        results,
        ..Default::default()
    }
    .into()
}

/// DescribeAcls: answered from this broker's image on every kind of node.
pub fn describe(auth: &RequestAuth, req: DescribeAclsRequest) -> DescribeAclsResponse {
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
    describe_acls_response(&authorizer.describe(&filter_from_describe_request(&req)))
}

/// DeleteAcls.
pub async fn delete(
    state: &BrokerState,
    auth: &RequestAuth,
    req: DeleteAclsRequest,
    version: i16,
) -> ResponseBody {
    let result = |(error_code, error_message)| DeleteAclsFilterResult {
        error_code,
        error_message,
        ..Default::default()
    };
    if let Some(refused) = refusal(auth, AclOperation::Alter) {
        let filter_results = req
            .filters
            .iter()
            .map(|_| result(refused.clone()))
            .collect();
        return DeleteAclsResponse {
            filter_results,
            ..Default::default()
        }
        .into();
    }
    if let Some(node) = &state.cluster {
        let body = RequestBody::DeleteAcls(req);
        return crate::handlers::cluster::forward(node, body, version).await;
    }
    let filters = filters_from_delete_request(&req);
    let written = write_local(state, |authorizer| {
        let results = authorizer.plan_delete(&filters);
        // An ACL two filters match is listed under both but removed once.
        let mut ids: Vec<Uuid> = results.iter().flatten().flatten().map(|a| a.id).collect();
        ids.sort();
        ids.dedup();
        let records = ids
            .into_iter()
            .map(|id| MetadataRecord::RemoveAccessControlEntry(remove_record(id)))
            .collect();
        (results, records)
    });
    let Some((results, written)) = written else {
        return DeleteAclsResponse::default().into();
    };
    let filter_results = results
        .iter()
        .map(|r| match r {
            Ok(_) if !written => result(not_stored("ACL removals")),
            _ => delete_acls_filter_result(r),
        })
        .collect();
    DeleteAclsResponse {
        filter_results,
        ..Default::default()
    }
    .into()
}
