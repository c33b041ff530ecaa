//! [`PartitionRegistration`]: one partition's replicas, ISR and leadership (Kafka's
//! `org.apache.kafka.metadata.PartitionRegistration`).

use josef_protocol::metadata_records::{PartitionChangeRecord, PartitionRecord};
use josef_protocol::Uuid;

use crate::error::MetadataError;

/// `Leader` of a partition without a leader.
pub const NO_LEADER: i32 = -1;
/// `PartitionChangeRecord.Leader` that keeps the leader (and the leader epoch).
pub const NO_LEADER_CHANGE: i32 = -2;
/// The directory id of a replica whose directory is not known yet (Kafka's `DirectoryId.UNASSIGNED`).
pub const DIRECTORY_UNASSIGNED: Uuid = Uuid::ZERO;

/// Whether the leader's log is known to hold every committed record (Kafka's `LeaderRecoveryState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LeaderRecoveryState {
    /// The leader was elected from the ISR (0).
    #[default]
    Recovered,
    /// The leader was elected uncleanly and has not finished recovering (1).
    Recovering,
}

impl LeaderRecoveryState {
    /// `PartitionChangeRecord.LeaderRecoveryState` that keeps the state.
    pub const NO_CHANGE: i8 = -1;

    /// The state of a wire value.
    pub fn from_value(v: i8) -> Result<Self, MetadataError> {
        match v {
            0 => Ok(LeaderRecoveryState::Recovered),
            1 => Ok(LeaderRecoveryState::Recovering),
            other => Err(MetadataError::InvalidLeaderRecoveryState(other)),
        }
    }

    /// Its wire value.
    pub fn value(self) -> i8 {
        match self {
            LeaderRecoveryState::Recovered => 0,
            LeaderRecoveryState::Recovering => 1,
        }
    }
}

/// One partition's state in the image.
///
/// ```
/// use josef_metadata::PartitionRegistration;
/// use josef_protocol::metadata_records::{PartitionChangeRecord, PartitionRecord};
///
/// let created = PartitionRegistration::from_record(&PartitionRecord {
///     replicas: vec![1, 2, 3].into(),
///     isr: vec![1, 2, 3].into(),
///     leader: 1,
///     leader_epoch: 0,
///     partition_epoch: 0,
///     ..Default::default()
/// })
/// .unwrap();
/// assert_eq!(created.preferred_leader(), Some(1));
///
/// // Broker 1 fails: a new leader (leader epoch + 1) and a smaller ISR.
/// let change = PartitionChangeRecord { leader: 2, isr: Some(vec![2, 3].into()), ..Default::default() };
/// let next = created.merge(&change).unwrap();
/// assert_eq!((next.leader, next.leader_epoch, next.partition_epoch), (2, 1, 1));
///
/// // An ISR-only change leaves the leader and its epoch alone.
/// let change = PartitionChangeRecord { isr: Some(vec![2].into()), ..Default::default() };
/// let next = next.merge(&change).unwrap();
/// assert_eq!((next.leader, next.leader_epoch, next.partition_epoch), (2, 1, 2));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PartitionRegistration {
    /// Replicas in assignment order; the first is the preferred leader.
    pub replicas: Vec<i32>,
    /// The log directory of each replica (same length as `replicas`), or empty when not tracked.
    pub directories: Vec<Uuid>,
    /// The in-sync replicas.
    pub isr: Vec<i32>,
    /// Replicas being removed by a reassignment.
    pub removing_replicas: Vec<i32>,
    /// Replicas being added by a reassignment.
    pub adding_replicas: Vec<i32>,
    /// The leader, or [`NO_LEADER`].
    pub leader: i32,
    /// Whether the leader's log is recovered.
    pub leader_recovery_state: LeaderRecoveryState,
    /// Grows by one with every leader change (election).
    pub leader_epoch: i32,
    /// Grows by one with every change of the partition.
    pub partition_epoch: i32,
    /// Eligible leader replicas (KIP-966).
    pub elr: Vec<i32>,
    /// The last known ELR (KIP-966).
    pub last_known_elr: Vec<i32>,
}

fn check_directories(replicas: usize, directories: usize) -> Result<(), MetadataError> {
    if directories != 0 && directories != replicas {
        return Err(MetadataError::DirectoriesMismatch {
            replicas,
            directories,
        });
    }
    Ok(())
}

impl PartitionRegistration {
    /// The registration a `PartitionRecord` describes (absent ELR fields are empty).
    pub fn from_record(r: &PartitionRecord) -> Result<Self, MetadataError> {
        check_directories(r.replicas.len(), r.directories.len())?;
        Ok(PartitionRegistration {
            replicas: r.replicas.to_vec(),
            directories: r.directories.clone(),
            isr: r.isr.to_vec(),
            removing_replicas: r.removing_replicas.to_vec(),
            adding_replicas: r.adding_replicas.to_vec(),
            leader: r.leader,
            leader_recovery_state: LeaderRecoveryState::from_value(r.leader_recovery_state)?,
            leader_epoch: r.leader_epoch,
            partition_epoch: r.partition_epoch,
            elr: r
                .eligible_leader_replicas
                .as_deref()
                .unwrap_or_default()
                .to_vec(),
            last_known_elr: r.last_known_elr.as_deref().unwrap_or_default().to_vec(),
        })
    }

    /// The state after `change` (Kafka's `PartitionRegistration.merge`).
    ///
    /// A null list keeps the current one; `Leader` [`NO_LEADER_CHANGE`] keeps the leader and leader
    /// epoch, any other value (also [`NO_LEADER`] or the current leader) sets it and adds one to the
    /// leader epoch; `LeaderRecoveryState` -1 keeps the state; the partition epoch gains one on every
    /// record. New replicas without explicit directories keep the directory of a replica that stays
    /// and get [`DIRECTORY_UNASSIGNED`] otherwise. The topic id and partition index are not checked.
    pub fn merge(&self, change: &PartitionChangeRecord) -> Result<Self, MetadataError> {
        let replicas = change
            .replicas
            .as_deref()
            .map_or_else(|| self.replicas.clone(), <[i32]>::to_vec);
        let directories = match (&change.directories, &change.replicas) {
            (Some(dirs), _) if !dirs.is_empty() => {
                check_directories(replicas.len(), dirs.len())?;
                dirs.clone()
            }
            (_, Some(_)) if !self.directories.is_empty() => replicas
                .iter()
                .map(|r| self.directory(*r).unwrap_or(DIRECTORY_UNASSIGNED))
                .collect(),
            (_, Some(_)) => Vec::new(),
            _ => self.directories.clone(),
        };
        let keep = |new: &Option<josef_protocol::SmallVec<[i32; 4]>>, old: &Vec<i32>| {
            new.as_deref().map_or_else(|| old.clone(), <[i32]>::to_vec)
        };
        let (leader, leader_epoch) = if change.leader == NO_LEADER_CHANGE {
            (self.leader, self.leader_epoch)
        } else {
            (change.leader, self.leader_epoch.wrapping_add(1))
        };
        let leader_recovery_state =
            if change.leader_recovery_state == LeaderRecoveryState::NO_CHANGE {
                self.leader_recovery_state
            } else {
                LeaderRecoveryState::from_value(change.leader_recovery_state)?
            };
        Ok(PartitionRegistration {
            replicas,
            directories,
            isr: keep(&change.isr, &self.isr),
            removing_replicas: keep(&change.removing_replicas, &self.removing_replicas),
            adding_replicas: keep(&change.adding_replicas, &self.adding_replicas),
            leader,
            leader_recovery_state,
            leader_epoch,
            partition_epoch: self.partition_epoch.wrapping_add(1),
            elr: keep(&change.eligible_leader_replicas, &self.elr),
            last_known_elr: keep(&change.last_known_elr, &self.last_known_elr),
        })
    }

    /// The `PartitionRecord` that recreates this registration as partition `partition` of `topic_id`.
    pub fn to_record(&self, topic_id: Uuid, partition: i32) -> PartitionRecord {
        PartitionRecord {
            partition_id: partition,
            topic_id,
            replicas: self.replicas.as_slice().into(),
            isr: self.isr.as_slice().into(),
            removing_replicas: self.removing_replicas.as_slice().into(),
            adding_replicas: self.adding_replicas.as_slice().into(),
            leader: self.leader,
            leader_recovery_state: self.leader_recovery_state.value(),
            leader_epoch: self.leader_epoch,
            partition_epoch: self.partition_epoch,
            directories: self.directories.clone(),
            eligible_leader_replicas: (!self.elr.is_empty()).then(|| self.elr.as_slice().into()),
            last_known_elr: (!self.last_known_elr.is_empty())
                .then(|| self.last_known_elr.as_slice().into()),
            ..Default::default()
        }
    }

    /// Whether the partition has a leader.
    pub fn has_leader(&self) -> bool {
        self.leader != NO_LEADER
    }

    /// The preferred leader: the first replica, if any.
    pub fn preferred_leader(&self) -> Option<i32> {
        self.replicas.first().copied()
    }

    /// Whether the leader is the preferred leader.
    pub fn has_preferred_leader(&self) -> bool {
        self.preferred_leader() == Some(self.leader)
    }

    /// Whether a reassignment is in progress (replicas being added or removed).
    pub fn is_reassigning(&self) -> bool {
        !self.adding_replicas.is_empty() || !self.removing_replicas.is_empty()
    }

    /// Whether `broker` is a replica.
    pub fn is_replica(&self, broker: i32) -> bool {
        self.replicas.contains(&broker)
    }

    /// Whether `broker` is in the ISR.
    pub fn is_in_isr(&self, broker: i32) -> bool {
        self.isr.contains(&broker)
    }

    /// The directory of replica `broker`, when directories are tracked and it is a replica.
    pub fn directory(&self, broker: i32) -> Option<Uuid> {
        let i = self.replicas.iter().position(|r| *r == broker)?;
        self.directories.get(i).copied()
    }
}

impl TryFrom<&PartitionRecord> for PartitionRegistration {
    type Error = MetadataError;

    fn try_from(r: &PartitionRecord) -> Result<Self, MetadataError> {
        PartitionRegistration::from_record(r)
    }
}
