//! A test driver for the controller: commits every batch at once (offset + 1 per batch) and replays
//! it, as the real driver does after Raft commits it.
#![allow(dead_code)]

use josef_controller::{
    Controller, ControllerConfig, ControllerResult, MetadataRecord, PartitionRegistration,
    WriteContext,
};
use josef_protocol::messages::alter_partition_reassignments_request::{
    ReassignablePartition, ReassignableTopic,
};
use josef_protocol::messages::alter_partition_request::{BrokerState, PartitionData, TopicData};
use josef_protocol::messages::create_topics_request::{CreatableReplicaAssignment, CreatableTopic};
use josef_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionRequest, BrokerHeartbeatRequest,
    BrokerHeartbeatResponse, BrokerRegistrationRequest, CreateTopicsRequest,
};
use josef_protocol::Uuid;

pub const CLUSTER_ID: &str = "test-cluster";

pub struct Harness {
    pub c: Controller,
    pub offset: u64,
    pub now: i64,
    pub log: Vec<(u64, Vec<MetadataRecord>)>,
}

impl Harness {
    pub fn new(config: ControllerConfig) -> Self {
        let mut h = Harness {
            c: Controller::new(config),
            offset: 0,
            now: 0,
            log: Vec::new(),
        };
        let r = h.c.activate(h.ctx(), 1, CLUSTER_ID.into());
        h.commit(r);
        h
    }

    pub fn ctx(&self) -> WriteContext {
        WriteContext {
            now_ms: self.now,
            next_offset: self.offset + 1,
        }
    }

    /// Commits the batch (if any) and returns the response.
    pub fn commit<T>(&mut self, r: ControllerResult<T>) -> T {
        if !r.records.is_empty() {
            self.offset += 1;
            for rec in &r.records {
                self.c.replay(self.offset, rec).expect("replay");
            }
            self.log.push((self.offset, r.records));
        }
        r.response
    }

    /// A new controller that replayed the whole log.
    pub fn replayed(&self) -> Controller {
        let mut c = Controller::new(self.c.config().clone());
        for (o, batch) in &self.log {
            for r in batch {
                c.replay(*o, r).unwrap();
            }
        }
        c
    }

    pub fn register_incarnation(&mut self, id: i32, incarnation: u128, rack: Option<&str>) -> i64 {
        let req = BrokerRegistrationRequest {
            broker_id: id,
            cluster_id: CLUSTER_ID.into(),
            incarnation_id: Uuid::from_u128(incarnation),
            rack: rack.map(Into::into),
            ..Default::default()
        };
        let r = self.c.register_broker(self.ctx(), &req);
        let resp = self.commit(r);
        assert_eq!(resp.error_code, 0, "registration of {id}");
        resp.broker_epoch
    }

    pub fn heartbeat(
        &mut self,
        id: i32,
        epoch: i64,
        want_fence: bool,
        want_shut_down: bool,
    ) -> BrokerHeartbeatResponse {
        let req = BrokerHeartbeatRequest {
            broker_id: id,
            broker_epoch: epoch,
            current_metadata_offset: self.offset as i64,
            want_fence,
            want_shut_down,
            ..Default::default()
        };
        let r = self.c.broker_heartbeat(self.ctx(), &req);
        self.commit(r)
    }

    /// Registers and unfences a broker; returns its epoch.
    pub fn add_broker(&mut self, id: i32, rack: Option<&str>) -> i64 {
        let epoch = self.register_incarnation(id, 1000 + id as u128, rack);
        let r = self.heartbeat(id, epoch, false, false);
        assert!(!r.is_fenced);
        epoch
    }

    pub fn add_brokers(&mut self, n: i32) -> Vec<i64> {
        (1..=n).map(|id| self.add_broker(id, None)).collect()
    }

    pub fn create_topic(&mut self, name: &str, partitions: i32, rf: i16) -> i16 {
        let req = CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: name.into(),
                num_partitions: partitions,
                replication_factor: rf,
                ..Default::default()
            }],
            ..Default::default()
        };
        let r = self.c.create_topics(self.ctx(), &req, 7);
        self.commit(r).topics[0].error_code
    }

    /// Creates `name` with partition i on `assignments[i]` (the first replica preferred).
    pub fn create_assigned(&mut self, name: &str, assignments: &[&[i32]]) -> i16 {
        let req = CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: name.into(),
                num_partitions: -1,
                replication_factor: -1,
                assignments: assignments
                    .iter()
                    .zip(0..)
                    .map(|(b, i)| CreatableReplicaAssignment {
                        partition_index: i,
                        broker_ids: b.to_vec().into(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let r = self.c.create_topics(self.ctx(), &req, 7);
        self.commit(r).topics[0].error_code
    }

    pub fn partition(&self, topic: &str, index: i32) -> PartitionRegistration {
        self.c.topic(topic).unwrap().partitions[&index].clone()
    }

    pub fn topic_id(&self, topic: &str) -> Uuid {
        self.c.topic(topic).unwrap().id
    }

    /// Heartbeats every registered, unfenced broker (keeps sessions alive).
    pub fn heartbeat_all(&mut self) {
        let brokers: Vec<(i32, i64)> = self
            .c
            .brokers()
            .filter(|b| !b.fenced)
            .map(|b| (b.id, b.epoch))
            .collect();
        for (id, epoch) in brokers {
            self.heartbeat(id, epoch, false, false);
        }
    }

    /// Calls tick until it has nothing more to write; returns the number of batches.
    pub fn tick_all(&mut self) -> usize {
        let mut n = 0;
        loop {
            let r = self.c.tick(self.ctx());
            if r.records.is_empty() {
                return n;
            }
            self.commit(r);
            n += 1;
        }
    }
}

/// An AlterPartition for one partition (the v2+ shape, by topic id); ISR members as
/// (broker id, broker epoch).
#[allow(clippy::too_many_arguments)]
pub fn alter_partition_request(
    broker: i32,
    broker_epoch: i64,
    topic_id: Uuid,
    index: i32,
    leader_epoch: i32,
    partition_epoch: i32,
    isr: &[(i32, i64)],
    leader_recovery_state: i8,
) -> AlterPartitionRequest {
    AlterPartitionRequest {
        broker_id: broker,
        broker_epoch,
        topics: vec![TopicData {
            topic_id,
            partitions: vec![PartitionData {
                partition_index: index,
                leader_epoch,
                partition_epoch,
                leader_recovery_state,
                new_isr_with_epochs: isr
                    .iter()
                    .map(|&(broker_id, broker_epoch)| BrokerState {
                        broker_id,
                        broker_epoch,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// AlterPartitionReassignments of one partition (`None` cancels); its error code.
pub fn reassign(h: &mut Harness, t: &str, p: i32, target: Option<&[i32]>) -> i16 {
    let req = AlterPartitionReassignmentsRequest {
        topics: vec![ReassignableTopic {
            name: t.into(),
            partitions: vec![ReassignablePartition {
                partition_index: p,
                replicas: target.map(|x| x.to_vec().into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = h.c.alter_partition_reassignments(h.ctx(), &req);
    h.commit(r).responses[0].partitions[0].error_code
}
