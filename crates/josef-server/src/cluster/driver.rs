//! The tokio side of the controller (Kafka's `QuorumController` API surface): API requests,
//! the leadership watcher and the timer become events of the controller's event loop
//! ([`super::event_loop`]), which owns the pure [`josef_controller::Controller`] on its own
//! thread; proposals to openraft run on the tokio runtime and report back to the loop.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use josef_controller::{ControllerResult, WriteContext};
use josef_protocol::RequestBody;
use josef_protocol::ResponseBody;
use josef_quorum::MetadataQuorum;
use tokio_util::sync::CancellationToken;

pub use super::event_loop::NotController;
use super::event_loop::{ControllerEvents, ControllerQuorum, ProposeDone};
use super::metadata_log::MetadataLog;
use super::responses::not_controller;

/// How often the active controller runs its timers (session expiry, leader balance).
const TICK: Duration = Duration::from_millis(100);

/// The metadata quorum as the event loop sees it: proposals run on the tokio runtime.
pub struct RaftControllerQuorum {
    quorum: MetadataQuorum,
    runtime: tokio::runtime::Handle,
}

impl RaftControllerQuorum {
    /// Proposals of the loop will run on `runtime`.
    pub fn new(quorum: MetadataQuorum, runtime: tokio::runtime::Handle) -> Self {
        RaftControllerQuorum { quorum, runtime }
    }
}

impl ControllerQuorum for RaftControllerQuorum {
    fn leader(&self) -> Option<(u64, u64)> {
        self.quorum.leader()
    }

    fn propose(&self, batch: Vec<Bytes>, done: ProposeDone) {
        let quorum = self.quorum.clone();
        self.runtime.spawn(async move {
            done(quorum.propose(batch).await.map_err(|e| e.to_string()));
        });
    }
}

/// The controller side of a controller node.
pub struct ControllerDriver {
    node_id: u64,
    log: Arc<MetadataLog>,
    quorum: MetadataQuorum,
    events: ControllerEvents,
}

impl ControllerDriver {
    /// A driver feeding `events` (the queue of the loop [`super::event_loop::spawn`] runs);
    /// [`ControllerDriver::spawn`] starts the leadership watcher and the timer.
    pub fn new(
        node_id: i32,
        log: Arc<MetadataLog>,
        quorum: MetadataQuorum,
        events: ControllerEvents,
    ) -> Arc<Self> {
        Arc::new(ControllerDriver {
            node_id: node_id as u64,
            log,
            quorum,
            events,
        })
    }

    /// Whether this node is the Raft leader and its controller is active in the leader's term.
    pub fn is_active(&self) -> bool {
        match self.quorum.leader() {
            Some((id, term)) if id == self.node_id => {
                self.events.active_epoch() == Some(term as i32)
            }
            _ => false,
        }
    }

    /// Runs one write on the loop; answered once its records are replayed.
    async fn write<T: Send + 'static>(
        &self,
        activation: bool,
        f: impl FnOnce(&mut josef_controller::Controller, WriteContext) -> ControllerResult<T>
            + Send
            + 'static,
    ) -> Result<T, NotController> {
        self.events
            .write(activation, f)
            .await
            .map_err(|_| NotController)
    }

    /// A read of the active controller's state (no records), in the loop's order.
    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&josef_controller::Controller) -> T + Send + 'static,
    ) -> Result<T, NotController> {
        self.events.read(f).await.map_err(|_| NotController)
    }

    /// A write whose response is how many records it committed (the timers: one fencing per
    /// write, repeated while there is work).
    async fn write_counted(
        &self,
        f: impl FnOnce(&mut josef_controller::Controller, WriteContext) -> ControllerResult<()>
            + Send
            + 'static,
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

    /// Starts the leadership watcher (activate / deactivate) and the timer; stops the loop when
    /// `shutdown` fires.
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
                            // Replay everything committed before acting on it: the log hands each
                            // batch to the loop before it counts it applied, so the activation,
                            // queued after, runs on the replayed state.
                            me.log
                                .wait_applied(me.quorum.committed_index().unwrap_or(0))
                                .await;
                            let cluster_id = crate::meta::random_base64_uuid();
                            match me
                                .write(true, move |c, ctx| c.activate(ctx, term as i32, cluster_id))
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
                        // Also after a failed activation, which left the controller active.
                        if active_term.take().is_some() || me.events.active_epoch().is_some() {
                            me.events.deactivate();
                        }
                    }
                }
            }
            me.events.shutdown();
        });
    }

    /// Handles a controller API request (from a broker or forwarded).
    pub async fn handle(&self, body: RequestBody, version: i16) -> ResponseBody {
        let fallback = not_controller(&body);
        let r: Result<ResponseBody, NotController> = match body {
            RequestBody::BrokerRegistration(r) => self
                .write(false, move |c, ctx| c.register_broker(ctx, &r))
                .await
                .map(Into::into),
            RequestBody::BrokerHeartbeat(r) => self
                .write(false, move |c, ctx| c.broker_heartbeat(ctx, &r))
                .await
                .map(Into::into),
            RequestBody::UnregisterBroker(r) => self
                .write(false, move |c, ctx| c.unregister_broker(ctx, &r))
                .await
                .map(Into::into),
            RequestBody::ControlledShutdown(r) => self
                .write(false, move |c, ctx| c.controlled_shutdown(ctx, &r))
                .await
                .map(Into::into),
            RequestBody::CreateTopics(r) => self
                .write(false, move |c, ctx| c.create_topics(ctx, &r, version))
                .await
                .map(Into::into),
            RequestBody::DeleteTopics(r) => self
                .write(false, move |c, ctx| c.delete_topics(ctx, &r, version))
                .await
                .map(Into::into),
            RequestBody::CreatePartitions(r) => self
                .write(false, move |c, ctx| c.create_partitions(ctx, &r))
                .await
                .map(Into::into),
            RequestBody::AlterPartition(r) => self
                .write(false, move |c, ctx| c.alter_partition(ctx, &r, version))
                .await
                .map(Into::into),
            RequestBody::ElectLeaders(r) => self
                .write(false, move |c, ctx| c.elect_leaders(ctx, &r, version))
                .await
                .map(Into::into),
            RequestBody::AlterPartitionReassignments(r) => self
                .write(false, move |c, ctx| {
                    c.alter_partition_reassignments(ctx, &r)
                })
                .await
                .map(Into::into),
            RequestBody::ListPartitionReassignments(r) => self
                .read(move |c| c.list_partition_reassignments(&r))
                .await
                .map(Into::into),
            RequestBody::AllocateProducerIds(r) => self
                .write(false, move |c, ctx| c.allocate_producer_ids(ctx, &r))
                .await
                .map(Into::into),
            RequestBody::IncrementalAlterConfigs(r) => self
                .write(false, move |c, ctx| c.incremental_alter_configs(ctx, &r))
                .await
                .map(Into::into),
            RequestBody::UpdateFeatures(r) => self
                .write(false, move |c, ctx| c.update_features(ctx, &r, version))
                .await
                .map(Into::into),
            RequestBody::AlterConfigs(r) => self
                .write(false, move |c, ctx| c.alter_configs(ctx, &r))
                .await
                .map(Into::into),
            RequestBody::AlterUserScramCredentials(r) => self
                .write(false, move |c, ctx| c.alter_user_scram_credentials(ctx, &r))
                .await
                .map(Into::into),
            RequestBody::AlterClientQuotas(r) => self
                .write(false, move |c, ctx| c.alter_client_quotas(ctx, &r))
                .await
                .map(Into::into),
            RequestBody::CreateAcls(r) => self
                .write(false, move |c, ctx| c.create_acls(ctx, &r))
                .await
                .map(Into::into),
            RequestBody::DeleteAcls(r) => self
                .write(false, move |c, ctx| c.delete_acls(ctx, &r))
                .await
                .map(Into::into),
            _ => Err(NotController),
        };
        r.unwrap_or(fallback)
    }
}
