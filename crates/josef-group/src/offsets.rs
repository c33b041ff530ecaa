//! Committed offsets and pending transactional offsets, changed only by replaying records.

use std::collections::BTreeMap;

use crate::record::{OffsetKey, OffsetValue};

/// A committed offset and the log offset of the record that wrote it (to order transactional
/// against plain commits when a transaction completes, as Kafka does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedOffset {
    /// The value.
    pub value: OffsetValue,
    /// Offset of the record in `__consumer_offsets`.
    pub record_offset: i64,
}

/// group -> topic -> partition -> offset
pub(crate) type OffsetsByGroup = BTreeMap<String, BTreeMap<String, BTreeMap<i32, CommittedOffset>>>;

/// The offsets of one coordinator shard.
#[derive(Debug, Default, Clone)]
pub struct OffsetStore {
    committed: OffsetsByGroup,
    /// producer id -> offsets written by its open transaction.
    pending: BTreeMap<i64, BTreeMap<OffsetKey, CommittedOffset>>,
}

impl OffsetStore {
    /// The committed offset of a partition.
    pub fn get(&self, group: &str, topic: &str, partition: i32) -> Option<&CommittedOffset> {
        self.committed.get(group)?.get(topic)?.get(&partition)
    }

    /// All committed offsets of a group.
    pub fn group(&self, group: &str) -> Option<&BTreeMap<String, BTreeMap<i32, CommittedOffset>>> {
        self.committed.get(group)
    }

    /// Groups with committed offsets.
    pub fn groups(&self) -> impl Iterator<Item = &String> {
        self.committed.keys()
    }

    /// True if the group has committed offsets.
    pub fn has_offsets(&self, group: &str) -> bool {
        self.committed.contains_key(group)
    }

    /// True if an open transaction wrote an offset for this partition.
    pub fn has_pending(&self, group: &str, topic: &str, partition: i32) -> bool {
        self.pending.values().any(|m| {
            m.keys()
                .any(|k| k.group == group && k.topic == topic && k.partition == partition)
        })
    }

    /// True if an open transaction wrote any offset for the group.
    pub fn group_has_pending(&self, group: &str) -> bool {
        self.pending
            .values()
            .any(|m| m.keys().any(|k| k.group == group))
    }

    /// Producers with open transactional offsets.
    pub fn pending_producers(&self) -> impl Iterator<Item = &i64> {
        self.pending.keys()
    }

    pub(crate) fn put(&mut self, key: &OffsetKey, value: CommittedOffset) {
        self.committed
            .entry(key.group.clone())
            .or_default()
            .entry(key.topic.clone())
            .or_default()
            .insert(key.partition, value);
    }

    pub(crate) fn remove(&mut self, key: &OffsetKey) {
        if let Some(topics) = self.committed.get_mut(&key.group) {
            if let Some(parts) = topics.get_mut(&key.topic) {
                parts.remove(&key.partition);
                if parts.is_empty() {
                    topics.remove(&key.topic);
                }
            }
            if topics.is_empty() {
                self.committed.remove(&key.group);
            }
        }
    }

    /// A transactional commit: kept aside until the transaction's marker.
    pub(crate) fn put_pending(&mut self, producer_id: i64, key: OffsetKey, value: CommittedOffset) {
        self.pending
            .entry(producer_id)
            .or_default()
            .insert(key, value);
    }

    /// A tombstone also clears what open transactions wrote for the partition.
    pub(crate) fn remove_pending_everywhere(&mut self, key: &OffsetKey) {
        for m in self.pending.values_mut() {
            m.remove(key);
        }
        self.pending.retain(|_, m| !m.is_empty());
    }

    /// The transaction marker: on commit the pending offsets become committed unless a later
    /// record already committed that partition; on abort they are dropped.
    pub(crate) fn complete_transaction(&mut self, producer_id: i64, committed: bool) {
        let Some(pending) = self.pending.remove(&producer_id) else {
            return;
        };
        if !committed {
            return;
        }
        for (key, value) in pending {
            let newer = self
                .get(&key.group, &key.topic, key.partition)
                .map(|existing| existing.record_offset > value.record_offset)
                .unwrap_or(false);
            if !newer {
                self.put(&key, value);
            }
        }
    }
}
