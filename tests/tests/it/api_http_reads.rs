//! End-to-end reads over HTTP against the real binary on the embedded store: tables of a real
//! CRD, paging through a thousand objects, discovery and OpenAPI following the definitions, and
//! watches with bookmarks and timeouts.

use std::time::Duration;

use serde_json::json;
use strategy_host_e2e::{call, call_with, eventually, widget, widget_crd, WatchReader};

use crate::api_http::{start, W};

/// B.6: a Table of a real CRD (Gateway API's HTTPRoute, with its own printer columns): `Name`
/// then the declared columns only, and a list value printed as compact JSON.
#[test]
fn tables_print_declared_columns_as_kubernetes() {
    let (host, _dir) = start(&[]);
    let u = |p: &str| host.url(p);
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "httproutes.gateway.networking.k8s.io"},
        "spec": {"group": "gateway.networking.k8s.io", "scope": "Namespaced",
                 "names": {"plural": "httproutes", "singular": "httproute", "kind": "HTTPRoute", "listKind": "HTTPRouteList", "categories": ["gateway-api"]},
                 "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                               "additionalPrinterColumns": [
                                   {"name": "Hostnames", "type": "string", "jsonPath": ".spec.hostnames"},
                                   {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
                               ],
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    });
    let r = call(
        "POST",
        &u("/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
        Some(&crd),
    )
    .unwrap();
    assert_eq!(r.code, 201, "{}", r.body);
    let routes = "/apis/gateway.networking.k8s.io/v1/namespaces/default/httproutes";
    let route = json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
                       "metadata": {"name": "web"},
                       "spec": {"hostnames": ["example.com"], "parentRefs": [{"name": "gw"}]}});
    let r = call("POST", &u(routes), Some(&route)).unwrap();
    assert_eq!(r.code, 201, "{}", r.body);
    let t = call_with(
        "GET",
        &u(routes),
        None,
        &[(
            "Accept",
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        )],
    )
    .unwrap()
    .json();
    let cols: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(cols, vec!["Name", "Hostnames", "Age"], "{t}");
    let cells = &t["rows"][0]["cells"];
    assert_eq!(cells[0], "web");
    assert_eq!(cells[1], r#"["example.com"]"#, "{t}");
    assert!(cells[2].is_string(), "{t}");
}

#[test]
fn paging_through_a_thousand_objects() {
    let (host, _dir) = start(&[]);
    let base = host.url(W);
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let base = base.clone();
            std::thread::spawn(move || {
                for i in (t..1000).step_by(8) {
                    let r = call("POST", &base, Some(&widget(&format!("w{i:04}"), 1))).unwrap();
                    assert_eq!(r.code, 201, "{}", r.body);
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let mut seen = Vec::new();
    let mut token = String::new();
    let mut list_rv = None;
    let mut pages = 0;
    loop {
        let url = if token.is_empty() {
            format!("{base}?limit=137")
        } else {
            format!("{base}?limit=137&continue={token}")
        };
        let page = call("GET", &url, None).unwrap();
        assert_eq!(page.code, 200, "{}", page.body);
        let page = page.json();
        pages += 1;
        if pages == 2 {
            // A write between pages does not show: every page is at the first page's revision.
            call("POST", &base, Some(&widget("w9999", 1))).unwrap();
        }
        let rv = page["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(*list_rv.get_or_insert(rv.clone()), rv);
        seen.extend(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["metadata"]["name"].as_str().unwrap().to_string()),
        );
        match page["metadata"]["continue"].as_str() {
            Some(c) if !c.is_empty() => token = c.to_string(),
            _ => break,
        }
    }
    assert_eq!(pages, 8);
    assert_eq!(seen.len(), 1000);
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted, seen, "in key order, no duplicates");

    // Whole lists are written item by item in chunks; what arrives is one list all the same,
    // from the cache as it is and consistent.
    for url in [format!("{base}?resourceVersion=0"), base.clone()] {
        let list = call("GET", &url, None).unwrap();
        assert_eq!(list.code, 200, "{}", list.body);
        assert!(list.body.len() > 256 * 1024, "a list of several chunks");
        let list = list.json();
        assert_eq!(list["kind"], "WidgetList");
        assert_eq!(list["apiVersion"], "example.com/v1");
        assert!(
            list["metadata"]["continue"].is_null(),
            "{}",
            list["metadata"]
        );
        let names: Vec<&str> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names.len(), 1001, "{url}");
        assert_eq!(names[..1000], seen[..], "{url}");
        assert_eq!(names[1000], "w9999");
        let first = &list["items"][0];
        assert_eq!(first["kind"], "Widget");
        assert!(first["metadata"]["resourceVersion"].as_str().is_some());
    }
}

#[test]
fn discovery_openapi_and_tables_follow_definitions() {
    let (host, _dir) = start(&[]);
    let u = |p: &str| host.url(p);
    let groups = call("GET", &u("/apis"), None).unwrap().json();
    assert!(groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g["name"] == "example.com"));
    // kubectl's Accept header gets aggregated discovery (tests/discovery.rs covers it);
    // the plain documents stay for clients that list plain JSON first.
    let r = call_with(
        "GET",
        &u("/apis"),
        None,
        &[(
            "Accept",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
        )],
    )
    .unwrap();
    assert_eq!(r.json()["kind"], "APIGroupDiscoveryList");
    let r = call_with(
        "GET",
        &u("/apis"),
        None,
        &[(
            "Accept",
            "application/json,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        )],
    )
    .unwrap();
    assert_eq!(r.json()["kind"], "APIGroupList");
    assert_eq!(
        call("GET", &u("/api"), None).unwrap().json()["versions"][0],
        "v1"
    );
    let list = call("GET", &u("/apis/example.com/v1"), None)
        .unwrap()
        .json();
    let res = &list["resources"][0];
    assert_eq!(
        (
            res["name"].as_str(),
            res["kind"].as_str(),
            res["namespaced"].as_bool()
        ),
        (Some("widgets"), Some("Widget"), Some(true))
    );
    assert_eq!(res["shortNames"][0], "wd");
    assert_eq!(res["singularName"], "widget");
    assert!(res["verbs"].as_array().unwrap().contains(&json!("watch")));
    assert_eq!(list["resources"][1]["name"], "widgets/status");
    let core = call("GET", &u("/api/v1"), None).unwrap().json();
    let core_names: Vec<&str> = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    for builtin in [
        "configmaps",
        "events",
        "namespaces",
        "secrets",
        "serviceaccounts",
    ] {
        assert!(core_names.contains(&builtin), "{core_names:?}");
    }
    // OpenAPI v3 has the resource with its GVK and advertises fieldValidation on PATCH.
    let index = call("GET", &u("/openapi/v3"), None).unwrap().json();
    let gv_url = index["paths"]["apis/example.com/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_string();
    let doc = call("GET", &u(&gv_url), None).unwrap().json();
    let schema = &doc["components"]["schemas"]["com.example.v1.Widget"];
    assert_eq!(
        schema["x-kubernetes-group-version-kind"][0]["kind"],
        "Widget"
    );
    assert_eq!(
        schema["properties"]["spec"]["properties"]["size"]["type"],
        "integer"
    );
    let patch =
        &doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"];
    assert!(patch["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["name"] == "fieldValidation"));
    let v2 = call("GET", &u("/openapi/v2"), None).unwrap().json();
    assert!(v2["definitions"]["com.example.v1.Widget"].is_object());
    // Tables.
    call("POST", &u(W), Some(&widget("t", 3))).unwrap();
    let t = call_with(
        "GET",
        &u(W),
        None,
        &[(
            "Accept",
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        )],
    )
    .unwrap()
    .json();
    assert_eq!(t["kind"], "Table");
    let cols: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    // The CRD declares its columns, so Kubernetes adds no Age column.
    assert_eq!(cols, vec!["Name", "Size"]);
    assert_eq!(t["rows"][0]["cells"][0], "t");
    assert_eq!(t["rows"][0]["cells"][1], 3);
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    // A second definition is served at once and leaves discovery when deleted.
    let mut gadgets = widget_crd();
    gadgets["metadata"]["name"] = json!("gadgets.tools.example.org");
    gadgets["spec"]["group"] = json!("tools.example.org");
    gadgets["spec"]["scope"] = json!("Cluster");
    gadgets["spec"]["names"] = json!({"plural": "gadgets", "kind": "Gadget"});
    let crd = call(
        "POST",
        &u("/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
        Some(&gadgets),
    )
    .unwrap()
    .json();
    let conditions = crd["status"]["conditions"].as_array().unwrap();
    assert!(
        conditions
            .iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True"),
        "{crd}"
    );
    let mut g = widget("g1", 1);
    g["apiVersion"] = json!("tools.example.org/v1");
    g["kind"] = json!("Gadget");
    let r = call("POST", &u("/apis/tools.example.org/v1/gadgets"), Some(&g)).unwrap();
    assert_eq!(r.code, 201, "{}", r.body);
    assert!(r.json()["metadata"].get("namespace").is_none());
    assert!(
        call("GET", &u("/apis/tools.example.org/v1"), None)
            .unwrap()
            .code
            == 200
    );
    assert_eq!(
        call(
            "DELETE",
            &u("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.tools.example.org"),
            None
        )
        .unwrap()
        .code,
        200
    );
    // The definition goes once the cleanup controller has deleted its objects, as in
    // Kubernetes; its group goes with it.
    strategy_host_e2e::eventually("the definition removed", Duration::from_secs(10), || {
        call("GET", &u("/apis/tools.example.org/v1"), None)
            .unwrap()
            .code
            == 404
    });
    assert_eq!(
        call("GET", &u("/apis/tools.example.org/v1/gadgets"), None)
            .unwrap()
            .code,
        404
    );
    assert!(!call("GET", &u("/apis"), None)
        .unwrap()
        .body
        .contains("tools.example.org"));
}

#[test]
fn watches_stream_events_bookmarks_and_end_on_timeout() {
    let (host, _dir) = start(&[]);
    let u = |p: &str| host.url(p);
    // A list answered before the new resource's watch cache took its own first list comes from
    // the store, at a revision the cache's window starts after: a watch from it is 410 Gone, as
    // in Kubernetes (a reflector would list again). So the list waits for the cache.
    let cache_revision = || {
        let metrics = call("GET", &u("/metrics"), None).unwrap().body;
        let series = r#"apiserver_watch_cache_resource_version{resource="widgets.example.com"} "#;
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(series))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    eventually(
        "the widgets' watch cache holds its first list",
        Duration::from_secs(30),
        || cache_revision() > 0,
    );
    let list = call("GET", &u(W), None).unwrap().json();
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let watch = WatchReader::open(&u(&format!(
        "{W}?watch=true&resourceVersion={rv}&timeoutSeconds=3"
    )))
    .unwrap();
    let legacy = WatchReader::open(&u(&format!(
        "/apis/example.com/v1/watch/namespaces/default/widgets/one?resourceVersion={rv}"
    )))
    .unwrap();
    call("POST", &u(W), Some(&widget("one", 1))).unwrap();
    call("POST", &u(W), Some(&widget("two", 1))).unwrap();
    call_with(
        "PATCH",
        &u(&format!("{W}/one")),
        Some(br#"{"spec":{"size":2}}"#),
        &[("Content-Type", "application/merge-patch+json")],
    )
    .unwrap();
    call("DELETE", &u(&format!("{W}/one")), None).unwrap();
    let mut got = Vec::new();
    for _ in 0..4 {
        let e = watch.next(Duration::from_secs(5)).expect("an event");
        assert_eq!(e["object"]["apiVersion"], "example.com/v1");
        got.push(format!(
            "{} {}",
            e["type"].as_str().unwrap(),
            e["object"]["metadata"]["name"].as_str().unwrap()
        ));
    }
    assert_eq!(
        got,
        vec!["ADDED one", "ADDED two", "MODIFIED one", "DELETED one"]
    );
    assert!(
        watch.ended(Duration::from_secs(6)),
        "the stream ends at timeoutSeconds"
    );
    let types: Vec<String> = (0..3)
        .filter_map(|_| legacy.next(Duration::from_secs(5)))
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        types,
        vec!["ADDED", "MODIFIED", "DELETED"],
        "the single-object watch sees only `one`"
    );
    // sendInitialEvents: current state, then a BOOKMARK marking the end of it.
    let w = WatchReader::open(&u(&format!("{W}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=5"))).unwrap();
    let first = w.next(Duration::from_secs(5)).unwrap();
    assert_eq!(
        (
            first["type"].as_str(),
            first["object"]["metadata"]["name"].as_str()
        ),
        (Some("ADDED"), Some("two"))
    );
    let mark = w.next(Duration::from_secs(5)).unwrap();
    assert_eq!(mark["type"], "BOOKMARK");
    assert_eq!(
        mark["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    assert_eq!(mark["object"]["kind"], "Widget");
    assert!(mark["object"].get("spec").is_none());
}

/// A review has no metadata to print: asked for nothing but a Table it is 406, as Kubernetes'
/// Table conformance spec expects; with a JSON fallback in Accept it is answered.
#[test]
fn a_review_asked_for_only_a_table_is_not_acceptable() {
    let host = strategy_host_e2e::HostProcess::start(&[]).unwrap();
    let url = host.url("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews");
    let review = serde_json::json!({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"nonResourceAttributes": {"path": "/", "verb": "get"}}
    })
    .to_string();
    let post = |accept: &str| {
        strategy_host_e2e::call_with(
            "POST",
            &url,
            Some(review.as_bytes()),
            &[("Content-Type", "application/json"), ("Accept", accept)],
        )
        .unwrap()
    };
    let table_only = post("application/json;as=Table;v=v1;g=meta.k8s.io");
    assert_eq!(table_only.code, 406, "{}", table_only.body);
    assert_eq!(table_only.json()["reason"], "NotAcceptable");
    let with_fallback = post("application/json;as=Table;v=v1;g=meta.k8s.io, application/json");
    assert_eq!(with_fallback.code, 201, "{}", with_fallback.body);
}
