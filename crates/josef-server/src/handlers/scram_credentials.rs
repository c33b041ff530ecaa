//! DescribeUserScramCredentials (50) and AlterUserScramCredentials (51). The validation is
//! josef-sasl's ([`josef_sasl::scram::admin`]): a single node runs it over its local metadata
//! store and appends the records; a cluster node forwards Alter to the active controller, which
//! runs the same code. Describe reads the metadata image either way.

use josef_protocol::messages::{
    AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
};
use josef_protocol::{ErrorCode, ResponseBody};
use josef_sasl::scram::admin::{self, ScramRecord};

use crate::state::BrokerState;

/// The response with `code` for every user of `req`.
pub fn alter_error(req: &AlterUserScramCredentialsRequest, code: ErrorCode) -> ResponseBody {
    admin::alter_error_response(req, code, None).into()
}

/// DescribeUserScramCredentials from the metadata image.
pub fn describe(
    state: &BrokerState,
    req: &DescribeUserScramCredentialsRequest,
) -> DescribeUserScramCredentialsResponse {
    admin::describe_user_scram_credentials(req, state.metadata_image().scram_credentials())
}

/// AlterUserScramCredentials on a single node: validate, append, answer.
pub fn alter_local(state: &BrokerState, req: &AlterUserScramCredentialsRequest) -> ResponseBody {
    let Some(store) = &state.local_metadata else {
        return alter_error(req, ErrorCode::NotController);
    };
    let image = state.metadata_image();
    let (resp, records) = admin::alter_user_scram_credentials(req, image.scram_credentials());
    let records: Vec<josef_metadata::MetadataRecord> = records
        .into_iter()
        .map(|r| match r {
            ScramRecord::Upsert(u) => josef_metadata::MetadataRecord::UserScramCredential(u),
            ScramRecord::Remove(r) => josef_metadata::MetadataRecord::RemoveUserScramCredential(r),
        })
        .collect();
    if !records.is_empty() {
        if let Err(e) = store.append(&records) {
            tracing::warn!(error = %e, "cannot store SCRAM credentials");
            return alter_error(req, ErrorCode::UnknownServerError);
        }
    }
    resp.into()
}
