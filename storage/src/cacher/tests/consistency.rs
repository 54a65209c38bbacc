//! Consistent reads over etcd. Over one that cannot report progress in order (Debian's
//! 3.4.23), the cache proves itself current with one small transaction instead of listing etcd;
//! over one that can (≥ 3.4.31, 3.5.13; the suite runs these tests on both), it waits for a
//! progress notification. Either way no consistent read waits on another read's future.

use super::*;
use crate::etcd3::testing::EtcdServer;
use crate::etcd3::Etcd3Store;

/// A private etcd, a store on it, and a cacher over that store with `config`.
async fn etcd_cacher(config: CacherConfig) -> (EtcdServer, Arc<Etcd3Store>, Arc<Cacher>) {
    let etcd = EtcdServer::start_in_test().await;
    let below = Arc::new(etcd.connect_store().await);
    let cacher = cacher_over(below.clone(), config).await;
    (etcd, below, cacher)
}

/// Whether `etcd` reports progress in order, so consistent reads wait for its notifications
/// and never send proofs: the tests of proofs have nothing to check there.
async fn reports_progress(below: &Etcd3Store) -> bool {
    let ordered = below.request_watch_progress().await.unwrap();
    if ordered {
        eprintln!("this etcd reports progress in order: consistent reads send no proofs here");
    }
    ordered
}

/// Without read-your-writes, a consistent read cannot lean on the cacher's own writes: it
/// must prove the cache current (or fall back to etcd).
fn proving() -> CacherConfig {
    CacherConfig {
        read_your_writes: false,
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consistent_reads_prove_the_cache_current_without_listing_etcd() {
    let (etcd, below, cacher) = etcd_cacher(proving()).await;
    if reports_progress(&below).await {
        return;
    }
    for name in ["a", "b", "c"] {
        create(&*below, "ns", name).await;
    }
    // The first consistent read learns that this etcd cannot report progress (one revision
    // read); from then on only proofs go out.
    cacher.get_list(PREFIX, watch_opts("")).await.unwrap();
    let ranges_before = etcd.grpc_calls_handled("Range");
    let mut last_other = 0;
    for round in 0..20 {
        // Writes elsewhere move etcd's revision; no event of this prefix shows it.
        let other = format!("/other.io/things/ns/t{round}");
        last_other = rv(&below.create(&other, object("ns", "t")).await.unwrap());
        let list = cacher.get_list(PREFIX, watch_opts("")).await.unwrap();
        assert_eq!(names(&list), ["a", "b", "c"], "round {round}");
        assert!(
            list.resource_version >= last_other,
            "a consistent list is at etcd's revision: {} < {last_other}",
            list.resource_version
        );
    }
    let stats = cacher.stats();
    assert_eq!(stats.consistent_read_fallbacks, 0, "{stats:?}");
    assert_eq!(stats.delegated_reads, 0, "{stats:?}");
    assert!(stats.revision >= last_other);
    // The proofs are transactions: not one range read of the prefix reached etcd.
    assert_eq!(etcd.grpc_calls_handled("Range"), ranges_before);

    // Writes under the prefix behind the cacher's back are never missed, deletes included.
    for i in 0..15 {
        written_below_is_read(&*below, &cacher, "a", 100 + i).await;
        let name = format!("n{i:02}");
        create(&*below, "ns", &name).await;
        let list = cacher.get_list(PREFIX, watch_opts("")).await.unwrap();
        assert!(names(&list).contains(&name), "create {name} missed");
        below
            .delete(&key("ns", &name), ConditionalDelete::default())
            .await
            .unwrap();
        let list = cacher.get_list(PREFIX, watch_opts("")).await.unwrap();
        assert!(!names(&list).contains(&name), "delete of {name} missed");
    }
}

/// A consistent read whose future is kept but no longer polled — a follower's list paused
/// inside `tokio::select!` while its task awaits something else, as the cluster
/// authentication trust controller's was — holds up no other consistent read of the resource.
/// It used to hold the probe every consistent read waits for, and on etcd ≥ 3.5.13 a secure
/// host's ConfigMaps stopped answering consistent reads from its first minute on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_consistent_read_holds_up_no_other() {
    let (_etcd, below, cacher) = etcd_cacher(proving()).await;
    create(&*below, "ns", "a").await;
    let mut paused = Box::pin(cacher.get_list(PREFIX, watch_opts("")));
    // One poll sends its probe to etcd, which cannot have answered yet.
    assert!(futures::poll!(&mut paused).is_pending());
    for round in 0..3 {
        let list = tokio::time::timeout(
            Duration::from_secs(5),
            cacher.get_list(PREFIX, watch_opts("")),
        )
        .await
        .unwrap_or_else(|_| panic!("round {round}: a consistent read waited for a paused one"))
        .unwrap();
        assert_eq!(names(&list), ["a"]);
        let got = tokio::time::timeout(
            Duration::from_secs(5),
            cacher.get(&key("ns", "a"), GetOptions::default()),
        )
        .await
        .unwrap_or_else(|_| panic!("round {round}: a consistent get waited for a paused read"))
        .unwrap();
        assert!(got.is_some());
    }
    // Polled again, the paused read completes too.
    let list = tokio::time::timeout(Duration::from_secs(5), paused)
        .await
        .expect("the paused read completes once polled")
        .unwrap();
    assert_eq!(names(&list), ["a"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_consistent_reads_share_proofs() {
    let (etcd, below, cacher) = etcd_cacher(CacherConfig::default()).await;
    if reports_progress(&below).await {
        return;
    }
    create(&*below, "ns", "a").await;
    cacher.get_list(PREFIX, watch_opts("")).await.unwrap();
    let txns_before = etcd.grpc_calls_handled("Txn");
    let reads = 200;
    let lists = (0..reads).map(|_| {
        let cacher = cacher.clone();
        tokio::spawn(async move { cacher.get_list(PREFIX, watch_opts("")).await.unwrap() })
    });
    for list in futures::future::join_all(lists).await {
        assert_eq!(list.unwrap().items.len(), 1);
    }
    let proofs = etcd.grpc_calls_handled("Txn") - txns_before;
    assert!(proofs >= 1, "the reads were not proven at all");
    assert!(
        proofs < reads / 2,
        "{reads} concurrent reads sent {proofs} proofs: they should share them"
    );
    assert_eq!(cacher.stats().consistent_read_fallbacks, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consistent_gets_and_pages_read_only_what_they_return() {
    let (etcd, below, cacher) = etcd_cacher(proving()).await;
    for i in 0..20 {
        let name = format!("o{i:02}");
        create(&*below, "ns", &name).await;
    }
    let page_opts = ListOptions {
        limit: 5,
        ..watch_opts("")
    };
    // Learns once that this etcd cannot report progress in order.
    cacher.get_list(PREFIX, page_opts.clone()).await.unwrap();
    let txns_before = etcd.grpc_calls_handled("Txn");
    for i in 0..10 {
        // Each write lands behind the cacher's back: a consistent read must still see it.
        written_below_is_read(&*below, &cacher, "o03", 100 + i).await;
        let page = cacher.get_list(PREFIX, page_opts.clone()).await.unwrap();
        assert_eq!(
            names(&page),
            ["o00", "o01", "o02", "o03", "o04"],
            "round {i}"
        );
        assert_eq!(
            page.items[3].to_value()["spec"]["size"],
            json!(100 + i),
            "a consistent page shows the latest write"
        );
        assert!(page.continue_token.is_some());
    }
    // No read proved the whole prefix unchanged (a transaction that makes etcd read every key
    // and value under it): each read only what it returned.
    assert_eq!(
        etcd.grpc_calls_handled("Txn") - txns_before,
        10,
        "only the updates"
    );
}
