//! The ValidatingAdmissionPolicy status controller: a policy whose status has not observed its
//! generation gets `status.observedGeneration` and `status.typeChecking` — each expression
//! checked against the schemas of the kinds its `matchConstraints` name and of its `paramKind`
//! (`strategy_host_cel::type_check`) — as Kubernetes' `validatingadmissionpolicy-status-controller`
//! writes them.

use std::sync::Arc;

use futures::StreamExt as _;
use serde_json::{json, Value};
use tokio::task::JoinSet;

use super::queue::WorkQueue;
use strategy_host_cel::type_check::{self, CheckedKind};
use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::follow::EventStreamExt as _;
use strategy_host_registry::system_fields::strings_at;
use strategy_host_registry::{Registry, Result};

const GROUP: &str = "admissionregistration.k8s.io";
const PLURAL: &str = "validatingadmissionpolicies";
/// Who the controller acts as.
const MANAGER: &str = "validatingadmissionpolicy-status-controller";

/// Runs the controller over `registry` until the returned set is dropped.
pub fn start(registry: &Arc<Registry>) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    let Some(policies) = registry.resolve(GROUP, "v1", PLURAL) else {
        return tasks;
    };
    let queue: Arc<WorkQueue<String>> = WorkQueue::new();
    let mut applied = Box::pin(policies.follow("v1").applied_objects());
    let feed = queue.clone();
    tasks.spawn(async move {
        while let Some(policy) = applied.next().await {
            let policy = policy.to_value();
            if !observed(&policy) {
                feed.add(
                    policy["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .into(),
                );
            }
        }
    });
    let client = Client::new(registry, MANAGER);
    tasks.spawn(queue.work(MANAGER, move |name| {
        let client = client.clone();
        async move { write_status(&client, &name).await.map(|()| true) }
    }));
    tasks
}

/// Whether the policy's status is of its current generation.
fn observed(policy: &Value) -> bool {
    policy.pointer("/status/observedGeneration") == policy.pointer("/metadata/generation")
}

fn policy_ref(name: &str) -> ObjectRef {
    ObjectRef::new(GROUP, "v1", PLURAL, None, name)
}

/// Checks the policy `name` and writes its status (unless it changed meanwhile: its next
/// event brings it back).
async fn write_status(client: &Client, name: &str) -> Result<()> {
    let object = policy_ref(name);
    let Some(policy) = client.get(&object).await? else {
        return Ok(());
    };
    if observed(&policy) {
        return Ok(());
    }
    let Some(registry) = client.registry() else {
        return Ok(());
    };
    let generation = policy.pointer("/metadata/generation").cloned();
    let warnings = expression_warnings(&registry, &policy["spec"]);
    let uid = policy["metadata"]["uid"].as_str().unwrap_or_default();
    client
        .update(&object, uid, Some("status"), move |obj| {
            if obj.pointer("/metadata/generation") != generation.as_ref() {
                return false;
            }
            obj["status"]["observedGeneration"] = generation.clone().unwrap_or(Value::Null);
            obj["status"]["typeChecking"] = match warnings.is_empty() {
                true => json!({}),
                false => json!({"expressionWarnings": warnings}),
            };
            true
        })
        .await
}

/// `expressionWarnings` for the policy `spec`: `{fieldRef, warning}` per expression some
/// matched kind does not type-check.
fn expression_warnings(registry: &Registry, spec: &Value) -> Vec<Value> {
    let kinds = matched_kinds(registry, spec);
    let params = param_schema(registry, spec);
    if kinds.is_empty() && params.is_none() {
        return Vec::new();
    }
    let mut warnings = Vec::new();
    let fields = [
        ("validations", "expression"),
        ("validations", "messageExpression"),
        ("auditAnnotations", "valueExpression"),
        ("matchConditions", "expression"),
        ("variables", "expression"),
    ];
    for (list, field) in fields {
        let items = spec[list].as_array().into_iter().flatten().enumerate();
        for (i, item) in items {
            let Some(expression) = item[field].as_str() else {
                continue;
            };
            if let Some(warning) = type_check::check(expression, &kinds, params.as_ref()) {
                warnings.push(json!({
                    "fieldRef": format!("spec.{list}[{i}].{field}"),
                    "warning": warning,
                }));
            }
        }
    }
    warnings
}

/// The kinds the policy's resource rules name exactly (wildcards and subresources are not
/// checked, as in Kubernetes), with their schemas.
fn matched_kinds(registry: &Registry, spec: &Value) -> Vec<CheckedKind> {
    let mut kinds: Vec<CheckedKind> = Vec::new();
    let rules = spec.pointer("/matchConstraints/resourceRules");
    for rule in rules.and_then(Value::as_array).into_iter().flatten() {
        for group in strings_at(rule, "/apiGroups") {
            for version in strings_at(rule, "/apiVersions") {
                for resource in strings_at(rule, "/resources") {
                    if [&group, &version, &resource]
                        .iter()
                        .any(|s| s.contains('*') || s.contains('/'))
                    {
                        continue;
                    }
                    let Some(served) = registry.resolve(&group, &version, &resource) else {
                        continue;
                    };
                    let Some(schema) = served.def.version(&version).and_then(|v| v.schema.clone())
                    else {
                        continue;
                    };
                    let kind = CheckedKind::new(&group, &version, &served.def.kind, schema);
                    if !kinds.iter().any(|k| k.label == kind.label) {
                        kinds.push(kind);
                    }
                }
            }
        }
    }
    kinds
}

/// The schema of the policy's `paramKind`, when it is served.
fn param_schema(registry: &Registry, spec: &Value) -> Option<Value> {
    let api_version = spec.pointer("/paramKind/apiVersion")?.as_str()?;
    let kind = spec.pointer("/paramKind/kind")?.as_str()?;
    let (group, version) = strategy_host_apimachinery::group_version(api_version);
    let served = registry.resolve_kind(group, version, kind)?;
    served.def.version(version)?.schema.clone()
}
