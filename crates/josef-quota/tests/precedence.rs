//! Kafka's eight-level quota precedence, one test per rule, and which sensor a client counts on.

use josef_quota::{
    ClientQuotaManager, ClientQuotaType, EntityName, QuotaEntity, QuotaLevel, QuotaWindow,
    SensorKey,
};

use EntityName::Default as D;

fn n(s: &str) -> EntityName {
    EntityName::Name(s.to_owned())
}

/// Every level for user `u` and client `c`, most specific first.
fn levels() -> [QuotaEntity; 8] {
    [
        QuotaEntity::UserClientId(n("u"), n("c")),
        QuotaEntity::UserClientId(n("u"), D),
        QuotaEntity::User(n("u")),
        QuotaEntity::UserClientId(D, n("c")),
        QuotaEntity::UserClientId(D, D),
        QuotaEntity::User(D),
        QuotaEntity::ClientId(n("c")),
        QuotaEntity::ClientId(D),
    ]
}

/// ((user, client id), (user tag, client-id tag)) of the sensor it counts on.
type Expect<'a> = ((&'a str, &'a str), (&'a str, &'a str));

/// Sets every level to its number, removes the first `removed`, and checks that `u` / `c` gets
/// the next level's quota and that each (user, client id) counts on the expected sensor.
fn check(removed: usize, sensors: &[Expect<'_>]) -> ClientQuotaManager {
    let mut m = ClientQuotaManager::new(ClientQuotaType::Produce, QuotaWindow::default());
    for (i, e) in levels().iter().enumerate() {
        assert!(m.update_quota(e, Some((i + 1) as f64)));
    }
    for e in &levels()[..removed] {
        m.update_quota(e, None);
    }
    let expected = (removed < 8).then_some((removed + 1) as f64);
    assert_eq!(m.quota("u", "c"), expected);
    for ((user, client_id), (tag_user, tag_client_id)) in sensors {
        let key = SensorKey {
            user: (*tag_user).to_owned(),
            client_id: (*tag_client_id).to_owned(),
        };
        assert_eq!(m.sensor_key(user, client_id), key, "{user}/{client_id}");
    }
    m
}

#[test]
fn level_1_user_and_client_id() {
    let m = check(0, &[(("u", "c"), ("u", "c"))]);
    assert_eq!(
        m.overrides().matching_level("u", "c"),
        Some(QuotaLevel::UserClientId)
    );
}

#[test]
fn level_2_user_and_default_client_id() {
    // Another client id of the same user gets the same level, on a sensor of its own.
    let m = check(
        1,
        &[(("u", "c"), ("u", "c")), (("u", "other"), ("u", "other"))],
    );
    assert_eq!(m.quota("u", "other"), Some(2.0));
}

#[test]
fn level_3_user() {
    // A user quota is shared by every client id of the user.
    check(2, &[(("u", "c"), ("u", "")), (("u", "other"), ("u", ""))]);
}

#[test]
fn level_4_default_user_and_client_id() {
    let m = check(
        3,
        &[
            (("u", "c"), ("u", "c")),
            (("someone", "c"), ("someone", "c")),
        ],
    );
    assert_eq!(m.quota("someone", "c"), Some(4.0));
}

#[test]
fn level_5_default_user_and_default_client_id() {
    let m = check(4, &[(("someone", "else"), ("someone", "else"))]);
    assert_eq!(m.quota("someone", "else"), Some(5.0));
}

#[test]
fn level_6_default_user() {
    // Each user gets its own sensor with the default's limit.
    check(5, &[(("u", "c"), ("u", "")), (("v", "c"), ("v", ""))]);
}

#[test]
fn level_7_client_id() {
    // A client-id quota is shared by every user with that client id.
    check(6, &[(("u", "c"), ("", "c")), (("v", "c"), ("", "c"))]);
}

#[test]
fn level_8_default_client_id() {
    check(7, &[(("u", "c"), ("", "c")), (("u", "d"), ("", "d"))]);
}

#[test]
fn no_quota_is_unlimited() {
    let m = check(8, &[(("u", "c"), ("", "c"))]);
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
