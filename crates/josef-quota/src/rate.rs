//! A rate over time samples, as Kafka's `Rate` / `SimpleRate` over a `SampledStat` sum.

use crate::config::QuotaWindow;

/// Which elapsed-time rule divides the sum of the samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateKind {
    /// Kafka's `Rate` (client, connection and mutation-rate quotas): the time since the oldest
    /// sample started, but never fewer than `num − 1` whole windows plus the current partial one, so
    /// a first burst is spread over `num − 1` windows instead of the few milliseconds elapsed.
    Rate,
    /// Kafka's `SimpleRate` (replication quotas): the time since the oldest sample started, but at
    /// least one window.
    SimpleRate,
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    start_ms: u64,
    value: f64,
}

impl Sample {
    fn new(now_ms: u64) -> Self {
        Sample {
            start_ms: now_ms,
            value: 0.0,
        }
    }
}

/// The sum of recorded values over at most `num` samples of one window each, divided by the
/// elapsed time of [`RateKind`].
///
/// A sample starts at the first value recorded after the previous one completed (samples are not
/// aligned to a grid); the `num` samples are reused in turn, and a sample that started `num ×
/// size` ago or earlier is reset (Kafka's `SampledStat.purgeObsoleteSamples`, which compares the
/// sample's window start, not its last record).
#[derive(Debug, Clone)]
pub struct SampledRate {
    window: QuotaWindow,
    kind: RateKind,
    samples: Vec<Sample>,
    current: usize,
}

impl SampledRate {
    /// An empty rate of `kind` over `window`.
    pub fn new(window: QuotaWindow, kind: RateKind) -> Self {
        SampledRate {
            window,
            kind,
            samples: Vec::with_capacity(3),
            current: 0,
        }
    }

    /// The sampling window.
    pub fn window(&self) -> QuotaWindow {
        self.window
    }

    /// Adds `value` (negative to take a recorded value back) at `now_ms`.
    pub fn record(&mut self, value: f64, now_ms: u64) {
        if self.samples.is_empty() {
            self.samples.push(Sample::new(now_ms));
        }
        let size_ms = self.window.size_ms();
        if now_ms.saturating_sub(self.samples[self.current].start_ms) >= size_ms {
            self.advance(now_ms);
        }
        self.samples[self.current].value += value;
    }

    fn advance(&mut self, now_ms: u64) {
        let slots = self.window.num() as usize;
        self.current = (self.current + 1) % slots;
        if self.current >= self.samples.len() {
            self.samples.push(Sample::new(now_ms));
        } else {
            self.samples[self.current] = Sample::new(now_ms);
        }
    }

    /// Resets the samples that started `num × size` ago or earlier (they restart at `now_ms`).
    pub fn purge_obsolete_samples(&mut self, now_ms: u64) {
        let expire_age = self.window.span_ms();
        for sample in &mut self.samples {
            if now_ms.saturating_sub(sample.start_ms) >= expire_age {
                *sample = Sample::new(now_ms);
            }
        }
    }

    /// The sum of the kept samples at `now_ms`.
    pub fn total(&mut self, now_ms: u64) -> f64 {
        self.purge_obsolete_samples(now_ms);
        self.samples.iter().map(|s| s.value).sum()
    }

    /// The elapsed time the rate divides by at `now_ms`, in milliseconds (at least 1).
    pub fn window_size_ms(&mut self, now_ms: u64) -> u64 {
        self.purge_obsolete_samples(now_ms);
        let oldest_start = self
            .samples
            .iter()
            .map(|s| s.start_ms)
            .min()
            .unwrap_or(now_ms);
        let mut elapsed = now_ms.saturating_sub(oldest_start);
        let size_ms = self.window.size_ms();
        match self.kind {
            RateKind::Rate => {
                let full_windows = elapsed / size_ms;
                let min_full_windows = u64::from(self.window.num() - 1);
                if full_windows < min_full_windows {
                    elapsed += (min_full_windows - full_windows) * size_ms;
                }
            }
            RateKind::SimpleRate => elapsed = elapsed.max(size_ms),
        }
        // Only `num = 1` can reach 0 here; Kafka would divide by zero.
        elapsed.max(1)
    }

    /// The rate per second at `now_ms`: [`total`](Self::total) ÷ [`window_size_ms`](Self::window_size_ms).
    pub fn measure(&mut self, now_ms: u64) -> f64 {
        let total = self.total(now_ms);
        total / (self.window_size_ms(now_ms) as f64 / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate() -> SampledRate {
        SampledRate::new(QuotaWindow::default(), RateKind::Rate)
    }

    #[test]
    fn first_burst_is_spread_over_ten_windows() {
        let mut r = rate();
        r.record(5_000_000.0, 1_000);
        assert_eq!(r.window_size_ms(1_000), 10_000);
        assert_eq!(r.measure(1_000), 500_000.0);
        // 400 ms into the first window: 10 whole windows are assumed plus the 400 ms.
        assert_eq!(r.window_size_ms(1_400), 10_400);
    }

    #[test]
    fn elapsed_time_counts_once_past_the_minimum() {
        let mut r = rate();
        for s in 0..12u64 {
            r.record(100.0, s * 1_000);
        }
        // Eleven samples (num) are reused in turn: the record at 11 s took the slot of the sample
        // of 0 s, so the oldest kept starts at 1 s.
        assert_eq!(r.total(11_000), 1_100.0);
        assert_eq!(r.window_size_ms(11_000), 10_000);
        assert_eq!(r.total(11_500), 1_100.0);
        assert_eq!(r.window_size_ms(11_500), 10_500);
        // A record at 12 s takes the slot of the sample of 1 s.
        r.record(100.0, 12_000);
        assert_eq!(r.total(12_000), 1_100.0);
        assert_eq!(r.window_size_ms(12_000), 10_000);
    }

    #[test]
    fn idle_samples_are_purged() {
        let mut r = rate();
        r.record(1_000.0, 0);
        assert_eq!(r.total(10_999), 1_000.0);
        assert_eq!(r.total(11_000), 0.0);
        assert_eq!(r.window_size_ms(11_000), 10_000);
    }

    #[test]
    fn a_sample_expires_by_its_start_not_its_last_record() {
        let mut r = rate();
        r.record(1.0, 0);
        r.record(1.0, 900);
        assert_eq!(r.total(10_999), 2.0);
        assert_eq!(r.total(11_000), 0.0);
    }

    #[test]
    fn simple_rate_uses_at_least_one_window() {
        let mut r = SampledRate::new(QuotaWindow::default(), RateKind::SimpleRate);
        r.record(1_000.0, 0);
        assert_eq!(r.window_size_ms(10), 1_000);
        assert_eq!(r.measure(10), 1_000.0);
        r.record(1_000.0, 3_000);
        assert_eq!(r.measure(4_000), 500.0);
    }
}
