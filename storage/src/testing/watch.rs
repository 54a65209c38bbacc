//! Conformance cases for watch.

use std::collections::BTreeSet;
use std::time::Duration;

use futures::StreamExt;
use serde_json::json;

use super::fixtures::{
    create, delete, expect_event, expect_silence, key, next_event, ns_key, object,
    object_with_labels, rv, update_size, watch_from, watch_ns,
};
use super::TestStore;
use crate::{GuaranteedUpdate, LabelSelector, ListOptions, SelectionPredicate, WatchEvent};

/// A watch sees ADDED, MODIFIED and DELETED in order; DELETED carries the deletion revision.
pub(super) async fn run_watch_added_modified_deleted(s: TestStore) {
    let store = &*s.storage;
    let start = store.current_revision().await.unwrap();
    let mut w = watch_ns(store, "ns", start).await;
    let created = create(store, "ns", "a").await;
    let updated = update_size(store, &key("ns", "a"), 2).await;
    let deleted = delete(store, &key("ns", "a")).await;
    assert_eq!(
        expect_event(next_event(&mut w).await, "ADDED", "a"),
        created
    );
    assert_eq!(
        expect_event(next_event(&mut w).await, "MODIFIED", "a"),
        updated
    );
    let gone = expect_event(next_event(&mut w).await, "DELETED", "a");
    assert_eq!(rv(&gone), rv(&deleted));
    assert!(rv(&gone) > rv(&updated));
    expect_silence(&mut w, Duration::from_millis(200)).await;
}

/// A watch from "0" (or "") first replays the current objects as ADDED.
pub(super) async fn run_watch_from_zero_replays_state(s: TestStore) {
    let store = &*s.storage;
    create(store, "ns", "a").await;
    create(store, "ns", "b").await;
    delete(store, &key("ns", "b")).await;
    let a = update_size(store, &key("ns", "a"), 3).await;
    for from in ["0", ""] {
        let opts = ListOptions {
            resource_version: from.into(),
            recursive: true,
            ..Default::default()
        };
        let mut w = store.watch(&ns_key("ns"), opts).await.unwrap();
        assert_eq!(expect_event(next_event(&mut w).await, "ADDED", "a"), a);
        expect_silence(&mut w, Duration::from_millis(200)).await;
        let name = from_name(from);
        let c = store
            .create(&key("ns", name), object("ns", name))
            .await
            .unwrap();
        assert_eq!(
            expect_event(next_event(&mut w).await, "ADDED", from_name(from)),
            c
        );
        delete(store, &key("ns", from_name(from))).await;
    }
}

fn from_name(from: &str) -> &'static str {
    if from.is_empty() {
        "from-empty"
    } else {
        "from-zero"
    }
}

/// A watch from N sees exactly the changes after N.
pub(super) async fn run_watch_from_revision_sees_only_later(s: TestStore) {
    let store = &*s.storage;
    let a = create(store, "ns", "a").await;
    let a2 = update_size(store, &key("ns", "a"), 2).await;
    let b = create(store, "ns", "b").await;
    let mut w = watch_ns(store, "ns", rv(&a)).await;
    assert_eq!(expect_event(next_event(&mut w).await, "MODIFIED", "a"), a2);
    assert_eq!(expect_event(next_event(&mut w).await, "ADDED", "b"), b);
    expect_silence(&mut w, Duration::from_millis(200)).await;
}

/// A watch from a compacted revision fails with Expired, up front or as its only event.
pub(super) async fn run_watch_compacted(s: TestStore) {
    let store = &*s.storage;
    let a = create(store, "ns", "a").await;
    update_size(store, &key("ns", "a"), 2).await;
    let b = update_size(store, &key("ns", "a"), 3).await;
    (s.compact)(rv(&b)).await.unwrap();
    match store.watch(&ns_key("ns"), watch_from(rv(&a), true)).await {
        Err(e) => assert!(e.is_expired(), "{e}"),
        Ok(mut w) => match next_event(&mut w).await {
            WatchEvent::Error(e) => assert!(e.is_expired(), "{e}"),
            other => panic!("expected an Expired error, got {other:?}"),
        },
    }
    // From the compaction revision itself the watch still works.
    let mut w = watch_ns(store, "ns", rv(&b)).await;
    let c = update_size(store, &key("ns", "a"), 4).await;
    assert_eq!(expect_event(next_event(&mut w).await, "MODIFIED", "a"), c);
}

/// Watches are scoped: by namespace prefix, and a single-key watch of `a` ignores `ab`.
pub(super) async fn run_watch_scoping(s: TestStore) {
    let store = &*s.storage;
    let start = store.current_revision().await.unwrap();
    let mut ns1 = watch_ns(store, "n1", start).await;
    let mut single = store
        .watch(&key("n1", "a"), watch_from(start, false))
        .await
        .unwrap();
    create(store, "n2", "a").await;
    create(store, "n1", "ab").await;
    let a = create(store, "n1", "a").await;
    expect_event(next_event(&mut ns1).await, "ADDED", "ab");
    expect_event(next_event(&mut ns1).await, "ADDED", "a");
    assert_eq!(expect_event(next_event(&mut single).await, "ADDED", "a"), a);
    expect_silence(&mut ns1, Duration::from_millis(200)).await;
    expect_silence(&mut single, Duration::from_millis(100)).await;
}

/// With a label selector, an object that starts matching is ADDED and one that stops is DELETED.
pub(super) async fn run_watch_predicate_transitions(s: TestStore) {
    let store = &*s.storage;
    let start = store.current_revision().await.unwrap();
    let mut opts = watch_from(start, true);
    opts.predicate = SelectionPredicate {
        label: LabelSelector::parse("tier=web").unwrap(),
        ..Default::default()
    };
    let mut w = store.watch(&ns_key("ns"), opts).await.unwrap();
    let k = key("ns", "a");
    store
        .create(&k, object_with_labels("ns", "a", json!({"tier": "db"})))
        .await
        .unwrap();
    let relabel = |tier: &'static str| -> crate::TryUpdate<'static> {
        Box::new(move |cur| {
            Box::pin(async move {
                let mut o = cur.ok_or("missing")?;
                o["metadata"]["labels"]["tier"] = json!(tier);
                Ok(o)
            })
        })
    };
    let on = store
        .guaranteed_update(&k, GuaranteedUpdate::new(relabel("web")))
        .await
        .unwrap();
    let on2 = update_size(store, &k, 7).await;
    let off = store
        .guaranteed_update(&k, GuaranteedUpdate::new(relabel("db")))
        .await
        .unwrap();
    assert_eq!(expect_event(next_event(&mut w).await, "ADDED", "a"), on);
    assert_eq!(expect_event(next_event(&mut w).await, "MODIFIED", "a"), on2);
    let gone = expect_event(next_event(&mut w).await, "DELETED", "a");
    assert_eq!(rv(&gone), rv(&off));
    expect_silence(&mut w, Duration::from_millis(200)).await;
}

/// A watcher that never reads does not hold up another watcher or the writers.
pub(super) async fn run_watch_slow_reader_blocks_nobody(s: TestStore) {
    let store = &*s.storage;
    let start = store.current_revision().await.unwrap();
    let _stalled = watch_ns(store, "ns", start).await;
    let mut reader = watch_ns(store, "ns", start).await;
    let writes = 300;
    let writer = async {
        for i in 0..writes {
            let name = format!("o{i:04}");
            store
                .create(&key("ns", &name), object("ns", &name))
                .await
                .unwrap();
        }
    };
    let read = async {
        for i in 0..writes {
            expect_event(next_event(&mut reader).await, "ADDED", &format!("o{i:04}"));
        }
    };
    tokio::join!(writer, read);
}

/// Dropping a watch ends it cleanly: the store keeps serving writes and new watches.
pub(super) async fn run_watch_cancel_closes_cleanly(s: TestStore) {
    let store = &*s.storage;
    for _ in 0..20 {
        let w = watch_ns(store, "ns", 0).await;
        drop(w);
    }
    let start = store.current_revision().await.unwrap();
    let mut w = watch_ns(store, "ns", start).await;
    let a = create(store, "ns", "a").await;
    assert_eq!(expect_event(next_event(&mut w).await, "ADDED", "a"), a);
}

/// Under concurrent writers, every watcher sees every committed revision once, in order.
pub(super) async fn run_watch_concurrent_writers_in_order(s: TestStore) {
    let storage = s.storage.clone();
    let start = storage.current_revision().await.unwrap();
    let mut watchers = Vec::new();
    for _ in 0..3 {
        watchers.push(watch_ns(&*storage, "ns", start).await);
    }
    let mut writers = Vec::new();
    for w in 0..4 {
        let storage = storage.clone();
        writers.push(tokio::spawn(async move {
            let mut revs = Vec::new();
            for i in 0..25 {
                let name = format!("w{w}-{i}");
                let obj = storage
                    .create(&key("ns", &name), object("ns", &name))
                    .await
                    .unwrap();
                revs.push(rv(&obj));
                if i % 3 == 0 {
                    revs.push(rv(&update_size(&*storage, &key("ns", &name), 2).await));
                }
                if i % 5 == 0 {
                    revs.push(rv(&delete(&*storage, &key("ns", &name)).await));
                }
            }
            revs
        }));
    }
    let mut committed = BTreeSet::new();
    for w in writers {
        committed.extend(w.await.unwrap());
    }
    let committed: Vec<u64> = committed.into_iter().collect();
    for mut w in watchers {
        let mut seen = Vec::new();
        while seen.len() < committed.len() {
            let event = next_event(&mut w).await;
            seen.push(event.revision().expect("revision"));
        }
        assert_eq!(seen, committed, "every revision once, in order");
        expect_silence(&mut w, Duration::from_millis(100)).await;
    }
}

/// A store that answers progress requests sends a bookmark at its current revision to a
/// bookmark-allowing watch, even when the writes since were under other keys.
pub(super) async fn run_watch_progress_request(s: TestStore) {
    let store = &*s.storage;
    let start = store.current_revision().await.unwrap();
    let mut opts = watch_from(start, true);
    opts.allow_bookmarks = true;
    let mut w = store.watch(&ns_key("quiet"), opts).await.unwrap();
    create(store, "busy", "a").await;
    let target = store.current_revision().await.unwrap();
    if !store.request_watch_progress().await.unwrap() {
        return; // Periodic progress only: nothing to check on demand.
    }
    // Sooner than any periodic report (about once a second), so this sees the answer. etcd
    // drops a progress request while a watch is still catching up (a watch from a past
    // revision is, until its next sync pass), so the request is repeated, as the cacher does.
    let deadline = tokio::time::Instant::now() + Duration::from_millis(700);
    loop {
        let retry = tokio::time::Instant::now() + Duration::from_millis(100);
        match tokio::time::timeout_at(retry.min(deadline), w.next()).await {
            Ok(Some(WatchEvent::Bookmark(rev))) if rev.revision() >= target => return,
            Ok(Some(WatchEvent::Bookmark(_))) => {}
            Ok(other) => panic!("unexpected {other:?}"),
            Err(_) if tokio::time::Instant::now() >= deadline => {
                panic!("no bookmark at {target} within 700ms")
            }
            Err(_) => {}
        }
        store.request_watch_progress().await.unwrap();
    }
}
