//! Controller mutation quotas (KIP-599), connection creation rates (KIP-612) and replication
//! quotas (KIP-73).

use std::net::IpAddr;

use josef_protocol::ApiKey;
use josef_quota::{
    is_strict, strict_since_version, ConnectionCreationRate, ControllerMutationQuotaManager,
    EntityName, IpConnectionDecision, IpConnectionQuotas, QuotaEntity, QuotaWindow,
    ReplicationQuotaManager, ThrottledReplicas,
};

const T0: u64 = 1_700_000_000_000;

fn mutations(rate: f64) -> ControllerMutationQuotaManager {
    let mut m = ControllerMutationQuotaManager::new(QuotaWindow::default());
    m.update_quota(&QuotaEntity::User(EntityName::Default), Some(rate));
    m
}

#[test]
fn mutation_quotas_are_enabled_by_the_first_quota_and_stay_on() {
    let mut m = ControllerMutationQuotaManager::new(QuotaWindow::default());
    assert!(!m.quotas_enabled());
    let alice = QuotaEntity::User(EntityName::from("alice"));
    assert!(!m.update_quota(&QuotaEntity::Ip(EntityName::Default), Some(1.0)));
    assert!(!m.quotas_enabled());
    m.update_quota(&alice, Some(1.0));
    assert!(m.quotas_enabled());
    m.update_quota(&alice, None);
    assert!(m.quotas_enabled());
    assert!(mutations(1.0).quotas_enabled());
}

#[test]
fn strict_versions() {
    assert_eq!(strict_since_version(ApiKey::CreateTopics), Some(6));
    assert_eq!(strict_since_version(ApiKey::DeleteTopics), Some(5));
    assert_eq!(strict_since_version(ApiKey::CreatePartitions), Some(3));
    assert_eq!(strict_since_version(ApiKey::Produce), None);
    assert!(is_strict(ApiKey::CreateTopics, 6));
    assert!(!is_strict(ApiKey::CreateTopics, 5));
    assert!(is_strict(ApiKey::DeleteTopics, 5));
    assert!(!is_strict(ApiKey::CreatePartitions, 2));
}

#[test]
fn create_topics_v6_ten_topics_of_ten_partitions_at_one_per_second() {
    // Burst = 11 windows × 1 s × 1/s = 11 tokens. Topic 1: 11 → 1; topic 2: 1 ≥ 0 so it is
    // taken → −9; topics 3..10: rejected, 9 tokens short at 1/s = 9 000 ms.
    let mut m = mutations(1.0);
    let mut quota = m.new_quota_for("admin", "tool", is_strict(ApiKey::CreateTopics, 6));
    let results: Vec<_> = (0..10).map(|_| m.record(&mut quota, 10.0, T0)).collect();
    assert!(results[0].is_ok() && results[1].is_ok());
    for r in &results[2..] {
        let e = r.unwrap_err();
        assert_eq!(e.throttle_time_ms, 9_000);
        assert_eq!(
            e.error_code(),
            josef_protocol::ErrorCode::ThrottlingQuotaExceeded
        );
    }
    assert!(quota.is_exceeded());
    assert_eq!(quota.throttle_time_ms(T0), 9_000);
    // The response's throttle time counts down while the request waits.
    assert_eq!(quota.throttle_time_ms(T0 + 2_000), 7_000);
    // 9 s later the bucket is back at 0: the next strict mutation passes.
    assert_eq!(m.tokens("admin", "tool", T0 + 9_000), Some(0.0));
    let mut next = m.new_quota_for("admin", "tool", true);
    assert!(m.record(&mut next, 10.0, T0 + 9_000).is_ok());
}

#[test]
fn create_topics_v5_applies_everything_and_throttles() {
    let mut m = mutations(1.0);
    let mut quota = m.new_quota_for("admin", "tool", is_strict(ApiKey::CreateTopics, 5));
    for _ in 0..10 {
        assert!(m.record(&mut quota, 10.0, T0).is_ok());
    }
    // 11 − 100 = −89 tokens: 89 s.
    assert!(!quota.is_exceeded());
    assert_eq!(quota.throttle_time_ms(T0), 89_000);
}

#[test]
fn unconfigured_mutation_quota_is_unbounded() {
    let mut m = ControllerMutationQuotaManager::new(QuotaWindow::default());
    let mut quota = m.new_quota_for("admin", "tool", true);
    for _ in 0..100 {
        assert!(m.record(&mut quota, 1_000.0, T0).is_ok());
    }
    assert_eq!(quota.throttle_time_ms(T0), 0);
    assert_eq!(m.sensor_count(), 0);
}

#[test]
fn ip_rate_of_two_per_second_closes_the_extra_connections_after_a_delay() {
    let ip: IpAddr = "192.0.2.7".parse().unwrap();
    let mut q = IpConnectionQuotas::new(QuotaWindow::default());
    q.update_ip_connection_rate_quota(Some(ip), Some(2));
    // 20 connections in the first second are 20 / 10 s = 2/s: accepted.
    for i in 0..20u64 {
        assert_eq!(
            q.record_connection(ip, T0 + i * 10),
            IpConnectionDecision::Accept
        );
    }
    // The 21st: 21 / 10.2 s = 2.06/s → (2.06 − 2) / 2 × 10 200 ms = 300 ms.
    assert_eq!(
        q.record_connection(ip, T0 + 200),
        IpConnectionDecision::CloseAfter {
            throttle_time_ms: 300
        }
    );
    // It was not counted, so the next at the same time is judged the same way.
    assert_eq!(
        q.record_connection(ip, T0 + 200),
        IpConnectionDecision::CloseAfter {
            throttle_time_ms: 300
        }
    );
    // Far over the rate (100 accepted at 100/s, then the default lowered to 1/s: 101 / 10 s =
    // 10.1/s → 91 s by the formula) a connection is closed after at most one window.
    let mut q = IpConnectionQuotas::new(QuotaWindow::default());
    q.update_ip_connection_rate_quota(None, Some(100));
    let other: IpAddr = "2001:db8::1".parse().unwrap();
    for _ in 0..100 {
        assert_eq!(q.record_connection(other, T0), IpConnectionDecision::Accept);
    }
    q.update_ip_connection_rate_quota(None, Some(1));
    assert_eq!(
        q.record_connection(other, T0),
        IpConnectionDecision::CloseAfter {
            throttle_time_ms: 1_000
        }
    );
    // An ip with its own rate is not bound by the default.
    q.update_ip_connection_rate_quota(Some(ip), Some(1_000));
    assert_eq!(q.connection_rate_for_ip(ip), Some(1_000));
    q.update_ip_connection_rate_quota(Some(ip), None);
    assert_eq!(q.connection_rate_for_ip(ip), Some(1));
    q.update_ip_connection_rate_quota(None, None);
    assert_eq!(q.connection_rate_for_ip(ip), None);
}

#[test]
fn broker_connection_creation_rate_delays_the_acceptor() {
    let mut r = ConnectionCreationRate::new(QuotaWindow::default(), Some(5));
    for _ in 0..50 {
        assert_eq!(r.record_connection(T0), 0);
    }
    // 51 / 10 s = 5.1/s → 0.1 / 5 × 10 000 = 200 ms; far over the rate, capped at 1 000 ms.
    assert_eq!(r.record_connection(T0), 200);
    for _ in 0..100 {
        r.record_connection(T0);
    }
    assert_eq!(r.record_connection(T0), 1_000);
    let mut unlimited = ConnectionCreationRate::new(QuotaWindow::default(), None);
    assert_eq!(unlimited.record_connection(T0), 0);
}

#[test]
fn throttled_replicas_syntax() {
    assert_eq!(
        ThrottledReplicas::parse("").unwrap(),
        ThrottledReplicas::None
    );
    assert_eq!(
        ThrottledReplicas::parse("  ").unwrap(),
        ThrottledReplicas::None
    );
    assert_eq!(
        ThrottledReplicas::parse("*").unwrap(),
        ThrottledReplicas::All
    );
    assert_eq!(
        ThrottledReplicas::parse(" * ").unwrap(),
        ThrottledReplicas::All
    );
    let r = ThrottledReplicas::parse("0:101, 1:102,0:102,").unwrap();
    assert!(r.contains(0, 101) && r.contains(1, 102) && r.contains(0, 102));
    assert!(!r.contains(1, 101));
    assert_eq!(r.to_string(), "0:101,0:102,1:102");
    for bad in [
        "0",
        "0:",
        ":1",
        "a:1",
        "0:1:2",
        "*,0:1",
        "-1:0",
        "0 :1x",
        "99999999999:1",
    ] {
        assert!(ThrottledReplicas::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn replication_quota_throttles_only_listed_out_of_sync_replicas_over_the_rate() {
    let mut leader = ReplicationQuotaManager::new(QuotaWindow::default());
    assert_eq!(leader.upper_bound(), i64::MAX);
    leader.update_quota(Some(1_000.0));
    leader.mark_throttled("t", ThrottledReplicas::parse("0:1,1:2").unwrap());
    leader.mark_throttled("all", ThrottledReplicas::All);
    assert!(leader.is_throttled("t", 0, 1));
    assert!(!leader.is_throttled("t", 0, 2));
    assert!(leader.is_throttled("all", 7, 9));
    assert!(!leader.is_throttled("other", 0, 1));
    // SimpleRate: 900 bytes over at least one window is 900 B/s, within 1 000 B/s.
    leader.record(900, T0);
    assert!(!leader.is_quota_exceeded(T0 + 10));
    leader.record(200, T0 + 10);
    assert!(leader.is_quota_exceeded(T0 + 10));
    assert!(leader.should_throttle("t", 0, 1, false, T0 + 10));
    assert!(!leader.should_throttle("t", 0, 1, true, T0 + 10));
    assert!(!leader.should_throttle("t", 1, 1, false, T0 + 10));
    // Over 2 s the same bytes are 550 B/s.
    assert!(!leader.is_quota_exceeded(T0 + 2_000));
    leader.remove_throttle("t");
    assert!(!leader.is_throttled("t", 0, 1));
    leader.update_quota(None);
    leader.record(1_000_000, T0 + 2_000);
    assert!(!leader.is_quota_exceeded(T0 + 2_000));
}
