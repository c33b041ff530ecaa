//! Keyed timers: a trait the shards schedule through, and a manual implementation for tests and
//! for brokers that poll it from their own clock.

use std::collections::{BTreeMap, BTreeSet};

/// Keyed timer: scheduling a key that is already scheduled replaces its deadline (as Kafka's
/// `CoordinatorTimer.schedule` does), so a session timeout can be pushed back by rescheduling it.
pub trait CoordinatorTimer<K> {
    /// Arms (or re-arms) `key` to fire at `deadline_ms`.
    fn schedule(&mut self, key: K, deadline_ms: i64);
    /// Disarms `key`; no effect if it is not scheduled.
    fn cancel(&mut self, key: &K);
}

/// A [`CoordinatorTimer`] kept in ordered maps and fired by polling with the current time.
///
/// Keys with equal deadlines fire in the order they were scheduled, so runs are deterministic.
///
/// ```
/// use josef_coordinator::{CoordinatorTimer, ManualTimer};
///
/// let mut t = ManualTimer::new();
/// t.schedule("session-a", 100);
/// t.schedule("session-b", 50);
/// t.schedule("session-a", 150); // replaces the first deadline
/// assert_eq!(t.next_deadline(), Some(50));
/// assert_eq!(t.poll_expired(120), vec!["session-b"]);
/// assert_eq!(t.poll_expired(150), vec!["session-a"]);
/// assert!(t.is_empty());
/// ```
#[derive(Debug, Clone)]
pub struct ManualTimer<K> {
    by_deadline: BTreeSet<(i64, u64, K)>,
    by_key: BTreeMap<K, (i64, u64)>,
    seq: u64,
}

impl<K: Ord + Clone> Default for ManualTimer<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Ord + Clone> ManualTimer<K> {
    /// An empty timer.
    pub fn new() -> Self {
        Self {
            by_deadline: BTreeSet::new(),
            by_key: BTreeMap::new(),
            seq: 0,
        }
    }

    /// Removes and returns every key whose deadline is `<= now_ms`, earliest first.
    pub fn poll_expired(&mut self, now_ms: i64) -> Vec<K> {
        let mut out = Vec::new();
        while let Some(first) = self.by_deadline.first() {
            if first.0 > now_ms {
                break;
            }
            let (_, _, key) = self.by_deadline.pop_first().expect("checked non-empty");
            self.by_key.remove(&key);
            out.push(key);
        }
        out
    }

    /// The earliest deadline, if any key is scheduled.
    pub fn next_deadline(&self) -> Option<i64> {
        self.by_deadline.first().map(|e| e.0)
    }

    /// The deadline of `key`, if scheduled.
    pub fn deadline_of(&self, key: &K) -> Option<i64> {
        self.by_key.get(key).map(|e| e.0)
    }

    /// Whether `key` is scheduled.
    pub fn contains(&self, key: &K) -> bool {
        self.by_key.contains_key(key)
    }

    /// Number of scheduled keys.
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// Whether no key is scheduled.
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }
}

impl<K: Ord + Clone> CoordinatorTimer<K> for ManualTimer<K> {
    fn schedule(&mut self, key: K, deadline_ms: i64) {
        self.cancel(&key);
        let seq = self.seq;
        self.seq += 1;
        self.by_deadline.insert((deadline_ms, seq, key.clone()));
        self.by_key.insert(key, (deadline_ms, seq));
    }

    fn cancel(&mut self, key: &K) {
        if let Some((deadline, seq)) = self.by_key.remove(key) {
            self.by_deadline.remove(&(deadline, seq, key.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_removes_the_key() {
        let mut t = ManualTimer::new();
        t.schedule(1u32, 10);
        t.cancel(&1);
        t.cancel(&2);
        assert!(t.poll_expired(100).is_empty());
        assert_eq!(t.next_deadline(), None);
    }

    #[test]
    fn equal_deadlines_fire_in_schedule_order() {
        let mut t = ManualTimer::new();
        t.schedule(3u32, 10);
        t.schedule(1u32, 10);
        t.schedule(2u32, 10);
        assert_eq!(t.poll_expired(10), vec![3, 1, 2]);
    }

    #[test]
    fn reschedule_replaces_deadline() {
        let mut t = ManualTimer::new();
        t.schedule(1u32, 10);
        t.schedule(1u32, 30);
        assert_eq!(t.len(), 1);
        assert_eq!(t.deadline_of(&1), Some(30));
        assert!(t.poll_expired(20).is_empty());
        assert_eq!(t.poll_expired(30), vec![1]);
    }
}
