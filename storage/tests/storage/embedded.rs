//! The storage conformance suite against the embedded store, each case on a fresh data dir.

use std::sync::Arc;

use strategy_host_storage::testing::{trials, StoreFactory};

use crate::common;

/// The suite's cases on the embedded store.
pub(crate) fn cases() -> Vec<libtest_mimic::Trial> {
    let factory: StoreFactory =
        Arc::new(|_isolation| Box::pin(async { common::direct(common::open_embedded().await) }));
    trials("embedded", factory)
}
