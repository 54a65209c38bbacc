//! One Gateway (Gateway API's CRD, kept as test data) checked by its CRD's CEL rules beside the
//! structural schema validation every object gets, in one run: what the rules add to a create.
//!
//! `cargo bench -p strategy-host --bench cel_rules`

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use strategy_host_cel::CelRules;

fn gateway_schema() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/data/crds/gateway-api/gateway.networking.k8s.io_gateways.yaml"
    );
    let crd: Value = serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let v1 = crd["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "v1")
        .unwrap();
    v1["schema"]["openAPIV3Schema"].clone()
}

fn bench(c: &mut Criterion) {
    let schema = gateway_schema();
    let rules = CelRules::compile(&schema, "s").unwrap().unwrap();
    let gateway = json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"gatewayClassName": "example", "listeners": [
            {"name": "http", "protocol": "HTTP", "port": 80, "hostname": "shop.example.com"},
            {"name": "https", "protocol": "HTTPS", "port": 443, "hostname": "shop.example.com",
             "tls": {"mode": "Terminate", "certificateRefs": [{"name": "shop-cert"}]}},
            {"name": "tcp", "protocol": "TCP", "port": 5432}
        ]}
    });
    assert!(rules
        .validate(
            &gateway,
            None,
            "gateway.networking.k8s.io/v1",
            "Gateway",
            false
        )
        .is_empty());
    let mut g = c.benchmark_group("gateway");
    g.bench_function("schema_validation", |b| {
        b.iter(|| strategy_host::registry::schema::validate(&gateway, &schema, ""))
    });
    g.bench_function("cel_rules", |b| {
        b.iter(|| {
            rules.validate(
                &gateway,
                None,
                "gateway.networking.k8s.io/v1",
                "Gateway",
                false,
            )
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
