//! Gets and lists from the cache with Kubernetes' resourceVersion semantics: `"0"` answers from
//! the cache as it is, `N` waits for the cache to reach N, `""` (consistent) waits for the cache
//! to reach the store's current revision (KEP-2340), `Exact` and continue pages answer from
//! memory when the scope has not changed since their revision and go to the store below
//! otherwise. Where the store below cannot report progress in order (etcd before 3.4.31), a
//! consistent get or page is read from it, as Kubernetes does: making the cache provably
//! current there costs a read of the whole prefix. A consistent read the cache could not catch
//! up for is read from the store below too, and `"0"` reads do not go back behind it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::watch_cache::CachedObject;
use super::Cacher;
use crate::error::{Result, StorageError};
use crate::key::KeyScope;
use crate::options::{plan_list, GetOptions, ListOptions, ObjectList};
use crate::pager::{Page, Pager};
use crate::versioner::parse_resource_version;

/// How much of the prefix a read returns, which decides how a consistent read is made
/// consistent where the store below cannot report progress in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Extent {
    /// One object or one page: the store below reads only what it returns.
    Bounded,
    /// Every object under the prefix that matches (the store below reads them all anyway).
    Whole,
}

/// Whether a read can be answered from memory.
pub(super) enum Freshness {
    /// The cache is fresh enough.
    Cache,
    /// The store below answers this kind of read (a consistent get or page on an etcd that
    /// cannot report progress in order).
    Below,
    /// The cache did not catch up in time: ask the store below, and keep later reads from
    /// going back behind its answer.
    Behind,
}

impl Freshness {
    /// `Cache` when the cache `caught_up`, otherwise `Behind`, counted in `behind`.
    fn caught_up_or_counted(caught_up: bool, behind: &AtomicU64) -> Self {
        if caught_up {
            return Self::Cache;
        }
        behind.fetch_add(1, Ordering::Relaxed);
        Self::Behind
    }
}

impl Cacher {
    /// Makes sure the cache is fresh enough for a read at `rv` (`None`: consistent) of
    /// `extent`.
    ///
    /// # Errors
    /// `TooLargeResourceVersion` when the cache does not reach N in time; the store's errors
    /// when its current revision cannot be read.
    pub(super) async fn await_fresh(&self, rv: Option<u64>, extent: Extent) -> Result<Freshness> {
        let config = &self.shared.config;
        match rv {
            Some(0) => {
                // When it is behind, what the store shows now is newer still: later reads must
                // not go back.
                let caught_up = self.shared.catch_up_with_reads_from_store().await;
                let delegated = &self.shared.metrics.delegated_reads;
                Ok(Freshness::caught_up_or_counted(caught_up, delegated))
            }
            Some(n) => {
                if self
                    .shared
                    .wait_for_revision(n, config.not_older_than_timeout)
                    .await
                {
                    Ok(Freshness::Cache)
                } else {
                    Err(StorageError::TooLargeResourceVersion {
                        requested: n,
                        current: self.shared.read().revision(),
                    })
                }
            }
            None if extent == Extent::Bounded && !self.shared.progress_supported().await => {
                // The store cannot say in order how far it is, and proving that nothing under
                // the prefix changed makes etcd read every key and value there; the object or
                // page itself costs it only what it returns.
                self.shared
                    .metrics
                    .delegated_reads
                    .fetch_add(1, Ordering::Relaxed);
                Ok(Freshness::Below)
            }
            None => {
                let caught_up = self.shared.catch_up_for_consistent_read().await;
                let fallbacks = &self.shared.metrics.consistent_read_fallbacks;
                Ok(Freshness::caught_up_or_counted(caught_up, fallbacks))
            }
        }
    }

    pub(super) async fn delegate_get(
        &self,
        key: &str,
        opts: GetOptions,
    ) -> Result<Option<Arc<CachedObject>>> {
        self.shared
            .metrics
            .delegated_reads
            .fetch_add(1, Ordering::Relaxed);
        self.shared.below.get_shared(key, opts).await
    }

    pub(super) async fn delegate_list(&self, key: &str, opts: ListOptions) -> Result<ObjectList> {
        self.shared
            .metrics
            .delegated_reads
            .fetch_add(1, Ordering::Relaxed);
        self.shared.below.get_list(key, opts).await
    }

    /// `get` of `cache_key` (the normalized `key`) from the cache, shared as it is held; from
    /// the store below when the cache cannot be fresh enough in time.
    pub(super) async fn get_cached(
        &self,
        key: &str,
        cache_key: &str,
        opts: GetOptions,
    ) -> Result<Option<Arc<CachedObject>>> {
        let rv = parse_resource_version(&opts.resource_version)?;
        match self.await_fresh(rv, Extent::Bounded).await? {
            Freshness::Cache => {}
            Freshness::Below => return self.shared.below.get_shared(key, opts).await,
            Freshness::Behind => {
                let found = self.shared.below.get_shared(key, opts).await?;
                if let Some(obj) = &found {
                    self.shared.shown_by_store(obj.revision());
                }
                return Ok(found);
            }
        }
        let found = self.shared.read().get(cache_key);
        match found {
            Some(obj) => Ok(Some(obj)),
            None if opts.ignore_not_found => Ok(None),
            None => Err(StorageError::not_found(key)),
        }
    }

    /// `get_list` of `scope` (the normalized `key`) from the cache.
    pub(super) async fn list_cached(
        &self,
        key: &str,
        scope: KeyScope,
        opts: ListOptions,
    ) -> Result<ObjectList> {
        let list_prefix = scope.base().to_string();
        let plan = plan_list(&opts, &list_prefix)?;
        if let Some(at) = plan.revision {
            // Exact, or a continue page: from memory only if the scope is unchanged since.
            let page = {
                let cache = self.shared.read();
                cache
                    .unchanged_since(at, &scope)
                    .then(|| self.read_page(&cache, &scope, plan.start_key.as_deref(), &opts))
            };
            return match page {
                Some(page) => Ok(page.into_list(at, &list_prefix)),
                None => self.delegate_list(key, opts).await,
            };
        }
        let extent = match &scope {
            KeyScope::Prefix(_) if opts.limit == 0 => Extent::Whole,
            _ => Extent::Bounded,
        };
        let rv = opts.parsed_resource_version()?;
        match self.await_fresh(rv, extent).await? {
            Freshness::Cache => {}
            Freshness::Below => return self.shared.below.get_list(key, opts).await,
            Freshness::Behind => {
                let list = self.shared.below.get_list(key, opts).await?;
                self.shared.shown_by_store(list.resource_version);
                return Ok(list);
            }
        }
        let (page, at) = {
            let cache = self.shared.read();
            (
                self.read_page(&cache, &scope, None, &opts),
                cache.revision(),
            )
        };
        Ok(page.into_list(at, &list_prefix))
    }

    /// One page of `scope` from the cache, under the cache's lock (its objects shared, not
    /// copied).
    fn read_page(
        &self,
        cache: &super::watch_cache::WatchCache,
        scope: &KeyScope,
        start: Option<&str>,
        opts: &ListOptions,
    ) -> Page {
        let pager = Pager::for_list(opts, matches!(scope, KeyScope::Prefix(_)));
        cache.list(scope, start, pager)
    }
}
