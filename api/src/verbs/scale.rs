//! The `scale` subresource over HTTP: get, update and patch of an `autoscaling/v1` `Scale`
//! (what `kubectl scale` and autoscalers send), answered with the `Scale` after the write.

use std::sync::Arc;

use hyper::Response;
use serde_json::Value;

use super::resolve::Resolved;
use crate::params::{Format, GetParams, PatchParams, PostParams};
use crate::patch::Patch;
use crate::response::{self, Body};
use crate::status::Status;
use strategy_host_registry::scale::ScaleFn;
use strategy_host_registry::{Outcome, RequestScope};

/// Reads the object's `Scale`.
///
/// # Errors
/// 404 when the object is missing; storage errors as their `Status`.
pub(super) async fn get(
    res: &Resolved,
    params: GetParams,
    format: Format,
) -> Result<Response<Body>, Status> {
    let scale = res
        .store()
        .get_scale(&res.read_scope(), res.name(), params.options())
        .await
        .map_err(|e| Status::from(&e))?;
    res.audit.log_response_object(&scale);
    Ok(response::object(200, &scale, &[], format.protobuf))
}

/// Replaces the object's `Scale` with `scale` (its `spec.replicas`, under its
/// `resourceVersion` when it names one).
///
/// # Errors
/// 404, 409 on a stale resourceVersion, 422 for bad replicas; the update's errors.
pub(super) async fn update(
    res: &Resolved,
    params: PostParams,
    scale: Value,
    format: Format,
) -> Result<Response<Body>, Status> {
    let mut scope = res.scope(params.dry_run, params.field_validation);
    scope.field_manager = params.field_manager;
    let change: ScaleFn = Arc::new(move |_| Ok(scale.clone()));
    written(res, &scope, change, format).await
}

/// Patches the object's `Scale` (merge, JSON or strategic merge patch; an apply configuration
/// is merged in) inside the update, so a conflicting write retries against the new state.
///
/// # Errors
/// As [`update`]; 422 when the patch cannot be applied.
pub(super) async fn patch(
    res: &Resolved,
    params: PatchParams,
    patch: Patch,
    format: Format,
    user_agent: Option<&str>,
) -> Result<Response<Body>, Status> {
    let mut scope = res.scope(params.dry_run, params.field_validation);
    scope.field_manager = if params.field_manager.is_empty() {
        crate::params::manager_from_user_agent(user_agent)
    } else {
        params.field_manager
    };
    let patch = match patch {
        Patch::Apply(config) => Patch::Merge(config),
        other => other,
    };
    let target = res.store().target(res.name());
    let change: ScaleFn =
        Arc::new(move |current: &Value| super::patch::applied(&patch, current, None, &target));
    written(res, &scope, change, format).await
}

async fn written(
    res: &Resolved,
    scope: &RequestScope,
    change: ScaleFn,
    format: Format,
) -> Result<Response<Body>, Status> {
    let Outcome {
        object, warnings, ..
    } = res
        .store()
        .update_scale(scope, res.name(), change)
        .await
        .map_err(|e| Status::from(&e))?;
    res.audit.log_response_object(&object);
    Ok(response::object(200, &object, &warnings, format.protobuf))
}
