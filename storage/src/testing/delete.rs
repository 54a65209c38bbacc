//! Conformance cases for delete: preconditions, stale hints and re-run validation.

use std::sync::{Arc, Mutex};

use super::fixtures::{create, delete, get, key, rv, update_size};
use super::TestStore;
use crate::{ConditionalDelete, Preconditions, ValidateDeletion};

/// An unconditional delete returns the last state stamped with the deletion's revision.
pub(super) async fn run_delete_unconditional(s: TestStore) {
    let store = &*s.storage;
    let created = create(store, "ns", "a").await;
    let deleted = delete(store, &key("ns", "a")).await;
    assert!(rv(&deleted) > rv(&created), "deletion revision must be new");
    assert_eq!(deleted["spec"], created["spec"]);
    assert!(get(store, &key("ns", "a")).await.unwrap().is_none());
    let err = store
        .delete(&key("ns", "a"), ConditionalDelete::default())
        .await
        .unwrap_err();
    assert!(err.is_not_found(), "{err}");
}

/// uid and resourceVersion preconditions that do not hold answer Conflict and delete nothing.
pub(super) async fn run_delete_preconditions(s: TestStore) {
    let store = &*s.storage;
    let created = create(store, "ns", "a").await;
    let wrong_uid = Preconditions {
        uid: Some("other".into()),
        ..Default::default()
    };
    let wrong_rv = Preconditions {
        resource_version: Some((rv(&created) + 100).to_string()),
        ..Default::default()
    };
    for p in [wrong_uid, wrong_rv] {
        let err = store
            .delete(
                &key("ns", "a"),
                ConditionalDelete::default().preconditions(&p),
            )
            .await
            .unwrap_err();
        assert!(err.is_conflict(), "{err}");
        assert!(get(store, &key("ns", "a")).await.unwrap().is_some());
    }
    let right = Preconditions {
        uid: Some("uid-ns-a".into()),
        resource_version: Some(rv(&created).to_string()),
    };
    store
        .delete(
            &key("ns", "a"),
            ConditionalDelete::default().preconditions(&right),
        )
        .await
        .unwrap();
    assert!(get(store, &key("ns", "a")).await.unwrap().is_none());
}

/// Records every object a validation callback was shown.
fn recording_validation(seen: Arc<Mutex<Vec<u64>>>) -> ValidateDeletion<'static> {
    Box::new(move |obj| {
        seen.lock().unwrap().push(rv(&obj));
        Box::pin(async { Ok(()) })
    })
}

/// A stale cached object is re-read: preconditions on the fresh state hold, and the
/// validation sees the fresh state.
pub(super) async fn run_delete_with_stale_cached_object(s: TestStore) {
    let store = &*s.storage;
    let stale = create(store, "ns", "a").await;
    let fresh = update_size(store, &key("ns", "a"), 7).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let p = Preconditions {
        resource_version: Some(rv(&fresh).to_string()),
        ..Default::default()
    };
    let deleted = store
        .delete(
            &key("ns", "a"),
            ConditionalDelete::new(recording_validation(seen.clone()))
                .preconditions(&p)
                .cached_existing(Some(stale)),
        )
        .await
        .unwrap();
    assert_eq!(
        deleted["spec"]["size"], 7,
        "the fresh state is what was deleted"
    );
    assert_eq!(seen.lock().unwrap().last(), Some(&rv(&fresh)));
    assert!(get(store, &key("ns", "a")).await.unwrap().is_none());
}

/// When the object changes between validation and the delete, validation runs again on the
/// new state before the delete lands.
pub(super) async fn run_delete_revalidates_after_concurrent_update(s: TestStore) {
    let storage = s.storage.clone();
    create(&*storage, "ns", "a").await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen_in = seen.clone();
    let store_in = storage.clone();
    let validate: ValidateDeletion<'static> = Box::new(move |obj| {
        seen_in.lock().unwrap().push(rv(&obj));
        let first = seen_in.lock().unwrap().len() == 1;
        let store = store_in.clone();
        Box::pin(async move {
            if first {
                // A concurrent writer changes the object after validation looked at it.
                update_size(&*store, &key("ns", "a"), 3).await;
            }
            Ok(())
        })
    });
    let deleted = storage
        .delete(&key("ns", "a"), ConditionalDelete::new(validate))
        .await
        .unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen.len(),
        2,
        "validation re-runs on the fresh object: {seen:?}"
    );
    assert!(seen[1] > seen[0]);
    assert_eq!(deleted["spec"]["size"], 3);
}

/// A validation that refuses aborts the delete and keeps the object.
pub(super) async fn run_delete_validation_refuses(s: TestStore) {
    let store = &*s.storage;
    create(store, "ns", "a").await;
    let refuse: ValidateDeletion<'static> =
        Box::new(|_| Box::pin(async { Err("protected by policy".into()) }));
    let err = store
        .delete(&key("ns", "a"), ConditionalDelete::new(refuse))
        .await
        .unwrap_err();
    assert!(err.is_aborted(), "{err}");
    assert!(err.to_string().contains("protected by policy"));
    assert!(get(store, &key("ns", "a")).await.unwrap().is_some());
}
