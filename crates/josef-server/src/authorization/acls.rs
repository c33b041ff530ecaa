//! CreateAcls (30), DescribeAcls (29) and DeleteAcls (31): answered by
//! [`josef_authorizer::acl_apis`]. A single node plans there and appends the records to
//! `local_metadata`; a cluster node forwards creations and deletions to the active controller,
//! which plans the same way and commits the records to the metadata log.

use josef_authorizer::acl_apis::{
    describe_acls, plan_create_acls, plan_delete_acls, refuse_create_acls, refuse_delete_acls,
};
use josef_authorizer::request::RequestAuth;
use josef_authorizer::StandardAuthorizer;
use josef_metadata::MetadataRecord;
use josef_protocol::messages::{
    CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse,
};
use josef_protocol::{RequestBody, ResponseBody, Uuid};

use crate::state::BrokerState;

/// On a single node, under the ACL write lock: `plan` with the current ACLs, then the records it
/// returns appended to the local store. The plan, and whether its records were stored.
fn write_local<T>(
    state: &BrokerState,
    plan: impl FnOnce(&StandardAuthorizer) -> T,
    records: impl Fn(&T) -> &[MetadataRecord],
) -> Option<(T, bool)> {
    let _serial = state.authorizer.write_lock.lock();
    let store = state.local_metadata.as_ref()?;
    let authorizer = state.authorizer.get(&state.metadata_image())?;
    let planned = plan(&authorizer);
    let records = records(&planned);
    let written = records.is_empty() || store.append(records).is_ok();
    Some((planned, written))
}

/// CreateAcls.
pub async fn create(
    state: &BrokerState,
    auth: &RequestAuth,
    req: CreateAclsRequest,
    version: i16,
) -> ResponseBody {
    if let Some(refused) = refuse_create_acls(auth, &req) {
        return refused.into();
    }
    if let Some(node) = &state.cluster {
        let body = RequestBody::CreateAcls(req);
        return crate::handlers::cluster::forward(node, body, version).await;
    }
    let new_id = || Uuid::from_u128(rand::random());
    match write_local(state, |a| plan_create_acls(a, &req, new_id), |p| &p.records) {
        Some((plan, written)) => plan.response(written).into(),
        None => CreateAclsResponse::default().into(),
    }
}

/// DescribeAcls: answered from this broker's image on every kind of node.
pub fn describe(auth: &RequestAuth, req: DescribeAclsRequest) -> DescribeAclsResponse {
    describe_acls(auth, &req)
}

/// DeleteAcls.
pub async fn delete(
    state: &BrokerState,
    auth: &RequestAuth,
    req: DeleteAclsRequest,
    version: i16,
) -> ResponseBody {
    if let Some(refused) = refuse_delete_acls(auth, &req) {
        return refused.into();
    }
    if let Some(node) = &state.cluster {
        let body = RequestBody::DeleteAcls(req);
        return crate::handlers::cluster::forward(node, body, version).await;
    }
    match write_local(state, |a| plan_delete_acls(a, &req), |p| &p.records) {
        Some((plan, written)) => plan.response(written).into(),
        None => DeleteAclsResponse::default().into(),
    }
}
