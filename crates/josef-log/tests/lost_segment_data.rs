//! What an open makes of a partition directory whose checkpoints name offsets its segment data no
//! longer has: a disk that lost writes it had not made durable (an aborted ext4 journal, a power
//! cut), as node 3's did in issue #18's bug 4. Kafka's `LogLoader` rules: the log start is the
//! larger of the log-start checkpoint and the first segment's base; the recovery point never
//! moves the log start, it only bounds what is recovered and is cut to the log end; a log end
//! below the log start leaves an empty log starting there.
//!
//! A log that opens shorter than it was is a replica that lost data; the replication protocol
//! (the follower fetching from its log end, the controller keeping a restarted broker out of
//! the ISR until it caught up) is what must bring it back, and a log start past 0 here would be
//! taken up by every follower once this replica leads (`maybe_increment_log_start_offset`).

use std::path::{Path, PathBuf};

use josef_log::testing::TestBatch;
use josef_log::{Log, LogConfig, PartitionState, TimestampType};

/// Small segments: several rolled (so fsynced) ones and an active one.
fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 2048,
        index_interval_bytes: 128,
        segment_index_bytes: 1024,
        ..LogConfig::default()
    }
}

/// 51 single-record batches (offsets 0..=50) over several segments, the log dropped without a
/// close (kill -9); the segment bases.
fn written(dir: &Path) -> Vec<i64> {
    written_with(dir, config())
}

/// The same in one segment (the default 1 GiB), never flushed: the state of a partition a few
/// seconds old, as partition 2 of bug 4's run was at the fault.
fn written_in_one_segment(dir: &Path) -> Vec<i64> {
    let bases = written_with(dir, LogConfig::default());
    assert_eq!(bases, [0]);
    bases
}

fn written_with(dir: &Path, config: LogConfig) -> Vec<i64> {
    let segmented = config.segment_bytes < LogConfig::default().segment_bytes;
    let mut log = Log::open_with(dir, config, 0, unclean(0, 0)).unwrap();
    for i in 0..51 {
        let b = TestBatch::new(0)
            .record(1_000 + i, Some(b"k"), Some(&[b'v'; 100]))
            .build();
        log.append_as_leader(b, 0, 0, TimestampType::CreateTime)
            .unwrap();
    }
    assert_eq!(log.log_end_offset(), 51);
    let bases: Vec<i64> = log.segments().map(|s| s.base_offset()).collect();
    assert!(
        !segmented || bases.len() >= 3,
        "the fixture needs several segments: {bases:?}"
    );
    drop(log);
    bases
}

fn unclean(recovery_point: i64, log_start_offset: i64) -> PartitionState {
    PartitionState::Managed {
        recovery_point,
        log_start_offset,
        clean_shutdown: false,
    }
}

fn seg_file(dir: &Path, base: i64) -> PathBuf {
    dir.join(format!("{base:020}.log"))
}

fn empty_every_segment(dir: &Path, bases: &[i64]) {
    for &b in bases {
        std::fs::OpenOptions::new()
            .write(true)
            .open(seg_file(dir, b))
            .unwrap()
            .set_len(0)
            .unwrap();
    }
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// The hypothesis of bug 4: a recovery-point checkpoint (51) newer than the segment's bytes (all
/// lost). The log opens empty at 0, not at the recovery point: were the recovery point taken as
/// the log start, a follower of this replica would delete 0..50. With or without the
/// clean-shutdown marker.
#[test]
fn a_recovery_point_past_lost_data_opens_an_empty_log_at_zero() {
    for clean_shutdown in [false, true] {
        let tmp = tempdir();
        let dir = tmp.path().join("t-0");
        let bases = written_in_one_segment(&dir);
        empty_every_segment(&dir, &bases);
        let state = PartitionState::Managed {
            recovery_point: 51,
            log_start_offset: 0,
            clean_shutdown,
        };
        let log = Log::open_with(&dir, LogConfig::default(), 0, state).unwrap();
        assert_eq!(
            (
                log.log_start_offset(),
                log.log_end_offset(),
                log.recovery_point()
            ),
            (0, 0, 0),
            "clean shutdown marker: {clean_shutdown}"
        );
    }
}

/// Segments below the recovery point are trusted as flushed (Kafka's `recoverLog` recovers from
/// the segment holding the recovery point): if their bytes were lost anyway (a disk that lied
/// about an fsync), the log ends at the active segment's base with nothing readable below it.
/// Not a state a working disk leaves (rolled segments are fsynced before the recovery point
/// passes them); recorded so a change to it is seen.
#[test]
fn lost_bytes_below_the_recovery_point_are_not_looked_for() {
    let tmp = tempdir();
    let dir = tmp.path().join("t-0");
    let bases = written(&dir);
    empty_every_segment(&dir, &bases);
    let log = Log::open_with(&dir, config(), 0, unclean(51, 0)).unwrap();
    let last = *bases.last().unwrap();
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (0, last));
}

/// Only the last segment's bytes lost: the log ends where the previous segment ended, and the
/// log start stays 0.
#[test]
fn a_lost_active_segment_cuts_the_log_at_its_base() {
    let tmp = tempdir();
    let dir = tmp.path().join("t-0");
    let bases = written(&dir);
    let last = *bases.last().unwrap();
    empty_every_segment(&dir, &[last]);
    let log = Log::open_with(&dir, config(), 0, unclean(51, 0)).unwrap();
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (0, last));
    assert_eq!(log.recovery_point(), last);
}

/// The first segment's file gone (not just its bytes): the log starts at the next segment's
/// base, Kafka's rule (`max(logStartOffsetCheckpoint, firstSegment.baseOffset)`). This is the one
/// state in which a replica's log start moves past records it never deleted; such a replica must
/// never lead, or its followers take that log start up.
#[test]
fn a_lost_first_segment_file_moves_the_log_start_to_the_next_base() {
    let tmp = tempdir();
    let dir = tmp.path().join("t-0");
    let bases = written(&dir);
    std::fs::remove_file(seg_file(&dir, bases[0])).unwrap();
    let log = Log::open_with(&dir, config(), 0, unclean(0, 0)).unwrap();
    assert_eq!(
        (log.log_start_offset(), log.log_end_offset()),
        (bases[1], 51)
    );
}

/// A log-start checkpoint past the data left (the log start had really moved, by DeleteRecords
/// or the leader's): an empty log starting there (Kafka's "log end offset smaller than log
/// start offset: delete all segments").
#[test]
fn a_log_start_checkpoint_past_lost_data_opens_an_empty_log_there() {
    let tmp = tempdir();
    let dir = tmp.path().join("t-0");
    let bases = written_in_one_segment(&dir);
    empty_every_segment(&dir, &bases);
    let log = Log::open_with(&dir, LogConfig::default(), 0, unclean(51, 40)).unwrap();
    assert_eq!(
        (
            log.log_start_offset(),
            log.log_end_offset(),
            log.recovery_point()
        ),
        (40, 40, 40)
    );
}
