//! Conformance cases for create, get and key validation.

use serde_json::json;

use super::fixtures::{at, content, create, get, key, object, rv, update_size};
use super::TestStore;
use crate::{ConditionalDelete, GetOptions, ListOptions};

/// A created object comes back with a resourceVersion and reads back the same.
pub(super) async fn run_create(s: TestStore) {
    let store = &*s.storage;
    let created = create(store, "ns", "a").await;
    assert!(rv(&created) > 0);
    assert_eq!(content(&created), object("ns", "a"));
    let read = get(store, &key("ns", "a")).await.unwrap().unwrap();
    assert_eq!(read, created);
    assert!(store.current_revision().await.unwrap() >= rv(&created));
}

/// A second create of the same key fails with AlreadyExists and changes nothing.
pub(super) async fn run_create_already_exists(s: TestStore) {
    let store = &*s.storage;
    let first = create(store, "ns", "a").await;
    let mut other = object("ns", "a");
    other["spec"]["size"] = json!(99);
    let err = store.create(&key("ns", "a"), other).await.unwrap_err();
    assert!(err.is_already_exists(), "{err}");
    assert_eq!(get(store, &key("ns", "a")).await.unwrap().unwrap(), first);
}

/// An object that already carries a resourceVersion cannot be created.
pub(super) async fn run_create_with_resource_version_rejected(s: TestStore) {
    let store = &*s.storage;
    let mut obj = object("ns", "a");
    obj["metadata"]["resourceVersion"] = json!("5");
    let err = store.create(&key("ns", "a"), obj).await.unwrap_err();
    assert!(err.is_invalid_object(), "{err}");
    assert!(get(store, &key("ns", "a")).await.unwrap().is_none());
}

/// get with resourceVersion "", "0", an older one, the current one, and one from the future.
pub(super) async fn run_get_resource_versions(s: TestStore) {
    let store = &*s.storage;
    let created = create(store, "ns", "a").await;
    let updated = update_size(store, &key("ns", "a"), 2).await;
    let current = rv(&updated);
    for asked in [
        String::new(),
        "0".to_string(),
        rv(&created).to_string(),
        current.to_string(),
    ] {
        let got = store.get(&key("ns", "a"), at(&asked)).await.unwrap();
        assert_eq!(
            got,
            Some(updated.clone()),
            "get at resourceVersion {asked:?}"
        );
    }
    let future = (store.current_revision().await.unwrap() + 1_000_000).to_string();
    let err = store.get(&key("ns", "a"), at(&future)).await.unwrap_err();
    assert!(err.is_too_large_resource_version(), "{err}");
    let err = store.get(&key("ns", "a"), at("abc")).await.unwrap_err();
    assert!(err.is_bad_request(), "{err}");
}

/// A missing key is NotFound, or nothing when the caller ignores not-found.
pub(super) async fn run_get_not_found(s: TestStore) {
    let store = &*s.storage;
    let err = store
        .get(&key("ns", "missing"), GetOptions::default())
        .await
        .unwrap_err();
    assert!(err.is_not_found(), "{err}");
    assert!(get(store, &key("ns", "missing")).await.unwrap().is_none());
}

/// get_shared answers what get answers, as shared bytes: the object (the same tree once
/// parsed, with its revision), nothing or NotFound for a missing key, and the same refusals.
pub(super) async fn run_get_shared_is_get(s: TestStore) {
    let store = &*s.storage;
    create(store, "ns", "a").await;
    let updated = update_size(store, &key("ns", "a"), 2).await;
    for asked in [String::new(), "0".to_string(), rv(&updated).to_string()] {
        let shared = store
            .get_shared(&key("ns", "a"), at(&asked))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(shared.to_value(), updated, "get_shared at {asked:?}");
        assert_eq!(shared.revision(), rv(&updated));
    }
    let ignore = GetOptions::ignoring_not_found();
    assert!(store
        .get_shared(&key("ns", "missing"), ignore)
        .await
        .unwrap()
        .is_none());
    let err = store
        .get_shared(&key("ns", "missing"), GetOptions::default())
        .await
        .unwrap_err();
    assert!(err.is_not_found(), "{err}");
    let future = (store.current_revision().await.unwrap() + 1_000_000).to_string();
    let err = store
        .get_shared(&key("ns", "a"), at(&future))
        .await
        .unwrap_err();
    assert!(err.is_too_large_resource_version(), "{err}");
}

/// Empty keys and keys with `.` or `..` segments are refused by every operation.
pub(super) async fn run_key_validation(s: TestStore) {
    let store = &*s.storage;
    for bad in ["", "/", ".", "..", "/example.com/../../etc", "/a/./b"] {
        let err = store.create(bad, object("ns", "a")).await.unwrap_err();
        assert!(err.is_bad_request(), "create {bad:?}: {err}");
        let err = store.get(bad, GetOptions::default()).await.unwrap_err();
        assert!(err.is_bad_request(), "get {bad:?}: {err}");
        let list = ListOptions::recursive();
        let err = store.get_list(bad, list.clone()).await.unwrap_err();
        assert!(err.is_bad_request(), "list {bad:?}: {err}");
        assert!(store.watch(bad, list).await.is_err(), "watch {bad:?}");
        let err = store
            .delete(bad, ConditionalDelete::default())
            .await
            .unwrap_err();
        assert!(err.is_bad_request(), "delete {bad:?}: {err}");
    }
}
