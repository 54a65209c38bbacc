//! The storage conformance suite against the cacher over the embedded store, each case on a
//! fresh data dir. The cacher caches `/example.com/widgets`; the suite's other keys (`/things`)
//! go straight to the store below.

use std::sync::Arc;
use std::time::Duration;

use strategy_host_storage::cacher::{Cacher, CacherConfig};
use strategy_host_storage::embedded::{EmbeddedConfig, EmbeddedStore};
use strategy_host_storage::testing::{trials, StoreFactory, TestStore};

/// The suite's cases on the cacher over the embedded store.
pub(crate) fn cases() -> Vec<libtest_mimic::Trial> {
    let factory: StoreFactory = Arc::new(|_isolation| {
        Box::pin(async {
            // Each case owns its directory; it lives as long as the test process.
            let dir = tempfile::tempdir().expect("temp dir").keep();
            let mut config = EmbeddedConfig::new(dir);
            config.compaction_interval = None;
            let store = EmbeddedStore::open(config)
                .await
                .expect("open embedded store");
            let compactor = store.clone();
            let config = CacherConfig {
                not_older_than_timeout: Duration::from_secs(1),
                ..Default::default()
            };
            let cacher = Cacher::new(Arc::new(store), "/example.com/widgets", config)
                .expect("start the cacher");
            cacher.wait_until_ready().await;
            TestStore {
                storage: cacher,
                compact: Arc::new(move |rev| {
                    let store = compactor.clone();
                    Box::pin(async move { store.compact(rev).await })
                }),
            }
        })
    });
    trials("cacher-embedded", factory)
}
