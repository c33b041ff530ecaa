//! `range` (server side): per topic, its subscribers (static members first, by instance id,
//! then the others by member id) take contiguous blocks of partitions, the first
//! `partitions % subscribers` one more. Members with the same subscriptions on topics with the
//! same partition count get the same partition numbers (co-partitioning).

use std::collections::BTreeMap;

use super::{GroupSpec, ServerAssignor};
use crate::consumer::{normalize, Assignment};
use crate::error::GroupError;

/// Kafka's server-side `range` assignor.
#[derive(Debug, Default, Clone, Copy)]
pub struct RangeAssignor;

impl ServerAssignor for RangeAssignor {
    fn name(&self) -> &'static str {
        "range"
    }

    fn assign(&self, spec: &GroupSpec) -> Result<BTreeMap<String, Assignment>, GroupError> {
        spec.validate("range")?;
        let mut out: BTreeMap<String, Assignment> = spec
            .members
            .keys()
            .map(|m| (m.clone(), Assignment::new()))
            .collect();
        for (topic, t) in &spec.topics {
            let mut subscribers: Vec<(&Option<String>, &String)> = spec
                .members
                .iter()
                .filter(|(_, m)| m.topics.contains(topic))
                .map(|(id, m)| (&m.instance_id, id))
                .collect();
            if subscribers.is_empty() {
                continue;
            }
            // Static members first (None sorts first, so order by "has no instance id").
            subscribers.sort_by(|a, b| (a.0.is_none(), a.0, a.1).cmp(&(b.0.is_none(), b.0, b.1)));
            let n = subscribers.len() as i32;
            let (base, extra) = (t.partitions / n, t.partitions % n);
            let mut next = 0;
            for (i, (_, id)) in subscribers.iter().enumerate() {
                let count = base + i32::from((i as i32) < extra);
                let a = out.entry((*id).clone()).or_default();
                a.entry(*topic).or_default().extend(next..next + count);
                next += count;
            }
        }
        Ok(out.into_iter().map(|(k, v)| (k, normalize(v))).collect())
    }
}
