//! Structured authorization (`--authorization-config`): a real authorization webhook over HTTPS
//! (tests/python/authz_webhook.py, which requires the client certificate and token of its
//! kubeconfig) ahead of RBAC, driven with kubectl 1.35. The webhook allows what RBAC does not,
//! denies what RBAC allows, has no opinion (RBAC decides); match conditions keep users from it;
//! a failing webhook lets RBAC decide under `NoOpinion` and answers 500 under `Deny`, reloaded
//! into the running server; an invalid file stops the start with kube-apiserver's field errors.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};
use strategy_host_e2e::pyjwt::Served;
use strategy_host_e2e::secure::{Credential, SecureFixture};

const TOKENS: &str = "jane-token,jane,uid-jane\nmallory-token,mallory,uid-mallory\nbob-token,bob,uid-bob\nskipper-token,skipper,uid-skipper\n";

/// The webhook, serving until dropped.
struct Webhook(Served);

impl Webhook {
    fn start() -> Self {
        Self(Served::start("authz_webhook.py", &[]))
    }

    fn file(&self, name: &str) -> String {
        self.0.file(name).display().to_string()
    }

    /// A kubeconfig naming the webhook, its CA, and the client certificate and token it wants.
    fn kubeconfig(&self, at: &Path) {
        let config = json!({
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "corp", "cluster": {
                "server": format!("https://127.0.0.1:{}/authorize", self.0.port()),
                "certificate-authority": self.file("ca.pem"),
            }}],
            "users": [{"name": "apiserver", "user": {
                "client-certificate": self.file("client.pem"),
                "client-key": self.file("client-key.pem"),
                "tokenFile": self.file("token"),
            }}],
            "contexts": [{"name": "webhook", "context": {"cluster": "corp", "user": "apiserver"}}],
            "current-context": "webhook",
        });
        std::fs::write(at, config.to_string()).unwrap();
    }

    /// The reviews it received.
    fn reviews(&self) -> Vec<Value> {
        std::fs::read_to_string(self.0.file("reviews.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn set_failing(&self, failing: bool) {
        let flag = self.0.file("fail");
        if failing {
            std::fs::write(flag, "").unwrap();
        } else {
            let _ = std::fs::remove_file(flag);
        }
    }
}

/// The configuration: the webhook (TTLs of a second, so changes show quickly), then RBAC.
fn write_config(path: &Path, kubeconfig: &Path, failure_policy: &str) {
    let config = json!({
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "AuthorizationConfiguration",
        "authorizers": [
            {"type": "Webhook", "name": "corp", "webhook": {
                "timeout": "3s",
                "authorizedTTL": "1s",
                "unauthorizedTTL": "1s",
                "subjectAccessReviewVersion": "v1",
                "matchConditionSubjectAccessReviewVersion": "v1",
                "failurePolicy": failure_policy,
                "connectionInfo": {"type": "KubeConfigFile", "kubeConfigFile": kubeconfig.display().to_string()},
                "matchConditions": [{"expression": "request.user != 'skipper'"}],
            }},
            {"type": "RBAC", "name": "rbac"},
        ],
    });
    // Written whole, then moved into place, as a configuration tool would.
    let staged = path.with_extension("tmp");
    std::fs::write(&staged, config.to_string()).unwrap();
    std::fs::rename(&staged, path).unwrap();
}

#[test]
fn a_webhook_authorizer_allows_denies_and_defers_to_rbac_and_its_failures_follow_the_policy() {
    let webhook = Webhook::start();
    let files = tempfile::tempdir().unwrap();
    let kubeconfig = files.path().join("webhook.kubeconfig");
    webhook.kubeconfig(&kubeconfig);
    let config = files.path().join("authz.yaml");
    write_config(&config, &kubeconfig, "NoOpinion");
    let config_arg = config.display().to_string();
    let (f, _tokens) =
        SecureFixture::start_with_tokens(TOKENS, &["--authorization-config", &config_arg]);
    let admin = Credential::Admin;
    let (jane, mallory, bob, skipper) = (
        Credential::token("jane-token"),
        Credential::token("mallory-token"),
        Credential::token("bob-token"),
        Credential::token("skipper-token"),
    );
    f.ok(&admin, &["create", "namespace", "webhook-ns"]);
    f.ok(&admin, &["create", "configmap", "c", "-n", "webhook-ns"]);
    for user in ["mallory", "bob", "skipper"] {
        f.ok(
            &admin,
            &[
                "create",
                "rolebinding",
                &format!("{user}-view"),
                "-n",
                "webhook-ns",
                "--clusterrole=view",
                &format!("--user={user}"),
            ],
        );
    }

    // The webhook allows jane what RBAC never granted her.
    f.eventually("the webhook allows jane", || {
        f.kubectl(&jane, &["get", "configmaps", "-n", "webhook-ns"])
            .0
    });
    assert_eq!(
        f.ok(
            &jane,
            &["auth", "can-i", "list", "configmaps", "-n", "webhook-ns"]
        )
        .trim(),
        "yes"
    );
    // No opinion elsewhere: RBAC decides, and denies.
    let denied = f.fails(&jane, &["get", "configmaps", "-n", "default"]);
    assert!(
        denied.contains(r#"User "jane" cannot list resource "configmaps" in API group "" in the namespace "default""#),
        "{denied}"
    );
    // The webhook, first in the chain, denies mallory what RBAC allows her, with its reason.
    let blocked = f.fails(&mallory, &["get", "configmaps", "-n", "webhook-ns"]);
    assert!(
        blocked.contains("mallory is blocked by corp policy"),
        "{blocked}"
    );
    // No opinion for bob: RBAC allows him.
    f.ok(&bob, &["get", "configmaps", "-n", "webhook-ns"]);

    // What the webhook was sent: a v1 SubjectAccessReview with the request's attributes; the
    // match condition kept skipper from it (RBAC allowed him).
    f.ok(&skipper, &["get", "configmaps", "-n", "webhook-ns"]);
    let reviews = webhook.reviews();
    let jane_list = reviews
        .iter()
        .find(|r| r["spec"]["user"] == "jane" && r["spec"]["resourceAttributes"]["verb"] == "list")
        .expect("jane's list was reviewed");
    assert_eq!(jane_list["apiVersion"], "authorization.k8s.io/v1");
    assert_eq!(jane_list["kind"], "SubjectAccessReview");
    assert_eq!(
        jane_list["spec"]["resourceAttributes"],
        json!({"namespace": "webhook-ns", "verb": "list", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(jane_list["spec"]["uid"], "uid-jane");
    assert!(jane_list["spec"]["groups"]
        .as_array()
        .unwrap()
        .contains(&json!("system:authenticated")));
    assert!(
        !reviews.iter().any(|r| r["spec"]["user"] == "skipper"),
        "the match condition excludes skipper"
    );

    // The webhook fails. Under NoOpinion RBAC still decides: bob is served; jane, whom only
    // the webhook allowed, gets kube-apiserver's 500 with the failure.
    webhook.set_failing(true);
    std::thread::sleep(Duration::from_millis(1500));
    f.ok(&bob, &["get", "configmaps", "-n", "webhook-ns"]);
    let failed = f
        .call(
            &jane,
            "GET",
            "/api/v1/namespaces/webhook-ns/configmaps",
            None,
        )
        .unwrap();
    assert_eq!(failed.code, 500, "{}", failed.body);
    let status: Value = serde_json::from_str(&failed.body).unwrap();
    let message = status["message"].as_str().unwrap();
    assert!(
        message.starts_with("Internal error occurred: Post \"https://127.0.0.1:")
            && message.contains("the server answered 500"),
        "{message}"
    );

    // Reloaded with failurePolicy Deny, without a restart: bob's request now fails too.
    write_config(&config, &kubeconfig, "Deny");
    f.eventually("a failing webhook ends the chain under Deny", || {
        f.call(
            &bob,
            "GET",
            "/api/v1/namespaces/webhook-ns/configmaps",
            None,
        )
        .unwrap()
        .code
            == 500
    });
    webhook.set_failing(false);
    f.eventually("the webhook answers again", || {
        f.kubectl(&bob, &["get", "configmaps", "-n", "webhook-ns"])
            .0
    });
    // The administrator (system:masters) never waited on the webhook.
    f.ok(&admin, &["get", "configmaps", "-n", "webhook-ns"]);

    let metrics = f.call(&admin, "GET", "/metrics", None).unwrap().body;
    for line in [
        "apiserver_authorization_config_controller_automatic_reloads_total{status=\"success\"} 1",
        "apiserver_authorization_decisions_total{type=\"Webhook\",name=\"corp\",decision=\"allowed\"}",
        "apiserver_authorization_decisions_total{type=\"Webhook\",name=\"corp\",decision=\"denied\"}",
        "apiserver_authorization_webhook_evaluations_total{name=\"corp\",result=\"error\"}",
        "apiserver_authorization_webhook_evaluations_fail_open_total{name=\"corp\",result=\"error\"}",
    ] {
        assert!(metrics.contains(line), "{line} not in the metrics");
    }
}

#[test]
fn an_invalid_authorization_configuration_stops_the_start_with_its_field_errors() {
    let files = tempfile::tempdir().unwrap();
    let config = files.path().join("authz.yaml");
    std::fs::write(
        &config,
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n\
         - type: Webhook\n  name: corp\n  webhook:\n    timeout: 45s\n    subjectAccessReviewVersion: v1\n    \
         failurePolicy: Deny\n    connectionInfo:\n      type: KubeConfigFile\n      kubeConfigFile: webhook.kubeconfig\n\
         - type: RBAC\n  name: rbac\n- type: RBAC\n  name: rbac2\n",
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        Command::new(strategy_host_e2e::host_binary().unwrap())
            .args(["--data-dir", &dir.path().join("d").display().to_string()])
            .args(["--listen", "127.0.0.1:0"])
            .args(extra)
            .output()
            .unwrap()
    };
    let config_arg = config.display().to_string();
    let out = run(&["--authorization-config", &config_arg]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    for expected in [
        r#"authorizers[0].timeout: Invalid value: "45s": must be > 0s and <= 30s"#,
        r#"authorizers[0].connectionInfo.kubeConfigFile: Invalid value: "webhook.kubeconfig": must be an absolute path"#,
        r#"authorizers[2].type: Duplicate value: "RBAC""#,
    ] {
        assert!(stderr.contains(expected), "{expected} not in {stderr}");
    }
    // kube-apiserver's rule: the file replaces --authorization-mode.
    let out = run(&[
        "--authorization-config",
        &config_arg,
        "--authorization-mode",
        "RBAC",
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot be used with"), "{stderr}");
}
