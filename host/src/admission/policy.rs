//! `ValidatingAdmissionPolicy` and `ValidatingAdmissionPolicyBinding` (v1): each binding
//! applies its policy's CEL `validations` to the writes both match (the policy's
//! `matchConstraints`, the binding's `matchResources`, then `matchConditions`), with the
//! binding's params (`paramRef`), answering per `validationActions` — Deny with Kubernetes'
//! message and the validation's reason, Warn as a warning; failures to evaluate follow the
//! policy's `failurePolicy`. Expressions are compiled once per policy (`admission/cel.rs`) and
//! see `object`, `oldObject`, `request`, `params` and `namespaceObject`.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock, Weak};

use async_trait::async_trait;
use serde_json::{json, Value};

use crate::admission::cel::{Activation, Expression};
use crate::admission::rules::{strings, MatchResources};
use crate::admission::webhook::operation_name;
use crate::registry::admission::{AdmissionRequest, Rejection, ValidatingAdmission, Verdict};
use crate::registry::labels::{labels_of, selector_matches};
use crate::registry::{Registry, RequestScope};
use crate::storage::{GetOptions, ListOptions};

const GROUP: &str = "admissionregistration.k8s.io";

/// One validation of a policy.
#[derive(Debug)]
struct Validation {
    expression: Result<Expression, String>,
    message: Option<String>,
    message_expression: Option<Result<Expression, String>>,
    reason: String,
}

/// The items of a JSON list (none when absent).
pub fn items(list: Option<&Value>) -> Vec<Value> {
    list.and_then(Value::as_array).cloned().unwrap_or_default()
}

/// Compiles the expression in `v[field]`.
pub fn compile(v: &Value, field: &str) -> Result<Expression, String> {
    Expression::compile(v.get(field).and_then(Value::as_str).unwrap_or_default())
}

/// A policy spec's `paramKind`, as (group, version, kind).
pub fn param_kind_of(spec: &Value) -> Option<(String, String, String)> {
    spec.get("paramKind").map(|p| {
        let api_version = p
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let kind = p.get("kind").and_then(Value::as_str).unwrap_or_default();
        (group.to_string(), version.to_string(), kind.to_string())
    })
}

/// A policy spec's `variables`, compiled: (name, expression), in order.
pub fn variables_of(spec: &Value) -> Vec<(String, Result<Expression, String>)> {
    items(spec.get("variables"))
        .iter()
        .map(|v| {
            let name = v.get("name").and_then(Value::as_str).unwrap_or_default();
            (name.to_string(), compile(v, "expression"))
        })
        .collect()
}

/// One policy, its expressions compiled.
#[derive(Debug)]
struct Policy {
    fail_closed: bool,
    matching: MatchResources,
    match_conditions: Vec<Result<Expression, String>>,
    validations: Vec<Validation>,
    /// `variables`: (name, expression), in order.
    variables: Vec<(String, Result<Expression, String>)>,
    /// `auditAnnotations`: (key, valueExpression).
    audit_annotations: Vec<(String, Result<Expression, String>)>,
    /// `paramKind`: (group, version, kind).
    param_kind: Option<(String, String, String)>,
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
    fn parse(obj: &Value) -> Self {
        let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
        let param_kind = param_kind_of(&spec);
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
            fail_closed: spec.get("failurePolicy").and_then(Value::as_str) != Some("Ignore"),
            matching: MatchResources::parse(spec.get("matchConstraints")).unwrap_or_default(),
            match_conditions: items(spec.get("matchConditions"))
                .iter()
                .map(|c| compile(c, "expression"))
                .collect(),
            validations,
            variables: variables_of(&spec),
            audit_annotations: items(spec.get("auditAnnotations"))
                .iter()
                .map(|a| {
                    let key = a.get("key").and_then(Value::as_str).unwrap_or_default();
                    (key.to_string(), compile(a, "valueExpression"))
                })
                .collect(),
            param_kind,
        }
    }

    /// The first failed validation's (message, reason) under `activation`.
    ///
    /// # Errors
    /// An expression that does not compile or evaluate.
    fn violation(&self, activation: &Activation) -> Result<Evaluated, String> {
        for condition in &self.match_conditions {
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

/// One binding.
#[derive(Debug, Clone)]
struct Binding {
    name: String,
    policy: String,
    actions: Vec<String>,
    matching: Option<MatchResources>,
    param_ref: Option<Value>,
}

impl Binding {
    fn parse(obj: &Value) -> Self {
        let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
        Self {
            name: obj
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            policy: spec
                .get("policyName")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            actions: strings(&spec, "validationActions"),
            matching: MatchResources::parse(spec.get("matchResources")),
            param_ref: spec.get("paramRef").cloned(),
        }
    }
}

/// The policies and bindings in force.
#[derive(Debug, Default)]
struct InForce {
    policies: BTreeMap<String, Arc<Policy>>,
    bindings: Vec<Binding>,
}

/// The validating admission plugin for policies.
pub struct Policies {
    registry: Weak<Registry>,
    policies: Arc<RwLock<BTreeMap<String, Arc<Policy>>>>,
    bindings: Arc<RwLock<Vec<Binding>>>,
}

/// Starts following policies and bindings; answers the plugin.
pub fn start(registry: &Arc<Registry>) -> Arc<Policies> {
    let plugin = Arc::new(Policies {
        registry: Arc::downgrade(registry),
        policies: Arc::default(),
        bindings: Arc::default(),
    });
    crate::admission::followed::follow_into(
        registry,
        (GROUP, "v1", "validatingadmissionpolicies"),
        &plugin.policies,
        |all| {
            all.iter()
                .map(|(n, o)| (n.clone(), Arc::new(Policy::parse(o))))
                .collect()
        },
    );
    crate::admission::followed::follow_into(
        registry,
        (GROUP, "v1", "validatingadmissionpolicybindings"),
        &plugin.bindings,
        |all| all.values().map(Binding::parse).collect(),
    );
    plugin
}

impl Policies {
    fn in_force(&self) -> InForce {
        InForce {
            policies: self
                .policies
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
            bindings: self
                .bindings
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        }
    }
}

/// The params a binding names (`param_ref`) for a policy taking `param_kind` (group, version,
/// kind): `paramRef.name` in its namespace (or the request's), or every object
/// `paramRef.selector` selects; `None` when the policy takes none.
///
/// # Errors
/// Why no params could be read, worded as Kubernetes words it.
pub async fn params(
    registry: &Weak<Registry>,
    param_kind: Option<&(String, String, String)>,
    param_ref: Option<&Value>,
    request: &AdmissionRequest<'_>,
) -> Result<Option<Vec<Value>>, String> {
    let Some((group, version, kind)) = param_kind else {
        return Ok(None);
    };
    let Some(param_ref) = param_ref else {
        return Err(format!("failed to configure binding: paramRef is required when the policy has paramKind {kind}"));
    };
    let registry = registry.upgrade().ok_or("the server is stopping")?;
    let served = registry.resolve_kind(group, version, kind).ok_or_else(|| {
        format!("failed to configure binding: paramKind {group}/{version} {kind} is not served")
    })?;
    let namespace = param_ref
        .get("namespace")
        .and_then(Value::as_str)
        .or(request.namespace)
        .filter(|_| served.def.namespaced)
        .map(String::from);
    let scope = RequestScope {
        version: version.clone(),
        namespace,
        ..Default::default()
    };
    let found = match param_ref.get("name").and_then(Value::as_str) {
        Some(name) => match served.store.get(&scope, name, GetOptions::default()).await {
            Ok(obj) => vec![obj],
            Err(e) if e.is_not_found() => Vec::new(),
            Err(e) => return Err(e.to_string()),
        },
        None => {
            let listed = served
                .store
                .list(&scope, ListOptions::default())
                .await
                .map_err(|e| e.to_string())?;
            let selector = param_ref.get("selector").cloned().unwrap_or(Value::Null);
            listed
                .items
                .iter()
                .map(|o| o.to_value())
                .filter(|o| selector.is_null() || selector_matches(&selector, &labels_of(o)))
                .collect()
        }
    };
    if found.is_empty()
        && param_ref
            .get("parameterNotFoundAction")
            .and_then(Value::as_str)
            != Some("Allow")
    {
        return Err(
            "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
        );
    }
    Ok(Some(found))
}

/// The `request` variable CEL expressions see.
pub fn request_variable(request: &AdmissionRequest<'_>) -> Value {
    let def = request.resource;
    let user = request.user;
    json!({
        "operation": operation_name(request.operation),
        "userInfo": {"username": user.username, "uid": user.uid, "groups": user.groups},
        "name": request.name,
        "namespace": request.namespace.unwrap_or_default(),
        "dryRun": request.dry_run,
        "kind": {"group": def.group, "version": request.version, "kind": def.kind},
        "resource": {"group": def.group, "version": request.version, "resource": def.plural},
        "subResource": request.subresource.unwrap_or_default(),
    })
}

/// The annotation Kubernetes puts the Audit action's failures under.
pub const VALIDATION_FAILURE_ANNOTATION: &str =
    "validation.policy.admission.k8s.io/validation_failure";

/// Records the Audit action's failures on the request's audit events, as a JSON list.
pub fn record_audit_failures(request: &AdmissionRequest<'_>, failures: &[Value]) {
    if !failures.is_empty() {
        request.annotate(
            VALIDATION_FAILURE_ANNOTATION,
            &Value::from(failures.to_vec()).to_string(),
        );
    }
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
        let in_force = self.in_force();
        if in_force.bindings.is_empty() {
            return Ok(Vec::new());
        }
        let namespace =
            crate::admission::followed::namespace_object(&self.registry, request.namespace).await;
        let mut warnings = Vec::new();
        let mut audit_failures: Vec<Value> = Vec::new();
        for binding in &in_force.bindings {
            let Some(policy) = in_force.policies.get(&binding.policy) else {
                continue;
            };
            if !policy.matching.matches(request, namespace.as_ref())
                || !binding
                    .matching
                    .as_ref()
                    .is_none_or(|m| m.matches(request, namespace.as_ref()))
            {
                continue;
            }
            let denied_by = format!(
                "ValidatingAdmissionPolicy '{}' with binding '{}' denied request",
                binding.policy, binding.name
            );
            let fail = |why: String| -> Verdict {
                if policy.fail_closed {
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
                policy.param_kind.as_ref(),
                binding.param_ref.as_ref(),
                request,
            )
            .await
            {
                Ok(p) => p,
                Err(why) => {
                    fail(why)?;
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
                activation.bind_variables(&policy.variables);
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
                        fail(why)?;
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
