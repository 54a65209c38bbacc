//! `Storage` and `CasStore` for the embedded store: key preparation, resourceVersion rules, and
//! the shared create/update/delete loops over the writer's compare-and-swap.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::oneshot;

use super::reader::{self, with_snapshot, ListRequest};
use super::schema::read_revisions;
use super::writer::Request;
use super::{watch, EmbeddedStore};
use crate::error::{Result, StorageError};
use crate::key::KeyScope;
use crate::key::{prepare_key, recursive_prefix};
use crate::options::{plan_list, GetOptions, ListOptions, ObjectList};
use crate::pager::Pager;
use crate::txn::{self, CasOutcome, CasStore, RawValue};
use crate::versioner::{decode_from_storage, parse_resource_version};
use crate::watch::{SharedObject, WatchStream};
use crate::{ConditionalDelete, GuaranteedUpdate, Storage};

/// The largest object the store accepts, in bytes.
const MAX_OBJECT_BYTES: usize = 64 << 20;

impl EmbeddedStore {
    fn full_key(&self, key: &str) -> Result<String> {
        prepare_key(&self.inner.prefix, key)
    }

    /// The keys a list or watch covers, and the prefix its continue tokens are relative to.
    fn filter(&self, key: &str, recursive: bool) -> Result<(KeyScope, String)> {
        let scope = KeyScope::of(self.full_key(key)?, recursive);
        let base = scope.base().to_string();
        Ok((scope, base))
    }

    /// `Storage::get` and `Storage::get_shared`: the latest state, which must be at least as
    /// fresh as a given revision, made by `read` from the key, its stored bytes and revision.
    async fn get_object<T: Send + 'static>(
        &self,
        key: &str,
        opts: GetOptions,
        read: fn(&str, &[u8], u64) -> Result<T>,
    ) -> Result<Option<T>> {
        let full = self.full_key(key)?;
        let min = parse_resource_version(&opts.resource_version)?;
        let encryption = self.inner.encryption().clone();
        with_snapshot(self.inner.db.get()?, move |txn| {
            let (current, _) = read_revisions(txn)?;
            if let Some(requested) = min.filter(|&r| r > current) {
                return Err(StorageError::TooLargeResourceVersion { requested, current });
            }
            match reader::read_latest(txn, &full)? {
                Some(raw) => {
                    let plain = encryption.open(&full, &raw.data)?;
                    read(&full, &plain, raw.mod_revision).map(Some)
                }
                None if opts.ignore_not_found => Ok(None),
                None => Err(StorageError::not_found(full)),
            }
        })
        .await
    }
}

#[async_trait]
impl Storage for EmbeddedStore {
    async fn create(&self, key: &str, obj: Value) -> Result<Value> {
        let full = self.full_key(key)?;
        txn::create(self, &full, obj).await
    }

    async fn delete(&self, key: &str, request: ConditionalDelete<'_>) -> Result<Value> {
        txn::conditional_delete(self, &self.full_key(key)?, request).await
    }

    async fn watch(&self, key: &str, opts: ListOptions) -> Result<WatchStream> {
        let (filter, _) = self.filter(key, opts.recursive)?;
        let rv = opts.parsed_resource_version()?;
        // Subscribe before reading anything, so no commit falls between replay and live events.
        let live = self.inner.events.subscribe();
        let start = match rv {
            None | Some(0) => watch::Start::Initial,
            Some(n) => {
                let compacted = self.inner.compacted_revision();
                if n < compacted {
                    return Err(StorageError::compacted(n, compacted.saturating_sub(1)));
                }
                watch::Start::After(n)
            }
        };
        Ok(watch::spawn(watch::Watcher {
            db: std::sync::Arc::downgrade(&self.inner.db),
            live,
            filter,
            predicate: opts.predicate,
            allow_bookmarks: opts.allow_bookmarks,
            start,
            encryption: self.inner.encryption().clone(),
        }))
    }

    async fn get(&self, key: &str, opts: GetOptions) -> Result<Option<Value>> {
        self.get_object(key, opts, decode_from_storage).await
    }

    async fn get_shared(&self, key: &str, opts: GetOptions) -> Result<Option<Arc<SharedObject>>> {
        let shared = |key: &str, data: &[u8], revision: u64| {
            SharedObject::from_stored(key, data, revision).map(Arc::new)
        };
        self.get_object(key, opts, shared).await
    }

    async fn get_list(&self, key: &str, opts: ListOptions) -> Result<ObjectList> {
        let (filter, list_prefix) = self.filter(key, opts.recursive)?;
        let plan = plan_list(&opts, &list_prefix)?;
        let from_token = opts.continue_token.is_some();
        let encryption = self.inner.encryption().clone();
        with_snapshot(self.inner.db.get()?, move |txn| {
            let (current, compacted) = read_revisions(txn)?;
            if let Some(r) = plan.revision {
                if r < compacted {
                    return Err(if from_token {
                        StorageError::continue_expired()
                    } else {
                        StorageError::compacted(r, compacted.saturating_sub(1))
                    });
                }
                if r > current {
                    return Err(StorageError::TooLargeResourceVersion {
                        requested: r,
                        current,
                    });
                }
            }
            if let Some(requested) = plan.min_revision.filter(|&m| m > current) {
                return Err(StorageError::TooLargeResourceVersion { requested, current });
            }
            let read_at = plan.revision.unwrap_or(current);
            let page = reader::list(
                txn,
                &ListRequest {
                    encryption: &encryption,
                    filter: &filter,
                    start_key: plan.start_key.as_deref(),
                    at: Some(read_at),
                },
                Pager::for_list(&opts, opts.recursive),
            )?;
            Ok(page.into_list(read_at, &list_prefix))
        })
        .await
    }

    async fn guaranteed_update(&self, key: &str, request: GuaranteedUpdate<'_>) -> Result<Value> {
        txn::guaranteed_update(self, &self.full_key(key)?, request).await
    }

    async fn count(&self, key: &str) -> Result<u64> {
        let prefix = recursive_prefix(&self.full_key(key)?);
        with_snapshot(self.inner.db.get()?, move |txn| reader::count(txn, &prefix)).await
    }

    async fn current_revision(&self) -> Result<u64> {
        Ok(self.inner.current_revision())
    }

    async fn snapshot(&self) -> Result<crate::snapshot::Snapshot> {
        EmbeddedStore::snapshot(self).await
    }

    async fn request_watch_progress(&self) -> Result<bool> {
        self.inner.request_progress().map(|()| true)
    }
}

#[async_trait]
impl CasStore for EmbeddedStore {
    async fn read_latest(&self, full_key: &str) -> Result<Option<RawValue>> {
        let key = full_key.to_string();
        let raw = with_snapshot(self.inner.db.get()?, move |txn| {
            reader::read_latest(txn, &key)
        })
        .await?;
        self.opened(full_key, raw)
    }

    async fn put_if(&self, full_key: &str, data: Vec<u8>, expected: u64) -> Result<CasOutcome> {
        let data = self.inner.encryption().seal(full_key, data)?;
        if data.len() > MAX_OBJECT_BYTES {
            return Err(StorageError::invalid_object(
                full_key,
                format!(
                    "object is {} bytes, more than the limit of {MAX_OBJECT_BYTES}",
                    data.len()
                ),
            ));
        }
        self.swap(full_key, |key, reply| Request::Put {
            key,
            data,
            expected,
            reply,
        })
        .await
    }

    async fn delete_if(&self, full_key: &str, expected: u64) -> Result<CasOutcome> {
        self.swap(full_key, |key, reply| Request::Delete {
            key,
            expected,
            reply,
        })
        .await
    }
}

impl EmbeddedStore {
    /// A stored value as the shared loops see it: decrypted.
    fn opened(&self, full_key: &str, raw: Option<RawValue>) -> Result<Option<RawValue>> {
        raw.map(|raw| {
            self.inner
                .encryption()
                .open_raw(full_key, &raw.data, raw.mod_revision)
        })
        .transpose()
    }

    /// Submits the compare-and-swap of `full_key` that `make` builds (from the key and the
    /// reply channel) to the writer, and answers its outcome with the current value decrypted.
    async fn swap(
        &self,
        full_key: &str,
        make: impl FnOnce(String, oneshot::Sender<Result<CasOutcome>>) -> Request,
    ) -> Result<CasOutcome> {
        let key = full_key.to_string();
        let outcome = self.inner.submit(|reply| make(key, reply)).await?;
        Ok(match outcome {
            CasOutcome::Stale(raw) => CasOutcome::Stale(self.opened(full_key, raw)?),
            committed => committed,
        })
    }
}
