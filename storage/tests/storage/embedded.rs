//! The storage conformance suite against the embedded store, each case on a fresh data dir.

use std::sync::Arc;

use strategy_host_storage::embedded::{EmbeddedConfig, EmbeddedStore};
use strategy_host_storage::testing::{trials, StoreFactory, TestStore};

/// The suite's cases on the embedded store.
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
            TestStore {
                storage: Arc::new(store),
                compact: Arc::new(move |rev| {
                    let store = compactor.clone();
                    Box::pin(async move { store.compact(rev).await })
                }),
            }
        })
    });
    trials("embedded", factory)
}
