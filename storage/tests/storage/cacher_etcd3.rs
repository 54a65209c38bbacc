//! The storage conformance suite against the cacher over the etcd3 store, with real etcds
//! started for this test binary. The cacher caches `/example.com/widgets`; the suite's other
//! keys (`/things`) go straight to the store below.
//!
//! Unlike the etcd3 runner, a case leases an etcd to itself for its whole run (a small pool
//! holds one per concurrently running case, reused case after case, each case under its own key
//! prefix): etcd's revision is global, and the cacher answers resourceVersion "0" at the
//! revision its cache has reached, which only follows other cases' writes at the next progress
//! notification. Sharing one etcd between running cases would make the suite's "a list is at
//! least as new as the revision read before it" checks depend on timing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use strategy_host_storage::etcd3::testing::EtcdServer;
use strategy_host_storage::etcd3::{Etcd3Config, Etcd3Store};
use strategy_host_storage::testing::{trials, StoreFactory, TestStore};

use crate::common;

static NEXT_PREFIX: AtomicUsize = AtomicUsize::new(0);

/// The etcds of this test binary, and which of them no case is using.
#[derive(Default)]
struct Pool {
    servers: Mutex<Vec<EtcdServer>>,
    free: Mutex<Vec<String>>,
}

/// One case's exclusive use of an etcd; returned to the pool when the case drops its store.
struct Lease {
    endpoint: String,
    pool: Arc<Pool>,
}

impl Pool {
    fn lease(self: &Arc<Self>) -> Lease {
        let free = self.free.lock().unwrap().pop();
        let endpoint = free.unwrap_or_else(|| {
            let server = EtcdServer::start().expect("start etcd");
            let endpoint = server.endpoint();
            self.servers.lock().unwrap().push(server);
            endpoint
        });
        Lease {
            endpoint,
            pool: self.clone(),
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let endpoint = std::mem::take(&mut self.endpoint);
        self.pool.free.lock().unwrap().push(endpoint);
    }
}

/// The suite's cases on the cacher over etcd3, and the pool of etcds they lease (stopped
/// when dropped).
pub(crate) fn cases() -> (Vec<libtest_mimic::Trial>, Box<dyn std::any::Any>) {
    let pool = Arc::new(Pool::default());
    let factory_pool = pool.clone();
    let factory: StoreFactory = Arc::new(move |_isolation| {
        let pool = factory_pool.clone();
        Box::pin(async move {
            let lease = tokio::task::spawn_blocking(move || pool.lease())
                .await
                .expect("lease an etcd");
            let n = NEXT_PREFIX.fetch_add(1, Ordering::SeqCst);
            let mut config = Etcd3Config::new(vec![lease.endpoint.clone()]);
            config.prefix = format!("/cacher-case-{n}/registry");
            let store = Etcd3Store::connect(config).await.expect("connect to etcd");
            let TestStore { storage, compact } = common::cached(store).await;
            let lease = Arc::new(lease);
            TestStore {
                storage,
                compact: Arc::new(move |rev| {
                    // The store holds the lease for as long as the case holds the store.
                    let _lease = &lease;
                    compact(rev)
                }),
            }
        })
    });
    (trials("cacher-etcd3", factory), Box::new(StopsEtcds(pool)))
}

/// Stops the pool's etcds when dropped, whatever still holds the pool.
struct StopsEtcds(Arc<Pool>);

impl Drop for StopsEtcds {
    fn drop(&mut self) {
        drop(std::mem::take(&mut *self.0.servers.lock().unwrap()));
    }
}
