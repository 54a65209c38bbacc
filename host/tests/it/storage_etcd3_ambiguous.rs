//! Writes whose answer is lost on the way back: a proxy between the store and a real etcd
//! breaks the connection as etcd starts answering one request, after etcd committed it. The
//! store reads the key back and answers what happened (applied once, never twice), where it
//! used to answer 503 for a write that had landed. And a create held on its way to etcd, and
//! delivered only after the store sent it again, was answered and the object deleted, never
//! creates the object a second time.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use strategy_host::storage::etcd3::testing::EtcdServer;
use strategy_host::storage::etcd3::{Etcd3Config, Etcd3Store};
use strategy_host::storage::{ConditionalDelete, GetOptions, GuaranteedUpdate, Storage};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{tcp, TcpListener, TcpStream};
use tokio::sync::Notify;

/// An HTTP/2 frame's type for HEADERS: what starts a request, and what starts its response.
const HEADERS: u8 = 1;
/// An HTTP/2 frame's type for DATA, and the flag that ends its stream.
const DATA: u8 = 0;
const END_STREAM: u8 = 0x1;

/// Listens on a free loopback port and, for each connection a client opens, connects to
/// `upstream` (an `http://` URL) and hands both connections' halves to `connected`: the
/// proxy's URL.
async fn relay<F>(upstream: String, mut connected: F) -> String
where
    F: FnMut((tcp::OwnedReadHalf, tcp::OwnedWriteHalf), (tcp::OwnedReadHalf, tcp::OwnedWriteHalf))
        + Send
        + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let upstream = upstream.trim_start_matches("http://").to_owned();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let server = TcpStream::connect(&upstream).await.unwrap();
            connected(client.into_split(), server.into_split());
        }
    });
    url
}

/// A TCP proxy to etcd that, once armed, lets the next request the client opens through and
/// breaks the connection when etcd's response to it begins (with `before_etcd`: breaks it
/// instead of passing that request on).
#[derive(Default)]
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
        let mut proxy = Self::default();
        let (armed, target, cuts) = (
            proxy.armed.clone(),
            proxy.target.clone(),
            proxy.cuts.clone(),
        );
        let before_etcd = proxy.before_etcd.clone();
        proxy.url = relay(
            upstream,
            move |(client_read, client_write), (server_read, server_write)| {
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
            },
        )
        .await;
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
    while let Some(frame) = Frame::read(&mut from).await {
        if cut(frame.kind(), frame.stream()) || !frame.write(&mut to).await {
            return;
        }
    }
}

/// One HTTP/2 frame as it was on the wire.
struct Frame {
    header: [u8; 9],
    payload: Vec<u8>,
}

impl Frame {
    async fn read(from: &mut (impl AsyncRead + Unpin)) -> Option<Self> {
        let mut header = [0u8; 9];
        from.read_exact(&mut header).await.ok()?;
        let len = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
        let mut payload = vec![0u8; len];
        from.read_exact(&mut payload).await.ok()?;
        Some(Self { header, payload })
    }

    fn kind(&self) -> u8 {
        self.header[3]
    }

    fn stream(&self) -> u32 {
        let h = &self.header;
        u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff
    }

    /// Whether this frame ends its request (DATA with END_STREAM).
    fn ends_request(&self) -> bool {
        self.kind() == DATA && self.header[4] & END_STREAM != 0
    }

    async fn write(&self, to: &mut (impl AsyncWrite + Unpin)) -> bool {
        to.write_all(&self.header).await.is_ok() && to.write_all(&self.payload).await.is_ok()
    }
}

/// A TCP proxy to etcd that, once armed, holds the next request the client sends — what a
/// stalled member does with a request in its socket — until released, then delivers it to
/// etcd alone: nothing the client sent after it (its cancellation included) ever arrives, and
/// the connection to etcd stays open, as a member that resumes reads what it had received.
#[derive(Default)]
struct HoldingProxy {
    url: String,
    armed: Arc<AtomicBool>,
    /// The held request's stream (on its connection), once one is held.
    held: Arc<AtomicU32>,
    release: Arc<Notify>,
    /// Set when etcd begins answering the held request.
    answered: Arc<Notify>,
}

impl HoldingProxy {
    async fn start(upstream: String) -> Self {
        let mut proxy = Self::default();
        let (armed, held, release, answered) = (
            proxy.armed.clone(),
            proxy.held.clone(),
            proxy.release.clone(),
            proxy.answered.clone(),
        );
        proxy.url = relay(
            upstream,
            move |(client_read, client_write), (server_read, server_write)| {
                // The stream held on this connection, if any.
                let stream = Arc::new(AtomicU32::new(0));
                tokio::spawn(hold_requests(
                    client_read,
                    server_write,
                    armed.clone(),
                    [stream.clone(), held.clone()],
                    release.clone(),
                ));
                tokio::spawn(note_answers(
                    server_read,
                    client_write,
                    stream,
                    answered.clone(),
                ));
            },
        )
        .await;
        proxy
    }

    fn arm(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }

    fn holds_a_request(&self) -> bool {
        self.held.load(Ordering::SeqCst) != 0
    }
}

/// Client to etcd for [`HoldingProxy`]: passes frames on until armed, then holds the next
/// request's frames until released and passes on nothing else.
async fn hold_requests(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    armed: Arc<AtomicBool>,
    held: [Arc<AtomicU32>; 2],
    release: Arc<Notify>,
) {
    let mut preface = [0u8; 24];
    if from.read_exact(&mut preface).await.is_err() || to.write_all(&preface).await.is_err() {
        return;
    }
    let mut request: Vec<Frame> = Vec::new();
    loop {
        let Some(frame) = Frame::read(&mut from).await else {
            return;
        };
        if request.is_empty() {
            if frame.kind() == HEADERS && armed.swap(false, Ordering::SeqCst) {
                for noted in &held {
                    noted.store(frame.stream(), Ordering::SeqCst);
                }
                request.push(frame);
            } else if !frame.write(&mut to).await {
                return;
            }
        } else if frame.stream() == request[0].stream() {
            let ends = frame.ends_request();
            request.push(frame);
            if ends {
                break;
            }
        }
    }
    // Whatever else the client sends is lost in the stalled member.
    tokio::spawn(async move { while Frame::read(&mut from).await.is_some() {} });
    release.notified().await;
    for frame in &request {
        frame.write(&mut to).await;
    }
    // Closing would cancel the request in etcd: keep the connection open.
    std::future::pending::<()>().await;
}

/// etcd to client for [`HoldingProxy`]: passes frames on (while the client listens) and tells
/// when etcd answers the held request.
async fn note_answers(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    held: Arc<AtomicU32>,
    answered: Arc<Notify>,
) {
    let mut client_listens = true;
    while let Some(frame) = Frame::read(&mut from).await {
        if frame.kind() == HEADERS
            && frame.stream() != 0
            && frame.stream() == held.load(Ordering::SeqCst)
        {
            answered.notify_one();
        }
        client_listens = client_listens && frame.write(&mut to).await;
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

/// What a stalled etcd member can do: a create reaches etcd only after the store gave up on it,
/// read the key back (absent), sent the create again elsewhere and was answered; the object was
/// then deleted. The late copy must not create the object again.
#[tokio::test]
async fn a_create_delivered_late_never_applies_after_the_object_was_deleted() {
    let etcd = EtcdServer::start_in_test().await;
    let proxy = HoldingProxy::start(etcd.endpoint()).await;
    // Two "members": the same etcd through the proxy, and directly.
    let mut config = Etcd3Config::new(vec![proxy.url.clone(), etcd.endpoint()]);
    config.request_timeout = Duration::from_secs(2);
    let store = Etcd3Store::connect(config).await.unwrap();
    proxy.arm();
    // Writes go to the members in turn: create until one went through the proxy.
    let mut key = None;
    for i in 0..6 {
        let name = format!("w{i}");
        let k = format!("/widgets/ns/{name}");
        let obj = json!({"metadata": {"name": name, "namespace": "ns", "uid": format!("u-{i}")}});
        store
            .create(&k, obj)
            .await
            .expect("created once sent again");
        if proxy.holds_a_request() {
            key = Some(k);
            break;
        }
    }
    let key = key.expect("a create went through the proxy");
    store
        .delete(&key, ConditionalDelete::default())
        .await
        .expect("deleted");
    proxy.release.notify_one();
    tokio::time::timeout(Duration::from_secs(10), proxy.answered.notified())
        .await
        .expect("etcd answers the late create");
    let mut client = etcd_client::Client::connect([etcd.endpoint()], None)
        .await
        .unwrap();
    let found = client.get(format!("/registry{key}"), None).await.unwrap();
    assert_eq!(found.count(), 0, "the deleted object was created again");
}
