//! Objects, keys and small helpers shared by the conformance cases.

use std::time::Duration;

use futures::StreamExt;
use serde_json::{json, Value};

use crate::{
    ConditionalDelete, GetOptions, GuaranteedUpdate, ListOptions, ObjectList, ResourceVersionMatch,
    Storage, StorageError, TryUpdate, WatchEvent, WatchStream,
};

/// The key of widget `name` in namespace `ns`.
pub fn key(ns: &str, name: &str) -> String {
    format!("/example.com/widgets/{ns}/{name}")
}

/// The recursive key of every widget in `ns`.
pub(super) fn ns_key(ns: &str) -> String {
    format!("/example.com/widgets/{ns}")
}

/// A widget with a uid derived from its name.
pub fn object(ns: &str, name: &str) -> Value {
    object_with_labels(ns, name, json!({}))
}

/// A widget with labels.
pub fn object_with_labels(ns: &str, name: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{ns}-{name}"), "labels": labels},
        "spec": {"size": 1}
    })
}

/// The resourceVersion of an object, as a number.
pub fn rv(obj: &Value) -> u64 {
    crate::versioner::object_resource_version(obj)
        .expect("valid resourceVersion")
        .expect("resourceVersion set")
}

/// The names of a list's items, in order.
pub fn names(list: &ObjectList) -> Vec<String> {
    list.items
        .iter()
        .map(|o| o.name().unwrap_or_default().to_string())
        .collect()
}

/// The object without its resourceVersion, for comparing content.
pub(super) fn content(obj: &Value) -> Value {
    let mut copy = obj.clone();
    crate::versioner::clear_object_resource_version(&mut copy);
    copy
}

/// Reads the latest state of `key`.
pub(super) async fn get(store: &dyn Storage, key: &str) -> Result<Option<Value>, StorageError> {
    store.get(key, GetOptions::ignoring_not_found()).await
}

/// Options of a get at resourceVersion `rv`.
pub(super) fn at(rv: &str) -> GetOptions {
    GetOptions {
        resource_version: rv.to_string(),
        ..Default::default()
    }
}

/// A try-update that applies `change` to the current object, which must exist.
pub fn modifying<'a>(mut change: impl FnMut(&mut Value) + Send + 'a) -> TryUpdate<'a> {
    Box::new(move |current| {
        let updated = match current {
            Some(mut obj) => {
                change(&mut obj);
                Ok(obj)
            }
            None => Err("no object".into()),
        };
        Box::pin(async move { updated })
    })
}

/// A try-update that sets `spec.size`.
pub fn set_size<'a>(size: u64) -> TryUpdate<'a> {
    modifying(move |obj| obj["spec"]["size"] = json!(size))
}

/// Creates widget `name` in `ns` (see [`object`]) and returns it as stored.
pub async fn create(store: &dyn Storage, ns: &str, name: &str) -> Value {
    store
        .create(&key(ns, name), object(ns, name))
        .await
        .expect("create")
}

/// Applies `change` to the object at `key` unconditionally and returns the stored object.
pub async fn modify(
    store: &dyn Storage,
    key: &str,
    change: impl FnMut(&mut Value) + Send,
) -> Value {
    store
        .guaranteed_update(key, GuaranteedUpdate::new(modifying(change)))
        .await
        .expect("update")
}

/// Sets `spec.size` unconditionally and returns the stored object.
pub async fn update_size(store: &dyn Storage, key: &str, size: u64) -> Value {
    modify(store, key, move |obj| obj["spec"]["size"] = json!(size)).await
}

/// Deletes `key` unconditionally and returns the deleted object.
pub(super) async fn delete(store: &dyn Storage, key: &str) -> Value {
    store
        .delete(key, ConditionalDelete::default())
        .await
        .expect("delete")
}

/// Options of a watch from `rv`.
pub(super) fn watch_from(rv: u64, recursive: bool) -> ListOptions {
    ListOptions {
        resource_version: rv.to_string(),
        recursive,
        ..Default::default()
    }
}

/// Options of a recursive list at exactly revision `rv`.
pub fn exact(rv: u64) -> ListOptions {
    ListOptions {
        resource_version: rv.to_string(),
        resource_version_match: Some(ResourceVersionMatch::Exact),
        recursive: true,
        ..Default::default()
    }
}

/// Watches every widget in `ns` for changes after `rv`.
pub(super) async fn watch_ns(store: &dyn Storage, ns: &str, rv: u64) -> WatchStream {
    store
        .watch(&ns_key(ns), watch_from(rv, true))
        .await
        .expect("watch")
}

/// The next non-bookmark event, or a panic after ten seconds.
pub(super) async fn next_event(stream: &mut WatchStream) -> WatchEvent {
    loop {
        match tokio::time::timeout(Duration::from_secs(10), stream.next()).await {
            Err(_) => panic!("no watch event within 10s"),
            Ok(None) => panic!("watch ended unexpectedly"),
            Ok(Some(WatchEvent::Bookmark(_))) => continue,
            Ok(Some(event)) => return event,
        }
    }
}

/// Asserts that no non-bookmark event arrives within `wait`.
pub(super) async fn expect_silence(stream: &mut WatchStream, wait: Duration) {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Err(_) => return,
            Ok(Some(WatchEvent::Bookmark(_))) => continue,
            Ok(other) => panic!("expected no event, got {other:?}"),
        }
    }
}

/// Asserts the event's type and object name, and returns its object.
pub(super) fn expect_event(event: WatchEvent, kind: &str, name: &str) -> Value {
    assert_eq!(event.type_name(), kind, "unexpected event {event:?}");
    let obj = event.object().cloned().expect("event carries an object");
    assert_eq!(obj.name(), Some(name), "event for the wrong object: {obj}");
    obj.into_value()
}
