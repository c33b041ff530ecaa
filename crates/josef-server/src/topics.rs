//! The topics this node holds: names, ids, partition counts and config overrides, persisted in
//! `josef-topics` in the first log dir (Kafka keeps these in its KRaft metadata log; a single
//! node needs only this small file), and the open partitions.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use josef_protocol::{ErrorCode, Uuid};
use josef_sequencer::ProducerStateConfig;
use parking_lot::{Mutex, RwLock};

use josef_log::storage::{LazyDirs, Storage};

use crate::config::BrokerConfig;
use crate::log_dirs::{new_partition_state, on_threads_per_dir, LogDirs};
use crate::meta::{uuid_from_base64, uuid_to_base64};
use crate::partition::{AppendListener, Partition};
use crate::partition_metadata;
use crate::topic_config;

/// Name of the topics file in the first log dir.
pub const TOPICS_FILE: &str = "josef-topics";
/// The group coordinator's topic.
pub const GROUP_METADATA_TOPIC: &str = "__consumer_offsets";
/// The transaction coordinator's topic.
pub const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";
/// Names Kafka treats as internal.
pub const INTERNAL_TOPICS: &[&str] = &[
    GROUP_METADATA_TOPIC,
    TRANSACTION_STATE_TOPIC,
    "__share_group_state",
];

/// Milliseconds since the epoch (the broker is the one place that reads the wall clock).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A topic: immutable; changes (partitions added, configs altered) swap in a new `Arc<Topic>`
/// that shares the existing partitions.
pub struct Topic {
    /// Name.
    pub name: String,
    /// Id.
    pub id: Uuid,
    /// Partitions by index.
    pub partitions: Vec<Arc<Partition>>,
    /// Config overrides (topic-level names).
    pub configs: BTreeMap<String, String>,
}

impl Topic {
    /// Whether the name is one of Kafka's internal topics.
    pub fn is_internal(&self) -> bool {
        INTERNAL_TOPICS.contains(&self.name.as_str())
    }
}

/// Why a topic operation failed, with the Kafka code.
#[derive(Debug, Clone)]
pub struct TopicError {
    /// Kafka error code.
    pub code: ErrorCode,
    /// Human-readable reason.
    pub message: String,
}

impl TopicError {
    fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        TopicError {
            code,
            message: message.into(),
        }
    }
}

/// Kafka's legal topic names: 1–249 of `[a-zA-Z0-9._-]`, not `.` or `..`.
pub fn validate_topic_name(name: &str) -> Result<(), TopicError> {
    let bad = |why: &str| {
        Err(TopicError::new(
            ErrorCode::InvalidTopicException,
            format!("Topic name \"{name}\" is illegal, {why}"),
        ))
    };
    if name.is_empty() {
        return bad("it can't be empty");
    }
    if name == "." || name == ".." {
        return bad("it cannot be \".\" or \"..\"");
    }
    if name.len() > 249 {
        return bad("it can't be longer than 249 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
    {
        return bad("it contains a character other than ASCII alphanumerics, '.', '_' and '-'");
    }
    Ok(())
}

/// Looked up per partition of every produce and fetch (a follower's parked fetch: every
/// partition of its session), so hashed with a seeded fast hash rather than SipHash.
type Seeded = foldhash::fast::RandomState;

#[derive(Default)]
struct Inner {
    by_name: HashMap<String, Arc<Topic>, Seeded>,
    by_id: HashMap<Uuid, Arc<Topic>, Seeded>,
    /// Names with `.` read as `_` (Kafka's collision rule: the two share metric names), to the
    /// topic's name: a create looks its collision up instead of walking every topic, which made
    /// creating N topics cost N² name comparisons (issue #22).
    by_collision_name: HashMap<String, String>,
}

fn collision_name(name: &str) -> String {
    name.replace('.', "_")
}

impl Inner {
    fn insert(&mut self, topic: Arc<Topic>) {
        self.by_collision_name
            .insert(collision_name(&topic.name), topic.name.clone());
        self.by_id.insert(topic.id, topic.clone());
        self.by_name.insert(topic.name.clone(), topic);
    }

    fn remove(&mut self, name: &str) -> Option<Arc<Topic>> {
        let t = self.by_name.remove(name)?;
        self.by_id.remove(&t.id);
        self.by_collision_name.remove(&collision_name(name));
        Some(t)
    }
}

/// A topic to create in [`TopicManager::create_all`].
#[derive(Debug, Clone)]
pub struct NewTopic {
    /// Name.
    pub name: String,
    /// Partition count.
    pub partitions: i32,
    /// Config overrides (topic-level names).
    pub configs: BTreeMap<String, String>,
}

/// All topics of the node.
pub struct TopicManager {
    config: Arc<BrokerConfig>,
    /// Topic config defaults set dynamically on the broker (by topic config name; see
    /// [`crate::dynamic_config`]): between a topic's own overrides and the static settings.
    dynamic_defaults: RwLock<Arc<BTreeMap<String, String>>>,
    /// Where the partition logs and the topics file live (`log.storage`).
    storage: Arc<dyn Storage>,
    /// On a single node with a single log dir, `storage` itself: a partition's directory and
    /// files are created by its first write, so an empty partition costs no inode (issue #22).
    /// With several log dirs a partition's directory is what says which dir holds it, so it is
    /// created at once; a cluster node creates it at once too (not tried there yet).
    lazy: Option<LazyDirs>,
    /// Given to every partition opened here (wakes delayed fetches on append).
    append_listener: Option<AppendListener>,
    inner: RwLock<Inner>,
    /// Serializes creates, deletes and alterations (and the topics-file writes).
    admin: Mutex<()>,
    /// Set by [`TopicManager::shutdown`]: no partition is opened after it (a second `Log` on a
    /// directory being closed would map index files the close truncates).
    closed: std::sync::atomic::AtomicBool,
    /// Partition directories per log dir (in `log.dirs` order), counted once and then kept as
    /// partitions are placed (Kafka's `LogManager.nextLogDirs` counts its in-memory logs): a
    /// count per new partition would make creating N partitions cost N² directory lookups.
    /// `None` until needed (only with several log dirs) and after a delete.
    dir_counts: Mutex<Option<Vec<usize>>>,
    /// Each log dir's checkpoints and clean-shutdown marker, and the threads per dir that open
    /// and close the logs.
    log_dirs: LogDirs,
    /// Bumped on every change of what a fetch answers that no partition event tells: topics
    /// created, deleted or altered, configs, log start moves (see
    /// [`TopicManager::change_generation`]).
    generation: std::sync::atomic::AtomicU64,
}

/// A topic read from the topics file, to be opened.
struct TopicSpec {
    name: String,
    id: Uuid,
    partitions: i32,
    configs: BTreeMap<String, String>,
    log_config: josef_log::LogConfig,
}

fn partition_dir_name(topic: &str, index: i32) -> String {
    format!("{topic}-{index}")
}

impl TopicManager {
    /// With a partition listener, `Some` number that changes whenever what a fetch of a
    /// partition answers changes without an event of that partition (a topic created,
    /// deleted or altered, a config, a log start moved): lets incremental fetch sessions read
    /// only the partitions whose events they saw (`josef_fetch::FetchSessionCache::sync_generation`).
    /// `None` without a listener: nothing tells the partitions' changes.
    pub fn change_generation(&self) -> Option<u64> {
        self.append_listener
            .as_ref()
            .map(|_| self.generation.load(std::sync::atomic::Ordering::Acquire))
    }

    /// The generation [`TopicManager::change_generation`] reports, with or without a listener.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::Acquire)
    }

    /// See [`TopicManager::change_generation`].
    pub(crate) fn bump_generation(&self) {
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }

    /// Shares a freshly opened partition, with the append listener set.
    fn attach(&self, p: Partition) -> Arc<Partition> {
        if let Some(l) = &self.append_listener {
            p.set_append_listener(l.clone());
        }
        Arc::new(p)
    }

    /// Reads the topics file and opens every partition (recovering logs that were not closed
    /// cleanly).
    pub fn load(
        config: Arc<BrokerConfig>,
        append_listener: Option<AppendListener>,
    ) -> Result<TopicManager, String> {
        // Segment files beyond half the descriptor limit are closed and reopened by name, so
        // partitions are not bounded by `ulimit -n` (issue #22); the rest is for connections.
        let mut storage: Arc<dyn Storage> = Arc::new(josef_log::storage::BoundedFiles::new(
            config.log_storage.open(),
            josef_log::storage::default_max_open_files(),
        ));
        for d in &config.log_dirs {
            storage
                .create_dir_all(d)
                .map_err(|e| format!("{}: {e}", d.display()))?;
        }
        // A cluster node keeps its directories eager: not yet tried against replica fetching,
        // reassignment and the cluster tests that look at partition directories.
        let lazy = (config.log_dirs.len() == 1 && config.cluster.is_none())
            .then(|| LazyDirs::new(storage.clone()));
        if let Some(l) = &lazy {
            storage = Arc::new(l.clone());
        }
        let log_dirs = LogDirs::read(
            storage.clone(),
            &config.log_dirs,
            config.num_recovery_threads_per_data_dir,
        );
        let mgr = TopicManager {
            log_dirs,
            config,
            dynamic_defaults: RwLock::default(),
            storage,
            lazy,
            append_listener,
            inner: RwLock::new(Inner::default()),
            admin: Mutex::new(()),
            closed: std::sync::atomic::AtomicBool::new(false),
            dir_counts: Mutex::new(None),
            generation: std::sync::atomic::AtomicU64::new(0),
        };
        let path = mgr.config.log_dirs[0].join(TOPICS_FILE);
        let text = match mgr.storage.read(&path) {
            Ok(t) => String::from_utf8(t).map_err(|_| format!("{}: not UTF-8", path.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let mut specs: BTreeMap<String, (Uuid, i32, BTreeMap<String, String>)> = BTreeMap::new();
        for (n, line) in text.lines().enumerate() {
            let f: Vec<&str> = line.split('\t').collect();
            let bad = || format!("{}:{}: malformed line", path.display(), n + 1);
            match f.as_slice() {
                ["topic", name, id, parts] => {
                    let id = uuid_from_base64(id).ok_or_else(bad)?;
                    let parts: i32 = parts.parse().map_err(|_| bad())?;
                    specs.insert(
                        name.to_string(),
                        (Uuid::from_bytes(id), parts, BTreeMap::new()),
                    );
                }
                ["config", name, key, value] => {
                    let s = specs.get_mut(*name).ok_or_else(bad)?;
                    s.2.insert(key.to_string(), value.to_string());
                }
                [""] => {}
                _ => return Err(bad()),
            }
        }
        let specs: Vec<TopicSpec> = specs
            .into_iter()
            .map(|(name, (id, partitions, configs))| TopicSpec {
                log_config: mgr.log_config(&configs),
                name,
                id,
                partitions,
                configs,
            })
            .collect();
        let opened = mgr.open_at_start(&specs)?;
        let all: Vec<Arc<Partition>> = opened.iter().flatten().cloned().collect();
        mgr.log_dirs.finish_start(&all)?;
        let mut inner = mgr.inner.write();
        for (spec, partitions) in specs.into_iter().zip(opened) {
            let topic = Arc::new(Topic {
                name: spec.name.clone(),
                id: spec.id,
                partitions,
                configs: spec.configs,
            });
            inner.insert(topic);
        }
        drop(inner);
        Ok(mgr)
    }

    /// Opens every partition at startup on `num.recovery.threads.per.data.dir` threads per log
    /// dir, all dirs at once (Kafka's `LogManager.loadLogs`): opening is mostly small file reads
    /// and system calls per partition, and a restart with 100,000 partitions spent 25 s doing
    /// them on one thread (issue #22). Returns each topic's partitions in order.
    fn open_at_start(&self, specs: &[TopicSpec]) -> Result<Vec<Vec<Arc<Partition>>>, String> {
        let now = now_ms();
        let mut groups: Vec<Vec<(usize, i32, PathBuf)>> =
            self.config.log_dirs.iter().map(|_| Vec::new()).collect();
        for (t, spec) in specs.iter().enumerate() {
            for i in 0..spec.partitions.max(0) {
                let dir = self.partition_dir(&spec.name, i);
                let g = self.log_dirs.index_of(&dir).unwrap_or(0);
                groups[g].push((t, i, dir));
            }
        }
        let results =
            on_threads_per_dir(&groups, self.log_dirs.threads_per_dir(), |(t, i, dir)| {
                let spec = &specs[*t];
                let state = self.log_dirs.state_at_start(dir, &spec.name, *i);
                let p = self
                    .open_partition(
                        dir,
                        &spec.name,
                        *i,
                        spec.id,
                        spec.log_config.clone(),
                        self.producer_config(),
                        now,
                        state,
                    )
                    .map_err(|e| format!("cannot open {}: {e}", dir.display()))?;
                // Lost to a crash after CreateTopics (it is written unsynced), or a data dir
                // from before the file existed.
                if !p.log_load_report().partition_metadata_exists {
                    self.write_partition_metadata(dir, spec.id);
                }
                Ok::<_, String>(p)
            });
        let mut opened: Vec<Vec<Option<Arc<Partition>>>> = specs
            .iter()
            .map(|s| vec![None; usize::try_from(s.partitions).unwrap_or(0)])
            .collect();
        for (jobs, results) in groups.iter().zip(results) {
            if results.len() != jobs.len() {
                return Err("a log-opening thread panicked".into());
            }
            for ((t, i, _), r) in jobs.iter().zip(results) {
                opened[*t][*i as usize] = Some(self.attach(r?));
            }
        }
        opened
            .into_iter()
            .zip(specs)
            .map(|(parts, spec)| {
                parts
                    .into_iter()
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| format!("topic {}: not every partition opened", spec.name))
            })
            .collect()
    }

    /// Opens a partition's log: on one node a single replica (ISR = [self]); on a cluster node a
    /// replica that waits for the metadata image to make it leader or follower.
    #[allow(clippy::too_many_arguments)]
    fn open_partition(
        &self,
        dir: &Path,
        topic: &str,
        index: i32,
        id: Uuid,
        log_config: josef_log::LogConfig,
        producer_config: ProducerStateConfig,
        now: i64,
        state: josef_log::PartitionState,
    ) -> Result<Partition, josef_log::LogError> {
        if self.closed.load(std::sync::atomic::Ordering::Acquire) {
            return Err(josef_log::LogError::io(
                dir,
                std::io::Error::other("the broker is shutting down"),
            ));
        }
        let log = josef_log::Log::open_in(self.storage.clone(), dir, log_config, now, state)?;
        match &self.config.cluster {
            None => Partition::single_replica_from_log(log, topic, index, id, producer_config, now),
            Some(cl) => {
                let p = Partition::replica_from_log(
                    log,
                    topic,
                    index,
                    id,
                    producer_config,
                    self.config.node_id,
                    now,
                )?;
                p.set_replica_lag_time_max_ms(cl.replica_lag_time_max_ms);
                Ok(p)
            }
        }
    }

    /// Writes `partition.metadata` (unsynced; with lazy directories when the partition's
    /// directory is created). A failure is only a warning: the broker never reads the file.
    fn write_partition_metadata(&self, dir: &Path, id: Uuid) {
        let r = match &self.lazy {
            Some(l) => partition_metadata::write_when_created(l, dir, id),
            None => partition_metadata::write(&*self.storage, dir, id),
        };
        if let Err(e) = r {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot write partition.metadata");
        }
    }

    fn producer_config(&self) -> ProducerStateConfig {
        ProducerStateConfig {
            producer_id_expiration_ms: self.config.producer_id_expiration_ms,
        }
    }

    /// The directory of a partition: where it already is, else in the log dir holding the fewest
    /// partitions.
    fn partition_dir(&self, topic: &str, index: i32) -> PathBuf {
        let name = partition_dir_name(topic, index);
        if self.config.log_dirs.len() == 1 {
            return self.config.log_dirs[0].join(name);
        }
        for d in &self.config.log_dirs {
            let p = d.join(&name);
            if self.storage.is_dir(&p) {
                return p;
            }
        }
        let mut counts = self.dir_counts.lock();
        let counts = counts.get_or_insert_with(|| {
            self.config
                .log_dirs
                .iter()
                .map(|d| {
                    self.storage
                        .read_dir(d)
                        .map(|names| {
                            names
                                .iter()
                                .filter(|n| self.storage.is_dir(&d.join(n)))
                                .count()
                        })
                        .unwrap_or(usize::MAX)
                })
                .collect()
        });
        let best = (0..counts.len())
            .min_by_key(|&i| counts[i])
            .expect("at least one log dir");
        counts[best] = counts[best].saturating_add(1);
        self.config.log_dirs[best].join(name)
    }

    fn persist(&self, inner: &Inner) -> Result<(), TopicError> {
        let mut text = String::new();
        let mut names: Vec<&String> = inner.by_name.keys().collect();
        names.sort();
        for n in names {
            let t = &inner.by_name[n];
            text.push_str(&format!(
                "topic\t{}\t{}\t{}\n",
                t.name,
                uuid_to_base64(t.id.as_bytes()),
                t.partitions.len()
            ));
            for (k, v) in &t.configs {
                text.push_str(&format!("config\t{}\t{}\t{}\n", t.name, k, v));
            }
        }
        let path = self.config.log_dirs[0].join(TOPICS_FILE);
        self.storage
            .write_atomically(&path, text.as_bytes())
            .map_err(|e| {
                TopicError::new(
                    ErrorCode::KafkaStorageError,
                    format!("{}: {e}", path.display()),
                )
            })
    }

    /// A topic by name.
    pub fn get(&self, name: &str) -> Option<Arc<Topic>> {
        #[cfg(test)]
        lookups::counted();
        self.inner.read().by_name.get(name).cloned()
    }

    /// A topic by id.
    pub fn get_by_id(&self, id: &Uuid) -> Option<Arc<Topic>> {
        self.inner.read().by_id.get(id).cloned()
    }

    /// A partition by topic name and index.
    pub fn partition(&self, name: &str, index: i32) -> Option<Arc<Partition>> {
        let t = self.get(name)?;
        usize::try_from(index)
            .ok()
            .and_then(|i| t.partitions.get(i).cloned())
    }

    /// Every topic, sorted by name.
    pub fn all(&self) -> Vec<Arc<Topic>> {
        let mut v: Vec<Arc<Topic>> = self.inner.read().by_name.values().cloned().collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// Checks what CreateTopics checks, without creating anything.
    pub fn check_new(
        &self,
        name: &str,
        partitions: i32,
        configs: &BTreeMap<String, String>,
    ) -> Result<(), TopicError> {
        validate_topic_name(name)?;
        let inner = self.inner.read();
        if inner.by_name.contains_key(name) {
            return Err(TopicError::new(
                ErrorCode::TopicAlreadyExists,
                format!("Topic '{name}' already exists."),
            ));
        }
        if let Some(other) = inner.by_collision_name.get(&collision_name(name)) {
            return Err(TopicError::new(
                ErrorCode::InvalidTopicException,
                format!("Topic '{name}' collides with existing topic: {other}"),
            ));
        }
        if partitions < 1 {
            return Err(TopicError::new(
                ErrorCode::InvalidPartitions,
                "Number of partitions must be larger than 0.",
            ));
        }
        for (k, v) in configs {
            topic_config::validate(k, v)
                .map_err(|m| TopicError::new(ErrorCode::InvalidConfig, m))?;
        }
        Ok(())
    }

    /// Creates a topic with `partitions` partitions and config overrides.
    pub fn create(
        &self,
        name: &str,
        partitions: i32,
        configs: BTreeMap<String, String>,
    ) -> Result<Arc<Topic>, TopicError> {
        self.create_with_id(name, self.new_topic_id(), partitions, configs)
    }

    /// A random topic id (Kafka reserves the zero id and ids whose text starts with '-').
    fn new_topic_id(&self) -> Uuid {
        loop {
            let u = Uuid::from_bytes(*uuid::Uuid::new_v4().as_bytes());
            if !u.is_zero() && !uuid_to_base64(u.as_bytes()).starts_with('-') {
                break u;
            }
        }
    }

    /// Creates a topic with a given id (in a cluster the controller chose it).
    pub fn create_with_id(
        &self,
        name: &str,
        id: Uuid,
        partitions: i32,
        configs: BTreeMap<String, String>,
    ) -> Result<Arc<Topic>, TopicError> {
        let _admin = self.admin.lock();
        self.check_new(name, partitions, &configs)?;
        let topic = self.open_new_topic(name, id, partitions, configs, now_ms())?;
        let mut inner = self.inner.write();
        self.bump_generation();
        inner.insert(topic.clone());
        self.persist(&inner)?;
        tracing::info!(topic = %name, partitions, "created topic");
        Ok(topic)
    }

    /// Creates several topics with one write of the topics file (CreateTopics: creating 1,000
    /// topics wrote it, and synced it twice, 1,000 times; issue #22). Each topic is checked as
    /// [`TopicManager::check_new`] does, also against the ones before it in `topics`; one that
    /// fails is left out with its error. The created ones become visible together, once the
    /// topics file holds them: none can take an acknowledged write before it is durable.
    pub fn create_all(&self, topics: Vec<NewTopic>) -> Vec<Result<Arc<Topic>, TopicError>> {
        let _admin = self.admin.lock();
        let now = now_ms();
        // The request's topics so far, by collision name.
        let mut names: HashMap<String, String> = HashMap::new();
        let mut results: Vec<Result<Arc<Topic>, TopicError>> = Vec::with_capacity(topics.len());
        for t in topics {
            let r = self
                .check_new(&t.name, t.partitions, &t.configs)
                .and_then(|()| match names.get(&collision_name(&t.name)) {
                    Some(other) if *other == t.name => Err(TopicError::new(
                        ErrorCode::TopicAlreadyExists,
                        format!("Topic '{other}' already exists."),
                    )),
                    Some(other) => Err(TopicError::new(
                        ErrorCode::InvalidTopicException,
                        format!("Topic '{}' collides with existing topic: {other}", t.name),
                    )),
                    None => self.open_new_topic(
                        &t.name,
                        self.new_topic_id(),
                        t.partitions,
                        t.configs,
                        now,
                    ),
                });
            if let Ok(topic) = &r {
                names.insert(collision_name(&topic.name), topic.name.clone());
            }
            results.push(r);
        }
        if names.is_empty() {
            return results;
        }
        let mut inner = self.inner.write();
        self.bump_generation();
        for topic in results.iter().flatten() {
            inner.insert(topic.clone());
        }
        if let Err(e) = self.persist(&inner) {
            // As `create_with_id`: the topics stay open, but none is reported created.
            return results
                .into_iter()
                .map(|r| r.and_then(|_| Err(e.clone())))
                .collect();
        }
        drop(inner);
        for topic in results.iter().flatten() {
            tracing::info!(topic = %topic.name, partitions = topic.partitions.len(), "created topic");
        }
        results
    }

    /// A new topic's partitions, opened (not yet registered nor persisted).
    fn open_new_topic(
        &self,
        name: &str,
        id: Uuid,
        partitions: i32,
        configs: BTreeMap<String, String>,
        now: i64,
    ) -> Result<Arc<Topic>, TopicError> {
        let log_config = self.log_config(&configs);
        let mut parts = Vec::new();
        for i in 0..partitions {
            let dir = self.partition_dir(name, i);
            let p = self
                .open_partition(
                    &dir,
                    name,
                    i,
                    id,
                    log_config.clone(),
                    self.producer_config(),
                    now,
                    new_partition_state(),
                )
                .map_err(|e| TopicError::new(ErrorCode::KafkaStorageError, e.to_string()))?;
            // Not synced, nor is anything else of the new partition: the topics file written
            // after is what makes the topic durable (see `partition_metadata`).
            self.write_partition_metadata(&dir, id);
            parts.push(self.attach(p));
        }
        Ok(Arc::new(Topic {
            name: name.to_string(),
            id,
            partitions: parts,
            configs,
        }))
    }

    /// Creates one of the internal topics if it is missing, with its own partition count and
    /// compacted config.
    pub fn ensure_internal(&self, name: &str) -> Result<Arc<Topic>, TopicError> {
        if let Some(t) = self.get(name) {
            return Ok(t);
        }
        let c = &self.config;
        let (parts, seg) = if name == GROUP_METADATA_TOPIC {
            (
                c.offsets_topic_num_partitions,
                c.offsets_topic_segment_bytes,
            )
        } else {
            (
                c.transaction_state_log_num_partitions,
                c.transaction_state_log_segment_bytes,
            )
        };
        let mut configs = BTreeMap::new();
        configs.insert("cleanup.policy".to_string(), "compact".to_string());
        configs.insert("segment.bytes".to_string(), seg.to_string());
        let compression = if name == GROUP_METADATA_TOPIC {
            "producer"
        } else {
            "uncompressed"
        };
        configs.insert("compression.type".to_string(), compression.to_string());
        match self.create(name, parts, configs) {
            Ok(t) => Ok(t),
            Err(e) if e.code == ErrorCode::TopicAlreadyExists => self.get(name).ok_or(e),
            Err(e) => Err(e),
        }
    }

    /// Deletes a topic: its partitions are closed and their directories removed.
    pub fn delete(&self, name: &str) -> Result<(), TopicError> {
        let _admin = self.admin.lock();
        let topic = {
            let mut inner = self.inner.write();
            self.bump_generation();
            let Some(t) = inner.remove(name) else {
                return Err(TopicError::new(
                    ErrorCode::UnknownTopicOrPartition,
                    "This server does not host this topic-partition.",
                ));
            };
            self.persist(&inner)?;
            t
        };
        *self.dir_counts.lock() = None;
        // Before the directories go (and a topic of the same name can be created): a crash must
        // not give a new partition the deleted one's log start offset (Kafka's `asyncDelete`).
        self.checkpoint();
        for p in &topic.partitions {
            let dir = p.dir();
            if let Err(e) = self.storage.remove_dir_all(&dir) {
                tracing::warn!(dir = %dir.display(), error = %e, "cannot remove deleted partition");
            }
        }
        tracing::info!(topic = %name, "deleted topic");
        Ok(())
    }

    /// Grows a topic to `count` partitions.
    pub fn add_partitions(
        &self,
        name: &str,
        count: i32,
        validate_only: bool,
    ) -> Result<(), TopicError> {
        let _admin = self.admin.lock();
        let Some(t) = self.get(name) else {
            return Err(TopicError::new(
                ErrorCode::UnknownTopicOrPartition,
                format!("The topic '{name}' does not exist."),
            ));
        };
        let current = t.partitions.len() as i32;
        if count <= current {
            return Err(TopicError::new(
                ErrorCode::InvalidPartitions,
                format!("Topic currently has {current} partitions, which is higher than the requested {count}."),
            ));
        }
        if validate_only {
            return Ok(());
        }
        let log_config = self.log_config(&t.configs);
        let mut parts = t.partitions.clone();
        for i in current..count {
            let dir = self.partition_dir(name, i);
            let p = self
                .open_partition(
                    &dir,
                    name,
                    i,
                    t.id,
                    log_config.clone(),
                    self.producer_config(),
                    now_ms(),
                    new_partition_state(),
                )
                .map_err(|e| TopicError::new(ErrorCode::KafkaStorageError, e.to_string()))?;
            parts.push(self.attach(p));
        }
        self.replace(Topic {
            name: t.name.clone(),
            id: t.id,
            partitions: parts,
            configs: t.configs.clone(),
        })
    }

    /// Replaces a topic's config overrides and applies them to its logs.
    pub fn set_configs(
        &self,
        name: &str,
        configs: BTreeMap<String, String>,
    ) -> Result<(), TopicError> {
        let _admin = self.admin.lock();
        let Some(t) = self.get(name) else {
            return Err(TopicError::new(
                ErrorCode::UnknownTopicOrPartition,
                format!("The topic '{name}' does not exist."),
            ));
        };
        let log_config = self.log_config(&configs);
        for p in &t.partitions {
            p.set_log_config(log_config.clone())
                .map_err(|e| TopicError::new(ErrorCode::InvalidConfig, e.to_string()))?;
        }
        self.replace(Topic {
            name: t.name.clone(),
            id: t.id,
            partitions: t.partitions.clone(),
            configs,
        })
    }

    /// A topic's log config: its overrides, else the dynamic broker defaults, else the settings.
    fn log_config(&self, overrides: &BTreeMap<String, String>) -> josef_log::LogConfig {
        topic_config::log_config_with(overrides, &self.dynamic_defaults(), &self.config)
    }

    /// The topic config defaults set dynamically on the broker (by topic config name).
    pub fn dynamic_defaults(&self) -> Arc<BTreeMap<String, String>> {
        self.dynamic_defaults.read().clone()
    }

    /// Replaces the dynamic broker defaults and applies them at once to every partition of every
    /// topic (what a topic overrides stays), as Kafka's `DynamicLogConfig.reconfigure` does.
    pub fn set_dynamic_defaults(&self, defaults: BTreeMap<String, String>) {
        let _admin = self.admin.lock();
        *self.dynamic_defaults.write() = Arc::new(defaults);
        self.bump_generation();
        for t in self.all() {
            let log_config = self.log_config(&t.configs);
            for p in &t.partitions {
                if let Err(e) = p.set_log_config(log_config.clone()) {
                    tracing::warn!(topic = %t.name, partition = p.index, error = %e, "cannot apply the broker defaults");
                }
            }
        }
    }

    fn replace(&self, topic: Topic) -> Result<(), TopicError> {
        let topic = Arc::new(topic);
        let mut inner = self.inner.write();
        self.bump_generation();
        inner.insert(topic);
        self.persist(&inner)
    }

    /// Runs retention on every partition (called every `log.retention.check.interval.ms`);
    /// josef-partition moves the producer state with the log. Compaction is the cleaner
    /// threads' ([`crate::log_cleaner`]).
    pub fn run_retention(&self) {
        let now = now_ms();
        for t in self.all() {
            for p in &t.partitions {
                match p.delete_old_segments(now) {
                    Ok(n) if n > 0 => {
                        self.bump_generation();
                        tracing::info!(topic = %t.name, partition = p.index, segments = n, "retention deleted segments");
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!(topic = %t.name, partition = p.index, error = %e, "retention failed")
                    }
                }
            }
        }
    }

    /// Forgets, on every hosted partition, the producers idle for `producer.id.expiration.ms`
    /// (every `producer.id.expiration.check.interval.ms`); returns how many went.
    pub fn remove_expired_producers(&self) -> usize {
        let now = now_ms();
        let mut removed = 0;
        for t in self.all() {
            for p in &t.partitions {
                removed += p.remove_expired_producers(now);
            }
        }
        if removed > 0 {
            tracing::info!(producers = removed, "expired idle producer ids");
        }
        removed
    }

    /// Writes each log dir's recovery-point and log-start checkpoints where they changed (every
    /// `log.flush.offset.checkpoint.interval.ms`; nothing after the shutdown began).
    pub fn checkpoint(&self) {
        self.log_dirs.checkpoint(|| {
            self.inner
                .read()
                .by_name
                .values()
                .flat_map(|t| t.partitions.iter().cloned())
                .collect()
        });
    }

    /// Flushes every log and closes it (producer snapshot at the LEO) on
    /// `num.recovery.threads.per.data.dir` threads per log dir, then writes each dir's
    /// checkpoints and clean-shutdown marker.
    pub fn shutdown(&self) {
        // Creates and partition additions serialize on `admin`: once it is held and `closed` set,
        // none is in flight and none starts.
        let _admin = self.admin.lock();
        self.closed
            .store(true, std::sync::atomic::Ordering::Release);
        // First: a periodic checkpoint in progress holds partitions, which could then not close.
        let Some(writers) = self.log_dirs.begin_shutdown() else {
            return;
        };
        let topics: Vec<Arc<Topic>> = {
            let mut inner = self.inner.write();
            self.bump_generation();
            inner.by_id.clear();
            inner.by_collision_name.clear();
            inner.by_name.drain().map(|(_, t)| t).collect()
        };
        let mut partitions = Vec::new();
        for t in topics {
            match Arc::try_unwrap(t) {
                Ok(t) => partitions.extend(t.partitions),
                Err(t) => partitions.extend(t.partitions.iter().cloned()),
            }
        }
        let count = partitions.len();
        let started = std::time::Instant::now();
        // A task the shutdown just answered (a coordinator's failed write, a parked request) may
        // still hold its partition for a moment; a partition still held is only flushed and its
        // dir is not marked clean, so give them a bounded moment to let go.
        let deadline = started + std::time::Duration::from_secs(2);
        while partitions.iter().any(|p| Arc::strong_count(p) > 1)
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        self.log_dirs.close(partitions, writers);
        tracing::info!(
            partitions = count,
            threads_per_dir = self.log_dirs.threads_per_dir(),
            took_ms = started.elapsed().as_millis() as u64,
            "logs closed"
        );
    }
}

/// Topic lookups by name ([`TopicManager::get`], which every partition lookup is), counted per
/// thread so a test sees its own: each takes the topics' lock, so the request paths make as few
/// as they can.
#[cfg(test)]
pub(crate) mod lookups {
    use std::cell::Cell;

    thread_local! {
        static MADE: Cell<u64> = const { Cell::new(0) };
    }

    pub(super) fn counted() {
        MADE.with(|n| n.set(n.get() + 1));
    }

    /// Lookups made on this thread so far.
    pub(crate) fn made() -> u64 {
        MADE.with(Cell::get)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log_storage::LogStorage;
    use josef_log::storage::{CountingStorage, MemoryStorage, StorageCalls};

    /// Creating partitions costs a bounded number of file operations each, whatever the number of
    /// partitions already there (issue #22: one count of every log dir per new partition made
    /// creating N partitions cost N² lookups), and few: a directory, its `.log` and
    /// `partition.metadata`, with nothing synced but the topics file (creating 100,000 partitions
    /// took two minutes, nearly all of it the kernel creating and syncing small files).
    #[test]
    fn each_new_partition_costs_the_same_file_operations_however_many_there_are() {
        let counting = Arc::new(CountingStorage::new(Arc::new(MemoryStorage::new())));
        let config = two_dirs(
            counting.clone(),
            BrokerConfig::default().num_recovery_threads_per_data_dir,
        );
        let topics = TopicManager::load(config, None).unwrap();
        let mut costs = Vec::new();
        for t in 0..4 {
            let before = counting.calls();
            topics
                .create(&format!("t{t}"), 50, BTreeMap::new())
                .unwrap();
            let after = counting.calls();
            costs.push(StorageCalls {
                opens: after.opens - before.opens,
                atomic_writes: after.atomic_writes - before.atomic_writes,
                lookups: after.lookups - before.lookups,
                dir_listings: after.dir_listings - before.dir_listings,
                dir_syncs: after.dir_syncs - before.dir_syncs,
                unsynced_writes: after.unsynced_writes - before.unsynced_writes,
                file_system_syncs: after.file_system_syncs - before.file_system_syncs,
                other: after.other - before.other,
                bytes_read: after.bytes_read - before.bytes_read,
                syncs: after.syncs - before.syncs,
                open_now: after.open_now - before.open_now,
            });
        }
        // The first topic counts the (empty) log dirs once; after that each topic of 50
        // partitions costs the same, not more as partitions pile up.
        assert_eq!(costs[1], costs[3], "cost per topic grows: {costs:?}");
        let c = costs[3];
        // Per partition: its `.log` and `partition.metadata` opened (no index file: they are
        // created by their first entry), its directory listed once and created once (the
        // `create_dir_all`), one `is_dir` per log dir to find an existing directory, and nothing
        // read, synced or written atomically; per topic, the topics file.
        assert_eq!(
            (c.opens, c.dir_listings, c.other, c.lookups),
            (50 * 2, 50, 50, 50 * 2),
            "{c:?}"
        );
        assert_eq!(
            (c.atomic_writes, c.dir_syncs, c.syncs, c.bytes_read),
            (1, 0, 0, 0),
            "{c:?}"
        );
        // Still spread over both log dirs.
        let in_a = (0..50)
            .filter(|&i| {
                let p = topics.partition("t3", i).unwrap();
                p.dir().starts_with("/josef/a")
            })
            .count();
        assert!((20..=30).contains(&in_a), "{in_a} of 50 in the first dir");
    }

    /// With one log dir an empty partition has no directory and no file (issue #22: creating
    /// 100,000 partitions spent its two minutes in ext4 allocating three inodes each, and a
    /// clean restart listed and opened them all): its first write creates its directory, its
    /// `.log` and `partition.metadata`; a restart opens nothing for the empty ones, and a delete
    /// has nothing to remove.
    #[test]
    fn an_empty_partition_creates_no_file_until_its_first_write() {
        let (counting, config) = counted_in_one_dir();
        let topics = TopicManager::load(config.clone(), None).unwrap();
        let before = counting.calls();
        topics.create("t", 50, BTreeMap::new()).unwrap();
        let after = counting.calls();
        assert_eq!(
            (
                after.opens - before.opens,
                after.other - before.other,
                after.atomic_writes - before.atomic_writes,
                after.open_now - before.open_now,
            ),
            (0, 0, 1, 0),
            "50 empty partitions: no file opened or created, only the topics file written"
        );
        assert!(partition_dirs(&*counting, "t").is_empty());
        append_one(&topics, "t", 3);
        assert_eq!(partition_dirs(&*counting, "t"), ["t-3"]);
        let mut files = counting.read_dir(Path::new("/josef/a/t-3")).unwrap();
        files.sort();
        assert_eq!(
            files,
            [
                "00000000000000000000.log",
                "leader-epoch-checkpoint",
                "partition.metadata"
            ]
        );
        topics.shutdown();
        drop(topics);
        let before = counting.calls();
        let topics = TopicManager::load(config, None).unwrap();
        let opened = counting.calls().opens - before.opens;
        assert!(
            opened <= 4,
            "{opened} files opened to restart 50 partitions of which one has data"
        );
        assert_eq!(partition_dirs(&*counting, "t"), ["t-3"]);
        let t = topics.get("t").unwrap();
        assert_eq!(t.partitions.len(), 50);
        assert_eq!(t.partitions[3].log_end_offset(), 1);
        assert_eq!(t.partitions[4].log_end_offset(), 0);
        append_one(&topics, "t", 4);
        assert_eq!(t.partitions[4].log_end_offset(), 1);
        topics.delete("t").unwrap();
        assert!(partition_dirs(&*counting, "t").is_empty());
    }

    /// CreateTopics of many topics writes the topics file once (issue #22: once per topic, two
    /// fsyncs each, so 1,000 topics rewrote it 1,000 times); a topic that fails its checks (a
    /// name colliding within the request or with an existing topic) is left out and the others
    /// are created. They are all in the file: a start without a shutdown (kill -9) finds them.
    #[test]
    fn create_all_writes_the_topics_file_once_per_request() {
        let (counting, config) = counted_in_one_dir();
        let topics = TopicManager::load(config.clone(), None).unwrap();
        topics.create("x.y", 1, BTreeMap::new()).unwrap();
        let new = |name: &str| NewTopic {
            name: name.to_string(),
            partitions: 2,
            configs: BTreeMap::new(),
        };
        let mut batch: Vec<NewTopic> = (0..20).map(|i| new(&format!("t{i}"))).collect();
        batch.extend([new("a.b"), new("a_b"), new("x_y"), new("t3")]);
        let before = counting.calls().atomic_writes;
        let results = topics.create_all(batch);
        assert_eq!(
            counting.calls().atomic_writes - before,
            1,
            "topics-file writes"
        );
        assert!(results[..21].iter().all(|r| r.is_ok()));
        let codes: Vec<ErrorCode> = results[21..]
            .iter()
            .map(|r| r.as_ref().err().unwrap().code)
            .collect();
        assert_eq!(
            codes,
            [
                ErrorCode::InvalidTopicException,
                ErrorCode::InvalidTopicException,
                ErrorCode::TopicAlreadyExists
            ]
        );
        drop(topics);
        let topics = TopicManager::load(config, None).unwrap();
        assert_eq!(topics.all().len(), 1 + 20 + 1);
        // A deleted topic's name no longer collides.
        topics.delete("a.b").unwrap();
        assert!(topics.check_new("a_b", 1, &BTreeMap::new()).is_ok());
        assert!(topics.check_new("x_y", 1, &BTreeMap::new()).is_err());
    }

    /// The partition directories of `topic` in the log dir `/josef/a`, sorted.
    fn partition_dirs(storage: &dyn Storage, topic: &str) -> Vec<String> {
        let mut names = storage.read_dir(Path::new("/josef/a")).unwrap();
        names.retain(|n| n.starts_with(&format!("{topic}-")));
        names.sort();
        names
    }

    fn append_one(topics: &TopicManager, topic: &str, index: i32) {
        let b = josef_log::testing::batch(0, 1, &[(Some(b"k"), Some(b"v"))]);
        let p = topics.partition(topic, index).unwrap();
        p.append_internal(b, 1).unwrap();
    }

    /// `partition.metadata` is written unsynced at creation, so a crash may lose it: the next
    /// start writes it again, knowing from the open's listing that it is missing.
    #[test]
    fn a_lost_partition_metadata_is_written_again_at_start() {
        let (counting, config) = counted_in_one_dir();
        let topics = TopicManager::load(config.clone(), None).unwrap();
        topics.create("t", 3, BTreeMap::new()).unwrap();
        for i in 0..3 {
            append_one(&topics, "t", i);
        }
        let id = topics.get("t").unwrap().id;
        topics.shutdown();
        drop(topics);
        // What a restart with every file there opens.
        let before = counting.calls().opens;
        let topics = TopicManager::load(config.clone(), None).unwrap();
        let opens_of_a_restart = counting.calls().opens - before;
        topics.shutdown();
        drop(topics);
        let path = |i: i32| PathBuf::from(format!("/josef/a/t-{i}/partition.metadata"));
        counting.remove_file(&path(1)).unwrap();
        let before = counting.calls().opens;
        let topics = TopicManager::load(config, None).unwrap();
        let want = format!("version: 0\ntopic_id: {}\n", uuid_to_base64(id.as_bytes()));
        for i in 0..3 {
            assert_eq!(text(&*counting, path(i).to_str().unwrap()), want);
        }
        // The one missing file: the two present cost nothing.
        assert_eq!(counting.calls().opens - before, opens_of_a_restart + 1);
        drop(topics);
    }

    /// An idle partition holds its active segment's `.log` open and no index mapping (issue #22:
    /// two mappings per partition ran into `vm.max_map_count` near 30,000 partitions); an empty
    /// one in a single log dir holds nothing (its directory does not exist yet).
    #[test]
    fn idle_partitions_hold_one_open_file_each() {
        let (counting, config) = counted_in_one_dir();
        let topics = TopicManager::load(config.clone(), None).unwrap();
        let before = counting.calls().open_now;
        topics.create("t", 100, BTreeMap::new()).unwrap();
        assert_eq!(
            counting.calls().open_now - before,
            0,
            "held by 100 empty partitions"
        );
        for i in 0..100 {
            append_one(&topics, "t", i);
        }
        let held = counting.calls().open_now - before;
        assert_eq!(held, 100, "files and mappings held by 100 idle partitions");
        topics.shutdown();
        drop(topics);
        let topics = TopicManager::load(config, None).unwrap();
        assert_eq!(topics.get("t").unwrap().partitions.len(), 100);
        assert!(
            counting.calls().open_now <= 100 + before,
            "{:?} after a restart",
            counting.calls()
        );
    }

    /// Bug 1 of docs/reliability.md (SIGBUS on SIGTERM): once the topics are shut down no
    /// partition opens. The metadata publisher, racing a shutdown, re-created topics the
    /// shutdown had just closed: a second `Log` mapped index files that the close then
    /// truncated, and touching such a mapping past the new end is a SIGBUS.
    #[test]
    fn no_partition_opens_once_the_topics_are_shut_down() {
        let (counting, config) = counted_in_one_dir();
        let topics = TopicManager::load(config, None).unwrap();
        topics.create("before", 2, BTreeMap::new()).unwrap();
        topics.shutdown();
        let opens = counting.calls().opens;
        let Err(e) = topics.create_with_id("before", Uuid::from_u128(7), 2, BTreeMap::new()) else {
            panic!("a topic created after the shutdown");
        };
        assert_eq!(e.code, ErrorCode::KafkaStorageError, "{}", e.message);
        assert!(topics.get("before").is_none());
        assert_eq!(
            counting.calls().opens,
            opens,
            "no log or index file opened after the shutdown"
        );
    }

    /// A broker config with one log dir on counted in-memory storage, and the counter.
    fn counted_in_one_dir() -> (Arc<CountingStorage>, Arc<BrokerConfig>) {
        let counting = Arc::new(CountingStorage::new(Arc::new(MemoryStorage::new())));
        let config = Arc::new(BrokerConfig {
            log_dirs: vec!["/josef/a".into()],
            log_storage: LogStorage::Custom(counting.clone()),
            ..BrokerConfig::default()
        });
        (counting, config)
    }

    fn two_dirs(storage: Arc<dyn Storage>, threads: usize) -> Arc<BrokerConfig> {
        Arc::new(BrokerConfig {
            log_dirs: vec!["/josef/a".into(), "/josef/b".into()],
            log_storage: LogStorage::Custom(storage),
            num_recovery_threads_per_data_dir: threads,
            ..BrokerConfig::default()
        })
    }

    fn one_dir(storage: Arc<dyn Storage>) -> Arc<BrokerConfig> {
        Arc::new(BrokerConfig {
            log_dirs: vec!["/josef/a".into()],
            log_storage: LogStorage::Custom(storage),
            ..BrokerConfig::default()
        })
    }

    fn text(storage: &dyn Storage, path: &str) -> String {
        String::from_utf8(storage.read(Path::new(path)).unwrap()).unwrap()
    }

    fn all_clean(topics: &TopicManager) -> Vec<bool> {
        topics
            .all()
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .map(|p| p.log_load_report().clean_shutdown)
            })
            .collect()
    }

    /// Kafka's layout: one recovery-point checkpoint, one log-start checkpoint and one marker
    /// per log dir, written once at shutdown; nothing per partition, and no fsync per idle
    /// partition (issue #22: a SIGTERM with 100,000 partitions took 61-88 s).
    #[test]
    fn a_shutdown_writes_each_log_dirs_checkpoints_and_marker_once() {
        let counting = Arc::new(CountingStorage::new(Arc::new(MemoryStorage::new())));
        let config = two_dirs(counting.clone(), 3);
        let topics = TopicManager::load(config.clone(), None).unwrap();
        topics.create("t", 40, BTreeMap::new()).unwrap();
        let before = counting.calls();
        topics.shutdown();
        let after = counting.calls();
        // The recovery-point file of each dir (the log-start one, all zeros, was written at the
        // start and has not changed); no producer snapshot for empty partitions, no sync of
        // segments the recovery point already covers.
        assert_eq!(after.atomic_writes - before.atomic_writes, 2, "{after:?}");
        assert_eq!(after.syncs - before.syncs, 0, "{after:?}");
        for d in ["/josef/a", "/josef/b"] {
            let rp = text(&*counting, &format!("{d}/recovery-point-offset-checkpoint"));
            let lines: Vec<&str> = rp.lines().collect();
            assert_eq!(lines[0], "0");
            let n: usize = lines[1].parse().unwrap();
            assert_eq!(n, lines.len() - 2);
            assert!((15..=25).contains(&n), "{n} partitions in {d}: {rp}");
            assert!(lines[2..]
                .iter()
                .all(|l| l.starts_with("t ") && l.ends_with(" 0")));
            assert!(counting.exists(&Path::new(d).join(".kafka_cleanshutdown")));
        }
        for i in 0..40 {
            let dir = ["/josef/a", "/josef/b"]
                .iter()
                .map(|d| Path::new(d).join(format!("t-{i}")))
                .find(|p| counting.is_dir(p))
                .unwrap();
            for f in [
                ".kafka_cleanshutdown",
                "recovery-point-offset-checkpoint",
                "log-start-offset-checkpoint",
            ] {
                assert!(!counting.exists(&dir.join(f)), "{}/{f}", dir.display());
            }
        }
        drop(topics);
        // The restart opens every log as cleanly shut down and consumes the markers.
        let topics = TopicManager::load(config.clone(), None).unwrap();
        assert_eq!(all_clean(&topics), vec![true; 40]);
        for d in ["/josef/a", "/josef/b"] {
            assert!(!counting.exists(&Path::new(d).join(".kafka_cleanshutdown")));
        }
        // Stopped without a shutdown (kill -9): recovered, from the checkpoints.
        drop(topics);
        let topics = TopicManager::load(config, None).unwrap();
        assert_eq!(all_clean(&topics), vec![false; 40]);
    }

    /// A shutdown of partitions holding data fsyncs none of their files: segments, indexes and
    /// producer snapshots are made durable by one `syncfs` per log dir, before the checkpoints
    /// that put the recovery points at the LEO and the marker (issue #22: 8 ms per partition
    /// with data, a SIGTERM of 80 s with 10,000 of them).
    #[test]
    fn a_shutdown_of_partitions_holding_data_syncs_each_log_dir_once() {
        let counting = Arc::new(CountingStorage::new(Arc::new(MemoryStorage::new())));
        let config = two_dirs(counting.clone(), 2);
        let topics = TopicManager::load(config.clone(), None).unwrap();
        topics.create("t", 40, BTreeMap::new()).unwrap();
        for i in 0..40 {
            append_one(&topics, "t", i);
        }
        let before = counting.calls();
        topics.shutdown();
        let after = counting.calls();
        assert_eq!(after.syncs - before.syncs, 0, "{after:?}");
        assert_eq!(after.dir_syncs - before.dir_syncs, 0, "{after:?}");
        assert_eq!(after.file_system_syncs - before.file_system_syncs, 2);
        // A producer snapshot per partition, unsynced; the recovery-point file of each dir.
        assert_eq!(after.unsynced_writes - before.unsynced_writes, 40);
        assert_eq!(after.atomic_writes - before.atomic_writes, 2, "{after:?}");
        for d in ["/josef/a", "/josef/b"] {
            let rp = text(&*counting, &format!("{d}/recovery-point-offset-checkpoint"));
            assert!(rp.lines().skip(2).all(|l| l.ends_with(" 1")), "{rp}");
        }
        drop(topics);
        let topics = TopicManager::load(config, None).unwrap();
        assert_eq!(all_clean(&topics), vec![true; 40]);
        for i in 0..40 {
            assert_eq!(topics.partition("t", i).unwrap().log_end_offset(), 1);
        }
    }

    /// Memory storage whose `syncfs` fails: nothing may be taken for durable then.
    #[derive(Debug)]
    struct FailingSyncFs(MemoryStorage);

    impl Storage for FailingSyncFs {
        fn open_file(
            &self,
            path: &Path,
            create: bool,
        ) -> std::io::Result<Box<dyn josef_log::storage::StorageFile>> {
            self.0.open_file(path, create)
        }
        fn open_index(
            &self,
            path: &Path,
        ) -> std::io::Result<(Box<dyn josef_log::storage::IndexFile>, bool)> {
            self.0.open_index(path)
        }
        fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
            self.0.read(path)
        }
        fn write_atomically(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
            self.0.write_atomically(path, bytes)
        }
        fn sync_file_system(&self, _dir: &Path) -> std::io::Result<()> {
            Err(std::io::Error::other("syncfs failed"))
        }
        fn exists(&self, path: &Path) -> bool {
            self.0.exists(path)
        }
        fn is_dir(&self, path: &Path) -> bool {
            self.0.is_dir(path)
        }
        fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
            self.0.rename(from, to)
        }
        fn remove_file(&self, path: &Path) -> std::io::Result<()> {
            self.0.remove_file(path)
        }
        fn create_dir_all(&self, dir: &Path) -> std::io::Result<()> {
            self.0.create_dir_all(dir)
        }
        fn remove_dir_all(&self, dir: &Path) -> std::io::Result<()> {
            self.0.remove_dir_all(dir)
        }
        fn read_dir(&self, dir: &Path) -> std::io::Result<Vec<String>> {
            self.0.read_dir(dir)
        }
        fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
            self.0.sync_dir(dir)
        }
    }

    /// The checkpoints and the marker of a shutdown vouch for logs closed without fsync only
    /// after the `syncfs` of their dir: when it fails, neither is written and the next start
    /// recovers every log from the previous recovery points.
    #[test]
    fn a_failed_syncfs_at_shutdown_leaves_the_dir_to_recovery() {
        let storage: Arc<dyn Storage> = Arc::new(FailingSyncFs(MemoryStorage::new()));
        let config = one_dir(storage.clone());
        let topics = TopicManager::load(config.clone(), None).unwrap();
        topics.create("t", 4, BTreeMap::new()).unwrap();
        for i in 0..4 {
            append_one(&topics, "t", i);
        }
        let rp = Path::new("/josef/a/recovery-point-offset-checkpoint");
        let before = storage.read(rp).ok();
        topics.shutdown();
        assert!(!storage.exists(Path::new("/josef/a/.kafka_cleanshutdown")));
        assert_eq!(
            storage.read(rp).ok(),
            before,
            "recovery points at the LEO unsynced"
        );
        drop(topics);
        let topics = TopicManager::load(config, None).unwrap();
        assert_eq!(all_clean(&topics), vec![false; 4]);
        for i in 0..4 {
            let p = topics.partition("t", i).unwrap();
            assert_eq!(p.log_end_offset(), 1);
            assert!(!p.log_load_report().recovered_segments.is_empty());
        }
    }

    /// The marker vouches for every log of its dir: a partition that could not be closed (still
    /// in use) leaves its dir unmarked, so the next start recovers it.
    #[test]
    fn a_log_dir_with_a_partition_left_open_is_not_marked_clean() {
        let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        let config = one_dir(storage.clone());
        let topics = TopicManager::load(config.clone(), None).unwrap();
        topics.create("t", 4, BTreeMap::new()).unwrap();
        let held = topics.partition("t", 2).unwrap();
        topics.shutdown();
        assert!(!storage.exists(Path::new("/josef/a/.kafka_cleanshutdown")));
        // Its offsets are checkpointed all the same.
        assert!(text(&*storage, "/josef/a/recovery-point-offset-checkpoint").contains("t 2 0"));
        drop(held);
        drop(topics);
        let topics = TopicManager::load(config, None).unwrap();
        assert_eq!(all_clean(&topics), vec![false; 4]);
    }

    /// A data dir written when each partition kept its own checkpoints and marker still opens
    /// (clean where the partition was closed cleanly), and the first start moves them to the
    /// log dir.
    #[test]
    fn a_data_dir_of_the_per_partition_layout_opens_and_is_migrated() {
        let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        let config = Arc::new(BrokerConfig {
            log_dirs: vec!["/josef/a".into()],
            log_storage: LogStorage::Custom(storage.clone()),
            ..BrokerConfig::default()
        });
        let topics = TopicManager::load(config.clone(), None).unwrap();
        topics.create("t", 3, BTreeMap::new()).unwrap();
        topics.shutdown();
        drop(topics);
        // Back to the previous layout: standalone logs closed in each partition directory.
        for f in [
            ".kafka_cleanshutdown",
            "recovery-point-offset-checkpoint",
            "log-start-offset-checkpoint",
        ] {
            storage.remove_file(&Path::new("/josef/a").join(f)).unwrap();
        }
        for i in 0..3 {
            let dir = PathBuf::from(format!("/josef/a/t-{i}"));
            let log = josef_log::Log::open_in(
                storage.clone(),
                &dir,
                josef_log::LogConfig::default(),
                0,
                josef_log::PartitionState::Standalone,
            )
            .unwrap();
            log.close().unwrap();
        }
        // Partition 1 crashed in the old layout: no marker of its own.
        storage
            .remove_file(Path::new("/josef/a/t-1/.kafka_cleanshutdown"))
            .unwrap();
        let topics = TopicManager::load(config.clone(), None).unwrap();
        assert_eq!(all_clean(&topics), vec![true, false, true]);
        assert!(text(&*storage, "/josef/a/recovery-point-offset-checkpoint").starts_with("0\n3\n"));
        for i in 0..3 {
            let dir = PathBuf::from(format!("/josef/a/t-{i}"));
            assert!(!storage.exists(&dir.join(".kafka_cleanshutdown")));
            assert!(!storage.exists(&dir.join("recovery-point-offset-checkpoint")));
        }
        topics.shutdown();
        drop(topics);
        let topics = TopicManager::load(config, None).unwrap();
        assert_eq!(all_clean(&topics), vec![true; 3]);
    }

    /// A deleted topic leaves the log dir's checkpoints at once (Kafka's `asyncDelete`): a topic
    /// created again under its name must not start at the old log start offset after a crash.
    #[test]
    fn a_deleted_topic_leaves_the_checkpoints_at_once() {
        let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        let config = Arc::new(BrokerConfig {
            log_dirs: vec!["/josef/a".into()],
            log_storage: LogStorage::Custom(storage.clone()),
            ..BrokerConfig::default()
        });
        let topics = TopicManager::load(config, None).unwrap();
        topics.create("gone", 2, BTreeMap::new()).unwrap();
        topics.create("kept", 1, BTreeMap::new()).unwrap();
        topics.checkpoint();
        assert!(text(&*storage, "/josef/a/recovery-point-offset-checkpoint").contains("gone 1 0"));
        topics.delete("gone").unwrap();
        assert_eq!(
            text(&*storage, "/josef/a/recovery-point-offset-checkpoint"),
            "0\n1\nkept 0 0\n"
        );
    }
}
