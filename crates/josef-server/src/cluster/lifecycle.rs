//! The broker's side of its registration with the controller (Kafka's `BrokerLifecycleManager`):
//! register with a fresh incarnation id, heartbeat every `broker.heartbeat.interval.ms` with the
//! metadata offset this node has applied, ask to be unfenced once caught up, and ask for a
//! controlled shutdown when stopping.
//!
//! States: STARTING (registering) → RECOVERY (fenced, catching up) → RUNNING (unfenced) →
//! PENDING_CONTROLLED_SHUTDOWN → SHUTTING_DOWN.

use std::sync::Arc;
use std::time::Duration;

use josef_protocol::messages::broker_registration_request::{Feature, Listener};
use josef_protocol::messages::{BrokerHeartbeatRequest, BrokerRegistrationRequest};
use josef_protocol::{ErrorCode, RequestBody, ResponseBody, StrBytes, Uuid};
use tokio::sync::watch;

use super::channel::ControllerChannel;
use super::controlled_shutdown::ShutdownTarget;
use super::metadata_log::MetadataLog;

/// Where the broker is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LifecycleState {
    /// Not registered yet.
    Starting,
    /// Registered, fenced, catching up with the metadata log.
    Recovery,
    /// Unfenced: may lead and be in ISRs.
    Running,
    /// Asked the controller to move its leaderships away.
    PendingControlledShutdown,
    /// The controller said it may stop.
    ShuttingDown,
}

/// What the lifecycle manager needs to register.
pub struct RegistrationInfo {
    /// `node.id`.
    pub node_id: i32,
    /// The cluster id (from the metadata log).
    pub cluster_id: String,
    /// Advertised listeners: name, host, port.
    pub listeners: Vec<(String, String, u16)>,
    /// `broker.rack`.
    pub rack: Option<String>,
    /// The log dir ids (meta.properties `directory.id`).
    pub log_dirs: Vec<Uuid>,
    /// `broker.heartbeat.interval.ms`.
    pub heartbeat_interval: Duration,
    /// `broker.session.timeout.ms`.
    pub session_timeout: Duration,
}

/// Registers and heartbeats in the background.
pub struct BrokerLifecycle {
    state_tx: watch::Sender<LifecycleState>,
    epoch: parking_lot::Mutex<i64>,
    want_shutdown: watch::Sender<bool>,
    /// Set (once, for good) by the first heartbeat answer with `is_caught_up`.
    caught_up: Arc<watch::Sender<Option<u64>>>,
}

/// PLAINTEXT in Kafka's SecurityProtocol ids.
const SECURITY_PROTOCOL_PLAINTEXT: i16 = 0;

/// The oldest metadata.version this broker supports (Kafka's 3.3-IV3).
pub const METADATA_VERSION_MIN: i16 = 7;
/// The newest (3.9-IV0, what the controller bootstraps and accepts).
pub const METADATA_VERSION_MAX: i16 = 21;

impl BrokerLifecycle {
    /// Starts registering and heartbeating.
    pub fn spawn(
        info: RegistrationInfo,
        channel: Arc<ControllerChannel>,
        log: Arc<MetadataLog>,
        caught_up: Arc<watch::Sender<Option<u64>>>,
    ) -> Arc<BrokerLifecycle> {
        let (state_tx, _) = watch::channel(LifecycleState::Starting);
        let (want_shutdown, _) = watch::channel(false);
        let me = Arc::new(BrokerLifecycle {
            state_tx,
            epoch: parking_lot::Mutex::new(-1),
            want_shutdown,
            caught_up,
        });
        let m = me.clone();
        tokio::spawn(async move { m.run(info, channel, log).await });
        me
    }

    /// The current state.
    pub fn state(&self) -> LifecycleState {
        *self.state_tx.borrow()
    }

    /// State changes.
    pub fn subscribe(&self) -> watch::Receiver<LifecycleState> {
        self.state_tx.subscribe()
    }

    /// The broker epoch the controller gave this incarnation (−1 before registration).
    pub fn broker_epoch(&self) -> i64 {
        *self.epoch.lock()
    }

    /// Asks for a controlled shutdown: sets `want_shut_down` and wakes the heartbeat loop so a
    /// heartbeat carrying it goes out now (each [attempt](super::controlled_shutdown) asks again);
    /// true once the controller lets the broker stop, false after `timeout`.
    pub async fn request_controlled_shutdown(&self, timeout: Duration) -> bool {
        self.want_shutdown.send_replace(true);
        self.wait_shutting_down(timeout).await
    }

    /// Waits up to `timeout` for the controller's "shut down now" without asking again.
    pub async fn wait_shutting_down(&self, timeout: Duration) -> bool {
        let mut rx = self.subscribe();
        tokio::time::timeout(timeout, async {
            let _ = rx.wait_for(|s| *s == LifecycleState::ShuttingDown).await;
        })
        .await
        .is_ok()
    }

    async fn run(
        self: Arc<Self>,
        info: RegistrationInfo,
        channel: Arc<ControllerChannel>,
        log: Arc<MetadataLog>,
    ) {
        let incarnation = Uuid::from_bytes(*uuid::Uuid::new_v4().as_bytes());
        let rpc_deadline = info.session_timeout / 2;
        let mut previous_epoch = -1i64;
        'register: loop {
            let req = BrokerRegistrationRequest {
                broker_id: info.node_id,
                cluster_id: StrBytes::from(info.cluster_id.as_str()),
                incarnation_id: incarnation,
                listeners: info
                    .listeners
                    .iter()
                    .map(|(n, h, p)| Listener {
                        name: StrBytes::from(n.as_str()),
                        host: StrBytes::from(h.as_str()),
                        port: *p,
                        security_protocol: SECURITY_PROTOCOL_PLAINTEXT,
                        ..Default::default()
                    })
                    .collect(),
                features: vec![
                    Feature {
                        name: StrBytes::from("metadata.version"),
                        min_supported_version: METADATA_VERSION_MIN,
                        max_supported_version: METADATA_VERSION_MAX,
                        ..Default::default()
                    },
                    Feature {
                        name: StrBytes::from(crate::features::TRANSACTION_VERSION_FEATURE),
                        min_supported_version: crate::features::TRANSACTION_VERSION_MIN,
                        max_supported_version: crate::features::TRANSACTION_VERSION_MAX,
                        ..Default::default()
                    },
                ],
                rack: info.rack.as_deref().map(StrBytes::from),
                log_dirs: info.log_dirs.clone(),
                previous_broker_epoch: previous_epoch,
                ..Default::default()
            };
            let epoch = match channel
                .send(RequestBody::BrokerRegistration(req), 3, rpc_deadline)
                .await
            {
                Ok(ResponseBody::BrokerRegistration(r)) if r.error_code == 0 => r.broker_epoch,
                Ok(ResponseBody::BrokerRegistration(r)) => {
                    tracing::warn!(
                        error = ?ErrorCode::from_i16(r.error_code),
                        "broker registration refused; retrying"
                    );
                    tokio::time::sleep(info.heartbeat_interval.min(Duration::from_secs(1))).await;
                    continue;
                }
                Ok(_) | Err(_) => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            *self.epoch.lock() = epoch;
            previous_epoch = epoch;
            tracing::info!(broker_epoch = epoch, "registered with the controller");
            self.state_tx.send_replace(LifecycleState::Recovery);
            let mut shutdown_rx = self.want_shutdown.subscribe();
            loop {
                let state = self.state();
                let want_shut_down = *self.want_shutdown.borrow();
                let req = BrokerHeartbeatRequest {
                    broker_id: info.node_id,
                    broker_epoch: epoch,
                    current_metadata_offset: log.applied() as i64,
                    // Logs are open before registration: once registered, ask to be unfenced.
                    want_fence: false,
                    want_shut_down,
                    ..Default::default()
                };
                let resp = channel
                    .send(RequestBody::BrokerHeartbeat(req), 1, rpc_deadline)
                    .await;
                match resp {
                    Ok(ResponseBody::BrokerHeartbeat(r)) if r.error_code == 0 => {
                        if r.is_caught_up && self.caught_up.borrow().is_none() {
                            tracing::info!(
                                metadata_offset = log.applied(),
                                "caught up with the metadata log; serving clients"
                            );
                            self.caught_up.send_replace(Some(log.applied()));
                        }
                        let next = if r.should_shut_down {
                            LifecycleState::ShuttingDown
                        } else if want_shut_down {
                            LifecycleState::PendingControlledShutdown
                        } else if r.is_fenced {
                            LifecycleState::Recovery
                        } else {
                            LifecycleState::Running
                        };
                        if next != state {
                            tracing::info!(?next, "broker lifecycle");
                            self.state_tx.send_replace(next);
                        }
                        if next == LifecycleState::ShuttingDown {
                            return;
                        }
                    }
                    Ok(ResponseBody::BrokerHeartbeat(r))
                        if r.error_code == ErrorCode::StaleBrokerEpoch.code() =>
                    {
                        tracing::warn!("heartbeat: stale broker epoch; registering again");
                        self.state_tx.send_replace(LifecycleState::Starting);
                        continue 'register;
                    }
                    Ok(_) | Err(_) => {}
                }
                // While starting up, heartbeat fast (Kafka: 10 ms) so unfencing is quick.
                let wait = if self.state() == LifecycleState::Running {
                    info.heartbeat_interval
                } else {
                    info.heartbeat_interval.min(Duration::from_millis(50))
                };
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {},
                    _ = shutdown_rx.changed() => {},
                }
            }
        }
    }
}

impl ShutdownTarget for BrokerLifecycle {
    async fn attempt(&self, _n: u32, timeout: Duration) -> bool {
        self.request_controlled_shutdown(timeout).await
    }

    async fn backoff(&self, d: Duration) -> bool {
        self.wait_shutting_down(d).await
    }
}
