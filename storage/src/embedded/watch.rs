//! Watchers: each one replays what it needs from disk (the current state, or the log after its
//! start revision), then follows the broadcast of committed batches, skipping what it has
//! already covered. A watcher that falls behind the broadcast catches up from the log on disk, so
//! a slow reader never holds up the writer or other watchers.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::database::{DbHandle, OpenDatabase};
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use super::reader::{self, with_snapshot, ListRequest};
use super::schema::read_revisions;
use super::writer::Batch;
use crate::error::StorageError;
use crate::key::KeyScope;
use crate::pager::Pager;
use crate::predicate::SelectionPredicate;
use crate::watch::{WatchEvent, WatchStream};

/// Events buffered between a watcher and its reader.
const BUFFER: usize = 256;
/// Objects or log entries read per snapshot while replaying.
const CHUNK: usize = 512;
/// How often an idle watcher that asked for bookmarks reports its progress.
pub(crate) const BOOKMARK_INTERVAL: Duration = Duration::from_secs(1);

/// Where a watch starts.
pub(crate) enum Start {
    /// Send the current state as ADDED events, then the changes after it.
    Initial,
    /// Send every change after this revision.
    After(u64),
}

/// Everything one watch needs.
pub(crate) struct Watcher {
    /// The database (weak: an open watch does not keep a dropped store open).
    pub db: Weak<DbHandle>,
    /// The broadcast of committed batches, subscribed before any replay read.
    pub live: broadcast::Receiver<Batch>,
    /// The keys watched.
    pub filter: KeyScope,
    /// The objects watched.
    pub predicate: SelectionPredicate,
    /// Send bookmarks when idle.
    pub allow_bookmarks: bool,
    /// Where to start.
    pub start: Start,
    /// Opens what the store holds encrypted.
    pub encryption: crate::encryption::Encryption,
}

/// Why a watcher stopped.
enum Stop {
    /// The reader went away or the store closed: nothing more to say.
    Closed,
    /// The watch failed: tell the reader.
    Failed(StorageError),
}

impl From<StorageError> for Stop {
    fn from(e: StorageError) -> Self {
        Self::Failed(e)
    }
}

/// Starts a watcher task and returns its stream; dropping the stream stops the task.
pub(crate) fn spawn(watcher: Watcher) -> WatchStream {
    let (tx, rx) = mpsc::channel(BUFFER);
    tokio::spawn(async move {
        if let Err(Stop::Failed(e)) = watcher.run(&tx).await {
            let _ = tx.send(WatchEvent::error(e)).await;
        }
    });
    Box::pin(ReceiverStream::new(rx))
}

async fn send(tx: &mpsc::Sender<WatchEvent>, event: WatchEvent) -> Result<(), Stop> {
    tx.send(event).await.map_err(|_| Stop::Closed)
}

impl Watcher {
    fn db(&self) -> Result<Arc<OpenDatabase>, Stop> {
        Ok(self.db.upgrade().ok_or(Stop::Closed)?.get()?)
    }

    async fn run(mut self, tx: &mpsc::Sender<WatchEvent>) -> Result<(), Stop> {
        let mut last = match self.start {
            Start::Initial => self.send_initial_state(tx).await?,
            Start::After(n) => self.catch_up(tx, n).await?,
        };
        let mut reported = 0;
        let mut bookmarks = tokio::time::interval(BOOKMARK_INTERVAL);
        bookmarks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        bookmarks.tick().await;
        loop {
            tokio::select! {
                _ = tx.closed() => return Err(Stop::Closed),
                received = self.live.recv() => match received {
                    Ok(batch) if batch.is_empty() => {
                        // A progress marker: every change up to `last` has been seen.
                        if self.allow_bookmarks && last > 0 {
                            send(tx, WatchEvent::bookmark(last)).await?;
                            reported = last;
                        }
                    }
                    Ok(batch) => {
                        for change in batch.iter() {
                            if change.revision <= last {
                                continue;
                            }
                            last = change.revision;
                            if !self.filter.contains(&change.key) {
                                continue;
                            }
                            let change = change.to_change(&self.encryption)?;
                            if let Some(event) = change.to_event(&self.predicate) {
                                send(tx, event).await?;
                                reported = last;
                            }
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        last = self.catch_up(tx, last).await?;
                    }
                    Err(broadcast::error::RecvError::Closed) => return Err(Stop::Closed),
                },
                _ = bookmarks.tick(), if self.allow_bookmarks => {
                    if last > reported {
                        send(tx, WatchEvent::bookmark(last)).await?;
                        reported = last;
                    }
                }
            }
        }
    }

    /// Sends every current object as ADDED, read consistently at one revision (in chunks, the
    /// later ones from history); returns that revision.
    async fn send_initial_state(&self, tx: &mpsc::Sender<WatchEvent>) -> Result<u64, Stop> {
        let mut at: Option<u64> = None;
        let mut start_key: Option<String> = None;
        loop {
            let filter = self.filter.clone();
            let predicate = self.predicate.clone();
            let encryption = self.encryption.clone();
            let from = start_key.take();
            let (page, rev) = with_snapshot(self.db()?, move |txn| {
                let (current, compacted) = read_revisions(txn)?;
                let rev = at.unwrap_or(current);
                if rev < compacted {
                    return Err(StorageError::compacted(rev, compacted.saturating_sub(1)));
                }
                let page = reader::list(
                    txn,
                    &ListRequest {
                        encryption: &encryption,
                        filter: &filter,
                        start_key: from.as_deref(),
                        at: Some(rev),
                    },
                    Pager::new(&predicate, CHUNK as u64, false),
                )?;
                Ok((page, rev))
            })
            .await?;
            at = Some(rev);
            for item in page.items {
                send(tx, WatchEvent::Added(item)).await?;
            }
            match page.next_key {
                Some(next) => start_key = Some(next),
                None => return Ok(rev),
            }
        }
    }

    /// Sends every change after `after` from the log on disk, up to the current revision;
    /// returns the revision covered.
    async fn catch_up(&self, tx: &mpsc::Sender<WatchEvent>, after: u64) -> Result<u64, Stop> {
        let mut last = after;
        loop {
            let filter = self.filter.clone();
            let encryption = self.encryption.clone();
            let chunk = with_snapshot(self.db()?, move |txn| {
                reader::replay_log(txn, &encryption, &filter, last, CHUNK)
            })
            .await?;
            for change in chunk.changes {
                if let Some(event) = change.to_event(&self.predicate) {
                    send(tx, event).await?;
                }
            }
            last = chunk.last;
            if chunk.done {
                return Ok(last);
            }
        }
    }
}
