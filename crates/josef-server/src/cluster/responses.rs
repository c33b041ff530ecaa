//! Error answers to controller APIs, shaped like each API's response
//! ([`josef_protocol::error_response`]).

use josef_protocol::{ErrorCode, RequestBody, ResponseBody};

/// The answer to `body` when this node cannot serve it as controller: NOT_CONTROLLER where the API
/// has a top-level code, else on every topic or resource.
pub fn not_controller(body: &RequestBody) -> ResponseBody {
    error_response(body, ErrorCode::NotController)
}

/// `body`'s response with `code` at the top level or on every entry.
pub fn error_response(body: &RequestBody, code: ErrorCode) -> ResponseBody {
    josef_protocol::error_response::error_response(body, code).unwrap_or_else(|| {
        // Not a controller API: the caller answers it elsewhere; an empty ApiVersions-like
        // answer is never sent for it.
        tracing::warn!(api = ?body.api_key(), "not a controller API");
        ResponseBody::ApiVersions(josef_protocol::messages::ApiVersionsResponse {
            error_code: ErrorCode::InvalidRequest.code(),
            ..Default::default()
        })
    })
}
