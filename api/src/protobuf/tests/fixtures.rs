//! Fully populated JSON objects of every kind the codec covers: every field of every message
//! they reach is set (`unset_fields` proves it), zero values where the Go field is a pointer.

use serde_json::{json, Value};

/// A `Time` and a `MicroTime` as Kubernetes writes them.
pub(super) const TIME: &str = "2024-01-02T03:04:05Z";
pub(super) const MICRO_TIME: &str = "2024-01-02T03:04:05.123456Z";

/// An `ObjectMeta` with every field set.
pub(super) fn object_meta(name: &str) -> Value {
    json!({
        "name": name,
        "generateName": "gen-",
        "namespace": "default",
        "selfLink": format!("/api/v1/namespaces/default/things/{name}"),
        "uid": "6f1c9c1e-3b9a-4c47-9a52-1b6f3c2d8e10",
        "resourceVersion": "42",
        "generation": 3,
        "creationTimestamp": TIME,
        "deletionTimestamp": "2024-02-03T04:05:06Z",
        "deletionGracePeriodSeconds": 0,
        "labels": {"app": "web", "tier": "front"},
        "annotations": {"example.com/note": "a \"quoted\" note"},
        "ownerReferences": [{
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "web-5d4f",
            "uid": "0a1b2c3d-0000-4000-8000-000000000001",
            "controller": true,
            "blockOwnerDeletion": false
        }],
        "finalizers": ["example.com/cleanup"],
        "managedFields": [{
            "manager": "kubectl-client-side-apply",
            "operation": "Update",
            "apiVersion": "v1",
            "time": TIME,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}},
            "subresource": "status"
        }]
    })
}

/// A `ListMeta` with every field set.
pub(super) fn list_meta() -> Value {
    json!({
        "selfLink": "/api/v1/things",
        "resourceVersion": "1234",
        "continue": "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ",
        "remainingItemCount": 0
    })
}

/// A core `ObjectReference` with every field set.
pub(super) fn object_reference(name: &str) -> Value {
    json!({
        "kind": "Pod",
        "namespace": "default",
        "name": name,
        "uid": "0a1b2c3d-0000-4000-8000-000000000002",
        "apiVersion": "v1",
        "resourceVersion": "77",
        "fieldPath": "spec.containers{web}"
    })
}

/// `obj` with `apiVersion` and `kind` in front.
pub(super) fn typed(api_version: &str, kind: &str, mut obj: Value) -> Value {
    obj["apiVersion"] = json!(api_version);
    obj["kind"] = json!(kind);
    obj
}

/// A list of `items` (each already typed) with a full `ListMeta`.
pub(super) fn list(api_version: &str, kind: &str, items: Vec<Value>) -> Value {
    typed(
        api_version,
        kind,
        json!({"metadata": list_meta(), "items": items}),
    )
}

pub(super) fn namespace(name: &str) -> Value {
    typed(
        "v1",
        "Namespace",
        json!({
            "metadata": object_meta(name),
            "spec": {"finalizers": ["kubernetes"]},
            "status": {
                "phase": "Terminating",
                "conditions": [{
                    "type": "NamespaceDeletionContentFailure",
                    "status": "False",
                    "lastTransitionTime": TIME,
                    "reason": "ContentDeleted",
                    "message": "All content successfully deleted"
                }]
            }
        }),
    )
}

pub(super) fn config_map(name: &str) -> Value {
    typed(
        "v1",
        "ConfigMap",
        json!({
            "metadata": object_meta(name),
            "immutable": false,
            "data": {"game.properties": "lives=3\n", "empty": ""},
            "binaryData": {"blob": "AAH/fw=="}
        }),
    )
}

pub(super) fn secret(name: &str) -> Value {
    typed(
        "v1",
        "Secret",
        json!({
            "metadata": object_meta(name),
            "immutable": true,
            "data": {"password": "czNjcjN0", "empty": ""},
            "stringData": {"user": "admin"},
            "type": "Opaque"
        }),
    )
}

pub(super) fn resource_quota(name: &str) -> Value {
    typed(
        "v1",
        "ResourceQuota",
        json!({
            "metadata": object_meta(name),
            "spec": {
                "hard": {"pods": "5", "memory": "500Mi", "count/replicasets.apps": "5"},
                "scopes": ["NotTerminating"],
                "scopeSelector": {"matchExpressions": [
                    {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}
                ]}
            },
            "status": {"hard": {"pods": "5"}, "used": {"pods": "1"}}
        }),
    )
}

pub(super) fn service_account(name: &str) -> Value {
    typed(
        "v1",
        "ServiceAccount",
        json!({
            "metadata": object_meta(name),
            "secrets": [object_reference("token-abc")],
            "imagePullSecrets": [{"name": "registry-key"}],
            "automountServiceAccountToken": false
        }),
    )
}

pub(super) fn core_event(name: &str) -> Value {
    typed(
        "v1",
        "Event",
        json!({
            "metadata": object_meta(name),
            "involvedObject": object_reference("web-0"),
            "reason": "Scheduled",
            "message": "Successfully assigned default/web-0",
            "source": {"component": "default-scheduler", "host": "node-1"},
            "firstTimestamp": TIME,
            "lastTimestamp": "2024-01-02T03:09:05Z",
            "count": 4,
            "type": "Normal",
            "eventTime": MICRO_TIME,
            "series": {"count": 2, "lastObservedTime": "2024-01-02T03:08:00.000001Z"},
            "action": "Binding",
            "related": object_reference("node-1"),
            "reportingComponent": "default-scheduler",
            "reportingInstance": "default-scheduler-node-1"
        }),
    )
}

pub(super) fn events_event(name: &str) -> Value {
    typed(
        "events.k8s.io/v1",
        "Event",
        json!({
            "metadata": object_meta(name),
            "eventTime": MICRO_TIME,
            "series": {"count": 0, "lastObservedTime": "2024-01-02T03:08:00.500000Z"},
            "reportingController": "example.com/controller",
            "reportingInstance": "controller-7",
            "action": "Reconcile",
            "reason": "Synced",
            "regarding": object_reference("web-0"),
            "related": object_reference("web-1"),
            "note": "synced in 3ms",
            "type": "Normal",
            "deprecatedSource": {"component": "controller", "host": "node-2"},
            "deprecatedFirstTimestamp": TIME,
            "deprecatedLastTimestamp": "2024-01-02T03:04:06Z",
            "deprecatedCount": 9
        }),
    )
}

pub(super) fn lease(name: &str) -> Value {
    typed(
        "coordination.k8s.io/v1",
        "Lease",
        json!({
            "metadata": object_meta(name),
            "spec": {
                "holderIdentity": "controller-7_4d2f",
                "leaseDurationSeconds": 15,
                "acquireTime": "2024-01-02T03:04:05.000000Z",
                "renewTime": MICRO_TIME,
                "leaseTransitions": 0,
                "strategy": "OldestEmulationVersion",
                "preferredHolder": "controller-8_9e1a"
            }
        }),
    )
}

pub(super) fn status() -> Value {
    typed(
        "v1",
        "Status",
        json!({
            "metadata": list_meta(),
            "status": "Failure",
            "message": "leases.coordination.k8s.io \"x\" is invalid: spec: Invalid value",
            "reason": "Invalid",
            "details": {
                "name": "x",
                "group": "coordination.k8s.io",
                "kind": "leases",
                "uid": "6f1c9c1e-3b9a-4c47-9a52-1b6f3c2d8e10",
                "causes": [{"reason": "FieldValueInvalid", "message": "Invalid value", "field": "spec"}],
                "retryAfterSeconds": 5
            },
            "code": 422
        }),
    )
}

pub(super) fn delete_options() -> Value {
    typed(
        "coordination.k8s.io/v1",
        "DeleteOptions",
        json!({
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": "6f1c9c1e-3b9a-4c47-9a52-1b6f3c2d8e10", "resourceVersion": ""},
            "orphanDependents": false,
            "propagationPolicy": "Foreground",
            "dryRun": ["All"],
            "ignoreStoreReadErrorWithClusterBreakingPotential": false
        }),
    )
}

/// The fixture named `name`, then a list of two more (`a` and `b`) as its `{Kind}List`.
pub(super) fn with_list(fixture: fn(&str) -> Value, name: &str) -> [Value; 2] {
    let obj = fixture(name);
    let kind = format!("{}List", obj["kind"].as_str().unwrap());
    let items = vec![fixture("a"), fixture("b")];
    let list = list(obj["apiVersion"].as_str().unwrap(), &kind, items);
    [obj, list]
}

/// Every covered kind, objects and lists, fully populated (the access-control kinds' from
/// `access_fixtures.rs`).
pub(super) fn all() -> Vec<Value> {
    let kinds = [
        with_list(namespace, "ns-a"),
        with_list(config_map, "cm-a"),
        with_list(secret, "s-a"),
        with_list(resource_quota, "rq-a"),
        with_list(service_account, "sa-a"),
        with_list(core_event, "ev-a"),
        with_list(events_event, "ev-b"),
        with_list(lease, "lease-a"),
    ];
    let mut all: Vec<Value> = kinds.into_iter().flatten().collect();
    all.extend([status(), delete_options()]);
    all.extend(super::access_fixtures::all());
    all
}
