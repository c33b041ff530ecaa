//! Kafka's `AclControlManager`: CreateAcls and DeleteAcls as AccessControlEntryRecord and
//! RemoveAccessControlEntryRecord, validated and planned by josef-authorizer (the same code a
//! single-node broker runs), and the ACLs replayed from the log.
//!
//! The requester's Cluster ALTER is checked by the broker that forwarded the request, as Kafka's
//! `ControllerApis` does with the Envelope's principal.

use josef_authorizer::convert::{
    acl_creation_result, bindings_from_create_request, delete_acls_filter_result,
    filters_from_delete_request, remove_record,
};
use josef_authorizer::{AclError, AclWithId, AuthorizerConfig, StandardAuthorizer};
use josef_protocol::messages::create_acls_response::AclCreationResult;
use josef_protocol::messages::delete_acls_response::DeleteAclsFilterResult;
use josef_protocol::messages::{
    CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
};
use josef_protocol::metadata_records::{AccessControlEntryRecord, RemoveAccessControlEntryRecord};
use josef_protocol::{StrBytes, Uuid};

use crate::records::MetadataRecord;
use crate::{ApiError, Controller, ControllerResult, ReplayError, WriteContext};

/// The committed ACLs, indexed as the authorizer indexes them (its rules are not used here).
#[derive(Debug, Clone, Default)]
pub(crate) struct AclControlManager {
    acls: StandardAuthorizer,
}

impl AclControlManager {
    pub(crate) fn new() -> Self {
        AclControlManager {
            acls: StandardAuthorizer::new(AuthorizerConfig::default()),
        }
    }

    pub(crate) fn check_add(&self, r: &AccessControlEntryRecord) -> Result<(), ReplayError> {
        if self.acls.acl(&r.id).is_some() {
            return Err(ReplayError::Invalid(format!(
                "an ACL with id {} already exists",
                r.id
            )));
        }
        Ok(())
    }

    pub(crate) fn replay_add(&mut self, r: &AccessControlEntryRecord) {
        // Only bindings the controller would write are indexed (Kafka fails the replay of others;
        // the image keeps the record either way, so brokers and controller agree on the log).
        let _ = self.acls.replay_access_control_entry(r);
    }

    pub(crate) fn replay_remove(&mut self, r: &RemoveAccessControlEntryRecord) {
        let _ = self.acls.replay_remove_access_control_entry(r);
    }
}

fn not_controller_message(e: &ApiError) -> Option<StrBytes> {
    Some(StrBytes::from(e.message.as_str()))
}

impl Controller {
    /// The committed ACLs, by id.
    pub fn acls(&self) -> impl Iterator<Item = AclWithId> + '_ {
        self.acls.acls.acls().map(|(id, b)| AclWithId {
            id: *id,
            binding: b.clone(),
        })
    }

    /// CreateAcls (API 30; Kafka's `AclControlManager.createAcls`): one AccessControlEntryRecord
    /// per new ACL, with a fresh random id; INVALID_REQUEST for a binding Kafka refuses; a binding
    /// equal to an existing ACL (or to an earlier one of the request) succeeds with no record.
    pub fn create_acls(
        &mut self,
        _ctx: WriteContext,
        req: &CreateAclsRequest,
    ) -> ControllerResult<CreateAclsResponse> {
        if let Err(e) = self.check_active() {
            return ControllerResult::response(CreateAclsResponse {
                results: req
                    .creations
                    .iter()
                    .map(|_| AclCreationResult {
                        error_code: e.code(),
                        error_message: not_controller_message(&e),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            });
        }
        let bindings = bindings_from_create_request(req);
        let rng = &mut self.rng;
        let plan = self.acls.acls.plan_create(&bindings, || rng.topic_id());
        let records = plan
            .new_acls
            .iter()
            .map(|a| MetadataRecord::AccessControlEntry(a.to_record()))
            .collect();
        ControllerResult::of(
            records,
            CreateAclsResponse {
                results: plan.results.iter().map(acl_creation_result).collect(),
                ..Default::default()
            },
        )
    }

    /// DeleteAcls (API 31; Kafka's `AclControlManager.deleteAcls`): per filter, the ACLs it
    /// matches, each removed by one RemoveAccessControlEntryRecord (once, if several filters
    /// match it); INVALID_REQUEST for a filter with UNKNOWN fields.
    pub fn delete_acls(
        &mut self,
        _ctx: WriteContext,
        req: &DeleteAclsRequest,
    ) -> ControllerResult<DeleteAclsResponse> {
        if let Err(e) = self.check_active() {
            return ControllerResult::response(DeleteAclsResponse {
                filter_results: req
                    .filters
                    .iter()
                    .map(|_| DeleteAclsFilterResult {
                        error_code: e.code(),
                        error_message: not_controller_message(&e),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            });
        }
        let filters = filters_from_delete_request(req);
        let results: Vec<Result<Vec<AclWithId>, AclError>> = self.acls.acls.plan_delete(&filters);
        let mut removed: Vec<Uuid> = results.iter().flatten().flatten().map(|a| a.id).collect();
        removed.sort();
        removed.dedup();
        let records = removed
            .into_iter()
            .map(|id| MetadataRecord::RemoveAccessControlEntry(remove_record(id)))
            .collect();
        ControllerResult::of(
            records,
            DeleteAclsResponse {
                filter_results: results.iter().map(delete_acls_filter_result).collect(),
                ..Default::default()
            },
        )
    }
}
