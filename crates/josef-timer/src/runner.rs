//! Threads that drive a [`Timer`] in real time (Kafka's `SystemTimer` with its reaper and
//! `executor-<name>` thread): one thread advances the clock and sends due tasks over a
//! `crossbeam-channel` to an executor thread that runs them, so a slow task never delays expiry.

use std::io;
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::clock::SystemClock;
use crate::timer::Timer;
use crate::wheel::TimerHandle;

/// How long the reaper waits per `advance_clock` call (Kafka's reaper uses 200 ms).
pub const REAPER_POLL_MS: u64 = 200;

/// Work that a [`TimerThread`] runs when it is due.
pub trait TimerTask: Send + 'static {
    /// Runs the task.
    fn run(self);
}

impl<F: FnOnce() + Send + 'static> TimerTask for F {
    fn run(self) {
        self()
    }
}

/// A [`Timer`] driven by a reaper thread, with due tasks run on an executor thread.
///
/// Dropping it (or calling [`TimerThread::shutdown`]) stops both threads; tasks still scheduled are
/// dropped without running, as in Kafka's `SystemTimer.close`.
///
/// ```
/// use std::sync::mpsc;
/// use josef_timer::SystemTimer;
///
/// let timer = SystemTimer::start("example").unwrap();
/// let (tx, rx) = mpsc::channel();
/// timer.add(5, Box::new(move || tx.send("fired").unwrap()));
/// assert_eq!(rx.recv().unwrap(), "fired");
/// timer.shutdown();
/// ```
pub struct TimerThread<T: TimerTask> {
    timer: Arc<Timer<T>>,
    reaper: Option<JoinHandle<()>>,
    executor: Option<JoinHandle<()>>,
}

/// A timer of boxed closures on the system clock (Kafka's `SystemTimer`).
pub type SystemTimer = TimerThread<Box<dyn FnOnce() + Send>>;

impl SystemTimer {
    /// Starts a timer with Kafka's defaults (1 ms tick, 20 buckets) on the [`SystemClock`].
    pub fn start(name: &str) -> io::Result<Self> {
        Self::spawn(name, Arc::new(Timer::new(Arc::new(SystemClock))))
    }
}

impl<T: TimerTask> TimerThread<T> {
    /// Starts the reaper thread `<name>-reaper` and the executor thread `executor-<name>` for
    /// `timer`. The timer must use a real-time clock.
    pub fn spawn(name: &str, timer: Arc<Timer<T>>) -> io::Result<Self> {
        let (tx, rx) = crossbeam_channel::unbounded::<T>();
        let executor = std::thread::Builder::new()
            .name(format!("executor-{name}"))
            .spawn(move || {
                for task in rx {
                    task.run();
                }
            })?;
        let t = timer.clone();
        let reaper = std::thread::Builder::new()
            .name(format!("{name}-reaper"))
            .spawn(move || {
                while !t.is_closed() {
                    for task in t.advance_clock(REAPER_POLL_MS) {
                        if tx.send(task).is_err() {
                            return;
                        }
                    }
                }
            });
        let reaper = match reaper {
            Ok(r) => r,
            Err(e) => {
                timer.close();
                return Err(e);
            }
        };
        Ok(TimerThread {
            timer,
            reaper: Some(reaper),
            executor: Some(executor),
        })
    }

    /// Schedules `task` to run `delay_ms` from now.
    pub fn add(&self, delay_ms: u64, task: T) -> TimerHandle {
        self.timer.add(delay_ms, task)
    }

    /// Cancels a task that has not become due yet.
    pub fn cancel(&self, handle: TimerHandle) -> bool {
        self.timer.cancel(handle)
    }

    /// Tasks scheduled and not yet handed to the executor.
    pub fn size(&self) -> usize {
        self.timer.size()
    }

    /// The underlying timer.
    pub fn timer(&self) -> &Arc<Timer<T>> {
        &self.timer
    }

    /// Stops the threads, waiting for the task that is running (if any) and those already handed
    /// to the executor.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.timer.close();
        // The reaper ends, dropping the sender; the executor drains the channel and ends.
        if let Some(r) = self.reaper.take() {
            let _ = r.join();
        }
        if let Some(e) = self.executor.take() {
            let _ = e.join();
        }
    }
}

impl<T: TimerTask> Drop for TimerThread<T> {
    fn drop(&mut self) {
        self.stop();
    }
}

impl<T: TimerTask> std::fmt::Debug for TimerThread<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimerThread")
            .field("timer", &self.timer)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    #[test]
    fn runs_tasks_in_deadline_order_and_skips_cancelled_ones() {
        let timer = SystemTimer::start("t").unwrap();
        let (tx, rx) = crossbeam_channel::unbounded();
        for d in [30u64, 10, 20] {
            let tx = tx.clone();
            timer.add(d, Box::new(move || tx.send(d).unwrap()));
        }
        let tx2 = tx.clone();
        let h = timer.add(15, Box::new(move || tx2.send(999).unwrap()));
        assert!(timer.cancel(h));
        let got: Vec<u64> = (0..3)
            .map(|_| rx.recv_timeout(Duration::from_secs(5)).unwrap())
            .collect();
        assert_eq!(got, vec![10, 20, 30]);
        timer.shutdown();
    }

    #[test]
    fn shutdown_is_prompt_and_drops_pending_tasks() {
        let ran = Arc::new(AtomicUsize::new(0));
        let timer = SystemTimer::start("t").unwrap();
        let r = ran.clone();
        timer.add(
            60_000,
            Box::new(move || {
                r.fetch_add(1, Ordering::SeqCst);
            }),
        );
        let start = Instant::now();
        drop(timer);
        assert!(start.elapsed() < Duration::from_secs(2));
        assert_eq!(ran.load(Ordering::SeqCst), 0);
    }
}
