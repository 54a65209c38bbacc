//! The storage conformance suite against the cacher over the embedded store, each case on a
//! fresh data dir. The cacher caches `/example.com/widgets`; the suite's other keys (`/things`)
//! go straight to the store below.

use std::sync::Arc;

use strategy_host_storage::testing::{trials, StoreFactory};

use crate::common;

/// The suite's cases on the cacher over the embedded store.
pub(crate) fn cases() -> Vec<libtest_mimic::Trial> {
    let factory: StoreFactory = Arc::new(|_isolation| {
        Box::pin(async { common::cached(common::open_embedded().await).await })
    });
    trials("cacher-embedded", factory)
}
