//! End-to-end for `strategy-host module test|diff`, the author's test runner, with the real
//! binary: the ConfigMap example (`strategies/configmap`) and its stricter second version
//! (`strategies/configmap-strict`) run on the objects of `tests/data/module-cli/`.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{json, Value};
use strategy_artifacts::{CONFIGMAP, CONFIGMAP_STRICT, OWNER_LABEL, OWNER_LABEL_STRICT};
use strategy_host_e2e::{host_binary, shared_module_cache};

/// What a run of the binary printed, and how it ended.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("{e}: not JSON:\n{}\n{}", self.stdout, self.stderr))
    }
}

/// Runs `strategy-host module ARGS` in the test data directory (so sources print as file names).
fn module(args: &[&str]) -> Run {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/module-cli");
    let out = Command::new(host_binary().unwrap())
        .arg("module")
        .args(args)
        .current_dir(dir)
        // The Go modules take seconds to compile: share the compiled code across runs.
        .env("STRATEGY_HOST_MODULE_CACHE_DIR", shared_module_cache())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The result of `phase` for the object named `object` in a `module test -o json` report.
fn result<'a>(report: &'a Value, object: &str, phase: &str) -> &'a Value {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["object"] == object && r["phase"] == phase)
        .unwrap_or_else(|| panic!("no {phase} of {object} in {report:#}"))
}

#[test]
fn test_reports_rejections_defaults_warnings_and_traps_as_json() {
    let run = module(&[
        "test",
        CONFIGMAP_STRICT,
        "configmaps.yaml",
        "many-keys.json",
        "panic.yaml",
        "--update",
        "immutable-old.yaml",
        "immutable-new.yaml",
        "-o",
        "json",
    ]);
    assert_eq!(run.code, Some(0), "rejections still exit 0: {}", run.stderr);
    let report = run.json();
    // 5 objects × 3 phases + one update from another object.
    assert_eq!(report["results"].as_array().unwrap().len(), 16);

    let legacy = result(&report, "ConfigMap/default/legacy", "create");
    assert_eq!(legacy["outcome"], "rejected");
    assert_eq!(legacy["source"], "configmaps.yaml#2");
    assert_eq!(
        legacy["causes"],
        json!([
            r#"data[legacy-x]: Invalid value: "legacy-x": legacy- keys are no longer accepted"#
        ])
    );
    assert_eq!(
        legacy["fieldErrors"],
        json!([{"type": "FieldValueInvalid", "field": "data[legacy-x]", "message": "Invalid value: \"legacy-x\": legacy- keys are no longer accepted"}])
    );

    let plain = result(&report, "ConfigMap/default/plain", "create");
    assert_eq!(plain["outcome"], "admitted");
    assert_eq!(
        plain["patch"],
        json!([{"op": "add", "path": "/metadata/labels", "value": {"example.com/policy": "strict"}}])
    );
    // The label is defaulted on create only, and a delete has no object after it.
    assert_eq!(
        result(&report, "ConfigMap/default/plain", "update")["patch"],
        json!([])
    );
    assert!(result(&report, "ConfigMap/default/plain", "delete")
        .get("patch")
        .is_none());
    // Already labelled: nothing to default.
    assert_eq!(
        result(&report, "ConfigMap/default/labelled", "create")["patch"],
        json!([])
    );

    let many = result(&report, "ConfigMap/default/many", "create");
    assert_eq!(
        (&many["outcome"], &many["source"]),
        (&json!("admitted"), &json!("many-keys.json"))
    );
    assert_eq!(
        many["warnings"],
        json!(["the ConfigMap has 9 data keys; more than 8 are hard to review"])
    );

    // The trap fails that call only: the object's delete and every later object still run.
    let boom = result(&report, "ConfigMap/default/boom", "create");
    assert_eq!(boom["outcome"], "failed");
    let failure = boom["failure"].as_str().unwrap();
    assert!(failure.contains("trap"), "{failure}");
    assert_eq!(
        result(&report, "ConfigMap/default/boom", "delete")["outcome"],
        "admitted"
    );
    let frozen = result(
        &report,
        "ConfigMap/default/frozen",
        "update from immutable-old.yaml",
    );
    assert_eq!(
        frozen["causes"],
        json!(["data: Forbidden: field is immutable when `immutable` is set"])
    );
    // The module's own panic message reaches the author on stderr.
    assert!(
        run.stderr
            .contains("the `panic` data key asks this test program to trap"),
        "{}",
        run.stderr
    );
}

#[test]
fn test_prints_a_table_by_default() {
    let run = module(&["test", CONFIGMAP_STRICT, "configmaps.yaml", "panic.yaml"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    let words = |line: &str| line.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(words(lines[0]), "OBJECT PHASE OUTCOME DETAILS");
    let rows: Vec<String> = lines.iter().map(|l| words(l)).collect();
    for expected in [
        r#"ConfigMap/default/plain create admitted add /metadata/labels = {"example.com/policy":"strict"}"#,
        "ConfigMap/default/plain update admitted",
        "ConfigMap/default/plain delete admitted",
        r#"ConfigMap/default/legacy create rejected data[legacy-x]: Invalid value: "legacy-x": legacy- keys are no longer accepted"#,
        r#"ConfigMap/default/legacy update rejected data[legacy-x]: Invalid value: "legacy-x": legacy- keys are no longer accepted"#,
        "ConfigMap/default/labelled create admitted",
        "ConfigMap/default/boom create failed failure: call trapped: wasm trap: wasm `unreachable` instruction executed",
        "12 phases: 8 admitted, 2 rejected, 2 failed",
    ] {
        assert!(rows.iter().any(|r| r == expected), "no row {expected:?} in\n{}", run.stdout);
    }
    // A rejected create still shows what the strategy defaulted, on a continuation line.
    let legacy = rows
        .iter()
        .position(|r| r.starts_with("ConfigMap/default/legacy create"))
        .unwrap();
    assert_eq!(
        rows[legacy + 1],
        r#"add /metadata/labels = {"example.com/policy":"strict"}"#
    );
}

#[test]
fn diff_lists_where_the_new_version_differs_and_exits_1() {
    let run = module(&[
        "diff",
        CONFIGMAP,
        CONFIGMAP_STRICT,
        "configmaps.yaml",
        "many-keys.json",
        "panic.yaml",
        "-o",
        "json",
    ]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let report = run.json();
    let found: Vec<(String, String, String)> = report["differences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let s = |k: &str| d[k].as_str().unwrap().to_owned();
            (s("object"), s("phase"), s("difference"))
        })
        .collect();
    let expected: Vec<(String, String, String)> = [
        ("plain", "create", "changes"),
        ("legacy", "create", "rejects"),
        ("legacy", "update", "rejects"),
        ("many", "create", "warnings"),
        ("many", "update", "warnings"),
        ("boom", "create", "fails"),
        ("boom", "update", "fails"),
    ]
    .iter()
    .map(|(o, p, d)| {
        (
            format!("ConfigMap/default/{o}"),
            p.to_string(),
            d.to_string(),
        )
    })
    .collect();
    assert_eq!(found, expected);
    let differences = report["differences"].as_array().unwrap();
    assert_eq!(
        differences[0]["detail"],
        json!({"patch": [{"op": "add", "path": "/metadata/labels", "value": {"example.com/policy": "strict"}}]})
    );
    assert_eq!(
        differences[1]["detail"],
        json!({"causes": [r#"data[legacy-x]: Invalid value: "legacy-x": legacy- keys are no longer accepted"#]})
    );

    // The table says the same for people.
    let table = module(&["diff", CONFIGMAP, CONFIGMAP_STRICT, "configmaps.yaml"]);
    assert_eq!(table.code, Some(1), "{}", table.stderr);
    assert!(
        table.stdout.lines().any(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")
            == r#"ConfigMap/default/legacy create rejects new: data[legacy-x]: Invalid value: "legacy-x": legacy- keys are no longer accepted"#),
        "{}",
        table.stdout
    );
    assert!(
        table.stdout.contains("3 of 9 phases differ"),
        "{}",
        table.stdout
    );
}

#[test]
fn diff_of_a_module_with_itself_agrees_and_exits_0() {
    let run = module(&[
        "diff",
        CONFIGMAP_STRICT,
        CONFIGMAP_STRICT,
        "configmaps.yaml",
        "many-keys.json",
        "panic.yaml",
    ]);
    // Both versions trap on the `panic` object: the same failure is no difference.
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("agree on all 15 phases"),
        "{}",
        run.stdout
    );
    let json = module(&[
        "diff",
        CONFIGMAP,
        CONFIGMAP,
        "configmaps.yaml",
        "-o",
        "json",
    ]);
    assert_eq!(json.code, Some(0));
    assert_eq!(json.json()["differences"], json!([]));
}

#[test]
fn unreadable_inputs_exit_2_with_a_clear_message() {
    let missing = module(&["test", CONFIGMAP, "no-such-file.yaml"]);
    assert_eq!(missing.code, Some(2));
    assert!(missing.stdout.is_empty(), "{}", missing.stdout);
    assert!(
        missing
            .stderr
            .contains("error: cannot read no-such-file.yaml: No such file"),
        "{}",
        missing.stderr
    );

    let diff = module(&["diff", CONFIGMAP, "no-such.wasm", "configmaps.yaml"]);
    assert_eq!(diff.code, Some(2), "diff(1)'s trouble status");
    assert!(
        diff.stderr.contains("cannot read no-such.wasm"),
        "{}",
        diff.stderr
    );

    let not_wasm = module(&["test", "configmaps.yaml", "configmaps.yaml"]);
    assert_eq!(not_wasm.code, Some(2));
    assert!(
        not_wasm
            .stderr
            .contains("error: cannot load module configmaps.yaml:"),
        "{}",
        not_wasm.stderr
    );

    let other_kind = module(&["test", CONFIGMAP, "deployment.yaml"]);
    assert_eq!(other_kind.code, Some(2));
    assert!(
        other_kind.stderr.contains(
            "does not declare apps.example.com/v1 Deployment (the kind of deployment.yaml); it declares: example.com/v1 ConfigMap"
        ),
        "{}",
        other_kind.stderr
    );
}

#[test]
fn test_and_diff_judge_objects_with_an_admission_policy_module() {
    let run = module(&["test", OWNER_LABEL, "configmaps.yaml", "-o", "json"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let report = run.json();
    // The example ConfigMaps carry no owner label: each create and update is refused.
    let plain = result(&report, "ConfigMap/default/plain", "create");
    assert_eq!(plain["outcome"], "rejected", "{report:#}");
    assert_eq!(
        plain["fieldErrors"],
        json!([{"type": "FieldValueRequired", "field": "metadata.labels[owner]",
                "message": "Required value: every namespaced object outside kube-system names its owner"}])
    );
    // The policy is not asked about deletes.
    assert_eq!(
        result(&report, "ConfigMap/default/plain", "delete")["outcome"],
        "admitted"
    );
    // Both versions refuse the same objects for the same cause: no difference.
    let diff = module(&["diff", OWNER_LABEL, OWNER_LABEL_STRICT, "configmaps.yaml"]);
    assert_eq!(diff.code, Some(0), "{}{}", diff.stdout, diff.stderr);
}

#[test]
fn the_go_port_of_the_deployment_strategy_answers_as_the_rust_one() {
    // `module diff` across languages, on a corpus with every field error the strategy reports,
    // its defaults, unknown fields, numbers past 2^53, escapes, and updates.
    let run = module(&[
        "diff",
        strategy_artifacts::DEPLOYMENT,
        strategy_artifacts::GO_DEPLOYMENT,
        "deployments.yaml",
        "--update",
        "deployments-old.yaml",
        "deployments-new.yaml",
        "-o",
        "json",
    ]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let report = run.json();
    assert_eq!(report["differences"], json!([]), "{report:#}");
    let table = module(&[
        "diff",
        strategy_artifacts::DEPLOYMENT,
        strategy_artifacts::GO_DEPLOYMENT,
        "deployments.yaml",
        "--update",
        "deployments-old.yaml",
        "deployments-new.yaml",
    ]);
    // 17 objects (create, update, delete each) and 3 updates.
    assert!(
        table.stdout.contains("agree on all 54 phases"),
        "{}",
        table.stdout
    );

    // The corpus exercises what it claims: rejections and defaults, which both modules share.
    let test = module(&[
        "test",
        strategy_artifacts::GO_DEPLOYMENT,
        "deployments.yaml",
        "-o",
        "json",
    ]);
    assert_eq!(test.code, Some(0), "{}", test.stderr);
    let report = test.json();
    let negative = result(&report, "Deployment/default/negative", "create");
    assert_eq!(negative["outcome"], "rejected", "{report:#}");
    assert_eq!(
        negative["causes"],
        json!(["spec.replicas: Invalid value: -2: must be greater than or equal to 0"])
    );
    assert_eq!(
        result(&report, "Deployment/default/minimal", "create")["outcome"],
        "admitted"
    );
    // Bad values shown as kube-apiserver shows them, objects as JSON and nothing as null.
    assert_eq!(
        result(&report, "Deployment/default/object-replicas", "create")["causes"],
        json!([
            r#"spec.replicas: Invalid value: {"big":1000000.0,"l":[true,null],"n":1.5,"s":"<&>"}: must be an integer"#
        ])
    );
    assert_eq!(
        result(&report, "Deployment/default/mismatched-unlabelled", "create")["causes"],
        json!(["spec.template.metadata.labels: Invalid value: null: `selector` does not match template `labels`"])
    );
    assert_eq!(
        result(&report, "Deployment/default/unknown-strategy", "create")["causes"],
        json!([
            r#"spec.strategy.type: Unsupported value: "BlueGreen": supported values: "Recreate", "RollingUpdate""#
        ])
    );
}
