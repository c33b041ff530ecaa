//! A history of what clients did against a cluster, and a checker of what Kafka promises about it
//! (the classes of `tests/e2e/history.py`, for Rust tests).
//!
//! A test records every send (a unique value, its producer, its send order, its transaction), what
//! became of it (acknowledged at a partition and offset, or failed), each transaction's outcome as
//! the client saw it, each offset commit that succeeded, and at the end what it read back per
//! partition at each isolation level; [`check`] then reports:
//!
//! - [`Anomaly::Lost`]: an acknowledged record (or one of a committed transaction) not read back;
//! - [`Anomaly::Moved`]: an acknowledged record read at another offset than its ack said;
//! - [`Anomaly::Duplicate`]: one value read more than once;
//! - [`Anomaly::Reordered`]: one producer's records to a partition out of send order, or a
//!   read-back whose offsets do not increase;
//! - [`Anomaly::AbortedSeen`] / [`Anomaly::UndecidedSeen`]: records of an aborted / never ended
//!   transaction seen by read_committed; [`Anomaly::PartialTxn`]: a transaction whose outcome the
//!   client does not know seen in part;
//! - [`Anomaly::OffsetRegress`]: a group's committed offset lower than one committed before;
//! - [`Anomaly::DivergentReplicas`] / [`Anomaly::ReplicaEnds`]: replicas whose logs differ in a
//!   batch both have / end at different offsets once quiescent ([`compare_replicas`], from the
//!   nodes' segment files, [`read_replica`]).
//!
//! Unlike the Python checker it has no `client_epoch_resend` class: the Rust clients of this
//! crate send no idempotent batches, so every duplicate is the broker's.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::Path;

use bytes::Bytes;
use josef_records::Batches;

use crate::client::Record;
use crate::Error;

/// A transaction's outcome as the client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnOutcome {
    /// EndTxn(commit) succeeded.
    Committed,
    /// EndTxn(abort) succeeded.
    Aborted,
    /// An EndTxn was sent but its answer is unknown.
    Unknown,
}

/// The isolation level a read-back was made with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Isolation {
    /// Every record below the high watermark.
    ReadUncommitted,
    /// Below the last stable offset, aborted transactions left out.
    ReadCommitted,
}

/// One record sent.
#[derive(Debug, Clone)]
pub struct Send {
    /// Its topic.
    pub topic: String,
    /// Its value, unique in the history.
    pub value: Vec<u8>,
    /// Who sent it.
    pub producer: String,
    /// Its place in its producer's send order.
    pub seq: u64,
    /// Its transaction, if any.
    pub txn: Option<String>,
    /// Acknowledged at (partition, offset); an offset of `None` is an ack that named none.
    pub ack: Option<(i32, Option<i64>)>,
    /// Its failure, if the client got one.
    pub error: Option<String>,
}

/// What went wrong while recording (a test's mistake, not the broker's).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HistoryError {
    /// Values must be unique: the checker finds records by value.
    #[error("value {0:?} sent twice: values must be unique")]
    DuplicateSend(String),
    /// An ack or failure of a value never sent.
    #[error("value {0:?} was never sent")]
    UnknownValue(String),
}

/// The record of a run; see the module documentation.
#[derive(Debug, Default)]
pub struct History {
    sends: Vec<Send>,
    by_value: HashMap<Vec<u8>, usize>,
    next_seq: HashMap<String, u64>,
    txns: BTreeMap<String, Option<TxnOutcome>>,
    commits: Vec<(String, String, i32, i64)>,
    reads: BTreeMap<Isolation, ReadBack>,
}

/// (offset, value) per (topic, partition), in the order read.
type ReadBack = BTreeMap<(String, i32), Vec<(i64, Vec<u8>)>>;

/// A value as text, cut to its first 40 characters (test values carry padding).
fn shown(v: &[u8]) -> String {
    String::from_utf8_lossy(v).chars().take(40).collect()
}

impl History {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a send of `value` (unique) by `producer`, in `txn` if any (which then counts as
    /// begun and undecided until [`end_txn`](Self::end_txn)).
    pub fn send(
        &mut self,
        topic: &str,
        value: &[u8],
        producer: &str,
        txn: Option<&str>,
    ) -> Result<(), HistoryError> {
        if self.by_value.contains_key(value) {
            return Err(HistoryError::DuplicateSend(shown(value)));
        }
        let seq = self.next_seq.entry(producer.to_string()).or_insert(0);
        let s = Send {
            topic: topic.to_string(),
            value: value.to_vec(),
            producer: producer.to_string(),
            seq: *seq,
            txn: txn.map(str::to_string),
            ack: None,
            error: None,
        };
        *seq += 1;
        if let Some(t) = txn {
            self.txns.entry(t.to_string()).or_insert(None);
        }
        self.by_value.insert(value.to_vec(), self.sends.len());
        self.sends.push(s);
        Ok(())
    }

    fn sent(&mut self, value: &[u8]) -> Result<&mut Send, HistoryError> {
        let i = *self
            .by_value
            .get(value)
            .ok_or_else(|| HistoryError::UnknownValue(shown(value)))?;
        Ok(&mut self.sends[i])
    }

    /// Records `value` acknowledged at `partition`, `offset` (`None`: an ack without one).
    pub fn ack(
        &mut self,
        value: &[u8],
        partition: i32,
        offset: Option<i64>,
    ) -> Result<(), HistoryError> {
        self.sent(value)?.ack = Some((partition, offset));
        Ok(())
    }

    /// Records `value`'s failure.
    pub fn fail(&mut self, value: &[u8], error: &str) -> Result<(), HistoryError> {
        self.sent(value)?.error = Some(error.to_string());
        Ok(())
    }

    /// Records the outcome of `txn`.
    pub fn end_txn(&mut self, txn: &str, outcome: TxnOutcome) {
        self.txns.insert(txn.to_string(), Some(outcome));
    }

    /// Records an offset commit that succeeded.
    pub fn committed(&mut self, group: &str, topic: &str, partition: i32, offset: i64) {
        self.commits
            .push((group.into(), topic.into(), partition, offset));
    }

    /// Records one record read back, in the order read.
    pub fn read(
        &mut self,
        level: Isolation,
        topic: &str,
        partition: i32,
        offset: i64,
        value: &[u8],
    ) {
        self.reads
            .entry(level)
            .or_default()
            .entry((topic.to_string(), partition))
            .or_default()
            .push((offset, value.to_vec()));
    }

    /// Records a whole read-back of a partition (e.g. [`crate::client::read_all`]'s).
    pub fn read_records(
        &mut self,
        level: Isolation,
        topic: &str,
        partition: i32,
        records: &[Record],
    ) {
        for r in records {
            let v = r.value.as_deref().unwrap_or_default();
            self.read(level, topic, partition, r.offset, v);
        }
    }

    /// Every send, in send order.
    pub fn sends(&self) -> &[Send] {
        &self.sends
    }

    /// How many sends were acknowledged.
    pub fn acked(&self) -> usize {
        self.sends.iter().filter(|s| s.ack.is_some()).count()
    }
}

/// A class of anomaly; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Anomaly {
    /// An acknowledged or committed record not read back.
    Lost,
    /// An acknowledged record read at another offset than its ack's.
    Moved,
    /// A value read more than once.
    Duplicate,
    /// Out of send order within a partition, or read-back offsets not increasing.
    Reordered,
    /// A record of an aborted transaction seen by read_committed.
    AbortedSeen,
    /// A record of a transaction never ended seen by read_committed.
    UndecidedSeen,
    /// A transaction of unknown outcome seen in part by read_committed.
    PartialTxn,
    /// A group's committed offset going back.
    OffsetRegress,
    /// Two replicas differing in a batch both have.
    DivergentReplicas,
    /// Two replicas ending at different offsets (quiescent cluster).
    ReplicaEnds,
}

/// What [`check`] found.
#[derive(Debug, Default)]
pub struct Report {
    /// Counts of the run (sent, acked, failed, read, ...).
    pub counts: BTreeMap<&'static str, usize>,
    /// Each anomaly found, described.
    pub anomalies: BTreeMap<Anomaly, Vec<String>>,
}

impl Report {
    fn add(&mut self, kind: Anomaly, detail: String) {
        self.anomalies.entry(kind).or_default().push(detail);
    }

    /// No anomaly at all.
    pub fn ok(&self) -> bool {
        self.anomalies.values().all(Vec::is_empty)
    }

    /// How many anomalies of `kind`.
    pub fn count(&self, kind: Anomaly) -> usize {
        self.anomalies.get(&kind).map_or(0, Vec::len)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let counts: Vec<String> = self
            .counts
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        write!(f, "counts: {}", counts.join(", "))?;
        for (kind, v) in &self.anomalies {
            write!(
                f,
                "\n{kind:?}: {}, e.g. {:?}",
                v.len(),
                &v[..v.len().min(5)]
            )?;
        }
        Ok(())
    }
}

type Locations = HashMap<Vec<u8>, Vec<(String, i32, i64)>>;

/// Where each value was read at `level`, flagging read-backs whose offsets do not increase.
fn index(h: &History, level: Isolation, r: &mut Report) -> Option<Locations> {
    let reads = h.reads.get(&level)?;
    let mut at: Locations = HashMap::new();
    for ((t, p), recs) in reads {
        let mut last: Option<i64> = None;
        for (o, v) in recs {
            if last.is_some_and(|l| *o <= l) {
                r.add(
                    Anomaly::Reordered,
                    format!("{level:?} read of {t}-{p}: offset {o} after {last:?}"),
                );
            }
            last = Some(*o);
            at.entry(v.clone()).or_default().push((t.clone(), *p, *o));
        }
    }
    Some(at)
}

/// Checks `h`; see the module documentation. Replica logs are compared by [`compare_replicas`].
pub fn check(h: &History) -> Report {
    let mut r = Report::default();
    let uncommitted = index(h, Isolation::ReadUncommitted, &mut r);
    let committed = index(h, Isolation::ReadCommitted, &mut r);

    for (level, at) in [
        (Isolation::ReadUncommitted, &uncommitted),
        (Isolation::ReadCommitted, &committed),
    ] {
        for (v, locs) in at.iter().flatten() {
            if locs.len() > 1 {
                r.add(
                    Anomaly::Duplicate,
                    format!("{level:?}: {} at {locs:?}", shown(v)),
                );
            }
        }
    }

    let (mut lost, mut moved) = (0, 0);
    for s in &h.sends {
        let outcome = s
            .txn
            .as_ref()
            .and_then(|t| h.txns.get(t).copied().flatten());
        let (must, at) = match &s.txn {
            None => (s.ack.is_some(), uncommitted.as_ref().or(committed.as_ref())),
            Some(_) => (
                outcome == Some(TxnOutcome::Committed),
                committed.as_ref().or(uncommitted.as_ref()),
            ),
        };
        let Some(at) = at.filter(|_| must) else {
            continue;
        };
        let Some(locs) = at.get(&s.value) else {
            lost += 1;
            r.add(
                Anomaly::Lost,
                format!(
                    "{} ({}#{}, txn {:?}, ack {:?}) not read back",
                    shown(&s.value),
                    s.producer,
                    s.seq,
                    s.txn,
                    s.ack
                ),
            );
            continue;
        };
        if let Some((p, Some(o))) = s.ack {
            if !locs.contains(&(s.topic.clone(), p, o)) {
                moved += 1;
                r.add(
                    Anomaly::Moved,
                    format!(
                        "{} acked at {}-{p}@{o} but read at {locs:?}",
                        shown(&s.value),
                        s.topic
                    ),
                );
            }
        }
    }

    // One producer's records keep their send order within a partition.
    if let Some(at) = uncommitted.as_ref().or(committed.as_ref()) {
        // (send order, offset) per (producer, topic, partition).
        type Placed<'a> = BTreeMap<(&'a str, &'a str, i32), Vec<(u64, i64)>>;
        let mut per: Placed<'_> = BTreeMap::new();
        for s in &h.sends {
            if let Some((t, p, o)) = at.get(&s.value).and_then(|l| l.first()) {
                debug_assert_eq!(t, &s.topic);
                per.entry((&s.producer, &s.topic, *p))
                    .or_default()
                    .push((s.seq, *o));
            }
        }
        for ((prod, t, p), mut pairs) in per {
            pairs.sort_unstable();
            if let Some(w) = pairs.windows(2).find(|w| w[1].1 <= w[0].1) {
                r.add(
                    Anomaly::Reordered,
                    format!(
                        "{prod} to {t}-{p}: send #{} at offset {} not after send #{} at {}",
                        w[1].0, w[1].1, w[0].0, w[0].1
                    ),
                );
            }
        }
    }

    let (mut aborted_seen, mut undecided_seen) = (0, 0);
    if let Some(seen) = &committed {
        let mut by_txn: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for s in &h.sends {
            if let Some(t) = &s.txn {
                let e = by_txn.entry(t).or_default();
                e.0 += 1;
                e.1 += usize::from(seen.contains_key(&s.value));
            }
        }
        for (t, (all, visible)) in by_txn {
            if visible == 0 {
                continue;
            }
            match h.txns.get(t).copied().flatten() {
                Some(TxnOutcome::Aborted) => {
                    aborted_seen += visible;
                    r.add(
                        Anomaly::AbortedSeen,
                        format!("txn {t} aborted, {visible} of its records read"),
                    );
                }
                None => {
                    undecided_seen += visible;
                    r.add(
                        Anomaly::UndecidedSeen,
                        format!("txn {t} never ended, {visible} of its records read"),
                    );
                }
                Some(TxnOutcome::Unknown) if visible != all => r.add(
                    Anomaly::PartialTxn,
                    format!("txn {t} (outcome unknown): {visible} of {all} records read"),
                ),
                _ => {}
            }
        }
    }

    let mut last: HashMap<(&str, &str, i32), i64> = HashMap::new();
    for (g, t, p, o) in &h.commits {
        let k = (g.as_str(), t.as_str(), *p);
        if let Some(&before) = last.get(&k) {
            if *o < before {
                r.add(
                    Anomaly::OffsetRegress,
                    format!("group {g} {t}-{p}: committed {o} after {before}"),
                );
            }
        }
        let e = last.entry(k).or_insert(*o);
        *e = (*e).max(*o);
    }

    r.counts.insert("sent", h.sends.len());
    r.counts.insert("acked", h.acked());
    r.counts.insert(
        "failed",
        h.sends.iter().filter(|s| s.error.is_some()).count(),
    );
    r.counts.insert("lost", lost);
    r.counts.insert("moved", moved);
    r.counts.insert("duplicated", r.count(Anomaly::Duplicate));
    r.counts.insert("aborted_seen", aborted_seen);
    r.counts.insert("undecided_seen", undecided_seen);
    r.counts.insert("txns", h.txns.len());
    r.counts.insert("commits", h.commits.len());
    r
}

/// One batch of a replica's log: its base and last offsets and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaBatch {
    /// The batch's base offset.
    pub base_offset: i64,
    /// The batch's last offset.
    pub last_offset: i64,
    /// The whole batch as stored.
    pub bytes: Bytes,
}

/// The batches of a partition directory's segment files, in offset order, up to the first
/// incomplete or invalid one (a torn tail of a killed node).
pub fn read_replica(partition_dir: &Path) -> Result<Vec<ReplicaBatch>, Error> {
    let io = |e| Error::io(partition_dir.display().to_string(), e);
    let mut logs: Vec<_> = std::fs::read_dir(partition_dir)
        .map_err(io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    logs.sort();
    let mut out = Vec::new();
    for p in logs {
        let bytes = std::fs::read(&p).map_err(|e| Error::io(p.display().to_string(), e))?;
        for b in Batches::new(Bytes::from(bytes)) {
            let Ok(b) = b else { break };
            out.push(ReplicaBatch {
                base_offset: b.header().base_offset,
                last_offset: b.header().last_offset(),
                bytes: b.as_bytes().clone(),
            });
        }
    }
    Ok(out)
}

/// Compares one partition's replicas, `logs` by node id: every batch two replicas both have
/// (below both log ends) must be the same bytes at the same boundaries; with `strict_ends`,
/// unequal log ends are an anomaly too (a quiescent cluster whose replicas are all in sync).
pub fn compare_replicas(
    partition: &str,
    logs: &BTreeMap<i32, Vec<ReplicaBatch>>,
    strict_ends: bool,
    r: &mut Report,
) {
    let mut nodes = logs.iter();
    let Some((&first, reference)) = nodes.next() else {
        return;
    };
    let end = |l: &[ReplicaBatch]| l.last().map_or(0, |b| b.last_offset + 1);
    for (&other, log) in nodes {
        let common = end(reference).min(end(log));
        let below = |l: &[ReplicaBatch]| -> BTreeMap<i64, Bytes> {
            l.iter()
                .filter(|b| b.last_offset < common)
                .map(|b| (b.base_offset, b.bytes.clone()))
                .collect()
        };
        let (a, b) = (below(reference), below(log));
        if !a.keys().eq(b.keys()) {
            r.add(
                Anomaly::DivergentReplicas,
                format!("{partition}: nodes {first} and {other} have different batch boundaries below offset {common}"),
            );
        } else if let Some(o) = a
            .iter()
            .find(|(o, bytes)| b.get(o) != Some(bytes))
            .map(|(o, _)| *o)
        {
            r.add(
                Anomaly::DivergentReplicas,
                format!("{partition}: nodes {first} and {other} differ in the batch at offset {o}"),
            );
        }
        let (ea, eb) = (end(reference), end(log));
        if strict_ends && ea != eb {
            r.add(
                Anomaly::ReplicaEnds,
                format!("{partition}: log end offset {ea} on node {first}, {eb} on node {other}"),
            );
        }
    }
    *r.counts.entry("partitions_compared").or_default() += 1;
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
