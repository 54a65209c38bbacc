//! The reflector: keeps the watch cache a copy of one prefix of the store below by listing it
//! (in pages) and then watching from the list's revision, with recovery (Kubernetes'
//! `Reflector.ListAndWatch`).
//!
//! An explicit state machine advanced by one `step` function: `List` → `Watch` → `Follow`.
//! A broken watch resumes from the last revision the cache processed; a watch whose revision
//! was compacted (`Expired`) relists, replaces the cache and closes every cache watcher (their
//! clients resume, and relist if their revision is now too old). The reflector's task also runs
//! the dispatcher, so events reach watchers in commit order.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::Value;

use super::dispatcher::Dispatcher;
use super::watch_cache::Incoming;
use super::Shared;
use crate::storage::error::{Result, StorageError};
use crate::storage::options::ListOptions;
use crate::storage::versioner::object_resource_version;
use crate::storage::watch::{WatchEvent, WatchStream};

/// The first pause after a failure; doubled up to `MAX_BACKOFF`.
const INITIAL_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Where the reflector is.
enum State {
    /// List the prefix and replace the cache.
    List,
    /// Open a watch of the prefix after this revision.
    Watch { from: u64 },
    /// Follow an open watch.
    Follow(WatchStream),
    /// Wait, then go on with the boxed state.
    Backoff(Box<State>),
}

/// The task that fills the cache and dispatches its events.
pub(crate) struct Reflector {
    shared: Arc<Shared>,
    dispatcher: Dispatcher,
    backoff: Duration,
    listed: bool,
}

impl Reflector {
    pub(crate) fn new(shared: Arc<Shared>, dispatcher: Dispatcher) -> Self {
        Self {
            shared,
            dispatcher,
            backoff: INITIAL_BACKOFF,
            listed: false,
        }
    }

    /// Runs until the task is aborted (when the cacher is dropped).
    pub(crate) async fn run(mut self) {
        let mut state = State::List;
        loop {
            state = self.step(state).await;
        }
    }

    async fn step(&mut self, state: State) -> State {
        match state {
            State::List => match self.list().await {
                Ok(revision) => {
                    self.backoff = INITIAL_BACKOFF;
                    State::Watch { from: revision }
                }
                Err(e) => {
                    tracing::warn!(prefix = %self.shared.prefix, error = %e, "cacher list failed");
                    State::Backoff(Box::new(State::List))
                }
            },
            State::Watch { from } => {
                let opts = ListOptions {
                    resource_version: from.to_string(),
                    recursive: true,
                    allow_bookmarks: true,
                    ..Default::default()
                };
                match self.shared.below.watch(&self.shared.prefix, opts).await {
                    Ok(stream) => State::Follow(stream),
                    Err(e) if e.is_expired() => State::List,
                    Err(e) => {
                        tracing::warn!(prefix = %self.shared.prefix, error = %e, "cacher watch failed");
                        State::Backoff(Box::new(State::Watch { from }))
                    }
                }
            }
            State::Follow(stream) => self.follow(stream).await,
            State::Backoff(next) => {
                let wait = self.backoff;
                self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
                tokio::time::sleep(wait).await;
                *next
            }
        }
    }

    /// Lists the prefix page by page at one revision and replaces the cache with it.
    async fn list(&mut self) -> Result<u64> {
        if self.listed {
            self.shared.ready.set(false);
            self.shared.metrics.relists.fetch_add(1, Ordering::Relaxed);
        }
        self.dispatcher.terminate_all();
        let mut opts = ListOptions {
            recursive: true,
            limit: self.shared.config.list_page_size,
            ..Default::default()
        };
        let mut objects = Vec::new();
        let mut revision = None;
        loop {
            let page = self
                .shared
                .below
                .get_list(&self.shared.prefix, opts.clone())
                .await?;
            revision.get_or_insert(page.resource_version);
            for obj in page.items {
                match super::object_key(&self.shared.prefix, &obj) {
                    Some(key) => objects.push((key, obj)),
                    None => skip_unkeyed(&self.shared.prefix, &obj),
                }
            }
            match page.continue_token {
                Some(token) => opts.continue_token = Some(token),
                None => break,
            }
        }
        let revision = revision.unwrap_or(0);
        let epoch = {
            let mut cache = self.shared.write();
            cache.replace(objects, revision);
            cache.epoch()
        };
        self.shared.revision.send_replace(revision);
        self.dispatcher.accept_registrations(epoch);
        self.listed = true;
        self.shared.ready.set(true);
        Ok(revision)
    }

    /// Applies the watch's events until it breaks; returns what to do next.
    async fn follow(&mut self, mut stream: WatchStream) -> State {
        let interval = self.shared.config.bookmark_interval;
        let tick = (interval / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
        let mut ticker = tokio::time::interval(tick);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                event = stream.next() => {
                    let event = match event {
                        Some(event) => event,
                        None => return self.rewatch(),
                    };
                    match event {
                        WatchEvent::Added(obj) | WatchEvent::Modified(obj) => {
                            self.apply(obj, false).await;
                        }
                        WatchEvent::Deleted(obj) => self.apply(obj, true).await,
                        WatchEvent::Bookmark(revision) => {
                            if self.shared.write().bookmark(revision) {
                                self.shared.revision.send_replace(revision);
                            }
                        }
                        WatchEvent::Error(e) if e.is_expired() => return State::List,
                        WatchEvent::Error(e) => {
                            tracing::warn!(prefix = %self.shared.prefix, error = %e, "cacher watch broke");
                            return State::Backoff(Box::new(self.rewatch()));
                        }
                    }
                    self.backoff = INITIAL_BACKOFF;
                }
                Some(watcher) = self.dispatcher.next_registration() => {
                    let epoch = self.shared.read().epoch();
                    self.dispatcher.add(watcher, epoch);
                }
                _ = ticker.tick() => {
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

    fn rewatch(&self) -> State {
        State::Watch {
            from: self.shared.read().revision(),
        }
    }

    /// Applies one change to the cache and hands it to the watchers.
    async fn apply(&mut self, object: Value, deleted: bool) {
        let Some(key) = super::object_key(&self.shared.prefix, &object) else {
            skip_unkeyed(&self.shared.prefix, &object);
            // The revision still happened: move past it.
            if let Ok(Some(revision)) = object_resource_version(&object) {
                if self.shared.write().bookmark(revision) {
                    self.shared.revision.send_replace(revision);
                }
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

fn skip_unkeyed(prefix: &str, obj: &Value) {
    let err = StorageError::Internal("object without metadata.name".into());
    tracing::warn!(%prefix, error = %err, object = %obj, "cacher skipped an object it cannot key");
}
