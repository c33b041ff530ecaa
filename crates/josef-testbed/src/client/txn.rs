//! The lookups a transaction test makes before and after a fault: who leads a partition, which
//! node coordinates a transactional id, a producer id for it, and which answers a client retries.

use std::net::SocketAddr;

use josef_protocol::messages::fetch_response::PartitionData;
use josef_protocol::messages::{FindCoordinatorRequest, InitProducerIdRequest};
use josef_protocol::{ErrorCode, ResponseBody};

use super::{call, metadata};

/// The errors a transactional client retries after a failover (a new leader or coordinator not
/// known yet, one still loading, an earlier transaction still being completed).
pub const TXN_RETRIABLE: [ErrorCode; 6] = [
    ErrorCode::NotEnoughReplicas,
    ErrorCode::NotLeaderOrFollower,
    ErrorCode::ConcurrentTransactions,
    ErrorCode::CoordinatorLoadInProgress,
    ErrorCode::CoordinatorNotAvailable,
    ErrorCode::NotCoordinator,
];

/// Whether `code` is one of [`TXN_RETRIABLE`].
pub fn txn_retriable(code: i16) -> bool {
    TXN_RETRIABLE.iter().any(|e| e.code() == code)
}

/// `(leader, leader epoch)` of `topic`-`partition` as `addr` sees it; `None` while it has no
/// leader or `addr` does not answer.
pub fn partition_leader(addr: SocketAddr, topic: &str, partition: i32) -> Option<(i32, i32)> {
    let m = metadata(addr).ok()?;
    let t = m.topics.iter().find(|t| t.name.as_deref() == Some(topic))?;
    let p = t
        .partitions
        .iter()
        .find(|p| p.partition_index == partition && p.leader_id >= 0)?;
    Some((p.leader_id, p.leader_epoch))
}

/// The node FindCoordinator (v3) names for transactional id `id`, asked at `addr`; `None` on
/// an error or no answer.
pub fn transaction_coordinator(addr: SocketAddr, id: &str) -> Option<i32> {
    let req = FindCoordinatorRequest {
        key: id.into(),
        key_type: 1,
        ..Default::default()
    };
    match call(addr, 3, req.into()).ok()? {
        ResponseBody::FindCoordinator(r) if r.error_code == 0 => Some(r.node_id),
        _ => None,
    }
}

/// InitProducerId v5 for transactional id `id` at `addr`: `(error code, producer id, epoch)`.
pub fn init_producer_id(addr: SocketAddr, id: &str, timeout_ms: i32) -> Option<(i16, i64, i16)> {
    let req = InitProducerIdRequest {
        transactional_id: Some(id.into()),
        transaction_timeout_ms: timeout_ms,
        producer_id: -1,
        producer_epoch: -1,
        ..Default::default()
    };
    match call(addr, 5, req.into()).ok()? {
        ResponseBody::InitProducerId(r) => Some((r.error_code, r.producer_id, r.producer_epoch)),
        _ => None,
    }
}

/// A read_committed Fetch (v12) of `topic`-`partition` from offset 0 at `addr`: the partition's
/// answer (its LSO, HW and records) when it carries no error, else `None`.
pub fn fetch_read_committed(
    addr: SocketAddr,
    topic: &str,
    partition: i32,
) -> Option<PartitionData> {
    let req = super::data::consumer_fetch(topic, partition, 0, 1 << 20, 1);
    let ResponseBody::Fetch(r) = call(addr, 12, req.into()).ok()? else {
        return None;
    };
    let p = r
        .responses
        .into_iter()
        .next()?
        .partitions
        .into_iter()
        .next()?;
    (p.error_code == 0).then_some(p)
}
