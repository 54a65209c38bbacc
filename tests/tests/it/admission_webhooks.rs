//! Admission webhooks against a real HTTPS webhook server (Python's standard library, with a
//! certificate from a CA made here): a mutating webhook's JSONPatch and warning, a validating
//! webhook's denial worded as Kubernetes words it (and skipped by a matchCondition), a delete refused by a webhook, a hanging webhook under Ignore and Fail, one
//! that answers garbage, one behind a CA the configuration does not trust, one without a
//! `caBundle` trusted by the system's roots; configurations applied with kubectl 1.35. How the
//! webhooks are called (connections, audit annotations, reinvocation) is in
//! `admission_webhooks/calls.rs`.

use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};
use strategy_host_e2e::webhook_server::{certificates, WebhookServer};
use strategy_host_e2e::{call, eventually, latest_kubectl_path, HostProcess, KubeFixture};

mod calls;

/// A configuration of one webhook on `resource` (core group) as YAML-compatible JSON.
fn configuration(
    kind: &str,
    name: &str,
    url: &str,
    ca: &str,
    resource: &str,
    extra: Value,
) -> Value {
    let mut webhook = json!({
        "name": name,
        "clientConfig": {"url": url, "caBundle": base64::engine::general_purpose::STANDARD.encode(ca)},
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": [resource]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    if let (Some(w), Some(e)) = (webhook.as_object_mut(), extra.as_object()) {
        w.extend(e.clone());
    }
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": [webhook],
    })
}

fn post(k: &KubeFixture, path: &str, obj: &Value) -> strategy_host_e2e::Reply {
    call("POST", &k.host.url(path), Some(obj)).unwrap()
}

#[test]
fn webhooks_mutate_deny_and_fail_as_kubernetes_words_it() {
    let k = KubeFixture::start(latest_kubectl_path().unwrap());
    let ca = certificates(k.dir.path());
    let webhook = WebhookServer::start(k.dir.path());
    let configs = [
        configuration(
            "MutatingWebhookConfiguration",
            "mutate.example.com",
            &webhook.url("/mutate"),
            &ca,
            "configmaps",
            json!({}),
        ),
        configuration(
            "ValidatingWebhookConfiguration",
            "deny.example.com",
            &webhook.url("/deny"),
            &ca,
            "configmaps",
            json!({}),
        ),
    ];
    let manifest: Vec<String> = configs.iter().map(Value::to_string).collect();
    let applied = k.ok_with(&["apply", "-f", "-"], Some(&manifest.join("\n---\n")));
    assert!(applied.contains("mutate.example.com created"), "{applied}");
    let cms = "/api/v1/namespaces/default/configmaps";
    let cm = |name: &str, data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data});

    let mut created = Value::Null;
    let mut n = 0;
    eventually(
        "the mutating webhook to label a new ConfigMap",
        Duration::from_secs(10),
        || {
            n += 1;
            let reply = post(&k, cms, &cm(&format!("probe-{n}"), json!({"a": "1"})));
            assert_eq!(reply.code, 201, "{}", reply.body);
            created = reply.json();
            created["metadata"]["labels"]["mutated-by"] == "webhook"
        },
    );
    let out = k.ok_with(
        &["create", "-f", "-"],
        Some(&cm("warned", json!({})).to_string()),
    );
    assert!(out.contains("configmap/warned created"), "{out}");
    let (_, _, stderr) = k.run_with(
        &["apply", "-f", "-"],
        Some(&cm("warned2", json!({})).to_string()),
    );
    assert!(
        stderr.contains("Warning: mutated by the test webhook"),
        "{stderr}"
    );

    // matchConditions: the denying webhook is not called for objects labelled exempt.
    let mut exempt = cm("exempt", json!({"forbidden": "x"}));
    exempt["metadata"]["labels"] = json!({"exempt": "true"});
    let conditioned = configuration(
        "ValidatingWebhookConfiguration",
        "deny.example.com",
        &webhook.url("/deny"),
        &ca,
        "configmaps",
        json!({"matchConditions": [{"name": "not-exempt", "expression": "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)"}]}),
    );
    let path =
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/deny.example.com";
    let mut current = k.get(path);
    current["webhooks"] = conditioned["webhooks"].clone();
    assert_eq!(
        call("PUT", &k.host.url(path), Some(&current)).unwrap().code,
        200
    );
    eventually(
        "the match condition to exempt a labelled object",
        Duration::from_secs(10),
        || {
            let r = post(&k, cms, &exempt);
            if r.code == 201 {
                return true;
            }
            assert_eq!(r.code, 403, "{}", r.body);
            false
        },
    );
    let denied = post(&k, cms, &cm("bad", json!({"forbidden": "x"})));
    assert_eq!(denied.code, 403, "{}", denied.body);
    assert_eq!(
        denied.json()["message"],
        "admission webhook \"deny.example.com\" denied the request: forbidden key"
    );
    assert_eq!(denied.json()["reason"], "Forbidden");

    // Deletes are admitted too (objects protected from deletion, as Crossplane protects them).
    let protect = configuration(
        "ValidatingWebhookConfiguration",
        "protect.example.com",
        &webhook.url("/protect"),
        &ca,
        "configmaps",
        json!({"rules": [{"operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]}),
    );
    let configs = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
    assert_eq!(post(&k, configs, &protect).code, 201);
    let mut guarded = cm("guarded", json!({}));
    guarded["metadata"]["labels"] = json!({"protected": "true"});
    assert_eq!(post(&k, cms, &guarded).code, 201);
    let mut refusal = String::new();
    eventually(
        "deleting a protected object to be refused",
        Duration::from_secs(10),
        || {
            let (ok, _, err) = k.run(&["delete", "configmap", "guarded"]);
            refusal = err;
            !ok
        },
    );
    assert!(
        refusal.contains(
            "admission webhook \"protect.example.com\" denied the request: protected object"
        ),
        "{refusal}"
    );
    k.ok(&["delete", "configmap", "warned"]);

    // Secrets: a hanging webhook ignored, then one that fails closed; garbage; a wrong CA.
    let secrets = "/api/v1/namespaces/default/secrets";
    let secret =
        |name: &str| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}});
    let configs = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
    let hang = configuration(
        "ValidatingWebhookConfiguration",
        "hang.example.com",
        &webhook.url("/hang"),
        &ca,
        "secrets",
        json!({"timeoutSeconds": 1, "failurePolicy": "Ignore"}),
    );
    assert_eq!(post(&k, configs, &hang).code, 201);
    let mut n = 0;
    eventually(
        "the ignored hanging webhook to be called (and time out)",
        Duration::from_secs(10),
        || {
            n += 1;
            let began = Instant::now();
            let ignored = post(&k, secrets, &secret(&format!("ignored-{n}")));
            assert_eq!(ignored.code, 201, "{}", ignored.body);
            began.elapsed() >= Duration::from_millis(900)
        },
    );
    let delete = |name: &str| {
        let r = call("DELETE", &k.host.url(&format!("{configs}/{name}")), None).unwrap();
        assert_eq!(r.code, 200, "{}", r.body);
    };
    delete("hang.example.com");

    let other_dir = k.dir.path().join("other-ca");
    std::fs::create_dir(&other_dir).unwrap();
    let untrusted = certificates(&other_dir);
    let cases = [
        (
            "hang-fail.example.com",
            webhook.url("/hang"),
            &ca,
            "context deadline exceeded",
        ),
        (
            "garbage.example.com",
            webhook.url("/garbage"),
            &ca,
            "AdmissionReview",
        ),
        (
            "wrong-ca.example.com",
            webhook.url("/deny"),
            &untrusted,
            "certificate",
        ),
    ];
    for (name, url, trusted, why) in cases {
        let failing = configuration(
            "ValidatingWebhookConfiguration",
            name,
            &url,
            trusted,
            "secrets",
            json!({"timeoutSeconds": 1, "failurePolicy": "Fail"}),
        );
        assert_eq!(post(&k, configs, &failing).code, 201);
        let mut reply = None;
        eventually(
            &format!("{name} to fail secrets closed"),
            Duration::from_secs(10),
            || {
                n += 1;
                let r = post(&k, secrets, &secret(&format!("failed-{n}")));
                // The previous case's configuration may still be in force for a moment.
                let failed = r.code == 500 && r.body.contains(name);
                reply = Some(r);
                failed
            },
        );
        let message = reply.unwrap().json()["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(
            message.starts_with(&format!("Internal error occurred: failed calling webhook \"{name}\": failed to call webhook: ")),
            "{message}"
        );
        assert!(message.contains(why), "{message}");
        delete(name);
    }
    // Other resources are not held up by the failing webhooks.
    assert_eq!(post(&k, cms, &cm("unrelated", json!({}))).code, 201);
    let metrics = call("GET", &k.host.url("/metrics"), None).unwrap().body;
    assert!(
        metrics.lines().any(
            |l| l.starts_with("apiserver_admission_webhook_rejection_total{")
                && l.contains("name=\"deny.example.com\"")
                && l.contains("rejection_code=\"403\"")
        ),
        "{metrics}"
    );
    assert!(
        metrics.contains("apiserver_admission_webhook_admission_duration_seconds_bucket{"),
        "{metrics}"
    );
}

#[test]
fn a_webhook_without_a_ca_bundle_is_trusted_by_the_systems_roots() {
    let dir = tempfile::tempdir().unwrap();
    let ca = certificates(dir.path());
    let system_roots = dir.path().join("system-roots.pem");
    std::fs::write(&system_roots, &ca).unwrap();
    let webhook = WebhookServer::start(dir.path());
    let mut config = configuration(
        "ValidatingWebhookConfiguration",
        "system-roots.example.com",
        &webhook.url("/deny"),
        "",
        "configmaps",
        json!({"failurePolicy": "Fail"}),
    );
    config["webhooks"][0]["clientConfig"]
        .as_object_mut()
        .unwrap()
        .remove("caBundle");
    let configs = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
    let forbidden = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c"}, "data": {"forbidden": "x"}});
    let create = |host: &HostProcess| {
        let r = call("POST", &host.url(configs), Some(&config)).unwrap();
        assert_eq!(r.code, 201, "{}", r.body);
        let url = host.url("/api/v1/namespaces/default/configmaps");
        let mut reply = None;
        eventually(
            "the webhook configuration in force",
            Duration::from_secs(10),
            || {
                let r = call("POST", &url, Some(&forbidden)).unwrap();
                let answered = r.code != 201;
                reply = Some(r);
                answered
            },
        );
        reply.unwrap()
    };
    // The test CA is not among this machine's roots: the call fails closed on the certificate.
    let data = |name: &str| dir.path().join(name).display().to_string();
    let host = HostProcess::start(&["--data-dir", &data("untrusting")]).unwrap();
    let r = create(&host);
    assert_eq!(r.code, 500, "{}", r.body);
    assert!(r.body.contains("certificate"), "{}", r.body);
    drop(host);
    // With the test CA as the system's roots (SSL_CERT_FILE), the webhook is called and denies.
    let trusting = system_roots.display().to_string();
    let host = HostProcess::start_with_env(
        &["--data-dir", &data("trusting")],
        &[("SSL_CERT_FILE", &trusting)],
    )
    .unwrap();
    let r = create(&host);
    assert_eq!(r.code, 403, "{}", r.body);
    assert!(r.body.contains("forbidden key"), "{}", r.body);
}
