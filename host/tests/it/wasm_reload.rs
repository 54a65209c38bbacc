//! Hot reload: the module table's atomic swap, and the watched directory feeding it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::wasm_common::*;
use serde_json::json;
use strategy_host::strategy::Strategy;
use strategy_host::wasm::sources::DirectoryWatcher;
use strategy_host::wasm::{ModuleState, ModuleTable};

fn deployment() -> serde_json::Value {
    json!({"spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}}}})
}

/// Whether the Deployment strategy in force applies the module's defaults.
async fn defaults_applied(s: &dyn Strategy) -> bool {
    let mut obj = deployment();
    s.before_create(&deployments_ctx(), &mut obj).await.unwrap();
    obj["spec"]["replicas"] == 1
}

async fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The module's bytes with a custom section appended: a new version (new digest), same code.
fn new_version(bytes: &[u8]) -> Vec<u8> {
    let mut v = bytes.to_vec();
    v.extend_from_slice(&[0, 3, 2, b'v', b'2']);
    v
}

#[tokio::test(flavor = "multi_thread")]
async fn the_watched_directory_swaps_refuses_and_unloads() {
    let dir = tempfile::tempdir().unwrap();
    let table = Arc::new(ModuleTable::new(runtime()));
    let strategy = table.strategy("apps.example.com", "Deployment");
    assert!(
        !defaults_applied(&*strategy).await,
        "the default strategy before any module"
    );
    let _watcher = DirectoryWatcher::start(table.clone(), dir.path()).unwrap();

    let file = dir.path().join("deployments.wasm");
    let v1 = std::fs::read(strategy_artifacts::DEPLOYMENT).unwrap();
    let written = Instant::now();
    std::fs::write(&file, &v1).unwrap();
    let status = |t: &ModuleTable| t.status("dir:deployments.wasm");
    wait_for("v1 active", || {
        status(&table).is_some_and(|s| s.state == ModuleState::Active)
    })
    .await;
    eprintln!("v1 serving {:?} after the write", written.elapsed());
    assert!(defaults_applied(&*strategy).await);
    let v1_digest = status(&table).unwrap().digest;

    // A bad version is refused; v1 keeps serving.
    std::fs::write(&file, b"\0asm garbage").unwrap();
    wait_for("rejection", || {
        status(&table).is_some_and(|s| s.state == ModuleState::Rejected)
    })
    .await;
    let s = status(&table).unwrap();
    assert_eq!(s.digest_in_force.as_deref(), Some(v1_digest.as_str()));
    assert!(s.reason.unwrap().contains("compile"));
    assert!(
        defaults_applied(&*strategy).await,
        "the old version keeps serving"
    );

    // A good new version swaps in.
    std::fs::write(&file, new_version(&v1)).unwrap();
    wait_for("v2 active", || {
        status(&table).is_some_and(|s| s.state == ModuleState::Active && s.digest != v1_digest)
    })
    .await;
    assert!(defaults_applied(&*strategy).await);

    // Deleting the file unloads it: back to the default strategy.
    std::fs::remove_file(&file).unwrap();
    wait_for("unload", || {
        status(&table).is_some_and(|s| s.state == ModuleState::Unloaded)
    })
    .await;
    assert!(!defaults_applied(&*strategy).await);
    assert!(table.active("apps.example.com", "Deployment").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_module_file_left_alone_is_read_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("deployments.wasm");
    std::fs::copy(strategy_artifacts::DEPLOYMENT, &file).unwrap();
    let table = Arc::new(ModuleTable::new(runtime()));
    let watcher = DirectoryWatcher::start(table.clone(), dir.path()).unwrap();
    assert!(table.active("apps.example.com", "Deployment").is_some());
    // Reading a file is an inotify event too (open, access, close): the watcher used to read
    // the module again on each, every 30 ms for as long as the server ran.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(watcher.reads(), 1, "reads of an unchanged module file");

    // A write is still seen.
    let v1 = std::fs::read(&file).unwrap();
    std::fs::write(&file, new_version(&v1)).unwrap();
    wait_for("the write read", || watcher.reads() >= 2).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        watcher.reads() <= 3,
        "{} reads after one write",
        watcher.reads()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_running_call_finishes_on_the_version_it_started_with() {
    let table = ModuleTable::new(runtime());
    let widgets = table.strategy("example.com", "Widget");
    table
        .load(
            "api:widget",
            &hostile("infinite_loop", &widget_manifest(1, &[])),
        )
        .unwrap();
    let running = {
        let widgets = widgets.clone();
        tokio::spawn(async move { widgets.before_create(&widget_ctx(), &mut json!({})).await })
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    table
        .load("api:widget", &hostile("trap", &widget_manifest(1, &[])))
        .unwrap();
    let err = widgets
        .before_create(&widget_ctx(), &mut json!({}))
        .await
        .unwrap_err();
    assert!(
        err.reason.contains("trapped"),
        "new calls use the new version: {err}"
    );
    let err = running.await.unwrap().unwrap_err();
    assert!(
        err.reason.contains("deadline"),
        "the running call finished on the old version: {err}"
    );
}

#[tokio::test]
async fn two_sources_cannot_serve_one_resource() {
    let table = ModuleTable::new(runtime());
    let bytes = std::fs::read(strategy_artifacts::DEPLOYMENT).unwrap();
    table.load("dir:a.wasm", &bytes).unwrap();
    let err = table.load("dir:b.wasm", &new_version(&bytes)).unwrap_err();
    assert!(err.to_string().contains("already served"), "{err}");
    assert_eq!(
        table.status("dir:b.wasm").unwrap().state,
        ModuleState::Rejected
    );
    assert!(table.unload("dir:a.wasm"));
    table.load("dir:b.wasm", &new_version(&bytes)).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_built_in_module_yields_its_kinds_to_another_source_and_takes_them_back() {
    let table = Arc::new(ModuleTable::new(runtime()));
    let builtin = std::fs::read(strategy_artifacts::BUILTIN).unwrap();
    let serving = |t: &ModuleTable| t.active("", "ConfigMap").map(|m| m.digest().to_string());
    let original = table.load("builtin:kinds", &builtin).unwrap();
    assert_eq!(serving(&table).as_deref(), Some(original.digest()));

    // An operator's module for the same kinds takes over (no "already served" refusal) ...
    let replacement = table
        .load("dir:kinds.wasm", &new_version(&builtin))
        .unwrap();
    assert_eq!(serving(&table).as_deref(), Some(replacement.digest()));
    // ... and a second operator module for them is refused as before.
    let refused = table.load("dir:other.wasm", &new_version(&new_version(&builtin)));
    assert!(refused
        .unwrap_err()
        .to_string()
        .contains("already served by the module from dir:kinds.wasm"));

    // Removing it hands the kinds back to the built-in module, not to the default strategy.
    assert!(table.unload("dir:kinds.wasm"));
    assert_eq!(serving(&table).as_deref(), Some(original.digest()));
    assert_eq!(
        table
            .active("coordination.k8s.io", "Lease")
            .map(|m| m.digest().to_string())
            .as_deref(),
        Some(original.digest())
    );
}
