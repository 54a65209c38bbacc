//! The example strategies of `strategies/`, built to wasm, served through the registry's
//! `Strategy` trait by the runtime.

use crate::wasm_common::*;
use serde_json::json;
use strategy_host::strategy::{FieldErrorKind, Strategy, StrategyContext};
use strategy_host::wasm::WasmStrategy;
use strategy_host::wasm_runtime::{ApplyRefusal, GroupKind, Runtime};

fn deployment() -> serde_json::Value {
    json!({
        "apiVersion": "apps.example.com/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
        },
        "status": {"readyReplicas": 3}
    })
}

/// The ConfigMap module's strategy, and the context of a ConfigMap write.
fn configmaps() -> (WasmStrategy, StrategyContext) {
    let s = strategy(&runtime(), strategy_artifacts::CONFIGMAP);
    (s, ctx("example.com", "ConfigMap", "configmaps", true))
}

#[tokio::test]
async fn deployment_defaults_validation_and_immutability() {
    let rt = runtime();
    let module = load(&rt, strategy_artifacts::DEPLOYMENT);
    assert_eq!(module.name(), "deployments");
    let s = WasmStrategy::new(rt.clone(), module);
    let ctx = deployments_ctx();

    let mut obj = deployment();
    let adm = s.before_create(&ctx, &mut obj).await.unwrap();
    assert!(adm.field_errors.is_empty(), "{adm:?}");
    assert_eq!(obj["spec"]["replicas"], 1);
    assert_eq!(obj["spec"]["strategy"]["type"], "RollingUpdate");
    assert!(obj.get("status").is_none(), "status cleared on create");
    assert_eq!(
        obj["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx"
    );

    let mut bad = deployment();
    bad["spec"]["replicas"] = json!(-2);
    bad["spec"]["template"]["metadata"]["labels"]["app"] = json!("other");
    let adm = s.before_create(&ctx, &mut bad).await.unwrap();
    let errs: Vec<_> = adm
        .field_errors
        .iter()
        .map(|e| (e.kind, e.field.as_str()))
        .collect();
    assert_eq!(
        errs,
        [
            (FieldErrorKind::Invalid, "spec.replicas"),
            (FieldErrorKind::Invalid, "spec.template.metadata.labels")
        ]
    );

    let mut old = obj.clone();
    old["status"] = json!({"readyReplicas": 1});
    let mut new = old.clone();
    new["status"] = json!({"readyReplicas": 50});
    new["spec"]["replicas"] = json!(4);
    let adm = s.before_update(&ctx, &mut new, &old).await.unwrap();
    assert!(adm.field_errors.is_empty(), "{adm:?}");
    assert_eq!(
        new["status"],
        json!({"readyReplicas": 1}),
        "status kept on main-resource update"
    );
    assert_eq!(new["spec"]["replicas"], 4);

    new["spec"]["selector"]["matchLabels"]["tier"] = json!("fe");
    let adm = s.before_update(&ctx, &mut new, &old).await.unwrap();
    assert!(adm
        .field_errors
        .iter()
        .any(|e| e.field == "spec.selector" && e.detail.ends_with(": field is immutable")));
    assert!(!s.allow_create_on_update());
    assert!(s.allow_unconditional_update());
    assert_eq!(rt.metrics().module("deployments").calls(), 4);
    assert_eq!(rt.metrics().module("deployments").total_failures(), 0);
}

#[tokio::test]
async fn a_wrongly_typed_object_is_a_strategy_error_not_a_crash() {
    // A typed strategy (the ConfigMap's serde struct) cannot decode it at all.
    let (s, ctx) = configmaps();
    let mut obj = json!({"metadata": {"name": "c"}, "data": "not an object"});
    let err = s.before_create(&ctx, &mut obj).await.unwrap_err();
    assert_eq!(err.module, "configmaps");
    assert!(err.reason.contains("did not decode"), "{err}");
    let mut good = json!({"metadata": {"name": "c"}, "data": {"a": "b"}});
    assert!(s.before_create(&ctx, &mut good).await.is_ok());
}

#[tokio::test]
async fn a_lazy_strategy_answers_only_its_changes_and_words_wrong_types_as_field_errors() {
    let rt = runtime();
    let s = strategy(&rt, strategy_artifacts::DEPLOYMENT);
    // Members the strategy never reads stay as they were, whatever their type.
    let mut obj = deployment();
    obj["metadata"]["annotations"] = json!({"a": "b"});
    obj["spec"]["template"]["spec"] = json!({"containers": [{"name": "c", "image": "i"}]});
    obj["status"] = json!({"readyReplicas": 3});
    let mut expected = obj.clone();
    let adm = s.before_create(&deployments_ctx(), &mut obj).await.unwrap();
    assert!(adm.field_errors.is_empty(), "{:?}", adm.field_errors);
    expected.as_object_mut().unwrap().remove("status");
    let spec = expected["spec"].as_object_mut().unwrap();
    spec.insert("replicas".into(), json!(1));
    spec.insert("revisionHistoryLimit".into(), json!(10));
    spec.insert("progressDeadlineSeconds".into(), json!(600));
    spec.insert(
        "strategy".into(),
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}),
    );
    assert_eq!(obj, expected);

    // A wrongly typed member it reads is a field error, not a failed call.
    let mut obj = json!({"metadata": "not an object", "spec": "nor this"});
    let adm = s.before_create(&deployments_ctx(), &mut obj).await.unwrap();
    let causes: Vec<_> = adm
        .field_errors
        .iter()
        .map(|e| (e.field.as_str(), e.detail.as_str()))
        .collect();
    assert_eq!(causes, [("spec", r#""nor this": must be an object"#)]);
    assert_eq!(
        obj,
        json!({"metadata": "not an object", "spec": "nor this"})
    );
    assert_eq!(rt.metrics().module("deployments").total_failures(), 0);
}

#[tokio::test]
async fn configmap_keys_size_and_immutability() {
    let (s, ctx) = configmaps();
    let mut ok = json!({"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a.conf": "x"}, "immutable": true});
    let errors = s.before_create(&ctx, &mut ok).await.unwrap().field_errors;
    assert!(errors.is_empty(), "{errors:?}");

    let mut bad = json!({"data": {"bad/key": "x", "big": "y".repeat(1 << 20)}});
    let errs = s.before_create(&ctx, &mut bad).await.unwrap().field_errors;
    let kinds: Vec<_> = errs.iter().map(|e| (e.kind, e.field.as_str())).collect();
    assert_eq!(
        kinds,
        [
            (FieldErrorKind::Invalid, "data[bad/key]"),
            (FieldErrorKind::TooLong, "")
        ]
    );
    assert_eq!(
        errs[1].to_string(),
        "Too long: may not be more than 1048576 bytes",
        "the whole object's limit, on no field, as kube-apiserver words it"
    );

    let mut changed = ok.clone();
    changed["data"]["a.conf"] = json!("z");
    let errs = s
        .before_update(&ctx, &mut changed, &ok)
        .await
        .unwrap()
        .field_errors;
    assert_eq!(errs.len(), 1);
    assert_eq!(
        (errs[0].kind, errs[0].field.as_str()),
        (FieldErrorKind::Forbidden, "data")
    );
}

/// A strategy crate that reuses another as a library (the strict ConfigMap links the example's
/// rules) is a module of its own: built in the same cargo invocation as the example, it answers
/// with its rules and the example's, and the example with the example's alone.
#[tokio::test]
async fn a_strategy_linking_another_as_a_library_serves_its_own_rules() {
    let rt = runtime();
    let ctx = ctx("example.com", "ConfigMap", "configmaps", true);
    let legacy = json!({"metadata": {"name": "c"}, "data": {"legacy-x": "1", "bad/key": "2"}});
    let strict = ["data[bad/key]", "data[legacy-x]"];
    for (module, want) in [
        (strategy_artifacts::CONFIGMAP, &strict[..1]),
        (strategy_artifacts::CONFIGMAP_STRICT, &strict[..]),
    ] {
        let s = strategy(&rt, module);
        let mut obj = legacy.clone();
        let errs = s.before_create(&ctx, &mut obj).await.unwrap().field_errors;
        let fields: Vec<_> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, want, "{module}");
    }
    // The built-in kinds link the same library and export their own manifest.
    assert_eq!(load(&rt, strategy_artifacts::BUILTIN).name(), "builtin");
}

/// Records what the Project hook applies; it reads no object (its namespace is not there yet).
#[derive(Default)]
struct Recorder(std::sync::Mutex<Vec<(u32, serde_json::Value)>>);

/// A runtime whose host API is a [`Recorder`], and the recorder.
fn recording() -> (Runtime, std::sync::Arc<Recorder>) {
    let rt = runtime();
    let recorder = std::sync::Arc::new(Recorder::default());
    rt.set_host_api(recorder.clone());
    (rt, recorder)
}

impl strategy_host::wasm_runtime::HostApi for Recorder {
    fn get(
        &self,
        _: &strategy_host::wasm_runtime::CallerInfo,
        _: strategy_host::wasm_runtime::Collection<'_>,
        _: &str,
    ) -> Result<Option<serde_json::Value>, strategy_host::wasm_runtime::HostCallError> {
        Ok(None)
    }
    fn apply(
        &self,
        _caller: &strategy_host::wasm_runtime::CallerInfo,
        depth: u32,
        object: serde_json::Value,
    ) -> Result<serde_json::Value, strategy_host::wasm_runtime::HostCallError> {
        self.0.lock().unwrap().push((depth, object.clone()));
        Ok(object)
    }
}

#[tokio::test]
async fn project_hooks_make_the_namespace_apply_a_quota_and_audit_deletes() {
    let (rt, recorder) = recording();
    let s = strategy(&rt, strategy_artifacts::PROJECT);
    let ctx = ctx("example.com", "Project", "projects", false);
    let mut project =
        json!({"apiVersion": "example.com/v1", "kind": "Project", "metadata": {"name": "team-a"}});
    let errors = s
        .before_create(&ctx, &mut project)
        .await
        .unwrap()
        .field_errors;
    assert!(errors.is_empty(), "{errors:?}");
    let errors = s
        .before_update(&ctx, &mut project.clone(), &project)
        .await
        .unwrap()
        .field_errors;
    assert!(errors.is_empty(), "{errors:?}");

    s.after_create(&ctx, &project).await.unwrap();
    let applied = std::mem::take(&mut *recorder.0.lock().unwrap());
    let kinds: Vec<_> = applied
        .iter()
        .map(|(depth, o)| (*depth, o["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [(1, "Namespace"), (1, "Quota")],
        "the project's namespace first, then its Quota, each a nested write at hook depth 1"
    );
    assert_eq!(applied[0].1["metadata"]["name"], "team-a");
    assert_eq!(applied[1].1["metadata"]["namespace"], "team-a");

    // At the depth limit, apply is refused and the hook fails (counted; the write would stand).
    let deep = strategy_host::strategy::StrategyContext {
        hook_depth: 3,
        ..ctx.clone()
    };
    let err = s.after_create(&deep, &project).await.unwrap_err();
    assert!(err.reason.contains("nested"), "{err}");
    let counters = rt.metrics().module("projects");
    assert_eq!(counters.hook_failures(), 1);
    assert_eq!(counters.apply_refused(ApplyRefusal::Depth), 1);
    assert!(recorder.0.lock().unwrap().is_empty());

    s.after_delete(&ctx, &project).await.unwrap();
    s.after_update(&ctx, &project, &project).await.unwrap(); // not implemented: no call
    let metrics = rt.metrics().render();
    assert!(metrics.contains("strategy_hook_failures_total{module=\"projects\"} 1"));
    assert!(
        metrics.contains("strategy_apply_refused_total{module=\"projects\",reason=\"depth\"} 1"),
        "{metrics}"
    );
}

/// The Project module (built with this SDK, ABI 1.1) is told who asks: it stamps the creator
/// on create, over whatever the client sent, and keeps it on every later update.
#[tokio::test]
async fn the_project_module_stamps_the_user_it_is_told_as_creator() {
    let rt = runtime();
    let s = strategy(&rt, strategy_artifacts::PROJECT);
    let as_user = |username: &str| strategy_host::strategy::StrategyContext {
        user: std::sync::Arc::new(strategy_host::user::UserInfo {
            username: username.into(),
            uid: format!("uid-{username}"),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        }),
        ..ctx("example.com", "Project", "projects", false)
    };
    let created_by =
        |o: &serde_json::Value| o["metadata"]["annotations"]["example.com/created-by"].clone();

    let mut project = json!({"apiVersion": "example.com/v1", "kind": "Project",
        "metadata": {"name": "team-a", "annotations": {"example.com/created-by": "mallory"}}});
    let admission = s
        .before_create(&as_user("alice"), &mut project)
        .await
        .unwrap();
    assert!(admission.field_errors.is_empty(), "{admission:?}");
    assert_eq!(created_by(&project), "alice");

    let mut update = json!({"apiVersion": "example.com/v1", "kind": "Project",
        "metadata": {"name": "team-a", "annotations": {"example.com/created-by": "bob"}}});
    s.before_update(&as_user("bob"), &mut update, &project)
        .await
        .unwrap();
    assert_eq!(created_by(&update), "alice", "{update}");
}

#[tokio::test]
async fn a_hook_applies_only_the_resources_its_manifest_declares() {
    let (rt, recorder) = recording();
    let module = load(&rt, strategy_artifacts::REPLICATOR);
    let declared = GroupKind {
        group: "test.example.com".into(),
        kind: "Replicator".into(),
    };
    assert_eq!(module.manifest().applies(), [declared]);
    let s = WasmStrategy::new(rt.clone(), module);
    let ctx = ctx("test.example.com", "Replicator", "replicators", false);

    // Its own kind is declared: the nested write goes through.
    let first = json!({"apiVersion": "test.example.com/v1", "kind": "Replicator", "metadata": {"name": "r"}, "spec": {}});
    s.after_create(&ctx, &first).await.unwrap();
    let applied = std::mem::take(&mut *recorder.0.lock().unwrap());
    assert_eq!(applied.len(), 1);
    assert_eq!(applied[0].1["metadata"]["name"], "r-1");

    // A core Namespace and a Quota of another group are not: refused before the host sees them.
    for (object, named) in [
        (
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}),
            "v1/Namespace",
        ),
        (
            json!({"apiVersion": "example.com/v1", "kind": "Replicator", "metadata": {"name": "x"}}),
            "example.com/v1/Replicator",
        ),
    ] {
        let mut obj = first.clone();
        obj["spec"]["apply"] = object;
        let err = s.after_create(&ctx, &obj).await.unwrap_err();
        assert!(
            err.reason.contains(&format!(
                "apply refused: module \"replicators\" does not declare {named} among the resources its hooks apply"
            )),
            "{err}"
        );
    }
    assert!(
        recorder.0.lock().unwrap().is_empty(),
        "nothing undeclared reached the host"
    );
    let counters = rt.metrics().module("replicators");
    assert_eq!(counters.apply_refused(ApplyRefusal::Undeclared), 2);
    assert_eq!(counters.apply_refused(ApplyRefusal::Depth), 0);
    assert!(rt
        .metrics()
        .render()
        .contains("strategy_apply_refused_total{module=\"replicators\",reason=\"undeclared\"} 2"));
}
