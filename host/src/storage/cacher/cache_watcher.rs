//! One cache watcher per client watch: its filter (scope, predicate, start revision), a bounded
//! buffer the dispatcher fills without blocking, and the client's end, a stream of
//! [`SharedEvent`]s whose objects are shared with every other watcher (Kubernetes'
//! `cache_watcher.go`).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use futures::Stream;
use tokio::sync::mpsc;

use super::watch_cache::{CacheEvent, CachedObject, EventKind, Scope};
use crate::storage::error::StorageError;
use crate::storage::predicate::SelectionPredicate;
use crate::storage::watch::WatchEvent;

/// A watch event whose object is shared: the JSON of each object is serialized once, however
/// many watchers receive it ([`CachedObject::json`]).
#[derive(Debug, Clone)]
pub enum SharedEvent {
    /// The object appeared (or started to match the watch's predicate).
    Added(Arc<CachedObject>),
    /// The object changed and still matches.
    Modified(Arc<CachedObject>),
    /// The object was deleted (or stopped matching), stamped with the deletion's revision.
    Deleted(Arc<CachedObject>),
    /// Every change up to this revision has been sent. Also marks the end of the initial events
    /// of a watch with `send_initial_events` (the API annotates it
    /// `k8s.io/initial-events-end: "true"`).
    Bookmark(u64),
    /// The watch failed; this is its last event.
    Error(Arc<StorageError>),
}

impl SharedEvent {
    pub(crate) fn from_kind(kind: EventKind, object: Arc<CachedObject>) -> Self {
        match kind {
            EventKind::Added => Self::Added(object),
            EventKind::Modified => Self::Modified(object),
            EventKind::Deleted => Self::Deleted(object),
        }
    }

    /// Wraps an event of a store's own watch.
    pub fn from_watch_event(event: WatchEvent) -> Self {
        let shared = |v| Arc::new(CachedObject::new(v));
        match event {
            WatchEvent::Added(v) => Self::Added(shared(v)),
            WatchEvent::Modified(v) => Self::Modified(shared(v)),
            WatchEvent::Deleted(v) => Self::Deleted(shared(v)),
            WatchEvent::Bookmark(r) => Self::Bookmark(r),
            WatchEvent::Error(e) => Self::Error(Arc::new(e)),
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

    /// The shared object the event carries, if any.
    pub fn object(&self) -> Option<&Arc<CachedObject>> {
        match self {
            Self::Added(o) | Self::Modified(o) | Self::Deleted(o) => Some(o),
            _ => None,
        }
    }

    /// The object's JSON, serialized once for all watchers.
    pub fn object_json(&self) -> Option<Bytes> {
        self.object().map(|o| o.json())
    }

    /// The revision the event was produced at (`None` for errors).
    pub fn revision(&self) -> Option<u64> {
        match self {
            Self::Bookmark(r) => Some(*r),
            Self::Error(_) => None,
            other => other.object().map(|o| o.revision()),
        }
    }

    /// The event as the `Storage` trait's [`WatchEvent`] (copies the object).
    pub fn into_watch_event(self) -> WatchEvent {
        match self {
            Self::Added(o) => WatchEvent::Added(o.value().clone()),
            Self::Modified(o) => WatchEvent::Modified(o.value().clone()),
            Self::Deleted(o) => WatchEvent::Deleted(o.value().clone()),
            Self::Bookmark(r) => WatchEvent::Bookmark(r),
            Self::Error(e) => WatchEvent::Error(e.duplicate()),
        }
    }
}

/// What happened when the dispatcher offered an event to a watcher.
#[derive(Debug)]
pub(crate) enum Offer {
    /// Buffered, or not for this watcher.
    Done,
    /// The buffer is full: the dispatcher may wait for room (within its budget).
    Full(SharedEvent),
    /// The client went away.
    Closed,
}

/// The dispatcher's side of one client watch.
#[derive(Debug)]
pub(crate) struct CacheWatcher {
    pub scope: Scope,
    pub predicate: SelectionPredicate,
    /// Only events after this revision are for this watcher (earlier ones were replayed).
    pub after: u64,
    /// The cache epoch the watcher's replay came from.
    pub epoch: u64,
    /// Send periodic bookmarks.
    pub bookmarks: bool,
    /// When the next bookmark is due.
    pub next_bookmark: Instant,
    /// The last revision a bookmark reported.
    pub last_bookmark: u64,
    pub tx: mpsc::Sender<SharedEvent>,
}

impl CacheWatcher {
    /// Offers `event` without blocking.
    pub(crate) fn offer(&self, event: &CacheEvent) -> Offer {
        if event.revision <= self.after || !self.scope.contains(&event.key) {
            return Offer::Done;
        }
        let Some((kind, object)) = event.for_predicate(&self.predicate) else {
            return Offer::Done;
        };
        self.try_send(SharedEvent::from_kind(kind, object))
    }

    /// Tries to buffer `event` without blocking.
    pub(crate) fn try_send(&self, event: SharedEvent) -> Offer {
        match self.tx.try_send(event) {
            Ok(()) => Offer::Done,
            Err(mpsc::error::TrySendError::Full(e)) => Offer::Full(e),
            Err(mpsc::error::TrySendError::Closed(_)) => Offer::Closed,
        }
    }
}

/// A client's end of a cache watch: the initial events (current state or replayed window), then
/// what the dispatcher buffers. It ends when the watcher is closed (the client was too slow,
/// or the cache relisted); the client resumes from the last revision it saw. Dropping it
/// cancels the watch.
pub struct SharedWatchStream {
    initial: VecDeque<SharedEvent>,
    rx: Option<mpsc::Receiver<SharedEvent>>,
    below: Option<crate::storage::WatchStream>,
}

impl std::fmt::Debug for SharedWatchStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedWatchStream")
            .field("initial", &self.initial.len())
            .field("from_store_below", &self.below.is_some())
            .finish()
    }
}

impl SharedWatchStream {
    pub(crate) fn new(initial: VecDeque<SharedEvent>, rx: mpsc::Receiver<SharedEvent>) -> Self {
        Self {
            initial,
            rx: Some(rx),
            below: None,
        }
    }

    /// A stream that only yields `initial`.
    pub(crate) fn finished(initial: VecDeque<SharedEvent>) -> Self {
        Self {
            initial,
            rx: None,
            below: None,
        }
    }

    /// Wraps a watch of the store below.
    pub(crate) fn from_below(stream: crate::storage::WatchStream) -> Self {
        Self {
            initial: VecDeque::new(),
            rx: None,
            below: Some(stream),
        }
    }
}

impl Stream for SharedWatchStream {
    type Item = SharedEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<SharedEvent>> {
        if let Some(event) = self.initial.pop_front() {
            return Poll::Ready(Some(event));
        }
        if let Some(below) = self.below.as_mut() {
            return below
                .as_mut()
                .poll_next(cx)
                .map(|e| e.map(SharedEvent::from_watch_event));
        }
        match self.rx.as_mut() {
            Some(rx) => rx.poll_recv(cx),
            None => Poll::Ready(None),
        }
    }
}
