//! Snapshots of the embedded store (read on one redb snapshot, so consistent at one revision)
//! and restores into a new data directory, every object at its own revision, so the
//! resourceVersions clients saw stay what they were.

use std::io::BufRead;
use std::path::Path;

use futures::StreamExt as _;
use redb::ReadableDatabase;
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::ReceiverStream;

use super::database::{ClosedStamp, DbHandle};
use super::schema::{self, db_err, encode_version, range_end, read_revisions, LATEST};
use super::tables::Tables;
use super::{EmbeddedConfig, EmbeddedStore, DB_FILE};
use crate::error::{Result, StorageError};
use crate::key::normalize_prefix;
use crate::snapshot::{Snapshot, SnapshotEntry, SnapshotReader};

/// Objects per chunk of a snapshot's stream, and per transaction of a restore.
const CHUNK: usize = 1000;
const RESTORE_BATCH: u64 = 10_000;

impl EmbeddedStore {
    /// Every object as of the current revision, read from one snapshot of the database while
    /// writes go on.
    ///
    /// # Errors
    /// The database cannot be read.
    pub async fn snapshot(&self) -> Result<Snapshot> {
        let db = self.inner.db.get()?;
        let prefix = self.inner.prefix.clone();
        let (revision_tx, revision_rx) = oneshot::channel();
        let (tx, rx) = mpsc::channel(4);
        tokio::task::spawn_blocking(move || {
            let read = || -> Result<()> {
                let txn = db.begin_read().map_err(|e| db_err("begin read", e))?;
                let (revision, _) = read_revisions(&txn)?;
                let _ = revision_tx.send(revision);
                let latest = txn
                    .open_table(LATEST)
                    .map_err(|e| db_err("open latest", e))?;
                let range = match range_end(&prefix) {
                    Some(end) => latest.range(prefix.as_str()..end.as_str()),
                    None => latest.range(prefix.as_str()..),
                }
                .map_err(|e| db_err("scan latest", e))?;
                let mut chunk = Vec::with_capacity(CHUNK);
                for found in range {
                    let (key, value) = found.map_err(|e| db_err("scan latest", e))?;
                    let (mod_revision, data) = value.value();
                    chunk.push(SnapshotEntry {
                        // Relative to the prefix, keeping the leading '/'.
                        key: key.value()[prefix.len() - 1..].to_owned(),
                        mod_revision,
                        data: data.to_vec(),
                    });
                    if chunk.len() == CHUNK {
                        let full = std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK));
                        if tx.blocking_send(Ok(full)).is_err() {
                            return Ok(());
                        }
                    }
                }
                if !chunk.is_empty() {
                    let _ = tx.blocking_send(Ok(chunk));
                }
                Ok(())
            };
            if let Err(e) = read() {
                let _ = tx.blocking_send(Err(e));
            }
        });
        let revision = revision_rx.await.map_err(|_| {
            StorageError::Unavailable("the embedded store could not be read".into())
        })?;
        Ok(Snapshot {
            revision,
            entries: ReceiverStream::new(rx).boxed(),
        })
    }

    /// Creates the store of `config` from a snapshot: every object at its revision, the store
    /// at the snapshot's revision, history before it compacted. The data directory must hold
    /// no store yet; the file appears only once the restore is complete. Returns the number of
    /// objects.
    ///
    /// # Errors
    /// `BadRequest` when a store exists already or the snapshot is malformed or cut off;
    /// `Unavailable` when the file cannot be written.
    pub fn restore(
        config: &EmbeddedConfig,
        snapshot: &mut SnapshotReader<impl BufRead>,
    ) -> Result<u64> {
        let dir = &config.data_dir;
        let target = dir.join(DB_FILE);
        if target.exists() {
            return Err(StorageError::BadRequest(format!(
                "{} holds a store already: restore into an empty data directory",
                dir.display()
            )));
        }
        std::fs::create_dir_all(dir).map_err(|e| {
            StorageError::Unavailable(format!("cannot create {}: {e}", dir.display()))
        })?;
        let partial = dir.join(format!("{DB_FILE}.restoring"));
        let _ = std::fs::remove_file(&partial);
        let result = write_restore(config, &partial, snapshot);
        // A restored file is checked whole when the server first opens it.
        ClosedStamp::discard(&partial);
        match result {
            Ok(objects) => {
                std::fs::rename(&partial, &target).map_err(|e| {
                    StorageError::Unavailable(format!(
                        "cannot move the restored store into place: {e}"
                    ))
                })?;
                Ok(objects)
            }
            Err(e) => {
                let _ = std::fs::remove_file(&partial);
                Err(e)
            }
        }
    }
}

fn write_restore(
    config: &EmbeddedConfig,
    path: &Path,
    snapshot: &mut SnapshotReader<impl BufRead>,
) -> Result<u64> {
    let handle = DbHandle::open(path.to_path_buf(), config.page_cache_bytes)?;
    let db = handle.get()?;
    let prefix = normalize_prefix(&config.prefix);
    let mut newest = snapshot.revision;
    loop {
        let txn = db.begin_write().map_err(|e| db_err("begin write", e))?;
        schema::initialize(&txn)?;
        let mut more = true;
        {
            let mut t = Tables::open(&txn)?;
            for _ in 0..RESTORE_BATCH {
                let Some(entry) = snapshot.next_entry()? else {
                    more = false;
                    break;
                };
                let key = format!("{}{}", prefix, entry.key.trim_start_matches('/'));
                newest = newest.max(entry.mod_revision);
                t.latest
                    .insert(key.as_str(), (entry.mod_revision, entry.data.as_slice()))
                    .map_err(|e| db_err("restore", e))?;
                t.history
                    .insert(
                        (key.as_str(), entry.mod_revision),
                        encode_version(Some(&entry.data)).as_slice(),
                    )
                    .map_err(|e| db_err("restore", e))?;
            }
            if !more {
                // Nothing older than the snapshot is readable: its history was not kept.
                t.meta
                    .insert(schema::CURRENT_REVISION, newest)
                    .map_err(|e| db_err("restore", e))?;
                t.meta
                    .insert(schema::COMPACTED_REVISION, newest)
                    .map_err(|e| db_err("restore", e))?;
            }
        }
        txn.commit().map_err(|e| db_err("restore", e))?;
        if !more {
            return Ok(snapshot.objects());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{entry_line, header_line, trailer_line};
    use crate::{GetOptions, ListOptions, Storage};
    use serde_json::json;

    async fn all_widgets(store: &EmbeddedStore) -> crate::ObjectList {
        let all = ListOptions::recursive();
        store.get_list("/widgets", all).await.unwrap()
    }

    #[tokio::test]
    async fn a_snapshot_restores_every_object_at_its_revision() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(EmbeddedConfig::new(dir.path().join("a")))
            .await
            .unwrap();
        for i in 0..25 {
            let key = format!("/widgets/ns/w{i}");
            store
                .create(&key, json!({"metadata": {"name": format!("w{i}")}}))
                .await
                .unwrap();
        }
        store
            .delete("/widgets/ns/w3", Default::default())
            .await
            .unwrap();
        let snapshot = store.snapshot().await.unwrap();
        let revision = snapshot.revision;
        let mut file = header_line(revision);
        let chunks: Vec<_> = snapshot.entries.collect().await;
        let mut n = 0;
        for chunk in chunks {
            for entry in chunk.unwrap() {
                file.extend(entry_line(&entry).unwrap());
                n += 1;
            }
        }
        file.extend(trailer_line(n));
        assert_eq!(n, 24);
        let before = all_widgets(&store).await;

        let config = EmbeddedConfig::new(dir.path().join("b"));
        let mut reader = SnapshotReader::new(&file[..]).unwrap();
        assert_eq!(EmbeddedStore::restore(&config, &mut reader).unwrap(), 24);
        let restored = EmbeddedStore::open(config.clone()).await.unwrap();
        assert_eq!(restored.inner.current_revision(), revision);
        let after = all_widgets(&restored).await;
        let versions = |l: &crate::ObjectList| -> Vec<String> {
            l.items
                .iter()
                .map(|o| format!("{:?}@{}", o.name(), o.revision()))
                .collect()
        };
        assert_eq!(versions(&before), versions(&after));
        let got = restored
            .get("/widgets/ns/w7", GetOptions::default())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got["metadata"]["name"], "w7");
        // New writes go on from the snapshot's revision; a second restore is refused.
        let next = restored
            .create("/widgets/ns/new", json!({"metadata": {"name": "new"}}))
            .await
            .unwrap();
        assert_eq!(
            next["metadata"]["resourceVersion"],
            (revision + 1).to_string()
        );
        let mut again = SnapshotReader::new(&file[..]).unwrap();
        assert!(EmbeddedStore::restore(&config, &mut again).is_err());
    }
}
