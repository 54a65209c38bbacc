//! Delete and deletecollection: preconditions, the strategy's before_delete, finalizers (an
//! object with finalizers gets a deletionTimestamp instead of being removed), then
//! `storage.delete`; the After hook runs once committed.

use serde_json::{json, Value};

use super::error::{Error, Result};
use super::store::{Outcome, RegistryStore, RequestScope};
use super::system_fields::{finalizers, is_being_deleted, metadata_mut, now_rfc3339};
use crate::storage::{accept_any_deletion, ListOptions, Preconditions};

/// The parts of a `DeleteOptions` body the registry honours (decoded, and refused when
/// malformed, by the api's body decoder).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    /// `preconditions.uid` and `preconditions.resourceVersion`.
    pub preconditions: Preconditions,
    /// `gracePeriodSeconds` (custom resources are deleted at once; recorded only).
    pub grace_period_seconds: Option<i64>,
    /// `propagationPolicy`: `Orphan`, `Background` or `Foreground`.
    pub propagation_policy: Option<String>,
}

impl RegistryStore {
    /// Deletes `name`, or begins its deletion when it has finalizers. `Outcome.created` is
    /// unused; the object returned is its last state.
    ///
    /// # Errors
    /// `NotFound`, `Conflict` (preconditions), `Invalid` (the strategy refused), strategy failures.
    pub async fn delete(
        &self,
        scope: &RequestScope,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Outcome> {
        let key = self.key(scope, name);
        let target = self.target(name);
        let current = self
            .storage
            .get(&key, Default::default())
            .await
            .map_err(|e| Error::storage(e, &target))?
            .ok_or_else(|| Error::NotFound(target.clone().into()))?;
        opts.preconditions
            .check(&key, &current)
            .map_err(|e| conflict(e, &target))?;
        let ctx = self.ctx(scope);
        let admission = self.strategy.before_delete(&ctx, &current).await?;
        if let Some(refusal) = admission.refusal {
            return Err(Error::refused(&target, refusal));
        }
        if !admission.field_errors.is_empty() {
            return Err(Error::Invalid {
                target: target.into(),
                causes: admission.field_errors,
            });
        }
        let mut warnings = admission.warnings;
        if !finalizers(&current).is_empty() {
            if is_being_deleted(&current) || scope.dry_run {
                let mut obj = current;
                if !is_being_deleted(&obj) {
                    mark_deleted(&mut obj, opts);
                }
                return Ok(Outcome {
                    object: self.to_version(obj, &scope.version),
                    warnings,
                    created: false,
                });
            }
            let opts2 = opts.clone();
            let try_update: crate::storage::TryUpdate<'_> = Box::new(move |cur: Option<Value>| {
                let opts = opts2.clone();
                Box::pin(async move {
                    let mut obj = cur.ok_or("the object disappeared")?;
                    if !is_being_deleted(&obj) {
                        mark_deleted(&mut obj, &opts);
                    }
                    Ok(obj)
                })
            });
            let updated = self
                .storage
                .guaranteed_update(&key, &opts.preconditions, false, try_update, Some(current))
                .await
                .map_err(|e| {
                    if e.is_conflict() {
                        conflict(e, &target)
                    } else {
                        Error::from_storage_call(e, &target)
                    }
                })?;
            return Ok(Outcome {
                object: self.to_version(updated, &scope.version),
                warnings,
                created: false,
            });
        }
        if scope.dry_run {
            return Ok(Outcome {
                object: self.to_version(current, &scope.version),
                warnings,
                created: false,
            });
        }
        let deleted = self
            .storage
            .delete(
                &key,
                &opts.preconditions,
                accept_any_deletion(),
                Some(current),
            )
            .await
            .map_err(|e| {
                if e.is_conflict() {
                    conflict(e, &target)
                } else {
                    Error::storage(e, &target)
                }
            })?;
        let object = self.to_version(deleted, &scope.version);
        let (strategy, obj) = (self.strategy.clone(), object.clone());
        let hook = async move { strategy.after_delete(&ctx, &obj).await };
        warnings.extend(self.run_hook("after_delete", hook).await);
        Ok(Outcome {
            object,
            warnings,
            created: false,
        })
    }

    /// Deletes every object the list options select; answers the list of what was deleted.
    ///
    /// # Errors
    /// As `list`; the first failing delete other than NotFound.
    pub async fn delete_collection(
        &self,
        scope: &RequestScope,
        list: ListOptions,
        opts: &DeleteOptions,
    ) -> Result<Outcome> {
        let listed = self.list(scope, list).await?;
        let mut deleted = Vec::new();
        let mut warnings = Vec::new();
        for item in &listed.items {
            let name = item.name().unwrap_or_default().to_string();
            let mut item_scope = scope.clone();
            if self.def.namespaced {
                item_scope.namespace = item.namespace().map(String::from);
            }
            match self.delete(&item_scope, &name, opts).await {
                Ok(o) => {
                    warnings.extend(o.warnings);
                    deleted.push(o.object);
                }
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e),
            }
        }
        let object = json!({
            "apiVersion": self.def.api_version(&scope.version),
            "kind": self.def.list_kind,
            "metadata": {"resourceVersion": listed.resource_version.to_string()},
            "items": deleted,
        });
        Ok(Outcome {
            object,
            warnings,
            created: false,
        })
    }
}

fn mark_deleted(obj: &mut Value, opts: &DeleteOptions) {
    let meta = metadata_mut(obj);
    meta.insert("deletionTimestamp".into(), Value::String(now_rfc3339()));
    meta.insert(
        "deletionGracePeriodSeconds".into(),
        Value::from(opts.grace_period_seconds.unwrap_or(0)),
    );
}

fn conflict(e: crate::storage::StorageError, target: &super::error::Target) -> Error {
    match e {
        crate::storage::StorageError::Conflict { message, .. } => Error::Conflict {
            target: target.clone().into(),
            message,
        },
        other => Error::storage(other, target),
    }
}
