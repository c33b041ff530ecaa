//! AlterUserScramCredentials (API 51) on the controller: josef-sasl's pure validation over the
//! committed credentials, and the UserScramCredentialRecord / RemoveUserScramCredentialRecord it
//! produces (Kafka's `ScramControlManager`).

use josef_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
};
use josef_sasl::scram::admin::{alter_error_response, alter_user_scram_credentials, ScramRecord};

use crate::records::MetadataRecord;
use crate::{Controller, ControllerResult, WriteContext};

impl Controller {
    /// AlterUserScramCredentials: per-user results as Kafka gives them (see
    /// [`josef_sasl::scram::admin::alter_user_scram_credentials`]) and one record per upserted
    /// or deleted credential of the users that succeed. A standby answers NOT_CONTROLLER for
    /// every user.
    pub fn alter_user_scram_credentials(
        &mut self,
        _ctx: WriteContext,
        req: &AlterUserScramCredentialsRequest,
    ) -> ControllerResult<AlterUserScramCredentialsResponse> {
        if let Err(e) = self.check_active() {
            return ControllerResult::response(alter_error_response(req, e.code, Some(&e.message)));
        }
        let image = self.image();
        let (resp, records) = alter_user_scram_credentials(req, image.scram_credentials());
        let records = records
            .into_iter()
            .map(|r| match r {
                ScramRecord::Upsert(u) => MetadataRecord::UserScramCredential(u),
                ScramRecord::Remove(r) => MetadataRecord::RemoveUserScramCredential(r),
            })
            .collect();
        ControllerResult::of(records, resp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ControllerConfig;
    use josef_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;

    #[test]
    fn a_standby_refuses_and_an_active_controller_emits_records() {
        let mut c = Controller::new(ControllerConfig::default());
        let req = AlterUserScramCredentialsRequest {
            upsertions: vec![ScramCredentialUpsertion {
                name: "alice".into(),
                mechanism: 2,
                iterations: 4096,
                salt: vec![1u8; 16].into(),
                salted_password: vec![2u8; 64].into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let ctx = WriteContext {
            now_ms: 0,
            next_offset: 1,
        };
        let r = c.alter_user_scram_credentials(ctx, &req);
        assert!(r.records.is_empty());
        assert_eq!(
            r.response.results[0].error_code,
            josef_protocol::ErrorCode::NotController.code()
        );
        let _ = c.activate(ctx, 1, "cluster".into());
        let r = c.alter_user_scram_credentials(ctx, &req);
        assert_eq!(r.response.results[0].error_code, 0);
        assert!(matches!(
            &r.records[..],
            [MetadataRecord::UserScramCredential(u)] if u.name.as_str() == "alice" && u.iterations == 4096
        ));
    }
}
