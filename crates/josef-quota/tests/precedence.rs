//! Kafka's eight-level quota precedence, one test per rule, and which sensor a client counts on.

use josef_quota::{
    ClientQuotaManager, ClientQuotaType, EntityName, QuotaEntity, QuotaLevel, QuotaWindow,
    SensorKey,
};

use EntityName::Default as D;

fn n(s: &str) -> EntityName {
    EntityName::Name(s.to_owned())
}

/// A manager with every level set, each to its level number, for user `u` and client `c`.
fn all_levels() -> ClientQuotaManager {
    let mut m = ClientQuotaManager::new(ClientQuotaType::Produce, QuotaWindow::default());
    let levels = [
        QuotaEntity::UserClientId(n("u"), n("c")),
        QuotaEntity::UserClientId(n("u"), D),
        QuotaEntity::User(n("u")),
        QuotaEntity::UserClientId(D, n("c")),
        QuotaEntity::UserClientId(D, D),
        QuotaEntity::User(D),
        QuotaEntity::ClientId(n("c")),
        QuotaEntity::ClientId(D),
    ];
    for (i, e) in levels.iter().enumerate() {
        assert!(m.update_quota(e, Some((i + 1) as f64)));
    }
    m
}

fn key(user: &str, client_id: &str) -> SensorKey {
    SensorKey {
        user: user.to_owned(),
        client_id: client_id.to_owned(),
    }
}

/// Removes levels 1..=`above` and checks who applies next.
fn after_removing(above: usize) -> (ClientQuotaManager, Option<f64>) {
    let mut m = all_levels();
    let levels = [
        QuotaEntity::UserClientId(n("u"), n("c")),
        QuotaEntity::UserClientId(n("u"), D),
        QuotaEntity::User(n("u")),
        QuotaEntity::UserClientId(D, n("c")),
        QuotaEntity::UserClientId(D, D),
        QuotaEntity::User(D),
        QuotaEntity::ClientId(n("c")),
        QuotaEntity::ClientId(D),
    ];
    for e in &levels[..above] {
        m.update_quota(e, None);
    }
    let q = m.quota("u", "c");
    (m, q)
}

#[test]
fn level_1_user_and_client_id() {
    let (m, q) = after_removing(0);
    assert_eq!(q, Some(1.0));
    assert_eq!(
        m.overrides().matching_level("u", "c"),
        Some(QuotaLevel::UserClientId)
    );
    assert_eq!(m.sensor_key("u", "c"), key("u", "c"));
}

#[test]
fn level_2_user_and_default_client_id() {
    let (m, q) = after_removing(1);
    assert_eq!(q, Some(2.0));
    assert_eq!(m.sensor_key("u", "c"), key("u", "c"));
    // Another client id of the same user gets the same level, on a sensor of its own.
    assert_eq!(m.quota("u", "other"), Some(2.0));
    assert_eq!(m.sensor_key("u", "other"), key("u", "other"));
}

#[test]
fn level_3_user() {
    let (m, q) = after_removing(2);
    assert_eq!(q, Some(3.0));
    // A user quota is shared by every client id of the user.
    assert_eq!(m.sensor_key("u", "c"), key("u", ""));
    assert_eq!(m.sensor_key("u", "other"), key("u", ""));
}

#[test]
fn level_4_default_user_and_client_id() {
    let (m, q) = after_removing(3);
    assert_eq!(q, Some(4.0));
    assert_eq!(m.sensor_key("u", "c"), key("u", "c"));
    assert_eq!(m.quota("someone", "c"), Some(4.0));
}

#[test]
fn level_5_default_user_and_default_client_id() {
    let (m, q) = after_removing(4);
    assert_eq!(q, Some(5.0));
    assert_eq!(m.quota("someone", "else"), Some(5.0));
    assert_eq!(m.sensor_key("someone", "else"), key("someone", "else"));
}

#[test]
fn level_6_default_user() {
    let (m, q) = after_removing(5);
    assert_eq!(q, Some(6.0));
    // Each user gets its own sensor with the default's limit.
    assert_eq!(m.sensor_key("u", "c"), key("u", ""));
    assert_eq!(m.sensor_key("v", "c"), key("v", ""));
}

#[test]
fn level_7_client_id() {
    let (m, q) = after_removing(6);
    assert_eq!(q, Some(7.0));
    // A client-id quota is shared by every user with that client id.
    assert_eq!(m.sensor_key("u", "c"), key("", "c"));
    assert_eq!(m.sensor_key("v", "c"), key("", "c"));
}

#[test]
fn level_8_default_client_id() {
    let (m, q) = after_removing(7);
    assert_eq!(q, Some(8.0));
    assert_eq!(m.sensor_key("u", "c"), key("", "c"));
    assert_eq!(m.sensor_key("u", "d"), key("", "d"));
}

#[test]
fn no_quota_is_unlimited() {
    let (m, q) = after_removing(8);
    assert_eq!(q, None);
    assert_eq!(m.overrides().matching_level("u", "c"), None);
}

#[test]
fn user_client_id_beats_user_which_beats_client_id() {
    let mut m = ClientQuotaManager::new(ClientQuotaType::Produce, QuotaWindow::default());
    m.update_quota(&QuotaEntity::ClientId(n("c")), Some(10.0));
    assert_eq!(m.quota("u", "c"), Some(10.0));
    m.update_quota(&QuotaEntity::User(n("u")), Some(20.0));
    assert_eq!(m.quota("u", "c"), Some(20.0));
    m.update_quota(&QuotaEntity::UserClientId(n("u"), n("c")), Some(30.0));
    assert_eq!(m.quota("u", "c"), Some(30.0));
    // A default user + client-id level (4) still beats a named client id (7).
    let mut m = ClientQuotaManager::new(ClientQuotaType::Produce, QuotaWindow::default());
    m.update_quota(&QuotaEntity::ClientId(n("c")), Some(10.0));
    m.update_quota(&QuotaEntity::UserClientId(D, D), Some(40.0));
    assert_eq!(m.quota("u", "c"), Some(40.0));
}

#[test]
fn two_client_ids_of_one_user_share_the_user_budget() {
    const MB: f64 = 1_000_000.0;
    let t0 = 1_700_000_000_000;
    let mut m = ClientQuotaManager::new(ClientQuotaType::Produce, QuotaWindow::default());
    m.update_quota(&QuotaEntity::User(n("alice")), Some(MB));
    assert_eq!(
        m.record_and_get_throttle_time_ms("alice", "a", 6.0 * MB, t0),
        0
    );
    // 6 + 6 = 12 MB on the shared sensor over 10 s: 1.2 MB/s → 2 000 ms.
    assert_eq!(
        m.record_and_get_throttle_time_ms("alice", "b", 6.0 * MB, t0),
        2_000
    );
    assert_eq!(m.sensor_count(), 1);
    // With a default-client-id level instead, each client id has its own budget.
    let mut m = ClientQuotaManager::new(ClientQuotaType::Produce, QuotaWindow::default());
    m.update_quota(&QuotaEntity::UserClientId(n("alice"), D), Some(MB));
    assert_eq!(
        m.record_and_get_throttle_time_ms("alice", "a", 6.0 * MB, t0),
        0
    );
    assert_eq!(
        m.record_and_get_throttle_time_ms("alice", "b", 6.0 * MB, t0),
        0
    );
    assert_eq!(m.sensor_count(), 2);
}

#[test]
fn ip_entities_are_not_client_quotas() {
    let mut m = ClientQuotaManager::new(ClientQuotaType::Produce, QuotaWindow::default());
    assert!(!m.update_quota(&QuotaEntity::Ip(D), Some(1.0)));
    assert!(!m.quotas_enabled());
}
