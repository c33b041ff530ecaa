//! Server-side assignors of the consumer group protocol (KIP-848): the coordinator computes
//! the target assignment itself with the assignor the members name in `ServerAssignor`
//! (`group.consumer.assignors`: `uniform`, then `range`).
//!
//! ```
//! use std::collections::{BTreeMap, BTreeSet};
//! use josef_group::assignor::server::{GroupSpec, MemberSpec, TopicSpec, ServerAssignor, UniformAssignor};
//! use josef_protocol::Uuid;
//!
//! let t = Uuid::from_u64_pair(0, 1);
//! let member = |id: &str| (id.to_string(), MemberSpec::new(BTreeSet::from([t])));
//! let spec = GroupSpec {
//!     members: BTreeMap::from([member("a"), member("b"), member("c")]),
//!     topics: BTreeMap::from([(t, TopicSpec::new(6))]),
//! };
//! let out = UniformAssignor.assign(&spec).unwrap();
//! assert!(out.values().all(|a| a[&t].len() == 2));
//! ```

mod range;
mod uniform;

use std::collections::{BTreeMap, BTreeSet};

use josef_protocol::Uuid;

use crate::consumer::Assignment;
use crate::error::GroupError;

pub use range::RangeAssignor;
pub use uniform::UniformAssignor;

/// A member as a server assignor sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemberSpec {
    /// The static instance id.
    pub instance_id: Option<String>,
    /// The member's rack.
    pub rack_id: Option<String>,
    /// Subscribed topic ids (all present in [`GroupSpec::topics`]).
    pub topics: BTreeSet<Uuid>,
    /// The member's current target (what stickiness preserves).
    pub current: Assignment,
}

impl MemberSpec {
    /// A member subscribed to `topics`, without rack or current assignment.
    pub fn new(topics: BTreeSet<Uuid>) -> MemberSpec {
        MemberSpec {
            topics,
            ..MemberSpec::default()
        }
    }
}

/// A subscribed topic as a server assignor sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TopicSpec {
    /// The partition count.
    pub partitions: i32,
    /// Racks of the replicas of each partition (missing: unknown).
    pub racks: BTreeMap<i32, BTreeSet<String>>,
}

impl TopicSpec {
    /// A topic without rack information.
    pub fn new(partitions: i32) -> TopicSpec {
        TopicSpec {
            partitions,
            racks: BTreeMap::new(),
        }
    }

    fn has_rack(&self, partition: i32, rack: Option<&str>) -> bool {
        rack.is_some_and(|r| self.racks.get(&partition).is_some_and(|rs| rs.contains(r)))
    }
}

/// What the assignor is given: members and the topics they subscribe to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupSpec {
    /// Members by id.
    pub members: BTreeMap<String, MemberSpec>,
    /// Subscribed topics by id.
    pub topics: BTreeMap<Uuid, TopicSpec>,
}

impl GroupSpec {
    /// True when every member subscribes to the same topics (Kafka's homogeneous case).
    pub fn is_homogeneous(&self) -> bool {
        let mut it = self.members.values().map(|m| &m.topics);
        match it.next() {
            Some(first) => it.all(|t| t == first),
            None => true,
        }
    }

    fn validate(&self, assignor: &'static str) -> Result<(), GroupError> {
        for m in self.members.values() {
            if let Some(t) = m.topics.iter().find(|t| !self.topics.contains_key(t)) {
                return Err(GroupError::Assignor {
                    assignor,
                    reason: format!("subscribed topic {t} has no metadata"),
                });
            }
        }
        if let Some((t, _)) = self.topics.iter().find(|(_, s)| s.partitions < 0) {
            return Err(GroupError::Assignor {
                assignor,
                reason: format!("topic {t} has a negative partition count"),
            });
        }
        Ok(())
    }
}

/// A server-side assignor.
pub trait ServerAssignor {
    /// Its name (what members send as `ServerAssignor`).
    fn name(&self) -> &'static str;
    /// The target assignment of every member of `spec` (members without partitions included).
    fn assign(&self, spec: &GroupSpec) -> Result<BTreeMap<String, Assignment>, GroupError>;
}

/// The assignor of a name, if this crate has it.
pub fn server_assignor(name: &str) -> Option<&'static dyn ServerAssignor> {
    match name {
        "uniform" => Some(&UniformAssignor),
        "range" => Some(&RangeAssignor),
        _ => None,
    }
}
