//! Kafka's `RoundRobinAssignor`: all partitions of all subscribed topics, sorted by topic then
//! partition, dealt in turn to the members (in `MemberInfo` order), skipping members that are
//! not subscribed to the partition's topic.

use std::collections::{BTreeMap, BTreeSet};

use super::{member_order, to_assignment, AssignorMember, PartitionAssignor, TopicPartition};
use crate::consumer_protocol::Assignment;
use crate::error::GroupError;

/// The `roundrobin` assignor.
#[derive(Debug, Clone, Copy, Default)]
pub struct RoundRobinAssignor;

impl PartitionAssignor for RoundRobinAssignor {
    fn name(&self) -> &'static str {
        "roundrobin"
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
        if members.is_empty() {
            return Ok(BTreeMap::new());
        }
        let mut sorted: Vec<&AssignorMember> = members.iter().collect();
        sorted.sort_by(|a, b| member_order(a, b));
        let topics: BTreeSet<&String> = members
            .iter()
            .flat_map(|m| m.subscription.topics.iter())
            .filter(|t| partitions_per_topic.contains_key(*t))
            .collect();
        let mut cursor = 0usize;
        for topic in topics {
            let count = partitions_per_topic[topic];
            for p in 0..count.max(0) {
                // Some member is subscribed to `topic` (it came from a subscription), so this ends.
                while !sorted[cursor % sorted.len()]
                    .subscription
                    .topics
                    .iter()
                    .any(|t| t == topic)
                {
                    cursor += 1;
                }
                let m = sorted[cursor % sorted.len()];
                cursor += 1;
                out.get_mut(&m.member_id)
                    .expect("member present")
                    .push(TopicPartition::new(topic.clone(), p));
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
    fn roundrobin_deals_sorted_partitions_in_turn() {
        // Kafka's javadoc example: C0: [t0p0, t0p2, t1p1], C1: [t0p1, t1p0, t1p2]
        let topics = BTreeMap::from([("t0".to_string(), 3), ("t1".to_string(), 3)]);
        let members = vec![
            AssignorMember::new("C0", None, sub(&["t0", "t1"])),
            AssignorMember::new("C1", None, sub(&["t0", "t1"])),
        ];
        let out = RoundRobinAssignor.assign(&topics, &members).unwrap();
        let c0: Vec<_> = out["C0"].topic_partitions().collect();
        let c1: Vec<_> = out["C1"].topic_partitions().collect();
        assert_eq!(c0, vec![("t0", 0), ("t0", 2), ("t1", 1)]);
        assert_eq!(c1, vec![("t0", 1), ("t1", 0), ("t1", 2)]);
    }

    #[test]
    fn roundrobin_skips_members_not_subscribed() {
        // Kafka's javadoc example with different subscriptions:
        // C0 [t0], C1 [t0, t1], C2 [t0, t1, t2]; t0:1, t1:2, t2:3 partitions
        // C0: [t0p0], C1: [t1p0], C2: [t1p1, t2p0, t2p1, t2p2]
        let topics = BTreeMap::from([
            ("t0".to_string(), 1),
            ("t1".to_string(), 2),
            ("t2".to_string(), 3),
        ]);
        let members = vec![
            AssignorMember::new("C0", None, sub(&["t0"])),
            AssignorMember::new("C1", None, sub(&["t0", "t1"])),
            AssignorMember::new("C2", None, sub(&["t0", "t1", "t2"])),
        ];
        let out = RoundRobinAssignor.assign(&topics, &members).unwrap();
        assert_eq!(
            out["C0"].topic_partitions().collect::<Vec<_>>(),
            vec![("t0", 0)]
        );
        assert_eq!(
            out["C1"].topic_partitions().collect::<Vec<_>>(),
            vec![("t1", 0)]
        );
        assert_eq!(
            out["C2"].topic_partitions().collect::<Vec<_>>(),
            vec![("t1", 1), ("t2", 0), ("t2", 1), ("t2", 2)]
        );
    }
}
