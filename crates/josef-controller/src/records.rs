//! The metadata records the controller writes and replays (josef-metadata's [`MetadataRecord`]),
//! and conversions between
//! `PartitionChangeRecord` / `PartitionRecord` and [`PartitionState`].

use josef_protocol::metadata_records::{PartitionChangeRecord, PartitionRecord};
use josef_protocol::{SmallVec, Uuid};

use crate::{LeaderRecoveryState, PartitionChange, PartitionState};

pub use josef_metadata::{ClusterIdRecord, MetadataRecord};
pub use josef_protocol::metadata_records::{
    BrokerRegistrationChangeRecord, ConfigRecord, FeatureLevelRecord, ProducerIdsRecord,
    RegisterBrokerRecord, RemoveTopicRecord, TopicRecord, UnregisterBrokerRecord,
};

pub(crate) fn ids(v: &[i32]) -> SmallVec<[i32; 4]> {
    SmallVec::from_slice(v)
}

/// The `PartitionChangeRecord` of `change` to partition `partition_id` of topic `topic_id`.
pub fn partition_change_record(
    topic_id: Uuid,
    partition_id: i32,
    change: &PartitionChange,
) -> PartitionChangeRecord {
    PartitionChangeRecord {
        partition_id,
        topic_id,
        isr: change.isr.as_deref().map(ids),
        leader: change.leader,
        replicas: change.replicas.as_deref().map(ids),
        removing_replicas: change.removing_replicas.as_deref().map(ids),
        adding_replicas: change.adding_replicas.as_deref().map(ids),
        leader_recovery_state: change.leader_recovery_state.map_or(-1, |s| s.value()),
        ..Default::default()
    }
}

/// The change a `PartitionChangeRecord` describes.
pub fn partition_change_of(r: &PartitionChangeRecord) -> PartitionChange {
    PartitionChange {
        isr: r.isr.as_ref().map(|v| v.to_vec()),
        leader: r.leader,
        replicas: r.replicas.as_ref().map(|v| v.to_vec()),
        removing_replicas: r.removing_replicas.as_ref().map(|v| v.to_vec()),
        adding_replicas: r.adding_replicas.as_ref().map(|v| v.to_vec()),
        leader_recovery_state: LeaderRecoveryState::from_value(r.leader_recovery_state).ok(),
    }
}

/// The `PartitionRecord` of a new partition.
pub fn partition_record(topic_id: Uuid, partition_id: i32, p: &PartitionState) -> PartitionRecord {
    PartitionRecord {
        partition_id,
        topic_id,
        replicas: ids(&p.replicas),
        isr: ids(&p.isr),
        removing_replicas: ids(&p.removing_replicas),
        adding_replicas: ids(&p.adding_replicas),
        leader: p.leader,
        leader_recovery_state: p.leader_recovery_state.value(),
        leader_epoch: p.leader_epoch,
        partition_epoch: p.partition_epoch,
        ..Default::default()
    }
}

/// The partition a `PartitionRecord` creates.
pub fn partition_state_of(r: &PartitionRecord) -> PartitionState {
    PartitionState {
        replicas: r.replicas.to_vec(),
        isr: r.isr.to_vec(),
        removing_replicas: r.removing_replicas.to_vec(),
        adding_replicas: r.adding_replicas.to_vec(),
        leader: r.leader,
        leader_recovery_state: LeaderRecoveryState::from_value(r.leader_recovery_state)
            .unwrap_or_default(),
        leader_epoch: r.leader_epoch,
        partition_epoch: r.partition_epoch,
    }
}
