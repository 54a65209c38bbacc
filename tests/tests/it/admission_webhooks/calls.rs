//! How the server calls webhooks: connections reused across calls, the audit annotations of
//! webhooks, policies and the Audit action reaching the audit log, and `IfNeeded` webhooks and
//! policies called again after a later change.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use strategy_host_e2e::webhook_server::{certificates, WebhookServer};
use strategy_host_e2e::{eventually, latest_kubectl_path, KubeFixture};

use super::{configuration, post};

#[test]
fn calls_to_a_webhook_reuse_its_connections() {
    let k = KubeFixture::start(latest_kubectl_path().unwrap());
    let ca = certificates(k.dir.path());
    let webhook = WebhookServer::start(k.dir.path());
    let config = configuration(
        "ValidatingWebhookConfiguration",
        "deny.example.com",
        &webhook.url("/deny"),
        &ca,
        "configmaps",
        json!({}),
    );
    let path = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
    assert_eq!(post(&k, path, &config).code, 201);
    let cms = "/api/v1/namespaces/default/configmaps";
    let cm = |name: &str, data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data});
    eventually("the webhook to deny", Duration::from_secs(10), || {
        post(&k, cms, &cm("bad", json!({"forbidden": "x"}))).code == 403
    });
    let before = webhook.stats();
    for i in 0..20 {
        let r = post(&k, cms, &cm(&format!("ok-{i}"), json!({"a": "1"})));
        assert_eq!(r.code, 201, "{}", r.body);
    }
    let after = webhook.stats();
    let requests = after["requests"].as_u64().unwrap() - before["requests"].as_u64().unwrap();
    // (The agent asking for the stats keeps its own connection between the two asks.)
    let connections =
        after["connections"].as_u64().unwrap() - before["connections"].as_u64().unwrap();
    assert_eq!(requests, 20, "{before} {after}");
    assert!(connections <= 2, "20 calls took {connections} connections");
}

/// The first `ResponseComplete` audit event of a request to `uri` that `check` accepts.
fn audit_event(log: &Path, uri: &str, check: impl Fn(&Value) -> bool) -> Option<Value> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["stage"] == "ResponseComplete" && e["requestURI"] == uri && check(e))
}

#[test]
fn audit_annotations_of_webhooks_policies_and_the_audit_action_reach_the_audit_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.log");
    let log_arg = log.display().to_string();
    let k = KubeFixture::start_with(
        latest_kubectl_path().unwrap(),
        &["--audit-log-path", &log_arg, "--audit-level", "Metadata"],
    );
    let ca = certificates(k.dir.path());
    let webhook = WebhookServer::start(k.dir.path());
    let mutating = configuration(
        "MutatingWebhookConfiguration",
        "mutate.example.com",
        &webhook.url("/mutate"),
        &ca,
        "configmaps",
        json!({}),
    );
    let policy = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: few-keys}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  validations:
  - {expression: "!has(object.data) || size(object.data) < 2", message: "too many keys"}
  auditAnnotations:
  - {key: keys, valueExpression: "has(object.data) ? string(size(object.data)) : null"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: few-keys-binding}
spec: {policyName: few-keys, validationActions: [Audit]}
"#;
    let manifest = format!("{}\n---\n{policy}", mutating);
    k.ok_with(&["apply", "-f", "-"], Some(&manifest));
    let cms = "/api/v1/namespaces/default/configmaps";
    let mut n = 0;
    let mut event = None;
    eventually(
        "a create annotated by the webhook and the policy",
        Duration::from_secs(15),
        || {
            n += 1;
            let name = format!("audited-{n}");
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "1", "b": "2", "c": "3"}});
            // The Audit action never refuses.
            assert_eq!(post(&k, cms, &cm).code, 201);
            event = audit_event(&log, cms, |e| {
                e["annotations"]["few-keys/keys"] == "3"
                    && e["annotations"]["mutate.example.com/mutated"] == "true"
            });
            event.is_some()
        },
    );
    let annotations = &event.unwrap()["annotations"];
    let failures: Value = serde_json::from_str(
        annotations["validation.policy.admission.k8s.io/validation_failure"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        failures,
        json!([{"message": "too many keys", "policy": "few-keys", "binding": "few-keys-binding",
                "expressionIndex": 0, "validationActions": ["Audit"]}])
    );
}

#[test]
fn if_needed_webhooks_and_policies_are_called_again_after_a_later_change() {
    let k = KubeFixture::start(latest_kubectl_path().unwrap());
    let ca = certificates(k.dir.path());
    let webhook = WebhookServer::start(k.dir.path());
    // Called in configuration-name order: a-first, then b-second, which changes the object.
    let first = configuration(
        "MutatingWebhookConfiguration",
        "a-first.example.com",
        &webhook.url("/mutate"),
        &ca,
        "configmaps",
        json!({"reinvocationPolicy": "IfNeeded"}),
    );
    let second = configuration(
        "MutatingWebhookConfiguration",
        "b-second.example.com",
        &webhook.url("/label"),
        &ca,
        "configmaps",
        json!({}),
    );
    // The policy runs before the webhooks: only reinvoked does it see their label.
    let policy = r#"
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata: {name: copy-label}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
  reinvocationPolicy: IfNeeded
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >-
        Object{metadata: Object.metadata{labels: {'copied':
          has(object.metadata.labels) && 'labelled' in object.metadata.labels
            ? object.metadata.labels['labelled'] : 'none'}}}
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicyBinding
metadata: {name: copy-label-binding}
spec: {policyName: copy-label}
"#;
    let manifest = format!("{first}\n---\n{second}\n---\n{policy}");
    k.ok_with(&["apply", "-f", "-"], Some(&manifest));
    let cms = "/api/v1/namespaces/default/configmaps";
    let mut n = 0;
    let mut created = Value::Null;
    eventually(
        "both webhooks and the policy to act",
        Duration::from_secs(15),
        || {
            n += 1;
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("r-{n}")}});
            let r = post(&k, cms, &cm);
            assert_eq!(r.code, 201, "{}", r.body);
            created = r.json();
            let labels = &created["metadata"]["labels"];
            labels["labelled"] == "true"
                && labels["mutated-by"] == "webhook"
                && labels["copied"] != Value::Null
        },
    );
    assert_eq!(created["metadata"]["labels"]["copied"], "true", "{created}");
    // One more create, counted: a-first, b-second, then a-first again.
    let requests = || webhook.stats()["requests"].as_u64().unwrap();
    let before = requests();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "counted"}});
    assert_eq!(post(&k, cms, &cm).code, 201);
    assert_eq!(requests() - before, 3);
}
