//! Client quotas on the controller (Kafka's `ClientQuotaControlManager`): AlterClientQuotas is
//! validated against the committed quotas and answered with ClientQuotaRecords; committed records
//! are replayed into the same [`QuotaStore`] brokers read quotas from.

use josef_protocol::messages::{AlterClientQuotasRequest, AlterClientQuotasResponse};
use josef_quota::QuotaStore;

use crate::quorum_controller::{Controller, ControllerResult, WriteContext};
use crate::records::MetadataRecord;

/// The committed client quotas.
#[derive(Debug, Clone, Default)]
pub(crate) struct ClientQuotaControlManager {
    pub(crate) store: QuotaStore,
}

impl Controller {
    /// AlterClientQuotas (API 49): per entity INVALID_REQUEST for a bad entity, key or value (see
    /// [`QuotaStore::alter_client_quotas`]); a ClientQuotaRecord per changed key of the accepted
    /// entities, none with `validate_only`.
    pub fn alter_client_quotas(
        &mut self,
        _ctx: WriteContext,
        req: &AlterClientQuotasRequest,
    ) -> ControllerResult<AlterClientQuotasResponse> {
        let outcome = self.client_quotas.store.alter_client_quotas(req);
        ControllerResult::of(
            outcome
                .records
                .into_iter()
                .map(MetadataRecord::ClientQuota)
                .collect(),
            outcome.response,
        )
    }

    /// The committed client quotas.
    pub fn client_quotas(&self) -> &QuotaStore {
        &self.client_quotas.store
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ControllerConfig;
    use josef_protocol::ErrorCode;
    use josef_quota::{alter_entry, EntityName, QuotaEntity};

    fn request(entity: &[(&str, Option<&str>)], key: &str, value: f64) -> AlterClientQuotasRequest {
        AlterClientQuotasRequest {
            entries: vec![alter_entry(entity, &[(key, Some(value))])],
            ..Default::default()
        }
    }

    #[test]
    fn accepted_quotas_become_records_and_replay_into_the_store() {
        let mut c = Controller::new(ControllerConfig::default());
        let ctx = WriteContext::default();
        let r = c.alter_client_quotas(
            ctx,
            &request(&[("user", Some("alice"))], "producer_byte_rate", 1024.0),
        );
        assert_eq!(r.response.entries[0].error_code, 0);
        assert_eq!(r.records.len(), 1);
        // Nothing changes until the record is committed and replayed.
        assert!(c.client_quotas().entities().next().is_none());
        for rec in &r.records {
            c.replay(1, rec).unwrap();
        }
        let alice = QuotaEntity::User(EntityName::from("alice"));
        assert_eq!(
            c.client_quotas().get(&alice, "producer_byte_rate"),
            Some(1024.0)
        );
        assert_eq!(c.image().client_quotas().len(), 1);
        // Setting the same value again writes nothing.
        let again = c.alter_client_quotas(
            ctx,
            &request(&[("user", Some("alice"))], "producer_byte_rate", 1024.0),
        );
        assert!(again.records.is_empty());
        // Bad input: a fractional byte rate, ip with user.
        let bad =
            c.alter_client_quotas(ctx, &request(&[("user", None)], "producer_byte_rate", 1.5));
        assert_eq!(
            bad.response.entries[0].error_code,
            ErrorCode::InvalidRequest.code()
        );
        assert!(bad.records.is_empty());
        let bad = c.alter_client_quotas(
            ctx,
            &request(
                &[("ip", Some("10.0.0.1")), ("user", None)],
                "connection_creation_rate",
                2.0,
            ),
        );
        assert_eq!(
            bad.response.entries[0].error_code,
            ErrorCode::InvalidRequest.code()
        );
    }
}
