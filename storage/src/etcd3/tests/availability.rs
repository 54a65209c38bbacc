//! An etcd that cannot be reached, or stops and comes back: calls fail as Unavailable (never
//! a panic or a hang) and the store recovers on its own.

use std::time::{Duration, Instant};

use super::{start, widget};
use crate::etcd3::{Etcd3Config, Etcd3Store};
use crate::{GetOptions, Storage};

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
