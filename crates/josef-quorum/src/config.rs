//! [`QuorumConfig`] and the parser of `controller.quorum.voters`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::error::QuorumError;

/// How one node of the metadata quorum runs.
///
/// The field names follow Kafka's `QuorumConfig` (`controller.quorum.*`) where Kafka has one.
/// [`QuorumConfig::new`] fills in Kafka's defaults; tests lower the timeouts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumConfig {
    /// This node's id (`node.id`); must be one of [`QuorumConfig::voters`].
    pub node_id: u64,
    /// The static voters (`controller.quorum.voters`): node id to `"host:port"` of its CONTROLLER
    /// listener. See [`parse_voters`].
    pub voters: BTreeMap<u64, String>,
    /// The directory of the log and the snapshots: the broker passes
    /// `<metadata.log.dir>/__cluster_metadata-0`. Created if missing.
    pub dir: PathBuf,
    /// `controller.quorum.election.timeout.ms` (default 1000): a follower that hears nothing from a
    /// leader for a random time in `[t, 2t)` starts an election.
    pub election_timeout_ms: u64,
    /// How often the leader sends heartbeats (AppendEntries) to the followers (default 500, half
    /// the election timeout; [`QuorumConfig::set_election_timeout`] keeps that ratio); must be
    /// below `election_timeout_ms`. openraft also bounds every AppendEntries round trip by it (its
    /// replication stream's own timeout, whatever `request_timeout_ms` says), so it is the time a
    /// follower has to answer an append: too short, and a loaded follower's answers time out
    /// again and again while it is alive, and the leader commits nothing.
    pub heartbeat_interval_ms: u64,
    /// `controller.quorum.request.timeout.ms` (default 2000): the bound of one Raft RPC (connect,
    /// send, answer). A full snapshot gets ten times this.
    pub request_timeout_ms: u64,
    /// `controller.quorum.fetch.timeout.ms` (default 2000): a leader that has not heard from a
    /// majority of the voters for this long stops reporting itself as leader
    /// ([`crate::MetadataQuorum::leader`] is `None`, proposals fail with `NotLeader`) until it
    /// does again, as Kafka's leader resigns (KIP-595), so a partitioned controller deactivates.
    pub fetch_timeout_ms: u64,
    /// How long [`crate::MetadataQuorum::propose`] waits for the commit (default 30000) before it
    /// answers [`QuorumError::Timeout`].
    pub propose_timeout_ms: u64,
    /// A snapshot of the state machine is taken after this many entries since the last one
    /// (default 10000), and the log before it is then purged. openraft counts entries, not
    /// bytes: the broker derives it from Kafka's `metadata.log.max.record.bytes.between.snapshots`
    /// (see its `cluster_config` module).
    pub snapshot_every_n_entries: u64,
    /// Kafka's `metadata.log.max.snapshot.interval.ms` (default 3600000): a snapshot is also
    /// taken once per this interval when entries were applied since the newest one; 0 turns the
    /// timer off.
    pub snapshot_max_interval_ms: u64,
    /// Entries kept in the log below the last snapshot (default 1000), so a follower a little
    /// behind catches up from the log instead of a snapshot.
    pub entries_kept_after_snapshot: u64,
    /// A log segment file is closed and a new one started once it has this many bytes (default
    /// 8 MiB). Purging deletes whole segments.
    pub segment_bytes: u64,
    /// Whether each append is fsynced before it is acknowledged (default true; a voter must, turn
    /// it off only in tests that do not crash the machine).
    pub fsync: bool,
}

/// The heartbeat interval for an election timeout: half of it. Kafka's KRaft has no heartbeat
/// (followers fetch, each request bounded by `controller.quorum.request.timeout.ms`), but openraft
/// bounds each AppendEntries by its heartbeat interval, so the interval is also the budget of one
/// append's round trip. A quarter of the election timeout (250 ms at Kafka's default) was too
/// little: in a soak on a loaded machine the new leader's appends to two live followers timed out
/// 211 times in a row and the cluster had no active controller for 2 minutes 22 seconds
/// (docs/reliability.md, bug 19). Half still sends two heartbeats per election timeout, the
/// earliest a follower starts an election.
pub fn heartbeat_for(election_timeout_ms: u64) -> u64 {
    (election_timeout_ms / 2).max(1)
}

impl QuorumConfig {
    /// A config with Kafka's defaults for the timeouts.
    pub fn new(node_id: u64, voters: BTreeMap<u64, String>, dir: impl Into<PathBuf>) -> Self {
        QuorumConfig {
            node_id,
            voters,
            dir: dir.into(),
            election_timeout_ms: 1000,
            heartbeat_interval_ms: heartbeat_for(1000),
            request_timeout_ms: 2000,
            fetch_timeout_ms: 2000,
            propose_timeout_ms: 30_000,
            snapshot_every_n_entries: 10_000,
            snapshot_max_interval_ms: 3_600_000,
            entries_kept_after_snapshot: 1000,
            segment_bytes: 8 * 1024 * 1024,
            fsync: true,
        }
    }

    /// Sets `controller.quorum.election.timeout.ms` and the heartbeat interval that goes with it
    /// ([`heartbeat_for`]).
    pub fn set_election_timeout(&mut self, election_timeout_ms: u64) {
        self.election_timeout_ms = election_timeout_ms;
        self.heartbeat_interval_ms = heartbeat_for(election_timeout_ms);
    }

    /// Checks the config: this node is a voter, timeouts are positive and the heartbeat is
    /// shorter than the election timeout.
    pub fn validate(&self) -> Result<(), QuorumError> {
        let bad = |m: String| Err(QuorumError::InvalidConfig(m));
        if self.voters.is_empty() {
            return bad("no voters".into());
        }
        if !self.voters.contains_key(&self.node_id) {
            return bad(format!(
                "node {} is not one of the voters {:?} (only voters run the metadata quorum)",
                self.node_id,
                self.voters.keys().collect::<Vec<_>>()
            ));
        }
        if self.election_timeout_ms == 0
            || self.request_timeout_ms == 0
            || self.fetch_timeout_ms == 0
            || self.propose_timeout_ms == 0
        {
            return bad("timeouts must be positive".into());
        }
        if self.heartbeat_interval_ms == 0 || self.heartbeat_interval_ms >= self.election_timeout_ms
        {
            return bad(format!(
                "heartbeat_interval_ms ({}) must be positive and below election_timeout_ms ({})",
                self.heartbeat_interval_ms, self.election_timeout_ms
            ));
        }
        if self.snapshot_every_n_entries == 0 {
            return bad("snapshot_every_n_entries must be positive".into());
        }
        if self.segment_bytes == 0 {
            return bad("segment_bytes must be positive".into());
        }
        Ok(())
    }
}

/// Why a `controller.quorum.voters` value could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VotersError {
    /// The value names no voter.
    #[error("controller.quorum.voters is empty")]
    Empty,
    /// An entry is not of the form `id@host:port`.
    #[error("voter entry {entry:?} is not of the form id@host:port")]
    Malformed {
        /// The entry as written.
        entry: String,
    },
    /// The id of an entry is not a non-negative integer.
    #[error("voter entry {entry:?} has an id that is not a non-negative integer")]
    BadId {
        /// The entry as written.
        entry: String,
    },
    /// The port of an entry is missing or not a number in 0..=65535, or the host is empty.
    #[error("voter entry {entry:?} has no valid host:port")]
    BadAddress {
        /// The entry as written.
        entry: String,
    },
    /// Two entries have the same id.
    #[error("voter id {id} appears twice in controller.quorum.voters")]
    DuplicateId {
        /// The repeated id.
        id: u64,
    },
}

/// Parses Kafka's `controller.quorum.voters`: `id@host:port` entries separated by commas
/// (whitespace around entries is ignored; IPv6 hosts are written in brackets, `1@[::1]:9093`).
///
/// ```
/// let voters = josef_quorum::parse_voters("1@127.0.0.1:19093, 2@localhost:29093").unwrap();
/// assert_eq!(voters[&2], "localhost:29093");
/// assert!(josef_quorum::parse_voters("1@127.0.0.1").is_err());
/// ```
pub fn parse_voters(value: &str) -> Result<BTreeMap<u64, String>, VotersError> {
    let mut voters = BTreeMap::new();
    for raw in value.split(',') {
        let entry = raw.trim();
        if entry.is_empty() {
            if value.trim().is_empty() {
                return Err(VotersError::Empty);
            }
            return Err(VotersError::Malformed {
                entry: entry.to_string(),
            });
        }
        let (id, addr) = entry
            .split_once('@')
            .ok_or_else(|| VotersError::Malformed {
                entry: entry.to_string(),
            })?;
        let id: u64 = id.trim().parse().map_err(|_| VotersError::BadId {
            entry: entry.to_string(),
        })?;
        let addr = addr.trim();
        let (host, port) = addr
            .rsplit_once(':')
            .ok_or_else(|| VotersError::BadAddress {
                entry: entry.to_string(),
            })?;
        let host_ok = if let Some(inner) = host.strip_prefix('[') {
            inner.strip_suffix(']').is_some_and(|h| !h.is_empty())
        } else {
            !host.is_empty() && !host.contains(':')
        };
        if !host_ok || port.parse::<u16>().is_err() {
            return Err(VotersError::BadAddress {
                entry: entry.to_string(),
            });
        }
        if voters.insert(id, addr.to_string()).is_some() {
            return Err(VotersError::DuplicateId { id });
        }
    }
    if voters.is_empty() {
        return Err(VotersError::Empty);
    }
    Ok(voters)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kafka_voters() {
        let v = parse_voters("1@127.0.0.1:19093,2@127.0.0.1:29093,3@[::1]:39093").unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(v[&1], "127.0.0.1:19093");
        assert_eq!(v[&3], "[::1]:39093");
    }

    #[test]
    fn typed_errors() {
        assert_eq!(parse_voters(""), Err(VotersError::Empty));
        assert_eq!(parse_voters("  "), Err(VotersError::Empty));
        assert!(matches!(
            parse_voters("1@a:1,,2@b:2"),
            Err(VotersError::Malformed { .. })
        ));
        assert!(matches!(
            parse_voters("127.0.0.1:9093"),
            Err(VotersError::Malformed { .. })
        ));
        assert!(matches!(
            parse_voters("x@h:1"),
            Err(VotersError::BadId { .. })
        ));
        assert!(matches!(
            parse_voters("-1@h:1"),
            Err(VotersError::BadId { .. })
        ));
        assert!(matches!(
            parse_voters("1@h"),
            Err(VotersError::BadAddress { .. })
        ));
        assert!(matches!(
            parse_voters("1@h:99999"),
            Err(VotersError::BadAddress { .. })
        ));
        assert!(matches!(
            parse_voters("1@:9"),
            Err(VotersError::BadAddress { .. })
        ));
        assert!(matches!(
            parse_voters("1@::1:9"),
            Err(VotersError::BadAddress { .. })
        ));
        assert_eq!(
            parse_voters("1@a:1,1@b:2"),
            Err(VotersError::DuplicateId { id: 1 })
        );
    }

    #[test]
    fn validate_config() {
        let voters = parse_voters("1@127.0.0.1:1,2@127.0.0.1:2").unwrap();
        let mut c = QuorumConfig::new(1, voters, "/tmp/x");
        assert!(c.validate().is_ok());
        c.node_id = 9;
        assert!(c.validate().is_err());
        c.node_id = 1;
        c.heartbeat_interval_ms = c.election_timeout_ms;
        assert!(c.validate().is_err());
    }
}
