//! A consumer's fetch session (KIP-227) as a broker sees it: a full Fetch (v13, topics by id)
//! creates a session; incremental Fetches then name only the partitions whose fetch offset moved,
//! and the broker answers only the partitions with something new. A stale epoch is refused; a
//! forgotten partition leaves the session; epoch -1 closes it.
//!
//! ```text
//! cargo run -p josef-fetch --example fetch_session
//! ```

use std::collections::BTreeMap;
use std::io::{self, Write};

use josef_fetch::{
    forgotten_partitions, request_metadata, request_partitions, uses_topic_ids, FetchSessionCache,
    FetchSessionCacheConfig, PartitionOutcome, TopicIdPartition, FINAL_EPOCH, INITIAL_EPOCH,
};
use josef_protocol::messages::fetch_request::{
    FetchPartition, FetchRequest, FetchTopic, ForgottenTopic,
};
use josef_protocol::{ErrorCode, Uuid};

const VERSION: i16 = 13;
const ORDERS: Uuid = Uuid::from_u128(0x0123);

/// A Fetch request of the consumer: `(partition, fetch offset)` to add or update, partitions to forget.
fn fetch(session_id: i32, epoch: i32, partitions: &[(i32, i64)], forget: &[i32]) -> FetchRequest {
    let fetch_partition = |&(partition, fetch_offset): &(i32, i64)| FetchPartition {
        partition,
        fetch_offset,
        partition_max_bytes: 1 << 20,
        ..Default::default()
    };
    FetchRequest {
        session_id,
        session_epoch: epoch,
        topics: vec![FetchTopic {
            topic_id: ORDERS,
            partitions: partitions.iter().map(fetch_partition).collect(),
            ..Default::default()
        }],
        forgotten_topics_data: vec![ForgottenTopic {
            topic_id: ORDERS,
            partitions: forget.to_vec().into(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// The broker: the session cache and the high watermark of each partition of the topic.
struct Broker {
    sessions: FetchSessionCache<TopicIdPartition>,
    high_watermarks: BTreeMap<i32, i64>,
}

impl Broker {
    /// Handles one Fetch; returns the top-level error, the session id and the partitions answered
    /// (partition, records from..to).
    fn handle(&mut self, req: &FetchRequest, now_ms: i64) -> (i16, i32, Vec<(i32, i64, i64)>) {
        let ctx = self.sessions.new_context(
            request_metadata(req, VERSION),
            uses_topic_ids(VERSION),
            false,
            request_partitions(req, VERSION),
            forgotten_partitions(req, VERSION),
            now_ms,
        );
        // Read every partition of the context (the log read would go here).
        let mut read: Vec<(TopicIdPartition, PartitionOutcome, i64)> = ctx
            .partitions()
            .iter()
            .map(|(key, p)| {
                let hw = self.high_watermarks[&key.partition];
                let outcome = PartitionOutcome {
                    high_watermark: hw,
                    has_records: p.fetch_offset < hw,
                    ..Default::default()
                };
                (key.clone(), outcome, p.fetch_offset)
            })
            .collect();
        let session = self
            .sessions
            .update_and_generate_response(&ctx, now_ms, &mut read, |r| (&r.0, r.1));
        let sent = read
            .iter()
            .map(|(k, o, from)| (k.partition, *from, o.high_watermark))
            .collect();
        (session.error_code, session.session_id, sent)
    }
}

/// Sends `req` to the broker and prints the answer; returns the session id it gave.
fn show(
    out: &mut dyn Write,
    broker: &mut Broker,
    what: &str,
    req: FetchRequest,
    now_ms: i64,
) -> io::Result<i32> {
    let (error, session_id, sent) = broker.handle(&req, now_ms);
    let error = ErrorCode::from_i16(error).map_or("?", |e| e.name());
    writeln!(
        out,
        "{what} (session {}, epoch {})",
        req.session_id, req.session_epoch
    )?;
    writeln!(
        out,
        "  -> {error}, session {session_id}, {} partition(s)",
        sent.len()
    )?;
    for (partition, from, hw) in sent {
        writeln!(
            out,
            "     orders-{partition}: records {from}..{hw}, high watermark {hw}"
        )?;
    }
    Ok(session_id)
}

/// Runs the scenario, printing every request and what the broker answers.
pub fn run(out: &mut dyn Write) -> Result<(), Box<dyn std::error::Error>> {
    let mut broker = Broker {
        sessions: FetchSessionCache::new(FetchSessionCacheConfig {
            id_seed: 42,
            ..Default::default()
        }),
        high_watermarks: BTreeMap::from([(0, 3), (1, 0)]),
    };

    let id = show(
        out,
        &mut broker,
        "full fetch of orders-0 at 0, orders-1 at 0",
        fetch(0, INITIAL_EPOCH, &[(0, 0), (1, 0)], &[]),
        1_000,
    )?;
    show(
        out,
        &mut broker,
        "incremental: orders-0 now at 3",
        fetch(id, 1, &[(0, 3)], &[]),
        1_500,
    )?;
    broker.high_watermarks.insert(1, 2); // a producer writes two records to orders-1
    show(
        out,
        &mut broker,
        "incremental: nothing changed on the consumer's side",
        fetch(id, 2, &[], &[]),
        2_000,
    )?;
    show(
        out,
        &mut broker,
        "incremental with a stale epoch (a duplicate of the last request)",
        fetch(id, 2, &[], &[]),
        2_100,
    )?;
    show(
        out,
        &mut broker,
        "incremental: orders-1 now at 2, forget orders-0",
        fetch(id, 3, &[(1, 2)], &[0]),
        2_500,
    )?;
    let session = broker.sessions.get(id).ok_or("the session is gone")?;
    writeln!(
        out,
        "session {id}: epoch {}, {} partition(s)",
        session.epoch(),
        session.len()
    )?;
    show(
        out,
        &mut broker,
        "close the session",
        fetch(id, FINAL_EPOCH, &[], &[]),
        3_000,
    )?;
    writeln!(out, "sessions in the cache: {}", broker.sessions.len())?;
    Ok(())
}

#[allow(dead_code)] // the tests include this file for `run`
fn main() -> Result<(), Box<dyn std::error::Error>> {
    run(&mut io::stdout())
}
