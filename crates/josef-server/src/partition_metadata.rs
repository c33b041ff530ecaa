//! Kafka's `partition.metadata` in each partition directory: the topic id, in Kafka's text
//! (`version: 0`, `topic_id: <base64>`), so that a data dir looks like Kafka's.
//!
//! # Durability
//!
//! The file is written with a plain write: no temporary file, no fsync, no directory fsync.
//! Creating 100,000 partitions spent most of its two minutes in the kernel, and the atomic write
//! of this file (temporary file, fsync, rename, directory fsync) was two of the three journal
//! commits each new partition cost (issue #22). Nothing depends on the file being durable:
//!
//! - The broker never reads it. The topic id's durable copy is the topics file (one node), which
//!   CreateTopics writes atomically after the partitions exist and which is what makes the topic
//!   exist after a restart; in a cluster it is the metadata log.
//! - A crash right after CreateTopics may lose this file, the new partition directories and
//!   their empty `.log` files (none of them was fsynced; the topics file's own directory fsync
//!   on the first log dir usually carries them, but nothing counts on it). The partitions were
//!   empty, so no acknowledged record is lost: the next start opens every partition the topics
//!   file lists, which recreates a missing directory and segment, and writes this file again
//!   when the open's directory listing did not show it ([`josef_log::LoadReport`]'s
//!   `partition_metadata_exists`, free since the open lists the directory anyway).
//! - What is not repaired: a power failure can leave the file present but empty (the name
//!   reached the disk, the bytes did not). Josef does not care; Kafka, if handed such a data
//!   dir, would fail to read it, as it would for any torn file of its own.
//!
//! With a single log dir the partition's directory itself waits for the partition's first write
//! (`josef_log::storage::LazyDirs`), and so does this file ([`write_when_created`]): an empty
//! partition has neither, and a restart that finds the directory missing keeps the file in
//! memory again.
//!
//! Kafka itself writes the file off the request path (`PartitionMetadataFile.maybeFlush` on its
//! scheduler), fsynced.

use std::path::Path;

use josef_log::naming::PARTITION_METADATA_FILE;
use josef_log::storage::Storage;
use josef_protocol::Uuid;

use crate::meta::uuid_to_base64;

/// The file's text for `topic_id` (Kafka's `PartitionMetadataFileFormatter`).
fn contents(topic_id: Uuid) -> String {
    format!(
        "version: 0\ntopic_id: {}\n",
        uuid_to_base64(topic_id.as_bytes())
    )
}

/// Writes `partition.metadata` in `partition_dir`, without syncing it (see the module docs).
pub(crate) fn write(
    storage: &dyn Storage,
    partition_dir: &Path,
    topic_id: Uuid,
) -> std::io::Result<()> {
    let bytes = contents(topic_id);
    let f = storage.open_file(&partition_dir.join(PARTITION_METADATA_FILE), true)?;
    f.write_all_at(&[bytes.as_bytes()], 0)?;
    f.set_len(bytes.len() as u64)
}

/// [`write`] through lazy directories: kept in memory until the partition's directory is
/// created by its first write (an empty partition has neither).
pub(crate) fn write_when_created(
    storage: &josef_log::storage::LazyDirs,
    partition_dir: &Path,
    topic_id: Uuid,
) -> std::io::Result<()> {
    storage.write_when_created(
        &partition_dir.join(PARTITION_METADATA_FILE),
        contents(topic_id).as_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use josef_log::storage::MemoryStorage;

    #[test]
    fn kafkas_text_and_a_rewrite_leaves_no_tail() {
        let s = MemoryStorage::new();
        let dir = Path::new("/d/t-0");
        s.create_dir_all(dir).unwrap();
        let path = dir.join(PARTITION_METADATA_FILE);
        s.write_atomically(&path, &[b'x'; 200]).unwrap();
        write(&s, dir, Uuid::from_u128(1)).unwrap();
        assert_eq!(
            String::from_utf8(s.read(&path).unwrap()).unwrap(),
            "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n"
        );
    }
}
