//! Model-based property test: the timing wheel against a naive priority-queue timer, driven by a
//! manual clock.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};

use josef_timer::{Insert, TimerHandle, TimingWheel};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Add(u64),
    Cancel(usize),
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u64..2_000).prop_map(Op::Add),
        1 => (0u64..5_000_000).prop_map(Op::Add),
        1 => (0u64..50).prop_map(Op::Add),
        2 => any::<usize>().prop_map(Op::Cancel),
        3 => (0u64..700).prop_map(Op::Advance),
        1 => (0u64..3_000_000).prop_map(Op::Advance),
    ]
}

/// The reference: every live timer in a binary heap keyed by its deadline rounded up to a tick.
struct Model {
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    live: HashSet<usize>,
}

impl Model {
    fn pop_due(&mut self, now: u64) -> Vec<(u64, usize)> {
        let mut out = Vec::new();
        while let Some(&Reverse((d, id))) = self.heap.peek() {
            if d > now {
                break;
            }
            self.heap.pop();
            if self.live.remove(&id) {
                out.push((d, id));
            }
        }
        out
    }
}

fn ceil_to(d: u64, tick: u64) -> u64 {
    d.div_ceil(tick) * tick
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn wheel_matches_a_priority_queue_timer(
        tick in prop_oneof![Just(1u64), Just(3), Just(10)],
        // 64+ buckets: occupancy bitmaps of several words in the bucket queue
        wheel_size in prop_oneof![Just(2u32), Just(3), Just(8), Just(20), Just(65), Just(300)],
        start in 0u64..10_000,
        ops in proptest::collection::vec(op(), 1..200),
    ) {
        let mut wheel = TimingWheel::new(tick, wheel_size, start).unwrap();
        let mut model = Model { heap: BinaryHeap::new(), live: HashSet::new() };
        let mut now = start;
        let mut deadlines: Vec<u64> = Vec::new();
        let mut handles: Vec<TimerHandle> = Vec::new();
        let mut cancelled: HashSet<usize> = HashSet::new();
        let mut ran: HashSet<usize> = HashSet::new();
        let mut scheduled = 0u64;

        for op in ops {
            match op {
                Op::Add(delay) => {
                    let id = deadlines.len();
                    let deadline = now + delay;
                    deadlines.push(deadline);
                    match wheel.add(deadline, id) {
                        Insert::Scheduled(h) => {
                            handles.push(h);
                            scheduled += 1;
                            model.heap.push(Reverse((ceil_to(deadline, tick), id)));
                            model.live.insert(id);
                        }
                        Insert::Due(got) => {
                            prop_assert_eq!(got, id);
                            // due at once only if its deadline has passed, and only within a tick
                            prop_assert!(deadline <= now, "due early: {deadline} > {now}");
                            prop_assert!(ceil_to(deadline, tick) <= wheel.current_time());
                            handles.push(TimerHandle::NONE);
                            ran.insert(id);
                        }
                    }
                }
                Op::Cancel(i) => {
                    if handles.is_empty() {
                        continue;
                    }
                    let id = i % handles.len();
                    let expected = model.live.remove(&id);
                    let got = wheel.cancel(handles[id]);
                    prop_assert_eq!(got.is_some(), expected, "cancel of timer {}", id);
                    if expected {
                        prop_assert_eq!(got, Some(id));
                        cancelled.insert(id);
                    }
                }
                Op::Advance(by) => {
                    now += by;
                    let got = wheel.advance_clock_collect(now);
                    let want = model.pop_due(now);
                    for &id in &got {
                        prop_assert!(!cancelled.contains(&id), "cancelled timer {} ran", id);
                        prop_assert!(ran.insert(id), "timer {} ran twice", id);
                        prop_assert!(deadlines[id] <= now, "timer {} ran before its deadline", id);
                    }
                    // in deadline order (at tick granularity)
                    let got_d: Vec<u64> = got.iter().map(|&id| ceil_to(deadlines[id], tick)).collect();
                    prop_assert!(got_d.windows(2).all(|w| w[0] <= w[1]), "out of order: {:?}", got_d);
                    let mut got_sorted = got.clone();
                    got_sorted.sort_unstable();
                    let mut want_ids: Vec<usize> = want.iter().map(|&(_, id)| id).collect();
                    want_ids.sort_unstable();
                    prop_assert_eq!(got_sorted, want_ids);
                    // whatever has not run is less than one tick past its deadline
                    for &id in &model.live {
                        prop_assert!(deadlines[id] + tick > now, "timer {} late by a tick or more", id);
                    }
                    // nothing queued is due any more
                    prop_assert!(wheel.next_expiration().map_or(true, |e| e > now));
                }
            }
            prop_assert_eq!(wheel.len(), model.live.len());
            // The queue's soonest expiration is a lower bound of every live deadline (a bucket is
            // queued under the earliest deadline it received), and exact while nothing was
            // cancelled.
            let soonest_live = model
                .live
                .iter()
                .map(|&id| ceil_to(deadlines[id], tick))
                .min();
            match (wheel.next_expiration(), soonest_live) {
                (Some(e), Some(d)) => {
                    prop_assert!(e <= d, "queued {} after live deadline {}", e, d);
                    if cancelled.is_empty() {
                        prop_assert_eq!(e, d);
                    }
                }
                (None, Some(d)) => prop_assert!(false, "live deadline {} but nothing queued", d),
                (_, None) => {}
            }
        }

        // Drain: everything still live runs exactly once by its rounded deadline.
        let end = now + 10_000_000;
        let got = wheel.advance_clock_collect(end);
        let want = model.pop_due(end);
        prop_assert_eq!(got.len(), want.len());
        for id in got {
            prop_assert!(ran.insert(id));
            prop_assert!(!cancelled.contains(&id));
        }
        prop_assert!(wheel.is_empty());
        prop_assert_eq!(ran.len() + cancelled.len(), deadlines.len());

        // The clock only moved from one queued non-empty bucket to the next: each flush consumed a
        // bucket enqueue, and a timer causes at most one enqueue per wheel level it passes through.
        let s = wheel.stats();
        prop_assert!(s.bucket_flushes <= s.bucket_enqueues, "{:?}", s);
        prop_assert!(s.bucket_enqueues <= scheduled * s.levels as u64, "{:?} for {} timers", s, scheduled);
    }
}

#[test]
fn sparse_timers_far_apart_cost_a_few_flushes_each() {
    // A tick-by-tick wheel would advance 10^9 times here.
    let mut wheel = TimingWheel::new(1, 20, 0).unwrap();
    for i in 1..=10u64 {
        wheel.add(i * 100_000_000, i);
    }
    let mut got = Vec::new();
    for step in 1..=100u64 {
        wheel.advance_clock(step * 10_000_000, |t| got.push(t));
    }
    assert_eq!(got, (1..=10).collect::<Vec<_>>());
    let s = wheel.stats();
    assert!(
        s.bucket_flushes <= 10 * s.levels as u64,
        "{s:?}: more flushes than timers x levels"
    );
}
