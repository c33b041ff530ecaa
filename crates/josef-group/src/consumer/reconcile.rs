//! Moving a member from its current assignment towards its target (Kafka's
//! `CurrentAssignmentBuilder`). The rules keep a partition from being owned by two members at
//! once: a member gives up partitions first (UNREVOKED_PARTITIONS, its epoch unchanged), and is
//! given a partition only once no other member holds it (else UNRELEASED_PARTITIONS).

use josef_protocol::Uuid;

use super::member::ConsumerMember;
use super::types::{normalize, Assignment, MemberState};
use crate::error::Errors;

/// Why a member cannot be reconciled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReconcileError {
    /// A member in an unknown state still reports partitions: it must rejoin from scratch.
    Fenced,
}

impl From<ReconcileError> for Errors {
    fn from(_: ReconcileError) -> Errors {
        Errors::FencedMemberEpoch
    }
}

/// The next state of `member` given the target at `target_epoch`.
///
/// `held_by_other(topic, partition)` tells whether another member still holds a partition
/// (assigned or pending revocation). `owned` is what the member reported owning (`None`: not
/// reported, which counts as still owning whatever it must revoke).
pub fn reconcile(
    member: &ConsumerMember,
    target_epoch: i32,
    target: &Assignment,
    held_by_other: &dyn Fn(&Uuid, i32) -> bool,
    owned: Option<&Assignment>,
) -> Result<ConsumerMember, ReconcileError> {
    match member.state {
        MemberState::Stable if member.member_epoch == target_epoch => Ok(member.clone()),
        MemberState::Stable | MemberState::UnreleasedPartitions => Ok(next(
            member,
            member.member_epoch,
            target_epoch,
            target,
            held_by_other,
            owned,
        )),
        MemberState::UnrevokedPartitions => {
            if owns_any(owned, &member.pending_revocation) {
                return Ok(member.clone());
            }
            Ok(next(
                member,
                member.member_epoch + 1,
                target_epoch,
                target,
                held_by_other,
                owned,
            ))
        }
        MemberState::Unknown => {
            if owned.map_or(true, |o| o.values().any(|p| !p.is_empty())) {
                return Err(ReconcileError::Fenced);
            }
            Ok(next(
                member,
                target_epoch,
                target_epoch,
                target,
                held_by_other,
                owned,
            ))
        }
    }
}

/// True if `owned` (unknown = true) still holds any of `revoke`.
fn owns_any(owned: Option<&Assignment>, revoke: &Assignment) -> bool {
    let Some(owned) = owned else {
        return true;
    };
    owned.iter().any(|(t, ps)| {
        revoke
            .get(t)
            .is_some_and(|r| ps.iter().any(|p| r.contains(p)))
    })
}

fn next(
    member: &ConsumerMember,
    epoch_if_revoking: i32,
    target_epoch: i32,
    target: &Assignment,
    held_by_other: &dyn Fn(&Uuid, i32) -> bool,
    owned: Option<&Assignment>,
) -> ConsumerMember {
    let mut kept = Assignment::new();
    let mut revoke = Assignment::new();
    let mut assign = Assignment::new();
    let mut unreleased = false;
    let topics: std::collections::BTreeSet<Uuid> = target
        .keys()
        .chain(member.assigned.keys())
        .copied()
        .collect();
    for topic in topics {
        let empty = Default::default();
        let want = target.get(&topic).unwrap_or(&empty);
        let have = member.assigned.get(&topic).unwrap_or(&empty);
        let k: std::collections::BTreeSet<i32> = have.intersection(want).copied().collect();
        let r: std::collections::BTreeSet<i32> = have.difference(&k).copied().collect();
        let mut a = std::collections::BTreeSet::new();
        for p in want.difference(&k) {
            if held_by_other(&topic, *p) {
                unreleased = true;
            } else {
                a.insert(*p);
            }
        }
        kept.insert(topic, k);
        revoke.insert(topic, r);
        assign.insert(topic, a);
    }
    let kept = normalize(kept);
    let revoke = normalize(revoke);
    let assign = normalize(assign);
    let mut out = member.clone();
    if !revoke.is_empty() && owns_any(owned, &revoke) {
        out.state = MemberState::UnrevokedPartitions;
        set_epoch(&mut out, epoch_if_revoking);
        out.assigned = kept;
        out.pending_revocation = revoke;
        return out;
    }
    let mut assigned = kept;
    for (t, ps) in assign.iter() {
        assigned.entry(*t).or_default().extend(ps.iter().copied());
    }
    out.state = if unreleased {
        MemberState::UnreleasedPartitions
    } else {
        MemberState::Stable
    };
    set_epoch(&mut out, target_epoch);
    out.assigned = assigned;
    out.pending_revocation = Assignment::new();
    out
}

/// Kafka's `updateMemberEpoch`: the previous epoch remembers the last different one.
fn set_epoch(m: &mut ConsumerMember, epoch: i32) {
    if m.member_epoch != epoch {
        m.previous_member_epoch = m.member_epoch;
    }
    m.member_epoch = epoch;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(n: u128) -> Uuid {
        Uuid::from_u64_pair(0, n as u64)
    }

    fn a(parts: &[(u128, &[i32])]) -> Assignment {
        normalize(
            parts
                .iter()
                .map(|(topic, ps)| (t(*topic), ps.iter().copied().collect()))
                .collect(),
        )
    }

    fn member(epoch: i32, assigned: Assignment) -> ConsumerMember {
        let mut m = ConsumerMember::new("m");
        m.member_epoch = epoch;
        m.previous_member_epoch = epoch - 1;
        m.assigned = assigned;
        m
    }

    #[test]
    fn revocation_comes_first_and_keeps_the_epoch() {
        let m = member(1, a(&[(1, &[0, 1, 2])]));
        let target = a(&[(1, &[0, 1])]);
        let n = reconcile(&m, 2, &target, &|_, _| false, None).unwrap();
        assert_eq!(n.state, MemberState::UnrevokedPartitions);
        assert_eq!(n.member_epoch, 1);
        assert_eq!(n.assigned, a(&[(1, &[0, 1])]));
        assert_eq!(n.pending_revocation, a(&[(1, &[2])]));
        // Still reporting the partition: no progress.
        let owned = a(&[(1, &[0, 1, 2])]);
        let same = reconcile(&n, 2, &target, &|_, _| false, Some(&owned)).unwrap();
        assert_eq!(same, n);
        // A null owned list counts as still owning.
        assert_eq!(reconcile(&n, 2, &target, &|_, _| false, None).unwrap(), n);
        // Revoked: next epoch, stable.
        let owned = a(&[(1, &[0, 1])]);
        let done = reconcile(&n, 2, &target, &|_, _| false, Some(&owned)).unwrap();
        assert_eq!(done.state, MemberState::Stable);
        assert_eq!((done.member_epoch, done.previous_member_epoch), (2, 1));
        assert!(done.pending_revocation.is_empty());
    }

    #[test]
    fn a_partition_still_held_elsewhere_is_not_given() {
        let m = member(1, Assignment::new());
        let target = a(&[(1, &[0, 1])]);
        let held = |_: &Uuid, p: i32| p == 1;
        let n = reconcile(&m, 2, &target, &held, Some(&Assignment::new())).unwrap();
        assert_eq!(n.state, MemberState::UnreleasedPartitions);
        assert_eq!(n.member_epoch, 2);
        assert_eq!(n.assigned, a(&[(1, &[0])]));
        let n2 = reconcile(&n, 2, &target, &|_, _| false, None).unwrap();
        assert_eq!(n2.state, MemberState::Stable);
        assert_eq!(n2.assigned, target);
    }

    #[test]
    fn revoked_partitions_not_reported_skip_the_revocation_step() {
        let m = member(1, a(&[(1, &[0, 1])]));
        let target = a(&[(1, &[0])]);
        let n = reconcile(&m, 2, &target, &|_, _| false, Some(&a(&[(1, &[0])]))).unwrap();
        assert_eq!(n.state, MemberState::Stable);
        assert_eq!(n.member_epoch, 2);
    }

    #[test]
    fn an_unknown_state_fences_unless_nothing_is_owned() {
        let mut m = member(1, a(&[(1, &[0])]));
        m.state = MemberState::Unknown;
        let target = a(&[(1, &[0])]);
        assert_eq!(
            reconcile(&m, 2, &target, &|_, _| false, None),
            Err(ReconcileError::Fenced)
        );
        let n = reconcile(&m, 2, &target, &|_, _| false, Some(&Assignment::new())).unwrap();
        assert_eq!(n.state, MemberState::Stable);
        assert_eq!(
            Errors::from(ReconcileError::Fenced),
            Errors::FencedMemberEpoch
        );
    }
}
