//! Hierarchical timing wheel and a purgatory of delayed operations, after Kafka's `TimingWheel`,
//! `SystemTimer`, `DelayedOperation` and `DelayedOperationPurgatory`.
//!
//! - [`TimingWheel`]: the single-threaded data structure. O(1) add and cancel by handle; the clock
//!   jumps from one non-empty bucket to the next through a queue of bucket expirations (per-level
//!   occupancy bitmaps), so it never steps through empty ticks. It is told the time and reads no clock.
//! - [`Timer`]: the thread-safe front, with deadlines taken from a [`Clock`] ([`SystemClock`], or
//!   [`ManualClock`] in tests).
//! - [`TimerThread`] / [`SystemTimer`]: a reaper thread plus an executor thread fed through a
//!   `crossbeam-channel`. With the `tokio` feature, `tokio_driver` drives a timer from a tokio task.
//! - [`Purgatory`]: delayed operations (a produce waiting for acks=all, a fetch waiting for
//!   `fetch.min.bytes`) that complete exactly once, on an event ([`Purgatory::check_and_complete`])
//!   or on expiry.
//!
//! ```
//! use std::sync::Arc;
//! use josef_timer::{ManualClock, Timer};
//!
//! let clock = Arc::new(ManualClock::new(0));
//! let timer = Timer::new(clock.clone());
//! timer.add(10, "retry backoff");
//! clock.advance(10);
//! assert_eq!(timer.poll_expired(), ["retry backoff"]);
//! ```
#![deny(missing_docs)]

mod bucket_queue;
mod clock;
mod divisor;
mod error;
mod purgatory;
mod runner;
mod timer;
#[cfg(feature = "tokio")]
pub mod tokio_driver;
mod wheel;

pub use clock::{Clock, ManualClock, SystemClock};
pub use error::ConfigError;
pub use purgatory::{Delayed, DelayedOperation, Purgatory, PurgatoryConfig, Reaper};
pub use runner::{SystemTimer, TimerTask, TimerThread, REAPER_POLL_MS};
pub use timer::{Timer, TimerConfig};
pub use wheel::{Insert, TimerHandle, TimingWheel, WheelStats, MAX_DEADLINE_MS};
