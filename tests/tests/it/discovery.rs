//! End-to-end: aggregated discovery (`apidiscovery.k8s.io/v2`) against the real binary — the
//! documents themselves, and kubectl learning every resource from two requests — and kubectl
//! 1.35 told of a kind the server does not serve as Kubernetes tells it.

use serde_json::Value;
use strategy_host_e2e::{
    call, call_with, kubectl, kubectl_with, latest_kubectl_path, widget_crd, HostProcess,
};

/// What kubectl and client-go send for `/api` and `/apis`.
const CLIENT_GO_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

fn start() -> (HostProcess, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data").display().to_string();
    let host = HostProcess::start(&["--data-dir", data.as_str()]).unwrap();
    let crds = host.url("/apis/apiextensions.k8s.io/v1/customresourcedefinitions");
    assert_eq!(call("POST", &crds, Some(&widget_crd())).unwrap().code, 201);
    (host, dir)
}

fn group<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("group {name:?} in {doc}"))
}

#[test]
fn aggregated_discovery_describes_every_group_in_one_document() {
    let (host, _dir) = start();
    let r = call_with(
        "GET",
        &host.url("/apis"),
        None,
        &[("Accept", CLIENT_GO_ACCEPT)],
    )
    .unwrap();
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(
        r.content_type,
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    let doc = r.json();
    assert_eq!(doc["kind"], "APIGroupDiscoveryList");
    assert_eq!(doc["apiVersion"], "apidiscovery.k8s.io/v2");
    let widgets = &group(&doc, "example.com")["versions"][0];
    assert_eq!(widgets["version"], "v1");
    assert_eq!(widgets["freshness"], "Current");
    let w = &widgets["resources"][0];
    assert_eq!(w["resource"], "widgets");
    assert_eq!(w["scope"], "Namespaced");
    assert_eq!(w["singularResource"], "widget");
    assert_eq!(w["responseKind"]["kind"], "Widget");
    assert_eq!(w["shortNames"][0], "wd");
    assert_eq!(w["subresources"][0]["subresource"], "status");
    assert!(
        group(&doc, "apiextensions.k8s.io")["versions"][0]["resources"][0]["resource"]
            .as_str()
            .is_some_and(|r| r == "customresourcedefinitions")
    );

    let core = call_with(
        "GET",
        &host.url("/api"),
        None,
        &[("Accept", CLIENT_GO_ACCEPT)],
    )
    .unwrap()
    .json();
    let v1 = &group(&core, "")["versions"][0];
    assert_eq!(v1["version"], "v1");
    let core_names: Vec<&str> = v1["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["resource"].as_str())
        .collect();
    assert_eq!(
        core_names,
        [
            "configmaps",
            "endpoints",
            "events",
            "namespaces",
            "resourcequotas",
            "secrets",
            "serviceaccounts",
            "services"
        ]
    );
    for g in ["coordination.k8s.io", "events.k8s.io"] {
        assert!(
            group(&doc, g)["versions"][0]["resources"][0]["resource"]
                .as_str()
                .is_some_and(|r| r == "leases" || r == "events"),
            "{g}"
        );
    }

    // Plain discovery stays for clients that ask for plain JSON.
    let plain = call_with(
        "GET",
        &host.url("/apis"),
        None,
        &[("Accept", "application/json")],
    )
    .unwrap();
    assert_eq!(plain.json()["kind"], "APIGroupList");
    assert_eq!(plain.content_type, "application/json");
}

#[test]
fn kubectl_discovers_everything_from_two_requests() {
    let (host, dir) = start();
    let (ok, stdout, stderr) =
        kubectl(&host.url(""), dir.path(), &["api-resources", "-v=6"], None).unwrap();
    assert!(ok, "{stderr}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("widgets ") && l.contains("example.com/v1")),
        "{stdout}"
    );
    let gets: Vec<&str> = stderr.lines().filter(|l| l.contains("GET http")).collect();
    assert_eq!(
        gets.len(),
        2,
        "aggregated discovery: /api and /apis only, no request per group version: {gets:#?}"
    );
}

/// A manifest of kinds the server does not serve, beside one it does.
const UNSERVED_KINDS: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: guard}
webhooks: []
";

#[test]
fn kubectl_1_35_reports_an_unserved_kind_as_kubernetes_does() {
    let (host, dir) = start();
    // kubectl asks /openapi/v2 for its protobuf form only, and gets it; curl gets JSON.
    let v2 = call_with(
        "GET",
        &host.url("/openapi/v2"),
        None,
        &[(
            "Accept",
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
        )],
    )
    .unwrap();
    assert_eq!(v2.code, 200);
    assert_eq!(
        v2.content_type,
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    );
    let json = call("GET", &host.url("/openapi/v2"), None).unwrap();
    assert_eq!(json.json()["swagger"], "2.0");

    let kubectl_1_35 = latest_kubectl_path().unwrap();
    for args in [&["apply", "-f", "-"][..], &["create", "-f", "-"][..]] {
        let (ok, _, stderr) = kubectl_with(
            &kubectl_1_35,
            &host.url(""),
            dir.path(),
            args,
            Some(UNSERVED_KINDS),
        )
        .unwrap();
        assert!(!ok, "kubectl {args:?} succeeded with unserved kinds");
        assert!(
            stderr.contains(r#"no matches for kind "Deployment" in version "apps/v1""#),
            "kubectl {args:?}: {stderr}"
        );
        assert!(
            !stderr.contains("proto:"),
            "kubectl {args:?} failed parsing OpenAPI: {stderr}"
        );
    }
}

/// `/openapi/v2` publishes CRD schemas as kube-apiserver does (Kubernetes' CRD OpenAPI publish
/// specs compare them): a schema preserving unknown fields at its root is a bare object, and
/// elsewhere what Swagger 2 and kubectl cannot hold is dropped — junctors, types of nullable
/// values and of objects preserving unknown fields, nullable properties from `required`.
#[test]
fn openapi_v2_publishes_crd_schemas_in_kube_apiservers_v2_form() {
    let (host, _dir) = start();
    let crd = |plural: &str, kind: &str, schema: serde_json::Value| {
        serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.v2.example.com")},
            "spec": {"group": "v2.example.com", "scope": "Namespaced",
                     "names": {"plural": plural, "kind": kind},
                     "versions": [{"name": "v1", "served": true, "storage": true,
                                   "schema": {"openAPIV3Schema": schema}}]}
        })
    };
    let crds = host.url("/apis/apiextensions.k8s.io/v1/customresourcedefinitions");
    let open = crd(
        "opens",
        "Open",
        serde_json::json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
    );
    let mixed = crd(
        "mixeds",
        "Mixed",
        serde_json::json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "required": ["size", "note"],
            "allOf": [{"required": ["size"]}],
            "properties": {
                "size": {"type": "integer"},
                "note": {"type": "string", "nullable": true},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                         "properties": {"a": {"type": "string"}}},
            }
        }}}),
    );
    for body in [&open, &mixed] {
        assert_eq!(call("POST", &crds, Some(body)).unwrap().code, 201);
    }
    let mut definitions = Value::Null;
    strategy_host_e2e::eventually(
        "both definitions in /openapi/v2",
        std::time::Duration::from_secs(10),
        || {
            let doc = call("GET", &host.url("/openapi/v2"), None).unwrap().json();
            definitions = doc["definitions"].clone();
            definitions.get("com.example.v2.v1.Open").is_some()
                && definitions.get("com.example.v2.v1.Mixed").is_some()
        },
    );
    let open = &definitions["com.example.v2.v1.Open"];
    assert_eq!(open["type"], "object", "{open}");
    assert!(open.get("properties").is_none(), "a bare object: {open}");
    assert!(
        open.get("x-kubernetes-preserve-unknown-fields").is_none(),
        "{open}"
    );
    assert!(open["x-kubernetes-group-version-kind"].is_array(), "{open}");

    let mixed = &definitions["com.example.v2.v1.Mixed"];
    assert!(mixed["properties"]["metadata"].is_object(), "{mixed}");
    let spec = &mixed["properties"]["spec"];
    assert!(spec.get("allOf").is_none(), "{spec}");
    assert_eq!(spec["required"], serde_json::json!(["size"]), "{spec}");
    assert_eq!(spec["properties"]["note"], serde_json::json!({}), "{spec}");
    assert_eq!(
        spec["properties"]["free"],
        serde_json::json!({"x-kubernetes-preserve-unknown-fields": true}),
        "{spec}"
    );
}
