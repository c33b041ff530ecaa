//! The simulation's controller for one partition: clean elections from the ISR only, fencing of
//! brokers that stopped heartbeating, and AlterPartition with Kafka's checks in Kafka's order
//! (`ReplicationControlManager.alterPartition`), so a deposed leader's or a stale proposal is
//! refused the way Kafka refuses it.

use std::collections::BTreeSet;

use josef_partition::{AlterPartitionProposal, CommittedPartitionState, ReplicaId};
use josef_protocol::ErrorCode;

/// The assigned replicas, in preference order.
pub const REPLICAS: [ReplicaId; 3] = [1, 2, 3];

/// The controller's view of the partition (what its metadata image publishes).
#[derive(Debug, Clone)]
pub struct Controller {
    pub leader: ReplicaId,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    pub isr: Vec<ReplicaId>,
    /// Brokers whose session expired (crashed, or cut off from the controller): out of every
    /// ISR, neither leader nor ISR candidate until they heartbeat again.
    pub fenced: BTreeSet<ReplicaId>,
}

impl Controller {
    pub fn new() -> Self {
        Controller {
            leader: REPLICAS[0],
            leader_epoch: 0,
            partition_epoch: 0,
            isr: REPLICAS.to_vec(),
            fenced: BTreeSet::new(),
        }
    }

    /// Clean election: keep the leader while valid, else the first ISR member in assignment order
    /// that is not fenced; none → −1 with the ISR left as is.
    fn elect(&mut self) {
        if self.leader >= 0
            && !self.fenced.contains(&self.leader)
            && self.isr.contains(&self.leader)
        {
            return;
        }
        let new = REPLICAS
            .iter()
            .copied()
            .find(|r| self.isr.contains(r) && !self.fenced.contains(r))
            .unwrap_or(-1);
        if new != self.leader {
            self.leader = new;
            self.leader_epoch += 1;
        }
        self.partition_epoch += 1;
    }

    /// The broker's session expired: out of the ISR (unless it is the last member), re-elect.
    pub fn fence(&mut self, id: ReplicaId) {
        self.fenced.insert(id);
        if self.isr.len() > 1 {
            self.isr.retain(|&r| r != id);
        }
        self.elect();
    }

    /// The broker heartbeats again: eligible, and leaderless partitions get a leader.
    pub fn unfence(&mut self, id: ReplicaId) {
        self.fenced.remove(&id);
        if self.leader < 0 {
            self.elect();
        }
    }

    /// A change of the partition that is not an ISR change (a reassignment step, a leader
    /// recovery state): the partition epoch moves, so ISR proposals in flight become stale.
    pub fn bump_partition_epoch(&mut self) {
        self.partition_epoch += 1;
    }

    pub fn alter_partition(
        &mut self,
        p: &AlterPartitionProposal,
    ) -> Result<CommittedPartitionState, ErrorCode> {
        if p.leader_epoch > self.leader_epoch || p.partition_epoch > self.partition_epoch {
            return Err(ErrorCode::NotController);
        }
        if p.leader_epoch < self.leader_epoch {
            return Err(ErrorCode::FencedLeaderEpoch);
        }
        if p.leader_id != self.leader {
            return Err(ErrorCode::InvalidRequest);
        }
        if p.partition_epoch < self.partition_epoch {
            return Err(ErrorCode::InvalidUpdateVersion);
        }
        if p.new_isr.is_empty()
            || !p.new_isr.contains(&p.leader_id)
            || p.new_isr.iter().any(|r| !REPLICAS.contains(r))
        {
            return Err(ErrorCode::InvalidRequest);
        }
        if p.new_isr.iter().any(|r| self.fenced.contains(r)) {
            return Err(ErrorCode::IneligibleReplica);
        }
        let unchanged =
            p.new_isr.len() == self.isr.len() && p.new_isr.iter().all(|r| self.isr.contains(r));
        if !unchanged {
            self.isr = p.new_isr.clone();
            self.partition_epoch += 1;
        }
        Ok(self.committed())
    }

    pub fn committed(&self) -> CommittedPartitionState {
        CommittedPartitionState {
            leader_id: self.leader,
            leader_epoch: self.leader_epoch,
            isr: self.isr.clone(),
            partition_epoch: self.partition_epoch,
        }
    }
}
