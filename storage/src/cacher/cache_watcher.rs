//! One cache watcher per client watch: its filter (scope, predicate, start revision), a bounded
//! buffer the dispatcher fills without blocking, and the client's end, a stream of watch
//! events whose objects are shared with every other watcher (Kubernetes' `cache_watcher.go`).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use futures::Stream;
use tokio::sync::mpsc;

use super::watch_cache::{CacheEvent, CachedObject, EventKind};

use crate::key::KeyScope;
use crate::predicate::SelectionPredicate;
use crate::watch::WatchEvent;

/// The event a watcher sees for a change of `kind`.
pub(crate) fn event_of(kind: EventKind, object: Arc<CachedObject>) -> WatchEvent {
    match kind {
        EventKind::Added => WatchEvent::Added(object),
        EventKind::Modified => WatchEvent::Modified(object),
        EventKind::Deleted => WatchEvent::Deleted(object),
    }
}

/// What happened when the dispatcher offered an event to a watcher.
#[derive(Debug)]
pub(crate) enum Offer {
    /// Buffered, or not for this watcher.
    Done,
    /// The buffer is full: the dispatcher may wait for room (within its budget).
    Full(WatchEvent),
    /// The client went away.
    Closed,
}

/// The dispatcher's side of one client watch.
#[derive(Debug)]
pub(crate) struct CacheWatcher {
    pub scope: KeyScope,
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
    pub tx: mpsc::Sender<WatchEvent>,
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
        self.try_send(event_of(kind, object))
    }

    /// Tries to buffer `event` without blocking.
    pub(crate) fn try_send(&self, event: WatchEvent) -> Offer {
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
#[derive(derive_more::Debug)]
pub struct SharedWatchStream {
    #[debug("{}", initial.len())]
    initial: VecDeque<WatchEvent>,
    #[debug(skip)]
    rx: Option<mpsc::Receiver<WatchEvent>>,
}

impl SharedWatchStream {
    pub(crate) fn new(initial: VecDeque<WatchEvent>, rx: mpsc::Receiver<WatchEvent>) -> Self {
        Self {
            initial,
            rx: Some(rx),
        }
    }

    /// A stream that only yields `initial`.
    pub(crate) fn finished(initial: VecDeque<WatchEvent>) -> Self {
        Self { initial, rx: None }
    }
}

impl Stream for SharedWatchStream {
    type Item = WatchEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<WatchEvent>> {
        if let Some(event) = self.initial.pop_front() {
            return Poll::Ready(Some(event));
        }
        match self.rx.as_mut() {
            Some(rx) => rx.poll_recv(cx),
            None => Poll::Ready(None),
        }
    }
}
