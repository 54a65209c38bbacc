//! The list verb: one page of a collection, as a `{Kind}List` or as a Table.

use hyper::Response;

use super::resolve::Resolved;
use super::table_response;
use crate::params::{Format, ListParams};
use crate::response::{self, Body};
use crate::status::Status;

/// Lists the objects the parameters select.
///
/// # Errors
/// Storage errors as their `Status` (410 for an expired continue token, 504 for a
/// resourceVersion the store has not reached).
pub(crate) async fn list(
    res: &Resolved,
    params: ListParams,
    format: Format,
) -> Result<Response<Body>, Status> {
    let scope = res.read_scope();
    let list = res
        .store()
        .list(&scope, params.options())
        .await
        .map_err(|e| Status::from(&e))?;
    if format.as_table {
        let (items, meta) = (list.item_values(), list.metadata());
        return Ok(table_response(res, &scope.version, &items, meta, &format));
    }
    res.audit.log_response_object_with(|| list.to_value());
    if format.protobuf {
        // Written from the items' shared messages; a list with an item that has no protobuf
        // form goes through a tree, which answers JSON.
        if let Some(body) = crate::protobuf::shared::list_body(&list) {
            return Ok(response::protobuf_list(body));
        }
        return Ok(response::object(200, &list.to_value(), &[], true));
    }
    Ok(response::json_list(list))
}
