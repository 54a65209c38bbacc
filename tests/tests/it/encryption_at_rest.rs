//! Encryption at rest as a security review checks it (`--encryption-provider-config`), with
//! kubectl 1.35: a Secret's value is in neither the embedded store's files nor a
//! `/storage/snapshot`, while kubectl reads it back; other kinds stay plain; restarted with a
//! key that cannot open it, the Secret answers 500 in Kubernetes' words and everything else
//! serves; a rotated configuration (new key first, old key listed) reads it again — after a
//! restart, or without one under `--encryption-provider-config-automatic-reload`.

use std::path::Path;

use strategy_host_e2e::{get, HostProcess, LatestKubectl};

const OLD: &str = "c2VjcmV0IGlzIHNlY3VyZSwgc2VjcmV0IGlzIHNlY3U=";
const NEW: &str = "dGhpcyBpcyBhbm90aGVyIDMyIGJ5dGUga2V5ISEhISE=";
/// "hunter2-in-the-e2e-test", base64, as the Secret holds it.
const VALUE_B64: &str = "aHVudGVyMi1pbi10aGUtZTJlLXRlc3Q=";

fn write_config(path: &Path, keys: &[(&str, &str)]) {
    let keys: String = keys
        .iter()
        .map(|(name, secret)| format!("      - name: {name}\n        secret: {secret}\n"))
        .collect();
    std::fs::write(
        path,
        format!("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys:\n{keys}  - identity: {{}}\n"),
    )
    .unwrap();
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// Every file of `dir`, concatenated.
fn files_of(dir: &Path) -> Vec<u8> {
    let mut bytes = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            bytes.extend(files_of(&path));
        } else {
            bytes.extend(std::fs::read(&path).unwrap_or_default());
        }
    }
    bytes
}

#[test]
fn secrets_are_stored_encrypted_and_a_missing_key_fails_only_them() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let config = dir.path().join("encryption.yaml");
    write_config(&config, &[("old", OLD)]);
    let (data_arg, config_arg) = (data.display().to_string(), config.display().to_string());
    let start = || {
        HostProcess::start(&[
            "--data-dir",
            &data_arg,
            "--encryption-provider-config",
            &config_arg,
        ])
        .expect("the server starts")
    };
    let kubectl_1_35 = LatestKubectl::in_dir(dir.path());
    let kubectl = |host: &HostProcess, args: &[&str]| kubectl_1_35.run(host, args, None);

    let host = start();
    let (ok, _, err) = kubectl(
        &host,
        &[
            "create",
            "secret",
            "generic",
            "s",
            "--from-literal=password=hunter2-in-the-e2e-test",
        ],
    );
    assert!(ok, "{err}");
    let (ok, _, err) = kubectl(
        &host,
        &[
            "create",
            "configmap",
            "c",
            "--from-literal=plain=visible-value",
        ],
    );
    assert!(ok, "{err}");
    let (_, read, _) = kubectl(
        &host,
        &["get", "secret", "s", "-o", "jsonpath={.data.password}"],
    );
    assert_eq!(read, VALUE_B64);
    let (code, snapshot) = get(&host.url("/storage/snapshot")).unwrap();
    assert_eq!(code, 200);
    assert!(
        contains(snapshot.as_bytes(), "k8s:enc:aescbc:v1:old:") || !snapshot.contains(VALUE_B64)
    );
    assert!(
        !snapshot.contains(VALUE_B64) && !snapshot.contains("hunter2"),
        "the snapshot holds the value"
    );
    drop(host);
    let stored = files_of(&data);
    assert!(
        contains(&stored, "visible-value"),
        "a ConfigMap stays plain"
    );
    assert!(
        !contains(&stored, VALUE_B64) && !contains(&stored, "hunter2"),
        "the store's files hold the value"
    );

    // Only another key: the Secret cannot be read, and says why; the rest serves.
    write_config(&config, &[("new", NEW)]);
    let host = start();
    let (ok, _, err) = kubectl(&host, &["get", "secret", "s"]);
    assert!(!ok);
    assert!(
        err.contains(r#"Internal error occurred: unable to transform key "/registry/secrets/default/s": no matching prefix found"#),
        "{err}"
    );
    let (ok, out, err) = kubectl(
        &host,
        &["get", "configmap", "c", "-o", "jsonpath={.data.plain}"],
    );
    assert!(ok && out == "visible-value", "{err}");
    drop(host);

    // Rotated: the new key first, the old one listed; the Secret reads, and a replace
    // rewrites it under the new key.
    write_config(&config, &[("new", NEW), ("old", OLD)]);
    let host = start();
    let (_, read, err) = kubectl(
        &host,
        &["get", "secret", "s", "-o", "jsonpath={.data.password}"],
    );
    assert_eq!(read, VALUE_B64, "{err}");
    let (_, yaml, _) = kubectl(&host, &["get", "secret", "s", "-o", "json"]);
    let (ok, _, err) = kubectl_1_35.run(&host, &["replace", "-f", "-"], Some(&yaml));
    assert!(ok, "{err}");
    drop(host);
    let stored = files_of(&data);
    assert!(
        contains(&stored, "k8s:enc:aescbc:v1:new:"),
        "rewritten under the new key"
    );
}

#[test]
fn with_automatic_reload_a_new_key_seals_new_writes_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("encryption.yaml");
    write_config(&config, &[("old", OLD)]);
    let (data_arg, config_arg) = (
        dir.path().join("data").display().to_string(),
        config.display().to_string(),
    );
    let host = HostProcess::start(&[
        "--data-dir",
        &data_arg,
        "--encryption-provider-config",
        &config_arg,
        "--encryption-provider-config-automatic-reload",
    ])
    .expect("the server starts");
    let kubectl_1_35 = LatestKubectl::in_dir(dir.path());
    let kubectl = |args: &[&str]| {
        let (ok, out, err) = kubectl_1_35.run(&host, args, None);
        assert!(ok, "{err}");
        out
    };
    let secret = |name: &str| {
        kubectl(&[
            "create",
            "secret",
            "generic",
            name,
            "--from-literal=password=hunter2-in-the-e2e-test",
        ]);
    };
    // The store's files, read while it runs (each write is committed to them).
    let data = dir.path().join("data");
    let stored = || files_of(&data);
    secret("before");
    assert!(contains(&stored(), "k8s:enc:aescbc:v1:old:"));
    assert!(!contains(&stored(), "k8s:enc:aescbc:v1:new:"));

    // The new key first, the old one listed, moved into place whole: new writes take it.
    let staged = config.with_extension("tmp");
    write_config(&staged, &[("new", NEW), ("old", OLD)]);
    std::fs::rename(&staged, &config).unwrap();
    strategy_host_e2e::eventually(
        "a new Secret sealed with the new key",
        std::time::Duration::from_secs(20),
        || {
            let name = format!(
                "after-{}",
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_millis()
            );
            secret(&name);
            contains(&stored(), "k8s:enc:aescbc:v1:new:")
        },
    );
    // What the old key sealed still reads.
    assert_eq!(
        kubectl(&["get", "secret", "before", "-o", "jsonpath={.data.password}"]),
        VALUE_B64
    );
    // A file that no longer reads keeps the last good keys.
    std::fs::write(&staged, "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources: [{resources: [secrets], providers: []}]\n").unwrap();
    std::fs::rename(&staged, &config).unwrap();
    let metrics = || get(&host.url("/metrics")).unwrap().1;
    strategy_host_e2e::eventually(
        "the broken file counted",
        std::time::Duration::from_secs(20),
        || {
            metrics().contains("apiserver_encryption_config_controller_automatic_reloads_total{status=\"failure\"} 1")
        },
    );
    secret("still");
    assert_eq!(
        kubectl(&["get", "secret", "still", "-o", "jsonpath={.data.password}"]),
        VALUE_B64
    );
    assert!(metrics().contains(
        "apiserver_encryption_config_controller_automatic_reloads_total{status=\"success\"} 1"
    ));
}
