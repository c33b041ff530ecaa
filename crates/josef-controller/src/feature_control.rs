//! Kafka's `FeatureControlManager`: finalized feature levels (`metadata.version`,
//! `transaction.version`, ...) changed by UpdateFeatures.

use std::collections::BTreeSet;

use josef_protocol::messages::update_features_response::UpdatableFeatureResult;
use josef_protocol::messages::{UpdateFeaturesRequest, UpdateFeaturesResponse};
use josef_protocol::ErrorCode;

use crate::records::{FeatureLevelRecord, MetadataRecord};
use crate::{
    ApiError, Controller, ControllerResult, WriteContext, BOOTSTRAP_METADATA_VERSION,
    METADATA_VERSION_FEATURE,
};

/// Lowest metadata.version level this controller accepts (3.3-IV3, the first with the
/// BrokerRegistrationChangeRecord's in-controlled-shutdown flag it relies on).
pub const MIN_METADATA_VERSION: i16 = 7;

/// Kafka's `MetadataVersion.didMetadataChange` for the levels this controller supports: whether
/// a level changed the metadata records (a downgrade below it could lose what they carry).
const METADATA_CHANGED_AT: [(i16, bool); 15] = [
    (7, true),   // 3.3-IV3
    (8, true),   // 3.4-IV0
    (9, false),  // 3.5-IV0
    (10, false), // 3.5-IV1
    (11, true),  // 3.5-IV2
    (12, false), // 3.6-IV0
    (13, true),  // 3.6-IV1
    (14, true),  // 3.6-IV2
    (15, true),  // 3.7-IV0
    (16, false), // 3.7-IV1
    (17, true),  // 3.7-IV2
    (18, false), // 3.7-IV3
    (19, false), // 3.7-IV4
    (20, false), // 3.8-IV0
    (21, false), // 3.9-IV0
];

/// Kafka's `MetadataVersion.checkIfMetadataChanged`: whether some level in `(low, high]` changed
/// the metadata records. A metadata.version downgrade is safe only when none did.
fn metadata_changed_between(low: i16, high: i16) -> bool {
    METADATA_CHANGED_AT
        .iter()
        .any(|&(l, changed)| changed && low < l && l <= high)
}

/// UpdateFeatures `upgrade_type` (v1+; v0's `allow_downgrade` maps to 1 or 2).
const UPGRADE: i8 = 1;
const SAFE_DOWNGRADE: i8 = 2;
const UNSAFE_DOWNGRADE: i8 = 3;

impl Controller {
    fn update_feature(&self, name: &str, level: i16, upgrade_type: i8) -> Result<(), ApiError> {
        let invalid = |why: &str| {
            Err(ApiError::new(
                ErrorCode::InvalidUpdateVersion,
                format!("Invalid update version {level} for feature {name}. {why}"),
            ))
        };
        if !(UPGRADE..=UNSAFE_DOWNGRADE).contains(&upgrade_type) {
            return invalid("The controller does not support the given upgrade type.");
        }
        if level < 0 {
            return invalid("A feature version cannot be less than 0.");
        }
        let current = self.features.get(name).copied().unwrap_or(0);
        if name == METADATA_VERSION_FEATURE
            && !(MIN_METADATA_VERSION..=BOOTSTRAP_METADATA_VERSION).contains(&level)
        {
            return invalid(&format!(
                "The controller supports metadata.version levels {MIN_METADATA_VERSION} to {BOOTSTRAP_METADATA_VERSION}."
            ));
        }
        for b in self.cluster.brokers.values() {
            let (min, max) = b.supported_features.get(name).copied().unwrap_or((0, 0));
            if level < min || level > max {
                return invalid(&format!("Broker {} does not support this feature.", b.id));
            }
        }
        if level < current && upgrade_type == UPGRADE {
            return invalid(
                "Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.",
            );
        }
        if level > current && upgrade_type != UPGRADE {
            return invalid("A downgrade cannot go to a higher level.");
        }
        if name == METADATA_VERSION_FEATURE
            && level < current
            && metadata_changed_between(level, current)
        {
            return invalid(if upgrade_type == UNSAFE_DOWNGRADE {
                "Unsafe metadata.version downgrades are not supported."
            } else {
                "A level between the current one and this one changed the metadata records, so the downgrade could lose metadata."
            });
        }
        Ok(())
    }

    /// UpdateFeatures (API 57; Kafka's `FeatureControlManager.updateFeatures`): all updates or
    /// none, one FeatureLevelRecord each (level 0 removes a feature other than metadata.version).
    /// INVALID_UPDATE_VERSION for an unknown upgrade type, a negative level, a level some
    /// registered broker does not support (a broker that does not list a feature supports only 0),
    /// a downgrade asked as an upgrade or an upgrade asked as a downgrade, a metadata.version
    /// outside this controller's range, or a metadata.version downgrade across a level that
    /// changed the metadata records (Kafka's rule: one crossing none is safe); INVALID_REQUEST for a feature named twice. The error goes to the
    /// request and to every feature. `validate_only` writes nothing.
    pub fn update_features(
        &mut self,
        _ctx: WriteContext,
        req: &UpdateFeaturesRequest,
        version: i16,
    ) -> ControllerResult<UpdateFeaturesResponse> {
        let mut names = BTreeSet::new();
        let outcome = self.check_active().and_then(|()| {
            let mut records = Vec::new();
            for u in &req.feature_updates {
                if !names.insert(u.feature.as_str()) {
                    return Err(ApiError::new(
                        ErrorCode::InvalidRequest,
                        format!("Feature {} appears more than once.", u.feature),
                    ));
                }
                let upgrade_type = match (version, u.allow_downgrade) {
                    (0, true) => SAFE_DOWNGRADE,
                    (0, false) => UPGRADE,
                    _ => u.upgrade_type,
                };
                self.update_feature(&u.feature, u.max_version_level, upgrade_type)?;
                records.push(MetadataRecord::FeatureLevel(FeatureLevelRecord {
                    name: u.feature.clone(),
                    feature_level: u.max_version_level,
                    ..Default::default()
                }));
            }
            Ok(records)
        });
        let (records, error) = match outcome {
            Ok(records) if !req.validate_only => (records, None),
            Ok(_) => (Vec::new(), None),
            Err(e) => (Vec::new(), Some(e)),
        };
        let code = error.as_ref().map_or(0, ApiError::code);
        let message = error.map(|e| e.message);
        let results = req
            .feature_updates
            .iter()
            .map(|u| UpdatableFeatureResult {
                feature: u.feature.clone(),
                error_code: code,
                error_message: message.clone().map(Into::into),
                ..Default::default()
            })
            .collect();
        ControllerResult::of(
            records,
            UpdateFeaturesResponse {
                error_code: code,
                error_message: message.map(Into::into),
                results,
                ..Default::default()
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_changes_between_levels_follow_kafkas_flags() {
        assert!(!metadata_changed_between(20, 21));
        assert!(!metadata_changed_between(17, 21), "18..=21 changed nothing");
        assert!(
            metadata_changed_between(16, 21),
            "17 (JBOD) changed the records"
        );
        assert!(metadata_changed_between(16, 17));
        assert!(!metadata_changed_between(15, 16));
        assert!(!metadata_changed_between(21, 21));
        assert_eq!(
            METADATA_CHANGED_AT.first().map(|e| e.0),
            Some(MIN_METADATA_VERSION)
        );
        assert_eq!(
            METADATA_CHANGED_AT.last().map(|e| e.0),
            Some(BOOTSTRAP_METADATA_VERSION)
        );
    }
}
