//! Expiry of Events after a time to live (`--event-ttl`), on any store: Kubernetes attaches an
//! etcd lease to each Event; here one task per server sweeps the Events' storage and deletes
//! those whose last write is older than the TTL (with a resourceVersion precondition, so an
//! Event written again meanwhile is kept). Replicas sweeping together only race on deletes.

use std::sync::Weak;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::system_fields::parse_rfc3339;
use super::Registry;
use crate::storage::{ConditionalDelete, ListOptions, Preconditions};

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

/// Sweeps expired Events every `min(ttl / 10, 60 s)` until the registry is dropped.
pub fn start(registry: &std::sync::Arc<Registry>, ttl: Duration) {
    let Some(events) = registry.resolve("", "v1", "events") else {
        return;
    };
    let weak: Weak<Registry> = std::sync::Arc::downgrade(registry);
    let interval = (ttl / 10).clamp(Duration::from_millis(100), MAX_SWEEP_INTERVAL);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if weak.strong_count() == 0 {
                return;
            }
            if let Err(e) = sweep(&events, ttl).await {
                tracing::warn!(error = %e, "event expiry sweep failed; retrying at the next tick");
            }
        }
    });
}

async fn sweep(events: &super::ServedResource, ttl: Duration) -> crate::storage::Result<()> {
    let storage = events.store.storage();
    let prefix = events.def.key_prefix();
    let list = storage
        .get_list(
            &prefix,
            ListOptions {
                recursive: true,
                ..Default::default()
            },
        )
        .await?;
    let now = SystemTime::now();
    for event in list.items {
        let expired = last_written(&event.to_value())
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age >= ttl);
        if !expired {
            continue;
        }
        let (Some(ns), Some(name)) = (event.namespace(), event.name()) else {
            continue;
        };
        let preconditions = Preconditions {
            resource_version: Some(event.revision().to_string()),
            ..Preconditions::none()
        };
        let key = events.def.object_key(Some(ns), name);
        match storage
            .delete(
                &key,
                ConditionalDelete::default().preconditions(&preconditions),
            )
            .await
        {
            Ok(_) => tracing::debug!(namespace = ns, name, "expired event deleted"),
            Err(e) if e.is_not_found() || e.is_conflict() => {}
            Err(e) => return Err(e),
        }
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
