//! The purgatory of delayed operations (Kafka's `DelayedOperationPurgatory`).

mod operation;
mod watchers;

use std::hash::Hash;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

pub use operation::{Delayed, DelayedOperation};
use watchers::Watchers;

use crate::clock::Clock;
use crate::error::ConfigError;
use crate::runner::REAPER_POLL_MS;
use crate::timer::{Timer, TimerConfig};

/// Settings of a [`Purgatory`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PurgatoryConfig {
    /// Name used for the reaper thread (Kafka: `Produce`, `Fetch`, ...).
    pub name: String,
    /// Completed operations are purged from the watch lists once this many more operations were
    /// watched than are still pending in the timer (Kafka's `purgeInterval`, default 1000).
    pub purge_interval: usize,
    /// Number of watcher shards, each with its own lock (Kafka: 512).
    pub shards: usize,
    /// Geometry of the expiry timer.
    pub timer: TimerConfig,
}

impl Default for PurgatoryConfig {
    fn default() -> Self {
        PurgatoryConfig {
            name: "purgatory".to_owned(),
            purge_interval: 1000,
            shards: 512,
            timer: TimerConfig::default(),
        }
    }
}

/// Operations waiting on keys (partitions, groups) until an event lets them complete or they
/// expire. Each operation completes exactly once.
///
/// The broker calls [`Purgatory::try_complete_else_watch`] when a request cannot be answered yet,
/// [`Purgatory::check_and_complete`] whenever something a key's waiters care about changes (the
/// high watermark moved, data was appended), and drives expiry with a [`Reaper`]
/// ([`Purgatory::start_reaper`]), the tokio driver, or [`Purgatory::advance_clock`] in tests.
///
/// ```
/// use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
/// use std::sync::Arc;
/// use josef_timer::{DelayedOperation, ManualClock, Purgatory};
///
/// struct WaitForHw { hw: Arc<AtomicU64>, offset: u64, done: Arc<AtomicBool> }
/// impl DelayedOperation for WaitForHw {
///     fn delay_ms(&self) -> u64 { 30_000 }
///     fn try_complete(&self) -> bool { self.hw.load(SeqCst) >= self.offset }
///     fn on_complete(&self) { self.done.store(true, SeqCst) }
/// }
///
/// let clock = Arc::new(ManualClock::new(0));
/// let purgatory: Purgatory<WaitForHw, &str> = Purgatory::new(clock);
/// let hw = Arc::new(AtomicU64::new(5));
/// let done = Arc::new(AtomicBool::new(false));
/// let op = WaitForHw { hw: hw.clone(), offset: 10, done: done.clone() };
/// assert!(!purgatory.try_complete_else_watch(op, ["topic-0"]));
/// assert_eq!(purgatory.num_delayed(), 1);
///
/// hw.store(10, SeqCst); // the followers caught up
/// assert_eq!(purgatory.check_and_complete(&"topic-0"), 1);
/// assert!(done.load(SeqCst));
/// assert_eq!(purgatory.num_delayed(), 0);
/// ```
pub struct Purgatory<O, K> {
    name: String,
    timer: Timer<Arc<Delayed<O>>>,
    watchers: Watchers<K, O>,
    purge_interval: usize,
    /// Operations watched since the last purge (Kafka's `estimatedTotalOperations`).
    estimated_total: AtomicUsize,
}

impl<O, K> Purgatory<O, K>
where
    O: DelayedOperation,
    K: Hash + Eq + Clone + Send + 'static,
{
    /// A purgatory with Kafka's defaults (purge interval 1000, 512 shards, 1 ms x 20 wheel).
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self::with_config(clock, PurgatoryConfig::default()).expect("default config is valid")
    }

    /// A purgatory with the given settings.
    pub fn with_config(
        clock: Arc<dyn Clock>,
        config: PurgatoryConfig,
    ) -> Result<Self, ConfigError> {
        if config.shards == 0 {
            return Err(ConfigError::Shards);
        }
        Ok(Purgatory {
            name: config.name,
            timer: Timer::with_config(clock, config.timer)?,
            watchers: Watchers::new(config.shards),
            purge_interval: config.purge_interval,
            estimated_total: AtomicUsize::new(0),
        })
    }

    /// The purgatory's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Kafka's `tryCompleteElseWatch`. Under the operation's lock: try to complete it; if it cannot
    /// complete, watch it under every key and try once more (an event may have come between the
    /// first try and the watch, and its `check_and_complete` may not have seen the operation yet).
    /// If it is still incomplete, schedule its expiry after `delay_ms`.
    ///
    /// Returns `true` if this call completed the operation. With no keys the operation can only
    /// complete now or by expiry.
    pub fn try_complete_else_watch(&self, op: O, keys: impl IntoIterator<Item = K>) -> bool {
        let op = Arc::new(Delayed::new(op));
        let completed_here = op.locked(|| {
            if op.try_complete_locked() {
                return true;
            }
            let mut watched = false;
            for key in keys {
                if op.is_completed() {
                    return false;
                }
                self.watchers.watch(key, op.clone());
                watched = true;
            }
            if watched {
                self.estimated_total.fetch_add(1, Ordering::Relaxed);
            }
            op.try_complete_locked()
        });
        if completed_here {
            return true;
        }
        if !op.is_completed() {
            let handle = self.timer.add(op.operation().delay_ms(), op.clone());
            op.set_timer(handle);
            // A completion that raced with `add` may have missed the handle: cancel it here.
            if op.is_completed() {
                self.cancel_timer(&op);
            }
        }
        false
    }

    /// Kafka's `checkAndComplete`: retries the operations watching `key` and returns how many this
    /// call completed. Completed operations are dropped from the key's list on the way.
    pub fn check_and_complete(&self, key: &K) -> usize {
        self.check_and_complete_with(key, |op| op.try_complete())
    }

    /// [`Purgatory::check_and_complete`] with `check` in place of each operation's
    /// `try_complete`, run under the operation's lock with the same exactly-once guarantee.
    ///
    /// For operations over many keys whose condition can only have changed for the key whose
    /// event fired: a fetch parked on 10,000 partitions that any one record completes need not
    /// look at the other 9,999 when one of them changes (Kafka's `DelayedFetch` re-checks every
    /// partition on every event, which makes each event cost the size of the request).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
    /// use std::sync::Arc;
    /// use josef_timer::{DelayedOperation, ManualClock, Purgatory};
    ///
    /// struct AnyHw { hws: Vec<Arc<AtomicU64>> }
    /// impl AnyHw {
    ///     fn moved(&self, i: usize) -> bool { self.hws[i].load(SeqCst) > 0 }
    /// }
    /// impl DelayedOperation for AnyHw {
    ///     fn delay_ms(&self) -> u64 { 500 }
    ///     fn try_complete(&self) -> bool { (0..self.hws.len()).any(|i| self.moved(i)) }
    ///     fn on_complete(&self) {}
    /// }
    ///
    /// let purgatory: Purgatory<AnyHw, usize> = Purgatory::new(Arc::new(ManualClock::new(0)));
    /// let hws: Vec<_> = (0..3).map(|_| Arc::new(AtomicU64::new(0))).collect();
    /// assert!(!purgatory.try_complete_else_watch(AnyHw { hws: hws.clone() }, 0..3));
    /// hws[2].store(7, SeqCst);
    /// assert_eq!(purgatory.check_and_complete_with(&2, |op| op.moved(2)), 1);
    /// ```
    pub fn check_and_complete_with(&self, key: &K, check: impl Fn(&O) -> bool) -> usize {
        // The shard lock is not held while operations run, so `try_complete`/`on_complete` may
        // call back into the purgatory.
        let pending = self.watchers.pending(key);
        let mut completed = 0;
        for op in &pending {
            if op.safe_try_complete_with(|o| check(o)) {
                self.cancel_timer(op);
                completed += 1;
            }
        }
        if completed > 0 {
            self.watchers.remove_completed(key);
        }
        completed
    }

    /// Completes every operation watching `key` now, whatever its condition (e.g. the partition
    /// left this broker), and stops watching the key. Returns how many this call completed.
    pub fn force_complete_all(&self, key: &K) -> usize {
        let mut completed = 0;
        for op in self.watchers.take(key) {
            if op.force_complete() {
                self.cancel_timer(&op);
                completed += 1;
            }
        }
        completed
    }

    /// Expires the operations whose delay has passed, running `on_complete` then `on_expiration`
    /// for each on the calling thread, then purges the watch lists if enough completed operations
    /// accumulated. Waits up to `timeout_ms` (real time) if nothing is due; pass 0 with a
    /// [`crate::ManualClock`]. Returns the number of operations that expired.
    pub fn advance_clock(&self, timeout_ms: u64) -> usize {
        let mut expired = 0;
        for op in self.timer.advance_clock(timeout_ms) {
            // The handle is dead now; clear it so nobody cancels a reused slot.
            op.take_timer();
            if op.force_complete() {
                op.on_expiration();
                expired += 1;
            }
        }
        let delayed = self.num_delayed();
        if self
            .estimated_total
            .load(Ordering::Relaxed)
            .saturating_sub(delayed)
            > self.purge_interval
        {
            self.estimated_total.store(delayed, Ordering::Relaxed);
            self.watchers.purge_completed();
        }
        expired
    }

    /// Drops completed operations from every watch list now; returns how many entries went.
    pub fn purge_completed(&self) -> usize {
        self.watchers.purge_completed()
    }

    /// Operations waiting for expiry (Kafka's `numDelayed`).
    pub fn num_delayed(&self) -> usize {
        self.timer.size()
    }

    /// Entries in all watch lists, completed-but-not-yet-purged ones included (Kafka's `watched`).
    pub fn watched(&self) -> usize {
        self.watchers.watched()
    }

    /// Keys with at least one watcher entry.
    pub fn watched_keys(&self) -> usize {
        self.watchers.keys()
    }

    /// The expiry timer (for its clock, or to hook up a driver).
    pub fn timer(&self) -> &Timer<Arc<Delayed<O>>> {
        &self.timer
    }

    /// Starts the expired-operation reaper thread (`ExpirationReaper-<name>`), which loops
    /// `advance_clock(200)` until the [`Reaper`] is shut down or dropped.
    pub fn start_reaper(self: &Arc<Self>) -> io::Result<Reaper>
    where
        K: Sync,
    {
        let purgatory = self.clone();
        let handle = std::thread::Builder::new()
            .name(format!("ExpirationReaper-{}", self.name))
            .spawn(move || {
                while !purgatory.timer.is_closed() {
                    purgatory.advance_clock(REAPER_POLL_MS);
                }
            })?;
        let purgatory = self.clone();
        Ok(Reaper {
            close: Box::new(move || purgatory.timer.close()),
            handle: Some(handle),
        })
    }

    fn cancel_timer(&self, op: &Delayed<O>) {
        let handle = op.take_timer();
        self.timer.cancel(handle);
    }
}

impl<O, K> std::fmt::Debug for Purgatory<O, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Purgatory")
            .field("name", &self.name)
            .field("timer", &self.timer)
            .finish_non_exhaustive()
    }
}

/// The thread expiring a purgatory's operations; stops when shut down or dropped. Once stopped,
/// the purgatory's timer is closed.
pub struct Reaper {
    close: Box<dyn Fn() + Send + Sync>,
    handle: Option<JoinHandle<()>>,
}

impl Reaper {
    /// Stops the thread and waits for it.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        (self.close)();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        self.stop();
    }
}

impl std::fmt::Debug for Reaper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reaper").finish_non_exhaustive()
    }
}
