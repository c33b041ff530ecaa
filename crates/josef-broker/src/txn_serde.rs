//! `__transaction_state` records in Kafka's key/value format (TransactionLogKey v0,
//! TransactionLogValue v0, or v1 for flexible-record transaction versions).
//!
//! Belongs in josef-txn (its record module is format-free); the broker carries this stopgap.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use josef_coordinator::{RecordSerde, SerdeError};
use josef_protocol::coordinator_records::transaction_log_key::TransactionLogKey;
use josef_protocol::coordinator_records::transaction_log_value::{
    PartitionsSchema, TransactionLogValue,
};
use josef_protocol::{Decode, Encode, StrBytes};
use josef_txn::{TopicPartition, TransactionVersion, TxnLogRecord, TxnLogValue, TxnState};

/// Kafka's encoding of transaction coordinator records.
#[derive(Debug, Default, Clone, Copy)]
pub struct KafkaTxnSerde;

fn versioned(version: i16, m: &impl Encode) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(version);
    m.encode(&mut b, version)
        .expect("transaction record encodes at its own version");
    b.freeze()
}

impl RecordSerde<TxnLogRecord> for KafkaTxnSerde {
    fn serialize(&self, r: &TxnLogRecord) -> (Option<Bytes>, Option<Bytes>) {
        let key = versioned(
            0,
            &TransactionLogKey {
                transactional_id: StrBytes::from(r.transactional_id.as_str()),
            },
        );
        let value = r.value.as_ref().map(|v| {
            let version = if v.client_transaction_version == TransactionVersion::V0 {
                0
            } else {
                1
            };
            let mut by_topic: std::collections::BTreeMap<&str, Vec<i32>> = Default::default();
            for tp in &v.partitions {
                by_topic
                    .entry(tp.topic.as_str())
                    .or_default()
                    .push(tp.partition);
            }
            let flexible = version >= 1;
            versioned(
                version,
                &TransactionLogValue {
                    producer_id: v.producer_id,
                    previous_producer_id: if flexible { v.prev_producer_id } else { -1 },
                    next_producer_id: if flexible { v.next_producer_id } else { -1 },
                    producer_epoch: v.producer_epoch,
                    transaction_timeout_ms: v.txn_timeout_ms,
                    transaction_status: v.state.id(),
                    transaction_partitions: Some(
                        by_topic
                            .into_iter()
                            .map(|(t, ps)| PartitionsSchema {
                                topic: StrBytes::from(t),
                                partition_ids: ps,
                                ..Default::default()
                            })
                            .collect(),
                    ),
                    transaction_last_update_timestamp_ms: v.txn_last_update_timestamp,
                    transaction_start_timestamp_ms: v.txn_start_timestamp,
                    client_transaction_version: if flexible {
                        v.client_transaction_version.feature_level()
                    } else {
                        0
                    },
                    ..Default::default()
                },
            )
        });
        (Some(key), value)
    }

    fn deserialize(&self, key: &[u8], value: Option<&[u8]>) -> Result<TxnLogRecord, SerdeError> {
        let mut k = Bytes::copy_from_slice(key);
        if k.len() < 2 {
            return Err(SerdeError::Truncated);
        }
        let kv = k.get_i16();
        if kv != 0 {
            return Err(SerdeError::UnknownVersion {
                what: "key",
                version: kv,
            });
        }
        let key = TransactionLogKey::decode(&mut k, 0).map_err(|_| SerdeError::Truncated)?;
        let value = match value {
            None => None,
            Some(v) => {
                let mut b = Bytes::copy_from_slice(v);
                if b.len() < 2 {
                    return Err(SerdeError::Truncated);
                }
                let ver = b.get_i16();
                let v = TransactionLogValue::decode(&mut b, ver).map_err(|_| {
                    SerdeError::UnknownVersion {
                        what: "value",
                        version: ver,
                    }
                })?;
                let state =
                    TxnState::from_id(v.transaction_status).ok_or(SerdeError::UnknownVersion {
                        what: "state",
                        version: i16::from(v.transaction_status),
                    })?;
                Some(TxnLogValue {
                    producer_id: v.producer_id,
                    prev_producer_id: v.previous_producer_id,
                    next_producer_id: v.next_producer_id,
                    producer_epoch: v.producer_epoch,
                    last_producer_epoch: -1,
                    txn_timeout_ms: v.transaction_timeout_ms,
                    state,
                    partitions: v
                        .transaction_partitions
                        .unwrap_or_default()
                        .into_iter()
                        .flat_map(|p| {
                            let topic = p.topic.to_string();
                            p.partition_ids.into_iter().map(move |i| TopicPartition {
                                topic: topic.clone(),
                                partition: i,
                            })
                        })
                        .collect(),
                    txn_start_timestamp: v.transaction_start_timestamp_ms,
                    txn_last_update_timestamp: v.transaction_last_update_timestamp_ms,
                    client_transaction_version: TransactionVersion::from_feature_level(
                        v.client_transaction_version,
                    ),
                })
            }
        };
        Ok(TxnLogRecord {
            transactional_id: key.transactional_id.to_string(),
            value,
        })
    }
}
