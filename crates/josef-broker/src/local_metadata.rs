//! The single-node broker's metadata records: ACLs, SCRAM credentials, client quotas and the other
//! cluster-wide state a KRaft cluster keeps in its metadata log. A single node has no quorum, so
//! the records it accepts (from CreateAcls, AlterUserScramCredentials, AlterClientQuotas, ...) are
//! appended to `__josef_local_metadata` in the first log dir and replayed into the same
//! [`MetadataImage`] a cluster node builds from its metadata log. Handlers read the image through
//! [`crate::state::BrokerState::metadata_image`] and never care which kind of node they run on.
//!
//! File format: one frame per record, `length: u32 BE | crc32c(body): u32 BE | body`, where the
//! body is the framed [`MetadataRecord`]. A frame is fsynced before its record is applied, so an
//! answered request survives a crash. A torn tail (a crash in the middle of a write) is cut off
//! at open, as Kafka recovers a log segment; a bad frame before the tail fails the open.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use josef_metadata::{MetadataDelta, MetadataImage, MetadataProvenance, MetadataRecord};
use parking_lot::Mutex;

/// The file name in the first log dir.
pub const FILE_NAME: &str = "__josef_local_metadata";

/// A frame longer than this is corruption (no metadata record comes near it).
const MAX_FRAME: u32 = 16 * 1024 * 1024;

/// Why the store cannot be opened or written.
#[derive(Debug, thiserror::Error)]
pub enum LocalMetadataError {
    /// File-system error.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A frame before the end of the file does not decode or fails its checksum.
    #[error("{path}: corrupt record at byte {position}: {reason}")]
    Corrupt {
        /// The file.
        path: String,
        /// Where the bad frame starts.
        position: u64,
        /// What is wrong.
        reason: String,
    },
    /// A record does not encode or does not apply to the image (e.g. removing an unknown ACL).
    #[error("metadata record rejected: {0}")]
    Rejected(String),
}

struct Inner {
    file: File,
    image: Arc<MetadataImage>,
    /// Records written so far (the "offset" in the image's provenance).
    count: u64,
}

/// The single-node store (see the module docs).
pub struct LocalMetadataStore {
    path: PathBuf,
    inner: Mutex<Inner>,
}

impl LocalMetadataStore {
    /// Opens (or creates) the store in `dir` and replays it.
    pub fn open(dir: &Path) -> Result<Self, LocalMetadataError> {
        let path = dir.join(FILE_NAME);
        let io = |source| LocalMetadataError::Io {
            path: path.display().to_string(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(io)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io)?;
        let (records, valid_len) =
            decode_frames(&bytes).map_err(|(position, reason)| LocalMetadataError::Corrupt {
                path: path.display().to_string(),
                position,
                reason,
            })?;
        if valid_len < bytes.len() as u64 {
            tracing::warn!(
                file = %path.display(),
                cut = bytes.len() as u64 - valid_len,
                "local metadata: torn tail cut off"
            );
            file.set_len(valid_len).map_err(io)?;
            file.sync_all().map_err(io)?;
        }
        let mut delta = MetadataDelta::new(&MetadataImage::empty());
        for r in &records {
            delta
                .replay(r)
                .map_err(|e| LocalMetadataError::Rejected(e.to_string()))?;
        }
        let count = records.len() as u64;
        let image = delta.apply(MetadataProvenance {
            last_offset: count,
            last_epoch: 0,
        });
        Ok(LocalMetadataStore {
            path,
            inner: Mutex::new(Inner {
                file,
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
        let mut delta = MetadataDelta::new(&inner.image);
        let mut buf = Vec::new();
        for r in records {
            delta
                .replay(r)
                .map_err(|e| LocalMetadataError::Rejected(e.to_string()))?;
            let body = r
                .encode()
                .map_err(|e| LocalMetadataError::Rejected(e.to_string()))?;
            buf.extend_from_slice(&(body.len() as u32).to_be_bytes());
            buf.extend_from_slice(&crc32c::crc32c(&body).to_be_bytes());
            buf.extend_from_slice(&body);
        }
        let io = |source| LocalMetadataError::Io {
            path: self.path.display().to_string(),
            source,
        };
        inner.file.write_all(&buf).map_err(io)?;
        inner.file.sync_data().map_err(io)?;
        let count = inner.count + records.len() as u64;
        let image = Arc::new(delta.apply(MetadataProvenance {
            last_offset: count,
            last_epoch: 0,
        }));
        inner.count = count;
        inner.image = image.clone();
        Ok(image)
    }
}

/// The records in `bytes` and the length of the valid prefix. A frame cut short at the end is a
/// torn write (the valid prefix stops before it); a complete frame that fails its checksum or does
/// not decode is an error at its position.
fn decode_frames(bytes: &[u8]) -> Result<(Vec<MetadataRecord>, u64), (u64, String)> {
    let mut records = Vec::new();
    let mut pos = 0usize;
    while bytes.len() - pos >= 8 {
        let len = u32::from_be_bytes(bytes[pos..pos + 4].try_into().expect("4 bytes"));
        let crc = u32::from_be_bytes(bytes[pos + 4..pos + 8].try_into().expect("4 bytes"));
        if len > MAX_FRAME {
            return Err((pos as u64, format!("frame length {len}")));
        }
        let end = pos + 8 + len as usize;
        if end > bytes.len() {
            break;
        }
        let body = &bytes[pos + 8..end];
        if crc32c::crc32c(body) != crc {
            if end == bytes.len() {
                // The last frame: a torn write whose length made it to disk.
                break;
            }
            return Err((pos as u64, "checksum mismatch".into()));
        }
        let record = MetadataRecord::decode(body).map_err(|e| (pos as u64, e.to_string()))?;
        records.push(record);
        pos = end;
    }
    Ok((records, pos as u64))
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
    fn torn_tail_is_cut_and_later_appends_survive() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalMetadataStore::open(dir.path()).unwrap();
        store.append(&[acl(1)]).unwrap();
        drop(store);
        let path = dir.path().join(FILE_NAME);
        let good = std::fs::metadata(&path).unwrap().len();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&[0, 0, 0, 50, 1, 2, 3]).unwrap();
        drop(f);
        let store = LocalMetadataStore::open(dir.path()).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), good);
        store.append(&[acl(2)]).unwrap();
        drop(store);
        let store = LocalMetadataStore::open(dir.path()).unwrap();
        assert_eq!(store.image().acls().len(), 2);
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
            Err(LocalMetadataError::Corrupt { position: 0, .. })
        ));
    }

    #[test]
    fn huge_length_is_corruption_not_an_allocation() {
        let (_, valid) = decode_frames(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]).unwrap_err();
        assert!(valid.contains("frame length"));
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
