//! Who is asking, and the authorizer to ask.

use std::sync::Arc;

use crate::{
    authorized_operations, AclOperation, AuthorizableRequestContext, ResourceType,
    StandardAuthorizer, CLUSTER_NAME,
};

/// A request's principal, host and listener with the authorizer to ask (`None`: none is
/// configured, and everything is allowed).
#[derive(Debug, Clone)]
pub struct RequestAuth {
    /// The authorizer, when one is configured.
    pub authorizer: Option<Arc<StandardAuthorizer>>,
    /// The principal, host and listener of the request.
    pub context: AuthorizableRequestContext,
}

impl RequestAuth {
    /// The authorization of a request from `context`, asking `authorizer`.
    pub fn new(
        authorizer: Option<Arc<StandardAuthorizer>>,
        context: AuthorizableRequestContext,
    ) -> Self {
        RequestAuth {
            authorizer,
            context,
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
