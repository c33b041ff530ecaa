//! The log cleaner threads (Kafka's `LogCleaner`): `log.cleaner.threads` workers (default 1),
//! each repeatedly cleaning the filthiest compacted partition that no other worker holds
//! (josef-log's [`CleanerManager`] marks it in progress), and sleeping `log.cleaner.backoff.ms`
//! when none needs cleaning. Nothing runs with `log.cleaner.enable=false`. The number of workers
//! follows the dynamic `log.cleaner.threads` without a restart (Kafka's
//! `LogCleaner.reconfigure`): a worker stopped while it cleans lets that cleaning finish.
//!
//! Retention (`log.retention.check.interval.ms`) stays in [`TopicManager::run_retention`]; as in
//! Kafka, cleaning is the cleaner threads' alone, so a large compaction never delays retention.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use josef_log::cleaner_manager::{CleanerManager, Cleaning};
use josef_protocol::Uuid;

use crate::partition::Partition;
use crate::topics::{now_ms, TopicManager};

/// A partition as the cleaner names it: topic id and index.
pub type LogKey = (Uuid, i32);

/// The state the cleaner threads share.
#[derive(Debug, Default)]
pub struct LogCleaner {
    manager: CleanerManager<LogKey>,
    /// Workers running now.
    running: AtomicUsize,
}

/// Counts a worker as running for as long as its task lives (an aborted task drops it).
struct Running<'a>(&'a AtomicUsize);

impl<'a> Running<'a> {
    fn new(n: &'a AtomicUsize) -> Self {
        n.fetch_add(1, Ordering::SeqCst);
        Running(n)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl LogCleaner {
    /// A cleaner with no partition in progress.
    pub fn new() -> Self {
        Self::default()
    }

    /// The in-progress set the threads share (Kafka's `LogCleanerManager`).
    pub fn manager(&self) -> &CleanerManager<LogKey> {
        &self.manager
    }

    /// Marks the filthiest partition of `topics` that needs cleaning at `now_ms` and no other
    /// thread holds as in progress, and returns it with its guard (Kafka's
    /// `grabFilthiestCompactedLog`); `None` when there is none.
    pub fn grab_filthiest(
        &self,
        topics: &TopicManager,
        now_ms: i64,
    ) -> Option<(Cleaning<'_, LogKey>, Arc<Partition>)> {
        let mut candidates = Vec::new();
        for t in topics.all() {
            for p in &t.partitions {
                let key = (t.id, p.index);
                // Measuring a log another thread is cleaning would wait on its swap.
                if self.manager.is_in_progress(&key) {
                    continue;
                }
                match p.cleanable(now_ms) {
                    Ok(Some(d)) => candidates.push((key, d, p.clone())),
                    Ok(None) => {}
                    Err(e) => {
                        tracing::warn!(topic = %t.name, partition = p.index, error = %e, "cannot measure the log's dirty ratio");
                    }
                }
            }
        }
        let guard = self
            .manager
            .grab_filthiest(candidates.iter().map(|(k, d, _)| (*k, *d)))?;
        let partition = candidates
            .into_iter()
            .find(|(k, _, _)| k == guard.log())
            .map(|(_, _, p)| p)?;
        Some((guard, partition))
    }

    /// One round of a cleaner thread (Kafka's `tryCleanFilthiestLog`): cleans the filthiest
    /// partition no other thread holds. Returns whether it cleaned one (else the thread backs
    /// off).
    pub fn clean_filthiest(&self, topics: &TopicManager) -> bool {
        let now = now_ms();
        let Some((guard, p)) = self.grab_filthiest(topics, now) else {
            return false;
        };
        let cleaned = match p.compact(now) {
            Ok(Some(stats)) => {
                tracing::debug!(topic = %p.topic, partition = p.index, ?stats, "cleaned the log");
                true
            }
            Ok(None) => false,
            Err(e) => {
                tracing::warn!(topic = %p.topic, partition = p.index, error = %e, "compaction failed");
                false
            }
        };
        drop(guard);
        cleaned
    }

    /// Workers running now.
    pub fn running_workers(&self) -> usize {
        self.running.load(Ordering::SeqCst)
    }

    /// Runs as many workers over `topics` as `threads` says (`log.cleaner.threads`, at most
    /// [`MAX_CLEANER_THREADS`]), starting or stopping workers whenever it changes: each cleans
    /// while a partition needs it, else sleeps `backoff`. Aborting the returned task stops every
    /// worker (a cleaning in progress on the blocking pool finishes).
    pub fn run(
        self: &Arc<Self>,
        topics: Arc<TopicManager>,
        mut threads: tokio::sync::watch::Receiver<usize>,
        backoff: Duration,
    ) -> tokio::task::JoinHandle<()> {
        let cleaner = self.clone();
        tokio::spawn(async move {
            // Dropped with this task: every worker aborts with it.
            let mut workers = tokio::task::JoinSet::new();
            let mut handles: Vec<tokio::task::AbortHandle> = Vec::new();
            loop {
                let want = cleaner_workers(*threads.borrow_and_update());
                if want != handles.len() {
                    tracing::info!(
                        from = handles.len(),
                        to = want,
                        "log cleaner threads changed"
                    );
                }
                while handles.len() > want {
                    if let Some(h) = handles.pop() {
                        h.abort();
                    }
                }
                while handles.len() < want {
                    let (c, t) = (cleaner.clone(), topics.clone());
                    handles.push(workers.spawn(async move { c.work(t, backoff).await }));
                }
                while workers.try_join_next().is_some() {}
                if threads.changed().await.is_err() {
                    // The setting can no longer change: keep the workers as they are.
                    std::future::pending::<()>().await;
                }
            }
        })
    }

    /// One worker's loop.
    async fn work(self: Arc<Self>, topics: Arc<TopicManager>, backoff: Duration) {
        let _running = Running::new(&self.running);
        loop {
            let (c, t) = (self.clone(), topics.clone());
            let cleaned = tokio::task::spawn_blocking(move || c.clean_filthiest(&t))
                .await
                .unwrap_or(false);
            if !cleaned {
                tokio::time::sleep(backoff).await;
            }
        }
    }
}

/// The most cleaner workers started, whatever `log.cleaner.threads` says: each cleans on the
/// runtime's blocking pool (512 threads by default), so more could never run at once, and a
/// mistyped huge value would otherwise allocate a task per unit.
pub const MAX_CLEANER_THREADS: usize = 256;

/// The workers started for `configured` `log.cleaner.threads`: the value, capped at
/// [`MAX_CLEANER_THREADS`] with a warning.
pub fn cleaner_workers(configured: usize) -> usize {
    if configured > MAX_CLEANER_THREADS {
        tracing::warn!(
            configured,
            started = MAX_CLEANER_THREADS,
            "log.cleaner.threads is above what can run at once; starting fewer"
        );
    }
    configured.min(MAX_CLEANER_THREADS)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use josef_log::storage::MemoryStorage;

    use super::*;
    use crate::config::BrokerConfig;
    use crate::log_storage::LogStorage;

    /// A compacted topic of three partitions on memory storage; partitions 0 and 1 hold many
    /// closed segments of one key (all but the last record dirty), partition 2 is empty.
    fn topics() -> Arc<TopicManager> {
        let config = Arc::new(BrokerConfig {
            log_dirs: vec!["/josef/a".into()],
            log_storage: LogStorage::Custom(Arc::new(MemoryStorage::new())),
            ..BrokerConfig::default()
        });
        let topics = Arc::new(TopicManager::load(config, None).unwrap());
        let configs = BTreeMap::from([
            ("cleanup.policy".to_string(), "compact".to_string()),
            ("segment.bytes".to_string(), "100".to_string()),
        ]);
        topics.create("c", 3, configs).unwrap();
        for i in 0..2 {
            let p = topics.partition("c", i).unwrap();
            for n in 0..20 {
                let b = josef_log::testing::batch(n, 1, &[(Some(b"k"), Some(b"value"))]);
                p.append_internal(b, 1).unwrap();
            }
            p.flush().unwrap();
            assert!(p.cleanable(now_ms()).unwrap().is_some(), "partition {i}");
        }
        topics
    }

    #[test]
    fn the_default_is_one_cleaner_thread_backing_off_15_s() {
        let c = BrokerConfig::default();
        assert_eq!(
            (c.log_cleaner_threads, c.log_cleaner_backoff_ms),
            (1, 15_000)
        );
    }

    /// Waits (bounded) until `cleaner` runs `n` workers.
    async fn until_running(cleaner: &LogCleaner, n: usize) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while cleaner.running_workers() != n {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{} workers running, not {n}",
                cleaner.running_workers()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test]
    async fn the_workers_follow_the_thread_count_as_it_changes() {
        let topics = topics();
        let cleaner = Arc::new(LogCleaner::new());
        let (threads, rx) = tokio::sync::watch::channel(2);
        let run = cleaner.run(topics, rx, Duration::from_millis(10));
        until_running(&cleaner, 2).await;
        threads.send(3).unwrap();
        until_running(&cleaner, 3).await;
        threads.send(1).unwrap();
        until_running(&cleaner, 1).await;
        // Stopping the run stops its workers.
        run.abort();
        until_running(&cleaner, 0).await;
    }

    #[test]
    fn a_huge_thread_count_starts_a_bounded_number_of_workers() {
        assert_eq!(cleaner_workers(0), 0);
        assert_eq!(cleaner_workers(2), 2);
        assert_eq!(cleaner_workers(usize::MAX), MAX_CLEANER_THREADS);
    }

    #[test]
    fn two_threads_hold_two_different_partitions_never_the_same_one() {
        let topics = topics();
        let cleaner = LogCleaner::new();
        let now = now_ms();
        let (a, _) = cleaner.grab_filthiest(&topics, now).unwrap();
        let (b, _) = cleaner.grab_filthiest(&topics, now).unwrap();
        assert_ne!(a.log(), b.log());
        // Both dirty partitions are held: a third thread finds nothing (partition 2 is clean).
        assert!(cleaner.grab_filthiest(&topics, now).is_none());
        let released = *a.log();
        drop(a);
        let (again, _) = cleaner.grab_filthiest(&topics, now).unwrap();
        assert_eq!(*again.log(), released);
    }

    #[test]
    fn a_thread_cleans_another_partition_while_one_is_held() {
        let topics = topics();
        let cleaner = LogCleaner::new();
        let (held, held_partition) = cleaner.grab_filthiest(&topics, now_ms()).unwrap();
        // The second thread's round cleans the other dirty partition, not the held one.
        assert!(cleaner.clean_filthiest(&topics));
        let other = 1 - held.log().1;
        let other = topics.partition("c", other).unwrap();
        assert!(other.cleanable(now_ms()).unwrap().is_none());
        assert!(held_partition.cleanable(now_ms()).unwrap().is_some());
        // Nothing left for it while the first thread still holds its partition.
        assert!(!cleaner.clean_filthiest(&topics));
        drop(held);
        assert!(cleaner.clean_filthiest(&topics));
        assert!(held_partition.cleanable(now_ms()).unwrap().is_none());
    }
}
