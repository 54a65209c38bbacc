//! Lists on etcd: a selective list that pages through many non-matches, consistent plain
//! paging, an expired continue token, and progress notifications as bookmarks.

use super::{next_event, rv, set_n, start, widget};
use crate::predicate::{LabelSelector, SelectionPredicate};
use crate::{ListOptions, Storage, StorageError, WatchEvent};

#[tokio::test]
async fn selective_paged_list_finds_the_one_match() {
    let (_etcd, store) = start().await;
    for i in 0..300 {
        let app = if i == 250 { "needle" } else { "hay" };
        let name = format!("w{i:04}");
        store
            .create(&format!("/w/ns/{name}"), widget(&name, app))
            .await
            .unwrap();
    }
    store
        .create("/wx/ns/z", widget("z", "needle"))
        .await
        .unwrap();
    let predicate = SelectionPredicate {
        label: LabelSelector::parse("app=needle").unwrap(),
        ..Default::default()
    };
    let opts = ListOptions {
        recursive: true,
        limit: 1,
        predicate,
        ..Default::default()
    };
    let page = store.get_list("/w", opts).await.unwrap();
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.items[0].name(), Some("w0250"));
    // Plain paging: three pages of 100 at one revision, with remaining counts.
    let mut token = None;
    let mut seen = 0;
    let mut revision = None;
    loop {
        let opts = ListOptions {
            recursive: true,
            limit: 100,
            continue_token: token.take(),
            ..Default::default()
        };
        let page = store.get_list("/w", opts).await.unwrap();
        seen += page.items.len();
        assert_eq!(
            *revision.get_or_insert(page.resource_version),
            page.resource_version
        );
        if page.continue_token.is_some() {
            assert_eq!(page.remaining_item_count, Some(300 - seen as u64));
        }
        set_n(&store, "/w/ns/w0000", seen as u64).await;
        match page.continue_token {
            Some(t) => token = Some(t),
            None => break,
        }
    }
    assert_eq!(seen, 300);
}

#[tokio::test]
async fn expired_continue_token_and_bookmarks() {
    let (_etcd, store) = start().await;
    for name in ["a", "b", "c"] {
        store
            .create(&format!("/w/ns/{name}"), widget(name, "x"))
            .await
            .unwrap();
    }
    let opts = ListOptions {
        recursive: true,
        limit: 1,
        ..Default::default()
    };
    let page = store.get_list("/w", opts).await.unwrap();
    let token = page.continue_token.expect("more pages");
    let last = set_n(&store, "/w/ns/a", 1).await;
    set_n(&store, "/w/ns/a", 2).await;
    store.compact(rv(&last)).await.unwrap();
    let opts = ListOptions {
        recursive: true,
        limit: 1,
        continue_token: Some(token),
        ..Default::default()
    };
    let err = store.get_list("/w", opts).await.unwrap_err();
    assert!(matches!(&err, StorageError::Expired { message } if message.contains("continue")));

    // etcd's progress notifications (every second in the fixture) become bookmarks.
    let opts = ListOptions {
        recursive: true,
        allow_bookmarks: true,
        ..Default::default()
    };
    let mut watch = store.watch("/w", opts).await.unwrap();
    let mut added = 0;
    loop {
        match next_event(&mut watch).await {
            WatchEvent::Added(_) => added += 1,
            WatchEvent::Bookmark(revision) => {
                assert!(revision.revision() >= store.current_revision().await.unwrap() - 1);
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(added, 3);
}
