//! File names of a partition directory, as Kafka writes them (`LogFileUtils`).
//!
//! Every segment file is named by its base offset as 20 zero-padded decimal digits plus a suffix, so
//! that a directory listing sorts in offset order and Kafka's own tools can read our directories.

use std::path::{Path, PathBuf};

/// Suffix of a segment's batch file.
pub const LOG_FILE_SUFFIX: &str = ".log";
/// Suffix of a segment's offset index.
pub const INDEX_FILE_SUFFIX: &str = ".index";
/// Suffix of a segment's time index.
pub const TIME_INDEX_FILE_SUFFIX: &str = ".timeindex";
/// Suffix of a segment's aborted-transaction index.
pub const TXN_INDEX_FILE_SUFFIX: &str = ".txnindex";
/// Suffix of a producer-state snapshot.
pub const PRODUCER_SNAPSHOT_FILE_SUFFIX: &str = ".snapshot";
/// Suffix appended to files being written by the cleaner (deleted on load).
pub const CLEANED_FILE_SUFFIX: &str = ".cleaned";
/// Suffix appended to cleaned files ready to replace their originals (completed on load).
pub const SWAP_FILE_SUFFIX: &str = ".swap";
/// Suffix appended to files scheduled for deletion (deleted on load).
pub const DELETED_FILE_SUFFIX: &str = ".deleted";
/// Temporary suffix of checkpoint files while they are written.
pub const TMP_FILE_SUFFIX: &str = ".tmp";
/// Clean-shutdown marker. Kafka keeps one per log dir; a standalone [`crate::Log`] keeps one in its
/// partition directory.
pub const CLEAN_SHUTDOWN_FILE: &str = ".kafka_cleanshutdown";
/// Name of the recovery-point checkpoint (per log dir in Kafka).
pub const RECOVERY_POINT_CHECKPOINT_FILE: &str = "recovery-point-offset-checkpoint";
/// Name of the cleaner checkpoint: where the last compaction ended (per log dir in Kafka).
pub const CLEANER_OFFSET_CHECKPOINT_FILE: &str = "cleaner-offset-checkpoint";
/// Name of the log-start-offset checkpoint (per log dir in Kafka).
pub const LOG_START_OFFSET_CHECKPOINT_FILE: &str = "log-start-offset-checkpoint";
/// Name of the file holding a partition's topic id (Kafka's `PartitionMetadataFile`).
pub const PARTITION_METADATA_FILE: &str = "partition.metadata";

/// The 20-digit zero-padded file name prefix of `offset` (`00000000000000000042`).
///
/// ```
/// assert_eq!(josef_log::naming::filename_prefix_from_offset(42), "00000000000000000042");
/// ```
pub fn filename_prefix_from_offset(offset: i64) -> String {
    format!("{offset:020}")
}

/// `dir/<offset><suffix>`.
pub fn file_for(dir: &Path, offset: i64, suffix: &str) -> PathBuf {
    dir.join(format!("{}{}", filename_prefix_from_offset(offset), suffix))
}

/// Path of the `.log` file of the segment based at `offset`.
pub fn log_file(dir: &Path, offset: i64) -> PathBuf {
    file_for(dir, offset, LOG_FILE_SUFFIX)
}

/// Path of the `.index` file of the segment based at `offset`.
pub fn offset_index_file(dir: &Path, offset: i64) -> PathBuf {
    file_for(dir, offset, INDEX_FILE_SUFFIX)
}

/// Path of the `.timeindex` file of the segment based at `offset`.
pub fn time_index_file(dir: &Path, offset: i64) -> PathBuf {
    file_for(dir, offset, TIME_INDEX_FILE_SUFFIX)
}

/// Path of the `.txnindex` file of the segment based at `offset`.
pub fn txn_index_file(dir: &Path, offset: i64) -> PathBuf {
    file_for(dir, offset, TXN_INDEX_FILE_SUFFIX)
}

/// Path of the producer snapshot taken at `offset`.
pub fn producer_snapshot_file(dir: &Path, offset: i64) -> PathBuf {
    file_for(dir, offset, PRODUCER_SNAPSHOT_FILE_SUFFIX)
}

/// Parses the base offset out of a file name such as `00000000000000000042.log` (any suffix,
/// including a trailing `.cleaned`/`.swap`/`.deleted`). Returns `None` for any other name.
///
/// ```
/// use josef_log::naming::offset_from_file_name;
/// assert_eq!(offset_from_file_name("00000000000000000042.timeindex"), Some(42));
/// assert_eq!(offset_from_file_name("leader-epoch-checkpoint"), None);
/// ```
pub fn offset_from_file_name(name: &str) -> Option<i64> {
    let (prefix, rest) = name.split_at_checked(20)?;
    if !rest.starts_with('.') || !prefix.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    prefix.parse::<i64>().ok()
}

/// Parses a partition directory name `<topic>-<partition>` into its topic and partition.
///
/// ```
/// assert_eq!(josef_log::naming::parse_topic_partition("my-topic-3"), Some(("my-topic".into(), 3)));
/// assert_eq!(josef_log::naming::parse_topic_partition("nodash"), None);
/// ```
pub fn parse_topic_partition(dir_name: &str) -> Option<(String, i32)> {
    let (topic, partition) = dir_name.rsplit_once('-')?;
    if topic.is_empty() {
        return None;
    }
    let partition: i32 = partition.parse().ok()?;
    if partition < 0 {
        return None;
    }
    Some((topic.to_string(), partition))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_twenty_digit_zero_padded_base_offsets() {
        let dir = Path::new("/d");
        assert_eq!(
            log_file(dir, 0),
            PathBuf::from("/d/00000000000000000000.log")
        );
        assert_eq!(
            offset_index_file(dir, 1234),
            PathBuf::from("/d/00000000000000001234.index")
        );
        assert_eq!(
            time_index_file(dir, i64::MAX),
            PathBuf::from("/d/09223372036854775807.timeindex")
        );
    }

    #[test]
    fn parse_rejects_foreign_names() {
        assert_eq!(offset_from_file_name("0000000000000000000a.log"), None);
        assert_eq!(offset_from_file_name("00000000000000000001log"), None);
        assert_eq!(offset_from_file_name("short.log"), None);
        assert_eq!(offset_from_file_name("99999999999999999999.log"), None);
        assert_eq!(
            offset_from_file_name("00000000000000000007.log.swap"),
            Some(7)
        );
    }

    #[test]
    fn round_trip_prefix() {
        for o in [0i64, 1, 99, 1 << 40, i64::MAX] {
            let name = format!("{}.log", filename_prefix_from_offset(o));
            assert_eq!(offset_from_file_name(&name), Some(o));
        }
    }
}
