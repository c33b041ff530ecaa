//! Throttle times as Kafka computes them (`QuotaUtils.throttleTime`,
//! `ControllerMutationQuotaManager.throttleTimeMs`).

/// The largest throttle time a response can carry (`throttle_time_ms` is an INT32).
pub const MAX_THROTTLE_TIME_MS: u64 = i32::MAX as u64;

/// The delay that brings an `observed` rate back to `bound` if nothing more is recorded, over the
/// `window_ms` the rate was measured on: with `O × W / (W + X) = T`, `X = (O − T) / T × W`,
/// rounded half up. Zero when the rate is within the bound; at most [`MAX_THROTTLE_TIME_MS`].
pub fn throttle_time_ms(observed: f64, bound: f64, window_ms: u64) -> u64 {
    to_ms((observed - bound) / bound * window_ms as f64)
}

/// [`throttle_time_ms`] capped at `max_ms` (`QuotaUtils.boundedThrottleTime`), as request and
/// connection quotas do with one window.
pub fn bounded_throttle_time_ms(observed: f64, bound: f64, window_ms: u64, max_ms: u64) -> u64 {
    throttle_time_ms(observed, bound, window_ms).min(max_ms)
}

/// The time a token bucket with `tokens` credits (negative when exhausted) needs to refill to zero
/// at `bound` per second: `−tokens ÷ bound × 1000`, rounded half up.
pub fn token_bucket_throttle_time_ms(tokens: f64, bound: f64) -> u64 {
    to_ms(-tokens / bound * 1000.0)
}

fn to_ms(ms: f64) -> u64 {
    // NaN (a bound of 0 from an unvalidated record) is no throttle.
    if ms.is_nan() || ms <= 0.0 {
        return 0;
    }
    // Java's Math.round: floor(x + 0.5).
    let rounded = (ms + 0.5).floor();
    if rounded >= MAX_THROTTLE_TIME_MS as f64 {
        MAX_THROTTLE_TIME_MS
    } else {
        rounded as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_example() {
        // 1.5 MB/s against 1 MB/s measured over 10 s: 5 s.
        assert_eq!(throttle_time_ms(1.5e6, 1e6, 10_000), 5_000);
        assert_eq!(bounded_throttle_time_ms(1.5e6, 1e6, 10_000, 1_000), 1_000);
        assert_eq!(throttle_time_ms(0.9e6, 1e6, 10_000), 0);
        assert_eq!(token_bucket_throttle_time_ms(-9.0, 1.0), 9_000);
        assert_eq!(token_bucket_throttle_time_ms(3.0, 1.0), 0);
        assert_eq!(throttle_time_ms(1.0, 0.0, 10_000), MAX_THROTTLE_TIME_MS);
        assert_eq!(throttle_time_ms(f64::NAN, 1.0, 10_000), 0);
        // Rounds half up: 0.5 ms → 1 ms.
        assert_eq!(throttle_time_ms(1.00005, 1.0, 10_000), 1);
    }
}
