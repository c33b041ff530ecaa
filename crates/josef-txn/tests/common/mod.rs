//! Test harness: one shard over an in-memory partition, answers released by committing at once.
#![allow(dead_code, clippy::new_without_default)]

use std::collections::BTreeSet;

use josef_coordinator::{CoordinatorDriver, InMemoryPartitionWriter};
use josef_txn::*;

pub type Driver = CoordinatorDriver<TxnShard, InMemoryPartitionWriter<TxnLogRecord>, Held>;

/// A held reply with its markers, type-erased to what tests look at.
#[derive(Debug, Clone, PartialEq)]
pub enum Held {
    Init(InitProducerIdResponse),
    Add(AddPartitionsToTxnResult),
    Offsets(Option<TxnError>),
    End(EndTxnResponse),
    Done(bool),
    Tick(TickOutcome),
}

pub struct H {
    pub d: Driver,
    pub pids: SequentialProducerIdGenerator,
    pub now: i64,
    pub markers: Vec<TxnMarkerRequest>,
}

pub const TIMEOUT: i32 = 60_000;

pub fn tp(t: &str, p: i32) -> TopicPartition {
    TopicPartition::new(t, p)
}

pub fn tps(list: &[(&str, i32)]) -> BTreeSet<TopicPartition> {
    list.iter().map(|(t, p)| tp(t, *p)).collect()
}

impl H {
    pub fn new() -> Self {
        Self::with_config(TxnConfig::default())
    }

    pub fn with_config(config: TxnConfig) -> Self {
        Self {
            d: CoordinatorDriver::new(TxnShard::new(config, 5), InMemoryPartitionWriter::new()),
            pids: SequentialProducerIdGenerator::new(1000),
            now: 1_000_000,
            markers: Vec::new(),
        }
    }

    pub fn meta(&self, id: &str) -> TransactionMetadata {
        self.d.shard().get(id).cloned().expect("metadata present")
    }

    pub fn state(&self, id: &str) -> TxnState {
        self.meta(id).state
    }

    pub fn log_len(&self) -> usize {
        self.d.writer().entries().len()
    }

    /// Runs a handler, commits everything, and returns its reply (markers collected).
    fn run(
        &mut self,
        f: impl FnOnce(
            &TxnShard,
            i64,
            &mut SequentialProducerIdGenerator,
        ) -> josef_coordinator::CoordinatorResult<
            TxnLogRecord,
            (Held, Vec<TxnMarkerRequest>),
        >,
    ) -> Held {
        let now = self.now;
        let pids = &mut self.pids;
        let mut markers = Vec::new();
        let out = self
            .d
            .write(|s| {
                f(s, now, pids).map_response(|(h, m)| {
                    markers = m;
                    h
                })
            })
            .expect("write ok");
        self.markers.extend(markers);
        match out {
            Some(h) => h,
            None => {
                let hw = self.d.writer_mut().commit_all();
                let mut r = self.d.on_high_watermark(hw);
                assert_eq!(r.len(), 1);
                r.pop().unwrap()
            }
        }
    }

    pub fn init_req(&mut self, req: InitProducerIdRequest) -> InitProducerIdResponse {
        match self.run(|s, now, pids| {
            s.init_producer_id(&req, now, pids)
                .map_response(|r| (Held::Init(r.response), r.markers))
        }) {
            Held::Init(r) => r,
            other => panic!("{other:?}"),
        }
    }

    pub fn init(&mut self, id: &str) -> InitProducerIdResponse {
        self.init_req(InitProducerIdRequest {
            transactional_id: Some(id.into()),
            transaction_timeout_ms: TIMEOUT,
            producer_id: -1,
            producer_epoch: -1,
        })
    }

    pub fn init_with(&mut self, id: &str, pid: i64, epoch: i16) -> InitProducerIdResponse {
        self.init_req(InitProducerIdRequest {
            transactional_id: Some(id.into()),
            transaction_timeout_ms: TIMEOUT,
            producer_id: pid,
            producer_epoch: epoch,
        })
    }

    pub fn add_req(
        &mut self,
        req: AddPartitionsToTxnRequest,
        tv: TransactionVersion,
    ) -> AddPartitionsToTxnResult {
        match self.run(|s, now, _| {
            s.add_partitions_to_txn(&req, now, tv)
                .map_response(|r| (Held::Add(r.response), r.markers))
        }) {
            Held::Add(r) => r,
            other => panic!("{other:?}"),
        }
    }

    pub fn add(
        &mut self,
        id: &str,
        pid: i64,
        epoch: i16,
        parts: &[(&str, i32)],
    ) -> Option<TxnError> {
        self.add_req(
            AddPartitionsToTxnRequest {
                transactional_id: id.into(),
                producer_id: pid,
                producer_epoch: epoch,
                partitions: tps(parts),
                verify_only: false,
            },
            TransactionVersion::V0,
        )
        .first_error()
    }

    pub fn verify(
        &mut self,
        id: &str,
        pid: i64,
        epoch: i16,
        parts: &[(&str, i32)],
    ) -> AddPartitionsToTxnResult {
        self.add_req(
            AddPartitionsToTxnRequest {
                transactional_id: id.into(),
                producer_id: pid,
                producer_epoch: epoch,
                partitions: tps(parts),
                verify_only: true,
            },
            TransactionVersion::V0,
        )
    }

    pub fn add_offsets(&mut self, id: &str, pid: i64, epoch: i16, group: &str) -> Option<TxnError> {
        let req = AddOffsetsToTxnRequest {
            transactional_id: id.into(),
            producer_id: pid,
            producer_epoch: epoch,
            group_id: group.into(),
        };
        match self.run(|s, now, _| {
            s.add_offsets_to_txn(&req, now, TransactionVersion::V0)
                .map_response(|r| (Held::Offsets(r.response), r.markers))
        }) {
            Held::Offsets(r) => r,
            other => panic!("{other:?}"),
        }
    }

    pub fn end_tv(
        &mut self,
        id: &str,
        pid: i64,
        epoch: i16,
        commit: bool,
        tv: TransactionVersion,
    ) -> EndTxnResponse {
        let req = EndTxnRequest {
            transactional_id: id.into(),
            producer_id: pid,
            producer_epoch: epoch,
            committed: commit,
            client_transaction_version: tv,
        };
        match self.run(|s, now, pids| {
            s.end_txn(&req, now, pids)
                .map_response(|r| (Held::End(r.response), r.markers))
        }) {
            Held::End(r) => r,
            other => panic!("{other:?}"),
        }
    }

    pub fn end(&mut self, id: &str, pid: i64, epoch: i16, commit: bool) -> Option<TxnError> {
        self.end_tv(id, pid, epoch, commit, TransactionVersion::V0)
            .error
    }

    /// Completes every outstanding marker request, returning how many wrote a Complete record.
    pub fn complete_markers(&mut self) -> usize {
        let markers = std::mem::take(&mut self.markers);
        let mut n = 0;
        for m in markers {
            if let Held::Done(true) = self.run(|s, now, _| {
                s.markers_completed(&m, now)
                    .map_response(|r| (Held::Done(r.response), r.markers))
            }) {
                n += 1;
            }
        }
        n
    }

    pub fn tick(&mut self) -> TickOutcome {
        match self.run(|s, now, _| {
            s.on_tick(now)
                .map_response(|r| (Held::Tick(r.response), r.markers))
        }) {
            Held::Tick(t) => t,
            other => panic!("{other:?}"),
        }
    }

    /// Restart: a fresh shard loaded from the stored records.
    pub fn restart(&mut self) -> Vec<TxnMarkerRequest> {
        let entries = self.d.writer().entries().to_vec();
        let config = self.d.shard().config().clone();
        let epoch = self.d.shard().coordinator_epoch() + 1;
        let mut d: Driver =
            CoordinatorDriver::new(TxnShard::new(config, epoch), InMemoryPartitionWriter::new());
        // Keep the same log: replay it, then continue appending after it.
        for e in &entries {
            if let josef_coordinator::LogEntry::Record(r) = e {
                use josef_coordinator::PartitionWriter;
                d.writer_mut()
                    .append(
                        r.producer_id,
                        r.producer_epoch,
                        std::slice::from_ref(&r.record),
                    )
                    .unwrap();
            }
        }
        d.writer_mut().commit_all();
        d.load(entries).unwrap();
        self.d = d;
        self.markers.clear();
        let m = self.d.shard().pending_markers();
        self.markers = m.clone();
        m
    }

    /// InitProducerId + AddPartitions: an Ongoing transaction; returns (pid, epoch).
    pub fn ongoing(&mut self, id: &str, parts: &[(&str, i32)]) -> (i64, i16) {
        let r = self.init(id);
        assert_eq!(r.error, None);
        assert_eq!(self.add(id, r.producer_id, r.producer_epoch, parts), None);
        (r.producer_id, r.producer_epoch)
    }
}
