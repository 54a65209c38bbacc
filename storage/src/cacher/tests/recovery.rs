//! Cacher tests of recovery and scale: relists after compaction, readiness, an etcd restart, and
//! randomized writers and watchers.

use super::*;

/// Watches that can be cut and refused, to drive the reflector through recovery.
struct Refusing {
    refuse: AtomicBool,
    cut: tokio::sync::watch::Sender<u64>,
}

type Flaky = Faulty<Refusing>;

fn flaky(inner: EmbeddedStore, refuse: bool) -> Arc<Flaky> {
    Arc::new(Faulty {
        inner,
        fault: Refusing {
            refuse: AtomicBool::new(refuse),
            cut: tokio::sync::watch::Sender::new(0),
        },
    })
}

impl WatchFault for Refusing {
    fn admit(&self) -> Result<(), StorageError> {
        if self.refuse.load(Ordering::SeqCst) {
            return Err(StorageError::Unavailable("refused by the test".into()));
        }
        Ok(())
    }

    fn wrap(&self, stream: WatchStream) -> WatchStream {
        // Only a cut after the watch opened ends it.
        let mut cut = self.cut.subscribe();
        cut.mark_unchanged();
        let cut = async move {
            let _ = cut.changed().await;
        };
        Box::pin(stream.take_until(Box::pin(cut)))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relists_after_the_store_below_compacted_its_revision() {
    let inner = embedded().await;
    let flaky = flaky(inner.clone(), false);
    let cacher = cacher_over(flaky.clone(), CacherConfig::default()).await;
    let a = create(&*cacher, "ns", "a").await;
    let mut old_watch = watch_all(&*cacher, rv(&a)).await;
    // Cut the reflector off, change the world and compact it away.
    flaky.fault.refuse.store(true, Ordering::SeqCst);
    flaky.fault.cut.send_modify(|n| *n += 1);
    create(&inner, "ns", "b").await;
    update_size(&inner, &key("ns", "a"), 9).await;
    let now = inner.current_revision().await.unwrap();
    inner.compact(now).await.unwrap();
    flaky.fault.refuse.store(false, Ordering::SeqCst);
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
    assert_eq!(list.items[0].to_value()["spec"]["size"], 9);
    assert_eq!(list.resource_version, now);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_wait_for_readiness_and_reads_go_below_meanwhile() {
    let inner = embedded().await;
    create(&inner, "ns", "a").await;
    let flaky = flaky(inner, true);
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
    async fn delete(&self, _: &str, _: ConditionalDelete<'_>) -> Result<Value, StorageError> {
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
        _: GuaranteedUpdate<'_>,
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
    use crate::etcd3::testing::EtcdServer;
    use crate::etcd3::{Etcd3Config, Etcd3Store};
    let mut etcd = EtcdServer::start_in_test().await;
    let mut config = Etcd3Config::new(vec![etcd.endpoint()]);
    config.request_timeout = Duration::from_secs(2);
    let store = Etcd3Store::connect(config).await.unwrap();
    let cacher = cacher_over(Arc::new(store), CacherConfig::default()).await;
    let start = cacher.current_revision().await.unwrap();
    let mut w = watch_all(&*cacher, start).await;
    let mut committed = Vec::new();
    for i in 0..5 {
        let name = format!("before-{i}");
        committed.push(rv(&create(&*cacher, "ns", &name).await));
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
    let mut resumed = watch_all(&*cacher, committed[4]).await;
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
                        .get(&k, GetOptions::ignoring_not_found())
                        .await
                        .unwrap()
                        .is_some();
                    let written = if !exists {
                        cacher.create(&k, object("ns", &name)).await.unwrap()
                    } else if rng.random_bool(0.3) {
                        cacher
                            .delete(&k, ConditionalDelete::default())
                            .await
                            .unwrap()
                    } else {
                        update_size(&*cacher, &k, size).await
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
        let w = watch_all(&*cacher, from).await;
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
                history.get(&r).and_then(|o| o["metadata"]["name"].as_str()),
                obj.name()
            );
            got.push(r);
        }
        assert_eq!(got, want, "watcher from {from}");
    }
}
