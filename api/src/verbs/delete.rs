//! The delete verb: deletes one object, or marks it deleted while finalizers remain.

use hyper::Response;

use super::resolve::Resolved;
use super::written;
use crate::params::{DeleteParams, Format};
use crate::response::Body;
use crate::state::AppState;
use crate::status::Status;
use strategy_host_registry::FieldValidation;

/// Deletes the object; answers its last state.
///
/// # Errors
/// 404 when missing, 409 when a precondition fails; registry errors as their `Status`.
pub(crate) async fn delete(
    state: &AppState,
    res: &Resolved,
    params: DeleteParams,
    format: Format,
) -> Result<Response<Body>, Status> {
    let scope = res.scope(params.dry_run, FieldValidation::default());
    let outcome = res
        .store()
        .delete(&scope, res.name(), &params.options())
        .await
        .map_err(|e| Status::from(&e))?;
    Ok(written(state, res, &scope, outcome, Vec::new(), 200, format).await)
}
