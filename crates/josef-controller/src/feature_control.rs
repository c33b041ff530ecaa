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
        if name == METADATA_VERSION_FEATURE {
            if !(MIN_METADATA_VERSION..=BOOTSTRAP_METADATA_VERSION).contains(&level) {
                return invalid(&format!(
                    "The controller supports metadata.version levels {MIN_METADATA_VERSION} to {BOOTSTRAP_METADATA_VERSION}."
                ));
            }
            if level < current {
                return invalid("Downgrading metadata.version is not supported.");
            }
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
        Ok(())
    }

    /// UpdateFeatures (API 57; Kafka's `FeatureControlManager.updateFeatures`): all updates or
    /// none, one FeatureLevelRecord each (level 0 removes a feature other than metadata.version).
    /// INVALID_UPDATE_VERSION for an unknown upgrade type, a negative level, a level some
    /// registered broker does not support (a broker that does not list a feature supports only 0),
    /// a downgrade asked as an upgrade, or a metadata.version outside this controller's range or
    /// below the current one; INVALID_REQUEST for a feature named twice. The error goes to the
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
