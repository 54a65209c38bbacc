//! Tests of what only the embedded store has: durability across reopen, the directory lock,
//! compaction, group commit, and watchers catching up from disk.

use std::time::Duration;

use futures::StreamExt;
use serde_json::{json, Value};

use super::{EmbeddedConfig, EmbeddedStore};
use crate::predicate::LabelSelector;
use crate::testing::{exact, modify, rv};
use crate::{
    ConditionalDelete, GetOptions, ListOptions, SelectionPredicate, Storage, WatchEvent,
    WatchStream,
};

fn obj(name: &str, label: &str) -> Value {
    json!({"metadata": {"name": name, "labels": {"l": label}}, "spec": {}})
}

/// The store's config for `dir`, background compaction off: tests compact when they mean to.
fn config(dir: &std::path::Path) -> EmbeddedConfig {
    let mut config = EmbeddedConfig::new(dir);
    config.compaction_interval = None;
    config
}

async fn open(dir: &std::path::Path) -> EmbeddedStore {
    EmbeddedStore::open(config(dir)).await.expect("open")
}

/// Reopens the store in `dir` and checks `/w/a` is still there, closing the store again.
async fn reopen_and_find_a(dir: &std::path::Path) {
    let store = open(dir).await;
    assert!(store
        .get("/w/a", GetOptions::default())
        .await
        .unwrap()
        .is_some());
}

/// Sets the object's label `l`.
async fn update(store: &EmbeddedStore, key: &str, label: &str) -> Value {
    modify(store, key, |o| o["metadata"]["labels"]["l"] = json!(label)).await
}

async fn next(w: &mut WatchStream) -> WatchEvent {
    tokio::time::timeout(Duration::from_secs(5), w.next())
        .await
        .expect("event in time")
        .expect("stream open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_survives_reopen_with_the_same_revisions() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, rev_before) = {
        let store = open(dir.path()).await;
        assert_eq!(store.current_revision().await.unwrap(), 1);
        let a = store.create("/w/a", obj("a", "1")).await.unwrap();
        store.create("/w/b", obj("b", "1")).await.unwrap();
        let b = update(&store, "/w/b", "2").await;
        store.create("/w/c", obj("c", "1")).await.unwrap();
        store
            .delete("/w/c", ConditionalDelete::default())
            .await
            .unwrap();
        (a, b, store.current_revision().await.unwrap())
    };
    assert_eq!(rev_before, 6);
    let store = open(dir.path()).await;
    assert_eq!(store.current_revision().await.unwrap(), rev_before);
    let got = store.get("/w/a", GetOptions::default()).await.unwrap();
    assert_eq!(got.as_ref(), Some(&a));
    let got = store.get("/w/b", GetOptions::default()).await.unwrap();
    assert_eq!(got.as_ref(), Some(&b));
    assert!(store
        .get("/w/c", GetOptions::default())
        .await
        .unwrap_err()
        .is_not_found());
    // History survived too: the state at revision 3 had b's first version.
    let list = store.get_list("/w", exact(3)).await.unwrap();
    assert_eq!(list.resource_version, 3);
    assert_eq!(list.items.len(), 2);
    assert_eq!(list.items[1].label("l"), Some("1"));
    // The next write continues the revision sequence.
    let d = store.create("/w/d", obj("d", "1")).await.unwrap();
    assert_eq!(rv(&d), rev_before + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_open_of_the_same_directory_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let first = open(dir.path()).await;
    let err = EmbeddedStore::open(EmbeddedConfig::new(dir.path()))
        .await
        .unwrap_err();
    assert!(err.is_unavailable(), "{err}");
    assert!(
        err.to_string().contains(&dir.path().display().to_string()),
        "{err}"
    );
    drop(first);
    // Once closed, the directory opens again.
    open(dir.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_expires_old_revisions_but_keeps_the_compacted_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path()).await;
    let a1 = store.create("/w/a", obj("a", "1")).await.unwrap();
    store.create("/w/gone", obj("gone", "1")).await.unwrap();
    let a2 = update(&store, "/w/a", "2").await;
    store
        .delete("/w/gone", ConditionalDelete::default())
        .await
        .unwrap();
    let at = store.current_revision().await.unwrap();
    let a3 = update(&store, "/w/a", "3").await;
    store.compact(at).await.unwrap();
    assert_eq!(store.compacted_revision(), at);

    let err = store.get_list("/w", exact(at - 1)).await.unwrap_err();
    assert!(err.is_expired(), "{err}");
    let list = store.get_list("/w", exact(at)).await.unwrap();
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.items[0].to_value(), a2);
    let opts = ListOptions {
        resource_version: (at - 1).to_string(),
        recursive: true,
        ..Default::default()
    };
    assert!(store.watch("/w", opts).await.err().unwrap().is_expired());

    // A watch from the compacted revision still sees every later change, with its previous
    // state intact.
    let opts = ListOptions {
        resource_version: at.to_string(),
        recursive: true,
        ..Default::default()
    };
    let mut w = store.watch("/w", opts).await.unwrap();
    match next(&mut w).await {
        WatchEvent::Modified(o) => assert_eq!(o.to_value(), a3),
        other => panic!("{other:?}"),
    }
    // Compacting backwards does nothing; beyond the current revision is refused.
    store.compact(1).await.unwrap();
    assert_eq!(store.compacted_revision(), at);
    let future = store.current_revision().await.unwrap() + 10;
    assert!(store.compact(future).await.is_err());
    drop(w);
    drop(store);
    let store = open(dir.path()).await;
    assert_eq!(store.compacted_revision(), at);
    assert!(rv(&a1) < at);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_are_grouped_and_all_get_distinct_revisions() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path()).await;
    let start = store.current_revision().await.unwrap();
    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let key = format!("/w/ns/o{i}");
                rv(&store.create(&key, obj(&key, "x")).await.unwrap())
            })
        })
        .collect();
    let mut revs = Vec::new();
    for t in tasks {
        revs.push(t.await.unwrap());
    }
    revs.sort_unstable();
    revs.dedup();
    assert_eq!(revs.len(), 64);
    assert_eq!(revs.first(), Some(&(start + 1)));
    assert_eq!(store.current_revision().await.unwrap(), start + 64);
    assert_eq!(store.count("/w").await.unwrap(), 64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lagging_watcher_catches_up_from_disk_without_gaps() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path()).await;
    store.create("/w/seed", obj("seed", "1")).await.unwrap();
    let mut w = store.watch("/w", ListOptions::recursive()).await.unwrap();
    assert!(matches!(next(&mut w).await, WatchEvent::Added(_)));
    // Far more commits than the broadcast holds (16 under test), while nobody reads.
    let n = 400u64;
    let mut handles = Vec::new();
    for chunk in 0..8 {
        let store = store.clone();
        handles.push(tokio::spawn(async move {
            for i in 0..n / 8 {
                let key = format!("/w/o{chunk}-{i}");
                store.create(&key, obj("o", "1")).await.unwrap();
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    let mut seen = Vec::new();
    while seen.len() < n as usize {
        match next(&mut w).await {
            WatchEvent::Added(o) => seen.push(rv(&o.to_value())),
            other => panic!("{other:?}"),
        }
    }
    let sorted = {
        let mut s = seen.clone();
        s.sort_unstable();
        s.dedup();
        s
    };
    assert_eq!(seen, sorted, "in order, no duplicates");
    assert_eq!(seen.first(), Some(&3));
    assert_eq!(seen.last(), Some(&(2 + n)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_stay_consistent_and_selective_limits_find_sparse_matches() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path()).await;
    for i in 0..30 {
        let label = if i == 17 { "yes" } else { "no" };
        store
            .create(&format!("/w/o{i:02}"), obj(&format!("o{i:02}"), label))
            .await
            .unwrap();
    }
    let selective = ListOptions {
        recursive: true,
        limit: 1,
        predicate: SelectionPredicate {
            label: LabelSelector::parse("l=yes").unwrap(),
            ..Default::default()
        },
        ..Default::default()
    };
    let page = store.get_list("/w", selective).await.unwrap();
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.items[0].name(), Some("o17"));

    let mut opts = ListOptions {
        recursive: true,
        limit: 10,
        ..Default::default()
    };
    let first = store.get_list("/w", opts.clone()).await.unwrap();
    assert_eq!(first.items.len(), 10);
    assert_eq!(first.remaining_item_count, Some(20));
    // Writes after the first page do not show in later pages.
    update(&store, "/w/o15", "changed").await;
    store.create("/w/o99", obj("o99", "no")).await.unwrap();
    let mut names = Vec::new();
    opts.continue_token = first.continue_token.clone();
    loop {
        let page = store.get_list("/w", opts.clone()).await.unwrap();
        assert_eq!(page.resource_version, first.resource_version);
        for item in &page.items {
            assert_ne!(item.label("l"), Some("changed"));
            names.push(item.name().unwrap().to_string());
        }
        match page.continue_token {
            Some(t) => opts.continue_token = Some(t),
            None => break,
        }
    }
    assert_eq!(names.len(), 20);
    assert!(!names.contains(&"o99".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_watchers_get_bookmarks_and_future_revisions_wait() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path()).await;
    store.create("/w/a", obj("a", "1")).await.unwrap();
    let opts = ListOptions {
        resource_version: "2".into(),
        recursive: true,
        allow_bookmarks: true,
        ..Default::default()
    };
    let mut w = store.watch("/w", opts).await.unwrap();
    assert!(matches!(next(&mut w).await, WatchEvent::Bookmark(b) if b.revision() == 2));
    // A watch from a future revision waits for it.
    let opts = ListOptions {
        resource_version: "3".into(),
        recursive: true,
        ..Default::default()
    };
    let mut w = store.watch("/w", opts).await.unwrap();
    store.create("/w/b", obj("b", "1")).await.unwrap();
    let c = store.create("/w/c", obj("c", "1")).await.unwrap();
    match next(&mut w).await {
        WatchEvent::Added(o) => assert_eq!(o.to_value(), c),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn automatic_compaction_trails_one_interval_behind() {
    let dir = tempfile::tempdir().unwrap();
    let mut compacting = EmbeddedConfig::new(dir.path());
    compacting.compaction_interval = Some(Duration::from_millis(100));
    let store = EmbeddedStore::open(compacting).await.unwrap();
    for i in 0..5 {
        store
            .create(&format!("/w/o{i}"), obj("o", "1"))
            .await
            .unwrap();
    }
    let written = store.current_revision().await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while store.compacted_revision() < written {
        assert!(std::time::Instant::now() < deadline, "never compacted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(store.count("/w").await.unwrap(), 5);
    // The background task lets go of the store: the directory reopens. A compaction step that
    // began before the drop holds the store until it ends, so the first attempts may find the
    // database still open (this test once failed on exactly that).
    drop(store);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while let Err(e) = EmbeddedStore::open(config(dir.path())).await {
        assert!(std::time::Instant::now() < deadline, "never let go: {e}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Sets (or with `None` removes) the store's format version, as another build would have left.
fn stamp_format(dir: &std::path::Path, version: Option<u64>) {
    let db = redb::Database::create(dir.join(super::DB_FILE)).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut meta = txn.open_table(super::schema::META).unwrap();
        match version {
            Some(v) => meta.insert(super::schema::FORMAT, v).map(drop),
            None => meta.remove(super::schema::FORMAT).map(drop),
        }
        .unwrap();
    }
    txn.commit().unwrap();
}

#[tokio::test]
async fn the_on_disk_format_is_checked_at_open_older_migrated_newer_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path()).await;
    store.create("/w/a", obj("a", "x")).await.unwrap();
    drop(store);
    // A store from before the format was versioned opens and is stamped.
    stamp_format(dir.path(), None);
    reopen_and_find_a(dir.path()).await;
    // One of a newer format is refused, saying so, and left untouched.
    stamp_format(dir.path(), Some(super::schema::FORMAT_VERSION + 1));
    let err = EmbeddedStore::open(config(dir.path()))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("newer than this strategy-host reads"), "{err}");
    stamp_format(dir.path(), Some(super::schema::FORMAT_VERSION));
    reopen_and_find_a(dir.path()).await;
}
