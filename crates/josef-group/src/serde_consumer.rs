//! Key/value bytes of the consumer group records (key versions 3–8), Kafka's format: a
//! big-endian int16 record type, then the key struct; the value is an int16 version (0) then
//! the value struct; a null value is a tombstone.

use bytes::Bytes;
use josef_coordinator::SerdeError;
use josef_protocol::coordinator_records::{
    consumer_group_current_member_assignment_value as cur,
    consumer_group_member_metadata_value as mm, consumer_group_partition_metadata_value as pm,
    consumer_group_target_assignment_member_value as tam, ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue, ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue, ConsumerGroupMetadataKey, ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey, ConsumerGroupPartitionMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey, ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey, ConsumerGroupTargetAssignmentMetadataValue,
};
use josef_protocol::{Decode, StrBytes};

use crate::consumer::{normalize, Assignment, MemberState, SubscribedTopic};
use crate::record::{
    ClassicMemberMetadata, ConsumerMemberMetadata, ConsumerRecord, CurrentMemberAssignment,
};
use crate::serde::{decode_err, encode_versioned, split_version};

/// Key version (record type) of `ConsumerGroupMetadata`.
pub const CONSUMER_GROUP_METADATA: i16 = 3;
/// Key version of `ConsumerGroupPartitionMetadata`.
pub const CONSUMER_GROUP_PARTITION_METADATA: i16 = 4;
/// Key version of `ConsumerGroupMemberMetadata`.
pub const CONSUMER_GROUP_MEMBER_METADATA: i16 = 5;
/// Key version of `ConsumerGroupTargetAssignmentMetadata`.
pub const CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: i16 = 6;
/// Key version of `ConsumerGroupTargetAssignmentMember`.
pub const CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: i16 = 7;
/// Key version of `ConsumerGroupCurrentMemberAssignment`.
pub const CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: i16 = 8;

fn s(v: &str) -> StrBytes {
    StrBytes::from(v)
}

fn os(v: &Option<String>) -> Option<StrBytes> {
    v.as_deref().map(s)
}

fn to_cur(a: &Assignment) -> Vec<cur::TopicPartitions> {
    a.iter()
        .map(|(t, ps)| cur::TopicPartitions {
            topic_id: *t,
            partitions: ps.iter().copied().collect(),
            ..Default::default()
        })
        .collect()
}

fn from_parts<'a>(it: impl Iterator<Item = (josef_protocol::Uuid, &'a [i32])>) -> Assignment {
    let mut a = Assignment::new();
    for (t, ps) in it {
        a.entry(t).or_default().extend(ps.iter().copied());
    }
    normalize(a)
}

/// The key and value of a consumer record of `group`.
pub fn serialize(group: &str, r: &ConsumerRecord) -> (Bytes, Option<Bytes>) {
    let g = s(group);
    match r {
        ConsumerRecord::GroupMetadata { epoch } => (
            encode_versioned(
                &ConsumerGroupMetadataKey { group_id: g },
                CONSUMER_GROUP_METADATA,
            ),
            epoch.map(|e| {
                encode_versioned(
                    &ConsumerGroupMetadataValue {
                        epoch: e,
                        ..Default::default()
                    },
                    0,
                )
            }),
        ),
        ConsumerRecord::PartitionMetadata { topics } => (
            encode_versioned(
                &ConsumerGroupPartitionMetadataKey { group_id: g },
                CONSUMER_GROUP_PARTITION_METADATA,
            ),
            topics.as_ref().map(|ts| {
                let v = ConsumerGroupPartitionMetadataValue {
                    topics: ts
                        .iter()
                        .map(|t| pm::TopicMetadata {
                            topic_id: t.id,
                            topic_name: s(&t.name),
                            num_partitions: t.partitions,
                            partition_metadata: t
                                .racks
                                .iter()
                                .map(|(p, racks)| pm::PartitionMetadata {
                                    partition: *p,
                                    racks: racks.iter().map(|r| s(r)).collect(),
                                    ..Default::default()
                                })
                                .collect(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                };
                encode_versioned(&v, 0)
            }),
        ),
        ConsumerRecord::MemberMetadata { member_id, value } => (
            encode_versioned(
                &ConsumerGroupMemberMetadataKey {
                    group_id: g,
                    member_id: s(member_id),
                },
                CONSUMER_GROUP_MEMBER_METADATA,
            ),
            value.as_ref().map(|m| {
                let v = ConsumerGroupMemberMetadataValue {
                    instance_id: os(&m.instance_id),
                    rack_id: os(&m.rack_id),
                    client_id: s(&m.client_id),
                    client_host: s(&m.client_host),
                    subscribed_topic_names: m.subscribed_topic_names.iter().map(|n| s(n)).collect(),
                    subscribed_topic_regex: os(&m.subscribed_topic_regex),
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    server_assignor: os(&m.server_assignor),
                    classic_member_metadata: m.classic.as_ref().map(|c| {
                        mm::ClassicMemberMetadata {
                            session_timeout_ms: c.session_timeout_ms,
                            supported_protocols: c
                                .supported_protocols
                                .iter()
                                .map(|p| mm::ClassicProtocol {
                                    name: s(&p.name),
                                    metadata: p.metadata.clone(),
                                    ..Default::default()
                                })
                                .collect(),
                            ..Default::default()
                        }
                    }),
                    ..Default::default()
                };
                encode_versioned(&v, 0)
            }),
        ),
        ConsumerRecord::TargetAssignmentMetadata { epoch } => (
            encode_versioned(
                &ConsumerGroupTargetAssignmentMetadataKey { group_id: g },
                CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
            ),
            epoch.map(|e| {
                encode_versioned(
                    &ConsumerGroupTargetAssignmentMetadataValue {
                        assignment_epoch: e,
                        ..Default::default()
                    },
                    0,
                )
            }),
        ),
        ConsumerRecord::TargetAssignmentMember { member_id, value } => (
            encode_versioned(
                &ConsumerGroupTargetAssignmentMemberKey {
                    group_id: g,
                    member_id: s(member_id),
                },
                CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
            ),
            value.as_ref().map(|a| {
                let v = ConsumerGroupTargetAssignmentMemberValue {
                    topic_partitions: a
                        .iter()
                        .map(|(t, ps)| tam::TopicPartition {
                            topic_id: *t,
                            partitions: ps.iter().copied().collect(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                };
                encode_versioned(&v, 0)
            }),
        ),
        ConsumerRecord::CurrentMemberAssignment { member_id, value } => (
            encode_versioned(
                &ConsumerGroupCurrentMemberAssignmentKey {
                    group_id: g,
                    member_id: s(member_id),
                },
                CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
            ),
            value.as_ref().map(|c| {
                let v = ConsumerGroupCurrentMemberAssignmentValue {
                    member_epoch: c.member_epoch,
                    previous_member_epoch: c.previous_member_epoch,
                    state: c.state.value(),
                    assigned_partitions: to_cur(&c.assigned),
                    partitions_pending_revocation: to_cur(&c.pending_revocation),
                    ..Default::default()
                };
                encode_versioned(&v, 0)
            }),
        ),
    }
}

fn value_of<V: Decode>(value: Option<&[u8]>) -> Result<Option<V>, SerdeError> {
    let Some(v) = value else {
        return Ok(None);
    };
    let (version, mut vb) = split_version(v, "value")?;
    if version != 0 {
        return Err(SerdeError::UnknownVersion {
            what: "value",
            version,
        });
    }
    V::decode(&mut vb, version).map(Some).map_err(decode_err)
}

/// Reads a consumer record: `(group, record)`; `key_version` is 3–8, `kb` the key after it.
pub fn deserialize(
    key_version: i16,
    mut kb: Bytes,
    value: Option<&[u8]>,
) -> Result<(String, ConsumerRecord), SerdeError> {
    match key_version {
        CONSUMER_GROUP_METADATA => {
            let k = ConsumerGroupMetadataKey::decode(&mut kb, key_version).map_err(decode_err)?;
            let v: Option<ConsumerGroupMetadataValue> = value_of(value)?;
            Ok((
                k.group_id.to_string(),
                ConsumerRecord::GroupMetadata {
                    epoch: v.map(|v| v.epoch),
                },
            ))
        }
        CONSUMER_GROUP_PARTITION_METADATA => {
            let k = ConsumerGroupPartitionMetadataKey::decode(&mut kb, key_version)
                .map_err(decode_err)?;
            let v: Option<ConsumerGroupPartitionMetadataValue> = value_of(value)?;
            let topics = v.map(|v| {
                v.topics
                    .into_iter()
                    .map(|t| SubscribedTopic {
                        id: t.topic_id,
                        name: t.topic_name.to_string(),
                        partitions: t.num_partitions,
                        racks: t
                            .partition_metadata
                            .into_iter()
                            .map(|p| (p.partition, p.racks.iter().map(|r| r.to_string()).collect()))
                            .collect(),
                    })
                    .collect()
            });
            Ok((
                k.group_id.to_string(),
                ConsumerRecord::PartitionMetadata { topics },
            ))
        }
        CONSUMER_GROUP_MEMBER_METADATA => {
            let k =
                ConsumerGroupMemberMetadataKey::decode(&mut kb, key_version).map_err(decode_err)?;
            let v: Option<ConsumerGroupMemberMetadataValue> = value_of(value)?;
            let value = v.map(|v| ConsumerMemberMetadata {
                instance_id: v.instance_id.map(|x| x.to_string()),
                rack_id: v.rack_id.map(|x| x.to_string()),
                client_id: v.client_id.to_string(),
                client_host: v.client_host.to_string(),
                subscribed_topic_names: v
                    .subscribed_topic_names
                    .iter()
                    .map(|n| n.to_string())
                    .collect(),
                subscribed_topic_regex: v.subscribed_topic_regex.map(|x| x.to_string()),
                rebalance_timeout_ms: v.rebalance_timeout_ms,
                server_assignor: v.server_assignor.map(|x| x.to_string()),
                classic: v.classic_member_metadata.map(|c| ClassicMemberMetadata {
                    session_timeout_ms: c.session_timeout_ms,
                    supported_protocols: c
                        .supported_protocols
                        .into_iter()
                        .map(|p| crate::api::JoinProtocol {
                            name: p.name.to_string(),
                            metadata: p.metadata,
                        })
                        .collect(),
                }),
            });
            Ok((
                k.group_id.to_string(),
                ConsumerRecord::MemberMetadata {
                    member_id: k.member_id.to_string(),
                    value,
                },
            ))
        }
        CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA => {
            let k = ConsumerGroupTargetAssignmentMetadataKey::decode(&mut kb, key_version)
                .map_err(decode_err)?;
            let v: Option<ConsumerGroupTargetAssignmentMetadataValue> = value_of(value)?;
            Ok((
                k.group_id.to_string(),
                ConsumerRecord::TargetAssignmentMetadata {
                    epoch: v.map(|v| v.assignment_epoch),
                },
            ))
        }
        CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER => {
            let k = ConsumerGroupTargetAssignmentMemberKey::decode(&mut kb, key_version)
                .map_err(decode_err)?;
            let v: Option<ConsumerGroupTargetAssignmentMemberValue> = value_of(value)?;
            Ok((
                k.group_id.to_string(),
                ConsumerRecord::TargetAssignmentMember {
                    member_id: k.member_id.to_string(),
                    value: v.map(|v| {
                        from_parts(
                            v.topic_partitions
                                .iter()
                                .map(|t| (t.topic_id, t.partitions.as_slice())),
                        )
                    }),
                },
            ))
        }
        _ => {
            let k = ConsumerGroupCurrentMemberAssignmentKey::decode(&mut kb, key_version)
                .map_err(decode_err)?;
            let v: Option<ConsumerGroupCurrentMemberAssignmentValue> = value_of(value)?;
            let value = v.map(|v| CurrentMemberAssignment {
                member_epoch: v.member_epoch,
                previous_member_epoch: v.previous_member_epoch,
                state: MemberState::from_value(v.state),
                assigned: from_parts(
                    v.assigned_partitions
                        .iter()
                        .map(|t| (t.topic_id, t.partitions.as_slice())),
                ),
                pending_revocation: from_parts(
                    v.partitions_pending_revocation
                        .iter()
                        .map(|t| (t.topic_id, t.partitions.as_slice())),
                ),
            });
            Ok((
                k.group_id.to_string(),
                ConsumerRecord::CurrentMemberAssignment {
                    member_id: k.member_id.to_string(),
                    value,
                },
            ))
        }
    }
}
