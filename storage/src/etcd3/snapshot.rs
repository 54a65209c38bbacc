//! Snapshots of an etcd store (ranges over the prefix, all read at one revision) and restores
//! into an empty prefix: objects are created one by one in the order of their revisions in the
//! snapshot, so etcd's new revisions keep their order (etcd assigns its own, so the
//! resourceVersions change and clients relist, as after any migration).

use std::io::BufRead;

use etcd_client::GetOptions as EtcdGet;
use futures::StreamExt as _;

use super::kv::kv;
use super::{from_etcd_revision, to_etcd_revision, Etcd3Store};
use crate::error::{Result, StorageError};
use crate::key::prefix_range_end;
use crate::snapshot::{Snapshot, SnapshotEntry, SnapshotReader};
use crate::txn::{CasOutcome, CasStore};

/// Keys per range request of a snapshot.
const CHUNK: i64 = 1000;

impl Etcd3Store {
    /// Every object under the prefix as of the current revision.
    ///
    /// # Errors
    /// etcd cannot be reached; `Expired` if etcd compacts the revision while it is read.
    pub async fn snapshot(&self) -> Result<Snapshot> {
        let revision = self.read_current_revision().await?;
        let prefix = self.inner.prefix.clone();
        let end = prefix_range_end(&prefix);
        let fences = self.fence_prefix();
        let store = self.clone();
        let pages = futures::stream::try_unfold(Some(prefix.clone()), move |start| {
            let (store, prefix, end, fences) =
                (store.clone(), prefix.clone(), end.clone(), fences.clone());
            async move {
                let Some(start) = start else {
                    return Ok(None);
                };
                let options = EtcdGet::new()
                    .with_range(end)
                    .with_limit(CHUNK)
                    .with_revision(to_etcd_revision(revision)?);
                let resp = store
                    .read(|client| {
                        let (start, options) = (start.clone(), options.clone());
                        async move { kv(&client).get(start, Some(options)).await }
                    })
                    .await?;
                let next = resp.more().then(|| {
                    resp.kvs()
                        .last()
                        .map(|kv| [kv.key(), b"\0"].concat())
                        .and_then(|k| String::from_utf8(k).ok())
                });
                let chunk: Vec<SnapshotEntry> = resp
                    .kvs()
                    .iter()
                    .filter_map(|kv| {
                        let key = std::str::from_utf8(kv.key()).ok()?;
                        (!key.starts_with(&fences)).then(|| SnapshotEntry {
                            key: key[prefix.len() - 1..].to_owned(),
                            mod_revision: from_etcd_revision(kv.mod_revision()),
                            data: kv.value().to_vec(),
                        })
                    })
                    .collect();
                Ok(Some((chunk, next.flatten())))
            }
        });
        Ok(Snapshot {
            revision,
            entries: pages.boxed(),
        })
    }

    /// Creates a snapshot's objects under this store's prefix, which must be empty, oldest
    /// revision first. Returns the number of objects.
    ///
    /// # Errors
    /// `BadRequest` when the prefix holds objects or the snapshot is malformed or cut off;
    /// `Unavailable` when etcd fails (objects created before stay: the prefix is then not
    /// empty, and a new restore needs it cleared).
    pub async fn restore(&self, snapshot: &mut SnapshotReader<impl BufRead>) -> Result<u64> {
        let held = self.count_under(self.inner.prefix.clone()).await?;
        if held > 0 {
            return Err(StorageError::BadRequest(format!(
                "etcd holds {held} keys under {}: restore into an empty prefix",
                self.inner.prefix
            )));
        }
        let mut entries = Vec::new();
        while let Some(entry) = snapshot.next_entry()? {
            entries.push(entry);
        }
        entries.sort_by_key(|e| e.mod_revision);
        for entry in &entries {
            let full_key = format!("{}{}", self.inner.prefix, entry.key.trim_start_matches('/'));
            match self.put_if(&full_key, entry.data.clone(), 0).await? {
                CasOutcome::Committed(_) => {}
                CasOutcome::Stale(_) => {
                    return Err(StorageError::AlreadyExists {
                        key: entry.key.clone(),
                    })
                }
            }
        }
        Ok(entries.len() as u64)
    }
}
