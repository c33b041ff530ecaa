//! InitProducerId (api 22) for idempotent producers (no transactional id), and
//! DescribeProducers (api 61) from each partition's producer state.

use josef_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use josef_protocol::messages::*;
use josef_protocol::ErrorCode;

use crate::kit::partition_store::TopicPartition;
use crate::state::BrokerState;

/// InitProducerId without a transactional id: a fresh producer id with epoch 0.
pub fn init_producer_id(state: &BrokerState, req: InitProducerIdRequest) -> InitProducerIdResponse {
    let mut r = InitProducerIdResponse {
        producer_id: -1,
        producer_epoch: -1,
        ..Default::default()
    };
    if req.transactional_id.as_ref().is_some_and(|t| !t.is_empty()) {
        // Served by the transaction coordinator; see handlers::txn when it is wired in.
        r.error_code = ErrorCode::CoordinatorNotAvailable.code();
        return r;
    }
    match crate::state::lock_without_holding_a_worker(&state.producer_ids).next_id() {
        Ok(id) => {
            r.producer_id = id;
            r.producer_epoch = 0;
        }
        Err(e) => {
            tracing::warn!(error = %e, "producer id allocation failed");
            r.error_code = ErrorCode::UnknownServerError.code();
        }
    }
    r
}

/// DescribeProducers: the active producers of each partition.
pub fn describe_producers(
    state: &BrokerState,
    req: DescribeProducersRequest,
) -> DescribeProducersResponse {
    let topics = req
        .topics
        .iter()
        .map(|t| TopicResponse {
            name: t.name.clone(),
            partitions: t
                .partition_indexes
                .iter()
                .map(|&i| {
                    let tp = TopicPartition {
                        topic: &t.name,
                        partition: i,
                    };
                    match state.partition_store.active_producers(tp) {
                        Err(code) => PartitionResponse {
                            partition_index: i,
                            error_code: code.code(),
                            ..Default::default()
                        },
                        Ok(producers) => PartitionResponse {
                            partition_index: i,
                            active_producers: producers
                                .into_iter()
                                .map(|e| ProducerState {
                                    producer_id: e.producer_id,
                                    producer_epoch: i32::from(e.producer_epoch),
                                    last_sequence: e.last_sequence,
                                    last_timestamp: e.last_timestamp,
                                    coordinator_epoch: e.coordinator_epoch,
                                    current_txn_start_offset: e
                                        .current_txn_start_offset
                                        .unwrap_or(-1),
                                    ..Default::default()
                                })
                                .collect(),
                            ..Default::default()
                        },
                    }
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    DescribeProducersResponse {
        topics,
        ..Default::default()
    }
}
