//! The front proxy's trust, published as kube-apiserver publishes it, with kubectl 1.35: a
//! secure server generates kubeadm's `front-proxy-ca` and `front-proxy-client` and keeps
//! `kube-system/extension-apiserver-authentication` (client CA, request header CA, allowed
//! names, headers) — put back when deleted — which an extension server's ServiceAccount may read
//! once bound to the bootstrap Role `extension-apiserver-authentication-reader`.

use std::time::Duration;

use serde_json::Value;
use strategy_host_e2e::eventually;
use strategy_host_e2e::secure::{Credential, SecureFixture};

fn published(k: &SecureFixture) -> Option<Value> {
    let (ok, out, _) = k.kubectl(
        &Credential::Admin,
        &[
            "get",
            "configmap",
            "extension-apiserver-authentication",
            "-n",
            "kube-system",
            "-o",
            "json",
        ],
    );
    ok.then(|| serde_json::from_str(&out).unwrap())
}

#[test]
fn extension_apiserver_authentication_is_published_and_readable_by_the_bootstrap_role() {
    let k = SecureFixture::start(&[]);
    let mut configmap = None;
    eventually("the ConfigMap published", Duration::from_secs(20), || {
        configmap = published(&k);
        configmap.is_some()
    });
    let data = &configmap.unwrap()["data"];
    let pki = k.data().join("pki");
    let front_proxy_ca = std::fs::read_to_string(pki.join("front-proxy-ca.crt")).unwrap();
    assert_eq!(
        data["requestheader-client-ca-file"],
        front_proxy_ca.as_str()
    );
    let client_ca = std::fs::read_to_string(pki.join("ca.crt")).unwrap();
    assert!(data["client-ca-file"]
        .as_str()
        .unwrap()
        .contains(client_ca.trim()));
    assert_eq!(
        data["requestheader-allowed-names"],
        r#"["front-proxy-client"]"#
    );
    assert_eq!(
        data["requestheader-username-headers"],
        r#"["X-Remote-User"]"#
    );
    assert_eq!(data["requestheader-group-headers"], r#"["X-Remote-Group"]"#);
    assert_eq!(
        data["requestheader-extra-headers-prefix"],
        r#"["X-Remote-Extra-"]"#
    );
    // The client certificate is the front proxy's, signed by the published CA.
    let client = std::fs::read_to_string(pki.join("front-proxy-client.crt")).unwrap();
    let verify = std::process::Command::new("openssl")
        .args(["verify", "-CAfile"])
        .arg(pki.join("front-proxy-ca.crt"))
        .arg(pki.join("front-proxy-client.crt"))
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stderr)
    );
    assert!(client.contains("BEGIN CERTIFICATE"));

    // Deleted, it comes back.
    k.ok(
        &Credential::Admin,
        &[
            "delete",
            "configmap",
            "extension-apiserver-authentication",
            "-n",
            "kube-system",
        ],
    );
    eventually("the ConfigMap back", Duration::from_secs(20), || {
        published(&k).is_some()
    });

    // An extension server's ServiceAccount reads it through the bootstrap Role.
    let reader = "system:serviceaccount:metrics:metrics-server";
    let can_read = |who: &str| {
        k.kubectl(
            &Credential::Admin,
            &[
                "auth",
                "can-i",
                "get",
                "configmap/extension-apiserver-authentication",
                "-n",
                "kube-system",
                "--as",
                who,
            ],
        )
        .1
        .trim()
        .to_string()
    };
    assert_eq!(can_read(reader), "no");
    k.ok(
        &Credential::Admin,
        &[
            "create",
            "rolebinding",
            "metrics-server-auth-reader",
            "-n",
            "kube-system",
            "--role",
            "extension-apiserver-authentication-reader",
            "--serviceaccount",
            "metrics:metrics-server",
        ],
    );
    eventually("the binding in force", Duration::from_secs(10), || {
        can_read(reader) == "yes"
    });
}
