//! A Deployment-like workload strategy: defaults replicas and the rollout strategy, validates
//! replicas and that the selector matches the template's labels, keeps the selector immutable and
//! the status untouched by main-resource updates.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use strategy_guest_sdk::meta::ObjectMeta;
use strategy_guest_sdk::{Context, FieldError, FieldPath, Resource, Scope, Strategy};

/// The workload object; fields it does not name are kept in `rest`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Deployment {
    /// Metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The desired state.
    #[serde(default)]
    pub spec: DeploymentSpec,
    /// The observed state, written only through the status subresource.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub status: Value,
    /// `apiVersion`, `kind` and anything else.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// `spec` of a [`Deployment`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentSpec {
    /// Desired pod count (kept as JSON so a wrong type is a field error, not a decode failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<Value>,
    /// Which pods belong to the workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// The pod template.
    #[serde(default)]
    pub template: PodTemplate,
    /// How pods are replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<RolloutStrategy>,
    /// Old revisions kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i64>,
    /// Seconds before a stalled rollout is reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_deadline_seconds: Option<i64>,
    /// Other fields.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// A label selector.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Labels a pod must carry.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    /// Set-based requirements.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<Value>,
}

/// The pod template.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PodTemplate {
    /// The pods' metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// `spec` and anything else.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// `spec.strategy`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStrategy {
    /// `RollingUpdate` or `Recreate`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Parameters of a rolling update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling_update: Option<Map<String, Value>>,
}

/// The strategy.
#[derive(Debug, Default)]
pub struct Deployments;

const ROLLING: &str = "RollingUpdate";
const RECREATE: &str = "Recreate";

impl Strategy for Deployments {
    type Object = Deployment;
    const NAME: &'static str = "deployments";
    const RESOURCES: &'static [Resource] = &[Resource::new(
        "apps.example.com",
        "v1",
        "Deployment",
        "deployments",
        Scope::Namespaced,
    )];

    fn prepare_for_create(&self, _ctx: &Context, obj: &mut Deployment) {
        obj.status = Value::Null;
        let spec = &mut obj.spec;
        spec.replicas.get_or_insert(Value::from(1));
        spec.revision_history_limit.get_or_insert(10);
        spec.progress_deadline_seconds.get_or_insert(600);
        let strategy = spec.strategy.get_or_insert_with(Default::default);
        let kind = strategy.kind.get_or_insert_with(|| ROLLING.to_owned());
        if kind == ROLLING {
            let ru = strategy.rolling_update.get_or_insert_with(Default::default);
            ru.entry("maxUnavailable").or_insert_with(|| "25%".into());
            ru.entry("maxSurge").or_insert_with(|| "25%".into());
        }
    }

    fn validate(&self, _ctx: &Context, obj: &Deployment) -> Vec<FieldError> {
        let spec = FieldPath::new("spec");
        let mut errs = Vec::new();
        match &obj.spec.replicas {
            None => errs.push(FieldError::required(
                &spec.child("replicas"),
                "replicas is required",
            )),
            Some(v) => match v.as_i64() {
                Some(n) if n >= 0 => {}
                Some(_) => errs.push(FieldError::invalid(
                    &spec.child("replicas"),
                    "must be greater than or equal to 0",
                )),
                None => errs.push(FieldError::invalid(
                    &spec.child("replicas"),
                    "must be an integer",
                )),
            },
        }
        let template_labels = &obj.spec.template.metadata.labels;
        match &obj.spec.selector {
            None => errs.push(FieldError::required(
                &spec.child("selector"),
                "selector is required",
            )),
            Some(sel) if sel.match_labels.is_empty() && sel.match_expressions.is_empty() => errs
                .push(FieldError::invalid(
                    &spec.child("selector"),
                    "empty selector is invalid for deployment",
                )),
            Some(sel) => {
                let matches = sel
                    .match_labels
                    .iter()
                    .all(|(k, v)| template_labels.get(k) == Some(v));
                if !matches {
                    errs.push(FieldError::invalid(
                        &spec.child("template").child("metadata").child("labels"),
                        "`selector` does not match template `labels`",
                    ));
                }
            }
        }
        if let Some(strategy) = &obj.spec.strategy {
            let path = spec.child("strategy");
            match strategy.kind.as_deref() {
                Some(ROLLING) | None => {}
                Some(RECREATE) if strategy.rolling_update.is_some() => {
                    errs.push(FieldError::forbidden(
                        &path.child("rollingUpdate"),
                        "may not be specified when strategy `type` is 'Recreate'",
                    ))
                }
                Some(RECREATE) => {}
                Some(other) => errs.push(FieldError::not_supported(
                    &path.child("type"),
                    format!("{other:?}: supported values: \"Recreate\", \"RollingUpdate\""),
                )),
            }
        }
        errs
    }

    fn prepare_for_update(&self, _ctx: &Context, new: &mut Deployment, old: &Deployment) {
        // A main-resource update never changes status (the status subresource does).
        new.status = old.status.clone();
    }

    fn validate_update(
        &self,
        ctx: &Context,
        new: &Deployment,
        old: &Deployment,
    ) -> Vec<FieldError> {
        let mut errs = self.validate(ctx, new);
        if new.spec.selector != old.spec.selector {
            errs.push(FieldError::invalid(
                &FieldPath::new("spec").child("selector"),
                "field is immutable",
            ));
        }
        errs
    }
}

#[cfg(test)]
mod tests;
