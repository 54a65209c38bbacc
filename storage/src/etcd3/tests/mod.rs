//! Tests of etcd-specific behaviour against a real etcd ([`super::testing::EtcdServer`]): the
//! helpers the files beside share, and a round trip through every call.
//!
//! - `availability.rs`: an etcd that cannot be reached, or stops and comes back;
//! - `watch.rs`: watches across restarts, from compacted revisions, and their cancellation;
//! - `list.rs`: paging, selective lists, expired continue tokens and bookmarks;
//! - `tls.rs`: client certificates.

mod availability;
mod list;
mod tls;
mod watch;

use std::time::Duration;

use futures::StreamExt;
use serde_json::{json, Value};

use super::testing::EtcdServer;
use super::{Etcd3Config, Etcd3Store};
use crate::testing::{modify, rv};
use crate::{ConditionalDelete, GetOptions, Storage, WatchEvent, WatchStream};

fn config(etcd: &EtcdServer) -> Etcd3Config {
    let mut config = Etcd3Config::new(vec![etcd.endpoint()]);
    config.dial_timeout = Duration::from_secs(2);
    config.request_timeout = Duration::from_secs(2);
    config
}

async fn start() -> (EtcdServer, Etcd3Store) {
    let etcd = EtcdServer::start().expect("start etcd");
    let store = Etcd3Store::connect(config(&etcd)).await.expect("connect");
    (etcd, store)
}

fn widget(name: &str, app: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": "ns", "labels": {"app": app}}, "spec": {"n": 0}})
}

/// Sets `spec.n` of the object at `key`.
async fn set_n(store: &Etcd3Store, key: &str, n: u64) -> Value {
    modify(store, key, move |obj| obj["spec"]["n"] = json!(n)).await
}

async fn next_event(w: &mut WatchStream) -> WatchEvent {
    tokio::time::timeout(Duration::from_secs(20), w.next())
        .await
        .expect("watch event in time")
        .expect("watch still open")
}

/// The next event that is not a bookmark.
async fn next_change(w: &mut WatchStream) -> WatchEvent {
    loop {
        match next_event(w).await {
            WatchEvent::Bookmark(_) => continue,
            other => return other,
        }
    }
}

#[tokio::test]
async fn crud_round_trip() {
    let (_etcd, store) = start().await;
    let created = store.create("/w/ns/a", widget("a", "x")).await.unwrap();
    let got = store
        .get("/w/ns/a", GetOptions::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got, created);
    let updated = set_n(&store, "/w/ns/a", 7).await;
    assert!(rv(&updated) > rv(&created));
    assert!(store
        .create("/w/ns/a", widget("a", "x"))
        .await
        .unwrap_err()
        .is_already_exists());
    assert_eq!(store.count("/w").await.unwrap(), 1);
    let deleted = store
        .delete("/w/ns/a", ConditionalDelete::default())
        .await
        .unwrap();
    assert!(rv(&deleted) > rv(&updated));
    assert_eq!(store.current_revision().await.unwrap(), rv(&deleted));
    let missing = store.get("/w/ns/a", GetOptions::default()).await;
    assert!(missing.unwrap_err().is_not_found());
    let too_new = GetOptions {
        resource_version: (rv(&deleted) + 100).to_string(),
        ignore_not_found: true,
    };
    let err = store.get("/w/ns/a", too_new).await.unwrap_err();
    assert!(err.is_too_large_resource_version(), "{err}");
}
