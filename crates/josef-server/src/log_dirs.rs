//! Each log dir's recovery-point and log-start checkpoints and its clean-shutdown marker, kept
//! for all the partitions of the dir as Kafka's `LogManager` keeps them (josef-log's
//! [`josef_log::log_dir`]), and the `num.recovery.threads.per.data.dir` threads that open the
//! logs at startup and close them at shutdown.
//!
//! Per partition, these were three small files read at every open and written (with fsyncs) at
//! every close; with 100,000 partitions that was most of a restart and a shutdown (issue #22).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use josef_log::log_dir::{self, CheckpointWriter, LogDirCheckpoints, PartitionCheckpoint};
use josef_log::storage::Storage;
use josef_log::PartitionState;
use parking_lot::Mutex;

use crate::partition::Partition;

/// The log dirs of the node, in `log.dirs` order.
pub(crate) struct LogDirs {
    storage: Arc<dyn Storage>,
    dirs: Vec<PathBuf>,
    /// What each dir's files said at startup.
    at_start: Vec<LogDirCheckpoints>,
    /// One writer per dir; `None` once the shutdown wrote the final checkpoints, so a periodic
    /// write still running cannot replace them with older offsets.
    writers: Mutex<Option<Vec<CheckpointWriter>>>,
    threads_per_dir: usize,
}

/// Runs `work` on every job of every group, on `threads` threads per group (all groups at
/// once), and returns the results in job order.
pub(crate) fn on_threads_per_dir<T: Sync, R: Send>(
    groups: &[Vec<T>],
    threads: usize,
    work: impl Fn(&T) -> R + Sync,
) -> Vec<Vec<R>> {
    std::thread::scope(|scope| {
        let workers: Vec<Vec<_>> = groups
            .iter()
            .map(|jobs| {
                let next = Arc::new(AtomicUsize::new(0));
                (0..threads.clamp(1, jobs.len().max(1)))
                    .map(|_| {
                        let next = next.clone();
                        let work = &work;
                        scope.spawn(move || {
                            let mut mine = Vec::new();
                            loop {
                                let i = next.fetch_add(1, Ordering::Relaxed);
                                let Some(job) = jobs.get(i) else {
                                    break mine;
                                };
                                mine.push((i, work(job)));
                            }
                        })
                    })
                    .collect()
            })
            .collect();
        workers
            .into_iter()
            .map(|group| {
                let mut done: Vec<(usize, R)> = group
                    .into_iter()
                    // A panicking job is a bug; its thread's results are lost, which the caller
                    // sees as missing ones.
                    .flat_map(|w| w.join().unwrap_or_default())
                    .collect();
                done.sort_by_key(|(i, _)| *i);
                done.into_iter().map(|(_, r)| r).collect()
            })
            .collect()
    })
}

impl LogDirs {
    /// Reads every dir's checkpoints and marker; a damaged file is logged and its logs recover.
    pub(crate) fn read(
        storage: Arc<dyn Storage>,
        dirs: &[PathBuf],
        threads_per_dir: usize,
    ) -> LogDirs {
        let at_start = dirs
            .iter()
            .map(|d| {
                let (read, warnings) = LogDirCheckpoints::read(&*storage, d);
                for w in warnings {
                    tracing::warn!(file = %w.path.display(), error = %w.error,
                        "unreadable checkpoint: the log dir's logs are recovered as after a crash");
                }
                read
            })
            .collect();
        LogDirs {
            storage,
            dirs: dirs.to_vec(),
            at_start,
            writers: Mutex::new(Some(dirs.iter().map(|_| Default::default()).collect())),
            threads_per_dir: threads_per_dir.max(1),
        }
    }

    /// `num.recovery.threads.per.data.dir`.
    pub(crate) fn threads_per_dir(&self) -> usize {
        self.threads_per_dir
    }

    /// Which log dir a partition directory is in.
    pub(crate) fn index_of(&self, partition_dir: &Path) -> Option<usize> {
        let parent = partition_dir.parent()?;
        self.dirs.iter().position(|d| d == parent)
    }

    /// The state to open a partition with at startup, from its log dir's files.
    pub(crate) fn state_at_start(
        &self,
        partition_dir: &Path,
        topic: &str,
        index: i32,
    ) -> PartitionState {
        match self.index_of(partition_dir) {
            Some(i) => {
                self.at_start[i].partition_state(&*self.storage, partition_dir, topic, index)
            }
            None => new_partition_state(),
        }
    }

    /// Once every partition is open: a dir still in the per-partition layout gets its own
    /// checkpoints (then the partitions' files go), and every dir's marker is removed, durably,
    /// before anything is written to the logs.
    pub(crate) fn finish_start(&self, partitions: &[Arc<Partition>]) -> Result<(), String> {
        let by_dir = self.group(partitions.iter().cloned());
        let mut writers = self.writers.lock();
        let Some(writers) = writers.as_mut() else {
            return Ok(());
        };
        for (i, dir) in self.dirs.iter().enumerate() {
            if self.at_start[i].is_per_partition() {
                let entries: Vec<PartitionCheckpoint> =
                    by_dir[i].iter().map(|p| entry(p)).collect();
                writers[i]
                    .write(&*self.storage, dir, &entries)
                    .map_err(|e| e.to_string())?;
                for p in &by_dir[i] {
                    log_dir::remove_partition_checkpoints(&*self.storage, &p.dir())
                        .map_err(|e| e.to_string())?;
                }
                if !by_dir[i].is_empty() {
                    tracing::info!(dir = %dir.display(), partitions = by_dir[i].len(),
                        "the log dir now keeps its partitions' checkpoints");
                }
            }
            log_dir::consume_clean_shutdown_marker(&*self.storage, dir)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Writes each dir's checkpoints where they changed (the periodic task, and after a topic
    /// deletion so that a topic created again under its name does not inherit its offsets).
    /// `partitions` is called under the writers' lock, so no checkpoint holds a partition once
    /// [`LogDirs::begin_shutdown`] returned.
    pub(crate) fn checkpoint(&self, partitions: impl FnOnce() -> Vec<Arc<Partition>>) {
        let mut writers = self.writers.lock();
        let Some(writers) = writers.as_mut() else {
            return;
        };
        let by_dir = self.group(partitions().into_iter());
        for (i, dir) in self.dirs.iter().enumerate() {
            let entries: Vec<PartitionCheckpoint> = by_dir[i].iter().map(|p| entry(p)).collect();
            if let Err(e) = writers[i].write(&*self.storage, dir, &entries) {
                tracing::warn!(dir = %dir.display(), error = %e, "cannot write the checkpoints");
            }
        }
    }

    /// Stops the periodic checkpoints (waiting for one in progress) and hands over the writers
    /// for [`LogDirs::close`]; `None` if the shutdown already began.
    pub(crate) fn begin_shutdown(&self) -> Option<Vec<CheckpointWriter>> {
        self.writers.lock().take()
    }

    /// Closes every partition on `num.recovery.threads.per.data.dir` threads per dir, then
    /// writes each dir's checkpoints and, if every log of the dir closed, its clean-shutdown
    /// marker (Kafka's `LogManager.shutdown`): the marker only ever follows the flush of every
    /// log it vouches for. A partition still shared elsewhere is only flushed: its indexes are
    /// not closed, so its dir is not marked clean and recovers from the recovery points.
    pub(crate) fn close(
        &self,
        partitions: Vec<Arc<Partition>>,
        mut writers: Vec<CheckpointWriter>,
    ) {
        let mut groups: Vec<Vec<Mutex<Option<Arc<Partition>>>>> =
            self.dirs.iter().map(|_| Vec::new()).collect();
        let mut elsewhere = Vec::new();
        for p in partitions {
            match self.index_of(&p.dir()) {
                Some(i) => groups[i].push(Mutex::new(Some(p))),
                None => elsewhere.push(p),
            }
        }
        // Nothing is fsynced per partition: one `syncfs` per dir below makes the closed logs
        // durable before the checkpoints say so (`Log::close_unsynced`).
        let results = on_threads_per_dir(&groups, self.threads_per_dir, |slot| {
            slot.lock().take().map(|p| close_one(p, false))
        });
        for (i, dir) in self.dirs.iter().enumerate() {
            if let Err(e) = self.storage.sync_file_system(dir) {
                // The previous checkpoints stay: the next start recovers these logs from them.
                tracing::warn!(dir = %dir.display(), error = %e,
                    "cannot sync the log dir: its checkpoints are not written, nor its marker");
                continue;
            }
            let closed = &results[i];
            let all_closed =
                closed.len() == groups[i].len() && closed.iter().all(|r| matches!(r, Some(Ok(_))));
            let entries: Vec<PartitionCheckpoint> = closed
                .iter()
                .filter_map(|r| match r {
                    Some(Ok(e)) | Some(Err(e)) => Some(e.clone()),
                    None => None,
                })
                .collect();
            if let Err(e) = writers[i].write(&*self.storage, dir, &entries) {
                tracing::warn!(dir = %dir.display(), error = %e,
                    "cannot write the checkpoints: the log dir is not marked clean");
                continue;
            }
            if !all_closed {
                tracing::warn!(dir = %dir.display(),
                    "not every log of the dir closed: it is not marked clean");
                continue;
            }
            if let Err(e) = log_dir::mark_clean_shutdown(&*self.storage, dir) {
                tracing::warn!(dir = %dir.display(), error = %e, "cannot write the clean-shutdown marker");
            }
        }
        for p in elsewhere {
            let _ = close_one(p, true);
        }
    }

    /// Partitions grouped by log dir (those outside every dir are left out).
    fn group(&self, partitions: impl Iterator<Item = Arc<Partition>>) -> Vec<Vec<Arc<Partition>>> {
        let mut by_dir: Vec<Vec<Arc<Partition>>> = self.dirs.iter().map(|_| Vec::new()).collect();
        for p in partitions {
            if let Some(i) = self.index_of(&p.dir()) {
                by_dir[i].push(p);
            }
        }
        by_dir
    }
}

/// A partition opened after startup (created, or added to a topic): whatever its directory
/// holds is recovered from its start, since the startup checkpoints may name an earlier topic
/// of the same name.
pub(crate) fn new_partition_state() -> PartitionState {
    PartitionState::Managed {
        recovery_point: 0,
        log_start_offset: 0,
        clean_shutdown: false,
    }
}

fn entry(p: &Partition) -> PartitionCheckpoint {
    let (recovery_point, log_start_offset) = p.checkpoint_offsets();
    PartitionCheckpoint {
        topic: p.topic.clone(),
        partition: p.index,
        recovery_point,
        log_start_offset,
    }
}

/// Closes a partition (with its fsyncs when `sync`, else leaving them to a `syncfs` of its log
/// dir), or flushes it if it is still shared. `Ok` carries its offsets after a close (recovery
/// point at the LEO, durable once synced); `Err` the offsets it was left with.
fn close_one(p: Arc<Partition>, sync: bool) -> Result<PartitionCheckpoint, PartitionCheckpoint> {
    match Arc::try_unwrap(p) {
        Ok(p) => {
            let before = entry(&p);
            let leo = p.log_end_offset();
            let (topic, index) = (p.topic.clone(), p.index);
            let closed = match sync {
                true => p.close(),
                false => p.close_unsynced(),
            };
            match closed {
                Ok(()) => Ok(PartitionCheckpoint {
                    recovery_point: leo,
                    ..before
                }),
                Err(e) => {
                    tracing::warn!(%topic, index, error = %e, "closing log failed");
                    Err(before)
                }
            }
        }
        Err(p) => {
            if let Err(e) = p.flush() {
                tracing::warn!(topic = %p.topic, index = p.index, error = %e, "flush failed");
            }
            tracing::warn!(topic = %p.topic, index = p.index, "log still in use at shutdown: flushed, not closed");
            Err(entry(&p))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `num.recovery.threads.per.data.dir` threads work on each dir's jobs at once, every dir
    /// at the same time, and the results come back in job order.
    #[test]
    fn each_dir_gets_its_own_threads() {
        let running: Vec<AtomicUsize> = (0..2).map(|_| AtomicUsize::new(0)).collect();
        let peak: Vec<AtomicUsize> = (0..2).map(|_| AtomicUsize::new(0)).collect();
        let groups: Vec<Vec<(usize, usize)>> =
            (0..2).map(|g| (0..24).map(|j| (g, j)).collect()).collect();
        let results = on_threads_per_dir(&groups, 3, |&(g, j)| {
            let now = running[g].fetch_add(1, Ordering::SeqCst) + 1;
            peak[g].fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(10));
            running[g].fetch_sub(1, Ordering::SeqCst);
            (g, j)
        });
        assert_eq!(results, groups);
        for p in &peak {
            assert_eq!(
                p.load(Ordering::SeqCst),
                3,
                "jobs of one dir running at once"
            );
        }
        // Never more threads than jobs.
        let one = on_threads_per_dir(&[vec![1]], 8, |&x| x * 2);
        assert_eq!(one, vec![vec![2]]);
    }
}
