//! Authorization (Kafka's `authorizer.class.name` with its StandardAuthorizer): the broker's one
//! authorizer, kept in step with the ACLs of the metadata image, and the glue to
//! [`josef_authorizer::request`] (the checks each API makes before and after its handler runs).
//!
//! - [`BrokerAuthorizer`]: the authorizer of this broker, a [`josef_authorizer::AclFollower`] of
//!   [`BrokerState::metadata_image`] (ACL records come from the metadata log on a cluster node,
//!   from `local_metadata` on a single node).
//! - [`request_auth`]: who asks (principal, host, listener) and the authorizer to ask.
//! - [`before`] / [`after`]: the library's checks mapped to the broker's [`Reply`].
//! - `acls`: CreateAcls, DescribeAcls and DeleteAcls (stored locally or forwarded).

use std::sync::Arc;

use josef_authorizer::request::{self, Before, BrokerView, RequestAuth};
use josef_authorizer::{AclFollower, AuthorizableRequestContext, StandardAuthorizer};
use josef_metadata::MetadataImage;
use josef_protocol::{RequestBody, RequestHeader, Uuid};
use parking_lot::Mutex;

use crate::connection::ConnectionInfo;
use crate::dispatch::Reply;
use crate::state::BrokerState;

pub(crate) mod acls;

pub use josef_authorizer::request::After;

/// The broker's authorizer: `None` inside when `authorizer.class.name` is empty.
pub struct BrokerAuthorizer {
    follower: Option<Mutex<AclFollower>>,
    /// Serializes a single node's ACL writes: each plans against the ACLs the previous wrote.
    pub(crate) write_lock: Mutex<()>,
}

impl BrokerAuthorizer {
    /// An authorizer for `config` (`None`: none configured), with no ACLs until the first
    /// [`BrokerAuthorizer::get`].
    pub fn new(config: Option<josef_authorizer::AuthorizerConfig>) -> Self {
        BrokerAuthorizer {
            follower: config.map(|c| Mutex::new(AclFollower::new(c))),
            write_lock: Mutex::new(()),
        }
    }

    /// True if an authorizer is configured.
    pub fn is_enabled(&self) -> bool {
        self.follower.is_some()
    }

    /// The authorizer with the ACLs of `image`, or `None` without one configured.
    pub fn get(&self, image: &MetadataImage) -> Option<Arc<StandardAuthorizer>> {
        let (authorizer, not_applied) = self.follower.as_ref()?.lock().follow(image);
        for n in not_applied {
            // The controller validated it; a record that still does not fit is left out rather
            // than failing every request.
            tracing::warn!(id = %n.id, error = %n.error, "ACL record not applied");
        }
        Some(authorizer)
    }
}

/// The authorization of a request on `conn`.
pub fn request_auth(state: &BrokerState, conn: &ConnectionInfo) -> RequestAuth {
    let authorizer = if state.authorizer.is_enabled() {
        state.authorizer.get(&state.metadata_image())
    } else {
        None
    };
    RequestAuth::new(
        authorizer,
        AuthorizableRequestContext::from_addr(
            conn.principal.clone(),
            conn.peer.ip(),
            conn.listener.as_str(),
        ),
    )
}

impl BrokerView for BrokerState {
    fn topic_name(&self, id: Uuid) -> Option<String> {
        match &self.cluster {
            Some(node) => node.log.image().topic_by_id(id).map(|t| t.name.clone()),
            None => self.topics.get_by_id(&id).map(|t| t.name.clone()),
        }
    }

    fn topic_exists(&self, name: &str) -> bool {
        match &self.cluster {
            Some(node) => node.log.image().topic_by_name(name).is_some(),
            None => self.topics.get(name).is_some(),
        }
    }

    fn auto_create_topics_enable(&self) -> bool {
        self.config.auto_create_topics_enable
    }
}

/// What [`before`] decided.
pub(crate) enum Checked {
    /// Run the handler on what is left, then [`after`].
    Run(RequestBody, After),
    /// Reply at once.
    Reply(Reply),
}

/// The checks of `body` before its handler runs.
pub(crate) fn before(
    state: &BrokerState,
    auth: &RequestAuth,
    header: &RequestHeader,
    body: RequestBody,
) -> Checked {
    match request::before(state, auth, header, body) {
        Before::Run(body, after) => Checked::Run(body, after),
        Before::Answer(body) => Checked::Reply(Reply::Body(body)),
        Before::Close(reason) => Checked::Reply(Reply::Close(reason.into())),
    }
}

/// Applies `after` to the handler's reply.
pub(crate) fn after(state: &BrokerState, auth: &RequestAuth, after: After, reply: Reply) -> Reply {
    match reply {
        Reply::None => match after.close_if_unanswered() {
            Some(reason) => Reply::Close(reason.into()),
            None => Reply::None,
        },
        Reply::Body(body) => Reply::Body(request::after(state, auth, after, body)),
        reply => reply,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_config_there_is_no_authorizer() {
        let b = BrokerAuthorizer::new(None);
        assert!(!b.is_enabled());
        assert!(b.get(&MetadataImage::empty()).is_none());
    }

    #[test]
    fn with_a_config_it_follows_the_image() {
        let b = BrokerAuthorizer::new(Some(Default::default()));
        assert!(b.is_enabled());
        let a = b.get(&MetadataImage::empty()).unwrap();
        assert_eq!(a.acl_count(), 0);
        assert!(Arc::ptr_eq(&a, &b.get(&MetadataImage::empty()).unwrap()));
    }
}
