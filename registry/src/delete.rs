//! Delete and deletecollection: preconditions, the strategy's before_delete, the propagation
//! policy (the garbage collector's `orphan` and `foregroundDeletion` finalizers), finalizers (an
//! object with finalizers gets a deletionTimestamp instead of being removed; a namespace's
//! `spec.finalizers` count too; a CustomResourceDefinition gains the cleanup finalizer), then
//! `storage.delete`; the After hook runs once committed.
//!
//! Every check is decided on the state it is about to change: the decision runs inside the
//! storage layer's callbacks (delete's validation, guaranteed_update's transform), which run
//! again on fresh state whenever the write loses a race (Kubernetes' `Store.Delete` passes its
//! checks to `Storage.Delete` the same way). A finalizer or a veto that appears while a delete
//! retries is honoured.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::admission::Operation;
use super::crd_lifecycle;
use super::error::{Carried, Error, Result, Target};
use super::namespace_lifecycle::{self as namespaces, spec_finalizers};
use super::store::{Outcome, RegistryStore, RequestScope};
use super::system_fields::{finalizers, is_being_deleted, metadata_mut, now_rfc3339};
use crate::strategy::{Strategy, StrategyContext};
use strategy_host_storage::{
    ConditionalDelete, GetOptions, GuaranteedUpdate, ListOptions, Preconditions, StorageError,
    TryUpdate, ValidateDeletion,
};

/// How many times a delete may switch between removing the object and marking it deleting
/// (finalizers coming and going under it) before it answers Conflict.
const MAX_DECISION_FLIPS: usize = 8;

/// The parts of a `DeleteOptions` body the registry honours (decoded, and refused when
/// malformed, by the api's body decoder).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    /// `preconditions.uid` and `preconditions.resourceVersion`.
    pub preconditions: Preconditions,
    /// `gracePeriodSeconds` (custom resources are deleted at once; recorded only).
    pub grace_period_seconds: Option<i64>,
    /// `propagationPolicy`: `Orphan`, `Background` or `Foreground` (`orphanDependents`
    /// already mapped to it).
    pub propagation_policy: Option<String>,
}

/// The finalizer that keeps an owner until the garbage collector has deleted its blocking
/// dependents (`propagationPolicy: Foreground`).
pub const FOREGROUND_DELETION: &str = "foregroundDeletion";

/// The finalizer that keeps an owner until the garbage collector has removed the references
/// its dependents hold to it (`propagationPolicy: Orphan`).
pub const ORPHAN: &str = "orphan";

/// `finalizers` as a delete with `policy` leaves them: an explicit policy replaces the garbage
/// collector's finalizers with its own (Background with none); no policy keeps them.
fn with_propagation(mut finalizers: Vec<String>, policy: Option<&str>) -> Vec<String> {
    let Some(policy) = policy else {
        return finalizers;
    };
    finalizers.retain(|f| f != ORPHAN && f != FOREGROUND_DELETION);
    match policy {
        "Orphan" => finalizers.push(ORPHAN.into()),
        "Foreground" => finalizers.push(FOREGROUND_DELETION.into()),
        _ => {}
    }
    finalizers
}

/// What a delete does to the object it was decided on.
#[derive(Debug)]
enum Decision {
    /// Remove it now.
    Remove,
    /// Keep it, marked deleting (a deletionTimestamp), until its finalizers are gone; the
    /// object as it should be stored.
    MarkDeleting(Value),
}

/// Why a storage callback stopped: the other kind of write is needed.
#[derive(Debug, thiserror::Error)]
enum Switch {
    /// The object gained finalizers: mark it deleting instead of removing it.
    #[error("the object has finalizers")]
    ToMarkDeleting,
    /// The object lost its finalizers: remove it instead of marking it.
    #[error("the object has no finalizers")]
    ToRemove,
}

/// The delete's checks and decision, shared by the storage callbacks it runs in.
#[derive(Clone)]
struct Decider {
    /// The store (for validating admission).
    store: RegistryStore,
    /// The request.
    scope: RequestScope,
    strategy: Arc<dyn Strategy>,
    ctx: StrategyContext,
    target: Target,
    grace_period_seconds: Option<i64>,
    /// The request's propagation policy, if it named one.
    propagation_policy: Option<String>,
    /// The object is a core namespace: its `spec.finalizers` hold the deletion back too, and
    /// it enters phase `Terminating`.
    namespace: bool,
    /// The object is a CustomResourceDefinition: its first delete adds the cleanup finalizer
    /// (its objects go first) and the `Terminating` condition.
    definition: bool,
    /// The warnings of the last decision (the one the committed write was decided on).
    warnings: Arc<Mutex<Vec<String>>>,
}

impl Decider {
    /// Asks the strategy about deleting `current` and decides what the delete does to it.
    ///
    /// # Errors
    /// The strategy's refusal or field errors; its failure to run.
    async fn decide(&self, current: &Value) -> Result<Decision> {
        let admission = self.strategy.before_delete(&self.ctx, current).await?;
        if let Some(refusal) = admission.refusal {
            return Err(Error::refused(&self.target, refusal));
        }
        if !admission.field_errors.is_empty() {
            return Err(Error::Invalid {
                target: self.target.clone().into(),
                causes: admission.field_errors,
            });
        }
        let mut warnings = admission.warnings;
        warnings.extend(
            self.store
                .admit(&self.scope, Operation::Delete, &Value::Null, Some(current))
                .await?,
        );
        *self.warnings.lock().unwrap_or_else(|p| p.into_inner()) = warnings;
        let held_by_spec = self.namespace && !spec_finalizers(current).is_empty();
        if held_by_spec && is_being_deleted(current) {
            return Err(Error::Conflict {
                target: self.target.clone().into(),
                message: namespaces::STILL_TERMINATING.into(),
            });
        }
        let before = finalizers(current);
        let mut after = with_propagation(before.clone(), self.propagation_policy.as_deref());
        let mut marked = current.clone();
        if self.definition && !is_being_deleted(current) {
            crd_lifecycle::mark_terminating(&mut marked, &mut after);
        }
        if after.is_empty() && !held_by_spec {
            return Ok(Decision::Remove);
        }
        let meta = metadata_mut(&mut marked);
        if after != before {
            meta.insert("finalizers".into(), serde_json::json!(after));
        }
        if !is_being_deleted(current) {
            meta.insert("deletionTimestamp".into(), Value::String(now_rfc3339()));
            meta.insert(
                "deletionGracePeriodSeconds".into(),
                Value::from(self.grace_period_seconds.unwrap_or(0)),
            );
        }
        if self.namespace {
            marked["status"]["phase"] = Value::String("Terminating".into());
        }
        Ok(Decision::MarkDeleting(marked))
    }

    /// `storage.delete`'s validation: the object is removed only when the decision on it is
    /// to remove it.
    fn validate_removal(&self) -> ValidateDeletion<'static> {
        let decider = self.clone();
        Box::new(move |current: Value| {
            let decider = decider.clone();
            Box::pin(async move {
                match decider.decide(&current).await {
                    Ok(Decision::Remove) => Ok(()),
                    Ok(Decision::MarkDeleting(_)) => Err(Switch::ToMarkDeleting.into()),
                    Err(e) => Err(Carried(e).into()),
                }
            })
        })
    }

    /// `storage.guaranteed_update`'s transform: the object is marked deleting only when the
    /// decision on it is to keep it.
    fn mark_deleting(&self) -> TryUpdate<'static> {
        let decider = self.clone();
        Box::new(move |current: Option<Value>| {
            let decider = decider.clone();
            Box::pin(async move {
                let current = current.ok_or("the object disappeared")?;
                match decider.decide(&current).await {
                    Ok(Decision::MarkDeleting(marked)) => Ok(marked),
                    Ok(Decision::Remove) => Err(Switch::ToRemove.into()),
                    Err(e) => Err(Carried(e).into()),
                }
            })
        })
    }

    fn warnings(&self) -> Vec<String> {
        std::mem::take(&mut *self.warnings.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// Which `Switch` a storage error carries, if it is one.
fn switch_of(e: &StorageError) -> Option<&Switch> {
    match e {
        StorageError::Aborted(boxed) => boxed.downcast_ref::<Switch>(),
        _ => None,
    }
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
        let namespace = self.def.is_namespaces();
        if namespace && namespaces::SYSTEM_NAMESPACES.contains(&name) {
            return Err(Error::Forbidden {
                target: target.into(),
                message: namespaces::UNDELETABLE.into(),
            });
        }
        let decider = Decider {
            store: self.clone(),
            scope: scope.clone(),
            strategy: self.strategy.clone(),
            ctx: self.ctx(scope),
            target: target.clone(),
            grace_period_seconds: opts.grace_period_seconds,
            propagation_policy: opts.propagation_policy.clone(),
            namespace,
            definition: self.def.is_custom_resource_definitions(),
            warnings: Arc::default(),
        };
        if scope.dry_run {
            return self.dry_run_delete(scope, &key, opts, &decider).await;
        }
        // The cached copy picks the likely first write and saves the loops a read; they re-read
        // it when it is stale.
        let any_state = GetOptions {
            resource_version: "0".into(),
            ignore_not_found: true,
        };
        let mut hint = self.storage.get(&key, any_state).await.ok().flatten();
        // A wrong first guess costs one switch.
        let mut remove = hint.as_ref().is_none_or(|o| {
            finalizers(o).is_empty() && opts.propagation_policy.is_none() && !namespace
        });
        for _ in 0..MAX_DECISION_FLIPS {
            let written = if remove {
                let request = ConditionalDelete::new(decider.validate_removal())
                    .preconditions(&opts.preconditions)
                    .cached_existing(hint.take());
                self.storage.delete(&key, request).await
            } else {
                let request = GuaranteedUpdate::new(decider.mark_deleting())
                    .preconditions(&opts.preconditions)
                    .cached_existing(hint.take());
                self.storage.guaranteed_update(&key, request).await
            };
            match written {
                Ok(object) if remove => {
                    return self.finish_removal(scope, object, decider.warnings()).await
                }
                Ok(object) => {
                    return Ok(Outcome {
                        object: self.at_version(object, &scope.version).await?,
                        warnings: decider.warnings(),
                        created: false,
                    })
                }
                Err(e) if switch_of(&e).is_some() => remove = !remove,
                Err(e) => return Err(Error::from_storage_call(e, &target)),
            }
        }
        Err(Error::modified(&target))
    }

    /// A dry-run delete: the decision on the current object, nothing written.
    async fn dry_run_delete(
        &self,
        scope: &RequestScope,
        key: &str,
        opts: &DeleteOptions,
        decider: &Decider,
    ) -> Result<Outcome> {
        let target = &decider.target;
        let current = self
            .storage
            .get(key, Default::default())
            .await
            .map_err(|e| Error::storage(e, target))?
            .ok_or_else(|| Error::NotFound(target.clone().into()))?;
        opts.preconditions
            .check(key, &current)
            .map_err(|e| Error::storage(e, target))?;
        let object = match decider.decide(&current).await? {
            Decision::Remove => current,
            Decision::MarkDeleting(marked) => marked,
        };
        Ok(Outcome {
            object: self.at_version(object, &scope.version).await?,
            warnings: decider.warnings(),
            created: false,
        })
    }

    /// The outcome of a committed removal of `deleted`, once its After hook ran (a failing hook
    /// adds a warning; the deletion stands).
    ///
    /// # Errors
    /// The conversion of `deleted` to the request's version (the hook runs all the same).
    pub(super) async fn finish_removal(
        &self,
        scope: &RequestScope,
        deleted: Value,
        mut warnings: Vec<String>,
    ) -> Result<Outcome> {
        let converted = self.at_version(deleted.clone(), &scope.version).await;
        let hook = |strategy: Arc<dyn Strategy>, ctx| {
            let obj = converted.as_ref().map_or(deleted, Value::clone);
            async move { strategy.after_delete(&ctx, &obj).await }
        };
        warnings.extend(self.run_hook(scope, Operation::Delete, hook).await);
        Ok(Outcome {
            object: converted?,
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
