//! Helpers shared by the wasm runtime tests: a runtime whose compilation cache persists across
//! runs, contexts, and the hostile WAT fixtures with their manifest filled in.
#![allow(dead_code)]

use std::sync::Arc;

use prost::Message;
use strategy_host::registry::strategy::{ResourceInfo, StrategyContext};
use strategy_host::wasm::{abi, Runtime, RuntimeConfig, StrategyModule};

pub fn config() -> RuntimeConfig {
    RuntimeConfig {
        cache_dir: Some(concat!(env!("CARGO_TARGET_TMPDIR"), "/strategy-module-cache").into()),
        max_instances: 64,
        ..RuntimeConfig::default()
    }
}

pub fn runtime() -> Runtime {
    Runtime::new(config()).expect("runtime")
}

pub fn load(runtime: &Runtime, path: &str) -> Arc<StrategyModule> {
    Arc::new(StrategyModule::load(runtime, &std::fs::read(path).unwrap()).expect("module loads"))
}

pub fn ctx(group: &str, kind: &str, plural: &str, namespaced: bool) -> StrategyContext {
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
    }
}

pub fn deployments_ctx() -> StrategyContext {
    ctx("apps.example.com", "Deployment", "deployments", true)
}

/// The manifest hostile fixtures claim: a Widget strategy implementing the create phase.
pub fn widget_manifest(abi_version: u32, host_functions: &[abi::HostFunction]) -> Vec<u8> {
    abi::Manifest {
        abi_version,
        name: "hostile".into(),
        resources: vec![abi::Resource {
            group: "example.com".into(),
            version: "v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
            scope: abi::Scope::Namespaced as i32,
        }],
        operations: vec![
            abi::Operation::PrepareForCreate as i32,
            abi::Operation::Validate as i32,
        ],
        host_functions: host_functions.iter().map(|f| *f as i32).collect(),
    }
    .encode_to_vec()
}

/// A hostile fixture (`tests/fixtures/hostile/<name>.wat`) compiled to wasm, its `@MANIFEST@`
/// data string and `@MANIFEST_PACKED@` constant replaced by `manifest`, placed at offset 1024.
pub fn hostile(name: &str, manifest: &[u8]) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/hostile/{name}.wat",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let data: String = manifest.iter().map(|b| format!("\\{b:02x}")).collect();
    let packed = (1024u64 << 32) | manifest.len() as u64;
    let text = text
        .replace("@MANIFEST@", &data)
        .replace("@MANIFEST_PACKED@", &packed.to_string());
    wat::parse_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub fn widget_ctx() -> StrategyContext {
    ctx("example.com", "Widget", "widgets", true)
}
