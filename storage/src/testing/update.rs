//! Conformance cases for guaranteed_update.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::json;

use std::time::Duration;

use super::fixtures::{
    create, expect_silence, get, key, object, rv, set_size, update_size, watch_from,
};
use super::TestStore;
use crate::{GuaranteedUpdate, Preconditions, TryUpdate};

/// Updating a missing object is NotFound.
pub(super) async fn run_update_not_found(s: TestStore) {
    let store = &*s.storage;
    let err = store
        .guaranteed_update(&key("ns", "a"), GuaranteedUpdate::new(set_size(2)))
        .await
        .unwrap_err();
    assert!(err.is_not_found(), "{err}");
    assert!(get(store, &key("ns", "a")).await.unwrap().is_none());
}

/// With ignore_not_found, the callback sees no object and its result is created.
pub(super) async fn run_update_creates_when_ignore_not_found(s: TestStore) {
    let store = &*s.storage;
    let create: TryUpdate<'static> = Box::new(|current| {
        Box::pin(async move {
            assert!(current.is_none());
            Ok(object("ns", "a"))
        })
    });
    let created = store
        .guaranteed_update(
            &key("ns", "a"),
            GuaranteedUpdate::new(create).ignore_not_found(true),
        )
        .await
        .unwrap();
    assert_eq!(get(store, &key("ns", "a")).await.unwrap().unwrap(), created);
}

/// An update that changes nothing writes nothing: same resourceVersion, no event.
pub(super) async fn run_update_no_op_writes_nothing(s: TestStore) {
    let store = &*s.storage;
    let created = create(store, "ns", "a").await;
    // The store's revision is shared with other keys (and other cases on a shared etcd), so
    // "nothing written" is checked on this key: its watch stays silent.
    let mut w = store
        .watch(&key("ns", "a"), watch_from(rv(&created), false))
        .await
        .unwrap();
    let same = update_size(store, &key("ns", "a"), 1).await;
    assert_eq!(rv(&same), rv(&created));
    expect_silence(&mut w, Duration::from_millis(300)).await;
    assert_eq!(get(store, &key("ns", "a")).await.unwrap().unwrap(), created);
}

/// A real change gets a new, larger resourceVersion and is visible to reads.
pub(super) async fn run_update_writes_new_revision(s: TestStore) {
    let store = &*s.storage;
    let created = create(store, "ns", "a").await;
    let updated = update_size(store, &key("ns", "a"), 5).await;
    assert!(rv(&updated) > rv(&created));
    assert_eq!(updated["spec"]["size"], 5);
    assert_eq!(get(store, &key("ns", "a")).await.unwrap().unwrap(), updated);
}

/// Concurrent read-modify-write updates all land: none is lost to a conflict.
pub(super) async fn run_update_retries_on_conflict(s: TestStore) {
    let storage = s.storage.clone();
    create(&*storage, "ns", "a").await;
    let workers = 8;
    let per_worker = 5;
    let mut tasks = Vec::new();
    for _ in 0..workers {
        let storage = storage.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..per_worker {
                let increment: TryUpdate<'static> = Box::new(|current| {
                    Box::pin(async move {
                        let mut obj = current.ok_or("missing")?;
                        let n = obj["spec"]["count"].as_u64().unwrap_or(0);
                        obj["spec"]["count"] = json!(n + 1);
                        Ok(obj)
                    })
                });
                storage
                    .guaranteed_update(&key("ns", "a"), GuaranteedUpdate::new(increment))
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let obj = get(&*storage, &key("ns", "a")).await.unwrap().unwrap();
    assert_eq!(obj["spec"]["count"], workers * per_worker);
}

/// A stale cached object is only a hint: the callback ends up applied to the fresh state.
pub(super) async fn run_update_rereads_stale_hint(s: TestStore) {
    let store = &*s.storage;
    let stale = create(store, "ns", "a").await;
    update_size(store, &key("ns", "a"), 9).await;
    let calls = Arc::new(AtomicUsize::new(0));
    let calls_in = calls.clone();
    let add_label: TryUpdate<'static> = Box::new(move |current| {
        calls_in.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            let mut obj = current.ok_or("missing")?;
            obj["metadata"]["labels"]["touched"] = json!("yes");
            Ok(obj)
        })
    });
    let out = store
        .guaranteed_update(
            &key("ns", "a"),
            GuaranteedUpdate::new(add_label).cached_existing(Some(stale)),
        )
        .await
        .unwrap();
    assert_eq!(out["spec"]["size"], 9, "the concurrent update is kept");
    assert_eq!(out["metadata"]["labels"]["touched"], "yes");
    assert!(
        calls.load(Ordering::SeqCst) >= 2,
        "the callback ran again on fresh state"
    );
    assert_eq!(get(store, &key("ns", "a")).await.unwrap().unwrap(), out);
}

/// Failing uid or resourceVersion preconditions answer Conflict; a stale hint does not cause a
/// false conflict when the fresh state meets them.
pub(super) async fn run_update_preconditions(s: TestStore) {
    let store = &*s.storage;
    let stale = create(store, "ns", "a").await;
    let fresh = update_size(store, &key("ns", "a"), 2).await;
    for p in [
        Preconditions {
            uid: Some("someone-else".into()),
            ..Default::default()
        },
        Preconditions {
            resource_version: Some(rv(&stale).to_string()),
            ..Default::default()
        },
    ] {
        let err = store
            .guaranteed_update(
                &key("ns", "a"),
                GuaranteedUpdate::new(set_size(3)).preconditions(&p),
            )
            .await
            .unwrap_err();
        assert!(err.is_conflict(), "{err}");
    }
    let p = Preconditions {
        uid: Some("uid-ns-a".into()),
        resource_version: Some(rv(&fresh).to_string()),
    };
    let out = store
        .guaranteed_update(
            &key("ns", "a"),
            GuaranteedUpdate::new(set_size(3))
                .preconditions(&p)
                .cached_existing(Some(stale)),
        )
        .await
        .unwrap();
    assert_eq!(out["spec"]["size"], 3);
}

/// A callback error aborts the update, comes back to the caller, and writes nothing.
pub(super) async fn run_update_aborted_writes_nothing(s: TestStore) {
    let store = &*s.storage;
    let created = create(store, "ns", "a").await;
    let seen = Arc::new(Mutex::new(0));
    let seen_in = seen.clone();
    let refuse: TryUpdate<'static> = Box::new(move |_| {
        *seen_in.lock().unwrap() += 1;
        Box::pin(async { Err("spec.size: Invalid value".into()) })
    });
    let err = store
        .guaranteed_update(&key("ns", "a"), GuaranteedUpdate::new(refuse))
        .await
        .unwrap_err();
    assert!(err.is_aborted(), "{err}");
    assert!(err.to_string().contains("spec.size"));
    assert_eq!(*seen.lock().unwrap(), 1);
    assert_eq!(get(store, &key("ns", "a")).await.unwrap().unwrap(), created);
}
