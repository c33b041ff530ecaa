//! Josef's coordinators behind the coordinator seam: the broker's
//! [`GroupService`](crate::groups::GroupService) (josef-group's state machine per
//! `__consumer_offsets` partition) and [`TxnService`](crate::txns::TxnService) (josef-txn's per
//! `__transaction_state` partition), each request mapped by josef-group's and josef-txn's `wire`
//! adapters in the handler modules. Their background work (loading shards as leadership
//! arrives, timers) runs from their `tick`, so it runs only while they are the coordinators set.

use std::sync::atomic::{AtomicI64, Ordering};

use josef_protocol::messages::*;

use super::coordinators::{
    CoordinatorFuture, CoordinatorRequest, GroupCoordinator, TxnCoordinator,
};
use crate::handlers::{consumer_group, groups, producer_ids, txn};
use crate::state::BrokerState;

/// How often Josef's group coordinator loads the shards of partitions newly led here and hands
/// the shards the topics (consumer group subscriptions, regexes): a scan of every topic, too
/// costly for every tick.
const GROUP_SCAN_MS: i64 = 100;

/// How often Josef's transaction coordinator does its background work (loading, resigning,
/// transaction timeouts, id expiration), all of it in seconds.
const TXN_TICK_MS: i64 = 200;

/// When a periodic piece of work is next due.
#[derive(Debug, Default)]
struct Pace {
    next_ms: AtomicI64,
}

impl Pace {
    /// Whether the work is due at `now_ms`; if so, the next time is `every_ms` on.
    fn due(&self, now_ms: i64, every_ms: i64) -> bool {
        let next = self.next_ms.load(Ordering::Relaxed);
        now_ms >= next
            && self
                .next_ms
                .compare_exchange(
                    next,
                    now_ms + every_ms,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok()
    }
}

/// Josef's group coordinator: the state's [`GroupService`](crate::groups::GroupService).
#[derive(Debug, Default)]
pub struct JosefGroupCoordinator {
    scan: Pace,
}

impl GroupCoordinator for JosefGroupCoordinator {
    fn join_group<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: JoinGroupRequest,
    ) -> CoordinatorFuture<'a, JoinGroupResponse> {
        Box::pin(groups::join(rq.state, rq.conn, rq.header, req))
    }

    fn sync_group<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: SyncGroupRequest,
    ) -> CoordinatorFuture<'a, SyncGroupResponse> {
        Box::pin(groups::sync(rq.state, rq.header, req))
    }

    fn heartbeat<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: HeartbeatRequest,
    ) -> CoordinatorFuture<'a, HeartbeatResponse> {
        Box::pin(groups::heartbeat(rq.state, req))
    }

    fn leave_group<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: LeaveGroupRequest,
    ) -> CoordinatorFuture<'a, LeaveGroupResponse> {
        Box::pin(groups::leave(rq.state, rq.version(), req))
    }

    fn offset_commit<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: OffsetCommitRequest,
    ) -> CoordinatorFuture<'a, OffsetCommitResponse> {
        Box::pin(groups::offset_commit(rq.state, rq.conn, rq.header, req))
    }

    fn txn_offset_commit<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: TxnOffsetCommitRequest,
    ) -> CoordinatorFuture<'a, TxnOffsetCommitResponse> {
        Box::pin(groups::txn_offset_commit(rq.state, rq.version(), req))
    }

    fn offset_fetch<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: OffsetFetchRequest,
    ) -> CoordinatorFuture<'a, OffsetFetchResponse> {
        Box::pin(groups::offset_fetch(rq.state, rq.version(), req))
    }

    fn list_groups<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: ListGroupsRequest,
    ) -> CoordinatorFuture<'a, ListGroupsResponse> {
        Box::pin(groups::list(rq.state, rq.version(), req))
    }

    fn describe_groups<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: DescribeGroupsRequest,
    ) -> CoordinatorFuture<'a, DescribeGroupsResponse> {
        Box::pin(groups::describe(rq.state, rq.version(), req))
    }

    fn delete_groups<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: DeleteGroupsRequest,
    ) -> CoordinatorFuture<'a, DeleteGroupsResponse> {
        Box::pin(groups::delete(rq.state, req))
    }

    fn offset_delete<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: OffsetDeleteRequest,
    ) -> CoordinatorFuture<'a, OffsetDeleteResponse> {
        Box::pin(groups::offset_delete(rq.state, req))
    }

    fn consumer_group_heartbeat<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: ConsumerGroupHeartbeatRequest,
    ) -> CoordinatorFuture<'a, ConsumerGroupHeartbeatResponse> {
        Box::pin(consumer_group::heartbeat(rq.state, rq.conn, rq.header, req))
    }

    fn consumer_group_describe<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: ConsumerGroupDescribeRequest,
    ) -> CoordinatorFuture<'a, ConsumerGroupDescribeResponse> {
        Box::pin(consumer_group::describe(rq.state, req))
    }

    fn on_transaction_completed(&self, state: &BrokerState, producer_id: i64, committed: bool) {
        state.groups.complete_transaction(producer_id, committed);
    }

    fn tick(&self, state: &BrokerState, now_ms: i64) {
        if self.scan.due(now_ms, GROUP_SCAN_MS) {
            state
                .groups
                .load_led(&state.topics, state.cluster.as_deref());
            state
                .groups
                .tick_with_image(consumer_group::topic_image_version(state), || {
                    consumer_group::topic_image(state)
                });
        } else {
            state.groups.tick();
        }
    }

    fn shutdown(&self, state: &BrokerState) {
        state.groups.unload_all();
    }
}

/// Josef's transaction coordinator: the state's [`TxnService`](crate::txns::TxnService), and
/// producer ids for idempotent producers from the state's josef-sequencer `ProducerIdManager`.
#[derive(Debug, Default)]
pub struct JosefTxnCoordinator {
    pace: Pace,
}

impl TxnCoordinator for JosefTxnCoordinator {
    fn init_producer_id<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: InitProducerIdRequest,
    ) -> CoordinatorFuture<'a, InitProducerIdResponse> {
        if req.transactional_id.as_ref().is_some_and(|t| !t.is_empty()) {
            Box::pin(txn::init_producer_id(rq.state, rq.version(), req))
        } else {
            Box::pin(std::future::ready(producer_ids::init_producer_id(
                rq.state, req,
            )))
        }
    }

    fn add_partitions_to_txn<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: AddPartitionsToTxnRequest,
    ) -> CoordinatorFuture<'a, AddPartitionsToTxnResponse> {
        Box::pin(txn::add_partitions(rq.state, rq.version(), req))
    }

    fn add_offsets_to_txn<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: AddOffsetsToTxnRequest,
    ) -> CoordinatorFuture<'a, AddOffsetsToTxnResponse> {
        Box::pin(txn::add_offsets(rq.state, rq.version(), req))
    }

    fn end_txn<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: EndTxnRequest,
    ) -> CoordinatorFuture<'a, EndTxnResponse> {
        Box::pin(txn::end_txn(rq.state, rq.version(), req))
    }

    fn describe_transactions<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: DescribeTransactionsRequest,
    ) -> CoordinatorFuture<'a, DescribeTransactionsResponse> {
        Box::pin(std::future::ready(txn::describe(rq.state, req)))
    }

    fn list_transactions<'a>(
        &'a self,
        rq: CoordinatorRequest<'a>,
        req: ListTransactionsRequest,
    ) -> CoordinatorFuture<'a, ListTransactionsResponse> {
        Box::pin(std::future::ready(txn::list(rq.state, req)))
    }

    fn tick(&self, state: &BrokerState, now_ms: i64) {
        if self.pace.due(now_ms, TXN_TICK_MS) {
            state
                .txns
                .tick(&crate::txns::Env::of(state), state.cluster.as_deref());
        }
    }

    fn shutdown(&self, state: &BrokerState) {
        state.txns.unload_all(&crate::txns::Env::of(state));
    }
}
