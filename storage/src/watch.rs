//! Watch events and the stream type every store's `watch` returns, plus the rule that turns one
//! committed change into the event a filtered watcher sees.

use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;

use super::error::StorageError;
pub use super::object::SharedObject;
use super::predicate::SelectionPredicate;

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
    pub previous: Option<Arc<SharedObject>>,
    /// The object after the change; `None` for a delete.
    pub current: Option<Arc<SharedObject>>,
}

impl Change {
    /// The event a watcher with `predicate` sees for this change, if any: a change that makes an
    /// object match is ADDED to that watcher, one that makes it stop matching is DELETED (with
    /// the last state stamped with the change's revision).
    pub fn to_event(&self, predicate: &SelectionPredicate) -> Option<WatchEvent> {
        let matches = |o: &Arc<SharedObject>| predicate.matches_object(o);
        let prev_matches = self.previous.as_ref().is_some_and(matches);
        let tombstone = || {
            let previous = self.previous.as_ref()?;
            Some(WatchEvent::Deleted(Arc::new(
                previous.at_revision(self.revision),
            )))
        };
        match &self.current {
            Some(cur) => match (prev_matches, matches(cur)) {
                (_, true) if self.previous.is_none() => Some(WatchEvent::Added(cur.clone())),
                (true, true) => Some(WatchEvent::Modified(cur.clone())),
                (false, true) => Some(WatchEvent::Added(cur.clone())),
                (true, false) => tombstone(),
                (false, false) => None,
            },
            None if prev_matches => tombstone(),
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predicate::LabelSelector;
    use serde_json::json;

    #[test]
    fn predicate_transitions_become_added_and_deleted() {
        let pred = SelectionPredicate {
            label: LabelSelector::parse("a=1").unwrap(),
            ..Default::default()
        };
        let shared = |v| Some(Arc::new(SharedObject::new(v)));
        let on = shared(json!({"metadata": {"labels": {"a": "1"}, "resourceVersion": "2"}}));
        let off = shared(json!({"metadata": {"labels": {"a": "0"}, "resourceVersion": "3"}}));
        let c = Change {
            revision: 3,
            previous: on.clone(),
            current: off.clone(),
        };
        match c.to_event(&pred) {
            Some(WatchEvent::Deleted(o)) => {
                assert_eq!(o.to_value()["metadata"]["resourceVersion"], "3");
            }
            other => panic!("{other:?}"),
        }
        let c = Change {
            revision: 4,
            previous: off,
            current: on,
        };
        assert!(matches!(c.to_event(&pred), Some(WatchEvent::Added(_))));
    }
}
