//! Encryption at rest: each provider's stored format, rotation, and what no key opens.

use super::*;

fn config(providers: &str) -> Encryption {
    let text = format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets, '*.example.com']\n  providers:\n{providers}"
    );
    parse(&text).unwrap().bind("/registry")
}

const KEY1: &str = "c2VjcmV0IGlzIHNlY3VyZSwgc2VjcmV0IGlzIHNlY3U="; // 32 bytes
const KEY2: &str = "dGhpcyBpcyBhbm90aGVyIDMyIGJ5dGUga2V5ISEhISE="; // 32 bytes

/// Checks that the configuration `text` is refused, naming each of `expected` among its errors.
fn assert_refused(text: &str, expected: &[&str]) {
    let errors = parse(text).unwrap_err().to_string();
    for expected in expected {
        assert!(errors.contains(expected), "{expected}\nnot in\n{errors}");
    }
}

fn provider(name: &str, key_name: &str, secret: &str) -> String {
    format!("  - {name}:\n      keys:\n      - name: {key_name}\n        secret: {secret}\n")
}

#[test]
fn every_provider_seals_in_kubernetes_format_and_opens_what_it_sealed() {
    let plain = br#"{"kind":"Secret","data":{"password":"aHVudGVyMg=="}}"#.to_vec();
    for name in ["aescbc", "aesgcm", "secretbox"] {
        let e = config(&provider(name, "k1", KEY1));
        let key = "/registry/secrets/default/s";
        let sealed = e.seal(key, plain.clone()).unwrap();
        let head = format!("k8s:enc:{name}:v1:k1:");
        assert!(sealed.starts_with(head.as_bytes()), "{name}");
        assert!(
            !sealed.windows(8).any(|w| w == b"aHVudGVy"),
            "{name} leaks the value"
        );
        assert_eq!(
            e.open(key, &sealed).unwrap().as_ref(),
            plain.as_slice(),
            "{name}"
        );
        // Sealed twice, different bytes (a fresh IV or nonce each time).
        assert_ne!(e.seal(key, plain.clone()).unwrap(), sealed, "{name}");
    }
    // Other resources are untouched; a custom resource of the wildcard group is sealed.
    let e = config(&provider("aesgcm", "k1", KEY1));
    assert_eq!(
        e.seal("/registry/configmaps/d/c", plain.clone()).unwrap(),
        plain
    );
    let widget = e
        .seal("/registry/example.com/widgets/d/w", plain.clone())
        .unwrap();
    assert!(widget.starts_with(b"k8s:enc:aesgcm:v1:k1:"));
}

#[test]
fn aesgcm_binds_the_value_to_its_key() {
    let e = config(&provider("aesgcm", "k1", KEY1));
    let sealed = e
        .seal("/registry/secrets/default/a", b"{}".to_vec())
        .unwrap();
    let moved = e.open("/registry/secrets/default/b", &sealed).unwrap_err();
    assert!(moved.to_string().contains("does not decrypt"), "{moved}");
}

#[test]
fn rotation_reads_old_keys_and_plain_data_while_listed_and_not_after() {
    let old = config(&format!(
        "{}  - identity: {{}}\n",
        provider("aescbc", "old", KEY1)
    ));
    let key = "/registry/secrets/default/s";
    let by_old = old.seal(key, b"{\"a\":1}".to_vec()).unwrap();
    // The new key first, the old one still listed, and identity for data never encrypted.
    let rotated = config(&format!(
        "{}{}  - identity: {{}}\n",
        provider("aescbc", "new", KEY2),
        provider("aescbc", "old", KEY1)
    ));
    assert_eq!(rotated.open(key, &by_old).unwrap().as_ref(), b"{\"a\":1}");
    // Read by an older key, or plain: stale, so an update rewrites it.
    assert!(rotated.open_checked(key, &by_old).unwrap().1);
    assert!(rotated.open_checked(key, b"{}").unwrap().1);
    let by_new = rotated.seal(key, b"{}".to_vec()).unwrap();
    assert!(!rotated.open_checked(key, &by_new).unwrap().1);
    assert_eq!(
        rotated.open(key, b"{\"plain\":1}").unwrap().as_ref(),
        b"{\"plain\":1}"
    );
    assert!(rotated
        .seal(key, b"{}".to_vec())
        .unwrap()
        .starts_with(b"k8s:enc:aescbc:v1:new:"));
    // The old key removed: what it sealed no longer opens, with kube-apiserver's words.
    let removed = config(&provider("aescbc", "new", KEY2));
    let err = removed.open(key, &by_old).unwrap_err().to_string();
    assert!(
        err.ends_with(
            r#"unable to transform key "/registry/secrets/default/s": no matching prefix found"#
        ),
        "{err}"
    );
    assert!(
        removed.open(key, b"{}").is_err(),
        "plain data without identity"
    );
}

#[test]
fn invalid_configurations_name_their_fields() {
    let bad = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: ['a*b']\n  providers:\n  - aescbc:\n      keys:\n      - {name: k, secret: c2hvcnQ=}\n  - kms: {name: x}\n";
    assert_refused(
        bad,
        &[
            "resources[0].providers[0].aescbc.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 5",
            "resources[0].providers[1].kms.apiVersion: Invalid value: \"v1\": KMSv1 is deprecated",
            "resources[0].providers[1].kms.endpoint: Required value",
            "resources[0].resources[0]: Invalid value: \"a*b\"",
        ],
    );
}

#[test]
fn empty_lists_are_required_values() {
    let empty = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: []\n  providers: []\n- resources: [secrets]\n  providers:\n  - aesgcm: {keys: []}\n";
    assert_refused(
        empty,
        &[
            "resources[0].providers: Required value: at least one provider is required",
            "resources[0].resources: Required value: at least one resource is required",
            "resources[1].providers[0].aesgcm.keys: Required value: at least one key is required",
        ],
    );
}

#[test]
fn kms_providers_are_checked_as_kube_apiserver_checks_them() {
    let kms = |fields: &str| format!("  - kms: {{{fields}}}\n");
    let text = format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n{}{}{}- resources: [configmaps]\n  providers:\n{}",
        kms("apiVersion: v2, name: 'a:b', endpoint: 'tcp://127.0.0.1:9', timeout: 0s"),
        kms("apiVersion: v3, name: vault, endpoint: unix:///run/kms.sock, cachesize: 100"),
        kms("apiVersion: v2, endpoint: 'unix://'"),
        kms("apiVersion: v2, name: vault, endpoint: unix:///run/kms.sock"),
    );
    assert_refused(
        &text,
        &[
            "resources[0].providers[0].kms.name: Invalid value: \"a:b\": should not contain ':'",
            "resources[0].providers[0].kms.endpoint: Invalid value: \"tcp://127.0.0.1:9\": unsupported scheme \"tcp\" for KMS provider, only unix is supported",
            "resources[0].providers[0].kms.timeout: Invalid value: \"0s\": should be a positive value",
            "resources[0].providers[1].kms.apiVersion: Unsupported value: \"v3\": supported values: \"v1\", \"v2\"",
            "resources[0].providers[1].kms.cachesize: Invalid value: 100: cachesize is not supported in v2",
            "resources[0].providers[2].kms.name: Required value",
            "resources[0].providers[2].kms.endpoint: Invalid value: \"unix://\"",
            "resources[1].providers[0].kms.name: Invalid value: \"vault\": duplicate KMS provider name vault, names must be unique",
        ],
    );
}

#[test]
fn the_core_group_wildcard_seals_core_resources_only() {
    let text = format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: ['*.']\n  providers:\n{}",
        provider("aesgcm", "k1", KEY1)
    );
    let e = parse(&text).unwrap().bind("/registry");
    let sealed = |key: &str| {
        e.seal(key, b"{}".to_vec())
            .unwrap()
            .starts_with(b"k8s:enc:aesgcm:v1:k1:")
    };
    assert!(sealed("/registry/secrets/default/s"));
    assert!(sealed("/registry/configmaps/default/c"));
    assert!(!sealed("/registry/apps/deployments/default/d"));
    assert!(!sealed("/registry/example.com/widgets/default/w"));
}
