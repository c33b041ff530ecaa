//! A lease coordinator on josef-coordinator's runtime, over an in-memory partition (the fake log):
//! handlers return records and a response, the driver appends and replays the records and holds
//! each response until the high watermark passes them; a keyed timer expires leases; a failed
//! append changes nothing; a failover loses the unreplicated tail and a new leader reloads the
//! shard from what the partition kept.
//!
//! ```text
//! cargo run -p josef-coordinator --example lease_coordinator
//! ```

use std::collections::BTreeMap;
use std::io::{self, Write};

use josef_coordinator::{
    CoordinatorDriver, CoordinatorResult, CoordinatorShard, CoordinatorTimer,
    InMemoryPartitionWriter, LogEntry, ManualTimer, ReplayError, WriteError,
};

/// A record of the lease partition.
#[derive(Debug, Clone, PartialEq)]
pub enum LeaseRecord {
    /// `owner` holds `name` until `expires_ms`.
    Granted {
        name: String,
        owner: String,
        expires_ms: i64,
    },
    /// `name` is free again.
    Released { name: String },
}

/// The state: who holds which lease, until when. Only `replay` changes it.
#[derive(Debug, Default)]
pub struct Leases {
    held: BTreeMap<String, (String, i64)>,
}

impl CoordinatorShard for Leases {
    type Record = LeaseRecord;
    fn replay(
        &mut self,
        _offset: i64,
        _pid: i64,
        _epoch: i16,
        r: &LeaseRecord,
    ) -> Result<(), ReplayError> {
        match r {
            LeaseRecord::Granted {
                name,
                owner,
                expires_ms,
            } => {
                self.held.insert(name.clone(), (owner.clone(), *expires_ms));
            }
            LeaseRecord::Released { name } => {
                self.held.remove(name);
            }
        }
        Ok(())
    }
}

impl Leases {
    /// Grants `name` to `owner` for `ttl_ms` unless someone else holds it.
    fn acquire(
        &self,
        name: &str,
        owner: &str,
        now_ms: i64,
        ttl_ms: i64,
    ) -> CoordinatorResult<LeaseRecord, String> {
        match self.held.get(name) {
            Some((holder, _)) if holder != owner => {
                CoordinatorResult::response_only(format!("{owner}: {name} is held by {holder}"))
            }
            _ => CoordinatorResult::new(
                vec![LeaseRecord::Granted {
                    name: name.into(),
                    owner: owner.into(),
                    expires_ms: now_ms + ttl_ms,
                }],
                format!("{owner}: {name} granted until {}", now_ms + ttl_ms),
            ),
        }
    }

    /// Frees `name` if its lease has run out (a timer fired; the lease may have been renewed since).
    fn expire(&self, name: &str, now_ms: i64) -> CoordinatorResult<LeaseRecord, String> {
        match self.held.get(name) {
            Some((holder, expires)) if *expires <= now_ms => CoordinatorResult::new(
                vec![LeaseRecord::Released { name: name.into() }],
                format!("{holder}: {name} expired"),
            ),
            _ => CoordinatorResult::response_only(format!("{name}: still held")),
        }
    }
}

type Driver = CoordinatorDriver<Leases, InMemoryPartitionWriter<LeaseRecord>, String>;

/// Sends every released response to `out`.
fn answer(out: &mut dyn Write, responses: impl IntoIterator<Item = String>) -> io::Result<()> {
    responses
        .into_iter()
        .try_for_each(|r| writeln!(out, "  -> {r}"))
}

/// Runs the scenario, printing what the broker would answer and what the partition holds.
pub fn run(out: &mut dyn Write) -> Result<(), Box<dyn std::error::Error>> {
    let mut driver = Driver::new(Leases::default(), InMemoryPartitionWriter::new());
    let mut timers: ManualTimer<String> = ManualTimer::new();
    let ttl = 30_000;

    writeln!(out, "t=0 alice acquires orders-cleaner")?;
    let held = driver.write(|s| s.acquire("orders-cleaner", "alice", 0, ttl))?;
    writeln!(out, "  held until committed: {}", held.is_none())?;
    timers.schedule("orders-cleaner".to_string(), ttl);
    let hw = driver.writer_mut().commit_all();
    writeln!(out, "high watermark {hw}")?;
    answer(out, driver.on_high_watermark(hw))?;

    writeln!(out, "t=1000 bob acquires orders-cleaner")?;
    answer(
        out,
        driver.write(|s| s.acquire("orders-cleaner", "bob", 1_000, ttl))?,
    )?;

    writeln!(
        out,
        "t=2000 bob acquires payments-cleaner, the append fails"
    )?;
    driver
        .writer_mut()
        .fail_next_append(WriteError::NotEnoughReplicas);
    if let Err(e) = driver.write(|s| s.acquire("payments-cleaner", "bob", 2_000, ttl)) {
        writeln!(
            out,
            "  -> error code {} ({e}); leases held: {}",
            e.kafka_error_code(),
            driver.read(|s| s.held.len())
        )?;
    }

    for name in timers.poll_expired(ttl) {
        writeln!(out, "t={ttl} timer fires for {name}")?;
        driver.write(|s| s.expire(&name, ttl))?;
    }
    let hw = driver.writer_mut().commit_all();
    answer(out, driver.on_high_watermark(hw))?;

    writeln!(
        out,
        "t=31000 bob acquires orders-cleaner, then the leader fails before replicating"
    )?;
    driver.write(|s| s.acquire("orders-cleaner", "bob", 31_000, ttl))?;
    let (_, mut log) = {
        let lost = driver.fail_all();
        writeln!(out, "  {} response(s) answered NOT_COORDINATOR", lost.len())?;
        driver.into_parts()
    };
    log.truncate_to_high_watermark();

    writeln!(out, "the new leader loads the partition:")?;
    for entry in log.entries() {
        if let LogEntry::Record(r) = entry {
            writeln!(out, "  offset {} {:?}", r.offset, r.record)?;
        }
    }
    let entries = log.entries().to_vec();
    let mut driver = Driver::new(Leases::default(), log);
    let loaded = driver.load(entries)?;
    writeln!(
        out,
        "loaded {loaded} records; leases held: {:?}",
        driver.read(|s| s.held.clone())
    )?;
    writeln!(out, "t=32000 bob retries")?;
    driver.write(|s| s.acquire("orders-cleaner", "bob", 32_000, ttl))?;
    let hw = driver.writer_mut().commit_all();
    answer(out, driver.on_high_watermark(hw))?;
    Ok(())
}

#[allow(dead_code)] // the tests include this file for `run`
fn main() -> Result<(), Box<dyn std::error::Error>> {
    run(&mut io::stdout())
}
