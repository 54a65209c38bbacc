//! The JSON a write costs the server around its strategy, for a renewed Lease (what a cluster
//! of controllers writes most): decoding the PUT body, with its duplicate-field check, and
//! turning the stored bytes etcd sends back (a watch event, a read) into the cache's shared
//! object stamped with its resourceVersion; each beside a plain `serde_json` parse of the same
//! bytes into a tree (the floor either would cost done the obvious way), in one run.
//!
//! `cargo bench -p strategy-host --features testing --bench write_path_json`

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use strategy_host::bench_support::json_body_decode;
use strategy_host::storage::SharedObject;

/// A leader-election Lease as client-go renews it, with the managed fields the server keeps.
fn lease() -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {
            "name": "controller-leader", "namespace": "kube-system",
            "uid": "5f0c1e9a-2b7d-4c51-9a3e-7d2f8b6c4e10", "resourceVersion": "184467",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "managedFields": [{
                "manager": "controller", "operation": "Update",
                "apiVersion": "coordination.k8s.io/v1", "time": "2026-01-01T00:10:00Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:acquireTime": {}, "f:holderIdentity": {},
                    "f:leaseDurationSeconds": {}, "f:leaseTransitions": {}, "f:renewTime": {}}}
            }]
        },
        "spec": {
            "holderIdentity": "controller-7d9f8b6c4e-x2x9z_5f0c1e9a-2b7d-4c51-9a3e-7d2f8b6c4e10",
            "leaseDurationSeconds": 15, "leaseTransitions": 3,
            "acquireTime": "2026-01-01T00:00:00.000000Z", "renewTime": "2026-01-01T00:10:00.000000Z"
        }
    })
}

fn bench(c: &mut Criterion) {
    let body = serde_json::to_vec(&lease()).unwrap();
    let mut stored_tree = lease();
    stored_tree["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    let stored = serde_json::to_vec(&stored_tree).unwrap();
    assert_eq!(json_body_decode(&body), Some(lease()));
    let shared = SharedObject::from_stored("/leases/kube-system/a", &stored, 184467).unwrap();
    assert_eq!(shared.to_value(), lease());
    println!(
        "Lease: {} bytes as a body, {} stored",
        body.len(),
        stored.len()
    );

    let mut g = c.benchmark_group("lease");
    g.bench_function("body_decode", |b| {
        b.iter(|| json_body_decode(&body).unwrap())
    });
    g.bench_function("body_parse_serde_json", |b| {
        b.iter(|| serde_json::from_slice::<Value>(&body).unwrap())
    });
    g.bench_function("stored_to_shared_object", |b| {
        b.iter(|| SharedObject::from_stored("/leases/kube-system/a", &stored, 184467).unwrap())
    });
    g.bench_function("stored_parse_serde_json", |b| {
        b.iter(|| serde_json::from_slice::<Value>(&stored).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
