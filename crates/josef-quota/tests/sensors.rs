//! Sensors expire after an hour without a record, so memory stays bounded by active clients.

use josef_quota::{
    ClientQuotaManager, ClientQuotaType, ControllerMutationQuotaManager, EntityName,
    IpConnectionQuotas, QuotaEntity, QuotaWindow,
};

const T0: u64 = 1_700_000_000_000;
const HOUR: u64 = 3_600_000;

#[test]
fn idle_sensors_expire_after_an_hour() {
    let mut m = ClientQuotaManager::new(ClientQuotaType::Produce, QuotaWindow::default());
    m.update_quota(&QuotaEntity::ClientId(EntityName::Default), Some(1e6));
    for i in 0..1_000 {
        m.record_and_get_throttle_time_ms("u", &format!("client-{i}"), 100.0, T0);
    }
    assert_eq!(m.sensor_count(), 1_000);
    // One client stays active.
    m.record_and_get_throttle_time_ms("u", "client-0", 100.0, T0 + HOUR / 2);
    assert_eq!(
        m.expire_sensors(T0 + HOUR),
        0,
        "exactly an hour idle is not yet expired"
    );
    assert_eq!(m.expire_sensors(T0 + HOUR + 1), 999);
    assert_eq!(m.sensor_count(), 1);
}

#[test]
fn recording_sweeps_by_itself() {
    let mut m = ClientQuotaManager::new(ClientQuotaType::Request, QuotaWindow::default());
    m.update_quota(&QuotaEntity::User(EntityName::Default), Some(50.0));
    for i in 0..100 {
        m.record_and_get_throttle_time_ms(&format!("user-{i}"), "c", 1.0, T0);
    }
    assert_eq!(m.sensor_count(), 100);
    // The next record more than an hour later (and 30 s after the last sweep) sweeps.
    m.record_and_get_throttle_time_ms("fresh", "c", 1.0, T0 + HOUR + 30_000);
    assert_eq!(m.sensor_count(), 1);
}

#[test]
fn an_expired_sensor_starts_again_from_zero() {
    let mut m = ClientQuotaManager::new(ClientQuotaType::Produce, QuotaWindow::default());
    m.update_quota(&QuotaEntity::User("u".into()), Some(1e6));
    assert_eq!(m.record_and_get_throttle_time_ms("u", "c", 9e6, T0), 0);
    m.expire_sensors(T0 + HOUR + 1);
    assert_eq!(m.sensor_count(), 0);
    assert_eq!(
        m.record_and_get_throttle_time_ms("u", "c", 9e6, T0 + HOUR + 1),
        0
    );
}

#[test]
fn mutation_and_ip_sensors_expire_too() {
    let mut mutations = ControllerMutationQuotaManager::new(QuotaWindow::default());
    mutations.update_quota(&QuotaEntity::User(EntityName::Default), Some(1.0));
    mutations.record_and_get_throttle_time_ms("u", "c", 1.0, T0);
    assert_eq!(mutations.sensor_count(), 1);
    assert_eq!(mutations.expire_sensors(T0 + HOUR + 1), 1);

    let mut ips = IpConnectionQuotas::new(QuotaWindow::default());
    ips.update_ip_connection_rate_quota(None, Some(10));
    ips.record_connection("10.0.0.1".parse().unwrap(), T0);
    assert_eq!(ips.sensor_count(), 1);
    assert_eq!(ips.expire_sensors(T0 + HOUR + 1), 1);
}
