//! The controller the `controller_requests` target drives, shared with the seed generator
//! (`examples/seed_corpus.rs`) so the seeds carry the broker epochs the target's setup hands out.
//! Like the driver of josef-controller's README: every batch commits at once (offset + 1) and is
//! replayed before the next request.

use bytes::Bytes;
use josef_controller::{Controller, ControllerConfig, ControllerResult, WriteContext};
use josef_protocol::messages::{BrokerHeartbeatRequest, BrokerRegistrationRequest};
use josef_protocol::{decode_request_frame, RequestBody, Uuid};

/// The cluster id of the bootstrap batch.
pub const CLUSTER_ID: &str = "fuzz-cluster";
/// Brokers registered and unfenced by the setup: ids 1, 2 and 3.
pub const BROKERS: i32 = 3;

pub struct Harness {
    pub c: Controller,
    pub offset: u64,
    pub now: i64,
    pub epoch: i32,
    /// The epoch of each setup broker (index = id - 1).
    pub broker_epochs: Vec<i64>,
}

impl Harness {
    /// An active controller (epoch 1) with the bootstrap batch and three unfenced brokers.
    pub fn new() -> Self {
        let config = ControllerConfig {
            auto_leader_rebalance_enable: true,
            leader_imbalance_check_interval_ms: 1_000,
            ..ControllerConfig::default()
        };
        let mut h = Harness {
            c: Controller::new(config),
            offset: 0,
            now: 0,
            epoch: 1,
            broker_epochs: Vec::new(),
        };
        let r = h.c.activate(h.ctx(), h.epoch, CLUSTER_ID.into());
        h.commit(r);
        for id in 1..=BROKERS {
            let req = BrokerRegistrationRequest {
                broker_id: id,
                cluster_id: CLUSTER_ID.into(),
                incarnation_id: Uuid::from_u128(1000 + id as u128),
                ..Default::default()
            };
            let r = h.c.register_broker(h.ctx(), &req);
            let resp = h.commit(r);
            assert_eq!(resp.error_code, 0, "setup registration of {id}");
            h.broker_epochs.push(resp.broker_epoch);
            let hb = BrokerHeartbeatRequest {
                broker_id: id,
                broker_epoch: resp.broker_epoch,
                current_metadata_offset: h.offset as i64,
                ..Default::default()
            };
            let r = h.c.broker_heartbeat(h.ctx(), &hb);
            h.commit(r);
        }
        h
    }

    pub fn ctx(&self) -> WriteContext {
        WriteContext {
            now_ms: self.now,
            next_offset: self.offset + 1,
        }
    }

    /// Commits the batch (if any): replays every record at the next offset. A batch the
    /// controller produced must replay.
    pub fn commit<T>(&mut self, r: ControllerResult<T>) -> T {
        if !r.records.is_empty() {
            self.offset += 1;
            for rec in &r.records {
                if let Err(e) = self.c.replay(self.offset, rec) {
                    panic!("the controller's own record does not replay: {e}: {rec:?}");
                }
            }
        }
        r.response
    }
    /// `advance` 255: a failover (deactivate, activate at the next epoch); else the clock moves
    /// `advance * 50` ms and `tick` runs until it writes nothing more (at most 8 batches).
    pub fn advance(&mut self, advance: u8) {
        if advance == u8::MAX {
            self.c.deactivate();
            self.epoch += 1;
            let r = self.c.activate(self.ctx(), self.epoch, CLUSTER_ID.into());
            self.commit(r);
        } else if advance > 0 {
            self.now += i64::from(advance) * 50;
            // tick until it has nothing more to write (bounded).
            for _ in 0..8 {
                let r = self.c.tick(self.ctx());
                if r.records.is_empty() {
                    break;
                }
                self.commit(r);
            }
        }
    }

    /// Decodes `frame` as a request frame (no size prefix) and, for an API of the controller, runs
    /// its handler and commits the batch.
    pub fn request(&mut self, frame: &[u8]) {
        if let Ok((header, body)) = decode_request_frame(Bytes::copy_from_slice(frame)) {
            self.handle(&body, header.request_api_version);
        }
    }

    fn handle(&mut self, body: &RequestBody, version: i16) {
        let ctx = self.ctx();
        let c = &mut self.c;
        match body {
            RequestBody::BrokerRegistration(r) => {
                let r = c.register_broker(ctx, r);
                self.commit(r);
            }
            RequestBody::BrokerHeartbeat(r) => {
                let r = c.broker_heartbeat(ctx, r);
                self.commit(r);
            }
            RequestBody::CreateTopics(r) => {
                let r = c.create_topics(ctx, r, version);
                self.commit(r);
            }
            RequestBody::DeleteTopics(r) => {
                let r = c.delete_topics(ctx, r, version);
                self.commit(r);
            }
            RequestBody::CreatePartitions(r) => {
                let r = c.create_partitions(ctx, r);
                self.commit(r);
            }
            RequestBody::AlterPartition(r) => {
                let r = c.alter_partition(ctx, r, version);
                self.commit(r);
            }
            RequestBody::ElectLeaders(r) => {
                let r = c.elect_leaders(ctx, r, version);
                self.commit(r);
            }
            RequestBody::AlterPartitionReassignments(r) => {
                let r = c.alter_partition_reassignments(ctx, r);
                self.commit(r);
            }
            RequestBody::ListPartitionReassignments(r) => {
                let _ = c.list_partition_reassignments(r);
            }
            RequestBody::IncrementalAlterConfigs(r) => {
                let r = c.incremental_alter_configs(ctx, r);
                self.commit(r);
            }
            RequestBody::AlterConfigs(r) => {
                let r = c.alter_configs(ctx, r);
                self.commit(r);
            }
            RequestBody::UpdateFeatures(r) => {
                let r = c.update_features(ctx, r, version);
                self.commit(r);
            }
            RequestBody::AllocateProducerIds(r) => {
                let r = c.allocate_producer_ids(ctx, r);
                self.commit(r);
            }
            RequestBody::ControlledShutdown(r) => {
                let r = c.controlled_shutdown(ctx, r);
                self.commit(r);
            }
            RequestBody::UnregisterBroker(r) => {
                let r = c.unregister_broker(ctx, r);
                self.commit(r);
            }
            RequestBody::CreateAcls(r) => {
                let r = c.create_acls(ctx, r);
                self.commit(r);
            }
            RequestBody::DeleteAcls(r) => {
                let r = c.delete_acls(ctx, r);
                self.commit(r);
            }
            _ => {}
        }
    }
}
