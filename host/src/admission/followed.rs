//! The configuration objects admission follows (webhook configurations, policies, bindings):
//! every object of one resource, by name, kept current from the informer; `on_change` sees the
//! whole set after each change.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use futures::StreamExt as _;
use serde_json::Value;

use crate::registry::Registry;
use crate::storage::informer::{informer, InformerConfig, InformerEvent};

/// Follows the objects of `group`/`version`/`plural` until `on_change` answers `false` (its
/// owner is gone).
pub fn follow(
    registry: &Registry,
    (group, version, plural): (&str, &str, &str),
    mut on_change: impl FnMut(&BTreeMap<String, Value>) -> bool + Send + 'static,
) {
    let Some(served) = registry.resolve(group, version, plural) else {
        return;
    };
    let (storage, prefix) = (served.store.storage().clone(), served.def.key_prefix());
    tokio::spawn(async move {
        let mut events = Box::pin(informer(storage, prefix, InformerConfig::default()));
        let mut current: BTreeMap<String, Value> = BTreeMap::new();
        let mut listing = BTreeMap::new();
        let name = |o: &Value| {
            o.pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        while let Some(event) = events.next().await {
            match event {
                InformerEvent::Init => listing.clear(),
                InformerEvent::InitApply(o) => {
                    let o = o.to_value();
                    listing.insert(name(&o), o);
                    continue;
                }
                InformerEvent::InitDone { .. } => current = std::mem::take(&mut listing),
                InformerEvent::Apply(o) => {
                    let o = o.to_value();
                    current.insert(name(&o), o);
                }
                InformerEvent::Delete(o) => {
                    current.remove(&name(&o.to_value()));
                }
                InformerEvent::Progress(_) => continue,
            }
            if !on_change(&current) {
                return;
            }
        }
    });
}

/// Follows the objects of `resource` (group, version, plural) into `into`, as `parse` reads the
/// whole set, for as long as `into` lives.
pub fn follow_into<T: Send + Sync + 'static>(
    registry: &Registry,
    resource: (&str, &str, &str),
    into: &Arc<RwLock<T>>,
    parse: impl Fn(&BTreeMap<String, Value>) -> T + Send + 'static,
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
    let served = registry.upgrade()?.resolve("", "v1", "namespaces")?;
    let scope = crate::registry::RequestScope {
        version: "v1".into(),
        ..Default::default()
    };
    let options = crate::storage::GetOptions {
        resource_version: "0".into(),
        ignore_not_found: false,
    };
    served.store.get(&scope, name?, options).await.ok()
}
