//! The CustomResourceDefinition cleanup controller (apiextensions-apiserver's finalizer
//! controller): a definition being deleted that holds the cleanup finalizer has every object of
//! its resource deleted through the registry (their finalizers and propagation apply), reports
//! progress in its `Terminating` condition, and loses the finalizer once none is left — the
//! definition then goes.

use std::sync::Arc;

use futures::StreamExt as _;
use serde_json::{json, Value};
use tokio::task::JoinSet;

use super::collection_deletion::Remaining;
use super::queue::WorkQueue;
use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::crd_lifecycle::{CLEANUP_FINALIZER, TERMINATING};
use strategy_host_registry::definition::CRD_GROUP;
use strategy_host_registry::follow::EventStreamExt as _;
use strategy_host_registry::system_fields::{
    finalizers, is_being_deleted, meta_str, remove_finalizer, set_condition,
};
use strategy_host_registry::{Registry, ResourceDefinition, Result};

/// Who the controller acts as.
const MANAGER: &str = "customresourcedefinition-cleanup-controller";

/// A definition waiting for the controller: its name and uid.
type Key = (String, String);

/// Whether `crd` is deleted and waits for its objects to go.
fn awaits_cleanup(crd: &Value) -> bool {
    is_being_deleted(crd) && finalizers(crd).iter().any(|f| f == CLEANUP_FINALIZER)
}

/// Runs the controller over `registry` until the returned set is dropped.
pub fn start(registry: &Arc<Registry>) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    let queue: Arc<WorkQueue<Key>> = WorkQueue::new();
    let mut crds = Box::pin(registry.crds().follow("v1").applied_objects());
    let feed = queue.clone();
    tasks.spawn(async move {
        while let Some(crd) = crds.next().await {
            let crd = crd.to_value();
            if awaits_cleanup(&crd) {
                let text = |field| meta_str(&crd, field).unwrap_or_default().to_owned();
                feed.add((text("name"), text("uid")));
            }
        }
    });
    let client = Client::new(registry, MANAGER);
    tasks.spawn(queue.work(MANAGER, move |key| {
        let client = client.clone();
        async move { clean(&client, &key).await }
    }));
    tasks
}

/// One pass over the definition `key`: deletes its objects and, when none is left, its
/// finalizer; answers whether the definition is done with.
async fn clean(client: &Client, (name, uid): &Key) -> Result<bool> {
    let definition = ObjectRef::new(CRD_GROUP, "v1", "customresourcedefinitions", None, name);
    let Some(crd) = client.get(&definition).await? else {
        return Ok(true);
    };
    if meta_str(&crd, "uid") != Some(uid.as_str()) || !awaits_cleanup(&crd) {
        return Ok(true);
    }
    let mut remaining = Remaining::default();
    let served = ResourceDefinition::from_crd(&crd).ok().and_then(|def| {
        let registry = client.registry()?;
        registry.resolve(&def.group, def.storage_version(), &def.plural)
    });
    if let Some(served) = served {
        report(
            client,
            &definition,
            uid,
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress".into(),
        )
        .await?;
        remaining.delete_all(client, &served, None).await;
    }
    if !remaining.failures.is_empty() {
        let why = remaining.failures.join(", ");
        let message = format!("could not issue all deletes: {why}");
        report(client, &definition, uid, "InstanceDeletionFailed", message).await?;
        return Ok(false);
    }
    if let Some(left) = remaining.objects.values().next() {
        let message = format!("could not confirm zero CustomResources remaining: {left} left");
        report(client, &definition, uid, "InstanceDeletionCheck", message).await?;
        return Ok(false);
    }
    client
        .update(&definition, uid, None, |crd| {
            remove_finalizer(crd, "/metadata/finalizers", CLEANUP_FINALIZER);
            true
        })
        .await?;
    tracing::info!(crd = %name, "definition's objects deleted; definition removed");
    Ok(true)
}

/// Writes the definition's `Terminating` condition.
async fn report(
    client: &Client,
    definition: &ObjectRef,
    uid: &str,
    reason: &'static str,
    message: String,
) -> Result<()> {
    client
        .update(definition, uid, Some("status"), move |crd| {
            set_condition(
                crd,
                json!({"type": TERMINATING, "status": "True", "reason": reason, "message": message}),
            )
        })
        .await
}
