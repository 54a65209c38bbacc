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

pub(crate) use super::closed_stamp::ClosedStamp;
use crate::error::{Result, StorageError};

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
