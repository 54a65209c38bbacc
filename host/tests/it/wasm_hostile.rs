//! Hostile modules (WAT fixtures in `tests/fixtures/hostile/`) are contained: refused at load, or
//! failing only their own call with a clear `StrategyError`, while the next good call still works.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::wasm_common::*;
use serde_json::json;
use strategy_host::strategy::Strategy;
use strategy_host::wasm::WasmStrategy;
use strategy_host::wasm_runtime::abi::{self, AbiVersion};
use strategy_host::wasm_runtime::{Error, FailureKind, Runtime, StrategyModule};

fn hostile_strategy(rt: &Runtime, name: &str) -> WasmStrategy {
    let bytes = hostile(name, &widget_manifest(1, &[]));
    let module =
        StrategyModule::load(rt, &bytes).unwrap_or_else(|e| panic!("{name} should load: {e}"));
    WasmStrategy::new(rt.clone(), Arc::new(module))
}

/// Runs a create on the hostile module, expects a failure mentioning `reason`, and checks a good
/// module still serves afterwards on the same runtime.
async fn contained(name: &str, kind: FailureKind, reason: &str) -> Duration {
    let rt = runtime();
    let s = hostile_strategy(&rt, name);
    let good = strategy(&rt, strategy_artifacts::DEPLOYMENT);
    let valid = json!({"spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}}}});
    let took = assert_contained(&rt, &s, (kind, reason), &good, valid).await;
    // The hostile module is still usable (and still fails the same way): nothing is poisoned.
    assert!(s
        .before_create(&widget_ctx(), &mut json!({}))
        .await
        .is_err());
    took
}

#[tokio::test]
async fn an_object_patch_that_does_not_apply_fails_the_call() {
    contained(
        "bad_patch",
        FailureKind::BadOutput,
        "the returned patch does not apply",
    )
    .await;
}

#[tokio::test]
async fn infinite_loop_hits_the_deadline() {
    let took = contained("infinite_loop", FailureKind::Deadline, "deadline").await;
    assert!(
        took >= Duration::from_millis(100) && took < Duration::from_secs(2),
        "{took:?}"
    );
}

#[tokio::test]
async fn memory_bomb_hits_the_memory_cap() {
    contained(
        "memory_bomb",
        FailureKind::Memory,
        "memory cap of 67108864 bytes",
    )
    .await;
}

#[tokio::test]
async fn trap_fails_the_call() {
    contained("trap", FailureKind::Trap, "trapped").await;
}

#[tokio::test]
async fn garbage_output_does_not_decode() {
    contained("garbage_output", FailureKind::BadOutput, "did not decode").await;
}

#[tokio::test]
async fn oversized_output_hits_the_output_cap() {
    contained(
        "oversized_output",
        FailureKind::OutputTooLarge,
        "exceeds the output cap",
    )
    .await;
}

fn refused(name: &str, manifest: Vec<u8>) -> Error {
    let rt = runtime();
    match StrategyModule::load(&rt, &hostile(name, &manifest)) {
        Ok(_) => panic!("{name} should be refused"),
        Err(e) => e,
    }
}

#[test]
fn missing_exports_are_refused_at_load() {
    let e = refused("missing_exports", widget_manifest(1, &[]));
    assert!(
        matches!(&e, Error::MissingExport(s) if s.starts_with("call")),
        "{e}"
    );
}

#[test]
fn a_wrong_abi_version_is_refused_at_load() {
    let e = refused("wrong_abi_version", widget_manifest(2, &[]));
    assert!(
        matches!(
            e,
            Error::AbiVersion {
                found: AbiVersion { major: 2, minor: 0 },
                expected: AbiVersion::HOST,
            }
        ),
        "{e}"
    );
    let speaks = format!("this host speaks 1.0 to {}", AbiVersion::HOST);
    assert_eq!(
        e.to_string(),
        format!("module speaks ABI version 2.0; {speaks}")
    );
}

#[test]
fn an_ungranted_host_function_is_refused_at_load() {
    let e = refused("ungranted_import", widget_manifest(1, &[]));
    assert!(
        matches!(&e, Error::UngrantedImport(f) if f == "apply"),
        "{e}"
    );
    // Asking for apply without any After hook is refused too.
    let e = refused(
        "ungranted_import",
        widget_manifest(1, &[abi::HostFunction::Apply]),
    );
    assert!(e.to_string().contains("After hooks"), "{e}");
}

/// The Widget manifest with an After hook, the `apply` grant as given, and `applies`.
fn manifest_applying(grant_apply: bool, applies: &[(&str, &str)]) -> Vec<u8> {
    use prost::Message as _;
    let mut m = abi::Manifest::decode(widget_manifest(1, &[]).as_slice()).unwrap();
    m.operations.push(abi::Operation::AfterCreate as i32);
    if grant_apply {
        m.host_functions.push(abi::HostFunction::Apply as i32);
    }
    m.applies = applies
        .iter()
        .map(|(group, kind)| abi::GroupKind {
            group: group.to_string(),
            kind: kind.to_string(),
        })
        .collect();
    m.encode_to_vec()
}

#[test]
fn resources_hooks_apply_are_checked_at_load() {
    // Declared without the apply grant: nothing could act on it.
    let e = refused(
        "trap",
        manifest_applying(false, &[("example.com", "Quota")]),
    );
    assert!(
        e.to_string()
            .contains("does not ask for the apply host function"),
        "{e}"
    );
    // An empty kind, or a version where the group belongs, cannot match any object.
    let e = refused("trap", manifest_applying(true, &[("example.com", "")]));
    assert!(e.to_string().contains("empty kind"), "{e}");
    let e = refused(
        "trap",
        manifest_applying(true, &[("example.com/v1", "Quota")]),
    );
    assert!(e.to_string().contains("with a version"), "{e}");
    // The core group is "": a Namespace is declared as ("", "Namespace").
    let rt = runtime();
    let ok = hostile(
        "trap",
        &manifest_applying(true, &[("example.com", "Quota"), ("", "Namespace")]),
    );
    let module = StrategyModule::load(&rt, &ok).expect("a well-formed declaration loads");
    let applies: Vec<String> = module
        .manifest()
        .applies()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(applies, ["Namespace", "Quota.example.com"]);
}

#[test]
fn an_unknown_import_is_refused_at_load() {
    let e = refused("unknown_import", widget_manifest(1, &[]));
    assert!(
        matches!(&e, Error::UnknownImport(i) if i == "env::open_socket"),
        "{e}"
    );
}

#[test]
fn garbage_bytes_and_oversized_modules_are_refused() {
    let rt = runtime();
    assert!(matches!(
        StrategyModule::load(&rt, b"not wasm"),
        Err(Error::Compile(_))
    ));
    let small = runtime_with(|c| {
        c.module_size_limit = 1000;
        c.max_instances = 4;
    });
    let bytes = std::fs::read(strategy_artifacts::DEPLOYMENT).unwrap();
    assert!(matches!(
        StrategyModule::load(&small, &bytes),
        Err(Error::TooLarge { .. })
    ));
}

/// A looping guest runs on a blocking thread: on a single-worker runtime, other requests are
/// served while it spins.
#[tokio::test(flavor = "current_thread")]
async fn a_looping_guest_does_not_stall_the_async_runtime() {
    let rt = runtime();
    let looping = hostile_strategy(&rt, "infinite_loop");
    let good = strategy(&rt, strategy_artifacts::DEPLOYMENT);
    let spinning =
        tokio::spawn(async move { looping.before_create(&widget_ctx(), &mut json!({})).await });
    tokio::time::sleep(Duration::from_millis(5)).await;
    let started = Instant::now();
    for _ in 0..5 {
        let mut obj = json!({"spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}}}});
        good.before_create(&deployments_ctx(), &mut obj)
            .await
            .unwrap();
    }
    assert!(
        started.elapsed() < Duration::from_millis(90),
        "served while the loop spins: {:?}",
        started.elapsed()
    );
    assert!(!spinning.is_finished());
    assert!(spinning
        .await
        .unwrap()
        .unwrap_err()
        .reason
        .contains("deadline"));
}
