//! End-to-end rollout of strategy modules with the real binary: a candidate version staged in
//! shadow beside the version in force changes no response and stores nothing differently while
//! its status counts exactly what it would have rejected, and its replay over the stored objects
//! counts the objects it rejects; promotion swaps it in; a failing canary is rolled back by the
//! host with no request failing beyond its share; two replicas on one etcd report consistent
//! counts; a directory module stages through its `.rollout.json` sidecar.
//!
//! The candidate is `strategies/configmap-strict`, a second version of the ConfigMap example
//! that rejects `legacy-` keys, defaults the label `example.com/policy: strict` on create, and
//! traps on a `panic` key.

use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};
use strategy_host::storage::etcd3::testing::EtcdServer;
use strategy_host_e2e::{call, call_with, get, HostProcess};

const CONFIGMAPS: &str = "/apis/example.com/v1/namespaces/default/configmaps";
const MODULES: &str = "/apis/strategyhost.io/v1alpha1/strategymodules";
const POLICY_LABEL: &str = "example.com/policy";

fn eventually(what: &str, check: impl FnMut() -> bool) {
    strategy_host_e2e::eventually(what, Duration::from_secs(30), check);
}

fn bytes(path: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(std::fs::read(path).unwrap())
}

fn module_object(wasm: &str, rollout: Option<Value>) -> Value {
    let mut obj = json!({
        "apiVersion": "strategyhost.io/v1alpha1", "kind": "StrategyModule",
        "metadata": {"name": "configmaps"},
        "spec": {"resource": {"group": "example.com", "kind": "ConfigMap"}, "module": bytes(wasm)}
    });
    if let Some(r) = rollout {
        obj["spec"]["rollout"] = r;
    }
    obj
}

fn config_map(name: &str, legacy: bool, panic: bool) -> Value {
    let mut data = json!({"color": "blue"});
    if legacy {
        data["legacy-color"] = json!("red");
    }
    if panic {
        data["panic"] = json!("yes");
    }
    json!({"apiVersion": "example.com/v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "default"}, "data": data})
}

fn send(host: &HostProcess, method: &str, path: &str, body: &Value) -> (u16, Value) {
    let r = call(method, &host.url(path), Some(body)).unwrap();
    (r.code, r.json())
}

/// Creates the in-force version (the ConfigMap example) and waits until it serves.
fn start_with_in_force(host: &HostProcess) {
    let (code, body) = send(
        host,
        "POST",
        MODULES,
        &module_object(strategy_artifacts::CONFIGMAP, None),
    );
    assert_eq!(code, 201, "{body}");
    eventually("the in-force version to serve configmaps", || {
        get(&host.url(CONFIGMAPS)).is_ok_and(|(c, _)| c == 200)
    });
}

/// Changes the module object's spec the way `kubectl patch --type merge` does (the server
/// writes the object's status meanwhile, so a read-modify-write would conflict).
fn stage(host: &HostProcess, wasm: &str, rollout: Value) {
    let patch = json!({"spec": {"module": bytes(wasm), "rollout": rollout}});
    let r = call_with(
        "PATCH",
        &host.url(&format!("{MODULES}/configmaps")),
        Some(patch.to_string().as_bytes()),
        &[("Content-Type", "application/merge-patch+json")],
    )
    .unwrap();
    assert_eq!(r.code, 200, "{}", r.body);
}

/// `status.rollout` of the `configmaps` module once `check` holds (30 s at most).
fn wait_rollout(host: &HostProcess, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let timeout = Duration::from_secs(30);
    strategy_host_e2e::wait_rollout(host, "configmaps", timeout, what, check)
}

fn has_policy_label(obj: &Value) -> bool {
    obj["metadata"]["labels"][POLICY_LABEL].is_string()
}

#[test]
fn a_shadowed_candidate_changes_nothing_counts_its_rejections_and_is_promoted() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().display().to_string();
    let host = HostProcess::start(&["--data-dir", &data]).unwrap();
    start_with_in_force(&host);
    // Stored before staging: 3 of 7 have a key the candidate refuses.
    for i in 0..7 {
        let (code, body) = send(
            &host,
            "POST",
            CONFIGMAPS,
            &config_map(&format!("old-{i}"), i % 2 == 0 && i < 6, false),
        );
        assert_eq!(code, 201, "{body}");
    }
    // The replay reads through the cache: let it see all seven first.
    eventually("the cache to hold the stored objects", || {
        get(&host.url(&format!("{CONFIGMAPS}?resourceVersion=0"))).is_ok_and(|(_, body)| {
            serde_json::from_str::<Value>(&body).unwrap()["items"]
                .as_array()
                .is_some_and(|i| i.len() == 7)
        })
    });
    stage(
        &host,
        strategy_artifacts::CONFIGMAP_STRICT,
        json!({"mode": "Shadow"}),
    );
    let replayed = wait_rollout(&host, "the replay", |r| r["replay"]["state"] == "Done");
    assert_eq!(replayed["state"], "Shadowing", "{replayed:#}");
    assert_eq!(replayed["replay"]["objects"], 7, "{replayed:#}");
    // Each stored object is replayed as a create and as an update onto itself.
    assert_eq!(replayed["replay"]["byVerb"]["create"]["rejects"], 3);
    assert_eq!(replayed["replay"]["byVerb"]["update"]["rejects"], 3);
    // The 4 it admits as creates get its default label: a change.
    assert_eq!(replayed["replay"]["byVerb"]["create"]["changes"], 4);
    assert_eq!(replayed["replay"]["byVerb"]["update"]["changes"], 0);

    // A create and update load from four clients; every fourth object has a legacy key.
    let url = host.url(CONFIGMAPS);
    let clients: Vec<_> = (0..4)
        .map(|c| {
            let url = url.clone();
            std::thread::spawn(move || {
                let mut legacy = 0;
                for i in 0..15 {
                    let is_legacy = i % 4 == 0;
                    legacy += u64::from(is_legacy);
                    let name = format!("live-{c}-{i}");
                    let obj = config_map(&name, is_legacy, false);
                    let r = call("POST", &url, Some(&obj)).unwrap();
                    assert_eq!(r.code, 201, "create {name}: {}", r.body);
                    assert!(!has_policy_label(&r.json()), "{}", r.body);
                    let mut changed = r.json();
                    changed["data"]["size"] = json!("large");
                    let r = call("PUT", &format!("{url}/{name}"), Some(&changed)).unwrap();
                    assert_eq!(r.code, 200, "update {name}: {}", r.body);
                    legacy += u64::from(is_legacy);
                }
                legacy
            })
        })
        .collect();
    let legacy_requests: u64 = clients.into_iter().map(|c| c.join().unwrap()).sum();
    assert_eq!(legacy_requests, 32);
    let counted = wait_rollout(&host, "every request evaluated", |r| {
        r["requests"]["evaluated"] == 120
    });
    assert_eq!(counted["requests"]["skipped"], 0, "{counted:#}");
    assert_eq!(
        counted["requests"]["differences"]["rejects"], legacy_requests,
        "{counted:#}"
    );
    assert_eq!(counted["requests"]["byVerb"]["create"]["rejects"], 16);
    assert_eq!(counted["requests"]["byVerb"]["update"]["rejects"], 16);
    assert_eq!(counted["requests"]["differences"]["fails"], 0);
    let replica = counted["replicas"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap();
    assert!(replica["latency"]["candidate"]["p99Microseconds"].is_u64());
    assert!(replica["latency"]["inForce"]["p99Microseconds"].is_u64());
    let samples = counted["samples"].as_array().unwrap();
    assert!(!samples.is_empty() && samples.len() <= 20, "{counted:#}");
    assert!(samples.iter().any(|s| s["difference"] == "rejects"
        && s["detail"]["causes"][0]
            .as_str()
            .is_some_and(|c| c.contains("legacy-"))));
    // Nothing stored differs from what the version in force makes.
    let (_, list) = get(&url).unwrap();
    let list: Value = serde_json::from_str(&list).unwrap();
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 67);
    assert!(items.iter().all(|o| !has_policy_label(o)));
    // The same report on /debug/strategies and in /metrics.
    let (_, debug) = get(&host.url("/debug/strategies")).unwrap();
    let debug: Value = serde_json::from_str(&debug).unwrap();
    let source = debug["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["source"] == "api:configmaps")
        .unwrap()
        .clone();
    assert_eq!(source["rollout"]["requests"]["differences"]["rejects"], 32);
    let (_, metrics) = get(&host.url("/metrics")).unwrap();
    assert!(
        metrics.lines().any(|l| l
            .starts_with("strategy_rollout_differences_total{source=\"api:configmaps\"")
            && l.contains("origin=\"request\",difference=\"rejects\"}")
            && l.ends_with(" 32")),
        "{metrics}"
    );

    // Promotion: the candidate serves every request at once.
    stage(
        &host,
        strategy_artifacts::CONFIGMAP_STRICT,
        json!({"mode": "Active"}),
    );
    eventually("the promoted version to refuse legacy keys", || {
        let (code, _) = send(&host, "POST", CONFIGMAPS, &config_map("after", true, false));
        code == 422
    });
    let (code, created) = send(
        &host,
        "POST",
        CONFIGMAPS,
        &config_map("fresh", false, false),
    );
    assert_eq!(code, 201);
    assert_eq!(created["metadata"]["labels"][POLICY_LABEL], "strict");
    wait_rollout(&host, "the rollout gone from status", Value::is_null);
}

#[test]
fn a_failing_canary_is_rolled_back_with_failures_only_in_its_share() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().display().to_string();
    let host = HostProcess::start(&["--data-dir", &data]).unwrap();
    start_with_in_force(&host);
    stage(
        &host,
        strategy_artifacts::CONFIGMAP_STRICT,
        json!({"mode": "Canary", "weight": 20, "rollback": {"minRequests": 10, "maxFailureRatio": 0.2}}),
    );
    wait_rollout(&host, "the canary", |r| r["state"] == "Canary");
    // A healthy stretch: the canary serves an evenly spread fifth of the requests.
    let mut by_canary = 0;
    for i in 0..50 {
        let (code, obj) = send(
            &host,
            "POST",
            CONFIGMAPS,
            &config_map(&format!("ok-{i}"), false, false),
        );
        assert_eq!(code, 201, "{obj}");
        by_canary += usize::from(has_policy_label(&obj));
    }
    assert_eq!(by_canary, 10);
    // Then objects the canary traps on: its share fails until it has failed too often.
    let mut failed = Vec::new();
    for i in 0..100 {
        let (code, body) = send(
            &host,
            "POST",
            CONFIGMAPS,
            &config_map(&format!("boom-{i}"), false, true),
        );
        match code {
            201 => {}
            500 => failed.push(i),
            _ => panic!("create boom-{i}: {code} {body}"),
        }
    }
    // Judged over its last 10+ calls (10 healthy, then failures): more than 20% failed at its
    // third failure; it failed on nothing else, and only on its share (every fifth request).
    assert_eq!(failed.len(), 3, "failed requests: {failed:?}");
    assert!(failed.iter().all(|i| (i + 1) % 5 == 0), "{failed:?}");
    let rolled_back = wait_rollout(&host, "the rollback in status", |r| {
        r["state"] == "RolledBack"
    });
    assert!(
        rolled_back["reason"]
            .as_str()
            .is_some_and(|r| r.contains("failed")),
        "{rolled_back:#}"
    );
    assert_eq!(rolled_back["canary"]["failed"], 3);
    let (_, metrics) = get(&host.url("/metrics")).unwrap();
    assert!(
        metrics.contains("strategy_rollout_rollbacks_total{source=\"api:configmaps\"} 1"),
        "{metrics}"
    );
    let mut host = host;
    assert!(host
        .log_text()
        .contains("canary strategy module rolled back"));
}

#[test]
fn two_replicas_on_one_etcd_report_consistent_counts() {
    let etcd = EtcdServer::start().unwrap();
    let start = || {
        HostProcess::start(&[
            "--etcd-servers",
            &etcd.endpoint(),
            "--etcd-prefix",
            "/rollout",
        ])
        .unwrap()
    };
    let (a, b) = (start(), start());
    start_with_in_force(&a);
    eventually("configmaps served on b", || {
        get(&b.url(CONFIGMAPS)).is_ok_and(|(c, _)| c == 200)
    });
    stage(
        &a,
        strategy_artifacts::CONFIGMAP_STRICT,
        json!({"mode": "Shadow"}),
    );
    for host in [&a, &b] {
        wait_rollout(host, "the shadow on both replicas", |r| {
            r["replicas"].as_object().is_some_and(|m| m.len() == 2)
        });
    }
    for (host, n, prefix) in [(&a, 10, "a"), (&b, 7, "b")] {
        for i in 0..n {
            let (code, body) = send(
                host,
                "POST",
                CONFIGMAPS,
                &config_map(&format!("{prefix}-{i}"), true, false),
            );
            assert_eq!(code, 201, "{body}");
        }
    }
    let total = wait_rollout(&a, "both replicas' counts", |r| {
        r["requests"]["differences"]["rejects"] == 17
    });
    let mut per_replica: Vec<u64> = total["replicas"]
        .as_object()
        .unwrap()
        .values()
        .map(|r| r["requests"]["differences"]["rejects"].as_u64().unwrap())
        .collect();
    per_replica.sort_unstable();
    assert_eq!(per_replica, [7, 10], "{total:#}");
    assert_eq!(total["requests"]["evaluated"], 17);
    // b reads the same totals.
    wait_rollout(&b, "the same totals on b", |r| {
        r["requests"]["differences"]["rejects"] == 17
    });
}

#[test]
fn a_directory_module_is_staged_by_its_rollout_sidecar() {
    let dir = tempfile::tempdir().unwrap();
    let strategies = dir.path().join("strategies");
    std::fs::create_dir(&strategies).unwrap();
    let install = |file: &str, bytes: &[u8]| {
        let tmp = strategies.join(format!(".{file}.tmp"));
        std::fs::write(&tmp, bytes).unwrap();
        std::fs::rename(&tmp, strategies.join(file)).unwrap();
    };
    install(
        "configmaps.wasm",
        &std::fs::read(strategy_artifacts::CONFIGMAP).unwrap(),
    );
    let data = dir.path().join("data").display().to_string();
    let host = HostProcess::start(&[
        "--data-dir",
        &data,
        "--strategy-dir",
        &strategies.display().to_string(),
    ])
    .unwrap();
    install("configmaps.rollout.json", br#"{"mode": "Shadow"}"#);
    install(
        "configmaps.wasm",
        &std::fs::read(strategy_artifacts::CONFIGMAP_STRICT).unwrap(),
    );
    let debug_rollout = || -> Value {
        let (_, debug) = get(&host.url("/debug/strategies")).unwrap();
        let debug: Value = serde_json::from_str(&debug).unwrap();
        debug["sources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["source"] == "dir:configmaps.wasm")
            .map(|s| s["rollout"].clone())
            .unwrap_or(Value::Null)
    };
    eventually("the staged candidate", || {
        debug_rollout()["state"] == "Shadowing"
    });
    let (code, body) = send(&host, "POST", CONFIGMAPS, &config_map("x", true, false));
    assert_eq!(code, 201, "the version in force still serves: {body}");
    eventually("the shadow's rejection counted", || {
        debug_rollout()["requests"]["differences"]["rejects"] == 1
    });
    install("configmaps.rollout.json", br#"{"mode": "Active"}"#);
    eventually("the promotion", || {
        send(&host, "POST", CONFIGMAPS, &config_map("y", true, false)).0 == 422
    });
    assert!(debug_rollout().is_null());
}
