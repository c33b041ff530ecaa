//! Log compaction (Kafka's `LogCleaner`), for `cleanup.policy=compact`.
//!
//! Compaction works in three steps so that a broker never blocks appends for long:
//! 1. [`Log::prepare_compaction`] (`&self`, quick): picks the closed segments below the bound and
//!    takes its own file handles on them;
//! 2. [`CompactionTask::run`] (no access to the log, slow): builds the key → latest offset map and
//!    writes each cleaned segment as `<base>.log.cleaned` (plus indexes), fsynced;
//! 3. [`Log::finish_compaction`] (`&mut self`, quick): if the source segments are unchanged, each
//!    cleaned segment is renamed to `.swap`, the old segment deleted and the `.swap` renamed in
//!    place. A crash at any point is completed or undone by [`Log::open`].
//!
//! [`Log::compact`] runs the three in a row.
//!
//! Rules (Kafka's): the latest record of each key is kept; keyless records are dropped; a tombstone
//! (null value) is dropped once its batch's max timestamp is `delete.retention.ms` old; data
//! batches of aborted transactions (known from the `.txnindex`) are dropped; control batches are
//! always kept; a batch that loses some records is rewritten with the same base offset, last offset,
//! producer fields and codec; a batch that loses all its records is kept empty when it is its
//! producer's last batch in the range (so the producer's sequence survives), else dropped.
//!
//! Simplifications, documented: every closed segment below the bound is rewritten on each run (no
//! `min.cleanable.dirty.ratio` and no cleaner-offset checkpoint), segments are not merged, the
//! offset map holds whole keys in memory, and transaction markers are never removed.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use bytes::{Bytes, BytesMut};
use josef_records::{DecompressLimits, RecordBatch, RecordBatchBuilder, TimestampType};

use crate::batch::{crc_is_valid, next_batch, BatchHeader, Next, BATCH_HEADER_LEN};
use crate::config::LogConfig;
use crate::error::LogError;
use crate::index::AbortedTxn;
use crate::log::{delete_segment, Log};
use crate::naming;
use crate::segment::LogSegment;

/// One closed segment as the cleaner sees it.
#[derive(Debug)]
struct SourceSegment {
    base_offset: i64,
    file: File,
    path: PathBuf,
    size: u32,
    aborted: Vec<AbortedTxn>,
}

/// Work prepared by [`Log::prepare_compaction`], run without the log by [`CompactionTask::run`].
#[derive(Debug)]
pub struct CompactionTask {
    dir: PathBuf,
    config: LogConfig,
    now_ms: i64,
    sources: Vec<SourceSegment>,
}

/// Cleaned segments ready to be swapped in by [`Log::finish_compaction`].
#[derive(Debug)]
pub struct CompactionResult {
    cleaned: Vec<(i64, u32)>,
    stats: CompactionStats,
}

/// What a compaction did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactionStats {
    /// Segments rewritten.
    pub segments: usize,
    /// Bytes before.
    pub bytes_read: u64,
    /// Bytes after.
    pub bytes_written: u64,
    /// Records read.
    pub records_read: u64,
    /// Records kept.
    pub records_kept: u64,
    /// Whether the cleaned segments were swapped in (false when the log changed meanwhile).
    pub swapped: bool,
}

impl Log {
    /// Picks the closed segments wholly below `max_offset` (pass the LSO when transactions may be
    /// open, else the high watermark) whose data is older than `min.compaction.lag.ms`. Returns
    /// `None` when the log is not compacted or nothing is cleanable.
    pub fn prepare_compaction(
        &self,
        now_ms: i64,
        max_offset: i64,
    ) -> Result<Option<CompactionTask>, LogError> {
        if !self.config.cleanup_policy.compacts() {
            return Ok(None);
        }
        let bases: Vec<i64> = self.segments.keys().copied().collect();
        let mut sources = Vec::new();
        for w in bases.windows(2) {
            let (base, next_base) = (w[0], w[1]);
            let seg = &self.segments[&base];
            if next_base > max_offset.min(self.recovery_point)
                || now_ms.saturating_sub(seg.largest_timestamp())
                    < self.config.min_compaction_lag_ms
            {
                break;
            }
            let path = seg.log_path().to_path_buf();
            let file = File::open(&path).map_err(|e| LogError::io(&path, e))?;
            sources.push(SourceSegment {
                base_offset: base,
                file,
                path,
                size: seg.size(),
                aborted: seg.txn_index().entries().to_vec(),
            });
        }
        if sources.is_empty() {
            return Ok(None);
        }
        Ok(Some(CompactionTask {
            dir: self.dir.clone(),
            config: self.config.clone(),
            now_ms,
            sources,
        }))
    }

    /// Swaps cleaned segments in, if their sources are still in the log unchanged; otherwise the
    /// cleaned files are deleted and `swapped` is false.
    pub fn finish_compaction(
        &mut self,
        result: CompactionResult,
    ) -> Result<CompactionStats, LogError> {
        let mut stats = result.stats;
        let unchanged = result
            .cleaned
            .iter()
            .all(|(base, size)| self.segments.get(base).is_some_and(|s| s.size() == *size))
            && result
                .cleaned
                .last()
                .is_some_and(|(base, _)| self.segments.range(base + 1..).next().is_some());
        if !unchanged {
            for (base, _) in &result.cleaned {
                remove_with_suffix(&self.dir, *base, naming::CLEANED_FILE_SUFFIX)?;
            }
            stats.swapped = false;
            return Ok(stats);
        }
        for (base, _) in &result.cleaned {
            // .cleaned -> .swap marks the cleaned segment as complete: from here a crash is
            // finished by the loader, which deletes the old segment and renames the swap.
            rename_suffix(
                &self.dir,
                *base,
                naming::CLEANED_FILE_SUFFIX,
                naming::SWAP_FILE_SUFFIX,
            )?;
        }
        crate::checkpoint::sync_dir(&self.dir)?;
        for (base, _) in &result.cleaned {
            if let Some(old) = self.segments.remove(base) {
                delete_segment(old)?;
            }
            rename_suffix(&self.dir, *base, naming::SWAP_FILE_SUFFIX, "")?;
            let seg = LogSegment::open(&self.dir, *base, &self.config, 0)?;
            self.segments.insert(*base, seg);
        }
        crate::checkpoint::sync_dir(&self.dir)?;
        stats.swapped = true;
        Ok(stats)
    }

    /// Compacts the closed segments below the high watermark in one call (see the module docs for
    /// the split form that keeps the log available meanwhile).
    pub fn compact(&mut self, now_ms: i64) -> Result<Option<CompactionStats>, LogError> {
        let bound = self.high_watermark;
        let Some(task) = self.prepare_compaction(now_ms, bound)? else {
            return Ok(None);
        };
        let result = task.run()?;
        self.finish_compaction(result).map(Some)
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

fn rename_suffix(dir: &Path, base: i64, from: &str, to: &str) -> Result<(), LogError> {
    // The log file goes last into `.swap` (the loader keys on it) and first out of it.
    let order: Vec<&str> = if to == naming::SWAP_FILE_SUFFIX {
        EXTENSIONS.iter().rev().copied().collect()
    } else {
        EXTENSIONS.to_vec()
    };
    for ext in order {
        let src = file_with_suffix(dir, base, ext, from);
        let dst = file_with_suffix(dir, base, ext, to);
        match std::fs::rename(&src, &dst) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(LogError::io(&src, e)),
        }
    }
    Ok(())
}

fn remove_with_suffix(dir: &Path, base: i64, suffix: &str) -> Result<(), LogError> {
    for ext in EXTENSIONS {
        let p = file_with_suffix(dir, base, ext, suffix);
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(LogError::io(&p, e)),
        }
    }
    Ok(())
}

/// A batch read back from a source segment.
struct SourceBatch {
    header: BatchHeader,
    bytes: Bytes,
}

fn read_batches(src: &SourceSegment) -> Result<Vec<SourceBatch>, LogError> {
    let mut out = Vec::new();
    let mut pos: u32 = 0;
    let mut header_buf = [0u8; BATCH_HEADER_LEN];
    while pos < src.size {
        let avail = (src.size - pos) as usize;
        let n = avail.min(BATCH_HEADER_LEN);
        src.file
            .read_exact_at(&mut header_buf[..n], u64::from(pos))
            .map_err(|e| LogError::io(&src.path, e))?;
        let header = match BatchHeader::parse(&header_buf[..n]) {
            Ok(h) if h.total_size() <= avail => h,
            _ => {
                return Err(LogError::InvalidRecords(format!(
                    "cannot compact {}: bad batch at {pos}",
                    src.path.display()
                )))
            }
        };
        // Bounded by the file size checked above.
        let mut buf = BytesMut::zeroed(header.total_size());
        src.file
            .read_exact_at(&mut buf, u64::from(pos))
            .map_err(|e| LogError::io(&src.path, e))?;
        if !crc_is_valid(&buf, &header) {
            return Err(LogError::InvalidRecords(format!(
                "cannot compact {}: CRC mismatch at {pos}",
                src.path.display()
            )));
        }
        pos += header.total_size() as u32;
        out.push(SourceBatch {
            header,
            bytes: buf.freeze(),
        });
    }
    Ok(out)
}

/// Whether a transactional data batch belongs to an aborted transaction.
fn is_aborted(aborted: &[AbortedTxn], h: &BatchHeader) -> bool {
    h.is_transactional()
        && !h.is_control()
        && aborted.iter().any(|t| {
            t.producer_id == h.producer_id
                && t.first_offset <= h.base_offset
                && h.base_offset <= t.last_offset
        })
}

impl CompactionTask {
    /// Base offsets of the segments this task will rewrite.
    pub fn segment_base_offsets(&self) -> Vec<i64> {
        self.sources.iter().map(|s| s.base_offset).collect()
    }

    /// Builds the offset map and writes the cleaned segments (`.cleaned` files). Touches nothing
    /// the log uses, so it can run on another thread while the log keeps serving.
    pub fn run(self) -> Result<CompactionResult, LogError> {
        let limits = DecompressLimits::default();
        let aborted: Vec<AbortedTxn> = self
            .sources
            .iter()
            .flat_map(|s| s.aborted.iter().copied())
            .collect();
        let mut stats = CompactionStats::default();
        // Pass 1: latest offset of each key, last batch of each producer.
        let mut latest: HashMap<Bytes, i64> = HashMap::new();
        let mut last_batch_of_producer: HashMap<i64, i64> = HashMap::new();
        for src in &self.sources {
            for b in read_batches(src)? {
                if b.header.has_producer_id() {
                    last_batch_of_producer.insert(b.header.producer_id, b.header.base_offset);
                }
                if b.header.is_control() || is_aborted(&aborted, &b.header) {
                    continue;
                }
                let batch = RecordBatch::parse(b.bytes)
                    .map_err(|e| LogError::InvalidRecords(e.to_string()))?;
                for r in batch
                    .records(&limits)
                    .map_err(|e| LogError::InvalidRecords(e.to_string()))?
                {
                    let r = r.map_err(|e| LogError::InvalidRecords(e.to_string()))?;
                    if let Some(k) = r.key {
                        latest.insert(k, r.offset);
                    }
                }
            }
        }
        // Pass 2: write each cleaned segment.
        let mut cleaned = Vec::new();
        for src in &self.sources {
            remove_with_suffix(&self.dir, src.base_offset, naming::CLEANED_FILE_SUFFIX)?;
            let mut out = LogSegment::open_with_suffix(
                &self.dir,
                src.base_offset,
                &self.config,
                self.now_ms,
                naming::CLEANED_FILE_SUFFIX,
            )?;
            stats.segments += 1;
            stats.bytes_read += u64::from(src.size);
            for b in read_batches(src)? {
                let keep = self.clean_batch(
                    &b,
                    &aborted,
                    &latest,
                    &last_batch_of_producer,
                    &limits,
                    &mut stats,
                )?;
                if let Some(bytes) = keep {
                    let h = BatchHeader::parse(&bytes)
                        .map_err(|e| LogError::InvalidRecords(e.to_string()))?;
                    out.append(h.last_offset(), h.max_timestamp, h.last_offset(), &bytes)?;
                    stats.bytes_written += bytes.len() as u64;
                }
            }
            for t in &src.aborted {
                out.append_aborted_txn(*t)?;
            }
            out.on_become_inactive()?;
            out.flush()?;
            cleaned.push((src.base_offset, src.size));
        }
        crate::checkpoint::sync_dir(&self.dir)?;
        Ok(CompactionResult { cleaned, stats })
    }

    fn clean_batch(
        &self,
        b: &SourceBatch,
        aborted: &[AbortedTxn],
        latest: &HashMap<Bytes, i64>,
        last_batch_of_producer: &HashMap<i64, i64>,
        limits: &DecompressLimits,
        stats: &mut CompactionStats,
    ) -> Result<Option<Bytes>, LogError> {
        let h = &b.header;
        let records_err = |e: josef_records::RecordsError| LogError::InvalidRecords(e.to_string());
        if h.is_control() {
            return Ok(Some(b.bytes.clone()));
        }
        let is_producer_last = h.has_producer_id()
            && last_batch_of_producer.get(&h.producer_id) == Some(&h.base_offset);
        let tombstones_expired = h
            .max_timestamp
            .saturating_add(self.config.delete_retention_ms)
            <= self.now_ms;
        let batch = RecordBatch::parse(b.bytes.clone()).map_err(records_err)?;
        let mut kept = Vec::new();
        let mut total = 0usize;
        if !is_aborted(aborted, h) {
            for r in batch.records(limits).map_err(records_err)? {
                let r = r.map_err(records_err)?;
                total += 1;
                let Some(key) = &r.key else { continue };
                if latest.get(key) != Some(&r.offset) {
                    continue;
                }
                if r.value.is_none() && tombstones_expired {
                    continue;
                }
                kept.push(r);
            }
        } else {
            total = h.record_count.max(0) as usize;
        }
        stats.records_read += total as u64;
        stats.records_kept += kept.len() as u64;
        if kept.len() == total && total > 0 {
            return Ok(Some(b.bytes.clone()));
        }
        if kept.is_empty() && !is_producer_last {
            return Ok(None);
        }
        // Rewrite with the same base offset, last offset, producer fields, codec and epoch.
        let mut builder = RecordBatchBuilder::new()
            .base_offset(h.base_offset)
            .partition_leader_epoch(h.partition_leader_epoch)
            .compression(h.compression().map_err(records_err)?)
            .producer(h.producer_id, h.producer_epoch, h.base_sequence)
            .transactional(h.is_transactional())
            .last_offset_delta_at_least(h.last_offset_delta);
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
        let bytes = builder.build_bytes().map_err(records_err)?;
        // The rewritten batch must be a valid batch of the same range.
        match next_batch(&bytes) {
            Next::Batch(nh)
                if nh.base_offset == h.base_offset && nh.last_offset() == h.last_offset() => {}
            _ => {
                return Err(LogError::InvalidRecords(
                    "cleaner produced a bad batch".into(),
                ))
            }
        }
        Ok(Some(bytes))
    }
}
