//! The thread-safe timer front (Kafka's `Timer` interface / `SystemTimer` without its threads): a
//! [`TimingWheel`] behind a mutex, fed deadlines from a [`Clock`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::clock::Clock;
use crate::error::ConfigError;
use crate::wheel::{Insert, TimerHandle, TimingWheel};

/// Wheel geometry of a [`Timer`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerConfig {
    /// Base tick in milliseconds (Kafka: 1).
    pub tick_ms: u64,
    /// Buckets per wheel (Kafka: 20).
    pub wheel_size: u32,
}

impl Default for TimerConfig {
    fn default() -> Self {
        TimerConfig {
            tick_ms: 1,
            wheel_size: 20,
        }
    }
}

struct State<T> {
    wheel: TimingWheel<T>,
    /// Tasks that are due and not yet handed out.
    ready: Vec<T>,
    closed: bool,
}

type Waker = Arc<dyn Fn() + Send + Sync>;

/// A thread-safe hierarchical timer: `add(delay, task)` from any thread, and one driver (a
/// [`crate::TimerThread`], the tokio driver, or a test with a [`crate::ManualClock`]) that takes the
/// due tasks out with [`Timer::advance_clock`] / [`Timer::poll_expired`] and runs them.
///
/// ```
/// use std::sync::Arc;
/// use josef_timer::{ManualClock, Timer};
///
/// let clock = Arc::new(ManualClock::new(0));
/// let timer = Timer::new(clock.clone());
/// let h = timer.add(100, "request timeout");
/// timer.add(50, "linger");
/// assert_eq!(timer.size(), 2);
///
/// clock.advance(60);
/// assert_eq!(timer.poll_expired(), vec!["linger"]);
/// assert!(timer.cancel(h)); // the response came in time
/// clock.advance(100);
/// assert!(timer.poll_expired().is_empty());
/// assert_eq!(timer.size(), 0);
/// ```
pub struct Timer<T> {
    state: Mutex<State<T>>,
    cond: Condvar,
    clock: Arc<dyn Clock>,
    waker: Mutex<Option<Waker>>,
}

impl<T> Timer<T> {
    /// A timer with Kafka's default geometry (1 ms tick, 20 buckets).
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self::with_config(clock, TimerConfig::default()).expect("default config is valid")
    }

    /// A timer with the given geometry.
    pub fn with_config(clock: Arc<dyn Clock>, config: TimerConfig) -> Result<Self, ConfigError> {
        let wheel = TimingWheel::new(config.tick_ms, config.wheel_size, clock.now_ms())?;
        Ok(Timer {
            state: Mutex::new(State {
                wheel,
                ready: Vec::new(),
                closed: false,
            }),
            cond: Condvar::new(),
            clock,
            waker: Mutex::new(None),
        })
    }

    /// The clock deadlines are computed from.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Schedules `task` to become due `delay_ms` from now. A task that is due at once (delay 0 on a
    /// tick boundary) is queued for the next `advance_clock`/`poll_expired` and gets
    /// [`TimerHandle::NONE`].
    pub fn add(&self, delay_ms: u64, task: T) -> TimerHandle {
        self.add_at(self.clock.now_ms_ceil().saturating_add(delay_ms), task)
    }

    /// Schedules `task` to become due at `deadline_ms` on the timer's clock.
    pub fn add_at(&self, deadline_ms: u64, task: T) -> TimerHandle {
        let mut state = self.state.lock();
        let before = state.wheel.next_expiration();
        let (handle, wake) = match state.wheel.add(deadline_ms, task) {
            Insert::Scheduled(h) => {
                // Only a new earliest bucket can shorten a driver's sleep.
                let after = state.wheel.next_expiration();
                (h, after != before)
            }
            Insert::Due(task) => {
                state.ready.push(task);
                (TimerHandle::NONE, true)
            }
        };
        drop(state);
        if wake {
            self.wake();
        }
        handle
    }

    /// Cancels a scheduled task (dropping it); `false` if it already became due or was cancelled.
    pub fn cancel(&self, handle: TimerHandle) -> bool {
        self.remove(handle).is_some()
    }

    /// Cancels a scheduled task and gives it back.
    pub fn remove(&self, handle: TimerHandle) -> Option<T> {
        // The task is returned (and dropped by the caller) outside the lock, so its `Drop` may use
        // the timer.
        self.state.lock().wheel.cancel(handle)
    }

    /// Number of tasks scheduled or due but not yet handed out.
    pub fn size(&self) -> usize {
        let state = self.state.lock();
        state.wheel.len() + state.ready.len()
    }

    /// Deadline of the soonest non-empty bucket (a lower bound for the next due task).
    pub fn next_expiration(&self) -> Option<u64> {
        let state = self.state.lock();
        if state.ready.is_empty() {
            state.wheel.next_expiration()
        } else {
            Some(0)
        }
    }

    /// Advances to the clock's current time and returns the tasks that are due, without blocking.
    pub fn poll_expired(&self) -> Vec<T> {
        let mut state = self.state.lock();
        self.advance_locked(&mut state);
        std::mem::take(&mut state.ready)
    }

    /// Kafka's `advanceClock(timeoutMs)`: returns the due tasks; if none is due, waits (in real time)
    /// up to `timeout_ms` or until the next bucket expires or an earlier task is added, then returns
    /// what is due by then (possibly nothing). With a [`crate::ManualClock`] pass 0.
    pub fn advance_clock(&self, timeout_ms: u64) -> Vec<T> {
        let mut state = self.state.lock();
        self.advance_locked(&mut state);
        if state.ready.is_empty() && timeout_ms > 0 && !state.closed {
            let now = self.clock.now_ms();
            let until_next = state
                .wheel
                .next_expiration()
                .map_or(u64::MAX, |e| e.saturating_sub(now));
            let wait = Duration::from_millis(timeout_ms.min(until_next).max(1));
            let give_up = Instant::now() + wait;
            self.cond.wait_until(&mut state, give_up);
            self.advance_locked(&mut state);
        }
        std::mem::take(&mut state.ready)
    }

    /// Marks the timer closed and wakes its driver: `advance_clock` no longer blocks, so driver loops
    /// that check [`Timer::is_closed`] end promptly. Scheduled tasks stay where they are.
    pub fn close(&self) {
        self.state.lock().closed = true;
        self.wake();
    }

    /// Whether [`Timer::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.state.lock().closed
    }

    /// Installs a callback run whenever the next due time may have moved earlier (an async driver
    /// uses it to cut its sleep short). Replaces any previous one.
    pub fn set_waker(&self, waker: Option<Waker>) {
        *self.waker.lock() = waker;
    }

    fn wake(&self) {
        self.cond.notify_all();
        let waker = self.waker.lock().clone();
        if let Some(w) = waker {
            w();
        }
    }

    fn advance_locked(&self, state: &mut State<T>) {
        let now = self.clock.now_ms();
        let State { wheel, ready, .. } = state;
        wheel.advance_clock(now, |t| ready.push(t));
    }
}

impl<T> std::fmt::Debug for Timer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timer")
            .field("wheel", &self.state.lock().wheel)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ManualClock;

    #[test]
    fn zero_delay_task_is_due_on_next_poll() {
        let clock = Arc::new(ManualClock::new(0));
        let timer = Timer::new(clock);
        let h = timer.add(0, 1);
        assert_eq!(h, TimerHandle::NONE);
        assert!(!timer.cancel(h));
        assert_eq!(timer.size(), 1);
        assert_eq!(timer.poll_expired(), vec![1]);
    }

    #[test]
    fn advance_clock_with_timeout_returns_when_a_task_is_due() {
        let timer = Arc::new(Timer::new(Arc::new(crate::SystemClock)));
        timer.add(20, ());
        let start = Instant::now();
        let mut got = Vec::new();
        while got.is_empty() && start.elapsed() < Duration::from_secs(5) {
            got = timer.advance_clock(200);
        }
        assert_eq!(got.len(), 1);
        assert!(start.elapsed() >= Duration::from_millis(19));
    }

    #[test]
    fn close_interrupts_a_blocked_advance_clock() {
        let timer = Arc::new(Timer::<()>::new(Arc::new(crate::SystemClock)));
        let t2 = timer.clone();
        let start = Instant::now();
        let j = std::thread::spawn(move || t2.advance_clock(10_000));
        std::thread::sleep(Duration::from_millis(20));
        timer.close();
        assert!(j.join().unwrap().is_empty());
        assert!(start.elapsed() < Duration::from_secs(5));
    }
}
