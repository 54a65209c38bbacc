//! The writer thread and its group commit: every write request waiting when the thread wakes is
//! evaluated in one redb write transaction (each successful compare-and-swap gets its own
//! revision), committed with one fsync, then answered and published to the watchers.
//!
//! A failed commit (a full disk, an I/O error) is answered as failed, and the database is
//! opened again before the next batch, at most once per `RETRY_PAUSE` (redb refuses all I/O
//! after one failed until then). Until it opens, and while a commit fails again, writes get the
//! first failure's reason, so a full disk reads as one. Once it opens, writing resumes from the
//! last committed state on disk.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use redb::{Durability, ReadableDatabase};
use tokio::sync::{broadcast, oneshot};

use super::compactor;
use super::database::DbHandle;
use super::reader::committed_since;
use super::schema::{db_err, read_revisions, COMPACTED_REVISION, CURRENT_REVISION};
use super::tables::Tables;
use crate::error::{Result, StorageError};
use crate::object::SharedObject;
use crate::txn::{CasOutcome, RawValue};
use crate::watch::Change;

/// The most requests one transaction takes.
const MAX_BATCH: usize = 1024;
/// After a failed commit, how long writes are refused with its reason before the database is
/// opened again to try.
const RETRY_PAUSE: Duration = Duration::from_millis(500);

/// The store's revisions as last committed, readable without a transaction.
#[derive(Debug, Default)]
pub(crate) struct Revisions {
    /// The latest committed revision.
    pub current: AtomicU64,
    /// The compacted revision (the oldest one still readable).
    pub compacted: AtomicU64,
}

/// A request to the writer thread.
pub(crate) enum Request {
    /// Write `data` at `key` if its mod_revision is `expected` (0: absent).
    Put {
        key: String,
        data: Vec<u8>,
        expected: u64,
        reply: oneshot::Sender<Result<CasOutcome>>,
    },
    /// Delete `key` if its mod_revision is `expected`.
    Delete {
        key: String,
        expected: u64,
        reply: oneshot::Sender<Result<CasOutcome>>,
    },
    /// Compact history up to `revision`.
    Compact {
        revision: u64,
        reply: oneshot::Sender<Result<()>>,
    },
    /// Publish a progress marker (an empty batch) after everything committed so far, so each
    /// watcher can report the revision it has reached (etcd's RequestProgress).
    Progress,
}

/// One committed change as the writer publishes it: raw bytes, decoded by each interested
/// watcher.
#[derive(Debug)]
pub(crate) struct CommittedChange {
    /// The full key.
    pub key: String,
    /// The revision of the change.
    pub revision: u64,
    /// The state before, if the key existed.
    pub previous: Option<RawValue>,
    /// The bytes written; `None` for a delete.
    pub current: Option<Vec<u8>>,
}

impl CommittedChange {
    /// Decodes the change for a watcher.
    pub(crate) fn to_change(&self, encryption: &crate::encryption::Encryption) -> Result<Change> {
        let object = |data: &[u8], revision: u64| {
            let plain = encryption.open(&self.key, data)?;
            SharedObject::from_stored(&self.key, &plain, revision).map(Arc::new)
        };
        let previous = self
            .previous
            .as_ref()
            .map(|p| object(&p.data, p.mod_revision))
            .transpose()?;
        let current = self
            .current
            .as_ref()
            .map(|d| object(d, self.revision))
            .transpose()?;
        Ok(Change {
            revision: self.revision,
            previous,
            current,
        })
    }
}

/// The changes of one commit, in revision order.
pub(crate) type Batch = Arc<Vec<CommittedChange>>;

/// The writer thread's state.
struct Writer {
    db: Arc<DbHandle>,
    /// Set by a failed commit: why, and when; cleared once the database opened again.
    failed: Option<(StorageError, Instant)>,
    revisions: Arc<Revisions>,
    events: broadcast::Sender<Batch>,
    current: u64,
    compacted: u64,
}

/// An answer waiting for the commit.
enum Reply {
    Cas(oneshot::Sender<Result<CasOutcome>>, Result<CasOutcome>),
    Compact(oneshot::Sender<Result<()>>, Result<()>),
}

/// Starts the writer thread; it stops once every sender of the returned channel is dropped.
pub(crate) fn spawn(
    db: Arc<DbHandle>,
    revisions: Arc<Revisions>,
    events: broadcast::Sender<Batch>,
) -> std::io::Result<(mpsc::Sender<Request>, JoinHandle<()>)> {
    let (tx, rx) = mpsc::channel();
    let mut writer = Writer {
        current: revisions.current.load(Ordering::Acquire),
        compacted: revisions.compacted.load(Ordering::Acquire),
        db,
        failed: None,
        revisions,
        events,
    };
    let handle = std::thread::Builder::new()
        .name("embedded-store-writer".into())
        .spawn(move || {
            while let Ok(first) = rx.recv() {
                let mut batch = vec![first];
                while batch.len() < MAX_BATCH {
                    match rx.try_recv() {
                        Ok(r) => batch.push(r),
                        Err(_) => break,
                    }
                }
                let progress = batch.iter().any(|r| matches!(r, Request::Progress));
                batch.retain(|r| !matches!(r, Request::Progress));
                if !batch.is_empty() {
                    writer.commit(batch);
                }
                if progress {
                    // Published after every batch before it, so it orders like etcd's answer.
                    let _ = writer.events.send(Arc::new(Vec::new()));
                }
            }
        })?;
    Ok((tx, handle))
}

impl Writer {
    /// Evaluates `batch` in one transaction, commits it, then answers and publishes.
    fn commit(&mut self, batch: Vec<Request>) {
        let mut replies = Vec::with_capacity(batch.len());
        let mut changes = Vec::new();
        let outcome = match self.recover() {
            Ok(()) => self.apply(batch, &mut replies, &mut changes),
            Err(e) => {
                unanswered(batch.into_iter(), &mut replies);
                Err(e)
            }
        };
        match outcome {
            Ok((current, compacted)) => {
                self.current = current;
                self.compacted = compacted;
                self.revisions.current.store(current, Ordering::Release);
                self.revisions.compacted.store(compacted, Ordering::Release);
                if !changes.is_empty() {
                    // No receiver is fine: nobody watches.
                    let _ = self.events.send(Arc::new(changes));
                }
                for reply in replies {
                    match reply {
                        Reply::Cas(tx, r) => drop(tx.send(r)),
                        Reply::Compact(tx, r) => drop(tx.send(r)),
                    }
                }
            }
            Err(e) => {
                if self.failed.is_none() {
                    tracing::error!(error = %e, "embedded store: write transaction failed");
                    self.failed = Some((e.duplicate(), Instant::now()));
                }
                for reply in replies {
                    match reply {
                        Reply::Cas(tx, _) => drop(tx.send(Err(e.duplicate()))),
                        Reply::Compact(tx, _) => drop(tx.send(Err(e.duplicate()))),
                    }
                }
            }
        }
    }

    /// Applies the batch; returns the new `(current, compacted)` once committed. Every request
    /// leaves exactly one entry in `replies`, even on failure.
    fn apply(
        &self,
        batch: Vec<Request>,
        replies: &mut Vec<Reply>,
        changes: &mut Vec<CommittedChange>,
    ) -> Result<(u64, u64)> {
        let mut pending = batch.into_iter();
        let result = self.apply_inner(&mut pending, replies, changes);
        unanswered(pending, replies);
        result
    }

    /// After a failed commit, opens the database again (once `RETRY_PAUSE` has passed) and
    /// picks up its last committed state; a commit that failed may have reached the disk all
    /// the same, and its changes are then published like any other.
    ///
    /// # Errors
    /// The failure's reason while the pause lasts or the database does not open.
    fn recover(&mut self) -> Result<()> {
        let Some((reason, at)) = &self.failed else {
            return Ok(());
        };
        if at.elapsed() < RETRY_PAUSE {
            return Err(reason.duplicate());
        }
        let db = match self.db.reopen() {
            Ok(db) => db,
            Err(e) => {
                tracing::warn!(error = %e, "embedded store: cannot open the database again");
                let reason = reason.duplicate();
                self.failed = Some((reason.duplicate(), Instant::now()));
                return Err(reason);
            }
        };
        let txn = db.begin_read().map_err(|e| db_err("begin read", e))?;
        let (current, compacted) = read_revisions(&txn)?;
        if current > self.current {
            let landed = committed_since(&txn, self.current)?;
            let _ = self.events.send(Arc::new(landed));
        }
        self.current = current;
        self.compacted = compacted;
        self.revisions.current.store(current, Ordering::Release);
        self.revisions.compacted.store(compacted, Ordering::Release);
        tracing::info!(revision = current, "embedded store: writing again");
        self.failed = None;
        Ok(())
    }

    fn apply_inner(
        &self,
        pending: &mut std::vec::IntoIter<Request>,
        replies: &mut Vec<Reply>,
        changes: &mut Vec<CommittedChange>,
    ) -> Result<(u64, u64)> {
        let mut txn = self
            .db
            .get()?
            .begin_write()
            .map_err(|e| db_err("begin write", e))?;
        txn.set_durability(Durability::Immediate)
            .map_err(|e| db_err("set durability", e))?;
        let mut rev = self.current;
        let mut compacted = self.compacted;
        {
            let mut t = Tables::open(&txn)?;
            for req in pending.by_ref() {
                match req {
                    Request::Put {
                        key,
                        data,
                        expected,
                        reply,
                    } => {
                        let existing = t.latest(&key)?;
                        if existing.as_ref().map_or(0, |e| e.mod_revision) != expected {
                            replies.push(Reply::Cas(reply, Ok(CasOutcome::Stale(existing))));
                            continue;
                        }
                        rev += 1;
                        t.record(&key, Some(&data), rev)?;
                        replies.push(Reply::Cas(reply, Ok(CasOutcome::Committed(rev))));
                        changes.push(CommittedChange {
                            key,
                            revision: rev,
                            previous: existing,
                            current: Some(data),
                        });
                    }
                    Request::Delete {
                        key,
                        expected,
                        reply,
                    } => {
                        let existing = t.latest(&key)?;
                        match &existing {
                            Some(e) if e.mod_revision == expected => {}
                            _ => {
                                replies.push(Reply::Cas(reply, Ok(CasOutcome::Stale(existing))));
                                continue;
                            }
                        }
                        rev += 1;
                        t.record(&key, None, rev)?;
                        replies.push(Reply::Cas(reply, Ok(CasOutcome::Committed(rev))));
                        changes.push(CommittedChange {
                            key,
                            revision: rev,
                            previous: existing,
                            current: None,
                        });
                    }
                    Request::Compact { revision, reply } => {
                        let answer = if revision > rev {
                            Err(StorageError::TooLargeResourceVersion {
                                requested: revision,
                                current: rev,
                            })
                        } else {
                            if revision > compacted {
                                compactor::compact_tables(&mut t, compacted, revision)?;
                                compacted = revision;
                            }
                            Ok(())
                        };
                        replies.push(Reply::Compact(reply, answer));
                    }
                    // Taken out of the batch before it is applied.
                    Request::Progress => {}
                }
            }
            t.meta
                .insert(CURRENT_REVISION, rev)
                .map_err(|e| db_err("write meta", e))?;
            t.meta
                .insert(COMPACTED_REVISION, compacted)
                .map_err(|e| db_err("write meta", e))?;
        }
        txn.commit().map_err(|e| db_err("commit", e))?;
        Ok((rev, compacted))
    }
}

/// Gives each request not evaluated (after an error) its answer slot, so it gets the error.
fn unanswered(pending: impl Iterator<Item = Request>, replies: &mut Vec<Reply>) {
    for req in pending {
        let placeholder = Err(StorageError::Internal("not evaluated".into()));
        replies.push(match req {
            Request::Put { reply, .. } | Request::Delete { reply, .. } => {
                Reply::Cas(reply, placeholder)
            }
            Request::Compact { reply, .. } => Reply::Compact(reply, Ok(())),
            Request::Progress => continue,
        });
    }
}
