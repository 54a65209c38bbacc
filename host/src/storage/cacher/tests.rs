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

use super::watch_cache::{Incoming, Scope, WatchCache, WindowBounds};
use super::{Cacher, CacherConfig, SharedEvent};
use crate::storage::embedded::{EmbeddedConfig, EmbeddedStore};
use crate::storage::testing::{key, object};
use crate::storage::versioner::object_resource_version;
use crate::storage::{
    accept_any_deletion, GetOptions, ListOptions, ObjectList, Preconditions, Storage, StorageError,
    TryUpdate, ValidateDeletion, WatchEvent, WatchStream,
};

const PREFIX: &str = "/example.com/widgets";

fn rv(obj: &Value) -> u64 {
    object_resource_version(obj).unwrap().unwrap()
}

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

fn set_size<'a>(size: u64) -> TryUpdate<'a> {
    Box::new(move |cur| {
        Box::pin(async move {
            let mut o = cur.ok_or("missing")?;
            o["spec"]["size"] = json!(size);
            Ok(o)
        })
    })
}

async fn update(store: &dyn Storage, k: &str, size: u64) -> Value {
    store
        .guaranteed_update(k, &Preconditions::none(), false, set_size(size), None)
        .await
        .unwrap()
}

fn watch_opts(rv: &str) -> ListOptions {
    ListOptions {
        resource_version: rv.into(),
        recursive: true,
        ..Default::default()
    }
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

/// Polls `cond` until it holds (at most 10 s).
async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn put(cache: &mut WatchCache, name: &str, rev: u64, at: Instant) {
    let mut obj = object("ns", name);
    obj["metadata"]["resourceVersion"] = json!(rev.to_string());
    let change = Incoming::Put {
        key: key("ns", name),
        object: obj,
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
    let scope = Scope::Prefix(format!("{PREFIX}/"));
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
    let first = cacher
        .create(&key("ns", "a"), object("ns", "a"))
        .await
        .unwrap();
    for size in 2..12 {
        update(&*cacher, &key("ns", "a"), size).await;
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
    let mut w = cacher
        .watch(PREFIX, watch_opts(&start.to_string()))
        .await
        .unwrap();
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
    let mut slow = cacher
        .watch(PREFIX, watch_opts(&start.to_string()))
        .await
        .unwrap();
    let mut fast = Vec::new();
    for _ in 0..3 {
        fast.push(
            cacher
                .watch(PREFIX, watch_opts(&start.to_string()))
                .await
                .unwrap(),
        );
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
        let created = cacher
            .create(&key("ns", &name), object("ns", &name))
            .await
            .unwrap();
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
    let mut resumed = cacher
        .watch(PREFIX, watch_opts(&last.to_string()))
        .await
        .unwrap();
    while seen.len() < writes {
        seen.push(next_change(&mut resumed).await.unwrap().revision().unwrap());
    }
    assert_eq!(seen, committed, "nothing lost or repeated after resuming");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_older_than_a_future_revision_waits_for_the_write() {
    let below = Arc::new(embedded().await);
    let cacher = cacher_over(below.clone(), CacherConfig::default()).await;
    cacher
        .create(&key("ns", "a"), object("ns", "a"))
        .await
        .unwrap();
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
    let updated = update(&*below, &key("ns", "a"), 7).await;
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
    below
        .create(&key("ns", "a"), object("ns", "a"))
        .await
        .unwrap();
    for size in 2..40 {
        // Acknowledged by the store below, behind the cacher's back.
        let written = update(&*below, &key("ns", "a"), size).await;
        let got = cacher
            .get(&key("ns", "a"), GetOptions::default())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got, written, "consistent get after write {size}");
        let list = cacher.get_list(PREFIX, watch_opts("")).await.unwrap();
        assert_eq!(list.items, vec![written.clone()]);
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
    let a = cacher
        .create(&key("ns", "a"), object("ns", "a"))
        .await
        .unwrap();
    let opts = ListOptions {
        send_initial_events: true,
        allow_bookmarks: true,
        ..watch_opts("")
    };
    let mut w = cacher.watch_shared(PREFIX, opts).await.unwrap();
    match w.next().await.unwrap() {
        SharedEvent::Added(o) => {
            assert_eq!(o.value(), &a);
            assert_eq!(o.json(), serde_json::to_vec(&a).unwrap());
        }
        other => panic!("{other:?}"),
    }
    match w.next().await.unwrap() {
        SharedEvent::Bookmark(r) => assert!(r >= rv(&a)),
        other => panic!("expected the end of the initial events, got {other:?}"),
    }
    let b = cacher
        .create(&key("ns", "b"), object("ns", "b"))
        .await
        .unwrap();
    assert!(matches!(w.next().await.unwrap(), SharedEvent::Added(_)));
    // Then periodic bookmarks carry the cache's revision.
    let bookmark = tokio::time::timeout(Duration::from_secs(5), w.next())
        .await
        .unwrap()
        .unwrap();
    match bookmark {
        SharedEvent::Bookmark(r) => assert!(r >= rv(&b)),
        other => panic!("expected a bookmark, got {other:?}"),
    }
}

/// A store whose watches can be cut and refused, to drive the reflector through recovery.
struct Flaky {
    inner: EmbeddedStore,
    refuse: AtomicBool,
    cut: tokio::sync::watch::Sender<u64>,
}

#[async_trait]
impl Storage for Flaky {
    async fn create(&self, key: &str, obj: Value) -> Result<Value, StorageError> {
        self.inner.create(key, obj).await
    }
    async fn delete(
        &self,
        key: &str,
        p: &Preconditions,
        v: ValidateDeletion<'_>,
        c: Option<Value>,
    ) -> Result<Value, StorageError> {
        self.inner.delete(key, p, v, c).await
    }
    async fn watch(&self, key: &str, opts: ListOptions) -> Result<WatchStream, StorageError> {
        if self.refuse.load(Ordering::SeqCst) {
            return Err(StorageError::Unavailable("refused by the test".into()));
        }
        let stream = self.inner.watch(key, opts).await?;
        let mut cut = self.cut.subscribe();
        cut.mark_unchanged();
        let cut = async move {
            let _ = cut.changed().await;
        };
        Ok(Box::pin(stream.take_until(Box::pin(cut))))
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
        p: &Preconditions,
        ignore: bool,
        t: TryUpdate<'_>,
        c: Option<Value>,
    ) -> Result<Value, StorageError> {
        self.inner.guaranteed_update(key, p, ignore, t, c).await
    }
    async fn count(&self, key: &str) -> Result<u64, StorageError> {
        self.inner.count(key).await
    }
    async fn current_revision(&self) -> Result<u64, StorageError> {
        self.inner.current_revision().await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relists_after_the_store_below_compacted_its_revision() {
    let inner = embedded().await;
    let flaky = Arc::new(Flaky {
        inner: inner.clone(),
        refuse: AtomicBool::new(false),
        cut: tokio::sync::watch::Sender::new(0),
    });
    let cacher = cacher_over(flaky.clone(), CacherConfig::default()).await;
    let a = cacher
        .create(&key("ns", "a"), object("ns", "a"))
        .await
        .unwrap();
    let mut old_watch = cacher
        .watch(PREFIX, watch_opts(&rv(&a).to_string()))
        .await
        .unwrap();
    // Cut the reflector off, change the world and compact it away.
    flaky.refuse.store(true, Ordering::SeqCst);
    flaky.cut.send_modify(|n| *n += 1);
    inner
        .create(&key("ns", "b"), object("ns", "b"))
        .await
        .unwrap();
    update(&inner, &key("ns", "a"), 9).await;
    let now = inner.current_revision().await.unwrap();
    inner.compact(now).await.unwrap();
    flaky.refuse.store(false, Ordering::SeqCst);
    eventually("a relist", || cacher.stats().relists == 1).await;
    eventually("ready again", || cacher.is_ready()).await;
    // Old watchers were closed; a watch from before the relist is Expired.
    assert!(next_change(&mut old_watch).await.is_none());
    let err = match cacher.watch(PREFIX, watch_opts(&rv(&a).to_string())).await {
        Err(e) => e,
        Ok(_) => panic!("expected Expired"),
    };
    assert!(err.is_expired(), "{err}");
    let opts = ListOptions {
        resource_version: "0".into(),
        recursive: true,
        ..Default::default()
    };
    let list = cacher.get_list(PREFIX, opts).await.unwrap();
    assert_eq!(list.items.len(), 2);
    assert_eq!(list.items[0]["spec"]["size"], 9);
    assert_eq!(list.resource_version, now);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_wait_for_readiness_and_reads_go_below_meanwhile() {
    let inner = embedded().await;
    inner
        .create(&key("ns", "a"), object("ns", "a"))
        .await
        .unwrap();
    let flaky = Arc::new(Flaky {
        inner,
        refuse: AtomicBool::new(true),
        cut: tokio::sync::watch::Sender::new(0),
    });
    let config = CacherConfig {
        ready_timeout: Duration::from_millis(100),
        ..Default::default()
    };
    let cacher = Cacher::new(flaky.clone(), PREFIX, config).unwrap();
    // The first list succeeds but the watch is refused: the cache is listed...
    eventually("the first list", || cacher.is_ready()).await;
    // ...and a Storage whose list is refused never gets ready; use a fresh one to check.
    let never = Cacher::new(
        Arc::new(NeverLists),
        PREFIX,
        CacherConfig {
            ready_timeout: Duration::from_millis(100),
            ..Default::default()
        },
    )
    .unwrap();
    let err = match never.watch(PREFIX, watch_opts("0")).await {
        Err(e) => e,
        Ok(_) => panic!("a watch on a cache that is not ready must fail"),
    };
    assert!(err.is_unavailable(), "{err}");
    assert!(err.to_string().contains("initializing"));
    let err = never
        .get(&key("ns", "a"), GetOptions::default())
        .await
        .unwrap_err();
    assert!(err.is_unavailable(), "reads went to the store below: {err}");
    assert_eq!(never.stats().delegated_reads, 1);
}

/// A store that is down.
struct NeverLists;

#[async_trait]
impl Storage for NeverLists {
    async fn create(&self, _: &str, _: Value) -> Result<Value, StorageError> {
        Err(down())
    }
    async fn delete(
        &self,
        _: &str,
        _: &Preconditions,
        _: ValidateDeletion<'_>,
        _: Option<Value>,
    ) -> Result<Value, StorageError> {
        Err(down())
    }
    async fn watch(&self, _: &str, _: ListOptions) -> Result<WatchStream, StorageError> {
        Err(down())
    }
    async fn get(&self, _: &str, _: GetOptions) -> Result<Option<Value>, StorageError> {
        Err(down())
    }
    async fn get_list(&self, _: &str, _: ListOptions) -> Result<ObjectList, StorageError> {
        Err(down())
    }
    async fn guaranteed_update(
        &self,
        _: &str,
        _: &Preconditions,
        _: bool,
        _: TryUpdate<'_>,
        _: Option<Value>,
    ) -> Result<Value, StorageError> {
        Err(down())
    }
    async fn count(&self, _: &str) -> Result<u64, StorageError> {
        Err(down())
    }
    async fn current_revision(&self) -> Result<u64, StorageError> {
        Err(down())
    }
}

fn down() -> StorageError {
    StorageError::Unavailable("down".into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn survives_an_etcd_restart_without_losing_or_repeating_events() {
    use crate::storage::etcd3::testing::EtcdServer;
    use crate::storage::etcd3::{Etcd3Config, Etcd3Store};
    let mut etcd = tokio::task::spawn_blocking(EtcdServer::start)
        .await
        .unwrap()
        .expect("etcd");
    let mut config = Etcd3Config::new(vec![etcd.endpoint()]);
    config.request_timeout = Duration::from_secs(2);
    let store = Etcd3Store::connect(config).await.unwrap();
    let cacher = cacher_over(Arc::new(store), CacherConfig::default()).await;
    let start = cacher.current_revision().await.unwrap();
    let mut w = cacher
        .watch(PREFIX, watch_opts(&start.to_string()))
        .await
        .unwrap();
    let mut committed = Vec::new();
    for i in 0..5 {
        let name = format!("before-{i}");
        committed.push(rv(&cacher
            .create(&key("ns", &name), object("ns", &name))
            .await
            .unwrap()));
    }
    etcd = tokio::task::spawn_blocking(move || {
        etcd.stop();
        etcd.restart().expect("restart etcd");
        etcd
    })
    .await
    .unwrap();
    for i in 0..5 {
        let name = format!("after-{i}");
        // The client reconnects on its own; retry while it does.
        let deadline = Instant::now() + Duration::from_secs(20);
        let created = loop {
            match cacher.create(&key("ns", &name), object("ns", &name)).await {
                Ok(obj) => break obj,
                Err(e) if e.is_unavailable() && Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                Err(e) => panic!("create after restart: {e}"),
            }
        };
        committed.push(rv(&created));
    }
    let mut seen = Vec::new();
    while seen.len() < committed.len() {
        seen.push(next_change(&mut w).await.unwrap().revision().unwrap());
    }
    assert_eq!(
        seen, committed,
        "every event once, in order, across the restart"
    );
    // A client resuming from the middle gets exactly the rest.
    let mut resumed = cacher
        .watch(PREFIX, watch_opts(&committed[4].to_string()))
        .await
        .unwrap();
    for want in &committed[5..] {
        assert_eq!(
            next_change(&mut resumed).await.unwrap().revision(),
            Some(*want)
        );
    }
    drop(etcd);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn randomized_writers_and_watchers_see_exactly_the_committed_history() {
    let cacher = cacher_over(Arc::new(embedded().await), CacherConfig::default()).await;
    let start = cacher.current_revision().await.unwrap();
    let writers: Vec<_> = (0..4u64)
        .map(|w| {
            let cacher = cacher.clone();
            tokio::spawn(async move {
                let mut rng = rand::rngs::StdRng::seed_from_u64(w);
                let mut log = Vec::new();
                for _ in 0..60 {
                    let name = format!("w{w}-{}", rng.random_range(0..6));
                    let k = key("ns", &name);
                    let size = rng.random_range(0..1000);
                    let exists = cacher
                        .get(
                            &k,
                            GetOptions {
                                ignore_not_found: true,
                                ..Default::default()
                            },
                        )
                        .await
                        .unwrap()
                        .is_some();
                    let written = if !exists {
                        cacher.create(&k, object("ns", &name)).await.unwrap()
                    } else if rng.random_bool(0.3) {
                        cacher
                            .delete(&k, &Preconditions::none(), accept_any_deletion(), None)
                            .await
                            .unwrap()
                    } else {
                        update(&*cacher, &k, size).await
                    };
                    log.push((rv(&written), written));
                    if rng.random_bool(0.2) {
                        tokio::task::yield_now().await;
                    }
                }
                log
            })
        })
        .collect();
    // Watchers join at random points, from the revision the store has reached.
    let mut watchers = Vec::new();
    let mut rng = rand::rngs::StdRng::seed_from_u64(99);
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_millis(rng.random_range(0..20))).await;
        let from = cacher.current_revision().await.unwrap();
        let w = cacher
            .watch(PREFIX, watch_opts(&from.to_string()))
            .await
            .unwrap();
        watchers.push((from, w));
    }
    let mut history = BTreeMap::new();
    for w in writers {
        for (rev, obj) in w.await.unwrap() {
            history.insert(rev, obj);
        }
    }
    assert!(history.keys().all(|&r| r > start));
    for (from, mut w) in watchers {
        let want: Vec<u64> = history.range(from + 1..).map(|(r, _)| *r).collect();
        let mut got = Vec::new();
        while got.len() < want.len() {
            let event = next_change(&mut w).await.expect("watch open");
            let obj = event.object().unwrap().clone();
            let r = event.revision().unwrap();
            assert_eq!(
                history.get(&r).map(|o| &o["metadata"]["name"]),
                Some(&obj["metadata"]["name"])
            );
            got.push(r);
        }
        assert_eq!(got, want, "watcher from {from}");
    }
}
