//! Go strategies (`strategies/go/`, built with the standard Go toolchain for `wasip1`) run in
//! the same sandbox as Rust ones: the WASI shim grants nothing, a reactor's instance is
//! initialised once and kept across calls (recycled by its policy), and hostile Go modules are
//! contained by the same deadline, memory cap and log cap.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::wasm_common::*;
use serde_json::{json, Value};
use strategy_host::strategy::{FieldErrorKind, Strategy};
use strategy_host::wasm::WasmStrategy;
use strategy_host::wasm_runtime::{FailureKind, Runtime};

fn hostile_go(name: &str) -> &'static str {
    strategy_artifacts::HOSTILE_GO
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, path)| *path)
        .unwrap_or_else(|| panic!("no hostile Go fixture {name}"))
}

fn deployment() -> Value {
    json!({
        "apiVersion": "apps.example.com/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}}
        },
        "status": {"readyReplicas": 3}
    })
}

#[tokio::test]
async fn the_go_deployment_strategy_defaults_and_validates() {
    let rt = runtime();
    let module = load(&rt, strategy_artifacts::GO_DEPLOYMENT);
    assert!(module.is_reactor(), "a Go module exports _initialize");
    assert_eq!(module.name(), "deployments-go");
    let s = WasmStrategy::new(rt.clone(), module);

    let mut obj = deployment();
    let adm = s.before_create(&deployments_ctx(), &mut obj).await.unwrap();
    assert!(adm.field_errors.is_empty(), "{adm:?}");
    assert_eq!(obj["spec"]["replicas"], 1);
    assert_eq!(obj["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
    assert!(obj.get("status").is_none(), "{obj}");

    let mut bad = deployment();
    bad["spec"]["replicas"] = json!(-1);
    bad["spec"]["selector"]["matchLabels"]["app"] = json!("api");
    let adm = s.before_create(&deployments_ctx(), &mut bad).await.unwrap();
    let errors: Vec<(FieldErrorKind, &str, &str)> = adm
        .field_errors
        .iter()
        .map(|e| (e.kind, e.field.as_str(), e.detail.as_str()))
        .collect();
    assert_eq!(
        errors,
        [
            (
                FieldErrorKind::Invalid,
                "spec.replicas",
                "-1: must be greater than or equal to 0"
            ),
            (
                FieldErrorKind::Invalid,
                "spec.template.metadata.labels",
                "map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`"
            ),
        ]
    );

    let old = obj.clone();
    let mut new = obj.clone();
    new["spec"]["selector"]["matchLabels"]["tier"] = json!("fe");
    new["spec"]["template"]["metadata"]["labels"]["tier"] = json!("fe");
    let adm = s
        .before_update(&deployments_ctx(), &mut new, &old)
        .await
        .unwrap();
    assert_eq!(adm.field_errors.len(), 1, "{adm:?}");
    assert_eq!(
        adm.field_errors[0].to_string(),
        r#"spec.selector: Invalid value: {"matchLabels":{"app":"web","tier":"fe"}}: field is immutable"#
    );
}

#[tokio::test]
async fn a_go_instance_is_initialised_once_and_kept_across_calls() {
    let rt = runtime();
    let s = strategy(&rt, strategy_artifacts::GO_DEPLOYMENT);
    for _ in 0..50 {
        let adm = s
            .before_create(&deployments_ctx(), &mut deployment())
            .await
            .unwrap();
        assert!(adm.field_errors.is_empty());
    }
    let counters = rt.metrics().module("deployments-go");
    // The instance that read the manifest at load served every call.
    assert_eq!(counters.instances_started(), 1, "instances started");
    assert_eq!(counters.calls(), 50);
}

#[tokio::test]
async fn kept_instances_are_recycled_after_their_sessions_and_after_a_failure() {
    let rt = runtime_with(|c| c.instance_reuse.max_sessions = 10);
    let s = strategy(&rt, strategy_artifacts::GO_DEPLOYMENT);
    for _ in 0..25 {
        s.before_create(&deployments_ctx(), &mut deployment())
            .await
            .unwrap();
    }
    let counters = rt.metrics().module("deployments-go");
    // Loading and 25 calls, 10 sessions per instance: three instances, two of them recycled.
    assert_eq!(counters.instances_started(), 3);
    assert_eq!(counters.instances_recycled(), 2);

    // A call that fails (here: past the memory cap) never leaves its instance for the next.
    let hostile = strategy(&rt, hostile_go("alloc"));
    for _ in 0..2 {
        hostile
            .before_create(&widget_ctx(), &mut json!({"spec": {}}))
            .await
            .unwrap_err();
    }
    let counters = rt.metrics().module("hostile-go-alloc");
    assert_eq!(
        counters.instances_started(),
        2,
        "a fresh instance per failed call"
    );
    assert_eq!(counters.instances_recycled(), 2);
}

/// Runs the create phase of the hostile Go fixture `name` and expects it to fail as `kind`,
/// mentioning `reason`, within two seconds; then a good Go module still serves on the runtime.
async fn contained(name: &str, kind: FailureKind, reason: &str) -> Duration {
    let rt = runtime();
    let s = strategy(&rt, hostile_go(name));
    let good = strategy(&rt, strategy_artifacts::GO_DEPLOYMENT);
    let took = assert_contained(&rt, &s, (kind, reason), &good, deployment()).await;
    assert!(took < Duration::from_secs(2), "{name}: took {took:?}");
    took
}

#[tokio::test]
async fn a_spinning_goroutine_hits_the_deadline() {
    let took = contained("spin", FailureKind::Deadline, "deadline").await;
    assert!(took >= Duration::from_millis(100), "{took:?}");
}

#[tokio::test]
async fn unbounded_allocation_hits_the_memory_cap() {
    contained("alloc", FailureKind::Memory, "memory cap of 67108864 bytes").await;
}

#[tokio::test]
async fn a_panic_fails_the_call_with_its_message() {
    contained("panic", FailureKind::Guest, "panic").await;
}

#[tokio::test]
async fn os_exit_ends_the_call_as_a_trap() {
    contained(
        "exit",
        FailureKind::Trap,
        "the module exited (proc_exit with status 3)",
    )
    .await;
}

#[tokio::test]
async fn writing_stdout_forever_hits_the_deadline() {
    contained("stdout", FailureKind::Deadline, "deadline").await;
}

/// What the WASI probe module reports from one create, which must not wait out its hour's sleep.
async fn wasi_probe(rt: &Runtime) -> strategy_host::strategy::Admission {
    let s = strategy(rt, hostile_go("wasi"));
    let started = Instant::now();
    let adm = s
        .before_create(&widget_ctx(), &mut json!({"spec": {}}))
        .await
        .expect("the probe answers");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "a sleep of an hour must not hold the call"
    );
    adm
}

#[tokio::test]
async fn wasi_grants_nothing_and_a_sleep_costs_no_time() {
    let adm = wasi_probe(&runtime()).await;
    let warnings = adm.warnings.join("\n");
    for leaked in ["root:", "/root", "HOME="] {
        assert!(!warnings.contains(leaked), "{leaked} leaked:\n{warnings}");
    }
    // What the probe saw: no file system (ENOTCAPABLE: no preopened directory), no environment
    // or arguments, no connection, and an hour's sleep over at once on the virtual clock.
    for expected in [
        "os.ReadFile(/etc/passwd): 0 bytes, error: open /etc/passwd: Capabilities insufficient",
        "os.WriteFile(/tmp/hostile-go-wasi): error: open /tmp/hostile-go-wasi: Capabilities insufficient",
        "os.Getenv(HOME): \"\"",
        "os.Environ(): []",
        "os.Args: []",
        "time.Now(): year 1970",
        "time.Sleep(1h): slept, and returned; the clock moved 1h0m0s",
    ] {
        assert!(adm.warnings.iter().any(|w| w == expected), "{expected}:\n{warnings}");
    }
    assert!(warnings.contains("connected: false"), "{warnings}");
}

#[tokio::test]
async fn granted_time_is_the_hosts_and_a_sleep_still_costs_no_time() {
    let rt = runtime_with(|c| c.real_clock = true);
    let adm = wasi_probe(&rt).await;
    // This year, by the mean Gregorian year (either neighbour too, around New Year).
    let year = 1970
        + std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            / 31_556_952;
    let now = adm.warnings.iter().find(|w| w.starts_with("time.Now()"));
    assert!(
        (year - 1..=year + 1).any(|y| now == Some(&format!("time.Now(): year {y}"))),
        "{now:?} in {year}"
    );
    let slept = "time.Sleep(1h): slept, and returned; the clock moved 1h0m0s";
    assert!(
        adm.warnings.iter().any(|w| w == slept),
        "{:?}",
        adm.warnings
    );
}

#[test]
fn go_modules_are_shared_by_concurrent_calls() {
    // Calls from many threads at once each get an instance of their own (taken from the pool
    // or started), never one another's.
    let rt = runtime();
    let module = load(&rt, strategy_artifacts::GO_DEPLOYMENT);
    let s = Arc::new(WasmStrategy::new(rt.clone(), module));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let tasks: Vec<_> = (0..64)
            .map(|i| {
                let s = s.clone();
                tokio::spawn(async move {
                    let mut obj = deployment();
                    obj["spec"]["replicas"] = json!(i);
                    s.before_create(&deployments_ctx(), &mut obj).await.unwrap();
                    assert_eq!(obj["spec"]["replicas"], i);
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
}
