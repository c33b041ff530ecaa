//! Properties of the throttle time, and a simulated producer that obeys it.

use josef_quota::{ClientQuotaManager, ClientQuotaType, EntityName, QuotaEntity, QuotaWindow};
use proptest::prelude::*;

const T0: u64 = 1_700_000_000_000;

fn manager(quota_type: ClientQuotaType, quota: f64, window: QuotaWindow) -> ClientQuotaManager {
    let mut m = ClientQuotaManager::new(quota_type, window);
    m.update_quota(&QuotaEntity::ClientId(EntityName::Default), Some(quota));
    m
}

/// A producer that sends `batch` bytes, waits the throttle time it gets back (at least 1 ms, its
/// next send), and repeats until `duration_ms`. Returns (send time, throttle time) per batch.
fn simulate(
    m: &mut ClientQuotaManager,
    batch: f64,
    start: u64,
    duration_ms: u64,
) -> Vec<(u64, u64)> {
    let mut now = start;
    let mut sends = Vec::new();
    while now < start + duration_ms {
        let t = m.record_and_get_throttle_time_ms("producer", "app", batch, now);
        sends.push((now - start, t));
        now += t.max(1);
    }
    sends
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Throttle times are bounded: at most one window for request quotas; for byte quotas at
    /// most the time the quota needs to carry everything recorded so far.
    #[test]
    fn throttle_time_is_bounded(
        quota in 1.0f64..1e7,
        num in 2u32..20,
        size in 1u32..4,
        steps in prop::collection::vec((0.0f64..1e7, 0u64..3_000), 1..200),
    ) {
        let window = QuotaWindow::new(num, size).unwrap();
        let mut bytes = manager(ClientQuotaType::Produce, quota, window);
        let mut request = manager(ClientQuotaType::Request, quota, window);
        let mut now = T0;
        let mut total = 0.0;
        for (value, advance) in steps {
            now += advance;
            total += value;
            let t = bytes.record_and_get_throttle_time_ms("u", "c", value, now);
            prop_assert!(t as f64 <= total / quota * 1000.0 + 1.0, "{t} for {total} at {quota}/s");
            let r = request.record_and_get_throttle_time_ms("u", "c", value, now);
            prop_assert!(r <= window.size_ms());
        }
    }

    /// A throttle time is given exactly when the rate after the record is above the quota, and it
    /// is what the formula gives.
    #[test]
    fn throttle_only_over_the_quota(
        quota in 1.0f64..1e7,
        steps in prop::collection::vec((0.0f64..2e7, 0u64..2_000), 1..200),
    ) {
        let mut m = manager(ClientQuotaType::Produce, quota, QuotaWindow::default());
        let mut probe = josef_quota::SampledRate::new(QuotaWindow::default(), josef_quota::RateKind::Rate);
        let mut now = T0;
        for (value, advance) in steps {
            now += advance;
            let t = m.record_and_get_throttle_time_ms("u", "c", value, now);
            probe.record(value, now);
            let rate = probe.measure(now);
            let window = probe.window_size_ms(now);
            if rate <= quota {
                prop_assert_eq!(t, 0);
            } else {
                prop_assert_eq!(t, josef_quota::throttle_time_ms(rate, quota, window));
            }
        }
    }

    /// A client sending at a steady rate below 90 % of the quota, at least once a window, is never
    /// throttled (its first batch counts a period early, so the rate seen is at most
    /// `rate × (1 + period / 10 s)`).
    #[test]
    fn steady_client_under_the_quota_is_never_throttled(
        quota in 1e3f64..1e7,
        fraction in 0.1f64..0.9,
        period_ms in 1u64..1_000,
        count in 1usize..2_000,
    ) {
        let mut m = manager(ClientQuotaType::Produce, quota, QuotaWindow::default());
        let per_send = quota * fraction * period_ms as f64 / 1000.0;
        for i in 0..count {
            let t = m.record_and_get_throttle_time_ms("u", "c", per_send, T0 + i as u64 * period_ms);
            prop_assert_eq!(t, 0, "send {}", i);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]

    /// A producer that obeys the throttle converges to the quota: over 220 simulated seconds
    /// (20 cycles of the 11 kept windows) its rate is within 10 % of the quota.
    #[test]
    fn obedient_producer_converges_to_the_quota(
        quota in 1e5f64..1e7,
        batches_per_second in 2.0f64..50.0,
        start in 0u64..1_000,
    ) {
        let batch = quota / batches_per_second;
        let mut m = manager(ClientQuotaType::Produce, quota, QuotaWindow::default());
        let sends = simulate(&mut m, batch, T0 + start, 220_000);
        let rate = sends.len() as f64 * batch / 220.0;
        prop_assert!((rate - quota).abs() <= 0.1 * quota, "{rate} against {quota}");
    }
}

#[test]
fn obedient_producer_for_twenty_seconds() {
    // 1 MB/s, 16 KiB batches, 20 s. Kafka's rate grants a first burst of the 10 windows it assumes
    // and lets the kept samples expire together 11 s later, so 20 s hold two bursts: the producer
    // gets 20 s of quota plus at most that credit, and never less than 90 % of 20 s.
    const MB: f64 = 1_000_000.0;
    let batch = 16_384.0;
    let mut m = manager(ClientQuotaType::Produce, MB, QuotaWindow::default());
    let sends = simulate(&mut m, batch, T0, 20_000);
    let sent = sends.len() as f64 * batch;
    assert!(sent >= 0.9 * 20.0 * MB, "{sent}");
    assert!(sent <= (20.0 + 10.0) * MB + batch, "{sent}");
    // After the first burst the producer is throttled, and every throttle is short.
    assert!(sends.iter().any(|(_, t)| *t > 0));
    assert!(sends.iter().all(|(_, t)| *t <= 11_000));
}
