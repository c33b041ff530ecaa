//! josef-timer's hierarchical wheel side by side with `tokio_util::time::DelayQueue` and a
//! `BinaryHeap` timer: insert+cancel and insert+expire with 1e3..1e6 live timers.
//!
//! Deadlines are request-timeout-like: up to 30 s ahead at 1 ms resolution. In insert+expire the
//! clock moves so that one timer expires per insert on average, keeping the live count steady.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::poll_fn;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use josef_timer::{Insert, ManualClock, Timer, TimerHandle, TimingWheel};
use tokio_util::time::DelayQueue;

const SIZES: [usize; 4] = [1_000, 10_000, 100_000, 1_000_000];
const SPAN_MS: u64 = 30_000;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn delay(&mut self) -> u64 {
        1 + self.next() % SPAN_MS
    }
}

/// The textbook alternative: a binary heap of deadlines with lazy cancellation (a cancelled entry
/// stays in the heap as a tombstone until it surfaces or the heap is compacted).
struct HeapTimer<T> {
    heap: BinaryHeap<Reverse<(u64, u32, u32)>>,
    slots: Vec<(u32, Option<T>)>,
    free: Vec<u32>,
    live: usize,
}

impl<T> HeapTimer<T> {
    fn new() -> Self {
        HeapTimer {
            heap: BinaryHeap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
        }
    }

    fn insert(&mut self, deadline: u64, task: T) -> (u32, u32) {
        let index = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize].1 = Some(task);
                i
            }
            None => {
                self.slots.push((0, Some(task)));
                (self.slots.len() - 1) as u32
            }
        };
        let generation = self.slots[index as usize].0;
        self.heap.push(Reverse((deadline, index, generation)));
        self.live += 1;
        (index, generation)
    }

    fn cancel(&mut self, (index, generation): (u32, u32)) -> Option<T> {
        let slot = &mut self.slots[index as usize];
        if slot.0 != generation {
            return None;
        }
        let task = slot.1.take();
        slot.0 += 1;
        self.free.push(index);
        self.live -= 1;
        if self.heap.len() > 2 * self.live + 1024 {
            let slots = &self.slots;
            self.heap
                .retain(|Reverse((_, i, g))| slots[*i as usize].0 == *g);
        }
        task
    }

    fn expire(&mut self, now: u64, mut f: impl FnMut(T)) {
        while let Some(&Reverse((deadline, index, generation))) = self.heap.peek() {
            if deadline > now {
                break;
            }
            self.heap.pop();
            let slot = &mut self.slots[index as usize];
            if slot.0 == generation {
                slot.0 += 1;
                self.free.push(index);
                self.live -= 1;
                if let Some(t) = slot.1.take() {
                    f(t);
                }
            }
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}

fn insert_cancel(c: &mut Criterion) {
    let mut group = c.benchmark_group("timer/insert_cancel");
    for &n in &SIZES {
        group.bench_with_input(BenchmarkId::new("wheel", n), &n, |b, &n| {
            let mut rng = Rng(0x2545_F491_4F6C_DD1D);
            let mut wheel = TimingWheel::new(1, 20, 0).unwrap();
            for i in 0..n as u64 {
                wheel.add(rng.delay(), i);
            }
            b.iter(|| {
                let Insert::Scheduled(h) = wheel.add(rng.delay(), 0) else {
                    unreachable!()
                };
                wheel.cancel(h)
            });
        });
        group.bench_with_input(BenchmarkId::new("timer_mutex", n), &n, |b, &n| {
            let mut rng = Rng(0x2545_F491_4F6C_DD1D);
            let timer = Timer::new(Arc::new(ManualClock::new(0)));
            for i in 0..n as u64 {
                timer.add(rng.delay(), i);
            }
            b.iter(|| {
                let h: TimerHandle = timer.add(rng.delay(), 0);
                timer.cancel(h)
            });
        });
        group.bench_with_input(BenchmarkId::new("binary_heap", n), &n, |b, &n| {
            let mut rng = Rng(0x2545_F491_4F6C_DD1D);
            let mut heap = HeapTimer::new();
            for i in 0..n as u64 {
                heap.insert(rng.delay(), i);
            }
            b.iter(|| {
                let h = heap.insert(rng.delay(), 0);
                heap.cancel(h)
            });
        });
        group.bench_with_input(BenchmarkId::new("delay_queue", n), &n, |b, &n| {
            let rt = runtime();
            let _guard = rt.enter();
            let mut rng = Rng(0x2545_F491_4F6C_DD1D);
            let mut queue = DelayQueue::with_capacity(n + 1);
            for i in 0..n as u64 {
                queue.insert(i, Duration::from_millis(rng.delay()));
            }
            b.iter(|| {
                let key = queue.insert(0, Duration::from_millis(rng.delay()));
                queue.remove(&key)
            });
        });
    }
    group.finish();
}

/// Virtual time that advances `SPAN_MS / n` ms per insert (in 1/1024 ms steps), so that with a
/// fixed 30 s delay about one timer expires per insert and `n` stay live.
struct Pace {
    acc: u64,
    step: u64,
}

impl Pace {
    fn new(n: usize) -> Self {
        Pace {
            acc: 0,
            step: SPAN_MS * 1024 / n as u64,
        }
    }
    fn tick(&mut self) -> u64 {
        self.acc += self.step;
        self.acc / 1024
    }
}

fn prefill_deadlines(n: usize) -> impl Iterator<Item = u64> {
    // Spread over the next 30 s, as if the steady state had already been running.
    (0..n as u64).map(move |i| 1 + i * SPAN_MS / n as u64)
}

fn insert_expire(c: &mut Criterion) {
    let mut group = c.benchmark_group("timer/insert_expire");
    for &n in &SIZES {
        for (name, wheel_size) in [("wheel", 20), ("wheel_256", 256)] {
            group.bench_with_input(BenchmarkId::new(name, n), &n, |b, &n| {
                let mut wheel = TimingWheel::new(1, wheel_size, 0).unwrap();
                for (i, d) in prefill_deadlines(n).enumerate() {
                    wheel.add(d, i as u64);
                }
                let mut pace = Pace::new(n);
                let mut rng = Rng(7);
                let mut expired = 0u64;
                b.iter(|| {
                    let now = pace.tick();
                    wheel.add(now + SPAN_MS + rng.next() % 4, 0);
                    wheel.advance_clock(now, |_| expired += 1)
                });
                assert!(
                    wheel.len() > n / 2 && wheel.len() < n * 2,
                    "{}",
                    wheel.len()
                );
            });
        }
        group.bench_with_input(BenchmarkId::new("binary_heap", n), &n, |b, &n| {
            let mut heap = HeapTimer::new();
            for (i, d) in prefill_deadlines(n).enumerate() {
                heap.insert(d, i as u64);
            }
            let mut pace = Pace::new(n);
            let mut rng = Rng(7);
            let mut expired = 0u64;
            b.iter(|| {
                let now = pace.tick();
                heap.insert(now + SPAN_MS + rng.next() % 4, 0);
                heap.expire(now, |_| expired += 1);
            });
            assert!(heap.live > n / 2 && heap.live < n * 2);
        });
        group.bench_with_input(BenchmarkId::new("delay_queue", n), &n, |b, &n| {
            let rt = runtime();
            let mut queue = {
                let _guard = rt.enter();
                let mut queue = DelayQueue::with_capacity(2 * n);
                for (i, d) in prefill_deadlines(n).enumerate() {
                    queue.insert(i as u64, Duration::from_millis(d));
                }
                queue
            };
            let mut pace = Pace::new(n);
            let mut rng = Rng(7);
            let mut clock_ms = 0u64;
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let now = pace.tick();
                        queue.insert(0, Duration::from_millis(SPAN_MS + rng.next() % 4));
                        if now > clock_ms {
                            // Move tokio's (paused) clock; the runtime fires the queue's sleep.
                            tokio::time::advance(Duration::from_millis(now - clock_ms)).await;
                            clock_ms = now;
                            while poll_fn(|cx| Poll::Ready(queue.poll_expired(cx)))
                                .await
                                .is_ready_some()
                            {}
                        }
                    }
                    start.elapsed()
                })
            });
            assert!(
                queue.len() > n / 2 && queue.len() < n * 2,
                "{}",
                queue.len()
            );
        });
    }
    group.finish();
}

trait ReadySome {
    fn is_ready_some(&self) -> bool;
}

impl<T> ReadySome for Poll<Option<T>> {
    fn is_ready_some(&self) -> bool {
        matches!(self, Poll::Ready(Some(_)))
    }
}

criterion_group!(benches, insert_cancel, insert_expire);
criterion_main!(benches);
