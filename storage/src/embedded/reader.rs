//! Reads over one redb snapshot: a key's latest state, a page of a list at the latest or a past
//! revision, a count, and a chunk of the revision log turned into watch changes.

use std::sync::Arc;

use redb::ReadTransaction;

use super::schema::{
    db_err, decode_version, latest_in, range_end, read_revisions, HISTORY, LATEST, LOG,
};
use super::writer::CommittedChange;
use crate::error::{Result, StorageError};
use crate::key::KeyScope;
use crate::object::SharedObject;
pub(crate) use crate::pager::Page;
use crate::pager::Pager;
use crate::txn::RawValue;
use crate::watch::Change;

/// What a list read asks for.
pub(crate) struct ListRequest<'a> {
    /// Opens what the store holds encrypted.
    pub encryption: &'a crate::encryption::Encryption,
    /// The keys covered.
    pub filter: &'a KeyScope,
    /// The first key to read (inclusive), from a continue token.
    pub start_key: Option<&'a str>,
    /// The revision to read at; `None` reads the latest state.
    pub at: Option<u64>,
}

/// Reads the latest state of `key`.
pub(crate) fn read_latest(txn: &ReadTransaction, key: &str) -> Result<Option<RawValue>> {
    let table = txn
        .open_table(LATEST)
        .map_err(|e| db_err("open latest", e))?;
    latest_in(&table, key)
}

/// Offers one live key and its stored bytes to `pager`.
fn offer(
    pager: &mut Pager<'_>,
    encryption: &crate::encryption::Encryption,
    key: &str,
    data: &[u8],
    revision: u64,
) -> Result<bool> {
    pager.offer(key, || {
        let plain = encryption.open(key, data)?;
        Ok(Arc::new(SharedObject::from_stored(key, &plain, revision)?))
    })
}

/// Reads one page of `req` from the snapshot `txn` into `pager`.
pub(crate) fn list(txn: &ReadTransaction, req: &ListRequest<'_>, pager: Pager<'_>) -> Result<Page> {
    let (current, _) = read_revisions(txn)?;
    match req.at {
        Some(at) if at < current => list_at(txn, req, at, pager),
        _ => list_latest(txn, req, pager),
    }
}

fn list_latest(txn: &ReadTransaction, req: &ListRequest<'_>, mut pager: Pager<'_>) -> Result<Page> {
    let table = txn
        .open_table(LATEST)
        .map_err(|e| db_err("open latest", e))?;
    let start = req.filter.start(req.start_key);
    let range = match req.filter {
        KeyScope::Key(k) if start == k.as_str() => table.range(start..=k.as_str()),
        KeyScope::Key(_) => return Ok(Page::default()),
        KeyScope::Prefix(p) => match range_end(p) {
            Some(end) => table.range(start..end.as_str()),
            None => table.range(start..),
        },
    }
    .map_err(|e| db_err("scan latest", e))?;
    for entry in range {
        let (k, v) = entry.map_err(|e| db_err("scan latest", e))?;
        let (revision, data) = v.value();
        if !offer(&mut pager, req.encryption, k.value(), data, revision)? {
            break;
        }
    }
    Ok(pager.finish())
}

fn list_at(
    txn: &ReadTransaction,
    req: &ListRequest<'_>,
    at: u64,
    mut pager: Pager<'_>,
) -> Result<Page> {
    let table = txn
        .open_table(HISTORY)
        .map_err(|e| db_err("open history", e))?;
    let start = req.filter.start(req.start_key);
    let range = match req.filter {
        KeyScope::Key(k) if start == k.as_str() => table.range((start, 0u64)..=(start, at)),
        KeyScope::Key(_) => return Ok(Page::default()),
        KeyScope::Prefix(p) => match range_end(p) {
            Some(end) => table.range((start, 0u64)..(end.as_str(), 0u64)),
            None => table.range((start, 0u64)..),
        },
    }
    .map_err(|e| db_err("scan history", e))?;
    // Versions come grouped by key, oldest first: the last one at or before `at` is the state.
    let mut key: Option<String> = None;
    let mut best: Option<(u64, Option<Vec<u8>>)> = None;
    for entry in range {
        let (k, v) = entry.map_err(|e| db_err("scan history", e))?;
        let (entry_key, revision) = k.value();
        if key.as_deref() != Some(entry_key) {
            if let (Some(prev_key), Some((rev, Some(data)))) = (key.as_deref(), best.take()) {
                if !offer(&mut pager, req.encryption, prev_key, &data, rev)? {
                    return Ok(pager.finish());
                }
            }
            key = Some(entry_key.to_string());
            best = None;
        }
        if revision <= at {
            best = Some((revision, decode_version(v.value())?.map(<[u8]>::to_vec)));
        }
    }
    if let (Some(k), Some((rev, Some(data)))) = (key.as_deref(), best) {
        offer(&mut pager, req.encryption, k, &data, rev)?;
    }
    Ok(pager.finish())
}

/// Counts the live keys under `prefix`.
pub(crate) fn count(txn: &ReadTransaction, prefix: &str) -> Result<u64> {
    let table = txn
        .open_table(LATEST)
        .map_err(|e| db_err("open latest", e))?;
    let range = match range_end(prefix) {
        Some(end) => table.range(prefix..end.as_str()),
        None => table.range(prefix..),
    }
    .map_err(|e| db_err("scan latest", e))?;
    let mut n = 0;
    for entry in range {
        entry.map_err(|e| db_err("scan latest", e))?;
        n += 1;
    }
    Ok(n)
}

/// A chunk of the revision log replayed as changes.
#[derive(Debug, Default)]
pub(crate) struct LogChunk {
    /// The changes to covered keys, in revision order.
    pub changes: Vec<Change>,
    /// The newest revision the chunk covers (every change up to it has been looked at).
    pub last: u64,
    /// True when the chunk reached the snapshot's current revision.
    pub done: bool,
}

/// Replays up to `max` log entries after revision `after`, keeping the changes to `filter`'s
/// keys.
///
/// # Errors
/// `Expired` when `after` is older than the compacted revision.
pub(crate) fn replay_log(
    txn: &ReadTransaction,
    encryption: &crate::encryption::Encryption,
    filter: &KeyScope,
    after: u64,
    max: usize,
) -> Result<LogChunk> {
    let (current, compacted) = read_revisions(txn)?;
    if after < compacted {
        return Err(StorageError::compacted(after, compacted.saturating_sub(1)));
    }
    let log = txn.open_table(LOG).map_err(|e| db_err("open log", e))?;
    let history = txn
        .open_table(HISTORY)
        .map_err(|e| db_err("open history", e))?;
    let mut chunk = LogChunk {
        last: after,
        ..LogChunk::default()
    };
    let entries = log
        .range(after.saturating_add(1)..)
        .map_err(|e| db_err("scan log", e))?;
    for (seen, entry) in entries.enumerate() {
        if seen >= max {
            return Ok(chunk);
        }
        let (rev, key) = entry.map_err(|e| db_err("scan log", e))?;
        let (rev, key) = (rev.value(), key.value());
        chunk.last = rev;
        if filter.contains(key) {
            chunk
                .changes
                .push(change_at(&history, encryption, key, rev)?);
        }
    }
    chunk.last = after.max(current);
    chunk.done = true;
    Ok(chunk)
}

/// Rebuilds the change `key` underwent at `rev` from its versions.
fn change_at(
    history: &redb::ReadOnlyTable<(&'static str, u64), &'static [u8]>,
    encryption: &crate::encryption::Encryption,
    key: &str,
    rev: u64,
) -> Result<Change> {
    committed_change_at(history, key, rev)?.to_change(encryption)
}

/// The change `key` underwent at `rev`, as the writer published it.
fn committed_change_at(
    history: &redb::ReadOnlyTable<(&'static str, u64), &'static [u8]>,
    key: &str,
    rev: u64,
) -> Result<CommittedChange> {
    let current = history
        .get((key, rev))
        .map_err(|e| db_err("read history", e))?
        .ok_or_else(|| StorageError::Internal(format!("history of {key} lacks revision {rev}")))?;
    let current = decode_version(current.value())?.map(<[u8]>::to_vec);
    let previous = match history
        .range((key, 0u64)..(key, rev))
        .map_err(|e| db_err("read history", e))?
        .next_back()
    {
        Some(entry) => {
            let (k, v) = entry.map_err(|e| db_err("read history", e))?;
            let mod_revision = k.value().1;
            decode_version(v.value())?.map(|data| RawValue {
                data: data.to_vec(),
                mod_revision,
                stale: false,
            })
        }
        None => None,
    };
    Ok(CommittedChange {
        key: key.to_owned(),
        revision: rev,
        previous,
        current,
    })
}

/// Every change committed after revision `after`, as the writer publishes them.
pub(crate) fn committed_since(txn: &ReadTransaction, after: u64) -> Result<Vec<CommittedChange>> {
    let log = txn.open_table(LOG).map_err(|e| db_err("open log", e))?;
    let history = txn
        .open_table(HISTORY)
        .map_err(|e| db_err("open history", e))?;
    let entries = log
        .range(after.saturating_add(1)..)
        .map_err(|e| db_err("scan log", e))?;
    let mut changes = Vec::new();
    for entry in entries {
        let (rev, key) = entry.map_err(|e| db_err("scan log", e))?;
        changes.push(committed_change_at(&history, key.value(), rev.value())?);
    }
    Ok(changes)
}

/// Runs `f` on a fresh snapshot of `db` in a blocking task.
pub(crate) async fn with_snapshot<T, F>(
    db: std::sync::Arc<super::database::OpenDatabase>,
    f: F,
) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce(&ReadTransaction) -> Result<T> + Send + 'static,
{
    tokio::task::spawn_blocking(move || {
        use redb::ReadableDatabase;
        let txn = db.begin_read().map_err(|e| db_err("begin read", e))?;
        f(&txn)
    })
    .await
    .map_err(|e| StorageError::Internal(format!("embedded store read task failed: {e}")))?
}
