//! A Deployment-like workload strategy: defaults replicas and the rollout strategy, validates
//! replicas and that the selector matches the template's labels, keeps the selector immutable and
//! the status untouched by main-resource updates.
//!
//! It works on a [`LazyObject`]: a call parses only the members it reads (`spec`'s few fields,
//! the template's labels), never the pod template's containers, and answers the host with its
//! defaults alone (ABI 1.4).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use strategy_guest_sdk::{
    Context, FieldError, FieldPath, FieldValue, LazyObject, Resource, Scope, Strategy,
};

/// `spec.selector`, read whole to compare it with the template's labels and with the old one
/// (and shown in field errors without its empty members).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Labels a pod must carry.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    /// Set-based requirements.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<Value>,
}

/// The strategy.
#[derive(Debug, Default)]
pub struct Deployments;

const ROLLING: &str = "RollingUpdate";
const RECREATE: &str = "Recreate";
const SELECTOR: &[&str] = &["spec", "selector"];

impl Strategy for Deployments {
    type Object = LazyObject;
    const NAME: &'static str = "deployments";
    const RESOURCES: &'static [Resource] = &[Resource::new(
        "apps.example.com",
        "v1",
        "Deployment",
        "deployments",
        Scope::Namespaced,
    )];

    fn prepare_for_create(&self, _ctx: &Context, obj: &mut LazyObject) {
        obj.remove("status");
        // A `spec` that is not an object is left for `validate` to refuse.
        let Some(spec) = obj.object_mut(&["spec"]) else {
            return;
        };
        spec.insert_if_absent("replicas", 1);
        spec.insert_if_absent("revisionHistoryLimit", 10);
        spec.insert_if_absent("progressDeadlineSeconds", 600);
        let Some(strategy) = spec.object_mut(&["strategy"]) else {
            return;
        };
        strategy.insert_if_absent("type", ROLLING);
        if strategy.get::<String>(&["type"]).ok().flatten().as_deref() == Some(ROLLING) {
            if let Some(rolling) = strategy.object_mut(&["rollingUpdate"]) {
                rolling.insert_if_absent("maxUnavailable", "25%");
                rolling.insert_if_absent("maxSurge", "25%");
            }
        }
    }

    fn validate(&self, _ctx: &Context, obj: &LazyObject) -> Vec<FieldError> {
        let spec = FieldPath::new("spec");
        let mut errs = Vec::new();
        match obj.get::<Value>(&["spec", "replicas"]) {
            Err(_) => {
                let value = obj.get::<Value>(&["spec"]).ok().flatten();
                return vec![FieldError::invalid(&spec, value, "must be an object")];
            }
            Ok(None) => errs.push(FieldError::required(
                &spec.child("replicas"),
                "replicas is required",
            )),
            Ok(Some(v)) => match v.as_i64() {
                Some(n) if n >= 0 => {}
                Some(n) => errs.push(FieldError::invalid(
                    &spec.child("replicas"),
                    n,
                    "must be greater than or equal to 0",
                )),
                None => errs.push(FieldError::invalid(
                    &spec.child("replicas"),
                    &v,
                    "must be an integer",
                )),
            },
        }
        let labels_path = spec.child("template").child("metadata").child("labels");
        let template_labels = obj
            .get::<BTreeMap<String, String>>(&["spec", "template", "metadata", "labels"])
            .unwrap_or_else(|e| {
                errs.push(malformed(&labels_path, &e));
                None
            });
        match obj.get::<LabelSelector>(SELECTOR) {
            Err(e) => errs.push(malformed(&spec.child("selector"), &e)),
            Ok(None) => errs.push(FieldError::required(
                &spec.child("selector"),
                "selector is required",
            )),
            Ok(Some(sel)) if sel.match_labels.is_empty() && sel.match_expressions.is_empty() => {
                errs.push(FieldError::invalid(
                    &spec.child("selector"),
                    FieldValue::json(&sel),
                    "empty selector is invalid for deployment",
                ))
            }
            Ok(Some(sel)) => {
                let labels = template_labels.as_ref();
                let matches = sel
                    .match_labels
                    .iter()
                    .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v));
                if !matches {
                    errs.push(FieldError::invalid(
                        &labels_path,
                        labels,
                        "`selector` does not match template `labels`",
                    ));
                }
            }
        }
        let path = spec.child("strategy");
        match obj.get::<String>(&["spec", "strategy", "type"]) {
            Err(e) => errs.push(malformed(&path.child("type"), &e)),
            Ok(None) => {}
            Ok(Some(kind)) if kind == ROLLING => {}
            Ok(Some(kind)) if kind == RECREATE => {
                if obj.contains(&["spec", "strategy", "rollingUpdate"]) {
                    errs.push(FieldError::forbidden(
                        &path.child("rollingUpdate"),
                        "may not be specified when strategy `type` is 'Recreate'",
                    ))
                }
            }
            Ok(Some(other)) => errs.push(FieldError::not_supported(
                &path.child("type"),
                other,
                &[RECREATE, ROLLING],
            )),
        }
        errs
    }

    fn prepare_for_update(&self, _ctx: &Context, new: &mut LazyObject, old: &LazyObject) {
        // A main-resource update never changes status (the status subresource does).
        new.copy_member(old, "status");
    }

    fn validate_update(
        &self,
        ctx: &Context,
        new: &LazyObject,
        old: &LazyObject,
    ) -> Vec<FieldError> {
        let mut errs = self.validate(ctx, new);
        let selector = |obj: &LazyObject| obj.get::<LabelSelector>(SELECTOR).ok().flatten();
        let new_selector = selector(new);
        if new_selector != selector(old) {
            errs.push(FieldError::immutable(
                &FieldPath::new("spec").child("selector"),
                new_selector.as_ref().map(FieldValue::json),
            ));
        }
        errs
    }
}

/// A member of the wrong type: the reason the read gives, with no value to show (the member
/// did not decode).
fn malformed(path: &FieldPath, e: &strategy_guest_sdk::MemberError) -> FieldError {
    FieldError::new(
        strategy_guest_sdk::FieldErrorKind::Invalid,
        path,
        e.reason(),
    )
}

#[cfg(test)]
mod tests;
