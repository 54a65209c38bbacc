//! Tiered compilation: a module the cache has no optimized code for serves at once from Winch's
//! baseline code, then from Cranelift's optimized code, swapped in when it is ready; the cache
//! keeps the optimized code, so the next load starts optimized. Both tiers answer alike.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::wasm_common::*;
use serde_json::{json, Value};
use strategy_host::strategy::Strategy;
use strategy_host::wasm::WasmStrategy;
use strategy_host::wasm_runtime::{CompilerTier, Runtime, StrategyModule};

/// A tiered runtime with a cache of its own (empty: every module starts at the baseline tier).
fn tiered(cache: &std::path::Path) -> Runtime {
    runtime_with(|c| {
        c.cache_dir = Some(cache.to_owned());
        c.tiered_compilation = true;
    })
}

/// The create phase's answer for an invalid Deployment: its field errors as kube-apiserver lists
/// them, and the defaulted object.
async fn answer(rt: &Runtime, module: &Arc<StrategyModule>) -> (Vec<String>, Value) {
    let s = WasmStrategy::new(rt.clone(), module.clone());
    let mut obj = json!({
        "apiVersion": "apps.example.com/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": -1, "selector": {"matchLabels": {"app": "api"}},
                 "template": {"metadata": {"labels": {"app": "web"}}}}
    });
    let adm = s.before_create(&deployments_ctx(), &mut obj).await.unwrap();
    let errors = adm.field_errors.iter().map(ToString::to_string).collect();
    (errors, obj)
}

async fn optimized(module: &StrategyModule) {
    let started = Instant::now();
    while module.tier() != CompilerTier::Optimized {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the optimized code never arrived"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Loads the module at `path` into an empty cache, checks its answers from whichever tier
/// serves, and returns once both loaded copies run optimized code: whether the first served
/// from baseline code (a small module's optimized code may be ready before anyone looks).
async fn serves_baseline_then_optimized(path: &str) -> CompilerTier {
    let cache = tempfile::tempdir().unwrap();
    let rt = tiered(cache.path());
    let bytes = std::fs::read(path).unwrap();
    let module = Arc::new(StrategyModule::load(&rt, &bytes).unwrap());
    let first_tier = module.tier();
    let twin = Arc::new(StrategyModule::load(&rt, &bytes).unwrap());
    let from_baseline = answer(&rt, &module).await;
    assert_eq!(
        from_baseline.0,
        [
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
            r#"spec.template.metadata.labels: Invalid value: map[string]string{"app":"web"}: `selector` does not match template `labels`"#,
        ]
    );

    // One compilation serves both loaded copies; their answers do not change.
    optimized(&module).await;
    optimized(&twin).await;
    assert_eq!(answer(&rt, &module).await, from_baseline);
    for _ in 0..3 {
        assert_eq!(answer(&rt, &twin).await, from_baseline);
    }

    // The cache kept the optimized code: a restart starts there.
    let restarted = tiered(cache.path());
    let again = Arc::new(StrategyModule::load(&restarted, &bytes).unwrap());
    assert_eq!(again.tier(), CompilerTier::Optimized);
    assert_eq!(answer(&restarted, &again).await, from_baseline);
    first_tier
}

#[tokio::test]
async fn a_go_module_serves_from_baseline_code_until_its_optimized_code_swaps_in() {
    // Cranelift takes seconds over Go's largest functions: the module serves long before.
    assert_eq!(
        serves_baseline_then_optimized(strategy_artifacts::GO_DEPLOYMENT).await,
        CompilerTier::Baseline
    );
}

#[tokio::test]
async fn a_rust_module_serves_from_baseline_code_until_its_optimized_code_swaps_in() {
    serves_baseline_then_optimized(strategy_artifacts::DEPLOYMENT).await;
}

#[tokio::test]
async fn without_tiering_a_module_loads_optimized() {
    let cache = tempfile::tempdir().unwrap();
    let rt = runtime_with(|c| c.cache_dir = Some(cache.path().to_owned()));
    let module = load(&rt, strategy_artifacts::DEPLOYMENT);
    assert_eq!(module.tier(), CompilerTier::Optimized);
}
