//! The event expiry controller (`--event-ttl`): Kubernetes attaches an etcd lease to each
//! Event; here the controller, on the host elected to run controllers, follows Events through
//! the registry-level watch and deletes, through the registry, those whose last write is older
//! than the TTL — with a resourceVersion precondition, so an Event written again meanwhile is
//! kept. Any store, one sweeper per cluster.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::StreamExt as _;
use serde_json::Value;
use tokio::task::JoinSet;

use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::follow::{EventStreamExt as _, Store, Writer};
use strategy_host_registry::system_fields::{meta_str, parse_rfc3339};
use strategy_host_registry::Preconditions;
use strategy_host_registry::Registry;

/// How often the sweep runs at most (and at least every tenth of the TTL).
const MAX_SWEEP_INTERVAL: Duration = Duration::from_secs(60);

/// The last time an Event was written, as far as its fields say (the latest of its timestamps).
fn last_written(event: &Value) -> Option<SystemTime> {
    [
        "/metadata/creationTimestamp",
        "/lastTimestamp",
        "/firstTimestamp",
        "/eventTime",
        "/series/lastObservedTime",
    ]
    .iter()
    .filter_map(|p| event.pointer(p).and_then(Value::as_str))
    .filter_map(parse_rfc3339)
    .filter_map(|secs| u64::try_from(secs).ok())
    .map(|secs| SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
    .max()
}

/// Runs the controller over `registry`, sweeping every `min(ttl / 10, 60 s)`, until the
/// returned set is dropped.
pub fn start(registry: &Arc<Registry>, ttl: Duration) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    let Some(events) = registry.resolve("", "v1", "events") else {
        return tasks;
    };
    let writer = Writer::new();
    let store = writer.reader();
    let follower = events.follow("v1").reflect(writer);
    tasks.spawn(follower.for_each(|_| std::future::ready(())));
    let client = Client::new(registry, "event-expiry-controller");
    let interval = (ttl / 10).clamp(Duration::from_millis(100), MAX_SWEEP_INTERVAL);
    tasks.spawn(async move {
        store.wait_until_ready().await;
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Err(e) = sweep(&client, &store, ttl).await {
                tracing::warn!(error = %e, "event expiry sweep failed; retrying at the next tick");
            }
        }
    });
    tasks
}

/// Deletes the expired Events of `store`.
async fn sweep(
    client: &Client,
    store: &Store,
    ttl: Duration,
) -> strategy_host_registry::Result<()> {
    let now = SystemTime::now();
    for event in store.state() {
        let expired = last_written(&event)
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age >= ttl);
        let (Some(namespace), Some(name)) =
            (meta_str(&event, "namespace"), meta_str(&event, "name"))
        else {
            continue;
        };
        if !expired {
            continue;
        }
        let object = ObjectRef {
            group: String::new(),
            version: "v1".into(),
            plural: "events".into(),
            namespace: Some(namespace.into()),
            name: name.into(),
        };
        let Some(resource_version) = meta_str(&event, "resourceVersion") else {
            continue;
        };
        let unchanged = Preconditions::resource_version(resource_version);
        client.delete(&object, unchanged, None).await?;
        tracing::debug!(namespace, name, "expired event deleted");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_latest_timestamp_counts() {
        let e = json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"}, "lastTimestamp": "2026-01-01T01:00:00Z", "series": {"lastObservedTime": "2026-01-01T00:30:00.123456Z"}});
        let t = last_written(&e).unwrap();
        assert_eq!(
            t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs(),
            1_767_225_600 + 3600
        );
        assert!(last_written(&json!({})).is_none());
    }
}
