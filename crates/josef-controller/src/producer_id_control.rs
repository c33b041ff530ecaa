//! Kafka's `ProducerIdControlManager`: blocks of producer ids for brokers' InitProducerId.

use josef_protocol::messages::{AllocateProducerIdsRequest, AllocateProducerIdsResponse};
use josef_protocol::ErrorCode;

use crate::records::{MetadataRecord, ProducerIdsRecord};
use crate::{ApiError, Controller, ControllerResult, ReplayError, WriteContext};

/// The next producer id to hand out, changed only by replay.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ProducerIdControlManager {
    pub(crate) next_producer_id: i64,
}

impl ProducerIdControlManager {
    pub(crate) fn replay(&mut self, r: &ProducerIdsRecord) -> Result<(), ReplayError> {
        // Equal is accepted: a snapshot's record repeats the last block's end.
        if r.next_producer_id < self.next_producer_id {
            return Err(ReplayError::Invalid(format!(
                "next producer id {} is below {}",
                r.next_producer_id, self.next_producer_id
            )));
        }
        self.next_producer_id = r.next_producer_id;
        Ok(())
    }
}

impl Controller {
    /// AllocateProducerIds (API 67; Kafka's `generateNextProducerId`): the next block of
    /// `producer_id_block_size` ids, recorded as a ProducerIdsRecord whose `next_producer_id` is
    /// the block's end. STALE_BROKER_EPOCH for an unknown broker or another epoch;
    /// UNKNOWN_SERVER_ERROR once the ids would pass `i64::MAX`.
    pub fn allocate_producer_ids(
        &mut self,
        _ctx: WriteContext,
        req: &AllocateProducerIdsRequest,
    ) -> ControllerResult<AllocateProducerIdsResponse> {
        let fail = |e: ApiError| {
            ControllerResult::response(AllocateProducerIdsResponse {
                error_code: e.code(),
                producer_id_start: -1,
                producer_id_len: 0,
                ..Default::default()
            })
        };
        if let Err(e) = self.check_active() {
            return fail(e);
        }
        if let Err(e) = self
            .cluster
            .check_broker_epoch(req.broker_id, req.broker_epoch)
        {
            return fail(e);
        }
        let start = self.producer_ids.next_producer_id;
        let len = self.config.producer_id_block_size.max(1);
        let Some(next) = start.checked_add(i64::from(len)) else {
            return fail(ApiError::new(
                ErrorCode::UnknownServerError,
                "Exhausted all producerIds as the next block's end producerId will exceed long max value",
            ));
        };
        ControllerResult::of(
            vec![MetadataRecord::ProducerIds(ProducerIdsRecord {
                broker_id: req.broker_id,
                broker_epoch: req.broker_epoch,
                next_producer_id: next,
                ..Default::default()
            })],
            AllocateProducerIdsResponse {
                producer_id_start: start,
                producer_id_len: len,
                ..Default::default()
            },
        )
    }
}
