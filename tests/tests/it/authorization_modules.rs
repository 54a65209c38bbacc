//! Authorizer modules (beyond Kubernetes): `--authorization-config` names the wasm module
//! `protect-production` (strategies/protect-production) ahead of RBAC; the module arrives as a
//! `StrategyModule` bound with `spec.authorizer`, first in Shadow — RBAC alone decides while the
//! differences the module would make are counted — then promoted to decide, driven with
//! kubectl 1.35.

use base64::Engine as _;
use serde_json::{json, Value};
use strategy_host_e2e::secure::{Credential, SecureFixture};

const TOKENS: &str =
    "dev-token,dev,uid-dev,dev\nops-token,ops,uid-ops,sre\neve-token,eve,uid-eve,auditors\n";

fn write_config(dir: &std::path::Path) -> String {
    let config = json!({
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "AuthorizationConfiguration",
        "authorizers": [
            {"type": "Module", "name": "protect-production"},
            {"type": "RBAC", "name": "rbac"},
        ],
    });
    let path = dir.join("authz.yaml");
    std::fs::write(&path, config.to_string()).unwrap();
    path.display().to_string()
}

/// The StrategyModule carrying the authorizer, staged in `mode`.
fn module_object(mode: &str) -> Value {
    let wasm = std::fs::read(strategy_artifacts::PROTECT_PRODUCTION).unwrap();
    json!({
        "apiVersion": "strategyhost.io/v1alpha1", "kind": "StrategyModule",
        "metadata": {"name": "protect-production"},
        "spec": {
            "authorizer": {"name": "protect-production"},
            "module": base64::engine::general_purpose::STANDARD.encode(wasm),
            "rollout": {"mode": mode},
        }
    })
}

#[test]
fn an_authorizer_module_shadows_rbac_then_decides_once_promoted() {
    let files = tempfile::tempdir().unwrap();
    let config = write_config(files.path());
    let (f, _tokens) =
        SecureFixture::start_with_tokens(TOKENS, &["--authorization-config", &config]);
    let admin = Credential::Admin;
    let (dev, ops, eve) = (
        Credential::token("dev-token"),
        Credential::token("ops-token"),
        Credential::token("eve-token"),
    );
    f.ok(&admin, &["create", "namespace", "prod-payments"]);
    f.ok(
        &admin,
        &["create", "configmap", "settings", "-n", "prod-payments"],
    );
    for group in ["dev", "sre"] {
        f.ok(
            &admin,
            &[
                "create",
                "rolebinding",
                &format!("{group}-edit"),
                "-n",
                "prod-payments",
                "--clusterrole=edit",
                &format!("--group={group}"),
            ],
        );
    }
    let delete = [
        "delete",
        "configmap",
        "settings",
        "-n",
        "prod-payments",
        "--dry-run=server",
    ];
    let list = ["get", "configmaps", "-n", "prod-payments"];

    // No module yet: RBAC alone decides (the chain's module entry has no opinion).
    f.eventually("RBAC lets dev delete", || f.kubectl(&dev, &delete).0);
    assert!(!f.kubectl(&eve, &list).0, "RBAC grants eve nothing");

    // Staged in Shadow: it runs beside "no opinion" and decides nothing.
    let staged = f
        .call(
            &admin,
            "POST",
            "/apis/strategyhost.io/v1alpha1/strategymodules",
            Some(&module_object("Shadow")),
        )
        .unwrap();
    assert_eq!(staged.code, 201, "{}", staged.body);
    let rollout = || -> Value {
        let out = f.ok(
            &admin,
            &["get", "strategymodule", "protect-production", "-o", "json"],
        );
        serde_json::from_str::<Value>(&out).unwrap()["status"]["rollout"].clone()
    };
    f.eventually("the module to shadow", || rollout()["state"] == "Shadowing");
    f.ok(&dev, &delete);
    assert!(!f.kubectl(&eve, &list).0, "a shadow allows nothing");
    // Its would-be decisions differ from "no opinion" twice: dev's delete and eve's list.
    let mut last = Value::Null;
    f.eventually("the shadow's differences to be counted", || {
        last = rollout();
        last["requests"]["differences"]["changes"]
            .as_u64()
            .is_some_and(|n| n >= 2)
    });

    // Promoted, it decides before RBAC.
    f.ok(
        &admin,
        &[
            "patch",
            "strategymodule",
            "protect-production",
            "--type=merge",
            "-p",
            r#"{"spec":{"rollout":{"mode":"Active"}}}"#,
        ],
    );
    f.eventually("the promoted module to deny dev's delete", || {
        !f.kubectl(&dev, &delete).0
    });
    let denied = f.fails(&dev, &delete);
    assert!(
        denied.contains(r#"User "dev" cannot delete resource "configmaps" in API group "" in the namespace "prod-payments": only members of "sre" delete in production namespaces"#),
        "{denied}"
    );
    // An SRE is left to RBAC, which lets them; auditors read what RBAC never granted.
    f.ok(&ops, &delete);
    assert!(f.ok(&eve, &list).contains("settings"));
    assert_eq!(
        f.ok(
            &eve,
            &["auth", "can-i", "list", "configmaps", "-n", "prod-payments"]
        )
        .trim(),
        "yes"
    );
    let metrics = f.call(&admin, "GET", "/metrics", None).unwrap().body;
    for line in [
        "apiserver_authorization_decisions_total{type=\"Module\",name=\"protect-production\",decision=\"denied\"}",
        "apiserver_authorization_decisions_total{type=\"Module\",name=\"protect-production\",decision=\"allowed\"}",
    ] {
        assert!(metrics.contains(line), "{line} not in the metrics");
    }
}

#[test]
fn an_authorizer_module_bound_as_a_strategy_or_under_another_name_is_refused() {
    let (f, _tokens) = SecureFixture::start_with_tokens(TOKENS, &[]);
    let admin = Credential::Admin;
    let modules = "/apis/strategyhost.io/v1alpha1/strategymodules";
    let refusal = |name: &str, spec_binding: Value| -> String {
        let mut object = module_object("Active");
        object["metadata"]["name"] = json!(name);
        object["spec"].as_object_mut().unwrap().remove("authorizer");
        for (k, v) in spec_binding.as_object().unwrap() {
            object["spec"][k] = v.clone();
        }
        let created = f.call(&admin, "POST", modules, Some(&object)).unwrap();
        assert_eq!(created.code, 201, "{}", created.body);
        let mut status = Value::Null;
        f.eventually("the module to be refused", || {
            let got = f
                .call(&admin, "GET", &format!("{modules}/{name}"), None)
                .unwrap();
            status = serde_json::from_str::<Value>(&got.body).unwrap()["status"].clone();
            status["phase"] == "Rejected"
        });
        status.to_string()
    };
    let as_strategy = refusal(
        "as-strategy",
        json!({"resource": {"group": "", "kind": "ConfigMap"}}),
    );
    assert!(
        as_strategy.contains(
            r#"the module is the authorizer \"protect-production\": bind it with spec.authorizer"#
        ),
        "{as_strategy}"
    );
    let renamed = refusal("renamed", json!({"authorizer": {"name": "another"}}));
    assert!(
        renamed.contains(r#"spec.authorizer.name is \"another\" but the module's authorizer is \"protect-production\""#),
        "{renamed}"
    );
}
