//! The metadata view: which brokers, topics and partition leaders the Metadata API reports.
//! Josef's single node answers from its own topics (this node leads everything, leader epoch
//! from the partition); a builder may serve any image instead (a static cluster behind a proxy,
//! a registry of their own).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use josef_protocol::{ErrorCode, Uuid};

use crate::connection::ConnectionInfo;

/// What [`MetadataView::create_topic`] returns: creating a topic may take a round trip (a
/// cluster node asks its controller).
pub type CreateTopicFuture<'a> = Pin<Box<dyn Future<Output = Result<(), ErrorCode>> + Send + 'a>>;

/// A broker clients may connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerEndpoint {
    /// `node.id`.
    pub node_id: i32,
    /// Advertised host on the client's listener.
    pub host: String,
    /// Advertised port on the client's listener.
    pub port: i32,
    /// `broker.rack`, if set.
    pub rack: Option<String>,
}

/// One partition as clients see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMetadata {
    /// Index in the topic.
    pub partition_index: i32,
    /// NONE, or LEADER_NOT_AVAILABLE while the partition has no live leader.
    pub error: ErrorCode,
    /// The leader's node id, −1 when there is none.
    pub leader_id: i32,
    /// The leader epoch (clients fence their fetches and produces with it).
    pub leader_epoch: i32,
    /// Every assigned replica.
    pub replica_nodes: Vec<i32>,
    /// The in-sync replicas.
    pub isr_nodes: Vec<i32>,
    /// Assigned replicas that are not live.
    pub offline_replicas: Vec<i32>,
}

/// One topic as clients see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMetadata {
    /// The topic's name.
    pub name: String,
    /// The topic's id.
    pub topic_id: Uuid,
    /// Whether it is one of Kafka's internal topics (`__consumer_offsets`,
    /// `__transaction_state`).
    pub is_internal: bool,
    /// The partitions, by index.
    pub partitions: Vec<PartitionMetadata>,
}

/// What the Metadata handler reports, as of the moment of each call.
///
/// Kafka's rules an implementation keeps: every leader named in a topic is among
/// [`brokers`](MetadataView::brokers) (clients connect to the leader by that list; Kafka answers
/// a Metadata request from one snapshot of its cache, so an implementation whose answers change
/// between calls hands the handler a frozen one from [`snapshot`](MetadataView::snapshot));
/// a partition whose leader is not a live broker is LEADER_NOT_AVAILABLE with leader −1, and
/// every replica that is not live is in its offline replicas; endpoints and racks are the ones
/// advertised on the listener the client came in on; leader epochs only grow for a partition.
/// The handler itself keeps the request-level rules (topic name validation, which topics a
/// request names, whether it may create them, ACLs).
///
/// ```
/// use josef_protocol::{ErrorCode, Uuid};
/// use josef_server::connection::ConnectionInfo;
/// use josef_server::kit::metadata_view::{
///     BrokerEndpoint, MetadataView, PartitionMetadata, TopicMetadata,
/// };
///
/// /// One broker that leads the one topic there is.
/// struct Fixed;
///
/// impl MetadataView for Fixed {
///     fn brokers(&self, _conn: &ConnectionInfo) -> Vec<BrokerEndpoint> {
///         vec![BrokerEndpoint { node_id: 1, host: "kafka.internal".into(), port: 9092, rack: None }]
///     }
///     fn controller_id(&self, _conn: &ConnectionInfo) -> i32 {
///         1
///     }
///     fn topics(&self, conn: &ConnectionInfo) -> Vec<TopicMetadata> {
///         self.topic("events", conn).into_iter().collect()
///     }
///     fn topic(&self, name: &str, _conn: &ConnectionInfo) -> Option<TopicMetadata> {
///         (name == "events").then(|| TopicMetadata {
///             name: name.into(),
///             topic_id: Uuid::from_u128(7),
///             is_internal: false,
///             partitions: vec![PartitionMetadata {
///                 partition_index: 0,
///                 error: ErrorCode::None,
///                 leader_id: 1,
///                 leader_epoch: 0,
///                 replica_nodes: vec![1],
///                 isr_nodes: vec![1],
///                 offline_replicas: vec![],
///             }],
///         })
///     }
///     fn topic_by_id(&self, id: Uuid, conn: &ConnectionInfo) -> Option<TopicMetadata> {
///         self.topics(conn).into_iter().find(|t| t.topic_id == id)
///     }
/// }
///
/// let conn = ConnectionInfo::new("PLAINTEXT", 9092, "127.0.0.1:50000".parse().unwrap());
/// assert_eq!(Fixed.topic("events", &conn).unwrap().partitions[0].leader_id, 1);
/// // No auto-creation unless the view provides it: the client is told the topic is unknown.
/// let created = futures::executor::block_on(Fixed.create_topic("other"));
/// assert_eq!(created, Err(ErrorCode::UnknownTopicOrPartition));
/// ```
pub trait MetadataView: Send + Sync {
    /// The live brokers that have the client's listener, at their advertised endpoint on it
    /// (Kafka leaves out fenced brokers and brokers without that listener).
    fn brokers(&self, conn: &ConnectionInfo) -> Vec<BrokerEndpoint>;

    /// The controller id clients are told: one of [`brokers`](MetadataView::brokers) (KRaft
    /// controllers are not reachable by clients; any broker forwards), −1 if there is none.
    fn controller_id(&self, conn: &ConnectionInfo) -> i32;

    /// Every topic (a Metadata request naming no topics), sorted by name.
    fn topics(&self, conn: &ConnectionInfo) -> Vec<TopicMetadata>;

    /// The topic named `name`, `None` if there is no such topic (the handler answers
    /// UNKNOWN_TOPIC_OR_PARTITION, or auto-creates it).
    fn topic(&self, name: &str, conn: &ConnectionInfo) -> Option<TopicMetadata>;

    /// The topic with id `id` (Metadata v12+), `None` if there is none (UNKNOWN_TOPIC_ID).
    fn topic_by_id(&self, id: Uuid, conn: &ConnectionInfo) -> Option<TopicMetadata>;

    /// One moment of this view that answers every call the same, from which the handler builds
    /// a whole response (Kafka's single `MetadataCache` snapshot per request: the brokers listed
    /// are the ones the leaders were chosen among). `None`, the default, is right for a view
    /// whose answers only change between requests, or which changes brokers before naming them
    /// leaders; the handler then asks this view itself.
    fn snapshot(&self) -> Option<Arc<dyn MetadataView>> {
        None
    }

    /// Creates `name` for a client that named it (`auto.create.topics.enable`; the handler has
    /// checked the setting, the request's `allow_auto_topic_creation` and the name), with the
    /// broker's defaults or, for `__consumer_offsets` and `__transaction_state`, their own
    /// settings. A topic that already exists is not an error. Once this returns `Ok`,
    /// [`topic`](MetadataView::topic) (and a new [`snapshot`](MetadataView::snapshot)) finds it;
    /// an error is the topic's code in the response (LEADER_NOT_AVAILABLE while it is not yet
    /// visible, which clients retry). The default creates nothing: a view over an image it does
    /// not own answers UNKNOWN_TOPIC_OR_PARTITION, as Kafka does with auto-creation off.
    fn create_topic<'a>(&'a self, name: &'a str) -> CreateTopicFuture<'a> {
        let _ = name;
        Box::pin(std::future::ready(Err(ErrorCode::UnknownTopicOrPartition)))
    }
}
