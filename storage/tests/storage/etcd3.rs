//! The storage conformance suite against a real etcd started for this test binary, plain and
//! with every value encrypted at rest. Cases share one etcd, isolated by key prefix; cases that
//! compact get a second etcd of their own.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use strategy_host_storage::etcd3::testing::EtcdServer;
use strategy_host_storage::etcd3::{Etcd3Config, Etcd3Store};
use strategy_host_storage::testing::{trials, Isolation, StoreFactory};

use crate::common;

static NEXT_PREFIX: AtomicUsize = AtomicUsize::new(0);

/// The suite's cases on etcd3, and the etcds they run against (stopped when dropped).
pub(crate) fn cases() -> (Vec<libtest_mimic::Trial>, Box<dyn std::any::Any>) {
    let shared = EtcdServer::start().expect("start etcd for the shared cases");
    let compacting = EtcdServer::start().expect("start etcd for the compacting cases");
    let mut all = Vec::new();
    for (name, encryption) in [
        ("etcd3", None),
        ("etcd3-encrypted", Some(common::encryption())),
    ] {
        let endpoints = (shared.endpoint(), compacting.endpoint());
        let factory: StoreFactory = Arc::new(move |isolation| {
            let endpoint = match isolation {
                Isolation::Shared => endpoints.0.clone(),
                Isolation::Compacting => endpoints.1.clone(),
            };
            let encryption = encryption.clone();
            Box::pin(async move {
                let n = NEXT_PREFIX.fetch_add(1, Ordering::SeqCst);
                let mut config = Etcd3Config::new(vec![endpoint]);
                config.prefix = format!("/case-{n}/registry");
                config.encryption = encryption;
                let store = Etcd3Store::connect(config).await.expect("connect to etcd");
                common::direct(store)
            })
        });
        all.extend(trials(name, factory));
    }
    (all, Box::new((shared, compacting)))
}
