//! The broker side of an idempotent producer, on one partition: a producer id from the
//! [`ProducerIdManager`], then each Produce batch checked by the [`ProducerStateTable`] before it
//! reaches the log (here a counter of offsets): new batches are appended, a retry is answered with
//! the original offsets, a gap in the sequence is OUT_OF_ORDER_SEQUENCE_NUMBER, a zombie with an
//! old epoch is INVALID_PRODUCER_EPOCH. A snapshot of the table survives a restart.
//!
//! ```text
//! cargo run -p josef-sequencer --example idempotent_produce
//! ```

use std::io::{self, Write};

use josef_sequencer::{
    BatchInfo, InMemoryBlockStore, ProducerIdManager, ProducerStateConfig, ProducerStateTable,
    Validation, DEFAULT_PRODUCER_ID_BLOCK_SIZE,
};

/// One partition: the producer-state table and the next offset of its log.
struct Partition {
    table: ProducerStateTable,
    log_end_offset: i64,
}

impl Partition {
    /// Handles one batch of a Produce request and says what the broker answers.
    fn produce(&mut self, batch: BatchInfo, now_ms: i64) -> String {
        let records = batch.record_count();
        match self.table.validate(&batch) {
            Ok(Validation::Append(plan)) => {
                let first = self.log_end_offset;
                self.log_end_offset += records;
                // The log assigned the offsets: only now does the table learn the batch.
                self.table
                    .commit(plan.with_offsets(first, self.log_end_offset - 1, now_ms));
                format!("appended at offsets {first}..={}", self.log_end_offset - 1)
            }
            Ok(Validation::Duplicate {
                first_offset,
                last_offset,
                ..
            }) => {
                format!("duplicate: NONE with the original offsets {first_offset}..={last_offset}, not appended")
            }
            Err(e) => format!("error {}: {e}", e.kafka_error_code()),
        }
    }
}

/// Runs the scenario, printing each request and the answer.
pub fn run(out: &mut dyn Write) -> Result<(), Box<dyn std::error::Error>> {
    let mut ids = ProducerIdManager::new(
        InMemoryBlockStore::default(),
        DEFAULT_PRODUCER_ID_BLOCK_SIZE,
    )?;
    let pid = ids.next_id()?;
    writeln!(
        out,
        "InitProducerId -> producer id {pid}, epoch 0 (block saved up to {:?})",
        ids.store().next_block_start
    )?;

    let config = ProducerStateConfig::default();
    let mut partition = Partition {
        table: ProducerStateTable::new(config),
        log_end_offset: 0,
    };
    let steps: [(&str, BatchInfo); 6] = [
        (
            "epoch 0, sequences 0..=4",
            BatchInfo::idempotent(pid, 0, 0, 5),
        ),
        (
            "the same batch again (a retry after a lost answer)",
            BatchInfo::idempotent(pid, 0, 0, 5),
        ),
        (
            "epoch 0, sequences 10..=11 (a gap)",
            BatchInfo::idempotent(pid, 0, 10, 2),
        ),
        (
            "epoch 0, sequences 5..=7",
            BatchInfo::idempotent(pid, 0, 5, 3),
        ),
        (
            "epoch 1, sequences 0..=1 (the producer restarted)",
            BatchInfo::idempotent(pid, 1, 0, 2),
        ),
        (
            "epoch 0, sequences 8..=8 (the old instance, a zombie)",
            BatchInfo::idempotent(pid, 0, 8, 1),
        ),
    ];
    for (i, (what, batch)) in steps.into_iter().enumerate() {
        let answer = partition.produce(batch, 1_000 + i as i64);
        writeln!(out, "produce {what}\n  -> {answer}")?;
    }
    let entry = partition.table.producer(pid).ok_or("no producer state")?;
    writeln!(
        out,
        "producer {pid}: epoch {}, last sequence {}, log end offset {}",
        entry.producer_epoch(),
        entry.last_seq(),
        partition.log_end_offset
    )?;

    // A restart: the table comes back from its snapshot (Kafka's `.snapshot` file) at the log end.
    let snapshot = partition.table.encode_snapshot();
    let table =
        ProducerStateTable::from_snapshot(config, &snapshot, partition.log_end_offset, 2_000)?;
    let mut partition = Partition {
        table,
        log_end_offset: partition.log_end_offset,
    };
    writeln!(out, "restart from a {}-byte snapshot", snapshot.len())?;
    for (what, batch) in [
        (
            "epoch 1, sequences 0..=1 again",
            BatchInfo::idempotent(pid, 1, 0, 2),
        ),
        (
            "epoch 1, sequences 2..=3",
            BatchInfo::idempotent(pid, 1, 2, 2),
        ),
    ] {
        writeln!(
            out,
            "produce {what}\n  -> {}",
            partition.produce(batch, 2_000)
        )?;
    }
    Ok(())
}

#[allow(dead_code)] // the tests include this file for `run`
fn main() -> Result<(), Box<dyn std::error::Error>> {
    run(&mut io::stdout())
}
