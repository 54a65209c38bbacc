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
use tokio::sync::watch;

use super::response::Body;
use super::status::Status;
use strategy_host_registry::{RegistryStore, RequestScope};
use strategy_host_storage::{ListOptions, WatchEvent};

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

/// Serves a watch on `store` (selectors in `opts`). The response body is the registry's event
/// stream itself, rendered as the connection asks for more: no task or buffer of its own per
/// watch (the cache watcher's buffer is the only one), and a client that goes away drops the
/// stream and with it the cache watcher.
pub(crate) async fn serve(
    store: RegistryStore,
    scope: RequestScope,
    opts: ListOptions,
    timeout: Option<u64>,
    format: WatchFormat,
    mut shutdown: watch::Receiver<bool>,
) -> Response<Body> {
    let (opening_error, events) = match store.watch(&scope, opts).await {
        Ok(events) => (None, Some(events)),
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
            (first, None)
        }
    };
    let deadline =
        tokio::time::Instant::now() + timeout.map_or(DEFAULT_TIMEOUT, Duration::from_secs);
    let ends = async move {
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => {}
            _ = shutdown.changed() => {}
        }
    };
    let mut render = Renderer {
        store,
        scope,
        format,
        first_table: true,
    };
    let protobuf = render.format.protobuf;
    let events = rendered(events, move |event| render.event(event));
    let stream = futures::stream::iter(opening_error)
        .chain(events)
        .take_until(Box::pin(ends))
        .flat_map(|out| futures::stream::iter(out.into_chunks()))
        .map(|b| Ok::<_, std::convert::Infallible>(Frame::data(b)));
    let content_type = if protobuf {
        PROTOBUF_WATCH
    } else {
        "application/json"
    };
    Response::builder()
        .status(200)
        .header(hyper::header::CONTENT_TYPE, content_type)
        .header(hyper::header::CACHE_CONTROL, "no-cache, private")
        .body(BodyExt::boxed_unsync(StreamBody::new(stream)))
        .unwrap_or_else(|_| Response::new(super::response::full(Bytes::new())))
}

/// `events` through `render`, which gives each event's frame and whether it is the last (an
/// ERROR): the stream ends right after that one, and at an event `render` cannot render (an
/// object without a protobuf form: the client relists).
fn rendered<S, F>(events: Option<S>, render: F) -> impl futures::Stream<Item = Out>
where
    S: futures::Stream<Item = WatchEvent> + Unpin,
    F: FnMut(&WatchEvent) -> Option<(Out, bool)>,
{
    futures::stream::unfold(events.map(|events| (events, render)), |state| async move {
        let (mut events, mut render) = state?;
        let event = events.next().await?;
        let (out, last) = render(&event)?;
        Some((out, (!last).then_some((events, render))))
    })
}

/// Renders one watch's events in its format.
struct Renderer {
    store: RegistryStore,
    scope: RequestScope,
    format: WatchFormat,
    /// The first Table event carries the column definitions.
    first_table: bool,
}

impl Renderer {
    /// The event's frame and whether it is the stream's last, or `None` when it cannot be
    /// rendered (an object without a protobuf form: the stream ends and the client relists).
    fn event(&mut self, event: &WatchEvent) -> Option<(Out, bool)> {
        let last = matches!(event, WatchEvent::Error(_));
        if self.format.protobuf {
            let object = match event {
                WatchEvent::Error(e) => Status::from(&**e).to_json(),
                WatchEvent::Bookmark(o)
                | WatchEvent::Added(o)
                | WatchEvent::Modified(o)
                | WatchEvent::Deleted(o) => {
                    // The shared body, encoded once for every watcher of this version.
                    let shared = super::protobuf::shared::watch_frame(event.type_name(), o);
                    if let Some(parts) = shared {
                        return Some((Out::Parts(parts), last));
                    }
                    o.to_value()
                }
            };
            return protobuf_frame(event.type_name(), &object).map(|b| (Out::Whole(b), last));
        }
        let object = match event {
            WatchEvent::Error(e) => Bytes::from(Status::from(&**e).to_json().to_string()),
            WatchEvent::Bookmark(o) => o.json(),
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o)
                if self.format.table =>
            {
                let meta = json!({"resourceVersion": o.revision().to_string()});
                let t = super::table::table(
                    self.store.definition(),
                    &self.scope.version,
                    &[o.to_value()],
                    meta,
                    &self.format.include_object,
                    std::mem::take(&mut self.first_table),
                );
                Bytes::from(t.to_string())
            }
            // The shared object's bytes, encoded once for every watcher and never copied.
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => o.json(),
        };
        Some((Out::Line(event.type_name(), object), last))
    }
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

/// One rendered event, as the connection is handed it.
enum Out {
    /// A frame written as it is (protobuf).
    Whole(Bytes),
    /// A protobuf frame: the event's head, then the object's shared body, which goes to every
    /// watcher without a copy.
    Parts([Bytes; 2]),
    /// A JSON line `{"type":KIND,"object":OBJECT}` around an object already encoded: written
    /// as three chunks, so the object's shared bytes go to every watcher without a copy.
    Line(&'static str, Bytes),
}

impl Out {
    fn into_chunks(self) -> impl Iterator<Item = Bytes> {
        let chunks = match self {
            Self::Whole(bytes) => [Some(bytes), None, None],
            Self::Parts([head, body]) => [Some(head), Some(body), None],
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

#[cfg(test)]
mod tests {
    use super::*;
    use strategy_host_storage::StorageError;

    /// Renders every event as a frame of its type name; `unrenderable` names one it cannot.
    fn by_type(unrenderable: &'static str) -> impl FnMut(&WatchEvent) -> Option<(Out, bool)> {
        move |event| {
            let kind = event.type_name();
            (kind != unrenderable).then(|| {
                let last = matches!(event, WatchEvent::Error(_));
                (Out::Whole(Bytes::from_static(kind.as_bytes())), last)
            })
        }
    }

    /// The frames of `events` (a stream that never ends after them: the watch stays open).
    async fn frames(events: Vec<WatchEvent>, unrenderable: &'static str) -> Vec<Bytes> {
        let open = futures::stream::iter(events).chain(futures::stream::pending());
        let stream = rendered(Some(open), by_type(unrenderable))
            .flat_map(|out| futures::stream::iter(out.into_chunks()));
        tokio::time::timeout(Duration::from_secs(5), stream.collect::<Vec<_>>())
            .await
            .expect("the stream ends by itself")
    }

    #[tokio::test]
    async fn an_error_event_is_sent_and_ends_the_stream_at_once() {
        let events = vec![
            WatchEvent::bookmark(1),
            WatchEvent::error(StorageError::Internal("gone".into())),
            WatchEvent::bookmark(2),
        ];
        assert_eq!(frames(events, "").await, ["BOOKMARK", "ERROR"]);
    }

    #[tokio::test]
    async fn an_event_without_a_rendering_ends_the_stream_unsent() {
        let events = vec![
            WatchEvent::bookmark(1),
            WatchEvent::error(StorageError::Internal("x".into())),
        ];
        assert_eq!(frames(events, "ERROR").await, ["BOOKMARK"]);
    }

    #[test]
    fn a_json_line_is_its_three_chunks() {
        let chunks: Vec<Bytes> = Out::Line("ADDED", Bytes::from_static(b"{}"))
            .into_chunks()
            .collect();
        assert_eq!(
            chunks.concat(),
            br#"{"type":"ADDED","object":{}}
"#
        );
    }
}
