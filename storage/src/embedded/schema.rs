//! The on-disk layout of the embedded store: redb table definitions, value encodings and error
//! mapping.
//!
//! - `latest`: full key → (mod_revision, object bytes), live keys only, for fast current reads;
//! - `history`: (full key, revision) → a tagged version (`PUT` + bytes, or `TOMBSTONE`), every
//!   retained version of every key, for reads at a past revision and watch replay;
//! - `log`: revision → full key, so a watch can replay the changes after any retained revision;
//! - `meta`: name → u64 (`current_revision`, `compacted_revision`, `format_version`).
//!
//! The layout's version (`FORMAT_VERSION`) is written into every store and checked as it
//! opens: a store from before versioning (the same layout) is stamped with it, one of a newer
//! version is refused with a message saying so, so a downgrade never misreads data.

use redb::{ReadTransaction, ReadableTable, TableDefinition, WriteTransaction};

use crate::error::StorageError;
use crate::txn::RawValue;

/// Live keys: key → (mod_revision, bytes).
pub(crate) const LATEST: TableDefinition<&str, (u64, &[u8])> = TableDefinition::new("latest");
/// Every retained version: (key, revision) → tagged value.
pub(crate) const HISTORY: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("history");
/// The revision log: revision → key.
pub(crate) const LOG: TableDefinition<u64, &str> = TableDefinition::new("log");
/// Counters.
pub(crate) const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

/// The `meta` entry holding the latest committed revision.
pub(crate) const CURRENT_REVISION: &str = "current_revision";
/// The `meta` entry holding the compacted revision (the oldest readable one).
pub(crate) const COMPACTED_REVISION: &str = "compacted_revision";

/// The `meta` entry holding the layout's version.
pub(crate) const FORMAT: &str = "format_version";
/// The layout this build reads and writes. An older layout is migrated as the store opens.
pub(crate) const FORMAT_VERSION: u64 = 1;

/// The revision of an empty store (as etcd: the first write gets revision 2).
pub(crate) const INITIAL_REVISION: u64 = 1;

const TAG_TOMBSTONE: u8 = 0;
const TAG_PUT: u8 = 1;

/// Encodes a history value: a put of `data`, or a tombstone for `None`.
pub(crate) fn encode_version(data: Option<&[u8]>) -> Vec<u8> {
    match data {
        Some(d) => {
            let mut v = Vec::with_capacity(d.len() + 1);
            v.push(TAG_PUT);
            v.extend_from_slice(d);
            v
        }
        None => vec![TAG_TOMBSTONE],
    }
}

/// Decodes a history value: `Some(bytes)` for a put, `None` for a tombstone.
pub(crate) fn decode_version(raw: &[u8]) -> Result<Option<&[u8]>, StorageError> {
    match raw.split_first() {
        Some((&TAG_PUT, rest)) => Ok(Some(rest)),
        Some((&TAG_TOMBSTONE, [])) => Ok(None),
        _ => Err(StorageError::Internal(
            "corrupt history entry in the embedded store".into(),
        )),
    }
}

/// Maps a redb error to a storage error with `context`: I/O failures are `Unavailable` (a full
/// disk `Internal`, naming it), the rest `Internal`.
pub(crate) fn db_err(context: &str, e: impl Into<redb::Error>) -> StorageError {
    match e.into() {
        // A full disk is no passing unavailability: Kubernetes answers such storage errors 500.
        redb::Error::Io(io) if io.kind() == std::io::ErrorKind::StorageFull => {
            StorageError::Internal(format!(
                "{context}: the disk holding the embedded store is full ({io})"
            ))
        }
        redb::Error::Io(io) => StorageError::Unavailable(format!("{context}: {io}")),
        redb::Error::DatabaseClosed | redb::Error::PreviousIo => {
            StorageError::Unavailable(format!("{context}: the database is closed"))
        }
        other => StorageError::Internal(format!("{context}: {other}")),
    }
}

/// Reads the latest state of `key` from `table` (the `latest` table, in a read or a write
/// transaction).
pub(crate) fn latest_in(
    table: &impl ReadableTable<&'static str, (u64, &'static [u8])>,
    key: &str,
) -> Result<Option<RawValue>, StorageError> {
    let found = table.get(key).map_err(|e| db_err("read latest", e))?;
    Ok(found.map(|guard| {
        let (mod_revision, data) = guard.value();
        RawValue {
            data: data.to_vec(),
            mod_revision,
            stale: false,
        }
    }))
}

/// Reads a `meta` counter in a read transaction (0 when absent).
pub(crate) fn read_meta(txn: &ReadTransaction, name: &str) -> Result<u64, StorageError> {
    let table = txn.open_table(META).map_err(|e| db_err("open meta", e))?;
    let value = table.get(name).map_err(|e| db_err("read meta", e))?;
    Ok(value.map_or(0, |v| v.value()))
}

/// The `(current, compacted)` revisions of a read snapshot.
pub(crate) fn read_revisions(txn: &ReadTransaction) -> Result<(u64, u64), StorageError> {
    Ok((
        read_meta(txn, CURRENT_REVISION)?.max(INITIAL_REVISION),
        read_meta(txn, COMPACTED_REVISION)?,
    ))
}

/// Creates every table and initializes the counters of a new store, or checks and migrates the
/// layout of an existing one; returns `(current, compacted)`.
///
/// # Errors
/// `Unavailable` for a store of a newer layout than `FORMAT_VERSION`.
pub(crate) fn initialize(txn: &WriteTransaction) -> Result<(u64, u64), StorageError> {
    txn.open_table(LATEST)
        .map_err(|e| db_err("create latest", e))?;
    txn.open_table(HISTORY)
        .map_err(|e| db_err("create history", e))?;
    txn.open_table(LOG).map_err(|e| db_err("create log", e))?;
    let mut meta = txn.open_table(META).map_err(|e| db_err("create meta", e))?;
    let current = match meta
        .get(CURRENT_REVISION)
        .map_err(|e| db_err("read meta", e))?
    {
        Some(v) => v.value(),
        None => INITIAL_REVISION,
    };
    let compacted = meta
        .get(COMPACTED_REVISION)
        .map_err(|e| db_err("read meta", e))?
        .map_or(0, |v| v.value());
    let format = meta
        .get(FORMAT)
        .map_err(|e| db_err("read meta", e))?
        .map(|v| v.value());
    match format {
        Some(v) if v > FORMAT_VERSION => {
            return Err(StorageError::Unavailable(format!(
                "the store's format version is {v}, newer than this strategy-host reads \
                 ({FORMAT_VERSION}): run the strategy-host that wrote it, or restore a snapshot"
            )))
        }
        Some(v) if v == FORMAT_VERSION => {}
        // Version 0 is the layout before versioning; version 1 only adds the stamp.
        older => {
            if older.is_some() || current > INITIAL_REVISION {
                tracing::info!(
                    from = older.unwrap_or(0),
                    to = FORMAT_VERSION,
                    "embedded store: migrating the on-disk format"
                );
            }
            meta.insert(FORMAT, FORMAT_VERSION)
                .map_err(|e| db_err("write meta", e))?;
        }
    }
    meta.insert(CURRENT_REVISION, current)
        .map_err(|e| db_err("write meta", e))?;
    meta.insert(COMPACTED_REVISION, compacted)
        .map_err(|e| db_err("write meta", e))?;
    Ok((current, compacted))
}

/// The exclusive end of the key range under `prefix` (which ends in `/`), or `None` when the
/// range is unbounded.
pub(crate) fn range_end(prefix: &str) -> Option<String> {
    String::from_utf8(crate::key::prefix_range_end(prefix))
        .ok()
        .filter(|end| end.as_str() > prefix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_round_trip() {
        assert_eq!(
            decode_version(&encode_version(Some(b"x"))).unwrap(),
            Some(&b"x"[..])
        );
        assert_eq!(decode_version(&encode_version(None)).unwrap(), None);
        assert!(decode_version(b"").is_err());
        assert_eq!(range_end("/r/pods/").as_deref(), Some("/r/pods0"));
    }
}
