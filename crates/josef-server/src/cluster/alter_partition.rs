//! ISR changes from partition leaders to the controller (Kafka's `AlterPartitionManager`):
//! proposals are queued per partition (the newest replaces an unsent one), sent in one
//! AlterPartition request, and each answer goes back to its partition's replication state.
//! The partition's ISR stays "pending" until then, so the HW is computed over the maximal ISR.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use josef_partition::{AlterPartitionOutcome, AlterPartitionProposal, CommittedPartitionState};
use josef_protocol::messages::alter_partition_request::{
    BrokerState as IsrMember, PartitionData, TopicData,
};
use josef_protocol::messages::AlterPartitionRequest;
use josef_protocol::{ErrorCode, RequestBody, ResponseBody, Uuid};
use parking_lot::Mutex;
use tokio::sync::Notify;

use super::channel::ControllerChannel;
use crate::state::BrokerState;
use crate::topics::now_ms;

/// AlterPartition v3: topic ids and the members' broker epochs (KIP-903).
const ALTER_PARTITION_VERSION: i16 = 3;

type Key = (Uuid, i32);

/// Queues and sends ISR changes.
pub struct AlterPartitionManager {
    pending: Mutex<BTreeMap<Key, (String, AlterPartitionProposal)>>,
    wake: Notify,
}

impl AlterPartitionManager {
    /// A manager; [`AlterPartitionManager::spawn`] starts its sender.
    pub fn new() -> Arc<Self> {
        Arc::new(AlterPartitionManager {
            pending: Mutex::new(BTreeMap::new()),
            wake: Notify::new(),
        })
    }

    /// Queues `proposal` for partition `index` of topic `name` / `id`.
    pub fn submit(&self, name: &str, id: Uuid, index: i32, proposal: AlterPartitionProposal) {
        tracing::debug!(topic = name, index, ?proposal, "ISR change proposed");
        self.pending
            .lock()
            .insert((id, index), (name.to_string(), proposal));
        self.wake.notify_one();
    }

    /// Sends queued proposals as they come, while `state` lives.
    pub fn spawn(
        self: &Arc<Self>,
        state: std::sync::Weak<BrokerState>,
        channel: Arc<ControllerChannel>,
        node_id: i32,
        broker_epoch: Arc<dyn Fn() -> i64 + Send + Sync>,
    ) {
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                me.wake.notified().await;
                let batch = std::mem::take(&mut *me.pending.lock());
                if batch.is_empty() {
                    continue;
                }
                let Some(state) = state.upgrade() else { return };
                me.send(&state, &channel, node_id, broker_epoch(), batch)
                    .await;
                // Proposals that arrive meanwhile go out together in the next request.
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
    }

    async fn send(
        &self,
        state: &BrokerState,
        channel: &ControllerChannel,
        node_id: i32,
        broker_epoch: i64,
        batch: BTreeMap<Key, (String, AlterPartitionProposal)>,
    ) {
        let mut topics: BTreeMap<Uuid, TopicData> = BTreeMap::new();
        for ((id, index), (_, p)) in &batch {
            let t = topics.entry(*id).or_insert_with(|| TopicData {
                topic_id: *id,
                ..Default::default()
            });
            t.partitions.push(PartitionData {
                partition_index: *index,
                leader_epoch: p.leader_epoch,
                // v3 carries the ISR only with the members' broker epochs (KIP-903).
                new_isr_with_epochs: p
                    .new_isr
                    .iter()
                    .enumerate()
                    .map(|(i, b)| IsrMember {
                        broker_id: *b,
                        // -1 (unknown) where the leader has not seen the member's epoch.
                        broker_epoch: p.new_isr_broker_epochs.get(i).copied().unwrap_or(-1),
                        ..Default::default()
                    })
                    .collect(),
                leader_recovery_state: p.leader_recovery_state,
                partition_epoch: p.partition_epoch,
                ..Default::default()
            });
        }
        let req = AlterPartitionRequest {
            broker_id: node_id,
            broker_epoch,
            topics: topics.into_values().collect(),
            ..Default::default()
        };
        let resp = channel
            .send(
                RequestBody::AlterPartition(req),
                ALTER_PARTITION_VERSION,
                Duration::from_secs(10),
            )
            .await;
        let now = now_ms();
        let resp = match resp {
            Ok(ResponseBody::AlterPartition(r)) => r,
            other => {
                tracing::warn!(answer = ?other.as_ref().map(|b| b.api_key()), error = ?other.as_ref().err(), "AlterPartition failed; resubmitting");
                self.resubmit(batch);
                return;
            }
        };
        if resp.error_code != 0 {
            let top = ErrorCode::from_i16(resp.error_code).unwrap_or(ErrorCode::UnknownServerError);
            for ((id, index), (name, p)) in &batch {
                self.answer(state, name, *id, *index, p, Err(top), now);
            }
            return;
        }
        for t in &resp.topics {
            for r in &t.partitions {
                let key = (t.topic_id, r.partition_index);
                let Some((name, p)) = batch.get(&key) else {
                    continue;
                };
                let result = if r.error_code == 0 {
                    Ok(CommittedPartitionState {
                        leader_id: r.leader_id,
                        leader_epoch: r.leader_epoch,
                        isr: r.isr.iter().copied().collect(),
                        partition_epoch: r.partition_epoch,
                    })
                } else {
                    Err(ErrorCode::from_i16(r.error_code).unwrap_or(ErrorCode::UnknownServerError))
                };
                self.answer(state, name, t.topic_id, r.partition_index, p, result, now);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn answer(
        &self,
        state: &BrokerState,
        name: &str,
        id: Uuid,
        index: i32,
        sent: &AlterPartitionProposal,
        result: Result<CommittedPartitionState, ErrorCode>,
        now: i64,
    ) {
        let Some(partition) = state.topics.partition(name, index) else {
            return;
        };
        match partition.on_alter_partition_response(sent, result.clone(), now) {
            AlterPartitionOutcome::Resubmit(p) => {
                // Back off a little so a controller failover is not hammered.
                let me_pending = &self.pending;
                me_pending
                    .lock()
                    .entry((id, index))
                    .or_insert_with(|| (name.to_string(), p));
                self.wake_later();
            }
            outcome => tracing::debug!(
                topic = name,
                index,
                ?result,
                ?outcome,
                "AlterPartition answered"
            ),
        }
    }

    fn resubmit(&self, batch: BTreeMap<Key, (String, AlterPartitionProposal)>) {
        let mut pending = self.pending.lock();
        for (k, v) in batch {
            pending.entry(k).or_insert(v);
        }
        drop(pending);
        self.wake_later();
    }

    fn wake_later(&self) {
        // Notify stores a permit: the sender loop runs again after its current send; a short
        // sleep there is not needed because `send` itself waits on the controller channel.
        self.wake.notify_one();
    }
}
