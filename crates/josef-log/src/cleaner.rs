//! Log compaction (Kafka's `LogCleaner`, `LogCleanerManager` and `Cleaner`), for
//! `cleanup.policy=compact`.
//!
//! Compaction works in three steps so that appends are never blocked for long:
//! 1. [`Log::prepare_compaction`] (`&self`, quick): decides whether the log is worth cleaning and
//!    takes its own file handles on the cleanable segments;
//! 2. [`CompactionTask::run`] (no access to the log, slow; run it on another thread): builds the
//!    key → latest offset map of the dirty segments and writes every segment that changes as
//!    `<base>.log.cleaned` (plus indexes), fsynced;
//! 3. [`Log::finish_compaction`] (`&mut self`, quick): if the source segments are unchanged, each
//!    cleaned segment is renamed to `.swap`, the old segment deleted and the `.swap` renamed in
//!    place; the cleaner checkpoint moves to the end of the cleaned range. A crash at any point is
//!    completed or undone by [`Log::open`].
//!
//! [`Log::compact`] runs the three in a row.
//!
//! Which logs are cleaned (Kafka's `LogCleanerManager`):
//! - the cleanable range is the closed segments below the bound given (the LSO, so that open
//!   transactions are never cleaned) and below the recovery point, stopping at the first segment
//!   whose data is younger than `min.compaction.lag.ms`;
//! - its part from the cleaner checkpoint (`cleaner-offset-checkpoint`) on is dirty, the part
//!   below is clean; the log is cleaned when dirty / (clean + dirty) bytes is above
//!   `min.cleanable.dirty.ratio` (Kafka compares with `>`), or its oldest dirty data is older than
//!   `max.compaction.lag.ms`, or the delete horizon of a tombstone or marker kept by the last run
//!   has passed (this last trigger is ours: Kafka removes them at the next run the other two
//!   trigger; it is kept in memory only, so after a restart they wait for such a run too).
//!
//! What is kept (Kafka's `Cleaner.cleanInto` and `MemoryRecords.filterTo`): the offset map is built
//! from the dirty segments only; every cleanable segment (clean ones too) is then filtered:
//! - a record is kept if it has a key and no later offset of that key is in the map; keyless
//!   records are dropped;
//! - a tombstone (null value) is kept until its batch's delete horizon: the first run that keeps
//!   it stamps the batch with `now + delete.retention.ms` (the v2 delete-horizon flag and base
//!   timestamp); a later run after that time drops it;
//! - data batches of aborted transactions (from the `.txnindex`) are dropped; an ABORT marker is
//!   kept while any batch of its transaction remains, a COMMIT marker while any batch of its
//!   transaction was seen in this run; a marker that is no longer needed is stamped with a delete
//!   horizon and dropped once it passed (with its `.txnindex` entry);
//! - a batch that would lose all its records is kept empty (same offsets, producer id, epoch and
//!   sequence) if it carries the last sequence of an active producer, so producer state survives;
//!   the caller tells which producers are active ([`CompactionTask::with_active_producers`],
//!   Kafka's `lastRecordsOfActiveProducers`); without that, the last batch of every producer in
//!   the cleaned range is kept (a superset);
//! - a batch that keeps all its records and needs no new horizon is copied byte for byte; one that
//!   changes is rebuilt with the same base offset, last offset, producer fields, codec and epoch.
//!   A segment in which nothing changes is not rewritten.
//!
//! Not done, documented: segments are not merged (Kafka groups small cleaned segments), and the
//! offset map holds whole keys in memory without `log.cleaner.dedupe.buffer.size` bounding it.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use josef_records::{
    ControlRecordType, DecompressLimits, Record, RecordBatch, RecordBatchBuilder, TimestampType,
};

use crate::batch::{crc_is_valid, next_batch, BatchHeader, Next, BATCH_HEADER_LEN};
use crate::cleaner_manager::Dirtiness;
use crate::config::LogConfig;
use crate::error::LogError;
use crate::index::AbortedTxn;
use crate::log::Log;
use crate::naming;
use crate::segment::LogSegment;
use crate::storage::{self, Storage, StorageFile};

/// What the cleaner needs to know of an active producer (Kafka's `LastRecord`): the last offset
/// of its newest data batch, if it has one, and its epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastRecord {
    /// Last offset of the producer's newest data batch (`None` if its newest entry is a marker).
    pub last_data_offset: Option<i64>,
    /// The producer's current epoch.
    pub producer_epoch: i16,
}

/// One cleanable segment as the cleaner sees it.
#[derive(Debug)]
struct SourceSegment {
    base_offset: i64,
    /// Base offset of the next segment: every offset of this one is below it.
    next_base: i64,
    file: Box<dyn StorageFile>,
    path: PathBuf,
    size: u32,
    /// This segment's `.txnindex` entries before cleaning.
    txn_entries: Vec<AbortedTxn>,
}

/// Work prepared by [`Log::prepare_compaction`], run without the log by [`CompactionTask::run`].
#[derive(Debug)]
pub struct CompactionTask {
    dir: PathBuf,
    storage: Arc<dyn Storage>,
    config: LogConfig,
    now_ms: i64,
    sources: Vec<SourceSegment>,
    first_dirty_offset: i64,
    end_offset: i64,
    /// Aborted transactions overlapping the cleaned range, by first offset.
    aborted: Vec<AbortedTxn>,
    active_producers: Option<HashMap<i64, LastRecord>>,
    /// The log's truncation count when the task was prepared.
    truncations: u64,
}

/// Cleaned segments ready to be swapped in by [`Log::finish_compaction`].
#[derive(Debug)]
pub struct CompactionResult {
    /// Base offset and original size of every segment rewritten.
    cleaned: Vec<(i64, u32)>,
    /// Base offset and size of every source, to check nothing moved meanwhile.
    sources: Vec<(i64, u32)>,
    end_offset: i64,
    next_delete_horizon_ms: Option<i64>,
    now_ms: i64,
    stats: CompactionStats,
    /// See [`CompactionTask`]'s.
    truncations: u64,
}

/// What a compaction did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactionStats {
    /// Segments rewritten (those in which something changed).
    pub segments: usize,
    /// Segments read.
    pub segments_read: usize,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written (of rewritten segments).
    pub bytes_written: u64,
    /// Records read.
    pub records_read: u64,
    /// Records kept.
    pub records_kept: u64,
    /// Where the dirty range began (the cleaner checkpoint, or the log start).
    pub first_dirty_offset: i64,
    /// End of the cleaned range: the new cleaner checkpoint.
    pub end_offset: i64,
    /// Whether the result was applied (false when the log changed meanwhile).
    pub swapped: bool,
}

/// What [`Log::prepare_compaction`] decided before opening the source segments.
struct CleaningPlan {
    /// `(base, next_base)` of each cleanable segment.
    picked: Vec<(i64, i64)>,
    first_dirty: i64,
    end_offset: i64,
    dirtiness: Dirtiness,
}

impl Log {
    /// Decides whether the log needs cleaning (see the module docs) and, if so, picks the
    /// cleanable segments: closed, wholly below `max_offset` (pass the last stable offset, so that
    /// undecided transactions are never cleaned) and the recovery point. Returns `None` when the
    /// log is not compacted or not worth cleaning now.
    pub fn prepare_compaction(
        &self,
        now_ms: i64,
        max_offset: i64,
    ) -> Result<Option<CompactionTask>, LogError> {
        let Some(plan) = self.plan_compaction(now_ms, max_offset)? else {
            return Ok(None);
        };
        let CleaningPlan {
            picked,
            first_dirty,
            end_offset,
            ..
        } = plan;
        let mut sources = Vec::with_capacity(picked.len());
        for &(base, next_base) in &picked {
            let seg = &self.segments[&base];
            let path = seg.log_path().to_path_buf();
            let file = self
                .storage
                .open_file(&path, false)
                .map_err(|e| LogError::io(&path, e))?;
            sources.push(SourceSegment {
                base_offset: base,
                next_base,
                file,
                path,
                size: seg.size(),
                txn_entries: seg.txn_index().entries().to_vec(),
            });
        }
        let mut aborted = self.collect_aborted_transactions(self.log_start_offset, end_offset);
        aborted.sort_by_key(|t| t.first_offset);
        Ok(Some(CompactionTask {
            dir: self.dir.clone(),
            storage: self.storage.clone(),
            config: self.config.clone(),
            now_ms,
            sources,
            first_dirty_offset: first_dirty,
            end_offset,
            aborted,
            active_producers: None,
            truncations: self.truncations,
        }))
    }

    /// Whether the log needs cleaning now (the test [`Log::prepare_compaction`] makes, with the
    /// same arguments) and how much, for the cleaner threads to pick the filthiest log first.
    pub fn cleanable(&self, now_ms: i64, max_offset: i64) -> Result<Option<Dirtiness>, LogError> {
        Ok(self
            .plan_compaction(now_ms, max_offset)?
            .map(|p| p.dirtiness))
    }

    fn plan_compaction(
        &self,
        now_ms: i64,
        max_offset: i64,
    ) -> Result<Option<CleaningPlan>, LogError> {
        if !self.config.cleanup_policy.compacts() {
            return Ok(None);
        }
        let first_dirty = self
            .cleaner_checkpoint
            .filter(|&c| c >= self.log_start_offset && c <= self.log_end_offset)
            .unwrap_or(self.log_start_offset);
        let bound = max_offset.min(self.recovery_point);
        let bases: Vec<i64> = self.segments.keys().copied().collect();
        let mut picked: Vec<(i64, i64)> = Vec::new();
        for w in bases.windows(2) {
            let (base, next_base) = (w[0], w[1]);
            if next_base > bound {
                break;
            }
            let seg = &self.segments[&base];
            // Kafka's min.compaction.lag.ms applies to dirty segments only.
            let dirty = next_base > first_dirty;
            if dirty
                && now_ms.saturating_sub(seg.largest_timestamp())
                    < self.config.min_compaction_lag_ms
            {
                break;
            }
            picked.push((base, next_base));
        }
        let Some(&(_, end_offset)) = picked.last() else {
            return Ok(None);
        };
        let (mut clean_bytes, mut dirty_bytes) = (0u64, 0u64);
        let mut first_dirty_timestamp: Option<i64> = None;
        for &(base, next_base) in &picked {
            let seg = &self.segments[&base];
            if next_base > first_dirty {
                dirty_bytes += u64::from(seg.size());
                if first_dirty_timestamp.is_none() {
                    if let Some(b) = seg.batches_from(0).next() {
                        first_dirty_timestamp = Some(b?.header.max_timestamp);
                    }
                }
            } else {
                clean_bytes += u64::from(seg.size());
            }
        }
        let ratio_reached = dirty_bytes > 0
            && dirty_bytes * 100
                > u64::from(self.config.min_cleanable_dirty_ratio_percent)
                    * (clean_bytes + dirty_bytes);
        let must_clean = dirty_bytes > 0
            && first_dirty_timestamp.is_some_and(|ts| {
                ts >= 0 && now_ms.saturating_sub(ts) > self.config.max_compaction_lag_ms
            });
        let horizon_passed = self.next_delete_horizon_ms.is_some_and(|h| h <= now_ms);
        if !(ratio_reached || must_clean || horizon_passed) {
            return Ok(None);
        }
        let total = clean_bytes + dirty_bytes;
        Ok(Some(CleaningPlan {
            picked,
            first_dirty,
            end_offset,
            dirtiness: Dirtiness {
                overdue: must_clean,
                dirty_ratio: if total == 0 {
                    0.0
                } else {
                    dirty_bytes as f64 / total as f64
                },
            },
        }))
    }

    /// Swaps cleaned segments in and moves the cleaner checkpoint, if the sources are still in the
    /// log unchanged; otherwise the cleaned files are deleted and `swapped` is false.
    pub fn finish_compaction(
        &mut self,
        result: CompactionResult,
    ) -> Result<CompactionStats, LogError> {
        let mut stats = result.stats;
        self.last_now_ms = result.now_ms;
        // A truncation meanwhile aborts the cleaning, whatever the sources look like now.
        let unchanged = result.truncations == self.truncations
            && result
                .sources
                .iter()
                .all(|(base, size)| self.segments.get(base).is_some_and(|s| s.size() == *size))
            && self.segments.range(result.end_offset..).next().is_some();
        if !unchanged {
            for (base, _) in &result.cleaned {
                remove_with_suffix(
                    &*self.storage,
                    &self.dir,
                    *base,
                    naming::CLEANED_FILE_SUFFIX,
                )?;
            }
            stats.swapped = false;
            return Ok(stats);
        }
        for (base, _) in &result.cleaned {
            // .cleaned -> .swap marks the cleaned segment as complete: from here a crash is
            // finished by the loader, which deletes the old segment and renames the swap.
            rename_suffix(
                &*self.storage,
                &self.dir,
                *base,
                naming::CLEANED_FILE_SUFFIX,
                naming::SWAP_FILE_SUFFIX,
            )?;
        }
        if !result.cleaned.is_empty() {
            crate::checkpoint::sync_dir_in(&*self.storage, &self.dir)?;
        }
        for (base, _) in &result.cleaned {
            if let Some(old) = self.segments.remove(base) {
                self.schedule_delete(old)?;
            }
            rename_suffix(
                &*self.storage,
                &self.dir,
                *base,
                naming::SWAP_FILE_SUFFIX,
                "",
            )?;
            let seg = LogSegment::open_in(
                self.storage.clone(),
                &self.dir,
                *base,
                &self.config,
                result.now_ms,
            )?;
            self.segments.insert(*base, seg);
        }
        if !result.cleaned.is_empty() {
            crate::checkpoint::sync_dir_in(&*self.storage, &self.dir)?;
        }
        self.cleaner_checkpoint = Some(result.end_offset);
        self.write_cleaner_checkpoint()?;
        self.next_delete_horizon_ms = result.next_delete_horizon_ms;
        stats.swapped = true;
        Ok(stats)
    }

    /// Compacts in one call, if the log needs it (see the module docs for the split form that
    /// keeps the log available meanwhile). `max_offset` bounds the cleaned range: the last stable
    /// offset when transactions may be open; [`Log::compact`] passes the high watermark.
    pub fn compact_below(
        &mut self,
        now_ms: i64,
        max_offset: i64,
    ) -> Result<Option<CompactionStats>, LogError> {
        let Some(task) = self.prepare_compaction(now_ms, max_offset)? else {
            return Ok(None);
        };
        let result = task.run()?;
        self.finish_compaction(result).map(Some)
    }

    /// Compacts below the high watermark, if the log needs it (for logs without transactions).
    pub fn compact(&mut self, now_ms: i64) -> Result<Option<CompactionStats>, LogError> {
        let hw = self.high_watermark;
        self.compact_below(now_ms, hw)
    }
}

fn file_with_suffix(dir: &Path, base: i64, ext: &str, suffix: &str) -> PathBuf {
    let mut p = naming::file_for(dir, base, ext).into_os_string();
    p.push(suffix);
    PathBuf::from(p)
}

const EXTENSIONS: [&str; 4] = [
    naming::LOG_FILE_SUFFIX,
    naming::INDEX_FILE_SUFFIX,
    naming::TIME_INDEX_FILE_SUFFIX,
    naming::TXN_INDEX_FILE_SUFFIX,
];

fn rename_suffix(
    storage: &dyn Storage,
    dir: &Path,
    base: i64,
    from: &str,
    to: &str,
) -> Result<(), LogError> {
    // The log file goes last into `.swap` (the loader keys on it) and first out of it.
    let order: Vec<&str> = if to == naming::SWAP_FILE_SUFFIX {
        EXTENSIONS.iter().rev().copied().collect()
    } else {
        EXTENSIONS.to_vec()
    };
    for ext in order {
        let src = file_with_suffix(dir, base, ext, from);
        let dst = file_with_suffix(dir, base, ext, to);
        match storage.rename(&src, &dst) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(LogError::io(&src, e)),
        }
    }
    Ok(())
}

fn remove_with_suffix(
    storage: &dyn Storage,
    dir: &Path,
    base: i64,
    suffix: &str,
) -> Result<(), LogError> {
    for ext in EXTENSIONS {
        let p = file_with_suffix(dir, base, ext, suffix);
        storage::remove_if_exists(storage, &p).map_err(|e| LogError::io(&p, e))?;
    }
    Ok(())
}

/// Reads a source segment one batch at a time (one batch in memory, whatever the segment size).
struct SourceBatches<'a> {
    src: &'a SourceSegment,
    pos: u32,
}

impl Iterator for SourceBatches<'_> {
    type Item = Result<(BatchHeader, Bytes), LogError>;

    fn next(&mut self) -> Option<Self::Item> {
        let src = self.src;
        if self.pos >= src.size {
            return None;
        }
        let pos = self.pos;
        let fail = |why: &str| {
            Some(Err(LogError::InvalidRecords(format!(
                "cannot compact {}: {why} at {pos}",
                src.path.display()
            ))))
        };
        let avail = (src.size - pos) as usize;
        let n = avail.min(BATCH_HEADER_LEN);
        let mut header_buf = [0u8; BATCH_HEADER_LEN];
        if let Err(e) = src.file.read_exact_at(&mut header_buf[..n], u64::from(pos)) {
            self.pos = src.size;
            return Some(Err(LogError::io(&src.path, e)));
        }
        let header = match BatchHeader::parse(&header_buf[..n]) {
            Ok(h) if h.total_size() <= avail => h,
            _ => {
                self.pos = src.size;
                return fail("bad batch");
            }
        };
        // Bounded by the file size checked above.
        let mut buf = BytesMut::zeroed(header.total_size());
        if let Err(e) = src.file.read_exact_at(&mut buf, u64::from(pos)) {
            self.pos = src.size;
            return Some(Err(LogError::io(&src.path, e)));
        }
        if !crc_is_valid(&buf, &header) {
            self.pos = src.size;
            return fail("CRC mismatch");
        }
        self.pos += header.total_size() as u32;
        Some(Ok((header, buf.freeze())))
    }
}

impl SourceSegment {
    fn batches(&self) -> SourceBatches<'_> {
        SourceBatches { src: self, pos: 0 }
    }
}

/// What a control batch holds.
enum Marker {
    /// No record: an earlier run emptied it.
    Empty,
    Abort,
    Commit,
    /// A control record of another type.
    Other,
}

fn marker_of(bytes: &Bytes, limits: &DecompressLimits) -> Result<Marker, LogError> {
    let batch = RecordBatch::parse(bytes.clone()).map_err(records_err)?;
    let Some(r) = batch.records(limits).map_err(records_err)?.next() else {
        return Ok(Marker::Empty);
    };
    let r = r.map_err(records_err)?;
    let key = r.key.unwrap_or_default();
    Ok(
        match josef_records::control_record_type(&key)
            .ok()
            .and_then(ControlRecordType::from_i16)
        {
            Some(ControlRecordType::Abort) => Marker::Abort,
            Some(ControlRecordType::Commit) => Marker::Commit,
            None => Marker::Other,
        },
    )
}

fn records_err(e: josef_records::RecordsError) -> LogError {
    LogError::InvalidRecords(e.to_string())
}

/// Transactions met while walking the cleaned range in offset order (Kafka's
/// `CleanedTransactionMetadata`).
#[derive(Default)]
struct TxnWalk {
    /// Aborted transactions not reached yet, by first offset.
    pending: VecDeque<AbortedTxn>,
    /// Aborted transactions begun, by producer, with whether a batch of theirs was seen.
    ongoing_aborted: HashMap<i64, (AbortedTxn, bool)>,
    /// Producers with a batch of a not-aborted transaction seen since their last marker.
    ongoing_committed: HashSet<i64>,
}

impl TxnWalk {
    fn new(aborted: &[AbortedTxn]) -> Self {
        TxnWalk {
            pending: aborted.iter().copied().collect(),
            ..TxnWalk::default()
        }
    }

    fn consume_aborted_up_to(&mut self, offset: i64) {
        while self
            .pending
            .front()
            .is_some_and(|t| t.first_offset <= offset)
        {
            if let Some(t) = self.pending.pop_front() {
                self.ongoing_aborted.insert(t.producer_id, (t, false));
            }
        }
    }

    /// A data batch: whether it belongs to an aborted transaction (and may be dropped).
    fn on_batch_read(&mut self, h: &BatchHeader) -> bool {
        self.consume_aborted_up_to(h.last_offset());
        if !h.is_transactional() {
            return false;
        }
        match self.ongoing_aborted.get_mut(&h.producer_id) {
            Some(t) => {
                t.1 = true;
                true
            }
            None => {
                self.ongoing_committed.insert(h.producer_id);
                false
            }
        }
    }

    /// A control batch: whether the marker is no longer needed, and the aborted transaction to
    /// keep in the cleaned `.txnindex` (when the marker stays because data of it remains).
    fn on_control_batch_read(
        &mut self,
        h: &BatchHeader,
        marker: &Marker,
    ) -> (bool, Option<AbortedTxn>) {
        self.consume_aborted_up_to(h.last_offset());
        match marker {
            Marker::Empty => (true, None),
            Marker::Abort => match self.ongoing_aborted.remove(&h.producer_id) {
                Some((t, true)) => (false, Some(t)),
                _ => (true, None),
            },
            Marker::Commit => (!self.ongoing_committed.remove(&h.producer_id), None),
            Marker::Other => (false, None),
        }
    }
}

/// What to do with a batch whose records all go (Kafka's `BatchRetention`).
#[derive(PartialEq, Eq)]
enum Retention {
    /// Drop the whole batch, records or not.
    Delete,
    /// Drop the batch if it ends up empty.
    DeleteEmpty,
    /// Keep the batch even if empty (it holds an active producer's last sequence).
    RetainEmpty,
}

impl CompactionTask {
    /// Base offsets of the segments this task reads.
    pub fn segment_base_offsets(&self) -> Vec<i64> {
        self.sources.iter().map(|s| s.base_offset).collect()
    }

    /// Where the dirty range begins.
    pub fn first_dirty_offset(&self) -> i64 {
        self.first_dirty_offset
    }

    /// End of the cleaned range (exclusive).
    pub fn end_offset(&self) -> i64 {
        self.end_offset
    }

    /// Tells the cleaner the active producers and their last records, so that exactly the batches
    /// holding their last sequence (or their last marker) survive an emptying (Kafka's
    /// `lastRecordsOfActiveProducers`, from the producer state).
    pub fn with_active_producers(
        mut self,
        producers: impl IntoIterator<Item = (i64, LastRecord)>,
    ) -> Self {
        self.active_producers = Some(producers.into_iter().collect());
        self
    }

    /// Removes the `.cleaned` files of the segment based at `base`, if any.
    fn remove_cleaned(&self, base: i64) -> Result<(), LogError> {
        remove_with_suffix(&*self.storage, &self.dir, base, naming::CLEANED_FILE_SUFFIX)
    }

    /// Builds the offset map and writes the cleaned segments (`.cleaned` files). Touches nothing
    /// the log uses, so it can run on another thread while the log keeps serving.
    pub fn run(self) -> Result<CompactionResult, LogError> {
        let limits = DecompressLimits::default();
        let mut stats = CompactionStats {
            first_dirty_offset: self.first_dirty_offset,
            end_offset: self.end_offset,
            ..CompactionStats::default()
        };
        // Pass 1: latest offset of each key in the dirty range (aborted data and markers aside),
        // and the last batch of each producer (used when the caller did not tell active ones).
        let mut map: HashMap<Bytes, i64> = HashMap::new();
        let mut last_batch_of_producer: HashMap<i64, i64> = HashMap::new();
        // Only transactions reaching the dirty range matter here (Kafka's `buildOffsetMap`).
        let dirty_aborted: Vec<AbortedTxn> = self
            .aborted
            .iter()
            .copied()
            .filter(|t| t.last_offset >= self.first_dirty_offset)
            .collect();
        let mut walk = TxnWalk::new(&dirty_aborted);
        for src in &self.sources {
            let dirty = src.next_base > self.first_dirty_offset;
            if !dirty && self.active_producers.is_some() {
                continue;
            }
            for b in src.batches() {
                let (h, bytes) = b?;
                if h.has_producer_id() {
                    last_batch_of_producer.insert(h.producer_id, h.base_offset);
                }
                if !dirty {
                    continue;
                }
                if h.is_control() {
                    let m = marker_of(&bytes, &limits)?;
                    walk.on_control_batch_read(&h, &m);
                    continue;
                }
                if walk.on_batch_read(&h) {
                    continue;
                }
                let batch = RecordBatch::parse(bytes).map_err(records_err)?;
                for r in batch.records(&limits).map_err(records_err)? {
                    let r = r.map_err(records_err)?;
                    if let Some(k) = r.key {
                        if r.offset >= self.first_dirty_offset {
                            map.insert(k, r.offset);
                        }
                    }
                }
            }
        }
        // Pass 2: filter every cleanable segment; rewrite those that change.
        let mut walk = TxnWalk::new(&self.aborted);
        let mut cleaned = Vec::new();
        let mut next_horizon: Option<i64> = None;
        for src in &self.sources {
            self.remove_cleaned(src.base_offset)?;
            let mut out = LogSegment::open_with_suffix(
                self.storage.clone(),
                &self.dir,
                src.base_offset,
                &self.config,
                self.now_ms,
                naming::CLEANED_FILE_SUFFIX,
                crate::segment::AbsentFiles::UNKNOWN,
            )?;
            stats.segments_read += 1;
            stats.bytes_read += u64::from(src.size);
            let mut changed = false;
            let mut txn_entries = Vec::new();
            let mut written = 0u64;
            for b in src.batches() {
                let (h, bytes) = b?;
                let outcome = self.clean_batch(
                    &h,
                    &bytes,
                    &mut walk,
                    &map,
                    &last_batch_of_producer,
                    &limits,
                    &mut stats,
                )?;
                if let Some(t) = outcome.txn_entry {
                    txn_entries.push(t);
                }
                if let Some(hz) = outcome.pending_horizon {
                    next_horizon = Some(next_horizon.map_or(hz, |n| n.min(hz)));
                }
                match outcome.keep {
                    Kept::Original => {
                        out.append(h.last_offset(), h.max_timestamp, h.last_offset(), &bytes)?;
                        written += bytes.len() as u64;
                    }
                    Kept::Rewritten(new) => {
                        changed = true;
                        let nh = BatchHeader::parse(&new).map_err(records_err)?;
                        out.append(nh.last_offset(), nh.max_timestamp, nh.last_offset(), &new)?;
                        written += new.len() as u64;
                    }
                    Kept::Dropped => changed = true,
                }
            }
            // Aborted transactions whose marker is past this segment keep their entries where
            // they are (Kafka indexes an aborted transaction in its marker's segment).
            let mut old_kept: Vec<AbortedTxn> = src
                .txn_entries
                .iter()
                .copied()
                .filter(|t| t.last_offset >= src.next_base)
                .collect();
            old_kept.extend(txn_entries);
            old_kept.sort_by_key(|t| t.last_offset);
            old_kept.dedup();
            if old_kept != src.txn_entries {
                changed = true;
            }
            if !changed {
                drop(out);
                self.remove_cleaned(src.base_offset)?;
                continue;
            }
            for t in &old_kept {
                out.append_aborted_txn(*t)?;
            }
            out.on_become_inactive()?;
            out.flush()?;
            stats.segments += 1;
            stats.bytes_written += written;
            cleaned.push((src.base_offset, src.size));
        }
        if !cleaned.is_empty() {
            crate::checkpoint::sync_dir_in(&*self.storage, &self.dir)?;
        }
        Ok(CompactionResult {
            cleaned,
            sources: self
                .sources
                .iter()
                .map(|s| (s.base_offset, s.size))
                .collect(),
            end_offset: self.end_offset,
            next_delete_horizon_ms: next_horizon,
            now_ms: self.now_ms,
            stats,
            truncations: self.truncations,
        })
    }

    fn is_last_of_active_producer(
        &self,
        h: &BatchHeader,
        last_batch_of_producer: &HashMap<i64, i64>,
    ) -> bool {
        if !h.has_producer_id() {
            return false;
        }
        match &self.active_producers {
            Some(active) => {
                active
                    .get(&h.producer_id)
                    .is_some_and(|last| match last.last_data_offset {
                        Some(o) => h.last_offset() == o,
                        None => h.is_control() && h.producer_epoch == last.producer_epoch,
                    })
            }
            None => last_batch_of_producer.get(&h.producer_id) == Some(&h.base_offset),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn clean_batch(
        &self,
        h: &BatchHeader,
        bytes: &Bytes,
        walk: &mut TxnWalk,
        map: &HashMap<Bytes, i64>,
        last_batch_of_producer: &HashMap<i64, i64>,
        limits: &DecompressLimits,
        stats: &mut CompactionStats,
    ) -> Result<BatchOutcome, LogError> {
        let now = self.now_ms;
        let horizon = h.delete_horizon_ms();
        let mut txn_entry = None;
        let (can_discard, discard_records) = if h.is_control() {
            let m = marker_of(bytes, limits)?;
            let (can_discard, entry) = walk.on_control_batch_read(h, &m);
            txn_entry = entry;
            (
                can_discard,
                can_discard && horizon.is_some_and(|hz| hz <= now),
            )
        } else {
            let aborted = walk.on_batch_read(h);
            (aborted, aborted)
        };
        let retention = if self.is_last_of_active_producer(h, last_batch_of_producer) {
            Retention::RetainEmpty
        } else if discard_records {
            Retention::Delete
        } else {
            Retention::DeleteEmpty
        };
        let total = h.record_count.max(0) as u64;
        stats.records_read += total;
        if retention == Retention::Delete {
            return Ok(BatchOutcome::dropped(txn_entry));
        }
        let marker_for_empty_txn = can_discard && h.is_control();
        let batch = RecordBatch::parse(bytes.clone()).map_err(records_err)?;
        let mut kept: Vec<Record> = Vec::new();
        let mut seen = 0u64;
        if !discard_records {
            for r in batch.records(limits).map_err(records_err)? {
                let r = r.map_err(records_err)?;
                seen += 1;
                if h.is_control() {
                    kept.push(r);
                    continue;
                }
                let Some(key) = &r.key else { continue };
                if map.get(key).is_some_and(|&latest| r.offset < latest) {
                    continue;
                }
                let retain_deletes = horizon.map_or(true, |hz| now < hz);
                if r.value.is_none() && !retain_deletes {
                    continue;
                }
                kept.push(r);
            }
        }
        stats.records_kept += kept.len() as u64;
        let contains_tombstones = !h.is_control() && kept.iter().any(|r| r.value.is_none());
        let needs_horizon = (contains_tombstones || marker_for_empty_txn) && horizon.is_none();
        let new_horizon = if needs_horizon {
            Some(now.saturating_add(self.config.delete_retention_ms))
        } else {
            horizon
        };
        // A kept batch still holding tombstones or a removable marker makes a later run useful.
        let pending_horizon = if contains_tombstones || (marker_for_empty_txn && !kept.is_empty()) {
            new_horizon
        } else {
            None
        };
        let all_kept = !discard_records && kept.len() as u64 == seen && seen == total;
        if all_kept && !needs_horizon && total > 0 {
            return Ok(BatchOutcome {
                keep: Kept::Original,
                txn_entry,
                pending_horizon,
            });
        }
        if kept.is_empty() && retention != Retention::RetainEmpty {
            return Ok(BatchOutcome::dropped(txn_entry));
        }
        if kept.is_empty() && total == 0 {
            // Already an empty batch kept for its producer: nothing to change.
            return Ok(BatchOutcome {
                keep: Kept::Original,
                txn_entry,
                pending_horizon: None,
            });
        }
        // Rewrite with the same base offset, last offset, producer fields, codec and epoch.
        let mut builder = RecordBatchBuilder::new()
            .base_offset(h.base_offset)
            .partition_leader_epoch(h.partition_leader_epoch)
            .compression(h.compression().map_err(records_err)?)
            .producer(h.producer_id, h.producer_epoch, h.base_sequence)
            .transactional(h.is_transactional())
            .control(h.is_control())
            .last_offset_delta_at_least(h.last_offset_delta);
        if let Some(hz) = new_horizon.filter(|_| !kept.is_empty()) {
            builder = builder.delete_horizon(hz);
        }
        if h.timestamp_type() == TimestampType::LogAppendTime {
            builder = builder.log_append_time(h.max_timestamp);
        }
        for r in kept {
            let delta = i32::try_from(r.offset - h.base_offset)
                .map_err(|_| LogError::InvalidRecords("record offset outside its batch".into()))?;
            let headers = r.headers.into_iter().map(|x| (x.key, x.value)).collect();
            builder
                .push_with_offset_delta(delta, r.timestamp, r.key, r.value, headers)
                .map_err(records_err)?;
        }
        let new = builder.build_bytes().map_err(records_err)?;
        // The rewritten batch must be a valid batch of the same range.
        match next_batch(&new) {
            Next::Batch(nh)
                if nh.base_offset == h.base_offset && nh.last_offset() == h.last_offset() => {}
            _ => {
                return Err(LogError::InvalidRecords(
                    "cleaner produced a bad batch".into(),
                ))
            }
        }
        Ok(BatchOutcome {
            keep: Kept::Rewritten(new),
            txn_entry,
            pending_horizon,
        })
    }
}

enum Kept {
    Original,
    Rewritten(Bytes),
    Dropped,
}

struct BatchOutcome {
    keep: Kept,
    txn_entry: Option<AbortedTxn>,
    /// The delete horizon of tombstones or a removable marker this batch still holds.
    pending_horizon: Option<i64>,
}

impl BatchOutcome {
    fn dropped(txn_entry: Option<AbortedTxn>) -> Self {
        BatchOutcome {
            keep: Kept::Dropped,
            txn_entry,
            pending_horizon: None,
        }
    }
}
