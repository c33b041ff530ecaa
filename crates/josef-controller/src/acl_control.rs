//! Kafka's `AclControlManager`: CreateAcls and DeleteAcls as AccessControlEntryRecord and
//! RemoveAccessControlEntryRecord, validated and planned by josef-authorizer (the same code a
//! single-node broker runs), and the ACLs replayed from the log.
//!
//! The requester's Cluster ALTER is checked by the broker that forwarded the request, as Kafka's
//! `ControllerApis` does with the Envelope's principal.

use josef_authorizer::acl_apis::{
    create_acls_error, delete_acls_error, plan_create_acls, plan_delete_acls,
};
use josef_authorizer::{AclWithId, AuthorizerConfig, StandardAuthorizer};
use josef_protocol::messages::{
    CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
};
use josef_protocol::metadata_records::{AccessControlEntryRecord, RemoveAccessControlEntryRecord};
use josef_protocol::StrBytes;

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
            return ControllerResult::response(create_acls_error(
                req,
                e.code(),
                not_controller_message(&e),
            ));
        }
        let rng = &mut self.rng;
        let plan = plan_create_acls(&self.acls.acls, req, || rng.topic_id());
        // The response is sent once the records are committed, so it answers them as stored.
        let response = plan.response(true);
        ControllerResult::of(plan.records, response)
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
            return ControllerResult::response(delete_acls_error(
                req,
                e.code(),
                not_controller_message(&e),
            ));
        }
        let plan = plan_delete_acls(&self.acls.acls, req);
        let response = plan.response(true);
        ControllerResult::of(plan.records, response)
    }
}
