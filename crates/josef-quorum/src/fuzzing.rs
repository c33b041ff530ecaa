//! Hooks for the cargo-fuzz targets `quorum_storage` and `quorum_frame` (in `fuzz/`): the crate's
//! own recovery and decoding code, reachable without starting a node, and encoders of valid inputs
//! for their seed corpora. Hidden from the docs and not part of the API: it changes with the fuzz
//! targets.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use openraft::storage::RaftLogStorage;
use openraft::{BasicNode, CommittedLeaderId, EntryPayload, Membership, RaftLogReader};

use crate::error::QuorumError;
use crate::log_store::{encode_entry, LogStore, Progress};
use crate::network::{read_frame, WireRequest, WireResponse};
use crate::state_machine::{encode_snapshot, load_latest_snapshot};
use crate::types::{Batch, Entry, LogId, SnapshotMeta, StorageError, StoredMembership};

/// What [`open_log`] recovered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveredLog {
    /// The (index, term) of every entry kept, in order.
    pub entries: Vec<(u64, u64)>,
    /// The index of the last purged entry (`purged.json`).
    pub purged: Option<u64>,
    /// The vote (`vote.json`): term, voted-for node, committed.
    pub vote: Option<(u64, u64, bool)>,
}

/// Opens the log under `dir` as [`crate::MetadataQuorum::start`] does: `vote.json`, `purged.json`,
/// `committed.json`, then every `log-*.seg` in order, a damaged tail truncated and later segments
/// deleted; then reads it back through openraft's storage interface.
pub fn open_log(dir: &Path, segment_bytes: u64) -> Result<RecoveredLog, QuorumError> {
    let mut log = LogStore::open(dir, false, segment_bytes, Arc::new(Progress::default()))?;
    let read = block_on(async move {
        let entries = log.try_get_log_entries(..).await?;
        let state = log.get_log_state().await?;
        let vote = log.read_vote().await?;
        Ok::<_, StorageError>((entries, state.last_purged_log_id, vote))
    })
    .map_err(|e| QuorumError::io("runtime".to_string(), e))?;
    let (entries, purged, vote) = read.map_err(|e| QuorumError::Corrupt(e.to_string()))?;
    Ok(RecoveredLog {
        entries: entries
            .iter()
            .map(|e| (e.log_id.index, e.log_id.leader_id.term))
            .collect(),
        purged: purged.map(|p| p.index),
        vote: vote.map(|v| (v.leader_id.term, v.leader_id.node_id, v.committed)),
    })
}

fn block_on<F: std::future::Future>(f: F) -> io::Result<F::Output> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .build()?
        .block_on(f))
}

/// The newest snapshot under `dir` that checks, as loaded at start: its last index and data.
#[allow(clippy::type_complexity)] // a fuzz hook, not API
pub fn load_snapshot(dir: &Path) -> Result<Option<(Option<u64>, Vec<u8>)>, QuorumError> {
    Ok(load_latest_snapshot(dir)?.map(|(meta, data)| (meta.last_log_id.map(|l| l.index), data)))
}

fn log_id(index: u64, term: u64, node: u64) -> LogId {
    LogId::new(CommittedLeaderId::new(term, node), index)
}

fn membership(voters: &[u64]) -> Membership<u64, BasicNode> {
    let nodes: BTreeMap<u64, BasicNode> = voters
        .iter()
        .map(|&id| (id, BasicNode::new(format!("127.0.0.1:{}", 19000 + id))))
        .collect();
    Membership::new(vec![voters.iter().copied().collect::<BTreeSet<_>>()], nodes)
}

/// A segment record of the entry `index` in `term` by leader `node`: a batch of `records`, blank
/// when `None`, as the log appends it.
pub fn log_record(index: u64, term: u64, node: u64, records: Option<&[&[u8]]>) -> Vec<u8> {
    let payload = match records {
        None => EntryPayload::Blank,
        Some(rs) => EntryPayload::Normal(Batch(
            rs.iter().map(|r| Bytes::copy_from_slice(r)).collect(),
        )),
    };
    framed(&Entry {
        log_id: log_id(index, term, node),
        payload,
    })
}

/// A segment record of a membership entry of `voters`.
pub fn membership_record(index: u64, term: u64, node: u64, voters: &[u64]) -> Vec<u8> {
    framed(&Entry {
        log_id: log_id(index, term, node),
        payload: EntryPayload::Membership(membership(voters)),
    })
}

/// A record as the log frames it: body length and crc32c (u32 LE), body.
fn framed(entry: &Entry) -> Vec<u8> {
    let body = encode_entry(entry);
    let mut out = Vec::with_capacity(8 + body.len());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// A snapshot file at `index` in `term` (membership `voters`, logged at index 0) holding `data`.
pub fn snapshot_file(index: u64, term: u64, voters: &[u64], data: &[u8]) -> Vec<u8> {
    let meta = SnapshotMeta {
        last_log_id: Some(log_id(index, term, voters.first().copied().unwrap_or(0))),
        last_membership: StoredMembership::new(Some(log_id(0, 0, 0)), membership(voters)),
        snapshot_id: format!("{term}-{index}"),
    };
    encode_snapshot(&meta, data)
}

/// Reads `stream` with the transport's frame reader (the length checked against
/// [`crate::MAX_FRAME_BYTES`] before any buffer is sized) until its end: the frame bodies, and the
/// error that stopped it, if any.
pub fn read_frames(stream: &[u8]) -> (Vec<Vec<u8>>, Option<io::Error>) {
    let read = block_on(async {
        let mut r = stream;
        let mut frames = Vec::new();
        loop {
            match read_frame(&mut r).await {
                Ok(Some(body)) => frames.push(body),
                Ok(None) => return (frames, None),
                Err(e) => return (frames, Some(e)),
            }
        }
    });
    read.unwrap_or_else(|e| (Vec::new(), Some(e)))
}

/// A frame body decoded as a request, as a node serves it: its JSON encoding again, `None` if it
/// does not decode.
pub fn decode_request(body: &[u8]) -> Option<Vec<u8>> {
    let req: WireRequest = serde_json::from_slice(body).ok()?;
    serde_json::to_vec(&req).ok()
}

/// A frame body decoded as a response, as a client reads it: its JSON encoding again, `None` if it
/// does not decode.
pub fn decode_response(body: &[u8]) -> Option<Vec<u8>> {
    let resp: WireResponse = serde_json::from_slice(body).ok()?;
    serde_json::to_vec(&resp).ok()
}
