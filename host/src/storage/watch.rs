//! Watch events and the stream type every store's `watch` returns, plus the rule that turns one
//! committed change into the event a filtered watcher sees.

use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use futures::Stream;
use serde_json::Value;

use super::error::StorageError;
use super::predicate::SelectionPredicate;

/// An object shared by every reader and watcher that sees it, stamped with its
/// resourceVersion. Its JSON encoding is computed at most once, on first use, and shared from
/// then on, so one event fans out to any number of watchers without a copy.
#[derive(Debug)]
pub struct SharedObject {
    value: Value,
    revision: u64,
    json: OnceLock<Bytes>,
}

impl SharedObject {
    /// Wraps an object.
    pub fn new(value: Value) -> Self {
        let revision = super::versioner::object_resource_version(&value)
            .ok()
            .flatten()
            .unwrap_or(0);
        Self {
            value,
            revision,
            json: OnceLock::new(),
        }
    }

    /// The object.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// The object, copied only when another holder shares it.
    pub fn into_value(self: Arc<Self>) -> Value {
        Arc::try_unwrap(self).map_or_else(|shared| shared.value.clone(), |own| own.value)
    }

    /// The object as compact JSON, serialized once and shared by every caller.
    pub fn json(&self) -> Bytes {
        self.json
            .get_or_init(|| Bytes::from(serde_json::to_vec(&self.value).unwrap_or_default()))
            .clone()
    }

    /// The object's resourceVersion (0 when missing).
    pub fn revision(&self) -> u64 {
        self.revision
    }
}

impl std::ops::Deref for SharedObject {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.value
    }
}

impl std::fmt::Display for SharedObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.value.fmt(f)
    }
}

impl PartialEq for SharedObject {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

/// One event of a watch, the one type from the stores to the client: stores and the cacher
/// produce it, the registry brings its objects to the request's version, the api frames it.
#[derive(Debug, Clone)]
pub enum WatchEvent {
    /// The object appeared (or started to match the watch's predicate).
    Added(Arc<SharedObject>),
    /// The object changed and still matches.
    Modified(Arc<SharedObject>),
    /// The object was deleted (or stopped matching); its resourceVersion is the deletion's
    /// revision.
    Deleted(Arc<SharedObject>),
    /// No object changed, but every change up to this object's resourceVersion was sent. From
    /// a store it carries only `metadata.resourceVersion`; the registry adds kind, apiVersion
    /// and, at the end of a watch's initial events, the `k8s.io/initial-events-end` annotation.
    Bookmark(Arc<SharedObject>),
    /// The watch failed; this is its last event.
    Error(Arc<StorageError>),
}

impl WatchEvent {
    /// An ADDED event.
    pub fn added(obj: Value) -> Self {
        Self::Added(Arc::new(SharedObject::new(obj)))
    }

    /// A MODIFIED event.
    pub fn modified(obj: Value) -> Self {
        Self::Modified(Arc::new(SharedObject::new(obj)))
    }

    /// A DELETED event.
    pub fn deleted(obj: Value) -> Self {
        Self::Deleted(Arc::new(SharedObject::new(obj)))
    }

    /// A BOOKMARK at `revision`.
    pub fn bookmark(revision: u64) -> Self {
        let marker = serde_json::json!({"metadata": {"resourceVersion": revision.to_string()}});
        Self::Bookmark(Arc::new(SharedObject::new(marker)))
    }

    /// An ERROR event.
    pub fn error(e: StorageError) -> Self {
        Self::Error(Arc::new(e))
    }

    /// The revision the event was produced at (`None` for errors).
    pub fn revision(&self) -> Option<u64> {
        match self {
            Self::Added(o) | Self::Modified(o) | Self::Deleted(o) | Self::Bookmark(o) => {
                Some(o.revision())
            }
            Self::Error(_) => None,
        }
    }

    /// The Kubernetes name of the event type.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Added(_) => "ADDED",
            Self::Modified(_) => "MODIFIED",
            Self::Deleted(_) => "DELETED",
            Self::Bookmark(_) => "BOOKMARK",
            Self::Error(_) => "ERROR",
        }
    }

    /// The object of an ADDED, MODIFIED or DELETED event.
    pub fn object(&self) -> Option<&Arc<SharedObject>> {
        match self {
            Self::Added(o) | Self::Modified(o) | Self::Deleted(o) => Some(o),
            _ => None,
        }
    }

    /// The same event carrying `f` of its object (bookmarks and errors unchanged).
    pub fn map_object(self, f: impl FnOnce(Arc<SharedObject>) -> Arc<SharedObject>) -> Self {
        match self {
            Self::Added(o) => Self::Added(f(o)),
            Self::Modified(o) => Self::Modified(f(o)),
            Self::Deleted(o) => Self::Deleted(f(o)),
            other => other,
        }
    }
}

/// A watch: dropping it cancels the watch and frees everything it holds.
pub type WatchStream = Pin<Box<dyn Stream<Item = WatchEvent> + Send>>;

/// One committed change to a key, as the stores see it: the state before and after, each stamped
/// with the revision it was written at (`current` is `None` for a delete, whose revision is
/// `revision`).
#[derive(Debug, Clone)]
pub struct Change {
    /// The revision of the change.
    pub revision: u64,
    /// The object before the change, if it existed.
    pub previous: Option<Value>,
    /// The object after the change; `None` for a delete.
    pub current: Option<Value>,
}

impl Change {
    /// The event a watcher with `predicate` sees for this change, if any: a change that makes an
    /// object match is ADDED to that watcher, one that makes it stop matching is DELETED.
    pub fn to_event(&self, predicate: &SelectionPredicate) -> Option<WatchEvent> {
        let prev_matches = self.previous.as_ref().is_some_and(|p| predicate.matches(p));
        match &self.current {
            Some(cur) => {
                let cur_matches = predicate.matches(cur);
                match (prev_matches, cur_matches) {
                    (_, true) if self.previous.is_none() => Some(WatchEvent::added(cur.clone())),
                    (true, true) => Some(WatchEvent::modified(cur.clone())),
                    (false, true) => Some(WatchEvent::added(cur.clone())),
                    (true, false) => {
                        let mut gone = self.previous.clone().unwrap_or(Value::Null);
                        super::versioner::set_object_resource_version(&mut gone, self.revision);
                        Some(WatchEvent::deleted(gone))
                    }
                    (false, false) => None,
                }
            }
            None if prev_matches => {
                let mut gone = self.previous.clone().unwrap_or(Value::Null);
                super::versioner::set_object_resource_version(&mut gone, self.revision);
                Some(WatchEvent::deleted(gone))
            }
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::predicate::LabelSelector;
    use serde_json::json;

    #[test]
    fn predicate_transitions_become_added_and_deleted() {
        let pred = SelectionPredicate {
            label: LabelSelector::parse("a=1").unwrap(),
            ..Default::default()
        };
        let on = json!({"metadata": {"labels": {"a": "1"}, "resourceVersion": "2"}});
        let off = json!({"metadata": {"labels": {"a": "0"}, "resourceVersion": "3"}});
        let c = Change {
            revision: 3,
            previous: Some(on.clone()),
            current: Some(off.clone()),
        };
        match c.to_event(&pred) {
            Some(WatchEvent::Deleted(o)) => assert_eq!(o["metadata"]["resourceVersion"], "3"),
            other => panic!("{other:?}"),
        }
        let c = Change {
            revision: 4,
            previous: Some(off),
            current: Some(on),
        };
        assert!(matches!(c.to_event(&pred), Some(WatchEvent::Added(_))));
    }
}
