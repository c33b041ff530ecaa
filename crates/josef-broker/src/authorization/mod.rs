//! Authorization (Kafka's `authorizer.class.name` with its StandardAuthorizer): the broker's one
//! [`StandardAuthorizer`], kept in step with the ACLs of the metadata image, and the checks each
//! API makes before (and after) its handler runs.
//!
//! - [`BrokerAuthorizer`]: the authorizer of this broker, updated from
//!   [`BrokerState::metadata_image`] when the image moves on (ACL records come from the metadata
//!   log on a cluster node, from `local_metadata` on a single node).
//! - [`RequestAuth`]: who asks (principal, host, listener) and what they may do; with no
//!   authorizer configured everything is allowed.
//! - `enforce`: per API, the requirement of `josef_authorizer::api_acls` applied to a request;
//!   denied topics / partitions / groups are taken out before the handler runs and answered with
//!   Kafka's error after it, so handlers stay unaware of ACLs.
//! - `acls`: CreateAcls, DescribeAcls and DeleteAcls.

use std::sync::Arc;

use josef_authorizer::{
    authorized_operations, AclOperation, AclWithId, AuthorizableRequestContext, ResourceType,
    StandardAuthorizer, CLUSTER_NAME,
};
use josef_metadata::{MetadataImage, MetadataProvenance};
use parking_lot::Mutex;

use crate::connection::ConnectionInfo;
use crate::state::BrokerState;

pub(crate) mod acls;
pub mod config;
pub(crate) mod enforce;

/// The broker's authorizer: `None` inside when `authorizer.class.name` is empty.
pub struct BrokerAuthorizer {
    config: Option<josef_authorizer::AuthorizerConfig>,
    current: Mutex<Option<(MetadataProvenance, Arc<StandardAuthorizer>)>>,
    /// Serializes a single node's ACL writes: each plans against the ACLs the previous wrote.
    pub(crate) write_lock: Mutex<()>,
}

impl BrokerAuthorizer {
    /// An authorizer for `config` (`None`: none configured), with no ACLs until the first
    /// [`BrokerAuthorizer::get`].
    pub fn new(config: Option<josef_authorizer::AuthorizerConfig>) -> Self {
        BrokerAuthorizer {
            config,
            current: Mutex::new(None),
            write_lock: Mutex::new(()),
        }
    }

    /// True if an authorizer is configured.
    pub fn is_enabled(&self) -> bool {
        self.config.is_some()
    }

    /// The authorizer with the ACLs of `image`, or `None` without one configured. Updated in
    /// place (only the ACLs that changed) when the image's provenance differs from the last one
    /// seen; otherwise the same `Arc` is returned.
    pub fn get(&self, image: &MetadataImage) -> Option<Arc<StandardAuthorizer>> {
        let config = self.config.as_ref()?;
        let provenance = image.provenance();
        let mut current = self.current.lock();
        match current.as_mut() {
            Some((seen, authorizer)) if *seen == provenance => return Some(authorizer.clone()),
            Some((seen, authorizer)) => {
                sync_acls(Arc::make_mut(authorizer), image);
                *seen = provenance;
            }
            None => {
                let mut authorizer = StandardAuthorizer::new(config.clone());
                sync_acls(&mut authorizer, image);
                *current = Some((provenance, Arc::new(authorizer)));
            }
        }
        current.as_ref().map(|(_, a)| a.clone())
    }
}

/// Makes the authorizer's ACLs those of the image: removes the ids the image no longer has, adds
/// the ones it gained (an ACL never changes under its id).
fn sync_acls(authorizer: &mut StandardAuthorizer, image: &MetadataImage) {
    let acls = image.acls();
    let gone: Vec<_> = authorizer
        .acls()
        .filter(|(id, _)| !acls.contains_key(id))
        .map(|(id, _)| *id)
        .collect();
    for id in gone {
        let _ = authorizer.remove_acl(&id);
    }
    for (id, record) in acls {
        if authorizer.acl(id).is_some() {
            continue;
        }
        let acl = AclWithId::from_record(record);
        if let Err(e) = authorizer.add_acl(acl.id, acl.binding) {
            // The controller validated it; a record that still does not fit is left out rather
            // than failing every request.
            tracing::warn!(id = %id, error = %e, "ACL record not applied");
        }
    }
}

/// Who is asking, and the authorizer to ask (`None`: none configured, everything allowed).
pub struct RequestAuth {
    /// The authorizer, when one is configured.
    pub authorizer: Option<Arc<StandardAuthorizer>>,
    /// The principal, host and listener of the request.
    pub context: AuthorizableRequestContext,
}

impl RequestAuth {
    /// The authorization context of a request on `conn`.
    pub fn of(state: &BrokerState, conn: &ConnectionInfo) -> RequestAuth {
        let authorizer = if state.authorizer.is_enabled() {
            state.authorizer.get(&state.metadata_image())
        } else {
            None
        };
        RequestAuth {
            authorizer,
            context: AuthorizableRequestContext::from_addr(
                conn.principal.clone(),
                conn.peer.ip(),
                conn.listener.as_str(),
            ),
        }
    }

    /// True if `operation` on the resource is allowed (always without an authorizer).
    pub fn allowed(
        &self,
        operation: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        self.authorizer.as_ref().map_or(true, |a| {
            a.is_allowed(&self.context, operation, resource_type, name)
        })
    }

    /// `operation` on the cluster resource.
    pub fn cluster(&self, operation: AclOperation) -> bool {
        self.allowed(operation, ResourceType::Cluster, CLUSTER_NAME)
    }

    /// `operation` on a topic.
    pub fn topic(&self, operation: AclOperation, name: &str) -> bool {
        self.allowed(operation, ResourceType::Topic, name)
    }

    /// `operation` on a group.
    pub fn group(&self, operation: AclOperation, name: &str) -> bool {
        self.allowed(operation, ResourceType::Group, name)
    }

    /// `operation` on a transactional id.
    pub fn transactional_id(&self, operation: AclOperation, name: &str) -> bool {
        self.allowed(operation, ResourceType::TransactionalId, name)
    }

    /// Kafka's `authorizeByResourceType`: `operation` on some resource of the type.
    pub fn any_of_type(&self, operation: AclOperation, resource_type: ResourceType) -> bool {
        self.authorizer.as_ref().map_or(true, |a| {
            a.authorize_by_resource_type(&self.context, operation, resource_type)
                .is_ok_and(|r| r.is_allowed())
        })
    }

    /// KIP-430: the authorized-operations bit field of a resource (every supported operation of
    /// the type without an authorizer).
    pub fn operations(&self, resource_type: ResourceType, name: &str) -> i32 {
        authorized_operations(
            self.authorizer.as_deref(),
            &self.context,
            resource_type,
            name,
        )
        .bits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use josef_metadata::{MetadataDelta, MetadataRecord};
    use josef_protocol::metadata_records::{
        AccessControlEntryRecord, RemoveAccessControlEntryRecord,
    };

    fn acl(id: u128, principal: &str) -> MetadataRecord {
        MetadataRecord::AccessControlEntry(AccessControlEntryRecord {
            id: josef_protocol::Uuid::from_u128(id),
            resource_type: ResourceType::Topic.code(),
            resource_name: "t".into(),
            pattern_type: josef_authorizer::PatternType::Literal.code(),
            principal: principal.into(),
            host: "*".into(),
            operation: AclOperation::Read.code(),
            permission_type: josef_authorizer::AclPermissionType::Allow.code(),
            ..Default::default()
        })
    }

    fn image(base: &MetadataImage, records: &[MetadataRecord], offset: u64) -> MetadataImage {
        let mut d = MetadataDelta::new(base);
        for r in records {
            d.replay(r).unwrap();
        }
        d.apply(MetadataProvenance {
            last_offset: offset,
            last_epoch: 1,
        })
    }

    #[test]
    fn follows_the_image_and_reuses_the_authorizer_while_it_stands_still() {
        let b = BrokerAuthorizer::new(Some(Default::default()));
        let i1 = image(&MetadataImage::empty(), &[acl(1, "User:a")], 1);
        let a1 = b.get(&i1).unwrap();
        assert_eq!(a1.acl_count(), 1);
        assert!(Arc::ptr_eq(&a1, &b.get(&i1).unwrap()));
        let remove = MetadataRecord::RemoveAccessControlEntry(RemoveAccessControlEntryRecord {
            id: josef_protocol::Uuid::from_u128(1),
            ..Default::default()
        });
        let i2 = image(&i1, &[remove, acl(2, "User:b"), acl(3, "User:c")], 2);
        let a2 = b.get(&i2).unwrap();
        assert_eq!(a2.acl_count(), 2);
        assert!(a2.acl(&josef_protocol::Uuid::from_u128(1)).is_none());
        // The earlier snapshot a request may still hold is unchanged.
        assert_eq!(a1.acl_count(), 1);
    }

    #[test]
    fn without_a_config_there_is_no_authorizer() {
        let b = BrokerAuthorizer::new(None);
        assert!(!b.is_enabled());
        assert!(b.get(&MetadataImage::empty()).is_none());
    }
}
