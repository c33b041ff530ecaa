//! Runs handlers against a shard: append their records, replay them, and hold their responses until
//! the records are committed.

use crate::{
    CoordinatorResult, CoordinatorShard, DeferredResponses, DriverError, LoadedLog, LogEntry,
    PartitionWriter, ReplayError, TransactionResult, NO_PRODUCER_EPOCH, NO_PRODUCER_ID,
};

/// Drives one coordinator shard over one partition writer, the way Kafka's `CoordinatorRuntime`
/// does for one coordinator partition, minus the threads: the broker calls it from one task.
///
/// - [`write`](Self::write) runs a handler on the current state (the handler cannot mutate it),
///   appends the returned records, replays them into the shard, and holds the response until the
///   high watermark passes the last record. A handler that returns no records still waits for
///   earlier uncommitted writes, because its answer may depend on them (read-your-writes safety).
/// - If the append fails, nothing is replayed: the shard is exactly as before.
/// - [`on_high_watermark`](Self::on_high_watermark) releases the responses the new high watermark
///   makes durable; [`fail_all`](Self::fail_all) hands back the held ones when the partition is lost.
/// - [`load`](Self::load) / [`load_log`](Self::load_log) rebuild the shard from the stored
///   entries with the same `replay`.
///
/// `T` is whatever the broker needs to answer later (usually the response plus a correlation id
/// or a channel).
///
/// ```
/// use josef_coordinator::{
///     CoordinatorDriver, CoordinatorResult, CoordinatorShard, InMemoryPartitionWriter, ReplayError,
/// };
///
/// #[derive(Default)]
/// struct Counter { total: u64 }
/// impl CoordinatorShard for Counter {
///     type Record = u64;
///     fn replay(&mut self, _o: i64, _p: i64, _e: i16, r: &u64) -> Result<(), ReplayError> {
///         self.total += r;
///         Ok(())
///     }
/// }
///
/// let mut driver = CoordinatorDriver::new(Counter::default(), InMemoryPartitionWriter::new());
/// // The handler sees the state and returns records plus the response (here: the new total).
/// let now = driver
///     .write(|c: &Counter| CoordinatorResult::new(vec![3], c.total + 3))
///     .unwrap();
/// assert_eq!(now, None);                        // held: offset 0 is not committed yet
/// assert_eq!(driver.read(|c| c.total), 3);      // but already replayed
/// let hw = driver.writer_mut().commit_all();    // replication caught up
/// assert_eq!(driver.on_high_watermark(hw), vec![3]);
///
/// // A restart: a fresh shard loaded from the stored entries ends in the same state.
/// let entries = driver.writer().entries().to_vec();
/// let mut restarted: CoordinatorDriver<_, _, u64> =
///     CoordinatorDriver::new(Counter::default(), InMemoryPartitionWriter::new());
/// restarted.load(entries).unwrap();
/// assert_eq!(restarted.read(|c| c.total), 3);
/// ```
#[derive(Debug)]
pub struct CoordinatorDriver<S, W, T> {
    shard: S,
    writer: W,
    deferred: DeferredResponses<T>,
    /// Offset of the last entry written or loaded; −1 when none.
    last_written_offset: i64,
    /// High watermark last reported: entries below it are committed.
    high_watermark: i64,
}

impl<S, W, T> CoordinatorDriver<S, W, T>
where
    S: CoordinatorShard,
    W: PartitionWriter<S::Record>,
{
    /// A driver over an empty partition. Use [`load`](Self::load) to replay existing entries.
    pub fn new(shard: S, writer: W) -> Self {
        Self {
            shard,
            writer,
            deferred: DeferredResponses::new(),
            last_written_offset: -1,
            high_watermark: 0,
        }
    }

    /// Runs a write handler with no producer (a plain coordinator write). Returns the response if
    /// it can be released now, `None` if it is held until [`on_high_watermark`](Self::on_high_watermark).
    pub fn write<F>(&mut self, handler: F) -> Result<Option<T>, DriverError>
    where
        F: FnOnce(&S) -> CoordinatorResult<S::Record, T>,
    {
        self.write_transactional(NO_PRODUCER_ID, NO_PRODUCER_EPOCH, handler)
    }

    /// Runs a write handler whose records are appended transactionally by `producer_id` /
    /// `producer_epoch` (e.g. TxnOffsetCommit); they become final with
    /// [`complete_transaction`](Self::complete_transaction).
    pub fn write_transactional<F>(
        &mut self,
        producer_id: i64,
        producer_epoch: i16,
        handler: F,
    ) -> Result<Option<T>, DriverError>
    where
        F: FnOnce(&S) -> CoordinatorResult<S::Record, T>,
    {
        let CoordinatorResult { records, response } = handler(&self.shard);
        if records.is_empty() {
            return Ok(self.release_or_hold(self.last_written_offset, response));
        }
        let last = self.writer.append(producer_id, producer_epoch, &records)?;
        let first = last - (records.len() as i64 - 1);
        self.last_written_offset = last;
        for (i, record) in records.iter().enumerate() {
            self.shard
                .replay(first + i as i64, producer_id, producer_epoch, record)?;
        }
        Ok(self.release_or_hold(last, response))
    }

    /// Writes a transaction marker for `producer_id` into this partition and replays it, so the
    /// shard materialises (commit) or drops (abort) that producer's pending transactional records.
    /// `response` is released once the marker is committed.
    pub fn complete_transaction(
        &mut self,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        result: TransactionResult,
        response: T,
    ) -> Result<Option<T>, DriverError> {
        let offset = self.writer.append_end_transaction_marker(
            producer_id,
            producer_epoch,
            coordinator_epoch,
            result,
        )?;
        self.last_written_offset = offset;
        self.shard
            .replay_end_transaction_marker(offset, producer_id, producer_epoch, result)?;
        Ok(self.release_or_hold(offset, response))
    }

    /// Runs a read-only handler on the current (possibly not yet committed) state.
    pub fn read<U>(&self, handler: impl FnOnce(&S) -> U) -> U {
        handler(&self.shard)
    }

    /// Records the partition's new high watermark and returns the responses it releases, in
    /// offset order. A lower value than already seen is ignored.
    pub fn on_high_watermark(&mut self, high_watermark: i64) -> Vec<T> {
        self.high_watermark = self.high_watermark.max(high_watermark);
        self.deferred.release(self.high_watermark)
    }

    /// Replays stored entries (in offset order) into the shard, as when the partition is loaded at
    /// startup or on becoming leader. The entries are taken as committed. Returns how many were
    /// replayed; on error the shard is partially loaded and should be discarded.
    pub fn load<I>(&mut self, entries: I) -> Result<usize, ReplayError>
    where
        I: IntoIterator,
        I::Item: Into<LogEntry<S::Record>>,
    {
        let n = self.replay_entries(entries)?;
        self.high_watermark = self.high_watermark.max(self.last_written_offset + 1);
        Ok(n)
    }

    /// Replays a partition read with [`LoadedLog::read`] whose high watermark is `high_watermark`,
    /// as a new leader loads it: everything up to the log end is replayed, but only what is
    /// below the high watermark counts as committed (a new leader can hold records its followers
    /// do not have yet), so answers given before the high watermark passes the log end wait for
    /// it, as later writes do (Kafka's loader sets the last written offset to the log end and the
    /// last committed one to the high watermark). Returns how many entries were replayed; on
    /// error the shard is partially loaded and should be discarded.
    ///
    /// ```
    /// use josef_coordinator::{
    ///     CoordinatorDriver, CoordinatorShard, InMemoryPartitionWriter, LoadedLog, ReplayError,
    /// };
    /// # #[derive(Default)]
    /// # struct Counter { total: u64 }
    /// # impl CoordinatorShard for Counter {
    /// #     type Record = u64;
    /// #     fn replay(&mut self, _o: i64, _p: i64, _e: i16, r: &u64) -> Result<(), ReplayError> {
    /// #         self.total += r;
    /// #         Ok(())
    /// #     }
    /// # }
    /// let log: LoadedLog<u64> = LoadedLog::read(Vec::new(), &NoSerde);
    /// # struct NoSerde;
    /// # impl josef_coordinator::RecordSerde<u64> for NoSerde {
    /// #     fn serialize(&self, _: &u64) -> (Option<bytes::Bytes>, Option<bytes::Bytes>) { (None, None) }
    /// #     fn deserialize(&self, _: &[u8], _: Option<&[u8]>) -> Result<u64, josef_coordinator::SerdeError> { Ok(0) }
    /// # }
    /// let log = LoadedLog { log_end_offset: 5, ..log };
    /// let mut d: CoordinatorDriver<_, _, &str> =
    ///     CoordinatorDriver::new(Counter::default(), InMemoryPartitionWriter::new());
    /// d.load_log(log, 3).unwrap();
    /// assert_eq!((d.last_written_offset(), d.high_watermark()), (4, 3));
    /// // A read-only answer waits for offsets 3 and 4 to be committed.
    /// assert_eq!(d.write(|_| josef_coordinator::CoordinatorResult::new(vec![], "read")), Ok(None));
    /// assert_eq!(d.on_high_watermark(5), vec!["read"]);
    /// ```
    pub fn load_log(
        &mut self,
        log: LoadedLog<S::Record>,
        high_watermark: i64,
    ) -> Result<usize, ReplayError> {
        let n = self.replay_entries(log.entries)?;
        self.last_written_offset = self.last_written_offset.max(log.log_end_offset - 1);
        self.high_watermark = self
            .high_watermark
            .max(high_watermark.min(self.last_written_offset + 1));
        Ok(n)
    }

    fn replay_entries<I>(&mut self, entries: I) -> Result<usize, ReplayError>
    where
        I: IntoIterator,
        I::Item: Into<LogEntry<S::Record>>,
    {
        let mut n = 0;
        for entry in entries {
            let entry = entry.into();
            entry.replay_into(&mut self.shard)?;
            self.last_written_offset = self.last_written_offset.max(entry.offset());
            n += 1;
        }
        Ok(n)
    }

    /// Hands back every held response, e.g. to answer NOT_COORDINATOR when the partition is lost.
    pub fn fail_all(&mut self) -> Vec<T> {
        self.deferred.fail_all()
    }

    /// The shard (current state, including replayed but uncommitted records).
    pub fn shard(&self) -> &S {
        &self.shard
    }

    /// Mutable access to the shard, for operations outside the record path (e.g. configuration).
    /// State that must survive a restart must only change through records.
    pub fn shard_mut(&mut self) -> &mut S {
        &mut self.shard
    }

    /// The partition writer.
    pub fn writer(&self) -> &W {
        &self.writer
    }

    /// Mutable access to the partition writer (tests use it to fail appends or move the HW).
    pub fn writer_mut(&mut self) -> &mut W {
        &mut self.writer
    }

    /// Offset of the last entry written or loaded (−1 if none).
    pub fn last_written_offset(&self) -> i64 {
        self.last_written_offset
    }

    /// The last high watermark reported.
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }

    /// Number of responses held until their records commit.
    pub fn pending_responses(&self) -> usize {
        self.deferred.len()
    }

    /// Takes the driver apart (e.g. to restart with a new shard over the same writer).
    pub fn into_parts(self) -> (S, W) {
        (self.shard, self.writer)
    }

    fn release_or_hold(&mut self, offset: i64, response: T) -> Option<T> {
        if offset < self.high_watermark {
            Some(response)
        } else {
            self.deferred.push(offset, response);
            None
        }
    }
}
