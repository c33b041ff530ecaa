//! An operation completes exactly once when an event, its expiry and repeated
//! `check_and_complete` calls race on several threads.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Barrier};

use josef_timer::{DelayedOperation, ManualClock, Purgatory, PurgatoryConfig};

struct Op {
    ready: Arc<AtomicBool>,
    completions: Arc<AtomicUsize>,
    expirations: Arc<AtomicUsize>,
    delay_ms: u64,
}

impl DelayedOperation for Op {
    fn delay_ms(&self) -> u64 {
        self.delay_ms
    }
    fn try_complete(&self) -> bool {
        self.ready.load(SeqCst)
    }
    fn on_complete(&self) {
        self.completions.fetch_add(1, SeqCst);
    }
    fn on_expiration(&self) {
        self.expirations.fetch_add(1, SeqCst);
    }
}

#[test]
fn event_vs_expiry_vs_check_and_complete_completes_exactly_once() {
    const ROUNDS: usize = 60;
    const OPS: usize = 64;
    const KEYS: u32 = 4;
    let mut by_event = 0;
    let mut by_expiry = 0;
    for round in 0..ROUNDS {
        let clock = Arc::new(ManualClock::new(0));
        let config = PurgatoryConfig {
            purge_interval: 8, // purge often, so purging races too
            shards: 4,
            ..PurgatoryConfig::default()
        };
        let purgatory: Arc<Purgatory<Op, u32>> =
            Arc::new(Purgatory::with_config(clock.clone(), config).unwrap());
        let ready = Arc::new(AtomicBool::new(false));
        let counters: Vec<(Arc<AtomicUsize>, Arc<AtomicUsize>)> = (0..OPS)
            .map(|_| (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0))))
            .collect();
        let barrier = Barrier::new(4);
        std::thread::scope(|s| {
            // submitter: ops with delays 1..=8 ms under two keys each
            s.spawn(|| {
                barrier.wait();
                for (i, (c, e)) in counters.iter().enumerate() {
                    let op = Op {
                        ready: ready.clone(),
                        completions: c.clone(),
                        expirations: e.clone(),
                        delay_ms: 1 + (i as u64 % 8),
                    };
                    let k = i as u32 % KEYS;
                    purgatory.try_complete_else_watch(op, [k, (k + 1) % KEYS]);
                }
            });
            // the event: flips the condition part-way, then checks every key
            s.spawn(|| {
                barrier.wait();
                for i in 0..200 {
                    if i == 50 + round {
                        ready.store(true, SeqCst);
                    }
                    purgatory.check_and_complete(&(i as u32 % KEYS));
                }
                for k in 0..KEYS {
                    purgatory.check_and_complete(&k);
                }
            });
            // expiry: the clock moves and the reaper runs
            s.spawn(|| {
                barrier.wait();
                for _ in 0..100 {
                    clock.advance(1);
                    purgatory.advance_clock(0);
                    std::thread::yield_now();
                }
            });
            // more checks on every key
            s.spawn(|| {
                barrier.wait();
                for i in 0..300u32 {
                    purgatory.check_and_complete(&(i % KEYS));
                }
            });
        });
        // Whatever is left expires now.
        clock.advance(1_000);
        purgatory.advance_clock(0);
        for (c, e) in &counters {
            assert_eq!(
                c.load(SeqCst),
                1,
                "round {round}: on_complete must run exactly once"
            );
            assert!(e.load(SeqCst) <= 1);
            if e.load(SeqCst) == 1 {
                by_expiry += 1;
            } else {
                by_event += 1;
            }
        }
        assert_eq!(purgatory.num_delayed(), 0, "round {round}");
        purgatory.purge_completed();
        assert_eq!(purgatory.watched(), 0, "round {round}");
    }
    println!("completed by event: {by_event}, by expiry: {by_expiry}");
    // Both paths must have been exercised for the race to mean anything.
    assert!(
        by_event > 0 && by_expiry > 0,
        "event {by_event} expiry {by_expiry}"
    );
}
