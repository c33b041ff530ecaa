//! A leader (broker 1) and a follower (broker 2) of `orders-0` on real logs in a temporary
//! directory: a producer with acks=all appends to the leader, the follower fetches the way
//! Kafka's replica fetcher does (`follower_fetch_request` → leader's `fetch_from_follower` →
//! `on_follower_fetch_response`), and the high watermark advances once the follower's next fetch
//! shows it has the records; the follower learns the HW one fetch later. Consumers read to the HW.
//!
//! ```text
//! cargo run -p josef-partition --example replicate
//! ```

use std::io::{self, Write};

use josef_log::{BatchHeader, LogConfig};
use josef_partition::{
    ClientBatch, FetchIsolation, FetchResponseAction, FollowerFetch, LeaderFetchAnswer, Partition,
    ReadParams,
};
use josef_protocol::{ErrorCode, Uuid};
use josef_records::RecordBatchBuilder;
use josef_sequencer::ProducerStateConfig;

const MIN_ISR: i32 = 2;

fn open(dir: &std::path::Path, broker: i32) -> Result<Partition, Box<dyn std::error::Error>> {
    let path = dir.join(format!("broker-{broker}/orders-0"));
    let config = ProducerStateConfig::default();
    Ok(Partition::open_replica(
        &path,
        "orders",
        0,
        Uuid::from_u128(7),
        LogConfig::default(),
        config,
        broker,
        0,
    )?)
}

fn offsets(p: &Partition) -> (i64, i64) {
    (p.log_end_offset(), p.high_watermark())
}

/// One round of broker 2's replica fetcher for this partition.
fn fetch_round(
    leader: &Partition,
    follower: &Partition,
    now_ms: i64,
) -> Result<String, Box<dyn std::error::Error>> {
    let sent = follower.follower_fetch_request().ok_or("not a follower")?;
    let fetch = FollowerFetch {
        replica_id: 2,
        broker_epoch: 1,
        fetch_offset: sent.fetch_offset,
        log_start_offset: sent.log_start_offset,
        current_leader_epoch: sent.current_leader_epoch,
        last_fetched_epoch: sent.last_fetched_epoch,
        max_bytes: 1 << 20,
        min_one_message: true,
    };
    let answer = LeaderFetchAnswer::from(leader.fetch_from_follower(&fetch, now_ms));
    let (bytes, leader_hw) = (answer.records.len(), answer.high_watermark);
    let action = match follower.on_follower_fetch_response(&sent, answer, now_ms)? {
        FetchResponseAction::Appended(a) => format!("appended {:?}", a.appended),
        other => format!("{other:?}"),
    };
    Ok(format!(
        "fetch at {}: {bytes} bytes, leader HW {leader_hw}, {action}",
        sent.fetch_offset
    ))
}

/// Runs the scenario.
pub fn run(out: &mut dyn Write) -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let (leader, follower) = (open(dir.path(), 1)?, open(dir.path(), 2)?);
    leader.make_leader(0, 0, &[1, 2], &[1, 2], MIN_ISR, 0)?;
    follower.make_follower(1, 0, 0);

    for (i, values) in [&["order-1", "order-2"][..], &["order-3"][..]]
        .into_iter()
        .enumerate()
    {
        let batch = values
            .iter()
            .fold(RecordBatchBuilder::new(), |b, v| {
                b.record(1_000, None, Some(v.as_bytes()))
            })
            .build()?;
        let header = BatchHeader::parse(&batch)?;
        let r = leader.append_from_client(
            ClientBatch::Owned(batch),
            &header,
            -1,
            MIN_ISR,
            10 + i as i64,
        )?;
        let acked = leader
            .check_enough_replicas_reach_offset(r.last_offset + 1, MIN_ISR)
            .map_err(ErrorCode::name)?;
        writeln!(
            out,
            "produce {values:?} (acks=all): offsets {}..={}, acknowledged yet: {acked}",
            r.base_offset, r.last_offset
        )?;
    }
    let show = |out: &mut dyn Write| -> io::Result<()> {
        let ((l_leo, l_hw), (f_leo, f_hw)) = (offsets(&leader), offsets(&follower));
        writeln!(
            out,
            "  leader LEO {l_leo} HW {l_hw}; follower LEO {f_leo} HW {f_hw}"
        )
    };
    show(out)?;
    for round in 1..=3 {
        writeln!(
            out,
            "round {round}: {}",
            fetch_round(&leader, &follower, 100 * round)?
        )?;
        show(out)?;
    }
    let (end, _) = offsets(&leader);
    writeln!(
        out,
        "acks=all satisfied for offset {end}: {}",
        leader
            .check_enough_replicas_reach_offset(end, MIN_ISR)
            .map_err(ErrorCode::name)?
    )?;

    let batch = RecordBatchBuilder::new()
        .record(2_000, None, Some(b"order-4"))
        .build()?;
    let header = BatchHeader::parse(&batch)?;
    leader.append_from_client(ClientBatch::Owned(batch), &header, 1, MIN_ISR, 500)?;
    for isolation in [FetchIsolation::HighWatermark, FetchIsolation::LogEnd] {
        let read = leader
            .read(&ReadParams {
                fetch_offset: 0,
                current_leader_epoch: 0,
                max_bytes: 1 << 20,
                min_one_message: true,
                hard_limit: false,
                isolation,
                require_leader: true,
            })
            .map_err(ErrorCode::name)?;
        let mut records = 0;
        for batch in josef_records::Batches::new(read.records.clone()) {
            records += batch?.header().record_count;
        }
        writeln!(
            out,
            "read {isolation:?} from 0 after an acks=1 append: {records} records"
        )?;
    }
    Ok(())
}

#[allow(dead_code)] // the tests include this file for `run`
fn main() -> Result<(), Box<dyn std::error::Error>> {
    run(&mut io::stdout())
}
