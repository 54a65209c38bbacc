//! APIService autoregistration (kube-aggregator's `autoregister` and CRD registration
//! controllers, and the availability of local APIServices): every group/version this server
//! serves has a local `APIService` (`service: null`), labelled
//! `kube-aggregator.kubernetes.io/automanaged` — `onstart` for built-in groups, `true` for a
//! CustomResourceDefinition's — with kube-apiserver's priorities, and `Available` (`Local`).
//! One goes when its group/version is no longer served; APIServices without the label are the
//! user's and are left alone.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use serde_json::{json, Value};
use tokio::task::JoinSet;

use strategy_host_registry::apiservice::{local, name_of, AUTOMANAGED_LABEL, GROUP, PLURAL};
use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::follow::{EventStreamExt as _, Writer};
use strategy_host_registry::system_fields::{meta_str, now_rfc3339};
use strategy_host_registry::Preconditions;
use strategy_host_registry::{Registry, Result};

/// Who the controller acts as.
const MANAGER: &str = "apiservice-autoregistration-controller";

/// How long changes are gathered before one pass (a CRD with several versions, a start).
const SETTLE: Duration = Duration::from_millis(200);

/// kube-apiserver's priorities of the built-in group/versions (groupPriorityMinimum,
/// versionPriority); other groups get a CustomResourceDefinition's (1000, 100).
const PRIORITIES: [(&str, &str, i64, i64); 21] = [
    ("", "v1", 18000, 1),
    ("apps", "v1", 17800, 15),
    ("events.k8s.io", "v1", 17750, 15),
    ("authentication.k8s.io", "v1", 17700, 15),
    ("authorization.k8s.io", "v1", 17600, 15),
    ("autoscaling", "v1", 17500, 15),
    ("autoscaling", "v2", 17500, 30),
    ("batch", "v1", 17400, 15),
    ("certificates.k8s.io", "v1", 17300, 15),
    ("networking.k8s.io", "v1", 17200, 15),
    ("policy", "v1", 17100, 15),
    ("rbac.authorization.k8s.io", "v1", 17000, 15),
    ("storage.k8s.io", "v1", 16800, 15),
    ("apiextensions.k8s.io", "v1", 16700, 15),
    ("admissionregistration.k8s.io", "v1", 16700, 15),
    ("admissionregistration.k8s.io", "v1beta1", 16700, 12),
    ("scheduling.k8s.io", "v1", 16600, 15),
    ("coordination.k8s.io", "v1", 16500, 15),
    ("node.k8s.io", "v1", 16300, 15),
    ("discovery.k8s.io", "v1", 16200, 15),
    ("flowcontrol.apiserver.k8s.io", "v1", 16100, 21),
];

/// The priorities of `group`/`version`.
fn priorities(group: &str, version: &str) -> (i64, i64) {
    PRIORITIES
        .iter()
        .find(|(g, v, _, _)| *g == group && *v == version)
        .map_or((1000, 100), |(_, _, gp, vp)| (*gp, *vp))
}

/// The local APIServices the served resources call for, by name.
fn wanted(registry: &Registry) -> BTreeMap<String, Value> {
    let mut wanted = BTreeMap::new();
    for resource in registry.resources() {
        let def = &resource.def;
        let automanaged = if def.builtin { "onstart" } else { "true" };
        for version in &def.versions {
            let (group_priority, version_priority) = priorities(&def.group, &version.name);
            wanted
                .entry(name_of(&def.group, &version.name))
                .or_insert_with(|| {
                    local(
                        &def.group,
                        &version.name,
                        group_priority,
                        version_priority,
                        automanaged,
                    )
                });
        }
    }
    wanted
}

/// Runs the controller over `registry` until the returned set is dropped.
pub fn start(registry: &Arc<Registry>) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    let Some(apiservices) = registry.resolve(GROUP, "v1", PLURAL) else {
        return tasks;
    };
    let client = Client::new(registry, MANAGER);
    let mut served_changes = registry.subscribe_changes();
    tasks.spawn(async move {
        let writer = Writer::new();
        let present = writer.reader();
        let mut events = Box::pin(apiservices.follow("v1").reflect(writer));
        loop {
            // Gather what happened, then settle briefly so a burst makes one pass.
            tokio::select! {
                event = events.next() => if event.is_none() { return },
                changed = served_changes.changed() => if changed.is_err() { return },
            }
            let settle = tokio::time::sleep(SETTLE);
            tokio::pin!(settle);
            loop {
                tokio::select! {
                    event = events.next() => if event.is_none() { return },
                    _ = &mut settle => break,
                }
            }
            let Some(registry) = client.registry() else {
                return;
            };
            if !present.is_ready() || !registry.is_synced() {
                continue;
            }
            let wanted = wanted(&registry);
            drop(registry);
            if let Err(e) = reconcile(&client, &wanted, &present.by_key()).await {
                tracing::warn!(error = %e, "APIService autoregistration failed; retried on the next change");
            }
        }
    });
    tasks
}

fn apiservice_ref(name: &str) -> ObjectRef {
    ObjectRef::new(GROUP, "v1", PLURAL, None, name)
}

fn automanaged(obj: &Value) -> bool {
    obj.pointer("/metadata/labels")
        .and_then(|l| l.get(AUTOMANAGED_LABEL))
        .is_some()
}

/// Whether `obj`'s `Available` condition says it is served here.
fn available_locally(obj: &Value) -> bool {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Available" && c["status"] == "True" && c["reason"] == "Local")
}

/// Creates what is wanted and missing, brings automanaged specs up to date, marks local ones
/// available, and deletes automanaged ones no longer served.
async fn reconcile(
    client: &Client,
    wanted: &BTreeMap<String, Value>,
    present: &BTreeMap<String, Arc<Value>>,
) -> Result<()> {
    for (name, desired) in wanted {
        let current = match present.get(name) {
            None => client
                .create(GROUP, "v1", PLURAL, None, desired.clone())
                .await
                .or_else(|e| {
                    if e.is_already_exists() {
                        Ok(Value::Null)
                    } else {
                        Err(e)
                    }
                })?,
            Some(obj) if !automanaged(obj) => continue,
            Some(obj) if obj["spec"] != desired["spec"] => {
                let spec = desired["spec"].clone();
                let uid = meta_str(obj, "uid").unwrap_or_default();
                client
                    .update(&apiservice_ref(name), uid, None, move |o| {
                        o["spec"] = spec.clone();
                        true
                    })
                    .await?;
                (**obj).clone()
            }
            Some(obj) => (**obj).clone(),
        };
        if current.is_null() || available_locally(&current) {
            continue;
        }
        let uid = meta_str(&current, "uid").unwrap_or_default();
        client
            .update(&apiservice_ref(name), uid, Some("status"), |o| {
                if !o["spec"]["service"].is_null() {
                    return false;
                }
                o["status"] = json!({"conditions": [{
                    "type": "Available",
                    "status": "True",
                    "lastTransitionTime": now_rfc3339(),
                    "reason": "Local",
                    "message": "Local APIServices are always available",
                }]});
                true
            })
            .await?;
    }
    for (name, obj) in present {
        if automanaged(obj) && !wanted.contains_key(name) {
            let uid = meta_str(obj, "uid").unwrap_or_default();
            client
                .delete(&apiservice_ref(name), Preconditions::uid(uid), None)
                .await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_groups_have_kube_apiservers_priorities_and_others_a_crds() {
        assert_eq!(priorities("", "v1"), (18000, 1));
        assert_eq!(priorities("apps", "v1"), (17800, 15));
        assert_eq!(priorities("autoscaling", "v2"), (17500, 30));
        // Below v1's, so v1 stays the group's preferred version beside the beta.
        assert_eq!(
            priorities("admissionregistration.k8s.io", "v1beta1"),
            (16700, 12)
        );
        assert_eq!(priorities("example.com", "v1alpha1"), (1000, 100));
    }
}
