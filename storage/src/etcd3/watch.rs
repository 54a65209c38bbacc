//! `watch`: an etcd watch per caller, translated into Kubernetes watch events, that survives
//! etcd restarts (Kubernetes' `etcd3/watcher.go`, plus the resumption the Go client does).
//!
//! Each watch runs in its own task: it reads the etcd stream as fast as etcd sends and hands
//! events to the caller through an unbounded channel (as the Go client buffers per watcher), so a
//! slow consumer never holds up the shared connection or other watchers; the layer above
//! (the cacher) bounds what it keeps per client. When the stream fails or ends, the task
//! reconnects with backoff and re-watches from the revision after the last one it delivered, so
//! nothing is lost or repeated; if that revision was compacted meanwhile it ends with an
//! `Expired` error and the client relists. Dropping the stream aborts the task, which cancels
//! the etcd watch.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use etcd_client::{Event, EventType, WatchOptions, WatchResponse};
use futures::Stream;
use tokio::sync::broadcast;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;

use super::kv::{shared_kv, watch_client};
use super::{from_etcd_revision, header_revision, to_etcd_revision, Etcd3Store};
use crate::encryption::Encryption;
use crate::error::{Result, StorageError};
use crate::key;
use crate::options::ListOptions;
use crate::predicate::SelectionPredicate;
use crate::watch::{Change, WatchEvent, WatchStream};

/// The first pause before re-watching after the stream broke; doubled up to `MAX_BACKOFF`.
const INITIAL_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// What one watch covers: a key, or a range of keys.
#[derive(Debug, Clone)]
struct WatchRange {
    key: String,
    range_end: Option<Vec<u8>>,
}

/// What one watch delivers and where it is.
struct Watcher {
    store: Etcd3Store,
    range: WatchRange,
    predicate: SelectionPredicate,
    bookmarks: bool,
    /// The next revision to deliver: everything before it has been delivered.
    next: u64,
    tx: UnboundedSender<WatchEvent>,
    /// Progress requests from `Storage::request_watch_progress` (bookmark watches only).
    progress: Option<broadcast::Receiver<()>>,
}

/// What to do after one etcd watch response.
enum Flow {
    Continue,
    Reconnect,
    Stop,
}

impl Etcd3Store {
    /// `Storage::watch`.
    pub(super) async fn watch_key(&self, key: &str, opts: ListOptions) -> Result<WatchStream> {
        let full_key = self.full_key(key)?;
        let range = if opts.recursive {
            let prefix = key::recursive_prefix(&full_key);
            WatchRange {
                range_end: Some(key::prefix_range_end(&prefix)),
                key: prefix,
            }
        } else {
            WatchRange {
                key: full_key,
                range_end: None,
            }
        };
        let (tx, rx) = unbounded_channel();
        let next = match opts.parsed_resource_version()? {
            Some(rv) if rv > 0 => rv + 1,
            _ => {
                // "" and "0": the current state as ADDED events, then changes after it.
                let initial = ListOptions {
                    recursive: opts.recursive,
                    predicate: opts.predicate.clone(),
                    ..Default::default()
                };
                let state = self.list(key, initial).await?;
                for obj in state.items {
                    let _ = tx.send(WatchEvent::Added(obj));
                }
                state.resource_version + 1
            }
        };
        let stream = self.open_watch(&range, next).await?;
        let progress = opts
            .allow_bookmarks
            .then(|| self.inner.progress.subscribe());
        let watcher = Watcher {
            progress,
            store: self.clone(),
            range,
            predicate: opts.predicate,
            bookmarks: opts.allow_bookmarks,
            next,
            tx,
        };
        let task = tokio::spawn(watcher.run(stream));
        Ok(Box::pin(EventStream { rx, task }))
    }

    /// Opens an etcd watch on `range` from revision `start` (inclusive), on a member in
    /// rotation (on another one if that one fails: opening a watch changes nothing).
    async fn open_watch(&self, range: &WatchRange, start: u64) -> Result<etcd_client::WatchStream> {
        let mut options = WatchOptions::new()
            .with_start_revision(to_etcd_revision(start)?)
            .with_prev_key()
            .with_progress_notify();
        if let Some(end) = &range.range_end {
            options = options.with_range(end.clone());
        }
        self.read(|client| {
            let (key, options) = (range.key.clone(), options.clone());
            async move { watch_client(&client).watch(key, Some(options)).await }
        })
        .await
    }
}

/// Waits for the next progress request; false when no more can come. Never resolves for a
/// watch without bookmarks.
async fn next_progress_request(progress: &mut Option<broadcast::Receiver<()>>) -> bool {
    match progress {
        None => std::future::pending().await,
        Some(rx) => match rx.recv().await {
            Ok(()) | Err(broadcast::error::RecvError::Lagged(_)) => true,
            Err(broadcast::error::RecvError::Closed) => false,
        },
    }
}

impl Watcher {
    /// Delivers events until the consumer goes away or the watch expires, re-watching whenever
    /// the etcd stream breaks.
    async fn run(mut self, first: etcd_client::WatchStream) {
        let mut stream = Some(first);
        let mut backoff = INITIAL_BACKOFF;
        loop {
            let mut current = match stream.take() {
                Some(s) => s,
                None => {
                    let opened = tokio::select! {
                        _ = self.tx.closed() => return,
                        opened = self.store.open_watch(&self.range, self.next) => opened,
                    };
                    match opened {
                        Ok(s) => s,
                        Err(e) => {
                            tracing::debug!(key = %self.range.key, error = %e, "etcd re-watch failed");
                            if !self.pause(&mut backoff).await {
                                return;
                            }
                            continue;
                        }
                    }
                }
            };
            loop {
                let message = tokio::select! {
                    _ = self.tx.closed() => return,
                    asked = next_progress_request(&mut self.progress) => {
                        if !asked {
                            self.progress = None;
                        } else if let Err(e) = current.request_progress().await {
                            tracing::debug!(key = %self.range.key, error = %e, "progress request failed");
                        }
                        continue;
                    }
                    message = current.message() => message,
                };
                let flow = match message {
                    Ok(Some(resp)) => {
                        backoff = INITIAL_BACKOFF;
                        self.handle(resp)
                    }
                    Ok(None) => Flow::Reconnect,
                    Err(e) => {
                        tracing::debug!(key = %self.range.key, error = %e, "etcd watch broke");
                        Flow::Reconnect
                    }
                };
                match flow {
                    Flow::Continue => {}
                    Flow::Reconnect => break,
                    Flow::Stop => return,
                }
            }
            drop(current);
            if !self.pause(&mut backoff).await {
                return;
            }
        }
    }

    /// Waits out the backoff; false when the consumer went away meanwhile.
    async fn pause(&self, backoff: &mut Duration) -> bool {
        let wait = *backoff;
        *backoff = (*backoff * 2).min(MAX_BACKOFF);
        tokio::select! {
            _ = self.tx.closed() => false,
            _ = tokio::time::sleep(wait) => true,
        }
    }

    fn handle(&mut self, resp: WatchResponse) -> Flow {
        if resp.compact_revision() > 0 {
            let oldest = from_etcd_revision(resp.compact_revision());
            let err = StorageError::compacted(self.next - 1, oldest.saturating_sub(1));
            let _ = self.tx.send(WatchEvent::error(err));
            return Flow::Stop;
        }
        if resp.canceled() {
            // etcd cancels a watch for good (e.g. permission denied): end it, as Kubernetes does.
            let err = StorageError::Internal(format!(
                "etcd canceled the watch on {}: {}",
                self.range.key,
                resp.cancel_reason()
            ));
            let _ = self.tx.send(WatchEvent::error(err));
            return Flow::Stop;
        }
        if resp.created() {
            return Flow::Continue;
        }
        if resp.events().is_empty() {
            // A progress notification: every event up to the header's revision was sent.
            let Ok(revision) = header_revision(resp.header()) else {
                return Flow::Continue;
            };
            if revision + 1 >= self.next {
                self.next = revision + 1;
                if self.bookmarks && self.tx.send(WatchEvent::bookmark(revision)).is_err() {
                    return Flow::Stop;
                }
            }
            return Flow::Continue;
        }
        let mut last = None;
        for event in resp.events() {
            let change = match to_change(self.store.encryption(), event) {
                Ok(Some(change)) => change,
                Ok(None) => continue,
                Err(e) => {
                    let _ = self.tx.send(WatchEvent::error(e));
                    return Flow::Stop;
                }
            };
            // Already delivered before a reconnect.
            if change.revision < self.next {
                continue;
            }
            last = Some(change.revision);
            if let Some(ev) = change.to_event(&self.predicate) {
                if self.tx.send(ev).is_err() {
                    return Flow::Stop;
                }
            }
        }
        // All events of a revision arrive in one response, so the revision is complete.
        if let Some(revision) = last {
            self.next = self.next.max(revision + 1);
        }
        Flow::Continue
    }
}

/// Turns one etcd event into a change; `None` for an event without a key-value.
fn to_change(encryption: &Encryption, event: &Event) -> Result<Option<Change>> {
    let Some(kv) = event.kv() else {
        return Ok(None);
    };
    let key = String::from_utf8_lossy(kv.key()).into_owned();
    let revision = from_etcd_revision(kv.mod_revision());
    let previous = event
        .prev_kv()
        .map(|prev| shared_kv(encryption, &key, prev))
        .transpose()?;
    let change = match event.event_type() {
        EventType::Put => {
            let current = shared_kv(encryption, &key, kv)?;
            let previous = if kv.create_revision() == kv.mod_revision() {
                None
            } else {
                // An update whose previous state etcd no longer has still reads as a
                // modification of the object.
                previous.or_else(|| Some(current.clone()))
            };
            Change {
                revision,
                previous,
                current: Some(current),
            }
        }
        EventType::Delete => Change {
            revision,
            previous,
            current: None,
        },
    };
    Ok(Some(change))
}

/// The caller's end of a watch; dropping it stops the watch task.
struct EventStream {
    rx: UnboundedReceiver<WatchEvent>,
    task: JoinHandle<()>,
}

impl Stream for EventStream {
    type Item = WatchEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<WatchEvent>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for EventStream {
    fn drop(&mut self) {
        self.task.abort();
    }
}
