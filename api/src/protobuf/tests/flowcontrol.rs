//! API priority and fairness' configuration: a FlowSchema and a PriorityLevelConfiguration with
//! every field set round-trip, and their lists.

use serde_json::{json, Value};

use super::fixtures::{object_meta, typed, TIME};
use super::{assert_round_trips_fully_populated, with_lists};

const V1: &str = "flowcontrol.apiserver.k8s.io/v1";

fn condition(type_: &str) -> Value {
    json!({"type": type_, "status": "True", "lastTransitionTime": TIME,
           "reason": "Found", "message": "all good"})
}

fn flow_schema(name: &str) -> Value {
    typed(
        V1,
        "FlowSchema",
        json!({
            "metadata": object_meta(name),
            "spec": {
                "priorityLevelConfiguration": {"name": "workload-low"},
                "matchingPrecedence": 9000,
                "distinguisherMethod": {"type": "ByNamespace"},
                "rules": [{
                    "subjects": [{
                        "kind": "ServiceAccount",
                        "user": {"name": "alice"},
                        "group": {"name": "dev"},
                        "serviceAccount": {"namespace": "team", "name": "robot"}
                    }],
                    "resourceRules": [{
                        "verbs": ["get", "list"], "apiGroups": ["", "apps"],
                        "resources": ["configmaps"], "clusterScope": true,
                        "namespaces": ["team"]
                    }],
                    "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]
                }]
            },
            "status": {"conditions": [condition("Dangling")]}
        }),
    )
}

fn priority_level(name: &str) -> Value {
    typed(
        V1,
        "PriorityLevelConfiguration",
        json!({
            "metadata": object_meta(name),
            "spec": {
                "type": "Limited",
                "limited": {
                    "nominalConcurrencyShares": 30,
                    "limitResponse": {
                        "type": "Queue",
                        "queuing": {"queues": 64, "handSize": 6, "queueLengthLimit": 50}
                    },
                    "lendablePercent": 0,
                    "borrowingLimitPercent": 100
                },
                "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 10}
            },
            "status": {"conditions": [condition("ConcurrencyShared")]}
        }),
    )
}

#[test]
fn flow_schemas_and_priority_levels_round_trip_fully_populated() {
    assert_round_trips_fully_populated(with_lists(vec![
        flow_schema("workload"),
        priority_level("workload-low"),
    ]));
}
