//! API priority and fairness' mandatory configuration, as kube-apiserver keeps it: the
//! PriorityLevelConfigurations `exempt` and `catch-all` and the FlowSchemas that send
//! `system:masters` to the first and every other request to the second. Each is created when
//! missing and, while its `apf.kubernetes.io/autoupdate-spec` annotation is `"true"`, has its
//! spec put back at every start; an operator who sets the annotation to `"false"` keeps theirs.
//! (Kubernetes' suggested objects — `system`, `leader-election`, `workload-high`, ... — are not
//! created yet.)

use std::sync::Arc;

use serde_json::{json, Value};

use crate::registry::client::{Client, ObjectRef};
use crate::registry::system_fields::{annotation, meta_str};
use crate::registry::{Registry, Result};

const GROUP: &str = "flowcontrol.apiserver.k8s.io";
const VERSION: &str = "v1";
/// The annotation that lets the server keep an object's spec.
pub const AUTOUPDATE: &str = "apf.kubernetes.io/autoupdate-spec";

/// Every request, in every group, namespace and path.
fn every_request() -> Value {
    json!({
        "resourceRules": [{
            "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
            "clusterScope": true, "namespaces": ["*"],
        }],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
    })
}

/// The rules of a FlowSchema matching every request of `groups`.
fn rules_for_groups(groups: &[&str]) -> Value {
    let mut rules = every_request();
    rules["subjects"] = groups
        .iter()
        .map(|g| json!({"kind": "Group", "group": {"name": g}}))
        .collect();
    json!([rules])
}

/// The mandatory objects: (resource, object).
fn mandatory() -> [(&'static str, Value); 4] {
    let object = |kind: &str, name: &str, spec: Value| {
        json!({
            "apiVersion": format!("{GROUP}/{VERSION}"),
            "kind": kind,
            "metadata": {"name": name, "annotations": {AUTOUPDATE: "true"}},
            "spec": spec,
        })
    };
    [
        (
            "prioritylevelconfigurations",
            object(
                "PriorityLevelConfiguration",
                "exempt",
                json!({"type": "Exempt",
                       "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}}),
            ),
        ),
        (
            "prioritylevelconfigurations",
            object(
                "PriorityLevelConfiguration",
                "catch-all",
                json!({"type": "Limited", "limited": {
                    "nominalConcurrencyShares": 5, "lendablePercent": 0,
                    "limitResponse": {"type": "Reject"},
                }}),
            ),
        ),
        (
            "flowschemas",
            object(
                "FlowSchema",
                "exempt",
                json!({
                    "priorityLevelConfiguration": {"name": "exempt"},
                    "matchingPrecedence": 1,
                    "rules": rules_for_groups(&["system:masters"]),
                }),
            ),
        ),
        (
            "flowschemas",
            object(
                "FlowSchema",
                "catch-all",
                json!({
                    "priorityLevelConfiguration": {"name": "catch-all"},
                    "matchingPrecedence": 10000,
                    "distinguisherMethod": {"type": "ByUser"},
                    "rules": rules_for_groups(&["system:unauthenticated", "system:authenticated"]),
                }),
            ),
        ),
    ]
}

/// Creates the mandatory objects that are missing and puts back the spec of those that may be
/// updated; failures are logged (the next start tries again).
pub async fn ensure_mandatory_configuration(registry: &Arc<Registry>) {
    const MANAGER: &str = "api-priority-and-fairness-config-producer";
    let client = Client::new(registry, MANAGER);
    for (plural, wanted) in mandatory() {
        let name = meta_str(&wanted, "name").unwrap_or_default().to_string();
        if let Err(e) = ensure(&client, plural, &name, wanted).await {
            tracing::warn!(%plural, %name, error = %e, "could not ensure API priority and fairness configuration");
        }
    }
}

async fn ensure(client: &Client, plural: &str, name: &str, wanted: Value) -> Result<()> {
    let object = ObjectRef::new(GROUP, VERSION, plural, None, name);
    match client.get(&object).await? {
        None => match client.create(GROUP, VERSION, plural, None, wanted).await {
            Err(e) if !e.is_already_exists() => Err(e),
            _ => Ok(()),
        },
        Some(existing) => {
            let autoupdate = annotation(&existing, AUTOUPDATE) != Some("false");
            if !autoupdate || existing["spec"] == wanted["spec"] {
                return Ok(());
            }
            let uid = meta_str(&existing, "uid").unwrap_or_default().to_string();
            client
                .update(&object, &uid, None, move |o| {
                    o["spec"] = wanted["spec"].clone();
                    o["metadata"]["annotations"][AUTOUPDATE] = json!("true");
                    true
                })
                .await
        }
    }
}
