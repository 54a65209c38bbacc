//! The cacher: `Storage` over another `Storage` for one resource prefix, serving reads and
//! watches from memory while staying consistent with the store below (Kubernetes'
//! `storage/cacher`).
//!
//! - `reflector.rs` feeds the cache from the informer's list and watch of the prefix below;
//! - `watch_cache.rs` holds the current objects and a resizing window of recent events;
//! - `cache_watcher.rs` is one client watch with a bounded buffer;
//! - `dispatcher.rs` and `budget.rs` fan events out without letting a slow client hold up the
//!   others;
//! - `reads.rs` and `watching.rs` answer gets, lists and watches with Kubernetes'
//!   resourceVersion semantics; `ready.rs` gates them until the first list is in.
//!
//! What goes to the store below: every write and `count`; reads and watches of keys outside
//! the cached prefix; every read while the cache is not ready; `Exact` lists and continue
//! pages at a revision the cache cannot reproduce (the scope changed since — the store below
//! answers them, or 410 when it compacted them); consistent reads whose revision the cache does
//! not reach within `consistent_read_timeout`. A watch from a revision older than the cache's
//! current one first asks the store below whether that revision was compacted, so the cacher
//! never serves a history the store has given up.
//!
//! Objects are filed by their `metadata.namespace` and `metadata.name`:
//! `{prefix}/{namespace}/{name}`, or `{prefix}/{name}` without a namespace (Kubernetes'
//! key function), so callers must store them under those keys.

mod budget;
mod cache_watcher;
mod consistency;
mod dispatcher;
mod reads;
mod ready;
mod reflector;
#[cfg(test)]
mod tests;
mod watch_cache;
mod watching;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use async_trait::async_trait;

use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::error::{Result, StorageError};
use crate::key::KeyScope;
use crate::options::{GetOptions, ListOptions, ObjectList};
use crate::versioner::object_resource_version;
use crate::watch::{SharedObject as CachedObject, WatchStream};
use crate::{key, ConditionalDelete, GuaranteedUpdate, Storage};

pub use cache_watcher::SharedWatchStream;

use cache_watcher::CacheWatcher;
use consistency::Consistency;
use dispatcher::Dispatcher;
use ready::Ready;
use reflector::Reflector;
use watch_cache::{WatchCache, WindowBounds};

/// How a cacher sizes its window, buffers and waits.
#[derive(Debug, Clone)]
pub struct CacherConfig {
    /// Objects per page when (re)listing the store below (default 10,000, Kubernetes'
    /// `storageWatchListPageSize`: each page costs etcd a walk of the prefix's index to count
    /// what remains, so small pages make a large resource's warm-up quadratic).
    pub list_page_size: u64,
    /// The smallest window of recent events (default 100).
    pub window_lower_bound: usize,
    /// The largest window of recent events (default 100 × 1024).
    pub window_upper_bound: usize,
    /// Events younger than this are worth keeping: a full window of them doubles, a window whose
    /// newest quarter is older halves (default 75 s).
    pub event_freshness: Duration,
    /// Events buffered per watcher before the dispatcher has to wait for it (default 1024).
    pub watcher_buffer: usize,
    /// How often a watch that allows bookmarks gets one (default 1 minute).
    pub bookmark_interval: Duration,
    /// How long a read or watch at resourceVersion N waits for the cache to reach N before
    /// answering `TooLargeResourceVersion` (default 3 s).
    pub not_older_than_timeout: Duration,
    /// How long a consistent read waits for the cache to reach the store's current revision
    /// before reading from the store below instead (default 250 ms). The cache catches up
    /// with writes to its own prefix within milliseconds; revisions from other prefixes reach
    /// it with the store's progress notifications or, where the store cannot send them in
    /// order, with a proof that the prefix did not change (see `consistency.rs`).
    pub consistent_read_timeout: Duration,
    /// How long a watch waits for a cache that is not ready before failing (default 3 s).
    pub ready_timeout: Duration,
    /// Writes through the cacher return only once the cache has seen them (bounded by
    /// `not_older_than_timeout`), so a client reads its own writes even at resourceVersion "0"
    /// (default true).
    pub read_your_writes: bool,
}

impl Default for CacherConfig {
    fn default() -> Self {
        Self {
            list_page_size: 10_000,
            window_lower_bound: 100,
            window_upper_bound: 100 * 1024,
            event_freshness: Duration::from_secs(75),
            watcher_buffer: 1024,
            bookmark_interval: Duration::from_secs(60),
            not_older_than_timeout: Duration::from_secs(3),
            consistent_read_timeout: Duration::from_millis(250),
            ready_timeout: Duration::from_secs(3),
            read_your_writes: true,
        }
    }
}

/// Counters of what the cacher did.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    terminated_watchers: AtomicU64,
    relists: AtomicU64,
    consistent_read_fallbacks: AtomicU64,
    delegated_reads: AtomicU64,
    watchers: AtomicU64,
}

/// A snapshot of a cacher's state and counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacherStats {
    /// Watchers closed because they could not keep up.
    pub terminated_watchers: u64,
    /// Relists after the store below compacted the cache's revision.
    pub relists: u64,
    /// Consistent reads answered by the store below because the cache did not catch up in time.
    pub consistent_read_fallbacks: u64,
    /// Reads sent to the store below (not ready, Exact or continue at an unreproducible revision).
    pub delegated_reads: u64,
    /// Active watchers, as of the dispatcher's last tick.
    pub watchers: u64,
    /// The cache's revision.
    pub revision: u64,
    /// The oldest revision a watch can start from.
    pub window_start: u64,
    /// The window's capacity.
    pub window_capacity: usize,
    /// Events in the window.
    pub window_len: usize,
    /// Objects in the cache.
    pub objects: usize,
}

/// What the cacher's parts share.
pub(crate) struct Shared {
    below: Arc<dyn Storage>,
    /// The cached prefix, `/group/plural` (no trailing slash).
    prefix: String,
    /// The cached prefix with its trailing slash.
    prefix_slash: String,
    config: CacherConfig,
    cache: RwLock<WatchCache>,
    /// The cache's revision, for readers waiting on it.
    revision: watch::Sender<u64>,
    ready: Ready,
    metrics: Arc<Metrics>,
    registrations: mpsc::UnboundedSender<CacheWatcher>,
    /// How consistent reads learn the cache is current.
    consistency: Consistency,
}

impl Shared {
    fn read(&self) -> RwLockReadGuard<'_, WatchCache> {
        self.cache.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, WatchCache> {
        self.cache.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until the cache reaches `revision`, at most `timeout`; false when it did not.
    async fn wait_for_revision(&self, revision: u64, timeout: Duration) -> bool {
        let mut rx = self.revision.subscribe();
        if *rx.borrow() >= revision {
            return true;
        }
        let reached = tokio::time::timeout(timeout, rx.wait_for(|r| *r >= revision)).await;
        matches!(reached, Ok(Ok(_)))
    }
}

/// The key an object is filed under in the cache of `prefix`.
pub(crate) fn object_key(prefix: &str, obj: &CachedObject) -> Option<String> {
    let name = obj.name().filter(|n| !n.is_empty())?;
    match obj.namespace() {
        Some(ns) if !ns.is_empty() => Some(format!("{prefix}/{ns}/{name}")),
        _ => Some(format!("{prefix}/{name}")),
    }
}

/// Where a request is answered.
enum Route {
    /// From the cache, for this scope (possibly after waiting or falling back).
    Cache(KeyScope),
    /// By the store below: the key is outside the cached prefix.
    Below,
}

/// `Storage` for one resource prefix, served from memory and kept current by a reflector over
/// the store below.
pub struct Cacher {
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for Cacher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cacher")
            .field("prefix", &self.shared.prefix)
            .field("stats", &self.stats())
            .finish()
    }
}

impl Drop for Cacher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Cacher {
    /// Starts caching `resource_prefix` (e.g. `/example.com/widgets`) of `below`. Must be
    /// called inside a tokio runtime: the reflector runs as a task until the cacher is dropped.
    /// The cache is not ready until its first list is in; see [`Self::wait_until_ready`].
    ///
    /// # Errors
    /// `BadRequest` when the prefix is not a valid key or is the root.
    pub fn new(
        below: Arc<dyn Storage>,
        resource_prefix: &str,
        config: CacherConfig,
    ) -> Result<Arc<Cacher>> {
        let prefix = key::prepare_key("/", resource_prefix)?
            .trim_end_matches('/')
            .to_string();
        if prefix.is_empty() {
            return Err(StorageError::BadRequest(
                "the cacher needs a resource prefix, not the root".into(),
            ));
        }
        let metrics = Arc::new(Metrics::default());
        let (registrations, registered) = mpsc::unbounded_channel();
        let bounds = WindowBounds {
            lower: config.window_lower_bound,
            upper: config.window_upper_bound,
            freshness: config.event_freshness,
        };
        let shared = Arc::new(Shared {
            below,
            prefix_slash: format!("{prefix}/"),
            prefix,
            cache: RwLock::new(WatchCache::new(bounds)),
            revision: watch::Sender::new(0),
            ready: Ready::new(),
            metrics: metrics.clone(),
            registrations,
            consistency: Consistency::default(),
            config,
        });
        let dispatcher = Dispatcher::new(registered, shared.config.bookmark_interval, metrics);
        let task = tokio::spawn(Reflector::new(shared.clone(), dispatcher).run());
        Ok(Arc::new(Cacher { shared, task }))
    }

    /// Waits until the first list of the store below is in the cache.
    pub async fn wait_until_ready(&self) {
        self.shared.ready.wait().await;
    }

    /// True when the cache holds a complete, current copy of its prefix.
    pub fn is_ready(&self) -> bool {
        self.shared.ready.is_ready()
    }

    /// The cached prefix (`/group/plural`).
    pub fn resource_prefix(&self) -> &str {
        &self.shared.prefix
    }

    /// The cache's state and counters.
    pub fn stats(&self) -> CacherStats {
        let m = &self.shared.metrics;
        let cache = self.shared.read();
        CacherStats {
            terminated_watchers: m.terminated_watchers.load(Ordering::Relaxed),
            relists: m.relists.load(Ordering::Relaxed),
            consistent_read_fallbacks: m.consistent_read_fallbacks.load(Ordering::Relaxed),
            delegated_reads: m.delegated_reads.load(Ordering::Relaxed),
            watchers: m.watchers.load(Ordering::Relaxed),
            revision: cache.revision(),
            window_start: cache.window_start(),
            window_capacity: cache.capacity(),
            window_len: cache.window_len(),
            objects: cache.len(),
        }
    }

    /// Objects in the cache (what a full list of the resource returns).
    pub fn object_count(&self) -> usize {
        self.shared.read().len()
    }

    /// How many watchers were closed because they could not keep up.
    pub fn terminated_watchers(&self) -> u64 {
        self.shared
            .metrics
            .terminated_watchers
            .load(Ordering::Relaxed)
    }

    /// Validates `key` and decides who answers for it.
    fn route(&self, key: &str, recursive: bool) -> Result<Route> {
        let normalized = key::prepare_key("/", key)?;
        let scope = KeyScope::of(normalized, recursive);
        let inside = match &scope {
            KeyScope::Prefix(p) => p.starts_with(&self.shared.prefix_slash),
            KeyScope::Key(k) => {
                k.starts_with(&self.shared.prefix_slash) && k.len() > self.shared.prefix_slash.len()
            }
        };
        Ok(if inside {
            Route::Cache(scope)
        } else {
            Route::Below
        })
    }

    /// The cached object at `key`, as a hint for writes.
    fn cached(&self, key: &str) -> Option<Value> {
        if !self.is_ready() {
            return None;
        }
        match self.route(key, false) {
            Ok(Route::Cache(KeyScope::Key(k))) => self.shared.read().get(&k).map(|o| o.to_value()),
            _ => None,
        }
    }

    /// Read-your-writes: waits (bounded) until the cache has seen a write through this cacher.
    async fn observe_write(&self, key: &str, written: &Value) {
        if !self.shared.config.read_your_writes || !self.is_ready() {
            return;
        }
        if !matches!(self.route(key, false), Ok(Route::Cache(_))) {
            return;
        }
        if let Ok(Some(revision)) = object_resource_version(written) {
            let timeout = self.shared.config.not_older_than_timeout;
            self.shared.wait_for_revision(revision, timeout).await;
        }
    }
}

#[async_trait]
impl Storage for Cacher {
    async fn create(&self, key: &str, obj: Value) -> Result<Value> {
        let created = self.shared.below.create(key, obj).await?;
        self.observe_write(key, &created).await;
        Ok(created)
    }

    async fn delete(&self, key: &str, mut request: ConditionalDelete<'_>) -> Result<Value> {
        request.cached_existing = request.cached_existing.or_else(|| self.cached(key));
        let deleted = self.shared.below.delete(key, request).await?;
        self.observe_write(key, &deleted).await;
        Ok(deleted)
    }

    async fn watch(&self, key: &str, opts: ListOptions) -> Result<WatchStream> {
        match self.route(key, opts.recursive)? {
            Route::Below => self.shared.below.watch(key, opts).await,
            Route::Cache(scope) => {
                let stream = self.watch_cached(key, scope, opts).await?;
                Ok(Box::pin(stream))
            }
        }
    }

    async fn get(&self, key: &str, opts: GetOptions) -> Result<Option<Value>> {
        let found = match self.route(key, false)? {
            Route::Cache(KeyScope::Key(k)) if self.is_ready() => {
                self.get_cached(key, &k, opts).await?
            }
            Route::Cache(_) => self.delegate_get(key, opts).await?,
            Route::Below => return self.shared.below.get(key, opts).await,
        };
        Ok(found.map(|obj| obj.to_value()))
    }

    async fn get_shared(&self, key: &str, opts: GetOptions) -> Result<Option<Arc<CachedObject>>> {
        match self.route(key, false)? {
            Route::Cache(KeyScope::Key(k)) if self.is_ready() => {
                self.get_cached(key, &k, opts).await
            }
            Route::Cache(_) => self.delegate_get(key, opts).await,
            Route::Below => self.shared.below.get_shared(key, opts).await,
        }
    }

    async fn get_list(&self, key: &str, opts: ListOptions) -> Result<ObjectList> {
        match self.route(key, opts.recursive)? {
            Route::Cache(scope) if self.is_ready() => self.list_cached(key, scope, opts).await,
            Route::Cache(_) => self.delegate_list(key, opts).await,
            Route::Below => self.shared.below.get_list(key, opts).await,
        }
    }

    async fn guaranteed_update(
        &self,
        key: &str,
        mut request: GuaranteedUpdate<'_>,
    ) -> Result<Value> {
        request.cached_existing = request.cached_existing.or_else(|| self.cached(key));
        let updated = self.shared.below.guaranteed_update(key, request).await?;
        self.observe_write(key, &updated).await;
        Ok(updated)
    }

    async fn count(&self, key: &str) -> Result<u64> {
        self.shared.below.count(key).await
    }

    async fn current_revision(&self) -> Result<u64> {
        self.shared.below.current_revision().await
    }
}
