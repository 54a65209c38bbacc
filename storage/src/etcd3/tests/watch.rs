//! Watches on etcd: resumed across a restart without loss or duplicates, expired from a
//! compacted revision, and cancelled in etcd when dropped.

use std::time::{Duration, Instant};

use serde_json::json;

use super::{next_change, rv, set_n, start, widget};
use crate::etcd3::testing::EtcdServer;
use crate::testing::modifying;
use crate::{GuaranteedUpdate, ListOptions, ResourceVersionMatch, Storage, WatchEvent};

#[tokio::test]
async fn watch_resumes_across_restart_without_loss_or_duplicates() {
    let (mut etcd, store) = start().await;
    let first = store.create("/w/ns/a", widget("a", "x")).await.unwrap();
    let opts = ListOptions {
        resource_version: rv(&first).to_string(),
        recursive: true,
        ..Default::default()
    };
    let mut watch = store.watch("/w", opts).await.unwrap();
    let before = set_n(&store, "/w/ns/a", 1).await;
    match next_change(&mut watch).await {
        WatchEvent::Modified(o) => assert_eq!(o.to_value(), before),
        other => panic!("{other:?}"),
    }
    etcd.stop();
    tokio::time::sleep(Duration::from_millis(300)).await;
    etcd.restart().unwrap();
    let mut expected = Vec::new();
    for n in 2..5 {
        expected.push(loop {
            match store
                .guaranteed_update(
                    "/w/ns/a",
                    GuaranteedUpdate::new(modifying(move |obj| obj["spec"]["n"] = json!(n))),
                )
                .await
            {
                Ok(v) => break v,
                Err(e) if e.is_unavailable() => {
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                Err(e) => panic!("{e}"),
            }
        });
    }
    let created = store.create("/w/ns/b", widget("b", "y")).await.unwrap();
    for want in &expected {
        match next_change(&mut watch).await {
            WatchEvent::Modified(o) => assert_eq!(&o.to_value(), want),
            other => panic!("{other:?}"),
        }
    }
    match next_change(&mut watch).await {
        WatchEvent::Added(o) => assert_eq!(o.to_value(), created),
        other => panic!("{other:?}"),
    }
    // Nothing else is pending (no duplicates).
    let extra = tokio::time::timeout(Duration::from_millis(1500), next_change(&mut watch)).await;
    assert!(extra.is_err(), "unexpected event {extra:?}");
}

#[tokio::test]
async fn watch_from_compacted_revision_expires() {
    let (_etcd, store) = start().await;
    let first = store.create("/w/ns/a", widget("a", "x")).await.unwrap();
    set_n(&store, "/w/ns/a", 1).await;
    let last = set_n(&store, "/w/ns/a", 2).await;
    // etcd keeps the compacted revision itself: events after `first` start one before it.
    store.compact(rv(&last)).await.unwrap();
    store.compact(rv(&last)).await.unwrap();
    let opts = ListOptions {
        resource_version: rv(&first).to_string(),
        recursive: true,
        ..Default::default()
    };
    match store.watch("/w", opts).await {
        Err(e) => assert!(e.is_expired(), "{e}"),
        Ok(mut w) => match next_change(&mut w).await {
            WatchEvent::Error(e) => assert!(e.is_expired(), "{e}"),
            other => panic!("{other:?}"),
        },
    }
    let exact = ListOptions {
        resource_version: rv(&first).to_string(),
        resource_version_match: Some(ResourceVersionMatch::Exact),
        recursive: true,
        ..Default::default()
    };
    let err = store.get_list("/w", exact).await.unwrap_err();
    assert!(err.is_expired(), "{err}");
    let err = store.compact(rv(&last) + 100).await.unwrap_err();
    assert!(err.is_too_large_resource_version(), "{err}");
}

/// etcd's count of open watchers, from its metrics endpoint.
fn etcd_watchers(etcd: &EtcdServer) -> u64 {
    use std::io::{Read, Write};
    let addr = etcd.metrics_url().trim_start_matches("http://").to_string();
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut text = String::new();
    conn.read_to_string(&mut text).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("etcd_debugging_mvcc_watcher_total "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .expect("watcher metric") as u64
}

#[tokio::test]
async fn dropping_a_watch_cancels_it_in_etcd() {
    let (etcd, store) = start().await;
    let before = etcd_watchers(&etcd);
    let opts = ListOptions::recursive();
    let mut watches = Vec::new();
    for _ in 0..3 {
        watches.push(store.watch("/w", opts.clone()).await.unwrap());
    }
    // A watch nobody reads does not hold up the others.
    let created = store.create("/w/ns/a", widget("a", "x")).await.unwrap();
    match next_change(&mut watches[2]).await {
        WatchEvent::Added(o) => assert_eq!(o.to_value(), created),
        other => panic!("{other:?}"),
    }
    assert_eq!(etcd_watchers(&etcd), before + 3);
    drop(watches);
    let deadline = Instant::now() + Duration::from_secs(5);
    while etcd_watchers(&etcd) != before {
        assert!(Instant::now() < deadline, "etcd still has the watches");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
