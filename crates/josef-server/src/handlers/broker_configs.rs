//! IncrementalAlterConfigs and AlterConfigs on BROKER resources (Kafka's
//! `ConfigAdminManager.preprocess`): the resource must be `""` (the cluster default) or this
//! broker's id, the resulting configs pass [`crate::dynamic_config::validate`] and, for this
//! broker's own, its TLS stores must load. A single node then appends the ConfigRecords to its
//! local metadata and applies them at once; a cluster node forwards what passed to the controller
//! (the image then brings the change back to every broker).

use std::collections::BTreeMap;

use josef_metadata::MetadataRecord;
use josef_protocol::metadata_records::ConfigRecord;
use josef_protocol::ErrorCode;

use crate::dynamic_config::{self, BROKER_RESOURCE};
use crate::state::BrokerState;
use crate::topic_config::{self, ConfigType};

/// A resource's outcome: done (`Ok`) or the error to answer.
pub type Outcome = Result<(), (ErrorCode, String)>;

/// One requested change: name, op (0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT), value.
pub type Op = (String, i8, Option<String>);

fn invalid_request(m: impl Into<String>) -> (ErrorCode, String) {
    (ErrorCode::InvalidRequest, m.into())
}

/// Broker settings whose values are lists (APPEND and SUBTRACT apply to them only).
fn is_list(name: &str) -> bool {
    topic_config::by_synonym(name).is_some_and(|d| d.kind == ConfigType::List)
        || [
            "listeners",
            "metric.reporters",
            "sasl.enabled.mechanisms",
            "ssl.cipher.suites",
            "ssl.enabled.protocols",
        ]
        .contains(&name)
}

fn items(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The configs `resource` has after `ops` (`replace_all`: AlterConfigs, which drops what it
/// does not name), checked as Kafka checks them before anything is stored.
pub fn preprocess(
    state: &BrokerState,
    resource: &str,
    ops: &[Op],
    replace_all: bool,
) -> Result<BTreeMap<String, String>, (ErrorCode, String)> {
    let per_broker = !resource.is_empty();
    if per_broker {
        let id: i32 = resource.parse().map_err(|_| {
            invalid_request(format!("Node id must be an integer, but it is: {resource}"))
        })?;
        if id != state.config.node_id {
            return Err(invalid_request(format!(
                "Unexpected broker id, expected {}, but received {resource}",
                state.config.node_id
            )));
        }
    }
    let mut names = std::collections::BTreeSet::new();
    if ops.iter().any(|(n, _, _)| !names.insert(n.as_str())) {
        return Err(invalid_request("Error due to duplicate config keys"));
    }
    let nulls: Vec<&str> = ops
        .iter()
        .filter(|(_, op, v)| *op != 1 && v.is_none())
        .map(|(n, _, _)| n.as_str())
        .collect();
    if !nulls.is_empty() {
        return Err(invalid_request(format!(
            "Null value not supported for : {}",
            nulls.join(", ")
        )));
    }
    let mut props = if replace_all {
        BTreeMap::new()
    } else {
        state
            .metadata_image()
            .config(BROKER_RESOURCE, resource)
            .cloned()
            .unwrap_or_default()
    };
    for (name, op, value) in ops {
        let value = value.as_deref().unwrap_or_default();
        match op {
            0 => {
                props.insert(name.clone(), value.to_string());
            }
            1 => {
                props.remove(name);
            }
            2 | 3 => {
                if !is_list(name) {
                    let what = if *op == 2 { "append" } else { "subtract" };
                    return Err((
                        ErrorCode::InvalidConfig,
                        format!("Config value {what} is not allowed for config key: {name}"),
                    ));
                }
                let mut list = props.get(name).map(|v| items(v)).unwrap_or_default();
                for i in items(value) {
                    if *op == 2 && !list.contains(&i) {
                        list.push(i);
                    } else if *op == 3 {
                        list.retain(|x| *x != i);
                    }
                }
                props.insert(name.clone(), list.join(","));
            }
            other => return Err(invalid_request(format!("Unknown operations type {other}"))),
        }
    }
    dynamic_config::validate(&props, per_broker).map_err(invalid_request)?;
    if per_broker {
        state
            .dynamic
            .validate_reconfiguration(&props)
            .map_err(invalid_request)?;
    }
    Ok(props)
}

/// Single node: writes `props` as `resource`'s configs (ConfigRecords for what changed) and
/// applies them.
pub fn store(state: &BrokerState, resource: &str, props: &BTreeMap<String, String>) -> Outcome {
    let Some(local) = &state.local_metadata else {
        return Err((
            ErrorCode::UnknownServerError,
            "no metadata store on this node".into(),
        ));
    };
    let image = local.image();
    let current = image
        .config(BROKER_RESOURCE, resource)
        .cloned()
        .unwrap_or_default();
    let record = |name: &str, value: Option<&String>| {
        MetadataRecord::Config(ConfigRecord {
            resource_type: BROKER_RESOURCE,
            resource_name: resource.to_string().into(),
            name: name.to_string().into(),
            value: value.map(|v| v.clone().into()),
            ..Default::default()
        })
    };
    let mut records: Vec<MetadataRecord> = props
        .iter()
        .filter(|(k, v)| current.get(*k) != Some(*v))
        .map(|(k, v)| record(k, Some(v)))
        .collect();
    records.extend(
        current
            .keys()
            .filter(|k| !props.contains_key(*k))
            .map(|k| record(k, None)),
    );
    let image = if records.is_empty() {
        image
    } else {
        local.append(&records).map_err(|e| {
            tracing::error!(error = %e, "broker configs not written");
            (ErrorCode::UnknownServerError, e.to_string())
        })?
    };
    state.dynamic.apply(&image, &state.topics);
    Ok(())
}

/// Preprocesses and, unless `validate_only`, stores one BROKER resource on a single node.
pub fn alter_single_node(
    state: &BrokerState,
    resource: &str,
    ops: &[Op],
    replace_all: bool,
    validate_only: bool,
) -> Outcome {
    let props = preprocess(state, resource, ops, replace_all)?;
    if validate_only {
        return Ok(());
    }
    store(state, resource, &props)
}
