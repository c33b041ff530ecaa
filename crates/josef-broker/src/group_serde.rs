//! `__consumer_offsets` records in Kafka's key/value format (OffsetCommitKey v1 /
//! OffsetCommitValue v1 or v3, GroupMetadataKey v2 / GroupMetadataValue v3).
//!
//! This belongs in josef-group (its docs announce a `GroupRecordSerde`); the broker carries this
//! stopgap until it lands.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use josef_coordinator::{RecordSerde, SerdeError};
use josef_group::record::{GroupMetadata, GroupRecord, MemberMetadata, OffsetKey, OffsetValue};
use josef_protocol::coordinator_records::group_metadata_key::GroupMetadataKey;
use josef_protocol::coordinator_records::group_metadata_value::{
    GroupMetadataValue, MemberMetadata as WireMember,
};
use josef_protocol::coordinator_records::offset_commit_key::OffsetCommitKey;
use josef_protocol::coordinator_records::offset_commit_value::OffsetCommitValue;
use josef_protocol::{Decode, Encode, StrBytes};

/// Kafka's encoding of group coordinator records.
#[derive(Debug, Default, Clone, Copy)]
pub struct KafkaGroupSerde;

fn versioned(version: i16, m: &impl Encode) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(version);
    m.encode(&mut b, version)
        .expect("coordinator record encodes at its own version");
    b.freeze()
}

fn bad(_e: impl std::fmt::Display) -> SerdeError {
    SerdeError::Truncated
}

impl RecordSerde<GroupRecord> for KafkaGroupSerde {
    fn serialize(&self, record: &GroupRecord) -> (Option<Bytes>, Option<Bytes>) {
        match record {
            GroupRecord::OffsetCommit { key, value } => {
                let k = OffsetCommitKey {
                    group: StrBytes::from(key.group.as_str()),
                    topic: StrBytes::from(key.topic.as_str()),
                    partition: key.partition,
                };
                let v = value.as_ref().map(|v| {
                    let version = if v.expire_timestamp.is_some() { 1 } else { 3 };
                    versioned(
                        version,
                        &OffsetCommitValue {
                            offset: v.offset,
                            leader_epoch: if version >= 3 { v.leader_epoch } else { -1 },
                            metadata: StrBytes::from(v.metadata.as_str()),
                            commit_timestamp: v.commit_timestamp,
                            expire_timestamp: v.expire_timestamp.unwrap_or(-1),
                            ..Default::default()
                        },
                    )
                });
                (Some(versioned(1, &k)), v)
            }
            GroupRecord::GroupMetadata { group, value } => {
                let k = GroupMetadataKey {
                    group: StrBytes::from(group.as_str()),
                };
                let v = value.as_ref().map(|g| {
                    versioned(
                        3,
                        &GroupMetadataValue {
                            protocol_type: StrBytes::from(g.protocol_type.as_str()),
                            generation: g.generation,
                            protocol: g.protocol.as_deref().map(StrBytes::from),
                            leader: g.leader.as_deref().map(StrBytes::from),
                            current_state_timestamp: g.current_state_timestamp,
                            members: g
                                .members
                                .iter()
                                .map(|m| WireMember {
                                    member_id: StrBytes::from(m.member_id.as_str()),
                                    group_instance_id: m
                                        .group_instance_id
                                        .as_deref()
                                        .map(StrBytes::from),
                                    client_id: StrBytes::from(m.client_id.as_str()),
                                    client_host: StrBytes::from(m.client_host.as_str()),
                                    rebalance_timeout: m.rebalance_timeout_ms,
                                    session_timeout: m.session_timeout_ms,
                                    subscription: m.subscription.clone(),
                                    assignment: m.assignment.clone(),
                                    ..Default::default()
                                })
                                .collect(),
                            ..Default::default()
                        },
                    )
                });
                (Some(versioned(2, &k)), v)
            }
        }
    }

    fn deserialize(&self, key: &[u8], value: Option<&[u8]>) -> Result<GroupRecord, SerdeError> {
        let mut k = Bytes::copy_from_slice(key);
        if k.len() < 2 {
            return Err(SerdeError::Truncated);
        }
        let kv = k.get_i16();
        let value = value.map(|v| {
            let mut b = Bytes::copy_from_slice(v);
            if b.len() < 2 {
                return Err(SerdeError::Truncated);
            }
            let ver = b.get_i16();
            Ok((ver, b))
        });
        let value = value.transpose()?;
        match kv {
            0 | 1 => {
                let key = OffsetCommitKey::decode(&mut k, kv).map_err(bad)?;
                let value = match value {
                    None => None,
                    Some((ver, mut b)) => {
                        let v = OffsetCommitValue::decode(&mut b, ver).map_err(|_| {
                            SerdeError::UnknownVersion {
                                what: "value",
                                version: ver,
                            }
                        })?;
                        Some(OffsetValue {
                            offset: v.offset,
                            leader_epoch: v.leader_epoch,
                            metadata: v.metadata.to_string(),
                            commit_timestamp: v.commit_timestamp,
                            expire_timestamp: (v.expire_timestamp >= 0 && ver == 1)
                                .then_some(v.expire_timestamp),
                        })
                    }
                };
                Ok(GroupRecord::OffsetCommit {
                    key: OffsetKey {
                        group: key.group.to_string(),
                        topic: key.topic.to_string(),
                        partition: key.partition,
                    },
                    value,
                })
            }
            2 => {
                let key = GroupMetadataKey::decode(&mut k, kv).map_err(bad)?;
                let value = match value {
                    None => None,
                    Some((ver, mut b)) => {
                        let g = GroupMetadataValue::decode(&mut b, ver).map_err(|_| {
                            SerdeError::UnknownVersion {
                                what: "value",
                                version: ver,
                            }
                        })?;
                        Some(GroupMetadata {
                            protocol_type: g.protocol_type.to_string(),
                            generation: g.generation,
                            protocol: g.protocol.map(|s| s.to_string()),
                            leader: g.leader.map(|s| s.to_string()),
                            current_state_timestamp: g.current_state_timestamp,
                            members: g
                                .members
                                .into_iter()
                                .map(|m| MemberMetadata {
                                    member_id: m.member_id.to_string(),
                                    group_instance_id: m.group_instance_id.map(|s| s.to_string()),
                                    client_id: m.client_id.to_string(),
                                    client_host: m.client_host.to_string(),
                                    rebalance_timeout_ms: m.rebalance_timeout,
                                    session_timeout_ms: m.session_timeout,
                                    subscription: m.subscription,
                                    assignment: m.assignment,
                                })
                                .collect(),
                        })
                    }
                };
                Ok(GroupRecord::GroupMetadata {
                    group: key.group.to_string(),
                    value,
                })
            }
            v => Err(SerdeError::UnknownVersion {
                what: "key",
                version: v,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_and_group_records_round_trip() {
        let s = KafkaGroupSerde;
        let recs = vec![
            GroupRecord::OffsetCommit {
                key: OffsetKey {
                    group: "g".into(),
                    topic: "t".into(),
                    partition: 3,
                },
                value: Some(OffsetValue {
                    offset: 42,
                    leader_epoch: 0,
                    metadata: "m".into(),
                    commit_timestamp: 1000,
                    expire_timestamp: None,
                }),
            },
            GroupRecord::GroupMetadata {
                group: "g".into(),
                value: None,
            },
        ];
        for r in recs {
            let (k, v) = s.serialize(&r);
            let back = s.deserialize(&k.unwrap(), v.as_deref()).unwrap();
            assert_eq!(back, r);
        }
    }
}
