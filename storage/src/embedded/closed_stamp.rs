//! The stamp a clean close leaves beside the database file, so the next start can skip reading
//! the whole file to check it.

use std::path::{Path, PathBuf};

/// What a clean close leaves beside the database file: its length, modification time, inode and
/// device as they were just after the close. Opening takes (removes) the stamp; when the file still
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
    pub(crate) fn leave(db: &Path) {
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
    pub(crate) fn take(db: &Path) -> bool {
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::embedded::database::DbHandle;

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
