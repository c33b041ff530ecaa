//! Opening a partition directory (Kafka's `LogLoader`): clean up interrupted operations, load the
//! segments, recover what may be torn, and settle the offsets.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::checkpoint::{read_offset_checkpoint_in, sync_dir_in};
use crate::config::LogConfig;
use crate::error::LogError;
use crate::leader_epoch::{LeaderEpochFileCache, LEADER_EPOCH_CHECKPOINT_FILE};
use crate::log::{delete_segment, LoadReport, Log, PartitionState};
use crate::naming::{self, offset_from_file_name};
use crate::segment::{AbsentFiles, LogSegment};
use crate::storage::{self, FileStorage, Storage};

/// Contents of the clean-shutdown marker (Kafka's `CleanShutdownFileHandler` format; a standalone
/// log has no broker epoch, hence -1).
pub const CLEAN_SHUTDOWN_CONTENT: &str = "{\"version\":0,\"brokerEpoch\":-1}";

/// Writes the `.kafka_cleanshutdown` marker in `dir`, once everything else is durable.
///
/// Nothing is fsynced: an open only asks whether the marker exists, and the data it vouches for
/// was made durable before it was created, so a marker lost to a power failure only costs a
/// recovery it did not need, and one that survives is true whatever its bytes. (An fsynced atomic
/// write per partition was most of a shutdown with thousands of partitions, issue #22.)
pub fn write_clean_shutdown_marker(dir: &Path) -> Result<(), LogError> {
    write_clean_shutdown_marker_in(&FileStorage, dir)
}

/// [`write_clean_shutdown_marker`] on any [`Storage`].
pub fn write_clean_shutdown_marker_in(storage: &dyn Storage, dir: &Path) -> Result<(), LogError> {
    let path = dir.join(naming::CLEAN_SHUTDOWN_FILE);
    let bytes = CLEAN_SHUTDOWN_CONTENT.as_bytes();
    let f = storage
        .open_file(&path, true)
        .map_err(|e| LogError::io(&path, e))?;
    f.write_all_at(&[bytes], 0)
        .and_then(|()| f.set_len(bytes.len() as u64))
        .map_err(|e| LogError::io(&path, e))
}

fn remove_if_exists(storage: &dyn Storage, p: &Path) -> Result<(), LogError> {
    storage::remove_if_exists(storage, p).map_err(|e| LogError::io(p, e))
}

pub(crate) fn load(
    storage: Arc<dyn Storage>,
    dir: &Path,
    config: LogConfig,
    now_ms: i64,
    state: PartitionState,
) -> Result<Log, LogError> {
    config.validate()?;
    let st: &dyn Storage = &*storage;
    st.create_dir_all(dir).map_err(|e| LogError::io(dir, e))?;
    let dir_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (topic, partition) =
        naming::parse_topic_partition(&dir_name).unwrap_or_else(|| (dir_name.replace(' ', "_"), 0));

    // 1. Where the log stood: clean shutdown, recovery point, log start offset.
    let (clean_shutdown, checkpoint_recovery_point, checkpoint_log_start) = match &state {
        PartitionState::Managed {
            recovery_point,
            log_start_offset,
            clean_shutdown,
        } => (*clean_shutdown, *recovery_point, *log_start_offset),
        PartitionState::Standalone => {
            let marker = dir.join(naming::CLEAN_SHUTDOWN_FILE);
            let clean = st.exists(&marker);
            let pick = |file: &str| -> Result<i64, LogError> {
                let entries = read_offset_checkpoint_in(st, &dir.join(file))?;
                Ok(entries
                    .iter()
                    .find(|e| e.topic == topic && e.partition == partition)
                    .or(entries.first())
                    .map_or(0, |e| e.offset))
            };
            // A malformed checkpoint only costs a longer recovery.
            let rp = pick(naming::RECOVERY_POINT_CHECKPOINT_FILE).unwrap_or(0);
            let lso = pick(naming::LOG_START_OFFSET_CHECKPOINT_FILE).unwrap_or(0);
            // The marker is consumed by this open: a crash from now on must trigger recovery. The
            // removal is made durable before the first write (`Log::sync_marker_removal`).
            if clean {
                remove_if_exists(st, &marker)?;
            }
            (clean, rp, lso)
        }
    };
    let mut report = LoadReport {
        clean_shutdown,
        ..LoadReport::default()
    };

    // 2. Clean up leftovers of interrupted operations and list what is there.
    let mut log_bases = Vec::new();
    let mut swap_bases = Vec::new();
    let mut index_files: Vec<(i64, PathBuf)> = Vec::new();
    let mut snapshots = BTreeMap::new();
    let names = st.read_dir(dir).map_err(|e| LogError::io(dir, e))?;
    // What the listing shows is not asked of the storage again: a new partition's directory is
    // empty, and looking up or reading each file it might hold (indexes, leader epochs, cleaner
    // checkpoint) cost more system calls than creating it (issue #22).
    let listed: std::collections::HashSet<String> = names.iter().cloned().collect();
    report.partition_metadata_exists = listed.contains(naming::PARTITION_METADATA_FILE);
    for name in names {
        let path = dir.join(&name);
        if name.ends_with(naming::TMP_FILE_SUFFIX)
            || name.ends_with(naming::CLEANED_FILE_SUFFIX)
            || name.ends_with(naming::DELETED_FILE_SUFFIX)
        {
            remove_if_exists(st, &path)?;
            continue;
        }
        let Some(base) = offset_from_file_name(&name) else {
            continue;
        };
        if name.ends_with(naming::SWAP_FILE_SUFFIX) {
            if name.ends_with(&format!(
                "{}{}",
                naming::LOG_FILE_SUFFIX,
                naming::SWAP_FILE_SUFFIX
            )) {
                swap_bases.push(base);
            }
            continue;
        }
        if name.ends_with(naming::LOG_FILE_SUFFIX) {
            log_bases.push(base);
        } else if name.ends_with(naming::PRODUCER_SNAPSHOT_FILE_SUFFIX) {
            snapshots.insert(base, path);
        } else if name.ends_with(naming::INDEX_FILE_SUFFIX)
            || name.ends_with(naming::TIME_INDEX_FILE_SUFFIX)
            || name.ends_with(naming::TXN_INDEX_FILE_SUFFIX)
        {
            index_files.push((base, path));
        }
    }
    log_bases.sort_unstable();
    swap_bases.sort_unstable();

    // 3. Complete interrupted swaps of cleaned segments: the `.swap` log is authoritative; the
    //    segments it replaces (offsets within its range) are deleted, then it is renamed in place.
    for &base in &swap_bases {
        let mut swap = LogSegment::open_with_suffix(
            storage.clone(),
            dir,
            base,
            &config,
            now_ms,
            naming::SWAP_FILE_SUFFIX,
            AbsentFiles::UNKNOWN,
        )?;
        let r = swap.recover()?;
        let end = r.next_offset.max(base + 1);
        drop(swap);
        for &old in log_bases.iter().filter(|&&b| b >= base && b < end) {
            let seg = LogSegment::open_in(storage.clone(), dir, old, &config, now_ms)?;
            delete_segment(seg)?;
        }
        log_bases.retain(|&b| !(b >= base && b < end));
        for suffix in [
            naming::LOG_FILE_SUFFIX,
            naming::INDEX_FILE_SUFFIX,
            naming::TIME_INDEX_FILE_SUFFIX,
            naming::TXN_INDEX_FILE_SUFFIX,
        ] {
            let final_path = naming::file_for(dir, base, suffix);
            let mut swap_path = final_path.clone().into_os_string();
            swap_path.push(naming::SWAP_FILE_SUFFIX);
            let swap_path = PathBuf::from(swap_path);
            if st.exists(&swap_path) {
                st.rename(&swap_path, &final_path)
                    .map_err(|e| LogError::io(&swap_path, e))?;
            }
        }
        log_bases.push(base);
        log_bases.sort_unstable();
        report.recovered_segments.push(base);
    }
    if !swap_bases.is_empty() {
        sync_dir_in(st, dir)?;
    }

    // Index files without a `.log` belong to nothing.
    for (base, path) in &index_files {
        if log_bases.binary_search(base).is_err() {
            remove_if_exists(st, path)?;
        }
    }

    // After an unclean stop, the segment holding the recovery point and every later one are
    //    recovered (step 5); the earlier ones were fsynced before the recovery point passed them
    //    and are only checked (Kafka's `LogLoader.recoverLog`).
    let recover_from = (!clean_shutdown).then(|| {
        log_bases
            .iter()
            .rev()
            .find(|&&b| b <= checkpoint_recovery_point)
            .copied()
            .unwrap_or(i64::MIN)
    });

    // 4. Load the segments. After a clean shutdown the indexes are trusted once they pass the
    //    sanity check; a missing or failing index is rebuilt.
    let mut segments: BTreeMap<i64, LogSegment> = BTreeMap::new();
    // The first segment whose tail was cut: everything after it is beyond the valid prefix.
    let mut first_cut: Option<i64> = None;
    // Swaps renamed files after the listing: then it no longer says what is absent.
    let absent = |base: i64| match swap_bases.is_empty() {
        true => AbsentFiles {
            offset_index: !listed.contains(&file_name(base, naming::INDEX_FILE_SUFFIX)),
            time_index: !listed.contains(&file_name(base, naming::TIME_INDEX_FILE_SUFFIX)),
            txn_index: !listed.contains(&file_name(base, naming::TXN_INDEX_FILE_SUFFIX)),
        },
        false => AbsentFiles::UNKNOWN,
    };
    for &base in &log_bases {
        let mut seg =
            LogSegment::open_listed(storage.clone(), dir, base, &config, now_ms, absent(base))?;
        if recover_from.is_some_and(|from| base >= from) {
            // Rebuilt by step 5 whatever its indexes say: checking them would only read them.
            segments.insert(base, seg);
            continue;
        }
        // An empty segment needs no index file: the files are created by their first entry, so
        // a new partition's segment has none.
        let indexes_exist = seg.size() == 0 || !seg.index_file_was_missing();
        // A segment with data always has a time index entry (its max timestamp is appended on
        // roll, close and recovery), so an empty time index means a lost file.
        let time_index_lost = seg.size() > 0 && seg.time_index().entries() == 0;
        let indexes_ok = indexes_exist
            && !time_index_lost
            && seg.sanity_check().is_ok()
            && (clean_shutdown || seg.full_index_check().is_ok());
        if !indexes_ok {
            let r = seg.recover()?;
            report.recovered_segments.push(base);
            report.truncated_bytes += r.truncated_bytes;
            if r.truncated_bytes > 0 {
                first_cut.get_or_insert(base);
            }
        }
        segments.insert(base, seg);
    }

    // 5. After an unclean stop, recover every segment from the one holding the recovery point;
    //    a truncated segment ends the log (later segments are deleted).
    if let Some(from) = recover_from {
        let bases: Vec<i64> = segments.range(from..).map(|(&b, _)| b).collect();
        for (i, &base) in bases.iter().enumerate() {
            if first_cut.is_some_and(|c| base > c) {
                break;
            }
            let seg = segments
                .get_mut(&base)
                .ok_or_else(|| LogError::InvalidOffset(format!("segment {base} vanished")))?;
            let r = seg.recover()?;
            if !report.recovered_segments.contains(&base) {
                report.recovered_segments.push(base);
            }
            report.truncated_bytes += r.truncated_bytes;
            let next_base = bases.get(i + 1).copied();
            // A segment that was cut, or whose offsets run into the next one, ends the log.
            if r.truncated_bytes > 0 || next_base.is_some_and(|n| r.next_offset > n) {
                first_cut = Some(first_cut.map_or(base, |c| c.min(base)));
                break;
            }
        }
    }
    if let Some(cut) = first_cut {
        let later: Vec<i64> = segments.range(cut + 1..).map(|(&b, _)| b).collect();
        for base in later {
            if let Some(seg) = segments.remove(&base) {
                delete_segment(seg)?;
                report.deleted_segments.push(base);
            }
        }
    }

    // 6. Settle the offsets. Empty segments other than the last carry no data; keep them (Kafka
    //    does) since their base offsets are still valid.
    let first_base = segments.keys().next().copied();
    let mut log_start_offset = match first_base {
        Some(b) => checkpoint_log_start.max(b),
        None => checkpoint_log_start.max(0),
    };
    let mut log_end_offset = match segments.values().next_back() {
        Some(seg) => seg.read_next_offset()?,
        None => log_start_offset,
    };
    if segments.is_empty() || log_start_offset > log_end_offset {
        // Nothing usable (or DeleteRecords moved past everything): start empty at the log start.
        let all: Vec<i64> = segments.keys().copied().collect();
        for base in all {
            if let Some(seg) = segments.remove(&base) {
                delete_segment(seg)?;
            }
        }
        log_start_offset = log_start_offset.max(0);
        log_end_offset = log_start_offset;
        // Nothing is left at this base: index files without a `.log` were removed above, and
        // deleted segments took theirs.
        segments.insert(
            log_start_offset,
            LogSegment::open_listed(
                storage.clone(),
                dir,
                log_start_offset,
                &config,
                now_ms,
                AbsentFiles::ALL,
            )?,
        );
    }
    if let Some(active) = segments.values_mut().next_back() {
        active.on_become_active()?;
    }
    for seg in segments.values_mut() {
        seg.unmap_indexes();
    }

    // 7. Recovery that found everything intact is not made durable here: the recovery point stays
    //    where the checkpoint put it (Kafka's `LogLoader.recoverLog`), so a crash before the next
    //    flush recovers the same segments again. Fsyncing every recovered segment cost four
    //    fsyncs per partition, most of a restart after kill -9 with thousands of partitions
    //    (issue #22). A recovery that cut a segment or deleted later ones is made durable at once:
    //    after a power failure the deleted segments must not come back behind new appends.
    if report.truncated_bytes > 0 || !report.deleted_segments.is_empty() {
        for base in &report.recovered_segments {
            if let Some(seg) = segments.get_mut(base) {
                seg.flush()?;
            }
        }
        sync_dir_in(st, dir)?;
    }
    let recovery_point = if clean_shutdown {
        log_end_offset
    } else {
        checkpoint_recovery_point
            .max(log_start_offset)
            .min(log_end_offset)
    };

    // Snapshots past the end describe data that is gone.
    let stale: Vec<i64> = snapshots
        .range(log_end_offset + 1..)
        .map(|(&o, _)| o)
        .collect();
    for o in stale {
        if let Some(p) = snapshots.remove(&o) {
            remove_if_exists(st, &p)?;
        }
    }

    // 8. The leader epoch cache: entries past the LEO or before the log start are stale; segments
    //    that recovery scanned re-assign their batches' epochs (Kafka's `LogSegment.recover`), and
    //    a directory without the file (written before it existed) is rebuilt from every batch.
    let epoch_file_exists = listed.contains(LEADER_EPOCH_CHECKPOINT_FILE);
    // A malformed file is rebuilt like a missing one.
    let opened = match epoch_file_exists {
        true => LeaderEpochFileCache::open_in(storage.clone(), dir),
        false => Ok(LeaderEpochFileCache::empty_in(storage.clone(), dir)),
    };
    let (mut leader_epoch_cache, rebuild_all) = match opened {
        // An empty file in a log with data is what a power failure can leave of a file
        // `assign` replaced without fsync: it is not trusted either.
        Ok(c) => {
            let untrusted = !epoch_file_exists || c.read_an_empty_file();
            (c, untrusted && log_end_offset > log_start_offset)
        }
        Err(_) => (LeaderEpochFileCache::empty_in(storage.clone(), dir), true),
    };
    leader_epoch_cache.truncate_from_end(log_end_offset)?;
    let rescan: Vec<i64> = if rebuild_all {
        segments.keys().copied().collect()
    } else {
        let mut r = report.recovered_segments.clone();
        r.sort_unstable();
        r
    };
    for base in rescan {
        let Some(seg) = segments.get(&base) else {
            continue;
        };
        for b in seg.batches_from(0) {
            let h = b?.header;
            let e = h.partition_leader_epoch;
            if e >= 0 && leader_epoch_cache.latest_epoch().map_or(true, |l| e > l) {
                leader_epoch_cache.assign(e, h.base_offset)?;
            }
        }
    }
    leader_epoch_cache.truncate_from_start(log_start_offset)?;
    // The file marks the epochs as known for the batches there are (a log from before epochs
    // has none and is rescanned whole); an empty log has nothing to mark until its first
    // epoch is assigned, which writes the file. A rebuilt file is synced at once: it lists
    // epochs of data the recovery point may already cover.
    if rebuild_all && log_end_offset > log_start_offset {
        leader_epoch_cache.flush()?;
    }

    // 9. Where the last compaction ended: kept in the partition directory whatever the state,
    //    since it changes only when a compaction ends and so costs nothing per idle partition.
    let cleaner_checkpoint = listed
        .contains(naming::CLEANER_OFFSET_CHECKPOINT_FILE)
        .then(|| read_offset_checkpoint_in(st, &dir.join(naming::CLEANER_OFFSET_CHECKPOINT_FILE)))
        .and_then(|r| r.ok())
        .and_then(|e| {
            e.iter()
                .find(|e| e.topic == topic && e.partition == partition)
                .or(e.first())
                .map(|e| e.offset)
        })
        .filter(|&c| c >= log_start_offset && c <= log_end_offset);

    let state_is_standalone = state == PartitionState::Standalone;
    let marker_removal_unsynced = clean_shutdown && state_is_standalone;
    let mut log = Log {
        dir: dir.to_path_buf(),
        storage,
        config,
        segments,
        log_start_offset,
        log_end_offset,
        high_watermark: log_end_offset,
        recovery_point,
        last_flush_ms: now_ms,
        state,
        topic,
        partition,
        snapshots,
        load_report: report,
        leader_epoch_cache,
        cleaner_checkpoint,
        next_delete_horizon_ms: None,
        pending_deletes: Vec::new(),
        last_now_ms: now_ms,
        truncations: 0,
        marker_removal_unsynced,
        checkpointed: match state_is_standalone {
            // A missing or unreadable checkpoint reads as 0, which is what was used.
            true => Some((checkpoint_recovery_point, checkpoint_log_start)),
            false => None,
        },
    };
    // What the checkpoints already say is not written again: a new partition (nothing on disk,
    // a missing checkpoint reads as 0) and a clean restart (recovery point at the log end) cost
    // no file writes, which is most of what creating or reopening thousands of partitions costs.
    if state_is_standalone {
        log.write_standalone_checkpoints()?;
    }
    Ok(log)
}

/// The name of the file of the segment based at `base` with `suffix`, as a listing shows it.
fn file_name(base: i64, suffix: &str) -> String {
    format!("{}{suffix}", naming::filename_prefix_from_offset(base))
}
