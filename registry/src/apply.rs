//! Server-side apply: the applied configuration merged into the live object by field ownership
//! (`fieldmanager::apply`), then the update path as for any update (strategy, schema,
//! validation), creating the object when it is missing.

use std::sync::Arc;

use serde_json::Value;

use super::error::Result;
use super::store::{Outcome, RegistryStore, RequestScope};
use super::update::UpdateFn;

impl RegistryStore {
    /// Applies `config` to the object `name` as `scope.field_manager` (`force` takes the fields
    /// other managers own).
    ///
    /// # Errors
    /// `ApplyConflict` (409) for fields other managers own; the update path's errors.
    pub async fn apply(
        &self,
        scope: &RequestScope,
        name: &str,
        config: Value,
        force: bool,
    ) -> Result<Outcome> {
        let mut scope = scope.clone();
        scope.applying = true;
        let Some(manager) = self.manager(&scope) else {
            return Err(super::Error::BadRequest(
                "fieldManager is required for apply patch".into(),
            ));
        };
        let (this, name_owned, schema_scope) = (self.clone(), name.to_string(), scope.clone());
        let input: UpdateFn = Arc::new(move |current: Option<&Value>| {
            super::fieldmanager::apply(
                current,
                &config,
                this.schema(&schema_scope),
                &manager,
                force,
            )
            .map_err(|r| this.refused(&name_owned, r))
        });
        self.update(&scope, name, input).await
    }
}
