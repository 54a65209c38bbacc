//! Watch streams over HTTP: `application/json`, one `{"type","object"}` line per event, each
//! flushed as its own chunk; an ERROR event carries a `Status` and ends the stream; the stream
//! also ends at `timeoutSeconds` and when the server shuts down.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt as _;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper::Response;
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch};

use super::response::Body;
use super::status::Status;
use crate::registry::{RegistryStore, RequestScope};
use crate::storage::{ListOptions, WatchEvent};

/// The longest a watch runs when the client gives no `timeoutSeconds` (Kubernetes picks 30-60 min).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

/// How events are rendered.
#[derive(Debug, Clone)]
pub struct WatchFormat {
    /// Render objects as one-row Tables.
    pub table: bool,
    /// `includeObject` for tables.
    pub include_object: String,
}

/// Serves a watch on `store` (selectors in `opts`).
pub async fn serve(
    store: RegistryStore,
    scope: RequestScope,
    opts: ListOptions,
    timeout: Option<u64>,
    format: WatchFormat,
    mut shutdown: watch::Receiver<bool>,
) -> Response<Body> {
    let send_initial = opts.send_initial_events;
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    let opened = store.watch(&scope, opts).await;
    let mut events = match opened {
        Ok(events) => Some(events),
        Err(e) => {
            let status = Status::from(&e);
            // An expired resourceVersion is reported in-stream, as Kubernetes does.
            if status.code != 410 {
                return super::response::status(&status);
            }
            let _ = tx.try_send(line(&json!({"type": "ERROR", "object": status.to_json()})));
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
        let mut initial_end_pending = send_initial;
        loop {
            let event = tokio::select! {
                e = events.next() => e,
                () = tokio::time::sleep_until(deadline) => None,
                _ = shutdown.changed() => None,
                () = tx.closed() => None,
            };
            let Some(event) = event else { break };
            let (kind, object, last) = match event {
                WatchEvent::Bookmark(rev) => {
                    let def = store.definition();
                    let mut meta = json!({"resourceVersion": rev.to_string()});
                    if initial_end_pending {
                        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
                        initial_end_pending = false;
                    }
                    let obj = json!({"kind": def.kind, "apiVersion": def.api_version(&scope.version), "metadata": meta});
                    ("BOOKMARK", obj, false)
                }
                WatchEvent::Error(e) => ("ERROR", Status::from(&e).to_json(), true),
                WatchEvent::Added(o) => ("ADDED", o, false),
                WatchEvent::Modified(o) => ("MODIFIED", o, false),
                WatchEvent::Deleted(o) => ("DELETED", o, false),
            };
            let object = if matches!(kind, "ADDED" | "MODIFIED" | "DELETED") {
                let obj = store.to_version(object, &scope.version);
                if format.table {
                    let meta = json!({"resourceVersion": obj.pointer("/metadata/resourceVersion").cloned().unwrap_or_default()});
                    let t = super::table::table(
                        store.definition(),
                        &scope.version,
                        &[obj],
                        meta,
                        &format.include_object,
                        first_table,
                    );
                    first_table = false;
                    t
                } else {
                    obj
                }
            } else {
                object
            };
            if tx
                .send(line(&json!({"type": kind, "object": object})))
                .await
                .is_err()
                || last
            {
                break;
            }
        }
    });
    let stream = tokio_stream::wrappers::ReceiverStream::new(rx)
        .map(|b| Ok::<_, std::convert::Infallible>(Frame::data(b)));
    Response::builder()
        .status(200)
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header(hyper::header::CACHE_CONTROL, "no-cache, private")
        .body(BodyExt::boxed(StreamBody::new(stream)))
        .unwrap_or_else(|_| Response::new(super::response::full(Bytes::new())))
}

fn line(v: &Value) -> Bytes {
    let mut bytes = serde_json::to_vec(v).unwrap_or_default();
    bytes.push(b'\n');
    Bytes::from(bytes)
}
