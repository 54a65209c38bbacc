//! Encryption at rest in both stores, read as an attacker with the disk or etcd would: a
//! Secret's value is found nowhere in etcd's values or the embedded store's file, other
//! resources stay plain, a store without the key refuses to read it, and a rotated key reads
//! the old values and writes with the new one.

use serde_json::json;

use super::{parse, EncryptionConfig};
use crate::embedded::{EmbeddedConfig, EmbeddedStore};
use crate::etcd3::testing::EtcdServer;
use crate::etcd3::{Etcd3Config, Etcd3Store};
use crate::testing::modify;
use crate::{GetOptions, Storage};

const OLD: &str = "c2VjcmV0IGlzIHNlY3VyZSwgc2VjcmV0IGlzIHNlY3U=";
const NEW: &str = "dGhpcyBpcyBhbm90aGVyIDMyIGJ5dGUga2V5ISEhISE=";

/// Secrets sealed with `aescbc` under the keys named, in order.
fn secrets_with(keys: &[(&str, &str)]) -> EncryptionConfig {
    let keys: String = keys
        .iter()
        .map(|(name, secret)| format!("      - name: {name}\n        secret: {secret}\n"))
        .collect();
    parse(&format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys:\n{keys}  - identity: {{}}\n"
    ))
    .unwrap()
}

fn secret() -> serde_json::Value {
    // "hunter2-is-the-password" in base64, as a Secret holds it.
    json!({"metadata": {"name": "s", "namespace": "ns"}, "data": {"password": "aHVudGVyMi1pcy10aGUtcGFzc3dvcmQ="}})
}

/// Writes the Secret, and a ConfigMap no rule encrypts.
async fn create_secret_and_config_map(store: &dyn Storage) {
    store.create("/secrets/ns/s", secret()).await.unwrap();
    store
        .create(
            "/configmaps/ns/c",
            json!({"metadata": {"name": "c"}, "data": {"plain": "visible-value"}}),
        )
        .await
        .unwrap();
}

/// The Secret reads back through `store` as written.
async fn assert_secret_reads(store: &dyn Storage) {
    let read = store
        .get("/secrets/ns/s", GetOptions::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read["data"], secret()["data"]);
}

const SECRET_VALUE: &[u8] = b"aHVudGVyMi1pcy10aGUtcGFzc3dvcmQ=";

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_holds_secrets_encrypted_and_a_rotated_key_reads_and_rewrites_them() {
    let etcd = EtcdServer::start().expect("start etcd");
    let connect = |encryption: Option<EncryptionConfig>| {
        let mut config = Etcd3Config::new(vec![etcd.endpoint()]);
        config.encryption = encryption;
        Etcd3Store::connect(config)
    };
    let store = connect(Some(secrets_with(&[("old", OLD)]))).await.unwrap();
    create_secret_and_config_map(&store).await;
    let raw = etcd_client::Client::connect([etcd.endpoint()], None)
        .await
        .unwrap();
    let value = |key: &'static str| {
        let mut raw = raw.clone();
        async move { raw.get(key, None).await.unwrap().kvs()[0].value().to_vec() }
    };
    let stored = value("/registry/secrets/ns/s").await;
    assert!(stored.starts_with(b"k8s:enc:aescbc:v1:old:"));
    assert!(!contains(&stored, SECRET_VALUE) && !contains(&stored, b"hunter2"));
    assert!(contains(
        &value("/registry/configmaps/ns/c").await,
        b"visible-value"
    ));
    // Read back through the store, and refused by one without the key.
    assert_secret_reads(&store).await;
    let keyless = connect(None).await.unwrap();
    let refused = keyless
        .get("/secrets/ns/s", GetOptions::default())
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains(
            r#"unable to transform key "/registry/secrets/ns/s": no matching prefix found"#
        ),
        "{refused}"
    );
    // Rotation: the new key first, the old one still listed; an update that changes nothing
    // still rewrites the value under the new key (as `kubectl replace` does in Kubernetes'
    // rotation steps).
    let rotated = connect(Some(secrets_with(&[("new", NEW), ("old", OLD)])))
        .await
        .unwrap();
    let updated = modify(&rotated, "/secrets/ns/s", |_| {}).await;
    assert_eq!(updated["data"], secret()["data"]);
    assert!(value("/registry/secrets/ns/s")
        .await
        .starts_with(b"k8s:enc:aescbc:v1:new:"));
    // The old key removed: the rewritten value still reads.
    let new_only = connect(Some(secrets_with(&[("new", NEW)]))).await.unwrap();
    assert!(new_only
        .get("/secrets/ns/s", GetOptions::default())
        .await
        .unwrap()
        .is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_store_file_holds_no_secret_value() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EmbeddedConfig::new(dir.path());
    config.compaction_interval = None;
    config.encryption = Some(secrets_with(&[("old", OLD)]));
    let store = EmbeddedStore::open(config).await.unwrap();
    create_secret_and_config_map(&store).await;
    modify(&store, "/secrets/ns/s", |o| o["type"] = json!("Opaque")).await;
    assert_secret_reads(&store).await;
    drop(store);
    let mut bytes = Vec::new();
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            bytes.extend(std::fs::read(path).unwrap());
        }
    }
    assert!(
        contains(&bytes, b"visible-value"),
        "the plain resource is in the file"
    );
    assert!(contains(&bytes, b"k8s:enc:aescbc:v1:old:"));
    assert!(!contains(&bytes, SECRET_VALUE) && !contains(&bytes, b"hunter2"));
}
