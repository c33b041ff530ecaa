//! A cluster node's metadata view: Kafka's `KRaftMetadataCache`, answered from the node's
//! `josef-metadata` image. [`ImageMetadata`] is one image, frozen (what one Metadata response is
//! built from); [`ClusterMetadata`] follows the node's newest image and creates topics through
//! the active controller.

use std::sync::Arc;

use josef_metadata::{MetadataImage, PartitionRegistration, TopicImage};
use josef_protocol::{ErrorCode, Uuid};

use super::metadata_view::{
    BrokerEndpoint, CreateTopicFuture, MetadataView, PartitionMetadata, TopicMetadata,
};
use crate::cluster::ClusterNode;
use crate::config::BrokerConfig;
use crate::connection::ConnectionInfo;
use crate::topics::{TopicManager, GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC};

/// One metadata image as clients see it. Creates nothing: a frozen image cannot show a new
/// topic.
#[derive(Debug, Clone)]
pub struct ImageMetadata {
    image: MetadataImage,
}

impl ImageMetadata {
    /// The view of `image`.
    pub fn new(image: MetadataImage) -> Self {
        ImageMetadata { image }
    }

    /// Whether broker `id` is registered, not fenced, and has the client's listener: Kafka
    /// counts any other replica as offline, and never names such a broker leader.
    fn is_live(&self, id: i32, listener: &str) -> bool {
        self.image
            .broker(id)
            .is_some_and(|b| !b.fenced && b.listener(listener).is_some())
    }

    fn partition(
        &self,
        index: i32,
        p: &PartitionRegistration,
        listener: &str,
    ) -> PartitionMetadata {
        let leader_live = p.leader >= 0 && self.is_live(p.leader, listener);
        PartitionMetadata {
            partition_index: index,
            error: if leader_live {
                ErrorCode::None
            } else {
                ErrorCode::LeaderNotAvailable
            },
            leader_id: if leader_live { p.leader } else { -1 },
            leader_epoch: p.leader_epoch,
            replica_nodes: p.replicas.clone(),
            isr_nodes: p.isr.clone(),
            offline_replicas: p
                .replicas
                .iter()
                .copied()
                .filter(|r| !self.is_live(*r, listener))
                .collect(),
        }
    }

    fn topic_metadata(&self, t: &TopicImage, listener: &str) -> TopicMetadata {
        TopicMetadata {
            name: t.name.clone(),
            topic_id: t.id,
            is_internal: t.name == GROUP_METADATA_TOPIC || t.name == TRANSACTION_STATE_TOPIC,
            partitions: t
                .partitions
                .iter()
                .map(|(i, p)| self.partition(*i, p, listener))
                .collect(),
        }
    }
}

impl MetadataView for ImageMetadata {
    fn brokers(&self, conn: &ConnectionInfo) -> Vec<BrokerEndpoint> {
        self.image
            .alive_brokers()
            .filter_map(|b| {
                let e = b.listener(&conn.listener)?;
                Some(BrokerEndpoint {
                    node_id: b.id,
                    host: e.host.clone(),
                    port: i32::from(e.port),
                    rack: b.rack.clone(),
                })
            })
            .collect()
    }

    /// Kafka names a random live broker (clients cannot reach KRaft controllers; any broker
    /// forwards); the lowest id keeps answers equal across requests, which admin tools prefer.
    fn controller_id(&self, conn: &ConnectionInfo) -> i32 {
        self.image
            .alive_brokers()
            .find(|b| b.listener(&conn.listener).is_some())
            .map_or(-1, |b| b.id)
    }

    fn topics(&self, conn: &ConnectionInfo) -> Vec<TopicMetadata> {
        let mut all: Vec<_> = self
            .image
            .topics()
            .map(|t| self.topic_metadata(t, &conn.listener))
            .collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    fn topic(&self, name: &str, conn: &ConnectionInfo) -> Option<TopicMetadata> {
        let t = self.image.topic_by_name(name)?;
        Some(self.topic_metadata(t, &conn.listener))
    }

    fn topic_by_id(&self, id: Uuid, conn: &ConnectionInfo) -> Option<TopicMetadata> {
        let t = self.image.topic_by_id(id)?;
        Some(self.topic_metadata(t, &conn.listener))
    }
}

/// A cluster node's [`MetadataView`]: its newest metadata image, with topics created by the
/// active controller.
pub struct ClusterMetadata {
    node: Arc<ClusterNode>,
    config: Arc<BrokerConfig>,
    topics: Arc<TopicManager>,
}

impl ClusterMetadata {
    /// The view of `node`'s image; `topics` are the ones the node opens, which a created topic
    /// is awaited in.
    pub fn new(
        node: Arc<ClusterNode>,
        config: Arc<BrokerConfig>,
        topics: Arc<TopicManager>,
    ) -> Self {
        ClusterMetadata {
            node,
            config,
            topics,
        }
    }

    /// The image the partitions have reached, not the newest committed one, so that what a
    /// client reads in Metadata the partitions already act on.
    fn now(&self) -> ImageMetadata {
        ImageMetadata::new(self.node.published_image())
    }
}

impl MetadataView for ClusterMetadata {
    fn brokers(&self, conn: &ConnectionInfo) -> Vec<BrokerEndpoint> {
        self.now().brokers(conn)
    }

    fn controller_id(&self, conn: &ConnectionInfo) -> i32 {
        self.now().controller_id(conn)
    }

    fn topics(&self, conn: &ConnectionInfo) -> Vec<TopicMetadata> {
        self.now().topics(conn)
    }

    fn topic(&self, name: &str, conn: &ConnectionInfo) -> Option<TopicMetadata> {
        self.now().topic(name, conn)
    }

    fn topic_by_id(&self, id: Uuid, conn: &ConnectionInfo) -> Option<TopicMetadata> {
        self.now().topic_by_id(id, conn)
    }

    fn snapshot(&self) -> Option<Arc<dyn MetadataView>> {
        Some(Arc::new(self.now()))
    }

    /// Asks the active controller (Kafka's auto-creation forwards a CreateTopics) and waits
    /// until this node has the topic; LEADER_NOT_AVAILABLE when the image does not show it yet,
    /// which clients retry.
    fn create_topic<'a>(&'a self, name: &'a str) -> CreateTopicFuture<'a> {
        Box::pin(async move {
            crate::handlers::cluster::create_topic_via_controller(
                &self.config,
                &self.topics,
                &self.node,
                name,
            )
            .await?;
            match self.node.published_image().topic_by_name(name) {
                Some(_) => Ok(()),
                None => Err(ErrorCode::LeaderNotAvailable),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use josef_metadata::{MetadataDelta, MetadataProvenance, MetadataRecord};
    use josef_protocol::metadata_records::register_broker_record::BrokerEndpoint as Endpoint;
    use josef_protocol::metadata_records::{PartitionRecord, RegisterBrokerRecord, TopicRecord};
    use josef_protocol::StrBytes;

    fn broker(id: i32, listener: &str, fenced: bool, rack: Option<&str>) -> MetadataRecord {
        RegisterBrokerRecord {
            broker_id: id,
            broker_epoch: i64::from(id),
            fenced,
            rack: rack.map(StrBytes::from),
            end_points: vec![Endpoint {
                name: StrBytes::from(listener),
                host: StrBytes::from(format!("host{id}")),
                port: 9000 + id as u16,
                ..Default::default()
            }],
            ..Default::default()
        }
        .into()
    }

    fn topic(name: &str, id: Uuid) -> MetadataRecord {
        TopicRecord {
            name: name.into(),
            topic_id: id,
            ..Default::default()
        }
        .into()
    }

    fn partition(id: Uuid, index: i32, leader: i32, replicas: &[i32]) -> MetadataRecord {
        PartitionRecord {
            topic_id: id,
            partition_id: index,
            replicas: replicas.to_vec().into(),
            isr: vec![leader].into(),
            leader,
            leader_epoch: 4,
            ..Default::default()
        }
        .into()
    }

    /// Broker 1 live on PLAINTEXT (rack r1), broker 2 fenced, broker 3 live but only on
    /// INTERNAL; "orders" partition 0 led by 1, partition 1 by the fenced 2, partition 2 by 3.
    fn image() -> ImageMetadata {
        let orders = Uuid::from_u128(2);
        let mut delta = MetadataDelta::new(&MetadataImage::empty());
        for r in [
            broker(1, "PLAINTEXT", false, Some("r1")),
            broker(2, "PLAINTEXT", true, None),
            broker(3, "INTERNAL", false, None),
            topic("orders", orders),
            topic(GROUP_METADATA_TOPIC, Uuid::from_u128(1)),
            partition(orders, 0, 1, &[1, 2, 3]),
            partition(orders, 1, 2, &[2, 1]),
            partition(orders, 2, 3, &[3]),
        ] {
            delta.replay(&r).unwrap();
        }
        ImageMetadata::new(delta.apply(MetadataProvenance {
            last_offset: 8,
            last_epoch: 1,
        }))
    }

    fn plaintext() -> ConnectionInfo {
        ConnectionInfo::new("PLAINTEXT", 9092, "127.0.0.1:40000".parse().unwrap())
    }

    #[test]
    fn only_live_brokers_on_the_clients_listener_are_listed_with_their_rack() {
        let view = image();
        let brokers = view.brokers(&plaintext());
        assert_eq!(
            brokers,
            [BrokerEndpoint {
                node_id: 1,
                host: "host1".into(),
                port: 9001,
                rack: Some("r1".into()),
            }]
        );
        assert_eq!(view.controller_id(&plaintext()), 1);
        let internal = ConnectionInfo::new("INTERNAL", 9093, "127.0.0.1:40000".parse().unwrap());
        assert_eq!(view.controller_id(&internal), 3);
    }

    #[test]
    fn a_leader_that_is_not_live_is_leader_not_available_and_dead_replicas_are_offline() {
        let view = image();
        let orders = view.topic("orders", &plaintext()).unwrap();
        assert!(!orders.is_internal);
        let summary: Vec<_> = orders
            .partitions
            .iter()
            .map(|p| {
                (
                    p.partition_index,
                    p.error,
                    p.leader_id,
                    p.leader_epoch,
                    p.offline_replicas.clone(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (0, ErrorCode::None, 1, 4, vec![2, 3]),
                (1, ErrorCode::LeaderNotAvailable, -1, 4, vec![2]),
                // Live, but not on the client's listener: the client could not reach it.
                (2, ErrorCode::LeaderNotAvailable, -1, 4, vec![3]),
            ]
        );
        assert_eq!(orders.partitions[0].replica_nodes, [1, 2, 3]);
        assert_eq!(orders.partitions[0].isr_nodes, [1]);
    }

    #[test]
    fn topics_are_sorted_by_name_found_by_id_and_internal_ones_marked() {
        let view = image();
        let all = view.topics(&plaintext());
        let names: Vec<_> = all
            .iter()
            .map(|t| (t.name.as_str(), t.is_internal))
            .collect();
        assert_eq!(names, [(GROUP_METADATA_TOPIC, true), ("orders", false)]);
        let by_id = view.topic_by_id(Uuid::from_u128(2), &plaintext()).unwrap();
        assert_eq!(by_id.name, "orders");
        assert!(view.topic_by_id(Uuid::from_u128(9), &plaintext()).is_none());
        assert!(view.topic("missing", &plaintext()).is_none());
    }
}
