//! `GET /storage/snapshot`: a consistent snapshot of the whole store, streamed as it is read
//! (the format of [`strategy_host_storage::snapshot`]); what `etcdctl snapshot save` is to etcd.
//! RBAC admits cluster administrators only (a non-resource path no default role grants). A
//! failure part way ends the stream without its trailer, so the file reads as cut off.

use std::convert::Infallible;

use bytes::Bytes;
use futures::StreamExt as _;
use http_body_util::{BodyExt as _, StreamBody};
use hyper::body::Frame;
use hyper::Response;

use super::response::{self, Body};
use super::state::AppState;
use super::status::Status;
use strategy_host_storage::snapshot::{entry_line, header_line, trailer_line, SnapshotEntry};

/// The media type of a snapshot (JSON lines).
const MEDIA_TYPE: &str = "application/jsonl";

/// Where the stream is.
enum Phase {
    Header,
    Entries,
    Done,
}

/// Streams a snapshot of `state`'s store.
pub(crate) async fn save(state: &AppState) -> Response<Body> {
    let snapshot = match state.storage.snapshot().await {
        Ok(s) => s,
        Err(e) => return response::status(&Status::from(&e)),
    };
    let revision = snapshot.revision;
    tracing::info!(revision, "streaming a snapshot of the store");
    let start = (Phase::Header, snapshot.entries, 0u64);
    let chunks = futures::stream::unfold(start, move |(phase, mut entries, objects)| async move {
        match phase {
            Phase::Header => Some((header_line(revision), (Phase::Entries, entries, objects))),
            Phase::Entries => match entries.next().await {
                Some(Ok(chunk)) => match lines(&chunk) {
                    Ok(bytes) => {
                        let objects = objects + chunk.len() as u64;
                        Some((bytes, (Phase::Entries, entries, objects)))
                    }
                    Err(e) => failed(&e),
                },
                Some(Err(e)) => failed(&e),
                None => {
                    tracing::info!(revision, objects, "snapshot streamed");
                    Some((trailer_line(objects), (Phase::Done, entries, objects)))
                }
            },
            Phase::Done => None,
        }
    });
    let body = chunks.map(|b| Ok::<_, Infallible>(Frame::data(Bytes::from(b))));
    Response::builder()
        .status(200)
        .header(hyper::header::CONTENT_TYPE, MEDIA_TYPE)
        .body(StreamBody::new(body).boxed_unsync())
        .unwrap_or_else(|_| Response::new(response::full(Bytes::new())))
}

fn lines(chunk: &[SnapshotEntry]) -> strategy_host_storage::Result<Vec<u8>> {
    let mut out = Vec::new();
    for entry in chunk {
        out.extend(entry_line(entry)?);
    }
    Ok(out)
}

fn failed<T>(e: &strategy_host_storage::StorageError) -> Option<T> {
    tracing::error!(error = %e, "the snapshot failed part way: its stream ends without a trailer");
    None
}
