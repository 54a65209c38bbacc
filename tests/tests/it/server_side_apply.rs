//! Server-side apply end to end with real clients against the real binary: kubectl 1.35
//! `apply --server-side` (create, unchanged re-apply, a conflict and `--force-conflicts`, a second
//! field manager, removing a field, the upgrade from client-side apply), `kubectl diff`, Helm 4
//! (server-side apply by default) with a chart carrying a CRD and custom resources, and the
//! API's own answers (fieldManager required, conflicts as Kubernetes words them, status, dry run).

use std::path::{Path, PathBuf};

use serde_json::json;
use strategy_host_e2e::{call, call_with, latest_kubectl_path, HostProcess, KubeFixture};

fn kube() -> KubeFixture {
    KubeFixture::start(latest_kubectl_path().unwrap())
}

fn config_map(data: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  labels:\n    app: demo\ndata:\n{data}")
}

const SETTINGS: &str = "/api/v1/namespaces/default/configmaps/settings";

#[test]
fn kubectl_applies_server_side_with_ownership_conflicts_and_removal() {
    let k = kube();
    let apply = ["apply", "--server-side", "-f", "-"];
    let both = config_map("  mode: fast\n  level: \"3\"\n");
    assert!(k
        .ok_with(&apply, Some(&both))
        .contains("configmap/settings serverside-applied"));
    let created = k.get(SETTINGS);
    assert_eq!(created["data"], json!({"mode": "fast", "level": "3"}));
    let entry = &created["metadata"]["managedFields"][0];
    assert_eq!(
        (entry["manager"].as_str(), entry["operation"].as_str()),
        (Some("kubectl"), Some("Apply"))
    );
    assert_eq!(
        entry["fieldsV1"]["f:data"],
        json!({".": {}, "f:level": {}, "f:mode": {}})
    );

    // Unchanged: nothing is written.
    k.ok_with(&apply, Some(&both));
    assert_eq!(
        k.get(SETTINGS)["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );

    // Another writer takes `mode`; applying our value again conflicts, with kubectl's advice.
    k.ok_with(
        &[
            "patch",
            "configmap",
            "settings",
            "-p",
            r#"{"data":{"mode":"slow"}}"#,
        ],
        None,
    );
    let (ok, _, err) = k.run_with(&apply, Some(&both));
    assert!(!ok);
    assert!(
        err.contains(
            "Apply failed with 1 conflict: conflict with \"kubectl-patch\" using v1: .data.mode"
        ),
        "{err}"
    );
    assert!(err.contains("--force-conflicts"), "{err}");
    k.ok_with(
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        Some(&both),
    );
    assert_eq!(k.get(SETTINGS)["data"]["mode"], "fast");

    // A second manager owns its own field; each keeps what it applies.
    let theirs = config_map("  extra: yes-please\n");
    k.ok_with(
        &[
            "apply",
            "--server-side",
            "--field-manager=operator",
            "-f",
            "-",
        ],
        Some(&theirs),
    );
    // Ours drops `level`: it goes; `extra` (the operator's) stays.
    k.ok_with(&apply, Some(&config_map("  mode: fast\n")));
    assert_eq!(
        k.get(SETTINGS)["data"],
        json!({"mode": "fast", "extra": "yes-please"})
    );
    let managers: Vec<String> = k.get(SETTINGS)["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["manager"].as_str().unwrap().to_string())
        .collect();
    assert!(
        managers.contains(&"kubectl".into()) && managers.contains(&"operator".into()),
        "{managers:?}"
    );

    // `kubectl diff` shows what an apply would change, and applies nothing.
    let (changed, out, _) = k.run_with(
        &["diff", "--server-side", "-f", "-"],
        Some(&config_map("  mode: turbo\n")),
    );
    assert!(!changed && out.contains("+  mode: turbo"), "{out}");
    assert_eq!(k.get(SETTINGS)["data"]["mode"], "fast");
    let (same, out, _) = k.run_with(
        &["diff", "--server-side", "-f", "-"],
        Some(&config_map("  mode: fast\n")),
    );
    assert!(same && out.is_empty(), "{out}");
}

#[test]
fn an_object_applied_client_side_is_taken_over_by_server_side_apply() {
    let k = kube();
    let both = config_map("  mode: fast\n  level: \"3\"\n");
    k.ok_with(&["apply", "-f", "-"], Some(&both));
    let live = k.get(SETTINGS);
    assert!(
        live["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .is_string()
    );
    assert_eq!(
        live["metadata"]["managedFields"][0]["manager"],
        "kubectl-client-side-apply"
    );
    // kubectl migrates the client-side manager's fields to its server-side one ...
    k.ok_with(&["apply", "--server-side", "-f", "-"], Some(&both));
    // ... so a field dropped from the manifest is removed, with no conflict.
    k.ok_with(
        &["apply", "--server-side", "-f", "-"],
        Some(&config_map("  mode: fast\n")),
    );
    assert_eq!(k.get(SETTINGS)["data"], json!({"mode": "fast"}));
}

#[test]
fn the_api_answers_apply_as_kubernetes_does() {
    let k = kube();
    let apply = |query: &str, body: &str| {
        call_with(
            "PATCH",
            &k.host.url(&format!("{SETTINGS}{query}")),
            Some(body.as_bytes()),
            &[("Content-Type", "application/apply-patch+yaml")],
        )
        .unwrap()
    };
    // YAML works; fieldManager is required.
    let missing = apply("", &config_map("  a: \"1\"\n"));
    assert_eq!(missing.code, 422, "{}", missing.body);
    assert!(
        missing
            .body
            .contains("fieldManager: Required value: is required for apply patch"),
        "{}",
        missing.body
    );
    let created = apply("?fieldManager=alice", &config_map("  a: \"1\"\n"));
    assert_eq!(created.code, 201, "{}", created.body);
    // A dry run changes nothing.
    let dry = apply(
        "?fieldManager=alice&dryRun=All",
        &config_map("  a: \"2\"\n"),
    );
    assert_eq!(
        (dry.code, dry.json()["data"]["a"].as_str()),
        (200, Some("2"))
    );
    assert_eq!(k.get(SETTINGS)["data"]["a"], "1");
    // Conflicts: 409 with one FieldManagerConflict cause per field.
    let conflict = apply("?fieldManager=bob", &config_map("  a: \"9\"\n"));
    assert_eq!(conflict.code, 409, "{}", conflict.body);
    let status = conflict.json();
    assert_eq!(status["reason"], "Conflict");
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"alice\" using v1", "field": ".data.a"}])
    );
    assert_eq!(
        apply("?fieldManager=bob&force=true", &config_map("  a: \"9\"\n")).code,
        200
    );
    // force belongs to apply only.
    let forced_merge = call_with(
        "PATCH",
        &k.host.url(&format!("{SETTINGS}?force=true")),
        Some(br#"{"data":{"a":"1"}}"#),
        &[("Content-Type", "application/merge-patch+json")],
    )
    .unwrap();
    assert_eq!(forced_merge.code, 422, "{}", forced_merge.body);
    // Every write records its manager: a merge patch from curl is owned by "curl".
    let patched = call_with(
        "PATCH",
        &k.host.url(SETTINGS),
        Some(br#"{"data":{"b":"2"}}"#),
        &[
            ("Content-Type", "application/merge-patch+json"),
            ("User-Agent", "curl/8.5.0"),
        ],
    )
    .unwrap();
    let entries = patched.json()["metadata"]["managedFields"].clone();
    let curl = entries
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "curl")
        .unwrap();
    assert_eq!(
        (curl["operation"].as_str(), &curl["fieldsV1"]["f:data"]),
        (Some("Update"), &json!({"f:b": {}}))
    );
}

fn helm(host: &HostProcess, home: &Path, args: &[&str]) -> (bool, String) {
    strategy_host_e2e::helm(&host.base_url, home, args, &[]).unwrap()
}

#[test]
fn helm_4_installs_upgrades_rolls_back_and_uninstalls_a_chart_with_a_crd_server_side() {
    let k = kube();
    let chart = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("charts/widgets");
    let chart = chart.display().to_string();
    let widget = "/apis/example.com/v1/namespaces/default/widgets/shop-main";
    let (ok, out) = helm(&k.host, k.dir.path(), &["install", "shop", &chart]);
    assert!(ok, "{out}");
    let installed = k.get(widget);
    assert_eq!(installed["spec"]["size"], 3);
    let helm_entry = installed["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "helm")
        .cloned()
        .unwrap_or_else(|| panic!("{installed}"));
    assert_eq!(helm_entry["operation"], "Apply");
    let (ok, out) = helm(
        &k.host,
        k.dir.path(),
        &["upgrade", "shop", &chart, "--set", "size=5,color=red"],
    );
    assert!(ok, "{out}");
    assert_eq!(k.get(widget)["spec"], json!({"size": 5, "color": "red"}));
    let (ok, out) = helm(&k.host, k.dir.path(), &["rollback", "shop", "1"]);
    assert!(ok, "{out}");
    assert_eq!(k.get(widget)["spec"], json!({"size": 3, "color": "blue"}));
    assert_eq!(
        k.get("/api/v1/namespaces/default/configmaps/shop-settings")["data"]["color"],
        "blue"
    );
    let (ok, out) = helm(&k.host, k.dir.path(), &["uninstall", "shop"]);
    assert!(ok, "{out}");
    assert_eq!(call("GET", &k.host.url(widget), None).unwrap().code, 404);
}

#[test]
fn the_status_subresource_is_applied_under_its_own_entry() {
    let k = kube();
    let crd = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/crds/widgets.yaml");
    k.ok_with(
        &["apply", "--server-side", "-f", &crd.display().to_string()],
        None,
    );
    k.ok_with(
        &[
            "wait",
            "--for",
            "condition=established",
            "crd/widgets.example.com",
            "--timeout=10s",
        ],
        None,
    );
    let widget =
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: small\nspec:\n  size: 2\n";
    k.ok_with(&["apply", "--server-side", "-f", "-"], Some(widget));
    let status = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: small\nstatus:\n  conditions:\n  - type: Ready\n    status: \"True\"\n";
    k.ok_with(
        &[
            "apply",
            "--server-side",
            "--subresource=status",
            "--field-manager=widget-controller",
            "-f",
            "-",
        ],
        Some(status),
    );
    let live = k.get("/apis/example.com/v1/namespaces/default/widgets/small");
    assert_eq!(live["status"]["conditions"][0]["status"], "True");
    assert_eq!(live["spec"]["size"], 2);
    let entries = live["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .clone();
    let controller = entries
        .iter()
        .find(|e| e["manager"] == "widget-controller")
        .unwrap_or_else(|| panic!("{live}"));
    assert_eq!(
        (
            controller["operation"].as_str(),
            controller["subresource"].as_str()
        ),
        (Some("Apply"), Some("status"))
    );
    assert!(controller["fieldsV1"]["f:status"].is_object());
    let kubectl = entries.iter().find(|e| e["manager"] == "kubectl").unwrap();
    assert!(kubectl["fieldsV1"].get("f:status").is_none(), "{kubectl}");
}

/// An apply under `fieldValidation=Strict` is refused as kube-apiserver refuses it, in its
/// words (Kubernetes' field validation specs look for them): a field the CRD's schema lacks is
/// `.path: field not declared in schema`, a key a YAML body repeats `line N: key "k" already
/// set in map`; nothing is written.
#[test]
fn a_strict_apply_words_unknown_and_repeated_fields_as_kubernetes() {
    let host = HostProcess::start(&[]).unwrap();
    let crds = host.url("/apis/apiextensions.k8s.io/v1/customresourcedefinitions");
    assert_eq!(
        call("POST", &crds, Some(&strategy_host_e2e::widget_crd()))
            .unwrap()
            .code,
        201
    );
    let widgets = host.url("/apis/example.com/v1/namespaces/default/widgets");
    strategy_host_e2e::eventually("widgets served", std::time::Duration::from_secs(10), || {
        call("GET", &widgets, None).unwrap().code == 200
    });
    let apply = |name: &str, yaml: &str| {
        call_with(
            "PATCH",
            &format!("{widgets}/{name}?fieldManager=e2e&fieldValidation=Strict"),
            Some(yaml.as_bytes()),
            &[("Content-Type", "application/apply-patch+yaml")],
        )
        .unwrap()
    };
    let unknown = apply(
        "w1",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nunknownField: x\nspec:\n  size: 1\n",
    );
    assert_eq!(unknown.code, 400, "{}", unknown.body);
    assert!(
        unknown.body.contains(
            "failed to create typed patch object (example.com/v1, Kind=Widget): .unknownField: field not declared in schema"
        ),
        "{}",
        unknown.body
    );
    let repeated = apply(
        "w2",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w2\nspec:\n  size: 1\n  color: red\n  color: blue\n",
    );
    assert_eq!(repeated.code, 400, "{}", repeated.body);
    assert!(
        repeated
            .body
            .contains(r#"line 8: key \"color\" already set in map"#),
        "{}",
        repeated.body
    );
    for name in ["w1", "w2"] {
        assert_eq!(
            call("GET", &format!("{widgets}/{name}"), None)
                .unwrap()
                .code,
            404
        );
    }
    // Without Strict the same apply is written, the unknown field dropped.
    let ok = call_with(
        "PATCH",
        &format!("{widgets}/w1?fieldManager=e2e"),
        Some(b"apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nunknownField: x\nspec:\n  size: 1\n"),
        &[("Content-Type", "application/apply-patch+yaml")],
    )
    .unwrap();
    assert_eq!(ok.code, 201, "{}", ok.body);
    assert!(ok.json().get("unknownField").is_none());
}
