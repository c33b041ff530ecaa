//! The Raft log on disk: openraft's [`RaftLogStorage`] over segment files.
//!
//! # Files (all under the quorum's directory)
//!
//! - `log-<first index, 20 digits>.seg`: segments of log records, appended to, fsynced on every
//!   append when [`QuorumConfig::fsync`](crate::QuorumConfig::fsync) is on. A record is
//!   `body length: u32 LE | crc32c(body): u32 LE | body`, the body
//!   `version 1: u8 | index: u64 | term: u64 | leader node id: u64 | kind: u8 | ...` (all LE), then
//!   for kind 0 (blank) nothing, kind 1 (normal) `count: u32` and `length: u32 | bytes` per record
//!   of the batch, kind 2 (membership) `length: u32 | JSON of openraft's Membership`.
//!   A new segment starts when the last one reached `segment_bytes`.
//! - `vote.json`: the vote (term, voted-for, committed), replaced atomically and fsynced before
//!   openraft acts on it.
//! - `purged.json`: the last log id purged (removed below a snapshot), written before the
//!   segments are deleted.
//! - `committed.json`: the last committed log id, replaced atomically (not fsynced: an old value
//!   only makes a restarted node re-apply less at once; it learns the rest from the leader).
//!
//! # Recovery
//!
//! At open every segment is read in order. A record cut short (a torn write), one whose CRC does
//! not match, one that does not decode, or one whose index does not follow the previous one ends
//! the log: the segment is truncated there and every later segment deleted, with a warning. Raft
//! then fetches what is missing from the leader. A vote or purged file that does not parse is an
//! error ([`QuorumError::Corrupt`]): guessing it could break Raft's safety.
//!
//! All entries after the purge point are also kept in memory (the metadata log is small and
//! regularly snapshotted), so reads never touch the disk.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{
    CommittedLeaderId, EntryPayload, Membership, OptionalSend, RaftLogReader, StorageIOError,
};

use crate::error::QuorumError;
use crate::files::{blocking, read_optional, replace_file, sync_dir, Reader};
use crate::types::{Batch, Entry, LogId, StorageError, TypeConfig, Vote};

/// Records larger than this are taken as corruption when read back.
const MAX_RECORD_BYTES: u32 = 256 * 1024 * 1024;
const RECORD_HEADER: usize = 8;
const ENTRY_VERSION: u8 = 1;

/// Counters shared between the log, the state machine and the quorum handle. An index of
/// `u64::MAX` (only a damaged file holds one) is kept as `u64::MAX - 1` rather than overflowing.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    /// Last committed index + 1 (0 = nothing committed).
    pub(crate) committed_plus_one: AtomicU64,
    /// Last applied index + 1 (0 = nothing applied).
    pub(crate) applied_plus_one: AtomicU64,
    /// Last index in the local log + 1 (0 = empty).
    pub(crate) last_log_plus_one: AtomicU64,
    /// The term and leader of the last applied entry.
    pub(crate) applied_leader: Mutex<Option<(u64, u64)>>,
    /// Woken whenever the committed index is saved (observer fetches long-poll on it).
    pub(crate) commits: tokio::sync::Notify,
}

impl Progress {
    pub(crate) fn committed(&self) -> Option<u64> {
        self.committed_plus_one
            .load(Ordering::Acquire)
            .checked_sub(1)
    }
    pub(crate) fn applied(&self) -> Option<u64> {
        self.applied_plus_one.load(Ordering::Acquire).checked_sub(1)
    }
    pub(crate) fn set_committed(&self, index: Option<u64>) {
        self.committed_plus_one
            .store(index.map_or(0, |i| i.saturating_add(1)), Ordering::Release);
        self.commits.notify_waiters();
    }
    pub(crate) fn set_applied(&self, log_id: Option<LogId>) {
        if let Ok(mut g) = self.applied_leader.lock() {
            *g = log_id.map(|l| (l.leader_id.term, l.leader_id.node_id));
        }
        self.applied_plus_one.store(
            log_id.map_or(0, |l| l.index.saturating_add(1)),
            Ordering::Release,
        );
    }
    /// The (term, leader) of the last applied entry.
    pub(crate) fn applied_leader(&self) -> Option<(u64, u64)> {
        self.applied_leader.lock().ok().and_then(|g| *g)
    }
    pub(crate) fn last_log(&self) -> Option<u64> {
        self.last_log_plus_one
            .load(Ordering::Acquire)
            .checked_sub(1)
    }
    fn set_last_log(&self, index: Option<u64>) {
        self.last_log_plus_one
            .store(index.map_or(0, |i| i.saturating_add(1)), Ordering::Release);
    }
}

/// Encodes one entry as a record body (see the module docs).
pub(crate) fn encode_entry(e: &Entry) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.push(ENTRY_VERSION);
    out.extend_from_slice(&e.log_id.index.to_le_bytes());
    out.extend_from_slice(&e.log_id.leader_id.term.to_le_bytes());
    out.extend_from_slice(&e.log_id.leader_id.node_id.to_le_bytes());
    match &e.payload {
        EntryPayload::Blank => out.push(0),
        EntryPayload::Normal(batch) => {
            out.push(1);
            out.extend_from_slice(&(batch.0.len() as u32).to_le_bytes());
            for r in &batch.0 {
                out.extend_from_slice(&(r.len() as u32).to_le_bytes());
                out.extend_from_slice(r);
            }
        }
        EntryPayload::Membership(m) => {
            out.push(2);
            // Serializing a Membership of u64 ids and string addresses cannot fail.
            let json = serde_json::to_vec(m).unwrap_or_default();
            out.extend_from_slice(&(json.len() as u32).to_le_bytes());
            out.extend_from_slice(&json);
        }
    }
    out
}

/// Decodes a record body written by [`encode_entry`].
pub(crate) fn decode_entry(body: &[u8]) -> Result<Entry, String> {
    let mut r = Reader::new(body);
    let version = r.u8()?;
    if version != ENTRY_VERSION {
        return Err(format!("unknown entry version {version}"));
    }
    let index = r.u64()?;
    let term = r.u64()?;
    let node = r.u64()?;
    let payload = match r.u8()? {
        0 => EntryPayload::Blank,
        1 => {
            let n = r.u32()? as usize;
            // Each record takes at least its 4-byte length: bound the allocation by the input.
            if n > r.remaining() / 4 {
                return Err(format!("batch of {n} records in {} bytes", r.remaining()));
            }
            let mut records = Vec::with_capacity(n);
            for _ in 0..n {
                let len = r.u32()? as usize;
                records.push(Bytes::copy_from_slice(r.take(len)?));
            }
            EntryPayload::Normal(Batch(records))
        }
        2 => {
            let len = r.u32()? as usize;
            let m: Membership<u64, openraft::BasicNode> =
                serde_json::from_slice(r.take(len)?).map_err(|e| format!("membership: {e}"))?;
            EntryPayload::Membership(m)
        }
        k => return Err(format!("unknown entry kind {k}")),
    };
    if r.remaining() != 0 {
        return Err(format!("{} trailing bytes", r.remaining()));
    }
    Ok(Entry {
        log_id: LogId::new(CommittedLeaderId::new(term, node), index),
        payload,
    })
}

/// Frames a record body: length, CRC32C, body.
fn frame_record(body: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(body).to_le_bytes());
    out.extend_from_slice(body);
}

fn segment_name(first: u64) -> String {
    format!("log-{first:020}.seg")
}

pub(crate) fn parse_segment_name(name: &str) -> Option<u64> {
    name.strip_prefix("log-")?
        .strip_suffix(".seg")?
        .parse()
        .ok()
}

#[derive(Debug)]
struct Segment {
    path: PathBuf,
    len: u64,
}

/// The log's state, behind one mutex shared by the storage and its readers.
#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    fsync: bool,
    segment_bytes: u64,
    /// Entries after the purge point.
    entries: BTreeMap<u64, Entry>,
    /// Index -> (segment's first index, byte offset of its record).
    positions: BTreeMap<u64, (u64, u64)>,
    /// Segments by first index.
    segments: BTreeMap<u64, Segment>,
    /// The segment appended to, and its file.
    active: Option<(u64, File)>,
    vote: Option<Vote>,
    committed: Option<LogId>,
    purged: Option<LogId>,
}

impl Inner {
    fn last_log_id(&self) -> Option<LogId> {
        self.entries
            .values()
            .next_back()
            .map(|e| e.log_id)
            .or(self.purged)
    }

    fn open(dir: &Path, fsync: bool, segment_bytes: u64) -> Result<Inner, QuorumError> {
        fs::create_dir_all(dir)
            .map_err(|e| QuorumError::io(format!("create {}", dir.display()), e))?;
        let vote: Option<Vote> = read_json(&dir.join("vote.json"))?;
        let purged: Option<LogId> = read_json(&dir.join("purged.json"))?;
        let committed: Option<LogId> = match read_json(&dir.join("committed.json")) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("ignoring {}: {e}", dir.join("committed.json").display());
                None
            }
        };
        let mut names = Vec::new();
        let rd =
            fs::read_dir(dir).map_err(|e| QuorumError::io(format!("list {}", dir.display()), e))?;
        for ent in rd {
            let ent = ent.map_err(|e| QuorumError::io(format!("list {}", dir.display()), e))?;
            let name = ent.file_name().to_string_lossy().into_owned();
            if let Some(first) = parse_segment_name(&name) {
                names.push(first);
            }
        }
        names.sort_unstable();

        let mut inner = Inner {
            dir: dir.to_path_buf(),
            fsync,
            segment_bytes,
            entries: BTreeMap::new(),
            positions: BTreeMap::new(),
            segments: BTreeMap::new(),
            active: None,
            vote,
            committed,
            purged,
        };
        let purged_index = purged.map(|p| p.index);
        let mut expected: Option<u64> = purged_index.map(|p| p.saturating_add(1));
        let mut broken = false;
        for first in names {
            let path = dir.join(segment_name(first));
            if broken {
                tracing::warn!(
                    "metadata log: deleting {} after a damaged segment",
                    path.display()
                );
                fs::remove_file(&path)
                    .map_err(|e| QuorumError::io(format!("delete {}", path.display()), e))?;
                continue;
            }
            let data = fs::read(&path)
                .map_err(|e| QuorumError::io(format!("read {}", path.display()), e))?;
            let mut pos = 0usize;
            while pos < data.len() {
                match read_record(&data[pos..]) {
                    Ok((entry, used)) => {
                        let index = entry.log_id.index;
                        let stale = purged_index.is_some_and(|p| index <= p);
                        if !stale {
                            // Nothing can follow index u64::MAX: damage, like an index out of
                            // sequence.
                            let next = index.checked_add(1);
                            if next.is_none() || expected.is_some_and(|exp| index != exp) {
                                tracing::warn!(
                                    "metadata log: {} offset {pos}: index {index} where {expected:?} \
                                     was expected; truncating the log there",
                                    path.display()
                                );
                                broken = true;
                                break;
                            }
                            expected = next;
                            inner.positions.insert(index, (first, pos as u64));
                            inner.entries.insert(index, entry);
                        }
                        pos += used;
                    }
                    Err(why) => {
                        tracing::warn!(
                            "metadata log: {} offset {pos} of {}: {why}; truncating the log there",
                            path.display(),
                            data.len()
                        );
                        broken = true;
                        break;
                    }
                }
            }
            if broken {
                truncate_file(&path, pos as u64, fsync)?;
            }
            inner.segments.insert(
                first,
                Segment {
                    path,
                    len: pos as u64,
                },
            );
        }
        // Append to the last segment.
        if let Some((&first, seg)) = inner.segments.iter().next_back() {
            let f = OpenOptions::new()
                .append(true)
                .open(&seg.path)
                .map_err(|e| QuorumError::io(format!("open {}", seg.path.display()), e))?;
            inner.active = Some((first, f));
        }
        Ok(inner)
    }

    fn append(&mut self, entries: Vec<Entry>) -> io::Result<()> {
        let mut buf = Vec::new();
        let mut pending: Vec<(u64, Entry)> = Vec::new();
        for e in entries {
            let body = encode_entry(&e);
            let roll = match &self.active {
                None => true,
                Some((first, _)) => {
                    let seg_len = self.segments.get(first).map_or(0, |s| s.len) + buf.len() as u64;
                    seg_len >= self.segment_bytes
                }
            };
            if roll {
                self.flush_pending(&mut buf, &mut pending)?;
                self.start_segment(e.log_id.index)?;
            }
            let offset = self.active_len() + buf.len() as u64;
            frame_record(&body, &mut buf);
            pending.push((offset, e));
        }
        self.flush_pending(&mut buf, &mut pending)
    }

    fn active_len(&self) -> u64 {
        match &self.active {
            Some((first, _)) => self.segments.get(first).map_or(0, |s| s.len),
            None => 0,
        }
    }

    /// Writes `buf` to the active segment (fsync if asked), then records the entries in memory.
    fn flush_pending(
        &mut self,
        buf: &mut Vec<u8>,
        pending: &mut Vec<(u64, Entry)>,
    ) -> io::Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let Some((first, file)) = self.active.as_mut() else {
            return Err(io::Error::other("no active segment"));
        };
        let first = *first;
        file.write_all(buf)?;
        if self.fsync {
            file.sync_data()?;
        }
        if let Some(seg) = self.segments.get_mut(&first) {
            seg.len += buf.len() as u64;
        }
        buf.clear();
        for (offset, e) in pending.drain(..) {
            self.positions.insert(e.log_id.index, (first, offset));
            self.entries.insert(e.log_id.index, e);
        }
        Ok(())
    }

    fn start_segment(&mut self, first: u64) -> io::Result<()> {
        let path = self.dir.join(segment_name(first));
        let f = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&path)?;
        drop(f);
        let f = OpenOptions::new().append(true).open(&path)?;
        if self.fsync {
            sync_dir(&self.dir)?;
        }
        self.segments.insert(first, Segment { path, len: 0 });
        self.active = Some((first, f));
        Ok(())
    }

    /// Removes every entry at or after `index`.
    fn truncate(&mut self, index: u64) -> io::Result<()> {
        let Some((_, &(seg_first, offset))) = self.positions.range(index..).next() else {
            // Nothing at or after `index` is stored (positions and entries hold the same keys).
            return Ok(());
        };
        let later: Vec<u64> = self
            .segments
            .range(seg_first + 1..)
            .map(|(k, _)| *k)
            .collect();
        for k in later {
            if let Some(seg) = self.segments.remove(&k) {
                fs::remove_file(&seg.path)?;
            }
        }
        let Some(seg) = self.segments.get_mut(&seg_first) else {
            return Err(io::Error::other("segment of a stored entry is missing"));
        };
        truncate_file(&seg.path, offset, self.fsync)
            .map_err(|e| io::Error::other(e.to_string()))?;
        seg.len = offset;
        let f = OpenOptions::new().append(true).open(&seg.path)?;
        self.active = Some((seg_first, f));
        if self.fsync {
            sync_dir(&self.dir)?;
        }
        self.entries.split_off(&index);
        self.positions.split_off(&index);
        Ok(())
    }

    /// Removes every entry at or before `log_id`, deleting the segments that hold nothing newer.
    fn purge(&mut self, log_id: LogId) -> io::Result<()> {
        let data = serde_json::to_vec(&log_id).map_err(io::Error::other)?;
        replace_file(&self.dir.join("purged.json"), &data, self.fsync)?;
        self.purged = Some(log_id);
        let keep_e = self.entries.split_off(&(log_id.index + 1));
        self.entries = keep_e;
        let keep_p = self.positions.split_off(&(log_id.index + 1));
        self.positions = keep_p;
        let firsts: Vec<u64> = self.segments.keys().copied().collect();
        for (i, first) in firsts.iter().enumerate() {
            let all_purged = match firsts.get(i + 1) {
                Some(next) => *next <= log_id.index + 1,
                None => !self.positions.values().any(|(s, _)| s == first),
            };
            if all_purged {
                if let Some(seg) = self.segments.remove(first) {
                    fs::remove_file(&seg.path)?;
                }
                if self.active.as_ref().is_some_and(|(a, _)| a == first) {
                    self.active = None;
                }
            }
        }
        if self.fsync {
            sync_dir(&self.dir)?;
        }
        Ok(())
    }
}

/// Reads one framed record from the front of `data`: the entry and the bytes used.
pub(crate) fn read_record(data: &[u8]) -> Result<(Entry, usize), String> {
    if data.len() < RECORD_HEADER {
        return Err(format!("torn record header ({} bytes)", data.len()));
    }
    let mut r = Reader::new(data);
    let len = r.u32()?;
    let crc = r.u32()?;
    if len > MAX_RECORD_BYTES {
        return Err(format!("record length {len} over the bound"));
    }
    let len = len as usize;
    if r.remaining() < len {
        return Err(format!(
            "torn record: {len} bytes announced, {} present",
            r.remaining()
        ));
    }
    let body = r.take(len)?;
    if crc32c::crc32c(body) != crc {
        return Err("record CRC mismatch".to_string());
    }
    Ok((decode_entry(body)?, RECORD_HEADER + len))
}

fn truncate_file(path: &Path, len: u64, fsync: bool) -> Result<(), QuorumError> {
    let f = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| QuorumError::io(format!("open {}", path.display()), e))?;
    f.set_len(len)
        .map_err(|e| QuorumError::io(format!("truncate {}", path.display()), e))?;
    if fsync {
        f.sync_all()
            .map_err(|e| QuorumError::io(format!("fsync {}", path.display()), e))?;
    }
    Ok(())
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>, QuorumError> {
    match read_optional(path).map_err(|e| QuorumError::io(format!("read {}", path.display()), e))? {
        None => Ok(None),
        Some(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| QuorumError::Corrupt(format!("{}: {e}", path.display()))),
    }
}

/// openraft's log storage (and log reader: both share the state).
#[derive(Debug, Clone)]
pub(crate) struct LogStore {
    inner: Arc<Mutex<Inner>>,
    progress: Arc<Progress>,
}

fn sio(e: impl std::error::Error + 'static) -> StorageError {
    StorageError::from(StorageIOError::write_logs(openraft::AnyError::new(&e)))
}

impl LogStore {
    /// Opens (and recovers) the log under `dir`.
    pub(crate) fn open(
        dir: &Path,
        fsync: bool,
        segment_bytes: u64,
        progress: Arc<Progress>,
    ) -> Result<LogStore, QuorumError> {
        let inner = Inner::open(dir, fsync, segment_bytes)?;
        progress.set_last_log(inner.last_log_id().map(|l| l.index));
        Ok(LogStore {
            inner: Arc::new(Mutex::new(inner)),
            progress,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the maps half-changed in a way that matters
        // more than the panic itself; keep serving.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether nothing was ever written: no vote, no entry, no purge.
    pub(crate) fn is_pristine(&self) -> bool {
        let g = self.lock();
        g.vote.is_none() && g.entries.is_empty() && g.purged.is_none()
    }

    /// The last purged log id.
    pub(crate) fn purged(&self) -> Option<LogId> {
        self.lock().purged
    }

    /// The entries from `from` to `upto` (inclusive; none when `upto` is `None`), in order and
    /// without gaps, stopping once their records add up to `max_bytes` (the first entry is always
    /// included). Empty when the log does not hold `from` yet. `None` when `from` is at or below
    /// the purge point (the caller sends a snapshot instead).
    pub(crate) fn read_range(
        &self,
        from: u64,
        upto: Option<u64>,
        max_bytes: usize,
    ) -> Option<Vec<Entry>> {
        let g = self.lock();
        if g.purged.is_some_and(|p| from <= p.index) {
            return None;
        }
        let mut out: Vec<Entry> = Vec::new();
        let mut bytes = 0usize;
        let Some(upto) = upto.filter(|u| *u >= from) else {
            return Some(out);
        };
        for (&index, e) in g.entries.range(from..=upto) {
            if index != from + out.len() as u64 {
                break;
            }
            let size = match &e.payload {
                EntryPayload::Normal(b) => b.0.iter().map(|r| r.len() + 8).sum::<usize>(),
                _ => 0,
            } + 32;
            if !out.is_empty() && bytes + size > max_bytes {
                break;
            }
            bytes += size;
            out.push(e.clone());
        }
        Some(out)
    }

    /// The stored entries (for tests and diagnostics).
    #[cfg(test)]
    pub(crate) fn entries(&self) -> Vec<Entry> {
        self.lock().entries.values().cloned().collect()
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        let g = self.lock();
        Ok(g.entries.range(range).map(|(_, e)| e.clone()).collect())
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError> {
        let g = self.lock();
        Ok(LogState {
            last_purged_log_id: g.purged,
            last_log_id: g.last_log_id(),
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), StorageError> {
        let vote_err = |e: String| {
            StorageError::from(StorageIOError::write_vote(openraft::AnyError::error(e)))
        };
        let data = serde_json::to_vec(vote).map_err(|e| vote_err(e.to_string()))?;
        blocking(|| {
            let mut g = self.lock();
            replace_file(&g.dir.join("vote.json"), &data, g.fsync)?;
            g.vote = Some(*vote);
            Ok::<(), io::Error>(())
        })
        .map_err(|e| vote_err(e.to_string()))
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, StorageError> {
        Ok(self.lock().vote)
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError> {
        let data = match committed {
            Some(c) => Some(serde_json::to_vec(&c).map_err(sio)?),
            None => None,
        };
        blocking(|| {
            let mut g = self.lock();
            if let Some(data) = &data {
                replace_file(&g.dir.join("committed.json"), data, false)?;
            }
            g.committed = committed;
            self.progress.set_committed(committed.map(|c| c.index));
            Ok::<(), io::Error>(())
        })
        .map_err(sio)
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError> {
        let g = self.lock();
        let Some(c) = g.committed else {
            return Ok(None);
        };
        // Only trust it when the log still holds that entry (or purged past it).
        let known = g
            .entries
            .get(&c.index)
            .map(|e| e.log_id == c)
            .unwrap_or(false)
            || g.purged.is_some_and(|p| p.index >= c.index);
        if known {
            self.progress.set_committed(Some(c.index));
            Ok(Some(c))
        } else {
            tracing::warn!("metadata log: committed {c} is not in the log any more; ignoring it");
            Ok(None)
        }
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<Entry> = entries.into_iter().collect();
        let res = blocking(|| {
            let mut g = self.lock();
            let res = g.append(entries);
            self.progress.set_last_log(g.last_log_id().map(|l| l.index));
            res
        });
        match res {
            Ok(()) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                tracing::error!("metadata log: append failed: {e}");
                let msg = e.to_string();
                callback.log_io_completed(Err(e));
                Err(sio(io::Error::other(msg)))
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        blocking(|| {
            let mut g = self.lock();
            let res = g.truncate(log_id.index);
            self.progress.set_last_log(g.last_log_id().map(|l| l.index));
            res
        })
        .map_err(sio)
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        blocking(|| {
            let mut g = self.lock();
            let res = g.purge(log_id);
            self.progress.set_last_log(g.last_log_id().map(|l| l.index));
            res
        })
        .map_err(sio)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::storage::RaftLogStorage;

    fn entry(index: u64, term: u64, records: &[&[u8]]) -> Entry {
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(term, 1), index),
            payload: EntryPayload::Normal(Batch(
                records.iter().map(|r| Bytes::copy_from_slice(r)).collect(),
            )),
        }
    }

    fn open(dir: &Path, seg: u64) -> LogStore {
        LogStore::open(dir, true, seg, Arc::new(Progress::default())).unwrap()
    }

    fn append(store: &LogStore, entries: Vec<Entry>) {
        store.lock().append(entries).unwrap();
    }

    fn indexes(store: &LogStore) -> Vec<u64> {
        store.entries().iter().map(|e| e.log_id.index).collect()
    }

    #[test]
    fn entry_codec_round_trip_and_garbage() {
        let mut nodes = BTreeMap::new();
        nodes.insert(
            1u64,
            openraft::BasicNode {
                addr: "127.0.0.1:1".into(),
            },
        );
        let m = Membership::new(vec![[1u64].into_iter().collect()], nodes);
        for e in [
            entry(5, 2, &[b"a", b"", b"xyz"]),
            Entry {
                log_id: LogId::new(CommittedLeaderId::new(3, 2), 6),
                payload: EntryPayload::Blank,
            },
            Entry {
                log_id: LogId::new(CommittedLeaderId::new(0, 0), 0),
                payload: EntryPayload::Membership(m),
            },
        ] {
            let body = encode_entry(&e);
            assert_eq!(decode_entry(&body).unwrap(), e);
            // Every prefix fails cleanly, never panics.
            for cut in 0..body.len() {
                assert!(decode_entry(&body[..cut]).is_err());
            }
        }
        assert!(decode_entry(&[1, 0xff]).is_err());
        let mut huge = encode_entry(&entry(1, 1, &[]));
        let n = huge.len();
        huge[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode_entry(&huge).is_err());
    }

    #[test]
    fn append_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), 1 << 20);
        append(
            &store,
            (0..10)
                .map(|i| entry(i, 1, &[format!("r{i}").as_bytes()]))
                .collect(),
        );
        drop(store);
        let store = open(dir.path(), 1 << 20);
        assert_eq!(indexes(&store), (0..10).collect::<Vec<_>>());
        assert_eq!(store.entries()[3], entry(3, 1, &[b"r3"]));
    }

    #[test]
    fn torn_tail_is_truncated_and_appends_continue() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), 1 << 20);
        append(&store, (0..5).map(|i| entry(i, 1, &[b"payload"])).collect());
        drop(store);
        let seg = dir.path().join(segment_name(0));
        let full = fs::metadata(&seg).unwrap().len();
        // Cut the last record in half: a write torn by a crash.
        let f = OpenOptions::new().write(true).open(&seg).unwrap();
        f.set_len(full - 5).unwrap();
        drop(f);
        let store = open(dir.path(), 1 << 20);
        assert_eq!(indexes(&store), vec![0, 1, 2, 3]);
        append(&store, vec![entry(4, 2, &[b"again"])]);
        drop(store);
        let store = open(dir.path(), 1 << 20);
        assert_eq!(indexes(&store), vec![0, 1, 2, 3, 4]);
        assert_eq!(store.entries()[4], entry(4, 2, &[b"again"]));
    }

    #[test]
    fn corrupt_record_truncates_and_drops_later_segments() {
        let dir = tempfile::tempdir().unwrap();
        // Tiny segments: one record each.
        let store = open(dir.path(), 1);
        append(&store, (0..6).map(|i| entry(i, 1, &[b"abcdef"])).collect());
        drop(store);
        assert!(dir.path().join(segment_name(5)).exists());
        // Flip a byte in the body of record 2.
        let seg = dir.path().join(segment_name(2));
        let mut data = fs::read(&seg).unwrap();
        let last = data.len() - 1;
        data[last] ^= 0xff;
        fs::write(&seg, &data).unwrap();
        // Garbage in the middle of a file is never a panic.
        let store = open(dir.path(), 1);
        assert_eq!(indexes(&store), vec![0, 1]);
        assert!(!dir.path().join(segment_name(5)).exists());
        append(&store, vec![entry(2, 3, &[b"new"])]);
        drop(store);
        let store = open(dir.path(), 1);
        assert_eq!(indexes(&store), vec![0, 1, 2]);
        // Random junk as a whole segment.
        fs::write(dir.path().join(segment_name(3)), b"\xff\xff\xff\xff junk").unwrap();
        let store = open(dir.path(), 1);
        assert_eq!(indexes(&store), vec![0, 1, 2]);
    }

    #[test]
    fn truncate_and_purge_survive_restart() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), 100);
        append(
            &store,
            (0..20).map(|i| entry(i, 1, &[b"0123456789"])).collect(),
        );
        store.lock().truncate(15).unwrap();
        append(&store, vec![entry(15, 2, &[b"x"]), entry(16, 2, &[b"y"])]);
        store
            .lock()
            .purge(LogId::new(CommittedLeaderId::new(1, 1), 9))
            .unwrap();
        assert_eq!(indexes(&store), (10..17).collect::<Vec<_>>());
        drop(store);
        let store = open(dir.path(), 100);
        assert_eq!(indexes(&store), (10..17).collect::<Vec<_>>());
        assert_eq!(store.entries().last().unwrap(), &entry(16, 2, &[b"y"]));
        assert_eq!(store.purged().unwrap().index, 9);
        // Purge past the end (a snapshot installed from the leader), then append after it.
        store
            .lock()
            .purge(LogId::new(CommittedLeaderId::new(2, 1), 100))
            .unwrap();
        assert!(indexes(&store).is_empty());
        append(&store, vec![entry(101, 3, &[b"z"])]);
        drop(store);
        let store = open(dir.path(), 100);
        assert_eq!(indexes(&store), vec![101]);
    }

    /// Damage of every kind (random bytes, flipped bits, cut files) is a truncation, never a
    /// panic or an error, and what survives is a prefix of what was written.
    #[test]
    fn indexes_at_the_end_of_u64_do_not_overflow() {
        // Found with the quorum_storage fuzz target's hook: `index + 1` overflowed (a panic in
        // debug builds, a wrapped `expected` in release ones).
        let dir = tempfile::tempdir().unwrap();
        let seg = dir.path().join(segment_name(0));
        // An entry at u64::MAX ends the log there, and the entry after it is not taken.
        let mut data = Vec::new();
        frame_record(&encode_entry(&entry(u64::MAX, 1, &[])), &mut data);
        frame_record(&encode_entry(&entry(0, 1, &[])), &mut data);
        fs::write(&seg, &data).unwrap();
        let store = open(dir.path(), 1024);
        assert!(indexes(&store).is_empty());
        assert_eq!(fs::metadata(&seg).unwrap().len(), 0);
        drop(store);
        // A purge point at u64::MAX leaves every entry stale.
        let purged = LogId::new(CommittedLeaderId::new(1, 1), u64::MAX);
        fs::write(
            dir.path().join("purged.json"),
            serde_json::to_vec(&purged).unwrap(),
        )
        .unwrap();
        let mut data = Vec::new();
        frame_record(&encode_entry(&entry(5, 1, &[b"x"])), &mut data);
        fs::write(&seg, &data).unwrap();
        let store = open(dir.path(), 1024);
        assert!(indexes(&store).is_empty());
        assert_eq!(store.purged(), Some(purged));
    }

    #[test]
    fn random_damage_never_panics() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..40 {
            let dir = tempfile::tempdir().unwrap();
            let store = LogStore::open(
                dir.path(),
                false,
                64 + rand() % 200,
                Arc::new(Progress::default()),
            )
            .unwrap();
            let written: Vec<Entry> = (0..30)
                .map(|i| {
                    entry(
                        i,
                        1 + i / 10,
                        &[format!("record-{round}-{i}").as_bytes(), b"x"],
                    )
                })
                .collect();
            append(&store, written.clone());
            drop(store);
            let mut segs: Vec<PathBuf> = fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "seg"))
                .collect();
            segs.sort();
            let victim = &segs[(rand() as usize) % segs.len()];
            let mut data = fs::read(victim).unwrap();
            match rand() % 3 {
                0 => {
                    let at = (rand() as usize) % data.len();
                    data[at] ^= 1 << (rand() % 8);
                }
                1 => data.truncate((rand() as usize) % data.len()),
                _ => {
                    let at = (rand() as usize) % data.len();
                    let junk: Vec<u8> = (0..(rand() % 64)).map(|_| rand() as u8).collect();
                    data.splice(at..at, junk);
                }
            }
            fs::write(victim, &data).unwrap();
            let store =
                LogStore::open(dir.path(), false, 128, Arc::new(Progress::default())).unwrap();
            let got = store.entries();
            assert!(got.len() <= written.len());
            assert_eq!(
                &written[..got.len()],
                &got[..],
                "round {round}: a prefix survives"
            );
            // And the log goes on from there.
            let next = got.len() as u64;
            append(&store, vec![entry(next, 9, &[b"after"])]);
            drop(store);
            let store =
                LogStore::open(dir.path(), false, 128, Arc::new(Progress::default())).unwrap();
            assert_eq!(store.entries().len() as u64, next + 1);
        }
    }

    #[tokio::test]
    async fn vote_and_committed_persist() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = open(dir.path(), 1 << 20);
        assert!(store.is_pristine());
        let vote = Vote::new(3, 2);
        store.save_vote(&vote).await.unwrap();
        append(&store, vec![entry(0, 1, &[]), entry(1, 1, &[])]);
        let c = LogId::new(CommittedLeaderId::new(1, 1), 1);
        store.save_committed(Some(c)).await.unwrap();
        drop(store);
        let mut store = open(dir.path(), 1 << 20);
        assert_eq!(store.read_vote().await.unwrap(), Some(vote));
        assert_eq!(store.read_committed().await.unwrap(), Some(c));
        assert!(!store.is_pristine());
        // A vote file that does not parse is an error, not a guess.
        drop(store);
        fs::write(dir.path().join("vote.json"), b"{not json").unwrap();
        assert!(matches!(
            LogStore::open(dir.path(), true, 1 << 20, Arc::new(Progress::default())),
            Err(QuorumError::Corrupt(_))
        ));
    }
}
