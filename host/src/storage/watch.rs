//! Watch events and the stream type every store's `watch` returns, plus the rule that turns one
//! committed change into the event a filtered watcher sees.

use std::pin::Pin;

use futures::Stream;
use serde_json::Value;

use super::error::StorageError;
use super::predicate::SelectionPredicate;

/// One event of a watch.
#[derive(Debug)]
pub enum WatchEvent {
    /// The object appeared (or started to match the watch's predicate).
    Added(Value),
    /// The object changed and still matches.
    Modified(Value),
    /// The object was deleted (or stopped matching); its resourceVersion is the deletion's
    /// revision.
    Deleted(Value),
    /// No object changed, but the store has reached this revision.
    Bookmark(u64),
    /// The watch failed; this is its last event.
    Error(StorageError),
}

impl WatchEvent {
    /// The revision the event was produced at (`None` for errors).
    pub fn revision(&self) -> Option<u64> {
        match self {
            Self::Added(o) | Self::Modified(o) | Self::Deleted(o) => {
                super::versioner::object_resource_version(o).ok().flatten()
            }
            Self::Bookmark(rev) => Some(*rev),
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

    /// The object the event carries, if any.
    pub fn object(&self) -> Option<&Value> {
        match self {
            Self::Added(o) | Self::Modified(o) | Self::Deleted(o) => Some(o),
            _ => None,
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
                    (_, true) if self.previous.is_none() => Some(WatchEvent::Added(cur.clone())),
                    (true, true) => Some(WatchEvent::Modified(cur.clone())),
                    (false, true) => Some(WatchEvent::Added(cur.clone())),
                    (true, false) => {
                        let mut gone = self.previous.clone().unwrap_or(Value::Null);
                        super::versioner::set_object_resource_version(&mut gone, self.revision);
                        Some(WatchEvent::Deleted(gone))
                    }
                    (false, false) => None,
                }
            }
            None if prev_matches => {
                let mut gone = self.previous.clone().unwrap_or(Value::Null);
                super::versioner::set_object_resource_version(&mut gone, self.revision);
                Some(WatchEvent::Deleted(gone))
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
