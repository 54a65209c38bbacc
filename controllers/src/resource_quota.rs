//! The resource quota controller (kube-controller-manager's `resourcequota-controller`): each
//! ResourceQuota's `status.hard` mirrors its `spec.hard`, and `status.used` counts what its
//! namespace holds of each limited resource that an object count measures (`registry::quota`).
//! A quota is recounted when it appears or its limits change (or someone rewrote its `hard`),
//! when an object it counts is deleted (or a Service changes), and every five minutes; quota
//! admission raises `used` as objects are created, this recount gives it back.
//!
//! Safe beside kube-controller-manager running the same controller: each status write is a
//! compare-and-swap on the quota it recounted, and both count the same way.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::queue::WorkQueue;
use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::follow::{Event, EventStreamExt as _};
use strategy_host_registry::follow::{Store, Writer};
use strategy_host_registry::quota::{
    counted_resource, resource_list, resource_list_value, Evaluator,
};
use strategy_host_registry::system_fields::meta_str;
use strategy_host_registry::{Registry, Result};

/// The field manager of its status writes.
const MANAGER: &str = "resourcequota-controller";
/// How often every quota is recounted whatever happened (kube-controller-manager's default
/// `--resource-quota-sync-period`): deletions a follower missed while relisting are found then.
const RESYNC: Duration = Duration::from_secs(300);

/// A quota, by namespace and name.
type QuotaKey = (String, String);

/// Runs the controller over `registry` until the returned set is dropped.
pub fn start(registry: &Arc<Registry>) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    let Some(quotas) = registry.resolve("", "v1", "resourcequotas") else {
        return tasks;
    };
    let queue: Arc<WorkQueue<QuotaKey>> = WorkQueue::new();
    let writer = Writer::new().with_index("namespace", |q| {
        meta_str(q, "namespace")
            .map(String::from)
            .into_iter()
            .collect()
    });
    let store = writer.reader();
    // The resources some quota counts, to be followed for deletions.
    let (monitor_tx, monitor_rx) = mpsc::unbounded_channel();
    let mut applied = Box::pin(quotas.follow("v1").reflect(writer).applied_objects());
    let to_queue = queue.clone();
    tasks.spawn(async move {
        while let Some(quota) = applied.next().await {
            let quota = quota.to_value();
            for name in resource_list(&quota["spec"]["hard"]).keys() {
                if let Some(resource) = counted_resource(name) {
                    let _ = monitor_tx.send(resource);
                }
            }
            if needs_recount(&quota) {
                to_queue.add(key_of(&quota));
            }
        }
    });
    tasks.spawn(monitor(
        Arc::downgrade(registry),
        monitor_rx,
        store.clone(),
        queue.clone(),
    ));
    let (to_queue, every) = (queue.clone(), store.clone());
    tasks.spawn(async move {
        let mut resync = tokio::time::interval(RESYNC);
        resync.tick().await;
        loop {
            resync.tick().await;
            for quota in every.state() {
                to_queue.add(key_of(&quota));
            }
        }
    });
    let client = Client::new(registry, MANAGER);
    tasks.spawn(queue.work(MANAGER, move |(namespace, name)| {
        let client = client.clone();
        async move { recount(&client, &namespace, &name).await }
    }));
    tasks
}

fn key_of(quota: &Value) -> QuotaKey {
    let field = |f| meta_str(quota, f).unwrap_or_default().to_string();
    (field("namespace"), field("name"))
}

/// Whether a quota's status is not what the controller last wrote: its `hard` differs from
/// the spec's (a new quota, changed limits, a client's status write), or nothing is counted.
fn needs_recount(quota: &Value) -> bool {
    let status = &quota["status"];
    status["used"].is_null()
        || resource_list(&quota["spec"]["hard"]) != resource_list(&status["hard"])
}

/// Follows each resource `wanted` names once, queueing the quotas of a namespace whose object
/// was deleted (or, for what an update can change, written).
async fn monitor(
    registry: std::sync::Weak<Registry>,
    mut wanted: mpsc::UnboundedReceiver<(String, String)>,
    quotas: Store,
    queue: Arc<WorkQueue<QuotaKey>>,
) {
    let mut followed: HashMap<(String, String), tokio::task::JoinHandle<()>> = HashMap::new();
    while let Some((group, plural)) = wanted.recv().await {
        if followed
            .get(&(group.clone(), plural.clone()))
            .is_some_and(|t| !t.is_finished())
        {
            continue;
        }
        let Some(served) = registry
            .upgrade()
            .and_then(|r| r.resolve_any(&group, &plural))
        else {
            continue;
        };
        let charges_updates = Evaluator::of(&group, &plural).is_some_and(|e| e.charges_updates());
        let mut events = Box::pin(served.follow_stored());
        let (quotas, queue) = (quotas.clone(), queue.clone());
        let task = tokio::spawn(async move {
            while let Some(event) = events.next().await {
                let object = match event {
                    Event::Delete(o) => o,
                    Event::Apply(o) if charges_updates => o,
                    _ => continue,
                };
                if let Some(namespace) = object.namespace() {
                    for quota in quotas.indexed("namespace", namespace) {
                        queue.add(key_of(&quota));
                    }
                }
            }
        });
        // A resource that stopped being served ends its follower; asked again, it restarts.
        followed.insert((group, plural), task);
    }
    for task in followed.into_values() {
        task.abort();
    }
}

/// Recounts the quota `namespace`/`name` and writes its status if it changed; `Ok(false)` to
/// look again later (it changed meanwhile).
async fn recount(client: &Client, namespace: &str, name: &str) -> Result<bool> {
    let target = ObjectRef::new("", "v1", "resourcequotas", Some(namespace), name);
    let Some(mut quota) = client.get(&target).await? else {
        return Ok(true);
    };
    let hard = quota["spec"]["hard"].clone();
    let mut by_resource: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for limit in resource_list(&hard).into_keys() {
        if let Some(resource) = counted_resource(&limit) {
            by_resource.entry(resource).or_default().insert(limit);
        }
    }
    let mut used = BTreeMap::new();
    for ((group, plural), names) in by_resource {
        let Some(evaluator) = Evaluator::of(&group, &plural) else {
            continue;
        };
        let Some(served) = client
            .registry()
            .and_then(|r| r.resolve_any(&group, &plural))
        else {
            // Not served: nothing can be counted, and nothing is reported.
            continue;
        };
        let objects = match evaluator.selected_by(&quota) {
            true => {
                let version = served.def.storage_version().to_string();
                client
                    .list(&group, &version, &plural, Some(namespace))
                    .await?
            }
            false => Vec::new(),
        };
        for name in &names {
            used.insert(name.clone(), Default::default());
        }
        for object in &objects {
            for (name, q) in evaluator.usage(object) {
                if let Some(total) = used.get_mut(&name) {
                    *total += q;
                }
            }
        }
    }
    let status = serde_json::json!({"hard": hard, "used": resource_list_value(&used)});
    let current = &quota["status"];
    if resource_list(&current["hard"]) == resource_list(&status["hard"])
        && !current["used"].is_null()
        && resource_list(&current["used"]) == used
    {
        return Ok(true);
    }
    quota["status"] = status;
    match client.replace_at(&target, Some("status"), quota).await {
        Ok(_) => Ok(true),
        Err(e) if e.is_conflict() => Ok(false),
        Err(e) if e.is_not_found() => Ok(true),
        Err(e) => Err(e),
    }
}
