//! The configuration objects admission follows (webhook configurations, policies, bindings):
//! every object of one resource, in name order, kept current by the registry-level watch into a
//! reflector store; `on_change` sees the whole set after each change.

use std::sync::{Arc, RwLock};

use futures::StreamExt as _;
use serde_json::Value;

use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::follow::{EventStreamExt as _, Writer};
use strategy_host_registry::Registry;

/// Follows the objects of `group`/`version`/`plural` until `on_change` answers `false` (its
/// owner is gone).
pub fn follow(
    registry: &Registry,
    (group, version, plural): (&str, &str, &str),
    mut on_change: impl FnMut(&[Arc<Value>]) -> bool + Send + 'static,
) {
    let Some(served) = registry.resolve(group, version, plural) else {
        return;
    };
    let mut changes = Box::pin(served.follow(version).reflect_changes(Writer::new()));
    tokio::spawn(async move {
        while let Some(store) = changes.next().await {
            if !on_change(&store.state()) {
                return;
            }
        }
    });
}

/// Follows the objects of `resource` (group, version, plural) into `into`, as `parse` reads the
/// whole set (in name order), for as long as `into` lives.
pub fn follow_into<T: Send + Sync + 'static>(
    registry: &Registry,
    resource: (&str, &str, &str),
    into: &Arc<RwLock<T>>,
    parse: impl Fn(&[Arc<Value>]) -> T + Send + 'static,
) {
    let weak = Arc::downgrade(into);
    follow(registry, resource, move |all| {
        let Some(target) = weak.upgrade() else {
            return false;
        };
        *target.write().unwrap_or_else(|p| p.into_inner()) = parse(all);
        true
    });
}

/// The namespace `name` as the watch cache holds it (for selectors and `namespaceObject`).
pub async fn namespace_object(
    registry: &std::sync::Weak<Registry>,
    name: Option<&str>,
) -> Option<Value> {
    let client = Client::new(&registry.upgrade()?, "admission");
    let namespace = ObjectRef::new("", "v1", "namespaces", None, name?);
    client.get_cached(&namespace).await.ok().flatten()
}
