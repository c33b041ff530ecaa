//! Kafka's `StripedReplicaPlacer` (`org.apache.kafka.metadata.placement`): rack-aware, striped
//! placement of new partitions' replicas.
//!
//! Racks are sorted (brokers without a rack form one rack); a random rack starts and every rack's
//! broker list starts at a random offset. For each partition the first replica (the preferred
//! leader) is the next *unfenced* broker, from the current rack on; the other replicas go round the
//! racks, skipping the first replica's rack once, taking unfenced brokers of a rack before its fenced
//! ones. Each partition moves every offset on by one ("striping"); after as many partitions as there
//! are unfenced brokers the racks and the brokers in each are shuffled.

use josef_protocol::ErrorCode;

use crate::{ApiError, ControllerRng};

/// A broker placement may use: registered and not in controlled shutdown (Kafka's `UsableBroker`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsableBroker {
    /// Broker id.
    pub id: i32,
    /// `broker.rack`, if set.
    pub rack: Option<String>,
    /// Whether the broker is fenced (used only when a rack has no unfenced broker left).
    pub fenced: bool,
}

/// One rack's fenced or unfenced brokers, iterated once per partition from a moving offset.
#[derive(Debug, Default)]
struct BrokerList {
    brokers: Vec<i32>,
    epoch: usize,
    index: usize,
    offset: usize,
}

impl BrokerList {
    fn initialize(&mut self, rng: &mut ControllerRng) {
        self.brokers.sort_unstable();
        self.offset = rng.below(self.brokers.len());
    }

    /// The next broker of this partition (`epoch`), or `None` when every broker was handed out.
    fn next(&mut self, epoch: usize) -> Option<i32> {
        if self.brokers.is_empty() {
            return None;
        }
        if self.epoch != epoch {
            self.epoch = epoch;
            self.index = 0;
            self.offset = (self.offset + 1) % self.brokers.len();
        }
        if self.index >= self.brokers.len() {
            return None;
        }
        let broker = self.brokers[(self.index + self.offset) % self.brokers.len()];
        self.index += 1;
        Some(broker)
    }
}

#[derive(Debug, Default)]
struct Rack {
    fenced: BrokerList,
    unfenced: BrokerList,
}

impl Rack {
    fn next(&mut self, epoch: usize) -> Option<i32> {
        self.unfenced
            .next(epoch)
            .or_else(|| self.fenced.next(epoch))
    }
}

/// The racks of the cluster in sorted order, with the placement cursor.
struct RackList<'r> {
    rng: &'r mut ControllerRng,
    racks: Vec<Rack>,
    total: usize,
    unfenced: usize,
    epoch: usize,
    offset: usize,
}

impl<'r> RackList<'r> {
    fn new(rng: &'r mut ControllerRng, brokers: &[UsableBroker]) -> Self {
        let mut names: Vec<Option<&str>> = brokers.iter().map(|b| b.rack.as_deref()).collect();
        names.sort_unstable();
        names.dedup();
        let mut racks: Vec<Rack> = names.iter().map(|_| Rack::default()).collect();
        let mut unfenced = 0;
        for b in brokers {
            let Ok(i) = names.binary_search(&b.rack.as_deref()) else {
                continue;
            };
            if b.fenced {
                racks[i].fenced.brokers.push(b.id);
            } else {
                unfenced += 1;
                racks[i].unfenced.brokers.push(b.id);
            }
        }
        for rack in &mut racks {
            rack.fenced.initialize(rng);
            rack.unfenced.initialize(rng);
        }
        let offset = rng.below(racks.len());
        RackList {
            rng,
            racks,
            total: brokers.len(),
            unfenced,
            epoch: 0,
            offset,
        }
    }

    fn shuffle(&mut self) {
        self.rng.shuffle(&mut self.racks);
        for rack in &mut self.racks {
            self.rng.shuffle(&mut rack.fenced.brokers);
            self.rng.shuffle(&mut rack.unfenced.brokers);
        }
    }

    fn place(&mut self, replication_factor: usize) -> Result<Vec<i32>, ApiError> {
        if self.epoch == self.unfenced && self.unfenced > 1 {
            self.shuffle();
            self.epoch = 0;
        }
        if self.offset >= self.racks.len() {
            self.offset = 0;
        }
        let n = self.racks.len();
        let exhausted = || {
            ApiError::new(
                ErrorCode::UnknownServerError,
                "replica placement ran out of brokers",
            )
        };
        let mut replicas = Vec::with_capacity(replication_factor);
        let mut first_rack = self.offset;
        let mut tries = 0;
        loop {
            if let Some(b) = self.racks[first_rack].unfenced.next(self.epoch) {
                replicas.push(b);
                break;
            }
            first_rack = (first_rack + 1) % n;
            tries += 1;
            if tries > n {
                return Err(exhausted());
            }
        }
        // The first replica's rack is skipped once, so the second replica comes from another rack.
        let mut skip = Some(first_rack);
        let mut rack = self.offset;
        let limit = n * (self.total + 2);
        for _ in 1..replication_factor {
            let mut tries = 0;
            let broker = loop {
                let here = rack;
                rack = (rack + 1) % n;
                if skip == Some(here) {
                    skip = None;
                } else if let Some(b) = self.racks[here].next(self.epoch) {
                    break b;
                }
                tries += 1;
                if tries > limit {
                    return Err(exhausted());
                }
            };
            replicas.push(broker);
        }
        self.epoch += 1;
        self.offset += 1;
        Ok(replicas)
    }
}

/// Kafka's `StripedReplicaPlacer`.
///
/// ```
/// use josef_controller::{ControllerRng, StripedReplicaPlacer, UsableBroker};
/// let brokers: Vec<UsableBroker> = (1..=3)
///     .map(|id| UsableBroker { id, rack: None, fenced: false })
///     .collect();
/// let mut rng = ControllerRng::new(1);
/// let placement = StripedReplicaPlacer::place(&mut rng, 3, 3, &brokers).unwrap();
/// let leaders: std::collections::BTreeSet<i32> = placement.iter().map(|r| r[0]).collect();
/// assert_eq!(leaders.len(), 3); // leaders spread over the brokers
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct StripedReplicaPlacer;

impl StripedReplicaPlacer {
    /// Replica lists for `num_partitions` new partitions of `replication_factor` replicas each,
    /// the first replica of each being unfenced. Fails with `INVALID_REPLICATION_FACTOR` when the
    /// factor is not positive, every broker is fenced, or fewer brokers than the factor are usable.
    pub fn place(
        rng: &mut ControllerRng,
        num_partitions: usize,
        replication_factor: i32,
        brokers: &[UsableBroker],
    ) -> Result<Vec<Vec<i32>>, ApiError> {
        let invalid = |m: String| ApiError::new(ErrorCode::InvalidReplicationFactor, m);
        if replication_factor <= 0 {
            return Err(invalid(format!(
                "Invalid replication factor {replication_factor}: the replication factor must be positive."
            )));
        }
        let mut list = RackList::new(rng, brokers);
        if list.unfenced == 0 {
            return Err(invalid("All brokers are currently fenced.".into()));
        }
        let rf = replication_factor as usize;
        if rf > list.total {
            return Err(invalid(format!(
                "The target replication factor of {rf} cannot be reached because only {} broker(s) are registered.",
                list.total
            )));
        }
        (0..num_partitions).map(|_| list.place(rf)).collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;

    fn brokers(spec: &[(i32, Option<&str>, bool)]) -> Vec<UsableBroker> {
        spec.iter()
            .map(|&(id, rack, fenced)| UsableBroker {
                id,
                rack: rack.map(str::to_string),
                fenced,
            })
            .collect()
    }

    #[test]
    fn replicas_are_distinct_and_leaders_unfenced() {
        let bs = brokers(&[
            (1, None, false),
            (2, None, true),
            (3, None, false),
            (4, None, false),
        ]);
        for seed in 0..50 {
            let mut rng = ControllerRng::new(seed);
            let p = StripedReplicaPlacer::place(&mut rng, 12, 3, &bs).unwrap();
            assert_eq!(p.len(), 12);
            for r in &p {
                assert_eq!(r.len(), 3);
                assert_eq!(r.iter().collect::<BTreeSet<_>>().len(), 3, "{r:?}");
                assert_ne!(r[0], 2, "a fenced broker is never the first replica");
            }
        }
    }

    #[test]
    fn fenced_brokers_only_when_needed() {
        let bs = brokers(&[(1, None, false), (2, None, false), (3, None, true)]);
        let mut rng = ControllerRng::new(3);
        for r in StripedReplicaPlacer::place(&mut rng, 10, 2, &bs).unwrap() {
            assert!(!r.contains(&3), "{r:?}");
        }
        let mut rng = ControllerRng::new(3);
        for r in StripedReplicaPlacer::place(&mut rng, 10, 3, &bs).unwrap() {
            assert_eq!(r[2], 3, "the fenced broker comes last: {r:?}");
        }
    }

    #[test]
    fn rack_aware_striping() {
        let bs = brokers(&[
            (1, Some("a"), false),
            (2, Some("a"), false),
            (3, Some("b"), false),
            (4, Some("b"), false),
            (5, Some("c"), false),
            (6, Some("c"), false),
        ]);
        let rack_of: BTreeMap<i32, &str> = bs
            .iter()
            .map(|b| (b.id, b.rack.as_deref().unwrap()))
            .collect();
        for seed in 0..30 {
            let mut rng = ControllerRng::new(seed);
            let p = StripedReplicaPlacer::place(&mut rng, 60, 3, &bs).unwrap();
            let mut leaders: BTreeMap<i32, usize> = BTreeMap::new();
            for r in &p {
                let racks: BTreeSet<&str> = r.iter().map(|b| rack_of[b]).collect();
                assert_eq!(racks.len(), 3, "one replica per rack: {r:?}");
                *leaders.entry(r[0]).or_default() += 1;
            }
            // Striping spreads leadership: every broker leads, none more than twice its share.
            assert_eq!(leaders.len(), 6, "{leaders:?}");
            assert!(leaders.values().all(|&n| n <= 20), "{leaders:?}");
        }
    }

    #[test]
    fn consecutive_partitions_are_striped() {
        let bs = brokers(&[(1, None, false), (2, None, false), (3, None, false)]);
        let mut rng = ControllerRng::new(9);
        let p = StripedReplicaPlacer::place(&mut rng, 3, 1, &bs).unwrap();
        let leaders: BTreeSet<i32> = p.iter().map(|r| r[0]).collect();
        assert_eq!(leaders, BTreeSet::from([1, 2, 3]));
    }

    #[test]
    fn invalid_replication_factors() {
        let bs = brokers(&[(1, None, false), (2, None, true)]);
        let mut rng = ControllerRng::new(0);
        let e = StripedReplicaPlacer::place(&mut rng, 1, 0, &bs).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidReplicationFactor);
        let e = StripedReplicaPlacer::place(&mut rng, 1, 3, &bs).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidReplicationFactor);
        assert!(e.message.contains("only 2 broker(s) are registered"), "{e}");
        let all_fenced = brokers(&[(1, None, true)]);
        let e = StripedReplicaPlacer::place(&mut rng, 1, 1, &all_fenced).unwrap_err();
        assert_eq!(e.message, "All brokers are currently fenced.");
        // RF = all brokers including the fenced one works; the fenced one is never first.
        let p = StripedReplicaPlacer::place(&mut rng, 4, 2, &bs).unwrap();
        assert!(p.iter().all(|r| r[0] == 1 && r[1] == 2));
        // One unfenced broker: no endless reshuffle.
        let one = brokers(&[(7, None, false)]);
        assert_eq!(
            StripedReplicaPlacer::place(&mut rng, 5, 1, &one).unwrap(),
            vec![vec![7]; 5]
        );
    }
}
