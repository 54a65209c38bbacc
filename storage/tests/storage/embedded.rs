//! The storage conformance suite against the embedded store, each case on a fresh data dir,
//! plain and with every value encrypted at rest.

use std::sync::Arc;

use strategy_host_storage::testing::{trials, StoreFactory};

use crate::common;

/// The suite's cases on the embedded store.
pub(crate) fn cases() -> Vec<libtest_mimic::Trial> {
    let plain: StoreFactory =
        Arc::new(|_isolation| Box::pin(async { common::direct(common::open_embedded().await) }));
    let encrypted: StoreFactory = Arc::new(|_isolation| {
        Box::pin(async {
            common::direct(common::open_embedded_with(Some(common::encryption())).await)
        })
    });
    let mut all = trials("embedded", plain);
    all.extend(trials("embedded-encrypted", encrypted));
    all
}
