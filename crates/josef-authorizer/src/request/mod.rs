//! The ACLs each API needs, applied around a broker's handler (after Kafka's `KafkaApis`; the
//! table is [`crate::api_acls`]).
//!
//! [`before`] looks at a request: a request refused as a whole is answered at once; topics,
//! partitions, groups or config resources the principal may not touch are taken out of it, their
//! error entries kept in an [`After`]. The handler then runs on what is left, and [`after`] adds
//! the kept entries to its response and applies what only the response shows (topics hidden from
//! Metadata, groups listed, KIP-430 authorized operations). Handlers stay unaware of ACLs.
//!
//! What the checks need from the broker (which topics exist, whether Metadata may create topics)
//! comes through [`BrokerView`].
//!
//! ```
//! use josef_authorizer::request::{after, before, Before, BrokerView, RequestAuth};
//! use josef_authorizer::*;
//! use josef_protocol::messages::{delete_groups_response, DeleteGroupsRequest, DeleteGroupsResponse};
//! use josef_protocol::{ErrorCode, RequestBody, RequestHeader, ResponseBody, Uuid};
//! use std::sync::Arc;
//!
//! struct NoTopics;
//! impl BrokerView for NoTopics {
//!     fn topic_name(&self, _: Uuid) -> Option<String> { None }
//!     fn topic_exists(&self, _: &str) -> bool { false }
//!     fn auto_create_topics_enable(&self) -> bool { false }
//! }
//!
//! // alice may delete group "mine" only.
//! let mut authorizer = StandardAuthorizer::new(AuthorizerConfig::default());
//! let mut next = 0u128;
//! authorizer.create_acls(
//!     &[AclBinding::new(
//!         ResourcePattern::literal(ResourceType::Group, "mine"),
//!         AccessControlEntry::allow("User:alice", "*", AclOperation::Delete),
//!     )],
//!     || { next += 1; Uuid::from_u128(next) },
//! );
//! let context = AuthorizableRequestContext::new(KafkaPrincipal::user("alice"), "10.0.0.7", "PLAINTEXT");
//! let auth = RequestAuth::new(Some(Arc::new(authorizer)), context);
//!
//! let request = RequestBody::DeleteGroups(DeleteGroupsRequest {
//!     groups_names: vec!["mine".into(), "theirs".into()],
//!     ..Default::default()
//! });
//! let Before::Run(RequestBody::DeleteGroups(left), then) =
//!     before(&NoTopics, &auth, &RequestHeader::default(), request)
//! else {
//!     panic!("the handler runs on what is allowed");
//! };
//! assert_eq!(left.groups_names, ["mine"]);
//! // The handler deletes "mine"; the refused group is added to its response.
//! let handled = DeleteGroupsResponse {
//!     results: vec![delete_groups_response::DeletableGroupResult {
//!         group_id: "mine".into(),
//!         ..Default::default()
//!     }],
//!     ..Default::default()
//! };
//! let ResponseBody::DeleteGroups(r) = after(&NoTopics, &auth, then, handled.into()) else {
//!     panic!("same response type");
//! };
//! assert_eq!(r.results[1].group_id, "theirs");
//! assert_eq!(r.results[1].error_code, ErrorCode::GroupAuthorizationFailed.code());
//! ```

use josef_protocol::{ErrorCode, RequestBody, RequestHeader, ResponseBody, StrBytes, Uuid};

use crate::api_acls::authorization_error;
use crate::ResourceType;

mod auth;
mod checks;
mod responses;

pub use auth::RequestAuth;

/// What the checks need to know about the broker they run in.
pub trait BrokerView {
    /// A topic's name from its id, on this broker's view of the cluster.
    fn topic_name(&self, id: Uuid) -> Option<String>;
    /// True if the topic exists.
    fn topic_exists(&self, name: &str) -> bool;
    /// `auto.create.topics.enable`: a Metadata request may create the topics it names.
    fn auto_create_topics_enable(&self) -> bool;
}

/// The outcome of [`before`].
#[derive(Debug)]
pub enum Before {
    /// Run the handler on this request, then [`after`] on its response.
    Run(RequestBody, After),
    /// Answer this without running the handler.
    Answer(ResponseBody),
    /// Close the connection without answering (Kafka's answer to a refused acks=0 produce).
    Close(&'static str),
}

/// Adds the refused entries kept by [`before`] to the handler's response.
type Reinsert = Box<dyn FnOnce(&mut ResponseBody) + Send>;

/// What [`after`] must add to, or filter out of, the handler's response.
#[derive(Default)]
pub struct After {
    check: responses::Check,
    reinsert: Option<Reinsert>,
    close_if_unanswered: Option<&'static str>,
}

impl std::fmt::Debug for After {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("After")
            .field("check", &self.check)
            .field("reinsert", &self.reinsert.is_some())
            .field("close_if_unanswered", &self.close_if_unanswered)
            .finish()
    }
}

impl After {
    /// When the handler sends no response (Produce with acks=0) but some of the request was
    /// refused, Kafka closes the connection: the reason, if so.
    pub fn close_if_unanswered(&self) -> Option<&'static str> {
        self.close_if_unanswered
    }

    fn check(check: responses::Check) -> Self {
        After {
            check,
            ..Default::default()
        }
    }
}

/// The checks of `body` before its handler runs.
pub fn before(
    broker: &dyn BrokerView,
    auth: &RequestAuth,
    header: &RequestHeader,
    body: RequestBody,
) -> Before {
    checks::before(broker, auth, header.request_api_version, body)
}

/// Applies `after` to the handler's response.
pub fn after(
    broker: &dyn BrokerView,
    auth: &RequestAuth,
    after: After,
    mut body: ResponseBody,
) -> ResponseBody {
    responses::apply(broker, auth, &after.check, &mut body);
    if let Some(reinsert) = after.reinsert {
        reinsert(&mut body);
    }
    body
}

fn code(e: ErrorCode) -> i16 {
    e.code()
}

const TOPIC_DENIED: ErrorCode = authorization_error(ResourceType::Topic);
const GROUP_DENIED: ErrorCode = authorization_error(ResourceType::Group);
const CLUSTER_DENIED: ErrorCode = authorization_error(ResourceType::Cluster);
const TXN_DENIED: ErrorCode = authorization_error(ResourceType::TransactionalId);

fn empty() -> StrBytes {
    StrBytes::from("")
}
