//! Tests of etcd-specific behaviour against a real etcd ([`super::testing::EtcdServer`]):
//! unavailability and recovery, watch resumption across restarts, compaction, paging.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{json, Value};

use super::testing::EtcdServer;
use super::{Etcd3Config, Etcd3Store};
use crate::storage::predicate::{LabelSelector, SelectionPredicate};
use crate::storage::{
    ConditionalDelete, GetOptions, GuaranteedUpdate, ListOptions, ResourceVersionMatch, Storage,
    StorageError, WatchEvent, WatchStream,
};

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

fn rv(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

async fn set_n(store: &Etcd3Store, key: &str, n: u64) -> Value {
    store
        .guaranteed_update(
            key,
            GuaranteedUpdate::new(Box::new(move |cur| {
                let mut obj = cur.expect("exists");
                obj["spec"]["n"] = json!(n);
                Box::pin(async move { Ok(obj) })
            })),
        )
        .await
        .expect("update")
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

#[tokio::test]
async fn unreachable_etcd_is_unavailable_not_a_panic() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut config = Etcd3Config::new(vec![format!("http://127.0.0.1:{port}")]);
    config.dial_timeout = Duration::from_millis(500);
    let began = Instant::now();
    let err = Etcd3Store::connect(config).await.unwrap_err();
    assert!(err.is_unavailable(), "{err}");
    assert!(err.to_string().contains("127.0.0.1"), "{err}");
    assert!(began.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn stopped_etcd_is_unavailable_then_recovers() {
    let (mut etcd, store) = start().await;
    store.create("/w/ns/a", widget("a", "x")).await.unwrap();
    etcd.stop();
    let began = Instant::now();
    let err = store
        .get("/w/ns/a", GetOptions::default())
        .await
        .unwrap_err();
    assert!(err.is_unavailable(), "{err}");
    let err = store.create("/w/ns/b", widget("b", "x")).await.unwrap_err();
    assert!(err.is_unavailable(), "{err}");
    assert!(
        began.elapsed() < Duration::from_secs(6),
        "{:?}",
        began.elapsed()
    );
    etcd.restart().unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match store.get("/w/ns/a", GetOptions::default()).await {
            Ok(found) => {
                assert_eq!(found.unwrap()["metadata"]["name"], "a");
                break;
            }
            Err(e) if e.is_unavailable() && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("store did not recover: {e}"),
        }
    }
    store.create("/w/ns/b", widget("b", "x")).await.unwrap();
}

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
                    GuaranteedUpdate::new(Box::new(move |cur| {
                        let mut obj = cur.expect("exists");
                        obj["spec"]["n"] = json!(n);
                        Box::pin(async move { Ok(obj) })
                    })),
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

/// Writes a CA, a serving certificate for 127.0.0.1 and a client certificate with `openssl`;
/// `None` when `openssl` is not installed.
fn make_certificates(dir: &std::path::Path) -> Option<()> {
    let run = |args: &[&str]| {
        let status = std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
        status.map(|s| s.success())
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let ca = [
        &["req", "-x509"][..],
        &ec,
        &["-keyout", "ca.key", "-out", "ca.pem"],
    ]
    .concat();
    if !run(&[&ca[..], &["-days", "1", "-subj", "/CN=test-ca"]].concat()).ok()? {
        panic!("openssl could not make a CA");
    }
    for (name, usage) in [("server", "serverAuth"), ("client", "clientAuth")] {
        let ext = format!("{name}.ext");
        std::fs::write(
            dir.join(&ext),
            format!("subjectAltName=IP:127.0.0.1\nextendedKeyUsage={usage}\n"),
        )
        .unwrap();
        let (key, csr, pem) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.pem"),
        );
        let req = [&["req"][..], &ec, &["-keyout", &key, "-out", &csr, "-subj"]].concat();
        assert!(run(&[&req[..], &[&format!("/CN={name}")]].concat()).unwrap());
        let sign = [
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            &pem,
            "-days",
            "1",
            "-extfile",
            &ext,
        ];
        assert!(run(&sign).unwrap(), "openssl could not sign {name}");
    }
    Some(())
}

#[tokio::test]
async fn tls_with_client_certificates() {
    let dir = tempfile::tempdir().unwrap();
    if make_certificates(dir.path()).is_none() {
        eprintln!("openssl not installed: skipping the TLS test");
        return;
    }
    let path = |name: &str| dir.path().join(name);
    let etcd = EtcdServer::start_tls(super::testing::ServerTls {
        cert_file: path("server.pem"),
        key_file: path("server.key"),
        ca_file: path("ca.pem"),
    })
    .expect("start etcd with TLS");
    assert!(etcd.endpoint().starts_with("https://"));
    let mut config = config(&etcd);
    config.tls = Some(super::TlsFiles {
        ca_file: Some(path("ca.pem")),
        cert_file: Some(path("client.pem")),
        key_file: Some(path("client.key")),
    });
    let store = Etcd3Store::connect(config.clone())
        .await
        .expect("connect over TLS");
    store.create("/w/ns/a", widget("a", "x")).await.unwrap();
    assert_eq!(store.count("/w").await.unwrap(), 1);
    // Without a client certificate etcd refuses the connection: an error, not a panic.
    config.tls = Some(super::TlsFiles {
        ca_file: Some(path("ca.pem")),
        ..Default::default()
    });
    let err = Etcd3Store::connect(config).await.unwrap_err();
    assert!(err.is_unavailable(), "{err}");
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
    let opts = ListOptions {
        recursive: true,
        ..Default::default()
    };
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
