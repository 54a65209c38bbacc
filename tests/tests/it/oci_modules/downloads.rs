//! Modules by `spec.url` in other forms: the wasm entry of an image index, a plain download
//! from a loopback web server, a download past the size limit (reported, never loaded), and a
//! module too large to carry inline (413 naming `spec.url`).

use std::process::Command;

use base64::Engine as _;
use serde_json::json;
use strategy_host_e2e::oci_registry::{OciRegistry, RegistryOptions};
use strategy_host_e2e::HostProcess;

use super::{condition, eventually, independent_push, send, sha256, wait_status, MODULES};

#[test]
fn an_image_index_and_a_plain_download_give_modules_too() {
    let registry = OciRegistry::start(&RegistryOptions::default()).unwrap();
    let strict = strategy_artifacts::CONFIGMAP_STRICT;
    let index = independent_push(
        &registry,
        "strategies/configmap:multi",
        strict,
        "application/wasm",
        "application/vnd.wasm.config.v0+json",
        &["--index"],
    );
    // A plain download from a loopback web server (plain HTTP is allowed on loopback only).
    let site = tempfile::tempdir().unwrap();
    std::fs::copy(
        strategy_artifacts::CONFIGMAP,
        site.path().join("configmap.wasm"),
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = Command::new("python3")
        .args([
            "-m",
            "http.server",
            "--bind",
            "127.0.0.1",
            &port.to_string(),
        ])
        .current_dir(site.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let host = HostProcess::start(&[]).unwrap();
    let module = |name: &str, url: &str| {
        json!({"apiVersion": "strategyhost.io/v1alpha1", "kind": "StrategyModule",
            "metadata": {"name": name},
            "spec": {"resource": {"group": "example.com", "kind": "ConfigMap"}, "url": url}})
    };
    let (code, body) = send(
        &host,
        "POST",
        MODULES,
        &module("indexed", &registry.url("strategies/configmap:multi")),
    );
    assert_eq!(code, 201, "{body}");
    let status = wait_status(&host, "indexed", "the index's wasm entry in force", |s| {
        s["phase"] == "Active" && s["digest"] == sha256(strict)
    });
    assert_eq!(status["resolved"]["digest"], index.as_str());
    let (code, _) = send(&host, "DELETE", &format!("{MODULES}/indexed"), &json!({}));
    assert_eq!(code, 200);
    let download = format!("http://127.0.0.1:{port}/configmap.wasm");
    eventually("the web server to listen", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let (code, body) = send(&host, "POST", MODULES, &module("downloaded", &download));
    assert_eq!(code, 201, "{body}");
    let plain = sha256(strategy_artifacts::CONFIGMAP);
    let status = wait_status(&host, "downloaded", "the download in force", |s| {
        s["phase"] == "Active" && s["digest"] == plain.as_str()
    });
    assert_eq!(status["resolved"]["digest"], plain.as_str());
    // A download past the module size limit (16 MiB) is cut off and reported, never loaded.
    let huge = std::fs::File::create(site.path().join("huge.wasm")).unwrap();
    huge.set_len(17 << 20).unwrap();
    let url = format!("http://127.0.0.1:{port}/huge.wasm");
    let (code, body) = send(&host, "POST", MODULES, &module("huge", &url));
    assert_eq!(code, 201, "{body}");
    let status = wait_status(&host, "huge", "the oversized download reported", |s| {
        condition(s, "Pulled")["reason"] == "PullFailed"
    });
    assert!(
        status["reason"]
            .as_str()
            .unwrap()
            .contains("over the limit of 16777216 bytes"),
        "{status:#}"
    );
    assert_eq!(status["phase"], "Pending");
    let _ = server.kill();
    let _ = server.wait();
}

#[test]
fn a_module_too_large_to_carry_answers_413_naming_spec_url() {
    let host = HostProcess::start(&[]).unwrap();
    let module = base64::engine::general_purpose::STANDARD.encode(vec![0u8; 3 << 20]);
    let object = json!({"apiVersion": "strategyhost.io/v1alpha1", "kind": "StrategyModule",
        "metadata": {"name": "big"},
        "spec": {"resource": {"group": "example.com", "kind": "ConfigMap"}, "module": module}});
    let (code, body) = send(&host, "POST", MODULES, &object);
    assert_eq!(code, 413, "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.starts_with("the request body is larger than the limit of 3145728 bytes; "),
        "{message}"
    );
    assert!(message.contains("spec.url"), "{message}");
    assert!(message.contains("--max-request-body-bytes"), "{message}");
    // Any other resource's 413 is Kubernetes' alone.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"},
        "data": {"x": "y".repeat(3 << 20)}});
    let (code, body) = send(&host, "POST", "/api/v1/namespaces/default/configmaps", &cm);
    assert_eq!(code, 413, "{body}");
    assert!(
        !body["message"].as_str().unwrap().contains("spec.url"),
        "{body}"
    );
}
