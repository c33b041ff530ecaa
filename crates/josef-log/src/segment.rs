//! One segment: a `.log` file of batches plus its offset, time and transaction indexes (Kafka's
//! `LogSegment`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use crate::batch::{crc_is_valid, next_batch, BatchHeader, Next, BATCH_HEADER_LEN};
use crate::config::LogConfig;
use crate::error::LogError;
use crate::index::{
    AbortedTxn, OffsetIndex, OffsetPosition, TimeIndex, TimestampOffset, TransactionIndex,
    TxnIndexSearchResult, NO_TIMESTAMP,
};
use crate::naming;
use crate::storage::{self, FileRegion, Storage, StorageFile};

/// Where a batch lives in a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchPosition {
    /// Byte position of the batch in the `.log` file.
    pub position: u32,
    /// The batch header.
    pub header: BatchHeader,
}

/// What [`LogSegment::recover`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentRecovery {
    /// Bytes cut off the end of the `.log` file.
    pub truncated_bytes: u64,
    /// The offset after the last valid batch (the base offset if none).
    pub next_offset: i64,
}

/// Which of a segment's index files the caller's directory listing showed absent: each is then
/// taken as missing without asking the storage (a new partition's files cost no lookups).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct AbsentFiles {
    pub(crate) offset_index: bool,
    pub(crate) time_index: bool,
    pub(crate) txn_index: bool,
}

impl AbsentFiles {
    /// Nothing known: every file is looked up.
    pub(crate) const UNKNOWN: AbsentFiles = AbsentFiles {
        offset_index: false,
        time_index: false,
        txn_index: false,
    };
    /// A segment being created: none of its index files exists.
    pub(crate) const ALL: AbsentFiles = AbsentFiles {
        offset_index: true,
        time_index: true,
        txn_index: true,
    };
}

/// One segment of a partition log.
#[derive(Debug)]
pub struct LogSegment {
    base_offset: i64,
    log_path: PathBuf,
    storage: Arc<dyn Storage>,
    file: Box<dyn StorageFile>,
    size: u32,
    offset_index: OffsetIndex,
    time_index: TimeIndex,
    txn_index: TransactionIndex,
    index_interval_bytes: u32,
    bytes_since_last_index_entry: u32,
    /// Largest batch max timestamp seen and the last offset of its batch.
    max_timestamp_so_far: TimestampOffset,
    /// Max timestamp of the first batch, the reference for `segment.ms` (Kafka's
    /// `rollingBasedTimestamp`); `None` until loaded.
    rolling_based_timestamp: Option<i64>,
    created_ms: i64,
}

impl LogSegment {
    /// Opens the segment based at `base_offset` in `dir`, creating its `.log` if missing; the
    /// index files are created by their first entry (or when the segment with data rolls,
    /// closes or is recovered).
    pub fn open(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        now_ms: i64,
    ) -> Result<Self, LogError> {
        Self::open_in(storage::file_system(), dir, base_offset, config, now_ms)
    }

    /// [`LogSegment::open`] on any [`Storage`].
    pub fn open_in(
        storage: Arc<dyn Storage>,
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        now_ms: i64,
    ) -> Result<Self, LogError> {
        Self::open_with_suffix(
            storage,
            dir,
            base_offset,
            config,
            now_ms,
            "",
            AbsentFiles::UNKNOWN,
        )
    }

    /// [`LogSegment::open_in`] with what the directory listing said of its index files.
    pub(crate) fn open_listed(
        storage: Arc<dyn Storage>,
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        now_ms: i64,
        absent: AbsentFiles,
    ) -> Result<Self, LogError> {
        Self::open_with_suffix(storage, dir, base_offset, config, now_ms, "", absent)
    }

    /// Opens segment files that carry an extra suffix (`.cleaned`, `.swap`).
    pub(crate) fn open_with_suffix(
        storage: Arc<dyn Storage>,
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        now_ms: i64,
        suffix: &str,
        absent: AbsentFiles,
    ) -> Result<Self, LogError> {
        let with = |p: PathBuf| -> PathBuf {
            let mut s = p.into_os_string();
            s.push(suffix);
            PathBuf::from(s)
        };
        let log_path = with(naming::log_file(dir, base_offset));
        let file = storage
            .open_file(&log_path, true)
            .map_err(|e| LogError::io(&log_path, e))?;
        let len = file.len().map_err(|e| LogError::io(&log_path, e))?;
        let size = u32::try_from(len).map_err(|_| {
            LogError::InvalidRecords(format!(
                "segment {} is larger than 4 GiB",
                log_path.display()
            ))
        })?;
        let max_index = config.segment_index_bytes as usize;
        let offset_index = OffsetIndex::open_known(
            storage.clone(),
            &with(naming::offset_index_file(dir, base_offset)),
            base_offset,
            max_index,
            absent.offset_index,
        )?;
        let time_index = TimeIndex::open_known(
            storage.clone(),
            &with(naming::time_index_file(dir, base_offset)),
            base_offset,
            max_index,
            absent.time_index,
        )?;
        let txn_path = with(naming::txn_index_file(dir, base_offset));
        let txn_index = if absent.txn_index {
            TransactionIndex::absent_in(storage.clone(), &txn_path, base_offset)
        } else {
            TransactionIndex::open_in(storage.clone(), &txn_path, base_offset)?
        };
        let max_timestamp_so_far = time_index.last_entry();
        Ok(LogSegment {
            base_offset,
            log_path,
            storage,
            file,
            size,
            offset_index,
            time_index,
            txn_index,
            index_interval_bytes: config.index_interval_bytes,
            bytes_since_last_index_entry: 0,
            max_timestamp_so_far,
            rolling_based_timestamp: None,
            created_ms: now_ms,
        })
    }

    /// The segment's base offset.
    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }

    /// Size of the `.log` file in bytes.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// Path of the `.log` file.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The offset index.
    pub fn offset_index(&self) -> &OffsetIndex {
        &self.offset_index
    }

    /// The time index.
    pub fn time_index(&self) -> &TimeIndex {
        &self.time_index
    }

    /// Whether the offset or time index file was missing when the segment was opened.
    pub(crate) fn index_file_was_missing(&self) -> bool {
        self.offset_index.missing_at_open() || self.time_index.missing_at_open()
    }

    /// Creates the index files a segment with data lacks (it may have had no entry to write):
    /// a segment with data always has both files after a roll, a close or a recovery, so a
    /// missing one on a clean open means a lost file. An empty segment needs none.
    fn materialize_indexes(&mut self) -> Result<(), LogError> {
        if self.size > 0 {
            self.offset_index.materialize()?;
            self.time_index.materialize()?;
        }
        Ok(())
    }

    /// The aborted-transaction index.
    pub fn txn_index(&self) -> &TransactionIndex {
        &self.txn_index
    }

    /// Largest batch max timestamp in the segment (`NO_TIMESTAMP` if none) and the last offset of
    /// the batch that carries it.
    pub fn max_timestamp_so_far(&self) -> TimestampOffset {
        self.max_timestamp_so_far
    }

    /// Whether `offset` fits the indexes' relative offsets.
    pub fn can_convert_to_relative_offset(&self, offset: i64) -> bool {
        self.offset_index.can_append_offset(offset)
    }

    /// Appends whole batches whose offsets are already assigned (Kafka's `LogSegment.append`).
    /// `largest_offset` is the last offset in `records`; `offset_of_max_timestamp` the last offset
    /// of the batch with the largest timestamp.
    pub fn append(
        &mut self,
        largest_offset: i64,
        largest_timestamp: i64,
        offset_of_max_timestamp: i64,
        records: &[u8],
    ) -> Result<(), LogError> {
        self.append_parts(
            largest_offset,
            largest_timestamp,
            offset_of_max_timestamp,
            &[records],
        )
    }

    /// [`LogSegment::append`] of records given as consecutive pieces (patched batch headers and
    /// the batch bodies they precede), written with one `pwritev` instead of being copied into one
    /// buffer first.
    pub fn append_parts(
        &mut self,
        largest_offset: i64,
        largest_timestamp: i64,
        offset_of_max_timestamp: i64,
        parts: &[&[u8]],
    ) -> Result<(), LogError> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len == 0 {
            return Ok(());
        }
        if !self.can_convert_to_relative_offset(largest_offset) {
            return Err(LogError::InvalidOffset(format!(
                "offset {largest_offset} overflows segment {}",
                self.base_offset
            )));
        }
        let position = self.size;
        let new_size = u64::from(position) + len as u64;
        let new_size = u32::try_from(new_size)
            .map_err(|_| LogError::InvalidRecords("segment would exceed 4 GiB".into()))?;
        if position == 0 {
            self.rolling_based_timestamp = Some(largest_timestamp);
        }
        self.file
            .write_all_at(parts, u64::from(position))
            .map_err(|e| LogError::io(&self.log_path, e))?;
        self.size = new_size;
        if largest_timestamp > self.max_timestamp_so_far.timestamp {
            self.max_timestamp_so_far = TimestampOffset {
                timestamp: largest_timestamp,
                offset: offset_of_max_timestamp,
            };
        }
        if self.bytes_since_last_index_entry > self.index_interval_bytes {
            self.offset_index.append(largest_offset, position)?;
            self.time_index.maybe_append(
                self.max_timestamp_so_far.timestamp,
                self.max_timestamp_so_far.offset,
                false,
            )?;
            self.bytes_since_last_index_entry = 0;
        }
        self.bytes_since_last_index_entry =
            self.bytes_since_last_index_entry.saturating_add(len as u32);
        Ok(())
    }

    /// Records an aborted transaction in this segment's `.txnindex`.
    pub fn append_aborted_txn(&mut self, txn: AbortedTxn) -> Result<(), LogError> {
        self.txn_index.append(txn)
    }

    /// Reads `len` bytes at `position` (clamped to the segment) into a fresh buffer.
    pub fn read_bytes(&self, position: u32, len: usize) -> Result<Bytes, LogError> {
        let end = (u64::from(position) + len as u64).min(u64::from(self.size));
        let len = end.saturating_sub(u64::from(position)) as usize;
        self.file
            .read_bytes_at(len, u64::from(position))
            .map_err(|e| LogError::io(&self.log_path, e))
    }

    /// The header of the batch at `position`, or `None` past the end. A header that cannot be
    /// read whole or is invalid is an error (appended data is always whole batches).
    pub fn batch_at(&self, position: u32) -> Result<Option<BatchPosition>, LogError> {
        if position >= self.size {
            return Ok(None);
        }
        let avail = (self.size - position) as usize;
        let mut buf = [0u8; BATCH_HEADER_LEN];
        let n = avail.min(BATCH_HEADER_LEN);
        self.file
            .read_exact_at(&mut buf[..n], u64::from(position))
            .map_err(|e| LogError::io(&self.log_path, e))?;
        let header = BatchHeader::parse(&buf[..n]).map_err(|e| {
            LogError::InvalidRecords(format!(
                "bad batch at position {position} of {}: {e}",
                self.log_path.display()
            ))
        })?;
        if header.total_size() > avail {
            return Err(LogError::InvalidRecords(format!(
                "batch at position {position} of {} runs past the end",
                self.log_path.display()
            )));
        }
        Ok(Some(BatchPosition { position, header }))
    }

    /// Iterates the batch headers from `position` to the end of the segment.
    pub fn batches_from(&self, position: u32) -> BatchIter<'_> {
        BatchIter {
            segment: self,
            position,
        }
    }

    /// The first batch whose last offset is `>= offset`, searching from the offset index entry
    /// (or `starting_position` if larger). `None` if every batch is below `offset`.
    pub fn translate_offset(
        &self,
        offset: i64,
        starting_position: u32,
    ) -> Result<Option<BatchPosition>, LogError> {
        let start = self.indexed_position(offset).max(starting_position);
        for b in self.batches_from(start) {
            let b = b?;
            if b.header.last_offset() >= offset {
                return Ok(Some(b));
            }
        }
        Ok(None)
    }

    /// Byte position to start scanning for `offset`: the offset index entry at or below it, if
    /// the batch there really ends at the entry's offset, else 0. The check costs one header read
    /// and keeps a damaged index from ever sending a scan into the middle of a batch.
    fn indexed_position(&self, offset: i64) -> u32 {
        let entry = self.offset_index.lookup(offset);
        if entry.position == 0 {
            return 0;
        }
        match self.batch_at(entry.position) {
            Ok(Some(b)) if b.header.last_offset() == entry.offset => entry.position,
            _ => 0,
        }
    }

    /// The offset after the last batch (Kafka's `readNextOffset`): scans from the last index entry.
    pub fn read_next_offset(&self) -> Result<i64, LogError> {
        let mut next = self.base_offset;
        let last = self.offset_index.last_entry().offset;
        for b in self.batches_from(self.indexed_position(last)) {
            next = b?.header.next_offset();
        }
        Ok(next)
    }

    /// Reads whole batches starting with the one holding `start_offset`, at most `max_size` bytes
    /// (but the first batch whole when `min_one_message`), never at or past byte `max_position`.
    /// Returns `None` when no batch holds an offset `>= start_offset`.
    pub fn read(
        &self,
        start_offset: i64,
        max_size: usize,
        max_position: u32,
        min_one_message: bool,
    ) -> Result<Option<SegmentRead>, LogError> {
        self.read_as(start_offset, max_size, max_position, min_one_message, false)
    }

    /// [`LogSegment::read`], but the batches come as a [`FileRegion`] of the segment file
    /// (`records` empty) when its storage has a descriptor to share, for a caller that sends them
    /// on unread (`sendfile`). The whole-batch cut is found from the batch headers (one small
    /// read per batch), not from a copy of the records. Without a descriptor it reads bytes.
    pub fn read_region(
        &self,
        start_offset: i64,
        max_size: usize,
        max_position: u32,
        min_one_message: bool,
    ) -> Result<Option<SegmentRead>, LogError> {
        self.read_as(start_offset, max_size, max_position, min_one_message, true)
    }

    fn read_as(
        &self,
        start_offset: i64,
        max_size: usize,
        max_position: u32,
        min_one_message: bool,
        region: bool,
    ) -> Result<Option<SegmentRead>, LogError> {
        let Some(first) = self.translate_offset(start_offset, 0)? else {
            return Ok(None);
        };
        let first_size = first.header.total_size();
        let adjusted = if min_one_message {
            max_size.max(first_size)
        } else {
            max_size
        };
        let limit = (max_position.saturating_sub(first.position) as usize).min(adjusted);
        if limit < first_size {
            return Ok(Some(SegmentRead {
                position: first.position,
                first: first.header,
                records: Bytes::new(),
                region: None,
                first_entry_incomplete: adjusted < first_size,
            }));
        }
        if region {
            if let Some(r) = self.whole_batches_region(first, limit)? {
                return Ok(Some(SegmentRead {
                    position: first.position,
                    first: first.header,
                    records: Bytes::new(),
                    region: Some(r),
                    first_entry_incomplete: false,
                }));
            }
        }
        let bytes = self.read_bytes(first.position, limit)?;
        // Cut at the last whole batch so every slice starts and ends on batch boundaries.
        let mut end = 0usize;
        while let Next::Batch(h) = next_batch(&bytes[end..]) {
            end += h.total_size();
        }
        Ok(Some(SegmentRead {
            position: first.position,
            first: first.header,
            records: bytes.slice(..end),
            region: None,
            first_entry_incomplete: false,
        }))
    }

    /// The whole batches from `first` within `limit` bytes as a region of the file (`first` fits
    /// `limit`), or `None` when the storage shares no descriptor.
    fn whole_batches_region(
        &self,
        first: BatchPosition,
        limit: usize,
    ) -> Result<Option<FileRegion>, LogError> {
        let start = first.position;
        let mut end = first.header.total_size();
        let next = start.saturating_add(end as u32);
        for b in self.batches_from(next) {
            let b = b?;
            let batch_end = (b.position - start) as usize + b.header.total_size();
            if batch_end > limit {
                break;
            }
            end = batch_end;
        }
        self.file
            .region_at(end, u64::from(start))
            .map_err(|e| LogError::io(&self.log_path, e))
    }

    /// Decides whether the next append must go to a new segment (Kafka's `shouldRoll`).
    pub fn should_roll(
        &mut self,
        params: &RollParams,
        config: &LogConfig,
    ) -> Result<bool, LogError> {
        let waited = self.time_waited_for_roll(params.now_ms, params.max_timestamp_in_messages)?;
        let reached_roll_ms = waited > config.segment_ms.saturating_sub(config.segment_jitter_ms);
        let size = u64::from(self.size);
        Ok(
            size + params.messages_size as u64 > u64::from(config.segment_bytes)
                || (size > 0 && reached_roll_ms)
                || self.offset_index.is_full()
                || self.time_index.is_full()
                || !self.can_convert_to_relative_offset(params.max_offset_in_messages),
        )
    }

    fn time_waited_for_roll(
        &mut self,
        now_ms: i64,
        message_timestamp: i64,
    ) -> Result<i64, LogError> {
        if self.rolling_based_timestamp.is_none() {
            if let Some(b) = self.batches_from(0).next() {
                self.rolling_based_timestamp = Some(b?.header.max_timestamp);
            }
        }
        match self.rolling_based_timestamp {
            Some(ts) if ts >= 0 => Ok(message_timestamp.saturating_sub(ts)),
            _ => Ok(now_ms.saturating_sub(self.created_ms)),
        }
    }

    /// The first record with timestamp `>= timestamp` and offset `>= starting_offset` (Kafka's
    /// `findOffsetByTimestamp`), found via the time index, the offset index and a scan.
    pub fn find_offset_by_timestamp(
        &self,
        timestamp: i64,
        starting_offset: i64,
    ) -> Result<Option<TimestampOffset>, LogError> {
        let ts_entry = self.time_index.lookup(timestamp);
        let position = self.indexed_position(ts_entry.offset.max(starting_offset));
        for b in self.batches_from(position) {
            let b = b?;
            if b.header.max_timestamp >= timestamp && b.header.last_offset() >= starting_offset {
                let bytes = self.read_bytes(b.position, b.header.total_size())?;
                if let Some(found) = crate::records::first_record_at_or_after(
                    bytes,
                    &b.header,
                    timestamp,
                    starting_offset,
                    &josef_records::DecompressLimits::default(),
                ) {
                    return Ok(Some(found));
                }
            }
        }
        Ok(None)
    }

    /// Aborted transactions overlapping `[fetch_offset, upper_bound_offset)`.
    pub fn collect_aborted_txns(
        &self,
        fetch_offset: i64,
        upper_bound_offset: i64,
    ) -> TxnIndexSearchResult {
        self.txn_index
            .collect_aborted_txns(fetch_offset, upper_bound_offset)
    }

    /// Rebuilds the indexes from the `.log` file, checking every batch (CRC, magic, length, offsets
    /// increasing and within the segment's relative range), and cuts the file at the first invalid
    /// byte (Kafka's `LogSegment.recover`). Aborted-transaction entries past the valid data are
    /// dropped; the others are kept (the caller re-tells missing ones while replaying).
    pub fn recover(&mut self) -> Result<SegmentRecovery, LogError> {
        self.offset_index.reset()?;
        self.time_index.reset()?;
        self.max_timestamp_so_far = TimestampOffset {
            timestamp: NO_TIMESTAMP,
            offset: self.base_offset,
        };
        let mut valid: u32 = 0;
        let mut last_index_entry: u32 = 0;
        let mut next_offset = self.base_offset;
        let mut buf: Vec<u8> = Vec::new();
        let mut header_buf = [0u8; BATCH_HEADER_LEN];
        while valid < self.size {
            let avail = (self.size - valid) as usize;
            let n = avail.min(BATCH_HEADER_LEN);
            self.file
                .read_exact_at(&mut header_buf[..n], u64::from(valid))
                .map_err(|e| LogError::io(&self.log_path, e))?;
            let header = match next_batch_header(&header_buf[..n], avail) {
                Some(h) => h,
                None => break,
            };
            let total = header.total_size();
            // `total <= avail` was checked, so the allocation is bounded by the file size.
            buf.resize(total, 0);
            self.file
                .read_exact_at(&mut buf, u64::from(valid))
                .map_err(|e| LogError::io(&self.log_path, e))?;
            if !crc_is_valid(&buf, &header)
                || header.last_offset_delta < 0
                || header.base_offset < next_offset
                || !self.can_convert_to_relative_offset(header.last_offset())
            {
                break;
            }
            if header.max_timestamp > self.max_timestamp_so_far.timestamp {
                self.max_timestamp_so_far = TimestampOffset {
                    timestamp: header.max_timestamp,
                    offset: header.last_offset(),
                };
            }
            if valid - last_index_entry > self.index_interval_bytes {
                self.offset_index.append(header.last_offset(), valid)?;
                self.time_index.maybe_append(
                    self.max_timestamp_so_far.timestamp,
                    self.max_timestamp_so_far.offset,
                    false,
                )?;
                last_index_entry = valid;
            }
            valid += total as u32;
            next_offset = header.next_offset();
        }
        let truncated = u64::from(self.size - valid);
        if truncated > 0 {
            self.file
                .set_len(u64::from(valid))
                .map_err(|e| LogError::io(&self.log_path, e))?;
            self.size = valid;
        }
        self.txn_index.truncate_to(next_offset)?;
        self.bytes_since_last_index_entry = valid - last_index_entry;
        self.rolling_based_timestamp = None;
        self.offset_index.trim_to_valid_size()?;
        self.time_index.maybe_append(
            self.max_timestamp_so_far.timestamp,
            self.max_timestamp_so_far.offset,
            true,
        )?;
        self.time_index.trim_to_valid_size()?;
        self.materialize_indexes()?;
        Ok(SegmentRecovery {
            truncated_bytes: truncated,
            next_offset,
        })
    }

    /// Drops the index mappings (the next lookup or append maps again): what an open leaves of a
    /// segment it rebuilt, so that recovering thousands of partitions does not keep two mappings
    /// each.
    pub fn unmap_indexes(&mut self) {
        self.offset_index.unmap();
        self.time_index.unmap();
    }

    /// Checks the indexes of a segment loaded after a clean shutdown.
    pub fn sanity_check(&self) -> Result<(), LogError> {
        self.offset_index.sanity_check(u64::from(self.size))?;
        self.time_index.sanity_check()
    }

    /// Checks every index entry (after an unclean stop).
    pub fn full_index_check(&self) -> Result<(), LogError> {
        self.offset_index.full_check(u64::from(self.size))?;
        self.time_index.full_check()
    }

    /// Removes every batch holding offsets `>= offset` (whole batches) and the index entries that
    /// point at them. Returns the first removed batch's base offset, if any batch was removed.
    pub fn truncate_to(&mut self, offset: i64) -> Result<Option<i64>, LogError> {
        let mapping = self.translate_offset(offset, 0)?;
        self.offset_index.truncate_to(offset)?;
        self.time_index.truncate_to(offset)?;
        self.txn_index.truncate_to(offset)?;
        self.offset_index.grow_to_max()?;
        self.time_index.grow_to_max()?;
        let removed = match mapping {
            None => None,
            Some(b) => {
                self.file
                    .set_len(u64::from(b.position))
                    .map_err(|e| LogError::io(&self.log_path, e))?;
                self.size = b.position;
                Some(b.header.base_offset)
            }
        };
        if self.size == 0 {
            self.rolling_based_timestamp = None;
        }
        self.bytes_since_last_index_entry = 0;
        self.max_timestamp_so_far = self.read_largest_timestamp()?;
        Ok(removed)
    }

    fn read_largest_timestamp(&self) -> Result<TimestampOffset, LogError> {
        let last = self.time_index.last_entry();
        let mut best = last;
        let position = self.indexed_position(last.offset);
        for b in self.batches_from(position) {
            let h = b?.header;
            if h.max_timestamp > best.timestamp {
                best = TimestampOffset {
                    timestamp: h.max_timestamp,
                    offset: h.last_offset(),
                };
            }
        }
        Ok(best)
    }

    /// Prepares a segment that stops being the active one: final time index entry, trimmed indexes.
    pub fn on_become_inactive(&mut self) -> Result<(), LogError> {
        self.time_index.maybe_append(
            self.max_timestamp_so_far.timestamp,
            self.max_timestamp_so_far.offset,
            true,
        )?;
        self.offset_index.trim_to_valid_size()?;
        self.time_index.trim_to_valid_size()?;
        self.materialize_indexes()
    }

    /// Makes the segment ready to take appends: indexes grown to their preallocated size.
    pub fn on_become_active(&mut self) -> Result<(), LogError> {
        self.offset_index.grow_to_max()?;
        self.time_index.grow_to_max()?;
        // Index entries are written once more than `index.interval.bytes` were appended since the
        // last one; resume counting from the last entry.
        let last = self.offset_index.last_entry().position;
        self.bytes_since_last_index_entry = self.size - last.min(self.size);
        Ok(())
    }

    /// Fsyncs the `.log` file, both indexes and the `.txnindex`.
    pub fn flush(&mut self) -> Result<(), LogError> {
        self.file
            .sync_data()
            .map_err(|e| LogError::io(&self.log_path, e))?;
        self.offset_index.flush()?;
        self.time_index.flush()?;
        self.txn_index.flush()
    }

    /// Closes the segment: final time index entry, trimmed indexes, fsync.
    pub fn close(mut self) -> Result<(), LogError> {
        self.on_become_inactive()?;
        self.flush()
    }

    /// [`LogSegment::close`] of a segment whose `.log` the log has already fsynced (its recovery
    /// point is past the segment's end): only the indexes are synced. Syncing the `.log` again
    /// synced nothing, but an idle partition's descriptor may be closed by the bounded storage,
    /// and reopening it for that was a file open per partition at every shutdown (issue #22).
    pub(crate) fn close_flushed(mut self) -> Result<(), LogError> {
        self.on_become_inactive()?;
        self.offset_index.flush()?;
        self.time_index.flush()?;
        self.txn_index.flush()
    }

    /// [`LogSegment::close`] with nothing synced: the caller syncs the whole file system
    /// ([`crate::Log::close_unsynced`]).
    pub(crate) fn close_unsynced(mut self) -> Result<(), LogError> {
        self.on_become_inactive()
    }

    /// Largest timestamp for retention: the max timestamp, or the file's mtime if no batch has one.
    pub fn largest_timestamp(&self) -> i64 {
        if self.max_timestamp_so_far.timestamp >= 0 {
            return self.max_timestamp_so_far.timestamp;
        }
        self.last_modified_ms()
    }

    /// The `.log` file's modification time in ms.
    pub fn last_modified_ms(&self) -> i64 {
        self.file.modified_ms().unwrap_or(0)
    }

    /// All files of the segment (the `.txnindex` may not exist).
    pub(crate) fn file_paths(&self) -> [PathBuf; 4] {
        [
            self.log_path.clone(),
            self.offset_index.path().to_path_buf(),
            self.time_index.path().to_path_buf(),
            self.txn_index.path().to_path_buf(),
        ]
    }

    /// Renames the four files, replacing `old_suffix` with `new_suffix` at the end of each name.
    pub(crate) fn change_file_suffixes(
        &mut self,
        old_suffix: &str,
        new_suffix: &str,
    ) -> Result<(), LogError> {
        let swap = |p: &Path| -> PathBuf {
            let s = p.to_string_lossy();
            let stem = s.strip_suffix(old_suffix).unwrap_or(&s);
            PathBuf::from(format!("{stem}{new_suffix}"))
        };
        let to = swap(&self.log_path);
        self.storage
            .rename(&self.log_path, &to)
            .map_err(|e| LogError::io(&self.log_path, e))?;
        self.log_path = to;
        let to = swap(self.offset_index.path());
        self.offset_index.rename(&*self.storage, &to)?;
        let to = swap(self.time_index.path());
        self.time_index.rename(&*self.storage, &to)?;
        let to = swap(self.txn_index.path());
        self.txn_index.rename(&to)?;
        Ok(())
    }

    /// Deletes the segment's files.
    pub fn delete(self) -> Result<(), LogError> {
        let paths = self.file_paths();
        let storage = self.storage.clone();
        drop(self);
        for p in paths {
            storage::remove_if_exists(&*storage, &p).map_err(|e| LogError::io(&p, e))?;
        }
        Ok(())
    }

    /// The last offset index entry (for tools and tests).
    pub fn last_index_entry(&self) -> OffsetPosition {
        self.offset_index.last_entry()
    }
}

/// Parses a header for recovery: `None` for a torn or invalid one.
fn next_batch_header(header_bytes: &[u8], avail: usize) -> Option<BatchHeader> {
    if header_bytes.len() < BATCH_HEADER_LEN {
        return None;
    }
    let h = BatchHeader::parse(header_bytes).ok()?;
    (h.total_size() <= avail).then_some(h)
}

/// Result of a segment read.
#[derive(Debug, Clone)]
pub struct SegmentRead {
    /// Position of the first batch.
    pub position: u32,
    /// Header of the first batch.
    pub first: BatchHeader,
    /// Whole batches (empty when they come as `region`).
    pub records: Bytes,
    /// The whole batches as a range of the segment file, from [`LogSegment::read_region`].
    pub region: Option<FileRegion>,
    /// The first batch did not fit `max_size` and `min_one_message` was off.
    pub first_entry_incomplete: bool,
}

/// Inputs of [`LogSegment::should_roll`] (Kafka's `RollParams`).
#[derive(Debug, Clone, Copy)]
pub struct RollParams {
    /// Largest timestamp of the incoming batches.
    pub max_timestamp_in_messages: i64,
    /// Last offset of the incoming batches.
    pub max_offset_in_messages: i64,
    /// Size of the incoming batches.
    pub messages_size: usize,
    /// Current time.
    pub now_ms: i64,
}

/// Iterator over batch headers of a segment.
#[derive(Debug)]
pub struct BatchIter<'a> {
    segment: &'a LogSegment,
    position: u32,
}

impl Iterator for BatchIter<'_> {
    type Item = Result<BatchPosition, LogError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.segment.batch_at(self.position) {
            Ok(None) => None,
            Ok(Some(b)) => {
                self.position = self.position.saturating_add(b.header.total_size() as u32);
                Some(Ok(b))
            }
            Err(e) => {
                // Stop after an error so a broken file does not loop.
                self.position = u32::MAX;
                Some(Err(e))
            }
        }
    }
}
