//! The single-node broker's metadata records: ACLs, SCRAM credentials, client quotas and the other
//! cluster-wide state a KRaft cluster keeps in its metadata log. A single node has no quorum, so
//! the records it accepts (from CreateAcls, AlterUserScramCredentials, AlterClientQuotas, ...) are
//! appended to `__josef_local_metadata` in the first log dir and replayed into the same
//! [`MetadataImage`] a cluster node builds from its metadata log. Handlers read the image through
//! [`crate::state::BrokerState::metadata_image`] and never care which kind of node they run on.
//!
//! Only glue here: the file (CRC frames, fsync, torn tail cut, corruption before the tail fails
//! the open) is josef-quorum's [`LocalMetadataLog`], the records' encoding and their replay into an
//! image josef-metadata's ([`MetadataImage::with_records`]). A frame is fsynced before its record
//! is applied, so an answered request survives a crash.

use std::path::Path;
use std::sync::Arc;

use josef_metadata::{
    MetadataError, MetadataImage, MetadataProvenance, MetadataRecord, RecordDecodeError,
};
use josef_protocol::EncodeError;
use josef_quorum::{LocalLogError, LocalMetadataLog};
use parking_lot::Mutex;

/// The file name in the first log dir.
pub const FILE_NAME: &str = "__josef_local_metadata";

/// Why the store cannot be opened or written.
#[derive(Debug, thiserror::Error)]
pub enum LocalMetadataError {
    /// The file cannot be read or written, or a frame in it is damaged.
    #[error(transparent)]
    Log(#[from] LocalLogError),
    /// A frame that checks does not decode as a metadata record.
    #[error("{path}: corrupt record at byte {position}: {source}")]
    Corrupt {
        /// The file.
        path: String,
        /// Where the bad frame starts.
        position: u64,
        /// Why it does not decode.
        source: RecordDecodeError,
    },
    /// A record does not apply to the image (e.g. removing an unknown ACL).
    #[error("metadata record rejected: {0}")]
    Rejected(#[from] MetadataError),
    /// A record does not encode.
    #[error("metadata record rejected: {0}")]
    Unencodable(#[from] EncodeError),
}

struct Inner {
    log: LocalMetadataLog,
    image: Arc<MetadataImage>,
    /// Records written so far (the "offset" in the image's provenance).
    count: u64,
}

/// The single-node store (see the module docs).
pub struct LocalMetadataStore {
    inner: Mutex<Inner>,
}

/// The image's provenance after `count` records (a single node has no epochs).
fn at(count: u64) -> MetadataProvenance {
    MetadataProvenance {
        last_offset: count,
        last_epoch: 0,
    }
}

impl LocalMetadataStore {
    /// Opens (or creates) the store in `dir` and replays it.
    pub fn open(dir: &Path) -> Result<Self, LocalMetadataError> {
        let (log, frames) = LocalMetadataLog::open(&dir.join(FILE_NAME))?;
        let records = frames
            .iter()
            .map(|f| {
                MetadataRecord::decode(&f.body).map_err(|source| LocalMetadataError::Corrupt {
                    path: log.path().display().to_string(),
                    position: f.position,
                    source,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let count = records.len() as u64;
        let image = MetadataImage::empty().with_records(&records, at(count))?;
        Ok(LocalMetadataStore {
            inner: Mutex::new(Inner {
                log,
                image: Arc::new(image),
                count,
            }),
        })
    }

    /// The image of every record written so far.
    pub fn image(&self) -> Arc<MetadataImage> {
        self.inner.lock().image.clone()
    }

    /// Checks that `records` apply to the current image, writes and fsyncs them, then applies
    /// them. All or nothing: on an error neither the file nor the image changes.
    pub fn append(
        &self,
        records: &[MetadataRecord],
    ) -> Result<Arc<MetadataImage>, LocalMetadataError> {
        let mut inner = self.inner.lock();
        let count = inner.count + records.len() as u64;
        let image = Arc::new(inner.image.with_records(records, at(count))?);
        let bodies = records
            .iter()
            .map(MetadataRecord::encode)
            .collect::<Result<Vec<_>, _>>()?;
        inner.log.append(&bodies)?;
        inner.count = count;
        inner.image = image.clone();
        Ok(image)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use josef_protocol::metadata_records::{AccessControlEntryRecord, FenceBrokerRecord};

    fn acl(id: u128) -> MetadataRecord {
        MetadataRecord::AccessControlEntry(AccessControlEntryRecord {
            id: josef_protocol::Uuid::from_u128(id),
            resource_type: 2,
            resource_name: "t".into(),
            pattern_type: 3,
            principal: "User:alice".into(),
            host: "*".into(),
            operation: 3,
            permission_type: 3,
            ..Default::default()
        })
    }

    #[test]
    fn records_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalMetadataStore::open(dir.path()).unwrap();
        assert!(store.image().acls().is_empty());
        store.append(&[acl(1), acl(2)]).unwrap();
        assert_eq!(store.image().acls().len(), 2);
        drop(store);
        let store = LocalMetadataStore::open(dir.path()).unwrap();
        assert_eq!(store.image().acls().len(), 2);
        assert_eq!(store.image().provenance().last_offset, 2);
    }

    #[test]
    fn corruption_before_the_tail_fails_the_open() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalMetadataStore::open(dir.path()).unwrap();
        store.append(&[acl(1), acl(2)]).unwrap();
        drop(store);
        let path = dir.path().join(FILE_NAME);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[10] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        assert!(matches!(
            LocalMetadataStore::open(dir.path()),
            Err(LocalMetadataError::Log(LocalLogError::Corrupt {
                position: 0,
                reason: josef_quorum::FrameError::ChecksumMismatch,
                ..
            }))
        ));
    }

    #[test]
    fn a_frame_that_checks_but_does_not_decode_fails_the_open() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalMetadataStore::open(dir.path()).unwrap();
        store.append(&[acl(1)]).unwrap();
        drop(store);
        let path = dir.path().join(FILE_NAME);
        let (mut log, _) = LocalMetadataLog::open(&path).unwrap();
        // Frame version 9 is no metadata record's.
        log.append(&[[9u8, 0, 0].as_slice()]).unwrap();
        drop(log);
        let first = std::fs::metadata(&path).unwrap().len() - 11;
        assert!(matches!(
            LocalMetadataStore::open(dir.path()),
            Err(LocalMetadataError::Corrupt {
                position,
                source: RecordDecodeError::UnsupportedFrameVersion(9),
                ..
            }) if position == first
        ));
    }

    #[test]
    fn a_rejected_batch_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalMetadataStore::open(dir.path()).unwrap();
        // Fencing a broker that never registered does not apply to the image.
        let fence = MetadataRecord::FenceBroker(FenceBrokerRecord {
            id: 7,
            epoch: 1,
            ..Default::default()
        });
        assert!(matches!(
            store.append(&[acl(1), fence]),
            Err(LocalMetadataError::Rejected(_))
        ));
        assert_eq!(
            std::fs::metadata(dir.path().join(FILE_NAME)).unwrap().len(),
            0
        );
        assert!(store.image().acls().is_empty());
        drop(store);
        assert!(LocalMetadataStore::open(dir.path())
            .unwrap()
            .image()
            .acls()
            .is_empty());
    }
}
