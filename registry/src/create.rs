//! Create: `before_create` (identity, schema, name, system fields, strategy, validation), then
//! `storage.create`; generateName collisions retried with a fresh suffix; the after hook run
//! once committed.

use std::sync::Arc;

use serde_json::Value;

use super::admission::Operation;
use super::error::{Error, Result};
use super::store::{Outcome, RegistryStore, RequestScope};
use super::system_fields::{meta_str, metadata_mut};
use crate::strategy::{FieldError, FieldErrorKind, Strategy};

/// How many fresh generateName suffixes a create tries before giving up.
const GENERATE_NAME_ATTEMPTS: usize = 8;

/// Refuses a body whose `apiVersion` or `kind` (when it gives them) are not `api_version` and
/// `kind`, with kube-apiserver's 400 texts.
///
/// # Errors
/// [`Error::BadRequest`] naming the field that does not match.
pub fn check_type(obj: &Value, api_version: &str, kind: &str) -> Result<()> {
    let field = |name: &str| obj.get(name).and_then(Value::as_str).unwrap_or_default();
    match (field("apiVersion"), field("kind")) {
        (v, _) if !v.is_empty() && v != api_version => Err(Error::BadRequest(format!(
            "the API version in the data ({v}) does not match the expected API version ({api_version})"
        ))),
        (_, k) if !k.is_empty() && k != kind => Err(Error::BadRequest(format!(
            "the kind in the data ({k}) does not match the expected kind ({kind})"
        ))),
        _ => Ok(()),
    }
}

impl RegistryStore {
    /// Checks `apiVersion`/`kind` and the namespace of an incoming object against the request.
    pub(super) fn check_identity(&self, scope: &RequestScope, obj: &mut Value) -> Result<()> {
        if !obj.is_object() {
            return Err(Error::BadRequest(
                "the request body must be a JSON object".into(),
            ));
        }
        check_type(obj, &self.def.api_version(&scope.version), &self.def.kind)?;
        let meta = metadata_mut(obj);
        if self.def.namespaced {
            let ns = scope.namespace.clone().ok_or_else(|| {
                Error::BadRequest(
                    "the namespace of the request is required for a namespaced resource".into(),
                )
            })?;
            match meta.get("namespace").and_then(Value::as_str) {
                None | Some("") => {}
                Some(n) if n == ns => {}
                Some(_) => {
                    return Err(Error::BadRequest(
                        "the namespace of the provided object does not match the namespace sent on the request".into(),
                    ))
                }
            }
            meta.insert("namespace".into(), Value::String(ns));
        } else {
            meta.remove("namespace");
        }
        Ok(())
    }

    /// Refuses metadata that is not shaped like `ObjectMeta` before a strategy sees it, so a
    /// module that decodes metadata into typed fields gets well-formed input (400, as
    /// Kubernetes' decoder answers).
    pub(super) fn check_metadata_shape(&self, obj: &Value) -> Result<()> {
        match super::names::metadata_shape_error(obj) {
            None => Ok(()),
            Some(why) => Err(Error::BadRequest(format!("invalid object: {why}"))),
        }
    }

    /// Refuses what a strategy returned when it is not an object (a broken module).
    pub(super) fn check_strategy_output(&self, obj: &Value) -> Result<()> {
        if obj.is_object() {
            return Ok(());
        }
        Err(Error::Strategy(crate::strategy::StrategyError {
            module: self.strategy.name().to_string(),
            reason: "the strategy returned something that is not a JSON object".into(),
        }))
    }

    /// Everything between a create's body and the store (Kubernetes' `rest.BeforeCreate`),
    /// shared by create and create-on-update: identity, schema (defaults, pruning), the name
    /// (generated from `generateName` when missing), system fields, status stripped where a
    /// status subresource owns it, the strategy's create phase, validation (schema, CEL) and
    /// the namespace check.
    pub(super) async fn before_create(
        &self,
        scope: &RequestScope,
        obj: &mut Value,
        warnings: &mut Vec<String>,
    ) -> Result<()> {
        if self.def.terminating {
            return Err(Error::Terminating {
                target: self.target("").into(),
                verb: "create",
            });
        }
        warnings.extend(self.mutate(scope, Operation::Create, obj, None).await?);
        self.check_identity(scope, obj)?;
        self.apply_schema(scope, obj, warnings)?;
        if meta_str(obj, "name").unwrap_or("").is_empty() {
            let generate = meta_str(obj, "generateName").unwrap_or("").to_string();
            if generate.is_empty() {
                return Err(Error::invalid(
                    &self.target(""),
                    FieldError {
                        kind: FieldErrorKind::Required,
                        field: "metadata.name".into(),
                        detail: "name or generateName is required".into(),
                    },
                ));
            }
            let name = super::names::generate_name(&generate);
            metadata_mut(obj).insert("name".into(), Value::String(name));
        }
        super::system_fields::prepare_for_create(obj, self.def.tracks_generation());
        // Ownership is recorded from what the client sent, before the strategy changes it (an
        // apply has recorded its own).
        if let (false, Some(m)) = (scope.applying, self.manager(scope)) {
            let name = super::system_fields::meta_str(obj, "name")
                .unwrap_or("")
                .to_string();
            super::fieldmanager::on_create(obj, self.schema(scope), &m)
                .map_err(|r| self.refused(&name, r))?;
        }
        if self
            .def
            .version(&scope.version)
            .is_some_and(|v| v.status_subresource)
        {
            if let Some(map) = obj.as_object_mut() {
                map.remove("status");
            }
        }
        self.check_metadata_shape(obj)?;
        let admission = match self.strategy.before_create(&self.ctx(scope), obj).await {
            Ok(admission) => admission,
            Err(e) => return Err(self.ill_typed(scope, obj, None).unwrap_or(e.into())),
        };
        self.check_strategy_output(obj)?;
        warnings.extend(admission.warnings);
        let name = meta_str(obj, "name").unwrap_or("").to_string();
        if let Some(refusal) = admission.refusal {
            return Err(Error::refused(&self.target(&name), refusal));
        }
        let causes = Self::write_causes(
            admission.field_errors,
            self.validate_common(scope, obj, None),
        );
        if !causes.is_empty() {
            return Err(Error::Invalid {
                target: self.target(&name).into(),
                causes,
            });
        }
        warnings.extend(self.admit(scope, Operation::Create, obj, None).await?);
        self.check_namespace(scope, &name).await
    }

    /// Runs the strategy's AfterCreate hook on the created `object` (see `run_hook`): its
    /// failure, as a warning.
    pub(super) async fn after_create(
        &self,
        scope: &RequestScope,
        object: &Value,
    ) -> Option<String> {
        let hook = |strategy: Arc<dyn Strategy>, ctx| {
            let object = object.clone();
            async move { strategy.after_create(&ctx, &object).await }
        };
        self.run_hook(scope, Operation::Create, hook).await
    }

    /// Creates an object.
    ///
    /// # Errors
    /// `BadRequest`, `Invalid` (422), `NotFound` (namespace), storage `AlreadyExists`, strategy
    /// failures, `ResourceVersionSetOnCreate`.
    pub async fn create(&self, scope: &RequestScope, mut obj: Value) -> Result<Outcome> {
        // Refused as the store refuses it, after validation (as Kubernetes orders the two);
        // noted first because preparing the object clears the field.
        let carries_resource_version = !meta_str(&obj, "resourceVersion").unwrap_or("").is_empty();
        let generate = meta_str(&obj, "generateName").unwrap_or("").to_string();
        let explicit = meta_str(&obj, "name").unwrap_or("").to_string();
        let mut warnings = Vec::new();
        self.before_create(scope, &mut obj, &mut warnings).await?;
        if carries_resource_version {
            return Err(Error::ResourceVersionSetOnCreate);
        }
        let mut stored = self.at_storage_version(obj).await?;
        if scope.dry_run {
            return Ok(Outcome {
                object: self.at_version(stored, &scope.version).await?,
                warnings,
                created: true,
            });
        }
        let mut attempt = 0;
        let created = loop {
            let name = meta_str(&stored, "name").unwrap_or("").to_string();
            let key = self.key(scope, &name);
            // A generated name may be tried again: only then is a copy kept for it.
            let retry = explicit.is_empty() && attempt + 1 < GENERATE_NAME_ATTEMPTS;
            let object = if retry {
                stored.clone()
            } else {
                std::mem::take(&mut stored)
            };
            match self.storage.create(&key, object).await {
                Ok(created) => break created,
                Err(e) if e.is_already_exists() && retry => {
                    attempt += 1;
                    metadata_mut(&mut stored).insert(
                        "name".into(),
                        Value::String(super::names::generate_name(&generate)),
                    );
                }
                Err(e) => return Err(Error::storage(e, &self.target(&name))),
            }
        };
        let object = self.at_version(created, &scope.version).await?;
        warnings.extend(self.after_create(scope, &object).await);
        Ok(Outcome {
            object,
            warnings,
            created: true,
        })
    }
}
