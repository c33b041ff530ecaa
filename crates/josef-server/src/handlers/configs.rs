//! DescribeConfigs (32), IncrementalAlterConfigs (44) and AlterConfigs (33). Topics on a single
//! node are altered here; BROKER resources go through [`super::broker_configs`] (checked here,
//! then stored locally or forwarded); a cluster node forwards topic changes to the controller.
//! Described values carry Kafka's source: topic override, dynamic per-broker, dynamic cluster
//! default, static.

use std::collections::{BTreeMap, HashSet};

use josef_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use josef_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use josef_protocol::messages::*;
use josef_protocol::{ErrorCode, StrBytes};

use super::broker_configs;
use crate::broker_logger::BROKER_LOGGER_RESOURCE;
use crate::cluster::ClusterNode;
use crate::dynamic_config;
use crate::state::BrokerState;
use crate::topic_config::{self, ConfigType};
use crate::topics::validate_topic_name;

const RESOURCE_TOPIC: i8 = 2;
const RESOURCE_BROKER: i8 = 4;
const SOURCE_TOPIC_CONFIG: i8 = 1;
const SOURCE_STATIC_BROKER_CONFIG: i8 = 4;
/// Kafka's DYNAMIC_BROKER_CONFIG (set for this broker in the metadata log).
const SOURCE_DYNAMIC_BROKER_CONFIG: i8 = 2;
/// Kafka's DYNAMIC_DEFAULT_BROKER_CONFIG (set for every broker in the metadata log).
const SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG: i8 = 3;
const SOURCE_DEFAULT_CONFIG: i8 = 5;

fn s(v: impl Into<String>) -> StrBytes {
    StrBytes::from(v.into())
}

fn describe_topic(
    state: &BrokerState,
    name: &str,
    keys: Option<&Vec<StrBytes>>,
    include_synonyms: bool,
    version: i16,
) -> Result<Vec<DescribeConfigsResourceResult>, (ErrorCode, String)> {
    validate_topic_name(name).map_err(|e| (e.code, e.message))?;
    let topic = state.topics.get(name).ok_or((
        ErrorCode::UnknownTopicOrPartition,
        format!("Topic {name} does not exist"),
    ))?;
    let layers = dynamic_config::Layers::of(&state.metadata_image(), state.config.node_id);
    let mut out = Vec::new();
    for d in topic_config::TOPIC_CONFIGS {
        if let Some(keys) = keys {
            if !keys.iter().any(|k| k.as_str() == d.name) {
                continue;
            }
        }
        let over = topic.configs.get(d.name);
        let default = topic_config::default_value(d.name, &state.config);
        // The broker synonym's dynamic values, this broker's own first (Kafka's order).
        let dynamic: Vec<(&str, &str, i8)> = d
            .synonym
            .map(|syn| {
                [
                    (layers.per_broker.get(syn), SOURCE_DYNAMIC_BROKER_CONFIG),
                    (
                        layers.cluster_default.get(syn),
                        SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG,
                    ),
                ]
                .into_iter()
                .filter_map(|(v, src)| Some((syn, v?.as_str(), src)))
                .collect()
            })
            .unwrap_or_default();
        let (value, source) = match (over, dynamic.first()) {
            (Some(v), _) => (v.clone(), SOURCE_TOPIC_CONFIG),
            (None, Some((_, v, src))) => (v.to_string(), *src),
            (None, None) => (default.clone(), SOURCE_DEFAULT_CONFIG),
        };
        let mut synonyms = Vec::new();
        if include_synonyms {
            if let Some(v) = over {
                synonyms.push(DescribeConfigsSynonym {
                    name: s(d.name),
                    value: Some(s(v.clone())),
                    source: SOURCE_TOPIC_CONFIG,
                    ..Default::default()
                });
            }
            for (syn, v, src) in &dynamic {
                synonyms.push(DescribeConfigsSynonym {
                    name: s(*syn),
                    value: Some(s(*v)),
                    source: *src,
                    ..Default::default()
                });
            }
            if let Some(syn) = d.synonym {
                synonyms.push(DescribeConfigsSynonym {
                    name: s(syn),
                    value: Some(s(default)),
                    source: SOURCE_DEFAULT_CONFIG,
                    ..Default::default()
                });
            }
        }
        out.push(DescribeConfigsResourceResult {
            name: s(d.name),
            value: Some(s(value)),
            read_only: false,
            is_default: version == 0 && source == SOURCE_DEFAULT_CONFIG,
            config_source: source,
            is_sensitive: false,
            synonyms,
            config_type: d.kind as i8,
            documentation: None,
            ..Default::default()
        });
    }
    Ok(out)
}

fn broker_configs(state: &BrokerState) -> Vec<(&'static str, String, ConfigType)> {
    let c = &state.config;
    let mut v = vec![
        ("node.id", c.node_id.to_string(), ConfigType::Int),
        ("broker.id", c.node_id.to_string(), ConfigType::Int),
        (
            "num.partitions",
            c.num_partitions.to_string(),
            ConfigType::Int,
        ),
        (
            "default.replication.factor",
            c.default_replication_factor.to_string(),
            ConfigType::Int,
        ),
        (
            "auto.create.topics.enable",
            c.auto_create_topics_enable.to_string(),
            ConfigType::Boolean,
        ),
        (
            "delete.topic.enable",
            c.delete_topic_enable.to_string(),
            ConfigType::Boolean,
        ),
        (
            "log.dirs",
            c.log_dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(","),
            ConfigType::String,
        ),
        (
            "socket.request.max.bytes",
            c.socket_request_max_bytes.to_string(),
            ConfigType::Int,
        ),
        (
            "fetch.max.bytes",
            c.fetch_max_bytes.to_string(),
            ConfigType::Int,
        ),
        (
            "offsets.topic.num.partitions",
            c.offsets_topic_num_partitions.to_string(),
            ConfigType::Int,
        ),
        (
            "transaction.state.log.num.partitions",
            c.transaction_state_log_num_partitions.to_string(),
            ConfigType::Int,
        ),
    ];
    for d in topic_config::TOPIC_CONFIGS {
        if let Some(syn) = d.synonym {
            if !v.iter().any(|(n, _, _)| *n == syn) {
                v.push((
                    syn,
                    topic_config::default_value(d.name, &state.config),
                    d.kind,
                ));
            }
        }
    }
    v
}

/// Broker configs set dynamically (IncrementalAlterConfigs / AlterConfigs on a BROKER resource,
/// kept in the metadata log or a single node's metadata store) replace the static values: this
/// broker's own over the cluster-wide defaults (empty resource name).
fn overlay_dynamic_broker_configs(
    state: &BrokerState,
    out: &mut Vec<DescribeConfigsResourceResult>,
    wanted: &dyn Fn(&str) -> bool,
) {
    let image = state.metadata_image();
    let id = state.config.node_id.to_string();
    let layers = [
        (
            image.config(RESOURCE_BROKER, ""),
            SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG,
        ),
        (
            image.config(RESOURCE_BROKER, &id),
            SOURCE_DYNAMIC_BROKER_CONFIG,
        ),
    ];
    for (configs, source) in layers {
        for (k, v) in configs.into_iter().flatten() {
            if !wanted(k) {
                continue;
            }
            match out.iter_mut().find(|c| c.name.as_str() == k) {
                Some(c) => {
                    c.value = Some(s(v.as_str()));
                    c.config_source = source;
                }
                None => out.push(DescribeConfigsResourceResult {
                    name: s(k.as_str()),
                    value: Some(s(v.as_str())),
                    read_only: false,
                    config_source: source,
                    ..Default::default()
                }),
            }
        }
    }
}

/// Kafka's DYNAMIC_BROKER_LOGGER_CONFIG.
const SOURCE_DYNAMIC_BROKER_LOGGER_CONFIG: i8 = 6;

/// The BROKER_LOGGER resource: every logger with a level.
fn describe_loggers(
    state: &BrokerState,
    name: &str,
) -> Result<Vec<DescribeConfigsResourceResult>, (ErrorCode, String)> {
    if name != state.config.node_id.to_string() {
        return Err((
            ErrorCode::InvalidRequest,
            format!("Unexpected broker id {name}"),
        ));
    }
    Ok(state
        .loggers
        .levels()
        .into_iter()
        .map(|(logger, level)| DescribeConfigsResourceResult {
            name: s(logger),
            value: Some(s(level)),
            config_source: SOURCE_DYNAMIC_BROKER_LOGGER_CONFIG,
            config_type: ConfigType::String as i8,
            ..Default::default()
        })
        .collect())
}

/// DescribeConfigs.
pub fn describe(
    state: &BrokerState,
    req: DescribeConfigsRequest,
    version: i16,
) -> DescribeConfigsResponse {
    let results = req
        .resources
        .iter()
        .map(|r| {
            let mut res = DescribeConfigsResult {
                resource_type: r.resource_type,
                resource_name: r.resource_name.clone(),
                ..Default::default()
            };
            let outcome = match r.resource_type {
                RESOURCE_TOPIC => describe_topic(
                    state,
                    &r.resource_name,
                    r.configuration_keys.as_ref(),
                    req.include_synonyms,
                    version,
                ),
                RESOURCE_BROKER => {
                    let id_ok = r.resource_name.is_empty()
                        || r.resource_name.as_str() == state.config.node_id.to_string();
                    if id_ok {
                        let wanted = |n: &str| {
                            r.configuration_keys
                                .as_ref()
                                .map_or(true, |ks| ks.iter().any(|k| k.as_str() == n))
                        };
                        let mut out: Vec<DescribeConfigsResourceResult> = broker_configs(state)
                            .into_iter()
                            .filter(|(n, _, _)| wanted(n))
                            .map(|(n, v, kind)| DescribeConfigsResourceResult {
                                name: s(n),
                                value: Some(s(v)),
                                read_only: !dynamic_config::is_dynamic(n),
                                config_source: SOURCE_STATIC_BROKER_CONFIG,
                                config_type: kind as i8,
                                ..Default::default()
                            })
                            .collect();
                        overlay_dynamic_broker_configs(state, &mut out, &wanted);
                        Ok(out)
                    } else {
                        Err((
                            ErrorCode::InvalidRequest,
                            format!("Unexpected broker id {}", r.resource_name),
                        ))
                    }
                }
                BROKER_LOGGER_RESOURCE => describe_loggers(state, &r.resource_name),
                _ => Err((
                    ErrorCode::InvalidRequest,
                    format!("Unsupported resource type {}", r.resource_type),
                )),
            };
            match outcome {
                Ok(configs) => res.configs = configs,
                Err((code, msg)) => {
                    res.error_code = code.code();
                    res.error_message = Some(s(msg));
                }
            }
            res
        })
        .collect();
    DescribeConfigsResponse {
        results,
        ..Default::default()
    }
}

fn apply_topic_ops(
    state: &BrokerState,
    name: &str,
    ops: &[(String, i8, Option<String>)],
    replace_all: bool,
    validate_only: bool,
) -> Result<(), (ErrorCode, String)> {
    validate_topic_name(name).map_err(|e| (e.code, e.message))?;
    let topic = state.topics.get(name).ok_or((
        ErrorCode::UnknownTopicOrPartition,
        format!("Topic {name} does not exist"),
    ))?;
    let mut seen = HashSet::new();
    let mut configs: BTreeMap<String, String> = if replace_all {
        BTreeMap::new()
    } else {
        topic.configs.clone()
    };
    for (key, op, value) in ops {
        if !seen.insert(key.clone()) {
            return Err((
                ErrorCode::InvalidRequest,
                format!("Duplicate config key {key}"),
            ));
        }
        let def = topic_config::lookup(key).ok_or((
            ErrorCode::InvalidConfig,
            format!("Unknown topic config name: {key}"),
        ))?;
        match op {
            0 => {
                let v = value
                    .clone()
                    .ok_or((ErrorCode::InvalidRequest, format!("Null value for {key}")))?;
                topic_config::validate(key, &v).map_err(|m| (ErrorCode::InvalidConfig, m))?;
                configs.insert(key.clone(), v);
            }
            1 => {
                configs.remove(key);
            }
            2 | 3 => {
                if def.kind != ConfigType::List {
                    return Err((
                        ErrorCode::InvalidConfig,
                        format!("Config {key} is not a list"),
                    ));
                }
                let v = value
                    .clone()
                    .ok_or((ErrorCode::InvalidRequest, format!("Null value for {key}")))?;
                let current = configs
                    .get(key)
                    .cloned()
                    .unwrap_or_else(|| topic_config::default_value(key, &state.config));
                let mut items: Vec<String> = current
                    .split(',')
                    .map(|x| x.trim().to_string())
                    .filter(|x| !x.is_empty())
                    .collect();
                for item in v
                    .split(',')
                    .map(|x| x.trim().to_string())
                    .filter(|x| !x.is_empty())
                {
                    if *op == 2 {
                        if !items.contains(&item) {
                            items.push(item);
                        }
                    } else {
                        items.retain(|x| *x != item);
                    }
                }
                let joined = items.join(",");
                topic_config::validate(key, &joined).map_err(|m| (ErrorCode::InvalidConfig, m))?;
                configs.insert(key.clone(), joined);
            }
            _ => return Err((ErrorCode::InvalidRequest, format!("Unknown operation {op}"))),
        }
    }
    if validate_only {
        return Ok(());
    }
    state
        .topics
        .set_configs(name, configs)
        .map_err(|e| (e.code, e.message))
}

fn result(
    resource_type: i8,
    resource_name: StrBytes,
    r: Result<(), (ErrorCode, String)>,
) -> AlterConfigsResourceResponse {
    let (code, msg) = match r {
        Ok(()) => (0, None),
        Err((c, m)) => (c.code(), Some(s(m))),
    };
    AlterConfigsResourceResponse {
        error_code: code,
        error_message: msg,
        resource_type,
        resource_name,
        ..Default::default()
    }
}

fn unsupported(t: i8) -> Result<(), (ErrorCode, String)> {
    Err((
        ErrorCode::InvalidRequest,
        format!("Unknown resource type {t}"),
    ))
}

/// One resource's changes as (name, op, value); AlterConfigs' are all SET.
fn incremental_ops(r: &IncrementalAlterConfigsResource) -> Vec<broker_configs::Op> {
    r.configs
        .iter()
        .map(|c| {
            (
                c.name.to_string(),
                c.config_operation,
                c.value.as_ref().map(|v| v.to_string()),
            )
        })
        .collect()
}

fn legacy_ops(r: &LegacyAlterConfigsResource) -> Vec<broker_configs::Op> {
    r.configs
        .iter()
        .map(|c| {
            (
                c.name.to_string(),
                0i8,
                c.value.as_ref().map(|v| v.to_string()),
            )
        })
        .collect()
}

type IncrementalAlterConfigsResource =
    josef_protocol::messages::incremental_alter_configs_request::AlterConfigsResource;
type LegacyAlterConfigsResource =
    josef_protocol::messages::alter_configs_request::AlterConfigsResource;
type LegacyResourceResponse =
    josef_protocol::messages::alter_configs_response::AlterConfigsResourceResponse;

fn legacy_result(x: AlterConfigsResourceResponse) -> LegacyResourceResponse {
    LegacyResourceResponse {
        error_code: x.error_code,
        error_message: x.error_message,
        resource_type: x.resource_type,
        resource_name: x.resource_name,
        ..Default::default()
    }
}

/// Cluster node: BROKER resources are checked here (Kafka's `ConfigAdminManager.preprocess`),
/// the rest, and the BROKER resources that passed, go to the controller; the answers come back
/// in the request's order.
pub async fn incremental_alter_cluster(
    state: &BrokerState,
    node: &ClusterNode,
    req: IncrementalAlterConfigsRequest,
    version: i16,
) -> IncrementalAlterConfigsResponse {
    let mut refused = BTreeMap::new();
    // Log levels are this broker's alone: set here, never forwarded (Kafka's preprocess).
    let mut loggers = BTreeMap::new();
    for r in &req.resources {
        if r.resource_type == RESOURCE_BROKER {
            if let Err(e) =
                broker_configs::preprocess(state, &r.resource_name, &incremental_ops(r), false)
            {
                refused.insert(r.resource_name.to_string(), e);
            }
        } else if r.resource_type == BROKER_LOGGER_RESOURCE {
            let outcome =
                state
                    .loggers
                    .alter(&r.resource_name, &incremental_ops(r), req.validate_only);
            loggers.insert(r.resource_name.to_string(), outcome);
        }
    }
    let mut forwarded = req.clone();
    forwarded.resources.retain(|r| {
        r.resource_type != BROKER_LOGGER_RESOURCE
            && (r.resource_type != RESOURCE_BROKER
                || !refused.contains_key(r.resource_name.as_str()))
    });
    let mut answers = BTreeMap::new();
    if !forwarded.resources.is_empty() {
        let body = josef_protocol::RequestBody::IncrementalAlterConfigs(forwarded);
        if let josef_protocol::ResponseBody::IncrementalAlterConfigs(r) =
            super::cluster::forward(node, body, version).await
        {
            for x in r.responses {
                answers.insert((x.resource_type, x.resource_name.to_string()), x);
            }
        }
    }
    let responses = req
        .resources
        .iter()
        .map(|r| {
            let key = (r.resource_type, r.resource_name.to_string());
            if r.resource_type == BROKER_LOGGER_RESOURCE {
                let outcome = loggers
                    .get(r.resource_name.as_str())
                    .cloned()
                    .unwrap_or(Ok(()));
                return result(r.resource_type, r.resource_name.clone(), outcome);
            }
            match refused.get(r.resource_name.as_str()) {
                Some(e) if r.resource_type == RESOURCE_BROKER => {
                    result(r.resource_type, r.resource_name.clone(), Err(e.clone()))
                }
                _ => answers.remove(&key).unwrap_or_else(|| {
                    result(
                        r.resource_type,
                        r.resource_name.clone(),
                        Err((
                            ErrorCode::UnknownServerError,
                            "no answer from the controller".into(),
                        )),
                    )
                }),
            }
        })
        .collect();
    IncrementalAlterConfigsResponse {
        responses,
        ..Default::default()
    }
}

/// [`incremental_alter_cluster`] for the legacy AlterConfigs.
pub async fn alter_cluster(
    state: &BrokerState,
    node: &ClusterNode,
    req: AlterConfigsRequest,
    version: i16,
) -> AlterConfigsResponse {
    let mut refused = BTreeMap::new();
    for r in &req.resources {
        if r.resource_type == RESOURCE_BROKER {
            if let Err(e) =
                broker_configs::preprocess(state, &r.resource_name, &legacy_ops(r), true)
            {
                refused.insert(r.resource_name.to_string(), e);
            }
        }
    }
    let mut forwarded = req.clone();
    forwarded.resources.retain(|r| {
        r.resource_type != RESOURCE_BROKER || !refused.contains_key(r.resource_name.as_str())
    });
    let mut answers = BTreeMap::new();
    if !forwarded.resources.is_empty() {
        let body = josef_protocol::RequestBody::AlterConfigs(forwarded);
        if let josef_protocol::ResponseBody::AlterConfigs(r) =
            super::cluster::forward(node, body, version).await
        {
            for x in r.responses {
                answers.insert((x.resource_type, x.resource_name.to_string()), x);
            }
        }
    }
    let responses = req
        .resources
        .iter()
        .map(|r| {
            let key = (r.resource_type, r.resource_name.to_string());
            match refused.get(r.resource_name.as_str()) {
                Some(e) if r.resource_type == RESOURCE_BROKER => legacy_result(result(
                    r.resource_type,
                    r.resource_name.clone(),
                    Err(e.clone()),
                )),
                _ => answers.remove(&key).unwrap_or_else(|| {
                    legacy_result(result(
                        r.resource_type,
                        r.resource_name.clone(),
                        Err((
                            ErrorCode::UnknownServerError,
                            "no answer from the controller".into(),
                        )),
                    ))
                }),
            }
        })
        .collect();
    AlterConfigsResponse {
        responses,
        ..Default::default()
    }
}

/// IncrementalAlterConfigs.
pub fn incremental_alter(
    state: &BrokerState,
    req: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let mut seen = HashSet::new();
    let responses = req
        .resources
        .iter()
        .map(|r| {
            let outcome = if !seen.insert((r.resource_type, r.resource_name.to_string())) {
                Err((ErrorCode::InvalidRequest, "Duplicate resource".into()))
            } else if r.resource_type == RESOURCE_TOPIC {
                let ops = incremental_ops(r);
                apply_topic_ops(state, &r.resource_name, &ops, false, req.validate_only)
            } else if r.resource_type == RESOURCE_BROKER {
                broker_configs::alter_single_node(
                    state,
                    &r.resource_name,
                    &incremental_ops(r),
                    false,
                    req.validate_only,
                )
            } else if r.resource_type == BROKER_LOGGER_RESOURCE {
                state
                    .loggers
                    .alter(&r.resource_name, &incremental_ops(r), req.validate_only)
            } else {
                unsupported(r.resource_type)
            };
            result(r.resource_type, r.resource_name.clone(), outcome)
        })
        .collect();
    IncrementalAlterConfigsResponse {
        responses,
        ..Default::default()
    }
}

/// AlterConfigs (legacy: replaces every override of the resource).
pub fn alter(state: &BrokerState, req: AlterConfigsRequest) -> AlterConfigsResponse {
    let responses = req
        .resources
        .iter()
        .map(|r| {
            let outcome = if r.resource_type == RESOURCE_TOPIC {
                apply_topic_ops(
                    state,
                    &r.resource_name,
                    &legacy_ops(r),
                    true,
                    req.validate_only,
                )
            } else if r.resource_type == RESOURCE_BROKER {
                broker_configs::alter_single_node(
                    state,
                    &r.resource_name,
                    &legacy_ops(r),
                    true,
                    req.validate_only,
                )
            } else {
                unsupported(r.resource_type)
            };
            legacy_result(result(r.resource_type, r.resource_name.clone(), outcome))
        })
        .collect();
    AlterConfigsResponse {
        responses,
        ..Default::default()
    }
}
