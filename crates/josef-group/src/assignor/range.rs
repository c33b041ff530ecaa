//! Kafka's `RangeAssignor` (without rack awareness): per topic, the subscribed members in
//! `MemberInfo` order each take a contiguous range; the first `partitions % members` members
//! take one extra partition.

use std::collections::BTreeMap;

use super::{member_order, to_assignment, AssignorMember, PartitionAssignor, TopicPartition};
use crate::consumer_protocol::Assignment;
use crate::error::GroupError;

/// The `range` assignor.
#[derive(Debug, Clone, Copy, Default)]
pub struct RangeAssignor;

impl PartitionAssignor for RangeAssignor {
    fn name(&self) -> &'static str {
        "range"
    }

    fn assign(
        &self,
        partitions_per_topic: &BTreeMap<String, i32>,
        members: &[AssignorMember],
    ) -> Result<BTreeMap<String, Assignment>, GroupError> {
        let mut out: BTreeMap<String, Vec<TopicPartition>> = members
            .iter()
            .map(|m| (m.member_id.clone(), Vec::new()))
            .collect();
        for (topic, &count) in partitions_per_topic {
            let mut subscribed: Vec<&AssignorMember> = members
                .iter()
                .filter(|m| m.subscription.topics.iter().any(|t| t == topic))
                .collect();
            if subscribed.is_empty() || count <= 0 {
                continue;
            }
            subscribed.sort_by(|a, b| member_order(a, b));
            let n = subscribed.len() as i32;
            let per = count / n;
            let extra = count % n;
            for (i, m) in subscribed.iter().enumerate() {
                let i = i as i32;
                let start = per * i + i.min(extra);
                let len = per + if i < extra { 1 } else { 0 };
                let entry = out.get_mut(&m.member_id).expect("member present");
                for p in start..start + len {
                    entry.push(TopicPartition::new(topic.clone(), p));
                }
            }
        }
        Ok(out
            .into_iter()
            .map(|(m, tps)| (m, to_assignment(tps)))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consumer_protocol::Subscription;

    fn sub(topics: &[&str]) -> Subscription {
        Subscription {
            topics: topics.iter().map(|t| t.to_string()).collect(),
            ..Subscription::default()
        }
    }

    #[test]
    fn range_gives_first_members_the_extra_partitions() {
        let topics = BTreeMap::from([("t0".to_string(), 3), ("t1".to_string(), 3)]);
        let members = vec![
            AssignorMember::new("c1", None, sub(&["t0", "t1"])),
            AssignorMember::new("c0", None, sub(&["t0", "t1"])),
        ];
        let out = RangeAssignor.assign(&topics, &members).unwrap();
        // Kafka's javadoc example: C0: [t0p0, t0p1, t1p0, t1p1], C1: [t0p2, t1p2]
        let c0: Vec<_> = out["c0"].topic_partitions().collect();
        let c1: Vec<_> = out["c1"].topic_partitions().collect();
        assert_eq!(c0, vec![("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)]);
        assert_eq!(c1, vec![("t0", 2), ("t1", 2)]);
    }

    #[test]
    fn range_ignores_unsubscribed_and_unknown_topics() {
        let topics = BTreeMap::from([("a".to_string(), 2)]);
        let members = vec![
            AssignorMember::new("m1", None, sub(&["a", "missing"])),
            AssignorMember::new("m2", None, sub(&["b"])),
        ];
        let out = RangeAssignor.assign(&topics, &members).unwrap();
        assert_eq!(out["m1"].topic_partitions().count(), 2);
        assert_eq!(out["m2"].topic_partitions().count(), 0);
    }
}
