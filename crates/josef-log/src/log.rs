//! The partition log: an ordered set of segments, the last one active (Kafka's `UnifiedLog` +
//! `LocalLog`, without replication).

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use crate::batch::{
    crc_is_valid, next_batch, set_base_offset, set_log_append_time, set_partition_leader_epoch,
    Next, BATCH_HEADER_LEN,
};
use crate::checkpoint::{self, CheckpointEntry};
use crate::config::{LogConfig, TimestampType};
use crate::error::LogError;
use crate::index::{AbortedTxn, TimestampOffset};
use crate::leader_epoch::LeaderEpochFileCache;
use crate::loader;
use crate::naming;
use crate::segment::{BatchPosition, LogSegment, RollParams};
use crate::storage::{self, FileRegion, Storage};

/// Where a log's recovery point, log start offset and clean-shutdown flag live.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum PartitionState {
    /// The log keeps them itself, in its partition directory: one-entry
    /// `recovery-point-offset-checkpoint` and `log-start-offset-checkpoint` files (Kafka's format)
    /// and a `.kafka_cleanshutdown` marker written by [`Log::close`] and removed by the next open.
    #[default]
    Standalone,
    /// A log manager keeps them per log dir, as Kafka does ([`crate::log_dir`]), and passes them
    /// in; the log then writes none of these files (only its `cleaner-offset-checkpoint`).
    Managed {
        /// Offset below which everything was flushed (from `recovery-point-offset-checkpoint`).
        recovery_point: i64,
        /// Log start offset (from `log-start-offset-checkpoint`; 0 if absent).
        log_start_offset: i64,
        /// Whether the log dir had a `.kafka_cleanshutdown` marker at startup.
        clean_shutdown: bool,
    },
}

/// What an append did (Kafka's `LogAppendInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogAppendInfo {
    /// Offset assigned to the first record.
    pub first_offset: i64,
    /// Offset of the last record.
    pub last_offset: i64,
    /// Largest timestamp of the appended batches (the append time with LogAppendTime).
    pub max_timestamp: i64,
    /// Last offset of the batch holding `max_timestamp`.
    pub offset_of_max_timestamp: i64,
    /// The broker time stamped into the batches with LogAppendTime, else -1.
    pub log_append_time: i64,
    /// Log start offset after the append.
    pub log_start_offset: i64,
    /// Number of batches appended.
    pub batch_count: usize,
    /// Bytes appended.
    pub valid_bytes: usize,
    /// Base offset of the new segment if the append rolled one.
    pub rolled_to: Option<i64>,
    /// The appended batches as stored (offsets, epoch and timestamps rewritten). Empty after an
    /// [`Log::append_as_leader_shared`] that wrote the caller's bytes without copying them
    /// (read them back with [`Log::read`]).
    pub records: Bytes,
}

/// What a read returned (Kafka's `FetchDataInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchDataInfo {
    /// The offset asked for.
    pub fetch_offset: i64,
    /// Base offset of the segment read from (-1 for an empty read at the end).
    pub segment_base_offset: i64,
    /// Byte position of the first batch in that segment.
    pub position: u32,
    /// Whole batches; the first one holds `fetch_offset` (and may start below it). Empty when
    /// they come as `region`.
    pub records: Bytes,
    /// The same whole batches as a range of the segment file ([`Log::read_region`] only).
    pub region: Option<FileRegion>,
    /// Base offset of the first batch returned.
    pub first_batch_base_offset: Option<i64>,
    /// The first batch was larger than `max_bytes` and `min_one_message` was off.
    pub first_entry_incomplete: bool,
}

impl FetchDataInfo {
    fn empty(fetch_offset: i64) -> Self {
        FetchDataInfo {
            fetch_offset,
            segment_base_offset: -1,
            position: 0,
            records: Bytes::new(),
            region: None,
            first_batch_base_offset: None,
            first_entry_incomplete: false,
        }
    }
}

/// One partition's log on disk.
///
/// ```
/// use josef_log::{Log, LogConfig};
/// let dir = tempfile::tempdir().unwrap();
/// let mut log = Log::open(dir.path().join("t-0"), LogConfig::default(), 0).unwrap();
/// assert_eq!((log.log_start_offset(), log.log_end_offset()), (0, 0));
/// log.close().unwrap();
/// ```
#[derive(Debug)]
pub struct Log {
    pub(crate) dir: PathBuf,
    /// Where the files are (the file system unless opened with [`Log::open_in`]).
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) config: LogConfig,
    pub(crate) segments: BTreeMap<i64, LogSegment>,
    pub(crate) log_start_offset: i64,
    pub(crate) log_end_offset: i64,
    pub(crate) high_watermark: i64,
    pub(crate) recovery_point: i64,
    pub(crate) last_flush_ms: i64,
    pub(crate) state: PartitionState,
    pub(crate) topic: String,
    pub(crate) partition: i32,
    /// Producer snapshot offsets present on disk.
    pub(crate) snapshots: BTreeMap<i64, PathBuf>,
    /// What the last open found (for tools and tests).
    pub(crate) load_report: LoadReport,
    /// Leader epoch → first offset, persisted in `leader-epoch-checkpoint`.
    pub(crate) leader_epoch_cache: LeaderEpochFileCache,
    /// Where the last compaction ended: offsets below are clean (`cleaner-offset-checkpoint`).
    pub(crate) cleaner_checkpoint: Option<i64>,
    /// Earliest delete horizon of tombstones or removable markers the last compaction kept: once
    /// it passes, the log is worth cleaning again even without new dirty data.
    pub(crate) next_delete_horizon_ms: Option<i64>,
    /// Deleted segments (renamed `.deleted`) waiting for `file.delete.delay.ms`, with the time
    /// their files may go.
    pub(crate) pending_deletes: Vec<(i64, LogSegment)>,
    /// The latest `now_ms` the log was given (deletions scheduled without a clock use it).
    pub(crate) last_now_ms: i64,
    /// Truncations so far (a `truncate_to` that removed records, a `truncate_fully_and_start_at`):
    /// a compaction prepared before one is never swapped in, as Kafka aborts the cleaning of a
    /// log it truncates (`abortAndPauseCleaning`). Comparing the sources' sizes is not enough: a
    /// follower truncated into a source segment can fetch it back to the same size and roll.
    pub(crate) truncations: u64,
    /// The open removed the clean-shutdown marker without fsyncing the directory: done before the
    /// first write instead, so an idle partition's open costs no fsync (one per partition was
    /// most of a clean restart with thousands of partitions, issue #22).
    pub(crate) marker_removal_unsynced: bool,
    /// What the standalone checkpoint files say (recovery point, log start offset), when known.
    pub(crate) checkpointed: Option<(i64, i64)>,
}

/// What [`Log::open`] did to bring the directory into a consistent state.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LoadReport {
    /// Whether a clean shutdown was recorded.
    pub clean_shutdown: bool,
    /// Base offsets of segments that were recovered (scanned and indexes rebuilt).
    pub recovered_segments: Vec<i64>,
    /// Bytes cut from torn or corrupt tails.
    pub truncated_bytes: u64,
    /// Base offsets of segments deleted because an earlier one was truncated.
    pub deleted_segments: Vec<i64>,
    /// Whether the directory holds Kafka's `partition.metadata` (the topic id, written by the
    /// broker): known from the listing the open makes anyway, so a broker can write a missing
    /// one without a lookup per partition.
    pub partition_metadata_exists: bool,
}

impl Log {
    /// Opens (creating if needed) the log in `dir` as a standalone log ([`PartitionState::Standalone`]),
    /// recovering it if it was not closed cleanly.
    pub fn open(dir: impl AsRef<Path>, config: LogConfig, now_ms: i64) -> Result<Log, LogError> {
        Self::open_with(dir, config, now_ms, PartitionState::Standalone)
    }

    /// Opens the log with its recovery point, start offset and clean-shutdown flag from `state`.
    pub fn open_with(
        dir: impl AsRef<Path>,
        config: LogConfig,
        now_ms: i64,
        state: PartitionState,
    ) -> Result<Log, LogError> {
        Self::open_in(storage::file_system(), dir, config, now_ms, state)
    }

    /// [`Log::open_with`] on any [`Storage`] (e.g. [`crate::storage::MemoryStorage`]): every file
    /// of the log goes through it, and everything else behaves as on disk.
    pub fn open_in(
        storage: Arc<dyn Storage>,
        dir: impl AsRef<Path>,
        config: LogConfig,
        now_ms: i64,
        state: PartitionState,
    ) -> Result<Log, LogError> {
        loader::load(storage, dir.as_ref(), config, now_ms, state)
    }

    /// The partition directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The storage holding the log's files.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// The configuration.
    pub fn config(&self) -> &LogConfig {
        &self.config
    }

    /// Replaces the configuration (topic config change); takes effect on the next append/roll.
    pub fn set_config(&mut self, config: LogConfig) -> Result<(), LogError> {
        config.validate()?;
        self.config = config;
        Ok(())
    }

    /// The first offset still readable.
    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset
    }

    /// The offset the next record will get (LEO).
    pub fn log_end_offset(&self) -> i64 {
        self.log_end_offset
    }

    /// The high watermark: offsets below it are committed and visible to consumers.
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }

    /// Offsets below the recovery point are known to be fsynced.
    pub fn recovery_point(&self) -> i64 {
        self.recovery_point
    }

    /// What the last open did.
    pub fn load_report(&self) -> &LoadReport {
        &self.load_report
    }

    /// The leader epoch cache (epoch → first offset), kept in `leader-epoch-checkpoint`.
    pub fn leader_epoch_cache(&self) -> &LeaderEpochFileCache {
        &self.leader_epoch_cache
    }

    /// The latest leader epoch written to the log, if any batch carried one.
    pub fn latest_epoch(&self) -> Option<i32> {
        self.leader_epoch_cache.latest_epoch()
    }

    /// OffsetsForLeaderEpoch: the largest epoch `<= epoch` known to this log and the offset where
    /// it ended (the LEO for the latest epoch); `(-1, -1)` when unknown (see
    /// [`LeaderEpochFileCache::end_offset_for`]).
    pub fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
        self.leader_epoch_cache
            .end_offset_for(epoch, self.log_end_offset)
    }

    /// Records that `epoch` starts at the LEO before any batch of it is written (Kafka's
    /// `assignEpochStartOffset`, done by a new leader so that a follower holding later entries of
    /// an older epoch finds where it diverges). Returns whether the cache changed.
    pub fn assign_epoch_start_offset(&mut self, epoch: i32) -> Result<bool, LogError> {
        let leo = self.log_end_offset;
        self.leader_epoch_cache.assign(epoch, leo)
    }

    /// Sets the high watermark, clamped to `[log_start_offset, log_end_offset]`; returns the value
    /// set. On a single node the broker sets it to the LEO after each append.
    pub fn update_high_watermark(&mut self, hw: i64) -> i64 {
        self.high_watermark = hw.clamp(self.log_start_offset, self.log_end_offset);
        self.high_watermark
    }

    /// Number of segments.
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }

    /// Base offsets of the segments, in order.
    pub fn segment_base_offsets(&self) -> Vec<i64> {
        self.segments.keys().copied().collect()
    }

    /// The segments, in order (for tools).
    pub fn segments(&self) -> impl Iterator<Item = &LogSegment> {
        self.segments.values()
    }

    /// Total size of all `.log` files.
    pub fn size_in_bytes(&self) -> u64 {
        self.segments.values().map(|s| u64::from(s.size())).sum()
    }

    pub(crate) fn active(&self) -> &LogSegment {
        // Invariant: a loaded log always has at least one segment.
        self.segments
            .values()
            .next_back()
            .expect("a log always has an active segment")
    }

    /// Makes the open's removal of the clean-shutdown marker durable. Called before anything is
    /// written to the segments: a power loss after a write must not bring the marker back, or
    /// the next open would trust what the write left half done. (A crash of the process alone
    /// already sees the marker gone.)
    fn sync_marker_removal(&mut self) -> Result<(), LogError> {
        if self.marker_removal_unsynced {
            checkpoint::sync_dir_in(&*self.storage, &self.dir)?;
            self.marker_removal_unsynced = false;
        }
        Ok(())
    }

    /// Assigns an epoch of appended batches. The append's flush (`flush.messages`) ran before
    /// it: an entry the recovery point already covers is synced at once, as Kafka's `assign`
    /// does, so that an acknowledged batch's epoch is as durable as the batch (see
    /// `LeaderEpochFileCache::assign`).
    fn assign_epoch(&mut self, epoch: i32, start_offset: i64) -> Result<(), LogError> {
        if self.leader_epoch_cache.assign(epoch, start_offset)?
            && self.recovery_point > start_offset
        {
            self.leader_epoch_cache.sync()?;
        }
        Ok(())
    }

    fn active_mut(&mut self) -> &mut LogSegment {
        self.segments
            .values_mut()
            .next_back()
            .expect("a log always has an active segment")
    }

    fn floor_segment(&self, offset: i64) -> Option<&LogSegment> {
        self.segments
            .range((Bound::Unbounded, Bound::Included(offset)))
            .next_back()
            .map(|(_, s)| s)
    }

    /// Appends one or more v2 batches as the leader: checks each batch (whole, magic 2, CRC,
    /// `record_count == last_offset_delta + 1`, size limits), assigns offsets from the LEO and the
    /// leader epoch in place (the CRC does not cover them), stamps the append time with
    /// LogAppendTime (recomputing the CRC), rolls if needed and writes the bytes as they are.
    pub fn append_as_leader(
        &mut self,
        records: BytesMut,
        leader_epoch: i32,
        now_ms: i64,
        timestamp_type: TimestampType,
    ) -> Result<LogAppendInfo, LogError> {
        self.append_leader_batches(records, leader_epoch, now_ms, timestamp_type, true)
    }

    /// [`Log::append_as_leader`] for batches whose CRC the caller has already checked, e.g. a broker
    /// that ran `josef_records::validate` on a producer's batch (Kafka checks a produced batch's CRC
    /// once, in its validator, not again in the log). Every other check still runs; the CRC, the
    /// costliest one, is not computed a second time, so a batch with a bad CRC is written as it is.
    pub fn append_as_leader_crc_checked(
        &mut self,
        records: BytesMut,
        leader_epoch: i32,
        now_ms: i64,
        timestamp_type: TimestampType,
    ) -> Result<LogAppendInfo, LogError> {
        self.append_leader_batches(records, leader_epoch, now_ms, timestamp_type, false)
    }

    /// [`Log::append_as_leader_crc_checked`] for batches the log may not modify, typically slices
    /// of a producer's request frame that other parts of the request still reference. Only each
    /// batch's 61-byte header is copied and given its offset and leader epoch; headers and the
    /// untouched record bodies are written together with one vectored write, so the records are
    /// never copied in memory. With LogAppendTime the CRC must be recomputed over the whole batch,
    /// so the batches are copied as [`Log::append_as_leader`] would, and so are appends under
    /// [`SHARED_APPEND_MIN`] bytes, for which a copy costs less than the extra write pieces.
    ///
    /// The returned [`LogAppendInfo::records`] is empty when the bytes were not copied: the
    /// written bytes are the caller's batches with the new headers, and [`Log::read`] returns them.
    pub fn append_as_leader_shared(
        &mut self,
        records: Bytes,
        leader_epoch: i32,
        now_ms: i64,
        timestamp_type: TimestampType,
    ) -> Result<LogAppendInfo, LogError> {
        // Small appends are cheaper to copy than to describe to the kernel piece by piece.
        if timestamp_type == TimestampType::LogAppendTime || records.len() < SHARED_APPEND_MIN {
            return self.append_as_leader_crc_checked(
                BytesMut::from(&records[..]),
                leader_epoch,
                now_ms,
                timestamp_type,
            );
        }
        let mut headers = Vec::new();
        let mut batches = Vec::new();
        let scan = self.assign_leader_offsets(
            &records,
            leader_epoch,
            -1,
            false,
            |pos, size, _base, patch| {
                let start = headers.len();
                headers.extend_from_slice(&records[pos..pos + BATCH_HEADER_LEN]);
                patch(&mut headers[start..])?;
                batches.push((pos, size));
                Ok(())
            },
        )?;
        let mut parts: Vec<&[u8]> = Vec::with_capacity(2 * batches.len());
        for (i, &(pos, size)) in batches.iter().enumerate() {
            parts.push(&headers[i * BATCH_HEADER_LEN..(i + 1) * BATCH_HEADER_LEN]);
            parts.push(&records[pos + BATCH_HEADER_LEN..pos + size]);
        }
        self.write_leader_append(&parts, &scan, leader_epoch, -1, now_ms, Bytes::new())
    }

    fn append_leader_batches(
        &mut self,
        mut records: BytesMut,
        leader_epoch: i32,
        now_ms: i64,
        timestamp_type: TimestampType,
        check_crc: bool,
    ) -> Result<LogAppendInfo, LogError> {
        let log_append_time = match timestamp_type {
            TimestampType::LogAppendTime => now_ms,
            TimestampType::CreateTime => -1,
        };
        // The scan reads the batches while the closure patches them: collect where they are,
        // then patch each in place.
        let mut batches = Vec::new();
        let scan = self.assign_leader_offsets(
            &records,
            leader_epoch,
            log_append_time,
            check_crc,
            |pos, size, base, _| {
                batches.push((pos, size, base));
                Ok(())
            },
        )?;
        for &(pos, size, base) in &batches {
            patch_leader_header(
                &mut records[pos..pos + size],
                base,
                leader_epoch,
                log_append_time,
            )?;
        }
        let records = records.freeze();
        self.write_leader_append(
            &[&records],
            &scan,
            leader_epoch,
            log_append_time,
            now_ms,
            records.clone(),
        )
    }

    /// Writes a checked leader append (`parts`, in order) and records its epoch.
    fn write_leader_append(
        &mut self,
        parts: &[&[u8]],
        scan: &LeaderScan,
        leader_epoch: i32,
        log_append_time: i64,
        now_ms: i64,
        records: Bytes,
    ) -> Result<LogAppendInfo, LogError> {
        let rolled_to = self.append_validated(
            parts,
            scan.first_offset,
            scan.last_offset,
            scan.max_timestamp,
            scan.offset_of_max_timestamp,
            now_ms,
        )?;
        // Every batch carries the same epoch: one entry at the first offset, if new.
        self.assign_epoch(leader_epoch, scan.first_offset)?;
        Ok(LogAppendInfo {
            first_offset: scan.first_offset,
            last_offset: scan.last_offset,
            max_timestamp: scan.max_timestamp,
            offset_of_max_timestamp: scan.offset_of_max_timestamp,
            log_append_time,
            log_start_offset: self.log_start_offset,
            batch_count: scan.batch_count,
            valid_bytes: scan.valid_bytes,
            rolled_to,
            records,
        })
    }

    /// Checks each batch of a leader append (whole, magic 2, CRC when asked, record count, size
    /// limits) and works out the offsets it gets from the LEO; calls `each(pos, size, base, patch)`
    /// per batch, where `base` is its new base offset and `patch` writes that offset, the epoch and
    /// the append time into a copy of its header (or into the batch itself).
    fn assign_leader_offsets(
        &self,
        records: &[u8],
        leader_epoch: i32,
        log_append_time: i64,
        check_crc: bool,
        mut each: impl FnMut(
            usize,
            usize,
            i64,
            &dyn Fn(&mut [u8]) -> Result<(), LogError>,
        ) -> Result<(), LogError>,
    ) -> Result<LeaderScan, LogError> {
        let first_offset = self.log_end_offset;
        let mut next = first_offset;
        let mut pos = 0usize;
        let mut batch_count = 0usize;
        let mut max_timestamp = crate::index::NO_TIMESTAMP;
        let mut offset_of_max_timestamp = first_offset;
        while pos < records.len() {
            let header = match next_batch(&records[pos..]) {
                Next::Batch(h) => h,
                Next::End => break,
                Next::Truncated => {
                    return Err(LogError::InvalidRecords(format!(
                        "partial batch at byte {pos} of the append"
                    )))
                }
                Next::Corrupt(why) => {
                    return Err(LogError::InvalidRecords(format!("byte {pos}: {why}")))
                }
            };
            let size = header.total_size();
            if size > self.config.max_message_bytes as usize {
                return Err(LogError::RecordTooLarge {
                    size,
                    max: self.config.max_message_bytes as usize,
                });
            }
            if check_crc && !crc_is_valid(&records[pos..pos + size], &header) {
                return Err(LogError::CorruptRecords(format!(
                    "CRC mismatch in batch at byte {pos}"
                )));
            }
            if header.record_count <= 0 || header.last_offset_delta != header.record_count - 1 {
                return Err(LogError::InvalidRecords(format!(
                    "batch at byte {pos} has {} records but last offset delta {}",
                    header.record_count, header.last_offset_delta
                )));
            }
            let base = next;
            each(pos, size, base, &|batch: &mut [u8]| {
                patch_leader_header(batch, base, leader_epoch, log_append_time)
            })?;
            let batch_max_ts = if log_append_time >= 0 {
                log_append_time
            } else {
                header.max_timestamp
            };
            let last = next + i64::from(header.last_offset_delta);
            if batch_max_ts > max_timestamp {
                max_timestamp = batch_max_ts;
                offset_of_max_timestamp = last;
            }
            next = last + 1;
            pos += size;
            batch_count += 1;
        }
        if batch_count == 0 {
            return Err(LogError::InvalidRecords("append holds no batch".into()));
        }
        Ok(LeaderScan {
            first_offset,
            last_offset: next - 1,
            max_timestamp,
            offset_of_max_timestamp,
            batch_count,
            valid_bytes: pos,
        })
    }

    /// Appends batches whose offsets were assigned elsewhere (a follower, or a tool rebuilding a
    /// log): each batch is checked (whole, CRC, offsets increasing from the LEO) and stored as is.
    pub fn append_as_follower(
        &mut self,
        records: Bytes,
        now_ms: i64,
    ) -> Result<LogAppendInfo, LogError> {
        let mut pos = 0usize;
        let mut expected = self.log_end_offset;
        let mut first_offset = None;
        let mut max_timestamp = crate::index::NO_TIMESTAMP;
        let mut offset_of_max_timestamp = self.log_end_offset;
        let mut batch_count = 0;
        while pos < records.len() {
            let header = match next_batch(&records[pos..]) {
                Next::Batch(h) => h,
                _ => return Err(LogError::InvalidRecords(format!("bad batch at byte {pos}"))),
            };
            let size = header.total_size();
            if !crc_is_valid(&records[pos..pos + size], &header) {
                return Err(LogError::CorruptRecords(format!(
                    "CRC mismatch in batch at byte {pos}"
                )));
            }
            if header.last_offset_delta < 0 {
                return Err(LogError::InvalidRecords(format!(
                    "invalid batch at byte {pos}"
                )));
            }
            if header.base_offset < expected {
                return Err(LogError::InvalidOffset(format!(
                    "batch base offset {} is below the expected {expected}",
                    header.base_offset
                )));
            }
            first_offset.get_or_insert(header.base_offset);
            if header.max_timestamp > max_timestamp {
                max_timestamp = header.max_timestamp;
                offset_of_max_timestamp = header.last_offset();
            }
            expected = header.next_offset();
            pos += size;
            batch_count += 1;
        }
        let Some(first_offset) = first_offset else {
            return Err(LogError::InvalidRecords("append holds no batch".into()));
        };
        let last_offset = expected - 1;
        // A gap before the first batch (compacted source) starts a segment at its base offset.
        let rolled_to = self.append_validated(
            &[&records],
            first_offset,
            last_offset,
            max_timestamp,
            offset_of_max_timestamp,
            now_ms,
        )?;
        // Kafka's rule: each batch's epoch starts at its base offset, if later than the latest.
        let mut pos = 0usize;
        while let Next::Batch(h) = next_batch(&records[pos..]) {
            self.assign_epoch(h.partition_leader_epoch, h.base_offset)?;
            pos += h.total_size();
        }
        Ok(LogAppendInfo {
            first_offset,
            last_offset,
            max_timestamp,
            offset_of_max_timestamp,
            log_append_time: -1,
            log_start_offset: self.log_start_offset,
            batch_count,
            valid_bytes: records.len(),
            rolled_to,
            records,
        })
    }

    fn append_validated(
        &mut self,
        parts: &[&[u8]],
        first_offset: i64,
        last_offset: i64,
        max_timestamp: i64,
        offset_of_max_timestamp: i64,
        now_ms: i64,
    ) -> Result<Option<i64>, LogError> {
        self.sync_marker_removal()?;
        self.last_now_ms = now_ms;
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len > self.config.segment_bytes as usize {
            return Err(LogError::RecordBatchTooLarge {
                size: len,
                max: self.config.segment_bytes as usize,
            });
        }
        let params = RollParams {
            max_timestamp_in_messages: max_timestamp,
            max_offset_in_messages: last_offset,
            messages_size: len,
            now_ms,
        };
        let config = self.config.clone();
        let rolled_to = if self.active_mut().should_roll(&params, &config)? {
            Some(self.roll(first_offset, now_ms)?)
        } else {
            None
        };
        self.active_mut().append_parts(
            last_offset,
            max_timestamp,
            offset_of_max_timestamp,
            parts,
        )?;
        self.log_end_offset = last_offset + 1;
        self.maybe_flush(now_ms)?;
        Ok(rolled_to)
    }

    /// Starts a new active segment at `max(new_base, LEO)`: the old one gets its final time index
    /// entry, trimmed indexes and an fsync, so the recovery point moves to the new base.
    pub fn roll(&mut self, new_base: i64, now_ms: i64) -> Result<i64, LogError> {
        self.sync_marker_removal()?;
        let new_base = new_base.max(self.log_end_offset);
        let active_base = self.active().base_offset();
        if active_base == new_base {
            if self.active().size() == 0 {
                return Ok(new_base);
            }
            return Err(LogError::InvalidOffset(format!(
                "cannot roll to {new_base}: the active segment already starts there"
            )));
        }
        {
            let old = self.active_mut();
            old.on_become_inactive()?;
        }
        self.flush()?;
        // Files left by an earlier, interrupted segment at the same base would be reused: clear.
        for p in [
            naming::log_file(&self.dir, new_base),
            naming::offset_index_file(&self.dir, new_base),
            naming::time_index_file(&self.dir, new_base),
            naming::txn_index_file(&self.dir, new_base),
        ] {
            let _ = self.storage.remove_file(&p);
        }
        let mut seg = LogSegment::open_in(
            self.storage.clone(),
            &self.dir,
            new_base,
            &self.config,
            now_ms,
        )?;
        seg.on_become_active()?;
        self.segments.insert(new_base, seg);
        checkpoint::sync_dir_in(&*self.storage, &self.dir)?;
        if self.log_end_offset < new_base {
            self.log_end_offset = new_base;
        }
        Ok(new_base)
    }

    /// Flushes when `flush.messages` offsets are unflushed or `flush.ms` passed since the last flush.
    pub fn maybe_flush(&mut self, now_ms: i64) -> Result<bool, LogError> {
        let unflushed = self.log_end_offset - self.recovery_point;
        let by_count = unflushed >= self.config.flush_messages;
        let by_time = unflushed > 0
            && self.config.flush_ms != i64::MAX
            && now_ms.saturating_sub(self.last_flush_ms) >= self.config.flush_ms;
        if by_count || by_time {
            self.flush()?;
            self.last_flush_ms = now_ms;
            return Ok(true);
        }
        Ok(false)
    }

    /// Fsyncs every segment holding unflushed offsets and moves the recovery point to the LEO. A
    /// standalone log also rewrites its recovery-point checkpoint.
    pub fn flush(&mut self) -> Result<(), LogError> {
        // Before the recovery point moves past the epochs it lists (see
        // `LeaderEpochFileCache::assign`).
        self.leader_epoch_cache.sync()?;
        if self.recovery_point >= self.log_end_offset {
            return Ok(());
        }
        let from = self
            .floor_segment(self.recovery_point)
            .map_or(i64::MIN, |s| s.base_offset());
        for (_, seg) in self.segments.range_mut(from..) {
            seg.flush()?;
        }
        self.recovery_point = self.log_end_offset;
        if self.state == PartitionState::Standalone {
            self.write_standalone_checkpoints()?;
        }
        Ok(())
    }

    /// Writes the recovery-point and log-start checkpoints, unless they already say the same
    /// (a close of an idle partition then writes nothing: two atomic writes, four fsyncs, per
    /// partition were most of a shutdown with thousands of them).
    pub(crate) fn write_standalone_checkpoints(&mut self) -> Result<(), LogError> {
        let now = (self.recovery_point, self.log_start_offset);
        if self.checkpointed == Some(now) {
            return Ok(());
        }
        // Unknown until both writes succeed.
        self.checkpointed = None;
        let entry = |offset| {
            vec![CheckpointEntry {
                topic: self.topic.clone(),
                partition: self.partition,
                offset,
            }]
        };
        checkpoint::write_offset_checkpoint_in(
            &*self.storage,
            &self.dir.join(naming::RECOVERY_POINT_CHECKPOINT_FILE),
            &entry(self.recovery_point),
        )?;
        checkpoint::write_offset_checkpoint_in(
            &*self.storage,
            &self.dir.join(naming::LOG_START_OFFSET_CHECKPOINT_FILE),
            &entry(self.log_start_offset),
        )?;
        self.checkpointed = Some(now);
        Ok(())
    }

    /// Reads whole batches from `start_offset`: at most `max_bytes` (but the first batch whole if
    /// `min_one_message`, so a consumer never gets stuck), and only batches that end below
    /// `max_offset_exclusive` (the HW or the LSO; pass the LEO to read everything).
    ///
    /// `start_offset` outside `[log_start_offset, log_end_offset]` is
    /// [`LogError::OffsetOutOfRange`]; at the LEO or the bound the result is empty.
    pub fn read(
        &self,
        start_offset: i64,
        max_bytes: usize,
        max_offset_exclusive: i64,
        min_one_message: bool,
    ) -> Result<FetchDataInfo, LogError> {
        self.read_as(
            start_offset,
            max_bytes,
            max_offset_exclusive,
            min_one_message,
            false,
        )
    }

    /// [`Log::read`], but the batches come as a [`FileRegion`] of the segment file
    /// (`FetchDataInfo::region`, `records` empty) when the storage keeps a descriptor (the file
    /// system), for a fetch that sends them unread with `sendfile`; the same batches, bounds and
    /// sizes as [`Log::read`]. Otherwise (memory storage) the bytes, as [`Log::read`].
    pub fn read_region(
        &self,
        start_offset: i64,
        max_bytes: usize,
        max_offset_exclusive: i64,
        min_one_message: bool,
    ) -> Result<FetchDataInfo, LogError> {
        self.read_as(
            start_offset,
            max_bytes,
            max_offset_exclusive,
            min_one_message,
            true,
        )
    }

    fn read_as(
        &self,
        start_offset: i64,
        max_bytes: usize,
        max_offset_exclusive: i64,
        min_one_message: bool,
        region: bool,
    ) -> Result<FetchDataInfo, LogError> {
        self.check_in_range(start_offset)?;
        let bound = max_offset_exclusive.min(self.log_end_offset);
        if start_offset >= bound {
            return Ok(FetchDataInfo::empty(start_offset));
        }
        // The byte position the bound maps to: reads stop before the batch holding it.
        let (bound_base, bound_pos) = self.position_of(bound)?;
        let from = self
            .floor_segment(start_offset)
            .map_or(i64::MIN, |s| s.base_offset());
        for (&base, seg) in self.segments.range(from..) {
            if base > bound_base {
                break;
            }
            let max_pos = if base == bound_base {
                bound_pos
            } else {
                seg.size()
            };
            let read = if region {
                seg.read_region(start_offset, max_bytes, max_pos, min_one_message)?
            } else {
                seg.read(start_offset, max_bytes, max_pos, min_one_message)?
            };
            if let Some(r) = read {
                let has_batches = !r.records.is_empty() || r.region.is_some();
                let first_batch_base_offset = has_batches.then_some(r.first.base_offset);
                return Ok(FetchDataInfo {
                    fetch_offset: start_offset,
                    segment_base_offset: base,
                    position: r.position,
                    records: r.records,
                    region: r.region,
                    first_batch_base_offset,
                    first_entry_incomplete: r.first_entry_incomplete,
                });
            }
        }
        Ok(FetchDataInfo::empty(start_offset))
    }

    /// Offset lookup: the base offset of the segment and the byte position of the first batch
    /// whose last offset is `>= offset` (via the offset index, then a short scan); `None` past the
    /// last batch.
    pub fn translate_offset(&self, offset: i64) -> Result<Option<(i64, BatchPosition)>, LogError> {
        let from = self
            .floor_segment(offset)
            .map_or(i64::MIN, |s| s.base_offset());
        for (&base, seg) in self.segments.range(from..) {
            if let Some(b) = seg.translate_offset(offset, 0)? {
                return Ok(Some((base, b)));
            }
        }
        Ok(None)
    }

    /// The segment and byte position where the batch holding `offset` starts (the segment end if
    /// `offset` is past its last batch).
    fn position_of(&self, offset: i64) -> Result<(i64, u32), LogError> {
        let Some(seg) = self.floor_segment(offset) else {
            return Ok((i64::MIN, 0));
        };
        let pos = match seg.translate_offset(offset, 0)? {
            Some(b) => b.position,
            None => seg.size(),
        };
        Ok((seg.base_offset(), pos))
    }

    fn check_in_range(&self, offset: i64) -> Result<(), LogError> {
        if offset < self.log_start_offset || offset > self.log_end_offset {
            return Err(LogError::OffsetOutOfRange {
                offset,
                log_start_offset: self.log_start_offset,
                log_end_offset: self.log_end_offset,
            });
        }
        Ok(())
    }

    /// All batches from the one holding `start_offset` to the LEO, each with its bytes, collected
    /// (see [`Log::iter_batches_from`] to hold one batch at a time).
    pub fn batches_from(&self, start_offset: i64) -> Result<Vec<(BatchPosition, Bytes)>, LogError> {
        self.iter_batches_from(start_offset)
            .map(|r| r.map(|(_, b, bytes)| (b, bytes)))
            .collect()
    }

    /// Iterates the batches from the one holding `start_offset` to the LEO, each with its segment
    /// and bytes, one batch in memory at a time (for a caller rebuilding producer state after
    /// [`Log::open`], from the offset of [`Log::latest_producer_snapshot`]).
    pub fn iter_batches_from(&self, start_offset: i64) -> LogBatches<'_> {
        let start_offset = start_offset.max(self.log_start_offset);
        let from = self
            .floor_segment(start_offset)
            .map_or(i64::MIN, |s| s.base_offset());
        LogBatches {
            log: self,
            bases: self.segments.range(from..).map(|(&b, _)| b).collect(),
            next_segment: 0,
            position: None,
            start_offset,
        }
    }

    /// The first record with timestamp `>= timestamp` at or above the log start offset (ListOffsets
    /// with a timestamp), via the time and offset indexes. The caller applies the HW/LSO bound.
    pub fn fetch_offset_by_timestamp(
        &self,
        timestamp: i64,
    ) -> Result<Option<TimestampOffset>, LogError> {
        for seg in self.segments.values() {
            if seg.max_timestamp_so_far().timestamp >= timestamp {
                return seg.find_offset_by_timestamp(timestamp, self.log_start_offset);
            }
        }
        Ok(None)
    }

    /// The first record carrying the log's largest timestamp (ListOffsets `-3`, MAX_TIMESTAMP).
    pub fn offset_of_max_timestamp(&self) -> Result<Option<TimestampOffset>, LogError> {
        let mut best: Option<&LogSegment> = None;
        for seg in self.segments.values() {
            let ts = seg.max_timestamp_so_far().timestamp;
            if ts >= 0 && best.is_none_or_lower(ts) {
                best = Some(seg);
            }
        }
        match best {
            Some(seg) => seg.find_offset_by_timestamp(
                seg.max_timestamp_so_far().timestamp,
                self.log_start_offset,
            ),
            None => Ok(None),
        }
    }

    /// Records an aborted transaction in the `.txnindex` of the segment holding its ABORT marker
    /// (`txn.last_offset`, which must be below the LEO). Call it right after appending the marker;
    /// telling the same transaction twice is harmless.
    pub fn append_aborted_txn(&mut self, txn: AbortedTxn) -> Result<(), LogError> {
        self.sync_marker_removal()?;
        if txn.last_offset >= self.log_end_offset || txn.last_offset < self.log_start_offset {
            return Err(LogError::OffsetOutOfRange {
                offset: txn.last_offset,
                log_start_offset: self.log_start_offset,
                log_end_offset: self.log_end_offset,
            });
        }
        let base = self
            .floor_segment(txn.last_offset)
            .map(|s| s.base_offset())
            .ok_or_else(|| {
                LogError::InvalidOffset(format!("no segment holds {}", txn.last_offset))
            })?;
        self.segments
            .get_mut(&base)
            .ok_or_else(|| LogError::InvalidOffset(format!("no segment at {base}")))?
            .append_aborted_txn(txn)
    }

    /// Aborted transactions a read_committed fetch of `[fetch_offset, upper_bound_offset)` must
    /// report, collected across segments from the one holding `fetch_offset`.
    pub fn collect_aborted_transactions(
        &self,
        fetch_offset: i64,
        upper_bound_offset: i64,
    ) -> Vec<AbortedTxn> {
        let from = self
            .floor_segment(fetch_offset)
            .map_or(i64::MIN, |s| s.base_offset());
        let mut out = Vec::new();
        for (_, seg) in self.segments.range(from..) {
            let r = seg.collect_aborted_txns(fetch_offset, upper_bound_offset);
            out.extend(r.aborted);
            if r.is_complete {
                break;
            }
        }
        out
    }

    /// Deletes whole closed segments by retention: those entirely below the log start offset,
    /// then by `retention.ms` (largest timestamp older than `now_ms - retention.ms`) and by
    /// `retention.bytes`, oldest first, never the active segment and never data at or above the
    /// high watermark. Advances the log start offset. Returns how many segments were deleted.
    pub fn delete_old_segments(&mut self, now_ms: i64) -> Result<usize, LogError> {
        self.last_now_ms = now_ms;
        self.delete_expired_files(now_ms)?;
        let mut deleted = self.delete_segments_while(|log, seg, next_base| {
            next_base <= log.log_start_offset && seg.base_offset() < log.log_start_offset
        })?;
        if !self.config.cleanup_policy.deletes() {
            return Ok(deleted);
        }
        let retention_ms = self.config.retention_ms;
        if retention_ms >= 0 {
            deleted += self.delete_segments_while(|_, seg, _| {
                now_ms.saturating_sub(seg.largest_timestamp()) > retention_ms
            })?;
        }
        let retention_bytes = self.config.retention_bytes;
        if retention_bytes >= 0 {
            let mut excess = self.size_in_bytes() as i64 - retention_bytes;
            deleted += self.delete_segments_while(|_, seg, _| {
                if excess - i64::from(seg.size()) >= 0 {
                    excess -= i64::from(seg.size());
                    true
                } else {
                    false
                }
            })?;
        }
        Ok(deleted)
    }

    /// Deletes the oldest segments while `pred(log, segment, next_segment_base)` holds, stopping at
    /// the active segment and at segments reaching the high watermark.
    fn delete_segments_while(
        &mut self,
        mut pred: impl FnMut(&Log, &LogSegment, i64) -> bool,
    ) -> Result<usize, LogError> {
        let mut to_delete = Vec::new();
        let bases: Vec<i64> = self.segments.keys().copied().collect();
        for w in bases.windows(2) {
            let (base, next_base) = (w[0], w[1]);
            let seg = &self.segments[&base];
            if next_base > self.high_watermark || !pred(self, seg, next_base) {
                break;
            }
            to_delete.push(base);
        }
        let n = to_delete.len();
        for base in to_delete {
            if let Some(seg) = self.segments.remove(&base) {
                self.schedule_delete(seg)?;
            }
        }
        if n > 0 {
            let first = self.active_or_first_base();
            if self.log_start_offset < first {
                self.log_start_offset = first;
            }
            self.leader_epoch_cache
                .truncate_from_start(self.log_start_offset)?;
            self.delete_snapshots_below(first)?;
            if self.state == PartitionState::Standalone {
                self.write_standalone_checkpoints()?;
            }
        }
        Ok(n)
    }

    fn active_or_first_base(&self) -> i64 {
        self.segments
            .keys()
            .next()
            .copied()
            .unwrap_or(self.log_end_offset)
    }

    /// DeleteRecords: moves the log start offset up to `offset` (which must not exceed the high
    /// watermark) and deletes the segments entirely below it. Returns the new log start offset.
    pub fn delete_records_before(&mut self, offset: i64) -> Result<i64, LogError> {
        if offset > self.high_watermark || offset < 0 {
            return Err(LogError::OffsetOutOfRange {
                offset,
                log_start_offset: self.log_start_offset,
                log_end_offset: self.high_watermark,
            });
        }
        if offset > self.log_start_offset {
            self.log_start_offset = offset;
            self.leader_epoch_cache.truncate_from_start(offset)?;
            if self.state == PartitionState::Standalone {
                self.write_standalone_checkpoints()?;
            }
            self.delete_segments_while(|log, _, next_base| next_base <= log.log_start_offset)?;
        }
        Ok(self.log_start_offset)
    }

    /// Takes a segment out of the log (Kafka's `deleteSegmentFiles` with async delete): its files
    /// are renamed `.deleted` at once, so a crash leaves nothing that looks live (the next open
    /// removes them), and removed after `file.delete.delay.ms` by [`Log::delete_expired_files`].
    /// Reads never hold a segment beyond the call that reads it (they return copies), and a
    /// compaction task holds its own descriptors, which stay valid after the rename and the unlink.
    pub(crate) fn schedule_delete(&mut self, mut seg: LogSegment) -> Result<(), LogError> {
        seg.change_file_suffixes("", naming::DELETED_FILE_SUFFIX)?;
        if self.config.file_delete_delay_ms <= 0 {
            return seg.delete();
        }
        let due = self
            .last_now_ms
            .saturating_add(self.config.file_delete_delay_ms);
        self.pending_deletes.push((due, seg));
        Ok(())
    }

    /// Removes the files of deleted segments whose `file.delete.delay.ms` has passed (also done by
    /// [`Log::delete_old_segments`]). Returns how many segments' files were removed.
    pub fn delete_expired_files(&mut self, now_ms: i64) -> Result<usize, LogError> {
        self.last_now_ms = now_ms;
        let mut n = 0;
        let mut i = 0;
        while i < self.pending_deletes.len() {
            if self.pending_deletes[i].0 <= now_ms {
                let (_, seg) = self.pending_deletes.swap_remove(i);
                seg.delete()?;
                n += 1;
            } else {
                i += 1;
            }
        }
        Ok(n)
    }

    /// Deleted segments whose files are still on disk (renamed `.deleted`), waiting for
    /// `file.delete.delay.ms`.
    pub fn pending_deletions(&self) -> usize {
        self.pending_deletes.len()
    }

    /// Where the last compaction ended (`cleaner-offset-checkpoint`): offsets below are clean.
    /// `None` if the log was never compacted.
    pub fn cleaner_checkpoint(&self) -> Option<i64> {
        self.cleaner_checkpoint
    }

    /// Sets the cleaner checkpoint and writes it to the partition's `cleaner-offset-checkpoint`.
    pub fn set_cleaner_checkpoint(&mut self, offset: Option<i64>) -> Result<(), LogError> {
        self.cleaner_checkpoint = offset;
        self.write_cleaner_checkpoint()
    }

    /// A one-entry `cleaner-offset-checkpoint` in the partition directory (also for a managed
    /// log: it changes only when a compaction ends or a truncation passes it).
    pub(crate) fn write_cleaner_checkpoint(&self) -> Result<(), LogError> {
        let path = self.dir.join(naming::CLEANER_OFFSET_CHECKPOINT_FILE);
        let entries: Vec<CheckpointEntry> = self
            .cleaner_checkpoint
            .map(|offset| CheckpointEntry {
                topic: self.topic.clone(),
                partition: self.partition,
                offset,
            })
            .into_iter()
            .collect();
        checkpoint::write_offset_checkpoint_in(&*self.storage, &path, &entries)
    }

    /// Removes every offset `>= offset` (whole batches; for a follower diverging from its leader).
    /// Truncating below the log start offset empties the log and restarts it at `offset`.
    pub fn truncate_to(&mut self, offset: i64, now_ms: i64) -> Result<(), LogError> {
        self.sync_marker_removal()?;
        if offset >= self.log_end_offset {
            // Nothing to remove but a leader epoch that starts at the LEO: a replica that became
            // leader (which records its epoch's start) and was deposed before appending. Left
            // there, it would be this replica's last fetched epoch, unknown to the new leader,
            // and every fetch would diverge again (Kafka's `UnifiedLog.truncateTo` does the same).
            let leo = self.log_end_offset;
            return self.leader_epoch_cache.truncate_from_end(leo);
        }
        self.truncations += 1;
        if offset < self.log_start_offset {
            return self.truncate_fully_and_start_at(offset, now_ms);
        }
        let doomed: Vec<i64> = self.segments.range(offset + 1..).map(|(&b, _)| b).collect();
        let keep_base = self.floor_segment(offset).map(|s| s.base_offset());
        for base in doomed {
            if Some(base) == keep_base {
                continue;
            }
            if let Some(seg) = self.segments.remove(&base) {
                self.schedule_delete(seg)?;
            }
        }
        let Some(keep_base) = keep_base else {
            return self.truncate_fully_and_start_at(offset, now_ms);
        };
        let seg = self
            .segments
            .get_mut(&keep_base)
            .ok_or_else(|| LogError::InvalidOffset(format!("no segment at {keep_base}")))?;
        let removed = seg.truncate_to(offset)?;
        seg.on_become_active()?;
        self.log_end_offset = removed.map_or(offset, |b| b.min(offset));
        if self.log_end_offset < self.log_start_offset {
            // The removed batch straddled the log start: nothing visible is left.
            let start = self.log_start_offset;
            return self.truncate_fully_and_start_at(start, now_ms);
        }
        self.high_watermark = self.high_watermark.min(self.log_end_offset);
        self.recovery_point = self.recovery_point.min(self.log_end_offset);
        self.leader_epoch_cache
            .truncate_from_end(self.log_end_offset)?;
        if self
            .cleaner_checkpoint
            .is_some_and(|c| c > self.log_end_offset)
        {
            self.cleaner_checkpoint = Some(self.log_end_offset);
            self.write_cleaner_checkpoint()?;
        }
        self.delete_snapshots_above(self.log_end_offset)?;
        Ok(())
    }

    /// Deletes every segment and starts an empty log at `offset`.
    pub fn truncate_fully_and_start_at(
        &mut self,
        offset: i64,
        now_ms: i64,
    ) -> Result<(), LogError> {
        self.sync_marker_removal()?;
        self.last_now_ms = now_ms;
        self.truncations += 1;
        let all: Vec<i64> = self.segments.keys().copied().collect();
        for base in all {
            if let Some(seg) = self.segments.remove(&base) {
                self.schedule_delete(seg)?;
            }
        }
        self.cleaner_checkpoint = None;
        let mut seg = LogSegment::open_in(
            self.storage.clone(),
            &self.dir,
            offset,
            &self.config,
            now_ms,
        )?;
        seg.on_become_active()?;
        self.segments.insert(offset, seg);
        self.log_start_offset = offset;
        self.log_end_offset = offset;
        self.high_watermark = offset;
        self.recovery_point = offset;
        self.leader_epoch_cache.clear_and_flush()?;
        self.write_cleaner_checkpoint()?;
        // Every snapshot goes, the one at or below `offset` too (Kafka's
        // `ProducerStateManager.truncateFullyAndStartAt`): it describes a history this log no
        // longer holds, and a rebuild at the next open would load its producers' sequences.
        let all: Vec<i64> = self.snapshots.keys().copied().collect();
        self.remove_snapshots(&all)?;
        if self.state == PartitionState::Standalone {
            self.write_standalone_checkpoints()?;
        }
        Ok(())
    }

    /// Stores a producer-state snapshot taken at `offset` (the caller's bytes, opaque to the log) as
    /// `<offset>.snapshot`, atomically.
    pub fn write_producer_snapshot(&mut self, offset: i64, bytes: &[u8]) -> Result<(), LogError> {
        let path = naming::producer_snapshot_file(&self.dir, offset);
        checkpoint::write_file_atomically_in(&*self.storage, &path, bytes)?;
        self.snapshots.insert(offset, path);
        Ok(())
    }

    /// [`Log::write_producer_snapshot`] without fsync, before a [`Log::close_unsynced`]: a
    /// snapshot a power failure damaged fails its CRC check at the next open, and the producer
    /// state is then rebuilt from the log instead.
    pub fn write_producer_snapshot_unsynced(
        &mut self,
        offset: i64,
        bytes: &[u8],
    ) -> Result<(), LogError> {
        let path = naming::producer_snapshot_file(&self.dir, offset);
        self.storage
            .write_replacing(&path, bytes)
            .map_err(|e| LogError::io(&path, e))?;
        self.snapshots.insert(offset, path);
        Ok(())
    }

    /// The newest producer snapshot at or below the LEO, with its offset.
    pub fn latest_producer_snapshot(&self) -> Result<Option<(i64, Bytes)>, LogError> {
        let Some((&offset, path)) = self.snapshots.range(..=self.log_end_offset).next_back() else {
            return Ok(None);
        };
        let bytes = self.storage.read(path).map_err(|e| LogError::io(path, e))?;
        Ok(Some((offset, Bytes::from(bytes))))
    }

    /// Offsets of the producer snapshots on disk.
    pub fn producer_snapshot_offsets(&self) -> Vec<i64> {
        self.snapshots.keys().copied().collect()
    }

    fn delete_snapshots_above(&mut self, offset: i64) -> Result<(), LogError> {
        let doomed: Vec<i64> = self
            .snapshots
            .range(offset + 1..)
            .map(|(&o, _)| o)
            .collect();
        self.remove_snapshots(&doomed)
    }

    /// Deletes snapshots below `offset`, always keeping the newest one.
    fn delete_snapshots_below(&mut self, offset: i64) -> Result<(), LogError> {
        let newest = self.snapshots.keys().next_back().copied();
        let doomed: Vec<i64> = self
            .snapshots
            .range(..offset)
            .map(|(&o, _)| o)
            .filter(|&o| Some(o) != newest)
            .collect();
        self.remove_snapshots(&doomed)
    }

    fn remove_snapshots(&mut self, offsets: &[i64]) -> Result<(), LogError> {
        for o in offsets {
            if let Some(p) = self.snapshots.remove(o) {
                storage::remove_if_exists(&*self.storage, &p).map_err(|e| LogError::io(&p, e))?;
            }
        }
        Ok(())
    }

    /// Closes the log: final time index entry and trimmed indexes on the active segment, fsync of
    /// everything, recovery point = LEO. A standalone log then writes its checkpoints and the
    /// `.kafka_cleanshutdown` marker (`{"version":0,"brokerEpoch":-1}`), so the next open trusts
    /// the indexes instead of scanning. A caller that keeps producer state should
    /// [`Log::write_producer_snapshot`] at the LEO before closing, as Kafka does.
    pub fn close(mut self) -> Result<(), LogError> {
        self.flush()?;
        let standalone = self.state == PartitionState::Standalone;
        let dir = self.dir.clone();
        if standalone {
            self.write_standalone_checkpoints()?;
        }
        // `flush` above made every segment's data durable (the recovery point is at the LEO).
        self.close_segments(true)?;
        if standalone {
            crate::loader::write_clean_shutdown_marker_in(&*self.storage, &dir)?;
        }
        Ok(())
    }

    /// [`Log::close`] without a single fsync, for a caller that closes many logs and then makes
    /// them all durable at once with [`crate::storage::Storage::sync_file_system`] before it
    /// writes the recovery points (at the LEO) and the clean-shutdown marker that vouch for
    /// them: Kafka's shutdown fsyncs every log (on `num.recovery.threads.per.data.dir`
    /// threads); one `syncfs` per log dir does the same work without a call and a journal
    /// commit per file, which were most of a SIGTERM with 10,000 partitions holding data
    /// (issue #22). Until then a crash leaves the previous checkpoints, which recover the
    /// unsynced data as after any unclean stop. A standalone log writes its own checkpoints and
    /// marker, so it is closed with [`Log::close`].
    pub fn close_unsynced(mut self) -> Result<(), LogError> {
        if self.state == PartitionState::Standalone {
            return self.close();
        }
        self.close_segments(false)
    }

    /// Closes every segment (final time index entry, trimmed and materialized indexes, synced
    /// only when `sync_indexes`) and deletes those scheduled for deletion.
    fn close_segments(&mut self, sync_indexes: bool) -> Result<(), LogError> {
        for (_, seg) in std::mem::take(&mut self.segments) {
            match sync_indexes {
                true => seg.close_flushed()?,
                false => seg.close_unsynced()?,
            }
        }
        // Nothing reads the log any more: scheduled deletions need not wait.
        for (_, seg) in std::mem::take(&mut self.pending_deletes) {
            seg.delete()?;
        }
        Ok(())
    }
}

/// Iterator over a log's batches (see [`Log::iter_batches_from`]): segment base offset, batch header
/// and position, and the batch bytes.
#[derive(Debug)]
pub struct LogBatches<'a> {
    log: &'a Log,
    bases: Vec<i64>,
    next_segment: usize,
    /// Position in the current segment (`bases[next_segment - 1]`), `None` before it is located.
    position: Option<u32>,
    start_offset: i64,
}

impl Iterator for LogBatches<'_> {
    type Item = Result<(i64, BatchPosition, Bytes), LogError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let Some(pos) = self.position else {
                let base = *self.bases.get(self.next_segment)?;
                self.next_segment += 1;
                let seg = self.log.segments.get(&base)?;
                match seg.translate_offset(self.start_offset, 0) {
                    Ok(Some(b)) => self.position = Some(b.position),
                    Ok(None) => continue,
                    Err(e) => {
                        self.next_segment = self.bases.len();
                        return Some(Err(e));
                    }
                }
                continue;
            };
            let base = self.bases[self.next_segment - 1];
            let seg = self.log.segments.get(&base)?;
            let item = seg.batch_at(pos).and_then(|b| match b {
                None => Ok(None),
                Some(b) => seg
                    .read_bytes(b.position, b.header.total_size())
                    .map(|bytes| Some((b, bytes))),
            });
            match item {
                Ok(Some((b, bytes))) => {
                    self.position = Some(pos + b.header.total_size() as u32);
                    return Some(Ok((base, b, bytes)));
                }
                Ok(None) => self.position = None,
                Err(e) => {
                    self.next_segment = self.bases.len();
                    self.position = None;
                    return Some(Err(e));
                }
            }
        }
    }
}

trait LowerThan {
    fn is_none_or_lower(&self, ts: i64) -> bool;
}

impl LowerThan for Option<&LogSegment> {
    fn is_none_or_lower(&self, ts: i64) -> bool {
        self.map_or(true, |s| s.max_timestamp_so_far().timestamp < ts)
    }
}

/// Renames a segment's files to `.deleted` (so a crash leaves nothing that looks live), then
/// removes them at once (used while loading, before anything can read the segment).
pub(crate) fn delete_segment(mut seg: LogSegment) -> Result<(), LogError> {
    seg.change_file_suffixes("", naming::DELETED_FILE_SUFFIX)?;
    seg.delete()
}

/// Appends smaller than this are copied by [`Log::append_as_leader_shared`].
pub const SHARED_APPEND_MIN: usize = 4096;

/// What [`Log::assign_leader_offsets`] found in a leader append.
struct LeaderScan {
    first_offset: i64,
    last_offset: i64,
    max_timestamp: i64,
    offset_of_max_timestamp: i64,
    batch_count: usize,
    valid_bytes: usize,
}

/// Gives a batch (or a copy of its header, when `log_append_time` is -1) its base offset and
/// leader epoch, which the CRC does not cover, and with LogAppendTime the append time, which it
/// does (the CRC is then recomputed, so the whole batch is needed).
fn patch_leader_header(
    batch: &mut [u8],
    base_offset: i64,
    leader_epoch: i32,
    log_append_time: i64,
) -> Result<(), LogError> {
    set_base_offset(batch, base_offset)?;
    set_partition_leader_epoch(batch, leader_epoch)?;
    if log_append_time >= 0 {
        set_log_append_time(batch, log_append_time)?;
    }
    Ok(())
}
