//! JSON vs Kubernetes protobuf for a 1 KiB ConfigMap, as the server encodes a response and
//! decodes a request body: serde_json on the object tree (the JSON path) beside the protobuf
//! codec (the object tree bridged to k8s-pb's message, then prost), in one run.
//!
//! `cargo bench -p strategy-host --features testing --bench protobuf_codec`

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use strategy_host::bench_support::{protobuf_decode, protobuf_encode};

/// A stored ConfigMap of about 1 KiB of JSON, with the metadata the server writes.
fn config_map() -> Value {
    let mut obj = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {
            "name": "web-settings", "namespace": "storefront", "uid": "5f0c1e9a-2b7d-4c51-9a3e-7d2f8b6c4e10",
            "resourceVersion": "184467", "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": "web", "team": "storefront"},
            "annotations": {"example.com/owner": "storefront-team@example.com"}
        },
        "data": {
            "LOG_LEVEL": "info", "CACHE_TTL": "300", "FEATURE_FLAGS": "checkout-v2,search-suggest",
            "app.properties": "server.port=8080\nserver.shutdown=graceful\n"
        }
    });
    let len = obj.to_string().len();
    obj["data"]["padding"] = json!("x".repeat(1024 - len - 14));
    obj
}

fn bench(c: &mut Criterion) {
    let obj = config_map();
    let json_bytes = serde_json::to_vec(&obj).unwrap();
    let proto_bytes = protobuf_encode(&obj).expect("a ConfigMap has a protobuf form");
    assert_eq!(protobuf_decode(&proto_bytes).as_ref(), Some(&obj));
    println!(
        "1 KiB ConfigMap: {} bytes as JSON, {} bytes as protobuf",
        json_bytes.len(),
        proto_bytes.len()
    );
    let mut g = c.benchmark_group("configmap_1kib");
    g.bench_function("json_encode", |b| {
        b.iter(|| serde_json::to_vec(&obj).unwrap())
    });
    g.bench_function("protobuf_encode", |b| {
        b.iter(|| protobuf_encode(&obj).unwrap())
    });
    g.bench_function("json_decode", |b| {
        b.iter(|| serde_json::from_slice::<Value>(&json_bytes).unwrap())
    });
    g.bench_function("protobuf_decode", |b| {
        b.iter(|| protobuf_decode(&proto_bytes).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
