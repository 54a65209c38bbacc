//! Encryption at rest by a KMS v2 plugin, with kubectl 1.35 and a real etcd. The plugin is a
//! gRPC server of its own (tests/python/kms_plugin.py, grpcio), which also writes and opens
//! kube-apiserver's stored format independently of the server: so a Secret this server wrote
//! opens there, and one "kube-apiserver" wrote reads here. The plugin's absence keeps `/readyz`
//! failing and Secrets unwritable while other kinds serve; its seed is decrypted once, not per
//! read; a new key id moves writes to it (after a restart, or within a minute without one)
//! while older values still read.

use std::path::Path;
use std::time::Duration;

use strategy_host::storage::etcd3::testing::EtcdServer;
use strategy_host_e2e::pyjwt::{self, Served};
use strategy_host_e2e::{eventually, get, HostProcess, LatestKubectl};

/// "kms-protected-value", base64, as the Secret holds it.
const VALUE_B64: &str = "a21zLXByb3RlY3RlZC12YWx1ZQ==";

fn etcd_get(endpoint: &str, key: &str) -> Vec<u8> {
    etcd(endpoint, |mut client| {
        let key = key.to_string();
        async move {
            let reply = client.get(key.as_str(), None).await.unwrap();
            reply
                .kvs()
                .first()
                .map(|kv| kv.value().to_vec())
                .unwrap_or_default()
        }
    })
}

fn etcd_put(endpoint: &str, key: &str, value: Vec<u8>) {
    etcd(endpoint, |mut client| {
        let key = key.to_string();
        async move {
            client.put(key, value, None).await.unwrap();
        }
    });
}

fn etcd<T, F: std::future::Future<Output = T>>(
    endpoint: &str,
    f: impl FnOnce(etcd_client::Client) -> F,
) -> T {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = etcd_client::Client::connect([endpoint], None)
            .await
            .unwrap();
        f(client).await
    })
}

/// What the plugin's helper opens `stored` (at `key`) to: the key id and the plain value.
fn open_independently(keys: &Path, key: &str, stored: &[u8]) -> serde_json::Value {
    let output = run_helper(&["open", &keys.display().to_string(), key], stored);
    serde_json::from_slice(&output).unwrap()
}

fn run_helper(args: &[&str], stdin: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut child = pyjwt::command("kms_plugin.py")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "kms_plugin.py {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

fn calls(plugin: &Served, what: &str) -> usize {
    std::fs::read_to_string(plugin.file("calls"))
        .unwrap_or_default()
        .lines()
        .filter(|l| *l == what)
        .count()
}

#[test]
fn secrets_are_sealed_by_the_kms_plugin_in_kube_apiservers_format() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("kms.sock");
    let keys = dir.path().join("keys.json");
    let config = dir.path().join("encryption.yaml");
    std::fs::write(
        &config,
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n\
             - resources: [secrets]\n  providers:\n  - kms:\n      apiVersion: v2\n      name: corp-kms\n      \
             endpoint: unix://{}\n      timeout: 3s\n  - identity: {{}}\n",
            socket.display()
        ),
    )
    .unwrap();
    let etcd = EtcdServer::start().unwrap();
    let endpoint = etcd.endpoint();
    let config_arg = config.display().to_string();
    let start = || {
        HostProcess::start(&[
            "--etcd-servers",
            &endpoint,
            "--encryption-provider-config",
            &config_arg,
        ])
        .expect("the server starts")
    };
    let kubectl_1_35 = LatestKubectl::in_dir(dir.path());
    let kubectl = |host: &HostProcess, args: &[&str], stdin: Option<&str>| {
        kubectl_1_35.run(host, args, stdin)
    };
    let create_secret = |host: &HostProcess, name: &str| {
        kubectl(
            host,
            &[
                "create",
                "secret",
                "generic",
                name,
                "--from-literal=password=kms-protected-value",
            ],
            None,
        )
    };
    let serve_plugin = || {
        Served::start_until(
            "kms_plugin.py",
            &[
                "serve",
                &socket.display().to_string(),
                &keys.display().to_string(),
            ],
            "ready",
        )
    };

    // No plugin yet: not ready, Secrets cannot be written (with the reason), the rest serves.
    let host = start();
    let (code, body) = get(&host.url("/readyz")).unwrap();
    assert_eq!(code, 503, "{body}");
    assert!(
        body.contains("[-]kms-providers failed: kms-provider \"corp-kms\": rpc error"),
        "{body}"
    );
    let (ok, _, err) = create_secret(&host, "early");
    assert!(!ok);
    assert!(
        err.contains("Internal error occurred") && err.contains("encryption state is missing"),
        "{err}"
    );
    let (ok, _, err) = kubectl(&host, &["create", "configmap", "plain"], None);
    assert!(ok, "{err}");

    // The plugin comes up: within its retry interval the server is ready and seals Secrets.
    let plugin = serve_plugin();
    eventually(
        "/readyz with the plugin up",
        Duration::from_secs(30),
        || get(&host.url("/readyz")).is_ok_and(|(code, _)| code == 200),
    );
    let (ok, _, err) = create_secret(&host, "db");
    assert!(ok, "{err}");
    let stored = etcd_get(&endpoint, "/registry/secrets/default/db");
    assert!(
        stored.starts_with(b"k8s:enc:kms:v2:corp-kms:"),
        "{:?}",
        &stored[..40.min(stored.len())]
    );
    assert!(!String::from_utf8_lossy(&stored).contains(VALUE_B64));
    // kube-apiserver's format: the plugin's helper opens it on its own.
    let opened = open_independently(&keys, "/registry/secrets/default/db", &stored);
    assert_eq!(opened["keyID"], "key-1");
    assert!(
        opened["plain"].as_str().unwrap().contains(VALUE_B64),
        "{opened}"
    );

    // A value "kube-apiserver" wrote, with a seed of its own, reads here through a watch.
    let plain = serde_json::json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "from-kube", "namespace": "default", "uid": "6f1f6c7e-0000-4000-8000-000000000001",
                     "creationTimestamp": "2026-11-28T00:00:00Z"},
        "data": {"password": VALUE_B64}, "type": "Opaque"
    });
    let sealed = run_helper(
        &[
            "seal",
            &keys.display().to_string(),
            "corp-kms",
            "/registry/secrets/default/from-kube",
        ],
        plain.to_string().as_bytes(),
    );
    let decrypts_before = calls(&plugin, "Decrypt key-1");
    etcd_put(&endpoint, "/registry/secrets/default/from-kube", sealed);
    for _ in 0..3 {
        for name in ["db", "from-kube"] {
            let mut read = String::new();
            eventually(
                &format!("secret {name} reads"),
                Duration::from_secs(10),
                || {
                    read = kubectl(
                        &host,
                        &["get", "secret", name, "-o", "jsonpath={.data.password}"],
                        None,
                    )
                    .1;
                    read == VALUE_B64
                },
            );
        }
    }
    // The server's own seed is never sent back; the other seed once (by the watch, or the first
    // read), then cached.
    assert_eq!(calls(&plugin, "Decrypt key-1") - decrypts_before, 1);
    assert_eq!(calls(&plugin, "Encrypt key-1"), 1, "one seed sealed");
    drop(host);

    // The plugin moves to a new key: after a restart writes use it, older values still read
    // (their seeds decrypted with key-1), and a replace rewrites one under key-2.
    let mut state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&keys).unwrap()).unwrap();
    state["keys"]["key-2"] = serde_json::json!("dGhpcyBpcyBhbm90aGVyIDMyIGJ5dGUga2V5ISEhISE=");
    state["current"] = serde_json::json!("key-2");
    std::fs::write(&keys, state.to_string()).unwrap();
    let host = start();
    let (ok, _, err) = create_secret(&host, "after-rotation");
    assert!(ok, "{err}");
    let stored = etcd_get(&endpoint, "/registry/secrets/default/after-rotation");
    let opened = open_independently(&keys, "/registry/secrets/default/after-rotation", &stored);
    assert_eq!(opened["keyID"], "key-2");
    let (_, read, err) = kubectl(
        &host,
        &["get", "secret", "db", "-o", "jsonpath={.data.password}"],
        None,
    );
    assert_eq!(read, VALUE_B64, "{err}");
    let (_, json, _) = kubectl(&host, &["get", "secret", "db", "-o", "json"], None);
    let (ok, _, err) = kubectl(&host, &["replace", "-f", "-"], Some(&json));
    assert!(ok, "{err}");
    let stored = etcd_get(&endpoint, "/registry/secrets/default/db");
    let opened = open_independently(&keys, "/registry/secrets/default/db", &stored);
    assert_eq!(opened["keyID"], "key-2", "rewritten under the new key");

    // Without a restart: the plugin's status check (every minute) finds key-3, a new seed is
    // sealed with it, and new writes use it.
    state["keys"]["key-3"] = serde_json::json!("c2VjcmV0IGlzIHNlY3VyZSwgc2VjcmV0IGlzIHNlY3U=");
    state["current"] = serde_json::json!("key-3");
    std::fs::write(&keys, state.to_string()).unwrap();
    eventually("a seed sealed with key-3", Duration::from_secs(75), || {
        calls(&plugin, "Encrypt key-3") == 1
    });
    let (ok, _, err) = create_secret(&host, "after-live-rotation");
    assert!(ok, "{err}");
    let stored = etcd_get(&endpoint, "/registry/secrets/default/after-live-rotation");
    let opened = open_independently(
        &keys,
        "/registry/secrets/default/after-live-rotation",
        &stored,
    );
    assert_eq!(opened["keyID"], "key-3");

    // The plugin stops: what is already decrypted keeps serving. Two seeds were sealed in this
    // run (key-2, key-3), as the latency metric counts.
    drop(plugin);
    let (_, read, err) = kubectl(
        &host,
        &[
            "get",
            "secret",
            "from-kube",
            "-o",
            "jsonpath={.data.password}",
        ],
        None,
    );
    assert_eq!(read, VALUE_B64, "{err}");
    let (code, metrics) = get(&host.url("/metrics")).unwrap();
    assert_eq!(code, 200);
    assert!(
        metrics.contains("apiserver_envelope_encryption_kms_operations_latency_seconds_count{provider_name=\"corp-kms\",method_name=\"Encrypt\",grpc_status_code=\"Ok\"} 2"),
        "{}",
        metrics.lines().filter(|l| l.contains("envelope")).collect::<Vec<_>>().join("\n")
    );
}
