//! The update verb: replaces an object (or its status), 200; creates it (201) where the
//! strategy allows create-on-update.

use std::sync::Arc;

use serde_json::Value;

use super::resolve::Resolved;
use crate::status::Status;
use strategy_host_registry::{Outcome, RequestScope, UpdateFn};

/// Replaces the object with `obj`.
///
/// # Errors
/// 409 on a stale resourceVersion, 404 when missing, 400 on a name mismatch, 422 when
/// invalid; registry errors as their `Status`.
pub(crate) async fn update(
    res: &Resolved,
    scope: &RequestScope,
    obj: Value,
) -> Result<Outcome, Status> {
    let input: UpdateFn = Arc::new(move |_| Ok(obj.clone()));
    res.store()
        .update(scope, res.name(), input)
        .await
        .map_err(|e| Status::from(&e))
}
