//! The aborted-transaction index (`.txnindex`, Kafka's `TransactionIndex` and `AbortedTxn`).
//!
//! Each 34-byte entry is version (i16, 0), producer id, first offset, last offset and last stable
//! offset (i64 each, big-endian). Only aborted transactions are written, in order of their ABORT
//! marker, into the segment holding the marker, so `last_offset` strictly increases. The entries are
//! small and few, so they are kept in memory and the file is only appended to; it is created on the
//! first entry (like Kafka, most segments have no `.txnindex`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::LogError;
use crate::storage::{self, Storage, StorageFile};

/// Bytes per aborted-transaction entry.
pub const ABORTED_TXN_ENTRY_SIZE: usize = 34;
/// The only entry version.
pub const ABORTED_TXN_VERSION: i16 = 0;

/// One aborted transaction as a read_committed fetch needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AbortedTxn {
    /// The producer that aborted.
    pub producer_id: i64,
    /// Offset of the transaction's first batch in this partition.
    pub first_offset: i64,
    /// Offset of the ABORT marker.
    pub last_offset: i64,
    /// The partition's last stable offset when the marker was written.
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    /// The 34-byte on-disk form.
    ///
    /// ```
    /// use josef_log::AbortedTxn;
    /// let t = AbortedTxn { producer_id: 7, first_offset: 1, last_offset: 9, last_stable_offset: 1 };
    /// assert_eq!(AbortedTxn::decode(&t.encode()), Some(t));
    /// ```
    pub fn encode(&self) -> [u8; ABORTED_TXN_ENTRY_SIZE] {
        let mut b = [0u8; ABORTED_TXN_ENTRY_SIZE];
        b[0..2].copy_from_slice(&ABORTED_TXN_VERSION.to_be_bytes());
        b[2..10].copy_from_slice(&self.producer_id.to_be_bytes());
        b[10..18].copy_from_slice(&self.first_offset.to_be_bytes());
        b[18..26].copy_from_slice(&self.last_offset.to_be_bytes());
        b[26..34].copy_from_slice(&self.last_stable_offset.to_be_bytes());
        b
    }

    /// Parses an entry; `None` if the slice is not 34 bytes or the version is not 0.
    pub fn decode(b: &[u8]) -> Option<AbortedTxn> {
        if b.len() != ABORTED_TXN_ENTRY_SIZE || b[0..2] != ABORTED_TXN_VERSION.to_be_bytes() {
            return None;
        }
        let i = |r: std::ops::Range<usize>| i64::from_be_bytes(b[r].try_into().unwrap_or([0; 8]));
        Some(AbortedTxn {
            producer_id: i(2..10),
            first_offset: i(10..18),
            last_offset: i(18..26),
            last_stable_offset: i(26..34),
        })
    }
}

/// Result of searching one segment's index (Kafka's `TxnIndexSearchResult`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TxnIndexSearchResult {
    /// Entries overlapping the fetched range.
    pub aborted: Vec<AbortedTxn>,
    /// True when an entry's last stable offset reached the upper bound, so later segments cannot
    /// hold anything relevant.
    pub is_complete: bool,
}

/// A segment's aborted-transaction index.
#[derive(Debug)]
pub struct TransactionIndex {
    path: PathBuf,
    base_offset: i64,
    entries: Vec<AbortedTxn>,
    storage: Arc<dyn Storage>,
    file: Option<Box<dyn StorageFile>>,
}

impl TransactionIndex {
    /// Loads the index at `path` if it exists. Entries are kept up to the first torn, invalid or
    /// out-of-order one (`last_offset` below the base offset or not strictly increasing); the file
    /// is cut there so later appends land after valid entries.
    pub fn open(path: &Path, base_offset: i64) -> Result<Self, LogError> {
        Self::open_in(storage::file_system(), path, base_offset)
    }

    /// [`TransactionIndex::open`] on any [`Storage`].
    pub fn open_in(
        storage: Arc<dyn Storage>,
        path: &Path,
        base_offset: i64,
    ) -> Result<Self, LogError> {
        let mut idx = Self::absent_in(storage, path, base_offset);
        let bytes = match idx.storage.read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(idx),
            Err(e) => return Err(LogError::io(path, e)),
        };
        for chunk in bytes.chunks_exact(ABORTED_TXN_ENTRY_SIZE) {
            match AbortedTxn::decode(chunk) {
                Some(t) if idx.accepts(&t) => idx.entries.push(t),
                _ => break,
            }
        }
        let valid = (idx.entries.len() * ABORTED_TXN_ENTRY_SIZE) as u64;
        if valid != bytes.len() as u64 {
            let f = idx
                .storage
                .open_file(path, false)
                .map_err(|e| LogError::io(path, e))?;
            f.set_len(valid).map_err(|e| LogError::io(path, e))?;
        }
        Ok(idx)
    }

    /// The empty index of a file the caller's directory listing showed absent (created by its
    /// first entry, like a missing file found by [`TransactionIndex::open_in`]).
    pub(crate) fn absent_in(storage: Arc<dyn Storage>, path: &Path, base_offset: i64) -> Self {
        TransactionIndex {
            path: path.to_path_buf(),
            base_offset,
            entries: Vec::new(),
            storage,
            file: None,
        }
    }

    fn accepts(&self, t: &AbortedTxn) -> bool {
        t.last_offset >= self.base_offset
            && t.first_offset <= t.last_offset
            && self
                .entries
                .last()
                .map_or(true, |l| t.last_offset > l.last_offset)
    }

    /// Entries in order.
    pub fn entries(&self) -> &[AbortedTxn] {
        &self.entries
    }

    /// Appends an entry. An entry equal to one already present is ignored (so a caller replaying
    /// the log after recovery may tell the same abort twice); any other entry whose `last_offset`
    /// does not exceed the last one is an error.
    pub fn append(&mut self, t: AbortedTxn) -> Result<(), LogError> {
        if self.entries.contains(&t) {
            return Ok(());
        }
        if !self.accepts(&t) {
            return Err(LogError::InvalidOffset(format!(
                "aborted txn {t:?} out of order after {:?} (base offset {})",
                self.entries.last(),
                self.base_offset
            )));
        }
        let pos = (self.entries.len() * ABORTED_TXN_ENTRY_SIZE) as u64;
        let f = self.file()?;
        f.write_all_at(&[&t.encode()], pos)
            .map_err(|e| LogError::io(&self.path, e))?;
        self.entries.push(t);
        Ok(())
    }

    fn file(&mut self) -> Result<&dyn StorageFile, LogError> {
        if self.file.is_none() {
            let f = self
                .storage
                .open_file(&self.path, true)
                .map_err(|e| LogError::io(&self.path, e))?;
            self.file = Some(f);
        }
        self.file
            .as_deref()
            .ok_or_else(|| LogError::io(&self.path, std::io::Error::other("txn index not open")))
    }

    /// Entries with `last_offset >= fetch_offset && first_offset < upper_bound_offset`.
    pub fn collect_aborted_txns(
        &self,
        fetch_offset: i64,
        upper_bound_offset: i64,
    ) -> TxnIndexSearchResult {
        let mut out = TxnIndexSearchResult::default();
        for t in &self.entries {
            if t.last_offset >= fetch_offset && t.first_offset < upper_bound_offset {
                out.aborted.push(*t);
            }
            if t.last_stable_offset >= upper_bound_offset {
                out.is_complete = true;
                return out;
            }
        }
        out
    }

    /// Removes entries whose `last_offset >= offset`.
    pub fn truncate_to(&mut self, offset: i64) -> Result<(), LogError> {
        let keep = self.entries.partition_point(|t| t.last_offset < offset);
        if keep == self.entries.len() {
            return Ok(());
        }
        self.entries.truncate(keep);
        self.set_file_len()
    }

    /// Removes every entry.
    pub fn reset(&mut self) -> Result<(), LogError> {
        self.truncate_to(i64::MIN)
    }

    fn set_file_len(&mut self) -> Result<(), LogError> {
        let len = (self.entries.len() * ABORTED_TXN_ENTRY_SIZE) as u64;
        match self.storage.open_file(&self.path, false) {
            Ok(f) => f.set_len(len).map_err(|e| LogError::io(&self.path, e)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(LogError::io(&self.path, e)),
        }
    }

    /// Fsyncs the file if it exists.
    pub fn flush(&mut self) -> Result<(), LogError> {
        if let Some(f) = self.file.as_ref() {
            f.sync_data().map_err(|e| LogError::io(&self.path, e))?;
        }
        Ok(())
    }

    /// Path of the file (which may not exist).
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn rename(&mut self, to: &Path) -> Result<(), LogError> {
        self.file = None;
        match self.storage.rename(&self.path, to) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(LogError::io(&self.path, e)),
        }
        self.path = to.to_path_buf();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(pid: i64, first: i64, last: i64, lso: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id: pid,
            first_offset: first,
            last_offset: last,
            last_stable_offset: lso,
        }
    }

    #[test]
    fn entries_are_34_bytes_version_0() {
        let e = t(1, 2, 3, 4).encode();
        assert_eq!(e.len(), 34);
        assert_eq!(&e[0..2], &[0, 0]);
        assert_eq!(&e[2..10], &1i64.to_be_bytes());
        let mut bad = e;
        bad[1] = 1;
        assert_eq!(AbortedTxn::decode(&bad), None);
    }

    #[test]
    fn txn_index_persists_and_collects_overlapping_entries() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("0.txnindex");
        let mut idx = TransactionIndex::open(&p, 0).unwrap();
        assert!(!p.exists());
        idx.append(t(1, 0, 10, 0)).unwrap();
        idx.append(t(2, 5, 20, 0)).unwrap();
        idx.append(t(3, 21, 30, 21)).unwrap();
        idx.append(t(3, 21, 30, 21)).unwrap(); // replayed: ignored
        assert!(idx.append(t(4, 1, 25, 0)).is_err());
        drop(idx);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 3 * 34);
        let idx = TransactionIndex::open(&p, 0).unwrap();
        assert_eq!(idx.entries().len(), 3);
        let r = idx.collect_aborted_txns(11, 25);
        assert_eq!(r.aborted, vec![t(2, 5, 20, 0), t(3, 21, 30, 21)]);
        assert!(!r.is_complete);
        let r = idx.collect_aborted_txns(0, 21);
        assert_eq!(r.aborted, vec![t(1, 0, 10, 0), t(2, 5, 20, 0)]);
        assert!(r.is_complete);
    }

    #[test]
    fn torn_tail_is_cut_on_open() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("0.txnindex");
        let mut bytes = t(1, 0, 10, 0).encode().to_vec();
        bytes.extend_from_slice(&t(1, 11, 12, 0).encode()[..20]);
        std::fs::write(&p, &bytes).unwrap();
        let mut idx = TransactionIndex::open(&p, 0).unwrap();
        assert_eq!(idx.entries().len(), 1);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 34);
        idx.append(t(1, 11, 12, 0)).unwrap();
        drop(idx);
        assert_eq!(TransactionIndex::open(&p, 0).unwrap().entries().len(), 2);
    }

    #[test]
    fn truncate_to_drops_entries_ending_at_or_after() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("0.txnindex");
        let mut idx = TransactionIndex::open(&p, 0).unwrap();
        idx.append(t(1, 0, 10, 0)).unwrap();
        idx.append(t(1, 11, 20, 0)).unwrap();
        idx.truncate_to(20).unwrap();
        assert_eq!(idx.entries().len(), 1);
        idx.append(t(1, 11, 19, 0)).unwrap();
        drop(idx);
        assert_eq!(
            TransactionIndex::open(&p, 0).unwrap().entries()[1],
            t(1, 11, 19, 0)
        );
    }
}
