//! The hierarchical timing wheel (Kafka's `TimingWheel` + `TimerTaskList` + the timer's `DelayQueue`),
//! as one single-threaded data structure that is told the time and never reads a clock.

use crate::bucket_queue::BucketQueue;
use crate::divisor::Divisor;
use crate::error::ConfigError;

/// Index meaning "no slot / no bucket".
const NIL: u32 = u32::MAX;
/// Bucket expiration meaning "not queued" (Kafka's `-1`).
const NOT_QUEUED: u64 = u64::MAX;
/// Deadlines are clamped to this (Kafka's `Long.MAX_VALUE`), which keeps every sum below `u64::MAX`
/// and keeps the top wheel free of bucket collisions even when its interval saturates.
pub const MAX_DEADLINE_MS: u64 = i64::MAX as u64;
/// Largest accepted `tick_ms`.
pub const MAX_TICK_MS: u64 = u32::MAX as u64;
/// Largest accepted `wheel_size`.
pub const MAX_WHEEL_SIZE: u32 = 1 << 16;

/// Identifies one scheduled timer so that it can be cancelled in O(1).
///
/// A handle stays valid until its timer runs or is cancelled; afterwards cancelling it is a no-op
/// (the slot's generation has moved on), even if the slot was reused by another timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimerHandle {
    index: u32,
    generation: u32,
}

impl TimerHandle {
    /// A handle that refers to no timer (what [`crate::Timer::add`] returns for a task that was
    /// already due); cancelling it returns `false`.
    pub const NONE: TimerHandle = TimerHandle {
        index: NIL,
        generation: 0,
    };

    /// Packs the handle into a `u64` (for storing it in an atomic).
    pub fn to_bits(self) -> u64 {
        (u64::from(self.index) << 32) | u64::from(self.generation)
    }

    /// Inverse of [`TimerHandle::to_bits`].
    pub fn from_bits(bits: u64) -> Self {
        TimerHandle {
            index: (bits >> 32) as u32,
            generation: bits as u32,
        }
    }
}

/// What [`TimingWheel::add`] did with a task.
#[derive(Debug, PartialEq, Eq)]
pub enum Insert<T> {
    /// The timer is in a bucket; the handle cancels it.
    Scheduled(TimerHandle),
    /// The deadline is not after the wheel's current time: the caller should run the task now
    /// (Kafka's `add` returning `false`).
    Due(T),
}

/// Counters that show how the wheel moved; used by tests to prove that it never spins over empty
/// ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WheelStats {
    /// Times an empty bucket was put on the delay queue (once per revolution of its wheel at most).
    pub bucket_enqueues: u64,
    /// Times a bucket was taken off the delay queue and flushed (one clock advance each).
    pub bucket_flushes: u64,
    /// Number of wheels (the base wheel plus the overflow wheels created so far).
    pub levels: usize,
}

/// One timer: an entry of the slab and a node of its bucket's intrusive doubly linked list.
/// 24 bytes plus the task (`Option<T>` costs nothing extra when `T` has a niche, e.g. `Box`/`Arc`).
struct Slot<T> {
    task: Option<T>,
    /// Deadline rounded up to a multiple of the base tick.
    deadline: u64,
    prev: u32,
    /// Next node in the bucket, or next free slot when the slot is vacant.
    next: u32,
    /// Bucket holding this timer, `NIL` when the slot is vacant.
    bucket: u32,
    generation: u32,
}

/// A bucket (Kafka's `TimerTaskList`): the ends of its list and the expiration it is queued under:
/// the earliest deadline linked into it since it was last flushed (`NOT_QUEUED` when not queued).
#[derive(Clone, Copy)]
struct Bucket {
    head: u32,
    tail: u32,
    expiration: u64,
}

/// One wheel of the hierarchy. Its buckets are `buckets[level * wheel_size ..][.. wheel_size]`.
#[derive(Clone, Copy)]
struct Level {
    /// The wheel's tick in milliseconds.
    tick: Divisor,
    /// `tick_ms * wheel_size`, saturated at `u64::MAX` for the top wheel.
    interval_ms: u64,
    /// Always a multiple of the tick.
    current_time: u64,
    /// `current_time + interval_ms`, saturated: deadlines below it fit in this wheel.
    end: u64,
    /// `current_time / tick_ms`.
    ticks: u64,
    /// The bucket of `current_time`: `ticks % wheel_size`.
    cursor: u32,
}

/// A hierarchical timing wheel holding tasks of type `T`.
///
/// `add` and `cancel` are O(1); `advance_clock` jumps straight to the next non-empty bucket through a
/// queue of bucket expirations (Kafka's `DelayQueue`; here per-level occupancy bitmaps searched by
/// find-first-set, see `bucket_queue.rs`), so idle time costs nothing. A timer whose
/// deadline is beyond a wheel's span goes to a lazily created overflow wheel whose tick is that span,
/// and comes back down when the overflow bucket expires.
///
/// Deadlines are rounded **up** to a multiple of `tick_ms`, so a task never runs before its deadline
/// and runs at the first `advance_clock(now)` with `now >= deadline rounded up`, i.e. less than one
/// tick late. (Kafka rounds down and may fire up to a tick early; with its default 1 ms tick the two
/// agree.)
///
/// ```
/// use josef_timer::{Insert, TimingWheel};
///
/// let mut wheel = TimingWheel::new(1, 20, 0).unwrap();
/// let Insert::Scheduled(h) = wheel.add(500, "late") else { unreachable!() };
/// wheel.add(30, "soon");
/// assert_eq!(wheel.cancel(h), Some("late"));
///
/// let mut due = Vec::new();
/// wheel.advance_clock(29, |t| due.push(t));
/// assert!(due.is_empty());
/// wheel.advance_clock(30, |t| due.push(t));
/// assert_eq!(due, ["soon"]);
/// ```
pub struct TimingWheel<T> {
    wheel_size: u32,
    /// `wheel_size` as a divisor.
    size_div: Divisor,
    slots: Vec<Slot<T>>,
    free_head: u32,
    buckets: Vec<Bucket>,
    levels: Vec<Level>,
    /// Every queued bucket by expiration; the soonest first.
    queue: BucketQueue,
    len: usize,
    stats: WheelStats,
}

impl<T> TimingWheel<T> {
    /// A wheel of `wheel_size` buckets of `tick_ms` each whose clock starts at `start_ms` (rounded
    /// down to a tick). Kafka's `SystemTimer` uses `tick_ms = 1`, `wheel_size = 20`.
    pub fn new(tick_ms: u64, wheel_size: u32, start_ms: u64) -> Result<Self, ConfigError> {
        if tick_ms == 0 || tick_ms > MAX_TICK_MS {
            return Err(ConfigError::TickMs(tick_ms));
        }
        if !(2..=MAX_WHEEL_SIZE).contains(&wheel_size) {
            return Err(ConfigError::WheelSize(wheel_size));
        }
        let start = start_ms.min(MAX_DEADLINE_MS);
        let mut wheel = TimingWheel {
            wheel_size,
            size_div: Divisor::new(u64::from(wheel_size)),
            slots: Vec::new(),
            free_head: NIL,
            buckets: Vec::new(),
            levels: Vec::new(),
            queue: BucketQueue::new(wheel_size),
            len: 0,
            stats: WheelStats::default(),
        };
        wheel.push_level(tick_ms, start - start % tick_ms);
        Ok(wheel)
    }

    /// Like [`TimingWheel::new`], with room for `capacity` live timers before reallocating.
    pub fn with_capacity(
        tick_ms: u64,
        wheel_size: u32,
        start_ms: u64,
        capacity: usize,
    ) -> Result<Self, ConfigError> {
        let mut wheel = Self::new(tick_ms, wheel_size, start_ms)?;
        wheel.slots.reserve(capacity);
        Ok(wheel)
    }

    /// The base tick in milliseconds.
    pub fn tick_ms(&self) -> u64 {
        self.levels[0].tick.get()
    }

    /// The wheel's current time: the last time it was advanced to, rounded down to a tick.
    pub fn current_time(&self) -> u64 {
        self.levels[0].current_time
    }

    /// Number of scheduled (not yet run, not cancelled) timers.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no timer is scheduled.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Movement counters (see [`WheelStats`]).
    pub fn stats(&self) -> WheelStats {
        WheelStats {
            levels: self.levels.len(),
            ..self.stats
        }
    }

    /// Expiration of the soonest queued bucket: no task is due before it. `None` when nothing is
    /// queued. (A bucket whose timers were all cancelled stays queued until it is reached.)
    pub fn next_expiration(&self) -> Option<u64> {
        self.queue.peek()
    }

    /// Bytes of the slab entry that holds one timer (task included).
    pub fn slot_bytes() -> usize {
        std::mem::size_of::<Slot<T>>()
    }

    /// Schedules `task` to run once the clock reaches `deadline_ms` (clamped to
    /// [`MAX_DEADLINE_MS`]). Returns [`Insert::Due`] with the task when the deadline, rounded up to a
    /// tick, is not after the current time.
    ///
    /// # Panics
    /// If more than `u32::MAX - 1` timers are live at once (like `Vec` on capacity overflow).
    pub fn add(&mut self, deadline_ms: u64, task: T) -> Insert<T> {
        let tick = self.levels[0].tick.get();
        let d = deadline_ms.min(MAX_DEADLINE_MS);
        // Round up so that a timer never fires before its deadline.
        let deadline = d.div_ceil(tick) * tick;
        if deadline <= self.levels[0].current_time {
            return Insert::Due(task);
        }
        let index = self.alloc(task, deadline);
        self.place(index, deadline);
        self.len += 1;
        Insert::Scheduled(TimerHandle {
            index,
            generation: self.slots[index as usize].generation,
        })
    }

    /// Cancels a scheduled timer in O(1) and returns its task; `None` if the handle's timer already
    /// ran or was cancelled.
    pub fn cancel(&mut self, handle: TimerHandle) -> Option<T> {
        let slot = self.slots.get(handle.index as usize)?;
        if slot.generation != handle.generation || slot.bucket == NIL {
            return None;
        }
        self.unlink(handle.index);
        self.len -= 1;
        Some(self.free(handle.index))
    }

    /// Whether the handle's timer is still scheduled.
    pub fn contains(&self, handle: TimerHandle) -> bool {
        self.slots
            .get(handle.index as usize)
            .is_some_and(|s| s.generation == handle.generation && s.bucket != NIL)
    }

    /// Advances the clock to `now_ms`, handing every task that became due to `on_due`, in deadline
    /// order bucket by bucket. Returns the number of tasks handed out. Going backwards is a no-op.
    ///
    /// Each expired bucket is flushed once: its timers are re-inserted, falling into finer wheels or
    /// out as due (Kafka's `advanceClock` + `flush(addTimerTaskEntry)`).
    pub fn advance_clock<F: FnMut(T)>(&mut self, now_ms: u64, mut on_due: F) -> usize {
        let mut ran = 0;
        let size = self.wheel_size as usize;
        while self.queue.peek().is_some_and(|e| e <= now_ms) {
            let buckets = &self.buckets;
            let Some((expiration, level, index)) = self
                .queue
                .pop(|level, index| buckets[level * size + index as usize].expiration)
            else {
                break;
            };
            let bucket = level * size + index as usize;
            debug_assert_eq!(self.buckets[bucket].expiration, expiration);
            self.stats.bucket_flushes += 1;
            let b = &mut self.buckets[bucket];
            let mut cur = b.head;
            *b = Bucket {
                head: NIL,
                tail: NIL,
                expiration: NOT_QUEUED,
            };
            if level == 0 {
                // A bucket of the base wheel spans one tick: every timer in it has the bucket's
                // expiration as its (rounded) deadline and is due, none goes back into the wheel, so
                // the clock can wait for the next coarser bucket or for `now_ms` below.
                while cur != NIL {
                    let next = self.slots[cur as usize].next;
                    self.len -= 1;
                    on_due(self.free(cur));
                    ran += 1;
                    cur = next;
                }
                continue;
            }
            self.set_time(expiration);
            while cur != NIL {
                let slot = &self.slots[cur as usize];
                let (next, deadline) = (slot.next, slot.deadline);
                if !self.place(cur, deadline) {
                    self.len -= 1;
                    on_due(self.free(cur));
                    ran += 1;
                }
                cur = next;
            }
        }
        // Every bucket due by `now_ms` is flushed, so the clock may move to `now_ms` itself; this keeps
        // later deadlines computed from `now_ms` in the finest wheel that can hold them.
        self.set_time(now_ms);
        ran
    }

    /// Runs `advance_clock` and collects the due tasks.
    pub fn advance_clock_collect(&mut self, now_ms: u64) -> Vec<T> {
        let mut out = Vec::new();
        self.advance_clock(now_ms, |t| out.push(t));
        out
    }

    fn push_level(&mut self, tick_ms: u64, base_time: u64) {
        let interval_ms = tick_ms.saturating_mul(u64::from(self.wheel_size));
        let tick = Divisor::new(tick_ms);
        let ticks = tick.div(base_time);
        let current_time = ticks * tick_ms;
        self.levels.push(Level {
            tick,
            interval_ms,
            current_time,
            end: current_time.saturating_add(interval_ms),
            ticks,
            cursor: self.size_div.div_rem(ticks).1 as u32,
        });
        let empty = Bucket {
            head: NIL,
            tail: NIL,
            expiration: NOT_QUEUED,
        };
        let len = self.buckets.len() + self.wheel_size as usize;
        self.buckets.resize(len, empty);
        self.queue.add_level();
    }

    /// Moves every wheel's clock forward to `time` rounded down to its tick (never backwards).
    #[inline]
    fn set_time(&mut self, time: u64) {
        let time = time.min(MAX_DEADLINE_MS);
        let base = &self.levels[0];
        if time < base.current_time.saturating_add(base.tick.get()) {
            return; // within the current base tick: no wheel moves
        }
        // A wheel's tick is the span of the one below (never saturated: a wheel whose span saturates
        // holds every deadline, so no wheel is ever put above it), so its tick count is the lower
        // wheel's divided by the wheel size: one division per wheel that moves.
        let mut ticks = base.tick.div(time);
        for level in &mut self.levels {
            if ticks <= level.ticks {
                break; // upper wheels have coarser ticks: they cannot move either
            }
            let (above, cursor) = self.size_div.div_rem(ticks);
            level.ticks = ticks;
            level.current_time = ticks * level.tick.get();
            level.end = level.current_time.saturating_add(level.interval_ms);
            level.cursor = cursor as u32;
            ticks = above;
        }
    }

    /// Links slot `index` into the bucket its deadline belongs to; `false` if it is due instead.
    #[inline(always)]
    fn place(&mut self, index: u32, deadline: u64) -> bool {
        if deadline <= self.levels[0].current_time {
            return false;
        }
        // The top wheel's `end` is `u64::MAX` (saturated), above every clamped deadline.
        let level = match self.levels.iter().position(|l| deadline < l.end) {
            Some(level) => level,
            None => self.grow_for(deadline),
        };
        let l = &self.levels[level];
        // `deadline / tick % wheel_size`, from the bucket of the wheel's current time: the deadline is
        // less than one span ahead of it.
        let mut in_level = l.cursor + l.tick.div(deadline - l.current_time) as u32;
        if in_level >= self.wheel_size {
            in_level -= self.wheel_size;
        }
        let bucket = level as u32 * self.wheel_size + in_level;
        self.link(bucket, index);
        let b = &mut self.buckets[bucket as usize];
        // A bucket is queued under the earliest deadline it holds (Kafka queues it under the start of
        // its tick). Reached at that time, it hands out its earliest timers instead of cascading them
        // one more level down: with few timers per bucket this saves a bucket flush per timer. The
        // expiration stays within the bucket's tick, so the queue's order of buckets is unchanged.
        if deadline < b.expiration {
            let newly_queued = b.expiration == NOT_QUEUED;
            b.expiration = deadline;
            if newly_queued {
                self.queue.push(level, in_level, deadline);
                self.stats.bucket_enqueues += 1;
            } else {
                self.queue.lower(level, in_level, deadline);
            }
        }
        true
    }

    /// Adds overflow wheels until one holds `deadline`; returns its level.
    #[cold]
    fn grow_for(&mut self, deadline: u64) -> usize {
        loop {
            let top = self.levels[self.levels.len() - 1];
            self.push_level(top.interval_ms, top.current_time);
            if deadline < self.levels[self.levels.len() - 1].end {
                return self.levels.len() - 1;
            }
        }
    }

    fn alloc(&mut self, task: T, deadline: u64) -> u32 {
        let fresh = |generation| Slot {
            task: Some(task),
            deadline,
            prev: NIL,
            next: NIL,
            bucket: NIL,
            generation,
        };
        if self.free_head != NIL {
            let index = self.free_head;
            let slot = &mut self.slots[index as usize];
            self.free_head = slot.next;
            *slot = fresh(slot.generation);
            index
        } else {
            let index = u32::try_from(self.slots.len())
                .ok()
                .filter(|&i| i != NIL)
                .expect("more than u32::MAX - 1 live timers");
            self.slots.push(fresh(0));
            index
        }
    }

    /// Vacates a slot (already unlinked) and returns its task.
    fn free(&mut self, index: u32) -> T {
        let slot = &mut self.slots[index as usize];
        slot.bucket = NIL;
        slot.generation = slot.generation.wrapping_add(1);
        slot.next = self.free_head;
        self.free_head = index;
        slot.task.take().expect("live slot holds a task")
    }

    #[inline(always)]
    fn link(&mut self, bucket: u32, index: u32) {
        let tail = self.buckets[bucket as usize].tail;
        {
            let slot = &mut self.slots[index as usize];
            slot.bucket = bucket;
            slot.prev = tail;
            slot.next = NIL;
        }
        if tail == NIL {
            self.buckets[bucket as usize].head = index;
        } else {
            self.slots[tail as usize].next = index;
        }
        self.buckets[bucket as usize].tail = index;
    }

    fn unlink(&mut self, index: u32) {
        let Slot {
            prev, next, bucket, ..
        } = self.slots[index as usize];
        if prev == NIL {
            self.buckets[bucket as usize].head = next;
        } else {
            self.slots[prev as usize].next = next;
        }
        if next == NIL {
            self.buckets[bucket as usize].tail = prev;
        } else {
            self.slots[next as usize].prev = prev;
        }
    }
}

impl<T> std::fmt::Debug for TimingWheel<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimingWheel")
            .field("tick_ms", &self.levels[0].tick.get())
            .field("wheel_size", &self.wheel_size)
            .field("current_time", &self.current_time())
            .field("len", &self.len)
            .field("stats", &self.stats())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wheel() -> TimingWheel<u32> {
        TimingWheel::new(1, 20, 0).unwrap()
    }

    #[test]
    fn rejects_zero_tick_and_tiny_wheel() {
        assert!(matches!(
            TimingWheel::<()>::new(0, 20, 0),
            Err(ConfigError::TickMs(0))
        ));
        assert!(matches!(
            TimingWheel::<()>::new(1, 1, 0),
            Err(ConfigError::WheelSize(1))
        ));
    }

    #[test]
    fn current_time_is_rounded_down_to_a_tick() {
        let w = TimingWheel::<()>::new(10, 20, 1234).unwrap();
        assert_eq!(w.current_time(), 1230);
    }

    #[test]
    fn deadline_not_after_current_time_is_due_at_once() {
        let mut w = TimingWheel::new(10, 20, 100).unwrap();
        assert_eq!(w.add(100, 1), Insert::Due(1));
        assert_eq!(w.add(95, 2), Insert::Due(2));
        // 101 rounds up to 110, which is in the future.
        assert!(matches!(w.add(101, 3), Insert::Scheduled(_)));
    }

    #[test]
    fn timer_beyond_the_span_goes_to_an_overflow_wheel_and_comes_back_down() {
        let mut w = wheel();
        w.add(1_000_000, 7);
        assert!(w.stats().levels >= 5, "{:?}", w.stats());
        assert!(w.advance_clock_collect(999_999).is_empty());
        assert_eq!(w.advance_clock_collect(1_000_000), vec![7]);
        assert!(w.is_empty());
    }

    #[test]
    fn advancing_over_a_long_gap_does_not_spin_over_empty_ticks() {
        let mut w = wheel();
        w.add(1_000_000_000, 1);
        w.advance_clock(1_000_000_000, |_| {});
        let s = w.stats();
        // one flush per wheel level the timer passed through, not one per tick
        assert!(s.bucket_flushes <= s.levels as u64, "{s:?}");
    }

    #[test]
    fn cancel_is_by_handle_and_stale_handles_are_rejected() {
        let mut w = wheel();
        let Insert::Scheduled(a) = w.add(5, 1) else {
            panic!()
        };
        assert_eq!(w.cancel(a), Some(1));
        assert_eq!(w.cancel(a), None);
        // the slot is reused; the old handle must not cancel the new timer
        let Insert::Scheduled(b) = w.add(5, 2) else {
            panic!()
        };
        assert_eq!(a.index, b.index);
        assert_eq!(w.cancel(a), None);
        assert!(w.contains(b));
        assert_eq!(w.advance_clock_collect(5), vec![2]);
        assert!(!w.contains(b));
        assert_eq!(w.cancel(b), None);
        assert_eq!(w.cancel(TimerHandle::NONE), None);
    }

    #[test]
    fn cancel_in_the_middle_of_a_bucket_keeps_the_rest() {
        let mut w = wheel();
        let hs: Vec<_> = (0..5)
            .map(|i| match w.add(3, i) {
                Insert::Scheduled(h) => h,
                Insert::Due(_) => panic!(),
            })
            .collect();
        w.cancel(hs[2]);
        w.cancel(hs[0]);
        w.cancel(hs[4]);
        assert_eq!(w.advance_clock_collect(3), vec![1, 3]);
    }

    #[test]
    fn bucket_is_enqueued_once_per_revolution() {
        let mut w = wheel();
        for i in 0..100 {
            w.add(7, i);
        }
        assert_eq!(w.stats().bucket_enqueues, 1);
        assert_eq!(w.advance_clock_collect(7).len(), 100);
        // same slot, next revolution
        w.add(27, 0);
        assert_eq!(w.stats().bucket_enqueues, 2);
    }

    #[test]
    fn huge_deadlines_are_clamped_not_overflowed() {
        let mut w = TimingWheel::new(7, 2, u64::MAX).unwrap();
        assert!(matches!(w.add(u64::MAX, 1), Insert::Due(1)));
        let mut w = TimingWheel::new(1, 2, 0).unwrap();
        w.add(u64::MAX, 1);
        w.add(MAX_DEADLINE_MS - 1, 2);
        assert_eq!(w.advance_clock_collect(MAX_DEADLINE_MS - 1), vec![2]);
        assert_eq!(w.advance_clock_collect(u64::MAX), vec![1]);
    }

    #[test]
    fn handle_round_trips_through_bits() {
        let h = TimerHandle {
            index: 12,
            generation: 99,
        };
        assert_eq!(TimerHandle::from_bits(h.to_bits()), h);
    }
}
