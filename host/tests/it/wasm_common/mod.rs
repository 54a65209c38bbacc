//! Helpers shared by the wasm runtime tests: a runtime whose compilation cache persists across
//! runs, contexts, and the hostile WAT fixtures with their manifest filled in.
#![allow(dead_code)]

use std::sync::Arc;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use strategy_host::strategy::{ResourceInfo, Strategy, StrategyContext};
use strategy_host::wasm::WasmStrategy;
use strategy_host::wasm_runtime::{abi, FailureKind, Runtime, RuntimeConfig, StrategyModule};

pub(crate) fn config() -> RuntimeConfig {
    RuntimeConfig {
        cache_dir: Some(concat!(env!("CARGO_TARGET_TMPDIR"), "/strategy-module-cache").into()),
        max_instances: 64,
        // Each test sees one tier's code throughout (no swap mid-test); `wasm_tiers` tests the
        // swap.
        tiered_compilation: false,
        ..RuntimeConfig::default()
    }
}

pub(crate) fn runtime() -> Runtime {
    Runtime::new(config()).expect("runtime")
}

/// A runtime of [`config`] with `change` made to it.
pub(crate) fn runtime_with(change: impl FnOnce(&mut RuntimeConfig)) -> Runtime {
    let mut config = config();
    change(&mut config);
    Runtime::new(config).expect("runtime")
}

/// The strategy of the module at `path`, loaded on `runtime`.
pub(crate) fn strategy(runtime: &Runtime, path: &str) -> WasmStrategy {
    WasmStrategy::new(runtime.clone(), load(runtime, path))
}

pub(crate) fn load(runtime: &Runtime, path: &str) -> Arc<StrategyModule> {
    Arc::new(StrategyModule::load(runtime, &std::fs::read(path).unwrap()).expect("module loads"))
}

pub(crate) fn ctx(group: &str, kind: &str, plural: &str, namespaced: bool) -> StrategyContext {
    StrategyContext {
        resource: ResourceInfo {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced,
        },
        dry_run: false,
        request_id: "test-request".into(),
        hook_depth: 0,
        user: Default::default(),
    }
}

pub(crate) fn deployments_ctx() -> StrategyContext {
    ctx("apps.example.com", "Deployment", "deployments", true)
}

/// The manifest hostile fixtures claim: a Widget strategy implementing the create phase.
pub(crate) fn widget_manifest(abi_version: u32, host_functions: &[abi::HostFunction]) -> Vec<u8> {
    let functions: Vec<i32> = host_functions.iter().map(|f| *f as i32).collect();
    strategy_artifacts::widget_manifest(abi_version, &functions)
}

/// A hostile fixture (`strategies/artifacts/hostile/<name>.wat`) with `manifest` filled in.
pub(crate) fn hostile(name: &str, manifest: &[u8]) -> Vec<u8> {
    strategy_artifacts::hostile(name, manifest)
}

pub(crate) fn widget_ctx() -> StrategyContext {
    ctx("example.com", "Widget", "widgets", true)
}

/// Runs a Widget create on `hostile`, which must fail for `reason` and be counted once as
/// `kind`; then `good` (on the same runtime) must still admit the Deployment `valid`. Returns how
/// long the failing call took.
pub(crate) async fn assert_contained(
    rt: &Runtime,
    hostile: &WasmStrategy,
    (kind, reason): (FailureKind, &str),
    good: &WasmStrategy,
    mut valid: Value,
) -> Duration {
    let started = Instant::now();
    let err = hostile
        .before_create(&widget_ctx(), &mut json!({"spec": {}}))
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert_eq!(err.module, hostile.name());
    assert!(err.reason.contains(reason), "{}: {err}", hostile.name());
    let counted = rt.metrics().module(&err.module).failures(kind);
    assert_eq!(counted, 1, "{}: counted as {kind:?}", hostile.name());
    let adm = good
        .before_create(&deployments_ctx(), &mut valid)
        .await
        .expect("a good module still serves");
    assert!(adm.field_errors.is_empty());
    took
}
