//! Update (PUT, PATCH, and the status subresource) through `storage.guaranteed_update`: the
//! object producer runs on the current state, then system fields, schema, strategy and
//! validation; an object being deleted whose last finalizer went is deleted.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::admission::Operation;
use super::error::{Carried, Error, Result};
use super::namespace_lifecycle::{finalize_written_over, spec_finalizers};
use super::store::{Outcome, RegistryStore, RequestScope};
use super::system_fields::{finalizers, is_being_deleted, meta_str, metadata_mut};
use crate::strategy::{FieldError, FieldErrorKind, Strategy};
use strategy_host_storage::{ConditionalDelete, GuaranteedUpdate, Preconditions};

/// Produces the new object from the current one (`None` when it does not exist): a PUT returns
/// its body, a PATCH applies itself.
pub type UpdateFn = Arc<dyn Fn(Option<&Value>) -> Result<Value> + Send + Sync>;

/// What the last run of the update transform reported: warnings, created, the old object.
type Decided = (Vec<String>, bool, Option<Value>);

/// What one run of the update transform decided.
struct Prepared {
    object: Value,
    old: Option<Value>,
    warnings: Vec<String>,
    created: bool,
}

impl RegistryStore {
    /// Updates (or, when the strategy allows, creates) the object `name`.
    ///
    /// # Errors
    /// `NotFound`, `Conflict`, `Invalid`, `BadRequest`, strategy failures.
    pub async fn update(
        &self,
        scope: &RequestScope,
        name: &str,
        input: UpdateFn,
    ) -> Result<Outcome> {
        let key = self.key(scope, name);
        let target = self.target(name);
        // An apply creates a missing object whatever the strategy says of PUT.
        let allow_create = (scope.applying || self.strategy.allow_create_on_update())
            && scope.subresource.is_none();
        if scope.dry_run {
            let current = self
                .storage
                .get(
                    &key,
                    strategy_host_storage::GetOptions::ignoring_not_found(),
                )
                .await
                .map_err(|e| Error::storage(e, &target))?;
            if current.is_none() && !allow_create {
                return Err(Error::NotFound(target.into()));
            }
            let p = self.prepare_update(scope, name, current, &input).await?;
            return Ok(Outcome {
                object: self.at_version(p.object, &scope.version).await?,
                warnings: p.warnings,
                created: p.created,
            });
        }
        let result: Arc<Mutex<Option<Decided>>> = Arc::default();
        let (this, scope2, name2, slot) = (
            self.clone(),
            scope.clone(),
            name.to_string(),
            result.clone(),
        );
        let try_update: strategy_host_storage::TryUpdate<'_> =
            Box::new(move |current: Option<Value>| {
                let (this, scope, name, input, slot) = (
                    this.clone(),
                    scope2.clone(),
                    name2.clone(),
                    input.clone(),
                    slot.clone(),
                );
                Box::pin(async move {
                    let p = this
                        .prepare_update(&scope, &name, current, &input)
                        .await
                        .map_err(|e| Box::new(Carried(e)) as strategy_host_storage::BoxError)?;
                    *slot.lock().unwrap_or_else(|p| p.into_inner()) =
                        Some((p.warnings, p.created, p.old));
                    Ok(p.object)
                })
            });
        let stored = self
            .storage
            .guaranteed_update(
                &key,
                GuaranteedUpdate::new(try_update).ignore_not_found(allow_create),
            )
            .await
            .map_err(|e| Error::from_storage_call(e, &target))?;
        let (warnings, created, old) = result
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .unwrap_or_default();
        let held_by_spec = self.def.is_namespaces() && !spec_finalizers(&stored).is_empty();
        if is_being_deleted(&stored) && finalizers(&stored).is_empty() && !held_by_spec {
            let rv = meta_str(&stored, "resourceVersion").map(String::from);
            let pre = Preconditions {
                uid: None,
                resource_version: rv,
            };
            let deleted = match self
                .storage
                .delete(
                    &key,
                    ConditionalDelete::default()
                        .preconditions(&pre)
                        .cached_existing(Some(stored.clone())),
                )
                .await
            {
                Ok(d) => d,
                Err(e) if e.is_not_found() => stored.clone(),
                Err(e) => return Err(Error::storage(e, &target)),
            };
            return self.finish_removal(scope, deleted, warnings).await;
        }
        let object = self.at_version(stored, &scope.version).await?;
        let mut warnings = warnings;
        let failed = match old {
            Some(old) => {
                let hook = |strategy: Arc<dyn Strategy>, ctx| {
                    let object = object.clone();
                    async move { strategy.after_update(&ctx, &object, &old).await }
                };
                self.run_hook(scope, Operation::Update, hook).await
            }
            None => self.after_create(scope, &object).await,
        };
        warnings.extend(failed);
        Ok(Outcome {
            object,
            warnings,
            created,
        })
    }

    /// The update transform, shared by the real write (inside the CAS loop) and dry runs.
    async fn prepare_update(
        &self,
        scope: &RequestScope,
        name: &str,
        current: Option<Value>,
        input: &UpdateFn,
    ) -> Result<Prepared> {
        let target = self.target(name);
        let Some(old) = current else {
            // Create on update: the same pipeline as a create.
            let mut obj = input(None)?;
            self.check_name(&obj, name)?;
            if obj.is_object() && meta_str(&obj, "name").is_none_or(str::is_empty) {
                // The URL names the object (never a generateName).
                metadata_mut(&mut obj).insert("name".into(), Value::String(name.into()));
            }
            let mut warnings = Vec::new();
            self.before_create(scope, &mut obj, &mut warnings).await?;
            let object = self.at_storage_version(obj).await?;
            return Ok(Prepared {
                object,
                old: None,
                warnings,
                created: true,
            });
        };
        let old = self.at_version(old, &scope.version).await?;
        let mut new = input(Some(&old))?;
        if let (false, Some(m)) = (scope.applying, self.manager(scope)) {
            super::fieldmanager::on_update(&old, &mut new, self.schema(scope), &m)
                .map_err(|r| self.refused(name, r))?;
        }
        let mutated = self
            .mutate(scope, Operation::Update, &mut new, Some(&old))
            .await?;
        self.check_name(&new, name)?;
        self.check_identity(scope, &mut new)?;
        let old_rv = meta_str(&old, "resourceVersion").unwrap_or("").to_string();
        match meta_str(&new, "resourceVersion").unwrap_or("") {
            "" if !self.strategy.allow_unconditional_update() => {
                return Err(Error::invalid(
                    &target,
                    FieldError {
                        kind: FieldErrorKind::Invalid,
                        field: "metadata.resourceVersion".into(),
                        detail: "0x0: must be specified for an update".into(),
                    },
                ))
            }
            "" => {}
            rv if rv != old_rv => return Err(Error::modified(&target)),
            _ => {}
        }
        let mut warnings = mutated;
        let status_only = scope.subresource.as_deref() == Some("status");
        match scope.subresource.as_deref() {
            // A namespace's status write may change its metadata too, only not its spec
            // (kube-apiserver's namespace status strategy).
            Some("status") if self.def.is_namespaces() => keep_from_old(&old, &mut new, "spec")?,
            Some("status") => new = status_written_over(&old, &new),
            Some("finalize") => new = finalize_written_over(&old, &new),
            // Only `finalize` changes a namespace's finalizers.
            _ if self.def.is_namespaces() => new = finalize_written_over(&new, &old),
            _ => {}
        }
        self.apply_schema(scope, &mut new, &mut warnings)?;
        if !status_only
            && self
                .def
                .version(&scope.version)
                .is_some_and(|v| v.status_subresource)
        {
            keep_from_old(&old, &mut new, "status")?;
        }
        let mut causes = Vec::new();
        if is_being_deleted(&old) {
            let before = finalizers(&old);
            if finalizers(&new).iter().any(|f| !before.contains(f)) {
                causes.push(FieldError {
                    kind: FieldErrorKind::Forbidden,
                    field: "metadata.finalizers".into(),
                    detail: "no new finalizers can be added if the object is being deleted".into(),
                });
            }
        }
        super::system_fields::prepare_for_update(&mut new, &old, self.def.tracks_generation());
        self.check_metadata_shape(&new)?;
        let admission = match self
            .strategy
            .before_update(&self.ctx(scope), &mut new, &old)
            .await
        {
            Ok(admission) => admission,
            Err(e) => return Err(self.ill_typed(scope, &new, Some(&old)).unwrap_or(e.into())),
        };
        self.check_strategy_output(&new)?;
        warnings.extend(admission.warnings);
        if let Some(refusal) = admission.refusal {
            return Err(Error::refused(&target, refusal));
        }
        causes.extend(Self::write_causes(
            admission.field_errors,
            self.validate_common(scope, &new, Some(&old)),
        ));
        if !causes.is_empty() {
            return Err(Error::Invalid {
                target: target.into(),
                causes,
            });
        }
        self.admit(scope, Operation::Update, &new, Some(&old))
            .await?;
        let mut object = self.at_storage_version(new).await?;
        metadata_mut(&mut object).insert("resourceVersion".into(), Value::String(old_rv));
        Ok(Prepared {
            object,
            old: Some(old),
            warnings,
            created: false,
        })
    }

    fn check_name(&self, obj: &Value, name: &str) -> Result<()> {
        match meta_str(obj, "name") {
            Some(n) if n != name => Err(Error::BadRequest(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            ))),
            _ => Ok(()),
        }
    }
}

/// What a write to the status subresource stores: `old` with `new`'s status (and the ownership
/// its write recorded); labels, annotations and spec are left as they were.
fn status_written_over(old: &Value, new: &Value) -> Value {
    let mut merged = old.clone();
    let meta = metadata_mut(&mut merged);
    match new.pointer("/metadata/managedFields") {
        Some(m) => meta.insert("managedFields".into(), m.clone()),
        None => meta.remove("managedFields"),
    };
    match new.get("status") {
        Some(s) => merged["status"] = s.clone(),
        None => {
            if let Some(m) = merged.as_object_mut() {
                m.remove("status");
            }
        }
    }
    merged
}

/// `new` keeps `old`'s `field` (absent when `old` has none): the status on a write to the main
/// resource of a kind with a status subresource, the spec on a namespace's status write.
fn keep_from_old(old: &Value, new: &mut Value, field: &str) -> Result<()> {
    let map = new
        .as_object_mut()
        .ok_or_else(|| Error::BadRequest("the body must be an object".into()))?;
    match old.get(field) {
        Some(s) => map.insert(field.into(), s.clone()),
        None => map.remove(field),
    };
    Ok(())
}
