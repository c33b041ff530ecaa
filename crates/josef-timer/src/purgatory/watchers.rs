//! Watch lists: for each key, the operations waiting on it, sharded so that threads checking
//! different keys rarely share a lock (Kafka's `WatcherList`s, 512 by default).

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::sync::Arc;

use parking_lot::Mutex;

use super::operation::{Delayed, DelayedOperation};

type List<O> = Vec<Arc<Delayed<O>>>;
type Shard<K, O> = Mutex<HashMap<K, List<O>>>;

pub(crate) struct Watchers<K, O> {
    shards: Box<[Shard<K, O>]>,
    hasher: RandomState,
}

impl<K: Hash + Eq + Clone, O: DelayedOperation> Watchers<K, O> {
    pub(crate) fn new(shards: usize) -> Self {
        Watchers {
            shards: (0..shards).map(|_| Mutex::new(HashMap::new())).collect(),
            hasher: RandomState::new(),
        }
    }

    fn shard(&self, key: &K) -> &Shard<K, O> {
        let i = self.hasher.hash_one(key) as usize % self.shards.len();
        &self.shards[i]
    }

    pub(crate) fn watch(&self, key: K, op: Arc<Delayed<O>>) {
        self.shard(&key).lock().entry(key).or_default().push(op);
    }

    /// The operations still pending on `key`, dropping completed ones (and the key, once empty).
    pub(crate) fn pending(&self, key: &K) -> List<O> {
        let mut map = self.shard(key).lock();
        let Some(list) = map.get_mut(key) else {
            return Vec::new();
        };
        list.retain(|op| !op.is_completed());
        if list.is_empty() {
            map.remove(key);
            return Vec::new();
        }
        list.clone()
    }

    /// Drops completed operations from `key`'s list.
    pub(crate) fn remove_completed(&self, key: &K) {
        let mut map = self.shard(key).lock();
        if let Some(list) = map.get_mut(key) {
            list.retain(|op| !op.is_completed());
            if list.is_empty() {
                map.remove(key);
            }
        }
    }

    /// Takes every operation off `key`'s list.
    pub(crate) fn take(&self, key: &K) -> List<O> {
        self.shard(key).lock().remove(key).unwrap_or_default()
    }

    /// Drops completed operations from every list; returns how many entries were removed.
    pub(crate) fn purge_completed(&self) -> usize {
        let mut purged = 0;
        for shard in self.shards.iter() {
            let mut map = shard.lock();
            map.retain(|_, list| {
                let before = list.len();
                list.retain(|op| !op.is_completed());
                purged += before - list.len();
                !list.is_empty()
            });
        }
        purged
    }

    /// Total entries over all keys (an operation watched under three keys counts three times).
    pub(crate) fn watched(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().values().map(Vec::len).sum::<usize>())
            .sum()
    }

    /// Number of keys with a non-empty list.
    pub(crate) fn keys(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }
}
