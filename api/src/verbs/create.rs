//! The create verb: stores a new object (201), or says what it would store on a dry run.

use serde_json::Value;

use super::resolve::Resolved;
use crate::status::Status;
use strategy_host_registry::{Outcome, RequestScope};

/// Creates `obj`.
///
/// # Errors
/// 409 when it exists, 422 when invalid, 404 for a missing namespace; registry errors as
/// their `Status`.
pub(crate) async fn create(
    res: &Resolved,
    scope: &RequestScope,
    obj: Value,
) -> Result<Outcome, Status> {
    res.store()
        .create(scope, obj)
        .await
        .map_err(|e| Status::from(&e))
}
