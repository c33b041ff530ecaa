//! Josef's own partition store: the [`TopicManager`]'s josef-partition partitions, which keep
//! every rule of [`PartitionStore`] themselves (leader epochs, ISR, sequencer, bounds).

use std::sync::Arc;

use josef_protocol::{ErrorCode, Uuid};
use josef_records::BatchHeader;
use josef_sequencer::EndTxnMarker;

use super::partition_store::{
    MarkerAppended, PartitionStore, PreparedBatch, ProduceError, ProduceSettings, Produced,
    TopicPartition,
};
use crate::partition::{
    ActiveProducer, ClientBatch, DeleteRecordsOutcome, EpochEndOffset, FetchIsolation, Partition,
    PartitionError, ProduceResult, ReadParams, ReadResult,
};
use crate::topics::TopicManager;

impl TopicManager {
    fn hosted(&self, tp: TopicPartition<'_>) -> Result<Arc<Partition>, ErrorCode> {
        self.partition(tp.topic, tp.partition)
            .ok_or(ErrorCode::UnknownTopicOrPartition)
    }
}

/// A partition's produce settings, parsed from the topic's configs when the partition opened
/// and on every change, so nothing is parsed per request.
fn produce_settings_of(p: &Partition) -> ProduceSettings {
    ProduceSettings {
        validation: p.validation_config(),
        min_insync_replicas: p.min_insync_replicas(),
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
        Ok(produce_settings_of(&p))
    }

    fn produce(
        &self,
        tp: TopicPartition<'_>,
        acks: i16,
        now_ms: i64,
        prepare: &mut dyn FnMut(&ProduceSettings) -> Result<PreparedBatch, ProduceError>,
    ) -> Result<Produced, ProduceError> {
        // The default's steps on the partition found once: every lookup takes the topics' lock.
        let p = self.hosted(tp)?;
        let settings = produce_settings_of(&p);
        let prepared = prepare(&settings)?;
        let min_insync_replicas = settings.min_insync_replicas;
        let result = p.append_from_client(
            prepared.batch,
            &prepared.header,
            acks,
            min_insync_replicas,
            now_ms,
        )?;
        Ok(Produced {
            result,
            min_insync_replicas,
            wait_on: (acks == -1).then_some(p),
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

    fn read_region(
        &self,
        tp: TopicPartition<'_>,
        params: &ReadParams,
    ) -> Result<(ReadResult, Option<josef_log::storage::FileRegion>), ErrorCode> {
        self.hosted(tp)?.read_region(params)
    }

    fn delayed_operation_target(&self, tp: TopicPartition<'_>) -> Option<Arc<Partition>> {
        self.partition(tp.topic, tp.partition)
    }

    fn end_offset_for_leader_epoch(
        &self,
        tp: TopicPartition<'_>,
        current_leader_epoch: i32,
        leader_epoch: i32,
    ) -> Result<EpochEndOffset, ErrorCode> {
        self.hosted(tp)?
            .last_offset_for_leader_epoch(current_leader_epoch, leader_epoch)
    }

    fn active_producers(&self, tp: TopicPartition<'_>) -> Result<Vec<ActiveProducer>, ErrorCode> {
        Ok(self.hosted(tp)?.active_producers())
    }

    fn append_txn_marker(
        &self,
        tp: TopicPartition<'_>,
        marker: &EndTxnMarker,
        now_ms: i64,
    ) -> Result<MarkerAppended, PartitionError> {
        let p = self.hosted(tp)?;
        let min_insync_replicas = p.min_insync_replicas();
        let offset = p.append_txn_marker(marker, -1, min_insync_replicas, now_ms)?;
        Ok(MarkerAppended {
            offset,
            leader_epoch: p.leader_epoch(),
            min_insync_replicas,
        })
    }

    fn delete_records(
        &self,
        tp: TopicPartition<'_>,
        offset: i64,
        is_alive: &dyn Fn(i32) -> bool,
    ) -> Result<DeleteRecordsOutcome, PartitionError> {
        let outcome = self
            .hosted(tp)?
            .delete_records_on_leader(offset, is_alive)?;
        // The log start moved: fetch sessions must read this partition again.
        self.bump_generation();
        Ok(outcome)
    }

    fn change_generation(&self) -> Option<u64> {
        TopicManager::change_generation(self)
    }
}
