//! A [`StandardAuthorizer`] kept in step with the ACLs of a [`MetadataImage`], as a broker's
//! authorizer follows the metadata log (ACL records come from the metadata log on a cluster node,
//! from a local metadata store on a single node).

use std::sync::Arc;

use josef_metadata::{MetadataImage, MetadataProvenance};
use josef_protocol::Uuid;

use crate::{AclError, AclWithId, AuthorizerConfig, StandardAuthorizer};

/// An ACL record of the image that the authorizer does not hold.
#[derive(Debug, Clone, PartialEq)]
pub struct AclNotApplied {
    /// The ACL's id.
    pub id: Uuid,
    /// Why it does not fit.
    pub error: AclError,
}

/// The authorizer of the image last seen: rebuilt from nothing on the first image, then updated
/// in place (only the ACLs that changed) when a later image has another provenance. Snapshots
/// handed out earlier are left as they were (copy on write).
#[derive(Debug, Clone)]
pub struct AclFollower {
    config: AuthorizerConfig,
    current: Option<(MetadataProvenance, Arc<StandardAuthorizer>)>,
}

impl AclFollower {
    /// A follower for an authorizer configured with `config`, holding no ACLs until the first
    /// [`AclFollower::follow`].
    pub fn new(config: AuthorizerConfig) -> Self {
        AclFollower {
            config,
            current: None,
        }
    }

    /// The authorizer with the ACLs of `image`, and the ACL records of the image it could not
    /// take (empty unless the image holds a record its controller should have refused). The same
    /// `Arc` comes back while the image's provenance stays the same.
    pub fn follow(
        &mut self,
        image: &MetadataImage,
    ) -> (Arc<StandardAuthorizer>, Vec<AclNotApplied>) {
        let provenance = image.provenance();
        let mut not_applied = Vec::new();
        let (seen, authorizer) = self.current.get_or_insert_with(|| {
            let mut authorizer = StandardAuthorizer::new(self.config.clone());
            not_applied = sync_acls(&mut authorizer, image);
            (provenance, Arc::new(authorizer))
        });
        if *seen != provenance {
            not_applied = sync_acls(Arc::make_mut(authorizer), image);
            *seen = provenance;
        }
        (authorizer.clone(), not_applied)
    }
}

/// Makes the authorizer's ACLs those of the image: removes the ids the image no longer has, adds
/// the ones it gained (an ACL never changes under its id).
fn sync_acls(authorizer: &mut StandardAuthorizer, image: &MetadataImage) -> Vec<AclNotApplied> {
    let acls = image.acls();
    let gone: Vec<_> = authorizer
        .acls()
        .filter(|(id, _)| !acls.contains_key(id))
        .map(|(id, _)| *id)
        .collect();
    for id in gone {
        let _ = authorizer.remove_acl(&id);
    }
    let mut not_applied = Vec::new();
    for (id, record) in acls {
        if authorizer.acl(id).is_some() {
            continue;
        }
        let acl = AclWithId::from_record(record);
        if let Err(error) = authorizer.add_acl(acl.id, acl.binding) {
            not_applied.push(AclNotApplied { id: *id, error });
        }
    }
    not_applied
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AclOperation, AclPermissionType, PatternType, ResourceType};
    use josef_metadata::{MetadataDelta, MetadataRecord};
    use josef_protocol::metadata_records::{
        AccessControlEntryRecord, RemoveAccessControlEntryRecord,
    };

    fn acl(id: u128, principal: &str) -> MetadataRecord {
        MetadataRecord::AccessControlEntry(AccessControlEntryRecord {
            id: Uuid::from_u128(id),
            resource_type: ResourceType::Topic.code(),
            resource_name: "t".into(),
            pattern_type: PatternType::Literal.code(),
            principal: principal.into(),
            host: "*".into(),
            operation: AclOperation::Read.code(),
            permission_type: AclPermissionType::Allow.code(),
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
        let mut b = AclFollower::new(Default::default());
        let i1 = image(&MetadataImage::empty(), &[acl(1, "User:a")], 1);
        let (a1, not_applied) = b.follow(&i1);
        assert!(not_applied.is_empty());
        assert_eq!(a1.acl_count(), 1);
        assert!(Arc::ptr_eq(&a1, &b.follow(&i1).0));
        let remove = MetadataRecord::RemoveAccessControlEntry(RemoveAccessControlEntryRecord {
            id: Uuid::from_u128(1),
            ..Default::default()
        });
        let i2 = image(&i1, &[remove, acl(2, "User:b"), acl(3, "User:c")], 2);
        let (a2, not_applied) = b.follow(&i2);
        assert!(not_applied.is_empty());
        assert_eq!(a2.acl_count(), 2);
        assert!(a2.acl(&Uuid::from_u128(1)).is_none());
        // The earlier snapshot a request may still hold is unchanged.
        assert_eq!(a1.acl_count(), 1);
    }

    #[test]
    fn a_record_that_does_not_fit_is_reported_and_left_out() {
        let mut b = AclFollower::new(Default::default());
        // An ACL on a resource without a name is not one the controller writes.
        let mut bad = acl(2, "User:b");
        if let MetadataRecord::AccessControlEntry(r) = &mut bad {
            r.resource_name = "".into();
        }
        let i1 = image(&MetadataImage::empty(), &[acl(1, "User:a"), bad], 1);
        let (a1, not_applied) = b.follow(&i1);
        assert_eq!(a1.acl_count(), 1);
        assert_eq!(not_applied.len(), 1);
        assert_eq!(not_applied[0].id, Uuid::from_u128(2));
        assert_eq!(not_applied[0].error, AclError::EmptyResourceName);
    }
}
