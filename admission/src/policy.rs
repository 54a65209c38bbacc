//! `ValidatingAdmissionPolicy` and `ValidatingAdmissionPolicyBinding` (v1): each binding
//! applies its policy's CEL `validations` to the writes both match (the policy's
//! `matchConstraints`, the binding's `matchResources`, then `matchConditions`), with the
//! binding's params (`paramRef`), answering per `validationActions` — Deny with Kubernetes'
//! message and the validation's reason, Warn as a warning; failures to evaluate follow the
//! policy's `failurePolicy`. Expressions are compiled once per policy (`admission/cel.rs`) and
//! see `object`, `oldObject`, `request`, `params` and `namespaceObject`.

use std::sync::{Arc, Weak};

use async_trait::async_trait;
use serde_json::{json, Value};

use crate::generic::{
    compile, items, params, record_audit_failures, request_variable, Followed, GenericPolicy,
    PolicySpec,
};
use strategy_host_cel::expression::{self as cel, Activation, Expression};
use strategy_host_registry::admission::{
    AdmissionRequest, Rejection, ValidatingAdmission, Verdict,
};
use strategy_host_registry::Registry;

/// One validation of a policy.
#[derive(Debug)]
struct Validation {
    expression: cel::Result<Expression>,
    message: Option<String>,
    message_expression: Option<cel::Result<Expression>>,
    reason: String,
}

/// One policy, its expressions compiled.
#[derive(Debug)]
struct Policy {
    /// What every policy's spec holds.
    spec: PolicySpec,
    validations: Vec<Validation>,
    /// `auditAnnotations`: (key, valueExpression).
    audit_annotations: Vec<(String, cel::Result<Expression>)>,
}

impl GenericPolicy for Policy {
    fn spec(&self) -> &PolicySpec {
        &self.spec
    }
}

/// What a policy's evaluation under one activation found.
enum Evaluated {
    /// A match condition does not hold: the policy is not about this write.
    NotMatched,
    /// Every validation holds.
    Passed,
    /// The validation at `index` failed, with its message and reason.
    Failed {
        index: usize,
        message: String,
        reason: String,
    },
}

impl Policy {
    /// Reads a policy's `spec`.
    fn parse(spec: &Value) -> Self {
        let validations = items(spec.get("validations"))
            .iter()
            .map(|v| Validation {
                expression: compile(v, "expression"),
                message: v.get("message").and_then(Value::as_str).map(String::from),
                message_expression: v
                    .get("messageExpression")
                    .map(|_| compile(v, "messageExpression")),
                reason: v
                    .get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or("Invalid")
                    .to_string(),
            })
            .collect();
        Self {
            spec: PolicySpec::parse(spec),
            validations,
            audit_annotations: items(spec.get("auditAnnotations"))
                .iter()
                .map(|a| {
                    let key = a.get("key").and_then(Value::as_str).unwrap_or_default();
                    (key.to_string(), compile(a, "valueExpression"))
                })
                .collect(),
        }
    }

    /// The first failed validation's (message, reason) under `activation`.
    ///
    /// # Errors
    /// An expression that does not compile or evaluate.
    fn violation(&self, activation: &Activation) -> cel::Result<Evaluated> {
        for condition in &self.spec.match_conditions {
            if !activation.truth(condition.as_ref().map_err(Clone::clone)?)? {
                return Ok(Evaluated::NotMatched);
            }
        }
        for (index, v) in self.validations.iter().enumerate() {
            let expression = v.expression.as_ref().map_err(Clone::clone)?;
            if activation.truth(expression)? {
                continue;
            }
            let message = match (&v.message_expression, &v.message) {
                (Some(Ok(e)), fallback) => activation
                    .text(e)
                    .ok()
                    .filter(|m| !m.is_empty())
                    .or_else(|| fallback.clone()),
                (_, Some(m)) => Some(m.clone()),
                _ => None,
            }
            .unwrap_or_else(|| format!("failed expression: {}", expression.source));
            return Ok(Evaluated::Failed {
                index,
                message,
                reason: v.reason.clone(),
            });
        }
        Ok(Evaluated::Passed)
    }

    /// Puts the policy's `auditAnnotations` on the request's audit events as `{policy}/{key}`
    /// (a value that evaluates to null is left out).
    fn annotate(&self, name: &str, activation: &Activation, request: &AdmissionRequest<'_>) {
        for (key, expression) in &self.audit_annotations {
            let value = expression
                .as_ref()
                .map_err(Clone::clone)
                .and_then(|e| activation.json(e));
            match value {
                Ok(Value::String(v)) if !v.is_empty() => {
                    request.annotate(&format!("{name}/{key}"), &v)
                }
                Ok(Value::Null | Value::String(_)) => {}
                Ok(other) => tracing::warn!(
                    policy = name,
                    key,
                    "auditAnnotation valueExpression returned {other}, not a string"
                ),
                Err(why) => tracing::warn!(policy = name, key, "auditAnnotation failed: {why}"),
            }
        }
    }
}

/// The validating admission plugin for policies.
pub struct Policies {
    registry: Weak<Registry>,
    followed: Followed<Policy>,
}

/// Starts following policies and bindings; answers the plugin.
pub fn start(registry: &Arc<Registry>) -> Arc<Policies> {
    Arc::new(Policies {
        registry: Arc::downgrade(registry),
        followed: Followed::start(
            registry,
            "v1",
            (
                "validatingadmissionpolicies",
                "validatingadmissionpolicybindings",
            ),
            Policy::parse,
        ),
    })
}

/// Kubernetes' code for a validation's reason.
fn code_of(reason: &str) -> u16 {
    match reason {
        "Unauthorized" => 401,
        "Forbidden" => 403,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    }
}

#[async_trait]
impl ValidatingAdmission for Policies {
    fn name(&self) -> &str {
        "ValidatingAdmissionPolicy"
    }

    async fn validate(&self, request: &AdmissionRequest<'_>) -> Verdict {
        let in_force = self.followed.in_force();
        if in_force.bindings.is_empty() {
            return Ok(Vec::new());
        }
        let namespace = crate::followed::namespace_object(&self.registry, request.namespace).await;
        let mut warnings = Vec::new();
        let mut audit_failures: Vec<Value> = Vec::new();
        for (_, binding, policy) in in_force.matching(request, namespace.as_ref()) {
            let denied_by = format!(
                "ValidatingAdmissionPolicy '{}' with binding '{}' denied request",
                binding.policy, binding.name
            );
            let fail = |why: String| -> Verdict {
                if policy.spec.fail_closed {
                    Err(Rejection::Denied {
                        code: 500,
                        reason: "InternalError".into(),
                        message: format!("{denied_by}: {why}"),
                    })
                } else {
                    Ok(Vec::new())
                }
            };
            let params = match params(
                &self.registry,
                policy.spec.param_kind.as_ref(),
                binding.param_ref.as_ref(),
                request,
            )
            .await
            {
                Ok(p) => p,
                Err(why) => {
                    fail(why.to_string())?;
                    continue;
                }
            };
            let request_var = request_variable(request);
            let old = request.old_object.cloned().unwrap_or(Value::Null);
            for params in params.map_or(vec![None], |list| list.into_iter().map(Some).collect()) {
                let mut variables: Vec<(&str, &Value)> = vec![
                    ("object", request.object),
                    ("oldObject", &old),
                    ("request", &request_var),
                ];
                if let Some(p) = &params {
                    variables.push(("params", p));
                }
                if let Some(ns) = &namespace {
                    variables.push(("namespaceObject", ns));
                }
                let mut activation = Activation::new(&variables);
                activation.bind_variables(&policy.spec.variables);
                let evaluated = policy.violation(&activation);
                if !matches!(evaluated, Ok(Evaluated::NotMatched)) {
                    policy.annotate(&binding.policy, &activation, request);
                }
                let (index, message, reason) = match evaluated {
                    Ok(Evaluated::Failed {
                        index,
                        message,
                        reason,
                    }) => (index, message, reason),
                    Ok(Evaluated::NotMatched | Evaluated::Passed) => continue,
                    Err(why) => {
                        fail(why.to_string())?;
                        continue;
                    }
                };
                if binding.actions.iter().any(|a| a == "Audit") {
                    audit_failures.push(json!({
                        "message": message,
                        "policy": binding.policy,
                        "binding": binding.name,
                        "expressionIndex": index,
                        "validationActions": binding.actions,
                    }));
                }
                if binding.actions.iter().any(|a| a == "Warn") {
                    warnings.push(format!(
                        "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {message}",
                        binding.policy, binding.name
                    ));
                }
                if binding.actions.iter().any(|a| a == "Deny") {
                    record_audit_failures(request, &audit_failures);
                    return Err(Rejection::Denied {
                        code: code_of(&reason),
                        reason,
                        message: format!("{denied_by}: {message}"),
                    });
                }
            }
        }
        record_audit_failures(request, &audit_failures);
        Ok(warnings)
    }
}
