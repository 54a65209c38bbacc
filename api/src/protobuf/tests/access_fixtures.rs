//! Fully populated JSON objects of the access-control kinds: RBAC roles and bindings and their
//! lists, token requests and reviews, access reviews. Every field of every message they reach
//! is set (`unset_fields` proves it), zero values where the Go field is a pointer or has no
//! `omitempty`.

use serde_json::{json, Value};

use super::fixtures::{object_meta, typed, with_list, TIME};

const RBAC: &str = "rbac.authorization.k8s.io/v1";
const AUTHENTICATION: &str = "authentication.k8s.io/v1";
const AUTHORIZATION: &str = "authorization.k8s.io/v1";

/// A policy rule with every field set (a real rule names resources or URLs, not both).
fn policy_rule() -> Value {
    json!({
        "verbs": ["get", "list", "watch"],
        "apiGroups": ["", "apps"],
        "resources": ["configmaps", "deployments/scale"],
        "resourceNames": ["settings"],
        "nonResourceURLs": ["/healthz", "/api/*"]
    })
}

pub(super) fn role(name: &str) -> Value {
    typed(
        RBAC,
        "Role",
        json!({"metadata": object_meta(name), "rules": [policy_rule()]}),
    )
}

pub(super) fn cluster_role(name: &str) -> Value {
    typed(
        RBAC,
        "ClusterRole",
        json!({
            "metadata": object_meta(name),
            "rules": [policy_rule()],
            "aggregationRule": {"clusterRoleSelectors": [{
                "matchLabels": {"rbac.example.com/aggregate-to-edit": "true"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]
            }]}
        }),
    )
}

fn subjects() -> Value {
    json!([
        {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice", "namespace": "x"},
        {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "devs", "namespace": "x"}
    ])
}

pub(super) fn role_binding(name: &str) -> Value {
    typed(
        RBAC,
        "RoleBinding",
        json!({
            "metadata": object_meta(name),
            "subjects": subjects(),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "edit"}
        }),
    )
}

pub(super) fn cluster_role_binding(name: &str) -> Value {
    typed(
        RBAC,
        "ClusterRoleBinding",
        json!({
            "metadata": object_meta(name),
            "subjects": subjects(),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}
        }),
    )
}

/// A user with every field set; `extra` values are plain lists of strings in JSON.
fn user_info() -> Value {
    json!({
        "username": "system:serviceaccount:default:builder",
        "uid": "0a1b2c3d-0000-4000-8000-000000000003",
        "groups": ["system:serviceaccounts", "system:authenticated"],
        "extra": {
            "authentication.kubernetes.io/pod-name": ["builder-0"],
            "scopes": ["a", "b"]
        }
    })
}

pub(super) fn token_request() -> Value {
    typed(
        AUTHENTICATION,
        "TokenRequest",
        json!({
            "metadata": object_meta("builder"),
            "spec": {
                "audiences": ["https://kubernetes.default.svc"],
                "expirationSeconds": 0,
                "boundObjectRef": {
                    "kind": "Pod", "apiVersion": "v1", "name": "builder-0",
                    "uid": "0a1b2c3d-0000-4000-8000-000000000004"
                }
            },
            "status": {"token": "eyJhbGciOiJSUzI1NiJ9.e30.c2ln", "expirationTimestamp": TIME}
        }),
    )
}

pub(super) fn token_review() -> Value {
    typed(
        AUTHENTICATION,
        "TokenReview",
        json!({
            "metadata": object_meta("review"),
            "spec": {"token": "eyJhbGciOiJSUzI1NiJ9.e30.c2ln", "audiences": ["api"]},
            "status": {
                "authenticated": true,
                "user": user_info(),
                "audiences": ["api"],
                "error": "token expired"
            }
        }),
    )
}

pub(super) fn self_subject_review() -> Value {
    typed(
        AUTHENTICATION,
        "SelfSubjectReview",
        json!({"metadata": object_meta("whoami"), "status": {"userInfo": user_info()}}),
    )
}

fn resource_attributes() -> Value {
    json!({
        "namespace": "default",
        "verb": "list",
        "group": "apps",
        "version": "v1",
        "resource": "deployments",
        "subresource": "scale",
        "name": "web",
        "fieldSelector": {
            "rawSelector": "spec.nodeName=node-1",
            "requirements": [{"key": "spec.nodeName", "operator": "In", "values": ["node-1"]}]
        },
        "labelSelector": {
            "rawSelector": "app=web",
            "requirements": [{"key": "app", "operator": "In", "values": ["web"]}]
        }
    })
}

fn access_review_status() -> Value {
    json!({
        "allowed": false,
        "denied": true,
        "reason": "no RBAC policy matched",
        "evaluationError": "clusterrole.rbac.authorization.k8s.io \"gone\" not found"
    })
}

/// A SubjectAccessReview, or a LocalSubjectAccessReview (`kind`): the same fields.
pub(super) fn subject_access_review(kind: &str) -> Value {
    typed(
        AUTHORIZATION,
        kind,
        json!({
            "metadata": object_meta("review"),
            "spec": {
                "resourceAttributes": resource_attributes(),
                "nonResourceAttributes": {"path": "/healthz", "verb": "get"},
                "user": "alice",
                "groups": ["developers"],
                "extra": {"scopes": ["a"]},
                "uid": "0a1b2c3d-0000-4000-8000-000000000005"
            },
            "status": access_review_status()
        }),
    )
}

pub(super) fn self_subject_access_review() -> Value {
    typed(
        AUTHORIZATION,
        "SelfSubjectAccessReview",
        json!({
            "metadata": object_meta("can-i"),
            "spec": {
                "resourceAttributes": resource_attributes(),
                "nonResourceAttributes": {"path": "/metrics", "verb": "get"}
            },
            "status": access_review_status()
        }),
    )
}

pub(super) fn self_subject_rules_review() -> Value {
    typed(
        AUTHORIZATION,
        "SelfSubjectRulesReview",
        json!({
            "metadata": object_meta("rules"),
            "spec": {"namespace": "default"},
            "status": {
                "resourceRules": [{
                    "verbs": ["get"],
                    "apiGroups": [""],
                    "resources": ["configmaps"],
                    "resourceNames": ["settings"]
                }],
                "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}],
                "incomplete": false,
                "evaluationError": "webhook unavailable"
            }
        }),
    )
}

/// Every access-control kind, objects and lists, fully populated.
pub(super) fn all() -> Vec<Value> {
    let kinds = [
        with_list(role, "r-a"),
        with_list(cluster_role, "cr-a"),
        with_list(role_binding, "rb-a"),
        with_list(cluster_role_binding, "crb-a"),
    ];
    let mut all: Vec<Value> = kinds.into_iter().flatten().collect();
    all.extend([
        token_request(),
        token_review(),
        self_subject_review(),
        subject_access_review("SubjectAccessReview"),
        subject_access_review("LocalSubjectAccessReview"),
        self_subject_access_review(),
        self_subject_rules_review(),
    ]);
    all
}
