//! The dispatcher: hands each cache event to every cache watcher without blocking, then lets
//! watchers with a full buffer wait for room within a shared timeout budget and closes those
//! still blocked when it runs out; also sends the periodic bookmarks (Kubernetes'
//! `Cacher.dispatchEvent` and `bookmarkWatchers`).
//!
//! It runs inside the reflector's task, so events, bookmarks and new watchers are handled in
//! one order: a watcher registers with the revision its replay covers, and receives exactly the
//! events after it.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::budget::TimeBudget;
use super::cache_watcher::{CacheWatcher, Offer};
use super::watch_cache::CacheEvent;
use super::Metrics;
use crate::watch::WatchEvent;

/// The longest a dispatch may wait for blocked watchers at once.
const BUDGET_MAX: Duration = Duration::from_millis(100);
/// How much waiting time the budget earns per second.
const BUDGET_REFILL: Duration = Duration::from_millis(50);

/// Every active cache watcher of one cacher.
pub(crate) struct Dispatcher {
    watchers: Vec<CacheWatcher>,
    registrations: mpsc::UnboundedReceiver<CacheWatcher>,
    budget: TimeBudget,
    bookmark_interval: Duration,
    metrics: Arc<Metrics>,
}

impl Dispatcher {
    pub(crate) fn new(
        registrations: mpsc::UnboundedReceiver<CacheWatcher>,
        bookmark_interval: Duration,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            watchers: Vec::new(),
            registrations,
            budget: TimeBudget::new(BUDGET_REFILL, BUDGET_MAX, Instant::now()),
            bookmark_interval,
            metrics,
        }
    }

    /// Waits for the next registration (for the reflector's select loop).
    pub(crate) async fn next_registration(&mut self) -> Option<CacheWatcher> {
        self.registrations.recv().await
    }

    /// Adds a watcher registered against `epoch`; a watcher from an older epoch replayed a
    /// history that was replaced, so it is closed instead.
    pub(crate) fn add(&mut self, watcher: CacheWatcher, epoch: u64) {
        if watcher.epoch == epoch {
            self.watchers.push(watcher);
        }
    }

    /// Adds every registration already queued.
    pub(crate) fn accept_registrations(&mut self, epoch: u64) {
        while let Ok(w) = self.registrations.try_recv() {
            self.add(w, epoch);
        }
    }

    /// How many watchers are active.
    pub(crate) fn len(&self) -> usize {
        self.watchers.len()
    }

    /// Closes every watcher (the cache is being replaced).
    pub(crate) fn terminate_all(&mut self) {
        self.watchers.clear();
    }

    /// Delivers one event to every watcher it concerns.
    pub(crate) async fn dispatch(&mut self, event: &CacheEvent) {
        let mut blocked = Vec::new();
        let mut closed = Vec::new();
        for (i, w) in self.watchers.iter().enumerate() {
            match w.offer(event) {
                Offer::Done => {}
                Offer::Full(e) => blocked.push((i, e)),
                Offer::Closed => closed.push(i),
            }
        }
        if !blocked.is_empty() {
            let start = Instant::now();
            let deadline = start + self.budget.take_available(start);
            for (i, e) in blocked {
                let w = &self.watchers[i];
                let sent = match tokio::time::timeout_at(deadline.into(), w.tx.send(e)).await {
                    Ok(result) => result.is_ok(),
                    Err(_) => false,
                };
                if !sent {
                    // Too slow: close it; its client resumes from the last revision it saw.
                    self.metrics
                        .terminated_watchers
                        .fetch_add(1, Ordering::Relaxed);
                    closed.push(i);
                }
            }
            self.budget
                .return_unused(deadline.saturating_duration_since(Instant::now()));
        }
        if !closed.is_empty() {
            closed.sort_unstable();
            closed.dedup();
            for i in closed.into_iter().rev() {
                self.watchers.swap_remove(i);
            }
        }
    }

    /// Sends a bookmark at `revision` to every watcher that asked for them and is due; drops
    /// watchers whose client went away.
    pub(crate) fn bookmark(&mut self, revision: u64, now: Instant) {
        let interval = self.bookmark_interval;
        // One bookmark object, shared by every watcher due one.
        let marker = WatchEvent::bookmark(revision);
        self.watchers.retain_mut(|w| {
            if w.tx.is_closed() {
                return false;
            }
            if w.bookmarks
                && now >= w.next_bookmark
                && revision > w.after
                && revision > w.last_bookmark
            {
                // A full buffer skips this bookmark; the next one will do.
                if let Offer::Done = w.try_send(marker.clone()) {
                    w.last_bookmark = revision;
                    w.next_bookmark = now + interval;
                }
            }
            true
        });
    }
}
