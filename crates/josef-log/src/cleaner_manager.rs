//! Which log each cleaner thread cleans (Kafka's `LogCleanerManager`): with
//! `log.cleaner.threads` > 1 the threads share one manager, each asks it for the filthiest log
//! that needs cleaning, and the manager marks the log it hands out as in progress until the
//! thread is done with it, so two threads never clean the same log at once.
//!
//! The manager only keeps the in-progress set; how dirty each log is comes from the caller
//! ([`crate::Log::cleanable`]), measured just before the choice.
//!
//! ```
//! use josef_log::cleaner_manager::{CleanerManager, Dirtiness};
//!
//! let manager = CleanerManager::new();
//! let d = |ratio| Dirtiness { overdue: false, dirty_ratio: ratio };
//! let first = manager.grab_filthiest([("a", d(0.6)), ("b", d(0.9))]).unwrap();
//! assert_eq!(*first.log(), "b");
//! // "b" is being cleaned: a second thread gets the next filthiest.
//! let second = manager.grab_filthiest([("a", d(0.6)), ("b", d(0.9))]).unwrap();
//! assert_eq!(*second.log(), "a");
//! drop(first);
//! assert!(!manager.is_in_progress(&"b"));
//! ```

use std::collections::HashSet;
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard};

/// How much a log needs cleaning, as the cleaner ranks logs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dirtiness {
    /// Its first dirty record is older than `max.compaction.lag.ms`: Kafka cleans these logs
    /// before any other, whatever their ratio.
    pub overdue: bool,
    /// Dirty bytes over cleanable bytes (Kafka's `cleanableRatio`), in 0..=1.
    pub dirty_ratio: f64,
}

impl Dirtiness {
    fn rank(&self) -> (bool, f64) {
        (self.overdue, self.dirty_ratio)
    }
}

/// The logs being cleaned, shared by the cleaner threads. `K` names a log (a topic partition).
#[derive(Debug)]
pub struct CleanerManager<K> {
    in_progress: Mutex<HashSet<K>>,
}

impl<K: Eq + Hash + Clone> Default for CleanerManager<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Eq + Hash + Clone> CleanerManager<K> {
    /// A manager with no log in progress.
    pub fn new() -> Self {
        CleanerManager {
            in_progress: Mutex::new(HashSet::new()),
        }
    }

    fn set(&self) -> MutexGuard<'_, HashSet<K>> {
        // The set stays consistent even if a holder panicked: every change is one insert or
        // one remove.
        self.in_progress
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether a cleaner thread holds `log` now (a caller skips measuring it).
    pub fn is_in_progress(&self, log: &K) -> bool {
        self.set().contains(log)
    }

    /// How many logs are being cleaned now.
    pub fn in_progress_count(&self) -> usize {
        self.set().len()
    }

    /// Kafka's `grabFilthiestCompactedLog`: of `candidates` (logs that need cleaning, with how
    /// much), the filthiest one no other thread holds, marked in progress until the returned
    /// guard is dropped. Overdue logs come first; `None` when every candidate is held.
    pub fn grab_filthiest(
        &self,
        candidates: impl IntoIterator<Item = (K, Dirtiness)>,
    ) -> Option<Cleaning<'_, K>> {
        let mut set = self.set();
        let (log, _) = candidates
            .into_iter()
            .filter(|(log, _)| !set.contains(log))
            .max_by(|(_, a), (_, b)| {
                a.rank()
                    .partial_cmp(&b.rank())
                    .unwrap_or(std::cmp::Ordering::Equal)
            })?;
        set.insert(log.clone());
        Some(Cleaning { manager: self, log })
    }
}

/// A log held by one cleaner thread; dropping it is Kafka's `doneCleaning`.
#[derive(Debug)]
pub struct Cleaning<'a, K: Eq + Hash + Clone> {
    manager: &'a CleanerManager<K>,
    log: K,
}

impl<K: Eq + Hash + Clone> Cleaning<'_, K> {
    /// The log this thread cleans.
    pub fn log(&self) -> &K {
        &self.log
    }
}

impl<K: Eq + Hash + Clone> Drop for Cleaning<'_, K> {
    fn drop(&mut self) {
        self.manager.set().remove(&self.log);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(overdue: bool, dirty_ratio: f64) -> Dirtiness {
        Dirtiness {
            overdue,
            dirty_ratio,
        }
    }

    #[test]
    fn two_threads_get_two_different_logs_and_never_the_same_one() {
        let m = CleanerManager::new();
        let logs = || [("t-0", d(false, 0.7)), ("t-1", d(false, 0.8))];
        let a = m.grab_filthiest(logs()).unwrap();
        let b = m.grab_filthiest(logs()).unwrap();
        assert_eq!((*a.log(), *b.log()), ("t-1", "t-0"));
        assert_eq!(m.in_progress_count(), 2);
        // A third thread finds both held.
        assert!(m.grab_filthiest(logs()).is_none());
        drop(a);
        assert_eq!(*m.grab_filthiest(logs()).unwrap().log(), "t-1");
    }

    #[test]
    fn an_overdue_log_comes_before_a_dirtier_one() {
        let m = CleanerManager::new();
        let g = m
            .grab_filthiest([("dirty", d(false, 0.99)), ("late", d(true, 0.1))])
            .unwrap();
        assert_eq!(*g.log(), "late");
    }

    #[test]
    fn done_cleaning_releases_the_log() {
        let m = CleanerManager::new();
        let g = m.grab_filthiest([("t-0", d(false, 0.6))]).unwrap();
        assert!(m.is_in_progress(&"t-0"));
        drop(g);
        assert!(!m.is_in_progress(&"t-0"));
        assert_eq!(m.in_progress_count(), 0);
    }
}
