//! Cacher-specific tests: the window's resizing, Expired watches, slow watchers, waiting and
//! consistent reads, relisting after compaction, recovery across an etcd restart, and a
//! randomized check that every watcher sees exactly the committed history.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::StreamExt;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use super::watch_cache::{Incoming, WatchCache, WindowBounds};
use super::{Cacher, CacherConfig};
use crate::embedded::{EmbeddedConfig, EmbeddedStore};
use crate::key::KeyScope;
use crate::testing::{create, key, names, object, rv, update_size};
use crate::WatchEvent;
use crate::{
    ConditionalDelete, GetOptions, GuaranteedUpdate, ListOptions, ObjectList, Storage,
    StorageError, WatchStream,
};

const PREFIX: &str = "/example.com/widgets";

async fn embedded() -> EmbeddedStore {
    let dir = tempfile::tempdir().unwrap().keep();
    let mut config = EmbeddedConfig::new(dir);
    config.compaction_interval = None;
    EmbeddedStore::open(config).await.unwrap()
}

async fn cacher_over(below: Arc<dyn Storage>, config: CacherConfig) -> Arc<Cacher> {
    let cacher = Cacher::new(below, PREFIX, config).unwrap();
    tokio::time::timeout(Duration::from_secs(10), cacher.wait_until_ready())
        .await
        .expect("cacher ready");
    cacher
}

fn watch_opts(rv: &str) -> ListOptions {
    ListOptions {
        resource_version: rv.into(),
        recursive: true,
        ..Default::default()
    }
}

/// Watches every widget (the cacher's whole prefix) for changes after `rv`.
async fn watch_all(store: &dyn Storage, rv: u64) -> WatchStream {
    store
        .watch(PREFIX, watch_opts(&rv.to_string()))
        .await
        .expect("watch")
}

/// The next event that is not a bookmark, within 10 s; `None` when the stream ended.
async fn next_change(w: &mut WatchStream) -> Option<WatchEvent> {
    loop {
        match tokio::time::timeout(Duration::from_secs(10), w.next())
            .await
            .expect("a watch event within 10s")
        {
            Some(WatchEvent::Bookmark(_)) => continue,
            other => return other,
        }
    }
}

/// Writes size `size` to widget `name` in the store `below`, behind the cacher's back, and
/// checks that a consistent get through `cacher` sees that write; answers the object written.
async fn written_below_is_read(
    below: &dyn Storage,
    cacher: &Cacher,
    name: &str,
    size: u64,
) -> Value {
    let written = update_size(below, &key("ns", name), size).await;
    let got = cacher
        .get(&key("ns", name), GetOptions::default())
        .await
        .unwrap();
    let why = format!("consistent get of {name} after the write of size {size}");
    assert_eq!(got.as_ref(), Some(&written), "{why}");
    written
}

/// Polls `cond` until it holds (at most 10 s).
async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// What a test store does to the watches of the embedded store it wraps. Every fault acts
/// either before the watch opens or on the stream it opened, so the opening itself is
/// `Faulty`'s alone.
trait WatchFault: Send + Sync {
    /// Lets a watch open, or refuses it; the default lets every watch open.
    fn admit(&self) -> Result<(), StorageError> {
        Ok(())
    }

    /// The stream a watch the store below opened is seen through.
    fn wrap(&self, stream: WatchStream) -> WatchStream;
}

/// An embedded store whose watches go through `fault`; every other call passes through.
struct Faulty<F> {
    inner: EmbeddedStore,
    fault: F,
}

#[async_trait]
impl<F: WatchFault + 'static> Storage for Faulty<F> {
    async fn create(&self, key: &str, obj: Value) -> Result<Value, StorageError> {
        self.inner.create(key, obj).await
    }
    async fn delete(&self, key: &str, r: ConditionalDelete<'_>) -> Result<Value, StorageError> {
        self.inner.delete(key, r).await
    }
    async fn watch(&self, key: &str, opts: ListOptions) -> Result<WatchStream, StorageError> {
        self.fault.admit()?;
        let stream = self.inner.watch(key, opts).await?;
        Ok(self.fault.wrap(stream))
    }
    async fn get(&self, key: &str, opts: GetOptions) -> Result<Option<Value>, StorageError> {
        self.inner.get(key, opts).await
    }
    async fn get_list(&self, key: &str, opts: ListOptions) -> Result<ObjectList, StorageError> {
        self.inner.get_list(key, opts).await
    }
    async fn guaranteed_update(
        &self,
        key: &str,
        r: GuaranteedUpdate<'_>,
    ) -> Result<Value, StorageError> {
        self.inner.guaranteed_update(key, r).await
    }
    async fn count(&self, key: &str) -> Result<u64, StorageError> {
        self.inner.count(key).await
    }
    async fn current_revision(&self) -> Result<u64, StorageError> {
        self.inner.current_revision().await
    }
    async fn request_watch_progress(&self) -> Result<bool, StorageError> {
        self.inner.request_watch_progress().await
    }
}

fn put(cache: &mut WatchCache, name: &str, rev: u64, at: Instant) {
    let mut obj = object("ns", name);
    obj["metadata"]["resourceVersion"] = json!(rev.to_string());
    let change = Incoming::Put {
        key: key("ns", name),
        object: Arc::new(crate::SharedObject::new(obj)),
    };
    assert!(cache.apply(change, at).is_some());
}

#[test]
fn window_grows_while_fresh_and_shrinks_when_stale() {
    let bounds = WindowBounds {
        lower: 4,
        upper: 16,
        freshness: Duration::from_secs(10),
    };
    let mut cache = WatchCache::new(bounds);
    cache.replace(Vec::new(), 1);
    let t0 = Instant::now();
    for rev in 2..=5 {
        put(&mut cache, "a", rev, t0);
    }
    assert_eq!((cache.capacity(), cache.window_len()), (4, 4));
    // Full of fresh events: doubles instead of dropping one.
    put(&mut cache, "a", 6, t0 + Duration::from_secs(1));
    assert_eq!((cache.capacity(), cache.window_len()), (8, 5));
    for rev in 7..=30 {
        put(&mut cache, "a", rev, t0 + Duration::from_secs(2));
    }
    assert_eq!(cache.capacity(), 16, "never beyond the upper bound");
    assert_eq!(cache.window_len(), 16);
    assert_eq!(cache.window_start(), 14, "events 15..=30 are kept");
    let scope = KeyScope::Prefix(format!("{PREFIX}/"));
    assert!(cache.events_after(13, &scope).is_none());
    assert_eq!(cache.events_after(14, &scope).unwrap().len(), 16);
    // Much later: the newest quarter is stale, so the window halves (keeping the newest).
    put(&mut cache, "a", 31, t0 + Duration::from_secs(100));
    assert_eq!(cache.capacity(), 8);
    assert_eq!(cache.window_len(), 8);
    assert_eq!(cache.window_start(), 23);
    put(&mut cache, "a", 32, t0 + Duration::from_secs(200));
    put(&mut cache, "a", 33, t0 + Duration::from_secs(200));
    assert_eq!(cache.capacity(), 4, "halves down to the lower bound");
    // Sparse events (each older than the freshness when the next comes) keep it small.
    for rev in 34..=40 {
        put(
            &mut cache,
            "a",
            rev,
            t0 + Duration::from_secs(400 + 20 * rev),
        );
    }
    assert_eq!(cache.capacity(), 4, "never below the lower bound");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_from_before_the_window_is_expired() {
    let config = CacherConfig {
        window_lower_bound: 4,
        window_upper_bound: 4,
        ..Default::default()
    };
    let cacher = cacher_over(Arc::new(embedded().await), config).await;
    let first = create(&*cacher, "ns", "a").await;
    for size in 2..12 {
        update_size(&*cacher, &key("ns", "a"), size).await;
    }
    let err = match cacher
        .watch(PREFIX, watch_opts(&rv(&first).to_string()))
        .await
    {
        Err(e) => e,
        Ok(_) => panic!("a watch from before the window must fail"),
    };
    assert!(err.is_expired(), "{err}");
    // From the window's start, the window replays.
    let start = cacher.stats().window_start;
    let mut w = watch_all(&*cacher, start).await;
    for _ in 0..4 {
        let e = next_change(&mut w).await.unwrap();
        assert_eq!(e.type_name(), "MODIFIED");
        assert!(e.revision().unwrap() > start);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_watcher_is_closed_while_fast_ones_get_everything() {
    let config = CacherConfig {
        watcher_buffer: 8,
        ..Default::default()
    };
    let cacher = cacher_over(Arc::new(embedded().await), config).await;
    let start = cacher.current_revision().await.unwrap();
    let mut slow = watch_all(&*cacher, start).await;
    let mut fast = Vec::new();
    for _ in 0..3 {
        fast.push(watch_all(&*cacher, start).await);
    }
    let writes = 200;
    let readers: Vec<_> = fast
        .into_iter()
        .map(|mut w| {
            tokio::spawn(async move {
                let mut revs = Vec::new();
                while revs.len() < writes {
                    revs.push(next_change(&mut w).await.unwrap().revision().unwrap());
                }
                revs
            })
        })
        .collect();
    let mut committed = Vec::new();
    for i in 0..writes {
        let name = format!("o{i:03}");
        let created = create(&*cacher, "ns", &name).await;
        committed.push(rv(&created));
    }
    for r in readers {
        assert_eq!(r.await.unwrap(), committed, "fast watchers get every event");
    }
    assert!(
        cacher.terminated_watchers() >= 1,
        "the slow watcher was closed"
    );
    // The slow client drains what was buffered, sees the end, and resumes from its last RV.
    let mut seen = Vec::new();
    while let Some(e) = next_change(&mut slow).await {
        seen.push(e.revision().unwrap());
    }
    assert!(seen.len() < writes);
    assert_eq!(seen[..], committed[..seen.len()]);
    let last = seen.last().copied().unwrap_or(start);
    let mut resumed = watch_all(&*cacher, last).await;
    while seen.len() < writes {
        seen.push(next_change(&mut resumed).await.unwrap().revision().unwrap());
    }
    assert_eq!(seen, committed, "nothing lost or repeated after resuming");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_older_than_a_future_revision_waits_for_the_write() {
    let below = Arc::new(embedded().await);
    let cacher = cacher_over(below.clone(), CacherConfig::default()).await;
    create(&*cacher, "ns", "a").await;
    let next = cacher.current_revision().await.unwrap() + 1;
    let reader = {
        let cacher = cacher.clone();
        tokio::spawn(async move {
            let opts = GetOptions {
                resource_version: next.to_string(),
                ..Default::default()
            };
            cacher.get(&key("ns", "a"), opts).await
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!reader.is_finished(), "the read waits for revision {next}");
    // Written straight to the store below: the cache learns it from its watch.
    let updated = update_size(&*below, &key("ns", "a"), 7).await;
    assert_eq!(rv(&updated), next);
    let got = reader.await.unwrap().unwrap().unwrap();
    assert_eq!(got, updated);
    // A revision nobody writes times out as TooLargeResourceVersion.
    let config = CacherConfig {
        not_older_than_timeout: Duration::from_millis(100),
        ..Default::default()
    };
    let quick = cacher_over(below.clone(), config).await;
    let opts = ListOptions {
        resource_version: (next + 10).to_string(),
        recursive: true,
        ..Default::default()
    };
    let err = quick.get_list(PREFIX, opts).await.unwrap_err();
    assert!(err.is_too_large_resource_version(), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consistent_reads_never_miss_an_acknowledged_write() {
    let below = Arc::new(embedded().await);
    let config = CacherConfig {
        read_your_writes: false,
        ..Default::default()
    };
    let cacher = cacher_over(below.clone(), config).await;
    create(&*below, "ns", "a").await;
    for size in 2..40 {
        // Acknowledged by the store below, behind the cacher's back.
        let written = written_below_is_read(&*below, &cacher, "a", size).await;
        let list = cacher.get_list(PREFIX, watch_opts("")).await.unwrap();
        assert_eq!(list.items[0].to_value(), written);
        assert_eq!(list.items.len(), 1);
        assert!(list.resource_version >= rv(&written));
    }
    // Served from memory, not by falling back to the store.
    assert_eq!(cacher.stats().consistent_read_fallbacks, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bookmarks_and_initial_events() {
    let config = CacherConfig {
        bookmark_interval: Duration::from_millis(50),
        ..Default::default()
    };
    let cacher = cacher_over(Arc::new(embedded().await), config).await;
    let a = create(&*cacher, "ns", "a").await;
    let opts = ListOptions {
        send_initial_events: true,
        allow_bookmarks: true,
        ..watch_opts("")
    };
    let mut w = cacher.watch(PREFIX, opts.clone()).await.unwrap();
    let mut other = cacher.watch(PREFIX, opts).await.unwrap();
    match w.next().await.unwrap() {
        WatchEvent::Added(o) => {
            assert_eq!(o.to_value(), a);
            assert_eq!(o.json(), serde_json::to_vec(&a).unwrap());
        }
        other => panic!("{other:?}"),
    }
    match w.next().await.unwrap() {
        WatchEvent::Bookmark(r) => assert!(r.revision() >= rv(&a)),
        other => panic!("expected the end of the initial events, got {other:?}"),
    }
    let _ = other.next().await; // its initial ADDED
    let _ = other.next().await; // and bookmark
    let b = create(&*cacher, "ns", "b").await;
    // Every watcher gets the same object, not a copy.
    match (w.next().await.unwrap(), other.next().await.unwrap()) {
        (WatchEvent::Added(mine), WatchEvent::Added(theirs)) => {
            assert!(Arc::ptr_eq(&mine, &theirs), "one shared object per event");
            assert_eq!(mine.to_value(), b);
        }
        other => panic!("{other:?}"),
    }
    // Then periodic bookmarks carry the cache's revision.
    let bookmark = tokio::time::timeout(Duration::from_secs(5), w.next())
        .await
        .unwrap()
        .unwrap();
    match bookmark {
        WatchEvent::Bookmark(r) => assert!(r.revision() >= rv(&b)),
        other => panic!("expected a bookmark, got {other:?}"),
    }
}

mod consistency;
mod monotonic_reads;
mod recovery;
