//! The namespace controller: empties a terminating namespace through the registry's verbs
//! (each object's finalizers, strategy, hooks and propagation apply), reports progress in the
//! namespace's conditions as Kubernetes does, retries with backoff while content remains, and
//! removes the `kubernetes` finalizer through `namespaces/{name}/finalize` when nothing is
//! left — the namespace then goes.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt as _;
use serde_json::{json, Value};
use tokio::task::JoinSet;

use super::aggregated_content;
use super::collection_deletion::Remaining;
use super::metrics::ControllerMetrics;
use super::queue::WorkQueue;
use strategy_host_registry::aggregation::Aggregation;
use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::follow::EventStreamExt as _;
use strategy_host_registry::namespace_lifecycle::{spec_finalizers, NAMESPACE_FINALIZER};
use strategy_host_registry::system_fields::{
    is_being_deleted, meta_str, remove_finalizer, set_condition,
};
use strategy_host_registry::{Registry, Result};

/// Namespaces emptied at once.
const WORKERS: usize = 4;

/// A namespace waiting for the controller: its name and uid.
type Key = (String, String);

/// Runs the namespace controller over `registry` until the returned set is dropped.
pub fn start(
    registry: &Arc<Registry>,
    metrics: ControllerMetrics,
    aggregation: Option<Arc<Aggregation>>,
) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    let Some(namespaces) = registry.resolve("", "v1", "namespaces") else {
        return tasks;
    };
    let client = Client::new(registry, "namespace-controller");
    let queue: Arc<WorkQueue<Key>> = WorkQueue::new();
    let mut applied = Box::pin(namespaces.follow("v1").applied_objects());
    let feed = queue.clone();
    tasks.spawn(async move {
        while let Some(ns) = applied.next().await {
            let ns = ns.to_value();
            if is_being_deleted(&ns)
                && spec_finalizers(&ns)
                    .iter()
                    .any(|f| f == NAMESPACE_FINALIZER)
            {
                let text = |p: &str| {
                    ns.pointer(p)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string()
                };
                feed.add((text("/metadata/name"), text("/metadata/uid")));
            }
        }
    });
    for _ in 0..WORKERS {
        let (client, queue, metrics) = (client.clone(), queue.clone(), metrics.clone());
        let aggregation = aggregation.clone();
        tasks.spawn(queue.work("namespace-controller", move |key| {
            let (client, metrics, aggregation) =
                (client.clone(), metrics.clone(), aggregation.clone());
            async move { empty(&client, &key, &metrics, aggregation.as_deref()).await }
        }));
    }
    tasks
}

/// One pass over the namespace `key`: deletes what is in it, reports what remains; answers
/// whether the namespace is done with (finalized or gone).
async fn empty(
    client: &Client,
    key: &Key,
    metrics: &ControllerMetrics,
    aggregation: Option<&Aggregation>,
) -> Result<bool> {
    let (name, uid) = key;
    let Some(registry) = client.registry() else {
        return Ok(true);
    };
    let namespace = ObjectRef::new("", "v1", "namespaces", None, name);
    let Some(current) = client.get(&namespace).await? else {
        return Ok(true);
    };
    if meta_str(&current, "uid") != Some(uid.as_str())
        || !spec_finalizers(&current)
            .iter()
            .any(|f| f == NAMESPACE_FINALIZER)
    {
        return Ok(true);
    }
    let mut remaining = Remaining::default();
    for served in registry.resources() {
        if !served.def.namespaced || served.def.create_only || served.def.stored_as.is_some() {
            continue;
        }
        remaining.delete_all(client, &served, Some(name)).await;
    }
    let failed_discovery = match aggregation {
        Some(aggregation) => aggregated_content::delete(aggregation, name, &mut remaining).await,
        None => Vec::new(),
    };
    let conditions = conditions(&remaining, &failed_discovery);
    client
        .update(&namespace, uid, Some("status"), move |ns| {
            let mut changed = false;
            for condition in &conditions {
                changed |= set_condition(ns, condition.clone());
            }
            changed
        })
        .await?;
    // As Kubernetes: content an extension server could not be asked about keeps the
    // namespace until it can be.
    if !remaining.is_done() || !failed_discovery.is_empty() {
        return Ok(false);
    }
    client
        .update(&namespace, uid, Some("finalize"), |ns| {
            remove_finalizer(ns, "/spec/finalizers", NAMESPACE_FINALIZER);
            true
        })
        .await?;
    let since = meta_str(&current, "deletionTimestamp")
        .and_then(strategy_host_registry::system_fields::parse_rfc3339);
    if let Some(since) = since {
        let now = strategy_host_registry::system_fields::now_seconds();
        #[allow(clippy::cast_precision_loss)] // seconds, far below 2^52
        metrics
            .namespace_deletion_seconds
            .observe((now - since).max(0) as f64);
    }
    tracing::info!(namespace = %name, "namespace emptied and finalized");
    Ok(true)
}

/// One namespace condition.
fn condition(type_: &str, holds: bool, reason: &str, message: &str) -> Value {
    json!({
        "type": type_,
        "status": if holds { "True" } else { "False" },
        "reason": reason,
        "message": message,
    })
}

/// The condition `type_`: not holding, with `ok`'s reason and message, unless there is a
/// `problem`; then holding, with the problem's.
fn condition_of(type_: &str, ok: (&str, &str), problem: Option<(&str, String)>) -> Value {
    match problem {
        None => condition(type_, false, ok.0, ok.1),
        Some((reason, message)) => condition(type_, true, reason, &message),
    }
}

/// What `counts` counts, as Kubernetes lists it (`{what} {joint} {n} resource instances`),
/// when there is any.
fn listed(counts: &BTreeMap<String, usize>, joint: &str) -> Option<String> {
    let each: Vec<String> = counts
        .iter()
        .map(|(what, n)| format!("{what} {joint} {n} resource instances"))
        .collect();
    (!each.is_empty()).then(|| each.join(", "))
}

/// The conditions Kubernetes' namespace controller reports for `remaining` and the
/// group/versions whose discovery failed.
fn conditions(remaining: &Remaining, failed_discovery: &[String]) -> Vec<Value> {
    let failures = &remaining.failures;
    vec![
        condition_of(
            "NamespaceDeletionDiscoveryFailure",
            (
                "ResourcesDiscovered",
                "All resources successfully discovered",
            ),
            (!failed_discovery.is_empty()).then(|| {
                let message = aggregated_content::discovery_message(failed_discovery);
                ("DiscoveryFailed", message)
            }),
        ),
        condition(
            "NamespaceDeletionGroupVersionParsingFailure",
            false,
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed",
        ),
        condition_of(
            "NamespaceDeletionContentFailure",
            (
                "ContentDeleted",
                "All content successfully deleted, may be waiting on finalization",
            ),
            (!failures.is_empty()).then(|| {
                let (n, all) = (failures.len(), failures.join(", "));
                let message = format!("Failed to delete all resource types, {n} remaining: {all}");
                ("ContentDeletionFailed", message)
            }),
        ),
        condition_of(
            "NamespaceContentRemaining",
            ("ContentRemoved", "All content successfully removed"),
            listed(&remaining.objects, "has").map(|all| {
                let message = "Some resources are remaining";
                ("SomeResourcesRemain", format!("{message}: {all}"))
            }),
        ),
        condition_of(
            "NamespaceFinalizersRemaining",
            (
                "ContentHasNoFinalizers",
                "All content-preserving finalizers finished",
            ),
            listed(&remaining.finalizers, "in").map(|all| {
                let message = "Some content in the namespace has finalizers remaining";
                ("SomeFinalizersRemain", format!("{message}: {all}"))
            }),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_name_what_remains() {
        let mut remaining = Remaining::default();
        remaining.objects.insert("widgets.example.com".into(), 2);
        remaining.finalizers.insert("example.com/keep".into(), 2);
        let c = conditions(&remaining, &[]);
        let of = |t: &str| c.iter().find(|c| c["type"] == t).unwrap().clone();
        assert_eq!(of("NamespaceContentRemaining")["status"], "True");
        assert_eq!(
            of("NamespaceContentRemaining")["message"],
            "Some resources are remaining: widgets.example.com has 2 resource instances"
        );
        assert_eq!(
            of("NamespaceFinalizersRemaining")["message"],
            "Some content in the namespace has finalizers remaining: example.com/keep in 2 resource instances"
        );
        assert_eq!(of("NamespaceDeletionContentFailure")["status"], "False");
    }
}
