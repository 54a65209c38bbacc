//! The create verb: stores a new object (201), or says what it would store on a dry run.

use hyper::Response;
use serde_json::Value;

use super::resolve::Resolved;
use super::written;
use crate::api::params::{Format, PostParams};
use crate::api::response::Body;
use crate::api::state::AppState;
use crate::api::status::Status;

/// Creates `obj`; `warnings` are those its decoding produced.
///
/// # Errors
/// 409 when it exists, 422 when invalid, 404 for a missing namespace; registry errors as
/// their `Status`.
pub(crate) async fn create(
    state: &AppState,
    res: &Resolved,
    params: PostParams,
    obj: Value,
    warnings: Vec<String>,
    format: Format,
) -> Result<Response<Body>, Status> {
    let mut scope = res.scope(params.dry_run, params.field_validation);
    scope.field_manager = params.field_manager.clone();
    let outcome = res
        .store()
        .create(&scope, obj)
        .await
        .map_err(|e| Status::from(&e))?;
    Ok(written(state, res, &scope, outcome, warnings, 201, format).await)
}
