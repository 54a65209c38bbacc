//! Response building: the body type (whole or streamed), object replies (JSON or protobuf),
//! JSON and `Status` replies, and
//! `Warning: 299` headers.

use std::convert::Infallible;

use bytes::Bytes;
use futures::StreamExt as _;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::Response;
use serde_json::Value;

use super::status::Status;
use strategy_host_registry::ListPage;

/// The body of every response.
pub(crate) type Body = UnsyncBoxBody<Bytes, Infallible>;

/// `response` with `guard` held until its body is sent whole or abandoned (hyper drops it
/// then): what a request holds covers writing its response, as in Kubernetes, where the handler
/// writes the body before it returns.
pub(crate) fn holding<G: Send + Unpin + 'static>(
    response: Response<Body>,
    guard: G,
) -> Response<Body> {
    response.map(|body| {
        Holding {
            body,
            _guard: guard,
        }
        .boxed_unsync()
    })
}

/// A body and what it holds.
struct Holding<G> {
    body: Body,
    _guard: G,
}

impl<G: Unpin> hyper::body::Body for Holding<G> {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        std::pin::Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// A whole body.
pub(crate) fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed_unsync()
}

/// Formats one warning as Kubernetes' `299 - "text"`.
pub(crate) fn warning_header(text: &str) -> String {
    let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
    let printable: String = escaped
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    format!("299 - \"{printable}\"")
}

/// A JSON reply with warnings.
pub(crate) fn json(code: u16, value: &Value, warnings: &[String]) -> Response<Body> {
    json_bytes(
        code,
        serde_json::to_vec(value).unwrap_or_default(),
        warnings,
    )
}

/// A JSON reply whose body is already encoded (a shared object's bytes).
pub(crate) fn json_bytes(code: u16, body: impl Into<Bytes>, warnings: &[String]) -> Response<Body> {
    let mut builder = Response::builder()
        .status(code)
        .header(hyper::header::CONTENT_TYPE, "application/json");
    for w in warnings {
        builder = builder.header("Warning", warning_header(w));
    }
    builder
        .body(full(body))
        .unwrap_or_else(|_| Response::new(full(Bytes::new())))
}

/// An object reply in the client's preferred encoding: Kubernetes protobuf when `protobuf` and
/// the object's kind has a protobuf form, else JSON.
pub(crate) fn object(
    code: u16,
    value: &Value,
    warnings: &[String],
    protobuf: bool,
) -> Response<Body> {
    if protobuf {
        match super::protobuf::encode(value) {
            Ok(Some(bytes)) => {
                let mut builder = Response::builder()
                    .status(code)
                    .header(hyper::header::CONTENT_TYPE, super::protobuf::PROTOBUF);
                for w in warnings {
                    builder = builder.header("Warning", warning_header(w));
                }
                return builder
                    .body(full(bytes))
                    .unwrap_or_else(|_| Response::new(full(Bytes::new())));
            }
            Ok(None) => {}
            // The stored object does not fit its protobuf message (a field of the wrong type):
            // JSON still carries it, and the client accepts JSON too.
            Err(e) => tracing::warn!(error = %e, "serving JSON: the object has no protobuf form"),
        }
    }
    json(code, value, warnings)
}

/// The most list bytes one chunk of a streamed list carries before it is handed to the
/// connection (items are never split).
const LIST_CHUNK: usize = 64 * 1024;

/// A 200 JSON list, written item by item while the client reads (as Kubernetes streams list
/// encoding since 1.34): the items' shared bytes are copied into chunks of about
/// [`LIST_CHUNK`] as the connection asks for more, so concurrent lists hold no whole body.
pub(crate) fn json_list(page: ListPage) -> Response<Body> {
    let head = Bytes::from(page.json_head());
    streamed_list(
        "application/json",
        head,
        page.items,
        ListPage::JSON_TAIL,
        |i, item, chunk| {
            if i > 0 {
                chunk.push(b',');
            }
            chunk.extend_from_slice(&item.json());
        },
    )
}

/// A protobuf object reply whose body is already encoded (a shared object's).
pub(crate) fn protobuf_body(code: u16, body: Bytes) -> Response<Body> {
    Response::builder()
        .status(code)
        .header(hyper::header::CONTENT_TYPE, super::protobuf::PROTOBUF)
        .body(full(body))
        .unwrap_or_else(|_| Response::new(full(Bytes::new())))
}

/// A 200 protobuf list, written item by item while the client reads, like [`json_list`]: each
/// item's shared message behind its key and length.
pub(crate) fn protobuf_list(list: super::protobuf::shared::ListBody) -> Response<Body> {
    streamed_list(
        super::protobuf::PROTOBUF,
        list.head,
        list.items,
        super::protobuf::shared::ListBody::TAIL,
        |_, item, chunk| {
            super::protobuf::shared::item_key(item, chunk);
            chunk.extend_from_slice(item);
        },
    )
}

/// A 200 list response of `content_type`: `head`, then the `items` as `write` appends each (its
/// index, itself) to chunks of about [`LIST_CHUNK`] made as the connection asks for more, then
/// `tail`.
fn streamed_list<T: Send + 'static>(
    content_type: &'static str,
    head: Bytes,
    items: Vec<T>,
    tail: &'static [u8],
    write: fn(usize, &T, &mut Vec<u8>),
) -> Response<Body> {
    let chunks = futures::stream::unfold(Some((items, 0)), move |state| async move {
        let (items, next) = state?;
        if next >= items.len() {
            return Some((Bytes::from_static(tail), None));
        }
        let mut chunk = Vec::with_capacity(LIST_CHUNK + 1024);
        let mut i = next;
        while i < items.len() && chunk.len() < LIST_CHUNK {
            write(i, &items[i], &mut chunk);
            i += 1;
        }
        Some((Bytes::from(chunk), Some((items, i))))
    });
    let body = futures::stream::once(async move { head })
        .chain(chunks)
        .map(|b| Ok::<_, Infallible>(Frame::data(b)));
    Response::builder()
        .status(200)
        .header(hyper::header::CONTENT_TYPE, content_type)
        .body(BodyExt::boxed_unsync(StreamBody::new(body)))
        .unwrap_or_else(|_| Response::new(full(Bytes::new())))
}

/// A plain-text reply.
pub(crate) fn text(code: u16, text: String) -> Response<Body> {
    typed(code, "text/plain; charset=utf-8", text)
}

/// A 200 JSON response with a content type of its own (aggregated discovery's), varying by
/// `Accept`.
pub(crate) fn json_as(value: &Value, content_type: &'static str) -> Response<Body> {
    let mut response = typed(200, content_type, value.to_string());
    response.headers_mut().insert(
        hyper::header::VARY,
        hyper::header::HeaderValue::from_static("Accept"),
    );
    response
}

/// A 200 response in the OpenMetrics text format (what prometheus-client encodes).
pub(crate) fn open_metrics(text: String) -> Response<Body> {
    typed(
        200,
        "application/openmetrics-text; version=1.0.0; charset=utf-8",
        text,
    )
}

/// A response of `content_type` with `body` as it is.
pub(crate) fn bytes(code: u16, content_type: &'static str, body: Vec<u8>) -> Response<Body> {
    Response::builder()
        .status(code)
        .header(hyper::header::CONTENT_TYPE, content_type)
        .body(full(body))
        .unwrap_or_else(|_| Response::new(full(Bytes::new())))
}

fn typed(code: u16, content_type: &'static str, body: String) -> Response<Body> {
    bytes(code, content_type, body.into_bytes())
}

/// A `Status` reply (with `Retry-After` when it says so). The response's extensions keep the
/// `Status`, for the audit log's `responseStatus`.
pub(crate) fn status(s: &Status) -> Response<Body> {
    let mut resp = json(s.code, &s.to_json(), &[]);
    resp.extensions_mut().insert(s.clone());
    if s.code == 429 || s.closes_connection {
        // A 429 answers before the request body is read, and an unread body ends the HTTP/1
        // connection: say so, or a keep-alive client sends its next request into a closed socket.
        resp.headers_mut().insert(
            hyper::header::CONNECTION,
            hyper::header::HeaderValue::from_static("close"),
        );
    }
    if let Some(secs) = s.retry_after_seconds {
        if let Ok(v) = hyper::header::HeaderValue::from_str(&secs.to_string()) {
            resp.headers_mut().insert(hyper::header::RETRY_AFTER, v);
        }
    }
    resp
}
