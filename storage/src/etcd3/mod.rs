//! The etcd3 store: `Storage` on etcd v3 through `etcd-client` (Kubernetes'
//! `k8s.io/apiserver/pkg/storage/etcd3`).
//!
//! Objects are stored as JSON without a resourceVersion under `{prefix}{key}`; an object's
//! resourceVersion is its etcd mod_revision and a list's is the revision it was read at. Writes
//! go through the shared compare-and-swap loops of [`crate::txn`], implemented here as
//! etcd transactions on mod_revision. Watches are etcd watches that resume on their own after the
//! connection breaks.
//!
//! Requests go to the cluster's members in turn; a member that fails leaves the rotation until
//! it answers again, and a request that failed on it runs again on another member when that is
//! safe (`endpoints`, `failover`). Concurrent single-key reads share one request (`batch`).
//!
//! Every request runs under [`Etcd3Config::request_timeout`]; every failure is a typed
//! [`StorageError`] (unreachable or timed out → `Unavailable`, compacted → `Expired`, revision
//! not yet reached → `TooLargeResourceVersion`).

mod ambiguity;
mod batch;
mod client;
mod compactor;
mod endpoints;
mod errors;
mod failover;
mod kv;
mod list;
mod probe;
mod snapshot;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(test)]
mod version_tests {
    use super::progress_is_ordered;

    #[test]
    fn progress_ordering_follows_etcd_fix_releases() {
        for (v, ok) in [
            ("3.4.23", false),
            ("3.4.31", true),
            ("3.5.12", false),
            ("3.5.13", true),
            ("3.6.0", true),
            ("garbage", false),
        ] {
            assert_eq!(progress_is_ordered(v), ok, "{v}");
        }
    }
}

#[cfg(test)]
mod tests;
mod watch;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use crate::error::{Result, StorageError};
use crate::options::{GetOptions, ListOptions, ObjectList};
use crate::watch::{SharedObject, WatchStream};
use crate::{key, txn, ConditionalDelete, GuaranteedUpdate, Storage};

/// PEM files for a TLS connection to etcd (`--etcd-cafile`, `--etcd-certfile`,
/// `--etcd-keyfile`). The certificate and key go together.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsFiles {
    /// The CA bundle that signed etcd's serving certificate (the system roots are not used).
    pub ca_file: Option<PathBuf>,
    /// The client certificate presented to etcd.
    pub cert_file: Option<PathBuf>,
    /// The client certificate's private key.
    pub key_file: Option<PathBuf>,
}

/// How to reach etcd.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Etcd3Config {
    /// Client URLs, e.g. `http://127.0.0.1:2379` (`https://` with TLS): one per cluster member.
    pub endpoints: Vec<String>,
    /// The key prefix every object is stored under (default `/registry`).
    pub prefix: String,
    /// How long connecting may take (default 5 s).
    pub dial_timeout: Duration,
    /// How long one request may take, retries on other members included, before it fails as
    /// `Unavailable` (default 10 s).
    pub request_timeout: Duration,
    /// TLS files, when etcd is served over TLS.
    pub tls: Option<TlsFiles>,
    /// How often etcd's history is compacted (kube-apiserver's `--etcd-compaction-interval`);
    /// `None` (the default here; the command line's is 5 minutes) never compacts.
    pub compaction_interval: Option<Duration>,
    /// Encryption at rest, by resource (`--encryption-provider-config`); `None`: plain.
    pub encryption: Option<crate::encryption::EncryptionConfig>,
}

impl Etcd3Config {
    /// A configuration for `endpoints` with the default prefix and timeouts and no TLS.
    pub fn new(endpoints: Vec<String>) -> Self {
        Self {
            endpoints,
            prefix: "/registry".to_string(),
            dial_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(10),
            tls: None,
            compaction_interval: None,
            encryption: None,
        }
    }
}

/// The etcd v3 store. Cheap to clone: clones share one connection per member.
#[derive(Clone)]
pub struct Etcd3Store {
    inner: Arc<Inner>,
}

struct Inner {
    /// The members, and which of them are in rotation.
    endpoints: endpoints::Endpoints,
    /// The normalized prefix (`/registry/`).
    prefix: String,
    /// Encryption at rest, bound to the prefix.
    encryption: crate::encryption::Encryption,
    config: Etcd3Config,
    /// Progress requests, fanned out to every watch that allows bookmarks.
    progress: tokio::sync::broadcast::Sender<()>,
    /// Whether this etcd orders a progress answer after the events before it (etcd ≥ 3.4.31 or
    /// ≥ 3.5.13; older ones may answer ahead of undelivered events).
    ordered_progress: bool,
    /// Single-key reads waiting to share the next request.
    read_batches: batch::ReadBatches,
    /// Dropped with the store, which stops its compactions.
    _stop_compactor: Option<tokio::sync::oneshot::Sender<()>>,
}

/// Whether etcd `version` answers RequestProgress in order with events.
fn progress_is_ordered(version: &str) -> bool {
    let mut parts = version.split('.').map(|p| p.parse::<u64>().unwrap_or(0));
    let (major, minor, patch) = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    match (major, minor) {
        (3, 4) => patch >= 31,
        (3, 5) => patch >= 13,
        (3, m) => m >= 6,
        (m, _) => m > 3,
    }
}

impl std::fmt::Debug for Etcd3Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Etcd3Store")
            .field("endpoints", &self.inner.config.endpoints)
            .field("prefix", &self.inner.prefix)
            .finish_non_exhaustive()
    }
}

impl Etcd3Store {
    /// Connects to etcd and checks, within `dial_timeout`, that a member answers.
    ///
    /// # Errors
    /// `Unavailable` when no member can be reached in time; `BadRequest` for unusable endpoints
    /// or TLS files.
    pub async fn connect(config: Etcd3Config) -> Result<Self> {
        let prefix = key::normalize_prefix(&config.prefix);
        let endpoints = endpoints::Endpoints::connect(&config, prefix.clone()).await?;
        probe::verify_reachable(&endpoints, &config).await?;
        let version = probe::server_version(&endpoints, &config).await;
        let ordered_progress = version.as_deref().is_some_and(progress_is_ordered);
        if !ordered_progress {
            tracing::info!(
                version = version.as_deref().unwrap_or("unknown"),
                "etcd answers progress requests out of order before 3.4.31/3.5.13: \
                 consistent reads prove a cache current with one transaction instead"
            );
        }
        let compaction = config
            .compaction_interval
            .map(|every| (every, tokio::sync::oneshot::channel()));
        let (stop_compactor, compactions) = match compaction {
            Some((every, (tx, rx))) => (Some(tx), Some((every, rx))),
            None => (None, None),
        };
        let encryption = config
            .encryption
            .as_ref()
            .map(|e| e.bind(&prefix))
            .unwrap_or_default();
        let inner = Arc::new(Inner {
            endpoints,
            encryption,
            prefix,
            config,
            progress: tokio::sync::broadcast::channel(16).0,
            ordered_progress,
            read_batches: Default::default(),
            _stop_compactor: stop_compactor,
        });
        if let Some((every, stop)) = compactions {
            compactor::spawn(Arc::downgrade(&inner), every, stop);
        }
        Ok(Self { inner })
    }

    /// Compacts etcd's history up to `revision` (physically, waiting until it is applied). A
    /// revision that is already compacted is not an error.
    ///
    /// # Errors
    /// `TooLargeResourceVersion` when etcd has not reached `revision`; `Unavailable`.
    pub async fn compact(&self, revision: u64) -> Result<()> {
        let at = to_etcd_revision(revision)?;
        // Compacting twice to one revision is harmless (the second is "already compacted"), so
        // a compaction retries on another member like a read.
        let result = self
            .read(|client| async move {
                let options = etcd_client::CompactionOptions::new().with_physical();
                client.kv_client().compact(at, Some(options)).await
            })
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) if errors::is_compacted(&e) => Ok(()),
            Err(e) if errors::is_future_revision(&e) => {
                Err(StorageError::TooLargeResourceVersion {
                    requested: revision,
                    current: self.read_current_revision().await?,
                })
            }
            Err(e) => Err(e),
        }
    }

    /// The configuration this store was connected with.
    pub fn config(&self) -> &Etcd3Config {
        &self.inner.config
    }

    fn request_timeout(&self) -> Duration {
        self.inner.config.request_timeout
    }

    /// Validates a caller's key and joins it under the prefix.
    /// Encryption at rest of this store's values.
    pub(super) fn encryption(&self) -> &crate::encryption::Encryption {
        &self.inner.encryption
    }

    fn full_key(&self, key: &str) -> Result<String> {
        key::prepare_key(&self.inner.prefix, key)
    }
}

/// A revision as etcd's signed integer.
fn to_etcd_revision(revision: u64) -> Result<i64> {
    i64::try_from(revision)
        .map_err(|_| StorageError::BadRequest(format!("invalid resource version: {revision}")))
}

/// A revision from etcd (never negative in practice).
fn from_etcd_revision(revision: i64) -> u64 {
    u64::try_from(revision).unwrap_or(0)
}

/// The revision in a response header; etcd always sends one.
fn header_revision(header: Option<&etcd_client::ResponseHeader>) -> Result<u64> {
    header
        .map(|h| from_etcd_revision(h.revision()))
        .ok_or_else(|| StorageError::Internal("etcd response without a header".into()))
}

#[async_trait]
impl Storage for Etcd3Store {
    async fn create(&self, key: &str, obj: Value) -> Result<Value> {
        let full_key = self.full_key(key)?;
        txn::create(self, &full_key, obj).await
    }

    async fn delete(&self, key: &str, request: ConditionalDelete<'_>) -> Result<Value> {
        txn::conditional_delete(self, &self.full_key(key)?, request).await
    }

    async fn watch(&self, key: &str, opts: ListOptions) -> Result<WatchStream> {
        self.watch_key(key, opts).await
    }

    async fn get(&self, key: &str, opts: GetOptions) -> Result<Option<Value>> {
        self.get_object(key, opts, kv::decode_kv).await
    }

    async fn get_shared(&self, key: &str, opts: GetOptions) -> Result<Option<Arc<SharedObject>>> {
        self.get_object(key, opts, kv::shared_kv).await
    }

    async fn get_list(&self, key: &str, opts: ListOptions) -> Result<ObjectList> {
        self.list(key, opts).await
    }

    async fn guaranteed_update(&self, key: &str, request: GuaranteedUpdate<'_>) -> Result<Value> {
        txn::guaranteed_update(self, &self.full_key(key)?, request).await
    }

    async fn count(&self, key: &str) -> Result<u64> {
        self.count_keys(key).await
    }

    async fn current_revision(&self) -> Result<u64> {
        self.read_current_revision().await
    }

    async fn unchanged_since(&self, key: &str, revision: u64, count: u64) -> Result<Option<u64>> {
        self.prove_unchanged_since(key, revision, count).await
    }

    async fn snapshot(&self) -> Result<crate::snapshot::Snapshot> {
        Etcd3Store::snapshot(self).await
    }

    async fn request_watch_progress(&self) -> Result<bool> {
        if !self.inner.ordered_progress {
            return Ok(false);
        }
        // No receiver means no watch wants bookmarks: nothing to do.
        let _ = self.inner.progress.send(());
        Ok(true)
    }
}
