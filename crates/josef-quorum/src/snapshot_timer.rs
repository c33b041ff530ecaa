//! The time-based snapshot of Kafka's `metadata.log.max.snapshot.interval.ms`: openraft 0.9 only
//! snapshots by entry count (`SnapshotPolicy::LogsSinceLast`), so a task asks it for a snapshot
//! once per interval when entries were applied since the newest snapshot.

use std::sync::Arc;
use std::time::Duration;

use openraft::Raft;
use tokio::runtime::Handle;
use tokio::sync::watch;

use crate::log_store::Progress;
use crate::state_machine::CurrentSnapshot;
use crate::types::TypeConfig;

/// Whether entries were applied after the newest snapshot (or there is none yet and something
/// was applied): Kafka snapshots on time only when there are records the snapshot lacks.
pub(crate) fn behind_snapshot(applied: Option<u64>, snapshot: Option<u64>) -> bool {
    match (applied, snapshot) {
        (Some(a), Some(s)) => a > s,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// Spawns the timer; it ends when `stop` turns true or the Raft node is gone. `interval_ms` 0
/// turns it off, as in Kafka.
pub(crate) fn spawn(
    runtime: &Handle,
    raft: Raft<TypeConfig>,
    interval_ms: u64,
    progress: Arc<Progress>,
    current: CurrentSnapshot,
    mut stop: watch::Receiver<bool>,
) {
    if interval_ms == 0 {
        return;
    }
    let interval = Duration::from_millis(interval_ms);
    runtime.spawn(async move {
        loop {
            tokio::select! {
                _ = stop.changed() => return,
                _ = tokio::time::sleep(interval) => {}
            }
            let snapshot = current
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
                .and_then(|(meta, _)| meta.last_log_id)
                .map(|l| l.index);
            if behind_snapshot(progress.applied(), snapshot)
                && raft.trigger().snapshot().await.is_err()
            {
                return; // the node is shutting down
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::behind_snapshot;

    #[test]
    fn snapshots_only_when_something_is_missing_from_the_last_one() {
        assert!(!behind_snapshot(None, None));
        assert!(behind_snapshot(Some(0), None));
        assert!(!behind_snapshot(Some(7), Some(7)));
        assert!(behind_snapshot(Some(8), Some(7)));
    }
}
