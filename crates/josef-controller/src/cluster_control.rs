//! Kafka's `ClusterControlManager` (broker registrations) and the broker lifecycle handlers of
//! `QuorumController` / `ReplicationControlManager`: registration, heartbeats (through
//! [`calculate_next_broker_state`]), unregistration, the ControlledShutdown API and the fencing of
//! stale brokers.

use std::collections::BTreeMap;

use josef_protocol::messages::controlled_shutdown_response::RemainingPartition;
use josef_protocol::messages::{
    BrokerHeartbeatRequest, BrokerHeartbeatResponse, BrokerRegistrationRequest,
    BrokerRegistrationResponse, ControlledShutdownRequest, ControlledShutdownResponse,
    UnregisterBrokerRequest, UnregisterBrokerResponse,
};
use josef_protocol::{ErrorCode, Uuid};

use crate::records::{
    BrokerRegistrationChangeRecord, MetadataRecord, RegisterBrokerRecord, UnregisterBrokerRecord,
};
use crate::{
    calculate_next_broker_state, ApiError, BrokerControlState, Controller, ControllerResult,
    HeartbeatFacts, ReplayError, UsableBroker, WriteContext,
};

/// A registered broker as the controller sees it (Kafka's `BrokerRegistration`, trimmed to what
/// the controller decides on).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerInfo {
    /// Broker id.
    pub id: i32,
    /// Incarnation id of the registration.
    pub incarnation_id: Uuid,
    /// Broker epoch.
    pub epoch: i64,
    /// Fenced.
    pub fenced: bool,
    /// In controlled shutdown.
    pub in_controlled_shutdown: bool,
    /// `broker.rack`.
    pub rack: Option<String>,
    /// Offset of the registration record.
    pub register_offset: i64,
    /// Offset of the record that put it in controlled shutdown.
    pub controlled_shutdown_offset: Option<i64>,
    /// Features it supports: name → (min, max) level.
    pub supported_features: BTreeMap<String, (i16, i16)>,
}

impl BrokerInfo {
    /// Registered, unfenced and not shutting down: may lead and join ISRs (Kafka's `isActive`).
    pub fn is_active(&self) -> bool {
        !self.fenced && !self.in_controlled_shutdown
    }

    /// The heartbeat state of this registration.
    pub fn control_state(&self) -> BrokerControlState {
        BrokerControlState::of(self.fenced, self.in_controlled_shutdown)
    }
}

/// Registered brokers, changed only by replay.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ClusterControlManager {
    pub(crate) brokers: BTreeMap<i32, BrokerInfo>,
}

impl ClusterControlManager {
    pub(crate) fn is_active(&self, id: i32) -> bool {
        self.brokers.get(&id).is_some_and(BrokerInfo::is_active)
    }

    /// Kafka's `checkBrokerEpoch`: STALE_BROKER_EPOCH for an unknown broker or another epoch.
    pub(crate) fn check_broker_epoch(&self, id: i32, epoch: i64) -> Result<&BrokerInfo, ApiError> {
        match self.brokers.get(&id) {
            None => Err(ApiError::new(
                ErrorCode::StaleBrokerEpoch,
                format!("No broker registration found for broker {id}"),
            )),
            Some(b) if b.epoch != epoch => Err(ApiError::new(
                ErrorCode::StaleBrokerEpoch,
                format!(
                    "Expected broker epoch {}, but got broker epoch {epoch}",
                    b.epoch
                ),
            )),
            Some(b) => Ok(b),
        }
    }

    /// Brokers placement may use: registered, not in controlled shutdown.
    pub(crate) fn usable_brokers(&self) -> Vec<UsableBroker> {
        self.brokers
            .values()
            .filter(|b| !b.in_controlled_shutdown)
            .map(|b| UsableBroker {
                id: b.id,
                rack: b.rack.clone(),
                fenced: b.fenced,
            })
            .collect()
    }

    pub(crate) fn replay_register(&mut self, r: &RegisterBrokerRecord, offset: i64) {
        let previous = self.brokers.get(&r.broker_id);
        let controlled_shutdown_offset = match previous {
            Some(p) if r.in_controlled_shutdown && p.epoch == r.broker_epoch => {
                p.controlled_shutdown_offset
            }
            _ if r.in_controlled_shutdown => Some(offset),
            _ => None,
        };
        let register_offset = match previous {
            Some(p) if p.incarnation_id == r.incarnation_id && p.epoch == r.broker_epoch => {
                p.register_offset
            }
            _ => offset,
        };
        self.brokers.insert(
            r.broker_id,
            BrokerInfo {
                id: r.broker_id,
                incarnation_id: r.incarnation_id,
                epoch: r.broker_epoch,
                fenced: r.fenced,
                in_controlled_shutdown: r.in_controlled_shutdown,
                rack: r.rack.as_ref().map(|s| s.to_string()),
                register_offset,
                controlled_shutdown_offset,
                supported_features: r
                    .features
                    .iter()
                    .map(|f| {
                        let range = (f.min_supported_version, f.max_supported_version);
                        (f.name.to_string(), range)
                    })
                    .collect(),
            },
        );
    }

    /// A record naming broker `id` at `epoch` applies only to that registration.
    pub(crate) fn check_epoch(&self, id: i32, epoch: i64) -> Result<(), ReplayError> {
        match self.brokers.get(&id) {
            Some(b) if b.epoch == epoch => Ok(()),
            Some(b) => Err(ReplayError::Invalid(format!(
                "broker {id} has epoch {}, the record says {epoch}",
                b.epoch
            ))),
            None => Err(ReplayError::UnknownBroker(id)),
        }
    }

    fn broker_at_epoch(&mut self, id: i32, epoch: i64) -> Result<&mut BrokerInfo, ReplayError> {
        self.check_epoch(id, epoch)?;
        self.brokers
            .get_mut(&id)
            .ok_or(ReplayError::UnknownBroker(id))
    }

    pub(crate) fn replay_change(
        &mut self,
        r: &BrokerRegistrationChangeRecord,
        offset: i64,
    ) -> Result<(), ReplayError> {
        let b = self.broker_at_epoch(r.broker_id, r.broker_epoch)?;
        match r.fenced {
            1 => b.fenced = true,
            -1 => b.fenced = false,
            _ => {}
        }
        match r.in_controlled_shutdown {
            1 => {
                if !b.in_controlled_shutdown {
                    b.controlled_shutdown_offset = Some(offset);
                }
                b.in_controlled_shutdown = true;
            }
            -1 => {
                b.in_controlled_shutdown = false;
                b.controlled_shutdown_offset = None;
            }
            _ => {}
        }
        Ok(())
    }

    pub(crate) fn replay_fence(
        &mut self,
        id: i32,
        epoch: i64,
        fenced: bool,
    ) -> Result<(), ReplayError> {
        self.broker_at_epoch(id, epoch)?.fenced = fenced;
        Ok(())
    }

    pub(crate) fn replay_unregister(
        &mut self,
        r: &UnregisterBrokerRecord,
    ) -> Result<(), ReplayError> {
        self.broker_at_epoch(r.broker_id, r.broker_epoch)?;
        self.brokers.remove(&r.broker_id);
        Ok(())
    }
}

fn change_record(id: i32, epoch: i64, fenced: i8, in_controlled_shutdown: i8) -> MetadataRecord {
    MetadataRecord::BrokerRegistrationChange(BrokerRegistrationChangeRecord {
        broker_id: id,
        broker_epoch: epoch,
        fenced,
        in_controlled_shutdown,
        ..Default::default()
    })
}

impl Controller {
    /// BrokerRegistration (API 62; Kafka's `ClusterControlManager.registerBroker`).
    ///
    /// A new incarnation gets broker epoch `ctx.next_offset` and starts fenced; it is refused with
    /// DUPLICATE_BROKER_REGISTRATION while the old incarnation holds a valid session (unfenced and
    /// heartbeating). Before its RegisterBrokerRecord, the batch drops the old incarnation from every
    /// ISR (re-electing where it led; Kafka does this from 4.0-IV1 for unclean restarts), so a fenced
    /// registration never leads. The same incarnation again (a retry) keeps epoch and flags.
    /// Other errors: INCONSISTENT_CLUSTER_ID, UNSUPPORTED_VERSION (a finalized feature level
    /// outside the range the broker lists for it; unlisted features are not checked),
    /// INVALID_REQUEST (negative id).
    pub fn register_broker(
        &mut self,
        ctx: WriteContext,
        req: &BrokerRegistrationRequest,
    ) -> ControllerResult<BrokerRegistrationResponse> {
        let fail = |e: ApiError| {
            ControllerResult::response(BrokerRegistrationResponse {
                error_code: e.code(),
                broker_epoch: -1,
                ..Default::default()
            })
        };
        if let Err(e) = self.check_active() {
            return fail(e);
        }
        if let Some(id) = &self.cluster_id {
            if req.cluster_id.as_str() != id {
                return fail(ApiError::new(
                    ErrorCode::InconsistentClusterId,
                    format!(
                        "Expected cluster ID {id}, but got cluster ID {}",
                        req.cluster_id
                    ),
                ));
            }
        }
        if req.broker_id < 0 {
            return fail(ErrorCode::InvalidRequest.into());
        }
        for f in &req.features {
            let Some(&level) = self.features.get(f.name.as_str()) else {
                continue;
            };
            if level < f.min_supported_version || level > f.max_supported_version {
                return fail(ApiError::new(
                    ErrorCode::UnsupportedVersion,
                    format!(
                        "Unable to register because the broker does not support finalized version {level} of {}. The broker wants a version between {} and {}, inclusive.",
                        f.name, f.min_supported_version, f.max_supported_version
                    ),
                ));
            }
        }
        let id = req.broker_id;
        let existing = self.cluster.brokers.get(&id).cloned();
        let mut records = Vec::new();
        let record = match &existing {
            Some(b) if b.incarnation_id == req.incarnation_id => RegisterBrokerRecord {
                broker_epoch: b.epoch,
                fenced: b.fenced,
                in_controlled_shutdown: b.in_controlled_shutdown,
                ..self.register_record(req)
            },
            _ => {
                if let Some(b) = &existing {
                    if !b.fenced && self.heartbeats.has_valid_session(id, ctx.now_ms) {
                        return fail(ApiError::new(
                            ErrorCode::DuplicateBrokerRegistration,
                            "Another broker is registered with that broker id.",
                        ));
                    }
                    self.remove_from_isrs(id, &mut records);
                    self.heartbeats.remove(id);
                }
                RegisterBrokerRecord {
                    broker_epoch: ctx.next_offset as i64,
                    fenced: true,
                    in_controlled_shutdown: false,
                    ..self.register_record(req)
                }
            }
        };
        self.heartbeats.touch(id, ctx.now_ms, None);
        let epoch = record.broker_epoch;
        records.push(MetadataRecord::RegisterBroker(record));
        ControllerResult::of(
            records,
            BrokerRegistrationResponse {
                broker_epoch: epoch,
                ..Default::default()
            },
        )
    }

    fn register_record(&self, req: &BrokerRegistrationRequest) -> RegisterBrokerRecord {
        use josef_protocol::metadata_records::register_broker_record::{
            BrokerEndpoint, BrokerFeature,
        };
        RegisterBrokerRecord {
            broker_id: req.broker_id,
            is_migrating_zk_broker: req.is_migrating_zk_broker,
            incarnation_id: req.incarnation_id,
            end_points: req
                .listeners
                .iter()
                .map(|l| BrokerEndpoint {
                    name: l.name.clone(),
                    host: l.host.clone(),
                    port: l.port,
                    security_protocol: l.security_protocol,
                    ..Default::default()
                })
                .collect(),
            features: req
                .features
                .iter()
                .map(|f| BrokerFeature {
                    name: f.name.clone(),
                    min_supported_version: f.min_supported_version,
                    max_supported_version: f.max_supported_version,
                    ..Default::default()
                })
                .collect(),
            rack: req.rack.clone(),
            log_dirs: req.log_dirs.clone(),
            ..Default::default()
        }
    }

    /// BrokerHeartbeat (API 63; Kafka's `ReplicationControlManager.processBrokerHeartbeat`): the
    /// session is refreshed, the next state computed by [`calculate_next_broker_state`], and the
    /// records of the transition returned: fencing (ISR removal, then the fence), unfencing (the
    /// record, then elections of leaderless partitions it can lead), controlled shutdown (the flag,
    /// then leaderships and ISR membership moved off). STALE_BROKER_EPOCH for an unknown broker or
    /// another epoch.
    pub fn broker_heartbeat(
        &mut self,
        ctx: WriteContext,
        req: &BrokerHeartbeatRequest,
    ) -> ControllerResult<BrokerHeartbeatResponse> {
        let fail = |e: ApiError| {
            ControllerResult::response(BrokerHeartbeatResponse {
                error_code: e.code(),
                is_fenced: true,
                ..Default::default()
            })
        };
        if let Err(e) = self.check_active() {
            return fail(e);
        }
        let broker = match self
            .cluster
            .check_broker_epoch(req.broker_id, req.broker_epoch)
        {
            Ok(b) => b.clone(),
            Err(e) => return fail(e),
        };
        let (records, next) = self.heartbeat_transition(
            &broker,
            req.want_fence,
            req.want_shut_down,
            req.current_metadata_offset,
        );
        self.heartbeats
            .touch(broker.id, ctx.now_ms, Some(req.current_metadata_offset));
        ControllerResult::of(
            records,
            BrokerHeartbeatResponse {
                is_caught_up: req.current_metadata_offset >= broker.register_offset,
                is_fenced: next.fenced(),
                should_shut_down: next.should_shut_down(),
                ..Default::default()
            },
        )
    }

    /// The next state of `broker` after a heartbeat and the records that get it there.
    fn heartbeat_transition(
        &self,
        broker: &BrokerInfo,
        want_fence: bool,
        want_shut_down: bool,
        current_metadata_offset: i64,
    ) -> (Vec<MetadataRecord>, BrokerControlState) {
        let active = self
            .cluster
            .brokers
            .values()
            .filter(|b| b.is_active())
            .map(|b| b.id);
        let facts = HeartbeatFacts {
            want_fence,
            want_shut_down,
            current_metadata_offset,
            register_offset: broker.register_offset,
            has_leaderships: self.replication.leads_any(broker.id),
            controlled_shutdown_offset: broker.controlled_shutdown_offset,
            lowest_active_offset: self.heartbeats.lowest_offset(active),
        };
        let current = broker.control_state();
        let mut next = calculate_next_broker_state(current, &facts);
        if broker.fenced && broker.in_controlled_shutdown && next == BrokerControlState::Unfenced {
            // Fenced at the end of a controlled shutdown: the flag only clears with a new
            // registration (Kafka has no record that clears it), so it is not unfenced again and
            // does not flap between fenced and shutting down; a restart registers afresh.
            next = BrokerControlState::Fenced;
        }
        let mut records = Vec::new();
        if current != next {
            match next {
                BrokerControlState::Fenced | BrokerControlState::ShutdownNow => {
                    if !broker.fenced {
                        self.handle_broker_fenced(broker, &mut records);
                    }
                }
                BrokerControlState::Unfenced => self.handle_broker_unfenced(broker, &mut records),
                BrokerControlState::ControlledShutdown => {
                    self.handle_broker_in_controlled_shutdown(broker, &mut records)
                }
            }
        }
        (records, next)
    }

    /// Kafka's `handleBrokerFenced`: out of every ISR (re-electing where it led), then fenced.
    pub(crate) fn handle_broker_fenced(
        &self,
        broker: &BrokerInfo,
        records: &mut Vec<MetadataRecord>,
    ) {
        self.remove_from_isrs(broker.id, records);
        records.push(change_record(broker.id, broker.epoch, 1, 0));
    }

    /// Kafka's `handleBrokerUnfenced`: unfenced, then leaders for leaderless partitions it can lead.
    fn handle_broker_unfenced(&self, broker: &BrokerInfo, records: &mut Vec<MetadataRecord>) {
        records.push(change_record(broker.id, broker.epoch, -1, 0));
        self.elect_for_leaderless(broker.id, records);
    }

    /// Kafka's `handleBrokerInControlledShutdown`: the flag, then out of every ISR with the
    /// controlled-shutdown strategy.
    fn handle_broker_in_controlled_shutdown(
        &self,
        broker: &BrokerInfo,
        records: &mut Vec<MetadataRecord>,
    ) {
        if !broker.in_controlled_shutdown {
            records.push(change_record(broker.id, broker.epoch, 0, 1));
        }
        self.move_off_for_controlled_shutdown(broker.id, records);
    }

    /// UnregisterBroker (API 64): out of every ISR, then UnregisterBrokerRecord;
    /// BROKER_ID_NOT_REGISTERED for an unknown id.
    pub fn unregister_broker(
        &mut self,
        _ctx: WriteContext,
        req: &UnregisterBrokerRequest,
    ) -> ControllerResult<UnregisterBrokerResponse> {
        let fail = |e: ApiError| {
            ControllerResult::response(UnregisterBrokerResponse {
                error_code: e.code(),
                error_message: Some(e.message.into()),
                ..Default::default()
            })
        };
        if let Err(e) = self.check_active() {
            return fail(e);
        }
        let Some(broker) = self.cluster.brokers.get(&req.broker_id).cloned() else {
            return fail(ApiError::new(
                ErrorCode::BrokerIdNotRegistered,
                format!("Broker ID {} is not currently registered", req.broker_id),
            ));
        };
        let mut records = Vec::new();
        self.remove_from_isrs(broker.id, &mut records);
        records.push(MetadataRecord::UnregisterBroker(UnregisterBrokerRecord {
            broker_id: broker.id,
            broker_epoch: broker.epoch,
            ..Default::default()
        }));
        self.heartbeats.remove(broker.id);
        ControllerResult::of(records, UnregisterBrokerResponse::default())
    }

    /// ControlledShutdown (API 7, for older tools), served on the heartbeat's path: as a heartbeat
    /// with `want_shut_down` (and the metadata offset of the broker's last heartbeat). NOT_CONTROLLER,
    /// BROKER_NOT_AVAILABLE for an unknown broker, STALE_BROKER_EPOCH for another epoch (v2+, −1
    /// skips the check). `remaining_partitions` lists what the broker still leads once the records
    /// are applied (with KRaft's elections that is nothing: a partition without another candidate
    /// goes leaderless rather than staying on the broker). The broker may stop once the answer is
    /// NONE with nothing remaining; until every active broker has seen the change it keeps
    /// `CONTROLLED_SHUTDOWN` (retry), then it is fenced (SHUTDOWN_NOW).
    pub fn controlled_shutdown(
        &mut self,
        ctx: WriteContext,
        req: &ControlledShutdownRequest,
    ) -> ControllerResult<ControlledShutdownResponse> {
        let fail = |e: ApiError| {
            ControllerResult::response(ControlledShutdownResponse {
                error_code: e.code(),
                ..Default::default()
            })
        };
        if let Err(e) = self.check_active() {
            return fail(e);
        }
        let Some(broker) = self.cluster.brokers.get(&req.broker_id).cloned() else {
            return fail(ErrorCode::BrokerNotAvailable.into());
        };
        if req.broker_epoch != -1 && req.broker_epoch != broker.epoch {
            return fail(ErrorCode::StaleBrokerEpoch.into());
        }
        let offset = self
            .heartbeats
            .session(broker.id)
            .map_or(-1, |s| s.metadata_offset);
        let (records, _next) = self.heartbeat_transition(&broker, false, true, offset);
        self.heartbeats.touch(broker.id, ctx.now_ms, None);
        let remaining = self
            .replication
            .led_after(broker.id, &records)
            .into_iter()
            .map(|(topic_name, partition_index)| RemainingPartition {
                topic_name: topic_name.into(),
                partition_index,
                ..Default::default()
            })
            .collect();
        ControllerResult::of(
            records,
            ControlledShutdownResponse {
                error_code: 0,
                remaining_partitions: remaining,
                ..Default::default()
            },
        )
    }

    /// Kafka's `maybeFenceOneStaleBroker`: the unfenced broker whose session expired longest ago.
    pub(crate) fn maybe_fence_one_stale_broker(&self, now_ms: i64) -> Vec<MetadataRecord> {
        let unfenced = self
            .cluster
            .brokers
            .values()
            .filter(|b| !b.fenced)
            .map(|b| b.id);
        let mut records = Vec::new();
        if let Some(id) = self.heartbeats.find_one_stale_broker(unfenced, now_ms) {
            if let Some(b) = self.cluster.brokers.get(&id) {
                self.handle_broker_fenced(b, &mut records);
            }
        }
        records
    }
}
