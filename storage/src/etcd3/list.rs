//! `get_list`: ranges over a key or a prefix at one revision, filtered by the predicate and
//! paged with continue tokens (Kubernetes' `etcd3.store.GetList`).

use etcd_client::GetOptions as EtcdGet;

use super::errors::{is_compacted, is_future_revision};
use super::kv::{kv, shared_kv};
use super::{from_etcd_revision, header_revision, to_etcd_revision, Etcd3Store};
use crate::error::{Result, StorageError};
use crate::key;
use crate::options::{plan_list, ListOptions, ObjectList};
use crate::pager::Pager;

/// The largest chunk read in one request (Kubernetes' `maxLimit`).
const MAX_CHUNK: u64 = 10_000;

impl Etcd3Store {
    /// `Storage::get_list`.
    pub(super) async fn list(&self, key: &str, opts: ListOptions) -> Result<ObjectList> {
        let full_key = self.full_key(key)?;
        let list_prefix = if opts.recursive {
            key::recursive_prefix(&full_key)
        } else {
            full_key.clone()
        };
        let plan = plan_list(&opts, &list_prefix)?;
        let from_continue = opts.continue_token.is_some();
        let range_end = opts.recursive.then(|| key::prefix_range_end(&list_prefix));
        let mut pager = Pager::for_list(&opts, opts.recursive);
        let mut chunk = match pager.limit() {
            0 => MAX_CHUNK,
            limit => limit.min(MAX_CHUNK),
        };
        let mut start = plan.start_key.unwrap_or_else(|| list_prefix.clone());
        let mut revision = plan.revision;
        loop {
            let mut options = EtcdGet::new();
            if let Some(end) = &range_end {
                options = options.with_range(end.clone()).with_limit(chunk as i64);
            }
            if let Some(r) = revision {
                options = options.with_revision(to_etcd_revision(r)?);
            }
            let read = self
                .read(|client| {
                    let (start, options) = (start.clone(), options.clone());
                    async move { kv(&client).get(start, Some(options)).await }
                })
                .await;
            let mut resp = match read {
                Ok(resp) => resp,
                Err(e) => return Err(self.read_error(e, revision, from_continue).await),
            };
            if revision.is_none() {
                // The first read of a list at "the latest" pins the revision every further
                // chunk (and page) reads at.
                let current = header_revision(resp.header())?;
                if let Some(requested) = plan.min_revision.filter(|&m| m > current) {
                    return Err(StorageError::TooLargeResourceVersion { requested, current });
                }
                revision = Some(current);
            }
            let more = resp.more();
            let total = from_etcd_revision(resp.count());
            let kvs = resp.take_kvs();
            let mut last_key = None;
            for found in &kvs {
                let found_key = String::from_utf8_lossy(found.key()).into_owned();
                if !pager.offer(&found_key, || {
                    shared_kv(self.encryption(), &found_key, found)
                })? {
                    break;
                }
                last_key = Some(found_key);
            }
            if pager.is_full() {
                // Keys past this chunk: counted by etcd, not read.
                pager.more_remain(if more {
                    total.saturating_sub(kvs.len() as u64)
                } else {
                    0
                });
                break;
            }
            let Some(last_key) = last_key.filter(|_| more) else {
                break;
            };
            start = format!("{last_key}\0");
            // Selective predicates: read ever larger chunks until the page fills.
            chunk = (chunk * 2).min(MAX_CHUNK);
        }
        let at = revision.unwrap_or_default();
        Ok(pager.finish().into_list(at, &list_prefix))
    }

    /// Rebuilds a read error at `revision` with the revisions involved.
    pub(super) async fn read_error(
        &self,
        e: StorageError,
        revision: Option<u64>,
        from_continue: bool,
    ) -> StorageError {
        let Some(requested) = revision else { return e };
        if is_compacted(&e) {
            if from_continue {
                return StorageError::continue_expired();
            }
            // etcd can still read its compacted revision; the oldest available is that one.
            let oldest = self.compacted_revision().await.unwrap_or(requested + 1);
            return StorageError::compacted(requested, oldest.saturating_sub(1));
        }
        if is_future_revision(&e) {
            return match self.read_current_revision().await {
                Ok(current) => StorageError::TooLargeResourceVersion { requested, current },
                Err(e) => e,
            };
        }
        e
    }
}
