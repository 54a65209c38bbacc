//! End-to-end: strategy modules pulled from a real OCI registry (Debian's `docker-registry`) by
//! `spec.url`. A module pushed by `strategy-host module push` and one pushed by an independent
//! pusher with Kubewarden's media type serve in turn; the tag's resolution is recorded in
//! status; an artifact that is not a module and a module that is not the pinned one are refused
//! while the version in force serves; a registry stopped mid-rollout leaves the version in force
//! serving and is pulled from once back; a host restarted while the registry is down serves the
//! module in force from its copy; a private registry behind TLS is pulled with a pull Secret;
//! and a Go module rolls out to two hosts on a three-member etcd with a StrategyModule of a few
//! hundred bytes, applied with kubectl 1.35. An image index, a plain download and a download
//! past the size limit are tried too, in `oci_modules/downloads.rs`.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};
use strategy_host::storage::etcd3::testing::EtcdCluster;
use strategy_host_e2e::oci_registry::{OciRegistry, RegistryOptions};
use strategy_host_e2e::{
    call, call_with, digest_in_force, get, host_binary, shared_module_cache, HostProcess,
    LatestKubectl,
};

mod downloads;

const CONFIGMAPS: &str = "/apis/example.com/v1/namespaces/default/configmaps";
const MODULES: &str = "/apis/strategyhost.io/v1alpha1/strategymodules";
const POLICY_LABEL: &str = "example.com/policy";
const WAIT: Duration = Duration::from_secs(60);

fn eventually(what: &str, check: impl FnMut() -> bool) {
    strategy_host_e2e::eventually(what, WAIT, check);
}

fn sha256(path: &str) -> String {
    format!(
        "sha256:{}",
        strategy_host::wasm_runtime::digest(&std::fs::read(path).unwrap())
    )
}

/// `strategy-host module ARGS…` with `env`; (succeeded, stdout, stderr).
fn module_cli(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let out = Command::new(host_binary().unwrap())
        .arg("module")
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The value of the `NAME: value` line of `module push`'s output.
fn line<'a>(out: &'a str, name: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("no {name:?} line in {out}"))
}

/// Pushes `file` with the independent pusher (`tests/python/oci_push.py`, `extra` its options);
/// the digest of the manifest (or index) the tag names.
fn independent_push(
    registry: &OciRegistry,
    repo_tag: &str,
    file: &str,
    layer: &str,
    config: &str,
    extra: &[&str],
) -> String {
    let (repository, tag) = repo_tag.split_once(':').unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/oci_push.py");
    let out = Command::new("python3")
        .arg(script)
        .args([&registry.host, repository, tag, file, layer, config])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn send(host: &HostProcess, method: &str, path: &str, body: &Value) -> (u16, Value) {
    let r = call(method, &host.url(path), Some(body)).unwrap();
    (r.code, r.json())
}

fn merge_patch(host: &HostProcess, path: &str, patch: &Value) {
    let r = call_with(
        "PATCH",
        &host.url(path),
        Some(patch.to_string().as_bytes()),
        &[("Content-Type", "application/merge-patch+json")],
    )
    .unwrap();
    assert_eq!(r.code, 200, "{}", r.body);
}

fn module_status(host: &HostProcess, name: &str) -> Value {
    let (_, body) = get(&host.url(&format!("{MODULES}/{name}"))).unwrap();
    serde_json::from_str::<Value>(&body).unwrap()["status"].clone()
}

/// Waits until the module's status satisfies `check`; returns it.
fn wait_status(
    host: &HostProcess,
    name: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let mut last = Value::Null;
    let deadline = std::time::Instant::now() + WAIT;
    while std::time::Instant::now() < deadline {
        last = module_status(host, name);
        if check(&last) {
            return last;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("timed out waiting for {what}; status: {last:#}");
}

fn condition<'a>(status: &'a Value, kind: &str) -> &'a Value {
    status["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == kind))
        .unwrap_or(&Value::Null)
}

/// Creates a ConfigMap and says whether the strict version labelled it (it serves if so).
fn created_by_strict(host: &HostProcess, name: &str) -> bool {
    let cm = json!({"apiVersion": "example.com/v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"}, "data": {"color": "blue"}});
    let (code, body) = send(host, "POST", CONFIGMAPS, &cm);
    assert_eq!(code, 201, "{body}");
    body["metadata"]["labels"][POLICY_LABEL].is_string()
}

#[test]
fn a_module_by_url_is_pulled_pinned_refused_and_kept_through_outages_and_restarts() {
    let mut registry = OciRegistry::start(&RegistryOptions::default()).unwrap();
    let (plain, strict) = (
        strategy_artifacts::CONFIGMAP,
        strategy_artifacts::CONFIGMAP_STRICT,
    );
    let v1 = registry.url("strategies/configmap:v1");
    let (ok, pushed, err) = module_cli(&["push", plain, &v1], &[]);
    assert!(ok, "{err}");
    assert_eq!(line(&pushed, "digest"), sha256(plain));
    let v1_manifest = line(&pushed, "manifest").to_owned();
    assert_eq!(
        line(&pushed, "url"),
        registry.url(&format!("strategies/configmap@{v1_manifest}"))
    );
    // `module pull` gives back the same bytes.
    let pulled = registry.dir().join("pulled.wasm");
    let (ok, _, err) = module_cli(&["pull", &v1, "-o", &pulled.display().to_string()], &[]);
    assert!(ok, "{err}");
    assert_eq!(
        std::fs::read(&pulled).unwrap(),
        std::fs::read(plain).unwrap()
    );

    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().display().to_string();
    let mut host = HostProcess::start(&["--data-dir", &data_dir]).unwrap();
    let module = json!({"apiVersion": "strategyhost.io/v1alpha1", "kind": "StrategyModule",
        "metadata": {"name": "configmaps"},
        "spec": {"resource": {"group": "example.com", "kind": "ConfigMap"}, "url": v1}});
    assert!(module.to_string().len() < 400);
    let (code, body) = send(&host, "POST", MODULES, &module);
    assert_eq!(code, 201, "{body}");
    let status = wait_status(&host, "configmaps", "v1 to be pulled and serve", |s| {
        s["phase"] == "Active" && s["digest"] == sha256(plain)
    });
    assert_eq!(
        status["resolved"]["digest"],
        v1_manifest.as_str(),
        "{status:#}"
    );
    assert_eq!(status["resolved"]["url"], v1.as_str());
    assert_eq!(condition(&status, "Pulled")["status"], "True", "{status:#}");
    eventually("configmaps served", || {
        get(&host.url(CONFIGMAPS)).is_ok_and(|(c, _)| c == 200)
    });
    assert!(!created_by_strict(&host, "a"));

    // Pushed by another tool with Kubewarden's and wasm-to-oci's media types.
    independent_push(
        &registry,
        "strategies/configmap:v2",
        strict,
        "application/vnd.wasm.content.layer.v1+wasm",
        "application/vnd.wasm.config.v1+json",
        &[],
    );
    let path = format!("{MODULES}/configmaps");
    merge_patch(
        &host,
        &path,
        &json!({"spec": {"url": registry.url("strategies/configmap:v2")}}),
    );
    wait_status(&host, "configmaps", "v2 in force", |s| {
        s["phase"] == "Active" && s["digest"] == sha256(strict)
    });
    assert!(created_by_strict(&host, "b"));

    // An artifact that is not a module never runs; the version in force keeps serving.
    let readme = registry.dir().join("README.md");
    std::fs::write(&readme, "not a module").unwrap();
    independent_push(
        &registry,
        "strategies/configmap:docs",
        &readme.display().to_string(),
        "application/vnd.oci.image.layer.v1.tar+gzip",
        "application/vnd.oci.image.config.v1+json",
        &[],
    );
    merge_patch(
        &host,
        &path,
        &json!({"spec": {"url": registry.url("strategies/configmap:docs")}}),
    );
    let status = wait_status(&host, "configmaps", "the artifact refused", |s| {
        s["phase"] == "Rejected"
    });
    assert!(
        status["reason"]
            .as_str()
            .unwrap()
            .contains("is not a wasm module"),
        "{status:#}"
    );
    assert_eq!(status["digestInForce"], sha256(strict));
    assert!(created_by_strict(&host, "c"));

    // A module that is not the pinned one is refused too.
    merge_patch(
        &host,
        &path,
        &json!({"spec": {"url": v1, "digest": sha256(strict)}}),
    );
    let status = wait_status(&host, "configmaps", "the wrong digest refused", |s| {
        s["reason"]
            .as_str()
            .is_some_and(|r| r.contains("spec.digest pins"))
    });
    assert_eq!(status["phase"], "Rejected");
    assert_eq!(status["digestInForce"], sha256(strict));

    // The registry goes away mid-rollout: the version in force serves, the status says why, and
    // the pull succeeds once the registry is back.
    registry.stop();
    merge_patch(&host, &path, &json!({"spec": {"url": v1, "digest": null}}));
    let status = wait_status(&host, "configmaps", "the failed pull reported", |s| {
        condition(s, "Pulled")["reason"] == "PullFailed"
    });
    assert!(
        status["reason"].as_str().unwrap().contains("cannot pull"),
        "{status:#}"
    );
    assert!(created_by_strict(&host, "d"));
    registry.start_again().unwrap();
    wait_status(
        &host,
        "configmaps",
        "v1 pulled once the registry is back",
        |s| s["phase"] == "Active" && s["digest"] == sha256(plain) && s.get("reason").is_none(),
    );
    assert!(!created_by_strict(&host, "e"));

    // A restart while the registry is down serves the module in force from this host's copy.
    registry.stop();
    host.terminate().unwrap();
    let mut host = HostProcess::start(&["--data-dir", &data_dir]).unwrap();
    eventually("configmaps served after the restart", || {
        get(&host.url(CONFIGMAPS)).is_ok_and(|(c, _)| c == 200)
    });
    // The stored status says so already: ask the host what serves.
    let plain_hex = sha256(plain).trim_start_matches("sha256:").to_owned();
    eventually("v1 in force on the restarted host", || {
        digest_in_force(&host, "api:configmaps").as_deref() == Some(plain_hex.as_str())
    });
    assert!(!created_by_strict(&host, "f"));
    let (_, metrics) = get(&host.url("/metrics")).unwrap();
    // Served from this host's copy: a cache hit, and no pull succeeded.
    let hits = metrics
        .lines()
        .find_map(|l| l.strip_prefix("strategy_module_pull_cache_hits_total "))
        .and_then(|v| v.trim().parse::<f64>().ok());
    assert!(hits.is_some_and(|h| h >= 1.0), "{}", host.log_text());
    assert!(
        !metrics.contains(r#"strategy_module_pulls_total{result="success"}"#),
        "{metrics}"
    );
}

#[test]
fn a_private_registry_behind_tls_is_pulled_with_a_pull_secret() {
    let registry = OciRegistry::start(&RegistryOptions {
        tls: true,
        user: Some(("alice".into(), "s3cret".into())),
    })
    .unwrap();
    let ca = format!(
        "{}={}",
        registry.host,
        registry.ca.as_ref().unwrap().display()
    );
    let url = registry.url("private/configmap:v1");
    let plain = strategy_artifacts::CONFIGMAP;
    // Without credentials the registry refuses the push.
    let (ok, _, err) = module_cli(&["push", plain, &url, "--registry-ca", &ca], &[]);
    assert!(!ok, "pushed without credentials");
    assert!(err.contains("error"), "{err}");
    let docker = tempfile::tempdir().unwrap();
    let auth = base64::engine::general_purpose::STANDARD.encode("alice:s3cret");
    let config = json!({"auths": {registry.host.clone(): {"auth": auth}}});
    std::fs::write(docker.path().join("config.json"), config.to_string()).unwrap();
    let docker_config = docker.path().display().to_string();
    let (ok, _, err) = module_cli(
        &["push", plain, &url, "--registry-ca", &ca],
        &[("DOCKER_CONFIG", &docker_config)],
    );
    assert!(ok, "{err}");

    let host = HostProcess::start(&["--registry-ca", &ca]).unwrap();
    let module = json!({"apiVersion": "strategyhost.io/v1alpha1", "kind": "StrategyModule",
        "metadata": {"name": "private"},
        "spec": {"resource": {"group": "example.com", "kind": "ConfigMap"}, "url": url,
                 "imagePullSecret": "regcred"}});
    let (code, body) = send(&host, "POST", MODULES, &module);
    assert_eq!(code, 201, "{body}");
    let status = wait_status(&host, "private", "the missing pull secret reported", |s| {
        s["reason"]
            .as_str()
            .is_some_and(|r| r.contains("kube-system/regcred"))
    });
    assert_eq!(status["phase"], "Pending", "{status:#}");
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"name": "regcred", "namespace": "kube-system"},
        "data": {".dockerconfigjson": base64::engine::general_purpose::STANDARD.encode(config.to_string())}});
    let (code, body) = send(
        &host,
        "POST",
        "/api/v1/namespaces/kube-system/secrets",
        &secret,
    );
    assert_eq!(code, 201, "{body}");
    wait_status(&host, "private", "the module pulled with the secret", |s| {
        s["phase"] == "Active" && s["digest"] == sha256(plain)
    });
}

#[test]
fn a_go_module_rolls_out_by_url_to_two_hosts_on_a_three_member_etcd() {
    let registry = OciRegistry::start(&RegistryOptions::default()).unwrap();
    let go = strategy_artifacts::GO_DEPLOYMENT;
    let url = registry.url("strategies/deployment-go:v1");
    let (ok, pushed, err) = module_cli(&["push", go, &url], &[]);
    assert!(ok, "{err}");
    assert_eq!(line(&pushed, "digest"), sha256(go));
    let cluster = EtcdCluster::start(3).unwrap();
    let endpoints = cluster.endpoints().join(",");
    let cache = shared_module_cache().display().to_string();
    let args = ["--etcd-servers", &endpoints, "--module-cache-dir", &cache];
    let hosts = [
        HostProcess::start(&args).unwrap(),
        HostProcess::start(&args).unwrap(),
    ];
    let dir = tempfile::tempdir().unwrap();
    let manifest = format!(
        "apiVersion: strategyhost.io/v1alpha1\nkind: StrategyModule\nmetadata:\n  name: deployments\nspec:\n  resource: {{group: apps.example.com, kind: Deployment}}\n  url: {url}\n  digest: {}\n",
        sha256(go)
    );
    assert!(manifest.len() < 400, "{} bytes", manifest.len());
    let file = dir.path().join("module.yaml");
    std::fs::write(&file, &manifest).unwrap();
    let kubectl = LatestKubectl::in_dir(dir.path());
    let (ok, out, err) = kubectl.run(
        &hosts[0],
        &["apply", "-f", &file.display().to_string()],
        None,
    );
    assert!(ok, "{out}\n{err}");
    let digest = strategy_host::wasm_runtime::digest(&std::fs::read(go).unwrap());
    for host in &hosts {
        eventually("the Go module in force on every host", || {
            digest_in_force(host, "api:deployments").as_deref() == Some(digest.as_str())
        });
    }
    let deployments = "/apis/apps.example.com/v1/namespaces/default/deployments";
    let (ok, out, err) = kubectl.run(
        &hosts[1],
        &[
            "get",
            "strategymodules",
            "deployments",
            "-o",
            "jsonpath={.status.phase} {.status.resolved.digest}",
        ],
        None,
    );
    assert!(ok, "{err}");
    assert!(out.starts_with("Active sha256:"), "{out}");
    eventually("deployments served", || {
        get(&hosts[1].url(deployments)).is_ok_and(|(c, _)| c == 200)
    });
    // The Go strategy answers on the other host: a negative replica count in Kubernetes' words.
    let bad = json!({"apiVersion": "apps.example.com/v1", "kind": "Deployment",
        "metadata": {"name": "api"},
        "spec": {"replicas": -1, "selector": {"matchLabels": {"app": "api"}},
                 "template": {"metadata": {"labels": {"app": "api"}}}}});
    let (code, body) = send(&hosts[1], "POST", deployments, &bad);
    assert_eq!(code, 422, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("spec.replicas"),
        "{body}"
    );
}
