//! AlterClientQuotas, DescribeClientQuotas and ClientQuotaRecord replay as Kafka answers them.

use josef_protocol::messages::alter_client_quotas_request::{AlterClientQuotasRequest, EntryData};
use josef_protocol::ErrorCode;
use josef_quota::{
    alter_entry as entry, describe_request, EntityName, QuotaEntity, QuotaManagers,
    QuotaManagersConfig, QuotaStore, MATCH_TYPE_DEFAULT, MATCH_TYPE_EXACT, MATCH_TYPE_SPECIFIED,
};

/// An entry setting one key.
fn set(entity: &[(&str, Option<&str>)], key: &str, value: f64) -> EntryData {
    entry(entity, &[(key, Some(value))])
}

fn alter(entries: Vec<EntryData>, validate_only: bool) -> AlterClientQuotasRequest {
    AlterClientQuotasRequest {
        entries,
        validate_only,
        ..Default::default()
    }
}

/// Alters and replays the records, as the controller and then the brokers do.
fn apply(m: &mut QuotaManagers, request: &AlterClientQuotasRequest) -> Vec<i16> {
    let outcome = m.store.alter_client_quotas(request);
    for r in &outcome.records {
        m.replay(r).unwrap();
    }
    outcome
        .response
        .entries
        .iter()
        .map(|e| e.error_code)
        .collect()
}

fn managers() -> QuotaManagers {
    QuotaManagers::new(QuotaManagersConfig::default())
}

const INVALID: i16 = ErrorCode::InvalidRequest as i16;

#[test]
fn set_and_remove_fall_back_live() {
    let mut m = managers();
    let codes = apply(
        &mut m,
        &alter(
            vec![
                set(&[("user", Some("alice"))], "producer_byte_rate", 2e6),
                set(&[("client-id", None)], "producer_byte_rate", 1e6),
            ],
            false,
        ),
    );
    assert_eq!(codes, vec![0, 0]);
    assert_eq!(m.produce.quota("alice", "x"), Some(2e6));
    assert_eq!(m.produce.quota("bob", "x"), Some(1e6));
    let codes = apply(
        &mut m,
        &alter(
            vec![entry(
                &[("user", Some("alice"))],
                &[("producer_byte_rate", None)],
            )],
            false,
        ),
    );
    assert_eq!(codes, vec![0]);
    assert_eq!(m.produce.quota("alice", "x"), Some(1e6));
    assert_eq!(m.store.quotas(&QuotaEntity::User("alice".into())), None);
}

#[test]
fn validate_only_writes_nothing() {
    let m = managers();
    let outcome = m.store.alter_client_quotas(&alter(
        vec![set(&[("user", Some("alice"))], "consumer_byte_rate", 5e6)],
        true,
    ));
    assert_eq!(outcome.response.entries[0].error_code, 0);
    assert!(outcome.records.is_empty());
}

#[test]
fn invalid_entries_are_invalid_request() {
    let m = managers();
    let user = |key: &str, value: f64| entry(&[("user", Some("u"))], &[(key, Some(value))]);
    let ip =
        |name: &str, key: &str, value: f64| entry(&[("ip", Some(name))], &[(key, Some(value))]);
    let cases: Vec<(EntryData, &str)> = vec![
        (user("producer_byte_rate", 1.5), "fractional"),
        (user("producer_byte_rate", 0.0), "zero"),
        (user("producer_byte_rate", -5.0), "negative"),
        (user("producer_byte_rate", 1e30), "too large"),
        (user("request_percentage", f64::NAN), "NaN"),
        (user("no_such_key", 1.0), "unknown key"),
        (user("connection_creation_rate", 1.0), "ip key"),
        (ip("10.0.0.1", "producer_byte_rate", 1.0), "user key on ip"),
        (ip("10.0.0.1", "connection_creation_rate", 1.5), "int"),
        (ip("10.0.0.1", "connection_creation_rate", 3e9), "int range"),
        (ip("not an ip", "connection_creation_rate", 1.0), "bad ip"),
        (
            entry(&[("ip", Some("10.0.0.1")), ("user", Some("u"))], &[]),
            "ip + user",
        ),
        (set(&[], "producer_byte_rate", 1.0), "empty entity"),
        (
            entry(&[("user", Some("u")), ("user", Some("v"))], &[]),
            "repeated type",
        ),
        (entry(&[("group", Some("g"))], &[]), "unknown type"),
        (entry(&[("user", Some(""))], &[]), "empty name"),
        (
            entry(
                &[("user", Some("u"))],
                &[
                    ("producer_byte_rate", Some(1.0)),
                    ("producer_byte_rate", Some(2.0)),
                ],
            ),
            "repeated key",
        ),
    ];
    for (e, what) in cases {
        let outcome = m.store.alter_client_quotas(&alter(vec![e], false));
        assert_eq!(outcome.response.entries[0].error_code, INVALID, "{what}");
        assert!(
            outcome.response.entries[0].error_message.is_some(),
            "{what}"
        );
        assert!(outcome.records.is_empty(), "{what}");
    }
}

#[test]
fn valid_values_of_each_type() {
    let mut m = managers();
    let codes = apply(
        &mut m,
        &alter(
            vec![
                entry(
                    &[("user", Some("u")), ("client-id", None)],
                    &[
                        ("producer_byte_rate", Some(1024.0)),
                        ("consumer_byte_rate", Some(2048.0)),
                        ("request_percentage", Some(12.5)),
                        ("controller_mutation_rate", Some(0.5)),
                    ],
                ),
                set(&[("ip", Some("::1"))], "connection_creation_rate", 7.0),
                set(&[("ip", None)], "connection_creation_rate", 3.0),
            ],
            false,
        ),
    );
    assert_eq!(codes, vec![0, 0, 0]);
    assert_eq!(m.fetch.quota("u", "any"), Some(2048.0));
    assert_eq!(m.request.quota("u", "any"), Some(12.5));
    assert_eq!(m.controller_mutation.quota("u", "any"), Some(0.5));
    assert_eq!(
        m.ip_connections
            .connection_rate_for_ip("::1".parse().unwrap()),
        Some(7)
    );
    assert_eq!(
        m.ip_connections
            .connection_rate_for_ip("10.1.1.1".parse().unwrap()),
        Some(3)
    );
}

#[test]
fn unchanged_values_and_absent_removals_write_no_record() {
    let mut m = managers();
    let set = alter(
        vec![set(&[("user", Some("u"))], "producer_byte_rate", 10.0)],
        false,
    );
    apply(&mut m, &set);
    assert!(m.store.alter_client_quotas(&set).records.is_empty());
    let remove_absent = alter(
        vec![entry(
            &[("user", Some("u"))],
            &[("consumer_byte_rate", None)],
        )],
        false,
    );
    let outcome = m.store.alter_client_quotas(&remove_absent);
    assert_eq!(outcome.response.entries[0].error_code, 0);
    assert!(outcome.records.is_empty());
}

#[test]
fn a_repeated_entity_is_refused_but_its_first_changes_stay_as_in_kafka() {
    let m = managers();
    let outcome = m.store.alter_client_quotas(&alter(
        vec![
            set(&[("user", Some("u"))], "producer_byte_rate", 10.0),
            set(&[("user", Some("u"))], "consumer_byte_rate", 10.0),
        ],
        false,
    ));
    assert_eq!(outcome.response.entries.len(), 1);
    assert_eq!(outcome.response.entries[0].error_code, INVALID);
    assert_eq!(outcome.records.len(), 1);
}

#[test]
fn one_bad_value_refuses_the_whole_entry_only() {
    let m = managers();
    let outcome = m.store.alter_client_quotas(&alter(
        vec![
            entry(
                &[("user", Some("u"))],
                &[
                    ("producer_byte_rate", Some(10.0)),
                    ("consumer_byte_rate", Some(-1.0)),
                ],
            ),
            set(&[("user", Some("v"))], "producer_byte_rate", 10.0),
        ],
        false,
    ));
    let codes: Vec<i16> = outcome
        .response
        .entries
        .iter()
        .map(|e| e.error_code)
        .collect();
    assert_eq!(codes, vec![INVALID, 0]);
    assert_eq!(outcome.records.len(), 1);
    assert_eq!(
        outcome.records[0].entity[0].entity_name.as_deref(),
        Some("v")
    );
}

fn filled_store() -> QuotaStore {
    let mut m = managers();
    apply(
        &mut m,
        &alter(
            vec![
                set(&[("user", Some("alice"))], "producer_byte_rate", 1.0),
                set(&[("user", None)], "producer_byte_rate", 2.0),
                set(
                    &[("user", Some("alice")), ("client-id", Some("app"))],
                    "producer_byte_rate",
                    3.0,
                ),
                set(
                    &[("user", Some("alice")), ("client-id", None)],
                    "producer_byte_rate",
                    4.0,
                ),
                set(&[("client-id", Some("app"))], "consumer_byte_rate", 5.0),
                set(&[("ip", Some("10.0.0.1"))], "connection_creation_rate", 6.0),
            ],
            false,
        ),
    );
    m.store
}

fn describe(
    store: &QuotaStore,
    components: &[(&str, i8, Option<&str>)],
    strict: bool,
) -> (i16, Vec<Vec<f64>>) {
    let response = store.describe_client_quotas(&describe_request(components, strict));
    let mut values: Vec<Vec<f64>> = response
        .entries
        .unwrap_or_default()
        .iter()
        .map(|e| e.values.iter().map(|v| v.value).collect())
        .collect();
    values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (response.error_code, values)
}

#[test]
fn describe_matches_as_kafka() {
    let s = filled_store();
    let v = |xs: &[f64]| xs.iter().map(|x| vec![*x]).collect::<Vec<_>>();
    // EXACT user alice, not strict: every entity with user alice.
    assert_eq!(
        describe(&s, &[("user", MATCH_TYPE_EXACT, Some("alice"))], false),
        (0, v(&[1.0, 3.0, 4.0]))
    );
    // Strict: only the entity with just that component.
    assert_eq!(
        describe(&s, &[("user", MATCH_TYPE_EXACT, Some("alice"))], true),
        (0, v(&[1.0]))
    );
    // DEFAULT user.
    assert_eq!(
        describe(&s, &[("user", MATCH_TYPE_DEFAULT, None)], false),
        (0, v(&[2.0]))
    );
    // SPECIFIED client-id: any entity with a client-id, default included.
    assert_eq!(
        describe(&s, &[("client-id", MATCH_TYPE_SPECIFIED, None)], false),
        (0, v(&[3.0, 4.0, 5.0]))
    );
    // user alice + DEFAULT client-id.
    assert_eq!(
        describe(
            &s,
            &[
                ("user", MATCH_TYPE_EXACT, Some("alice")),
                ("client-id", MATCH_TYPE_DEFAULT, None)
            ],
            true
        ),
        (0, v(&[4.0]))
    );
    // Empty filter: everything, or nothing when strict.
    assert_eq!(describe(&s, &[], false).1.len(), 6);
    assert_eq!(describe(&s, &[], true).1.len(), 0);
    // ip.
    assert_eq!(
        describe(&s, &[("ip", MATCH_TYPE_SPECIFIED, None)], true),
        (0, v(&[6.0]))
    );
    // No match.
    assert_eq!(
        describe(&s, &[("user", MATCH_TYPE_EXACT, Some("bob"))], false),
        (0, vec![])
    );
}

#[test]
fn describe_errors() {
    let s = filled_store();
    let unsupported = ErrorCode::UnsupportedVersion as i16;
    assert_eq!(
        describe(&s, &[("group", MATCH_TYPE_SPECIFIED, None)], false).0,
        unsupported
    );
    for components in [
        vec![("", MATCH_TYPE_SPECIFIED, None)],
        vec![
            ("user", MATCH_TYPE_SPECIFIED, None),
            ("user", MATCH_TYPE_EXACT, Some("a")),
        ],
        vec![("user", MATCH_TYPE_EXACT, None)],
        vec![("user", MATCH_TYPE_DEFAULT, Some("a"))],
        vec![("user", MATCH_TYPE_SPECIFIED, Some("a"))],
        vec![("user", 7, None)],
        vec![
            ("ip", MATCH_TYPE_SPECIFIED, None),
            ("client-id", MATCH_TYPE_SPECIFIED, None),
        ],
    ] {
        let response = s.describe_client_quotas(&describe_request(&components, false));
        assert_eq!(response.error_code, INVALID, "{components:?}");
        assert!(response.entries.is_none());
    }
}

#[test]
fn snapshot_records_rebuild_the_store() {
    let s = filled_store();
    let mut copy = QuotaStore::new();
    for r in s.to_records() {
        copy.replay(&r).unwrap();
    }
    assert_eq!(copy, s);
    assert_eq!(
        s.get(
            &QuotaEntity::UserClientId("alice".into(), EntityName::Default),
            "producer_byte_rate"
        ),
        Some(4.0)
    );
}

#[test]
fn unknown_keys_in_records_are_kept_but_enforce_nothing() {
    let mut m = managers();
    let change = josef_quota::QuotaChange {
        entity: QuotaEntity::User("u".into()),
        key: "future_rate".into(),
        value: Some(1.0),
    };
    m.replay(&change.to_record()).unwrap();
    assert_eq!(
        m.store.get(&QuotaEntity::User("u".into()), "future_rate"),
        Some(1.0)
    );
    assert!(!m.produce.quotas_enabled());
}

#[test]
fn sync_to_a_newer_image_applies_only_the_differences_and_keeps_sensors() {
    let mut m = QuotaManagers::new(QuotaManagersConfig::default());
    let mut image = QuotaStore::new();
    image
        .insert_components([("user", Some("alice"))], "producer_byte_rate", 1_000.0)
        .unwrap();
    image
        .insert_components([("client-id", None)], "consumer_byte_rate", 500.0)
        .unwrap();
    assert_eq!(m.sync_to(&image).len(), 2);
    assert_eq!(m.produce.quota("alice", "app"), Some(1_000.0));
    assert_eq!(m.fetch.quota("bob", "app"), Some(500.0));
    // alice's sensor fills up.
    assert_eq!(
        m.produce
            .record_and_get_throttle_time_ms("alice", "app", 15_000.0, 0),
        5_000
    );
    // The next image changes the default client quota and drops nothing else: alice keeps her
    // sensor and its samples.
    let mut next = image.clone();
    next.insert_components([("client-id", None)], "consumer_byte_rate", 700.0)
        .unwrap();
    let changes = m.sync_to(&next);
    assert_eq!(changes.len(), 1);
    assert_eq!(m.fetch.quota("bob", "app"), Some(700.0));
    assert!(m.produce.measure("alice", "app", 0) > 1_000.0);
    // An image without alice's quota removes it: she is unlimited again.
    let mut last = QuotaStore::new();
    last.insert_components([("client-id", None)], "consumer_byte_rate", 700.0)
        .unwrap();
    let changes = m.sync_to(&last);
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].value, None);
    assert_eq!(m.produce.quota("alice", "app"), None);
    assert_eq!(
        m.produce
            .record_and_get_throttle_time_ms("alice", "app", 15_000.0, 0),
        0
    );
    assert_eq!(m.store, last);
    assert!(m.sync_to(&last).is_empty());
}

#[test]
fn insert_components_refuses_what_no_record_can_name() {
    let mut s = QuotaStore::new();
    assert!(s
        .insert_components([("ip", Some("1.2.3.4")), ("user", None)], "x", 1.0)
        .is_err());
    assert!(s.insert_components([], "x", 1.0).is_err());
    s.insert_components(
        [("user", Some("alice")), ("client-id", None)],
        "request_percentage",
        50.0,
    )
    .unwrap();
    assert_eq!(
        s.get(
            &QuotaEntity::UserClientId(EntityName::from("alice"), EntityName::Default),
            "request_percentage"
        ),
        Some(50.0)
    );
}
