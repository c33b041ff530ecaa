//! The `sticky` (eager) and `cooperative-sticky` assignors.
//!
//! Rules kept from Kafka's `AbstractStickyAssignor`:
//! - a member keeps the partitions it owned (highest generation wins a partition claimed twice;
//!   two claims in the same highest generation make the partition unowned), as long as it is still
//!   subscribed to the topic and the partition exists;
//! - when all members subscribe to the same topics, each member gets a quota of `n / m` or
//!   `n / m + 1` partitions, the larger quotas going to the members that own the most, so the
//!   number of moved partitions is the minimum possible;
//! - otherwise unowned partitions go to the least-loaded subscribed member and single moves
//!   are made while some member has two or more partitions more than a member that could take
//!   one of them (no single move can improve balance at the end);
//! - `cooperative-sticky` then withholds every partition that changes owner: the old owner
//!   revokes it first and a follow-up rebalance hands it over (KIP-429).
//!
//! The eager `sticky` assignor reads what a member owned from its `StickyAssignorUserData`
//! (previous assignment + generation), falling back to the subscription's owned partitions;
//! `cooperative-sticky` reads the subscription's owned partitions and generation (v1/v2+).
//! The exact placement of *new* partitions can differ from Kafka's; the balance and stickiness
//! rules above are what the tests check.

use std::collections::{BTreeMap, BTreeSet};

use bytes::{BufMut, Bytes, BytesMut};

use super::{member_order, to_assignment, AssignorMember, PartitionAssignor, TopicPartition};
use crate::consumer_protocol::{Assignment, Subscription, TopicPartitions};
use crate::error::GroupError;

/// The eager `sticky` assignor.
#[derive(Debug, Clone, Copy, Default)]
pub struct StickyAssignor;

/// The `cooperative-sticky` assignor (incremental rebalancing, KIP-429).
#[derive(Debug, Clone, Copy, Default)]
pub struct CooperativeStickyAssignor;

/// Encodes `StickyAssignorUserData` v1: previous assignment and generation.
pub fn encode_sticky_user_data(owned: &[TopicPartitions], generation: i32) -> Bytes {
    let mut buf = BytesMut::new();
    buf.put_i32(owned.len() as i32);
    for tp in owned {
        buf.put_i16(tp.topic.len() as i16);
        buf.put_slice(tp.topic.as_bytes());
        buf.put_i32(tp.partitions.len() as i32);
        for p in &tp.partitions {
            buf.put_i32(*p);
        }
    }
    buf.put_i32(generation);
    buf.freeze()
}

/// Decodes `StickyAssignorUserData` (v0 without, v1 with a generation; `-1` if absent).
pub fn decode_sticky_user_data(bytes: &[u8]) -> Result<(Vec<TopicPartitions>, i32), GroupError> {
    let err = |reason: &str| GroupError::Malformed {
        what: "StickyAssignorUserData",
        reason: reason.to_string(),
    };
    let mut pos = 0usize;
    let take = |pos: &mut usize, n: usize| -> Result<&[u8], GroupError> {
        let b = bytes.get(*pos..*pos + n).ok_or_else(|| err("truncated"))?;
        *pos += n;
        Ok(b)
    };
    let rd_i32 = |pos: &mut usize| -> Result<i32, GroupError> {
        let b = take(pos, 4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let n = rd_i32(&mut pos)?.max(0) as usize;
    if n.saturating_mul(6) > bytes.len() - pos {
        return Err(err("array longer than the remaining bytes"));
    }
    let mut owned = Vec::with_capacity(n);
    for _ in 0..n {
        let lb = take(&mut pos, 2)?;
        let len = i16::from_be_bytes([lb[0], lb[1]]).max(0) as usize;
        let topic = String::from_utf8(take(&mut pos, len)?.to_vec())
            .map_err(|_| err("topic is not UTF-8"))?;
        let m = rd_i32(&mut pos)?.max(0) as usize;
        if m.saturating_mul(4) > bytes.len() - pos {
            return Err(err("array longer than the remaining bytes"));
        }
        let mut partitions = Vec::with_capacity(m);
        for _ in 0..m {
            partitions.push(rd_i32(&mut pos)?);
        }
        owned.push(TopicPartitions { topic, partitions });
    }
    let generation = if bytes.len() - pos >= 4 {
        rd_i32(&mut pos)?
    } else {
        -1
    };
    Ok((owned, generation))
}

fn owned_of(sub: &Subscription, eager: bool) -> (Vec<TopicPartition>, i32) {
    if eager {
        if let Some(ud) = sub.user_data.as_ref().filter(|u| !u.is_empty()) {
            if let Ok((owned, generation)) = decode_sticky_user_data(ud) {
                return (flatten(&owned), generation);
            }
        }
    }
    (flatten(&sub.owned_partitions), sub.generation_id)
}

fn flatten(tps: &[TopicPartitions]) -> Vec<TopicPartition> {
    tps.iter()
        .flat_map(|tp| {
            tp.partitions
                .iter()
                .map(move |p| TopicPartition::new(tp.topic.clone(), *p))
        })
        .collect()
}

/// The sticky assignment; returns the new assignment and who validly owned what before.
fn sticky_assign(
    partitions_per_topic: &BTreeMap<String, i32>,
    members: &[AssignorMember],
    eager: bool,
) -> (
    BTreeMap<String, BTreeSet<TopicPartition>>,
    BTreeMap<TopicPartition, String>,
) {
    let mut order: Vec<&AssignorMember> = members.iter().collect();
    order.sort_by(|a, b| member_order(a, b));
    let rank: BTreeMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, m)| (m.member_id.as_str(), i))
        .collect();

    let subscribed: BTreeMap<&str, BTreeSet<&str>> = members
        .iter()
        .map(|m| {
            (
                m.member_id.as_str(),
                m.subscription
                    .topics
                    .iter()
                    .filter(|t| partitions_per_topic.get(*t).copied().unwrap_or(0) > 0)
                    .map(String::as_str)
                    .collect(),
            )
        })
        .collect();
    let all_topics: BTreeSet<&str> = subscribed.values().flatten().copied().collect();
    let all_partitions: Vec<TopicPartition> = all_topics
        .iter()
        .flat_map(|t| (0..partitions_per_topic[*t]).map(move |p| TopicPartition::new(*t, p)))
        .collect();

    // Resolve previous ownership: highest generation wins, a tie at the top makes it unowned.
    let mut claims: BTreeMap<TopicPartition, (i32, Option<String>)> = BTreeMap::new();
    for m in &order {
        let (owned, generation) = owned_of(&m.subscription, eager);
        let subs = &subscribed[m.member_id.as_str()];
        for tp in owned {
            if !subs.contains(tp.topic.as_str())
                || tp.partition < 0
                || tp.partition >= partitions_per_topic[&tp.topic]
            {
                continue;
            }
            match claims.get_mut(&tp) {
                None => {
                    claims.insert(tp, (generation, Some(m.member_id.clone())));
                }
                Some(c) if generation > c.0 => *c = (generation, Some(m.member_id.clone())),
                Some(c) if generation == c.0 => c.1 = None,
                Some(_) => {}
            }
        }
    }
    let prev_owner: BTreeMap<TopicPartition, String> = claims
        .into_iter()
        .filter_map(|(tp, (_, owner))| owner.map(|o| (tp, o)))
        .collect();

    let mut assignment: BTreeMap<String, BTreeSet<TopicPartition>> = members
        .iter()
        .map(|m| (m.member_id.clone(), BTreeSet::new()))
        .collect();
    for (tp, owner) in &prev_owner {
        assignment
            .get_mut(owner)
            .expect("owner is a member")
            .insert(tp.clone());
    }

    let all_equal = subscribed
        .values()
        .all(|s| Some(s) == subscribed.values().next());
    if all_equal && !members.is_empty() {
        // Quotas: the members owning the most get the larger quotas.
        let n = all_partitions.len();
        let m = members.len();
        let (floor, extra) = (n / m, n % m);
        let mut by_owned: Vec<&AssignorMember> = order.clone();
        by_owned.sort_by(|a, b| {
            assignment[&b.member_id]
                .len()
                .cmp(&assignment[&a.member_id].len())
                .then(rank[a.member_id.as_str()].cmp(&rank[b.member_id.as_str()]))
        });
        for (i, mem) in by_owned.iter().enumerate() {
            let quota = floor + usize::from(i < extra);
            let set = assignment.get_mut(&mem.member_id).expect("member");
            while set.len() > quota {
                let last = set.iter().next_back().cloned().expect("non-empty");
                set.remove(&last);
            }
        }
    }

    // Hand out unassigned partitions to the least-loaded subscribed member.
    let assigned: BTreeSet<TopicPartition> = assignment.values().flatten().cloned().collect();
    for tp in all_partitions.iter().filter(|tp| !assigned.contains(*tp)) {
        let target = order
            .iter()
            .filter(|m| subscribed[m.member_id.as_str()].contains(tp.topic.as_str()))
            .min_by_key(|m| (assignment[&m.member_id].len(), rank[m.member_id.as_str()]))
            .map(|m| m.member_id.clone());
        if let Some(t) = target {
            assignment.get_mut(&t).expect("member").insert(tp.clone());
        }
    }

    // Single moves while one member has >= 2 more than a member that could take a partition.
    loop {
        let mut moved = false;
        let mut heavy: Vec<&AssignorMember> = order.clone();
        heavy.sort_by_key(|m| {
            (
                std::cmp::Reverse(assignment[&m.member_id].len()),
                rank[m.member_id.as_str()],
            )
        });
        'outer: for a in &heavy {
            let a_len = assignment[&a.member_id].len();
            for tp in assignment[&a.member_id].clone() {
                let target = order
                    .iter()
                    .filter(|b| b.member_id != a.member_id)
                    .filter(|b| subscribed[b.member_id.as_str()].contains(tp.topic.as_str()))
                    .min_by_key(|b| (assignment[&b.member_id].len(), rank[b.member_id.as_str()]));
                if let Some(b) = target {
                    if assignment[&b.member_id].len() + 2 <= a_len {
                        let b_id = b.member_id.clone();
                        assignment
                            .get_mut(&a.member_id)
                            .expect("member")
                            .remove(&tp);
                        assignment.get_mut(&b_id).expect("member").insert(tp);
                        moved = true;
                        break 'outer;
                    }
                }
            }
        }
        if !moved {
            break;
        }
    }
    (assignment, prev_owner)
}

impl PartitionAssignor for StickyAssignor {
    fn name(&self) -> &'static str {
        "sticky"
    }

    fn assign(
        &self,
        partitions_per_topic: &BTreeMap<String, i32>,
        members: &[AssignorMember],
    ) -> Result<BTreeMap<String, Assignment>, GroupError> {
        let (assignment, _) = sticky_assign(partitions_per_topic, members, true);
        Ok(assignment
            .into_iter()
            .map(|(m, tps)| (m, to_assignment(tps)))
            .collect())
    }
}

impl PartitionAssignor for CooperativeStickyAssignor {
    fn name(&self) -> &'static str {
        "cooperative-sticky"
    }

    fn assign(
        &self,
        partitions_per_topic: &BTreeMap<String, i32>,
        members: &[AssignorMember],
    ) -> Result<BTreeMap<String, Assignment>, GroupError> {
        let (mut assignment, prev_owner) = sticky_assign(partitions_per_topic, members, false);
        // A partition changing owner is withheld until its previous owner has revoked it.
        for (member, set) in assignment.iter_mut() {
            set.retain(|tp| prev_owner.get(tp).map_or(true, |o| o == member));
        }
        Ok(assignment
            .into_iter()
            .map(|(m, tps)| (m, to_assignment(tps)))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(topics: &[&str], owned: &[(&str, i32)], generation: i32) -> Subscription {
        let mut by: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        for (t, p) in owned {
            by.entry(t.to_string()).or_default().push(*p);
        }
        Subscription {
            topics: topics.iter().map(|t| t.to_string()).collect(),
            owned_partitions: by
                .into_iter()
                .map(|(topic, partitions)| TopicPartitions { topic, partitions })
                .collect(),
            generation_id: generation,
            ..Subscription::default()
        }
    }

    #[test]
    fn sticky_user_data_round_trip() {
        let owned = vec![TopicPartitions {
            topic: "t".into(),
            partitions: vec![0, 5],
        }];
        let b = encode_sticky_user_data(&owned, 12);
        assert_eq!(decode_sticky_user_data(&b).unwrap(), (owned.clone(), 12));
        // v0 has no generation
        let v0 = &b[..b.len() - 4];
        assert_eq!(decode_sticky_user_data(v0).unwrap(), (owned, -1));
    }

    #[test]
    fn sticky_keeps_owned_partitions_when_a_member_joins() {
        let topics = BTreeMap::from([("t".to_string(), 4)]);
        let members = vec![
            AssignorMember::new("a", None, sub(&["t"], &[("t", 0), ("t", 1)], 1)),
            AssignorMember::new("b", None, sub(&["t"], &[("t", 2), ("t", 3)], 1)),
            AssignorMember::new("c", None, sub(&["t"], &[], -1)),
        ];
        let out = StickyAssignor.assign(&topics, &members).unwrap();
        let total: usize = out.values().map(|a| a.topic_partitions().count()).sum();
        assert_eq!(total, 4);
        // exactly one partition moves (to c)
        assert_eq!(out["c"].topic_partitions().count(), 1);
        let a: Vec<_> = out["a"].topic_partitions().collect();
        let b: Vec<_> = out["b"].topic_partitions().collect();
        assert!(a.iter().all(|(_, p)| *p < 2) && b.iter().all(|(_, p)| *p >= 2));
    }

    #[test]
    fn cooperative_sticky_withholds_partitions_that_change_owner() {
        let topics = BTreeMap::from([("t".to_string(), 4)]);
        let members = vec![
            AssignorMember::new(
                "a",
                None,
                sub(&["t"], &[("t", 0), ("t", 1), ("t", 2), ("t", 3)], 3),
            ),
            AssignorMember::new("b", None, sub(&["t"], &[], -1)),
        ];
        let out = CooperativeStickyAssignor.assign(&topics, &members).unwrap();
        // a keeps 2, b gets nothing yet: the 2 moving partitions are revoked first.
        assert_eq!(out["a"].topic_partitions().count(), 2);
        assert_eq!(out["b"].topic_partitions().count(), 0);
        // next round: a now owns 2, b owns nothing, the free ones go to b.
        let members = vec![
            AssignorMember::new("a", None, sub(&["t"], &[("t", 0), ("t", 1)], 4)),
            AssignorMember::new("b", None, sub(&["t"], &[], 4)),
        ];
        let out = CooperativeStickyAssignor.assign(&topics, &members).unwrap();
        assert_eq!(out["a"].topic_partitions().count(), 2);
        assert_eq!(out["b"].topic_partitions().count(), 2);
    }

    #[test]
    fn sticky_highest_generation_wins_a_double_claim() {
        let topics = BTreeMap::from([("t".to_string(), 2)]);
        let members = vec![
            AssignorMember::new("a", None, sub(&["t"], &[("t", 0)], 5)),
            AssignorMember::new("b", None, sub(&["t"], &[("t", 0)], 4)),
        ];
        let (assignment, prev) = sticky_assign(&topics, &members, false);
        assert_eq!(prev[&TopicPartition::new("t", 0)], "a");
        assert!(assignment["a"].contains(&TopicPartition::new("t", 0)));
    }
}
