//! The stopping broker's side of a controlled shutdown: `controlled.shutdown.max.retries` attempts,
//! `controlled.shutdown.retry.backoff.ms` apart, then a shutdown anyway (Kafka's ZooKeeper-era
//! `KafkaServer.controlledShutdown`; the attempts themselves go the KRaft way, as heartbeats with
//! `want_shut_down`, see [`super::lifecycle`]).
//!
//! An attempt asks the controller to move this broker's leaderships away and waits up to a bound
//! for its "shut down now". While it waits, and during the backoff after a failed attempt, the
//! heartbeats keep asking, so an answer that arrives in the backoff also ends the wait. After the
//! last failed attempt the broker stops anyway, as Kafka does ("unclean" in Kafka's warning means
//! not controlled: the logs are still flushed and marked clean); the leaderships it still holds
//! move when the controller fences it for its expired session.

use std::future::Future;
use std::time::Duration;

/// When the attempts of a controlled shutdown happen and how long each may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShutdownAttempts {
    /// `controlled.shutdown.max.retries`: the number of attempts (Kafka counts the first one
    /// among the "retries", so 0 makes none).
    pub max_retries: u32,
    /// How long one attempt waits for the controller's "shut down now".
    pub attempt_timeout: Duration,
    /// `controlled.shutdown.retry.backoff.ms`: the wait after a failed attempt before the next.
    pub retry_backoff: Duration,
}

/// One step of [`ShutdownAttempts::steps`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Attempt number n (from 1): ask, then wait up to the attempt timeout.
    Attempt(u32),
    /// Wait this long before the next attempt.
    Backoff(Duration),
}

/// How a controlled shutdown ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShutdownOutcome {
    /// The controller said "shut down now" during the given attempt (or the backoff after it).
    Completed {
        /// The attempt, from 1.
        attempt: u32,
    },
    /// Every attempt failed (or none was allowed): the broker stops anyway.
    GaveUp,
}

/// What an attempt talks to: the broker's lifecycle manager, or a fake in tests.
pub trait ShutdownTarget {
    /// Asks for a controlled shutdown (attempt `n`) and waits up to `timeout` for the
    /// controller's "shut down now"; true if it came.
    fn attempt(&self, n: u32, timeout: Duration) -> impl Future<Output = bool> + Send;
    /// Waits up to `d` without asking again; true if "shut down now" came meanwhile.
    fn backoff(&self, d: Duration) -> impl Future<Output = bool> + Send;
}

impl ShutdownAttempts {
    /// From the settings: `controlled.shutdown.max.retries` (negative counts as 0),
    /// `controlled.shutdown.retry.backoff.ms` (negative counts as 0) and the bound of one attempt.
    pub fn new(max_retries: i32, retry_backoff_ms: i64, attempt_timeout: Duration) -> Self {
        ShutdownAttempts {
            max_retries: max_retries.max(0).unsigned_abs(),
            attempt_timeout,
            retry_backoff: Duration::from_millis(retry_backoff_ms.max(0).unsigned_abs()),
        }
    }

    /// The schedule: attempts 1..=max_retries with a backoff between two attempts (none after
    /// the last: then the broker gives up at once).
    pub fn steps(&self) -> impl Iterator<Item = Step> + '_ {
        (1..=self.max_retries).flat_map(move |n| {
            let backoff = (n > 1).then_some(Step::Backoff(self.retry_backoff));
            backoff.into_iter().chain([Step::Attempt(n)])
        })
    }

    /// The longest a controlled shutdown can take before the broker gives up.
    pub fn worst_case(&self) -> Duration {
        self.steps()
            .map(|s| match s {
                Step::Attempt(_) => self.attempt_timeout,
                Step::Backoff(d) => d,
            })
            .sum()
    }

    /// Runs the schedule against `target`, logging each failed attempt and the give-up.
    pub async fn run(&self, target: &impl ShutdownTarget) -> ShutdownOutcome {
        let mut last = 0;
        for step in self.steps() {
            match step {
                Step::Attempt(n) => {
                    last = n;
                    if target.attempt(n, self.attempt_timeout).await {
                        return ShutdownOutcome::Completed { attempt: n };
                    }
                    if n < self.max_retries {
                        tracing::warn!(
                            attempt = n,
                            of = self.max_retries,
                            waited = ?self.attempt_timeout,
                            backoff = ?self.retry_backoff,
                            "controlled shutdown attempt failed (no shutdown-now from the \
                             controller); retrying after the backoff"
                        );
                    }
                }
                Step::Backoff(d) => {
                    if target.backoff(d).await {
                        return ShutdownOutcome::Completed { attempt: last };
                    }
                }
            }
        }
        tracing::warn!(
            attempts = self.max_retries,
            "controlled shutdown failed (controlled.shutdown.max.retries attempts); shutting down \
             anyway: the leaderships still held here move once the session expires"
        );
        ShutdownOutcome::GaveUp
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;

    fn attempts(max_retries: i32, backoff_ms: i64) -> ShutdownAttempts {
        ShutdownAttempts::new(max_retries, backoff_ms, Duration::from_secs(2))
    }

    #[test]
    fn attempts_are_separated_by_the_backoff() {
        let a = attempts(3, 5000);
        let b = Step::Backoff(Duration::from_millis(5000));
        assert_eq!(
            a.steps().collect::<Vec<_>>(),
            [Step::Attempt(1), b, Step::Attempt(2), b, Step::Attempt(3)]
        );
        assert_eq!(a.worst_case(), Duration::from_secs(3 * 2 + 2 * 5));
    }

    #[test]
    fn one_attempt_has_no_backoff_and_zero_has_no_attempt() {
        assert_eq!(
            attempts(1, 5000).steps().collect::<Vec<_>>(),
            [Step::Attempt(1)]
        );
        assert_eq!(attempts(0, 5000).steps().count(), 0);
        assert_eq!(attempts(-1, 5000).steps().count(), 0);
        assert_eq!(attempts(0, 5000).worst_case(), Duration::ZERO);
        assert_eq!(
            attempts(2, -7).steps().nth(1),
            Some(Step::Backoff(Duration::ZERO))
        );
    }

    /// Answers "shut down now" from the given attempt on (or in the backoff after it); records
    /// every call.
    struct Fake {
        succeed_at: Option<u32>,
        in_backoff: bool,
        calls: Mutex<Vec<String>>,
    }

    impl Fake {
        fn new(succeed_at: Option<u32>, in_backoff: bool) -> Self {
            Fake {
                succeed_at,
                in_backoff,
                calls: Mutex::new(Vec::new()),
            }
        }
    }

    impl ShutdownTarget for Fake {
        async fn attempt(&self, n: u32, timeout: Duration) -> bool {
            self.calls
                .lock()
                .push(format!("attempt {n} {}ms", timeout.as_millis()));
            !self.in_backoff && self.succeed_at == Some(n)
        }

        async fn backoff(&self, d: Duration) -> bool {
            let mut calls = self.calls.lock();
            calls.push(format!("backoff {}ms", d.as_millis()));
            let attempts = calls.iter().filter(|c| c.starts_with("attempt")).count() as u32;
            self.in_backoff && self.succeed_at == Some(attempts)
        }
    }

    fn run(a: ShutdownAttempts, fake: &Fake) -> ShutdownOutcome {
        futures::executor::block_on(a.run(fake))
    }

    #[test]
    fn every_failed_attempt_is_retried_after_the_backoff_then_it_gives_up() {
        let fake = Fake::new(None, false);
        assert_eq!(run(attempts(3, 100), &fake), ShutdownOutcome::GaveUp);
        assert_eq!(
            *fake.calls.lock(),
            [
                "attempt 1 2000ms",
                "backoff 100ms",
                "attempt 2 2000ms",
                "backoff 100ms",
                "attempt 3 2000ms"
            ]
        );
    }

    #[test]
    fn a_successful_attempt_ends_the_schedule() {
        let fake = Fake::new(Some(2), false);
        assert_eq!(
            run(attempts(3, 100), &fake),
            ShutdownOutcome::Completed { attempt: 2 }
        );
        assert_eq!(fake.calls.lock().len(), 3, "{:?}", fake.calls.lock());
    }

    #[test]
    fn a_shutdown_now_during_the_backoff_ends_the_schedule() {
        let fake = Fake::new(Some(1), true);
        assert_eq!(
            run(attempts(3, 100), &fake),
            ShutdownOutcome::Completed { attempt: 1 }
        );
        assert_eq!(*fake.calls.lock(), ["attempt 1 2000ms", "backoff 100ms"]);
    }

    #[test]
    fn zero_retries_gives_up_without_asking() {
        let fake = Fake::new(Some(1), false);
        assert_eq!(run(attempts(0, 100), &fake), ShutdownOutcome::GaveUp);
        assert!(fake.calls.lock().is_empty());
    }
}
