//! The watch cache: the current objects of one resource prefix, plus a sliding window of recent
//! events in a ring buffer that grows while it is full of fresh events and shrinks when it holds
//! stale ones (Kubernetes' `watch_cache.go`).

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, OnceLock};

pub(crate) use crate::watch::SharedObject as CachedObject;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::key::KeyScope;
use crate::pager::{Page, Pager};
use crate::predicate::SelectionPredicate;

/// One committed change as the cache keeps it: the states before and after, shared.
#[derive(Debug)]
pub(crate) struct CacheEvent {
    /// The revision of the change.
    pub revision: u64,
    /// The changed key.
    pub key: String,
    /// The object before the change.
    pub previous: Option<Arc<CachedObject>>,
    /// The object after the change; `None` for a delete.
    pub current: Option<Arc<CachedObject>>,
    /// The previous state stamped with this revision (what a DELETED event carries).
    tombstone: OnceLock<Arc<CachedObject>>,
    /// When the cache recorded the event (drives the window's size).
    pub recorded: Instant,
}

/// The kind of event one watcher sees for a change, after its predicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventKind {
    Added,
    Modified,
    Deleted,
}

impl CacheEvent {
    /// The previous state stamped with the change's revision (computed once).
    pub(crate) fn tombstone(&self) -> Arc<CachedObject> {
        self.tombstone
            .get_or_init(|| {
                let gone = match &self.previous {
                    Some(previous) => previous.at_revision(self.revision),
                    None => CachedObject::new(Value::Null).at_revision(self.revision),
                };
                Arc::new(gone)
            })
            .clone()
    }

    /// What a watcher with `predicate` sees (`watch::Change::to_event`'s rules): a change that
    /// makes an object match is ADDED, one that makes it stop matching is DELETED.
    pub(crate) fn for_predicate(
        &self,
        predicate: &SelectionPredicate,
    ) -> Option<(EventKind, Arc<CachedObject>)> {
        let everything = predicate.is_everything();
        let matches = |o: &Arc<CachedObject>| everything || predicate.matches_object(o);
        let prev_matches = self.previous.as_ref().is_some_and(matches);
        match &self.current {
            Some(cur) => match (prev_matches, matches(cur)) {
                (_, true) if self.previous.is_none() => Some((EventKind::Added, cur.clone())),
                (true, true) => Some((EventKind::Modified, cur.clone())),
                (false, true) => Some((EventKind::Added, cur.clone())),
                (true, false) => Some((EventKind::Deleted, self.tombstone())),
                (false, false) => None,
            },
            None if prev_matches => Some((EventKind::Deleted, self.tombstone())),
            None => None,
        }
    }
}

/// One change coming from the store below.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// The object was created or changed.
    Put {
        key: String,
        object: Arc<CachedObject>,
    },
    /// The object was deleted; it carries the deletion's revision.
    Delete {
        key: String,
        object: Arc<CachedObject>,
    },
}

/// How the window of recent events is sized.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WindowBounds {
    /// The smallest capacity (also the initial one).
    pub lower: usize,
    /// The largest capacity.
    pub upper: usize,
    /// Events younger than this are worth keeping: a full window of them grows.
    pub freshness: Duration,
}

/// The current objects and the window of recent events.
#[derive(Debug)]
pub(crate) struct WatchCache {
    objects: BTreeMap<String, Arc<CachedObject>>,
    window: VecDeque<Arc<CacheEvent>>,
    capacity: usize,
    bounds: WindowBounds,
    /// Every event with a revision above this one is in the window.
    window_start: u64,
    /// The last revision processed (events and progress notifications).
    revision: u64,
    /// Bumped by every `replace`: watchers from an older epoch saw a history that is gone.
    epoch: u64,
}

impl WatchCache {
    /// An empty cache at revision 0.
    pub(crate) fn new(bounds: WindowBounds) -> Self {
        let lower = bounds.lower.max(1);
        Self {
            objects: BTreeMap::new(),
            window: VecDeque::with_capacity(lower),
            capacity: lower,
            bounds: WindowBounds {
                lower,
                upper: bounds.upper.max(lower),
                ..bounds
            },
            window_start: 0,
            revision: 0,
            epoch: 0,
        }
    }

    /// The last revision processed.
    pub(crate) fn revision(&self) -> u64 {
        self.revision
    }

    /// The oldest revision a watch may start from.
    pub(crate) fn window_start(&self) -> u64 {
        self.window_start
    }

    /// The current epoch (see `replace`).
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The window's current capacity.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many events the window holds.
    pub(crate) fn window_len(&self) -> usize {
        self.window.len()
    }

    /// How many objects the cache holds.
    pub(crate) fn len(&self) -> usize {
        self.objects.len()
    }

    /// Replaces everything with a fresh list at `revision`; the window restarts empty there.
    pub(crate) fn replace(&mut self, objects: Vec<(String, Arc<CachedObject>)>, revision: u64) {
        self.objects = objects.into_iter().collect();
        self.window.clear();
        self.capacity = self.bounds.lower;
        self.window_start = revision;
        self.revision = revision;
        self.epoch += 1;
    }

    /// Moves the revision forward without a change (a progress notification). False when it
    /// is not newer.
    pub(crate) fn bookmark(&mut self, revision: u64) -> bool {
        if revision <= self.revision {
            return false;
        }
        self.revision = revision;
        true
    }

    /// Applies one change recorded at `now`; `None` when it is not newer than the cache.
    pub(crate) fn apply(&mut self, change: Incoming, now: Instant) -> Option<Arc<CacheEvent>> {
        let (key, object, deleted) = match change {
            Incoming::Put { key, object } => (key, object, false),
            Incoming::Delete { key, object } => (key, object, true),
        };
        let revision = object.revision();
        if revision == 0 || revision <= self.revision {
            return None;
        }
        let (previous, current) = if deleted {
            let previous = self.objects.remove(&key);
            (previous, None)
        } else {
            let previous = self.objects.insert(key.clone(), object.clone());
            (previous, Some(object.clone()))
        };
        let event = CacheEvent {
            revision,
            key,
            previous,
            current,
            tombstone: OnceLock::new(),
            recorded: now,
        };
        if deleted {
            // The store below already sent the previous state stamped with the deletion.
            let _ = event.tombstone.set(object);
        }
        let event = Arc::new(event);
        self.push(event.clone());
        self.revision = revision;
        Some(event)
    }

    fn push(&mut self, event: Arc<CacheEvent>) {
        self.resize(event.recorded);
        while self.window.len() >= self.capacity {
            if let Some(old) = self.window.pop_front() {
                self.window_start = old.revision;
            }
        }
        self.window.push_back(event);
    }

    /// Grows the window (×2) while it is full and its oldest event is fresh; shrinks it (÷2)
    /// when it is full and even its newest quarter is stale.
    fn resize(&mut self, now: Instant) {
        if self.window.len() < self.capacity {
            return;
        }
        let fresh = self.bounds.freshness;
        let age = |e: &CacheEvent| now.saturating_duration_since(e.recorded);
        if self.window.front().is_some_and(|e| age(e) < fresh) {
            self.capacity = (self.capacity * 2).min(self.bounds.upper);
            return;
        }
        let quarter = self.window.len() - self.capacity / 4;
        if self.window.get(quarter).is_some_and(|e| age(e) > fresh) {
            let target = (self.capacity / 2).max(self.bounds.lower);
            while self.window.len() > target {
                if let Some(old) = self.window.pop_front() {
                    self.window_start = old.revision;
                }
            }
            self.capacity = target;
        }
    }

    /// The events after `revision` in scope, oldest first; `None` when the window no longer
    /// reaches back to `revision`.
    pub(crate) fn events_after(
        &self,
        revision: u64,
        scope: &KeyScope,
    ) -> Option<Vec<Arc<CacheEvent>>> {
        if revision < self.window_start {
            return None;
        }
        let first = self.window.partition_point(|e| e.revision <= revision);
        Some(
            self.window
                .range(first..)
                .filter(|e| scope.contains(&e.key))
                .cloned()
                .collect(),
        )
    }

    /// True when nothing in scope changed after `revision`, so the current state of the scope is
    /// its state at `revision`.
    pub(crate) fn unchanged_since(&self, revision: u64, scope: &KeyScope) -> bool {
        revision <= self.revision
            && self
                .events_after(revision, scope)
                .is_some_and(|events| events.is_empty())
    }

    /// The object at `key`.
    pub(crate) fn get(&self, key: &str) -> Option<Arc<CachedObject>> {
        self.objects.get(key).cloned()
    }

    /// The objects in scope from `start` (inclusive), into `pager`.
    pub(crate) fn list(&self, scope: &KeyScope, start: Option<&str>, mut pager: Pager<'_>) -> Page {
        let prefix = match scope {
            KeyScope::Key(k) => {
                if let Some(obj) = self.get(k) {
                    let _ = pager.offer(k, || Ok(obj));
                }
                return pager.finish();
            }
            KeyScope::Prefix(p) => p,
        };
        let from = match start {
            Some(s) if s > prefix.as_str() => s,
            _ => prefix.as_str(),
        };
        let range = self
            .objects
            .range::<str, _>((Bound::Included(from), Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix.as_str()));
        for (key, obj) in range {
            // Objects in memory: offering one never fails.
            if !matches!(pager.offer(key, || Ok(obj.clone())), Ok(true)) {
                break;
            }
        }
        pager.finish()
    }

    /// Every object in scope matching `predicate`.
    pub(crate) fn snapshot(
        &self,
        scope: &KeyScope,
        predicate: &SelectionPredicate,
    ) -> Vec<Arc<CachedObject>> {
        self.list(scope, None, Pager::new(predicate, 0, false))
            .items
    }
}
