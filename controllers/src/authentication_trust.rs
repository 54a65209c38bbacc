//! The cluster authentication trust controller (kube-apiserver's): keeps
//! `kube-system/extension-apiserver-authentication` holding what an extension API server needs
//! to authenticate the requests this server forwards — the client CA, and the front proxy's CA,
//! allowed names and headers — so servers written with k8s.io/apiserver trust it unchanged.
//! Checked at start, when the ConfigMap changes, and every minute.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use serde_json::{json, Value};
use tokio::task::JoinSet;

use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::follow::Event;
use strategy_host_registry::system_fields::meta_str;
use strategy_host_registry::{Registry, Result};

/// Who the controller acts as.
const MANAGER: &str = "cluster-authentication-trust-controller";
/// Where the ConfigMap is.
const NAMESPACE: &str = "kube-system";
/// Its name.
pub const NAME: &str = "extension-apiserver-authentication";
/// How often it is checked besides its changes.
const EVERY: Duration = Duration::from_secs(60);

fn configmap_ref() -> ObjectRef {
    ObjectRef::new("", "v1", "configmaps", Some(NAMESPACE), NAME)
}

/// Runs the controller over `registry`, publishing `data`, until the returned set is dropped.
pub fn start(registry: &Arc<Registry>, data: BTreeMap<String, String>) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    let Some(configmaps) = registry.resolve("", "v1", "configmaps") else {
        return tasks;
    };
    let client = Client::new(registry, MANAGER);
    let data = Value::from(
        data.into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect::<serde_json::Map<_, _>>(),
    );
    tasks.spawn(async move {
        let mut events = Box::pin(configmaps.follow("v1"));
        let mut tick = tokio::time::interval(EVERY);
        loop {
            tokio::select! {
                event = events.next() => match event {
                    Some(Event::Apply(o) | Event::Delete(o)) => {
                        // Every ConfigMap's events come here: read the head, not the object.
                        if o.namespace() != Some(NAMESPACE) || o.name() != Some(NAME) {
                            continue;
                        }
                    }
                    Some(Event::InitDone) => {}
                    Some(_) => continue,
                    None => return,
                },
                _ = tick.tick() => {}
            }
            if let Err(e) = publish(&client, &data).await {
                tracing::warn!(error = %e, "could not publish {NAMESPACE}/{NAME}; retried within a minute");
            }
        }
    });
    tasks
}

/// Creates the ConfigMap, or brings its data up to date.
async fn publish(client: &Client, data: &Value) -> Result<()> {
    let object = configmap_ref();
    match client.get(&object).await? {
        None => {
            let configmap = json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": NAME, "namespace": NAMESPACE},
                "data": data,
            });
            match client
                .create("", "v1", "configmaps", Some(NAMESPACE), configmap)
                .await
            {
                Err(e) if !e.is_already_exists() => Err(e),
                _ => Ok(()),
            }
        }
        Some(existing) if existing["data"] == *data => Ok(()),
        Some(existing) => {
            let uid = meta_str(&existing, "uid").unwrap_or_default();
            let data = data.clone();
            client
                .update(&object, uid, None, move |o| {
                    o["data"] = data.clone();
                    true
                })
                .await
        }
    }
}
