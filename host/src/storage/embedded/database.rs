//! The open redb database, shared by the writer, the readers and the watchers, and opened again
//! after a write failed: once one of its I/O operations fails (a full disk, an I/O error) redb
//! refuses every later one (`PreviousIo`) until the database is closed and opened anew, which
//! also recovers the last committed state from the file. A file this process closed cleanly
//! and nobody touched since opens without reading it whole (see [`ClosedStamp`]).

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Once};
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use redb::{Database, DatabaseError};

use crate::storage::error::{Result, StorageError};

/// How long reopening waits for readers to let go of the previous database.
const REOPEN_WAIT: Duration = Duration::from_secs(5);

/// The database file and its current open handle.
pub(crate) struct DbHandle {
    path: PathBuf,
    cache_bytes: usize,
    db: ArcSwapOption<OpenDatabase>,
}

impl DbHandle {
    /// Opens (creating when missing) the database at `path`, checking every page unless the
    /// file is as this process left it at its last clean close.
    pub(crate) fn open(path: PathBuf, cache_bytes: usize) -> Result<Self> {
        let verify = !ClosedStamp::take(&path);
        let db = try_open(&path, cache_bytes, verify).map_err(|e| e.into_storage(&path))?;
        Ok(Self {
            db: ArcSwapOption::from_pointee(OpenDatabase::new(db, &path)),
            path,
            cache_bytes,
        })
    }

    /// The database as now open.
    ///
    /// # Errors
    /// `Unavailable` while it is being opened again.
    pub(crate) fn get(&self) -> Result<Arc<OpenDatabase>> {
        self.db.load_full().ok_or_else(|| {
            StorageError::Unavailable(format!(
                "{} is being opened again after a failed write",
                self.path.display()
            ))
        })
    }

    /// Closes the database and opens it again, waiting (a bounded time) for the reads in
    /// flight to let go of it.
    ///
    /// # Errors
    /// The file cannot be opened (still out of space, or corrupt); the next call tries again.
    pub(crate) fn reopen(&self) -> Result<Arc<OpenDatabase>> {
        drop(self.db.swap(None));
        let began = Instant::now();
        loop {
            match try_open(&self.path, self.cache_bytes, true) {
                Ok(db) => {
                    // The previous handle's close left a stamp the file no longer matches.
                    ClosedStamp::discard(&self.path);
                    let db = Arc::new(OpenDatabase::new(db, &self.path));
                    self.db.store(Some(db.clone()));
                    return Ok(db);
                }
                // A read still holds the previous handle.
                Err(OpenError::InUse) if began.elapsed() < REOPEN_WAIT => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => return Err(e.into_storage(&self.path)),
            }
        }
    }
}

/// Why the database could not be opened.
enum OpenError {
    InUse,
    Other(String),
}

impl OpenError {
    fn into_storage(self, path: &Path) -> StorageError {
        match self {
            OpenError::InUse => StorageError::Unavailable(format!(
                "the data directory {} is in use: {} is locked by another process or store",
                path.parent().unwrap_or(path).display(),
                path.display()
            )),
            OpenError::Other(reason) => {
                StorageError::Unavailable(format!("cannot open {}: {reason}", path.display()))
            }
        }
    }
}

/// An open database, shared by whoever reads or writes it; when the last of them lets go it is
/// closed and, when that was clean, leaves a [`ClosedStamp`] so the next open need not read
/// the whole file (a stop while a read is still going closes the file once it ends).
pub(crate) struct OpenDatabase {
    db: Option<Database>,
    path: PathBuf,
}

impl OpenDatabase {
    fn new(db: Database, path: &Path) -> Self {
        Self {
            db: Some(db),
            path: path.to_path_buf(),
        }
    }
}

impl std::ops::Deref for OpenDatabase {
    type Target = Database;

    fn deref(&self) -> &Database {
        self.db.as_ref().expect("open until dropped")
    }
}

impl Drop for OpenDatabase {
    fn drop(&mut self) {
        let Some(db) = self.db.take() else {
            return;
        };
        match db.close() {
            Ok(()) => ClosedStamp::leave(&self.path),
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "closing the embedded store")
            }
        }
    }
}

/// What a clean close leaves beside the database file: its length, modification time and inode
/// as they were just after the close. Opening takes (removes) the stamp; when the file still
/// matches it, nothing has written to the file since a clean close, so the page-by-page check —
/// about a second per gigabyte — is skipped. A crash, another writer, a restored or copied
/// file, or a file damaged by hand all leave no stamp or a mismatched one, and the whole file is
/// checked. (Damage the disk does without touching the file's metadata is not caught at start,
/// as etcd's bbolt does not catch it either; reads then fail with the storage's error.)
pub(crate) struct ClosedStamp;

impl ClosedStamp {
    fn path(db: &Path) -> PathBuf {
        let mut name = db.as_os_str().to_owned();
        name.push(".closed");
        PathBuf::from(name)
    }

    fn describe(db: &Path) -> Option<String> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(db).ok()?;
        Some(format!(
            "{} {} {} {} {}\n",
            meta.len(),
            meta.mtime(),
            meta.mtime_nsec(),
            meta.ino(),
            meta.dev()
        ))
    }

    /// Records that `db` was just closed cleanly.
    fn leave(db: &Path) {
        let Some(stamp) = Self::describe(db) else {
            return;
        };
        if let Err(e) = std::fs::write(Self::path(db), stamp) {
            tracing::debug!(error = %e, "could not leave the clean-close stamp");
        }
    }

    /// Removes the stamp beside `db`, if any.
    pub(crate) fn discard(db: &Path) {
        let _ = std::fs::remove_file(Self::path(db));
    }

    /// Removes the stamp and says whether `db` is as the last clean close left it.
    fn take(db: &Path) -> bool {
        let stamp_path = Self::path(db);
        let stamp = std::fs::read_to_string(&stamp_path).ok();
        // The stamp must be gone before the file is opened for writing, or a crash would leave
        // it beside a file it no longer describes (whose metadata would differ anyway).
        if stamp.is_some() && std::fs::remove_file(&stamp_path).is_err() {
            return false;
        }
        stamp.is_some() && stamp == Self::describe(db)
    }
}

/// Opens the file and, when `verify`, checks every page against its checksum (redb repairs what
/// it can, from the previous commit). A damaged file redb panics on is reported like any other.
fn try_open(
    path: &Path,
    cache_bytes: usize,
    verify: bool,
) -> std::result::Result<Database, OpenError> {
    let open = || {
        let mut db = Database::builder()
            .set_cache_size(cache_bytes)
            .create(path)?;
        if verify && !db.check_integrity()? {
            tracing::warn!(path = %path.display(), "the embedded store was damaged and repaired");
        }
        Ok::<_, DatabaseError>(db)
    };
    quiet_while_opening();
    OPENING.with(|o| o.set(true));
    let opened = std::panic::catch_unwind(std::panic::AssertUnwindSafe(open));
    OPENING.with(|o| o.set(false));
    match opened {
        Ok(Ok(db)) => Ok(db),
        Ok(Err(DatabaseError::DatabaseAlreadyOpen)) => Err(OpenError::InUse),
        Ok(Err(e @ DatabaseError::Storage(redb::StorageError::Corrupted(_)))) => {
            Err(OpenError::Other(damaged(e.to_string())))
        }
        Ok(Err(e)) => Err(OpenError::Other(e.to_string())),
        Err(panic) => {
            let reason = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unreadable".into());
            Err(OpenError::Other(damaged(reason)))
        }
    }
}

thread_local! {
    /// Set while this thread opens a database: a panic in redb then is a damaged file, reported
    /// as such, not a crash to print.
    static OPENING: Cell<bool> = const { Cell::new(false) };
}

/// Installs (once) a panic hook that stays silent for panics on a thread opening a database
/// and passes every other panic to the hook before it.
fn quiet_while_opening() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !OPENING.with(Cell::get) {
                previous(info);
            }
        }));
    });
}

/// Words a failure to open as the damage it is, with what to do.
fn damaged(reason: String) -> String {
    format!(
        "{reason}; the file is damaged beyond repair: restore it from a snapshot \
         (strategy-host store restore) or move it away to start empty"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn closed_store(dir: &Path) -> PathBuf {
        let path = dir.join("store.redb");
        let handle = DbHandle::open(path.clone(), 1 << 20).unwrap();
        let db = handle.get().unwrap();
        let txn = db.begin_write().unwrap();
        {
            let table: redb::TableDefinition<&str, &str> = redb::TableDefinition::new("t");
            txn.open_table(table).unwrap().insert("k", "v").unwrap();
        }
        txn.commit().unwrap();
        drop(db);
        drop(handle);
        path
    }

    #[test]
    fn a_clean_close_lets_the_next_open_alone_skip_the_check() {
        let dir = tempfile::tempdir().unwrap();
        let path = closed_store(dir.path());
        assert!(ClosedStamp::path(&path).exists());
        assert!(ClosedStamp::take(&path));
        assert!(!ClosedStamp::path(&path).exists(), "the stamp is used once");
        assert!(!ClosedStamp::take(&path));
    }

    #[test]
    fn a_file_written_after_its_clean_close_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = closed_store(dir.path());
        let later = std::fs::metadata(&path).unwrap().modified().unwrap() + Duration::from_secs(1);
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.set_modified(later).unwrap();
        drop(file);
        assert!(!ClosedStamp::take(&path));
    }

    #[test]
    fn a_read_still_holding_the_database_closes_it_and_leaves_the_stamp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.redb");
        let handle = DbHandle::open(path.clone(), 1 << 20).unwrap();
        let held = handle.get().unwrap();
        drop(handle);
        assert!(!ClosedStamp::path(&path).exists());
        drop(held);
        assert!(ClosedStamp::take(&path));
    }
}
