//! `Instrumented`: a `Storage` that times every call to the store it wraps, as
//! kube-apiserver's `etcd_request_duration_seconds{operation, type}` (whatever the backend).

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use serde_json::Value;

use super::{
    ConditionalDelete, GetOptions, GuaranteedUpdate, ListOptions, ObjectList, Result, SharedObject,
    Storage, WatchStream,
};

type Labels = Vec<(&'static str, String)>;

/// Storage latency by operation and resource.
#[derive(Debug, Clone)]
pub struct StorageMetrics {
    duration: Family<Labels, Histogram, fn() -> Histogram>,
}

fn storage_histogram() -> Histogram {
    // 100 µs to ~26 s, by fours: an embedded read is microseconds, an etcd list of a large
    // prefix seconds.
    Histogram::new(exponential_buckets(0.000_1, 4.0, 10))
}

impl Default for StorageMetrics {
    fn default() -> Self {
        Self {
            duration: Family::new_with_constructor(storage_histogram),
        }
    }
}

impl StorageMetrics {
    /// Registers `etcd_request_duration_seconds` in `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "etcd_request_duration_seconds",
            "Storage request latency by operation and resource (the embedded store included)",
            self.duration.clone(),
        );
    }

    /// Runs `call`, an `operation` on `key`, and records how long it took.
    async fn time<T>(
        &self,
        operation: &'static str,
        key: &str,
        call: impl Future<Output = T>,
    ) -> T {
        let started = Instant::now();
        let out = call.await;
        let labels = vec![
            ("operation", operation.to_string()),
            ("type", super::key::resource_of(key)),
        ];
        self.duration
            .get_or_create(&labels)
            .observe(started.elapsed().as_secs_f64());
        out
    }
}

/// Wraps a store and times every call.
pub struct Instrumented {
    inner: Arc<dyn Storage>,
    metrics: StorageMetrics,
}

impl Instrumented {
    /// `inner`, timed into `metrics`.
    pub fn new(inner: Arc<dyn Storage>, metrics: StorageMetrics) -> Self {
        Self { inner, metrics }
    }
}

/// `Storage` for `Instrumented`: each method of the `timed` table calls the wrapped store's
/// own, timed as the operation it names; the methods after it pass straight through.
macro_rules! timed_storage {
    (
        timed { $($method:ident($($arg:ident: $ty:ty),*) -> $out:ty as $operation:literal;)* }
        $($untimed:tt)*
    ) => {
        #[async_trait]
        impl Storage for Instrumented {
            $(
                async fn $method(&self, key: &str $(, $arg: $ty)*) -> Result<$out> {
                    let call = self.inner.$method(key $(, $arg)*);
                    self.metrics.time($operation, key, call).await
                }
            )*

            $($untimed)*
        }
    };
}

timed_storage! {
    timed {
        create(obj: Value) -> Value as "create";
        delete(request: ConditionalDelete<'_>) -> Value as "delete";
        watch(opts: ListOptions) -> WatchStream as "watch";
        get(opts: GetOptions) -> Option<Value> as "get";
        get_shared(opts: GetOptions) -> Option<Arc<SharedObject>> as "get";
        get_list(opts: ListOptions) -> ObjectList as "list";
        guaranteed_update(request: GuaranteedUpdate<'_>) -> Value as "update";
        count() -> u64 as "count";
    }

    async fn current_revision(&self) -> Result<u64> {
        self.inner.current_revision().await
    }

    async fn request_watch_progress(&self) -> Result<bool> {
        self.inner.request_watch_progress().await
    }

    async fn snapshot(&self) -> Result<crate::snapshot::Snapshot> {
        self.inner.snapshot().await
    }

    async fn unchanged_since(&self, key: &str, revision: u64, count: u64) -> Result<Option<u64>> {
        self.inner.unchanged_since(key, revision, count).await
    }
}

#[cfg(test)]
mod tests {
    use super::super::key::resource_of;

    #[test]
    fn keys_name_their_resource_as_kubernetes_labels_it() {
        assert_eq!(resource_of("/namespaces/default"), "namespaces");
        assert_eq!(resource_of("/namespaces"), "namespaces");
        assert_eq!(
            resource_of("/example.com/widgets/default/a"),
            "widgets.example.com"
        );
        assert_eq!(
            resource_of("/apiextensions.k8s.io/customresourcedefinitions"),
            "customresourcedefinitions.apiextensions.k8s.io"
        );
    }
}
