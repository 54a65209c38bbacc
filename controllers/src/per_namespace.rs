//! One named object kept in every active namespace, as kube-controller-manager keeps the
//! `default` ServiceAccount (`serviceaccount.rs`) and the `kube-root-ca.crt` ConfigMap
//! (`root_ca_publisher.rs`): a namespace that appears, or whose object is deleted or changed,
//! is queued; its worker creates the object when it is missing and, where the controller says
//! so, brings it back to what it should hold. Terminating namespaces are left alone.
//!
//! Safe beside kube-controller-manager running the same controller: a create that finds the
//! object already there is done, and both want the same content (the root CA publisher's CA is
//! this server's, which must then be kube-controller-manager's `--root-ca-file` too).

use std::sync::Arc;

use futures::StreamExt as _;
use serde_json::Value;
use tokio::task::JoinSet;

use super::queue::WorkQueue;
use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::follow::{Event, EventStreamExt as _};
use strategy_host_registry::system_fields::{is_being_deleted, meta_str};
use strategy_host_registry::{Registry, Result};

/// Brings an existing object back to what it should hold; `false` when it already does.
pub(crate) type Restore = Arc<dyn Fn(&mut Value) -> bool + Send + Sync>;

/// The object a controller keeps in every namespace (a core `v1` kind).
pub(crate) struct Kept {
    /// The field manager its writes are recorded under.
    pub(crate) manager: &'static str,
    /// The object's resource (`serviceaccounts`, `configmaps`).
    pub(crate) plural: &'static str,
    /// The object's name in every namespace.
    pub(crate) name: &'static str,
    /// The object as it is created in a namespace.
    pub(crate) wanted: Arc<dyn Fn(&str) -> Value + Send + Sync>,
    /// How an existing object is brought back; `None`: it is left as it is.
    pub(crate) restore: Option<Restore>,
}

/// Runs the controller keeping `kept` over `registry` until the returned set is dropped.
pub(crate) fn start(registry: &Arc<Registry>, kept: Kept) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    let (Some(namespaces), Some(objects)) = (
        registry.resolve("", "v1", "namespaces"),
        registry.resolve("", "v1", kept.plural),
    ) else {
        return tasks;
    };
    let queue: Arc<WorkQueue<String>> = WorkQueue::new();
    let mut applied_namespaces = Box::pin(namespaces.follow("v1").applied_objects());
    let to_queue = queue.clone();
    tasks.spawn(async move {
        while let Some(ns) = applied_namespaces.next().await {
            let ns = ns.to_value();
            if is_active(&ns) {
                to_queue.add(meta_str(&ns, "name").unwrap_or_default().to_string());
            }
        }
    });
    let mut object_events = Box::pin(objects.follow("v1"));
    let (to_queue, name) = (queue.clone(), kept.name);
    let restores = kept.restore.is_some();
    tasks.spawn(async move {
        while let Some(event) = object_events.next().await {
            let object = match event {
                Event::Delete(o) => o,
                Event::Apply(o) if restores => o,
                _ => continue,
            };
            // Every object of the kind comes here: read the head, not the object.
            if object.name() == Some(name) {
                if let Some(ns) = object.namespace() {
                    to_queue.add(ns.to_string());
                }
            }
        }
    });
    let client = Client::new(registry, kept.manager);
    let kept = Arc::new(kept);
    tasks.spawn(queue.work(kept.manager, move |namespace| {
        let (client, kept) = (client.clone(), kept.clone());
        async move { ensure(&client, &kept, &namespace).await.map(|()| true) }
    }));
    tasks
}

/// A namespace that is neither being deleted nor `Terminating`.
fn is_active(namespace: &Value) -> bool {
    !is_being_deleted(namespace) && namespace["status"]["phase"] != "Terminating"
}

/// Makes sure `namespace` holds the object, as it should be.
async fn ensure(client: &Client, kept: &Kept, namespace: &str) -> Result<()> {
    let namespace_ref = ObjectRef::new("", "v1", "namespaces", None, namespace);
    match client.get(&namespace_ref).await? {
        Some(ns) if is_active(&ns) => {}
        _ => return Ok(()),
    }
    let object_ref = ObjectRef::new("", "v1", kept.plural, Some(namespace), kept.name);
    match client.get(&object_ref).await? {
        None => {
            let created = client
                .create(
                    "",
                    "v1",
                    kept.plural,
                    Some(namespace),
                    (kept.wanted)(namespace),
                )
                .await;
            match created {
                // Another writer (kube-controller-manager) was first, or the namespace began
                // terminating or went away meanwhile: nothing left to do here.
                Err(e) if e.is_already_exists() || e.is_not_found() || e.is_forbidden() => Ok(()),
                other => other.map(drop),
            }
        }
        Some(existing) => match &kept.restore {
            Some(restore) if restore(&mut existing.clone()) => {
                let uid = meta_str(&existing, "uid").unwrap_or_default().to_string();
                let restore = restore.clone();
                client
                    .update(&object_ref, &uid, None, move |o| restore(o))
                    .await
            }
            _ => Ok(()),
        },
    }
}
