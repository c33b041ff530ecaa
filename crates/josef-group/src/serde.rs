//! Kafka's key/value bytes of `__consumer_offsets` records.
//!
//! A key is a big-endian `int16` version followed by the key struct at that version:
//! 0 or 1 = `OffsetCommitKey` (Kafka writes 1), 2 = `GroupMetadataKey`. A value is an `int16`
//! version followed by the value struct; a `null` value is a tombstone. Kafka 3.x writes
//! `OffsetCommitValue` v3 (v1 when the commit carries an explicit expire timestamp) and
//! `GroupMetadataValue` v3; versions 0–4 of both are read. Key versions 3–8 are the consumer
//! group records of KIP-848 (value version 0). Other key versions (regular expressions, share
//! groups) are not hosted here and are rejected with `SerdeError::UnknownVersion`.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use josef_coordinator::{RecordSerde, SerdeError};
use josef_protocol::coordinator_records::group_metadata_value::MemberMetadata as WireMember;
use josef_protocol::coordinator_records::{
    GroupMetadataKey, GroupMetadataValue, OffsetCommitKey, OffsetCommitValue,
};
use josef_protocol::{Decode, Encode, StrBytes};

use crate::record::{GroupMetadata, GroupRecord, MemberMetadata, OffsetKey, OffsetValue};

/// Key version of offset commits (Kafka writes 1; 0 is read too).
pub const OFFSET_COMMIT_KEY_VERSION: i16 = 1;
/// Key version of group metadata.
pub const GROUP_METADATA_KEY_VERSION: i16 = 2;

/// Serializes [`GroupRecord`]s as Kafka does.
///
/// ```
/// use josef_coordinator::RecordSerde;
/// use josef_group::record::{GroupRecord, OffsetKey, OffsetValue};
/// use josef_group::serde::GroupRecordSerde;
///
/// let r = GroupRecord::OffsetCommit {
///     key: OffsetKey { group: "g".into(), topic: "t".into(), partition: 0 },
///     value: Some(OffsetValue { offset: 5, leader_epoch: -1, metadata: String::new(),
///                               commit_timestamp: 1, expire_timestamp: None }),
/// };
/// let serde = GroupRecordSerde::default();
/// let (key, value) = serde.serialize(&r);
/// assert_eq!(&key.as_ref().unwrap()[..2], &[0, 1]); // key version 1
/// assert_eq!(&value.as_ref().unwrap()[..2], &[0, 3]); // value version 3
/// assert_eq!(serde.deserialize(&key.unwrap(), value.as_deref()).unwrap(), r);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct GroupRecordSerde {
    /// `OffsetCommitValue` version for commits without an expire timestamp (3).
    pub offset_commit_value_version: i16,
    /// `GroupMetadataValue` version (3).
    pub group_metadata_value_version: i16,
}

impl Default for GroupRecordSerde {
    fn default() -> Self {
        GroupRecordSerde {
            offset_commit_value_version: 3,
            group_metadata_value_version: 3,
        }
    }
}

fn s(v: &str) -> StrBytes {
    StrBytes::from(v)
}

pub(crate) fn encode_versioned<M: Encode>(m: &M, version: i16) -> Bytes {
    let mut buf = BytesMut::new();
    buf.put_i16(version);
    // Our records only hold fields of the version chosen, so encoding cannot fail.
    m.encode(&mut buf, version)
        .expect("coordinator record fits its version");
    buf.freeze()
}

pub(crate) fn split_version(bytes: &[u8], what: &'static str) -> Result<(i16, Bytes), SerdeError> {
    if bytes.len() < 2 {
        return Err(SerdeError::Truncated);
    }
    let mut b = bytes;
    let version = b.get_i16();
    let _ = what;
    Ok((version, Bytes::copy_from_slice(b)))
}

pub(crate) fn decode_err(e: josef_protocol::DecodeError) -> SerdeError {
    SerdeError::Invalid(e.to_string())
}

impl GroupRecordSerde {
    fn offset_value(&self, v: &OffsetValue) -> Bytes {
        // An explicit expire timestamp only exists in value version 1.
        let version = if v.expire_timestamp.is_some() {
            1
        } else {
            self.offset_commit_value_version
        };
        let wire = OffsetCommitValue {
            offset: v.offset,
            leader_epoch: if version >= 3 { v.leader_epoch } else { -1 },
            metadata: s(&v.metadata),
            commit_timestamp: v.commit_timestamp,
            expire_timestamp: if version == 1 {
                v.expire_timestamp.unwrap_or(-1)
            } else {
                -1
            },
            ..OffsetCommitValue::default()
        };
        encode_versioned(&wire, version)
    }

    fn group_value(&self, v: &GroupMetadata) -> Bytes {
        let version = self.group_metadata_value_version;
        let wire = GroupMetadataValue {
            protocol_type: s(&v.protocol_type),
            generation: v.generation,
            protocol: v.protocol.as_deref().map(s),
            leader: v.leader.as_deref().map(s),
            current_state_timestamp: if version >= 2 {
                v.current_state_timestamp
            } else {
                -1
            },
            members: v
                .members
                .iter()
                .map(|m| WireMember {
                    member_id: s(&m.member_id),
                    group_instance_id: if version >= 3 {
                        m.group_instance_id.as_deref().map(s)
                    } else {
                        None
                    },
                    client_id: s(&m.client_id),
                    client_host: s(&m.client_host),
                    rebalance_timeout: if version >= 1 {
                        m.rebalance_timeout_ms
                    } else {
                        -1
                    },
                    session_timeout: m.session_timeout_ms,
                    subscription: m.subscription.clone(),
                    assignment: m.assignment.clone(),
                    ..WireMember::default()
                })
                .collect(),
            ..GroupMetadataValue::default()
        };
        encode_versioned(&wire, version)
    }
}

impl RecordSerde<GroupRecord> for GroupRecordSerde {
    fn serialize(&self, record: &GroupRecord) -> (Option<Bytes>, Option<Bytes>) {
        match record {
            GroupRecord::OffsetCommit { key, value } => {
                let k = OffsetCommitKey {
                    group: s(&key.group),
                    topic: s(&key.topic),
                    partition: key.partition,
                };
                (
                    Some(encode_versioned(&k, OFFSET_COMMIT_KEY_VERSION)),
                    value.as_ref().map(|v| self.offset_value(v)),
                )
            }
            GroupRecord::Consumer { group, record } => {
                let (k, v) = crate::serde_consumer::serialize(group, record);
                (Some(k), v)
            }
            GroupRecord::GroupMetadata { group, value } => {
                let k = GroupMetadataKey { group: s(group) };
                (
                    Some(encode_versioned(&k, GROUP_METADATA_KEY_VERSION)),
                    value.as_ref().map(|v| self.group_value(v)),
                )
            }
        }
    }

    fn deserialize(&self, key: &[u8], value: Option<&[u8]>) -> Result<GroupRecord, SerdeError> {
        let (key_version, mut kb) = split_version(key, "key")?;
        match key_version {
            0 | 1 => {
                let k = OffsetCommitKey::decode(&mut kb, key_version).map_err(decode_err)?;
                let key = OffsetKey {
                    group: k.group.to_string(),
                    topic: k.topic.to_string(),
                    partition: k.partition,
                };
                let value = match value {
                    None => None,
                    Some(v) => {
                        let (version, mut vb) = split_version(v, "value")?;
                        if !(0..=4).contains(&version) {
                            return Err(SerdeError::UnknownVersion {
                                what: "value",
                                version,
                            });
                        }
                        let w = OffsetCommitValue::decode(&mut vb, version).map_err(decode_err)?;
                        Some(OffsetValue {
                            offset: w.offset,
                            leader_epoch: w.leader_epoch,
                            metadata: w.metadata.to_string(),
                            commit_timestamp: w.commit_timestamp,
                            expire_timestamp: Some(w.expire_timestamp).filter(|e| *e != -1),
                        })
                    }
                };
                Ok(GroupRecord::OffsetCommit { key, value })
            }
            2 => {
                let k = GroupMetadataKey::decode(&mut kb, key_version).map_err(decode_err)?;
                let value = match value {
                    None => None,
                    Some(v) => {
                        let (version, mut vb) = split_version(v, "value")?;
                        if !(0..=4).contains(&version) {
                            return Err(SerdeError::UnknownVersion {
                                what: "value",
                                version,
                            });
                        }
                        let w = GroupMetadataValue::decode(&mut vb, version).map_err(decode_err)?;
                        Some(GroupMetadata {
                            protocol_type: w.protocol_type.to_string(),
                            generation: w.generation,
                            protocol: w.protocol.map(|p| p.to_string()),
                            leader: w.leader.map(|p| p.to_string()),
                            current_state_timestamp: w.current_state_timestamp,
                            members: w
                                .members
                                .into_iter()
                                .map(|m| MemberMetadata {
                                    member_id: m.member_id.to_string(),
                                    group_instance_id: m.group_instance_id.map(|i| i.to_string()),
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
                    group: k.group.to_string(),
                    value,
                })
            }
            3..=8 => {
                let (group, record) = crate::serde_consumer::deserialize(key_version, kb, value)?;
                Ok(GroupRecord::Consumer { group, record })
            }
            version => Err(SerdeError::UnknownVersion {
                what: "key",
                version,
            }),
        }
    }
}
