//! `uniform` (server side): balanced first, then sticky, rack-aware where racks are known.
//!
//! 1. Every member keeps the partitions of its current target that it still subscribes to
//!    and that still exist (each partition once).
//! 2. Free partitions (topics with fewer subscribers first) go to a subscriber in one of the
//!    partition's racks that is below its fair share, else to the least-loaded subscriber
//!    (ties: a rack match, then the member id).
//! 3. While a member has two partitions more than another member that could take one of them,
//!    one moves (a partition in the receiver's rack if there is one).
//!
//! With homogeneous subscriptions the counts end up differing by at most one and step 3 moves
//! the fewest partitions that balance needs.

use std::collections::{BTreeMap, BTreeSet};

use josef_protocol::Uuid;

use super::{GroupSpec, ServerAssignor};
use crate::consumer::{normalize, Assignment};
use crate::error::GroupError;

/// Kafka's server-side `uniform` assignor (the default).
#[derive(Debug, Default, Clone, Copy)]
pub struct UniformAssignor;

struct State<'a> {
    spec: &'a GroupSpec,
    owned: BTreeMap<&'a str, BTreeSet<(Uuid, i32)>>,
    owner: BTreeMap<(Uuid, i32), &'a str>,
}

impl<'a> State<'a> {
    fn load(&self, m: &str) -> usize {
        self.owned.get(m).map_or(0, |s| s.len())
    }

    fn give(&mut self, m: &'a str, tp: (Uuid, i32)) {
        if let Some(old) = self.owner.insert(tp, m) {
            if let Some(s) = self.owned.get_mut(old) {
                s.remove(&tp);
            }
        }
        self.owned.entry(m).or_default().insert(tp);
    }

    fn rack_match(&self, m: &str, tp: (Uuid, i32)) -> bool {
        let rack = self.spec.members[m].rack_id.as_deref();
        self.spec.topics[&tp.0].has_rack(tp.1, rack)
    }
}

impl ServerAssignor for UniformAssignor {
    fn name(&self) -> &'static str {
        "uniform"
    }

    fn assign(&self, spec: &GroupSpec) -> Result<BTreeMap<String, Assignment>, GroupError> {
        spec.validate("uniform")?;
        let mut subscribers: BTreeMap<Uuid, Vec<&str>> = BTreeMap::new();
        for (id, m) in &spec.members {
            for t in &m.topics {
                subscribers.entry(*t).or_default().push(id.as_str());
            }
        }
        let mut st = State {
            spec,
            owned: spec
                .members
                .keys()
                .map(|m| (m.as_str(), BTreeSet::new()))
                .collect(),
            owner: BTreeMap::new(),
        };
        // 1. Stickiness.
        for (id, m) in &spec.members {
            for (t, ps) in &m.current {
                let Some(topic) = spec.topics.get(t).filter(|_| m.topics.contains(t)) else {
                    continue;
                };
                for p in ps.iter().filter(|p| (0..topic.partitions).contains(*p)) {
                    if !st.owner.contains_key(&(*t, *p)) {
                        st.give(id, (*t, *p));
                    }
                }
            }
        }
        // A member's fair share: each of its topics split among the topic's subscribers.
        let share: BTreeMap<&str, usize> = spec
            .members
            .iter()
            .map(|(id, m)| {
                let s: f64 = m
                    .topics
                    .iter()
                    .map(|t| spec.topics[t].partitions as f64 / subscribers[t].len().max(1) as f64)
                    .sum();
                (id.as_str(), s.ceil() as usize)
            })
            .collect();
        // 2. Free partitions, topics with fewer subscribers first.
        let mut topics: Vec<(&Uuid, &Vec<&str>)> = subscribers.iter().collect();
        topics.sort_by_key(|(t, s)| (s.len(), **t));
        for (t, subs) in topics {
            for p in 0..spec.topics[t].partitions {
                let tp = (*t, p);
                if st.owner.contains_key(&tp) {
                    continue;
                }
                let in_rack = subs
                    .iter()
                    .filter(|m| st.rack_match(m, tp) && st.load(m) < share[*m])
                    .min_by_key(|m| (st.load(m), **m))
                    .copied();
                let chosen = in_rack.or_else(|| {
                    subs.iter()
                        .min_by_key(|m| (st.load(m), !st.rack_match(m, tp), **m))
                        .copied()
                });
                if let Some(m) = chosen {
                    st.give(m, tp);
                }
            }
        }
        // 3. Balance: from the most to the least loaded member that can take a partition.
        let limit = st.owner.len().saturating_mul(spec.members.len()).max(1);
        for _ in 0..limit {
            if !balance_once(&mut st) {
                break;
            }
        }
        Ok(spec
            .members
            .keys()
            .map(|id| {
                let mut a = Assignment::new();
                for (t, p) in &st.owned[id.as_str()] {
                    a.entry(*t).or_default().insert(*p);
                }
                (id.clone(), normalize(a))
            })
            .collect())
    }
}

/// Moves one partition from a member with at least two more than a member that subscribes to
/// it; false when none can move.
fn balance_once(st: &mut State<'_>) -> bool {
    let mut by_load: Vec<&str> = st.owned.keys().copied().collect();
    by_load.sort_by_key(|m| (st.load(m), *m));
    for a in by_load.iter() {
        for b in by_load.iter().rev() {
            if st.load(b) < st.load(a) + 2 {
                break;
            }
            let takes = &st.spec.members[*a].topics;
            let movable: Vec<(Uuid, i32)> = st.owned[*b]
                .iter()
                .filter(|tp| takes.contains(&tp.0))
                .copied()
                .collect();
            let pick = movable
                .iter()
                .find(|tp| st.rack_match(a, **tp) && !st.rack_match(b, **tp))
                .or_else(|| movable.iter().find(|tp| st.rack_match(a, **tp)))
                .or_else(|| movable.iter().rev().find(|tp| !st.rack_match(b, **tp)))
                .or_else(|| movable.last())
                .copied();
            if let Some(tp) = pick {
                st.give(a, tp);
                return true;
            }
        }
    }
    false
}
