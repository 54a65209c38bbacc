//! Store setup shared by the conformance runners: a fresh embedded store, and the suite's
//! `TestStore` over a store directly or through the cacher, compacting the store below.

use std::sync::Arc;
use std::time::Duration;

use strategy_host_storage::cacher::{Cacher, CacherConfig};
use strategy_host_storage::embedded::{EmbeddedConfig, EmbeddedStore};
use strategy_host_storage::encryption::{self, EncryptionConfig};
use strategy_host_storage::etcd3::Etcd3Store;
use strategy_host_storage::testing::{Compactor, TestStore};
use strategy_host_storage::Storage;

/// A store the suite can compact. Compaction is each store's own inherent method, not part
/// of `Storage`, so this names it for the helpers below.
pub(crate) trait Compacts: Storage + Clone {
    /// Compacts this store's history (through a clone, so the case may drop the store).
    fn compactor(&self) -> Compactor;
}

/// Implements [`Compacts`] for stores whose inherent `compact` has the suite's signature.
macro_rules! compacts {
    ($($store:ty),*) => {$(
        impl Compacts for $store {
            fn compactor(&self) -> Compactor {
                let compactor = self.clone();
                Arc::new(move |rev| {
                    let store = compactor.clone();
                    Box::pin(async move { store.compact(rev).await })
                })
            }
        }
    )*};
}

compacts!(EmbeddedStore, Etcd3Store);

/// Encryption at rest of every key (`*.*`), with AES-GCM, which binds each value to its key.
pub(crate) fn encryption() -> EncryptionConfig {
    encryption::parse(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n\
         - resources: ['*.*']\n  providers:\n  - aesgcm:\n      keys:\n      - name: k1\n\
         \x20       secret: c2VjcmV0IGlzIHNlY3VyZSwgc2VjcmV0IGlzIHNlY3U=\n",
    )
    .expect("a valid encryption configuration")
}

/// A fresh embedded store, background compaction off: only the suite's cases compact.
pub(crate) async fn open_embedded() -> EmbeddedStore {
    open_embedded_with(None).await
}

/// [`open_embedded`], encrypting as `encryption` says.
pub(crate) async fn open_embedded_with(encryption: Option<EncryptionConfig>) -> EmbeddedStore {
    // Each case owns its directory; it lives as long as the test process.
    let dir = tempfile::tempdir().expect("temp dir").keep();
    let mut config = EmbeddedConfig::new(dir);
    config.compaction_interval = None;
    config.encryption = encryption;
    EmbeddedStore::open(config)
        .await
        .expect("open embedded store")
}

/// The case's store: `store` itself under test.
pub(crate) fn direct(store: impl Compacts) -> TestStore {
    TestStore {
        compact: store.compactor(),
        storage: Arc::new(store),
    }
}

/// The case's store: a ready cacher of `/example.com/widgets` over `store` under test; the
/// suite's other keys go straight to `store`, and compaction too.
pub(crate) async fn cached(store: impl Compacts) -> TestStore {
    let compact = store.compactor();
    let config = CacherConfig {
        not_older_than_timeout: Duration::from_secs(1),
        ..Default::default()
    };
    let cacher =
        Cacher::new(Arc::new(store), "/example.com/widgets", config).expect("start the cacher");
    cacher.wait_until_ready().await;
    TestStore {
        storage: cacher,
        compact,
    }
}
