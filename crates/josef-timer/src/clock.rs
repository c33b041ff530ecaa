//! Where the timer gets the time from. The wheel itself never reads a clock; [`crate::Timer`] asks a
//! [`Clock`], so tests drive time by hand with [`ManualClock`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// A monotonic millisecond clock.
pub trait Clock: Send + Sync + 'static {
    /// Milliseconds since an arbitrary fixed origin; never decreases.
    fn now_ms(&self) -> u64;

    /// The current time rounded **up** to a whole millisecond. [`crate::Timer::add`] computes
    /// deadlines from it, so that a timer never fires before its delay has fully passed even though
    /// `now_ms` truncates. Defaults to `now_ms` (exact for clocks that count whole milliseconds).
    fn now_ms_ceil(&self) -> u64 {
        self.now_ms()
    }
}

/// Monotonic time from [`Instant`], in milliseconds since the first use of any `SystemClock` in the
/// process (Kafka's `Time.SYSTEM.hiResClockMs`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl SystemClock {
    fn elapsed_ns() -> u128 {
        static ORIGIN: OnceLock<Instant> = OnceLock::new();
        ORIGIN.get_or_init(Instant::now).elapsed().as_nanos()
    }
}

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        (Self::elapsed_ns() / 1_000_000) as u64
    }

    fn now_ms_ceil(&self) -> u64 {
        Self::elapsed_ns().div_ceil(1_000_000) as u64
    }
}

/// A clock that only moves when told to (Kafka's `MockTime`), for deterministic tests.
///
/// ```
/// use josef_timer::{Clock, ManualClock};
///
/// let clock = ManualClock::new(1_000);
/// clock.advance(5);
/// assert_eq!(clock.now_ms(), 1_005);
/// ```
#[derive(Debug, Default)]
pub struct ManualClock {
    now: AtomicU64,
}

impl ManualClock {
    /// A clock reading `start_ms`.
    pub fn new(start_ms: u64) -> Self {
        ManualClock {
            now: AtomicU64::new(start_ms),
        }
    }

    /// Moves the clock forward by `ms` and returns the new time.
    pub fn advance(&self, ms: u64) -> u64 {
        self.now.fetch_add(ms, Ordering::SeqCst) + ms
    }

    /// Sets the clock to `ms` unless that would move it backwards.
    pub fn set(&self, ms: u64) {
        self.now.fetch_max(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }
}

impl<C: Clock> Clock for std::sync::Arc<C> {
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }

    fn now_ms_ceil(&self) -> u64 {
        (**self).now_ms_ceil()
    }
}
