//! Watch streams over HTTP: frames the registry's events (already at the request's version) as
//! length-prefixed Kubernetes protobuf frames when the client prefers them (built-in kinds), or as
//! `application/json` lines, `{"type","object"}` around the shared object's bytes (which every
//! watcher of the same version is sent without a copy); an ERROR event carries a `Status` and ends the stream; the stream also ends
//! at `timeoutSeconds` and when the server shuts down.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt as _;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper::Response;
use serde_json::json;
use tokio::sync::{mpsc, watch};

use super::response::Body;
use super::status::Status;
use crate::registry::{RegistryStore, RequestScope};
use crate::storage::{ListOptions, WatchEvent};

/// The longest a watch runs when the client gives no `timeoutSeconds` (Kubernetes picks 30-60 min).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

/// How events are rendered.
#[derive(Debug, Clone)]
pub(crate) struct WatchFormat {
    /// Render objects as one-row Tables.
    pub table: bool,
    /// `includeObject` for tables.
    pub include_object: String,
    /// Kubernetes protobuf frames (length-prefixed `WatchEvent`s) instead of JSON lines.
    pub protobuf: bool,
}

/// Serves a watch on `store` (selectors in `opts`).
pub(crate) async fn serve(
    store: RegistryStore,
    scope: RequestScope,
    opts: ListOptions,
    timeout: Option<u64>,
    format: WatchFormat,
    mut shutdown: watch::Receiver<bool>,
) -> Response<Body> {
    let (tx, rx) = mpsc::channel::<Out>(64);
    let opened = store.watch(&scope, opts).await;
    let mut events = match opened {
        Ok(events) => Some(events),
        Err(e) => {
            let status = Status::from(&e);
            // An expired resourceVersion is reported in-stream, as Kubernetes does.
            if status.code != 410 {
                return super::response::status(&status);
            }
            let error = status.to_json();
            let first = if format.protobuf {
                protobuf_frame("ERROR", &error).map(Out::Whole)
            } else {
                Some(Out::Line("ERROR", Bytes::from(error.to_string())))
            };
            if let Some(first) = first {
                let _ = tx.try_send(first);
            }
            None
        }
    };
    let deadline =
        tokio::time::Instant::now() + timeout.map_or(DEFAULT_TIMEOUT, Duration::from_secs);
    tokio::spawn(async move {
        let Some(events) = events.as_mut() else {
            return;
        };
        let mut first_table = true;
        loop {
            let event = tokio::select! {
                e = events.next() => e,
                () = tokio::time::sleep_until(deadline) => None,
                _ = shutdown.changed() => None,
                () = tx.closed() => None,
            };
            let Some(event) = event else { break };
            let last = matches!(event, WatchEvent::Error(_));
            if format.protobuf {
                let object = match &event {
                    WatchEvent::Error(e) => Status::from(&**e).to_json(),
                    WatchEvent::Bookmark(o)
                    | WatchEvent::Added(o)
                    | WatchEvent::Modified(o)
                    | WatchEvent::Deleted(o) => o.to_value(),
                };
                // An object without a protobuf form ends the stream; the client relists.
                let Some(bytes) = protobuf_frame(event.type_name(), &object) else {
                    break;
                };
                if tx.send(Out::Whole(bytes)).await.is_err() || last {
                    break;
                }
                continue;
            }
            let object = match &event {
                WatchEvent::Error(e) => Bytes::from(Status::from(&**e).to_json().to_string()),
                WatchEvent::Bookmark(o) => o.json(),
                WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o)
                    if format.table =>
                {
                    let meta = json!({"resourceVersion": o.revision().to_string()});
                    let t = super::table::table(
                        store.definition(),
                        &scope.version,
                        &[o.to_value()],
                        meta,
                        &format.include_object,
                        first_table,
                    );
                    first_table = false;
                    Bytes::from(t.to_string())
                }
                // The shared object's bytes, encoded once for every watcher and never copied.
                WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => o.json(),
            };
            if tx.send(Out::Line(event.type_name(), object)).await.is_err() || last {
                break;
            }
        }
    });
    let stream = tokio_stream::wrappers::ReceiverStream::new(rx)
        .flat_map(|out| futures::stream::iter(out.into_chunks()))
        .map(|b| Ok::<_, std::convert::Infallible>(Frame::data(b)));
    let content_type = if format.protobuf {
        PROTOBUF_WATCH
    } else {
        "application/json"
    };
    Response::builder()
        .status(200)
        .header(hyper::header::CONTENT_TYPE, content_type)
        .header(hyper::header::CACHE_CONTROL, "no-cache, private")
        .body(BodyExt::boxed(StreamBody::new(stream)))
        .unwrap_or_else(|_| Response::new(super::response::full(Bytes::new())))
}

/// The content type of a protobuf watch stream.
const PROTOBUF_WATCH: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// One length-prefixed protobuf `WatchEvent` frame, or `None` (logged) when the object has no
/// protobuf form.
fn protobuf_frame(kind: &str, object: &serde_json::Value) -> Option<Bytes> {
    match super::protobuf::encode_watch_frame(kind, object) {
        Ok(Some(bytes)) => Some(Bytes::from(bytes)),
        Ok(None) => {
            tracing::warn!(
                kind,
                "ending a protobuf watch: the object has no protobuf form"
            );
            None
        }
        Err(e) => {
            tracing::warn!(kind, error = %e, "ending a protobuf watch: the object does not encode");
            None
        }
    }
}

/// What the watch task hands the connection.
enum Out {
    /// A frame written as it is (protobuf).
    Whole(Bytes),
    /// A JSON line `{"type":KIND,"object":OBJECT}` around an object already encoded: written
    /// as three chunks, so the object's shared bytes go to every watcher without a copy.
    Line(&'static str, Bytes),
}

impl Out {
    fn into_chunks(self) -> impl Iterator<Item = Bytes> {
        let chunks = match self {
            Self::Whole(bytes) => [Some(bytes), None, None],
            Self::Line(kind, object) => [
                Some(line_start(kind)),
                Some(object),
                Some(Bytes::from_static(b"}\n")),
            ],
        };
        chunks.into_iter().flatten()
    }
}

/// `{"type":"KIND","object":` for each event type.
fn line_start(kind: &'static str) -> Bytes {
    Bytes::from_static(match kind {
        "ADDED" => br#"{"type":"ADDED","object":"#,
        "MODIFIED" => br#"{"type":"MODIFIED","object":"#,
        "DELETED" => br#"{"type":"DELETED","object":"#,
        "BOOKMARK" => br#"{"type":"BOOKMARK","object":"#,
        _ => br#"{"type":"ERROR","object":"#,
    })
}
