//! Sensors by key, dropped after an hour without a record (Kafka's inactive sensor expiration).

use std::collections::HashMap;
use std::hash::Hash;

use crate::config::{INACTIVE_SENSOR_EXPIRATION_MS, SENSOR_EXPIRY_CHECK_INTERVAL_MS};

#[derive(Debug, Clone)]
struct Entry<S> {
    stat: S,
    last_record_ms: u64,
}

/// A map of sensors whose idle entries are removed once `expiration_ms` passed since their last
/// record. Every access looks for idle entries at most once per 30 s, as Kafka's metrics expiry
/// task does, so the map stays bounded by the keys active within the last hour without the caller
/// driving it; [`expire`](Self::expire) sweeps on demand.
#[derive(Debug, Clone)]
pub(crate) struct SensorMap<K, S> {
    entries: HashMap<K, Entry<S>>,
    expiration_ms: u64,
    last_sweep_ms: u64,
}

impl<K: Eq + Hash + Clone, S> SensorMap<K, S> {
    pub(crate) fn new() -> Self {
        SensorMap {
            entries: HashMap::new(),
            expiration_ms: INACTIVE_SENSOR_EXPIRATION_MS,
            last_sweep_ms: 0,
        }
    }

    /// The sensor of `key`, created with `make` if absent. Does not count as a record.
    pub(crate) fn get_or_create(
        &mut self,
        key: &K,
        now_ms: u64,
        make: impl FnOnce() -> S,
    ) -> &mut S {
        self.maybe_sweep(now_ms);
        if !self.entries.contains_key(key) {
            self.entries.insert(
                key.clone(),
                Entry {
                    stat: make(),
                    last_record_ms: now_ms,
                },
            );
        }
        match self.entries.get_mut(key) {
            Some(e) => &mut e.stat,
            None => unreachable!("inserted above"),
        }
    }

    /// Marks `key` as recorded at `now_ms`.
    pub(crate) fn touch(&mut self, key: &K, now_ms: u64) {
        if let Some(e) = self.entries.get_mut(key) {
            e.last_record_ms = e.last_record_ms.max(now_ms);
        }
    }

    pub(crate) fn get_mut(&mut self, key: &K) -> Option<&mut S> {
        self.entries.get_mut(key).map(|e| &mut e.stat)
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn contains(&self, key: &K) -> bool {
        self.entries.contains_key(key)
    }

    fn maybe_sweep(&mut self, now_ms: u64) {
        if now_ms.saturating_sub(self.last_sweep_ms) >= SENSOR_EXPIRY_CHECK_INTERVAL_MS {
            self.expire(now_ms);
        }
    }

    /// Removes the sensors idle for longer than the expiration; returns how many.
    pub(crate) fn expire(&mut self, now_ms: u64) -> usize {
        self.last_sweep_ms = now_ms;
        let before = self.entries.len();
        let expiration_ms = self.expiration_ms;
        self.entries
            .retain(|_, e| now_ms.saturating_sub(e.last_record_ms) <= expiration_ms);
        before - self.entries.len()
    }
}
