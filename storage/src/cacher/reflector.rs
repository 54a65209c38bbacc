//! The reflector: keeps the watch cache a copy of one prefix of the store below, as a consumer
//! of the one informer (Kubernetes' `Reflector.ListAndWatch`).
//!
//! The informer lists (in pages) and watches with recovery; the reflector turns its events into
//! cache state: a relist replaces the cache and closes every cache watcher (their clients
//! resume, and relist if their revision is now too old); each change is applied and dispatched
//! from this one task, so events reach watchers in commit order.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;

use super::dispatcher::Dispatcher;
use super::watch_cache::{CachedObject, Incoming};
use super::Shared;
use crate::error::StorageError;
use crate::informer::{informer, InformerConfig, InformerEvent, StoragePrefix};

/// The task that fills the cache and dispatches its events.
pub(crate) struct Reflector {
    shared: Arc<Shared>,
    dispatcher: Dispatcher,
    /// Whether a list has completed before (a later one is a relist).
    listed: bool,
    /// The objects of the list in progress.
    listing: Vec<(String, Arc<CachedObject>)>,
}

impl Reflector {
    pub(crate) fn new(shared: Arc<Shared>, dispatcher: Dispatcher) -> Self {
        Self {
            shared,
            dispatcher,
            listed: false,
            listing: Vec::new(),
        }
    }

    /// Runs until the task is aborted (when the cacher is dropped).
    pub(crate) async fn run(mut self) {
        let config = InformerConfig {
            page_size: self.shared.config.list_page_size,
        };
        let mut events = Box::pin(informer(
            StoragePrefix::new(self.shared.below.clone(), self.shared.prefix.clone()),
            config,
        ));
        let interval = self.shared.config.bookmark_interval;
        let tick = (interval / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
        let mut ticker = tokio::time::interval(tick);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // Watchers register and get bookmarks only while the cache is current (between a
        // list's end and the next relist).
        let mut current = false;
        loop {
            tokio::select! {
                event = events.next() => match event {
                    Some(event) => current = self.handle(event).await,
                    None => return,
                },
                Some(watcher) = self.dispatcher.next_registration(), if current => {
                    let epoch = self.shared.read().epoch();
                    self.dispatcher.add(watcher, epoch);
                }
                _ = ticker.tick(), if current => {
                    let revision = self.shared.read().revision();
                    self.dispatcher.bookmark(revision, Instant::now());
                    self.shared
                        .metrics
                        .watchers
                        .store(self.dispatcher.len() as u64, Ordering::Relaxed);
                }
            }
        }
    }

    /// Applies one informer event; answers whether the cache is current afterwards.
    async fn handle(&mut self, event: InformerEvent) -> bool {
        match event {
            InformerEvent::Init => {
                if self.listed {
                    self.shared.ready.set(false);
                    self.shared.metrics.relists.fetch_add(1, Ordering::Relaxed);
                }
                self.dispatcher.terminate_all();
                self.listing.clear();
                return false;
            }
            InformerEvent::InitApply(obj) => {
                match super::object_key(&self.shared.prefix, &obj) {
                    Some(key) => self.listing.push((key, obj)),
                    None => skip_unkeyed(&self.shared.prefix, &obj),
                }
                return false;
            }
            InformerEvent::InitDone { revision } => {
                let objects = std::mem::take(&mut self.listing);
                let epoch = {
                    let mut cache = self.shared.write();
                    cache.replace(objects, revision);
                    cache.epoch()
                };
                self.shared.revision.send_replace(revision);
                self.dispatcher.accept_registrations(epoch);
                self.listed = true;
                self.shared.ready.set(true);
            }
            InformerEvent::Apply(obj) => self.apply(obj, false).await,
            InformerEvent::Delete(obj) => self.apply(obj, true).await,
            InformerEvent::Progress(revision) => {
                if self.shared.write().bookmark(revision) {
                    self.shared.revision.send_replace(revision);
                }
            }
        }
        true
    }

    /// Applies one change to the cache and hands it to the watchers.
    async fn apply(&mut self, object: Arc<CachedObject>, deleted: bool) {
        let Some(key) = super::object_key(&self.shared.prefix, &object) else {
            skip_unkeyed(&self.shared.prefix, &object);
            // The revision still happened: move past it.
            let revision = object.revision();
            if self.shared.write().bookmark(revision) {
                self.shared.revision.send_replace(revision);
            }
            return;
        };
        let change = if deleted {
            Incoming::Delete { key, object }
        } else {
            Incoming::Put { key, object }
        };
        let (event, epoch) = {
            let mut cache = self.shared.write();
            (cache.apply(change, Instant::now()), cache.epoch())
        };
        let Some(event) = event else { return };
        self.shared.revision.send_replace(event.revision);
        self.dispatcher.accept_registrations(epoch);
        self.dispatcher.dispatch(&event).await;
    }
}

fn skip_unkeyed(prefix: &str, obj: &CachedObject) {
    let err = StorageError::Internal("object without metadata.name".into());
    tracing::warn!(%prefix, error = %err, object = %obj, "cacher skipped an object it cannot key");
}
