//! Describing consumer groups: ConsumerGroupDescribe field by field (Kafka's
//! `ConsumerGroup.asDescribedGroup` and `ConsumerGroupMember.asConsumerGroupDescribeMember`), and
//! the classic DescribeGroups, which in Kafka describes classic groups only: its
//! `describeGroups` looks the id up as a classic group, so a consumer group answers Dead with no
//! members (and, from v6, GROUP_ID_NOT_FOUND).

mod consumer_common;

use consumer_common::*;
use josef_group::api::{JoinGroupRequest, JoinProtocol};
use josef_group::consumer::ConsumerGroupState;
use josef_group::consumer_protocol::Subscription;
use josef_group::{Errors, GroupConfig};

fn two_members() -> H {
    let mut h = H::new(GroupConfig::default(), &[("t", 4), ("u", 2)]);
    let mut a = join("g", "a", &["t"]);
    a.instance_id = Some("ia".into());
    a.rack_id = Some("r1".into());
    assert_eq!(h.hb(a).error, Errors::None);
    let mut b = join("g", "b", &[]);
    b.subscribed_topic_names = None;
    b.subscribed_topic_regex = Some("u|t".into());
    assert_eq!(h.hb(b).error, Errors::None);
    h
}

#[test]
fn consumer_group_describe_fills_every_field() {
    let mut h = two_members();
    // `a` still owns every partition of `t` the target gives `b`: Reconciling.
    let d = h.c.consumer_group_describe(&["g".into()]);
    let g = &d[0];
    assert_eq!((g.error, g.error_message.as_deref()), (Errors::None, None));
    assert_eq!(g.group_id, "g");
    assert_eq!(g.group_state, "Reconciling");
    assert_eq!((g.group_epoch, g.assignment_epoch), (2, 2));
    assert_eq!(g.assignor_name, "uniform", "the first configured assignor");

    let a = g.members.iter().find(|m| m.member_id == "a").unwrap();
    assert_eq!(a.instance_id.as_deref(), Some("ia"));
    assert_eq!(a.rack_id.as_deref(), Some("r1"));
    assert_eq!(a.member_epoch, 1);
    assert_eq!(a.client_id, "client");
    assert_eq!(a.client_host, "/127.0.0.1");
    assert_eq!(a.subscribed_topic_names, vec!["t".to_string()]);
    assert_eq!(a.subscribed_topic_regex, None);
    let owned: Vec<(String, Vec<i32>)> = a
        .assignment
        .iter()
        .map(|t| (t.topic_name.clone(), t.partitions.clone()))
        .collect();
    assert_eq!(owned, vec![("t".to_string(), vec![0, 1, 2, 3])]);
    assert_eq!(a.assignment[0].topic_id, topic_id("t"));
    let target: usize = a.target_assignment.iter().map(|t| t.partitions.len()).sum();
    assert_eq!(target, 3, "a's share of the six partitions");

    let b = g.members.iter().find(|m| m.member_id == "b").unwrap();
    assert_eq!(
        (b.instance_id.as_deref(), b.rack_id.as_deref()),
        (None, None)
    );
    assert_eq!(b.subscribed_topic_regex.as_deref(), Some("u|t"));
    assert_eq!(b.member_epoch, 2);
    let names: Vec<&str> = b
        .target_assignment
        .iter()
        .map(|t| t.topic_name.as_str())
        .collect();
    assert!(names.contains(&"u"), "{names:?}");

    // Once `a` has released what it must, the group is Stable and assignment = target.
    let owned_a = h.c.consumer_group("g").unwrap().target_of("a");
    let mut beat_a = beat("g", "a", 1, Some(owned_a));
    beat_a.instance_id = Some("ia".into());
    assert_eq!(h.hb(beat_a).error, Errors::None);
    let b_epoch =
        h.c.consumer_group("g")
            .unwrap()
            .member("b")
            .unwrap()
            .member_epoch;
    assert_eq!(h.hb(beat("g", "b", b_epoch, None)).error, Errors::None);
    assert_eq!(
        h.c.consumer_group("g").unwrap().state(),
        ConsumerGroupState::Stable
    );
    let d = h.c.consumer_group_describe(&["g".into()]);
    assert_eq!(d[0].group_state, "Stable");
    for m in &d[0].members {
        assert_eq!(m.assignment, m.target_assignment, "{}", m.member_id);
        assert_eq!(m.member_epoch, 2);
    }
}

#[test]
fn consumer_group_describe_names_the_assignor_most_members_ask_for() {
    let mut h = H::new(GroupConfig::default(), &[("t", 4)]);
    let mut a = join("g", "a", &["t"]);
    a.server_assignor = Some("range".into());
    h.hb(a);
    let d = h.c.consumer_group_describe(&["g".into()]);
    assert_eq!(d[0].assignor_name, "range");
}

#[test]
fn consumer_group_describe_of_a_classic_or_missing_group_is_group_id_not_found() {
    let mut h = two_members();
    let join = JoinGroupRequest {
        group_id: "classic".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 10_000,
        member_id: String::new(),
        group_instance_id: None,
        protocol_type: "consumer".into(),
        protocols: vec![JoinProtocol {
            name: "range".into(),
            metadata: Subscription::default().encode(1),
        }],
        reason: None,
    };
    let r = h.c.join_group(h.now, 1, &ctx(3), join);
    h.apply(r);
    let d =
        h.c.consumer_group_describe(&["classic".into(), "nope".into()]);
    assert_eq!(d[0].error, Errors::GroupIdNotFound);
    assert_eq!(
        d[0].error_message.as_deref(),
        Some("Group classic is not a consumer group.")
    );
    assert_eq!(d[1].error, Errors::GroupIdNotFound);
    assert_eq!(d[1].error_message.as_deref(), Some("Group nope not found."));
}

#[test]
fn describe_groups_of_a_consumer_group_answers_dead_as_kafka_does() {
    let h = two_members();
    for version in 0..=5 {
        let d = h.c.describe_groups(version, &["g".into()]);
        assert_eq!(d.len(), 1);
        let g = &d[0];
        assert_eq!(g.error, Errors::None, "v{version}");
        assert_eq!(g.group_id, "g");
        assert_eq!(g.group_state, "Dead");
        assert_eq!(
            (g.protocol_type.as_str(), g.protocol_data.as_str()),
            ("", "")
        );
        assert!(g.members.is_empty());
    }
    let d = h.c.describe_groups(6, &["g".into()]);
    assert_eq!(
        (d[0].error, d[0].group_state.as_str()),
        (Errors::GroupIdNotFound, "Dead")
    );
}
