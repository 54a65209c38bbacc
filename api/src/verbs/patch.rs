//! The patch verb: server-side apply through the registry's apply, or a decoded merge, JSON or
//! strategic merge patch applied to the current object inside the
//! registry's update, so a conflicting write retries against the new state.

use std::sync::Arc;

use hyper::Response;
use serde_json::Value;

use super::resolve::Resolved;
use super::written;
use crate::params::{manager_from_user_agent, Format, PatchParams};
use crate::patch::Patch;
use crate::response::Body;
use crate::state::AppState;
use crate::status::Status;
use crate::strategy::{FieldError, FieldErrorKind};
use strategy_host_registry::{Error, UpdateFn};

/// An apply configuration with its `apiVersion` and `kind` filled in from the request path when
/// left out.
fn with_type(mut config: Value, res: &Resolved) -> Value {
    let def = res.store().definition();
    if let Some(map) = config.as_object_mut() {
        map.entry("apiVersion")
            .or_insert_with(|| Value::String(def.api_version(&res.path.version)));
        map.entry("kind")
            .or_insert_with(|| Value::String(def.kind.clone()));
    }
    config
}

/// Patches the object (a server-side apply goes through the registry's apply); `warnings` are those the patch's decoding produced.
///
/// # Errors
/// 404 when missing, 422 when the patch cannot be applied or the result is invalid;
/// registry errors as their `Status`.
pub(crate) async fn patch(
    state: &AppState,
    res: &Resolved,
    params: PatchParams,
    patch: Patch,
    warnings: Vec<String>,
    format: Format,
    user_agent: Option<&str>,
) -> Result<Response<Body>, Status> {
    let mut scope = res.scope(params.dry_run, params.field_validation);
    if let Patch::Apply(config) = patch {
        // Apply names its manager explicitly, as Kubernetes requires.
        if params.field_manager.is_empty() {
            return Err(Status::invalid_options(
                "fieldManager",
                "Required value: is required for apply patch",
            ));
        }
        scope.field_manager = params.field_manager.clone();
        let config = with_type(config, res);
        let outcome = res
            .store()
            .apply(&scope, res.name(), config, params.force)
            .await
            .map_err(|e| Status::from(&e))?;
        let code = if outcome.created { 201 } else { 200 };
        return Ok(written(state, res, &scope, outcome, warnings, code, format).await);
    }
    if params.force {
        return Err(Status::invalid_options(
            "force",
            "Forbidden: may not be specified for non-apply patch",
        ));
    }
    scope.field_manager = if params.field_manager.is_empty() {
        manager_from_user_agent(user_agent)
    } else {
        params.field_manager.clone()
    };
    let target = res.store().target(res.name());
    let def = res.store().definition().clone();
    let input: UpdateFn = Arc::new(move |current: Option<&Value>| {
        let Some(current) = current else {
            return Err(Error::NotFound(Box::new(target.clone())));
        };
        let schema = def
            .version(def.storage_version())
            .and_then(|v| v.schema.as_ref());
        applied(&patch, current, schema, &target)
    });
    let outcome = res
        .store()
        .update(&scope, res.name(), input)
        .await
        .map_err(|e| Status::from(&e))?;
    Ok(written(state, res, &scope, outcome, warnings, 200, format).await)
}

/// `patch` applied to `current` (merged by `schema`'s list types), or the 422 of a patch that
/// cannot be applied to `target`.
pub(super) fn applied(
    patch: &Patch,
    current: &Value,
    schema: Option<&Value>,
    target: &strategy_host_registry::Target,
) -> Result<Value, Error> {
    patch.apply(current, schema).map_err(|why| {
        Error::invalid(
            target,
            FieldError {
                kind: FieldErrorKind::Invalid,
                field: String::new(),
                detail: format!("the patch could not be applied: {why}"),
            },
        )
    })
}
