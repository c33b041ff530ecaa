//! Behaviour of the purgatory, driven by a manual clock.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

use josef_timer::{Clock, DelayedOperation, ManualClock, Purgatory, PurgatoryConfig, SystemClock};
use parking_lot::Mutex;

/// Completes once `level` reaches `target`; records what happened to it.
struct WaitFor {
    level: Arc<AtomicU64>,
    target: u64,
    delay_ms: u64,
    events: Arc<Mutex<Vec<&'static str>>>,
}

impl DelayedOperation for WaitFor {
    fn delay_ms(&self) -> u64 {
        self.delay_ms
    }
    fn try_complete(&self) -> bool {
        self.level.load(SeqCst) >= self.target
    }
    fn on_complete(&self) {
        self.events.lock().push("complete");
    }
    fn on_expiration(&self) {
        self.events.lock().push("expire");
    }
}

struct Fixture {
    clock: Arc<ManualClock>,
    level: Arc<AtomicU64>,
    purgatory: Purgatory<WaitFor, u32>,
}

impl Fixture {
    fn new(purge_interval: usize) -> Self {
        let clock = Arc::new(ManualClock::new(1_000));
        let config = PurgatoryConfig {
            purge_interval,
            ..PurgatoryConfig::default()
        };
        Fixture {
            purgatory: Purgatory::with_config(clock.clone(), config).unwrap(),
            clock,
            level: Arc::new(AtomicU64::new(0)),
        }
    }

    fn op(&self, target: u64, delay_ms: u64) -> (WaitFor, Arc<Mutex<Vec<&'static str>>>) {
        let events = Arc::new(Mutex::new(Vec::new()));
        let op = WaitFor {
            level: self.level.clone(),
            target,
            delay_ms,
            events: events.clone(),
        };
        (op, events)
    }
}

#[test]
fn satisfied_operation_completes_at_once_without_watching_or_a_timer() {
    let f = Fixture::new(1000);
    f.level.store(5, SeqCst);
    let (op, events) = f.op(5, 100);
    assert!(f.purgatory.try_complete_else_watch(op, [1, 2]));
    assert_eq!(*events.lock(), ["complete"]);
    assert_eq!(f.purgatory.watched(), 0);
    assert_eq!(f.purgatory.num_delayed(), 0);
}

#[test]
fn unsatisfied_operation_is_watched_under_every_key_and_timed() {
    let f = Fixture::new(1000);
    let (op, events) = f.op(5, 100);
    assert!(!f.purgatory.try_complete_else_watch(op, [1, 2, 3]));
    assert!(events.lock().is_empty());
    assert_eq!(f.purgatory.watched(), 3);
    assert_eq!(f.purgatory.watched_keys(), 3);
    assert_eq!(f.purgatory.num_delayed(), 1);
}

#[test]
fn expiry_runs_on_complete_then_on_expiration_never_before_the_delay() {
    let f = Fixture::new(1000);
    let (op, events) = f.op(5, 100);
    f.purgatory.try_complete_else_watch(op, [1]);
    f.clock.advance(99);
    assert_eq!(f.purgatory.advance_clock(0), 0);
    assert!(events.lock().is_empty());
    f.clock.advance(1);
    assert_eq!(f.purgatory.advance_clock(0), 1);
    assert_eq!(*events.lock(), ["complete", "expire"]);
    assert_eq!(f.purgatory.num_delayed(), 0);
    // a late event does not complete it again
    f.level.store(5, SeqCst);
    assert_eq!(f.purgatory.check_and_complete(&1), 0);
    assert_eq!(*events.lock(), ["complete", "expire"]);
}

#[test]
fn check_and_complete_completes_only_satisfied_operations_and_cancels_their_timers() {
    let f = Fixture::new(1000);
    let (a, ea) = f.op(5, 100);
    let (b, eb) = f.op(10, 100);
    f.purgatory.try_complete_else_watch(a, [7]);
    f.purgatory.try_complete_else_watch(b, [7]);
    f.level.store(5, SeqCst);
    assert_eq!(f.purgatory.check_and_complete(&7), 1);
    assert_eq!(*ea.lock(), ["complete"]);
    assert!(eb.lock().is_empty());
    assert_eq!(f.purgatory.num_delayed(), 1, "a's timer was cancelled");
    assert_eq!(
        f.purgatory.watched(),
        1,
        "a left the list of the checked key"
    );
    assert_eq!(f.purgatory.check_and_complete(&8), 0, "unknown key");
    f.clock.advance(100);
    assert_eq!(f.purgatory.advance_clock(0), 1);
    assert_eq!(
        *ea.lock(),
        ["complete"],
        "a does not expire after completing"
    );
    assert_eq!(*eb.lock(), ["complete", "expire"]);
}

#[test]
fn operation_watched_under_several_keys_completes_once() {
    let f = Fixture::new(1000);
    let (op, events) = f.op(1, 100);
    f.purgatory.try_complete_else_watch(op, [1, 2, 3]);
    f.level.store(1, SeqCst);
    let n: usize = [1, 2, 3, 1]
        .iter()
        .map(|k| f.purgatory.check_and_complete(k))
        .sum();
    assert_eq!(n, 1);
    assert_eq!(*events.lock(), ["complete"]);
    f.clock.advance(1_000);
    assert_eq!(f.purgatory.advance_clock(0), 0);
}

#[test]
fn completed_operations_are_purged_once_purge_interval_is_exceeded() {
    let f = Fixture::new(10);
    // 11 operations watched under keys 1 and 2; completed through key 1 only, so key 2's list
    // keeps the completed ones until a purge.
    for _ in 0..11 {
        let (op, _) = f.op(1, 60_000);
        f.purgatory.try_complete_else_watch(op, [1, 2]);
    }
    f.level.store(1, SeqCst);
    assert_eq!(f.purgatory.check_and_complete(&1), 11);
    assert_eq!(f.purgatory.watched(), 11, "key 2 still lists them");
    f.purgatory.advance_clock(0);
    assert_eq!(f.purgatory.watched(), 0);
    assert_eq!(f.purgatory.watched_keys(), 0);
}

#[test]
fn no_purge_below_purge_interval() {
    let f = Fixture::new(10);
    for _ in 0..10 {
        let (op, _) = f.op(1, 60_000);
        f.purgatory.try_complete_else_watch(op, [1, 2]);
    }
    f.level.store(1, SeqCst);
    f.purgatory.check_and_complete(&1);
    f.purgatory.advance_clock(0);
    assert_eq!(f.purgatory.watched(), 10);
    assert_eq!(f.purgatory.purge_completed(), 10);
}

#[test]
fn watch_lists_do_not_grow_under_steady_load() {
    let f = Fixture::new(100);
    let mut target = 0;
    for round in 0..50u64 {
        for _ in 0..40 {
            target += 1;
            let (op, _) = f.op(target, 30_000);
            f.purgatory
                .try_complete_else_watch(op, [round as u32 % 3, 100 + round as u32 % 5]);
        }
        f.level.store(target, SeqCst);
        for k in 0..3 {
            f.purgatory.check_and_complete(&k);
        }
        f.clock.advance(10);
        f.purgatory.advance_clock(0);
        // keys 100..105 are never checked; only purging keeps them short
        assert!(
            f.purgatory.watched() <= 2 * 100 + 2 * 40,
            "{}",
            f.purgatory.watched()
        );
    }
}

#[test]
fn force_complete_all_completes_every_watcher_of_a_key() {
    let f = Fixture::new(1000);
    let (a, ea) = f.op(9, 100);
    let (b, eb) = f.op(9, 100);
    f.purgatory.try_complete_else_watch(a, [1]);
    f.purgatory.try_complete_else_watch(b, [1, 2]);
    assert_eq!(f.purgatory.force_complete_all(&1), 2);
    assert_eq!(*ea.lock(), ["complete"]);
    assert_eq!(*eb.lock(), ["complete"]);
    assert_eq!(f.purgatory.num_delayed(), 0);
    assert_eq!(f.purgatory.check_and_complete(&2), 0);
}

#[test]
fn on_complete_may_call_back_into_the_purgatory() {
    // DelayedProduce completion can trigger checks on other keys; the shard lock must not be held.
    type Slot = Arc<Mutex<Option<Arc<Purgatory<Chain, u32>>>>>;
    struct Chain {
        purgatory: Slot,
        done: Arc<AtomicUsize>,
        key: u32,
    }
    impl DelayedOperation for Chain {
        fn delay_ms(&self) -> u64 {
            1_000
        }
        fn try_complete(&self) -> bool {
            true
        }
        fn on_complete(&self) {
            self.done.fetch_add(1, SeqCst);
            let p = self.purgatory.lock().clone();
            if let Some(p) = p {
                p.check_and_complete(&self.key);
                p.check_and_complete(&(self.key + 1));
            }
        }
    }
    let slot: Slot = Arc::new(Mutex::new(None));
    let p = Arc::new(Purgatory::new(Arc::new(ManualClock::new(0))));
    *slot.lock() = Some(p.clone());
    let done = Arc::new(AtomicUsize::new(0));
    let op = Chain {
        purgatory: slot.clone(),
        done: done.clone(),
        key: 1,
    };
    assert!(p.try_complete_else_watch(op, [1]));
    assert_eq!(done.load(SeqCst), 1);
    *slot.lock() = None; // break the cycle
}

#[test]
fn reaper_thread_expires_operations_in_real_time() {
    let purgatory: Arc<Purgatory<WaitFor, u32>> = Arc::new(Purgatory::new(Arc::new(SystemClock)));
    let reaper = purgatory.start_reaper().unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let start = SystemClock.now_ms();
    purgatory.try_complete_else_watch(
        WaitFor {
            level: Arc::new(AtomicU64::new(0)),
            target: 1,
            delay_ms: 30,
            events: events.clone(),
        },
        [1],
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while events.lock().len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(*events.lock(), ["complete", "expire"]);
    assert!(SystemClock.now_ms() - start >= 30);
    let t = Instant::now();
    reaper.shutdown();
    assert!(t.elapsed() < Duration::from_secs(2));
}

#[test]
fn shards_config_is_validated() {
    let config = PurgatoryConfig {
        shards: 0,
        ..PurgatoryConfig::default()
    };
    assert!(Purgatory::<WaitFor, u32>::with_config(Arc::new(ManualClock::new(0)), config).is_err());
    let _ = AtomicBool::new(false);
}
