//! An etcd that cannot be reached, or stops and comes back: calls fail as Unavailable (never
//! a panic or a hang) and the store recovers on its own.

use std::time::{Duration, Instant};

use super::{start, widget};
use crate::etcd3::testing::EtcdServer;
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

/// With etcd down (every member refuses connections) a write and an etcd read answer
/// Unavailable well before the 10 s request budget (they waited it out before: the issue's
/// curl saw 9.9 s), and once etcd is back the very first write succeeds.
#[tokio::test]
async fn no_reachable_member_fails_fast_and_the_first_write_after_succeeds() {
    let mut etcd = EtcdServer::start().expect("start etcd");
    let store = Etcd3Store::connect(Etcd3Config::new(vec![etcd.endpoint()]))
        .await
        .expect("connect");
    store.create("/w/ns/a", widget("a", "x")).await.unwrap();
    etcd.stop();
    for attempt in 0..2 {
        let began = Instant::now();
        let err = store.create("/w/ns/b", widget("b", "x")).await.unwrap_err();
        assert!(err.is_unavailable(), "{err}");
        let err = store
            .get("/w/ns/a", GetOptions::default())
            .await
            .unwrap_err();
        assert!(err.is_unavailable(), "{err}");
        let took = began.elapsed();
        assert!(took < Duration::from_secs(3), "attempt {attempt}: {took:?}");
    }
    etcd.restart().unwrap();
    store.create("/w/ns/b", widget("b", "x")).await.unwrap();
}
