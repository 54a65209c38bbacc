//! End-to-end: the real binary starts on each store, answers its health and version endpoints,
//! refuses what it does not serve with a Kubernetes Status, and stops cleanly on SIGTERM.

use serde_json::Value;
use strategy_host::storage::etcd3::testing::EtcdServer;
use strategy_host_e2e::{get, request, run_to_exit, HostProcess};

fn data_dir_arg(dir: &tempfile::TempDir) -> String {
    dir.path().join("data").display().to_string()
}

#[test]
fn embedded_server_serves_health_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let data = data_dir_arg(&dir);
    let mut host = HostProcess::start(&["--data-dir", &data]).unwrap();
    for path in ["/healthz", "/livez", "/readyz"] {
        assert_eq!(
            get(&host.url(path)).unwrap(),
            (200, "ok".to_string()),
            "{path}"
        );
    }
    let (code, body) = get(&host.url("/version")).unwrap();
    assert_eq!(code, 200);
    // With a trailing slash too, as kube-apiserver answers (the Python client's VersionApi).
    assert_eq!(get(&host.url("/version/")).unwrap(), (code, body.clone()));
    let version: Value = serde_json::from_str(&body).unwrap();
    // The Kubernetes version served, this server's own as build metadata.
    assert_eq!(
        (version["major"].as_str(), version["minor"].as_str()),
        (Some("1"), Some("36"))
    );
    let git_version = version["gitVersion"].as_str().unwrap();
    assert!(
        git_version.starts_with("v1.36.0+strategyhost."),
        "{git_version}"
    );
    // kubectl 1.35 sees no version skew.
    let kubectl_dir = tempfile::tempdir().unwrap();
    let kubectl = strategy_host_e2e::LatestKubectl::in_dir(kubectl_dir.path());
    let (ok, out, err) = kubectl.run(&host, &["version"], None);
    assert!(ok, "{err}");
    assert!(
        out.contains("Server Version: v1.36.0+strategyhost."),
        "{out}"
    );
    assert!(!err.contains("WARNING"), "{err}");

    let (code, body) = get(&host.url("/apis/nothing.example.com/v1/widgets")).unwrap();
    assert_eq!(code, 404);
    let status: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "NotFound");
    assert_eq!(status["code"], 404);

    let (code, body) = request("DELETE", &host.url("/healthz")).unwrap();
    assert_eq!(code, 405, "{body}");

    let status = host.terminate().unwrap();
    assert!(status.success(), "exit {status}: {}", host.log_text());
    assert!(
        dir.path().join("data").exists(),
        "the data directory was created"
    );
}

#[test]
fn second_server_on_the_same_data_dir_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let data = data_dir_arg(&dir);
    let _first = HostProcess::start(&["--data-dir", &data]).unwrap();
    let (status, stderr) = run_to_exit(&["--listen", "127.0.0.1:0", "--data-dir", &data]).unwrap();
    assert!(!status.success());
    assert!(
        stderr.contains(&data),
        "the error names the directory: {stderr}"
    );
}

#[test]
fn unusable_data_dir_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let path = file.display().to_string();
    let (status, stderr) = run_to_exit(&["--listen", "127.0.0.1:0", "--data-dir", &path]).unwrap();
    assert!(!status.success());
    assert!(stderr.contains(&path), "{stderr}");
}

#[test]
fn etcd_server_readiness_follows_etcd() {
    let mut etcd = EtcdServer::start().unwrap();
    let endpoint = etcd.endpoint();
    let host = HostProcess::start(&["--etcd-servers", &endpoint, "--etcd-prefix", "/e2e"]).unwrap();
    assert_eq!(get(&host.url("/readyz")).unwrap().0, 200);
    etcd.stop();
    let (code, body) = get(&host.url("/readyz")).unwrap();
    assert_eq!(code, 503, "{body}");
    assert_eq!(
        get(&host.url("/livez")).unwrap().0,
        200,
        "liveness does not depend on etcd"
    );
    etcd.restart().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        if get(&host.url("/readyz")).unwrap().0 == 200 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not ready again after etcd restart"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

#[test]
fn unreachable_etcd_fails_startup_with_a_clear_error() {
    let (status, stderr) = run_to_exit(&[
        "--listen",
        "127.0.0.1:0",
        "--etcd-servers",
        "http://127.0.0.1:1",
        "--etcd-dial-timeout-seconds",
        "2",
    ])
    .unwrap();
    assert!(!status.success());
    assert!(stderr.contains("127.0.0.1:1"), "{stderr}");
}
