//! AlterClientQuotas answers for failures outside validation: no controller, records not written.

use josef_protocol::messages::alter_client_quotas_response::{self, AlterClientQuotasResponse};
use josef_protocol::messages::AlterClientQuotasRequest;
use josef_protocol::ErrorCode;

/// The AlterClientQuotas answer with `code` on every entry (the controller could not be reached,
/// the records could not be written).
pub fn alter_error_response(
    req: &AlterClientQuotasRequest,
    code: ErrorCode,
) -> AlterClientQuotasResponse {
    AlterClientQuotasResponse {
        entries: req
            .entries
            .iter()
            .map(|e| alter_client_quotas_response::EntryData {
                error_code: code.code(),
                entity: e
                    .entity
                    .iter()
                    .map(|c| alter_client_quotas_response::EntityData {
                        entity_type: c.entity_type.clone(),
                        entity_name: c.entity_name.clone(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// Turns every entry validation accepted into `code` with `message`: its records were not
/// written, so nothing changed. Entries refused by validation keep their own error.
pub fn fail_accepted_entries(
    response: &mut AlterClientQuotasResponse,
    code: ErrorCode,
    message: &str,
) {
    for entry in response.entries.iter_mut().filter(|e| e.error_code == 0) {
        entry.error_code = code.code();
        entry.error_message = Some(message.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{alter_entry, QuotaStore};

    fn request() -> AlterClientQuotasRequest {
        AlterClientQuotasRequest {
            entries: vec![
                alter_entry(
                    &[("user", Some("alice"))],
                    &[("producer_byte_rate", Some(1.0))],
                ),
                alter_entry(&[("user", None)], &[("producer_byte_rate", Some(1.5))]),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn every_entry_gets_the_code_and_keeps_its_entity() {
        let r = alter_error_response(&request(), ErrorCode::NotController);
        assert_eq!(r.entries.len(), 2);
        for (e, name) in r.entries.iter().zip([Some("alice"), None]) {
            assert_eq!(e.error_code, ErrorCode::NotController.code());
            assert_eq!(e.entity.len(), 1);
            assert_eq!(e.entity[0].entity_type.as_str(), "user");
            assert_eq!(e.entity[0].entity_name.as_deref(), name);
        }
    }

    #[test]
    fn only_accepted_entries_become_failures() {
        let mut r = QuotaStore::new().alter_client_quotas(&request()).response;
        assert_eq!(r.entries[0].error_code, 0);
        assert_eq!(r.entries[1].error_code, ErrorCode::InvalidRequest.code());
        let refused = r.entries[1].error_message.clone();
        fail_accepted_entries(&mut r, ErrorCode::UnknownServerError, "disk full");
        assert_eq!(
            r.entries[0].error_code,
            ErrorCode::UnknownServerError.code()
        );
        assert_eq!(r.entries[0].error_message.as_deref(), Some("disk full"));
        assert_eq!(r.entries[1].error_code, ErrorCode::InvalidRequest.code());
        assert_eq!(r.entries[1].error_message, refused);
    }
}
