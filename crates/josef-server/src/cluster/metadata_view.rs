//! What clients see of a cluster (Kafka's `KRaftMetadataCache`): brokers, controller id and
//! partition leaders, replicas, ISR and offline replicas, from this node's metadata image.

use josef_metadata::{MetadataImage, PartitionRegistration, TopicImage};
use josef_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use josef_protocol::{ErrorCode, StrBytes};

/// Kafka's "authorized operations not requested" marker.
const AUTHORIZED_OPERATIONS_OMITTED: i32 = i32::MIN;

/// The unfenced brokers having `listener`, at their advertised address there.
pub fn brokers(image: &MetadataImage, listener: &str) -> Vec<MetadataResponseBroker> {
    image
        .alive_brokers()
        .filter_map(|b| {
            let e = b.listener(listener)?;
            Some(MetadataResponseBroker {
                node_id: b.id,
                host: StrBytes::from(e.host.as_str()),
                port: i32::from(e.port),
                rack: b.rack.as_deref().map(StrBytes::from),
                ..Default::default()
            })
        })
        .collect()
}

/// The controller id clients are told: Kafka gives a random alive broker (clients cannot reach
/// KRaft controllers; any broker forwards). A stable pick (the lowest id) keeps answers equal
/// across requests, which admin tools prefer.
pub fn controller_id(image: &MetadataImage, listener: &str) -> i32 {
    image
        .alive_brokers()
        .find(|b| b.listener(listener).is_some())
        .map_or(-1, |b| b.id)
}

/// Whether `id` is a live broker having `listener`.
fn is_live(image: &MetadataImage, id: i32, listener: &str) -> bool {
    image
        .broker(id)
        .is_some_and(|b| !b.fenced && b.listener(listener).is_some())
}

/// One partition as clients see it.
pub fn partition(
    image: &MetadataImage,
    index: i32,
    p: &PartitionRegistration,
    listener: &str,
) -> MetadataResponsePartition {
    let offline: Vec<i32> = p
        .replicas
        .iter()
        .copied()
        .filter(|r| !is_live(image, *r, listener))
        .collect();
    let leader_live = p.leader >= 0 && is_live(image, p.leader, listener);
    MetadataResponsePartition {
        error_code: if leader_live {
            0
        } else {
            ErrorCode::LeaderNotAvailable.code()
        },
        partition_index: index,
        leader_id: if leader_live { p.leader } else { -1 },
        leader_epoch: p.leader_epoch,
        replica_nodes: p.replicas.iter().copied().collect(),
        isr_nodes: p.isr.iter().copied().collect(),
        offline_replicas: offline.into_iter().collect(),
        ..Default::default()
    }
}

/// One topic as clients see it.
pub fn topic(image: &MetadataImage, t: &TopicImage, listener: &str) -> MetadataResponseTopic {
    MetadataResponseTopic {
        error_code: 0,
        name: Some(StrBytes::from(t.name.as_str())),
        topic_id: t.id,
        is_internal: t.name == crate::topics::GROUP_METADATA_TOPIC
            || t.name == crate::topics::TRANSACTION_STATE_TOPIC,
        partitions: t
            .partitions
            .iter()
            .map(|(i, p)| partition(image, *i, p, listener))
            .collect(),
        topic_authorized_operations: AUTHORIZED_OPERATIONS_OMITTED,
        ..Default::default()
    }
}
