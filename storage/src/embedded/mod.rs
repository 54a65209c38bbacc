//! The embedded store: in-process, durable on local disk, with etcd's semantics (one global
//! revision, reads at a past revision, watch from a revision, compaction). The default store.
//!
//! Layout (see `schema`): a redb database `store.redb` in the data directory holding the latest
//! state, every retained version, the revision log and the counters. One writer thread commits
//! groups of writes with one fsync each (`writer`); reads run on snapshots in blocking tasks
//! (`reader`); watchers replay the log from disk and then follow a broadcast of committed
//! batches (`watch`); compaction trims history (`compactor`); `snapshot` reads the whole store
//! at one revision and restores it into a new data directory.

mod closed_stamp;
mod compactor;
mod database;
mod reader;
mod schema;
mod snapshot;
mod store;
mod tables;
mod watch;
mod writer;

#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::{broadcast, oneshot};

use crate::error::{Result, StorageError};
use crate::key::normalize_prefix;
use database::DbHandle;
use writer::{Batch, Request, Revisions};

/// The file name of the database inside the data directory.
const DB_FILE: &str = "store.redb";
/// The most revisions one compaction transaction covers.
#[cfg(not(test))]
const COMPACTION_STEP: u64 = 10_000;
/// Small under test, so compactions run in several steps.
#[cfg(test)]
const COMPACTION_STEP: u64 = 2;
/// How many committed batches a slow watcher may fall behind before it re-reads the log.
#[cfg(not(test))]
const BROADCAST_CAPACITY: usize = 1024;
/// Small under test, so the catch-up path runs.
#[cfg(test)]
const BROADCAST_CAPACITY: usize = 16;

/// How to open an [`EmbeddedStore`].
#[derive(Debug, Clone)]
pub struct EmbeddedConfig {
    /// The directory holding the database (created when missing).
    pub data_dir: PathBuf,
    /// The prefix every key is stored under (default `/registry`).
    pub prefix: String,
    /// How often history is compacted automatically (default 5 minutes); `None` never
    /// compacts automatically.
    pub compaction_interval: Option<Duration>,
    /// The most memory the database's page cache takes (default 8 MiB). The watch cache
    /// above the store already holds every current object, so the store's cache needs only
    /// the pages its writes and the rarer direct reads touch; pages it drops are read again
    /// from the operating system's cache. 64 MiB held 55 MB at 10,000 objects, more than their
    /// JSON three times over, for no faster creates (docs/benchmarks.md, "Memory"); redb's own
    /// default is 1 GiB.
    pub page_cache_bytes: usize,
    /// Encryption at rest, by resource (`--encryption-provider-config`); `None`: plain.
    pub encryption: Option<crate::encryption::EncryptionConfig>,
}

impl EmbeddedConfig {
    /// The default configuration for a store in `data_dir`.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            data_dir: data_dir.into(),
            prefix: "/registry".to_string(),
            compaction_interval: Some(Duration::from_secs(5 * 60)),
            page_cache_bytes: 8 * 1024 * 1024,
            encryption: None,
        }
    }
}

/// The embedded store. Cloning is cheap and shares the store; it closes when the last clone is
/// dropped.
#[derive(Clone)]
pub struct EmbeddedStore {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for EmbeddedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedStore")
            .field("path", &self.inner.path)
            .field("prefix", &self.inner.prefix)
            .field("current_revision", &self.inner.current_revision())
            .finish()
    }
}

/// The shared state of a store.
pub(crate) struct Inner {
    db: Arc<DbHandle>,
    path: PathBuf,
    prefix: String,
    /// Encryption at rest, bound to the prefix.
    encryption: crate::encryption::Encryption,
    revisions: Arc<Revisions>,
    events: broadcast::Sender<Batch>,
    requests: Option<mpsc::Sender<Request>>,
    writer: Option<JoinHandle<()>>,
    _stop_compactor: Option<oneshot::Sender<()>>,
}

impl EmbeddedStore {
    /// Opens (creating when missing) the store in `config.data_dir`.
    ///
    /// # Errors
    /// `Unavailable`, naming the path and the reason, when the directory cannot be created or
    /// read, or another process has the store open.
    pub async fn open(config: EmbeddedConfig) -> Result<Self> {
        let interval = config.compaction_interval;
        let inner = tokio::task::spawn_blocking(move || open_inner(config))
            .await
            .map_err(|e| StorageError::Internal(format!("opening the embedded store: {e}")))??;
        let mut inner = inner;
        let stop = interval.map(|_| {
            let (tx, rx) = oneshot::channel();
            inner._stop_compactor = Some(tx);
            rx
        });
        let inner = Arc::new(inner);
        if let (Some(every), Some(stop)) = (interval, stop) {
            compactor::spawn_auto(Arc::downgrade(&inner), every, stop);
        }
        Ok(Self { inner })
    }

    /// Compacts history: reads and watches at revisions older than `revision` answer
    /// `Expired` from now on; `revision` itself stays readable. Compacting to a revision at or
    /// below the current compacted one does nothing.
    ///
    /// # Errors
    /// `TooLargeResourceVersion` when `revision` is newer than the store; `Internal` or
    /// `Unavailable` when the write fails.
    pub async fn compact(&self, revision: u64) -> Result<()> {
        self.inner.compact(revision).await
    }

    /// The compacted revision: the oldest revision still readable (0 before any compaction).
    pub fn compacted_revision(&self) -> u64 {
        self.inner.compacted_revision()
    }
}

fn open_inner(config: EmbeddedConfig) -> Result<Inner> {
    let dir = &config.data_dir;
    std::fs::create_dir_all(dir).map_err(|e| {
        StorageError::Unavailable(format!(
            "cannot create the data directory {}: {e}",
            dir.display()
        ))
    })?;
    let path = dir.join(DB_FILE);
    let db = Arc::new(DbHandle::open(path.clone(), config.page_cache_bytes)?);
    let (current, compacted) = {
        let db = db.get()?;
        let txn = db
            .begin_write()
            .map_err(|e| schema::db_err("initialize", e))?;
        let revisions = schema::initialize(&txn)?;
        txn.commit().map_err(|e| schema::db_err("initialize", e))?;
        revisions
    };
    let revisions = Arc::new(Revisions::default());
    revisions.current.store(current, Ordering::Release);
    revisions.compacted.store(compacted, Ordering::Release);
    let (events, _) = broadcast::channel(BROADCAST_CAPACITY);
    let (requests, writer) = writer::spawn(db.clone(), revisions.clone(), events.clone())
        .map_err(|e| StorageError::Unavailable(format!("cannot start the writer thread: {e}")))?;
    Ok(Inner {
        db,
        path,
        prefix: normalize_prefix(&config.prefix),
        encryption: config
            .encryption
            .as_ref()
            .map(|e| e.bind(&config.prefix))
            .unwrap_or_default(),
        revisions,
        events,
        requests: Some(requests),
        writer: Some(writer),
        _stop_compactor: None,
    })
}

impl Inner {
    /// Encryption at rest of this store's values.
    pub(crate) fn encryption(&self) -> &crate::encryption::Encryption {
        &self.encryption
    }

    /// The latest committed revision.
    pub(crate) fn current_revision(&self) -> u64 {
        self.revisions.current.load(Ordering::Acquire)
    }

    /// The compacted revision.
    pub(crate) fn compacted_revision(&self) -> u64 {
        self.revisions.compacted.load(Ordering::Acquire)
    }

    /// Hands a request to the writer thread and waits for its answer.
    async fn submit<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<Result<T>>) -> Request,
    ) -> Result<T> {
        let (tx, rx) = oneshot::channel();
        let sent = self.requests.as_ref().map(|s| s.send(make(tx)).is_ok());
        if sent != Some(true) {
            return Err(StorageError::Unavailable(
                "the embedded store is closed".into(),
            ));
        }
        rx.await.map_err(|_| {
            StorageError::Internal("the embedded store's write transaction failed".into())
        })?
    }

    /// Asks every watcher for a progress bookmark (see `Storage::request_watch_progress`).
    pub(crate) fn request_progress(&self) -> Result<()> {
        let sent = self
            .requests
            .as_ref()
            .map(|s| s.send(Request::Progress).is_ok());
        if sent == Some(true) {
            Ok(())
        } else {
            Err(StorageError::Unavailable(
                "the embedded store is closed".into(),
            ))
        }
    }

    /// See [`EmbeddedStore::compact`].
    ///
    /// Large compactions run in steps of `COMPACTION_STEP` revisions, one transaction each, so
    /// writes are never held up for long.
    pub(crate) async fn compact(&self, revision: u64) -> Result<()> {
        let current = self.current_revision();
        if revision > current {
            return Err(StorageError::TooLargeResourceVersion {
                requested: revision,
                current,
            });
        }
        let mut done = self.compacted_revision();
        loop {
            let step = revision.min(done.saturating_add(COMPACTION_STEP));
            self.submit(|reply| Request::Compact {
                revision: step,
                reply,
            })
            .await?;
            if step >= revision {
                return Ok(());
            }
            done = step;
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Closing the request channel stops the writer once it has answered what it holds.
        self.requests.take();
        if let Some(handle) = self.writer.take() {
            let _ = handle.join();
        }
    }
}
