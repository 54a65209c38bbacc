//! End-to-end with strategies written in Go (`strategies/go/`, built by the standard Go
//! toolchain into WASI reactors): the real binary serves the Deployment port and the Tenant
//! strategy from its strategy directory, driven with kubectl (defaults, 422 with Kubernetes'
//! wording, the immutable selector, the Tenant's After hook applying a Namespace), the Go
//! owner-label admission policy guards every namespaced resource as the Rust one does, and a
//! Go module rolled out through a `StrategyModule` object takes over from the Rust one.

use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};
use strategy_host_e2e::{
    call, digest_in_force, eventually, get, kubectl, kubectl_with, latest_kubectl_path,
    shared_module_cache, HostProcess,
};

const WAIT: Duration = Duration::from_secs(60);

/// A host on the embedded store whose strategy directory holds `modules` (file name, path).
fn host_with(modules: &[(&str, &str)]) -> (HostProcess, tempfile::TempDir) {
    strategy_host_e2e::warm_go_modules();
    let dir = tempfile::tempdir().unwrap();
    let strategies = dir.path().join("strategies");
    std::fs::create_dir(&strategies).unwrap();
    for (file, path) in modules {
        std::fs::copy(path, strategies.join(file)).unwrap();
    }
    let data = dir.path().join("data").display().to_string();
    let host = HostProcess::start(&[
        "--data-dir",
        &data,
        "--strategy-dir",
        &strategies.display().to_string(),
        // A Go module takes seconds to compile: share the compiled code across tests.
        "--module-cache-dir",
        &shared_module_cache().display().to_string(),
        // A Go module is ~6 MB, ~8 MB as base64 in a StrategyModule object.
        "--max-request-body-bytes",
        "16777216",
    ])
    .unwrap();
    (host, dir)
}

fn kubectl_ok(host: &HostProcess, dir: &Path, args: &[&str], stdin: Option<&str>) -> String {
    let (ok, out, err) = kubectl(&host.base_url, dir, args, stdin).unwrap();
    assert!(ok, "kubectl {args:?} failed:\n{out}\n{err}");
    out
}

const WEB: &str = r#"
apiVersion: apps.example.com/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "nginx:1.27"}]}
"#;

#[test]
fn go_strategies_serve_their_resources_through_kubectl() {
    let (mut host, dir) = host_with(&[
        ("deployments-go.wasm", strategy_artifacts::GO_DEPLOYMENT),
        ("tenants-go.wasm", strategy_artifacts::GO_TENANT),
    ]);
    let dir = dir.path();
    for path in [
        "/apis/apps.example.com/v1/namespaces/default/deployments",
        "/apis/example.com/v1/tenants",
    ] {
        eventually(path, WAIT, || get(&host.url(path)).unwrap().0 == 200);
    }

    // Defaults from the Go module.
    kubectl_ok(&host, dir, &["apply", "-f", "-"], Some(WEB));
    let web: Value = serde_json::from_str(&kubectl_ok(
        &host,
        dir,
        &["get", "deployments.apps.example.com", "web", "-o", "json"],
        None,
    ))
    .unwrap();
    assert_eq!(web["spec"]["replicas"], 1, "{web}");
    assert_eq!(web["spec"]["strategy"]["type"], "RollingUpdate");
    assert_eq!(web["spec"]["revisionHistoryLimit"], 10);

    // Field errors, as kubectl prints a 422.
    let bad = WEB.replace("name: web,", "name: bad,").replace(
        "selector: {matchLabels: {app: web}}",
        "replicas: -3\n  selector: {matchLabels: {app: api}}",
    );
    let (ok, _, err) = kubectl(&host.base_url, dir, &["apply", "-f", "-"], Some(&bad)).unwrap();
    assert!(!ok);
    assert!(
        err.contains(r#"Deployment "bad" is invalid"#)
            && err.contains("spec.replicas: Invalid value: -3: must be greater than or equal to 0")
            && err.contains(r#"spec.template.metadata.labels: Invalid value: map[string]string{"app":"web"}: `selector` does not match template `labels`"#),
        "{err}"
    );

    // The selector is immutable.
    let moved = WEB.replace("{app: web}", "{app: api}");
    let (ok, _, err) = kubectl(&host.base_url, dir, &["apply", "-f", "-"], Some(&moved)).unwrap();
    assert!(!ok);
    assert!(err.contains("spec.selector: Invalid value"), "{err}");
    assert!(err.contains("field is immutable"), "{err}");

    // The Tenant's After hook applies the tenant's Namespace through the host.
    kubectl_ok(
        &host,
        dir,
        &["create", "-f", "-"],
        Some("apiVersion: example.com/v1\nkind: Tenant\nmetadata: {name: acme}\n"),
    );
    eventually("the hook's Namespace", WAIT, || {
        get(&host.url("/api/v1/namespaces/acme")).unwrap().0 == 200
    });
    let ns: Value = serde_json::from_str(&kubectl_ok(
        &host,
        dir,
        &["get", "namespace", "acme", "-o", "json"],
        None,
    ))
    .unwrap();
    assert_eq!(
        ns["metadata"]["labels"]["example.com/tenant"], "acme",
        "{ns}"
    );
    let (ok, _, err) = kubectl(
        &host.base_url,
        dir,
        &["create", "-f", "-"],
        Some("apiVersion: example.com/v1\nkind: Tenant\nmetadata: {name: Not_A_Label}\n"),
    )
    .unwrap();
    assert!(!ok);
    assert!(err.contains("metadata.name: Invalid value"), "{err}");
    kubectl_ok(&host, dir, &["delete", "tenant.example.com", "acme"], None);
    eventually("the AfterDelete log line", WAIT, || {
        host.log_text().contains("acme") && host.log_text().contains("tenants-go")
    });
}

/// The Go port of the owner-label policy, dropped into a strategy directory, refuses what the
/// Rust policy refuses with the same cause (kubectl 1.35 prints the server's message), across
/// resources, and admits an owned object or one in kube-system.
#[test]
fn the_go_owner_label_policy_refuses_an_unlabelled_config_map() {
    let (host, dir) = host_with(&[("owner-label-go.wasm", strategy_artifacts::GO_OWNER_LABEL)]);
    let dir = dir.path();
    let kubectl = latest_kubectl_path().unwrap();
    let run = |args: &[&str], stdin: Option<&str>| {
        kubectl_with(&kubectl, &host.base_url, dir, args, stdin).unwrap()
    };
    let denied = "admission policy module 'owner-label-go' denied request: metadata.labels[owner]: Required value: every namespaced object outside kube-system names its owner";
    let mut attempt = 0;
    let mut refusal = String::new();
    eventually("the Go policy to refuse a ConfigMap", WAIT, || {
        attempt += 1;
        let (ok, _, err) = run(&["create", "configmap", &format!("probe-{attempt}")], None);
        refusal = err;
        !ok
    });
    assert!(refusal.contains(denied), "{refusal}");
    let (ok, _, err) = run(
        &["create", "secret", "generic", "s1", "--from-literal=a=b"],
        None,
    );
    assert!(!ok && err.contains(denied), "{err}");
    for yaml in [
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: owned, namespace: default, labels: {owner: team-a}}\n",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: system, namespace: kube-system}\n",
    ] {
        let (ok, out, err) = run(&["create", "-f", "-"], Some(yaml));
        assert!(ok, "{yaml}\n{out}{err}");
    }
}

fn strategy_module(module: &[u8], resource_version: Option<&str>) -> Value {
    let mut object = json!({
        "apiVersion": "strategyhost.io/v1alpha1", "kind": "StrategyModule",
        "metadata": {"name": "deployments"},
        "spec": {"resource": {"group": "apps.example.com", "kind": "Deployment"},
                 "module": base64::engine::general_purpose::STANDARD.encode(module)}
    });
    if let Some(rv) = resource_version {
        object["metadata"]["resourceVersion"] = json!(rv);
    }
    object
}

#[test]
fn go_and_rust_modules_hot_reload_each_other_as_strategy_module_objects() {
    let (host, _dir) = host_with(&[]);
    let modules = "/apis/strategyhost.io/v1alpha1/strategymodules";
    let deployments = "/apis/apps.example.com/v1/namespaces/default/deployments";
    let go = std::fs::read(strategy_artifacts::GO_DEPLOYMENT).unwrap();
    let rust = std::fs::read(strategy_artifacts::DEPLOYMENT).unwrap();

    let r = call(
        "POST",
        &host.url(modules),
        Some(&strategy_module(&go, None)),
    )
    .unwrap();
    assert_eq!(r.code, 201, "{}", r.body);
    let rv = r.json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let go_digest = strategy_host::wasm_runtime::digest(&go);
    eventually("the Go module in force", WAIT, || {
        digest_in_force(&host, "api:deployments").as_deref() == Some(go_digest.as_str())
    });
    // The module declares the resource: it is served once its definition is created, a moment
    // after the module is in force.
    eventually("deployments served", WAIT, || {
        get(&host.url(deployments)).unwrap().0 == 200
    });
    let create = |name: &str| {
        let r = call(
            "POST",
            &host.url(deployments),
            Some(&json!({
                "apiVersion": "apps.example.com/v1", "kind": "Deployment",
                "metadata": {"name": name},
                "spec": {"replicas": -1, "selector": {"matchLabels": {"app": "api"}},
                         "template": {"metadata": {"labels": {"app": "api"}}}}
            })),
        )
        .unwrap();
        assert_eq!(r.code, 422, "{}", r.body);
        r.json()["details"]["causes"].clone()
    };
    let from_go = create("api");

    // Swapped for the Rust module in place: the same answer.
    let r = call(
        "PUT",
        &host.url(&format!("{modules}/deployments")),
        Some(&strategy_module(&rust, Some(&rv))),
    )
    .unwrap();
    assert_eq!(r.code, 200, "{}", r.body);
    let rust_digest = strategy_host::wasm_runtime::digest(&rust);
    eventually("the Rust module in force", WAIT, || {
        digest_in_force(&host, "api:deployments").as_deref() == Some(rust_digest.as_str())
    });
    assert_eq!(create("api"), from_go);
    assert_eq!(
        from_go,
        json!([{"reason": "FieldValueInvalid", "message": "Invalid value: -1: must be greater than or equal to 0", "field": "spec.replicas"}])
    );
}

/// `status.rollout` of the `deployments` StrategyModule, once `check` holds.
fn wait_rollout(host: &HostProcess, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    strategy_host_e2e::wait_rollout(host, "deployments", WAIT, what, check)
}

/// Every count under `counts` (nested objects of numbers) is zero.
fn all_zero(counts: &Value) -> bool {
    match counts {
        Value::Number(n) => n.as_u64() == Some(0),
        Value::Object(map) => map.values().all(all_zero),
        Value::Null => true,
        _ => false,
    }
}

#[test]
fn the_go_port_shadowing_the_rust_strategy_differs_on_nothing() {
    let (host, _dir) = host_with(&[]);
    let modules = "/apis/strategyhost.io/v1alpha1/strategymodules";
    let deployments = "/apis/apps.example.com/v1/namespaces/default/deployments";
    let rust = std::fs::read(strategy_artifacts::DEPLOYMENT).unwrap();
    let r = call(
        "POST",
        &host.url(modules),
        Some(&strategy_module(&rust, None)),
    )
    .unwrap();
    assert_eq!(r.code, 201, "{}", r.body);
    eventually("the Rust module serving", WAIT, || {
        get(&host.url(deployments)).unwrap().0 == 200
    });
    let deployment = |i: usize| {
        let mut d = json!({
            "apiVersion": "apps.example.com/v1", "kind": "Deployment",
            "metadata": {"name": format!("d{i}")},
            "spec": {"selector": {"matchLabels": {"app": "a"}},
                     "template": {"metadata": {"labels": {"app": "a"}}}}
        });
        if i.is_multiple_of(3) {
            d["spec"]["replicas"] = json!(-1);
        }
        if i.is_multiple_of(4) {
            d["spec"]["strategy"] = json!({"type": "Recreate"});
        }
        d
    };
    for i in 1..=5 {
        call("POST", &host.url(deployments), Some(&deployment(i))).unwrap();
    }
    eventually("the cache to hold the stored objects", WAIT, || {
        get(&host.url(&format!("{deployments}?resourceVersion=0"))).is_ok_and(|(_, body)| {
            serde_json::from_str::<Value>(&body).unwrap()["items"]
                .as_array()
                .is_some_and(|i| i.len() == 4)
        })
    });

    // Stage the Go port as a shadow of the Rust module in force.
    let go = std::fs::read(strategy_artifacts::GO_DEPLOYMENT).unwrap();
    let patch = json!({"spec": {
        "module": base64::engine::general_purpose::STANDARD.encode(&go),
        "rollout": {"mode": "Shadow"}
    }});
    let r = strategy_host_e2e::call_with(
        "PATCH",
        &host.url(&format!("{modules}/deployments")),
        Some(patch.to_string().as_bytes()),
        &[("Content-Type", "application/merge-patch+json")],
    )
    .unwrap();
    assert_eq!(r.code, 200, "{}", r.body);
    let replayed = wait_rollout(&host, "the replay", |r| r["replay"]["state"] == "Done");
    assert_eq!(replayed["replay"]["objects"], 4, "{replayed:#}");
    assert!(all_zero(&replayed["replay"]["byVerb"]), "{replayed:#}");

    // Live requests, valid and not, evaluated by both: no difference.
    for i in 6..=25 {
        call("POST", &host.url(deployments), Some(&deployment(i))).unwrap();
    }
    let counted = wait_rollout(&host, "every request evaluated", |r| {
        r["requests"]["evaluated"] == 20
    });
    assert!(all_zero(&counted["requests"]["differences"]), "{counted:#}");
    assert_eq!(counted["requests"]["skipped"], 0, "{counted:#}");
}

#[test]
fn a_first_start_compiling_a_go_module_listens_and_says_what_it_compiles() {
    let dir = tempfile::tempdir().unwrap();
    let strategies = dir.path().join("strategies");
    std::fs::create_dir(&strategies).unwrap();
    std::fs::copy(
        strategy_artifacts::GO_DEPLOYMENT,
        strategies.join("deployments-go.wasm"),
    )
    .unwrap();
    // A cache of its own: the module is compiled now, which takes seconds (Cranelift's: the
    // baseline tier would serve before the first look at /readyz).
    let cache = dir.path().join("cache").display().to_string();
    let host = HostProcess::start_with_env(
        &["--module-cache-dir", &cache, "--tiered-compilation=false"],
        &[(
            "STRATEGY_HOST_STRATEGY_DIR",
            &strategies.display().to_string(),
        )],
    )
    .unwrap();
    let deployments = "/apis/apps.example.com/v1/namespaces/default/deployments";
    let (code, body) = get(&host.url("/readyz")).unwrap();
    assert_eq!(code, 503, "{body}");
    assert!(body.starts_with("[-]strategy-modules failed: "), "{body}");
    // Served before its module, a Deployment would skip its defaults and validation: it waits.
    let (code, body) = get(&host.url(deployments)).unwrap();
    assert_eq!(code, 503, "{body}");
    assert!(
        body.contains("the server is starting: strategy modules are loading"),
        "{body}"
    );
    eventually("/readyz to name the module compiling", WAIT, || {
        let (_, body) = get(&host.url("/readyz")).unwrap();
        body.contains("compiling dir:deployments-go.wasm (") || !body.contains("[-]")
    });
    eventually(
        "ready once the module compiled",
        Duration::from_secs(180),
        || get(&host.url("/readyz")).unwrap() == (200, "ok".to_string()),
    );
    eventually("deployments served", WAIT, || {
        get(&host.url(deployments)).unwrap().0 == 200
    });
    let mut host = host;
    let log = host.log_text();
    assert!(log.contains("compiling a strategy module"), "{log}");
    assert!(log.contains("compiled a strategy module"), "{log}");
}
