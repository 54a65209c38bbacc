//! Conformance cases for get_list and count.

use futures::future::join_all;
use serde_json::{json, Value};

use super::fixtures::{
    create, delete, exact, key, names, ns_key, object, object_with_labels, rv, update_size,
};
use super::TestStore;
use crate::predicate::DEFAULT_SELECTABLE_FIELDS;
use crate::{
    FieldSelector, LabelSelector, ListOptions, ObjectList, ResourceVersionMatch,
    SelectionPredicate, Storage,
};

fn list_opts(rv: &str, rv_match: Option<ResourceVersionMatch>) -> ListOptions {
    ListOptions {
        resource_version: rv.to_string(),
        resource_version_match: rv_match,
        recursive: true,
        ..Default::default()
    }
}

/// A list's items as trees, to compare with what the writes returned.
fn values(list: &ObjectList) -> Vec<Value> {
    list.items.iter().map(|o| o.to_value()).collect()
}

async fn create_all(store: &dyn Storage, ns: &str, names: &[String]) -> Vec<Value> {
    let mut out = Vec::new();
    for chunk in names.chunks(50) {
        let created = join_all(
            chunk
                .iter()
                .map(|n| async move { store.create(&key(ns, n), object(ns, n)).await }),
        )
        .await;
        out.extend(created.into_iter().map(|r| r.expect("create")));
    }
    out
}

/// Lists everything under `key`, following continue tokens, checking each page's revision.
async fn list_all_pages(store: &dyn Storage, key: &str, mut opts: ListOptions) -> Vec<Value> {
    let mut items = Vec::new();
    let mut pinned = None;
    for _ in 0..10_000 {
        let page = store.get_list(key, opts.clone()).await.expect("list page");
        assert!(opts.limit == 0 || page.items.len() as u64 <= opts.limit);
        let first = *pinned.get_or_insert(page.resource_version);
        assert_eq!(
            page.resource_version, first,
            "every page at the first page's revision"
        );
        items.extend(values(&page));
        match page.continue_token {
            Some(token) => {
                opts.continue_token = Some(token);
                opts.resource_version.clear();
            }
            None => return items,
        }
    }
    panic!("paging did not end");
}

/// resourceVersion "", "0", an older one (NotOlderThan), and one from the future.
pub(super) async fn run_list_resource_versions(s: TestStore) {
    let store = &*s.storage;
    let all = create_all(store, "ns", &["a".into(), "b".into(), "c".into()]).await;
    let first_rv = rv(&all[0]);
    let last_write = rv(&update_size(store, &key("ns", "b"), 5).await);
    let current = store.current_revision().await.unwrap();
    for (asked, m) in [
        ("", None),
        ("0", None),
        (&*first_rv.to_string(), None),
        (
            &*first_rv.to_string(),
            Some(ResourceVersionMatch::NotOlderThan),
        ),
    ] {
        let list = store
            .get_list(&ns_key("ns"), list_opts(asked, m))
            .await
            .unwrap();
        assert_eq!(names(&list), ["a", "b", "c"], "rv {asked:?}");
        assert_eq!(
            list.items[1].to_value()["spec"]["size"],
            5,
            "latest state at rv {asked:?}"
        );
        // A consistent list is at least at the revision read before it; the others at least
        // include this case's own writes (other writers may share the store).
        let floor = if asked.is_empty() {
            current
        } else {
            last_write
        };
        assert!(list.resource_version >= floor, "rv {asked:?}");
    }
    let future = (current + 1_000_000).to_string();
    for m in [None, Some(ResourceVersionMatch::Exact)] {
        let err = store
            .get_list(&ns_key("ns"), list_opts(&future, m))
            .await
            .unwrap_err();
        assert!(err.is_too_large_resource_version(), "{m:?}: {err}");
    }
    let err = store
        .get_list(
            &ns_key("ns"),
            list_opts("0", Some(ResourceVersionMatch::Exact)),
        )
        .await
        .unwrap_err();
    assert!(err.is_bad_request(), "{err}");
}

/// An Exact list answers the state at that revision, before later changes.
pub(super) async fn run_list_exact_sees_history(s: TestStore) {
    let store = &*s.storage;
    let a = create(store, "ns", "a").await;
    let b = create(store, "ns", "b").await;
    let at = rv(&b);
    update_size(store, &key("ns", "a"), 8).await;
    delete(store, &key("ns", "b")).await;
    create(store, "ns", "c").await;
    let list = store.get_list(&ns_key("ns"), exact(at)).await.unwrap();
    assert_eq!(list.resource_version, at);
    assert_eq!(values(&list), vec![a, b]);
}

/// Pages of a list are all consistent at the first page's revision, even while objects are
/// created, changed and deleted between pages.
pub(super) async fn run_list_paging_is_consistent(s: TestStore) {
    let store = &*s.storage;
    let names_in: Vec<String> = (0..10).map(|i| format!("obj-{i:02}")).collect();
    let created = create_all(store, "ns", &names_in).await;
    let mut opts = list_opts("", None);
    opts.limit = 3;
    let first = store.get_list(&ns_key("ns"), opts.clone()).await.unwrap();
    assert_eq!(first.items.len(), 3);
    // Change the world between pages.
    create(store, "ns", "obj-05a").await;
    create(store, "ns", "zzz").await;
    update_size(store, &key("ns", "obj-07"), 9).await;
    delete(store, &key("ns", "obj-08")).await;
    let mut items = values(&first);
    opts.continue_token = first.continue_token.clone();
    assert!(opts.continue_token.is_some());
    items.extend(list_all_pages(store, &ns_key("ns"), opts).await);
    assert_eq!(
        items, created,
        "pages show the state at the first page's revision"
    );
}

/// A page of everything says how many objects follow it (`remainingItemCount`), and a last
/// page neither that nor a continue token; a selective page says nothing of what follows
/// (Kubernetes counts only unfiltered lists).
pub(super) async fn run_list_remaining_item_count(s: TestStore) {
    let store = &*s.storage;
    let names_in: Vec<String> = (0..7).map(|i| format!("obj-{i:02}")).collect();
    create_all(store, "ns", &names_in).await;
    let mut opts = list_opts("", None);
    opts.limit = 3;
    let first = store.get_list(&ns_key("ns"), opts.clone()).await.unwrap();
    assert_eq!(names(&first), ["obj-00", "obj-01", "obj-02"]);
    assert_eq!(first.remaining_item_count, Some(4));
    opts.continue_token = first.continue_token.clone();
    let second = store.get_list(&ns_key("ns"), opts.clone()).await.unwrap();
    assert_eq!(names(&second), ["obj-03", "obj-04", "obj-05"]);
    assert_eq!(second.remaining_item_count, Some(1));
    opts.continue_token = second.continue_token.clone();
    let last = store.get_list(&ns_key("ns"), opts.clone()).await.unwrap();
    assert_eq!(names(&last), ["obj-06"]);
    assert_eq!(last.continue_token, None);
    assert_eq!(last.remaining_item_count, None);

    let mut selective = list_opts("", None);
    selective.limit = 1;
    selective.predicate = SelectionPredicate {
        field: FieldSelector::parse("metadata.name!=obj-00", DEFAULT_SELECTABLE_FIELDS).unwrap(),
        ..Default::default()
    };
    let page = store.get_list(&ns_key("ns"), selective).await.unwrap();
    assert_eq!(names(&page), ["obj-01"]);
    assert!(page.continue_token.is_some());
    assert_eq!(page.remaining_item_count, None);
}

/// A selector matching one object among a thousand, with limit=1, finds it.
pub(super) async fn run_list_selector_one_of_many_with_limit_one(s: TestStore) {
    let store = &*s.storage;
    let names_in: Vec<String> = (0..1000).map(|i| format!("obj-{i:04}")).collect();
    create_all(store, "ns", &names_in).await;
    store
        .create(
            &key("ns", "obj-0500x"),
            object_with_labels("ns", "obj-0500x", json!({"pick": "me"})),
        )
        .await
        .unwrap();
    let mut opts = list_opts("", None);
    opts.limit = 1;
    opts.predicate = SelectionPredicate {
        label: LabelSelector::parse("pick=me").unwrap(),
        ..Default::default()
    };
    let first = store.get_list(&ns_key("ns"), opts.clone()).await.unwrap();
    assert_eq!(
        names(&first),
        ["obj-0500x"],
        "the first page holds the match"
    );
    let all = list_all_pages(store, &ns_key("ns"), opts).await;
    assert_eq!(all.len(), 1);
}

/// A continue token together with a resourceVersion is a bad request.
pub(super) async fn run_list_continue_with_resource_version_rejected(s: TestStore) {
    let store = &*s.storage;
    create_all(store, "ns", &["a".into(), "b".into()]).await;
    let mut opts = list_opts("", None);
    opts.limit = 1;
    let page = store.get_list(&ns_key("ns"), opts.clone()).await.unwrap();
    opts.continue_token = page.continue_token;
    opts.resource_version = page.resource_version.to_string();
    let err = store.get_list(&ns_key("ns"), opts).await.unwrap_err();
    assert!(err.is_bad_request(), "{err}");
}

/// Exact reads and continue tokens at compacted revisions answer Expired.
pub(super) async fn run_list_compacted(s: TestStore) {
    let store = &*s.storage;
    let all = create_all(store, "ns", &["a".into(), "b".into(), "c".into()]).await;
    let old = rv(&all[0]);
    let mut opts = list_opts("", None);
    opts.limit = 1;
    let page = store.get_list(&ns_key("ns"), opts.clone()).await.unwrap();
    update_size(store, &key("ns", "a"), 4).await;
    update_size(store, &key("ns", "b"), 4).await;
    let current = store.current_revision().await.unwrap();
    (s.compact)(current).await.unwrap();
    let err = store.get_list(&ns_key("ns"), exact(old)).await.unwrap_err();
    assert!(err.is_expired(), "exact at compacted revision: {err}");
    opts.continue_token = page.continue_token;
    let err = store.get_list(&ns_key("ns"), opts).await.unwrap_err();
    assert!(err.is_expired(), "continue at compacted revision: {err}");
    // The current state is still readable, also exactly at the compaction revision.
    let list = store.get_list(&ns_key("ns"), exact(current)).await.unwrap();
    assert_eq!(names(&list), ["a", "b", "c"]);
}

/// A recursive list of `a` does not include `ab`; a single-key list holds only that key.
pub(super) async fn run_list_recursive_vs_single_key(s: TestStore) {
    let store = &*s.storage;
    let a = store.create("/things/a", object("", "a")).await.unwrap();
    store.create("/things/ab", object("", "ab")).await.unwrap();
    store
        .create("/things/a/child", object("", "child"))
        .await
        .unwrap();
    let recursive = store
        .get_list("/things/a", list_opts("", None))
        .await
        .unwrap();
    assert_eq!(names(&recursive), ["child"]);
    let mut single = list_opts("", None);
    single.recursive = false;
    let single = store.get_list("/things/a", single).await.unwrap();
    assert_eq!(values(&single), vec![a]);
    let everything = store
        .get_list("/things", list_opts("", None))
        .await
        .unwrap();
    assert_eq!(names(&everything), ["a", "child", "ab"]);
}

/// Label and field selectors filter lists.
pub(super) async fn run_list_predicates(s: TestStore) {
    let store = &*s.storage;
    for (ns, name, tier) in [("n1", "a", "web"), ("n1", "b", "db"), ("n2", "c", "web")] {
        store
            .create(
                &key(ns, name),
                object_with_labels(ns, name, json!({"tier": tier})),
            )
            .await
            .unwrap();
    }
    let root = "/example.com/widgets";
    let select = |label: &str, field: &str| {
        let mut o = list_opts("", None);
        o.predicate = SelectionPredicate {
            label: LabelSelector::parse(label).unwrap(),
            field: FieldSelector::parse(field, DEFAULT_SELECTABLE_FIELDS).unwrap(),
        };
        o
    };
    let cases = [
        ("tier=web", "", vec!["a", "c"]),
        ("tier!=web", "", vec!["b"]),
        ("tier in (db,web)", "metadata.namespace=n1", vec!["a", "b"]),
        ("", "metadata.name=c", vec!["c"]),
        ("!tier", "", vec![]),
    ];
    for (label, field, want) in cases {
        let list = store.get_list(root, select(label, field)).await.unwrap();
        assert_eq!(names(&list), want, "label {label:?} field {field:?}");
    }
}

/// count counts the live objects under a key.
pub(super) async fn run_count(s: TestStore) {
    let store = &*s.storage;
    assert_eq!(store.count(&ns_key("ns")).await.unwrap(), 0);
    create_all(store, "ns", &["a".into(), "b".into(), "c".into()]).await;
    create(store, "other", "d").await;
    assert_eq!(store.count(&ns_key("ns")).await.unwrap(), 3);
    delete(store, &key("ns", "b")).await;
    assert_eq!(store.count(&ns_key("ns")).await.unwrap(), 2);
    assert_eq!(store.count("/example.com/widgets").await.unwrap(), 3);
}
