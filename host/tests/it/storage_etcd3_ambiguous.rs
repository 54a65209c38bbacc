//! Writes whose answer is lost on the way back: a proxy between the store and a real etcd
//! breaks the connection as etcd starts answering one request, after etcd committed it. The
//! store reads the key back and answers what happened (applied once, never twice), where it
//! used to answer 503 for a write that had landed.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use strategy_host::storage::etcd3::testing::EtcdServer;
use strategy_host::storage::etcd3::{Etcd3Config, Etcd3Store};
use strategy_host::storage::{ConditionalDelete, GetOptions, GuaranteedUpdate, Storage};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// An HTTP/2 frame's type for HEADERS: what starts a request, and what starts its response.
const HEADERS: u8 = 1;

/// A TCP proxy to etcd that, once armed, lets the next request the client opens through and
/// breaks the connection when etcd's response to it begins (with `before_etcd`: breaks it
/// instead of passing that request on).
struct CuttingProxy {
    url: String,
    armed: Arc<AtomicBool>,
    before_etcd: Arc<AtomicBool>,
    /// The stream (HTTP/2 stream id) whose response is to be cut; 0 for none yet.
    target: Arc<AtomicU32>,
    cuts: Arc<AtomicUsize>,
}

impl CuttingProxy {
    async fn start(upstream: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let proxy = Self {
            url,
            armed: Arc::default(),
            before_etcd: Arc::default(),
            target: Arc::default(),
            cuts: Arc::default(),
        };
        let (armed, target, cuts) = (
            proxy.armed.clone(),
            proxy.target.clone(),
            proxy.cuts.clone(),
        );
        let before_etcd = proxy.before_etcd.clone();
        let upstream = upstream.trim_start_matches("http://").to_owned();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = TcpStream::connect(&upstream).await.unwrap();
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                let (armed, noted, target, cuts) =
                    (armed.clone(), target.clone(), target.clone(), cuts.clone());
                let (before_etcd, cut_requests) = (before_etcd.clone(), cuts.clone());
                // Client to etcd: after the connection preface, note the first request opened
                // once armed.
                let requests = tokio::spawn(frames(
                    client_read,
                    server_write,
                    24,
                    move |kind, stream| {
                        if kind != HEADERS || !armed.swap(false, Ordering::SeqCst) {
                            return false;
                        }
                        if before_etcd.load(Ordering::SeqCst) {
                            cut_requests.fetch_add(1, Ordering::SeqCst);
                            return true;
                        }
                        noted.store(stream, Ordering::SeqCst);
                        false
                    },
                ));
                tokio::spawn(async move {
                    frames(server_read, client_write, 0, move |kind, stream| {
                        let cut = kind == HEADERS
                            && stream != 0
                            && target
                                .compare_exchange(stream, 0, Ordering::SeqCst, Ordering::SeqCst)
                                .is_ok();
                        if cut {
                            cuts.fetch_add(1, Ordering::SeqCst);
                        }
                        cut
                    })
                    .await;
                    requests.abort();
                });
            }
        });
        proxy
    }

    /// Cuts the response of the next request.
    fn arm(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }
}

/// An increment of `spec.n` that arms `armed` once it saw the current state, so that what is
/// cut is the transaction's answer, not the read before it.
fn increment_arming(armed: Arc<AtomicBool>) -> GuaranteedUpdate<'static> {
    GuaranteedUpdate::new(Box::new(move |current| {
        armed.store(true, Ordering::SeqCst);
        let mut obj = current.expect("exists");
        let n = obj["spec"]["n"].as_u64().unwrap();
        obj["spec"]["n"] = json!(n + 1);
        Box::pin(async move { Ok(obj) })
    }))
}

/// Copies HTTP/2 frames from `from` to `to` (after `preface` bytes copied as they are), asking
/// `cut(type, stream)` before each; stops, dropping both halves, when it says so or either side
/// closes.
async fn frames(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    preface: usize,
    mut cut: impl FnMut(u8, u32) -> bool,
) {
    let mut head = vec![0u8; preface];
    if from.read_exact(&mut head).await.is_err() || to.write_all(&head).await.is_err() {
        return;
    }
    let mut header = [0u8; 9];
    loop {
        if from.read_exact(&mut header).await.is_err() {
            return;
        }
        let len = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
        let stream = u32::from_be_bytes([header[5], header[6], header[7], header[8]]) & 0x7fff_ffff;
        if cut(header[3], stream) {
            return;
        }
        let mut payload = vec![0u8; len];
        if from.read_exact(&mut payload).await.is_err()
            || to.write_all(&header).await.is_err()
            || to.write_all(&payload).await.is_err()
        {
            return;
        }
    }
}

async fn store_behind_proxy() -> (EtcdServer, CuttingProxy, Etcd3Store) {
    let etcd = EtcdServer::start_in_test().await;
    let proxy = CuttingProxy::start(etcd.endpoint()).await;
    let store = Etcd3Store::connect(Etcd3Config::new(vec![proxy.url.clone()]))
        .await
        .unwrap();
    (etcd, proxy, store)
}

fn widget() -> Value {
    json!({"metadata": {"name": "w", "namespace": "ns", "uid": "u-1"}, "spec": {"n": 0}})
}

const KEY: &str = "/widgets/ns/w";

/// How many times etcd wrote the key since it was created (`version`, read straight from etcd).
async fn etcd_version(etcd: &EtcdServer) -> i64 {
    let mut client = etcd_client::Client::connect([etcd.endpoint()], None)
        .await
        .unwrap();
    let resp = client.get(format!("/registry{KEY}"), None).await.unwrap();
    resp.kvs().first().map_or(0, |kv| kv.version())
}

#[tokio::test]
async fn a_create_whose_answer_is_lost_is_answered_as_created() {
    let (etcd, proxy, store) = store_behind_proxy().await;
    proxy.arm();
    let created = store
        .create(KEY, widget())
        .await
        .expect("the create landed");
    assert_eq!(proxy.cuts.load(Ordering::SeqCst), 1, "the answer was cut");
    let stored = store
        .get(KEY, GetOptions::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        created["metadata"]["resourceVersion"],
        stored["metadata"]["resourceVersion"]
    );
    assert_eq!(etcd_version(&etcd).await, 1, "written once");
    // A second create of the same name is still refused.
    let again = store.create(KEY, widget()).await.unwrap_err();
    assert!(again.to_string().contains("already exists"), "{again}");
}

/// An increment through the proxy with the connection broken around its transaction (after
/// etcd took it, or before it reached etcd): answered as applied, and applied once.
async fn increment_with_a_broken_connection(before_etcd: bool) {
    let (etcd, proxy, store) = store_behind_proxy().await;
    store.create(KEY, widget()).await.unwrap();
    proxy.before_etcd.store(before_etcd, Ordering::SeqCst);
    let updated = store
        .guaranteed_update(KEY, increment_arming(proxy.armed.clone()))
        .await
        .expect("the update landed");
    assert_eq!(
        proxy.cuts.load(Ordering::SeqCst),
        1,
        "the connection was broken"
    );
    assert_eq!(updated["spec"]["n"], 1);
    let stored = store
        .get(KEY, GetOptions::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored["spec"]["n"], 1, "incremented once");
    assert_eq!(
        updated["metadata"]["resourceVersion"],
        stored["metadata"]["resourceVersion"]
    );
    assert_eq!(etcd_version(&etcd).await, 2, "created, then updated once");
}

#[tokio::test]
async fn an_update_whose_answer_is_lost_is_applied_once() {
    increment_with_a_broken_connection(false).await;
}

#[tokio::test]
async fn an_update_lost_before_etcd_is_sent_again_and_applied_once() {
    increment_with_a_broken_connection(true).await;
}

#[tokio::test]
async fn a_delete_whose_answer_is_lost_is_answered_as_deleted() {
    let (etcd, proxy, store) = store_behind_proxy().await;
    store.create(KEY, widget()).await.unwrap();
    let armed = proxy.armed.clone();
    let arm_then_delete = ConditionalDelete::new(Box::new(move |_| {
        armed.store(true, Ordering::SeqCst);
        Box::pin(async { Ok(()) })
    }));
    let deleted = store
        .delete(KEY, arm_then_delete)
        .await
        .expect("the delete landed");
    assert_eq!(proxy.cuts.load(Ordering::SeqCst), 1, "the answer was cut");
    assert_eq!(deleted["metadata"]["uid"], "u-1");
    let gone = store.get(KEY, GetOptions::default()).await.unwrap_err();
    assert!(gone.to_string().contains("not found"), "{gone}");
    assert_eq!(etcd_version(&etcd).await, 0, "gone");
}
