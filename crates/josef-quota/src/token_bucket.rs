//! Kafka's `TokenBucket` stat, used by controller mutation quotas (KIP-599).

use crate::config::QuotaWindow;

/// Credits refilled at `quota` per second up to a burst of `num × size × quota`; a record takes
/// its value out (the bucket may go below zero) and the quota is exhausted while it is negative.
///
/// Kafka's bucket starts empty at time 0, so with a real clock the first refill fills it: this one
/// starts full at its creation time, which is the same for any clock not starting at the epoch.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    window: QuotaWindow,
    tokens: f64,
    last_update_ms: u64,
}

impl TokenBucket {
    /// A full bucket for `quota` per second, created at `now_ms`.
    pub fn new(window: QuotaWindow, quota: f64, now_ms: u64) -> Self {
        TokenBucket {
            window,
            tokens: burst(window, quota),
            last_update_ms: now_ms,
        }
    }

    fn refill(&mut self, quota: f64, now_ms: u64) {
        let elapsed_s = now_ms.saturating_sub(self.last_update_ms) as f64 / 1000.0;
        self.tokens = (self.tokens + quota * elapsed_s).min(burst(self.window, quota));
        self.last_update_ms = self.last_update_ms.max(now_ms);
    }

    /// The credits left at `now_ms` for a refill rate of `quota` per second.
    pub fn measure(&mut self, quota: f64, now_ms: u64) -> f64 {
        self.refill(quota, now_ms);
        self.tokens
    }

    /// Takes `value` credits at `now_ms`.
    pub fn record(&mut self, quota: f64, value: f64, now_ms: u64) {
        self.refill(quota, now_ms);
        self.tokens = (self.tokens - value).min(burst(self.window, quota));
    }
}

fn burst(window: QuotaWindow, quota: f64) -> f64 {
    f64::from(window.num()) * f64::from(window.size_seconds()) * quota
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_doc_example() {
        // Quota 5/s, 100 samples of 1 s: burst 500; taking 560 leaves -60, 12 s of refill.
        let w = QuotaWindow::new(100, 1).unwrap();
        let mut b = TokenBucket::new(w, 5.0, 0);
        b.record(5.0, 560.0, 0);
        assert_eq!(b.measure(5.0, 0), -60.0);
        assert_eq!(b.measure(5.0, 12_000), 0.0);
        assert_eq!(b.measure(5.0, 1_000_000), 500.0);
    }
}
