//! The quota math against Kafka's formulas, with worked numbers.

use josef_quota::{
    nanos_to_percentage, ClientQuotaManager, ClientQuotaType, EntityName, QuotaEntity, QuotaWindow,
};

const MB: f64 = 1_000_000.0;
const T0: u64 = 1_700_000_000_000;

fn manager(quota_type: ClientQuotaType, quota: f64) -> ClientQuotaManager {
    let mut m = ClientQuotaManager::new(quota_type, QuotaWindow::default());
    m.update_quota(&QuotaEntity::ClientId(EntityName::Default), Some(quota));
    m
}

#[test]
fn five_mb_burst_in_the_first_second_is_within_a_one_mb_quota() {
    // 11 windows of 1 s: a first burst is divided by (11 − 1) windows + the partial one.
    // 5 × 1 MB over the first 800 ms: 5 MB / 10.8 s = 0.46 MB/s, below 1 MB/s.
    let mut m = manager(ClientQuotaType::Produce, MB);
    for i in 0..5u64 {
        assert_eq!(
            m.record_and_get_throttle_time_ms("u", "c", MB, T0 + i * 200),
            0
        );
    }
    let rate = m.measure("u", "c", T0 + 800);
    assert!((rate - 5.0 * MB / 10.8).abs() < 1.0, "{rate}");
}

#[test]
fn fifteen_mb_at_once_throttles_five_seconds() {
    // 15 MB / 10 s = 1.5 MB/s; (1.5 − 1) / 1 × 10 000 ms = 5 000 ms.
    let mut m = manager(ClientQuotaType::Produce, MB);
    assert_eq!(
        m.record_and_get_throttle_time_ms("u", "c", 15.0 * MB, T0),
        5_000
    );
}

#[test]
fn burst_after_the_first_five_mb() {
    // 5 MB at 0 ms and 8 MB at 500 ms: 13 MB / 10.5 s = 1.238 MB/s;
    // (1.238 − 1) × 10 500 ms = 13 MB / 1 MB/s − 10.5 s = 2 500 ms.
    let mut m = manager(ClientQuotaType::Produce, MB);
    assert_eq!(m.record_and_get_throttle_time_ms("u", "c", 5.0 * MB, T0), 0);
    assert_eq!(
        m.record_and_get_throttle_time_ms("u", "c", 8.0 * MB, T0 + 500),
        2_500
    );
}

#[test]
fn byte_rate_throttle_is_not_capped() {
    // 100 MB at once against 1 MB/s: 100 MB / 10 s = 10 MB/s → (10 − 1) × 10 s = 90 s.
    let mut m = manager(ClientQuotaType::Fetch, MB);
    assert_eq!(
        m.record_and_get_throttle_time_ms("u", "c", 100.0 * MB, T0),
        90_000
    );
}

#[test]
fn waiting_the_throttle_time_brings_the_rate_back_to_the_quota() {
    // 1 MB every second at 0..=9 s: at 9 s, 10 MB / (9 s + 1 assumed window) = exactly 1 MB/s.
    let mut m = manager(ClientQuotaType::Produce, MB);
    for s in 0..10u64 {
        assert_eq!(
            m.record_and_get_throttle_time_ms("u", "c", MB, T0 + s * 1_000),
            0
        );
    }
    // 2 MB more at 10 s: 12 MB / 10 s = 1.2 MB/s → 0.2 × 10 000 = 2 000 ms.
    assert_eq!(
        m.record_and_get_throttle_time_ms("u", "c", 2.0 * MB, T0 + 10_000),
        2_000
    );
    // At 12 s the samples of 0 s and 1 s have been idle 11 s: 10 MB over 10 s, the quota.
    assert_eq!(m.measure("u", "c", T0 + 12_000), MB);
    // Sending 1 MB every second at 0..=10 s is 11 MB over 10 s: 1.1 MB/s, 1 000 ms.
    let mut m = manager(ClientQuotaType::Produce, MB);
    for s in 0..10u64 {
        m.record_and_get_throttle_time_ms("u", "c", MB, T0 + s * 1_000);
    }
    assert_eq!(
        m.record_and_get_throttle_time_ms("u", "c", MB, T0 + 10_000),
        1_000
    );
}

#[test]
fn request_percentage_throttle_is_capped_at_one_window() {
    // 50 % quota; 20 s of thread time at once = 2 000 % of one second over 10 s = 200 %:
    // (200 − 50) / 50 × 10 s = 30 s, capped at 1 s.
    let mut m = manager(ClientQuotaType::Request, 50.0);
    let value = nanos_to_percentage(20_000_000_000);
    assert_eq!(value, 2_000.0);
    assert_eq!(
        m.record_and_get_throttle_time_ms("u", "c", value, T0),
        1_000
    );
    // Just over: 505 % over 10 s = 50.5 %: (0.5 / 50) × 10 000 = 100 ms.
    let mut m = manager(ClientQuotaType::Request, 50.0);
    assert_eq!(m.record_and_get_throttle_time_ms("u", "c", 505.0, T0), 100);
}

#[test]
fn throttled_fetch_bytes_are_taken_back() {
    let mut m = manager(ClientQuotaType::Fetch, MB);
    assert_eq!(
        m.record_and_get_throttle_time_ms("u", "c", 12.0 * MB, T0),
        2_000
    );
    m.unrecord("u", "c", 12.0 * MB, T0);
    assert_eq!(m.measure("u", "c", T0), 0.0);
    assert_eq!(
        m.record_and_get_throttle_time_ms("u", "c", 9.0 * MB, T0 + 1),
        0
    );
}

#[test]
fn fetch_max_bytes_is_capped_at_quota_times_ten_windows() {
    let m = manager(ClientQuotaType::Fetch, MB);
    assert_eq!(m.max_value_in_quota_window("u", "c"), 10.0 * MB);
    let unlimited = ClientQuotaManager::new(ClientQuotaType::Fetch, QuotaWindow::default());
    assert_eq!(unlimited.max_value_in_quota_window("u", "c"), f64::MAX);
}

#[test]
fn nothing_is_recorded_before_a_quota_is_configured() {
    let mut m = ClientQuotaManager::new(ClientQuotaType::Produce, QuotaWindow::default());
    assert_eq!(m.record_and_get_throttle_time_ms("u", "c", 1e12, T0), 0);
    assert_eq!(m.sensor_count(), 0);
    // Once a quota was set, even unlimited clients are counted (Kafka's quotasEnabled).
    m.update_quota(&QuotaEntity::User("other".into()), Some(MB));
    m.update_quota(&QuotaEntity::User("other".into()), None);
    assert!(m.quotas_enabled());
    assert_eq!(m.record_and_get_throttle_time_ms("u", "c", 1e12, T0), 0);
    assert_eq!(m.sensor_count(), 1);
}

#[test]
fn quota_changes_reach_existing_sensors() {
    let mut m = manager(ClientQuotaType::Produce, MB);
    assert_eq!(m.record_and_get_throttle_time_ms("u", "c", 8.0 * MB, T0), 0);
    m.update_quota(&QuotaEntity::ClientId(EntityName::Default), Some(0.5 * MB));
    // 9 MB / 10 s = 0.9 MB/s against 0.5: (0.9 − 0.5) / 0.5 × 10 s = 8 s.
    assert_eq!(m.record_and_get_throttle_time_ms("u", "c", MB, T0), 8_000);
    m.update_quota(&QuotaEntity::ClientId(EntityName::Default), None);
    assert_eq!(m.record_and_get_throttle_time_ms("u", "c", MB, T0), 0);
}

#[test]
fn a_smaller_window_spreads_a_burst_less() {
    // 3 windows of 2 s: the minimum elapsed time is 2 × 2 s = 4 s.
    let mut m = ClientQuotaManager::new(ClientQuotaType::Produce, QuotaWindow::new(3, 2).unwrap());
    m.update_quota(&QuotaEntity::User(EntityName::Default), Some(MB));
    // 6 MB / 4 s = 1.5 MB/s: 0.5 × 4 000 = 2 000 ms.
    assert_eq!(
        m.record_and_get_throttle_time_ms("u", "c", 6.0 * MB, T0),
        2_000
    );
    assert_eq!(m.max_value_in_quota_window("u", "c"), 4.0 * MB);
}
