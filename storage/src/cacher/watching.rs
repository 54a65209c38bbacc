//! Starting a cache watch: where it starts (the current state, a replay of the window, or a
//! list of the store below), registering its cache watcher atomically with that start, and the
//! watch-list protocol (`send_initial_events`: the initial state, then a bookmark).

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc;

use super::cache_watcher::{event_of, CacheWatcher, SharedWatchStream};
use super::watch_cache::CachedObject;
use super::Cacher;
use crate::error::{Result, StorageError};
use crate::key::KeyScope;
use crate::options::{ListOptions, ResourceVersionMatch};
use crate::watch::WatchEvent;

/// Where a new watch starts.
enum Start {
    /// The cache's current state, as ADDED events.
    CurrentState,
    /// Every change after this revision.
    After(u64),
    /// A list read from the store below at a revision, as ADDED events, then the changes
    /// after that revision.
    Listed {
        items: Vec<Arc<CachedObject>>,
        revision: u64,
    },
}

impl Cacher {
    pub(super) async fn watch_cached(
        &self,
        key: &str,
        scope: KeyScope,
        opts: ListOptions,
    ) -> Result<SharedWatchStream> {
        let config = &self.shared.config;
        if !self.shared.ready.wait_for(config.ready_timeout).await {
            return Err(StorageError::Unavailable(format!(
                "the watch cache of {} is still initializing; retry the watch shortly",
                self.shared.prefix
            )));
        }
        let start = match (opts.parsed_resource_version()?, opts.send_initial_events) {
            (Some(n), false) if n > 0 => {
                if n < self.shared.read().revision() {
                    self.check_not_compacted(key, &opts, n).await?;
                }
                Start::After(n)
            }
            (Some(n), true) if n > 0 => {
                if !self
                    .shared
                    .wait_for_revision(n, config.not_older_than_timeout)
                    .await
                {
                    return Err(StorageError::TooLargeResourceVersion {
                        requested: n,
                        current: self.shared.read().revision(),
                    });
                }
                Start::CurrentState
            }
            // "0": the cache as it is, unless a read the store answered in its place has
            // shown more (then as for a consistent watch that cannot wait).
            (Some(_), _) => {
                if self.shared.catch_up_with_reads_from_store().await {
                    Start::CurrentState
                } else {
                    self.listed_below(key, &opts).await?
                }
            }
            (None, _) => {
                // Consistent: the state at the store's current revision or later.
                if self.shared.catch_up_for_consistent_read().await {
                    Start::CurrentState
                } else {
                    self.shared
                        .metrics
                        .consistent_read_fallbacks
                        .fetch_add(1, Ordering::Relaxed);
                    self.listed_below(key, &opts).await?
                }
            }
        };
        self.register(scope, &opts, start)
    }

    /// A start from a list of the store below, for a watch the cache is not fresh enough for
    /// (later reads at "0" will not go back behind it).
    async fn listed_below(&self, key: &str, opts: &ListOptions) -> Result<Start> {
        let list = ListOptions {
            recursive: opts.recursive,
            predicate: opts.predicate.clone(),
            ..Default::default()
        };
        let list = self.shared.below.get_list(key, list).await?;
        self.shared.shown_by_store(list.resource_version);
        Ok(Start::Listed {
            items: list.items,
            revision: list.resource_version,
        })
    }

    /// Fails with `Expired` when the store below has compacted `revision`: the cacher never
    /// serves a history the store has given up. Other errors of the probe are ignored (the
    /// window still holds the events).
    async fn check_not_compacted(
        &self,
        key: &str,
        opts: &ListOptions,
        revision: u64,
    ) -> Result<()> {
        let probe = ListOptions {
            resource_version: revision.to_string(),
            resource_version_match: Some(ResourceVersionMatch::Exact),
            recursive: opts.recursive,
            limit: 1,
            ..Default::default()
        };
        match self.shared.below.get_list(key, probe).await {
            Err(e) if e.is_expired() => Err(e),
            _ => Ok(()),
        }
    }

    /// Builds the watch's initial events and registers its cache watcher under the cache's lock,
    /// so it receives exactly the events after what it replayed.
    fn register(
        &self,
        scope: KeyScope,
        opts: &ListOptions,
        start: Start,
    ) -> Result<SharedWatchStream> {
        let config = &self.shared.config;
        let (tx, rx) = mpsc::channel(config.watcher_buffer.max(1));
        let mut initial = VecDeque::new();
        let predicate = &opts.predicate;
        let cache = self.shared.read();
        let after = match start {
            Start::CurrentState => {
                initial.extend(
                    cache
                        .snapshot(&scope, predicate)
                        .into_iter()
                        .map(WatchEvent::Added),
                );
                cache.revision()
            }
            Start::After(revision) | Start::Listed { revision, .. } => {
                if let Start::Listed { items, .. } = start {
                    initial.extend(items.into_iter().map(WatchEvent::Added));
                }
                let events = cache.events_after(revision, &scope).ok_or_else(|| {
                    StorageError::compacted(revision, cache.window_start().saturating_sub(1))
                })?;
                initial.extend(events.iter().filter_map(|e| {
                    e.for_predicate(predicate)
                        .map(|(kind, obj)| event_of(kind, obj))
                }));
                revision.max(cache.revision())
            }
        };
        if opts.send_initial_events {
            initial.push_back(WatchEvent::bookmark(after));
        }
        let watcher = CacheWatcher {
            scope,
            predicate: predicate.clone(),
            after,
            epoch: cache.epoch(),
            bookmarks: opts.allow_bookmarks,
            next_bookmark: Instant::now() + config.bookmark_interval,
            last_bookmark: 0,
            tx,
        };
        // Sent while the lock is held: the reflector applies the next event only after this,
        // and takes in every queued registration before dispatching it.
        if self.shared.registrations.send(watcher).is_err() {
            return Ok(SharedWatchStream::finished(initial));
        }
        drop(cache);
        Ok(SharedWatchStream::new(initial, rx))
    }
}
