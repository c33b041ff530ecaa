//! Properties of the server-side assignors: every subscribed partition assigned exactly once,
//! to a subscriber; `uniform` balanced and sticky (moves no more than balance needs) and
//! rack-aware without giving up either; `range` contiguous per topic and, as Kafka's, blind to
//! racks.

use std::collections::{BTreeMap, BTreeSet};

use josef_group::assignor::server::{
    GroupSpec, MemberSpec, RangeAssignor, ServerAssignor, TopicSpec, UniformAssignor,
};
use josef_group::consumer::{assignment_len, Assignment};
use josef_protocol::Uuid;
use proptest::prelude::*;

fn t(i: usize) -> Uuid {
    Uuid::from_u64_pair(7, i as u64)
}

fn owners(out: &BTreeMap<String, Assignment>) -> BTreeMap<(Uuid, i32), String> {
    let mut o = BTreeMap::new();
    for (m, a) in out {
        for (topic, ps) in a {
            for p in ps {
                assert!(
                    o.insert((*topic, *p), m.clone()).is_none(),
                    "assigned twice"
                );
            }
        }
    }
    o
}

fn check_complete(spec: &GroupSpec, out: &BTreeMap<String, Assignment>) {
    let o = owners(out);
    for (topic, ts) in &spec.topics {
        let subscribed = spec.members.values().any(|m| m.topics.contains(topic));
        for p in 0..ts.partitions {
            match o.get(&(*topic, p)) {
                Some(m) => assert!(
                    spec.members[m].topics.contains(topic),
                    "given to a non-subscriber"
                ),
                None => assert!(!subscribed, "subscribed partition {p} left unassigned"),
            }
        }
    }
    assert_eq!(out.len(), spec.members.len());
}

fn homogeneous(members: usize, partitions: &[i32]) -> GroupSpec {
    let topics: BTreeSet<Uuid> = (0..partitions.len()).map(t).collect();
    GroupSpec {
        members: (0..members)
            .map(|i| (format!("m{i:02}"), MemberSpec::new(topics.clone())))
            .collect(),
        topics: partitions
            .iter()
            .enumerate()
            .map(|(i, p)| (t(i), TopicSpec::new(*p)))
            .collect(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn uniform_homogeneous_is_balanced_and_moves_the_least(
        members in 1usize..8,
        partitions in prop::collection::vec(0i32..12, 1..4),
        leave in 0usize..3,
        join in 0usize..3,
    ) {
        let spec = homogeneous(members, &partitions);
        let first = UniformAssignor.assign(&spec).unwrap();
        check_complete(&spec, &first);
        let total: usize = partitions.iter().map(|p| *p as usize).sum();
        let sizes: Vec<usize> = first.values().map(assignment_len).collect();
        prop_assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
        prop_assert_eq!(sizes.iter().sum::<usize>(), total);

        // Members leave and join; the rest keep their targets as current.
        let mut next = spec.clone();
        let gone: Vec<String> = next.members.keys().take(leave.min(members - 1)).cloned().collect();
        for g in &gone { next.members.remove(g); }
        for m in next.members.iter_mut() { m.1.current = first[m.0].clone(); }
        let topics: BTreeSet<Uuid> = (0..partitions.len()).map(t).collect();
        for j in 0..join { next.members.insert(format!("n{j}"), MemberSpec::new(topics.clone())); }
        let second = UniformAssignor.assign(&next).unwrap();
        check_complete(&next, &second);
        let n = next.members.len();
        let sizes: Vec<usize> = second.values().map(assignment_len).collect();
        prop_assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
        // Stickiness: a kept member loses only what exceeds the largest share.
        let (quota, extra) = (total / n, total % n);
        let mut kept_sizes: Vec<usize> = next.members.iter().filter(|(id, _)| first.contains_key(*id))
            .map(|(id, _)| assignment_len(&first[id])).collect();
        kept_sizes.sort_unstable_by(|a, b| b.cmp(a));
        let needed: usize = kept_sizes.iter().enumerate()
            .map(|(i, s)| s.saturating_sub(quota + usize::from(i < extra))).sum();
        let moved: usize = next.members.keys().filter(|id| first.contains_key(*id))
            .map(|id| first[id].iter().map(|(t, ps)| ps.iter()
                .filter(|p| !second[id].get(t).is_some_and(|s| s.contains(p))).count()).sum::<usize>())
            .sum();
        prop_assert!(moved <= needed, "moved {} > needed {}", moved, needed);
    }

    #[test]
    fn uniform_heterogeneous_assigns_every_subscribed_partition(
        subs in prop::collection::vec(prop::collection::btree_set(0usize..4, 0..4), 1..7),
        partitions in prop::collection::vec(0i32..10, 4),
    ) {
        let spec = GroupSpec {
            members: subs.iter().enumerate()
                .map(|(i, s)| (format!("m{i}"), MemberSpec::new(s.iter().map(|x| t(*x)).collect())))
                .collect(),
            topics: partitions.iter().enumerate().map(|(i, p)| (t(i), TopicSpec::new(*p))).collect(),
        };
        let out = UniformAssignor.assign(&spec).unwrap();
        check_complete(&spec, &out);
        // No member could take a partition from one holding two more.
        for (a, ma) in &spec.members {
            for b in spec.members.keys() {
                if assignment_len(&out[b]) >= assignment_len(&out[a]) + 2 {
                    prop_assert!(out[b].keys().all(|topic| !ma.topics.contains(topic)));
                }
            }
        }
        let range = RangeAssignor.assign(&spec).unwrap();
        check_complete(&spec, &range);
    }

    #[test]
    fn uniform_keeps_partitions_in_their_rack_when_it_can(
        racks in 1usize..4,
        per_rack in 1usize..4,
        k in 1i32..4,
    ) {
        // Every rack holds the same number of members and of partitions (one replica each).
        let n = racks * per_rack;
        let partitions = (n as i32) * k;
        let mut topic = TopicSpec::new(partitions);
        for p in 0..partitions {
            topic.racks.insert(p, BTreeSet::from([format!("r{}", p as usize % racks)]));
        }
        let spec = GroupSpec {
            members: (0..n).map(|i| (format!("m{i:02}"), MemberSpec {
                rack_id: Some(format!("r{}", i % racks)),
                ..MemberSpec::new(BTreeSet::from([t(0)]))
            })).collect(),
            topics: BTreeMap::from([(t(0), topic)]),
        };
        let out = UniformAssignor.assign(&spec).unwrap();
        check_complete(&spec, &out);
        for (m, a) in &out {
            let rack = spec.members[m].rack_id.clone().unwrap();
            for p in a.get(&t(0)).into_iter().flatten() {
                prop_assert_eq!(format!("r{}", *p as usize % racks), rack.clone());
            }
            prop_assert_eq!(assignment_len(a), k as usize);
        }
    }

    #[test]
    fn racks_never_cost_uniform_its_balance_or_stickiness(
        members in prop::collection::vec(prop::option::of(0usize..3), 1..8),
        partitions in prop::collection::vec(
            prop::collection::vec(prop::collection::btree_set(0usize..3, 0..3), 0..12), 1..3),
    ) {
        // Any racks, matching or not: the sizes still differ by at most one, every partition
        // is assigned once, and assigning again from the result moves nothing.
        let topics: BTreeSet<Uuid> = (0..partitions.len()).map(t).collect();
        let spec = GroupSpec {
            members: members.iter().enumerate().map(|(i, r)| (format!("m{i:02}"), MemberSpec {
                rack_id: r.map(|r| format!("r{r}")),
                ..MemberSpec::new(topics.clone())
            })).collect(),
            topics: partitions.iter().enumerate().map(|(i, ps)| {
                let mut topic = TopicSpec::new(ps.len() as i32);
                for (p, rs) in ps.iter().enumerate() {
                    topic.racks.insert(p as i32, rs.iter().map(|r| format!("r{r}")).collect());
                }
                (t(i), topic)
            }).collect(),
        };
        let out = UniformAssignor.assign(&spec).unwrap();
        check_complete(&spec, &out);
        let sizes: Vec<usize> = out.values().map(assignment_len).collect();
        prop_assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
        let mut again = spec.clone();
        for (id, m) in again.members.iter_mut() { m.current = out[id].clone(); }
        prop_assert_eq!(UniformAssignor.assign(&again).unwrap(), out);
    }

    #[test]
    fn range_ignores_racks_as_kafka_does(
        members in prop::collection::vec(prop::option::of(0usize..3), 1..6),
        partitions in prop::collection::vec(prop::collection::btree_set(0usize..3, 0..3), 0..12),
    ) {
        // Kafka's server-side range assignor is not rack-aware (KAFKA-16694 took rack
        // awareness out of the server-side assignors): racks change nothing.
        let with_racks = GroupSpec {
            members: members.iter().enumerate().map(|(i, r)| (format!("m{i}"), MemberSpec {
                rack_id: r.map(|r| format!("r{r}")),
                ..MemberSpec::new(BTreeSet::from([t(0)]))
            })).collect(),
            topics: BTreeMap::from([(t(0), TopicSpec {
                partitions: partitions.len() as i32,
                racks: partitions.iter().enumerate()
                    .map(|(p, rs)| (p as i32, rs.iter().map(|r| format!("r{r}")).collect()))
                    .collect(),
            })]),
        };
        let mut without = with_racks.clone();
        for m in without.members.values_mut() { m.rack_id = None; }
        for topic in without.topics.values_mut() { topic.racks.clear(); }
        prop_assert_eq!(
            RangeAssignor.assign(&with_racks).unwrap(),
            RangeAssignor.assign(&without).unwrap()
        );
    }
}

#[test]
fn range_co_partitions_and_puts_static_members_first() {
    let topics = BTreeSet::from([t(0), t(1)]);
    let mut spec = GroupSpec {
        members: ["a", "b", "c"]
            .iter()
            .map(|m| (m.to_string(), MemberSpec::new(topics.clone())))
            .collect(),
        topics: BTreeMap::from([(t(0), TopicSpec::new(7)), (t(1), TopicSpec::new(7))]),
    };
    spec.members.get_mut("c").unwrap().instance_id = Some("i".into());
    let out = RangeAssignor.assign(&spec).unwrap();
    assert_eq!(out["c"][&t(0)], BTreeSet::from([0, 1, 2]));
    assert_eq!(out["a"][&t(0)], BTreeSet::from([3, 4]));
    assert_eq!(out["b"][&t(0)], BTreeSet::from([5, 6]));
    for m in ["a", "b", "c"] {
        assert_eq!(out[m][&t(0)], out[m][&t(1)], "co-partitioned");
    }
}

#[test]
fn a_topic_without_metadata_is_an_assignor_error() {
    let spec = GroupSpec {
        members: BTreeMap::from([("a".to_string(), MemberSpec::new(BTreeSet::from([t(9)])))]),
        topics: BTreeMap::new(),
    };
    assert!(UniformAssignor.assign(&spec).is_err());
    assert!(RangeAssignor.assign(&spec).is_err());
}
