//! Failing over between etcd members, against a real three-member cluster on loopback: with one
//! member killed (a failure etcd tolerates) not one request fails, every acknowledged write stays
//! readable, a watch carries on, and a member that comes back rejoins the rotation.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{json, Value};
use strategy_host::storage::cacher::{Cacher, CacherConfig};
use strategy_host::storage::etcd3::testing::{EtcdCluster, EtcdServer};
use strategy_host::storage::etcd3::{Etcd3Config, Etcd3Store};
use strategy_host::storage::{
    ConditionalDelete, GetOptions, GuaranteedUpdate, ListOptions, Storage, WatchEvent, WatchStream,
};

/// Concurrent request loops; half of them go through the cacher.
const WORKERS: usize = 4;
/// How long each phase keeps the requests coming.
const PHASE: Duration = Duration::from_secs(4);
/// A pause after killing a member before the next requests. A request in flight at the instant
/// a member dies may fail (a write that may have reached etcd is answered with an error, as
/// Kubernetes does); what is under test is every request after the death.
const AFTER_KILL: Duration = Duration::from_millis(300);

/// What the acknowledged writes left: key → the live object's `spec.n`, or `None` once deleted.
type Model = BTreeMap<String, Option<u64>>;

/// A three-member etcd cluster on loopback, started off the runtime's threads.
async fn three_members() -> EtcdCluster {
    tokio::task::spawn_blocking(|| EtcdCluster::start(3))
        .await
        .unwrap()
        .expect("start a three-member etcd cluster")
}

fn widget(name: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": "ns"}, "spec": {"n": 0}})
}

/// Runs every storage verb in `WORKERS` loops for `duration`; every failure is recorded.
async fn workload(stores: &[Arc<dyn Storage>], phase: &str, duration: Duration) -> (Model, usize) {
    let failures = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for worker in 0..WORKERS {
        let storage = stores[worker % stores.len()].clone();
        let failures = failures.clone();
        let phase = phase.to_string();
        tasks.push(tokio::spawn(async move {
            let mut model = Model::new();
            let mut requests = 0;
            let began = Instant::now();
            let mut i = 0;
            while began.elapsed() < duration {
                i += 1;
                let name = format!("{phase}-w{worker}-{i}");
                let key = format!("/widgets/ns/{name}");
                let fail = |op: &str, e: &dyn std::fmt::Display| {
                    let at = began.elapsed();
                    failures
                        .lock()
                        .unwrap()
                        .push(format!("{op} {key} (worker {worker}, at {at:?}): {e}"));
                };
                requests += 1;
                if let Err(e) = storage.create(&key, widget(&name)).await {
                    fail("create", &e);
                    continue;
                }
                model.insert(key.clone(), Some(0));
                requests += 1;
                match storage.get(&key, GetOptions::default()).await {
                    Ok(Some(found)) if found["metadata"]["name"] == name.as_str() => {}
                    Ok(other) => fail("get", &format!("unexpected {other:?}")),
                    Err(e) => fail("get", &e),
                }
                requests += 1;
                let updated = storage
                    .guaranteed_update(
                        &key,
                        GuaranteedUpdate::new(Box::new(|cur| {
                            let mut obj = cur.expect("exists");
                            obj["spec"]["n"] = json!(1);
                            Box::pin(async move { Ok(obj) })
                        })),
                    )
                    .await;
                match updated {
                    Ok(_) => {
                        model.insert(key.clone(), Some(1));
                    }
                    Err(e) => {
                        fail("guaranteed_update", &e);
                        model.remove(&key);
                        continue;
                    }
                }
                requests += 1;
                let list = ListOptions::recursive();
                match storage.get_list("/widgets/ns", list).await {
                    Ok(list) if list.items.iter().any(|o| o.name() == Some(name.as_str())) => {}
                    Ok(_) => fail("get_list", &"the list misses the object just written"),
                    Err(e) => fail("get_list", &e),
                }
                if i % 2 == 0 {
                    requests += 1;
                    let deleted = storage.delete(&key, ConditionalDelete::default()).await;
                    match deleted {
                        Ok(_) => {
                            model.insert(key.clone(), None);
                        }
                        Err(e) => {
                            fail("delete", &e);
                            model.remove(&key);
                        }
                    }
                }
            }
            (model, requests)
        }));
    }
    let mut model = Model::new();
    let mut requests = 0;
    for task in tasks {
        let (part, n) = task.await.expect("worker");
        model.extend(part);
        requests += n;
    }
    let failures = failures.lock().unwrap();
    eprintln!("{phase}: {requests} requests, {} failed", failures.len());
    assert!(
        failures.is_empty(),
        "{phase}: {} of {requests} requests failed, e.g.:\n{}",
        failures.len(),
        failures[..failures.len().min(10)].join("\n")
    );
    (model, requests)
}

/// Every acknowledged write is what a fresh read finds.
async fn assert_durable(store: &Etcd3Store, model: &Model) {
    for (key, expected) in model {
        let opts = GetOptions::ignoring_not_found();
        let found = store.get(key, opts).await.expect("read back");
        let n = found.map(|o| o["spec"]["n"].as_u64().expect("spec.n"));
        assert_eq!(n, *expected, "{key}");
    }
}

/// A running member that does not lead, other than `except`. The test kills followers: killing
/// the leader also loses the proposals in flight to it, which etcd itself answers only at its
/// own request timeout ("request timed out", a write that may or may not have committed) — an
/// election's cost, not a client choosing a dead member.
fn follower(cluster: &EtcdCluster, except: Option<usize>) -> usize {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(leader) = cluster.leader() {
            return (0..3)
                .find(|&i| i != leader && Some(i) != except)
                .expect("a follower");
        }
        assert!(Instant::now() < deadline, "the cluster has no leader");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until `watch` delivers the creation of `name`.
async fn wait_for_added(watch: &mut WatchStream, name: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let event = tokio::time::timeout_at(deadline, watch.next())
            .await
            .expect("the watch delivers in time")
            .expect("the watch is still open");
        match event {
            WatchEvent::Added(o) if o.name() == Some(name) => return,
            WatchEvent::Error(e) => panic!("the watch failed: {e}"),
            _ => {}
        }
    }
}

/// A store on `cluster` whose requests may take `request_timeout`, and the two ways the
/// workload reaches it: directly and through a ready cacher over it.
async fn store_and_cacher(
    cluster: &EtcdCluster,
    request_timeout: Duration,
) -> (Etcd3Store, Vec<Arc<dyn Storage>>) {
    let mut config = Etcd3Config::new(cluster.endpoints());
    config.dial_timeout = Duration::from_secs(2);
    config.request_timeout = request_timeout;
    let store = Etcd3Store::connect(config).await.expect("connect");
    let cacher = Cacher::new(Arc::new(store.clone()), "/widgets", CacherConfig::default())
        .expect("start the cacher");
    cacher.wait_until_ready().await;
    let stores: Vec<Arc<dyn Storage>> = vec![Arc::new(store.clone()), cacher];
    (store, stores)
}

/// The cluster's leader once it has one.
fn leader(cluster: &EtcdCluster, except: Option<usize>) -> usize {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match cluster.leader() {
            Some(leader) if Some(leader) != except => return leader,
            _ => assert!(Instant::now() < deadline, "the cluster elects no leader"),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What an operator saw: the etcd leader stalls for 4 s (a new one is elected meanwhile), and
/// then the new leader dies, with writes and reads in flight throughout. Writes whose answer
/// was lost are read back and answered as what happened: not one request fails, nothing
/// acknowledged is lost, no update applies twice (`spec.n` counts each one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_leader_then_the_next_leader_killed_fails_no_request() {
    let cluster = three_members().await;
    // What is under test is that no request fails while the cluster can serve within its
    // budget. The budget is wide because the election after the kill is etcd's own: in CI, with
    // other tests' etcd clusters on the same two cores, one took over 10 s (every worker's
    // request in flight at the kill failed at its 10 s budget, the last saying "no leader").
    let (store, stores) = store_and_cacher(&cluster, Duration::from_secs(30)).await;

    let began = Instant::now();
    // The faults' timeline is printed, to read beside a failed request's time.
    let at = move |what: String| eprintln!("{:?}: {what}", began.elapsed());
    let faults = tokio::task::spawn_blocking(move || {
        let mut cluster = cluster;
        std::thread::sleep(Duration::from_secs(1));
        let stalled = leader(&cluster, None);
        cluster.member(stalled).pause();
        at(format!("paused the leader, member {stalled}"));
        std::thread::sleep(Duration::from_secs(4));
        cluster.member(stalled).resume();
        at(format!("resumed member {stalled}"));
        let next = leader(&cluster, Some(stalled));
        cluster.member_mut(next).stop();
        at(format!("killed the next leader, member {next}"));
        let last = leader(&cluster, Some(next));
        at(format!("member {last} leads"));
        cluster
    });
    let (model, requests) = workload(&stores, "faults", Duration::from_secs(10)).await;
    let _cluster = faults.await.expect("the faults ran");
    assert!(requests > 50, "only {requests} requests");
    assert_durable(&store, &model).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_member_down_fails_no_request() {
    let mut cluster = three_members().await;
    let (store, stores) = store_and_cacher(&cluster, Duration::from_secs(5)).await;
    let mut watch = store
        .watch("/widgets", ListOptions::recursive())
        .await
        .expect("watch");

    // One follower dies: nothing fails.
    let first = follower(&cluster, None);
    tokio::task::block_in_place(|| cluster.member_mut(first).stop());
    tokio::time::sleep(AFTER_KILL).await;
    let (model, requests) = workload(&stores, "down", PHASE).await;
    assert!(requests > 50, "only {requests} requests in {PHASE:?}");
    assert_durable(&store, &model).await;

    // It comes back, and the store sends it writes again.
    tokio::task::block_in_place(|| cluster.member_mut(first).restart()).expect("restart");
    let began = Instant::now();
    for round in 0.. {
        workload(&stores, &format!("back{round}"), Duration::from_millis(500)).await;
        if cluster.member(first).grpc_calls_handled("Txn") >= 10 {
            break;
        }
        assert!(
            began.elapsed() < Duration::from_secs(15),
            "the restarted member gets no writes"
        );
    }

    // Another member dies: nothing fails either.
    let second = follower(&cluster, Some(first));
    tokio::task::block_in_place(|| cluster.member_mut(second).stop());
    tokio::time::sleep(AFTER_KILL).await;
    let (model, _) = workload(&stores, "down-again", PHASE).await;
    assert_durable(&store, &model).await;

    // The watch opened before all this still delivers.
    store
        .create("/widgets/ns/marker", widget("marker"))
        .await
        .expect("create the marker");
    wait_for_added(&mut watch, "marker").await;
}

/// A single etcd killed under load and started again: writes meanwhile fail fast, and writes,
/// cached reads and the cache's watch serve again as soon as etcd does (issue figure:
/// 11 s; measured here: tens of milliseconds, printed). The bound is loose on purpose: it
/// catches a store that waits out a backoff or a budget, not a slow machine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_etcd_serves_again_at_once() {
    let mut etcd = EtcdServer::start_in_test().await;
    let store = Etcd3Store::connect(Etcd3Config::new(vec![etcd.endpoint()]))
        .await
        .expect("connect");
    let cacher = Cacher::new(Arc::new(store.clone()), "/widgets", CacherConfig::default())
        .expect("start the cacher");
    cacher.wait_until_ready().await;
    let began = Instant::now();
    let list = ListOptions::recursive();
    let mut watch = cacher.watch("/widgets", list).await.expect("watch");
    let (stop_watching, mut stop) = tokio::sync::oneshot::channel::<()>();
    let delivered = tokio::spawn(async move {
        let mut added = BTreeMap::new();
        loop {
            tokio::select! {
                _ = &mut stop => return added,
                event = watch.next() => match event {
                    Some(WatchEvent::Added(o)) => {
                        added.insert(o.name().unwrap_or_default().to_owned(), began.elapsed());
                    }
                    Some(_) => {}
                    None => return added,
                },
            }
        }
    });
    let writes = {
        let cacher = cacher.clone();
        tokio::spawn(async move {
            let mut answered = Vec::new();
            for i in 0.. {
                let name = format!("w{i}");
                let key = format!("/widgets/ns/{name}");
                let created = cacher.create(&key, widget(&name)).await.is_ok();
                let read = cacher.get(&key, GetOptions::default()).await.is_ok();
                answered.push((name, began.elapsed(), created && read));
                if began.elapsed() > Duration::from_secs(8) {
                    return answered;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            unreachable!()
        })
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    tokio::task::block_in_place(|| etcd.stop());
    tokio::time::sleep(Duration::from_secs(3)).await;
    tokio::task::block_in_place(|| etcd.restart()).expect("restart etcd");
    let ready = began.elapsed();
    let answered = writes.await.unwrap();
    // The last write's event has had time to arrive.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let _ = stop_watching.send(());
    let delivered = delivered.await.unwrap();
    let (name, served) = answered
        .iter()
        .find(|(_, at, ok)| *at > ready && *ok)
        .map(|(name, at, _)| (name.clone(), *at))
        .expect("a write and a read served after the restart");
    let seen = delivered
        .get(&name)
        .copied()
        .expect("the watch delivers it");
    eprintln!(
        "etcd ready at {ready:?}: write and cached read served {:?} later, watch delivered {:?} later",
        served - ready,
        seen.saturating_sub(ready)
    );
    assert!(
        served - ready < Duration::from_secs(3),
        "served {:?} after etcd",
        served - ready
    );
    assert!(
        seen < ready + Duration::from_secs(3),
        "delivered {seen:?}, etcd ready at {ready:?}"
    );
    assert!(answered
        .iter()
        .filter(|(_, at, _)| *at > served)
        .all(|(_, _, ok)| *ok));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_held_by_a_paused_member_is_answered_by_another_within_seconds() {
    let cluster = three_members().await;
    let mut config = Etcd3Config::new(cluster.endpoints());
    config.request_timeout = Duration::from_secs(10);
    let store = Etcd3Store::connect(config).await.expect("connect");
    store
        .create("/widgets/ns/w", widget("w"))
        .await
        .expect("create");
    // Every member's connection is made before one is paused (a connection to a paused member
    // would fail at its dial timeout instead: another path).
    for _ in 0..6 {
        store
            .get("/widgets/ns/w", GetOptions::default())
            .await
            .expect("get");
    }
    let paused = follower(&cluster, None);
    cluster.member(paused).pause();
    // Reads go round the members: some are sent to the paused one, which holds them without
    // failing them. Each is answered by another member within a couple of seconds, not after
    // its whole 10 s budget.
    for i in 0..6 {
        let began = Instant::now();
        store
            .get("/widgets/ns/w", GetOptions::default())
            .await
            .unwrap_or_else(|e| panic!("read {i}: {e}"));
        let took = began.elapsed();
        assert!(took < Duration::from_secs(3), "read {i} took {took:?}");
    }
    cluster.member(paused).resume();
}
