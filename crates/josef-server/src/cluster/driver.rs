//! The controller's event loop (Kafka's `QuorumController` driver): writes are handled one at a
//! time; each asks the pure [`josef_controller::Controller`] for records and a response, proposes
//! the records to the metadata quorum, and answers only once they are committed and replayed.
//! Serializing writes keeps the controller's state equal to the replay of committed records, so a
//! deposed controller has nothing to revert.

use std::sync::Arc;
use std::time::Duration;

use josef_controller::{ControllerResult, WriteContext};
use josef_protocol::RequestBody;
use josef_protocol::ResponseBody;
use josef_quorum::MetadataQuorum;
use tokio_util::sync::CancellationToken;

use super::metadata_log::MetadataLog;
use super::responses::not_controller;
use crate::topics::now_ms;

/// How often the active controller runs its timers (session expiry, leader balance).
const TICK: Duration = Duration::from_millis(100);

/// The controller side of a controller node.
pub struct ControllerDriver {
    node_id: u64,
    log: Arc<MetadataLog>,
    quorum: MetadataQuorum,
    write_lock: tokio::sync::Mutex<()>,
}

/// The write was not done: this node is not the active controller (or lost it meanwhile).
#[derive(Debug)]
pub struct NotController;

impl ControllerDriver {
    /// A driver over the node's log and quorum; [`ControllerDriver::spawn`] starts its tasks.
    pub fn new(node_id: i32, log: Arc<MetadataLog>, quorum: MetadataQuorum) -> Arc<Self> {
        Arc::new(ControllerDriver {
            node_id: node_id as u64,
            log,
            quorum,
            write_lock: tokio::sync::Mutex::new(()),
        })
    }

    /// Whether this node is the Raft leader and its controller is active.
    pub fn is_active(&self) -> bool {
        match self.quorum.leader() {
            Some((id, term)) if id == self.node_id => self
                .log
                .with_controller(|c, _| c.is_active() && c.epoch() == term as i32)
                .unwrap_or(false),
            _ => false,
        }
    }

    /// Runs one write: `f` sees the controller and the context of the batch it returns.
    async fn write<T>(
        &self,
        activation: bool,
        f: impl FnOnce(&mut josef_controller::Controller, WriteContext) -> ControllerResult<T>,
    ) -> Result<T, NotController> {
        let _serial = self.write_lock.lock().await;
        let term = match self.quorum.leader() {
            Some((id, term)) if id == self.node_id => term,
            _ => return Err(NotController),
        };
        let result = self
            .log
            .with_controller(|c, applied| {
                // Active in an earlier term is not active: a leader that lost the quorum and won
                // it back must not act on the sessions and timers of its old term before the
                // watcher has re-activated it for the new one.
                if !activation && (!c.is_active() || c.epoch() != term as i32) {
                    return None;
                }
                let ctx = WriteContext {
                    now_ms: now_ms(),
                    next_offset: applied + 1,
                };
                Some(f(c, ctx))
            })
            .flatten()
            .ok_or(NotController)?;
        if result.records.is_empty() {
            return Ok(result.response);
        }
        let mut batch = Vec::with_capacity(result.records.len());
        for r in &result.records {
            match r.encode() {
                Ok(b) => batch.push(b),
                Err(e) => {
                    tracing::error!(error = %e, "cannot encode a metadata record; write dropped");
                    return Err(NotController);
                }
            }
        }
        match self.quorum.propose(batch).await {
            Ok(index) => {
                self.log.wait_applied(index).await;
                Ok(result.response)
            }
            Err(e) => {
                tracing::info!(error = %e, "controller write not committed");
                Err(NotController)
            }
        }
    }

    /// A read of the active controller's state (no records).
    fn read<T>(
        &self,
        f: impl FnOnce(&josef_controller::Controller) -> T,
    ) -> Result<T, NotController> {
        if !self.is_active() {
            return Err(NotController);
        }
        self.log.with_controller(|c, _| f(c)).ok_or(NotController)
    }

    /// A write whose response is how many records it committed (the timers: one fencing per
    /// write, repeated while there is work).
    async fn write_counted(
        &self,
        f: impl FnOnce(&mut josef_controller::Controller, WriteContext) -> ControllerResult<()>,
    ) -> Result<usize, NotController> {
        self.write(false, |c, ctx| {
            let r = f(c, ctx);
            let n = r.records.len();
            ControllerResult {
                records: r.records,
                response: n,
            }
        })
        .await
    }

    /// Starts the leadership watcher (activate / deactivate) and the timer loop.
    pub fn spawn(self: &Arc<Self>, shutdown: CancellationToken) {
        let me = self.clone();
        tokio::spawn(async move {
            let mut leader_rx = me.quorum.subscribe_leader();
            let mut tick = tokio::time::interval(TICK);
            let mut active_term: Option<u64> = None;
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = leader_rx.changed() => {},
                    _ = tick.tick() => {},
                }
                let leader = me.quorum.leader();
                match leader {
                    Some((id, term)) if id == me.node_id => {
                        if active_term != Some(term) {
                            // Replay everything committed before acting on it.
                            me.log
                                .wait_applied(me.quorum.committed_index().unwrap_or(0))
                                .await;
                            let cluster_id = crate::meta::random_base64_uuid();
                            match me
                                .write(true, |c, ctx| c.activate(ctx, term as i32, cluster_id))
                                .await
                            {
                                Ok(()) => {
                                    tracing::info!(term, "this node is the active controller");
                                    active_term = Some(term);
                                }
                                Err(NotController) => continue,
                            }
                        }
                        // Timers: fence one stale broker per write, until none is left.
                        for _ in 0..100 {
                            match me.write_counted(|c, ctx| c.tick(ctx)).await {
                                Ok(n) if n > 0 => continue,
                                _ => break,
                            }
                        }
                    }
                    _ => {
                        if active_term.take().is_some() {
                            tracing::info!("this node is no longer the active controller");
                            me.log.with_controller(|c, _| c.deactivate());
                        }
                    }
                }
            }
        });
    }

    /// Handles a controller API request (from a broker or forwarded).
    pub async fn handle(&self, body: RequestBody, version: i16) -> ResponseBody {
        let fallback = not_controller(&body);
        let r: Result<ResponseBody, NotController> = match body {
            RequestBody::BrokerRegistration(r) => self
                .write(false, |c, ctx| c.register_broker(ctx, &r))
                .await
                .map(Into::into),
            RequestBody::BrokerHeartbeat(r) => self
                .write(false, |c, ctx| c.broker_heartbeat(ctx, &r))
                .await
                .map(Into::into),
            RequestBody::UnregisterBroker(r) => self
                .write(false, |c, ctx| c.unregister_broker(ctx, &r))
                .await
                .map(Into::into),
            RequestBody::ControlledShutdown(r) => self
                .write(false, |c, ctx| c.controlled_shutdown(ctx, &r))
                .await
                .map(Into::into),
            RequestBody::CreateTopics(r) => self
                .write(false, |c, ctx| c.create_topics(ctx, &r, version))
                .await
                .map(Into::into),
            RequestBody::DeleteTopics(r) => self
                .write(false, |c, ctx| c.delete_topics(ctx, &r, version))
                .await
                .map(Into::into),
            RequestBody::CreatePartitions(r) => self
                .write(false, |c, ctx| c.create_partitions(ctx, &r))
                .await
                .map(Into::into),
            RequestBody::AlterPartition(r) => self
                .write(false, |c, ctx| c.alter_partition(ctx, &r, version))
                .await
                .map(Into::into),
            RequestBody::ElectLeaders(r) => self
                .write(false, |c, ctx| c.elect_leaders(ctx, &r, version))
                .await
                .map(Into::into),
            RequestBody::AlterPartitionReassignments(r) => self
                .write(false, |c, ctx| c.alter_partition_reassignments(ctx, &r))
                .await
                .map(Into::into),
            RequestBody::ListPartitionReassignments(r) => self
                .read(|c| c.list_partition_reassignments(&r))
                .map(Into::into),
            RequestBody::AllocateProducerIds(r) => self
                .write(false, |c, ctx| c.allocate_producer_ids(ctx, &r))
                .await
                .map(Into::into),
            RequestBody::IncrementalAlterConfigs(r) => self
                .write(false, |c, ctx| c.incremental_alter_configs(ctx, &r))
                .await
                .map(Into::into),
            RequestBody::UpdateFeatures(r) => self
                .write(false, |c, ctx| c.update_features(ctx, &r, version))
                .await
                .map(Into::into),
            RequestBody::AlterConfigs(r) => self
                .write(false, |c, ctx| c.alter_configs(ctx, &r))
                .await
                .map(Into::into),
            RequestBody::AlterUserScramCredentials(r) => self
                .write(false, |c, ctx| c.alter_user_scram_credentials(ctx, &r))
                .await
                .map(Into::into),
            RequestBody::AlterClientQuotas(r) => self
                .write(false, |c, ctx| c.alter_client_quotas(ctx, &r))
                .await
                .map(Into::into),
            RequestBody::CreateAcls(r) => self
                .write(false, |c, ctx| c.create_acls(ctx, &r))
                .await
                .map(Into::into),
            RequestBody::DeleteAcls(r) => self
                .write(false, |c, ctx| c.delete_acls(ctx, &r))
                .await
                .map(Into::into),
            _ => Err(NotController),
        };
        r.unwrap_or(fallback)
    }
}
