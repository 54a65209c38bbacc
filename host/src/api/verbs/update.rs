//! The update verb: replaces an object (or its status), 200; creates it (201) where the
//! strategy allows create-on-update.

use std::sync::Arc;

use hyper::Response;
use serde_json::Value;

use super::resolve::Resolved;
use super::written;
use crate::api::params::{Format, PostParams};
use crate::api::response::Body;
use crate::api::state::AppState;
use crate::api::status::Status;
use crate::registry::UpdateFn;

/// Replaces the object with `obj`; `warnings` are those its decoding produced.
///
/// # Errors
/// 409 on a stale resourceVersion, 404 when missing, 400 on a name mismatch, 422 when
/// invalid; registry errors as their `Status`.
pub(crate) async fn update(
    state: &AppState,
    res: &Resolved,
    params: PostParams,
    obj: Value,
    warnings: Vec<String>,
    format: Format,
) -> Result<Response<Body>, Status> {
    let mut scope = res.scope(params.dry_run, params.field_validation);
    scope.field_manager = params.field_manager.clone();
    let input: UpdateFn = Arc::new(move |_| Ok(obj.clone()));
    let outcome = res
        .store()
        .update(&scope, res.name(), input)
        .await
        .map_err(|e| Status::from(&e))?;
    let code = if outcome.created { 201 } else { 200 };
    Ok(written(state, res, &scope, outcome, warnings, code, format).await)
}
