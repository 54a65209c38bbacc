//! The deletecollection verb: deletes every object the selectors pick, with the same
//! `DeleteOptions` for each; answers the list of what was deleted.

use hyper::Response;

use super::resolve::Resolved;
use super::written;
use crate::params::{DeleteCollectionParams, Format};
use crate::response::Body;
use crate::state::AppState;
use crate::status::Status;
use strategy_host_registry::FieldValidation;

/// Deletes the selected objects.
///
/// # Errors
/// As list; the first failing delete other than a 404.
pub(crate) async fn delete_collection(
    state: &AppState,
    res: &Resolved,
    params: DeleteCollectionParams,
    format: Format,
) -> Result<Response<Body>, Status> {
    let scope = res.scope(params.delete.dry_run, FieldValidation::default());
    let outcome = res
        .store()
        .delete_collection(&scope, params.list.options(), &params.delete.options())
        .await
        .map_err(|e| Status::from(&e))?;
    Ok(written(state, res, &scope, outcome, Vec::new(), 200, format).await)
}
