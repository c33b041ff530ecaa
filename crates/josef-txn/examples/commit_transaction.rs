//! One transaction through the coordinator of its `__transaction_state` partition:
//! InitProducerId → AddPartitionsToTxn → EndTxn(commit) → markers written → CompleteCommit.
//! The [`TxnShard`] runs on josef-coordinator's driver over an in-memory partition; for every
//! request it prints the records the coordinator asks to persist, the answer (released once those
//! records are committed) and the transaction markers it asks the broker to write.
//!
//! ```text
//! cargo run -p josef-txn --example commit_transaction
//! ```

use std::io::{self, Write};

use josef_coordinator::{CoordinatorDriver, InMemoryPartitionWriter, LogEntry};
use josef_txn::{
    AddPartitionsToTxnRequest, EndTxnRequest, InitProducerIdRequest, Reply,
    SequentialProducerIdGenerator, TopicPartition, TransactionVersion, TxnConfig, TxnLogRecord,
    TxnMarkerRequest, TxnResult, TxnShard,
};

/// The driver holds each reply, as text, until the records before it are durable.
type Driver = CoordinatorDriver<TxnShard, InMemoryPartitionWriter<TxnLogRecord>, Reply<String>>;

/// Runs one handler, commits what it wrote and prints the records and the reply.
fn step<R: std::fmt::Debug>(
    out: &mut dyn Write,
    driver: &mut Driver,
    what: &str,
    handler: impl FnOnce(&TxnShard) -> TxnResult<R>,
) -> Result<Vec<TxnMarkerRequest>, Box<dyn std::error::Error>> {
    writeln!(out, "{what}")?;
    let before = driver.writer().log_end_offset();
    let now = driver.write(|s| {
        handler(s).map_response(|r| Reply {
            response: format!("{:?}", r.response),
            markers: r.markers,
        })
    })?;
    for entry in driver
        .writer()
        .entries()
        .iter()
        .filter(|e| e.offset() >= before)
    {
        if let LogEntry::Record(r) = entry {
            let v = r.record.value.as_ref().ok_or("a tombstone")?;
            let partitions: Vec<String> = v.partitions.iter().map(ToString::to_string).collect();
            writeln!(
                out,
                "  persist @{}: {} -> {:?} pid {} epoch {} [{}]",
                r.offset,
                r.record.transactional_id,
                v.state,
                v.producer_id,
                v.producer_epoch,
                partitions.join(", ")
            )?;
        }
    }
    if now.is_none() {
        writeln!(
            out,
            "  (reply held until @{} is committed)",
            driver.last_written_offset()
        )?;
    }
    let hw = driver.writer_mut().commit_all();
    let reply = now
        .into_iter()
        .chain(driver.on_high_watermark(hw))
        .next()
        .ok_or("no reply")?;
    writeln!(out, "  reply: {}", reply.response)?;
    for m in &reply.markers {
        let partitions: Vec<String> = m.partitions.iter().map(ToString::to_string).collect();
        writeln!(
            out,
            "  write {:?} marker for pid {} epoch {} (coordinator epoch {}) to [{}]",
            m.result,
            m.producer_id,
            m.producer_epoch,
            m.coordinator_epoch,
            partitions.join(", ")
        )?;
    }
    Ok(reply.markers)
}

/// Runs the scenario.
pub fn run(out: &mut dyn Write) -> Result<(), Box<dyn std::error::Error>> {
    let id = "payments-txn";
    let coordinator_epoch = 7;
    let mut pids = SequentialProducerIdGenerator::new(4_000);
    let (shard, log) = (
        TxnShard::new(TxnConfig::default(), coordinator_epoch),
        InMemoryPartitionWriter::new(),
    );

    let mut driver = Driver::new(shard, log);

    let init = InitProducerIdRequest {
        transactional_id: Some(id.into()),
        transaction_timeout_ms: 60_000,
        producer_id: -1,
        producer_epoch: -1,
    };
    step(out, &mut driver, "InitProducerId(payments-txn)", |s| {
        s.init_producer_id(&init, 1_000, &mut pids)
    })?;
    let (producer_id, producer_epoch) = driver
        .read(|s| s.get(id).map(|m| (m.producer_id, m.producer_epoch)))
        .ok_or("no metadata")?;

    let add = AddPartitionsToTxnRequest {
        transactional_id: id.into(),
        producer_id,
        producer_epoch,
        partitions: [
            TopicPartition::new("payments", 0),
            TopicPartition::new("ledger", 3),
        ]
        .into(),
        verify_only: false,
    };
    step(
        out,
        &mut driver,
        "AddPartitionsToTxn(payments-0, ledger-3)",
        |s| s.add_partitions_to_txn(&add, 2_000, TransactionVersion::V0),
    )?;

    writeln!(
        out,
        "(the producer writes its records to payments-0 and ledger-3)"
    )?;
    let end = EndTxnRequest {
        transactional_id: id.into(),
        producer_id,
        producer_epoch,
        committed: true,
        client_transaction_version: TransactionVersion::V0,
    };
    let markers = step(out, &mut driver, "EndTxn(commit)", |s| {
        s.end_txn(&end, 3_000, &mut pids)
    })?;

    writeln!(out, "(both partition leaders acknowledge their markers)")?;
    for marker in &markers {
        step(out, &mut driver, "markers completed", |s| {
            s.markers_completed(marker, 3_500)
        })?;
    }
    let state = driver.read(|s| s.get(id).map(|m| m.state));
    writeln!(
        out,
        "{id} is now {state:?}; __transaction_state holds {} records",
        driver.writer().log_end_offset()
    )?;
    Ok(())
}

#[allow(dead_code)] // the tests include this file for `run`
fn main() -> Result<(), Box<dyn std::error::Error>> {
    run(&mut io::stdout())
}
