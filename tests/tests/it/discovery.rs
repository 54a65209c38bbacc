//! End-to-end: aggregated discovery (`apidiscovery.k8s.io/v2`) against the real binary — the
//! documents themselves, and kubectl learning every resource from two requests.

use serde_json::Value;
use strategy_host_e2e::{call, call_with, kubectl, widget_crd, HostProcess};

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
            "events",
            "namespaces",
            "secrets",
            "serviceaccounts"
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
