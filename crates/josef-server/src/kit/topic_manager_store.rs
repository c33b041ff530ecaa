//! Josef's own partition store: the [`TopicManager`]'s josef-partition partitions, which keep
//! every rule of [`PartitionStore`] themselves (leader epochs, ISR, sequencer, bounds).

use std::sync::Arc;

use josef_protocol::{ErrorCode, Uuid};
use josef_records::BatchHeader;

use super::partition_store::{PartitionStore, ProduceSettings, TopicPartition};
use crate::partition::{
    ClientBatch, FetchIsolation, Partition, PartitionError, ProduceResult, ReadParams, ReadResult,
};
use crate::topics::TopicManager;

impl TopicManager {
    fn hosted(&self, tp: TopicPartition<'_>) -> Result<Arc<Partition>, ErrorCode> {
        self.partition(tp.topic, tp.partition)
            .ok_or(ErrorCode::UnknownTopicOrPartition)
    }
}

impl PartitionStore for TopicManager {
    fn check_leader_epoch(
        &self,
        tp: TopicPartition<'_>,
        current_leader_epoch: i32,
        require_leader: bool,
    ) -> Result<i32, ErrorCode> {
        self.hosted(tp)?
            .check_current_leader_epoch(current_leader_epoch, require_leader)
    }

    fn offset_for_timestamp(
        &self,
        tp: TopicPartition<'_>,
        timestamp: i64,
        isolation: FetchIsolation,
    ) -> Result<Option<(i64, i64)>, ErrorCode> {
        self.hosted(tp)?
            .fetch_offset_for_timestamp(timestamp, isolation)
    }

    fn legacy_offsets(
        &self,
        tp: TopicPartition<'_>,
        timestamp: i64,
        max_num_offsets: i32,
        from_consumer: bool,
        now_ms: i64,
    ) -> Result<Vec<i64>, ErrorCode> {
        self.hosted(tp)?
            .legacy_offsets_before(timestamp, max_num_offsets, from_consumer, now_ms)
            .ok_or(ErrorCode::UnknownServerError)
    }

    fn produce_settings(&self, tp: TopicPartition<'_>) -> Result<ProduceSettings, ErrorCode> {
        let p = self.hosted(tp)?;
        // Parsed from the topic's configs when the partition opened and on every change, so
        // nothing is parsed per request.
        Ok(ProduceSettings {
            validation: p.validation_config(),
            min_insync_replicas: p.min_insync_replicas(),
        })
    }

    fn append(
        &self,
        tp: TopicPartition<'_>,
        batch: ClientBatch,
        header: &BatchHeader,
        acks: i16,
        min_insync_replicas: i32,
        now_ms: i64,
    ) -> Result<ProduceResult, PartitionError> {
        let p = self.hosted(tp)?;
        p.append_from_client(batch, header, acks, min_insync_replicas, now_ms)
    }

    fn topic_name(&self, topic_id: Uuid) -> Option<String> {
        self.get_by_id(&topic_id).map(|t| t.name.clone())
    }

    fn topic_config(&self, topic: &str, name: &str) -> Option<String> {
        self.get(topic)?.configs.get(name).cloned()
    }

    fn read(&self, tp: TopicPartition<'_>, params: &ReadParams) -> Result<ReadResult, ErrorCode> {
        self.hosted(tp)?.read(params)
    }

    fn delayed_operation_target(&self, tp: TopicPartition<'_>) -> Option<Arc<Partition>> {
        self.partition(tp.topic, tp.partition)
    }
}
