//! The get verb: one object, as itself or as a one-row Table.

use hyper::Response;
use serde_json::json;

use super::resolve::Resolved;
use super::table_response;
use crate::params::{Format, GetParams};
use crate::response::{self, Body};
use crate::status::Status;

/// Reads one object.
///
/// # Errors
/// 404 when it does not exist; storage errors as their `Status`.
pub(crate) async fn get(
    res: &Resolved,
    params: GetParams,
    format: Format,
) -> Result<Response<Body>, Status> {
    let scope = res.read_scope();
    if !format.as_table {
        // The object as it is held: the shared object's JSON bytes, or its protobuf message
        // encoded once per version, with no tree parsed or serialized per request.
        let obj = res
            .store()
            .get_shared(&scope, res.name(), params.options())
            .await
            .map_err(|e| Status::from(&e))?;
        res.audit.log_response_object_with(|| obj.to_value());
        if format.protobuf {
            if let Some(body) = crate::protobuf::shared::object_body(&obj) {
                return Ok(response::protobuf_body(200, body));
            }
        }
        return Ok(response::json_bytes(200, obj.json(), &[]));
    }
    let obj = res
        .store()
        .get(&scope, res.name(), params.options())
        .await
        .map_err(|e| Status::from(&e))?;
    // As a one-row Table.
    let meta = json!({"resourceVersion": obj.pointer("/metadata/resourceVersion").cloned().unwrap_or_default()});
    Ok(table_response(res, &scope.version, &[obj], meta, &format))
}
