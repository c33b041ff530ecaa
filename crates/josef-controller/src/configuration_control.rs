//! Kafka's `ConfigurationControlManager`: topic and broker configs kept as ConfigRecords, changed
//! by IncrementalAlterConfigs and AlterConfigs, and the topic configs the controller itself reads
//! (`unclean.leader.election.enable`).

use std::collections::{BTreeMap, BTreeSet};

use josef_protocol::messages::{
    AlterConfigsRequest, AlterConfigsResponse, IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
};
use josef_protocol::{ErrorCode, StrBytes};

use crate::records::{ConfigRecord, MetadataRecord};
use crate::{
    ApiError, Controller, ControllerResult, WriteContext, BROKER_RESOURCE, TOPIC_RESOURCE,
};

/// The topic config (and its broker default) that allows unclean leader election.
pub const UNCLEAN_LEADER_ELECTION_ENABLE: &str = "unclean.leader.election.enable";

/// How a topic config's value is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Boolean,
    Int,
    Long,
    Double,
    List,
    Text,
}

/// Topic config names by type (Kafka's `LogConfig`), as IncrementalAlterConfigs and CreateTopics
/// check them.
const BOOLEAN_CONFIGS: &[&str] = &[
    "message.downconversion.enable",
    "preallocate",
    "remote.log.copy.disable",
    "remote.log.delete.on.disable",
    "remote.storage.enable",
    UNCLEAN_LEADER_ELECTION_ENABLE,
];
const INT_CONFIGS: &[&str] = &[
    "compression.gzip.level",
    "compression.lz4.level",
    "compression.zstd.level",
    "index.interval.bytes",
    "max.message.bytes",
    "min.insync.replicas",
    "segment.bytes",
    "segment.index.bytes",
];
const LONG_CONFIGS: &[&str] = &[
    "delete.retention.ms",
    "file.delete.delay.ms",
    "flush.messages",
    "flush.ms",
    "local.retention.bytes",
    "local.retention.ms",
    "max.compaction.lag.ms",
    "message.timestamp.after.max.ms",
    "message.timestamp.before.max.ms",
    "message.timestamp.difference.max.ms",
    "min.compaction.lag.ms",
    "retention.bytes",
    "retention.ms",
    "segment.jitter.ms",
    "segment.ms",
];
const LIST_CONFIGS: &[&str] = &[
    "cleanup.policy",
    "follower.replication.throttled.replicas",
    "leader.replication.throttled.replicas",
];
const TEXT_CONFIGS: &[&str] = &[
    "compression.type",
    "message.format.version",
    "message.timestamp.type",
];

fn kind_of(name: &str) -> Option<Kind> {
    [
        (BOOLEAN_CONFIGS, Kind::Boolean),
        (INT_CONFIGS, Kind::Int),
        (LONG_CONFIGS, Kind::Long),
        (LIST_CONFIGS, Kind::List),
        (TEXT_CONFIGS, Kind::Text),
        (&["min.cleanable.dirty.ratio"][..], Kind::Double),
    ]
    .into_iter()
    .find(|(names, _)| names.contains(&name))
    .map(|(_, k)| k)
}

/// Checks a topic config: a known name and a value of its type (INVALID_CONFIG otherwise).
pub(crate) fn validate_topic_config(name: &str, value: &str) -> Result<(), ApiError> {
    let invalid = |why: &str| {
        Err(ApiError::new(
            ErrorCode::InvalidConfig,
            format!("Invalid value {value} for configuration {name}: {why}"),
        ))
    };
    let Some(kind) = kind_of(name) else {
        return Err(ApiError::new(
            ErrorCode::InvalidConfig,
            format!("Unknown topic config name: {name}"),
        ));
    };
    let v = value.trim();
    let ok = match kind {
        Kind::Boolean => v.eq_ignore_ascii_case("true") || v.eq_ignore_ascii_case("false"),
        Kind::Int => v.parse::<i32>().is_ok(),
        Kind::Long => v.parse::<i64>().is_ok(),
        Kind::Double => v.parse::<f64>().is_ok_and(f64::is_finite),
        Kind::List | Kind::Text => true,
    };
    if !ok {
        return invalid("not a valid value of its type");
    }
    match name {
        "min.insync.replicas" if v.parse::<i32>().is_ok_and(|n| n < 1) => {
            invalid("must be at least 1")
        }
        "cleanup.policy"
            if !v
                .split(',')
                .map(str::trim)
                .all(|p| p == "compact" || p == "delete" || p.is_empty()) =>
        {
            invalid("String must be one of: compact, delete")
        }
        "compression.type"
            if !["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"].contains(&v) =>
        {
            invalid("String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer")
        }
        "message.timestamp.type" if v != "CreateTime" && v != "LogAppendTime" => {
            invalid("String must be one of: CreateTime, LogAppendTime")
        }
        _ => Ok(()),
    }
}

/// Configs by (resource type, resource name), changed only by replay.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ConfigurationControlManager {
    pub(crate) configs: BTreeMap<(i8, String), BTreeMap<String, String>>,
}

impl ConfigurationControlManager {
    pub(crate) fn get(&self, resource_type: i8, resource: &str, name: &str) -> Option<&str> {
        self.configs
            .get(&(resource_type, resource.to_string()))
            .and_then(|c| c.get(name))
            .map(String::as_str)
    }

    pub(crate) fn replay(&mut self, r: &ConfigRecord) {
        let key = (r.resource_type, r.resource_name.to_string());
        match &r.value {
            Some(v) => {
                self.configs
                    .entry(key)
                    .or_default()
                    .insert(r.name.to_string(), v.to_string());
            }
            None => {
                if let Some(c) = self.configs.get_mut(&key) {
                    c.remove(r.name.as_str());
                    if c.is_empty() {
                        self.configs.remove(&key);
                    }
                }
            }
        }
    }

    pub(crate) fn remove_resource(&mut self, resource_type: i8, resource: &str) {
        self.configs.remove(&(resource_type, resource.to_string()));
    }
}

/// A resource's type, name and error (`None`: done).
type ResourceOutcome = (i8, StrBytes, Option<ApiError>);

/// The per-resource responses of both AlterConfigs APIs (same fields, distinct generated types).
macro_rules! resource_responses {
    ($results:expr, $response:ident) => {
        $results
            .into_iter()
            .map(
                |(resource_type, resource_name, e): ResourceOutcome| $response {
                    error_code: e.as_ref().map_or(0, ApiError::code),
                    error_message: e.map(|e| e.message.into()),
                    resource_type,
                    resource_name,
                    ..Default::default()
                },
            )
            .collect()
    };
}

/// One resource's requested changes: (name, op, value); op 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT.
type Changes<'a> = Vec<(&'a StrBytes, i8, Option<&'a StrBytes>)>;

impl Controller {
    /// Kafka's `uncleanLeaderElectionEnabledForTopic`: the topic's config, else the cluster-wide
    /// broker default (resource ""), else `unclean.leader.election.enable` of the config.
    pub(crate) fn unclean_leader_election_enabled(&self, topic: &str) -> bool {
        let c = &self.configs;
        c.get(TOPIC_RESOURCE, topic, UNCLEAN_LEADER_ELECTION_ENABLE)
            .or_else(|| c.get(BROKER_RESOURCE, "", UNCLEAN_LEADER_ELECTION_ENABLE))
            .map_or(self.config.unclean_leader_election_enable, |v| {
                v.trim().eq_ignore_ascii_case("true")
            })
    }

    fn check_resource(&self, resource_type: i8, name: &str) -> Result<(), ApiError> {
        match resource_type {
            TOPIC_RESOURCE => {
                if self.replication.by_name.contains_key(name) {
                    Ok(())
                } else {
                    Err(ApiError::new(
                        ErrorCode::UnknownTopicOrPartition,
                        format!("The topic '{name}' does not exist."),
                    ))
                }
            }
            BROKER_RESOURCE => {
                if name.is_empty() || name.parse::<i32>().is_ok_and(|id| id >= 0) {
                    Ok(())
                } else {
                    Err(ApiError::new(
                        ErrorCode::InvalidRequest,
                        format!("Invalid broker name {name}"),
                    ))
                }
            }
            t => Err(ApiError::new(
                ErrorCode::InvalidRequest,
                format!("Unsupported resource type {t}"),
            )),
        }
    }

    /// The records that bring one resource from its configs to `wanted` (only changed keys).
    fn config_records(
        &self,
        resource_type: i8,
        resource: &StrBytes,
        wanted: &BTreeMap<String, Option<String>>,
        records: &mut Vec<MetadataRecord>,
    ) {
        for (k, v) in wanted {
            if self.configs.get(resource_type, resource, k) != v.as_deref() {
                records.push(MetadataRecord::Config(ConfigRecord {
                    resource_type,
                    resource_name: resource.clone(),
                    name: k.as_str().into(),
                    value: v.as_deref().map(Into::into),
                    ..Default::default()
                }));
            }
        }
    }

    /// The new values of one resource's changed keys (`None` = deleted), Kafka's
    /// `incrementalAlterConfigResource` and `legacyAlterConfigResource`.
    fn resolve_changes(
        &self,
        resource_type: i8,
        resource: &str,
        changes: &Changes<'_>,
    ) -> Result<BTreeMap<String, Option<String>>, ApiError> {
        self.check_resource(resource_type, resource)?;
        let mut names = BTreeSet::new();
        let mut wanted = BTreeMap::new();
        for &(name, op, value) in changes {
            if !names.insert(name.as_str()) {
                return Err(ApiError::new(
                    ErrorCode::InvalidRequest,
                    format!("Error due to duplicate config keys: {name}"),
                ));
            }
            if op != 1 && value.is_none() {
                return Err(ApiError::new(
                    ErrorCode::InvalidRequest,
                    format!("Null value not supported for : {name}"),
                ));
            }
            let topic = resource_type == TOPIC_RESOURCE;
            let kind = if topic {
                Some(kind_of(name).ok_or_else(|| {
                    ApiError::new(
                        ErrorCode::InvalidConfig,
                        format!("Unknown topic config name: {name}"),
                    )
                })?)
            } else {
                None
            };
            let current = self.configs.get(resource_type, resource, name);
            let list_op = |op: &str| {
                if kind != Some(Kind::List) && topic {
                    return Err(ApiError::new(
                        ErrorCode::InvalidConfig,
                        format!("Config value {op} is not allowed for config key {name}, the config is not a list"),
                    ));
                }
                let base = current.unwrap_or(if name.as_str() == "cleanup.policy" {
                    "delete"
                } else {
                    ""
                });
                Ok(base
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect::<Vec<_>>())
            };
            let items = |v: Option<&StrBytes>| -> Vec<String> {
                v.map_or("", |s| s.as_str())
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            };
            let new_value = match op {
                0 => value.map(|v| v.to_string()),
                1 => None,
                2 => {
                    let mut list = list_op("APPEND")?;
                    for i in items(value) {
                        if !list.contains(&i) {
                            list.push(i);
                        }
                    }
                    Some(list.join(","))
                }
                3 => {
                    let drop = items(value);
                    let list: Vec<String> = list_op("SUBTRACT")?
                        .into_iter()
                        .filter(|i| !drop.contains(i))
                        .collect();
                    Some(list.join(","))
                }
                other => {
                    return Err(ApiError::new(
                        ErrorCode::InvalidRequest,
                        format!("Unknown config operation {other}"),
                    ))
                }
            };
            if let (true, Some(v)) = (topic, &new_value) {
                validate_topic_config(name, v)?;
            }
            wanted.insert(name.to_string(), new_value);
        }
        Ok(wanted)
    }

    fn alter_resources<'a>(
        &self,
        resources: impl Iterator<Item = (i8, &'a StrBytes, Changes<'a>)>,
        legacy: bool,
        validate_only: bool,
    ) -> (Vec<MetadataRecord>, Vec<ResourceOutcome>) {
        let resources: Vec<_> = resources.collect();
        if let Err(e) = self.check_active() {
            let failed = resources
                .iter()
                .map(|(t, n, _)| (*t, (*n).clone(), Some(e.clone())))
                .collect();
            return (Vec::new(), failed);
        }
        let mut counts: BTreeMap<(i8, &str), usize> = BTreeMap::new();
        for (t, n, _) in &resources {
            *counts.entry((*t, n.as_str())).or_default() += 1;
        }
        let mut records = Vec::new();
        let mut results = Vec::new();
        for (t, name, changes) in &resources {
            let outcome = if counts[&(*t, name.as_str())] > 1 {
                Err(ApiError::new(
                    ErrorCode::InvalidRequest,
                    "Each resource must appear at most once.",
                ))
            } else {
                self.resolve_changes(*t, name, changes).map(|mut wanted| {
                    if legacy {
                        // AlterConfigs replaces the whole set: what is not named goes.
                        if let Some(existing) = self.configs.configs.get(&(*t, name.to_string())) {
                            for k in existing.keys() {
                                wanted.entry(k.clone()).or_insert(None);
                            }
                        }
                    }
                    wanted
                })
            };
            match outcome {
                Ok(wanted) => {
                    if !validate_only {
                        self.config_records(*t, name, &wanted, &mut records);
                    }
                    results.push((*t, (*name).clone(), None));
                }
                Err(e) => results.push((*t, (*name).clone(), Some(e))),
            }
        }
        (records, results)
    }

    /// IncrementalAlterConfigs (API 44) for topic (2) and broker (4, name "" = cluster default)
    /// resources: ops SET, DELETE, APPEND, SUBTRACT (the last two on list configs only, else
    /// INVALID_CONFIG). INVALID_REQUEST for a resource named twice, a key named twice, a null value
    /// outside DELETE, an unknown op or resource type; INVALID_CONFIG for an unknown topic config or
    /// a bad value; UNKNOWN_TOPIC_OR_PARTITION for an unknown topic. Broker config names are not
    /// checked here (the broker owns their validation). A ConfigRecord per changed key.
    pub fn incremental_alter_configs(
        &mut self,
        _ctx: WriteContext,
        req: &IncrementalAlterConfigsRequest,
    ) -> ControllerResult<IncrementalAlterConfigsResponse> {
        use josef_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse as R;
        let (records, results) = self.alter_resources(
            req.resources.iter().map(|r| {
                let changes = r
                    .configs
                    .iter()
                    .map(|c| (&c.name, c.config_operation, c.value.as_ref()))
                    .collect();
                (r.resource_type, &r.resource_name, changes)
            }),
            false,
            req.validate_only,
        );
        let responses = resource_responses!(results, R);
        ControllerResult::of(
            records,
            IncrementalAlterConfigsResponse {
                responses,
                ..Default::default()
            },
        )
    }

    /// AlterConfigs (API 33, the legacy whole-set replacement): the named keys are set, every other
    /// key of the resource is deleted. Errors as [`incremental_alter_configs`](Self::incremental_alter_configs)
    /// (a null value is INVALID_REQUEST).
    pub fn alter_configs(
        &mut self,
        _ctx: WriteContext,
        req: &AlterConfigsRequest,
    ) -> ControllerResult<AlterConfigsResponse> {
        use josef_protocol::messages::alter_configs_response::AlterConfigsResourceResponse as R;
        let (records, results) = self.alter_resources(
            req.resources.iter().map(|r| {
                let changes = r.configs.iter().map(|c| (&c.name, 0, c.value.as_ref()));
                (r.resource_type, &r.resource_name, changes.collect())
            }),
            true,
            req.validate_only,
        );
        ControllerResult::of(
            records,
            AlterConfigsResponse {
                responses: resource_responses!(results, R),
                ..Default::default()
            },
        )
    }
}
