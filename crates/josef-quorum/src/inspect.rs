//! Reading a metadata log directory without opening it as a quorum member (Kafka's
//! `kafka-dump-log --cluster-metadata-decoder`): nothing is written, a damaged tail ends the read.

use std::fs;
use std::path::Path;

use bytes::Bytes;
use openraft::EntryPayload;

use crate::error::QuorumError;
use crate::log_store::{parse_segment_name, read_record};

/// What one stored Raft entry holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredPayload {
    /// A new leader's first entry of its term.
    Blank,
    /// A batch of the caller's records (metadata records, each encoded).
    Records(Vec<Bytes>),
    /// A membership change: the voter ids.
    Membership(Vec<u64>),
}

/// One entry of the metadata log as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEntry {
    /// The Raft index (the metadata offset).
    pub index: u64,
    /// The term of the leader that appended it.
    pub term: u64,
    /// The node id of that leader.
    pub leader: u64,
    /// What it holds.
    pub payload: StoredPayload,
}

/// Every entry stored under `dir` (the `__cluster_metadata-0` directory of a node), in log order,
/// read-only. Reading stops at the first damaged record (a torn tail after a crash) and returns
/// what precedes it together with the reason.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let (entries, damage) = josef_quorum::read_log_dir(dir.path()).unwrap();
/// assert!(entries.is_empty() && damage.is_none());
/// ```
pub fn read_log_dir(dir: &Path) -> Result<(Vec<StoredEntry>, Option<String>), QuorumError> {
    let list = |e| QuorumError::io(format!("list {}", dir.display()), e);
    let mut segments = Vec::new();
    for ent in fs::read_dir(dir).map_err(list)? {
        let ent = ent.map_err(list)?;
        if let Some(first) = parse_segment_name(&ent.file_name().to_string_lossy()) {
            segments.push((first, ent.path()));
        }
    }
    segments.sort();
    let mut out = Vec::new();
    for (_, path) in segments {
        let data =
            fs::read(&path).map_err(|e| QuorumError::io(format!("read {}", path.display()), e))?;
        let mut rest = &data[..];
        while !rest.is_empty() {
            let (entry, used) = match read_record(rest) {
                Ok(r) => r,
                Err(why) => return Ok((out, Some(format!("{}: {why}", path.display())))),
            };
            rest = &rest[used..];
            let payload = match entry.payload {
                EntryPayload::Blank => StoredPayload::Blank,
                EntryPayload::Normal(batch) => StoredPayload::Records(batch.0),
                EntryPayload::Membership(m) => StoredPayload::Membership(m.voter_ids().collect()),
            };
            out.push(StoredEntry {
                index: entry.log_id.index,
                term: entry.log_id.leader_id.term,
                leader: entry.log_id.leader_id.node_id,
                payload,
            });
        }
    }
    Ok((out, None))
}
