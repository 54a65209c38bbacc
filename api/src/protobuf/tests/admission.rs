//! The admission kinds: fully populated objects of each round-trip, what the codec encodes is
//! what k8s-pb's messages decode (rules embedded inline in JSON are nested messages on the
//! wire), and every kind and its list is protobuf-capable.

use k8s_pb::api::admissionregistration::v1 as admission;
use k8s_pb::api::admissionregistration::v1beta1 as admission_beta;
use serde_json::{json, Value};

use super::fixtures::{object_meta, typed, TIME};
use super::{assert_round_trips_fully_populated, read_as, supports, with_lists};

const V1: &str = "admissionregistration.k8s.io/v1";
const V1BETA1: &str = "admissionregistration.k8s.io/v1beta1";

fn selector() -> Value {
    json!({
        "matchLabels": {"team": "a"},
        "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]
    })
}

/// A rule with operations: `Rule`'s fields inline beside `operations`.
fn rule_with_operations() -> Value {
    json!({
        "operations": ["CREATE", "UPDATE"],
        "apiGroups": ["", "apps"],
        "apiVersions": ["v1"],
        "resources": ["configmaps", "deployments/scale"],
        "scope": "Namespaced"
    })
}

fn match_resources() -> Value {
    let mut named = rule_with_operations();
    named["resourceNames"] = json!(["settings"]);
    json!({
        "namespaceSelector": selector(),
        "objectSelector": selector(),
        "resourceRules": [named.clone()],
        "excludeResourceRules": [named],
        "matchPolicy": "Equivalent"
    })
}

fn param_ref() -> Value {
    json!({
        "name": "limits",
        "namespace": "default",
        "selector": selector(),
        "parameterNotFoundAction": "Deny"
    })
}

fn webhook(mutating: bool) -> Value {
    let mut w = json!({
        "name": "check.example.com",
        "clientConfig": {
            "url": "https://hooks.example.com/check",
            "service": {"namespace": "hooks", "name": "check", "path": "/check", "port": 8443},
            "caBundle": "Y2EtYnVuZGxl"
        },
        "rules": [rule_with_operations()],
        "failurePolicy": "Fail",
        "matchPolicy": "Equivalent",
        "namespaceSelector": selector(),
        "objectSelector": selector(),
        "sideEffects": "None",
        "timeoutSeconds": 5,
        "admissionReviewVersions": ["v1"],
        "matchConditions": [{"name": "not-system", "expression": "!request.userInfo.username.startsWith('system:')"}]
    });
    if mutating {
        w["reinvocationPolicy"] = json!("IfNeeded");
    }
    w
}

fn configuration(kind: &str, name: &str) -> Value {
    let mutating = kind.starts_with("Mutating");
    typed(
        V1,
        kind,
        json!({"metadata": object_meta(name), "webhooks": [webhook(mutating)]}),
    )
}

fn validating_policy(name: &str) -> Value {
    typed(
        V1,
        "ValidatingAdmissionPolicy",
        json!({
            "metadata": object_meta(name),
            "spec": {
                "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                "matchConstraints": match_resources(),
                "validations": [{
                    "expression": "object.spec.replicas <= 5",
                    "message": "too many",
                    "reason": "Invalid",
                    "messageExpression": "'replicas: ' + string(object.spec.replicas)"
                }],
                "failurePolicy": "Fail",
                "auditAnnotations": [{"key": "replicas", "valueExpression": "string(object.spec.replicas)"}],
                "matchConditions": [{"name": "has-spec", "expression": "has(object.spec)"}],
                "variables": [{"name": "limit", "expression": "5"}]
            },
            "status": {
                "observedGeneration": 2,
                "typeChecking": {"expressionWarnings": [{
                    "fieldRef": "spec.validations[0].expression",
                    "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'replicas'"
                }]},
                "conditions": [{
                    "type": "Ready",
                    "status": "True",
                    "observedGeneration": 2,
                    "lastTransitionTime": TIME,
                    "reason": "Checked",
                    "message": "type checked"
                }]
            }
        }),
    )
}

fn validating_binding(name: &str) -> Value {
    typed(
        V1,
        "ValidatingAdmissionPolicyBinding",
        json!({
            "metadata": object_meta(name),
            "spec": {
                "policyName": "limits.example.com",
                "paramRef": param_ref(),
                "matchResources": match_resources(),
                "validationActions": ["Deny", "Audit"]
            }
        }),
    )
}

fn mutating_policy(name: &str) -> Value {
    typed(
        V1BETA1,
        "MutatingAdmissionPolicy",
        json!({
            "metadata": object_meta(name),
            "spec": {
                "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                "matchConstraints": match_resources(),
                "variables": [{"name": "owner", "expression": "request.userInfo.username"}],
                "mutations": [{
                    "patchType": "ApplyConfiguration",
                    "applyConfiguration": {"expression": "Object{metadata: Object.metadata{labels: {'owner': variables.owner}}}"},
                    "jsonPatch": {"expression": "[JSONPatch{op: 'add', path: '/metadata/labels/x', value: 'y'}]"}
                }],
                "failurePolicy": "Ignore",
                "matchConditions": [{"name": "unlabelled", "expression": "!has(object.metadata.labels)"}],
                "reinvocationPolicy": "Never"
            }
        }),
    )
}

fn mutating_binding(name: &str) -> Value {
    typed(
        V1BETA1,
        "MutatingAdmissionPolicyBinding",
        json!({
            "metadata": object_meta(name),
            "spec": {
                "policyName": "owner.example.com",
                "paramRef": param_ref(),
                "matchResources": match_resources()
            }
        }),
    )
}

/// One of each kind, and a list of each.
fn all() -> Vec<Value> {
    with_lists(vec![
        configuration("ValidatingWebhookConfiguration", "vwc"),
        configuration("MutatingWebhookConfiguration", "mwc"),
        validating_policy("vap"),
        validating_binding("vapb"),
        mutating_policy("map"),
        mutating_binding("mapb"),
    ])
}

#[test]
fn every_admission_kind_round_trips_fully_populated() {
    assert_round_trips_fully_populated(all());
    assert!(!supports(V1BETA1, "ValidatingWebhookConfiguration"));
}

#[test]
fn inline_rules_are_nested_messages_on_the_wire() {
    let config: admission::ValidatingWebhookConfiguration =
        read_as(&configuration("ValidatingWebhookConfiguration", "vwc"));
    let webhook = &config.webhooks[0];
    let rule = webhook.rules[0].rule.as_ref().expect("the inline Rule");
    assert_eq!(webhook.rules[0].operations, ["CREATE", "UPDATE"]);
    assert_eq!(rule.resources, ["configmaps", "deployments/scale"]);
    assert_eq!(rule.scope.as_deref(), Some("Namespaced"));
    assert_eq!(
        webhook.client_config.as_ref().unwrap().ca_bundle.as_deref(),
        Some(&b"ca-bundle"[..])
    );

    let binding: admission_beta::MutatingAdmissionPolicyBinding =
        read_as(&mutating_binding("mapb"));
    let matching = binding.spec.unwrap().match_resources.unwrap();
    let named = &matching.resource_rules[0];
    assert_eq!(named.resource_names, ["settings"]);
    let with_operations = named.rule_with_operations.as_ref().unwrap();
    assert_eq!(with_operations.operations, ["CREATE", "UPDATE"]);
    assert_eq!(
        with_operations.rule.as_ref().unwrap().api_groups,
        ["", "apps"]
    );
}
