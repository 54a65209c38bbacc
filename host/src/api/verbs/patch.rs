//! The patch verb: applies a decoded merge, JSON or strategic merge patch to the current object inside the
//! registry's update, so a conflicting write retries against the new state.

use std::sync::Arc;

use hyper::Response;
use serde_json::Value;

use super::resolve::Resolved;
use super::settle_definitions;
use crate::api::params::{Format, PatchParams};
use crate::api::patch::Patch;
use crate::api::response::{self, Body};
use crate::api::state::AppState;
use crate::api::status::Status;
use crate::registry::{Error, UpdateFn};
use crate::strategy::{FieldError, FieldErrorKind};

/// Patches the object; `warnings` are those the patch's decoding produced.
///
/// # Errors
/// 404 when missing, 422 when the patch cannot be applied or the result is invalid;
/// registry errors as their `Status`.
pub(crate) async fn patch(
    state: &AppState,
    res: &Resolved,
    params: PatchParams,
    patch: Patch,
    mut warnings: Vec<String>,
    format: Format,
) -> Result<Response<Body>, Status> {
    let scope = res.scope(params.dry_run, params.field_validation);
    let target = res.store().target(res.name());
    let def = res.store().definition().clone();
    let input: UpdateFn = Arc::new(move |current: Option<&Value>| {
        let Some(current) = current else {
            return Err(Error::NotFound(Box::new(target.clone())));
        };
        let schema = def
            .version(def.storage_version())
            .and_then(|v| v.schema.as_ref());
        patch.apply(current, schema).map_err(|why| {
            Error::invalid(
                &target,
                FieldError {
                    kind: FieldErrorKind::Invalid,
                    field: String::new(),
                    detail: format!("the patch could not be applied: {why}"),
                },
            )
        })
    });
    let outcome = res
        .store()
        .update(&scope, res.name(), input)
        .await
        .map_err(|e| Status::from(&e))?;
    warnings.extend(outcome.warnings.iter().cloned());
    settle_definitions(state, res, &scope, &outcome).await;
    Ok(response::object(
        200,
        &outcome.object,
        &warnings,
        format.protobuf,
    ))
}
