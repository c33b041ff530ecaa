//! The coordinator seam: how the request handlers reach the group and transaction coordinators
//! (Kafka's `GroupCoordinator` and `TransactionCoordinator` interfaces that `KafkaApis` calls).
//! One method per API, taking the request as the client sent it and answering the response
//! to send back, so a builder's coordinator sees exactly what Kafka's would; Josef's are
//! [`JosefGroupCoordinator`](super::JosefGroupCoordinator) and
//! [`JosefTxnCoordinator`](super::JosefTxnCoordinator), the josef-group and josef-txn state
//! machines run by the broker's [`GroupService`](crate::groups::GroupService) and
//! [`TxnService`](crate::txns::TxnService).
//!
//! The rules every implementation keeps, as Kafka's coordinators do: a group belongs to the
//! leader of its `__consumer_offsets` partition and a transactional id to the leader of its
//! `__transaction_state` partition (the ones FindCoordinator names from the metadata view);
//! another broker answers NOT_COORDINATOR, a leader still loading the partition
//! COORDINATOR_LOAD_IN_PROGRESS, and COORDINATOR_NOT_AVAILABLE while the partition has no
//! usable leader. A change (a join, a commit, a state transition) is answered only once the
//! record holding it is committed in that partition, so a new coordinator rebuilds every state
//! it had answered. Versions: each method answers at the request's version
//! ([`CoordinatorRequest::version`]), in the fields that version has.

use std::future::Future;
use std::pin::Pin;

use josef_protocol::messages::*;
use josef_protocol::RequestHeader;

use crate::connection::ConnectionInfo;
use crate::state::BrokerState;

/// What a coordinator method returns: coordinators answer once their records are committed.
pub type CoordinatorFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The request a coordinator method answers, beyond its body: the broker's state (an
/// implementation may store through its partition store or read its metadata view), the client's
/// connection (client host, listener) and the request header (client id, version).
#[derive(Clone, Copy)]
pub struct CoordinatorRequest<'a> {
    /// The broker the request came to.
    pub state: &'a BrokerState,
    /// The client's connection.
    pub conn: &'a ConnectionInfo,
    /// The request's header.
    pub header: &'a RequestHeader,
}

impl CoordinatorRequest<'_> {
    /// The request's API version.
    pub fn version(&self) -> i16 {
        self.header.request_api_version
    }
}

/// The group coordinator as the handlers reach it (Kafka's `GroupCoordinator` interface).
/// Held as `Arc<dyn GroupCoordinator>` on the state
/// ([`BrokerState::with_group_coordinator`](crate::state::BrokerState::with_group_coordinator)).
pub trait GroupCoordinator: Send + Sync {
    /// JoinGroup (classic protocol): membership, the rebalance, and the parked answer once every
    /// member rejoined or `rebalance_timeout_ms` passed; MEMBER_ID_REQUIRED for a v4+ first join.
    fn join_group<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: JoinGroupRequest,
    ) -> CoordinatorFuture<'a, JoinGroupResponse>;

    /// SyncGroup: the leader's assignment, handed to every member once stored;
    /// REBALANCE_IN_PROGRESS / ILLEGAL_GENERATION for a member of an older generation.
    fn sync_group<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: SyncGroupRequest,
    ) -> CoordinatorFuture<'a, SyncGroupResponse>;

    /// Heartbeat: keeps a classic member's session; REBALANCE_IN_PROGRESS tells it to rejoin.
    fn heartbeat<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: HeartbeatRequest,
    ) -> CoordinatorFuture<'a, HeartbeatResponse>;

    /// LeaveGroup: removes members (v3+ several, by member or instance id) and rebalances.
    fn leave_group<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: LeaveGroupRequest,
    ) -> CoordinatorFuture<'a, LeaveGroupResponse>;

    /// OffsetCommit: stores offsets, checked against the member's generation (or the consumer
    /// group's member epoch); answered once the offset records are committed.
    fn offset_commit<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: OffsetCommitRequest,
    ) -> CoordinatorFuture<'a, OffsetCommitResponse>;

    /// TxnOffsetCommit: offsets pending in the producer's transaction, visible only once its
    /// commit marker reaches the group's partition
    /// ([`on_transaction_completed`](GroupCoordinator::on_transaction_completed)).
    fn txn_offset_commit<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: TxnOffsetCommitRequest,
    ) -> CoordinatorFuture<'a, TxnOffsetCommitResponse>;

    /// OffsetFetch: committed offsets (v8+ of several groups); with `require_stable`,
    /// UNSTABLE_OFFSET_COMMIT for a partition with a pending transactional commit.
    fn offset_fetch<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: OffsetFetchRequest,
    ) -> CoordinatorFuture<'a, OffsetFetchResponse>;

    /// ListGroups: the groups of every coordinator partition this broker leads, filtered by
    /// state and type.
    fn list_groups<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: ListGroupsRequest,
    ) -> CoordinatorFuture<'a, ListGroupsResponse>;

    /// DescribeGroups: each group's state, protocol and members (Dead for an unknown group).
    fn describe_groups<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: DescribeGroupsRequest,
    ) -> CoordinatorFuture<'a, DescribeGroupsResponse>;

    /// DeleteGroups: NON_EMPTY_GROUP while a group has members; GROUP_ID_NOT_FOUND for none.
    fn delete_groups<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: DeleteGroupsRequest,
    ) -> CoordinatorFuture<'a, DeleteGroupsResponse>;

    /// OffsetDelete: GROUP_SUBSCRIBED_TO_TOPIC for a topic the group still consumes.
    fn offset_delete<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: OffsetDeleteRequest,
    ) -> CoordinatorFuture<'a, OffsetDeleteResponse>;

    /// ConsumerGroupHeartbeat (KIP-848): joins, heartbeats and leaves of the new protocol, the
    /// member's epoch and its target assignment.
    fn consumer_group_heartbeat<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: ConsumerGroupHeartbeatRequest,
    ) -> CoordinatorFuture<'a, ConsumerGroupHeartbeatResponse>;

    /// ConsumerGroupDescribe (KIP-848).
    fn consumer_group_describe<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: ConsumerGroupDescribeRequest,
    ) -> CoordinatorFuture<'a, ConsumerGroupDescribeResponse>;

    /// A transaction's marker is in the ISR of a `__consumer_offsets` partition this broker
    /// leads (Kafka's `onTransactionCompleted`, from WriteTxnMarkers): the producer's pending
    /// offsets of the groups there become committed (`committed`) or are dropped.
    fn on_transaction_completed(&self, state: &BrokerState, producer_id: i64, committed: bool);

    /// The coordinator's background work, called by the broker every
    /// [`COORDINATOR_TICK_MS`] while it serves
    /// ([`BrokerState::tick_coordinators`](crate::state::BrokerState::tick_coordinators)) and
    /// only for the coordinator set on the state: what Kafka's coordinator runtime does off the
    /// request path (loading a `__consumer_offsets` partition on election and unloading it on
    /// resignation, session and rebalance timeouts, offset expiration). Josef's loads and
    /// unloads its shards and fires their timers here; a coordinator with nothing to do in the
    /// background keeps this default.
    fn tick(&self, state: &BrokerState, now_ms: i64) {
        let _ = (state, now_ms);
    }

    /// The broker is stopping and its logs close next (Kafka's shutdown order): a coordinator
    /// holding partitions releases them here, answering what it still holds NOT_COORDINATOR.
    fn shutdown(&self, state: &BrokerState) {
        let _ = state;
    }
}

/// The transaction coordinator as the handlers reach it (Kafka's `TransactionCoordinator`).
/// Held as `Arc<dyn TxnCoordinator>` on the state
/// ([`BrokerState::with_txn_coordinator`](crate::state::BrokerState::with_txn_coordinator)).
pub trait TxnCoordinator: Send + Sync {
    /// InitProducerId. Without a transactional id: a fresh producer id, epoch 0, unique in
    /// the cluster and never handed out again (idempotent producers; Kafka's coordinator
    /// answers these too). With one: the id's producer id and a bumped epoch, fencing older
    /// producers, after aborting (or finishing) the id's open transaction;
    /// CONCURRENT_TRANSACTIONS while its markers are still being written.
    fn init_producer_id<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: InitProducerIdRequest,
    ) -> CoordinatorFuture<'a, InitProducerIdResponse>;

    /// AddPartitionsToTxn: partitions join the ongoing transaction (v4+ from brokers too, some
    /// only verified: KIP-890); UNKNOWN_TOPIC_OR_PARTITION for partitions that do not exist,
    /// INVALID_PRODUCER_EPOCH / PRODUCER_FENCED for an older epoch.
    fn add_partitions_to_txn<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: AddPartitionsToTxnRequest,
    ) -> CoordinatorFuture<'a, AddPartitionsToTxnResponse>;

    /// AddOffsetsToTxn: the group's `__consumer_offsets` partition joins the transaction.
    fn add_offsets_to_txn<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: AddOffsetsToTxnRequest,
    ) -> CoordinatorFuture<'a, AddOffsetsToTxnResponse>;

    /// EndTxn: PrepareCommit/PrepareAbort committed, then the markers written to every
    /// partition of the transaction; v5 (transactions v2) bumps the epoch with every end.
    fn end_txn<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: EndTxnRequest,
    ) -> CoordinatorFuture<'a, EndTxnResponse>;

    /// DescribeTransactions: each id's state, producer, timeout and partitions
    /// (TRANSACTIONAL_ID_NOT_FOUND for an unknown id).
    fn describe_transactions<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: DescribeTransactionsRequest,
    ) -> CoordinatorFuture<'a, DescribeTransactionsResponse>;

    /// ListTransactions: the ids of every coordinator partition led here, filtered by state,
    /// producer id and duration.
    fn list_transactions<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: ListTransactionsRequest,
    ) -> CoordinatorFuture<'a, ListTransactionsResponse>;

    /// The coordinator's background work, called as
    /// [`GroupCoordinator::tick`] is: what Kafka's `TransactionCoordinator` does off the request
    /// path (loading a `__transaction_state` partition on election, resigning it, aborting
    /// transactions past their timeout, expiring idle transactional ids). Josef's does that
    /// here; a coordinator with nothing to do in the background keeps this default.
    fn tick(&self, state: &BrokerState, now_ms: i64) {
        let _ = (state, now_ms);
    }

    /// The broker is stopping and its logs close next: as [`GroupCoordinator::shutdown`].
    fn shutdown(&self, state: &BrokerState) {
        let _ = state;
    }
}

/// How often the broker calls the coordinators' `tick` (Josef's group coordinator fires due
/// timers at every one; coarser work keeps its own pace).
pub const COORDINATOR_TICK_MS: u64 = 20;
