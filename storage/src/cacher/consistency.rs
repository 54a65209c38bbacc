//! How a consistent read learns that the cache is current, so it is served from memory
//! (KEP-2340): the cache must have seen every change up to the store's current revision.
//!
//! Where the store below answers progress requests in order (etcd ≥ 3.4.31, the embedded
//! store), the read asks for the current revision and waits for the progress bookmark. Where it
//! does not (Debian's etcd 3.4.23), the cache's revision only moves with changes under its own
//! prefix, so instead one small transaction proves that nothing under the prefix changed since
//! the cache's revision. Either request is a probe that concurrent reads share: every read
//! waiting when one is sent uses its answer. The proof costs etcd a read of every key and value
//! under the prefix, so only whole-prefix lists use it: a consistent get or page goes to the
//! store below instead (see `reads.rs`).
//!
//! A consistent read the cache could not catch up for in time is answered by the store below,
//! ahead of the cache; reads at resourceVersion "0" then wait for the cache to pass what that
//! read showed (or go to the store too), so a client never reads back in time through one host.
//!
//! A probe runs as a task of its own, never inside the read that sent it: a read's future may
//! be kept but no longer polled (a follower's stream paused inside `tokio::select!` while its
//! task awaits something else), and a probe held by such a future would hold up every other
//! consistent read of the resource for good.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::{BoxFuture, FutureExt as _, Shared as SharedFuture};

use super::Shared;

/// Concurrent consistent reads share progress requests sent this close together.
const PROGRESS_REQUEST_SPACING: Duration = Duration::from_millis(2);
/// A consistent read still waiting after this asks for progress again (the answer may have
/// predated its revision).
const PROGRESS_REQUEST_RETRY: Duration = Duration::from_millis(20);
/// A failed proof (a change under the prefix the cache has not applied yet) is retried once the
/// cache moves, or after this long.
const PROOF_RETRY: Duration = Duration::from_millis(20);

/// The state consistent reads share.
#[derive(Debug)]
pub(super) struct Consistency {
    /// When a progress request last went to the store below (coalesces concurrent readers).
    last_progress_request: std::sync::Mutex<Option<std::time::Instant>>,
    /// Whether the store below answers progress requests in order: [`UNKNOWN`] until the
    /// first consistent read asks it.
    progress: AtomicU8,
    /// How many probes have been sent.
    probes_sent: AtomicU64,
    /// The last probe sent: reads that arrived before it share its answer.
    last_probe: std::sync::Mutex<Option<SentProbe>>,
    /// The newest revision a read answered by the store below in the cache's place has shown:
    /// the cache is not fresh enough for any read until it has passed it.
    shown_by_store: AtomicU64,
}

const UNKNOWN: u8 = 0;
const SUPPORTED: u8 = 1;
const UNSUPPORTED: u8 = 2;

/// A probe on its way: its sequence number, its kind, and its answer, which every read that
/// awaits it shares. The probe itself runs as a spawned task, so it finishes whoever polls.
struct SentProbe {
    sequence: u64,
    kind: Probe,
    answer: SharedFuture<BoxFuture<'static, Option<u64>>>,
}

impl std::fmt::Debug for SentProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentProbe")
            .field("sequence", &self.sequence)
            .field("kind", &self.kind)
            .field("answer", &self.answer.peek())
            .finish()
    }
}

/// What a consistent read asks the store below.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probe {
    /// Its current revision (the cache then waits for a progress bookmark up to it).
    CurrentRevision,
    /// A proof that nothing under the prefix changed since the cache's revision.
    Unchanged,
}

impl Default for Consistency {
    fn default() -> Self {
        Self {
            last_progress_request: std::sync::Mutex::new(None),
            progress: AtomicU8::new(UNKNOWN),
            probes_sent: AtomicU64::new(0),
            last_probe: std::sync::Mutex::new(None),
            shown_by_store: AtomicU64::new(0),
        }
    }
}

impl Shared {
    /// Brings the cache up to the store's current revision for a consistent read, within the
    /// configured timeout; false when it could not (the read then goes to the store below,
    /// which also reports any error of the store).
    pub(super) async fn catch_up_for_consistent_read(self: &Arc<Self>) -> bool {
        let timeout = self.config.consistent_read_timeout;
        if self.progress_supported().await {
            let Some(current) = self.shared_probe(Probe::CurrentRevision).await else {
                return false;
            };
            if self.wait_for_store_revision(current, timeout).await {
                return true;
            }
            if self.progress_supported().await {
                return false;
            }
            // The store just said it cannot report progress in order: prove instead.
        }
        self.prove_current(timeout).await
    }

    /// Notes that a read the cache was behind for was answered by the store below at
    /// `revision` (the list's revision, or the object's).
    pub(super) fn shown_by_store(&self, revision: u64) {
        self.consistency
            .shown_by_store
            .fetch_max(revision, Ordering::SeqCst);
    }

    /// Makes sure the cache is at least as new as anything the store below showed in its
    /// place (monotonic reads at resourceVersion "0"); false when it could not catch up in
    /// time (the read then goes to the store below).
    pub(super) async fn catch_up_with_reads_from_store(self: &Arc<Self>) -> bool {
        let shown = self.consistency.shown_by_store.load(Ordering::SeqCst);
        *self.revision.borrow() >= shown || self.catch_up_for_consistent_read().await
    }

    /// Whether the store below answers progress requests in order, asked once.
    pub(super) async fn progress_supported(&self) -> bool {
        match self.consistency.progress.load(Ordering::Relaxed) {
            SUPPORTED => true,
            UNSUPPORTED => false,
            _ => self.request_progress().await,
        }
    }

    /// Waits until the cache reaches `revision`, a revision the store below has reached, asking
    /// the store's watches to report their progress meanwhile: the store's revision may have
    /// moved only through writes outside this prefix, which no event of ours would show.
    async fn wait_for_store_revision(&self, revision: u64, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if *self.revision.borrow() >= revision {
                return true;
            }
            if !self.request_progress().await {
                return false;
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            if self
                .wait_for_revision(revision, left.min(PROGRESS_REQUEST_RETRY))
                .await
            {
                return true;
            }
        }
    }

    /// Sends a progress request below, unless one went out very recently; false when the
    /// store below cannot answer progress requests in order.
    async fn request_progress(&self) -> bool {
        let consistency = &self.consistency;
        if consistency.progress.load(Ordering::Relaxed) == UNSUPPORTED {
            return false;
        }
        {
            let mut last = consistency
                .last_progress_request
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let now = std::time::Instant::now();
            if last.is_some_and(|t| now.duration_since(t) < PROGRESS_REQUEST_SPACING) {
                return true;
            }
            *last = Some(now);
        }
        match self.below.request_watch_progress().await {
            Ok(supported) => {
                let state = if supported { SUPPORTED } else { UNSUPPORTED };
                consistency.progress.store(state, Ordering::Relaxed);
                supported
            }
            Err(e) => {
                tracing::debug!(prefix = %self.prefix, error = %e, "progress request failed");
                false
            }
        }
    }

    /// Proves the cache current within `timeout`: a proof that fails (a change under the
    /// prefix is still on its way to the cache) is retried once the cache has moved.
    async fn prove_current(self: &Arc<Self>, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let seen = *self.revision.borrow();
            if self.shared_probe(Probe::Unchanged).await.is_some() {
                return true;
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            self.wait_for_revision(seen + 1, left.min(PROOF_RETRY))
                .await;
        }
    }

    /// One probe's answer, shared by every read that arrived before it was sent: a read
    /// arriving while a probe is in flight cannot use that one (it may predate a write the
    /// read must see), so it waits for it to finish and shares the next.
    async fn shared_probe(self: &Arc<Self>, kind: Probe) -> Option<u64> {
        let consistency = &self.consistency;
        let arrived = consistency.probes_sent.load(Ordering::SeqCst);
        loop {
            let (usable, answer) = {
                let mut last = consistency
                    .last_probe
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                match &*last {
                    Some(sent) if sent.sequence > arrived && sent.kind == kind => {
                        (true, sent.answer.clone())
                    }
                    Some(sent) if sent.answer.peek().is_none() => (false, sent.answer.clone()),
                    _ => {
                        let sequence = consistency.probes_sent.fetch_add(1, Ordering::SeqCst) + 1;
                        let shared = self.clone();
                        let task = tokio::spawn(async move { shared.probe(kind).await });
                        let answer = async move { task.await.ok().flatten() }.boxed().shared();
                        *last = Some(SentProbe {
                            sequence,
                            kind,
                            answer: answer.clone(),
                        });
                        (true, answer)
                    }
                }
            };
            let answer = answer.await;
            if usable {
                return answer;
            }
        }
    }

    /// Sends one probe: the store's current revision, or the revision the cache was proven
    /// current at (the cache's revision then moves there, as a progress notification would
    /// move it).
    async fn probe(&self, probe: Probe) -> Option<u64> {
        let answer = match probe {
            Probe::CurrentRevision => self.below.current_revision().await.map(Some),
            Probe::Unchanged => {
                let (revision, count) = {
                    let cache = self.read();
                    (cache.revision(), cache.len() as u64)
                };
                self.below
                    .unchanged_since(&self.prefix, revision, count)
                    .await
                    .inspect(|proved| {
                        if let Some(current) = *proved {
                            if self.write().bookmark(current) {
                                self.revision.send_replace(current);
                            }
                        }
                    })
            }
        };
        answer.unwrap_or_else(|e| {
            tracing::debug!(prefix = %self.prefix, error = %e, "consistent read probe failed");
            None
        })
    }
}
