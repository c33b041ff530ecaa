//! The quota windows read from a Kafka configuration (Kafka's `QuotaConfig`).

use josef_config::settings::{ConfigError, Props};

use crate::config::{
    QuotaWindow, CONTROLLER_QUOTA_WINDOW_NUM_CONFIG, CONTROLLER_QUOTA_WINDOW_SIZE_SECONDS_CONFIG,
    DEFAULT_QUOTA_WINDOW_NUM, DEFAULT_QUOTA_WINDOW_SIZE_SECONDS, QUOTA_WINDOW_NUM_CONFIG,
    QUOTA_WINDOW_SIZE_SECONDS_CONFIG, REPLICATION_QUOTA_WINDOW_NUM_CONFIG,
    REPLICATION_QUOTA_WINDOW_SIZE_SECONDS_CONFIG,
};
use crate::managers::QuotaManagersConfig;

/// A broker's quota settings: `quota.window.*`, `controller.quota.window.*` and
/// `replication.quota.window.*`.
pub type QuotaSettings = QuotaManagersConfig;

impl QuotaManagersConfig {
    /// Takes `quota.window.num`, `quota.window.size.seconds`, `controller.quota.window.num`,
    /// `controller.quota.window.size.seconds`, `replication.quota.window.num` and
    /// `replication.quota.window.size.seconds` (each at least 1, default 11 samples of 1 s) out
    /// of `p`.
    ///
    /// ```
    /// use josef_config::settings::Props;
    /// use josef_quota::QuotaSettings;
    ///
    /// let mut p = Props::new([("quota.window.num".to_string(), "2".to_string())].into());
    /// let s = QuotaSettings::from_props(&mut p).unwrap();
    /// assert_eq!((s.client.num(), s.controller.num()), (2, 11));
    /// assert_eq!(p.into_remaining_keys().count(), 0);
    /// ```
    pub fn from_props(p: &mut Props) -> Result<Self, ConfigError> {
        Ok(QuotaManagersConfig {
            client: window(p, QUOTA_WINDOW_NUM_CONFIG, QUOTA_WINDOW_SIZE_SECONDS_CONFIG)?,
            controller: window(
                p,
                CONTROLLER_QUOTA_WINDOW_NUM_CONFIG,
                CONTROLLER_QUOTA_WINDOW_SIZE_SECONDS_CONFIG,
            )?,
            replication: window(
                p,
                REPLICATION_QUOTA_WINDOW_NUM_CONFIG,
                REPLICATION_QUOTA_WINDOW_SIZE_SECONDS_CONFIG,
            )?,
        })
    }
}

fn window(p: &mut Props, num: &str, size: &str) -> Result<QuotaWindow, ConfigError> {
    let n: u32 = p.num(num, DEFAULT_QUOTA_WINDOW_NUM, 1)?;
    let s: u32 = p.num(size, DEFAULT_QUOTA_WINDOW_SIZE_SECONDS, 1)?;
    QuotaWindow::new(n, s).map_err(|e| Props::invalid(num, &n.to_string(), e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> Props {
        Props::new(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    #[test]
    fn defaults_are_kafkas() {
        let s = QuotaSettings::from_props(&mut props(&[])).unwrap();
        assert_eq!(s, QuotaSettings::default());
        assert_eq!((s.client.num(), s.client.size_seconds()), (11, 1));
    }

    #[test]
    fn each_window_is_read_and_zero_is_refused() {
        let mut p = props(&[
            ("quota.window.num", "3"),
            ("quota.window.size.seconds", "2"),
            ("controller.quota.window.num", "5"),
            ("controller.quota.window.size.seconds", "4"),
            ("replication.quota.window.num", "7"),
            ("replication.quota.window.size.seconds", "3"),
        ]);
        let s = QuotaSettings::from_props(&mut p).unwrap();
        assert_eq!(s.client, QuotaWindow::new(3, 2).unwrap());
        assert_eq!(s.controller, QuotaWindow::new(5, 4).unwrap());
        assert_eq!(s.replication, QuotaWindow::new(7, 3).unwrap());
        assert_eq!(p.into_remaining_keys().count(), 0);
        let e = QuotaSettings::from_props(&mut props(&[("controller.quota.window.num", "0")]));
        assert!(
            matches!(&e, Err(ConfigError::Invalid { key, .. }) if key == "controller.quota.window.num"),
            "{e:?}"
        );
        assert!(
            QuotaSettings::from_props(&mut props(&[("quota.window.size.seconds", "x")])).is_err()
        );
    }
}
