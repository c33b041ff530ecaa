//! openraft's state machine over the caller's [`MetadataStateMachine`], and the snapshot files.
//!
//! A snapshot is one file `snapshot-<last index, 20 digits>.snap`:
//! `"JQSNAP01" | meta length: u32 LE | openraft's SnapshotMeta as JSON | data length: u64 LE |
//! data (the caller's bytes) | crc32c of everything before: u32 LE`, written through a temporary
//! file and a rename, fsynced. Older snapshots are deleted once a newer one is durable. At start
//! the newest snapshot that checks is loaded; a damaged one is skipped with a warning.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use openraft::storage::RaftStateMachine;
use openraft::{EntryPayload, OptionalSend, RaftSnapshotBuilder, StorageIOError};

use crate::error::QuorumError;
use crate::files::{blocking, replace_file, Reader};
use crate::log_store::Progress;
use crate::types::{
    Entry, LogId, Snapshot, SnapshotMeta, StorageError, StoredMembership, TypeConfig,
};
use crate::MetadataStateMachine;

const MAGIC: &[u8; 8] = b"JQSNAP01";

fn snapshot_name(index: u64) -> String {
    format!("snapshot-{index:020}.snap")
}

fn parse_snapshot_name(name: &str) -> Option<u64> {
    name.strip_prefix("snapshot-")?
        .strip_suffix(".snap")?
        .parse()
        .ok()
}

/// Encodes a snapshot file.
pub(crate) fn encode_snapshot(meta: &SnapshotMeta, data: &[u8]) -> Vec<u8> {
    // A SnapshotMeta of u64 ids and string addresses always serializes.
    let meta_json = serde_json::to_vec(meta).unwrap_or_default();
    let mut out = Vec::with_capacity(8 + 4 + meta_json.len() + 8 + data.len() + 4);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(meta_json.len() as u32).to_le_bytes());
    out.extend_from_slice(&meta_json);
    out.extend_from_slice(&(data.len() as u64).to_le_bytes());
    out.extend_from_slice(data);
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Decodes a snapshot file written by [`encode_snapshot`].
pub(crate) fn decode_snapshot(file: &[u8]) -> Result<(SnapshotMeta, Vec<u8>), String> {
    if file.len() < MAGIC.len() + 4 + 8 + 4 {
        return Err(format!("{} bytes is too short for a snapshot", file.len()));
    }
    let (body, crc) = file.split_at(file.len() - 4);
    let crc = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
    if crc32c::crc32c(body) != crc {
        return Err("snapshot CRC mismatch".into());
    }
    let mut r = Reader::new(body);
    if r.take(8)? != MAGIC {
        return Err("not a snapshot file".into());
    }
    let meta_len = r.u32()? as usize;
    let meta: SnapshotMeta =
        serde_json::from_slice(r.take(meta_len)?).map_err(|e| format!("snapshot meta: {e}"))?;
    let data_len = r.u64()?;
    if data_len != r.remaining() as u64 {
        return Err(format!(
            "snapshot data length {data_len}, {} bytes present",
            r.remaining()
        ));
    }
    let data = r.take(data_len as usize)?.to_vec();
    Ok((meta, data))
}

/// The newest snapshot under `dir` that reads back whole, if any.
pub(crate) fn load_latest_snapshot(
    dir: &Path,
) -> Result<Option<(SnapshotMeta, Vec<u8>)>, QuorumError> {
    let mut found = Vec::new();
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(QuorumError::io(format!("list {}", dir.display()), e)),
    };
    for ent in rd {
        let ent = ent.map_err(|e| QuorumError::io(format!("list {}", dir.display()), e))?;
        if let Some(i) = parse_snapshot_name(&ent.file_name().to_string_lossy()) {
            found.push(i);
        }
    }
    found.sort_unstable_by(|a, b| b.cmp(a));
    for index in found {
        let path = dir.join(snapshot_name(index));
        let bytes =
            fs::read(&path).map_err(|e| QuorumError::io(format!("read {}", path.display()), e))?;
        match decode_snapshot(&bytes) {
            Ok(s) => return Ok(Some(s)),
            Err(why) => tracing::warn!(
                "metadata snapshot {} is damaged ({why}); trying an older one",
                path.display()
            ),
        }
    }
    Ok(None)
}

/// Writes a snapshot durably and deletes the older ones.
fn write_snapshot(
    dir: &Path,
    meta: &SnapshotMeta,
    data: &[u8],
    fsync: bool,
) -> std::io::Result<()> {
    let index = meta.last_log_id.map_or(0, |l| l.index);
    replace_file(
        &dir.join(snapshot_name(index)),
        &encode_snapshot(meta, data),
        fsync,
    )?;
    for ent in fs::read_dir(dir)? {
        let ent = ent?;
        if let Some(i) = parse_snapshot_name(&ent.file_name().to_string_lossy()) {
            if i < index {
                fs::remove_file(ent.path())?;
            }
        }
    }
    Ok(())
}

/// The newest snapshot, shared with the observer fetch service.
pub(crate) type CurrentSnapshot = Arc<Mutex<Option<(SnapshotMeta, Arc<Vec<u8>>)>>>;

/// openraft's state machine: hands committed entries to the caller's state machine.
pub(crate) struct SmStore {
    app: Arc<dyn MetadataStateMachine>,
    dir: PathBuf,
    fsync: bool,
    last_applied: Option<LogId>,
    membership: StoredMembership,
    current: CurrentSnapshot,
    progress: Arc<Progress>,
}

impl SmStore {
    /// A state machine whose caller's state already holds `snapshot` (installed by the caller of
    /// this function), or nothing.
    pub(crate) fn new(
        app: Arc<dyn MetadataStateMachine>,
        dir: PathBuf,
        fsync: bool,
        snapshot: Option<(SnapshotMeta, Vec<u8>)>,
        progress: Arc<Progress>,
    ) -> SmStore {
        let (last_applied, membership, current) = match snapshot {
            Some((meta, data)) => (
                meta.last_log_id,
                meta.last_membership.clone(),
                Some((meta, Arc::new(data))),
            ),
            None => (None, StoredMembership::default(), None),
        };
        progress.set_applied(last_applied);
        SmStore {
            app,
            dir,
            fsync,
            last_applied,
            membership,
            current: Arc::new(Mutex::new(current)),
            progress,
        }
    }
}

impl SmStore {
    /// The newest snapshot (built here or installed), as observers are sent it.
    pub(crate) fn current_snapshot(&self) -> CurrentSnapshot {
        self.current.clone()
    }
}

fn sm_err(e: impl ToString) -> StorageError {
    StorageError::from(StorageIOError::write_state_machine(
        openraft::AnyError::error(e.to_string()),
    ))
}

fn snap_err(e: impl ToString) -> StorageError {
    StorageError::from(StorageIOError::write_snapshot(
        None,
        openraft::AnyError::error(e.to_string()),
    ))
}

/// Builds a snapshot from what the caller returned when the builder was made.
pub(crate) struct SnapshotBuilder {
    taken: Result<(SnapshotMeta, Vec<u8>), String>,
    dir: PathBuf,
    fsync: bool,
    current: CurrentSnapshot,
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot, StorageError> {
        let (meta, data) = self.taken.clone().map_err(snap_err)?;
        blocking(|| write_snapshot(&self.dir, &meta, &data, self.fsync)).map_err(snap_err)?;
        tracing::info!("metadata snapshot written at {:?}", meta.last_log_id);
        let data = Arc::new(data);
        *self.current.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((meta.clone(), data.clone()));
        Ok(Snapshot {
            meta,
            snapshot: Box::new((*data).clone()),
        })
    }
}

impl RaftStateMachine<TypeConfig> for SmStore {
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), StorageError> {
        Ok((self.last_applied, self.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<()>, StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut out = Vec::new();
        for e in entries {
            let id = e.log_id;
            match &e.payload {
                EntryPayload::Blank => self.app.apply(id.index, id.leader_id.term, &[]),
                EntryPayload::Normal(batch) => {
                    self.app.apply(id.index, id.leader_id.term, &batch.0)
                }
                EntryPayload::Membership(m) => {
                    self.membership = StoredMembership::new(Some(id), m.clone());
                    self.app.apply(id.index, id.leader_id.term, &[]);
                }
            }
            self.last_applied = Some(id);
            self.progress.set_applied(Some(id));
            out.push(());
        }
        Ok(out)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        // Taken here, on the state machine's task, so it is exactly the state after
        // `last_applied`; the builder may run while later entries are applied.
        let (index, data) = self.app.snapshot();
        let taken = match self.last_applied {
            Some(last) if last.index == index => {
                let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
                Ok((
                    SnapshotMeta {
                        last_log_id: Some(last),
                        last_membership: self.membership.clone(),
                        snapshot_id: format!("{}-{}-{nanos}", last.leader_id.term, last.index),
                    },
                    data,
                ))
            }
            other => Err(format!(
                "the state machine's snapshot is at index {index}, the last applied entry is {other:?}; \
                 MetadataStateMachine::snapshot must return the state after the last apply"
            )),
        };
        SnapshotBuilder {
            taken,
            dir: self.dir.clone(),
            fsync: self.fsync,
            current: self.current.clone(),
        }
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Vec<u8>>, StorageError> {
        Ok(Box::default())
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        snapshot: Box<Vec<u8>>,
    ) -> Result<(), StorageError> {
        blocking(|| write_snapshot(&self.dir, meta, &snapshot, self.fsync)).map_err(sm_err)?;
        let index = meta.last_log_id.map_or(0, |l| l.index);
        tracing::info!("installing metadata snapshot at {:?}", meta.last_log_id);
        self.app.install_snapshot(index, &snapshot);
        self.last_applied = meta.last_log_id;
        self.membership = meta.last_membership.clone();
        self.progress.set_applied(meta.last_log_id);
        *self.current.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((meta.clone(), Arc::new(*snapshot)));
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot>, StorageError> {
        let g = self.current.lock().unwrap_or_else(|p| p.into_inner());
        Ok(g.as_ref().map(|(meta, data)| Snapshot {
            meta: meta.clone(),
            snapshot: Box::new((**data).clone()),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::CommittedLeaderId;

    #[test]
    fn snapshot_file_round_trip_and_damage() {
        let dir = tempfile::tempdir().unwrap();
        let meta = SnapshotMeta {
            last_log_id: Some(LogId::new(CommittedLeaderId::new(2, 1), 41)),
            last_membership: StoredMembership::default(),
            snapshot_id: "x".into(),
        };
        write_snapshot(dir.path(), &meta, b"state", true).unwrap();
        let (m, d) = load_latest_snapshot(dir.path()).unwrap().unwrap();
        assert_eq!((m, d.as_slice()), (meta.clone(), &b"state"[..]));
        let file = encode_snapshot(&meta, b"state");
        for cut in 0..file.len() {
            assert!(decode_snapshot(&file[..cut]).is_err());
        }
        // A newer damaged snapshot is skipped in favour of the older good one.
        fs::write(dir.path().join(snapshot_name(99)), &file[..file.len() - 1]).unwrap();
        let (m, _) = load_latest_snapshot(dir.path()).unwrap().unwrap();
        assert_eq!(m.last_log_id.unwrap().index, 41);
    }
}
