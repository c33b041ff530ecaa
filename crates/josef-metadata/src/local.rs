//! [`LocalReplicaChanges`]: what a metadata change means for the replicas of one broker (Kafka's
//! `TopicDelta.localChanges` and `LocalReplicaChanges`).

use josef_protocol::Uuid;

use crate::image::{ImageData, MetadataImage};
use crate::partition::PartitionRegistration;

/// A partition this broker now leads or follows, with its new registration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalPartition {
    /// The topic name.
    pub topic_name: String,
    /// The topic id.
    pub topic_id: Uuid,
    /// The partition index.
    pub partition: i32,
    /// The partition's registration in the new image.
    pub registration: PartitionRegistration,
}

/// A partition this broker no longer hosts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalDelete {
    /// The topic name.
    pub topic_name: String,
    /// The topic id.
    pub topic_id: Uuid,
    /// The partition index.
    pub partition: i32,
    /// Whether the whole topic was removed (rather than this broker dropped from the replicas).
    pub topic_deleted: bool,
    /// The partition's registration in the previous image.
    pub previous: PartitionRegistration,
}

/// The changes to one broker's replicas between a previous image and the next one, in topic id then
/// partition order.
///
/// ```
/// use josef_metadata::{MetadataDelta, MetadataImage, MetadataRecord};
/// use josef_protocol::metadata_records::{PartitionChangeRecord, PartitionRecord, TopicRecord};
/// use josef_protocol::Uuid;
///
/// let id = Uuid::from_u128(5);
/// let mut delta = MetadataDelta::new(&MetadataImage::empty());
/// delta.replay(&TopicRecord { name: "t".into(), topic_id: id, ..Default::default() }.into()).unwrap();
/// let p = PartitionRecord {
///     topic_id: id,
///     partition_id: 0,
///     replicas: vec![1, 2].into(),
///     isr: vec![1, 2].into(),
///     leader: 1,
///     leader_epoch: 0,
///     partition_epoch: 0,
///     ..Default::default()
/// };
/// delta.replay(&p.into()).unwrap();
/// let image = delta.apply(Default::default());
///
/// let changes = delta.local_changes(2);
/// assert_eq!(changes.followers.len(), 1);
/// assert!(changes.leaders.is_empty());
///
/// // Broker 1 fails over to 2: broker 2 is now an elected leader.
/// let mut delta = MetadataDelta::new(&image);
/// let c = PartitionChangeRecord {
///     topic_id: id,
///     partition_id: 0,
///     leader: 2,
///     isr: Some(vec![2].into()),
///     ..Default::default()
/// };
/// delta.replay(&MetadataRecord::PartitionChange(c)).unwrap();
/// let changes = delta.local_changes(2);
/// assert_eq!(changes.elected_leaders[0].registration.leader_epoch, 1);
/// assert_eq!(changes.leaders.len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LocalReplicaChanges {
    /// Partitions that dropped this broker from their replicas, or whose topic was removed.
    pub deletes: Vec<LocalDelete>,
    /// Partitions led here that are new or whose partition epoch changed.
    pub leaders: Vec<LocalPartition>,
    /// The subset of `leaders` that are new or whose leader epoch changed (a new election).
    pub elected_leaders: Vec<LocalPartition>,
    /// Partitions with a replica here, led elsewhere (or leaderless), that are new or whose partition
    /// epoch changed.
    pub followers: Vec<LocalPartition>,
}

impl LocalReplicaChanges {
    /// Whether nothing changed for this broker.
    pub fn is_empty(&self) -> bool {
        self.deletes.is_empty() && self.leaders.is_empty() && self.followers.is_empty()
    }

    /// The changes for `broker_id` between two images, comparing every partition (for a broker that
    /// loads a snapshot rather than replaying a delta).
    pub fn between(previous: &MetadataImage, next: &MetadataImage, broker_id: i32) -> Self {
        let candidates = next
            .data
            .topics
            .values()
            .flat_map(|t| t.partitions.keys().map(move |p| (t.id, *p)));
        let removed = previous.data.topics.keys().copied();
        Self::compute(&previous.data, &next.data, candidates, removed, broker_id)
    }

    /// `candidates`: partitions that may have changed; `removed`: topics that may have been removed.
    pub(crate) fn compute(
        prev: &ImageData,
        next: &ImageData,
        candidates: impl Iterator<Item = (Uuid, i32)>,
        removed: impl Iterator<Item = Uuid>,
        broker_id: i32,
    ) -> Self {
        let mut out = LocalReplicaChanges::default();
        let prev_partition =
            |id: Uuid, p: i32| prev.topics.get(&id).and_then(|t| t.partitions.get(&p));
        for (topic_id, partition) in candidates {
            let Some(topic) = next.topics.get(&topic_id) else {
                continue;
            };
            let Some(reg) = topic.partitions.get(&partition) else {
                continue;
            };
            let before = prev_partition(topic_id, partition);
            let local = || LocalPartition {
                topic_name: topic.name.clone(),
                topic_id,
                partition,
                registration: reg.clone(),
            };
            let epoch_changed = before.map_or(true, |b| b.partition_epoch != reg.partition_epoch);
            if !reg.is_replica(broker_id) {
                if let Some(b) = before.filter(|b| b.is_replica(broker_id)) {
                    out.deletes.push(LocalDelete {
                        topic_name: topic.name.clone(),
                        topic_id,
                        partition,
                        topic_deleted: false,
                        previous: b.clone(),
                    });
                }
            } else if reg.leader == broker_id {
                if epoch_changed {
                    out.leaders.push(local());
                    if before.map_or(true, |b| b.leader_epoch != reg.leader_epoch) {
                        out.elected_leaders.push(local());
                    }
                }
            } else if epoch_changed {
                out.followers.push(local());
            }
        }
        for topic_id in removed {
            if next.topics.contains_key(&topic_id) {
                continue;
            }
            let Some(topic) = prev.topics.get(&topic_id) else {
                continue;
            };
            for (partition, reg) in topic
                .partitions
                .iter()
                .filter(|(_, r)| r.is_replica(broker_id))
            {
                out.deletes.push(LocalDelete {
                    topic_name: topic.name.clone(),
                    topic_id,
                    partition: *partition,
                    topic_deleted: true,
                    previous: reg.clone(),
                });
            }
        }
        out.deletes.sort_by_key(|d| (d.topic_id, d.partition));
        out
    }
}
