//! Instances of modules built with the Rust SDK are kept across calls (the SDK exports
//! `_initialize`), free what each call allocated, and wait idle only up to the runtime's bound
//! over all modules.

use crate::wasm_common::*;
use serde_json::{json, Value};
use strategy_host::strategy::{Strategy, StrategyContext};
use strategy_host::wasm::WasmStrategy;

fn deployment(replicas: u64) -> Value {
    json!({
        "apiVersion": "apps.example.com/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "annotations": {"pad": "x".repeat(4096)}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
        }
    })
}

async fn create(s: &WasmStrategy, ctx: &StrategyContext, replicas: u64) -> Value {
    let mut obj = deployment(replicas);
    let adm = s.before_create(ctx, &mut obj).await.unwrap();
    assert!(adm.field_errors.is_empty(), "{adm:?}");
    obj
}

#[tokio::test]
async fn a_rust_module_serves_call_after_call_from_one_instance_without_growing() {
    let rt = runtime();
    let module = load(&rt, strategy_artifacts::DEPLOYMENT);
    assert!(module.is_reactor(), "the Rust SDK exports _initialize");
    let s = WasmStrategy::new(rt.clone(), module.clone());
    let ctx = deployments_ctx();
    for replicas in 0..100 {
        // Each call answers about its own object, not one an earlier call left behind.
        let obj = create(&s, &ctx, replicas).await;
        assert_eq!(obj["spec"]["replicas"], replicas);
        assert_eq!(obj["spec"]["strategy"]["type"], "RollingUpdate");
    }
    let after_100 = module.idle_instance_memory();
    for replicas in 0..3_000 {
        create(&s, &ctx, replicas).await;
    }
    let counters = rt.metrics().module(module.name());
    // The instance that read the manifest at load served every call.
    assert_eq!(counters.instances_started(), 1);
    assert_eq!(counters.calls(), 3_100);
    // Requests (4 KiB each) and answers are freed: 3,000 more calls leave memory as it was.
    assert_eq!(module.idle_instance_memory(), after_100);
}

#[tokio::test]
async fn idle_instances_of_all_modules_together_stay_within_the_runtime_bound() {
    let rt = runtime_with(|c| c.instance_reuse.max_idle_total = 1);
    let first = load(&rt, strategy_artifacts::DEPLOYMENT);
    let second = load(&rt, strategy_artifacts::CONFIGMAP);
    // The first module's loading instance took the one idle place; the second's was dropped.
    assert_eq!(first.idle_instance_memory().len(), 1);
    assert_eq!(second.idle_instance_memory().len(), 0);

    let configmaps = WasmStrategy::new(rt.clone(), second.clone());
    let ctx = ctx("example.com", "ConfigMap", "configmaps", true);
    let call = || async {
        let mut cm = json!({"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "x"}});
        configmaps.before_create(&ctx, &mut cm).await.unwrap();
    };
    let started = || rt.metrics().module(second.name()).instances_started();
    let before = started();
    call().await;
    call().await;
    assert_eq!(
        started(),
        before + 2,
        "no idle place: a fresh instance per call"
    );

    // Once the first module is gone (replaced, say), its place is free for the second's.
    drop(first);
    call().await;
    call().await;
    assert_eq!(
        started(),
        before + 3,
        "the second call reused the first's instance"
    );
    assert_eq!(second.idle_instance_memory().len(), 1);
}
