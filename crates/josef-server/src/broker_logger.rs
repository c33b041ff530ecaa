//! Kafka's BROKER_LOGGER config resource (type 8, KIP-412): log levels read with DescribeConfigs
//! and changed with IncrementalAlterConfigs (SET a level, DELETE to fall back to the root's),
//! at once and not kept across a restart, as Kafka's `RuntimeLoggerManager` does.
//!
//! Josef's loggers are tracing targets (module paths such as `josef_server::topics`), `root` the
//! default level. The library keeps the levels; the program that installed the tracing
//! subscriber gives a [`FilterReload`] that turns them into its filter (the broker binary reloads
//! its `EnvFilter`). Without one the levels are refused, as changes that could not be applied.

use std::collections::BTreeMap;
use std::sync::Arc;

use josef_protocol::ErrorCode;
use parking_lot::Mutex;

/// The BROKER_LOGGER config resource type.
pub const BROKER_LOGGER_RESOURCE: i8 = 8;

/// Kafka's name of the default logger.
pub const ROOT_LOGGER: &str = "root";

/// Kafka's valid levels (`LogLevelConfig.VALID_LOG_LEVELS`), sorted as its message lists them.
const VALID_LEVELS: &[&str] = &["DEBUG", "ERROR", "FATAL", "INFO", "TRACE", "WARN"];

/// Makes the subscriber's filter the given directives (`EnvFilter` syntax, e.g.
/// `info,josef_server::topics=debug`); an error leaves the old filter.
pub type FilterReload = Arc<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// The log levels of this broker.
pub struct BrokerLoggers {
    node_id: i32,
    inner: Mutex<Inner>,
}

struct Inner {
    root: String,
    levels: BTreeMap<String, String>,
    reload: Option<FilterReload>,
}

/// One requested change: logger, op (0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT), level.
pub type LoggerOp = (String, i8, Option<String>);

fn tracing_level(kafka_level: &str) -> &'static str {
    match kafka_level {
        "TRACE" => "trace",
        "DEBUG" => "debug",
        "INFO" => "info",
        "WARN" => "warn",
        _ => "error", // ERROR and FATAL
    }
}

/// Whether `name` is a logger of this broker: the root or a Josef module path.
fn exists(name: &str) -> bool {
    name == ROOT_LOGGER
        || (name.starts_with("josef")
            && name
                .split("::")
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')))
}

impl BrokerLoggers {
    /// Root at INFO (the broker binary's default), no filter to reload yet.
    pub fn new(node_id: i32) -> Self {
        BrokerLoggers {
            node_id,
            inner: Mutex::new(Inner {
                root: "INFO".into(),
                levels: BTreeMap::new(),
                reload: None,
            }),
        }
    }

    /// Where level changes go from now on.
    pub fn set_filter_reload(&self, reload: FilterReload) {
        self.inner.lock().reload = Some(reload);
    }

    /// Every logger with a level: the root first, then the ones set.
    pub fn levels(&self) -> Vec<(String, String)> {
        let inner = self.inner.lock();
        std::iter::once((ROOT_LOGGER.to_string(), inner.root.clone()))
            .chain(inner.levels.clone())
            .collect()
    }

    /// Kafka's checks, then (unless `validate_only`) the changes applied.
    pub fn alter(
        &self,
        resource: &str,
        ops: &[LoggerOp],
        validate_only: bool,
    ) -> Result<(), (ErrorCode, String)> {
        let invalid_request = |m: String| (ErrorCode::InvalidRequest, m);
        let id: i32 = resource.parse().map_err(|_| {
            invalid_request(format!("Node id must be an integer, but it is: {resource}"))
        })?;
        if id != self.node_id {
            return Err(invalid_request(format!(
                "Unexpected node id. Expected {}, but received {resource}",
                self.node_id
            )));
        }
        for (name, op, value) in ops {
            let check_exists = || {
                if exists(name) {
                    Ok(())
                } else {
                    Err((
                        ErrorCode::InvalidConfig,
                        format!("Logger {name} does not exist!"),
                    ))
                }
            };
            match op {
                0 => {
                    check_exists()?;
                    let level = value.as_deref().unwrap_or_default();
                    if !VALID_LEVELS.contains(&level) {
                        return Err((
                            ErrorCode::InvalidConfig,
                            format!(
                                "Cannot set the log level of {name} to {level} as it is not a supported log level. Valid log levels are {}",
                                VALID_LEVELS.join(", ")
                            ),
                        ));
                    }
                }
                1 => {
                    check_exists()?;
                    if name == ROOT_LOGGER {
                        return Err(invalid_request(format!(
                            "Removing the log level of the {ROOT_LOGGER} logger is not allowed"
                        )));
                    }
                }
                2 | 3 => {
                    let what = if *op == 2 { "APPEND" } else { "SUBTRACT" };
                    return Err(invalid_request(format!(
                        "{what} operation is not allowed for the BROKER_LOGGER resource"
                    )));
                }
                other => {
                    return Err(invalid_request(format!(
                    "Unknown operation type {other} is not allowed for the BROKER_LOGGER resource"
                )))
                }
            }
        }
        let mut inner = self.inner.lock();
        let Some(reload) = inner.reload.clone() else {
            return Err((
                ErrorCode::InvalidRequest,
                "this broker's log levels cannot be changed at runtime".into(),
            ));
        };
        if validate_only {
            return Ok(());
        }
        let (mut root, mut levels) = (inner.root.clone(), inner.levels.clone());
        for (name, op, value) in ops {
            let level = value.clone().unwrap_or_default();
            match (*op, name.as_str()) {
                (0, ROOT_LOGGER) => root = level,
                (0, _) => {
                    levels.insert(name.clone(), level);
                }
                _ => {
                    levels.remove(name);
                }
            }
        }
        let directives = std::iter::once(tracing_level(&root).to_string())
            .chain(
                levels
                    .iter()
                    .map(|(n, l)| format!("{n}={}", tracing_level(l))),
            )
            .collect::<Vec<_>>()
            .join(",");
        reload(&directives).map_err(|e| (ErrorCode::InvalidConfig, e))?;
        tracing::warn!(%directives, "log levels changed");
        inner.root = root;
        inner.levels = levels;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(name: &str, level: &str) -> LoggerOp {
        (name.into(), 0, Some(level.into()))
    }

    #[test]
    fn levels_become_filter_directives_after_kafkas_checks() {
        let loggers = BrokerLoggers::new(1);
        assert!(
            loggers.alter("1", &[set("root", "DEBUG")], false).is_err(),
            "no filter"
        );
        let seen = Arc::new(Mutex::new(String::new()));
        let s = seen.clone();
        loggers.set_filter_reload(Arc::new(move |d| {
            *s.lock() = d.to_string();
            Ok(())
        }));
        loggers
            .alter(
                "1",
                &[set("josef_server::topics", "DEBUG"), set("root", "WARN")],
                false,
            )
            .unwrap();
        assert_eq!(*seen.lock(), "warn,josef_server::topics=debug");
        loggers
            .alter("1", &[set("josef_log", "TRACE")], true)
            .unwrap();
        assert_eq!(
            *seen.lock(),
            "warn,josef_server::topics=debug",
            "validateOnly"
        );
        loggers
            .alter("1", &[("josef_server::topics".into(), 1, None)], false)
            .unwrap();
        assert_eq!(*seen.lock(), "warn");
        assert_eq!(loggers.levels(), vec![("root".into(), "WARN".into())]);

        let code = |r: Result<(), (ErrorCode, String)>| r.unwrap_err().0;
        assert_eq!(
            code(loggers.alter("2", &[set("root", "INFO")], false)),
            ErrorCode::InvalidRequest
        );
        assert_eq!(
            code(loggers.alter("1", &[set("root", "LOUD")], false)),
            ErrorCode::InvalidConfig
        );
        assert_eq!(
            code(loggers.alter("1", &[set("org.apache", "INFO")], false)),
            ErrorCode::InvalidConfig
        );
        assert_eq!(
            code(loggers.alter("1", &[("root".into(), 1, None)], false)),
            ErrorCode::InvalidRequest
        );
        assert_eq!(
            code(loggers.alter("1", &[("root".into(), 2, Some("INFO".into()))], false)),
            ErrorCode::InvalidRequest
        );
        assert_eq!(*seen.lock(), "warn");
    }
}
