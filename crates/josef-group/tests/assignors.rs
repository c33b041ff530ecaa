//! Property tests of the assignors: validity, balance, and minimal movement for sticky.

use std::collections::{BTreeMap, BTreeSet};

use josef_group::assignor::*;
use josef_group::consumer_protocol::{Assignment, Subscription, TopicPartitions};
use proptest::prelude::*;

fn topics_strategy() -> impl Strategy<Value = BTreeMap<String, i32>> {
    prop::collection::vec(1..12i32, 1..4).prop_map(|counts| {
        counts
            .into_iter()
            .enumerate()
            .map(|(i, c)| (format!("t{i}"), c))
            .collect()
    })
}

fn owned_map(a: &BTreeMap<String, Assignment>) -> BTreeMap<TopicPartition, String> {
    let mut m = BTreeMap::new();
    for (member, asg) in a {
        for (t, p) in asg.topic_partitions() {
            assert!(
                m.insert(TopicPartition::new(t, p), member.clone())
                    .is_none(),
                "{t}-{p} assigned twice"
            );
        }
    }
    m
}

fn counts(a: &BTreeMap<String, Assignment>) -> Vec<usize> {
    a.values().map(|x| x.topic_partitions().count()).collect()
}

fn members_with(subs: &[Vec<String>]) -> Vec<AssignorMember> {
    subs.iter()
        .enumerate()
        .map(|(i, topics)| {
            AssignorMember::new(
                &format!("m{i:02}"),
                None,
                Subscription {
                    topics: topics.clone(),
                    ..Subscription::default()
                },
            )
        })
        .collect()
}

fn with_owned(
    members: &[AssignorMember],
    owned: &BTreeMap<String, Assignment>,
    generation: i32,
) -> Vec<AssignorMember> {
    members
        .iter()
        .map(|m| {
            let mut m = m.clone();
            m.subscription.owned_partitions = owned
                .get(&m.member_id)
                .map(|a| a.partitions.clone())
                .unwrap_or_default();
            m.subscription.generation_id = generation;
            m
        })
        .collect()
}

/// Every partition of a subscribed topic is owned by exactly one member subscribed to it.
fn assert_valid(
    topics: &BTreeMap<String, i32>,
    members: &[AssignorMember],
    a: &BTreeMap<String, Assignment>,
) {
    let owners = owned_map(a);
    let subscribed: BTreeSet<&String> = members
        .iter()
        .flat_map(|m| m.subscription.topics.iter())
        .collect();
    for (t, n) in topics {
        for p in 0..*n {
            let tp = TopicPartition::new(t.clone(), p);
            match owners.get(&tp) {
                Some(owner) => {
                    let m = members.iter().find(|m| &m.member_id == owner).unwrap();
                    assert!(
                        m.subscription.topics.contains(t),
                        "{owner} not subscribed to {t}"
                    );
                }
                None => assert!(!subscribed.contains(t), "{t}-{p} unassigned"),
            }
        }
    }
}

fn all_assignors() -> Vec<Box<dyn PartitionAssignor>> {
    vec![
        Box::new(RangeAssignor),
        Box::new(RoundRobinAssignor),
        Box::new(StickyAssignor),
        Box::new(CooperativeStickyAssignor),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn every_assignor_gives_each_partition_to_exactly_one_subscribed_member(
        topics in topics_strategy(),
        subs in prop::collection::vec(prop::collection::btree_set(0..3usize, 1..3), 1..7),
    ) {
        let subs: Vec<Vec<String>> = subs.iter().map(|s| s.iter().map(|i| format!("t{i}")).collect()).collect();
        let members = members_with(&subs);
        for a in all_assignors() {
            let out = a.assign(&topics, &members).unwrap();
            prop_assert_eq!(out.len(), members.len());
            assert_valid(&topics, &members, &out);
        }
    }

    #[test]
    fn balanced_within_one_when_subscriptions_are_equal(
        topics in topics_strategy(),
        n in 1..9usize,
    ) {
        let all: Vec<String> = topics.keys().cloned().collect();
        let members = members_with(&vec![all; n]);
        for a in [Box::new(RoundRobinAssignor) as Box<dyn PartitionAssignor>, Box::new(StickyAssignor), Box::new(CooperativeStickyAssignor)] {
            let c = counts(&a.assign(&topics, &members).unwrap());
            prop_assert!(c.iter().max().unwrap() - c.iter().min().unwrap() <= 1, "{}: {:?}", a.name(), c);
        }
        // Range balances each topic on its own.
        let out = RangeAssignor.assign(&topics, &members).unwrap();
        for t in topics.keys() {
            let per: Vec<usize> = out.values().map(|a| a.topic_partitions().filter(|(x, _)| x == t).count()).collect();
            prop_assert!(per.iter().max().unwrap() - per.iter().min().unwrap() <= 1);
        }
    }

    #[test]
    fn sticky_is_balanced_where_subscriptions_allow(
        topics in topics_strategy(),
        subs in prop::collection::vec(prop::collection::btree_set(0..3usize, 1..3), 1..7),
    ) {
        // No member holds two or more partitions more than another member that could take one.
        let subs: Vec<Vec<String>> = subs.iter().map(|s| s.iter().map(|i| format!("t{i}")).collect()).collect();
        let members = members_with(&subs);
        let out = StickyAssignor.assign(&topics, &members).unwrap();
        for (a, asg) in &out {
            let ca = asg.topic_partitions().count();
            for (t, _) in asg.topic_partitions() {
                for b in &members {
                    if b.subscription.topics.iter().any(|x| x == t) {
                        let cb = out[&b.member_id].topic_partitions().count();
                        prop_assert!(cb + 2 > ca, "{} has {} but {} could take {} and has {}", a, ca, b.member_id, t, cb);
                    }
                }
            }
        }
    }

    #[test]
    fn sticky_moves_no_more_partitions_than_needed(
        topics in topics_strategy(),
        n_before in 1..7usize,
        n_after in 1..7usize,
        seed in any::<u64>(),
    ) {
        let all: Vec<String> = topics.keys().cloned().collect();
        // Some previous (possibly unbalanced) assignment among the first members.
        let before = members_with(&vec![all.clone(); n_before]);
        let mut prev: BTreeMap<String, Vec<TopicPartition>> = BTreeMap::new();
        let mut x = seed;
        for (t, c) in &topics {
            for p in 0..*c {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let owner = &before[(x >> 33) as usize % n_before].member_id;
                prev.entry(owner.clone()).or_default().push(TopicPartition::new(t.clone(), p));
            }
        }
        let prev_assignment: BTreeMap<String, Assignment> = prev.into_iter().map(|(m, tps)| (m, to_assignment(tps))).collect();
        let after = with_owned(&members_with(&vec![all; n_after]), &prev_assignment, 1);
        let out = StickyAssignor.assign(&topics, &after).unwrap();
        assert_valid(&topics, &after, &out);
        let c = counts(&out);
        prop_assert!(c.iter().max().unwrap() - c.iter().min().unwrap() <= 1);
        // Partitions that changed owner, among those whose owner is still a member.
        let old = owned_map(&prev_assignment);
        let new = owned_map(&out);
        let moved = old.iter().filter(|(tp, o)| out.contains_key(*o) && new.get(*tp) != Some(*o)).count();
        // The minimum: members owning the most get the larger quotas.
        let total: usize = topics.values().map(|c| *c as usize).sum();
        let (floor, extra) = (total / n_after, total % n_after);
        let mut owned_counts: Vec<usize> = after.iter().map(|m| prev_assignment.get(&m.member_id).map(|a| a.topic_partitions().count()).unwrap_or(0)).collect();
        owned_counts.sort_unstable_by(|a, b| b.cmp(a));
        let minimum: usize = owned_counts.iter().enumerate().map(|(i, o)| o.saturating_sub(floor + usize::from(i < extra))).sum();
        prop_assert_eq!(moved, minimum);
    }

    #[test]
    fn cooperative_sticky_never_hands_over_a_partition_in_the_round_it_is_revoked(
        topics in topics_strategy(),
        n_before in 1..6usize,
        n_after in 1..7usize,
    ) {
        let all: Vec<String> = topics.keys().cloned().collect();
        let first = CooperativeStickyAssignor.assign(&topics, &members_with(&vec![all.clone(); n_before])).unwrap();
        let members = with_owned(&members_with(&vec![all; n_after]), &first, 1);
        let second = CooperativeStickyAssignor.assign(&topics, &members).unwrap();
        let old = owned_map(&first);
        for (tp, owner) in owned_map(&second) {
            if let Some(prev) = old.get(&tp) {
                if members.iter().any(|m| &m.member_id == prev) {
                    prop_assert_eq!(&owner, prev, "{:?} moved without being revoked first", tp);
                }
            }
        }
        // The follow-up rebalance (owned = what is held now) completes the move: balanced.
        let members = with_owned(&members, &second, 2);
        let third = CooperativeStickyAssignor.assign(&topics, &members).unwrap();
        assert_valid(&topics, &members, &third);
        let c = counts(&third);
        prop_assert!(c.iter().max().unwrap() - c.iter().min().unwrap() <= 1);
    }
}

#[test]
fn leader_assign_round_trips_through_consumer_protocol_bytes() {
    let topics = BTreeMap::from([("t".to_string(), 4)]);
    let sub = Subscription {
        topics: vec!["t".into()],
        ..Subscription::default()
    };
    let members = vec![
        ("b".to_string(), None, sub.encode(3)),
        ("a".to_string(), None, sub.encode(0)),
    ];
    let out = leader_assign("roundrobin", &topics, &members, 3).unwrap();
    let decoded: BTreeMap<String, Assignment> = out
        .into_iter()
        .map(|(m, b)| (m, Assignment::decode(&b).unwrap().1))
        .collect();
    assert_eq!(
        decoded["a"].partitions,
        vec![TopicPartitions {
            topic: "t".into(),
            partitions: vec![0, 2]
        }]
    );
    assert!(leader_assign("nope", &topics, &members, 3).is_err());
}
