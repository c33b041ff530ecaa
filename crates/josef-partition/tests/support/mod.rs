//! Helpers shared by the leader/follower tests: a replica on a temporary directory, a client
//! produce, and one follower fetch round.

use bytes::{Bytes, BytesMut};
use josef_log::{BatchHeader, LogConfig};
use josef_partition::replication::NO_EPOCH;
use josef_partition::{
    ClientBatch, EpochEndOffset, FetchIsolation, FollowerFetch, Partition, ReadParams,
};
use josef_protocol::{ErrorCode, Uuid};
use josef_sequencer::ProducerStateConfig;

/// Replica `id` of partition `t-0` under `dir` (reopening the same `id` reopens its log).
pub fn open(dir: &tempfile::TempDir, id: i32) -> Partition {
    Partition::open_replica(
        &dir.path().join(format!("r{id}/t-0")),
        "t",
        0,
        Uuid::ZERO,
        LogConfig::default(),
        ProducerStateConfig::default(),
        id,
        0,
    )
    .unwrap()
}

/// Appends a client batch; `(base offset, last offset)` or the error code.
pub fn produce(p: &Partition, b: BytesMut, acks: i16, now: i64) -> Result<(i64, i64), ErrorCode> {
    let h = BatchHeader::parse(&b).unwrap();
    p.append_from_client(ClientBatch::Owned(b), &h, acks, 2, now)
        .map(|r| (r.base_offset, r.last_offset))
        .map_err(|e| e.code)
}

/// One follower fetch round: fetch from the leader at the follower's position, truncate or
/// append.
pub fn replicate(
    leader: &Partition,
    follower: &Partition,
    id: i32,
    now: i64,
) -> Option<EpochEndOffset> {
    let (fetch_offset, last_fetched_epoch) = follower.follower_fetch_position();
    let r = leader
        .fetch_from_follower(
            &FollowerFetch {
                last_fetched_epoch,
                ..FollowerFetch::new(id, fetch_offset, leader.leader_epoch())
            },
            now,
        )
        .unwrap();
    if let Some(d) = r.diverging_epoch {
        follower.truncate_on_divergence(d, now).unwrap();
        return Some(d);
    }
    follower
        .append_as_follower(fetch_offset, r.read.records, r.read.high_watermark, now)
        .unwrap();
    None
}

/// Whole batches of any replica from `from` up to its LEO, at most `max_bytes` (the first batch
/// whole).
#[allow(dead_code)]
pub fn read_to_log_end(p: &Partition, from: i64, max_bytes: i64) -> Bytes {
    p.read(&ReadParams {
        fetch_offset: from,
        current_leader_epoch: NO_EPOCH,
        max_bytes,
        min_one_message: true,
        hard_limit: false,
        isolation: FetchIsolation::LogEnd,
        require_leader: false,
    })
    .unwrap()
    .records
}
