//! The checks every write of a `RegistryStore` shares: the namespace's lifecycle, the
//! schema's defaults and pruning, the common validation and which causes a refusal reports.

use serde_json::Value;

use super::error::{Error, Result, Target};
use super::store::{RegistryStore, RequestScope};
use crate::strategy::{FieldError, FieldErrorKind};
use strategy_host_storage::GetOptions;

impl RegistryStore {
    /// Checks the namespace of a namespaced create of `name` exists and is not being
    /// terminated (Kubernetes' namespace lifecycle admission).
    pub(super) async fn check_namespace(&self, scope: &RequestScope, name: &str) -> Result<()> {
        let (Some(ns), Some(namespaces)) = (&scope.namespace, &self.namespaces) else {
            return Ok(());
        };
        if !self.def.namespaced {
            return Ok(());
        }
        let target = Target {
            group: String::new(),
            plural: "namespaces".into(),
            kind: "Namespace".into(),
            name: ns.clone(),
        };
        let key = format!("/namespaces/{ns}");
        let read = |resource_version: &str| GetOptions {
            resource_version: resource_version.into(),
            ignore_not_found: true,
        };
        // Any cached state will do, as Kubernetes' namespace lifecycle admission reads an
        // informer: a consistent read would wait on the store's revision per create.
        let mut found = namespaces
            .get(&key, read("0"))
            .await
            .map_err(|e| Error::storage(e, &target))?;
        if found.is_none() {
            // A miss may be a namespace created a moment ago (e.g. by the After hook now writing
            // into it) that the cache has not seen yet: confirm with a consistent read, as the
            // admission plugin falls back to a live lookup.
            found = namespaces
                .get(&key, read(""))
                .await
                .map_err(|e| Error::storage(e, &target))?;
        }
        match found {
            Some(ns_obj) if super::system_fields::is_being_deleted(&ns_obj) => {
                Err(Error::Forbidden {
                    target: self.target(name).into(),
                    message: super::namespace_lifecycle::terminating_refusal(ns),
                })
            }
            Some(_) => Ok(()),
            None => Err(Error::NotFound(target.into())),
        }
    }

    /// Schema work on an incoming object: defaults, pruning (reported per the field validation
    /// mode), and the validation errors of the result.
    pub(super) fn apply_schema(
        &self,
        scope: &RequestScope,
        obj: &mut Value,
        warnings: &mut Vec<String>,
    ) -> Result<()> {
        let Some(schema) = self
            .def
            .version(&scope.version)
            .and_then(|v| v.schema.as_ref())
        else {
            return Ok(());
        };
        super::schema::apply_defaults(obj, schema);
        let pruned = super::schema::prune(obj, schema, true);
        if scope.applying {
            // Server-side apply types its configuration against the schema first, and words
            // what the schema lacks as structured-merge-diff does.
            let problems: Vec<String> = pruned
                .iter()
                .map(|p| format!(".{p}: field not declared in schema"))
                .collect();
            let judged = scope.field_validation.judge(problems).map_err(|e| {
                let errors = match e.0.as_slice() {
                    [one] => one.clone(),
                    many => format!("errors:\n  {}", many.join("\n  ")),
                };
                Error::BadRequest(format!(
                    "failed to create typed patch object ({}, Kind={}): {errors}",
                    self.def.api_version(&scope.version),
                    self.def.kind
                ))
            })?;
            warnings.extend(judged);
            return Ok(());
        }
        let problems = pruned
            .iter()
            .map(|p| format!("unknown field {p:?}"))
            .collect();
        warnings.extend(
            scope
                .field_validation
                .judge(problems)
                .map_err(|e| Error::BadRequest(e.to_string()))?,
        );
        Ok(())
    }

    /// Validation common to create and update: name, labels, annotations, schema.
    /// The checks every object gets: its name, labels and annotations, its schema, and (when the
    /// schema holds) the schema's CEL rules, with `old` for transition rules on update.
    pub(super) fn validate_common(
        &self,
        scope: &RequestScope,
        obj: &Value,
        old: Option<&Value>,
    ) -> Vec<FieldError> {
        let mut errors = Vec::new();
        let name = super::system_fields::meta_str(obj, "name").unwrap_or("");
        if let Some(why) = super::names::object_name_error(&self.def.group, &self.def.plural, name)
        {
            errors.push(FieldError {
                kind: FieldErrorKind::Invalid,
                field: "metadata.name".into(),
                detail: format!("{name:?}: {why}"),
            });
        }
        errors.extend(super::names::validate_labels_and_annotations(obj));
        let Some(version) = self.def.version(&scope.version) else {
            return errors;
        };
        if let Some(schema) = &version.schema {
            let schema_errors = super::schema::validate_update(obj, old, schema, "");
            // Rules assume the structure the schema promises, so they run once it holds.
            if schema_errors.is_empty() {
                if let Some(rules) = &version.cel {
                    errors.extend(rules.validate(
                        obj,
                        old,
                        &self.def.api_version(&scope.version),
                        &self.def.kind,
                        scope.subresource.as_deref() == Some("status"),
                    ));
                }
            }
            errors.extend(schema_errors);
        }
        errors
    }

    /// The causes a write is refused with: the strategy's and the common validation's — unless
    /// the schema found members of the wrong type. Then only the schema's: Kubernetes validates a
    /// custom resource's schema before any other validation could read it, so one field gets one
    /// cause (not the schema's `must be of type integer` and the strategy's own).
    pub(super) fn write_causes(
        strategy: Vec<FieldError>,
        common: Vec<FieldError>,
    ) -> Vec<FieldError> {
        if common.iter().any(|e| e.kind == FieldErrorKind::TypeInvalid) {
            return common;
        }
        let mut causes = strategy;
        causes.extend(common);
        causes
    }

    /// When the strategy failed on an object: the schema's type errors instead, if it has any
    /// (a strategy decoding its typed object fails on a member of the wrong type, which the
    /// schema names better).
    pub(super) fn ill_typed(
        &self,
        scope: &RequestScope,
        obj: &Value,
        old: Option<&Value>,
    ) -> Option<Error> {
        let schema = self.def.version(&scope.version)?.schema.as_ref()?;
        let causes: Vec<FieldError> = super::schema::validate_update(obj, old, schema, "")
            .into_iter()
            .filter(|e| e.kind == FieldErrorKind::TypeInvalid)
            .collect();
        let name = super::system_fields::meta_str(obj, "name").unwrap_or("");
        (!causes.is_empty()).then(|| Error::Invalid {
            target: self.target(name).into(),
            causes,
        })
    }
}
