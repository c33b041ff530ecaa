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
use josef_authorizer::{AclOperation, AclWithId};
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

const SECURITY_DISABLED: &str = "No Authorizer is configured.";

/// Why the request is refused as a whole, if it is.
fn refusal(auth: &RequestAuth, op: AclOperation) -> Option<(ErrorCode, &'static str)> {
    if auth.authorizer.is_none() {
        Some((ErrorCode::SecurityDisabled, SECURITY_DISABLED))
    } else if !auth.cluster(op) {
        Some((
            ErrorCode::ClusterAuthorizationFailed,
            "Cluster authorization failed.",
        ))
    } else {
        None
    }
}

fn message(m: &str) -> Option<StrBytes> {
    Some(StrBytes::from(m))
}

/// CreateAcls.
pub async fn create(
    state: &BrokerState,
    auth: &RequestAuth,
    req: CreateAclsRequest,
    version: i16,
) -> ResponseBody {
    if let Some((code, m)) = refusal(auth, AclOperation::Alter) {
        return CreateAclsResponse {
            results: req
                .creations
                .iter()
                .map(|_| AclCreationResult {
                    error_code: code.code(),
                    error_message: message(m),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into();
    }
    if let Some(node) = &state.cluster {
        return crate::handlers::cluster::forward(node, RequestBody::CreateAcls(req), version)
            .await;
    }
    create_local(state, &req).into()
}

fn create_local(state: &BrokerState, req: &CreateAclsRequest) -> CreateAclsResponse {
    let bindings = bindings_from_create_request(req);
    let _serial = state.authorizer.write_lock.lock();
    let (Some(store), Some(authorizer)) = (
        &state.local_metadata,
        state.authorizer.get(&state.metadata_image()),
    ) else {
        return CreateAclsResponse::default();
    };
    let plan = authorizer.plan_create(&bindings, || Uuid::from_u128(rand::random()));
    let records: Vec<MetadataRecord> = plan
        .new_acls
        .iter()
        .map(|a| MetadataRecord::AccessControlEntry(a.to_record()))
        .collect();
    let written = records.is_empty() || store.append(&records).is_ok();
    CreateAclsResponse {
        results: plan
            .results
            .iter()
            .map(|r| match (r, written) {
                (Ok(josef_authorizer::AclCreateOutcome::Created(_)), false) => AclCreationResult {
                    error_code: ErrorCode::UnknownServerError.code(),
                    error_message: message("The ACL could not be stored."),
                    ..Default::default()
                },
                _ => acl_creation_result(r),
            })
            .collect(),
        ..Default::default()
    }
}

/// DescribeAcls: answered from this broker's image on every kind of node.
pub fn describe(auth: &RequestAuth, req: DescribeAclsRequest) -> DescribeAclsResponse {
    if let Some((code, m)) = refusal(auth, AclOperation::Describe) {
        return DescribeAclsResponse {
            error_code: code.code(),
            error_message: message(m),
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
    if let Some((code, m)) = refusal(auth, AclOperation::Alter) {
        return DeleteAclsResponse {
            filter_results: req
                .filters
                .iter()
                .map(|_| DeleteAclsFilterResult {
                    error_code: code.code(),
                    error_message: message(m),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into();
    }
    if let Some(node) = &state.cluster {
        return crate::handlers::cluster::forward(node, RequestBody::DeleteAcls(req), version)
            .await;
    }
    delete_local(state, &req).into()
}

fn delete_local(state: &BrokerState, req: &DeleteAclsRequest) -> DeleteAclsResponse {
    let filters = filters_from_delete_request(req);
    let _serial = state.authorizer.write_lock.lock();
    let (Some(store), Some(authorizer)) = (
        &state.local_metadata,
        state.authorizer.get(&state.metadata_image()),
    ) else {
        return DeleteAclsResponse::default();
    };
    let results: Vec<Result<Vec<AclWithId>, _>> = authorizer.plan_delete(&filters);
    let mut ids: Vec<Uuid> = results.iter().flatten().flatten().map(|a| a.id).collect();
    ids.sort();
    ids.dedup();
    let records: Vec<MetadataRecord> = ids
        .into_iter()
        .map(|id| MetadataRecord::RemoveAccessControlEntry(remove_record(id)))
        .collect();
    let written = records.is_empty() || store.append(&records).is_ok();
    DeleteAclsResponse {
        filter_results: results
            .iter()
            .map(|r| match (r, written) {
                (Ok(_), false) => DeleteAclsFilterResult {
                    error_code: ErrorCode::UnknownServerError.code(),
                    error_message: message("The ACL removals could not be stored."),
                    ..Default::default()
                },
                _ => delete_acls_filter_result(r),
            })
            .collect(),
        ..Default::default()
    }
}
