//! A broker-only node (`process.roles=broker`) follows the committed metadata log as a Raft
//! observer, as Kafka's brokers do: josef-quorum's [`MetadataObserver`] fetches it from the voters
//! of `controller.quorum.voters` (over their CONTROLLER listeners, [`OBSERVER_PREAMBLE`]
//! connections) and feeds the node's [`MetadataLog`] through the same [`LogStateMachine`] the
//! voters use, so the image is built the same way on every node. The leader the voters name is
//! the controller channel's hint.
//!
//! [`OBSERVER_PREAMBLE`]: josef_quorum::OBSERVER_PREAMBLE

use std::sync::Arc;

use josef_quorum::{MetadataObserver, ObserverConfig};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::metadata_log::MetadataLog;
use super::{ClusterStartError, LogStateMachine};
use crate::cluster_config::ClusterConfig;

/// The leader hint of the controller channel.
pub(super) type LeaderHint = Arc<dyn Fn() -> Option<i32> + Send + Sync>;

/// On a node without the controller role, starts the observer feeding `log` (stopped when
/// `shutdown` fires, its stop awaited by `tracker`) and returns its leader hint; `None` on a
/// controller (its quorum member applies the log).
pub(super) fn start_if_broker_only(
    cl: &ClusterConfig,
    node_id: i32,
    log: &Arc<MetadataLog>,
    connector: Arc<dyn josef_quorum::StreamConnector>,
    shutdown: &CancellationToken,
    tracker: &TaskTracker,
) -> Result<Option<LeaderHint>, ClusterStartError> {
    if cl.is_controller() {
        return Ok(None);
    }
    let voters = cl
        .voters
        .iter()
        .map(|v| (v.id as u64, v.address()))
        .collect();
    let mut config = ObserverConfig::new(node_id.max(0) as u64);
    config.request_timeout_ms = cl.quorum_request_timeout_ms.max(1) as u64;
    let observer = MetadataObserver::start_with_connector(
        voters,
        Arc::new(LogStateMachine(log.clone())),
        config,
        connector,
    )?;
    tracing::info!(
        node_id,
        "following the metadata log as an observer of the controllers"
    );
    let stop = observer.clone();
    let shutdown = shutdown.clone();
    tracker.spawn(async move {
        shutdown.cancelled().await;
        stop.shutdown().await;
    });
    Ok(Some(Arc::new(move || {
        observer.leader().map(|(id, _)| id as i32)
    })))
}
