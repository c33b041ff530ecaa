//! One incremental fetch session (Kafka's `FetchSession`).

use std::collections::HashSet;
use std::hash::Hash;

use crate::partition::{CachedPartition, PartitionFetch};

/// How many partitions an incremental request added, updated and removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SessionUpdate {
    /// Partitions new to the session.
    pub added: usize,
    /// Partitions already in the session whose parameters were replaced.
    pub updated: usize,
    /// Partitions that `forgotten_topics_data` removed.
    pub removed: usize,
}

/// A fetch session: its id, epoch and partitions in fetch order.
#[derive(Debug, Clone)]
pub struct FetchSession<K> {
    pub(crate) id: i32,
    pub(crate) privileged: bool,
    pub(crate) partitions: crate::PartitionMap<K, CachedPartition>,
    pub(crate) uses_topic_ids: bool,
    pub(crate) creation_ms: i64,
    pub(crate) last_used_ms: i64,
    pub(crate) epoch: i32,
    /// The size the cache's eviction index knows (`None` = not indexed yet).
    pub(crate) cached_size: Option<usize>,
    /// Whether the eviction index holds it as older than `eviction_ms` (at its last touch).
    pub(crate) indexed_old: bool,
    /// Change tracking: the cache's change sequence up to which `dirty` is complete.
    pub(crate) seen_seq: u64,
    /// Change tracking: the partitions an incremental fetch must read (listed by a request,
    /// changed since, or not settled at their last read). Others are skipped.
    pub(crate) dirty: HashSet<K>,
}

impl<K: Hash + Eq + Clone> FetchSession<K> {
    /// The session id.
    pub fn id(&self) -> i32 {
        self.id
    }

    /// The epoch the next incremental request must carry.
    pub fn epoch(&self) -> i32 {
        self.epoch
    }

    /// Whether a follower created it (followers may evict younger consumer sessions).
    pub fn is_privileged(&self) -> bool {
        self.privileged
    }

    /// Whether it was created by a v13+ fetch, which names topics by id.
    pub fn uses_topic_ids(&self) -> bool {
        self.uses_topic_ids
    }

    /// When it was created.
    pub fn creation_ms(&self) -> i64 {
        self.creation_ms
    }

    /// When it was last used by a request.
    pub fn last_used_ms(&self) -> i64 {
        self.last_used_ms
    }

    /// Number of partitions.
    pub fn len(&self) -> usize {
        self.partitions.len()
    }

    /// Whether it has no partitions.
    pub fn is_empty(&self) -> bool {
        self.partitions.is_empty()
    }

    /// Partitions the next incremental fetch reads with change tracking on (the others have
    /// nothing new since their last read). Stale entries of forgotten partitions may be counted
    /// until the next fetch drops them.
    pub fn pending_len(&self) -> usize {
        self.dirty.len()
    }

    /// The cached state of one partition.
    pub fn partition(&self, key: &K) -> Option<&CachedPartition> {
        self.partitions.get(key)
    }

    /// The partitions in fetch order (partitions that returned records move to the back, so
    /// every partition gets its turn when `max_bytes` runs out).
    pub fn partitions(&self) -> impl Iterator<Item = (&K, &CachedPartition)> {
        self.partitions.iter()
    }

    /// Applies an incremental request: listed partitions are added or get their new parameters,
    /// then the forgotten ones are removed.
    pub(crate) fn update(
        &mut self,
        fetch_data: impl IntoIterator<Item = (K, PartitionFetch)>,
        forgotten: impl IntoIterator<Item = K>,
    ) -> SessionUpdate {
        let mut u = SessionUpdate::default();
        for (key, request) in fetch_data {
            match self.partitions.get_mut(&key) {
                Some(cached) => {
                    cached.request = request;
                    u.updated += 1;
                }
                None => {
                    self.partitions.insert(key, CachedPartition::new(request));
                    u.added += 1;
                }
            }
        }
        for key in forgotten {
            if self.partitions.shift_remove(&key).is_some() {
                u.removed += 1;
            }
        }
        u
    }
}
