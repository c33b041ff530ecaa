//! Typed settings over a properties map, shared by every crate that reads its own part of a Kafka
//! broker configuration: [`Props`] and the errors and warnings a configuration can give.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

/// A configuration problem that stops the broker from starting.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The properties file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The properties file is malformed (a bad `\uXXXX` escape: nothing else is).
    #[error("{path}:{line}: malformed \\uxxxx escape")]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
    },
    /// Names that are not Kafka broker settings.
    #[error("{}", UnknownList(.0))]
    Unknown(Vec<UnknownSetting>),
    /// A value that does not parse or is out of range.
    #[error("invalid value `{value}` for `{key}`: {reason}")]
    Invalid {
        /// The key.
        key: String,
        /// The value as given.
        value: String,
        /// Why it is rejected.
        reason: String,
    },
}

/// A setting name that Kafka does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownSetting {
    /// The name as given.
    pub key: String,
    /// The closest Kafka name, when one is close enough to be the intended one.
    pub suggestion: Option<String>,
}

impl fmt::Display for UnknownSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown setting `{}` (not a Kafka broker setting)",
            self.key
        )?;
        if let Some(s) = &self.suggestion {
            write!(f, "; did you mean `{s}`?")?;
        }
        Ok(())
    }
}

struct UnknownList<'a>(&'a [UnknownSetting]);

impl fmt::Display for UnknownList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, u) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{u}")?;
        }
        Ok(())
    }
}

/// Something about the configuration worth one line at start, but not worth refusing to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigWarning {
    /// A Kafka broker setting that has no effect in Josef.
    NotUsed {
        /// The setting as given.
        key: String,
        /// Why it has no effect.
        reason: &'static str,
    },
    /// A spelling Kafka does not have, found in guides; its value is applied as `real`.
    OldSpelling {
        /// The spelling given.
        key: String,
        /// Kafka's name, under which the value is applied.
        real: &'static str,
    },
    /// A synonym that loses to another one also given (`log.dir` to `log.dirs`).
    Shadowed {
        /// The setting that is ignored.
        key: String,
        /// The setting that wins.
        by: &'static str,
    },
}

impl ConfigWarning {
    /// The setting the warning is about.
    pub fn key(&self) -> &str {
        match self {
            ConfigWarning::NotUsed { key, .. }
            | ConfigWarning::OldSpelling { key, .. }
            | ConfigWarning::Shadowed { key, .. } => key,
        }
    }
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigWarning::NotUsed { key, reason } => {
                write!(
                    f,
                    "setting `{key}` is not used by Josef ({reason}); it has no effect"
                )
            }
            ConfigWarning::OldSpelling { key, real } => {
                write!(
                    f,
                    "setting `{key}` is not Kafka's name; applied as `{real}`"
                )
            }
            ConfigWarning::Shadowed { key, by } => {
                write!(f, "setting `{key}` is ignored: `{by}` is also set and wins")
            }
        }
    }
}

/// Consumes typed settings from a `key → value` map (Kafka's `ConfigDef` parsing: values trimmed,
/// numbers with a minimum, booleans, choices). Each library crate reads its own settings from it
/// (e.g. the authorizer's, the quota windows); what no one takes is left for the caller to report
/// ([`Props::into_remaining_keys`]).
///
/// ```
/// use std::collections::BTreeMap;
/// let mut p = josef_config::settings::Props::new(BTreeMap::from([
///     ("num.partitions".to_string(), " 3 ".to_string()),
///     ("log.cleaner.enable".to_string(), "yes".to_string()),
/// ]));
/// assert_eq!(p.num("num.partitions", 1, 1).unwrap(), 3);
/// assert!(p.boolean("log.cleaner.enable", true).is_err());
/// assert_eq!(p.into_remaining_keys().count(), 0);
/// ```
pub struct Props {
    map: BTreeMap<String, String>,
}

impl Props {
    /// Kafka's `ConfigDef` trims every value before parsing it.
    pub fn new(map: BTreeMap<String, String>) -> Self {
        Props {
            map: map
                .into_iter()
                .map(|(k, v)| (k, v.trim().to_string()))
                .collect(),
        }
    }

    /// Removes and returns the raw (trimmed) value of `key`.
    pub fn take(&mut self, key: &str) -> Option<String> {
        self.map.remove(key)
    }

    /// The error for `value` of `key`, with `reason`.
    pub fn invalid(key: &str, value: &str, reason: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            key: key.to_string(),
            value: value.to_string(),
            reason: reason.into(),
        }
    }

    /// A number at least `min`, or `default` when unset.
    pub fn num<T: std::str::FromStr + PartialOrd + Copy + std::fmt::Display>(
        &mut self,
        key: &str,
        default: T,
        min: T,
    ) -> Result<T, ConfigError> {
        match self.take(key) {
            None => Ok(default),
            Some(v) => {
                let n: T = v
                    .parse()
                    .map_err(|_| Self::invalid(key, &v, "not a number"))?;
                if n < min {
                    return Err(Self::invalid(key, &v, format!("must be at least {min}")));
                }
                Ok(n)
            }
        }
    }

    /// A number, or `None` when unset.
    pub fn opt_num<T: std::str::FromStr>(&mut self, key: &str) -> Result<Option<T>, ConfigError> {
        match self.take(key) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| Self::invalid(key, &v, "not a number")),
        }
    }

    /// `true` or `false` (any case), or `default` when unset.
    pub fn boolean(&mut self, key: &str, default: bool) -> Result<bool, ConfigError> {
        match self.take(key) {
            None => Ok(default),
            Some(v) => match v.to_ascii_lowercase().as_str() {
                "true" => Ok(true),
                "false" => Ok(false),
                _ => Err(Self::invalid(key, &v, "expected true or false")),
            },
        }
    }

    /// One of `allowed` (any case, returned as given), or `default` when unset.
    pub fn choice(
        &mut self,
        key: &str,
        default: &str,
        allowed: &[&str],
    ) -> Result<String, ConfigError> {
        match self.take(key) {
            None => Ok(default.to_string()),
            Some(v) => {
                if allowed.iter().any(|a| a.eq_ignore_ascii_case(&v)) {
                    Ok(v)
                } else {
                    Err(Self::invalid(
                        key,
                        &v,
                        format!("expected one of {allowed:?}"),
                    ))
                }
            }
        }
    }

    /// The value of `key` without taking it (for a setting another part reads later).
    pub fn peek(&self, key: &str) -> Option<&str> {
        self.map.get(key).map(String::as_str)
    }

    /// Whether `key` is still untaken.
    pub fn contains(&self, key: &str) -> bool {
        self.map.contains_key(key)
    }

    /// The keys no one took, in order.
    pub fn into_remaining_keys(self) -> impl Iterator<Item = String> {
        self.map.into_keys()
    }
}
