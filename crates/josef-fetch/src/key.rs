//! Partition keys and reading a josef-protocol `FetchRequest` into the cache's terms.

use std::hash::{Hash, Hasher};

use josef_protocol::messages::FetchRequest;
use josef_protocol::{StrBytes, Uuid};

use crate::epoch::FetchMetadata;
use crate::partition::PartitionFetch;

/// A partition named by topic id (fetch v13+) or by topic name (older versions), with Kafka's
/// `TopicIdPartition` equality: by id and partition when the id is set, else by name and
/// partition. A v13+ request carries no names, so `topic` may be empty there.
#[derive(Debug, Clone, Eq)]
pub struct TopicIdPartition {
    /// Topic id (zero before v13).
    pub topic_id: Uuid,
    /// Topic name (may be empty from v13).
    pub topic: StrBytes,
    /// Partition index.
    pub partition: i32,
}

impl TopicIdPartition {
    /// A partition named by id.
    pub fn by_id(topic_id: Uuid, partition: i32) -> Self {
        TopicIdPartition {
            topic_id,
            topic: StrBytes::default(),
            partition,
        }
    }

    /// A partition named by topic name.
    pub fn by_name(topic: impl Into<StrBytes>, partition: i32) -> Self {
        TopicIdPartition {
            topic_id: Uuid::default(),
            topic: topic.into(),
            partition,
        }
    }
}

impl PartialEq for TopicIdPartition {
    fn eq(&self, other: &Self) -> bool {
        self.partition == other.partition
            && if self.topic_id.is_zero() {
                other.topic_id.is_zero() && self.topic == other.topic
            } else {
                self.topic_id == other.topic_id
            }
    }
}

impl Hash for TopicIdPartition {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.partition.hash(state);
        if self.topic_id.is_zero() {
            self.topic.hash(state);
        } else {
            self.topic_id.hash(state);
        }
    }
}

/// The session fields of a fetch request of `version` (v0–6 have none: sessionless).
pub fn request_metadata(req: &FetchRequest, version: i16) -> FetchMetadata {
    if version >= 7 {
        FetchMetadata::new(req.session_id, req.session_epoch)
    } else {
        FetchMetadata::SESSIONLESS
    }
}

/// Whether a fetch of `version` names topics by id (v13+).
pub fn uses_topic_ids(version: i16) -> bool {
    version >= 13
}

fn key(topic_id: Uuid, topic: &StrBytes, partition: i32, version: i16) -> TopicIdPartition {
    if uses_topic_ids(version) {
        TopicIdPartition::by_id(topic_id, partition)
    } else {
        TopicIdPartition::by_name(topic.clone(), partition)
    }
}

/// The partitions a fetch request lists, with their parameters, in request order.
pub fn request_partitions(
    req: &FetchRequest,
    version: i16,
) -> impl Iterator<Item = (TopicIdPartition, PartitionFetch)> + '_ {
    req.topics.iter().flat_map(move |t| {
        t.partitions.iter().map(move |p| {
            (
                key(t.topic_id, &t.topic, p.partition, version),
                PartitionFetch {
                    fetch_offset: p.fetch_offset,
                    max_bytes: p.partition_max_bytes,
                    current_leader_epoch: p.current_leader_epoch,
                    log_start_offset: p.log_start_offset,
                    last_fetched_epoch: p.last_fetched_epoch,
                },
            )
        })
    })
}

/// The partitions a fetch request's `forgotten_topics_data` removes from its session (v7+).
pub fn forgotten_partitions(
    req: &FetchRequest,
    version: i16,
) -> impl Iterator<Item = TopicIdPartition> + '_ {
    req.forgotten_topics_data
        .iter()
        .filter(move |_| version >= 7)
        .flat_map(move |t| {
            t.partitions
                .iter()
                .map(move |&p| key(t.topic_id, &t.topic, p, version))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn id_keys_ignore_the_name() {
        let id = Uuid::from_u64_pair(1, 2);
        let a = TopicIdPartition {
            topic: "x".into(),
            ..TopicIdPartition::by_id(id, 0)
        };
        let b = TopicIdPartition::by_id(id, 0);
        assert_eq!(a, b);
        let set: HashSet<_> = [a, b].into_iter().collect();
        assert_eq!(set.len(), 1);
    }

    #[test]
    fn name_keys_compare_by_name_and_partition() {
        assert_eq!(
            TopicIdPartition::by_name("t", 1),
            TopicIdPartition::by_name("t", 1)
        );
        assert_ne!(
            TopicIdPartition::by_name("t", 1),
            TopicIdPartition::by_name("t", 2)
        );
        assert_ne!(
            TopicIdPartition::by_name("t", 1),
            TopicIdPartition::by_name("u", 1)
        );
    }
}
