//! Drives a [`Timer`] or a [`Purgatory`] from a tokio task instead of threads (feature `tokio`).
//!
//! The task sleeps until the next bucket expires (at most [`crate::REAPER_POLL_MS`]), and the
//! timer wakes it early when a task with an earlier deadline is added.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use std::sync::Arc;
//! use josef_timer::{SystemClock, Timer, tokio_driver};
//!
//! let timer = Arc::new(Timer::new(Arc::new(SystemClock)));
//! let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
//! let driver = tokio_driver::spawn(timer.clone(), move |msg: &'static str| {
//!     let _ = tx.send(msg);
//! });
//! timer.add(5, "session timeout");
//! assert_eq!(rx.recv().await, Some("session timeout"));
//! driver.shutdown().await;
//! # }
//! ```

use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::purgatory::{DelayedOperation, Purgatory};
use crate::runner::REAPER_POLL_MS;
use crate::timer::Timer;

/// A running tokio driver. Dropping it closes the timer, which ends the task at its next wake-up.
pub struct TokioDriver {
    close: Option<Box<dyn FnOnce() + Send>>,
    handle: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for TokioDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokioDriver").finish_non_exhaustive()
    }
}

impl TokioDriver {
    /// Closes the timer and waits for the task to end.
    pub async fn shutdown(mut self) {
        if let Some(close) = self.close.take() {
            close();
        }
        if let Some(h) = self.handle.take() {
            let _ = h.await;
        }
    }
}

impl Drop for TokioDriver {
    fn drop(&mut self) {
        if let Some(close) = self.close.take() {
            close();
        }
    }
}

/// Spawns a task on the current tokio runtime that hands every due task of `timer` to `run`.
///
/// # Panics
/// Outside a tokio runtime (like `tokio::spawn`).
pub fn spawn<T, F>(timer: Arc<Timer<T>>, mut run: F) -> TokioDriver
where
    T: Send + 'static,
    F: FnMut(T) + Send + 'static,
{
    let t = timer.clone();
    drive_with(timer, move || {
        for task in t.poll_expired() {
            run(task);
        }
    })
}

/// Spawns a task on the current tokio runtime that expires `purgatory`'s operations (their
/// `on_complete`/`on_expiration` run on that task, so they should not block) and purges its watch
/// lists.
///
/// # Panics
/// Outside a tokio runtime (like `tokio::spawn`).
pub fn spawn_reaper<O, K>(purgatory: Arc<Purgatory<O, K>>) -> TokioDriver
where
    O: DelayedOperation,
    K: Hash + Eq + Clone + Send + Sync + 'static,
{
    let p = purgatory.clone();
    let timer = PurgatoryTimer(purgatory);
    drive_with(timer, move || {
        p.advance_clock(0);
    })
}

/// What the drive loop needs from a timer, so a purgatory's inner timer can be driven too.
trait Drivable: Send + Sync + 'static {
    fn closed(&self) -> bool;
    fn next_wait_ms(&self) -> u64;
    fn set_waker(&self, waker: Option<Arc<dyn Fn() + Send + Sync>>);
    fn close(&self);
}

impl<T: Send + 'static> Drivable for Arc<Timer<T>> {
    fn closed(&self) -> bool {
        self.is_closed()
    }
    fn next_wait_ms(&self) -> u64 {
        let now = self.clock().now_ms();
        self.next_expiration()
            .map_or(REAPER_POLL_MS, |e| e.saturating_sub(now))
            .min(REAPER_POLL_MS)
    }
    fn set_waker(&self, waker: Option<Arc<dyn Fn() + Send + Sync>>) {
        Timer::set_waker(self, waker)
    }
    fn close(&self) {
        Timer::close(self)
    }
}

struct PurgatoryTimer<O, K>(Arc<Purgatory<O, K>>);

impl<O, K> Drivable for PurgatoryTimer<O, K>
where
    O: DelayedOperation,
    K: Hash + Eq + Clone + Send + Sync + 'static,
{
    fn closed(&self) -> bool {
        self.0.timer().is_closed()
    }
    fn next_wait_ms(&self) -> u64 {
        let timer = self.0.timer();
        let now = timer.clock().now_ms();
        timer
            .next_expiration()
            .map_or(REAPER_POLL_MS, |e| e.saturating_sub(now))
            .min(REAPER_POLL_MS)
    }
    fn set_waker(&self, waker: Option<Arc<dyn Fn() + Send + Sync>>) {
        self.0.timer().set_waker(waker)
    }
    fn close(&self) {
        self.0.timer().close()
    }
}

fn drive_with<D: Drivable>(timer: D, mut step: impl FnMut() + Send + 'static) -> TokioDriver {
    let notify = Arc::new(Notify::new());
    let n = notify.clone();
    // `notify_one` stores a permit when the task is not waiting, so no wake-up is lost.
    timer.set_waker(Some(Arc::new(move || n.notify_one())));
    let timer = Arc::new(timer);
    let t = timer.clone();
    let handle = tokio::spawn(async move {
        while !t.closed() {
            step();
            let wait = t.next_wait_ms();
            if wait > 0 {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(wait)) => {}
                    _ = notify.notified() => {}
                }
            }
        }
        t.set_waker(None);
    });
    TokioDriver {
        close: Some(Box::new(move || timer.close())),
        handle: Some(handle),
    }
}
