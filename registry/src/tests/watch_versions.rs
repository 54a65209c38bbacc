//! Watches at another version than the stored one: events converted as they come, shared by
//! the watchers of one version, initial events converted together, and Kubernetes' bookmarks.

use super::*;

#[tokio::test]
async fn watch_events_come_at_the_requested_version_with_kubernetes_bookmarks() {
    use futures::StreamExt as _;
    let dir = tempfile::tempdir().unwrap();
    let (_registry, things) = served_things(dir.path()).await;
    let opts = || strategy_host_storage::ListOptions {
        send_initial_events: true,
        allow_bookmarks: true,
        ..Default::default()
    };
    let mut at_v1 = things.store.watch(&scope("v1"), opts()).await.unwrap();
    let mut at_v2 = things.store.watch(&scope("v2"), opts()).await.unwrap();
    for w in [&mut at_v1, &mut at_v2] {
        match w.next().await.unwrap() {
            strategy_host_storage::WatchEvent::Bookmark(b) => {
                assert_eq!(b.kind(), Some("Thing"));
                assert_eq!(
                    b.to_value()["metadata"]["annotations"]["k8s.io/initial-events-end"],
                    "true"
                );
            }
            other => panic!("the end of the (empty) initial events first: {other:?}"),
        }
    }
    let obj = json!({"apiVersion": "test.io/v1", "kind": "Thing", "metadata": {"name": "a"}, "spec": {"size": 1}});
    things.store.create(&scope("v1"), obj).await.unwrap();
    assert_eq!(
        next_added(&mut at_v1).await.api_version(),
        Some("test.io/v1")
    );
    assert_eq!(
        next_added(&mut at_v2).await.api_version(),
        Some("test.io/v2")
    );
}

/// The next ADDED object of `w`, checking that later bookmarks are not annotated.
async fn next_added(
    w: &mut strategy_host_storage::WatchStream,
) -> Arc<strategy_host_storage::SharedObject> {
    use futures::StreamExt as _;
    loop {
        match w.next().await.unwrap() {
            strategy_host_storage::WatchEvent::Added(o) => return o,
            strategy_host_storage::WatchEvent::Bookmark(b) => assert!(
                b.to_value()["metadata"].get("annotations").is_none(),
                "only the first bookmark is annotated"
            ),
            other => panic!("{other:?}"),
        }
    }
}

/// Things served from `dir` by a strategy that converts between the versions (and counts
/// its conversions): the registry, the things and the strategy.
async fn converting_things(
    dir: &std::path::Path,
) -> (Arc<Registry>, crate::ServedResource, Arc<TestStrategy>) {
    let strategy = Arc::new(TestStrategy {
        converting: true,
        ..Default::default()
    });
    let (registry, things) = serve_things(dir, crd(), strategy.clone()).await;
    (registry, things, strategy)
}

#[tokio::test]
async fn watchers_at_another_version_share_each_events_conversion() {
    use futures::StreamExt as _;
    let dir = tempfile::tempdir().unwrap();
    let (_registry, things, strategy) = converting_things(dir.path()).await;
    let mut watches = Vec::new();
    for _ in 0..5 {
        let opts = strategy_host_storage::ListOptions::default();
        watches.push(things.store.watch(&scope("v2"), opts).await.unwrap());
    }
    // Written at v2: converted to v1 to be stored, and back for the answer.
    let obj = json!({"apiVersion": "test.io/v2", "kind": "Thing", "metadata": {"name": "a"},
                     "spec": {"count": 3}});
    let created = things.store.create(&scope("v2"), obj).await.unwrap();
    assert_eq!(created.object["spec"], json!({"count": 3, "stamped": true}));
    let stored = things
        .store
        .get(&scope("v1"), "a", Default::default())
        .await
        .unwrap();
    assert_eq!(stored["spec"]["size"], 3);
    let before = strategy.converted.load(Ordering::SeqCst);
    for watch in &mut watches {
        let event = tokio::time::timeout(Duration::from_secs(5), watch.next())
            .await
            .unwrap()
            .unwrap();
        let strategy_host_storage::WatchEvent::Added(o) = event else {
            panic!("{event:?}")
        };
        assert_eq!(o.to_value()["spec"]["count"], 3);
        assert_eq!(o.api_version(), Some("test.io/v2"));
    }
    assert_eq!(
        strategy.converted.load(Ordering::SeqCst),
        before + 1,
        "five watchers, one conversion"
    );
}

#[tokio::test]
async fn a_watchs_initial_events_are_converted_together() {
    use futures::StreamExt as _;
    let dir = tempfile::tempdir().unwrap();
    let (_registry, things, strategy) = converting_things(dir.path()).await;
    for i in 0..50 {
        let obj = json!({"apiVersion": "test.io/v1", "kind": "Thing",
                         "metadata": {"name": format!("t{i}")}, "spec": {"size": 1}});
        things.store.create(&scope("v1"), obj).await.unwrap();
    }
    let calls = strategy.convert_calls.load(Ordering::SeqCst);
    let opts = strategy_host_storage::ListOptions {
        send_initial_events: true,
        allow_bookmarks: true,
        ..Default::default()
    };
    let mut watch = things.store.watch(&scope("v2"), opts).await.unwrap();
    let mut added = 0;
    while added < 50 {
        let event = tokio::time::timeout(Duration::from_secs(5), watch.next())
            .await
            .unwrap()
            .unwrap();
        if let strategy_host_storage::WatchEvent::Added(o) = event {
            assert_eq!(o.to_value()["spec"]["count"], 1);
            added += 1;
        }
    }
    let used = strategy.convert_calls.load(Ordering::SeqCst) - calls;
    assert!(used <= 2, "50 initial events took {used} conversion calls");
}
