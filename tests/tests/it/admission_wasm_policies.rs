//! Admission policies as wasm modules, with kubectl 1.35 and the real binary: the example
//! `owner-label` policy (every namespaced object outside kube-system names its owner) guards two
//! resources at once — core ConfigMaps and Secrets — from the strategy directory, is hot-swapped
//! for a stricter version and removed again; bound through a `StrategyModule` object, the
//! stricter version is replayed over the stored objects it matches and runs in Shadow beside
//! it, changing no answer and counting what it would refuse; a mutating policy module gives
//! objects an owner before the validating one is asked.

use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};
use strategy_host_e2e::{call, call_with, eventually, get, latest_kubectl_path, KubeFixture};

const DENIED: &str = "admission policy module 'owner-label' denied request: metadata.labels[owner]: Required value: every namespaced object outside kube-system names its owner";
const MODULES: &str = "/apis/strategyhost.io/v1alpha1/strategymodules";
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// Writes `wasm` into `dir` as `name` the way a deploy would: write, then rename.
fn install(dir: &Path, wasm: &str, name: &str) {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::copy(wasm, &tmp).unwrap();
    std::fs::rename(&tmp, dir.join(name)).unwrap();
}

fn config_map(name: &str, namespace: &str, owner: Option<&str>) -> String {
    let labels = owner.map_or(String::new(), |o| format!("\n  labels: {{owner: {o:?}}}"));
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}{labels}\ndata: {{a: b}}\n")
}

fn wait(what: &str, check: impl FnMut() -> bool) {
    eventually(what, Duration::from_secs(30), check);
}

/// A server whose strategy directory (the first value) holds the owner-label policy.
fn serving_owner_label() -> (tempfile::TempDir, KubeFixture) {
    let modules = tempfile::tempdir().unwrap();
    install(
        modules.path(),
        strategy_artifacts::OWNER_LABEL,
        "owner-label.wasm",
    );
    let dir = modules.path().display().to_string();
    let k = KubeFixture::start_with(latest_kubectl_path().unwrap(), &["--strategy-dir", &dir]);
    (modules, k)
}

#[test]
fn a_policy_module_guards_two_resources_and_is_hot_swapped() {
    let (modules, k) = serving_owner_label();
    let apply = |yaml: &str| k.run_with(&["apply", "-f", "-"], Some(yaml));

    // ConfigMaps without an owner are refused, with the policy's cause, as kubectl shows it.
    // A new name each try: kubectl sends nothing for an object it already applied unchanged.
    let mut attempt = 0;
    let mut refusal = String::new();
    wait("the policy to refuse a ConfigMap without an owner", || {
        attempt += 1;
        let (ok, _, err) = apply(&config_map(&format!("probe-{attempt}"), "default", None));
        refusal = err;
        !ok
    });
    assert!(refusal.contains(DENIED), "{refusal}");
    // ... and so are Secrets: one policy, every namespaced resource.
    let err = k.fails(&[
        "create",
        "secret",
        "generic",
        "s1",
        "-n",
        "default",
        "--from-literal=a=b",
    ]);
    assert!(err.contains(DENIED), "{err}");
    let out = k.ok(&[
        "create",
        "secret",
        "generic",
        "s2",
        "-n",
        "default",
        "--from-literal=a=b",
        "--dry-run=client",
        "-o",
        "yaml",
    ]);
    let labelled = out.replace("  name: s2\n", "  name: s2\n  labels: {owner: team-a}\n");
    assert!(k
        .ok_with(&["apply", "-f", "-"], Some(&labelled))
        .contains("secret/s2 created"));
    // With an owner, in kube-system, or cluster-scoped: admitted.
    let ok = |yaml: &str| {
        let (ok, out, err) = apply(yaml);
        assert!(ok, "{yaml}\n{out}{err}");
    };
    ok(&config_map("c1", "default", Some("team-a")));
    ok(&config_map("c2", "kube-system", None));
    ok(&config_map("bob-0", "default", Some("Bob")));
    assert!(k.ok(&["create", "namespace", "team-a"]).contains("created"));
    // An update that drops the label is refused as well.
    let err = k.fails(&["label", "configmap", "c1", "-n", "default", "owner-"]);
    assert!(err.contains(DENIED), "{err}");

    // Hot swap: the stricter version refuses owners that are not DNS labels.
    install(
        modules.path(),
        strategy_artifacts::OWNER_LABEL_STRICT,
        "owner-label.wasm",
    );
    wait("the stricter version to refuse owner Bob", || {
        attempt += 1;
        let (ok, _, err) = apply(&config_map(
            &format!("bob-{attempt}"),
            "default",
            Some("Bob"),
        ));
        refusal = err;
        !ok
    });
    assert!(
        refusal.contains("admission policy module 'owner-label' denied request: metadata.labels[owner]: Invalid value: \"Bob\": an owner is a DNS label"),
        "{refusal}"
    );
    ok(&config_map("c3", "default", Some("team-b")));

    // Removed: nothing asks for an owner any more.
    std::fs::remove_file(modules.path().join("owner-label.wasm")).unwrap();
    wait("writes without an owner to be admitted again", || {
        attempt += 1;
        apply(&config_map(&format!("free-{attempt}"), "default", None)).0
    });
}

fn module_object(wasm: &str) -> Value {
    let bytes = base64::engine::general_purpose::STANDARD.encode(std::fs::read(wasm).unwrap());
    json!({
        "apiVersion": "strategyhost.io/v1alpha1", "kind": "StrategyModule",
        "metadata": {"name": "owner-label"},
        "spec": {"admissionPolicy": {"name": "owner-label"}, "module": bytes}
    })
}

fn configmap_json(name: &str, owner: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "default", "labels": {"owner": owner}}})
}

#[test]
fn a_policy_module_object_runs_a_stricter_version_in_shadow() {
    let k = KubeFixture::start(latest_kubectl_path().unwrap());
    let host = &k.host;
    let r = call(
        "POST",
        &host.url(MODULES),
        Some(&module_object(strategy_artifacts::OWNER_LABEL)),
    )
    .unwrap();
    assert_eq!(r.code, 201, "{}", r.body);
    wait("the policy to serve", || {
        let probe = format!("{CONFIGMAPS}?dryRun=All");
        let r = call(
            "POST",
            &host.url(&probe),
            Some(&json!({"metadata": {"name": "x"}})),
        )
        .unwrap();
        r.code == 422
            && r.json()["message"]
                .as_str()
                .is_some_and(|m| m.contains(DENIED))
    });
    // kubectl lists the module, bound to its policy, as Active (the status is written just
    // after the module starts serving, so it may lag the probe above by a moment).
    wait("kubectl to list the module as Active", || {
        let out = k.ok(&["get", "strategymodules"]);
        out.contains("owner-label") && out.contains("Active")
    });

    // Stored before the stricter version is staged: its replay finds that one owner differs.
    for (name, owner) in [("before-bob", "Bob"), ("before-team", "team-c")] {
        let r = call(
            "POST",
            &host.url(CONFIGMAPS),
            Some(&configmap_json(name, owner)),
        )
        .unwrap();
        assert_eq!(r.code, 201, "{}", r.body);
    }

    // Stage the stricter version in shadow.
    let strict = module_object(strategy_artifacts::OWNER_LABEL_STRICT);
    let patch =
        json!({"spec": {"module": strict["spec"]["module"], "rollout": {"mode": "Shadow"}}});
    let r = call_with(
        "PATCH",
        &host.url(&format!("{MODULES}/owner-label")),
        Some(patch.to_string().as_bytes()),
        &[("Content-Type", "application/merge-patch+json")],
    )
    .unwrap();
    assert_eq!(r.code, 200, "{}", r.body);
    let rollout = || -> Value {
        let (_, body) = get(&host.url(&format!("{MODULES}/owner-label"))).unwrap();
        serde_json::from_str::<Value>(&body).unwrap()["status"]["rollout"].clone()
    };
    wait("the stricter version to shadow", || {
        rollout()["state"] == "Shadowing"
    });
    let mut replay = Value::Null;
    wait("the replay over the stored objects", || {
        replay = rollout()["replay"].clone();
        replay["state"] == "Done"
    });
    // Asked as a create and as an update, the stricter version refuses Bob's ConfigMap twice;
    // every other stored object it is asked about gets the same answer from both.
    assert_eq!(replay["differences"]["rejects"], 2, "{replay:#}");
    assert!(replay["objects"].as_u64().unwrap() >= 2, "{replay:#}");
    let samples = rollout()["samples"].clone();
    assert!(
        samples
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["origin"] == "replay" && s["object"] == "default/before-bob"),
        "{samples:#}"
    );
    // The version in force answers: `Bob` is admitted, although the shadow would refuse it.
    for (i, owner) in ["Bob", "team-a", "Carol", "team-b"].iter().enumerate() {
        let r = call(
            "POST",
            &host.url(CONFIGMAPS),
            Some(&configmap_json(&format!("cm-{i}"), owner)),
        )
        .unwrap();
        assert_eq!(r.code, 201, "{}", r.body);
    }
    let mut last = Value::Null;
    wait("the shadow's refusals to be counted", || {
        last = rollout();
        last["requests"]["evaluated"] == 4
    });
    assert_eq!(last["requests"]["differences"]["rejects"], 2, "{last:#}");
    assert_eq!(
        last["requests"]["byVerb"]["create"]["rejects"], 2,
        "{last:#}"
    );
    let samples = last["samples"].as_array().unwrap();
    assert!(
        samples.iter().any(|s| s["detail"]["causes"][0]
            .as_str()
            .is_some_and(|c| c.contains("an owner is a DNS label"))),
        "{last:#}"
    );
    // Nothing the shadow would refuse was refused.
    let (_, body) = get(&host.url(CONFIGMAPS)).unwrap();
    let stored: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(stored["items"].as_array().unwrap().len(), 6, "{body}");

    // Promoted, the stricter version refuses what it shadowed.
    let promote = json!({"spec": {"rollout": {"mode": "Active"}}});
    let r = call_with(
        "PATCH",
        &host.url(&format!("{MODULES}/owner-label")),
        Some(promote.to_string().as_bytes()),
        &[("Content-Type", "application/merge-patch+json")],
    )
    .unwrap();
    assert_eq!(r.code, 200, "{}", r.body);
    wait("the promoted version to refuse owner Dave", || {
        let r = call(
            "POST",
            &host.url(CONFIGMAPS),
            Some(&configmap_json("cm-dave", "Dave")),
        )
        .unwrap();
        r.code == 422
    });
}

#[test]
fn a_strategy_module_object_bound_to_the_wrong_policy_is_refused() {
    let k = KubeFixture::start(latest_kubectl_path().unwrap());
    let host = &k.host;
    let mut wrong = module_object(strategy_artifacts::OWNER_LABEL);
    wrong["spec"]["admissionPolicy"]["name"] = json!("another-policy");
    let r = call("POST", &host.url(MODULES), Some(&wrong)).unwrap();
    assert_eq!(r.code, 201, "{}", r.body);
    let mut status = Value::Null;
    wait("the module to be refused", || {
        let (_, body) = get(&host.url(&format!("{MODULES}/owner-label"))).unwrap();
        status = serde_json::from_str::<Value>(&body).unwrap()["status"].clone();
        status["phase"] == "Rejected"
    });
    let reason = status.to_string();
    assert!(
        reason.contains("spec.admissionPolicy.name is \\\"another-policy\\\" but the module's policy is \\\"owner-label\\\""),
        "{status:#}"
    );
    // Nothing is enforced.
    let r = call(
        "POST",
        &host.url(CONFIGMAPS),
        Some(&json!({"metadata": {"name": "free"}})),
    )
    .unwrap();
    assert_eq!(r.code, 201, "{}", r.body);
}

#[test]
fn a_mutating_policy_module_runs_before_the_validating_one() {
    let (modules, k) = serving_owner_label();
    let apply = |yaml: &str| k.run_with(&["apply", "-f", "-"], Some(yaml));
    // A new name each try: kubectl sends nothing for an object it already applied unchanged.
    let mut attempt = 0;
    wait(
        "the validating policy to refuse a ConfigMap without an owner",
        || {
            attempt += 1;
            !apply(&config_map(&format!("probe-{attempt}"), "default", None)).0
        },
    );
    // The mutating module gives the object an owner before the validating one is asked.
    install(
        modules.path(),
        strategy_artifacts::DEFAULT_OWNER,
        "default-owner.wasm",
    );
    wait(
        "the mutating policy to label a ConfigMap without an owner",
        || {
            attempt += 1;
            apply(&config_map(&format!("c-{attempt}"), "default", None)).0
        },
    );
    let owner = k.ok(&[
        "get",
        "configmap",
        &format!("c-{attempt}"),
        "-o",
        "jsonpath={.metadata.labels.owner}",
    ]);
    // Development mode makes every request the user `admin`.
    assert_eq!(owner, "admin");
    // An owner given is kept.
    let (ok, _, err) = apply(&config_map("given", "default", Some("team-a")));
    assert!(ok, "{err}");
    assert_eq!(
        k.ok(&[
            "get",
            "configmap",
            "given",
            "-o",
            "jsonpath={.metadata.labels.owner}"
        ]),
        "team-a"
    );
}
